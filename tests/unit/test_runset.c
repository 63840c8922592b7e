/* SPDX-License-Identifier: GPL-2.0-or-later */
/* runset: sorted, merged block runs, against a bitmap model. */
#include "runset.h"
#include "test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SPAN 4096

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint32_t below(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 33) % n;
}

/* The runs are sorted, disjoint and not touching, and hold exactly the
 * model's blocks. */
static void check_shape(const struct runset *s, const uint8_t *model)
{
	uint8_t seen[SPAN] = { 0 };
	size_t i;
	uint32_t b;

	for (i = 0; i < s->n; i++) {
		CHECK(s->r[i].n > 0);
		if (i)
			CHECK(s->r[i].rel > s->r[i - 1].rel + s->r[i - 1].n);
		for (b = s->r[i].rel; b < s->r[i].rel + s->r[i].n; b++)
			seen[b] = 1;
	}
	CHECK(memcmp(seen, model, SPAN) == 0);
}

static void test_against_model(void)
{
	static uint8_t model[SPAN];
	struct runset s = { 0 };
	int round, k;

	for (round = 0; round < 3000; round++) {
		uint32_t rel = below(SPAN - 64), n = 1 + below(below(8) ? 4 : 64), b;
		uint64_t qrel = below(SPAN), qn = below(40);
		int want = 0;

		runset_add(&s, rel, n);
		for (b = rel; b < rel + n; b++)
			model[b] = 1;
		for (b = (uint32_t)qrel; b < qrel + qn && b < SPAN; b++)
			want |= model[b];
		CHECK_EQ(runset_hits(&s, qrel, qn), want);
		{
			/* runset_first: the first set block in the range, and
			 * how far the set goes on from it within the range */
			struct run got;
			uint64_t at = qrel, end;

			while (at < qrel + qn && at < SPAN && !model[at])
				at++;
			CHECK_EQ(runset_first(&s, qrel, qn, &got), want);
			if (want) {
				for (end = at; end < qrel + qn && end < SPAN && model[end]; end++)
					;
				CHECK_EQ(got.rel, at);
				CHECK_EQ(got.n, end - at);
			}
		}
		if (round % 100 == 0)
			check_shape(&s, model);
	}
	check_shape(&s, model);
	/* churn over one area merges into few runs, however many frees */
	CHECK(s.n < SPAN / 4);
	/* a merge moves everything; the source is left empty */
	{
		struct runset t = { 0 };

		runset_add(&t, 0, 1);
		runset_merge(&t, &s);
		CHECK_EQ(s.n, 0);
		CHECK_EQ(runset_hits(&s, 0, SPAN), 0);
		model[0] = 1;
		check_shape(&t, model);
		runset_clear(&t);
		for (k = 0; k < SPAN; k++)
			CHECK_EQ(runset_hits(&t, (uint64_t)k, 1), 0);
		runset_free(&t);
	}
	runset_free(&s);
}

/* Touching runs merge; a lost set holds every block. */
static void test_touching_and_lost(void)
{
	struct runset s = { 0 };

	runset_add(&s, 10, 5);
	runset_add(&s, 20, 5);
	CHECK_EQ(s.n, 2);
	CHECK_EQ(runset_hits(&s, 15, 5), 0);
	CHECK_EQ(runset_hits(&s, 14, 1), 1);
	CHECK_EQ(runset_hits(&s, 19, 2), 1);
	runset_add(&s, 15, 5);          /* fills the gap exactly */
	CHECK_EQ(s.n, 1);
	CHECK_EQ(s.r[0].rel, 10);
	CHECK_EQ(s.r[0].n, 15);
	CHECK_EQ(runset_hits(&s, 25, 100), 0);
	CHECK_EQ(runset_hits(&s, 0, 10), 0);
	CHECK_EQ(runset_hits(&s, 0, 11), 1);
	s.lost = 1;
	CHECK_EQ(runset_hits(&s, 1000, 1), 1);
	runset_clear(&s);
	CHECK_EQ(runset_hits(&s, 12, 1), 0);
	runset_free(&s);
}

int main(void)
{
	TEST_RUN(test_against_model);
	TEST_RUN(test_touching_and_lost);
	return TEST_DONE();
}

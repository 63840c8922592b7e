/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sorted, merged sets of block runs; see runset.h. */
#include "runset.h"

#include <stdlib.h>
#include <string.h>

#include "fsint.h"

/* Enough for a chunk as fragmented as a check would still call sane; a
 * set grown past it says "every block" rather than grow on. */
#define RUNSET_MAX 65536

static uint64_t run_end(const struct run *r)
{
	return (uint64_t)r->rel + r->n;
}

/* The first run ending at or after rel (runs that touch rel included). */
static size_t first_reaching(const struct runset *s, uint64_t rel)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (run_end(&s->r[mid]) < rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void runset_add(struct runset *s, uint32_t rel, uint32_t n)
{
	uint64_t lo = rel, hi = (uint64_t)rel + n;
	size_t i, j;
	struct run *r;

	if (s->lost || !n)
		return;
	i = first_reaching(s, lo);
	/* runs i .. j-1 overlap or touch [lo, hi): they become one */
	for (j = i; j < s->n && s->r[j].rel <= hi; j++) {
		if (s->r[j].rel < lo)
			lo = s->r[j].rel;
		if (run_end(&s->r[j]) > hi)
			hi = run_end(&s->r[j]);
	}
	if (j == i) {
		r = s->n < RUNSET_MAX ? array_room(s->r, &s->cap, s->n, sizeof(*r), 16) : NULL;
		if (!r) {
			s->lost = 1;
			return;
		}
		s->r = r;
		memmove(s->r + i + 1, s->r + i, (s->n - i) * sizeof(*r));
		s->n++;
	} else if (j > i + 1) {
		memmove(s->r + i + 1, s->r + j, (s->n - j) * sizeof(*s->r));
		s->n -= j - i - 1;
	}
	s->r[i] = (struct run){ (uint32_t)lo, (uint32_t)(hi - lo) };
}

int runset_hits(const struct runset *s, uint64_t rel, uint64_t n)
{
	size_t i;

	if (s->lost)
		return 1;
	if (!n)
		return 0;
	/* the first run ending past rel is the only one that can start
	 * before rel + n and still reach into the range */
	i = first_reaching(s, rel + 1);
	return i < s->n && s->r[i].rel < rel + n;
}

int runset_first(const struct runset *s, uint64_t rel, uint64_t n, struct run *out)
{
	uint64_t lo, hi;
	size_t i;

	if (!n)
		return 0;
	if (s->lost) {
		*out = (struct run){ (uint32_t)rel, (uint32_t)n };
		return 1;
	}
	i = first_reaching(s, rel + 1);
	if (i >= s->n || s->r[i].rel >= rel + n)
		return 0;
	lo = s->r[i].rel > rel ? s->r[i].rel : rel;
	hi = run_end(&s->r[i]) < rel + n ? run_end(&s->r[i]) : rel + n;
	*out = (struct run){ (uint32_t)lo, (uint32_t)(hi - lo) };
	return 1;
}

uint64_t runset_end(const struct runset *s)
{
	return s->n ? run_end(&s->r[s->n - 1]) : 0;
}

void runset_merge(struct runset *dst, struct runset *src)
{
	size_t i;

	for (i = 0; i < src->n; i++)
		runset_add(dst, src->r[i].rel, src->r[i].n);
	dst->lost |= src->lost;
	runset_clear(src);
}

void runset_clear(struct runset *s)
{
	s->n = 0;
	s->lost = 0;
}

void runset_free(struct runset *s)
{
	free(s->r);
	memset(s, 0, sizeof(*s));
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* CRC-32C: known vectors, chaining, and hardware == software. */
#include "crc32c.h"
#include "test.h"

#include <stdint.h>

/* Defined in crc32c.c for this test only. */
extern uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len);

static uint64_t rng_state = 0x243F6A8885A308D3ull;

static uint8_t rand_byte(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint8_t)(rng_state >> 32);
}

/* Bit-at-a-time reference, independent of both implementations' tables. */
static uint32_t crc32c_ref(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int i = 0; i < 8; i++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return ~crc;
}

static void test_check_value(void)
{
	CHECK_EQ(crc32c(0, "123456789", 9), 0xE3069283u);
	CHECK_EQ(crc32c_sw(0, "123456789", 9), 0xE3069283u);
}

static void test_empty(void)
{
	CHECK_EQ(crc32c(0, NULL, 0), 0);
	CHECK_EQ(crc32c(0x12345678u, "x", 0), 0x12345678u);
	CHECK_EQ(crc32c_sw(0xDEADBEEFu, NULL, 0), 0xDEADBEEFu);
}

/* RFC 3720 appendix B.4 (iSCSI). */
static void test_rfc3720(void)
{
	uint8_t buf[32];

	memset(buf, 0, sizeof(buf));
	CHECK_EQ(crc32c(0, buf, 32), 0x8A9136AAu);
	CHECK_EQ(crc32c_sw(0, buf, 32), 0x8A9136AAu);
	memset(buf, 0xFF, sizeof(buf));
	CHECK_EQ(crc32c(0, buf, 32), 0x62A8AB43u);
	CHECK_EQ(crc32c_sw(0, buf, 32), 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	CHECK_EQ(crc32c(0, buf, 32), 0x46DD794Eu);
	CHECK_EQ(crc32c_sw(0, buf, 32), 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	CHECK_EQ(crc32c(0, buf, 32), 0x113FDB5Cu);
	CHECK_EQ(crc32c_sw(0, buf, 32), 0x113FDB5Cu);
}

static void test_other_vectors(void)
{
	CHECK_EQ(crc32c(0, "a", 1), 0xC1D04330u);
	CHECK_EQ(crc32c(0, "The quick brown fox jumps over the lazy dog", 43),
		 0x22620404u);
}

static void test_chaining(void)
{
	uint8_t buf[1000];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = rand_byte();
	uint32_t whole = crc32c(0, buf, sizeof(buf));

	CHECK_EQ(whole, crc32c_ref(0, buf, sizeof(buf)));
	for (size_t split = 0; split <= sizeof(buf); split += 37) {
		uint32_t a = crc32c(0, buf, split);

		CHECK_EQ(crc32c(a, buf + split, sizeof(buf) - split), whole);
		a = crc32c_sw(0, buf, split);
		CHECK_EQ(crc32c_sw(a, buf + split, sizeof(buf) - split), whole);
	}
	/* Byte at a time. */
	uint32_t c = 0;

	for (size_t i = 0; i < sizeof(buf); i++)
		c = crc32c(c, buf + i, 1);
	CHECK_EQ(c, whole);
}

/* Every length 0..300 at every alignment 0..15 (the short three-way
 * rounds start at 240 bytes), plus large runs, against the bit-wise
 * reference and between the two paths. */
static void test_hw_matches_sw(void)
{
	static uint8_t buf[70000 + 16];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = rand_byte();
	for (size_t align = 0; align < 16; align++) {
		for (size_t len = 0; len <= 300; len++) {
			const uint8_t *p = buf + align;
			uint32_t seed = (uint32_t)(len * 2654435761u);
			uint32_t want = crc32c_ref(seed, p, len);

			CHECK_EQ(crc32c_sw(seed, p, len), want);
			CHECK_EQ(crc32c(seed, p, len), want);
		}
	}
	/* round the length at which the three-way rounds of long blocks
	 * start (3 x 1024 bytes) and a second one fits, and 4 KiB blocks */
	for (size_t len = 3000; len <= 6300; len += len < 3200 || len > 6100 ? 1 : 97) {
		uint32_t want = crc32c_ref(7, buf + 5, len);

		CHECK_EQ(crc32c_sw(7, buf + 5, len), want);
		CHECK_EQ(crc32c(7, buf + 5, len), want);
	}
	for (size_t len = 4096; len <= 70000; len += 4093) {
		uint32_t want = crc32c_ref(0, buf + 3, len);

		CHECK_EQ(crc32c_sw(0, buf + 3, len), want);
		CHECK_EQ(crc32c(0, buf + 3, len), want);
	}
#if defined(__x86_64__)
	if (!__builtin_cpu_supports("sse4.2"))
		TEST_SKIP("no SSE4.2: only the software path was exercised");
#else
	TEST_SKIP("not x86-64: only the software path was exercised");
#endif
}

int main(void)
{
	TEST_RUN(test_check_value);
	TEST_RUN(test_empty);
	TEST_RUN(test_rfc3720);
	TEST_RUN(test_other_vectors);
	TEST_RUN(test_chaining);
	TEST_RUN(test_hw_matches_sw);
	return TEST_DONE();
}

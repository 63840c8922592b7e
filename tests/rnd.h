/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A deterministic pseudo-random generator for the tests: xorshift64*, the
 * same sequence on every libc (unlike rand()).  The test seeds rng (never
 * with 0) and replays a run by seeding it again.  Header-only: the fuzz
 * harness and mkcase are built from one source file each. */
#ifndef CHUNKFS_TEST_RND_H
#define CHUNKFS_TEST_RND_H

#include <stdint.h>

static uint64_t rng;

static inline uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1Dull;
}

/* 0 .. n-1 (0 when n is 0). */
static inline uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

#endif

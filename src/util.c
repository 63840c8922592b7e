/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Small shared helpers: clocks and the per-thread open-error message. */
#include <stdarg.h>
#include <stdio.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fsint.h"

static __thread char last_error[256];

void cfs_set_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
}

const char *cfs_last_error(void)
{
	return last_error;
}

/* struct_size is every growing struct's first member */
static size_t struct_size_of(const void *p, size_t first)
{
	uint32_t n;

	memcpy(&n, p, sizeof(n));
	return n ? n : first;
}

int cfs_struct_in(void *dst, size_t dsize, size_t first, const void *src)
{
	size_t n = struct_size_of(src, first), i;
	uint32_t mine = (uint32_t)dsize;

	if (n < first)
		return -EINVAL;
	for (i = dsize; i < n; i++)
		if (((const unsigned char *)src)[i])
			return -E2BIG;
	if (n > dsize)
		n = dsize;
	memcpy(dst, src, n);
	memset((char *)dst + n, 0, dsize - n);
	memcpy(dst, &mine, sizeof(mine));
	return 0;
}

/* A struct_size below the first layout (0, or never set: result structs
 * are often left uninitialised) is taken as the first layout. */
void cfs_struct_out(void *dst, size_t first, const void *src, size_t ssize)
{
	size_t n = struct_size_of(dst, first);
	uint32_t theirs;

	if (n < first)
		n = first;

	memcpy(&theirs, dst, sizeof(theirs));
	memcpy(dst, src, n < ssize ? n : ssize);
	memcpy(dst, &theirs, sizeof(theirs));
}

double cfs_now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The kernel stamps times it keeps itself (mtime under the FUSE writeback
 * cache) with current_time(), the coarse clock.  Stamping ours from the
 * same clock keeps the two in order: a precise create time could be a
 * few ms after the coarse mtime of the write that followed it, and
 * relatime would then skip the next atime update that ext4 makes. */
void cfs_now(int64_t *sec, uint32_t *nsec)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	*sec = ts.tv_sec;
	*nsec = (uint32_t)ts.tv_nsec;
}

void *array_room(void *a, size_t *cap, size_t n, size_t esz, size_t first)
{
	size_t nc;
	void *na;

	if (n < *cap)
		return a;
	nc = *cap ? *cap * 2 : first;
	na = realloc(a, nc * esz);
	if (na)
		*cap = nc;
	return na;
}

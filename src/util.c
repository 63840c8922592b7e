/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Small shared helpers: clocks and the per-thread open-error message. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

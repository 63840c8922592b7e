/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A set of block runs (chunk-relative), kept sorted with touching runs
 * merged: what a chunk freed since a flush (chunk_blocks_freed).  Runs
 * merge as frees repeat over the same area, so where data churns the set
 * stays about as long as the area is fragmented, not as the frees are
 * many.  The caller locks. */
#ifndef CHUNKFS_RUNSET_H
#define CHUNKFS_RUNSET_H

#include <stddef.h>
#include <stdint.h>

struct run { uint32_t rel, n; };

struct runset {
	struct run *r;
	size_t n, cap;
	int lost;               /* a run could not be kept: every block is in */
};

/* Add [rel, rel + n); past RUNSET_MAX runs or out of memory the set is
 * marked lost instead. */
void runset_add(struct runset *s, uint32_t rel, uint32_t n);
/* Whether any block of [rel, rel + n) is in the set. */
int runset_hits(const struct runset *s, uint64_t rel, uint64_t n);
/* The first run of the set meeting [rel, rel + n), clipped to it: 1 and
 * *out, or 0 (a lost set meets it all). */
int runset_first(const struct runset *s, uint64_t rel, uint64_t n, struct run *out);
/* One past the set's last block (0 when empty). */
uint64_t runset_end(const struct runset *s);
/* Move every run of src into dst; src is left empty. */
void runset_merge(struct runset *dst, struct runset *src);
/* Empty (the memory is kept for reuse). */
void runset_clear(struct runset *s);
void runset_free(struct runset *s);

#endif

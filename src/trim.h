/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* chunkfs trim: give the free blocks of a filesystem back to the storage
 * under it (holes in an image file, discards on a disk).
 *
 * Internal to the library and the chunkfs command (include/chunkfs.h does
 * not declare it yet).
 */
#ifndef CHUNKFS_TRIM_H
#define CHUNKFS_TRIM_H

#include <stdint.h>

#include "chunkfs.h"

struct cfs_trim_result {
	uint64_t blocks;        /* blocks discarded */
	uint64_t runs;          /* discard calls made */
};

/* Discard every run of at least min_blocks free data blocks (1: all).
 * Everything written so far reaches the disk first, and no operation runs
 * meanwhile, so no block can be discarded while a file still needs it.
 * fs must be open read-write; -EOPNOTSUPP when the storage cannot discard
 * (then nothing was discarded). */
int cfs_trim(struct cfs_fs *fs, uint64_t min_blocks, struct cfs_trim_result *res);

#endif

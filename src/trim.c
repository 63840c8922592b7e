/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* chunkfs trim: discard the free runs of each chunk's data area.
 *
 * Free means clear in the block bitmap as it is on disk after a flush:
 * with every operation excluded and every dirty buffer written, nothing in
 * memory can still claim a block the bitmap calls free.  Metadata (header,
 * bitmaps, inode table) lies below data_start and is never touched.
 */
#include "trim.h"

#include <errno.h>
#include <pthread.h>

#include "bdev.h"
#include "cache.h"
#include "fsint.h"

#define TRIM_BM_BLOCKS  0       /* chunk_test_bit's block bitmap (chunk.c) */
#define TRIM_MAX_RUN    (1u << 20)   /* blocks per discard call */

static int trim_run(struct cfs_fs *fs, uint64_t abs, uint64_t len,
		    uint64_t min_blocks, struct cfs_trim_result *res)
{
	int ret;

	if (len == 0 || len < min_blocks)
		return 0;
	while (len) {
		uint32_t n = len > TRIM_MAX_RUN ? TRIM_MAX_RUN : (uint32_t)len;

		ret = cfs_bdev_discard(fs->bd, abs, n);
		if (ret < 0)
			return ret;
		res->blocks += n;
		res->runs++;
		abs += n;
		len -= n;
	}
	return 0;
}

static int trim_chunk(struct cfs_fs *fs, uint32_t c, uint64_t min_blocks,
		      struct cfs_trim_result *res)
{
	uint64_t base = chunk_base(fs, c), start = 0, len = 0;
	int set, ret;

	for (uint32_t b = fs->sb.data_start; b < fs->sb.chunk_blocks; b++) {
		ret = chunk_test_bit(fs, c, TRIM_BM_BLOCKS, b, &set);
		if (ret < 0)
			return ret;
		if (!set) {
			if (len++ == 0)
				start = b;
			continue;
		}
		ret = trim_run(fs, base + start, len, min_blocks, res);
		if (ret < 0)
			return ret;
		len = 0;
	}
	return trim_run(fs, base + start, len, min_blocks, res);
}

int cfs_trim(struct cfs_fs *fs, uint64_t min_blocks, struct cfs_trim_result *res)
{
	int ret;

	res->blocks = res->runs = 0;
	if (fs->rdonly)
		return -EROFS;
	fence_wait(fs, 0);
	pthread_rwlock_wrlock(&fs->op_lock);
	ret = cache_flush(&fs->cache, 0, UINT64_MAX);
	if (ret == 0)
		ret = cfs_bdev_flush(fs->bd);
	for (uint32_t c = 0; ret == 0 && c < fs->sb.nchunks; c++)
		ret = trim_chunk(fs, c, min_blocks ? min_blocks : 1, res);
	if (ret == 0)
		ret = cfs_bdev_flush(fs->bd);
	pthread_rwlock_unlock(&fs->op_lock);
	return ret;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Generic block-device accessors.
 *
 * All argument and bounds checking happens here, once, so backends can
 * assume every request they see lies inside the device and is non-empty.
 */
#include "bdev.h"

#include <errno.h>

#define BDEV_MIN_BLOCK_SIZE 512u
#define BDEV_MAX_BLOCK_SIZE 65536u

static int check_range(const struct cfs_bdev *bd, uint64_t blk, uint32_t count,
		       const void *buf)
{
	if (!bd || !buf || count == 0)
		return -EINVAL;
	/* Written as a subtraction so blk + count cannot overflow. */
	if (blk >= bd->nblocks || count > bd->nblocks - blk)
		return -EIO;
	return 0;
}

int cfs_bdev_read(struct cfs_bdev *bd, uint64_t blk, uint32_t count, void *buf)
{
	int ret = check_range(bd, blk, count, buf);

	if (ret)
		return ret;
	return bd->ops->read(bd, blk, count, buf);
}

int cfs_bdev_write(struct cfs_bdev *bd, uint64_t blk, uint32_t count,
		   const void *buf)
{
	int ret;

	/* A read-only device refuses every write, in range or not. */
	if (bd && bd->read_only)
		return -EROFS;
	ret = check_range(bd, blk, count, buf);
	if (ret)
		return ret;
	return bd->ops->write(bd, blk, count, buf);
}

int cfs_bdev_flush(struct cfs_bdev *bd)
{
	if (!bd)
		return -EINVAL;
	return bd->ops->flush(bd);
}

int cfs_bdev_discard(struct cfs_bdev *bd, uint64_t blk, uint32_t count)
{
	int ret;

	if (bd && bd->read_only)
		return -EROFS;
	/* no buffer: any non-NULL pointer passes the shared check */
	ret = check_range(bd, blk, count, bd);
	if (ret)
		return ret;
	return bd->ops->discard ? bd->ops->discard(bd, blk, count) : -EOPNOTSUPP;
}

void cfs_bdev_prefetch(struct cfs_bdev *bd, uint64_t blk, uint32_t count)
{
	if (!bd || !bd->ops->prefetch || blk >= bd->nblocks || count == 0)
		return;
	if (count > bd->nblocks - blk)
		count = (uint32_t)(bd->nblocks - blk);
	bd->ops->prefetch(bd, blk, count);
}

void cfs_bdev_scattered(struct cfs_bdev *bd, int on)
{
	if (bd && bd->ops->scattered)
		bd->ops->scattered(bd, on);
}

int cfs_bdev_grow(struct cfs_bdev *bd, uint64_t bytes)
{
	int ret = 0;

	if (bd->read_only)
		return -EROFS;
	if (bd->ops->grow)
		ret = bd->ops->grow(bd, bytes);
	if (ret == 0 && bd->nblocks * bd->block_size < bytes)
		ret = -ERANGE;
	return ret;
}

void cfs_bdev_destroy(struct cfs_bdev *bd)
{
	if (bd)
		bd->ops->destroy(bd);
}

int cfs_bdev_block_size_valid(uint32_t block_size)
{
	return block_size >= BDEV_MIN_BLOCK_SIZE &&
	       block_size <= BDEV_MAX_BLOCK_SIZE &&
	       (block_size & (block_size - 1)) == 0;
}

/* The struct records no byte size, so the size kept is the addressable one,
 * nblocks * block_size: a partial block at the end of a device opened with a
 * larger block size is not recovered by switching to a smaller one. */
int cfs_bdev_set_block_size(struct cfs_bdev *bd, uint32_t block_size)
{
	if (!bd || !cfs_bdev_block_size_valid(block_size))
		return -EINVAL;
	bd->nblocks = bd->nblocks * bd->block_size / block_size;
	bd->block_size = block_size;
	return 0;
}

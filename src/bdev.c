/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Generic block-device accessors.
 *
 * All argument and bounds checking happens here, once, so backends can
 * assume every request they see lies inside the device and is non-empty.
 */
#include "bdev.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

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

static void wr_note(struct cfs_bdev *bd, uint64_t blk, uint32_t count);
static pthread_rwlock_t io_lock;

static int bdev_write(struct cfs_bdev *bd, uint64_t blk, uint32_t count,
		      const void *buf)
{
	int ret;

	/* A read-only device refuses every write, in range or not. */
	if (bd && bd->read_only)
		return -EROFS;
	ret = check_range(bd, blk, count, buf);
	if (ret)
		return ret;
	if (!bd->ops->flush_ranges)
		return bd->ops->write(bd, blk, count, buf);
	pthread_rwlock_rdlock(&io_lock);
	ret = bd->ops->write(bd, blk, count, buf);
	pthread_rwlock_unlock(&io_lock);
	return ret;
}

/* ---- ranged flushes ----
 * The record of what was written since the last full flush, for a flush
 * that makes only that durable (and one file's data): an fsync then does
 * not wait for the dirty data of every other file.  Runs are bytes (the
 * block size may change after the open).  One lock for every device:
 * taken once a metadata write, where the backend can flush ranges. */
#define WR_MAX 4096             /* runs recorded; past it, a full flush */

static pthread_mutex_t wr_lock = PTHREAD_MUTEX_INITIALIZER;
/* Every write and discard holds it shared; a ranged flush exclusively,
 * since the file backend writes a block it read back (a cache write-back
 * by a reader in between would be undone). */
static pthread_rwlock_t io_lock = PTHREAD_RWLOCK_INITIALIZER;

static void wr_note(struct cfs_bdev *bd, uint64_t blk, uint32_t count)
{
	uint64_t off = blk * bd->block_size, len = (uint64_t)count * bd->block_size;
	struct cfs_brange *last;

	pthread_mutex_lock(&wr_lock);
	if (bd->wr_all)
		goto out;
	last = bd->nwr ? &bd->wr[bd->nwr - 1] : NULL;
	if (last && off >= last->off && off <= last->off + last->len) {
		if (off + len > last->off + last->len)
			last->len = off + len - last->off;
		goto out;
	}
	if (bd->nwr == bd->wrcap) {
		size_t cap = bd->wrcap ? bd->wrcap * 2 : 64;
		struct cfs_brange *w = cap <= WR_MAX ? realloc(bd->wr, cap * sizeof(*w)) : NULL;

		if (!w) {
			bd->wr_all = 1;
			goto out;
		}
		bd->wr = w;
		bd->wrcap = cap;
	}
	bd->wr[bd->nwr++] = (struct cfs_brange){ off, len };
out:
	pthread_mutex_unlock(&wr_lock);
}

int cfs_bdev_write(struct cfs_bdev *bd, uint64_t blk, uint32_t count,
		   const void *buf)
{
	int ret = bdev_write(bd, blk, count, buf);

	/* after the write: a flush that took the record before it completed
	 * would not have made it durable */
	if (ret == 0 && bd->ops->flush_ranges)
		wr_note(bd, blk, count);
	return ret;
}

int cfs_bdev_write_data(struct cfs_bdev *bd, uint64_t blk, uint32_t count,
			const void *buf)
{
	return bdev_write(bd, blk, count, buf);
}

/* The record and the data runs, durable. */
static int flush_ranged(struct cfs_bdev *bd)
{
	struct cfs_brange *r;
	size_t n;
	int ret;

	pthread_mutex_lock(&wr_lock);
	if (bd->wr_all) {
		pthread_mutex_unlock(&wr_lock);
		return -EAGAIN;
	}
	n = bd->nwr + bd->nrdata;
	r = malloc((n ? n : 1) * sizeof(*r));
	if (!r) {
		pthread_mutex_unlock(&wr_lock);
		return -EAGAIN;
	}
	for (size_t i = 0; i < bd->nwr; i++)
		r[i] = bd->wr[i];
	for (size_t i = 0; i < bd->nrdata; i++)
		r[bd->nwr + i] = bd->rdata[i];
	bd->nwr = 0;
	pthread_mutex_unlock(&wr_lock);
	pthread_rwlock_wrlock(&io_lock);
	ret = bd->ops->flush_ranges(bd, r, n);
	pthread_rwlock_unlock(&io_lock);
	if (ret < 0) {
		/* not known durable: the next flush is whole */
		pthread_mutex_lock(&wr_lock);
		bd->wr_all = 1;
		pthread_mutex_unlock(&wr_lock);
	}
	free(r);
	return ret;
}

int cfs_bdev_flush(struct cfs_bdev *bd)
{
	int ret;

	if (!bd)
		return -EINVAL;
	if (bd->ops->flush_ranges && bd->ranged) {
		ret = flush_ranged(bd);
		if (ret != -EAGAIN)
			return ret;
	}
	return cfs_bdev_flush_full(bd);
}

int cfs_bdev_flush_full(struct cfs_bdev *bd)
{
	int ret;

	if (!bd)
		return -EINVAL;
	if (bd->ops->flush_ranges) {
		/* what is written from now on is the next flush's; what
		 * this one flushes needs no record */
		pthread_mutex_lock(&wr_lock);
		bd->nwr = 0;
		bd->wr_all = 0;
		pthread_mutex_unlock(&wr_lock);
	}
	ret = bd->ops->flush(bd);
	if (ret < 0 && bd->ops->flush_ranges) {
		pthread_mutex_lock(&wr_lock);
		bd->wr_all = 1;
		pthread_mutex_unlock(&wr_lock);
	}
	return ret;
}

void cfs_bdev_sync_ranges(struct cfs_bdev *bd, struct cfs_brange *data, size_t n)
{
	if (!bd->ops->flush_ranges)
		return;
	for (size_t i = 0; i < n; i++) {
		data[i].off *= bd->block_size;
		data[i].len *= bd->block_size;
	}
	bd->rdata = data;
	bd->nrdata = n;
	bd->ranged = 1;
}

void cfs_bdev_sync_end(struct cfs_bdev *bd)
{
	bd->ranged = 0;
	bd->rdata = NULL;
	bd->nrdata = 0;
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
	if (!bd->ops->discard)
		return -EOPNOTSUPP;
	if (bd->ops->flush_ranges)
		pthread_rwlock_rdlock(&io_lock);
	ret = bd->ops->discard(bd, blk, count);
	if (bd->ops->flush_ranges) {
		pthread_rwlock_unlock(&io_lock);
		if (ret == 0)
			wr_note(bd, blk, count);
	}
	return ret;
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
	if (!bd)
		return;
	if (bd->ops->flush_ranges)
		free(bd->wr);
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

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the block cache (src/cache.h) over the fault-injecting
 * memory device, and of chunk block/inode allocation (src/chunk.c) on a
 * filesystem made on that device, cross-checked with cfs_statfs,
 * cfs_get_chunk_info and cfs_check.
 *
 * The device's bytes are inspected directly (cfs_bdev_fault_bytes) to see
 * exactly what the cache wrote, and edited to simulate media corruption. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bdev.h"
#include "cache.h"
#include "chunkfs.h"
#include "fixture.h"
#include "format.h"
#include "fsint.h"
#include "le.h"
#include "test.h"

#define BS 1024
#define NBLK 512
#define SEED 0x1234abcdu
#define MAGIC_T 0x54534554u     /* "TEST": a metadata magic of our own */

static void pattern(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 2654435761u + seed * 40503u) >> 11);
}

static int is_pattern(const uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (uint8_t)((i * 2654435761u + seed * 40503u) >> 11))
			return 0;
	return 1;
}

struct env {
	struct cfs_bdev *bd;
	uint8_t *dev;           /* the device's bytes */
	struct cache c;
	int hook_calls;
	uint64_t hook_last;
	int hook_fail;
};

static int hook(void *ctx, uint64_t blk, uint32_t count)
{
	(void)count;
	struct env *e = ctx;

	e->hook_calls++;
	e->hook_last = blk;
	return e->hook_fail ? -EIO : 0;
}

static struct env *env_new(size_t cache_bytes)
{
	struct env *e = calloc(1, sizeof(*e));
	uint64_t size;

	CHECK(e);
	CHECK_OK(cfs_bdev_fault_create((uint64_t)NBLK * BS, BS, &e->bd));
	e->dev = cfs_bdev_fault_bytes(e->bd, &size);
	CHECK(e->dev);
	CHECK_EQ(size, (uint64_t)NBLK * BS);
	CHECK_OK(cache_init(&e->c, e->bd, cache_bytes, SEED));
	e->c.before_dirty = hook;
	e->c.ctx = e;
	return e;
}

/* A fresh cache over the same device: forgets everything cached. */
static void env_recache(struct env *e)
{
	cache_destroy(&e->c);
	CHECK_OK(cache_init(&e->c, e->bd, 0, SEED));
	e->c.before_dirty = hook;
	e->c.ctx = e;
}

static void env_free(struct env *e)
{
	cache_destroy(&e->c);
	cfs_bdev_destroy(e->bd);
	free(e);
}

static uint8_t *devblk(struct env *e, uint64_t blk)
{
	return e->dev + blk * BS;
}

/* ---- plain buffers ---- */

static void test_roundtrip(void)
{
	struct env *e = env_new(0);
	struct cfs_bdev_fault_stats st;
	struct buf *b, *b2;

	/* a block never written reads as zeroes from the device */
	CHECK_OK(cache_get(&e->c, 5, 0, &b));
	CHECK(b->blk == 5 && b->ref == 1);
	CHECK(b->data[0] == 0 && b->data[BS - 1] == 0);
	pattern(b->data, BS, 5);
	CHECK_OK(buf_dirty(&e->c, b));
	CHECK(b->flags & BF_DIRTY);
	/* a second get of the same block is the same buffer */
	CHECK_OK(cache_get(&e->c, 5, 0, &b2));
	CHECK(b2 == b);
	CHECK_EQ(b->ref, 2);
	buf_put(&e->c, b2);
	buf_put(&e->c, b);
	/* dirty data is not on the device until flushed */
	CHECK(!is_pattern(devblk(e, 5), BS, 5));
	cfs_bdev_fault_config(e->bd, &(struct cfs_bdev_fault_cfg){ 0 });
	CHECK_OK(cache_flush(&e->c, 0, UINT64_MAX));
	CHECK(is_pattern(devblk(e, 5), BS, 5));
	cfs_bdev_fault_stats(e->bd, &st);
	CHECK_EQ(st.writes, 1);
	CHECK_EQ(st.flushes, 1);
	CHECK_EQ(e->c.ndirty, 0);
	/* a clean flush writes nothing */
	CHECK_OK(cache_flush(&e->c, 0, UINT64_MAX));
	cfs_bdev_fault_stats(e->bd, &st);
	CHECK_EQ(st.writes, 1);
	/* the data survives dropping the cache */
	env_recache(e);
	CHECK_OK(cache_get(&e->c, 5, 0, &b));
	CHECK(is_pattern(b->data, BS, 5));
	buf_put(&e->c, b);

	/* CG_NOREAD gives a zeroed buffer without reading the device */
	cfs_bdev_fault_config(e->bd, &(struct cfs_bdev_fault_cfg){ 0 });
	CHECK_OK(cache_get(&e->c, 6, CG_NOREAD, &b));
	cfs_bdev_fault_stats(e->bd, &st);
	CHECK_EQ(st.reads, 0);
	CHECK(b->data[0] == 0 && b->data[BS / 2] == 0);
	buf_put(&e->c, b);
	/* past the end of the device */
	b = (struct buf *)1;
	CHECK_ERR(cache_get(&e->c, NBLK, 0, &b), EUCLEAN);
	CHECK_ERR(cache_get(&e->c, UINT64_MAX, 0, &b), EUCLEAN);
	env_free(e);
}

/* Blocks [from, to) get the pattern of blk + add in the cache, dirty. */
static void dirty_patterns(struct env *e, uint64_t from, uint64_t to, uint32_t add)
{
	struct buf *b;
	uint64_t blk;

	for (blk = from; blk < to; blk++) {
		CHECK_OK(cache_get(&e->c, blk, 0, &b));
		pattern(b->data, BS, (uint32_t)blk + add);
		CHECK_OK(buf_dirty(&e->c, b));
		buf_put(&e->c, b);
	}
}

/* The device holds those patterns. */
static void check_patterns(struct env *e, uint64_t from, uint64_t to, uint32_t add)
{
	uint64_t blk;

	for (blk = from; blk < to; blk++)
		CHECK(is_pattern(devblk(e, blk), BS, (uint32_t)blk + add));
}

/* Getting blocks [from, to) through the cache gives their patterns. */
static void check_cached(struct env *e, uint64_t from, uint64_t to)
{
	struct buf *b;
	uint64_t blk;

	for (blk = from; blk < to; blk++) {
		CHECK_OK(cache_get(&e->c, blk, 0, &b));
		CHECK(is_pattern(b->data, BS, (uint32_t)blk));
		buf_put(&e->c, b);
	}
}

/* cache_flush(lo, hi) writes only blocks in [lo, hi). */
static void test_flush_range(void)
{
	struct env *e = env_new(0);
	uint64_t blk;

	dirty_patterns(e, 10, 20, 0);
	CHECK_OK(cache_flush(&e->c, 12, 15));
	for (blk = 10; blk < 20; blk++)
		CHECK_EQ(is_pattern(devblk(e, blk), BS, (uint32_t)blk), blk >= 12 && blk < 15);
	CHECK_EQ(e->c.ndirty, 7);
	CHECK_OK(cache_flush(&e->c, 0, UINT64_MAX));
	for (blk = 10; blk < 20; blk++)
		CHECK(is_pattern(devblk(e, blk), BS, (uint32_t)blk));
	env_free(e);
}

/* With the smallest cache (64 buffers), touching 5x as many dirty blocks
 * forces eviction: dirty victims are written back, nothing is lost, the
 * cache never grows far past its limit. */
static void test_eviction_writes_back(void)
{
	struct env *e = env_new(1);      /* rounds up to the minimum */
	struct buf *b;
	uint64_t blk;
	size_t maxbufs = 0;

	CHECK_EQ(e->c.max_bufs, 64);
	for (blk = 0; blk < 320; blk++) {
		CHECK_OK(cache_get(&e->c, blk, 0, &b));
		pattern(b->data, BS, (uint32_t)blk + 1000);
		CHECK_OK(buf_dirty(&e->c, b));
		buf_put(&e->c, b);
		if (e->c.nbufs > maxbufs)
			maxbufs = e->c.nbufs;
	}
	CHECK(maxbufs <= e->c.max_bufs + 1);
	/* most blocks already reached the device through eviction */
	{
		int on_dev = 0;

		for (blk = 0; blk < 320; blk++)
			on_dev += is_pattern(devblk(e, blk), BS, (uint32_t)blk + 1000);
		CHECK(on_dev >= 320 - 64);
	}
	/* re-reading evicted blocks gives the written data */
	for (blk = 0; blk < 320; blk += 7) {
		CHECK_OK(cache_get(&e->c, blk, 0, &b));
		CHECK(is_pattern(b->data, BS, (uint32_t)blk + 1000));
		buf_put(&e->c, b);
	}
	CHECK_OK(cache_flush(&e->c, 0, UINT64_MAX));
	for (blk = 0; blk < 320; blk++)
		CHECK(is_pattern(devblk(e, blk), BS, (uint32_t)blk + 1000));
	env_free(e);
}

/* Room is made from clean buffers while dirty ones fill less than 3/4 of
 * the cache: a write-back marks every changed chunk dirty on disk, so the
 * dirty ones wait for the checkpoint that cache_dirty_half asks for. */
static void test_eviction_keeps_dirty(void)
{
	struct env *e = env_new(1);      /* 64 buffers */
	struct buf *b;
	uint64_t blk;
	int on_dev = 0;

	for (blk = 0; blk < 20; blk++) {
		CHECK_OK(cache_get(&e->c, blk, 0, &b));
		pattern(b->data, BS, (uint32_t)blk + 2000);
		CHECK_OK(buf_dirty(&e->c, b));
		buf_put(&e->c, b);
	}
	CHECK(!cache_dirty_half(&e->c));
	/* a scan through many clean blocks: the 20 dirty ones are the oldest */
	for (blk = 100; blk < 400; blk++) {
		CHECK_OK(cache_get(&e->c, blk, 0, &b));
		buf_put(&e->c, b);
	}
	CHECK(e->c.nbufs <= e->c.max_bufs);
	CHECK_EQ(e->c.ndirty, 20);
	for (blk = 0; blk < 20; blk++)
		on_dev += is_pattern(devblk(e, blk), BS, (uint32_t)blk + 2000);
	CHECK_EQ(on_dev, 0);
	/* dirty past half: a checkpoint is due; past 3/4 eviction writes */
	for (blk = 20; blk < 32; blk++) {
		CHECK_OK(cache_get(&e->c, blk, 0, &b));
		CHECK_OK(buf_dirty(&e->c, b));
		buf_put(&e->c, b);
	}
	CHECK(cache_dirty_half(&e->c));
	for (blk = 32; blk < 100; blk++) {
		CHECK_OK(cache_get(&e->c, blk, 0, &b));
		CHECK_OK(buf_dirty(&e->c, b));
		buf_put(&e->c, b);
	}
	CHECK(e->c.nbufs <= e->c.max_bufs + 1);
	CHECK(e->c.ndirty <= e->c.max_bufs);
	for (blk = 0, on_dev = 0; blk < 20; blk++)
		on_dev += is_pattern(devblk(e, blk), BS, (uint32_t)blk + 2000);
	CHECK(on_dev > 0);
	CHECK_OK(cache_flush(&e->c, 0, UINT64_MAX));
	for (blk = 0; blk < 20; blk++)
		CHECK(is_pattern(devblk(e, blk), BS, (uint32_t)blk + 2000));
	env_free(e);
}

/* Referenced buffers are never evicted, even beyond the limit. */
static void test_referenced_not_evicted(void)
{
	struct env *e = env_new(1);
	struct buf *held[100], *b;
	int i;

	for (i = 0; i < 100; i++) {
		CHECK_OK(cache_get(&e->c, (uint64_t)i, 0, &held[i]));
		pattern(held[i]->data, BS, (uint32_t)i + 7);
	}
	for (i = 100; i < 200; i++) {
		CHECK_OK(cache_get(&e->c, (uint64_t)i, 0, &b));
		buf_put(&e->c, b);
	}
	for (i = 0; i < 100; i++) {
		CHECK(held[i]->blk == (uint64_t)i);
		CHECK(is_pattern(held[i]->data, BS, (uint32_t)i + 7));
		buf_put(&e->c, held[i]);
	}
	env_free(e);
}

/* A freed block's dirty contents are dropped, never written. */
static void test_forget(void)
{
	struct env *e = env_new(0);
	struct buf *b;

	pattern(devblk(e, 30), BS, 1);
	pattern(devblk(e, 31), BS, 2);
	/* unreferenced dirty buffer */
	CHECK_OK(cache_get(&e->c, 30, 0, &b));
	CHECK(is_pattern(b->data, BS, 1));
	pattern(b->data, BS, 99);
	CHECK_OK(buf_dirty(&e->c, b));
	buf_put(&e->c, b);
	cache_forget(&e->c, 30);
	/* referenced dirty buffer, forgotten while held */
	CHECK_OK(cache_get(&e->c, 31, 0, &b));
	pattern(b->data, BS, 98);
	CHECK_OK(buf_dirty(&e->c, b));
	cache_forget(&e->c, 31);
	CHECK(!(b->flags & BF_DIRTY));
	buf_put(&e->c, b);
	CHECK_EQ(e->c.ndirty, 0);
	CHECK_OK(cache_flush(&e->c, 0, UINT64_MAX));
	CHECK(is_pattern(devblk(e, 30), BS, 1));
	CHECK(is_pattern(devblk(e, 31), BS, 2));
	/* and the cache reads the device again */
	CHECK_OK(cache_get(&e->c, 30, 0, &b));
	CHECK(is_pattern(b->data, BS, 1));
	buf_put(&e->c, b);
	/* forgetting an uncached block is harmless */
	cache_forget(&e->c, 400);
	env_free(e);
}

/* ---- metadata blocks ---- */

static void test_meta_checksum(void)
{
	struct env *e = env_new(0);
	struct buf *b;

	CHECK_OK(cache_new_meta(&e->c, 40, MAGIC_T, &b));
	CHECK_EQ(cfs_meta_magic(b->data), MAGIC_T);
	CHECK_EQ(get_le64(b->data + CFS_OFF_MB_BLOCKNR), 40);
	CHECK(b->flags & BF_META);
	pattern(b->data + CFS_BLOCK_HDR, BS - CFS_BLOCK_HDR, 40);
	CHECK_OK(buf_dirty(&e->c, b));
	/* changed again after dirtying: the checksum is computed at
	 * write-back, so it must cover this too */
	b->data[BS - 1] ^= 0x5A;
	buf_put(&e->c, b);
	CHECK_OK(cache_flush(&e->c, 0, UINT64_MAX));
	CHECK_OK(cfs_meta_verify(devblk(e, 40), BS, SEED, MAGIC_T, 40));
	CHECK(get_le32(devblk(e, 40) + CFS_OFF_MB_CRC) != 0);

	/* re-read through a fresh cache: verified */
	env_recache(e);
	CHECK_OK(cache_get_meta(&e->c, 40, MAGIC_T, &b));
	CHECK(b->flags & BF_VERIFIED);
	CHECK_EQ(b->data[BS - 1], devblk(e, 40)[BS - 1]);
	CHECK(is_pattern(b->data + CFS_BLOCK_HDR, BS - CFS_BLOCK_HDR - 1, 40));
	buf_put(&e->c, b);
	/* a cached verified block asked for with another magic */
	CHECK_ERR(cache_get_meta(&e->c, 40, MAGIC_T + 1, &b), EUCLEAN);

	/* one flipped byte anywhere in the block: checksum mismatch */
	{
		size_t where[] = { CFS_OFF_MB_CRC, CFS_OFF_MB_BLOCKNR, CFS_BLOCK_HDR, BS / 2,
				  BS - 1 };

		for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
			devblk(e, 40)[where[i]] ^= 0x01;
			env_recache(e);
			if (where[i] == CFS_OFF_MB_BLOCKNR) {
				/* the block number is checked after the sum */
				CHECK(cache_get_meta(&e->c, 40, MAGIC_T, &b) < 0);
			} else {
				CHECK_ERR(cache_get_meta(&e->c, 40, MAGIC_T, &b), EBADMSG);
			}
			devblk(e, 40)[where[i]] ^= 0x01;
		}
	}
	/* a failed verification does not leave a usable buffer behind */
	env_recache(e);
	CHECK_OK(cache_get_meta(&e->c, 40, MAGIC_T, &b));
	buf_put(&e->c, b);

	/* wrong magic */
	env_recache(e);
	CHECK_ERR(cache_get_meta(&e->c, 40, MAGIC_T + 1, &b), EUCLEAN);
	/* a valid block copied to another place: wrong block number */
	memcpy(devblk(e, 41), devblk(e, 40), BS);
	env_recache(e);
	CHECK_ERR(cache_get_meta(&e->c, 41, MAGIC_T, &b), EUCLEAN);
	/* all zeroes (never written) is not metadata */
	CHECK_ERR(cache_get_meta(&e->c, 42, MAGIC_T, &b), EUCLEAN);
	/* a block of another filesystem (other seed) */
	env_recache(e);
	cache_destroy(&e->c);
	CHECK_OK(cache_init(&e->c, e->bd, 0, SEED + 1));
	CHECK_ERR(cache_get_meta(&e->c, 40, MAGIC_T, &b), EBADMSG);
	env_free(e);
}

/* ---- the before_dirty hook ---- */

static void test_before_dirty_hook(void)
{
	struct env *e = env_new(0);
	struct buf *b;
	int i;

	CHECK_OK(cache_get(&e->c, 50, 0, &b));
	for (i = 0; i < 5; i++)
		CHECK_OK(buf_dirty(&e->c, b));
	CHECK_EQ(e->hook_calls, 1);
	CHECK_EQ(e->hook_last, 50);
	/* clean again after a flush: the next dirty is a new transition */
	CHECK_OK(cache_flush(&e->c, 0, UINT64_MAX));
	CHECK(!(b->flags & BF_DIRTY));
	CHECK_OK(buf_dirty(&e->c, b));
	CHECK_OK(buf_dirty(&e->c, b));
	CHECK_EQ(e->hook_calls, 2);
	buf_put(&e->c, b);
	/* one call per buffer */
	for (i = 60; i < 70; i++) {
		CHECK_OK(cache_get(&e->c, (uint64_t)i, 0, &b));
		CHECK_OK(buf_dirty(&e->c, b));
		CHECK_OK(buf_dirty(&e->c, b));
		buf_put(&e->c, b);
	}
	CHECK_EQ(e->hook_calls, 12);
	/* a failing hook: the buffer stays clean and is never written */
	CHECK_OK(cache_flush(&e->c, 0, UINT64_MAX));
	e->hook_fail = 1;
	CHECK_OK(cache_get(&e->c, 80, 0, &b));
	pattern(b->data, BS, 80);
	CHECK_ERR(buf_dirty(&e->c, b), EIO);
	CHECK(!(b->flags & BF_DIRTY));
	buf_put(&e->c, b);
	CHECK_OK(cache_flush(&e->c, 0, UINT64_MAX));
	CHECK(!is_pattern(devblk(e, 80), BS, 80));
	env_free(e);
}

/* ---- device failures ---- */

static void test_write_failure_at_flush(void)
{
	struct env *e = env_new(0);

	dirty_patterns(e, 100, 104, 0);
	cfs_bdev_fault_config(e->bd, &(struct cfs_bdev_fault_cfg){ .fail_write_at = 2 });
	CHECK_ERR(cache_flush(&e->c, 0, UINT64_MAX), EIO);
	/* the failed buffer is still dirty, the others were written */
	CHECK_EQ(e->c.ndirty, 1);
	cfs_bdev_fault_config(e->bd, &(struct cfs_bdev_fault_cfg){ 0 });
	CHECK_OK(cache_flush(&e->c, 0, UINT64_MAX));
	check_patterns(e, 100, 104, 0);
	env_free(e);
}

/* A write-back that fails during eviction is not lost: the buffer stays
 * cached and dirty, and the error surfaces at the next cache_flush. */
static void test_write_failure_at_eviction(void)
{
	struct env *e = env_new(1);
	struct buf *b;
	uint64_t blk;

	dirty_patterns(e, 0, 64, 5000);
	cfs_bdev_fault_config(e->bd, &(struct cfs_bdev_fault_cfg){ .fail_write_at = 1 });
	for (blk = 200; blk < 220; blk++) {
		CHECK_OK(cache_get(&e->c, blk, 0, &b));
		buf_put(&e->c, b);
	}
	cfs_bdev_fault_config(e->bd, &(struct cfs_bdev_fault_cfg){ 0 });
	CHECK_ERR(cache_flush(&e->c, 0, UINT64_MAX), EIO);
	/* the error is reported once; the retry wrote everything */
	CHECK_OK(cache_flush(&e->c, 0, UINT64_MAX));
	check_patterns(e, 0, 64, 5000);
	env_free(e);
}

/* A failed read caches nothing: the next get reads again. */
static void test_read_failure(void)
{
	struct env *e = env_new(0);
	struct buf *b = NULL;

	pattern(devblk(e, 7), BS, 7);
	cfs_bdev_fault_config(e->bd, &(struct cfs_bdev_fault_cfg){ .fail_read_at = 1 });
	CHECK_ERR(cache_get(&e->c, 7, 0, &b), EIO);
	CHECK(b == NULL);
	CHECK_EQ(e->c.nbufs, 0);
	CHECK_ERR(cache_get_meta(&e->c, 7, MAGIC_T, &b), EUCLEAN);
	CHECK_OK(cache_get(&e->c, 7, 0, &b));
	CHECK(is_pattern(b->data, BS, 7));
	buf_put(&e->c, b);
	/* power lost: every I/O fails, flush reports it */
	CHECK_OK(cache_get(&e->c, 8, 0, &b));
	CHECK_OK(buf_dirty(&e->c, b));
	buf_put(&e->c, b);
	cfs_bdev_fault_config(e->bd, &(struct cfs_bdev_fault_cfg){ .power_cut_at = 1 });
	CHECK(cache_flush(&e->c, 0, UINT64_MAX) < 0);
	CHECK_ERR(cache_get(&e->c, 9, 0, &b), EIO);
	cfs_bdev_fault_restore(e->bd);
	env_free(e);
}

/* Readahead: the uncached run at the start is read with one device call
 * and then served from memory, contents exact; a cached first block or a
 * failed read leave the work to cache_get, which still gets it right; a
 * run past the device's end is clamped; the cache's bound holds. */
static void test_readahead(void)
{
	struct env *e = env_new(0);   /* 64 buffers: runs capped at 16 */
	struct cfs_bdev_fault_stats st;
	struct buf *b;
	uint64_t i;

	for (i = 0; i < NBLK; i++)
		pattern(devblk(e, i), BS, (uint32_t)i);
	cfs_bdev_fault_config(e->bd, &(struct cfs_bdev_fault_cfg){ 0 });
	cache_readahead(&e->c, 10, 8);
	cfs_bdev_fault_stats(e->bd, &st);
	CHECK_EQ(st.reads, 1);
	check_cached(e, 10, 18);
	cfs_bdev_fault_stats(e->bd, &st);
	CHECK_EQ(st.reads, 1);

	/* first block cached: nothing to do */
	cache_readahead(&e->c, 12, 8);
	cfs_bdev_fault_stats(e->bd, &st);
	CHECK_EQ(st.reads, 1);
	/* stops at the first cached block: 8 and 9 are read, 10 is cached */
	cache_readahead(&e->c, 8, 8);
	cfs_bdev_fault_stats(e->bd, &st);
	CHECK_EQ(st.reads, 2);
	CHECK_OK(cache_get(&e->c, 9, 0, &b));
	CHECK(is_pattern(b->data, BS, 9));
	buf_put(&e->c, b);
	cfs_bdev_fault_stats(e->bd, &st);
	CHECK_EQ(st.reads, 2);

	/* capped at a quarter of the cache, clamped at the end */
	cache_readahead(&e->c, 100, 1000);
	cache_readahead(&e->c, NBLK - 3, 100);
	cache_readahead(&e->c, NBLK, 4);
	cfs_bdev_fault_stats(e->bd, &st);
	CHECK_EQ(st.reads, 4);
	CHECK(e->c.nbufs <= e->c.max_bufs);
	CHECK_OK(cache_get(&e->c, NBLK - 1, 0, &b));
	CHECK(is_pattern(b->data, BS, NBLK - 1));
	buf_put(&e->c, b);
	CHECK_OK(cache_get(&e->c, 100 + 15, 0, &b));
	CHECK(is_pattern(b->data, BS, 115));
	buf_put(&e->c, b);
	cfs_bdev_fault_stats(e->bd, &st);
	CHECK_EQ(st.reads, 4);

	/* a failed read caches nothing wrong: cache_get reads it again */
	cfs_bdev_fault_config(e->bd, &(struct cfs_bdev_fault_cfg){ .fail_read_at = 1 });
	cache_readahead(&e->c, 300, 8);
	check_cached(e, 300, 308);
	cfs_bdev_fault_stats(e->bd, &st);
	CHECK_EQ(st.reads, 9);
	env_free(e);
}

/* Many threads getting the same and different blocks: one buffer per
 * block, loaded once, contents as on the device. */
struct cthr {
	struct env *e;
	int id;
	int bad;
};

static void *cache_thread(void *arg)
{
	struct cthr *t = arg;
	unsigned r = (unsigned)t->id * 7919u + 1;
	int i;

	for (i = 0; i < 4000; i++) {
		struct buf *b;
		uint64_t blk;

		r = r * 1103515245u + 12345u;
		blk = (r >> 8) % 200;
		if (cache_get(&t->e->c, blk, 0, &b) < 0) {
			t->bad++;
			continue;
		}
		if (b->blk != blk || !is_pattern(b->data, 64, (uint32_t)blk))
			t->bad++;
		buf_put(&t->e->c, b);
	}
	return NULL;
}

static void test_concurrent_gets(void)
{
	struct env *e = env_new(1);
	struct cthr t[6];
	uint64_t blk;
	int i;

	for (blk = 0; blk < 200; blk++)
		pattern(devblk(e, blk), BS, (uint32_t)blk);
	for (i = 0; i < 6; i++)
		t[i] = (struct cthr){ .e = e, .id = i };
	CHECK_OK(fixture_threads(6, cache_thread, t, sizeof(t[0])));
	for (i = 0; i < 6; i++)
		CHECK_EQ(t[i].bad, 0);
	CHECK(e->c.nbufs <= e->c.max_bufs + 6);
	env_free(e);
}

/* ---- chunk allocation on a real filesystem ---- */

#define FS_SIZE (8u << 20)
#define FS_BS 1024
#define FS_CHUNKS 4

/* the fs gets a borrowed view (fixture.h): the device outlives cfs_close */
static struct cfs_bdev *dev;    /* the device under the current test's fs */

/* The fixed inode tables (-O ^dyninodes): these tests run chunks out of
 * inodes; test_icluster.c covers the chunks that make more. */
static struct cfs_fs *make_fs(void)
{
	struct cfs_mkfs_opts o = { .block_size = FS_BS, .chunks = FS_CHUNKS, .inodes = 512,
				   .dyninodes = -1 };
	struct cfs_fs *fs;

	CHECK_OK(fixture_mkfs(FS_SIZE, &o, &dev, &fs));
	return fs;
}

static struct cfs_fs *reopen(struct cfs_fs *fs)
{
	CHECK_OK(cfs_close(fs));
	CHECK_OK(fixture_open(dev, 0, &fs));
	return fs;
}

static void finish(struct cfs_fs *fs)
{
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
	dev = NULL;
}

struct counts {
	uint64_t bfree, ffree;
	uint64_t cfree[FS_CHUNKS], cifree[FS_CHUNKS];
};

/* statfs must be the sum of the chunk headers' counts, its free inodes
 * without the repair reserve (FORMAT.md 16.4), which no user can have. */
static void counts(struct cfs_fs *fs, struct counts *k)
{
	struct cfs_statfs sf;
	uint64_t sb = 0, si = 0;
	uint32_t c;

	CHECK_OK(cfs_statfs(fs, &sf));
	for (c = 0; c < FS_CHUNKS; c++) {
		struct cfs_chunk_info ci;

		CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
		k->cfree[c] = ci.free_blocks;
		k->cifree[c] = ci.free_inodes;
		sb += ci.free_blocks;
		si += ci.free_inodes > CFS_REPAIR_INODES ? ci.free_inodes - CFS_REPAIR_INODES : 0;
	}
	CHECK_EQ(sf.bfree, sb);
	CHECK_EQ(sf.ffree, si);
	k->bfree = sf.bfree;
	k->ffree = sf.ffree;
}

struct range {
	uint32_t rel, len;
};

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->rel < y->rel ? -1 : x->rel > y->rel;
}

/* Allocate every free block of a chunk in runs of varying size: the runs
 * are disjoint, inside the data area, marked in the bitmap, and add up to
 * the free count; then ENOSPC.  Freeing them all restores every count,
 * and cfs_check agrees before and after a reopen. */
static void test_chunk_block_alloc(void)
{
	struct cfs_fs *fs = make_fs();
	struct counts k0, k1;
	struct range *rs;
	size_t n = 0, i;
	uint64_t total = 0;
	const uint32_t c = 2;
	uint32_t rel, want = 1;
	int ret, set;

	counts(fs, &k0);
	CHECK(k0.cfree[c] > 100);
	rs = calloc(k0.cfree[c] + 1, sizeof(*rs));
	CHECK(rs);
	for (;;) {
		ret = chunk_alloc_blocks(fs, c, 0, want, &rel);
		if (ret == -ENOSPC)
			break;
		CHECK(ret >= 1 && (uint32_t)ret <= want);
		CHECK(rel >= fs->sb.data_start);
		CHECK((uint64_t)rel + (uint64_t)ret <= fs->sb.chunk_blocks);
		rs[n++] = (struct range){ rel, (uint32_t)ret };
		total += (uint64_t)ret;
		CHECK(n <= k0.cfree[c]);
		want = want % 37 + 1;
	}
	/* normal allocation leaves the repair reserve; a repair open takes it */
	CHECK_EQ(total, k0.cfree[c] - chunk_repair_blocks(fs));
	fs->checking = 1;
	while ((ret = chunk_alloc_blocks(fs, c, 0, 1, &rel)) > 0) {
		rs[n++] = (struct range){ rel, (uint32_t)ret };
		total += (uint64_t)ret;
		CHECK(n <= k0.cfree[c]);
	}
	fs->checking = 0;
	CHECK_ERR(ret, ENOSPC);
	CHECK_EQ(total, k0.cfree[c]);
	counts(fs, &k1);
	CHECK_EQ(k1.cfree[c], 0);
	CHECK_EQ(k1.bfree, k0.bfree - total);
	/* other chunks untouched */
	CHECK_EQ(k1.cfree[0], k0.cfree[0]);
	CHECK_EQ(k1.cfree[3], k0.cfree[3]);
	qsort(rs, n, sizeof(*rs), range_cmp);
	for (i = 0; i < n; i++) {
		if (i)
			CHECK(rs[i - 1].rel + rs[i - 1].len <= rs[i].rel);
		CHECK_OK(chunk_test_bit(fs, c, 0, rs[i].rel, &set));
		CHECK_EQ(set, 1);
		CHECK_OK(chunk_test_bit(fs, c, 0, rs[i].rel + rs[i].len - 1, &set));
		CHECK_EQ(set, 1);
	}
	/* a full chunk does not stop files elsewhere */
	{
		cfs_ino_t d, f;
		char buf[4096];

		memset(buf, 'x', sizeof(buf));
		CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &d));
		CHECK_OK(cfs_mknod(fs, d, "f", S_IFREG | 0644, 0, 0, 0, &f));
		CHECK_EQ(cfs_write(fs, f, buf, sizeof(buf), 0), sizeof(buf));
		CHECK_OK(cfs_unlink(fs, d, "f"));
		CHECK_OK(cfs_rmdir(fs, CFS_ROOT_INO, "d"));
	}
	/* the bitmap now disagrees with what inodes own: the checker sees it */
	CHECK(cfs_check(fs, NULL, NULL) > 0);

	/* free in a different order (odd ranges first) */
	for (i = 1; i < n; i += 2)
		CHECK_OK(chunk_free_blocks(fs, c, rs[i].rel, rs[i].len));
	for (i = 0; i < n; i += 2)
		CHECK_OK(chunk_free_blocks(fs, c, rs[i].rel, rs[i].len));
	counts(fs, &k1);
	CHECK_EQ(k1.cfree[c], k0.cfree[c]);
	CHECK_EQ(k1.bfree, k0.bfree);
	CHECK_OK(chunk_test_bit(fs, c, 0, rs[0].rel, &set));
	CHECK_EQ(set, 0);
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	fs = reopen(fs);
	counts(fs, &k1);
	CHECK_EQ(k1.bfree, k0.bfree);
	CHECK_EQ(k1.ffree, k0.ffree);
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	/* everything can be allocated again after the reopen */
	total = 0;
	while ((ret = chunk_alloc_blocks(fs, c, 0, 64, &rel)) > 0) {
		total += (uint64_t)ret;
		CHECK_OK(chunk_free_blocks(fs, c, rel, (uint32_t)ret));
		if (total > 3 * k0.cfree[c])
			break;
	}
	CHECK(total > k0.cfree[c]);
	free(rs);
	finish(fs);
}

/* Bad frees are refused without changing the counts. */
static void test_chunk_bad_free(void)
{
	struct cfs_fs *fs = make_fs();
	struct counts k0, k1;
	uint32_t rel;

	counts(fs, &k0);
	CHECK_ERR(chunk_free_blocks(fs, 1, 0, 1), EUCLEAN);
	CHECK_ERR(chunk_free_blocks(fs, 1, fs->sb.data_start - 1, 1), EUCLEAN);
	CHECK_ERR(chunk_free_blocks(fs, 1, (uint32_t)fs->sb.chunk_blocks - 1, 2), EUCLEAN);
	CHECK_ERR(chunk_free_blocks(fs, 1, UINT32_MAX, 2), EUCLEAN);
	counts(fs, &k1);
	CHECK_EQ(k1.bfree, k0.bfree);
	CHECK_EQ(chunk_alloc_blocks(fs, 1, 0, 1, &rel), 1);
	CHECK_OK(chunk_free_blocks(fs, 1, rel, 1));
	counts(fs, &k1);
	CHECK_EQ(k1.bfree, k0.bfree);
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	finish(fs);
}

/* Regression (fixed): freeing a block that is already free returns -EUCLEAN
 * but still adds it to the chunk's free count, so statfs over-reports and
 * a later allocation runs into "free count said there was room". */
static void test_known_bug_double_free_count(void)
{
	struct cfs_fs *fs = make_fs();
	struct counts k0, k1;
	uint32_t rel;

	CHECK_EQ(chunk_alloc_blocks(fs, 1, 0, 1, &rel), 1);
	CHECK_OK(chunk_free_blocks(fs, 1, rel, 1));
	counts(fs, &k0);
	CHECK_ERR(chunk_free_blocks(fs, 1, rel, 1), EUCLEAN);
	counts(fs, &k1);
	CHECK_EQ(k1.bfree, k0.bfree);
	finish(fs);
}

/* Allocate inodes of chunk c until ENOSPC, each distinct (seen) and in
 * range, appended to inos[*n]. */
static void inodes_alloc_all(struct cfs_fs *fs, uint32_t c, cfs_ino_t *inos, uint8_t *seen,
			     size_t *n)
{
	cfs_ino_t ino;
	int ret;

	while ((ret = chunk_alloc_inode(fs, c, &ino)) != -ENOSPC) {
		CHECK_OK(ret);
		CHECK_EQ(CFS_INO_CHUNK(ino), c);
		CHECK(CFS_INO_LOCAL(ino) >= 1 && CFS_INO_LOCAL(ino) <= fs->sb.inodes_per_chunk);
		CHECK(!seen[CFS_INO_LOCAL(ino)]);
		seen[CFS_INO_LOCAL(ino)] = 1;
		inos[(*n)++] = ino;
		CHECK(*n <= fs->sb.inodes_per_chunk);
	}
}

/* Inodes: allocate every inode of a chunk, all distinct and in range,
 * then ENOSPC (normal allocation stops at the repair reserve, a repair
 * open takes it too); free them all; the counts return. */
static void test_chunk_inode_alloc(void)
{
	struct cfs_fs *fs = make_fs();
	struct counts k0, k1;
	cfs_ino_t *inos;
	uint8_t *seen;
	size_t n = 0, i;
	const uint32_t c = 3;

	counts(fs, &k0);
	CHECK_EQ(k0.cifree[c], fs->sb.inodes_per_chunk);
	inos = calloc(fs->sb.inodes_per_chunk + 1, sizeof(*inos));
	seen = calloc(fs->sb.inodes_per_chunk + 1, 1);
	CHECK(inos && seen);
	inodes_alloc_all(fs, c, inos, seen, &n);
	/* normal allocation leaves the repair reserve; a repair open takes it */
	CHECK_EQ(n, fs->sb.inodes_per_chunk - CFS_REPAIR_INODES);
	fs->checking = 1;
	inodes_alloc_all(fs, c, inos, seen, &n);
	fs->checking = 0;
	CHECK_EQ(n, fs->sb.inodes_per_chunk);
	counts(fs, &k1);
	CHECK_EQ(k1.cifree[c], 0);
	CHECK_EQ(k1.ffree, k0.ffree - (n - CFS_REPAIR_INODES));   /* k0 left the reserve out */
	/* the inode table grew to cover them all */
	CHECK_EQ(fs->chunks[c].hdr.itable_init, fs->sb.itable_blocks);
	/* new inodes in a directory of a full chunk go elsewhere */
	{
		struct inode *ip;

		CHECK_OK(inode_alloc(fs, c, 0, S_IFREG | 0644, &ip));
		pthread_mutex_unlock(&ip->lock);
		CHECK(CFS_INO_CHUNK(ip->ino) != c);
		CHECK_ERR(chunk_alloc_inode(fs, c, &(cfs_ino_t){ 0 }), ENOSPC);
		CHECK_OK(inode_free(fs, ip));
		inode_put(fs, ip);
	}
	for (i = 0; i < n; i++)
		CHECK_OK(chunk_free_inode(fs, inos[n - 1 - i]));
	counts(fs, &k1);
	CHECK_EQ(k1.ffree, k0.ffree);
	CHECK_EQ(k1.cifree[c], k0.cifree[c]);
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	fs = reopen(fs);
	counts(fs, &k1);
	CHECK_EQ(k1.ffree, k0.ffree);
	free(inos);
	free(seen);
	finish(fs);
}

/* Through the public API: files until the filesystem is full.  ENOSPC
 * comes only when (nearly) every chunk is full, statfs follows each step,
 * and deleting everything gives back exactly the space there was. */
static void test_fill_public_api(void)
{
	struct cfs_fs *fs = make_fs();
	struct counts k0, k1;
	static char buf[16384];
	cfs_ino_t dirs[3];
	int nfiles = 0, i, full = 0;
	uint32_t c;

	memset(buf, 0xC3, sizeof(buf));
	counts(fs, &k0);
	for (i = 0; i < 3; i++) {
		char name[16];

		snprintf(name, sizeof(name), "d%d", i);
		CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, name, 0755, 0, 0, &dirs[i]));
	}
	while (!full) {
		char name[32];
		cfs_ino_t f;
		ssize_t w;
		uint64_t off = 0;
		int ret;

		snprintf(name, sizeof(name), "f%d", nfiles);
		ret = cfs_mknod(fs, dirs[nfiles % 3], name, S_IFREG | 0644, 0, 0, 0, &f);
		if (ret == -ENOSPC)
			break;
		CHECK_OK(ret);
		nfiles++;
		for (i = 0; i < 20; i++) {
			w = cfs_write(fs, f, buf, sizeof(buf), off);
			if (w == -ENOSPC) {
				full = 1;
				break;
			}
			CHECK(w > 0);
			off += (uint64_t)w;
		}
	}
	counts(fs, &k1);
	/* full: at most a little slack per chunk (metadata reserve) */
	printf("    %d files, %llu of %llu blocks free when ENOSPC came\n", nfiles,
	       (unsigned long long)k1.bfree, (unsigned long long)k0.bfree);
	CHECK(nfiles > 10);
	CHECK(k1.bfree <= (uint64_t)FS_CHUNKS * 16);
	for (c = 0; c < FS_CHUNKS; c++)
		CHECK(k1.cfree[c] <= 16);
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	fs = reopen(fs);
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	for (i = 0; i < nfiles; i++) {
		char name[32];

		snprintf(name, sizeof(name), "f%d", i);
		CHECK_OK(cfs_unlink(fs, dirs[i % 3], name));
	}
	for (i = 0; i < 3; i++) {
		char name[16];

		snprintf(name, sizeof(name), "d%d", i);
		CHECK_OK(cfs_rmdir(fs, CFS_ROOT_INO, name));
	}
	counts(fs, &k1);
	CHECK_EQ(k1.ffree, k0.ffree);
	/* directories may keep no blocks once removed */
	CHECK_EQ(k1.bfree, k0.bfree);
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	fs = reopen(fs);
	counts(fs, &k1);
	CHECK_EQ(k1.bfree, k0.bfree);
	finish(fs);
}

/* A new inode is found by number before its creator has finished it: by
 * anyone holding the number from before it was freed (a readdir listing,
 * a stale handle).  mkdir reuses the number of a removed directory; while
 * it is paused right after inode_alloc wrote the new inode (a directory,
 * no root block yet), a reader lists the number.  It must wait for the
 * directory to be complete, not fail with -EUCLEAN (test_threads saw this
 * about once in 100 runs from its observer). */
static struct {
	struct cfs_fs *fs;
	cfs_ino_t ino;                  /* the number mkdir reuses */
	uint64_t itable_blk;            /* the table block holding it */
	pthread_mutex_t m;
	pthread_cond_t cv;
	int armed, go, done, ret;
} hm = { .m = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static int hm_fill(void *ctx, const char *name, size_t len, cfs_ino_t ino, uint32_t type,
		   uint64_t next)
{
	(void)ctx; (void)name; (void)len; (void)ino; (void)type; (void)next;
	return 0;
}

static void *hm_reader(void *arg)
{
	int ret;

	(void)arg;
	pthread_mutex_lock(&hm.m);
	while (!hm.go)
		pthread_cond_wait(&hm.cv, &hm.m);
	pthread_mutex_unlock(&hm.m);
	ret = cfs_readdir(hm.fs, hm.ino, 0, hm_fill, NULL);
	pthread_mutex_lock(&hm.m);
	hm.ret = ret;
	hm.done = 1;
	pthread_cond_broadcast(&hm.cv);
	pthread_mutex_unlock(&hm.m);
	return NULL;
}

/* The new inode's table block first turning dirty: let the reader run,
 * and give it 300 ms (it waits for the inode's lock when all is well). */
static int hm_note_dirty(void *ctx, uint64_t blk)
{
	struct timespec dl;

	pthread_mutex_lock(&hm.m);
	if (hm.armed && blk == hm.itable_blk) {
		hm.armed = 0;
		hm.go = 1;
		pthread_cond_broadcast(&hm.cv);
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_nsec += 300 * 1000000L;
		dl.tv_sec += dl.tv_nsec / 1000000000L;
		dl.tv_nsec %= 1000000000L;
		while (!hm.done && pthread_cond_timedwait(&hm.cv, &hm.m, &dl) == 0)
			;
	}
	pthread_mutex_unlock(&hm.m);
	return chunk_blk_to_changed_mem(ctx, blk);
}

static void test_new_dir_hidden_until_made(void)
{
	struct cfs_fs *fs = make_fs();
	cfs_ino_t p, d;
	pthread_t th;
	uint32_t off;
	int ret, missed;

	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "p", 0755, 0, 0, &p));
	CHECK_OK(cfs_mkdir(fs, p, "old", 0755, 0, 0, &hm.ino));
	CHECK_OK(cfs_rmdir(fs, p, "old"));
	/* written, so that the new inode's change calls the hook */
	CHECK_OK(cfs_sync(fs));
	hm.fs = fs;
	hm.itable_blk = inode_location(fs, hm.ino, &off);
	hm.armed = 1;
	hm.go = hm.done = 0;
	hm.ret = 1;
	fs->cache.note_dirty = hm_note_dirty;
	CHECK_EQ(pthread_create(&th, NULL, hm_reader, NULL), 0);
	ret = cfs_mkdir(fs, p, "new", 0755, 0, 0, &d);
	pthread_mutex_lock(&hm.m);
	missed = hm.armed;      /* the hook never ran: the reader still waits */
	hm.armed = 0;
	hm.go = 1;
	pthread_cond_broadcast(&hm.cv);
	pthread_mutex_unlock(&hm.m);
	pthread_join(th, NULL);
	fs->cache.note_dirty = chunk_blk_to_changed_mem;
	CHECK_OK(ret);
	if (d != hm.ino || missed)
		TEST_SKIP("mkdir did not reuse the removed directory's number");
	CHECK_OK(hm.ret);
	finish(fs);
}

/* ---- lazy marking (chunk_to_changed_mem, chunk_changed_to_dirty_disk,
 * cfs_clean_idle) ---- */

/* Chunk c's header as it is on the device. */
static void disk_hdr(struct cfs_fs *fs, uint32_t c, struct cfs_chunk_hdr *h)
{
	uint8_t *b = malloc(fs->bsize);

	CHECK(b != NULL);
	CHECK_OK(cfs_bdev_read(fs->bd, chunk_base(fs, c), 1, b));
	CHECK_OK(cfs_meta_verify(b, fs->bsize, fs->seed, CFS_MAGIC_CHUNK, chunk_base(fs, c)));
	cfs_chunk_hdr_decode(b, h);
	free(b);
}

static int disk_dirty(struct cfs_fs *fs, uint32_t c)
{
	struct cfs_chunk_hdr h;

	disk_hdr(fs, c, &h);
	return !!(h.state & CFS_STATE_DIRTY);
}

/* A change stays in memory without touching the disk; the first write-back
 * marks every changed chunk dirty (the header as last written, new state
 * only), and a checkpoint writes everything and marks them clean. */
static void test_lazy_marking(void)
{
	struct cfs_fs *fs = make_fs();
	struct cfs_chunk_hdr before, h;
	cfs_ino_t d, f;
	uint32_t c, cd;

	CHECK_OK(cfs_sync(fs));
	CHECK(cfs_clean_idle(fs, 0) >= 0);
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &d));
	cd = CFS_INO_CHUNK(d);
	CHECK(cd != 0);   /* the root's chunk and the directory's: two chunks */
	disk_hdr(fs, cd, &before);
	CHECK_OK(cfs_mknod(fs, d, "f", S_IFREG | 0644, 0, 0, 0, &f));
	CHECK_EQ(CFS_INO_CHUNK(f), cd);
	for (c = 0; c < FS_CHUNKS; c++)
		CHECK_EQ(disk_dirty(fs, c), 0);
	/* only chunk cd's blocks written back: the root's chunk 0, changed
	 * by the same mkdir, is marked with it */
	CHECK_OK(cache_flush(&fs->cache, chunk_base(fs, cd), chunk_base(fs, cd + 1)));
	CHECK_EQ(disk_dirty(fs, cd), 1);
	CHECK_EQ(disk_dirty(fs, 0), 1);
	for (c = 0; c < FS_CHUNKS; c++)
		if (c != cd && c != 0)
			CHECK_EQ(disk_dirty(fs, c), 0);
	/* the mark carried no count ahead of the blocks it counts */
	disk_hdr(fs, cd, &h);
	CHECK_EQ(h.free_inodes, before.free_inodes);
	CHECK_EQ(h.free_blocks, before.free_blocks);
	CHECK_EQ(h.itable_init, before.itable_init);
	CHECK(h.generation > before.generation);
	CHECK(fs->chunks[cd].hdr.free_inodes < before.free_inodes);
	/* a checkpoint: everything written, every chunk clean, counts current */
	CHECK_EQ(cfs_clean_idle(fs, 0), 2);
	for (c = 0; c < FS_CHUNKS; c++)
		CHECK_EQ(disk_dirty(fs, c), 0);
	disk_hdr(fs, cd, &h);
	CHECK_EQ(h.free_inodes, fs->chunks[cd].hdr.free_inodes);
	/* nothing changed since: no checkpoint, nothing written */
	CHECK_EQ(cfs_clean_idle(fs, 0), 0);
	finish(fs);
}

/* An unlink's entry naming a stub in another chunk: the stub's chunk is
 * noted before the entry changes (xref_hold), so a write-back of the
 * entry's block alone marks it dirty on disk too.  Else a crash after that
 * write leaves the stub, backing no entry on disk, in a chunk marked
 * clean, where a check of the dirty chunks never looks. */
static void test_lazy_stub_hold(void)
{
	struct cfs_fs *fs = make_fs();
	struct dirent_rec r;
	struct inode *root;
	cfs_ino_t d, f;
	uint32_t cd;

	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &d));
	CHECK_OK(cfs_mknod(fs, d, "f", S_IFREG | 0644, 0, 0, 0, &f));
	CHECK_OK(cfs_link(fs, f, CFS_ROOT_INO, "l"));
	cd = CFS_INO_CHUNK(f);
	CHECK(cd != CFS_INO_CHUNK(CFS_ROOT_INO));
	CHECK_OK(cfs_sync(fs));
	CHECK(cfs_clean_idle(fs, 0) > 0);
	CHECK_EQ(disk_dirty(fs, cd), 0);
	CHECK_OK(inode_get(fs, CFS_ROOT_INO, &root));
	CHECK_OK(dir_lookup(fs, root, "l", &r));
	CHECK(r.stub != 0 && CFS_INO_CHUNK(r.stub) == cd);
	/* link_remove's steps, with the root chunk's blocks written back
	 * between the entry's removal and the stub's */
	CHECK_OK(xref_hold(fs, r.stub));
	CHECK_OK(dir_remove(fs, root, "l"));
	CHECK_EQ(disk_dirty(fs, cd), 0);   /* noted, not written: nothing to mark */
	CHECK_OK(cache_flush(&fs->cache, chunk_base(fs, 0), chunk_base(fs, 1)));
	CHECK_EQ(disk_dirty(fs, 0), 1);
	CHECK_EQ(disk_dirty(fs, cd), 1);
	CHECK_OK(xref_del(fs, r.stub, r.ino));
	inode_put(fs, root);
	/* half an unlink (the link count and the directory's counts are
	 * cfs_unlink's): closed unchecked */
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
	dev = NULL;
}

/* A file's extent root moving down into a new node writes that node
 * alone (tree_node_persist_root): no other buffer goes out and no chunk is
 * marked dirty on disk, so the disk as it is then checks clean; the full
 * blocks written meanwhile went where nothing on disk names them. */
static void test_lazy_root_moves_down(void)
{
	struct cfs_fs *fs = make_fs(), *crashed;
	struct cfs_bdev *copy;
	struct cfs_stat st;
	uint8_t buf[FS_BS], got[FS_BS];
	const void *img;
	uint64_t size, i;
	cfs_ino_t f;
	uint32_t c;

	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &f));
	CHECK_OK(cfs_sync(fs));
	CHECK(cfs_clean_idle(fs, 0) >= 0);
	/* every other block: an extent each, more than the inode holds */
	for (i = 0; i < 64; i++) {
		memset(buf, (int)i + 1, sizeof(buf));
		CHECK_EQ(cfs_write(fs, f, buf, sizeof(buf), 2 * i * FS_BS), sizeof(buf));
	}
	CHECK_OK(cfs_getattr(fs, f, &st));
	CHECK(st.blocks * 512 / FS_BS > 64);   /* a node holds the extents */
	for (c = 0; c < FS_CHUNKS; c++)
		CHECK_EQ(disk_dirty(fs, c), 0);
	/* a crash now: the disk is the filesystem as it was at the sync */
	img = cfs_bdev_fault_bytes(dev, &size);
	CHECK(img != NULL);
	CHECK_OK(fixture_image_dev(img, size, FS_BS, &copy));
	CHECK_OK(fixture_open(copy, 0, &crashed));
	CHECK_EQ(cfs_check(crashed, fixture_report, NULL), 0);
	CHECK_OK(cfs_getattr(crashed, f, &st));
	CHECK_EQ(st.size, 0);
	CHECK_OK(cfs_close(crashed));
	cfs_bdev_destroy(copy);
	/* and the file as written, after a sync and a reopen */
	CHECK_OK(cfs_sync(fs));
	fs = reopen(fs);
	for (i = 0; i < 64; i++) {
		memset(buf, (int)i + 1, sizeof(buf));
		CHECK_EQ(cfs_read(fs, f, got, sizeof(got), 2 * i * FS_BS), sizeof(got));
		CHECK(memcmp(got, buf, sizeof(buf)) == 0);
	}
	finish(fs);
}

/* A block freed since the last full flush may still be a structure on
 * disk: a direct write there marks its chunk dirty at once, where one to a
 * block free on disk, or to the file's own, marks nothing; new tree nodes
 * and data are not taken from the freed blocks while others are free; a
 * flush forgets them. */
static void test_lazy_freed_blocks(void)
{
	struct cfs_fs *fs = make_fs();
	uint8_t buf[FS_BS * 8];
	struct inode *ip;
	uint64_t abs, fresh;
	uint32_t run, c, rel;
	cfs_ino_t f;
	int n;

	memset(buf, 0x3c, sizeof(buf));
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &f));
	CHECK_EQ(cfs_write(fs, f, buf, sizeof(buf), 0), sizeof(buf));
	CHECK_OK(inode_get(fs, f, &ip));
	CHECK_EQ(file_map(fs, ip, 0, &abs, &run), 1);
	inode_put(fs, ip);
	c = blk_chunk(fs, abs);
	fresh = chunk_base(fs, c) + fs->sb.chunk_blocks - 2;
	CHECK_OK(cfs_sync(fs));
	CHECK(cfs_clean_idle(fs, 0) >= 0);
	CHECK_EQ(chunk_blocks_freed(fs, abs, run), 0);
	/* the file's own block rewritten: nothing owed, not even a mark at
	 * the next write-back */
	CHECK_OK(cache_write_direct(&fs->cache, abs, 1, buf));
	CHECK_EQ(disk_dirty(fs, c), 0);
	CHECK_EQ(fs->chunks[c].unmarked, 0);
	CHECK_OK(cfs_unlink(fs, CFS_ROOT_INO, "f"));
	CHECK_EQ(chunk_blocks_freed(fs, abs, 1), 1);
	CHECK_EQ(chunk_blocks_freed(fs, fresh, 1), 0);
	CHECK_EQ(disk_dirty(fs, c), 0);
	CHECK_OK(cache_write_direct(&fs->cache, fresh, 1, buf));
	CHECK_EQ(disk_dirty(fs, c), 0);
	CHECK_OK(cache_write_direct(&fs->cache, abs, 1, buf));
	CHECK_EQ(disk_dirty(fs, c), 1);
	CHECK_EQ(chunk_alloc_meta(fs, c, 1, &rel), 1);
	CHECK_EQ(chunk_blocks_freed(fs, chunk_base(fs, c) + rel, 1), 0);
	CHECK_OK(chunk_free_blocks(fs, c, rel, 1));
	/* new data goes around the freed blocks, even from a goal among them */
	n = chunk_alloc_blocks(fs, c, (uint32_t)(abs - chunk_base(fs, c)), 4, &rel);
	CHECK(n > 0);
	CHECK_EQ(chunk_blocks_freed(fs, chunk_base(fs, c) + rel, (uint64_t)n), 0);
	CHECK_OK(chunk_free_blocks(fs, c, rel, (uint32_t)n));
	CHECK_OK(cfs_sync(fs));
	CHECK_EQ(chunk_blocks_freed(fs, abs, run), 0);
	finish(fs);
}

/* A checkpoint is due once dirty buffers fill half the cache, however
 * long the idle time asked for: the write-backs that making room would
 * soon do would otherwise mark the changed chunks dirty for that long. */
static void test_checkpoint_at_half_dirty(void)
{
	struct cfs_fs *fs = make_fs();
	char name[32];
	cfs_ino_t f;
	uint32_t c;
	int i;

	CHECK_OK(cfs_sync(fs));
	CHECK(cfs_clean_idle(fs, 0) >= 0);
	cache_set_limit(&fs->cache, 64 * (size_t)fs->bsize);
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "one", S_IFREG | 0644, 0, 0, 0, &f));
	CHECK(!cache_dirty_half(&fs->cache));
	CHECK_EQ(cfs_clean_idle(fs, 1e6), 0);
	for (i = 0; !cache_dirty_half(&fs->cache); i++) {
		CHECK(i < 10000);
		snprintf(name, sizeof(name), "d%d", i);
		CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, name, 0755, 0, 0, &f));
	}
	CHECK(cfs_clean_idle(fs, 1e6) > 0);
	for (c = 0; c < FS_CHUNKS; c++)
		CHECK_EQ(disk_dirty(fs, c), 0);
	CHECK(!cache_dirty_half(&fs->cache));
	finish(fs);
}

/* With lazy marking a block freed since the last full flush is taken only
 * when no other is free in the chunk, however many freed runs lie between
 * the goal and the first one that is not (the chunk's last block freed
 * too, as churn leaves it). */
static void test_lazy_avoids_freed(void)
{
	struct cfs_fs *fs = make_fs();
	uint32_t c = 1, p = fs->sb.data_start + 100, last = (uint32_t)fs->sb.chunk_blocks - 1;
	uint32_t rel, i;
	uint64_t base = chunk_base(fs, c);
	uint8_t *used = calloc(fs->sb.chunk_blocks, 1);
	int n;

	CHECK(used != NULL);
	fs->checking = 1;     /* the repair reserve too: every block in use */
	while ((n = chunk_alloc_blocks(fs, c, 0, 1u << 16, &rel)) > 0)
		memset(used + rel, 1, (size_t)n);
	fs->checking = 0;
	CHECK_EQ(n, -ENOSPC);
	CHECK_OK(chunk_free_blocks(fs, c, p + 200, 4));
	CHECK_OK(cfs_sync(fs));
	CHECK_EQ(chunk_blocks_freed(fs, base + p + 200, 4), 0);
	for (i = 0; i < 30; i++)
		CHECK_OK(chunk_free_blocks(fs, c, p + 2 * i, 1));
	CHECK_OK(chunk_free_blocks(fs, c, last, 1));
	CHECK_EQ(chunk_blocks_freed(fs, base + p, 1), 1);
	CHECK_EQ(chunk_alloc_blocks(fs, c, p, 8, &rel), 4);
	CHECK_EQ(rel, p + 200);
	/* only freed blocks left: taken, never ENOSPC */
	CHECK_EQ(chunk_alloc_meta(fs, c, 1, &rel), 1);
	CHECK_EQ(chunk_blocks_freed(fs, base + rel, 1), 1);
	/* give back what is still taken, so the check at the end passes */
	for (i = 0; i < 30; i++)
		used[p + 2 * i] = 0;
	used[last] = 0;
	used[rel] = 1;
	for (i = 0; i < fs->sb.chunk_blocks; i++)
		if (used[i])
			CHECK_OK(chunk_free_blocks(fs, c, i, 1));
	free(used);
	finish(fs);
}

int main(void)
{
	TEST_RUN(test_roundtrip);
	TEST_RUN(test_flush_range);
	TEST_RUN(test_eviction_writes_back);
	TEST_RUN(test_eviction_keeps_dirty);
	TEST_RUN(test_referenced_not_evicted);
	TEST_RUN(test_forget);
	TEST_RUN(test_meta_checksum);
	TEST_RUN(test_before_dirty_hook);
	TEST_RUN(test_write_failure_at_flush);
	TEST_RUN(test_write_failure_at_eviction);
	TEST_RUN(test_read_failure);
	TEST_RUN(test_readahead);
	TEST_RUN(test_concurrent_gets);
	TEST_RUN(test_chunk_block_alloc);
	TEST_RUN(test_chunk_bad_free);
	TEST_RUN(test_known_bug_double_free_count);
	TEST_RUN(test_chunk_inode_alloc);
	TEST_RUN(test_fill_public_api);
	TEST_RUN(test_new_dir_hidden_until_made);
	TEST_RUN(test_lazy_marking);
	TEST_RUN(test_lazy_stub_hold);
	TEST_RUN(test_lazy_root_moves_down);
	TEST_RUN(test_lazy_freed_blocks);
	TEST_RUN(test_lazy_avoids_freed);
	TEST_RUN(test_checkpoint_at_half_dirty);
	return TEST_DONE();
}

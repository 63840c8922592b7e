/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Block cache: the only path from the filesystem to the block device.
 *
 * Buffers are reference counted.  Their contents are protected by the
 * caller's locks (inode or chunk), not by the cache.  Metadata buffers get
 * their checksum computed on a private copy at write-back, so a block is
 * never written with a checksum that does not match what was written. */
#ifndef CHUNKFS_CACHE_H
#define CHUNKFS_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct cfs_bdev;

struct buf {
	uint64_t blk;
	uint8_t *data;
	int ref;
	unsigned flags;          /* BF_* */
	struct buf *hnext;
	struct buf *prev, *next; /* LRU, unreferenced buffers only */
};

#define BF_VALID    0x1
#define BF_DIRTY    0x2
#define BF_META     0x4      /* has the common metadata header: csum at write */
#define BF_LOADING  0x8
#define BF_VERIFIED 0x10
/* Written only by cache_flush, after every other dirty buffer and a
 * device flush (cache_order); holds a reference meanwhile. */
#define BF_ORDERED  0x20
/* File data (buf_dirty_data): written before the other buffers of a
 * flush, and a device flush comes between (cache_data_barrier). */
#define BF_DATA     0x40

struct cache {
	struct cfs_bdev *bd;
	uint32_t bsize;
	uint32_t seed;
	pthread_mutex_t lock;
	pthread_cond_t loaded;
	struct buf **hash;
	size_t hmask;
	size_t nbufs, max_bufs, ndirty;
	size_t nordered;         /* buffers with BF_ORDERED */
	/* held by cache_flush and cache_order throughout: an ordering never
	 * starts between a flush's two stages */
	pthread_mutex_t flush_lock;
	struct buf lru;          /* sentinel: lru.next is the oldest */
	int io_error;            /* a write-back failed: report at the next flush */
	/* file data written (straight, or a BF_DATA buffer) since the last
	 * device flush began; atomic */
	int data_pending;
	/* Called (without the cache lock) before a direct write of count
	 * blocks from blk, and before a buffer first turns dirty (count 1)
	 * unless note_dirty is set, so the owner can mark the blocks' chunks
	 * dirty on disk first. */
	int (*before_dirty)(void *ctx, uint64_t blk, uint32_t count);
	/* Lazy marking (both set or neither): a buffer first turning dirty
	 * only calls note_dirty (without the cache lock, no I/O), and
	 * before_write is called with the cache lock held before any dirty
	 * buffer is written, so the owner marks on disk then what changed. */
	int (*note_dirty)(void *ctx, uint64_t blk);
	int (*before_write)(void *ctx);
	/* Called when a metadata block fails verification (err: -EBADMSG or
	 * -EUCLEAN), so the owner can record the corruption; may be NULL. */
	void (*on_corrupt)(void *ctx, uint64_t blk, int err);
	void *ctx;
};

#define CG_NOREAD 0x1            /* caller overwrites: zero-fill, no read */

int cache_init(struct cache *c, struct cfs_bdev *bd, size_t max_bytes, uint32_t seed);
/* Change the size bound (at least 64 buffers); returns the old one in
 * bytes.  Shrinks at once as far as unreferenced buffers allow. */
size_t cache_set_limit(struct cache *c, size_t max_bytes);
void cache_destroy(struct cache *c);   /* drops everything, dirty or not */
int cache_get(struct cache *c, uint64_t blk, int flags, struct buf **out);
/* Read up to n blocks from blk that are not cached yet in one device read
 * (a hint for scans; errors are left for cache_get to report). */
void cache_readahead(struct cache *c, uint64_t blk, uint32_t n);
/* Get a metadata block and verify magic, checksum and block number. */
int cache_get_meta(struct cache *c, uint64_t blk, uint32_t magic, struct buf **out);
/* A new metadata block: zeroed, header initialised, not read. */
int cache_new_meta(struct cache *c, uint64_t blk, uint32_t magic, struct buf **out);
void buf_put(struct cache *c, struct buf *b);
int buf_dirty(struct cache *c, struct buf *b);
/* buf_dirty of a file data block: no other dirty buffer (a map naming
 * the block) is written back before it is on the disk (ordered mode,
 * docs/WRITEBACK.md). */
int buf_dirty_data(struct cache *c, struct buf *b);
/* Write dirty buffers with lo <= blk < hi, then flush the device.  If any
 * of them is ordered (cache_order), every other dirty buffer is written
 * and flushed first, and the ordered ones after that. */
int cache_flush(struct cache *c, uint64_t lo, uint64_t hi);
/* cache_flush, running between (when buffers are ordered) once the
 * unordered ones are on the disk and before the ordered ones are
 * written: what the ordered ones need on the disk besides blocks. */
int cache_flush_between(struct cache *c, uint64_t lo, uint64_t hi,
			int (*between)(void *), void *ctx);
/* b (referenced, about to change) must not reach the disk before what
 * every other dirty buffer holds now: a cache_flush before the change,
 * made lazily.  From now on b is written only by cache_flush, after the
 * unordered buffers and a device flush, and what b holds now is written
 * at once if other buffers are ordered (they may rely on it).  Ordered
 * buffers are not ordered among themselves: one must never need another
 * on disk first. */
int cache_order(struct cache *c, struct buf *b);
/* Write b now, if dirty, and flush the device, without before_write and
 * without the other dirty buffers: for a block the owner knows nothing on
 * disk names yet, so that writing it changes nothing a check could see. */
int cache_write_alone(struct cache *c, struct buf *b);
/* Read file data blocks straight into dst, preferring cached copies. */
int cache_read_direct(struct cache *c, uint64_t blk, uint32_t count, uint8_t *dst);
/* Write file data blocks straight from src with one device write.  A
 * cached copy of any of them is dropped or brought up to date first, so no
 * stale copy can be written back over the new data. */
int cache_write_direct(struct cache *c, uint64_t blk, uint32_t count, const uint8_t *src);
/* Whether dirty buffers fill at least half the cache: past that, making
 * room soon means writing them back one by one. */
bool cache_dirty_half(struct cache *c);
/* The block was freed: forget its contents (dirty or not). */
void cache_forget(struct cache *c, uint64_t blk);
/* Drop the clean, unreferenced buffers with lo <= blk < hi, so that the
 * next use reads the disk (another writer changed it: scrub).  Returns
 * how many in the range could not be dropped (in use, loading or dirty). */
size_t cache_drop(struct cache *c, uint64_t lo, uint64_t hi);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Block cache with LRU eviction and write-back. */
#include "cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "format.h"

static size_t hash_slot(const struct cache *c, uint64_t blk)
{
	return (size_t)((blk * 0x9E3779B97F4A7C15ull) >> 20) & c->hmask;
}

int cache_init(struct cache *c, struct cfs_bdev *bd, size_t max_bytes, uint32_t seed)
{
	pthread_mutexattr_t ma;
	size_t hs = 1024;

	memset(c, 0, sizeof(*c));
	c->bd = bd;
	c->bsize = bd->block_size;
	c->seed = seed;
	c->max_bufs = max_bytes / c->bsize;
	if (c->max_bufs < 64)
		c->max_bufs = 64;
	while (hs < c->max_bufs)
		hs <<= 1;
	c->hash = calloc(hs, sizeof(*c->hash));
	if (!c->hash)
		return -ENOMEM;
	c->hmask = hs - 1;
	c->lru.next = c->lru.prev = &c->lru;
	pthread_mutexattr_init(&ma);
	/* held for a few instructions at a time by every block access: spin a
	 * little before sleeping, so fsck's workers do not trade futex calls */
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&c->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_mutex_init(&c->flush_lock, NULL);
	pthread_cond_init(&c->loaded, NULL);
	return 0;
}

static void lru_del(struct buf *b)
{
	if (b->next) {
		b->prev->next = b->next;
		b->next->prev = b->prev;
		b->next = b->prev = NULL;
	}
}

static void lru_add(struct cache *c, struct buf *b)
{
	b->prev = c->lru.prev;
	b->next = &c->lru;
	c->lru.prev->next = b;
	c->lru.prev = b;
}

static void hash_del(struct cache *c, struct buf *b)
{
	struct buf **p = &c->hash[hash_slot(c, b->blk)];

	while (*p && *p != b)
		p = &(*p)->hnext;
	if (*p)
		*p = b->hnext;
}

static void buf_free(struct cache *c, struct buf *b)
{
	hash_del(c, b);
	lru_del(b);
	if (b->flags & BF_DIRTY)
		c->ndirty--;
	c->nbufs--;
	free(b->data);
	free(b);
}

void cache_destroy(struct cache *c)
{
	size_t i;

	if (!c->hash)
		return;
	for (i = 0; i <= c->hmask; i++)
		while (c->hash[i])
			buf_free(c, c->hash[i]);
	free(c->hash);
	c->hash = NULL;
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->flush_lock);
	pthread_cond_destroy(&c->loaded);
}

/* Write one dirty buffer as it is now.  Called with the lock held; the
 * dirty bit is cleared first so a concurrent modification re-dirties it. */
static int buf_write(struct cache *c, struct buf *b, uint8_t *bounce)
{
	const uint8_t *src = b->data;
	int ret;

	b->flags &= ~BF_DIRTY;
	c->ndirty--;
	if (b->flags & BF_META) {
		memcpy(bounce, b->data, c->bsize);
		cfs_meta_csum_set(bounce, c->bsize, c->seed);
		src = bounce;
	}
	ret = cfs_bdev_write(c->bd, b->blk, 1, src);
	if (ret < 0) {
		c->io_error = ret;
		b->flags |= BF_DIRTY;
		c->ndirty++;
	} else if (b->flags & BF_DATA) {
		__atomic_store_n(&c->data_pending, 1, __ATOMIC_RELEASE);
	}
	return ret;
}

/* Before a buffer other than file data is written: if file data was
 * written since the last device flush began, flush the device first.  A
 * block's map (an extent, an inode) is made after its data was written
 * or dirtied, so it never reaches the disk before that data, and a crash
 * cannot show a new block of a file with what it held before (another
 * file's deleted bytes); docs/WRITEBACK.md. */
static int data_barrier(struct cache *c)
{
	int ret;

	if (!__atomic_exchange_n(&c->data_pending, 0, __ATOMIC_ACQ_REL))
		return 0;
	/* whole, even inside an fsync's ranged flushes: the maps it writes
	 * may be any file's, so any file's data must be down first */
	ret = cfs_bdev_flush_full(c->bd);
	if (ret < 0)
		__atomic_store_n(&c->data_pending, 1, __ATOMIC_RELEASE);
	return ret;
}

/* buf_write after the owner's before_write (lazy marking), and after the
 * data written so far when b is not file data. */
static int buf_writeback(struct cache *c, struct buf *b, uint8_t *bounce)
{
	int ret = c->before_write ? c->before_write(c->ctx) : 0;

	if (ret == 0 && !(b->flags & BF_DATA))
		ret = data_barrier(c);
	if (ret < 0) {
		c->io_error = ret;
		return ret;
	}
	return buf_write(c, b, bounce);
}

/* Room is made from clean buffers first: a dirty one met at the LRU's
 * head goes to its tail while dirty buffers fill less than 3/4 of the
 * cache.  Writing it would first mark every chunk changed in memory dirty
 * on disk (lazy marking), and they would stay so until the next
 * checkpoint; the checkpoint, due once half the cache is dirty
 * (cache_dirty_half), writes it with the rest.  At most 64 moves per
 * search, so a cache of dirty buffers is not walked round and round.
 * Returns whether b was moved. */
static bool dirty_kept(struct cache *c, struct buf *b, unsigned *moved)
{
	if (c->ndirty >= c->max_bufs / 4 * 3 || *moved >= 64)
		return false;
	(*moved)++;
	lru_del(b);
	lru_add(c, b);
	return true;
}

/* Make room: drop clean unreferenced buffers, writing dirty ones first. */
static void cache_shrink(struct cache *c)
{
	struct buf *b = c->lru.next, *n;
	uint8_t *bounce = NULL;
	unsigned moved = 0;

	while (c->nbufs >= c->max_bufs && b != &c->lru) {
		n = b->next;
		if (b->flags & BF_DIRTY) {
			if (dirty_kept(c, b, &moved)) {
				b = n;
				continue;
			}
			if (!bounce && !(bounce = malloc(c->bsize)))
				break;
			if (buf_writeback(c, b, bounce) < 0) {
				b = n;
				continue;
			}
		}
		buf_free(c, b);
		b = n;
	}
	free(bounce);
}

size_t cache_set_limit(struct cache *c, size_t max_bytes)
{
	size_t old;

	pthread_mutex_lock(&c->lock);
	old = c->max_bufs * c->bsize;
	c->max_bufs = max_bytes / c->bsize < 64 ? 64 : max_bytes / c->bsize;
	cache_shrink(c);
	pthread_mutex_unlock(&c->lock);
	return old;
}

static struct buf *hash_find(struct cache *c, uint64_t blk)
{
	struct buf *b = c->hash[hash_slot(c, blk)];

	while (b && b->blk != blk)
		b = b->hnext;
	return b;
}

/* The read of b is over (ok: its data is valid): wake whoever waits for
 * it.  Called with the lock held. */
static void buf_loaded(struct cache *c, struct buf *b, int ok)
{
	b->flags &= ~BF_LOADING;
	if (ok)
		b->flags |= BF_VALID;
	pthread_cond_broadcast(&c->loaded);
}

static int buf_load(struct cache *c, struct buf *b, int flags)
{
	int ret = 0;

	if (flags & CG_NOREAD)
		memset(b->data, 0, c->bsize);
	else
		ret = cfs_bdev_read(c->bd, b->blk, 1, b->data);
	pthread_mutex_lock(&c->lock);
	buf_loaded(c, b, ret == 0);
	return ret;
}

/* At the bound, the oldest clean unreferenced buffer is taken out of the
 * cache and reused as it is: a scan reading block after block (fsck)
 * would otherwise free and allocate a buffer per block.  Still counted in
 * nbufs. */
static struct buf *buf_steal(struct cache *c)
{
	struct buf *b, *n;
	uint8_t *data;
	int tries = 8;    /* a mostly dirty cache is left to cache_shrink */
	unsigned moved = 0;

	for (b = c->lru.next; b != &c->lru && tries--; b = n) {
		n = b->next;
		if (b->flags & BF_DIRTY) {
			tries += dirty_kept(c, b, &moved);
			continue;
		}
		hash_del(c, b);
		lru_del(b);
		data = b->data;
		memset(b, 0, sizeof(*b));
		b->data = data;
		return b;
	}
	return NULL;
}

/* A buffer for blk, not yet read: referenced, BF_LOADING, in the hash.
 * Called with the lock held and blk not cached. */
static struct buf *buf_new(struct cache *c, uint64_t blk)
{
	struct buf *b = c->nbufs >= c->max_bufs ? buf_steal(c) : NULL;

	if (!b) {
		if (c->nbufs >= c->max_bufs)
			cache_shrink(c);
		b = calloc(1, sizeof(*b));
		if (b)
			b->data = malloc(c->bsize);
		if (!b || !b->data) {
			free(b);
			return NULL;
		}
		c->nbufs++;
	}
	b->blk = blk;
	b->ref = 1;
	b->flags = BF_LOADING;
	b->hnext = c->hash[hash_slot(c, blk)];
	c->hash[hash_slot(c, blk)] = b;
	return b;
}

/* Read the uncached blocks at the start of [blk, blk+n) with one device
 * read: a scan that then gets them one by one makes one system call
 * instead of n.  Only a hint: on failure the blocks are left uncached and
 * cache_get reads (and reports) them itself. */
void cache_readahead(struct cache *c, uint64_t blk, uint32_t n)
{
	struct buf **bs;
	uint8_t *tmp;
	uint32_t i, got = 0;
	int ret;

	if (blk >= c->bd->nblocks)
		return;
	if (n > c->bd->nblocks - blk)
		n = (uint32_t)(c->bd->nblocks - blk);
	if (n > c->max_bufs / 4)
		n = (uint32_t)(c->max_bufs / 4);
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < n && !hash_find(c, blk + i); i++)
		;
	pthread_mutex_unlock(&c->lock);
	if (i < 2)
		return;   /* cached already, or nothing to gain over cache_get */
	n = i;
	bs = calloc(n, sizeof(*bs));
	tmp = malloc((size_t)n * c->bsize);
	if (!bs || !tmp)
		goto out;
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < n && !hash_find(c, blk + i); i++) {
		bs[got] = buf_new(c, blk + i);
		if (!bs[got])
			break;
		got++;
	}
	pthread_mutex_unlock(&c->lock);
	ret = got ? cfs_bdev_read(c->bd, blk, got, tmp) : 0;
	for (i = 0; i < got; i++) {
		if (ret == 0)
			memcpy(bs[i]->data, tmp + (size_t)i * c->bsize, c->bsize);
		pthread_mutex_lock(&c->lock);
		buf_loaded(c, bs[i], ret == 0);
		pthread_mutex_unlock(&c->lock);
		buf_put(c, bs[i]);
	}
out:
	free(bs);
	free(tmp);
}

int cache_get(struct cache *c, uint64_t blk, int flags, struct buf **out)
{
	struct buf *b;
	int ret = 0;

	if (blk >= c->bd->nblocks)
		return -EUCLEAN;
	pthread_mutex_lock(&c->lock);
again:
	b = hash_find(c, blk);
	if (b) {
		if (b->flags & BF_LOADING) {
			pthread_cond_wait(&c->loaded, &c->lock);
			goto again;
		}
		if (!b->ref)
			lru_del(b);
		b->ref++;
		if (flags & CG_NOREAD) {
			memset(b->data, 0, c->bsize);
			b->flags = (b->flags & BF_DIRTY) | BF_VALID;
		} else if (!(b->flags & BF_VALID)) {
			b->flags |= BF_LOADING;
			pthread_mutex_unlock(&c->lock);
			ret = buf_load(c, b, flags);
			if (ret < 0) {
				b->ref--;
				if (!b->ref)
					buf_free(c, b);
				b = NULL;
			}
		}
		goto out;
	}
	b = buf_new(c, blk);
	if (!b) {
		ret = -ENOMEM;
		goto out;
	}
	pthread_mutex_unlock(&c->lock);
	ret = buf_load(c, b, flags);
	if (ret < 0) {
		b->ref--;
		buf_free(c, b);
		b = NULL;
	}
out:
	pthread_mutex_unlock(&c->lock);
	*out = b;
	return ret;
}

static int meta_corrupt(struct cache *c, uint64_t blk, int err)
{
	if (c->on_corrupt)
		c->on_corrupt(c->ctx, blk, err);
	return err;
}

int cache_get_meta(struct cache *c, uint64_t blk, uint32_t magic, struct buf **out)
{
	struct buf *b;
	unsigned flags;
	int ret = cache_get(c, blk, 0, &b);

	if (ret < 0)
		return ret;
	/* the flags change under the lock (a write-back clears BF_DIRTY) */
	pthread_mutex_lock(&c->lock);
	flags = b->flags;
	pthread_mutex_unlock(&c->lock);
	/* Verified once per load; BF_META marks it for checksumming later. */
	if (!(flags & BF_VERIFIED)) {
		ret = cfs_meta_verify(b->data, c->bsize, c->seed, magic, blk);
		if (ret < 0 && !(flags & BF_DIRTY)) {
			buf_put(c, b);
			return meta_corrupt(c, blk, ret);
		}
		pthread_mutex_lock(&c->lock);
		b->flags |= BF_VERIFIED | BF_META;
		pthread_mutex_unlock(&c->lock);
	} else if (cfs_meta_magic(b->data) != magic) {
		buf_put(c, b);
		return meta_corrupt(c, blk, -EUCLEAN);
	}
	*out = b;
	return 0;
}

int cache_new_meta(struct cache *c, uint64_t blk, uint32_t magic, struct buf **out)
{
	struct buf *b;
	int ret = cache_get(c, blk, CG_NOREAD, &b);

	if (ret < 0)
		return ret;
	cfs_meta_init(b->data, magic, blk);
	pthread_mutex_lock(&c->lock);
	b->flags |= BF_VERIFIED | BF_META;
	pthread_mutex_unlock(&c->lock);
	*out = b;
	return 0;
}

void buf_put(struct cache *c, struct buf *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&c->lock);
	if (--b->ref == 0) {
		lru_add(c, b);
		if (c->nbufs > c->max_bufs)
			cache_shrink(c);
	}
	pthread_mutex_unlock(&c->lock);
}

int buf_dirty(struct cache *c, struct buf *b)
{
	int ret;

	if (b->flags & BF_DIRTY)
		return 0;
	if (c->note_dirty) {
		ret = c->note_dirty(c->ctx, b->blk);
		if (ret < 0)
			return ret;
	} else if (c->before_dirty) {
		ret = c->before_dirty(c->ctx, b->blk, 1);
		if (ret < 0)
			return ret;
	}
	pthread_mutex_lock(&c->lock);
	if (!(b->flags & BF_DIRTY)) {
		b->flags |= BF_DIRTY;
		c->ndirty++;
	}
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int buf_dirty_data(struct cache *c, struct buf *b)
{
	/* marked first: a flush meanwhile must not take it for a map */
	pthread_mutex_lock(&c->lock);
	b->flags |= BF_DATA;
	pthread_mutex_unlock(&c->lock);
	return buf_dirty(c, b);
}

/* b is no longer ordered: drop the reference the ordering held. */
static void buf_unorder(struct cache *c, struct buf *b)
{
	b->flags &= ~BF_ORDERED;
	c->nordered--;
	if (--b->ref == 0)
		lru_add(c, b);
}

/* Write the dirty buffers in [lo, hi), the ordered ones (ordered: 1) or
 * the others (0).  Called with the lock held. */
static int flush_stage(struct cache *c, uint64_t lo, uint64_t hi, int ordered,
		       uint8_t *bounce)
{
	size_t i;
	struct buf *b, *next;
	int ret = 0, r, data;

	/* file data first: the first other buffer then flushes it
	 * (data_barrier) */
	for (data = 1; data >= 0; data--) {
		for (i = 0; i <= c->hmask && c->ndirty; i++) {
			for (b = c->hash[i]; b; b = next) {
				next = b->hnext;
				if (!(b->flags & BF_DIRTY) || b->blk < lo || b->blk >= hi ||
				    !(b->flags & BF_ORDERED) != !ordered ||
				    !(b->flags & BF_DATA) != !data)
					continue;
				r = buf_writeback(c, b, bounce);
				if (r < 0 && !ret)
					ret = r;
				if (r == 0 && ordered)
					buf_unorder(c, b);
			}
		}
	}
	return ret;
}

/* Ordered buffers that are clean (written, or forgotten) need nothing. */
static void unorder_clean(struct cache *c)
{
	size_t i;
	struct buf *b;

	for (i = 0; i <= c->hmask && c->nordered; i++)
		for (b = c->hash[i]; b; b = b->hnext)
			if ((b->flags & (BF_ORDERED | BF_DIRTY)) == BF_ORDERED)
				buf_unorder(c, b);
}

/* cache_flush with flush_lock held: the unordered buffers, a device
 * flush, then (when any are ordered) between and the ordered ones and
 * another. */
static int flush_between(struct cache *c, uint64_t lo, uint64_t hi,
			 int (*between)(void *), void *ctx)
{
	uint8_t *bounce = malloc(c->bsize);
	int ret, r, ordered;

	if (!bounce)
		return -ENOMEM;
	pthread_mutex_lock(&c->lock);
	ordered = c->nordered > 0;
	/* an ordered buffer may rely on unordered ones outside [lo, hi) */
	ret = flush_stage(c, ordered ? 0 : lo, ordered ? UINT64_MAX : hi, 0, bounce);
	pthread_mutex_unlock(&c->lock);
	if (ordered) {
		r = cfs_bdev_flush(c->bd);
		if (!ret)
			ret = r;
		if (!ret && between)
			ret = between(ctx);
		pthread_mutex_lock(&c->lock);
		/* nothing of the ordered ones goes out unless all the rest is
		 * on disk */
		if (!ret)
			ret = flush_stage(c, lo, hi, 1, bounce);
		unorder_clean(c);
		pthread_mutex_unlock(&c->lock);
	}
	free(bounce);
	pthread_mutex_lock(&c->lock);
	if (!ret && c->io_error)
		ret = c->io_error;
	c->io_error = 0;
	pthread_mutex_unlock(&c->lock);
	/* what was written before this flush needs no other */
	__atomic_store_n(&c->data_pending, 0, __ATOMIC_RELEASE);
	r = cfs_bdev_flush(c->bd);
	if (r < 0)
		__atomic_store_n(&c->data_pending, 1, __ATOMIC_RELEASE);
	return ret ? ret : r;
}

static int flush_locked(struct cache *c, uint64_t lo, uint64_t hi)
{
	return flush_between(c, lo, hi, NULL, NULL);
}

int cache_flush(struct cache *c, uint64_t lo, uint64_t hi)
{
	return cache_flush_between(c, lo, hi, NULL, NULL);
}

int cache_flush_between(struct cache *c, uint64_t lo, uint64_t hi,
			int (*between)(void *), void *ctx)
{
	int ret;

	pthread_mutex_lock(&c->flush_lock);
	ret = flush_between(c, lo, hi, between, ctx);
	pthread_mutex_unlock(&c->flush_lock);
	return ret;
}

/* Ordered buffers are held in memory until a flush: past this many, an
 * ordering is a flush made at once, as if unordered. */
#define ORDER_MAX 64

int cache_order(struct cache *c, struct buf *b)
{
	uint8_t *bounce = NULL;
	int ret = 0;

	pthread_mutex_lock(&c->flush_lock);
	if (c->nordered >= ORDER_MAX) {
		ret = flush_locked(c, 0, UINT64_MAX);
		goto out;
	}
	if (c->nordered && (b->flags & BF_DIRTY) && !(b->flags & BF_ORDERED) &&
	    !(bounce = malloc(c->bsize))) {
		ret = -ENOMEM;
		goto out;
	}
	pthread_mutex_lock(&c->lock);
	if (!(b->flags & BF_ORDERED)) {
		/* another ordered buffer may need what b holds now (b may
		 * be the node that took its records): write it before b
		 * changes, to be flushed before any ordered one is written */
		if (bounce && (b->flags & BF_DIRTY))
			ret = buf_writeback(c, b, bounce);
		if (ret == 0) {
			b->flags |= BF_ORDERED;
			b->ref++;
			c->nordered++;
		}
	}
	pthread_mutex_unlock(&c->lock);
out:
	pthread_mutex_unlock(&c->flush_lock);
	free(bounce);
	return ret;
}

int cache_write_alone(struct cache *c, struct buf *b)
{
	uint8_t *bounce = malloc(c->bsize);
	int ret = 0;

	if (!bounce)
		return -ENOMEM;
	pthread_mutex_lock(&c->lock);
	if (b->flags & BF_DIRTY)
		ret = buf_write(c, b, bounce);
	pthread_mutex_unlock(&c->lock);
	free(bounce);
	return ret ? ret : cfs_bdev_flush(c->bd);
}

void cache_forget(struct cache *c, uint64_t blk)
{
	struct buf *b;

	pthread_mutex_lock(&c->lock);
	b = hash_find(c, blk);
	if (b && !(b->flags & BF_LOADING)) {
		if (b->flags & BF_DIRTY) {
			b->flags &= ~BF_DIRTY;
			c->ndirty--;
		}
		/* a freed block needs no ordering */
		if (b->flags & BF_ORDERED) {
			b->flags &= ~BF_ORDERED;
			c->nordered--;
			b->ref--;
		}
		if (!b->ref)
			buf_free(c, b);
		else
			b->flags &= ~(BF_VERIFIED | BF_META);
	}
	pthread_mutex_unlock(&c->lock);
}

bool cache_dirty_half(struct cache *c)
{
	bool half;

	pthread_mutex_lock(&c->lock);
	half = c->ndirty >= c->max_bufs / 2;
	pthread_mutex_unlock(&c->lock);
	return half;
}

size_t cache_drop(struct cache *c, uint64_t lo, uint64_t hi)
{
	struct buf *b, *next;
	size_t i, busy = 0;

	pthread_mutex_lock(&c->lock);
	for (i = 0; i <= c->hmask; i++)
		for (b = c->hash[i]; b; b = next) {
			next = b->hnext;
			if (b->blk < lo || b->blk >= hi)
				continue;
			if (b->ref || (b->flags & (BF_DIRTY | BF_LOADING)))
				busy++;
			else
				buf_free(c, b);
		}
	pthread_mutex_unlock(&c->lock);
	return busy;
}

/* Stream count blocks of file data into dst without caching them: a copy
 * in the cache (possibly dirty) wins over the device.  The caller's inode
 * lock keeps writers of these blocks out meanwhile. */
int cache_read_direct(struct cache *c, uint64_t blk, uint32_t count, uint8_t *dst)
{
	uint32_t i = 0, j;
	struct buf *b;
	int ret;

	while (i < count) {
		pthread_mutex_lock(&c->lock);
		b = hash_find(c, blk + i);
		if (b) {
			pthread_mutex_unlock(&c->lock);
			ret = cache_get(c, blk + i, 0, &b);
			if (ret < 0)
				return ret;
			memcpy(dst + (size_t)i * c->bsize, b->data, c->bsize);
			buf_put(c, b);
			i++;
			continue;
		}
		for (j = i + 1; j < count && !hash_find(c, blk + j); j++)
			;
		pthread_mutex_unlock(&c->lock);
		ret = cfs_bdev_read(c->bd, blk + i, j - i, dst + (size_t)i * c->bsize);
		if (ret < 0)
			return ret;
		i = j;
	}
	return 0;
}

/* Make the cached copies of [blk, blk+count) agree with src before src
 * goes to the device.  Under the lock, so a write-back racing with the
 * device write can only write the new contents, never the old: unused
 * clean copies are dropped, the others get the new bytes (a dirty one
 * stays dirty and later writes the same bytes again). */
static void direct_sync_cached(struct cache *c, uint64_t blk, uint32_t count,
			       const uint8_t *src)
{
	struct buf *b;
	uint32_t i = 0;

	pthread_mutex_lock(&c->lock);
	while (i < count) {
		b = hash_find(c, blk + i);
		if (b && (b->flags & BF_LOADING)) {
			/* look again once loaded: the load may have failed */
			pthread_cond_wait(&c->loaded, &c->lock);
			continue;
		}
		if (b && !b->ref && !(b->flags & BF_DIRTY)) {
			buf_free(c, b);
		} else if (b) {
			memcpy(b->data, src + (size_t)i * c->bsize, c->bsize);
			/* file data now: no metadata checksum at write-back */
			b->flags = (b->flags & BF_DIRTY) | BF_VALID | BF_DATA;
		}
		i++;
	}
	pthread_mutex_unlock(&c->lock);
}

/* The write-side mirror of cache_read_direct.  The caller's inode lock
 * keeps other users of these blocks out meanwhile.  The owner's
 * before_dirty comes first, as for buf_dirty. */
int cache_write_direct(struct cache *c, uint64_t blk, uint32_t count, const uint8_t *src)
{
	int ret;

	if (!count)
		return 0;
	if (blk >= c->bd->nblocks || count > c->bd->nblocks - blk)
		return -EUCLEAN;
	ret = c->before_dirty ? c->before_dirty(c->ctx, blk, count) : 0;
	if (ret < 0)
		return ret;
	direct_sync_cached(c, blk, count, src);
	ret = cfs_bdev_write_data(c->bd, blk, count, src);
	if (ret >= 0)
		__atomic_store_n(&c->data_pending, 1, __ATOMIC_RELEASE);
	return ret;
}

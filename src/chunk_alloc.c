/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Chunks' block and inode bitmaps and allocation: blocks, inodes from the
 * table or from inode clusters, what a chunk can still give.  Every change
 * here tells chunk.c's state protocol first.
 *
 * Bitmap and inode-table blocks are initialised lazily (the header keeps a
 * watermark for each), which is what lets mkfs write a few blocks per chunk
 * instead of whole tables.  A bitmap block past its watermark reads as its
 * computed initial contents: only the chunk's own metadata area in use. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "fsint.h"
#include "le.h"

#define BM_BLOCKS 0
#define BM_INODES 1

static uint64_t bm_abs(struct cfs_fs *fs, uint32_t c, int which, uint32_t k)
{
	uint64_t b = chunk_base(fs, c) + 1 + k;

	return which == BM_BLOCKS ? b : b + fs->sb.bbm_blocks;
}

static uint32_t *bm_init_of(struct chunk *ch, int which)
{
	return which == BM_BLOCKS ? &ch->hdr.bbm_init : &ch->hdr.ibm_init;
}

static void bit_set(uint8_t *bits, uint64_t i, int v)
{
	if (v)
		bits[i >> 3] |= (uint8_t)(1u << (i & 7));
	else
		bits[i >> 3] &= (uint8_t)~(1u << (i & 7));
}

static int bit_get(const uint8_t *bits, uint64_t i)
{
	return (bits[i >> 3] >> (i & 7)) & 1;
}

/* Set bits [from, to) of a bitmap: whole bytes with memset, since a
 * bitmap block past the end of a chunk is almost all such bits. */
static void bits_fill(uint8_t *bits, uint64_t from, uint64_t to)
{
	while (from < to && (from & 7))
		bit_set(bits, from++, 1);
	if (to - from >= 8 && from < to) {
		memset(bits + from / 8, 0xff, (to - from) / 8);
		from += (to - from) & ~(uint64_t)7;
	}
	while (from < to)
		bit_set(bits, from++, 1);
}

/* Initial contents of bitmap block k: metadata blocks and bits past the
 * end of the chunk are in use, everything else is free. */
static void bm_synth(struct cfs_fs *fs, int which, uint32_t k, uint8_t *blk)
{
	uint64_t first = (uint64_t)k * fs->bits_per_bm, n = fs->bits_per_bm;
	uint64_t used_below = which == BM_BLOCKS ? fs->sb.data_start : 0;
	uint64_t limit = which == BM_BLOCKS ? fs->sb.chunk_blocks : fs->sb.inodes_per_chunk;
	uint8_t *bits = blk + CFS_BLOCK_HDR;

	memset(bits, 0, fs->bsize - CFS_BLOCK_HDR);
	if (used_below > first)
		bits_fill(bits, 0, used_below - first < n ? used_below - first : n);
	bits_fill(bits, limit > first ? (limit - first < n ? limit - first : n) : 0, n);
}

static int bm_get(struct cfs_fs *fs, uint32_t c, int which, uint32_t k, struct buf **out)
{
	uint32_t magic = which == BM_BLOCKS ? CFS_MAGIC_BBM : CFS_MAGIC_IBM;
	uint64_t abs = bm_abs(fs, c, which, k);
	int ret;

	if (k < *bm_init_of(chunk_of(fs, c), which))
		return cache_get_meta(&fs->cache, abs, magic, out);
	ret = cache_new_meta(&fs->cache, abs, magic, out);
	if (ret == 0)
		bm_synth(fs, which, k, (*out)->data);
	return ret;
}

/* Dirty bitmap block k, first writing out any uninitialised blocks below
 * it so the watermark stays a prefix. */
static int bm_dirty(struct cfs_fs *fs, uint32_t c, int which, uint32_t k, struct buf *b)
{
	uint32_t *init = bm_init_of(chunk_of(fs, c), which);
	struct buf *o;
	int ret;

	while (*init < k) {
		ret = bm_get(fs, c, which, *init, &o);
		if (ret < 0)
			return ret;
		ret = buf_dirty(&fs->cache, o);
		buf_put(&fs->cache, o);
		if (ret < 0)
			return ret;
		(*init)++;
	}
	if (*init == k)
		(*init)++;
	chunk_of(fs, c)->hdr_unwritten = 1;
	return buf_dirty(&fs->cache, b);
}

int chunk_test_bit(struct cfs_fs *fs, uint32_t c, int which, uint32_t bit, int *set)
{
	struct buf *b;
	uint32_t k = (uint32_t)(bit / fs->bits_per_bm);
	int ret;

	pthread_mutex_lock(&chunk_of(fs, c)->lock);
	if (k >= *bm_init_of(chunk_of(fs, c), which)) {
		/* never written: the bit is its initial value, no block needed */
		uint64_t limit = which == BM_BLOCKS ? fs->sb.chunk_blocks : fs->sb.inodes_per_chunk;

		*set = (which == BM_BLOCKS && bit < fs->sb.data_start) || bit >= limit;
		ret = 0;
	} else {
		ret = bm_get(fs, c, which, k, &b);
		if (ret == 0) {
			*set = bit_get(b->data + CFS_BLOCK_HDR, bit % fs->bits_per_bm);
			buf_put(&fs->cache, b);
		}
	}
	pthread_mutex_unlock(&chunk_of(fs, c)->lock);
	return ret;
}

/* Find a free run in a bitmap block whose first bit is bit base of the
 * chunk, starting at or after bit 'from'.  With avoid, blocks freed since
 * the last full flush are passed over as if in use. */
static int bm_find_run(const struct chunk *avoid, uint64_t base, const uint8_t *bits,
		       uint64_t from, uint64_t limit, uint32_t want, uint64_t *start,
		       uint32_t *len)
{
	uint64_t i = from, n, at, end;

	while (i < limit) {
		if ((i & 7) == 0 && i + 8 <= limit && bits[i >> 3] == 0xFF) {
			i += 8;
			continue;
		}
		if (bit_get(bits, i)) {
			i++;
			continue;
		}
		for (n = 1; n < want && i + n < limit && !bit_get(bits, i + n); n++)
			;
		if (avoid && chunk_first_freed(avoid, base + i, n, &at, &end)) {
			if (at == base + i) {
				i = end - base;
				continue;
			}
			n = at - base - i;
		}
		*start = i;
		*len = (uint32_t)n;
		return 1;
	}
	return 0;
}

/* Search the bitmap from 'goal', wrapping once.  Caller holds the lock.
 * With avoid (the chunk), blocks freed since the last full flush are not
 * taken, and -ENOSPC says none other is free. */
static int bm_alloc(struct cfs_fs *fs, uint32_t c, int which, uint64_t goal,
		    uint64_t total, uint32_t want, const struct chunk *avoid,
		    uint64_t *got, uint32_t *len)
{
	uint64_t nbm = (total + fs->bits_per_bm - 1) / fs->bits_per_bm;
	uint64_t pass, k = goal / fs->bits_per_bm, from = goal % fs->bits_per_bm;
	struct buf *b;
	uint64_t s;
	uint32_t i;
	int ret;

	for (pass = 0; pass <= nbm; pass++, k = (k + 1) % nbm, from = 0) {
		uint64_t limit = fs->bits_per_bm;

		if ((k + 1) * fs->bits_per_bm > total)
			limit = total - k * fs->bits_per_bm;
		ret = bm_get(fs, c, which, (uint32_t)k, &b);
		if (ret < 0)
			return ret;
		if (bm_find_run(avoid, k * fs->bits_per_bm, b->data + CFS_BLOCK_HDR, from,
				limit, want, &s, len)) {
			for (i = 0; i < *len; i++)
				bit_set(b->data + CFS_BLOCK_HDR, s + i, 1);
			ret = bm_dirty(fs, c, which, (uint32_t)k, b);
			buf_put(&fs->cache, b);
			*got = k * fs->bits_per_bm + s;
			return ret;
		}
		buf_put(&fs->cache, b);
	}
	return avoid ? -ENOSPC : -EUCLEAN;  /* free count said there was room */
}

static int bm_clear(struct cfs_fs *fs, uint32_t c, int which, uint64_t bit, uint32_t n)
{
	struct buf *b = NULL;
	uint64_t k = UINT64_MAX;
	uint32_t i;
	int ret = 0, bad = 0;

	for (i = 0; i < n; i++) {
		uint64_t bi = bit + i;

		if (bi / fs->bits_per_bm != k) {
			if (b) {
				ret = bm_dirty(fs, c, which, (uint32_t)k, b);
				buf_put(&fs->cache, b);
				b = NULL;
				if (ret < 0)
					return ret;
			}
			k = bi / fs->bits_per_bm;
			ret = bm_get(fs, c, which, (uint32_t)k, &b);
			if (ret < 0)
				return ret;
		}
		if (!bit_get(b->data + CFS_BLOCK_HDR, bi % fs->bits_per_bm))
			bad = 1;
		bit_set(b->data + CFS_BLOCK_HDR, bi % fs->bits_per_bm, 0);
	}
	if (b) {
		ret = bm_dirty(fs, c, which, (uint32_t)k, b);
		buf_put(&fs->cache, b);
	}
	return ret < 0 ? ret : bad ? -EUCLEAN : 0;
}

/* bm_alloc of blocks, with lazy marking preferring those not freed since
 * the last full flush (lock held).  A freed block may still be named on
 * disk, so writing it marks its chunk dirty at once (and a new tree node
 * there costs a full flush, tree_node_write_new); as jbd2 keeps freed
 * blocks from reuse until its commit, new data and nodes go around them,
 * and take a freed block only when no other is free in the chunk. */
static int alloc_unfreed(struct cfs_fs *fs, uint32_t c, uint64_t goal, uint32_t want,
			 uint64_t *got, uint32_t *len)
{
	uint64_t cb = fs->sb.chunk_blocks;
	int ret = -ENOSPC;

	if (fs->lazy)
		ret = bm_alloc(fs, c, BM_BLOCKS, goal, cb, want, chunk_of(fs, c), got, len);
	if (ret == -ENOSPC)
		ret = bm_alloc(fs, c, BM_BLOCKS, goal, cb, want, NULL, got, len);
	return ret;
}

/* Metadata starts 7/8 into the chunk, away from churning data
 * (ALLOCATION.md rule 7). */
static uint64_t meta_start(const struct cfs_fs *fs)
{
	return fs->sb.chunk_blocks - (fs->sb.chunk_blocks - fs->sb.data_start) / 8;
}

/* goal when it lies in the data area, else dflt. */
static uint64_t goal_or(const struct cfs_fs *fs, uint64_t goal, uint64_t dflt)
{
	return goal >= fs->sb.data_start && goal < fs->sb.chunk_blocks ? goal : dflt;
}

/* Where the next metadata block is looked for: after the last one. */
static uint64_t meta_goal(const struct cfs_fs *fs, const struct chunk *ch)
{
	return goal_or(fs, ch->meta_hint, meta_start(fs));
}

/* Up to want blocks from goal on (lock taken here); from *hint when goal
 * lies outside the data area, and from dflt when *hint does too.  *hint
 * then follows the run given. */
static int alloc_hinted(struct cfs_fs *fs, uint32_t c, uint64_t goal, uint64_t dflt,
			uint32_t want, uint32_t *hint, uint32_t *rel)
{
	struct chunk *ch = chunk_of(fs, c);
	uint64_t got;
	uint32_t len = 0, avail;
	int ret;

	ret = chunk_to_changed_mem(fs, c);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&ch->lock);
	avail = chunk_avail_blocks(fs, ch);
	if (avail == 0) {
		ret = -ENOSPC;
		goto out;
	}
	goal = goal_or(fs, goal, goal_or(fs, *hint, dflt));
	if (want > avail)
		want = avail;
	ret = alloc_unfreed(fs, c, goal, want, &got, &len);
	if (ret < 0)
		goto out;
	ch->hdr.free_blocks -= len;
	ch->hdr_unwritten = 1;
	*hint = (uint32_t)(got + len);
	*rel = (uint32_t)got;
	ret = (int)len;
out:
	pthread_mutex_unlock(&ch->lock);
	return ret;
}

int chunk_alloc_blocks(struct cfs_fs *fs, uint32_t c, uint32_t goal, uint32_t want,
		       uint32_t *rel)
{
	return alloc_hinted(fs, c, goal, fs->sb.data_start, want,
			    &chunk_of(fs, c)->alloc_hint, rel);
}

int chunk_alloc_meta(struct cfs_fs *fs, uint32_t c, uint32_t want, uint32_t *rel)
{
	return alloc_hinted(fs, c, UINT64_MAX, meta_start(fs), want,
			    &chunk_of(fs, c)->meta_hint, rel);
}

int chunk_free_blocks(struct cfs_fs *fs, uint32_t c, uint32_t rel, uint32_t count)
{
	struct chunk *ch = chunk_of(fs, c);
	uint32_t i;
	int ret;

	if (rel < fs->sb.data_start || (uint64_t)rel + count > fs->sb.chunk_blocks)
		return -EUCLEAN;
	ret = chunk_to_changed_mem(fs, c);
	if (ret < 0)
		return ret;
	for (i = 0; i < count; i++)
		cache_forget(&fs->cache, chunk_base(fs, c) + rel + i);
	pthread_mutex_lock(&ch->lock);
	ret = bm_clear(fs, c, BM_BLOCKS, rel, count);
	chunk_freed_note(fs, c, rel, count);
	if (ret == 0) {   /* a double free (corruption) must not inflate it */
		ch->hdr.free_blocks += count;
		ch->hdr_unwritten = 1;
		ch->icl_frag = 0;   /* a run for a cluster may be free again */
	}
	pthread_mutex_unlock(&ch->lock);
	return ret;
}

/* Zero inode-table blocks up to the one holding local inode number l. */
static int itable_extend(struct cfs_fs *fs, uint32_t c, uint32_t l)
{
	struct chunk *ch = chunk_of(fs, c);
	uint32_t need = (l - 1) / fs->ipb;
	uint64_t first = chunk_base(fs, c) + 1 + fs->sb.bbm_blocks + fs->sb.ibm_blocks;
	struct buf *b;
	int ret;

	while (ch->hdr.itable_init <= need) {
		ret = cache_get(&fs->cache, first + ch->hdr.itable_init, CG_NOREAD, &b);
		if (ret < 0)
			return ret;
		ret = buf_dirty(&fs->cache, b);
		buf_put(&fs->cache, b);
		if (ret < 0)
			return ret;
		ch->hdr.itable_init++;
		ch->hdr_unwritten = 1;
	}
	return 0;
}

/* A run of exactly want free blocks for metadata (inode clusters and
 * their map), marked in use: shorter runs found on the way are given
 * back.  Caller holds the lock. */
static int bm_alloc_exact(struct cfs_fs *fs, uint32_t c, uint32_t want, uint32_t *rel)
{
	struct chunk *ch = chunk_of(fs, c);
	uint64_t cb = fs->sb.chunk_blocks, goal = meta_goal(fs, ch), got, seen = 0;
	uint32_t len;
	int ret;

	if (ch->hdr.free_blocks < want)
		return -ENOSPC;
	while (seen <= cb) {
		ret = bm_alloc(fs, c, BM_BLOCKS, goal, cb, want, NULL, &got, &len);
		if (ret < 0)
			return ret;
		if (len == want) {
			ch->hdr.free_blocks -= len;
			ch->hdr_unwritten = 1;
			ch->meta_hint = (uint32_t)(got + len);
			*rel = (uint32_t)got;
			return 0;
		}
		ret = bm_clear(fs, c, BM_BLOCKS, got, len);
		if (ret < 0)
			return ret;
		seen += (got >= goal ? got - goal : got + cb - goal) + len;
		goal = got + len < cb ? got + len : fs->sb.data_start;
	}
	return -ENOSPC;
}

/* The inode table is used up: make an inode cluster from free blocks
 * (FORMAT.md 10.4), after its map block if that is missing too.  A run
 * for CFS_ICL_BATCH clusters is taken when there is one, so that the
 * clusters of a chunk filling up lie together (a check reads them in few
 * requests) and cost one flush between them; those left empty go back
 * at the next sync. */
static int itable_grow(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = chunk_of(fs, c);
	uint32_t i, n, rel, mb, avail, nrec = cfs_icmap_nrec(fs->bsize);
	int new_map, ret;

	if (ch->icl_frag)
		return -ENOSPC;   /* no run found since a block was last freed */
	ret = icl_next(fs, c, &i, &new_map);
	if (ret < 0)
		return ret;
	n = icl_batch(fs, c, i);
	ret = -ENOSPC;
	/* a cluster is a normal allocation: it leaves the repair reserve */
	avail = chunk_avail_blocks(fs, ch);
	if (n > 1 && avail >= n * fs->icl_blocks + (uint32_t)new_map)
		ret = bm_alloc_exact(fs, c, n * fs->icl_blocks, &rel);
	if (ret == -ENOSPC) {
		n = 1;
		ret = avail < fs->icl_blocks + (uint32_t)new_map ? -ENOSPC :
		      bm_alloc_exact(fs, c, fs->icl_blocks, &rel);
		if (ret == -ENOSPC)
			ch->icl_frag = 1;
	}
	if (ret < 0 || !new_map)
		return ret < 0 ? ret : icl_add(fs, c, i, n, rel);
	ret = bm_alloc_exact(fs, c, 1, &mb);
	if (ret < 0) {
		if (bm_clear(fs, c, BM_BLOCKS, rel, n * fs->icl_blocks) == 0)
			ch->hdr.free_blocks += n * fs->icl_blocks;
		return ret;
	}
	ret = icl_map_add(fs, c, i / nrec, mb);
	if (ret == 0) {
		/* the header names the map before any inode is in it.  It is
		 * written here, not at a write-back, so the chunk is marked
		 * dirty on disk first (the map's flush has done so already:
		 * its before_write marks every chunk changed in memory) */
		pthread_mutex_lock(&ch->state_lock);
		ret = chunk_to_dirty_disk_locked(fs, c);
		if (ret == 0)
			ret = chunk_hdr_write_disk(fs, c, ch->disk_state);
		pthread_mutex_unlock(&ch->state_lock);
	}
	if (ret == 0)
		ret = cfs_bdev_flush(fs->bd);
	return ret < 0 ? ret : icl_add(fs, c, i, n, rel);
}

/* A slot of the inode table while it has one (a check reads the table in
 * one sweep), else of an inode cluster, made when none has a free slot. */
static int ialloc_locked(struct cfs_fs *fs, uint32_t c, uint32_t *l)
{
	struct chunk *ch = chunk_of(fs, c);
	uint64_t got;
	uint32_t len;
	int ret = icl_load(fs, c);

	if (ret < 0)
		return ret;
	if (ch->hdr.free_inodes > ch->icl_nfree) {
		ret = bm_alloc(fs, c, BM_INODES, ch->ialloc_hint, fs->sb.inodes_per_chunk, 1,
			       NULL, &got, &len);
		if (ret < 0)
			return ret;
		ret = itable_extend(fs, c, (uint32_t)got + 1);
		if (ret < 0)
			return ret;
		ch->ialloc_hint = (uint32_t)got + 1;
		*l = (uint32_t)got + 1;
	} else {
		if (!fs->icl_max)
			return -ENOSPC;
		if (!ch->icl_nfree) {
			ret = itable_grow(fs, c);
			if (ret < 0)
				return ret;
		}
		ret = icl_alloc(fs, c, l);
		if (ret < 0)
			return ret;
	}
	ch->hdr.free_inodes--;
	ch->hdr_unwritten = 1;
	return 0;
}

/* What chunk c can still give, its lock held: free slots and those of
 * the clusters its free blocks could still make (DYNINODES); avail is
 * that less the repair reserve outside a check (FORMAT.md 16.4). */
static uint64_t inodes_free_locked(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = chunk_of(fs, c);
	uint64_t a = ch->hdr.free_inodes;

	if (!ch->icl_frag && icl_load(fs, c) == 0)
		a += icl_makeable(fs, c);
	return a;
}

static uint64_t inodes_less_reserve(const struct cfs_fs *fs, uint64_t a)
{
	return fs->checking ? a : a > CFS_REPAIR_INODES ? a - CFS_REPAIR_INODES : 0;
}

/* Make inode clusters until chunk c has want free slots; its lock held. */
static int slots_make(struct cfs_fs *fs, uint32_t c, uint64_t want)
{
	struct chunk *ch = chunk_of(fs, c);
	int ret = 0;

	while (ret == 0 && ch->hdr.free_inodes < want)
		ret = itable_grow(fs, c);
	return ret;
}

int chunk_alloc_inode(struct cfs_fs *fs, uint32_t c, cfs_ino_t *ino)
{
	struct chunk *ch = chunk_of(fs, c);
	uint32_t l;
	int ret;

	ret = chunk_to_changed_mem(fs, c);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&ch->lock);
	if (!chunk_avail_inodes(fs, ch) && !inodes_less_reserve(fs, inodes_free_locked(fs, c)))
		ret = -ENOSPC;
	else   /* a cluster first when only the repair reserve is free */
		ret = slots_make(fs, c, fs->checking ? 1 : CFS_REPAIR_INODES + 1);
	if (ret == 0)
		ret = ialloc_locked(fs, c, &l);
	if (ret == 0)
		*ino = CFS_INO_MAKE(c, l);
	pthread_mutex_unlock(&ch->lock);
	return ret;
}

/* A chunk with free_inodes free slots keeps an empty cluster while it has
 * no other free slot, so that a file made and removed again and again at
 * the edge of a full table does not make and give back a cluster each
 * time. */
static int cluster_kept(uint64_t free_inodes)
{
	return free_inodes <= CFS_ICL_INODES;
}

/* Cluster i of chunk c has no inode in use: its blocks become free. */
static int icl_give_back(struct cfs_fs *fs, uint32_t c, uint32_t i)
{
	struct chunk *ch = chunk_of(fs, c);
	uint32_t rel = ch->icl[i].start, b;
	int ret;

	if (ch->icl[i].used || cluster_kept(ch->hdr.free_inodes))
		return 0;
	ret = icl_remove(fs, c, i);
	for (b = 0; ret == 0 && b < fs->icl_blocks; b++)
		cache_forget(&fs->cache, chunk_base(fs, c) + rel + b);
	if (ret == 0) {
		ret = bm_clear(fs, c, BM_BLOCKS, rel, fs->icl_blocks);
		chunk_freed_note(fs, c, rel, fs->icl_blocks);
	}
	if (ret == 0)
		ch->hdr.free_blocks += fs->icl_blocks;
	return ret;
}

/* A map block that lists no cluster (its last one given back, or its
 * first never made for want of a free run) becomes free; the headers,
 * written after the flush, stop naming it. */
static int map_give_back(struct cfs_fs *fs, uint32_t c, uint32_t k)
{
	struct chunk *ch = chunk_of(fs, c);
	uint32_t mb = ch->hdr.icmap[k];
	int ret;

	if (!mb || !icl_map_empty(fs, c, k))
		return 0;
	ch->hdr.icmap[k] = 0;
	ch->hdr_unwritten = 1;
	ret = bm_clear(fs, c, BM_BLOCKS, mb, 1);
	chunk_freed_note(fs, c, mb, 1);
	if (ret == 0)
		ch->hdr.free_blocks++;
	return ret;
}

int chunk_trim_clusters(struct cfs_fs *fs)
{
	uint32_t c, i;
	int ret = 0;

	for (c = 0; c < fs->sb.nchunks && ret == 0; c++) {
		struct chunk *ch = chunk_of(fs, c);

		pthread_mutex_lock(&ch->lock);
		for (i = ch->icl_loaded ? ch->icl_n : 0; i-- > 0 && ret == 0;)
			if (ch->icl[i].start && !ch->icl[i].used)
				ret = icl_give_back(fs, c, i);
		for (i = 0; ch->icl_loaded && i < CFS_ICMAP_BLOCKS && ret == 0; i++)
			ret = map_give_back(fs, c, i);
		pthread_mutex_unlock(&ch->lock);
	}
	return ret;
}

uint64_t chunk_clusters_spare(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = chunk_of(fs, c);
	uint64_t free, k = 0;

	pthread_mutex_lock(&ch->lock);
	/* as chunk_trim_clusters goes: each empty cluster given back takes
	 * its free slots away before the next is looked at, until
	 * cluster_kept; so at most (free - 1) / 64 go */
	free = ch->hdr.free_inodes;
	if (ch->icl_loaded && !cluster_kept(free)) {
		k = (free - 1) / CFS_ICL_INODES;
		k = icl_empty(fs, c, k < UINT32_MAX ? (uint32_t)k : UINT32_MAX);
	}
	pthread_mutex_unlock(&ch->lock);
	return k * fs->icl_blocks;
}

void chunk_inodes(struct cfs_fs *fs, uint32_t c, struct chunk_inodes *n)
{
	struct chunk *ch = chunk_of(fs, c);
	int loaded;

	pthread_mutex_lock(&ch->lock);
	loaded = icl_load(fs, c) == 0;
	n->clusters = loaded ? icl_count(fs, c) : 0;
	n->span = fs->sb.inodes_per_chunk + (loaded ? ch->icl_n * CFS_ICL_INODES : 0);
	n->free = inodes_free_locked(fs, c);
	n->avail = inodes_less_reserve(fs, n->free);
	n->used = fs->sb.inodes_per_chunk + (uint64_t)CFS_ICL_INODES * n->clusters;
	n->used = n->used > ch->hdr.free_inodes ? n->used - ch->hdr.free_inodes : 0;
	pthread_mutex_unlock(&ch->lock);
}

uint64_t chunk_inodes_avail(struct cfs_fs *fs, uint32_t c)
{
	struct chunk_inodes n;

	chunk_inodes(fs, c, &n);
	return n.avail;
}

/* Whether chunk c has need free inode slots, making inode clusters for
 * them if it must: a pick that counted on clusters its free blocks allow
 * must not leave the second inode of the pair (a file and the stub beside
 * it) to a cluster that finds no free run. */
int inodes_ensure(struct cfs_fs *fs, uint32_t c, uint32_t need)
{
	struct chunk *ch = chunk_of(fs, c);
	/* the slots made must leave the repair reserve free too, or the
	 * second inode of the pair finds the chunk at its reserve */
	uint64_t slots = need + (fs->checking ? 0 : CFS_REPAIR_INODES);
	int ok;

	if (ch->hdr.free_inodes >= slots)
		return 1;
	if (chunk_inodes_avail(fs, c) < need || chunk_to_changed_mem(fs, c) < 0)
		return 0;
	pthread_mutex_lock(&ch->lock);
	ok = slots_make(fs, c, slots) == 0;
	pthread_mutex_unlock(&ch->lock);
	return ok;
}

/* Allocate local inode l of chunk c exactly: fsck makes a reserved inode
 * (the root, lost+found) again under its own number.  -EEXIST when the
 * bitmap says it is in use. */
int chunk_alloc_inode_at(struct cfs_fs *fs, uint32_t c, uint32_t l)
{
	struct chunk *ch = chunk_of(fs, c);
	uint64_t bit = (uint64_t)l - 1;
	uint32_t k = (uint32_t)(bit / fs->bits_per_bm);
	struct buf *b;
	int ret;

	if (l == 0 || l > fs->sb.inodes_per_chunk)
		return -EINVAL;
	ret = chunk_to_changed_mem(fs, c);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&ch->lock);
	if (ch->hdr.free_inodes == 0) {
		ret = -ENOSPC;
		goto out;
	}
	ret = bm_get(fs, c, BM_INODES, k, &b);
	if (ret < 0)
		goto out;
	if (bit_get(b->data + CFS_BLOCK_HDR, bit % fs->bits_per_bm)) {
		ret = -EEXIST;
	} else {
		bit_set(b->data + CFS_BLOCK_HDR, bit % fs->bits_per_bm, 1);
		ret = bm_dirty(fs, c, BM_INODES, k, b);
	}
	buf_put(&fs->cache, b);
	if (ret == 0)
		ret = itable_extend(fs, c, l);
	if (ret == 0) {
		ch->hdr.free_inodes--;
		ch->hdr_unwritten = 1;
	}
out:
	pthread_mutex_unlock(&ch->lock);
	return ret;
}

int chunk_free_inode(struct cfs_fs *fs, cfs_ino_t ino)
{
	uint32_t c = CFS_INO_CHUNK(ino);
	struct chunk *ch = chunk_of(fs, c);
	int ret = chunk_to_changed_mem(fs, c);

	if (ret < 0)
		return ret;
	pthread_mutex_lock(&ch->lock);
	if (CFS_INO_LOCAL(ino) > fs->sb.inodes_per_chunk)
		ret = icl_free(fs, c, CFS_INO_LOCAL(ino));
	else
		ret = bm_clear(fs, c, BM_INODES, CFS_INO_LOCAL(ino) - 1, 1);
	if (ret == 0) {
		ch->hdr.free_inodes++;
		ch->hdr_unwritten = 1;
		if (CFS_INO_LOCAL(ino) - 1 < ch->ialloc_hint)
			ch->ialloc_hint = CFS_INO_LOCAL(ino) - 1;
	}
	pthread_mutex_unlock(&ch->lock);
	return ret;
}

void chunk_count(struct cfs_fs *fs, uint32_t c, int field, int delta)
{
	struct chunk *ch = chunk_of(fs, c);
	uint32_t *f = field == CNT_CONTS ? &ch->hdr.nconts :
		      field == CNT_STUBS ? &ch->hdr.nstubs : &ch->hdr.ndirs;

	pthread_mutex_lock(&ch->lock);
	*f = (uint32_t)((int64_t)*f + delta);
	ch->hdr_unwritten = 1;
	pthread_mutex_unlock(&ch->lock);
}

/* Make one bitmap block (have: nbits bits for items first...) equal to the
 * truth, where items at or past total count as in use.  Returns how many
 * bits differed and adds the free items to *nfree.  A bitmap block starts
 * on a byte of the truth (nbits is a multiple of 8), so all but the bits
 * around total go a 64-bit word at a time. */
static uint64_t bm_merge(uint8_t *have, const uint8_t *truth, uint64_t first, uint64_t total,
			 uint64_t nbits, uint64_t *nfree)
{
	uint64_t m = total > first ? (total - first < nbits ? total - first : nbits) : 0;
	uint64_t i = 0, d = 0, h, w;
	const uint8_t *t = truth + first / 8;

	for (; i + 64 <= m; i += 64) {
		memcpy(&h, have + i / 8, 8);
		memcpy(&w, t + i / 8, 8);
		/* most words are all used or all free, and agree: no popcount
		 * (a library call without -mpopcnt) for those */
		if (w != ~(uint64_t)0)
			*nfree += w ? 64 - (uint64_t)__builtin_popcountll(w) : 64;
		if (h != w) {
			d += (uint64_t)__builtin_popcountll(h ^ w);
			memcpy(have + i / 8, &w, 8);
		}
	}
	for (; i < nbits && (i < m || (i & 7)); i++) {
		int want = i >= m || bit_get(t, i);

		*nfree += !want;
		if (bit_get(have, i) != want) {
			d++;
			bit_set(have, i, want);
		}
	}
	for (; i < nbits; i += 8) {
		if (have[i / 8] != 0xff) {
			d += 8 - (uint64_t)__builtin_popcount(have[i / 8]);
			have[i / 8] = 0xff;
		}
	}
	return d;
}

/* fsck: make bitmap 'which' of chunk c say exactly what truth says (one bit
 * per block or inode, covering the whole bitmap).  Counts differing bits in
 * *diffs and the free ones in *truth_free; with fix set, rewrites differing
 * bitmap blocks and sets the header's free count from the truth. */
int chunk_bitmap_sync(struct cfs_fs *fs, uint32_t c, int which, const uint8_t *truth,
		      int fix, uint64_t *diffs, uint64_t *truth_free)
{
	struct chunk *ch = chunk_of(fs, c);
	uint64_t total = which == BM_BLOCKS ? fs->sb.chunk_blocks : fs->sb.inodes_per_chunk;
	uint32_t nbm = which == BM_BLOCKS ? fs->sb.bbm_blocks : fs->sb.ibm_blocks, k;
	uint64_t nfree = 0;
	struct buf *b;
	int ret = 0;

	*diffs = 0;
	pthread_mutex_lock(&ch->lock);
	for (k = 0; k < nbm && ret == 0; k++) {
		uint64_t first = (uint64_t)k * fs->bits_per_bm, d;
		int bad = bm_get(fs, c, which, k, &b) < 0;

		if (bad) {
			cache_forget(&fs->cache, bm_abs(fs, c, which, k));
			ret = cache_new_meta(&fs->cache, bm_abs(fs, c, which, k),
					     which == BM_BLOCKS ? CFS_MAGIC_BBM : CFS_MAGIC_IBM, &b);
			if (ret < 0)
				break;
		}
		d = bm_merge(b->data + CFS_BLOCK_HDR, truth, first, total, fs->bits_per_bm,
			     &nfree);
		*diffs += d + (bad && !d);
		if (fix && (d || bad))
			ret = bm_dirty(fs, c, which, k, b);
		buf_put(&fs->cache, b);
		/* read-only: drop the corrected copy, the disk stays as it is */
		if (!fix && (d || bad))
			cache_forget(&fs->cache, bm_abs(fs, c, which, k));
	}
	if (which == BM_INODES && ret == 0) {
		/* the clusters' masks extend the inode bitmap */
		uint64_t d = 0, f = 0;

		ret = icl_sync(fs, c, truth, fix, &d, &f);
		*diffs += d;
		nfree += f;
	}
	*truth_free = nfree;
	if (fix && ret == 0) {
		if (which == BM_BLOCKS)
			ch->hdr.free_blocks = (uint32_t)nfree;
		else
			ch->hdr.free_inodes = (uint32_t)nfree;
		ch->hdr_unwritten = 1;
	}
	pthread_mutex_unlock(&ch->lock);
	return ret;
}


/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Chunks: header, clean/dirty state, block and inode bitmaps, allocation.
 *
 * Bitmap and inode-table blocks are initialised lazily (the header keeps a
 * watermark for each), which is what lets mkfs write a few blocks per chunk
 * instead of whole tables.  A bitmap block past its watermark reads as its
 * computed initial contents: only the chunk's own metadata area in use. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "fsint.h"
#include "le.h"

static struct chunk *chunk_of(struct cfs_fs *fs, uint32_t c)
{
	return &fs->chunks[c];
}

static int header_put(struct cfs_fs *fs, uint32_t c, const struct cfs_chunk_hdr *h)
{
	uint64_t blk = chunk_base(fs, c);
	uint8_t *buf = calloc(1, fs->bsize);
	int ret;

	if (!buf)
		return -ENOMEM;
	cfs_meta_init(buf, CFS_MAGIC_CHUNK, blk);
	cfs_chunk_hdr_encode(h, buf);
	cfs_meta_csum_set(buf, fs->bsize, fs->seed);
	ret = cfs_bdev_write(fs->bd, blk, 1, buf);
	free(buf);
	if (ret == 0) {
		chunk_of(fs, c)->disk_hdr = *h;
		chunk_of(fs, c)->disk_state = h->state;
	}
	return ret;
}

/* The header as it is in memory: its counters and initialised lengths
 * describe blocks already on disk (the callers flushed them). */
int chunk_write_header(struct cfs_fs *fs, uint32_t c, uint32_t state)
{
	struct chunk *ch = chunk_of(fs, c);
	int ret;

	ch->hdr.state = state;
	ret = header_put(fs, c, &ch->hdr);
	if (ret == 0)
		ch->hdr_dirty = 0;
	return ret;
}

/* A new state (and error record, last-check time) on the header as last
 * written: the in-memory counters and initialised lengths may describe
 * blocks still in memory, which must not look initialised on disk before
 * they are.  With state_lock held. */
int chunk_header_mark(struct cfs_fs *fs, uint32_t c, uint32_t state)
{
	struct chunk *ch = chunk_of(fs, c);
	struct cfs_chunk_hdr h = ch->disk_hdr;
	int ret;

	lock_held(&ch->state_lock);
	h.state = state;
	h.generation = ch->hdr.generation;
	h.last_write = ch->hdr.last_write;
	h.error_count = ch->hdr.error_count;
	h.first_error = ch->hdr.first_error;
	h.last_error = ch->hdr.last_error;
	h.last_check = ch->hdr.last_check;
	ret = header_put(fs, c, &h);
	if (ret == 0)
		ch->hdr.state = state;
	return ret;
}

/* Highest initialised inode-table block, judged by its contents: used to
 * rebuild a destroyed chunk header.  A block counts if any of its inodes
 * is in use with a valid checksum. */
static uint32_t itable_scan(struct cfs_fs *fs, uint32_t c, uint8_t *buf)
{
	uint64_t first = chunk_base(fs, c) + 1 + fs->sb.bbm_blocks + fs->sb.ibm_blocks;
	uint32_t k, i, last = 0;

	for (k = 0; k < fs->sb.itable_blocks; k++) {
		if (cfs_bdev_read(fs->bd, first + k, 1, buf) < 0)
			continue;
		for (i = 0; i < fs->ipb; i++) {
			uint8_t *raw = buf + i * fs->isz;
			cfs_ino_t ino = CFS_INO_MAKE(c, k * fs->ipb + i + 1);

			if (!cfs_dinode_is_zero(raw, fs->isz) &&
			    cfs_dinode_csum_ok(raw, fs->isz, fs->seed, ino)) {
				last = k + 1;
				break;
			}
		}
	}
	return last;
}

static int hdr_sane(struct cfs_fs *fs, const struct cfs_chunk_hdr *h, uint32_t c)
{
	uint32_t k;

	for (k = 0; fs->icl_max && k < CFS_ICMAP_BLOCKS; k++)
		if (h->icmap[k] && (h->icmap[k] < fs->sb.data_start ||
				    h->icmap[k] >= fs->sb.chunk_blocks))
			return 0;
	return h->index == c && !memcmp(h->uuid, fs->sb.uuid, 16) &&
	       h->bbm_init <= fs->sb.bbm_blocks && h->ibm_init <= fs->sb.ibm_blocks &&
	       h->itable_init <= fs->sb.itable_blocks &&
	       h->free_blocks <= fs->sb.chunk_blocks &&
	       h->free_inodes <= fs->max_local;
}

/* Threads that ask for the chunk headers side by side (hdr_prefetch). */
#define HDR_PREFETCH_THREADS 8

struct hdr_prefetch {
	struct cfs_fs *fs;
	uint32_t first, step;
};

static void *hdr_prefetch_part(void *arg)
{
	struct hdr_prefetch *h = arg;
	uint32_t c;

	for (c = h->first; c < h->fs->sb.nchunks; c += h->step)
		cfs_bdev_prefetch(h->fs->bd, chunk_base(h->fs, c), 1);
	return NULL;
}

/* The headers lie one per chunk across the whole device: ask for all of
 * them at once rather than wait for each in turn.  On an image file each
 * request first maps its block through the host file system's extent
 * tree, read from the disk when cold, so a few threads ask side by side
 * (the 64 headers of a cold 16 GiB image: 6-10 ms from one thread, 3.5-4
 * ms from eight).  A part no thread could be started for is asked for
 * here. */
static void hdr_prefetch(struct cfs_fs *fs)
{
	struct hdr_prefetch part[HDR_PREFETCH_THREADS];
	pthread_t tid[HDR_PREFETCH_THREADS];
	uint32_t n = fs->sb.nchunks < 16 ? 1 : HDR_PREFETCH_THREADS, i;
	int started[HDR_PREFETCH_THREADS] = { 0 };

	for (i = 0; i < n; i++) {
		part[i] = (struct hdr_prefetch){ fs, i, n };
		started[i] = i > 0 && pthread_create(&tid[i], NULL, hdr_prefetch_part,
						     &part[i]) == 0;
	}
	for (i = 0; i < n; i++)
		if (!started[i])
			hdr_prefetch_part(&part[i]);
	for (i = 1; i < n; i++)
		if (started[i])
			pthread_join(tid[i], NULL);
}

/* With repair set, a destroyed header is replaced by one rebuilt from the
 * chunk's contents (counts are left for fsck to recompute); otherwise it
 * makes the open fail. */
int chunk_load_all(struct cfs_fs *fs, int repair)
{
	uint8_t *buf = malloc(fs->bsize);
	uint32_t c;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	icl_setup(fs);
	hdr_prefetch(fs);
	for (c = 0; c < fs->sb.nchunks; c++) {
		struct chunk *ch = chunk_of(fs, c);
		uint64_t blk = chunk_base(fs, c);

		ch->index = c;
		pthread_mutex_init(&ch->lock, NULL);
		pthread_mutex_init(&ch->state_lock, NULL);
		ret = cfs_bdev_read(fs->bd, blk, 1, buf);
		if (ret == 0)
			ret = cfs_meta_verify(buf, fs->bsize, fs->seed, CFS_MAGIC_CHUNK, blk);
		if (ret == 0) {
			cfs_chunk_hdr_decode(buf, &ch->hdr);
			if (!hdr_sane(fs, &ch->hdr, c))
				ret = -EUCLEAN;
		}
		if (ret < 0 && !repair) {
			cfs_set_error("chunk %u: bad chunk header (%s): run chunkfs fsck", c,
				      ret == -EBADMSG ? "checksum mismatch" : "corrupt");
			goto out;
		}
		if (ret < 0) {
			memset(&ch->hdr, 0, sizeof(ch->hdr));
			ch->hdr.index = c;
			ch->hdr.state = CFS_STATE_DIRTY;
			memcpy(ch->hdr.uuid, fs->sb.uuid, 16);
			ch->hdr.itable_init = itable_scan(fs, c, buf);
			ch->hdr_bad = 1;
			ret = 0;
		}
		ch->disk_state = ch->hdr.state;
		ch->disk_hdr = ch->hdr;
		ch->was_dirty = ch->hdr.state & (CFS_STATE_DIRTY | CFS_STATE_ERROR);
		ch->alloc_hint = fs->sb.data_start;
		ch->ialloc_hint = 0;
	}
out:
	free(buf);
	return ret;
}

/* Start reading a chunk's metadata area (header, bitmaps and the inode
 * table as far as it was ever initialised) in one request: a check reads
 * all of it, block by block. */
void chunk_prefetch(struct cfs_fs *fs, uint32_t c)
{
	uint64_t len = 1 + (uint64_t)fs->sb.bbm_blocks + fs->sb.ibm_blocks +
		       chunk_of(fs, c)->hdr.itable_init;

	cfs_bdev_prefetch(fs->bd, chunk_base(fs, c), (uint32_t)len);
	if (fs->icl_max) {
		pthread_mutex_lock(&chunk_of(fs, c)->lock);
		icl_prefetch(fs, c);
		pthread_mutex_unlock(&chunk_of(fs, c)->lock);
	}
}

/* With state_lock held: a change to chunk ch, in memory for now. */
static void change_noted(struct chunk *ch)
{
	double now = cfs_now_mono();

	lock_held(&ch->state_lock);
	if (!ch->unmarked && !(ch->disk_state & CFS_STATE_DIRTY))
		ch->first_change = now;
	ch->last_change = now;
}

/* With state_lock held: the header written dirty (not yet flushed). */
static int header_dirty(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = chunk_of(fs, c);
	int ret;

	lock_held(&ch->state_lock);
	ch->hdr.generation++;
	ch->hdr.last_write = time(NULL);
	ret = chunk_header_mark(fs, c, ch->disk_state | CFS_STATE_DIRTY);
	if (ret == 0)
		ch->unmarked = 0;
	return ret;
}

/* With state_lock held: chunk c marked dirty on stable storage, unless it
 * is already. */
static int dirty_on_disk(struct cfs_fs *fs, uint32_t c)
{
	int ret = 0;

	lock_held(&chunk_of(fs, c)->state_lock);
	if (!(chunk_of(fs, c)->disk_state & CFS_STATE_DIRTY)) {
		ret = header_dirty(fs, c);
		if (ret == 0)
			ret = cfs_bdev_flush(fs->bd);
	}
	return ret;
}

/* The chunk must be marked dirty on stable storage before any of its
 * changed blocks can reach the disk: that is what makes "clean" mean
 * "needs no check" after a crash.  Only state_lock is taken here, since
 * this runs from buf_dirty() with ch->lock possibly held; the header
 * fields written are a snapshot that fsck recomputes anyway. */
int chunk_mark_dirty(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = chunk_of(fs, c);
	int ret;

	if (fs->rdonly)
		return -EROFS;
	pthread_mutex_lock(&ch->state_lock);
	change_noted(ch);
	ret = dirty_on_disk(fs, c);
	pthread_mutex_unlock(&ch->state_lock);
	return ret;
}

/* Lazy marking: a change made in memory needs no mark on disk until one
 * of the changed blocks is written (chunk_mark_changed).  Until then the
 * disk holds the chunk as it was when last clean, so it stays clean there,
 * and a crash under a steady load leaves dirty only the chunks whose
 * changes were being written, not every chunk written to lately. */
int chunk_change(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = chunk_of(fs, c);

	if (!fs->lazy)
		return chunk_mark_dirty(fs, c);
	if (fs->rdonly)
		return -EROFS;
	pthread_mutex_lock(&ch->state_lock);
	change_noted(ch);
	if (!(ch->disk_state & CFS_STATE_DIRTY) && !ch->unmarked) {
		ch->unmarked = 1;
		__atomic_store_n(&fs->unmarked, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&ch->state_lock);
	return 0;
}

/* The cache's note_dirty (lazy marking). */
int chunk_note_dirty(void *ctx, uint64_t blk)
{
	struct cfs_fs *fs = ctx;

	if (blk < fs->sb.first_chunk_block || blk >= fs->sb.backup_sb_block)
		return fs->rdonly ? -EROFS : 0;
	return chunk_change(fs, blk_chunk(fs, blk));
}

/* The cache's before_write (lazy marking), with the cache lock held:
 * before a changed buffer goes to disk, every chunk changed in memory is
 * marked dirty on disk, one flush for them all.  Every one, not only the
 * buffer's: an operation's changes may span chunks (an entry here, its
 * stub there), and whichever reaches the disk first, the check after a
 * crash must take in each chunk the operation touched. */
int chunk_mark_changed(void *ctx)
{
	struct cfs_fs *fs = ctx;
	uint32_t c, n = 0;
	int ret = 0;

	if (!__atomic_exchange_n(&fs->unmarked, 0, __ATOMIC_ACQ_REL))
		return 0;
	for (c = 0; c < fs->sb.nchunks && ret == 0; c++) {
		struct chunk *ch = chunk_of(fs, c);

		pthread_mutex_lock(&ch->state_lock);
		if (ch->unmarked) {
			ret = header_dirty(fs, c);
			n++;
		}
		pthread_mutex_unlock(&ch->state_lock);
	}
	if (ret == 0 && n)
		ret = cfs_bdev_flush(fs->bd);
	if (ret < 0)
		__atomic_store_n(&fs->unmarked, 1, __ATOMIC_RELEASE);
	return ret;
}

/* Only state_lock is taken, as in chunk_mark_dirty: corruption shows with
 * inode and chunk locks held.  The header is written at once and flushed,
 * so a crash a moment later cannot lose the mark; its counters are a
 * snapshot, as in chunk_mark_dirty (a chunk clean on disk has no change in
 * flight: the first would have to take state_lock to mark it dirty). */
void chunk_error(struct cfs_fs *fs, uint32_t c, cfs_ino_t ino, uint64_t blk, int err,
		 const char *what)
{
	struct chunk *ch;
	struct cfs_err_rec e = { .time = time(NULL), .ino = ino, .err = (uint32_t)-err,
				 .block = blk };
	struct cfs_chunk_error pub = { .time = e.time, .ino = ino, .err = -err,
				       .block = blk };

	if (fs->checking || c >= fs->sb.nchunks)
		return;
	ch = chunk_of(fs, c);
	snprintf(e.what, sizeof(e.what), "%s", what);
	pthread_mutex_lock(&ch->state_lock);
	if (fs->sb.feat_compat & CFS_FEAT_COMPAT_ERROR_RECORD) {
		if (ch->hdr.error_count++ == 0)
			ch->hdr.first_error = e;
		if (ch->hdr.error_count == 0)
			ch->hdr.error_count--;   /* saturates */
		ch->hdr.last_error = e;
	}
	if (fs->rdonly || chunk_header_mark(fs, c, ch->disk_state | CFS_STATE_ERROR) < 0 ||
	    cfs_bdev_flush(fs->bd) < 0)
		ch->disk_state |= CFS_STATE_ERROR;   /* said by info at least */
	pthread_mutex_unlock(&ch->state_lock);
	if (fs->error_fn) {
		memcpy(pub.what, e.what, sizeof(pub.what));
		fs->error_fn(fs->error_ctx, c, &pub);
	}
}

void chunk_on_corrupt(void *ctx, uint64_t blk, int err)
{
	struct cfs_fs *fs = ctx;

	if (blk < fs->sb.first_chunk_block || blk >= fs->sb.backup_sb_block)
		return;
	chunk_error(fs, blk_chunk(fs, blk), 0, blk, err,
		    err == -EBADMSG ? "metadata checksum mismatch" : "bad metadata block");
}

/* A change that leaves nothing to write back in chunk c: only its time
 * is noted (a scrub's snapshot sees it), no mark is owed. */
static int chunk_touch(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = chunk_of(fs, c);

	if (fs->rdonly)
		return -EROFS;
	pthread_mutex_lock(&ch->state_lock);
	change_noted(ch);
	pthread_mutex_unlock(&ch->state_lock);
	return 0;
}

/* With lazy marking only direct writes of file data come here.  Data
 * written where nothing on disk names another structure (a block made
 * since the last full flush, or the file's own) changes nothing a check
 * reads, and leaves nothing of the chunk in memory: the chunk is only
 * touched (a new block's allocation noted the chunk already).  A block
 * freed since may still be a structure of its chunk on disk. */
int chunk_before_dirty(void *ctx, uint64_t blk, uint32_t count)
{
	struct cfs_fs *fs = ctx;
	uint64_t b, end = blk + count;
	uint32_t c;
	int ret = 0;

	for (b = blk; b < end && ret == 0; b = chunk_base(fs, c + 1)) {
		if (b < fs->sb.first_chunk_block || b >= fs->sb.backup_sb_block)
			return 0;
		c = blk_chunk(fs, b);
		if (fs->lazy && !chunk_blocks_freed(fs, b, (end < chunk_base(fs, c + 1) ?
							      end : chunk_base(fs, c + 1)) - b))
			ret = chunk_touch(fs, c);
		else
			ret = chunk_mark_dirty(fs, c);
	}
	return ret;
}

/* ---- bitmaps ---- */

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
	chunk_of(fs, c)->hdr_dirty = 1;
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

/* The first block freed since the last full flush in [rel, rel + n) and
 * the end of its freed run, or 0. */
static int first_freed(const struct chunk *ch, uint64_t rel, uint64_t n, uint64_t *at,
		       uint64_t *end)
{
	struct run a, b;
	int ha = runset_first(&ch->freed_new, rel, n, &a);
	int hb = runset_first(&ch->freed_old, rel, n, &b);

	if (!ha && !hb)
		return 0;
	if (!ha || (hb && b.rel < a.rel))
		a = b;
	*at = a.rel;
	*end = (uint64_t)a.rel + a.n;
	return 1;
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
		if (avoid && first_freed(avoid, base + i, n, &at, &end)) {
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

/* Blocks freed in chunk c (lock held) may still be named on disk until
 * the next full flush: note them for chunk_blocks_freed. */
static void freed_note(struct cfs_fs *fs, uint32_t c, uint32_t rel, uint32_t n)
{
	runset_add(&chunk_of(fs, c)->freed_new, rel, n);
}

/* chunk_blocks_freed with the lock held */
static int run_freed(const struct chunk *ch, uint64_t rel, uint64_t n)
{
	return runset_hits(&ch->freed_new, rel, n) || runset_hits(&ch->freed_old, rel, n);
}

int chunk_blocks_freed(struct cfs_fs *fs, uint64_t abs, uint64_t n)
{
	uint32_t c = blk_chunk(fs, abs);
	struct chunk *ch;
	int ret;

	if (c >= fs->sb.nchunks)
		return 1;
	ch = chunk_of(fs, c);
	pthread_mutex_lock(&ch->lock);
	ret = run_freed(ch, abs - chunk_base(fs, c), n);
	pthread_mutex_unlock(&ch->lock);
	return ret;
}

/* The frees so far join freed_old, which the flush about to begin makes
 * lasting; those made meanwhile gather in freed_new. */
void chunk_freed_mark(struct cfs_fs *fs, uint64_t *gen)
{
	uint32_t c;

	for (c = 0; c < fs->sb.nchunks; c++) {
		struct chunk *ch = chunk_of(fs, c);

		pthread_mutex_lock(&ch->lock);
		runset_merge(&ch->freed_old, &ch->freed_new);
		gen[c] = ++ch->freed_gen;
		pthread_mutex_unlock(&ch->lock);
	}
}

void chunk_freed_forget(struct cfs_fs *fs, const uint64_t *gen)
{
	uint32_t c;

	for (c = 0; c < fs->sb.nchunks; c++) {
		struct chunk *ch = chunk_of(fs, c);

		pthread_mutex_lock(&ch->lock);
		/* after another mark, freed_old holds frees this flush may
		 * have missed: kept until a flush begun after them is done */
		if (ch->freed_gen == gen[c])
			runset_clear(&ch->freed_old);
		pthread_mutex_unlock(&ch->lock);
	}
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

	ret = chunk_change(fs, c);
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
	ch->hdr_dirty = 1;
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
	ret = chunk_change(fs, c);
	if (ret < 0)
		return ret;
	for (i = 0; i < count; i++)
		cache_forget(&fs->cache, chunk_base(fs, c) + rel + i);
	pthread_mutex_lock(&ch->lock);
	ret = bm_clear(fs, c, BM_BLOCKS, rel, count);
	freed_note(fs, c, rel, count);
	if (ret == 0) {   /* a double free (corruption) must not inflate it */
		ch->hdr.free_blocks += count;
		ch->hdr_dirty = 1;
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
		ch->hdr_dirty = 1;
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
			ch->hdr_dirty = 1;
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
		ret = dirty_on_disk(fs, c);
		if (ret == 0)
			ret = chunk_write_header(fs, c, ch->disk_state);
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
	ch->hdr_dirty = 1;
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

	ret = chunk_change(fs, c);
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
		freed_note(fs, c, rel, fs->icl_blocks);
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
	ch->hdr_dirty = 1;
	ret = bm_clear(fs, c, BM_BLOCKS, mb, 1);
	freed_note(fs, c, mb, 1);
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
	if (chunk_inodes_avail(fs, c) < need || chunk_change(fs, c) < 0)
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
	ret = chunk_change(fs, c);
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
		ch->hdr_dirty = 1;
	}
out:
	pthread_mutex_unlock(&ch->lock);
	return ret;
}

int chunk_free_inode(struct cfs_fs *fs, cfs_ino_t ino)
{
	uint32_t c = CFS_INO_CHUNK(ino);
	struct chunk *ch = chunk_of(fs, c);
	int ret = chunk_change(fs, c);

	if (ret < 0)
		return ret;
	pthread_mutex_lock(&ch->lock);
	if (CFS_INO_LOCAL(ino) > fs->sb.inodes_per_chunk)
		ret = icl_free(fs, c, CFS_INO_LOCAL(ino));
	else
		ret = bm_clear(fs, c, BM_INODES, CFS_INO_LOCAL(ino) - 1, 1);
	if (ret == 0) {
		ch->hdr.free_inodes++;
		ch->hdr_dirty = 1;
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
	ch->hdr_dirty = 1;
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
		ch->hdr_dirty = 1;
	}
	pthread_mutex_unlock(&ch->lock);
	return ret;
}

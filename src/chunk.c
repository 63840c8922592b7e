/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Chunks: the header and the state it records.  The bitmaps and
 * allocation are chunk_alloc.c's; their changes, and every buffer the
 * cache turns dirty, pass through the state protocol below first.  Also
 * here: corruption recorded in the header, and the blocks freed since the
 * last full flush (what the disk may still name).
 *
 * The state protocol.  "Clean" on disk means "needs no check after a
 * crash", so a chunk is marked dirty on disk before any of its changed
 * blocks can reach the disk.  Its states:
 *
 *   CLEAN    clean on disk (disk_state), nothing changed in memory.
 *   CHANGED  changed in memory only (chunk->unmarked; lazy marking,
 *            docs/POLICIES.md): the disk still holds the chunk as it was
 *            when last clean, so a crash now needs no check of it.
 *   DIRTY    marked dirty on disk (disk_state & CFS_STATE_DIRTY): its
 *            changes may be reaching the disk.
 *
 *                   chunk_to_changed_mem
 *        CLEAN ----------------------------> CHANGED
 *          ^       (memory: unmarked set)       |
 *          |                                    | chunk_changed_to_dirty_disk
 *          |                                    | (disk: every CHANGED chunk's
 *          |                                    v  header written, one flush)
 *          +-------------------------------- DIRTY <--- chunk_to_dirty_disk
 *            checkpoint (super.c: every change            (disk: from CLEAN or
 *            flushed, then the header written             CHANGED at once,
 *            clean by chunk_hdr_write_disk)               header and flush)
 *
 * Without lazy marking chunk_to_changed_mem goes straight to DIRTY.  The
 * ERROR bit (chunk_error) is written at once over any state and cleared
 * only by a check (fsck, scrub).  The names say the move and what they
 * touch:
 * chunk_to_<STATE>_mem changes memory only, chunk_..._disk writes the
 * header (and flushes); _locked runs with state_lock held.
 * note_change_mem and chunk_note_change_mem move nothing: they note the
 * change's time (first_change, last_change), which the checkpoint and a
 * scrub's snapshot read.  Two ways to write a header: chunk_hdr_write_disk
 * writes the in-memory header whole, its counts included (their blocks
 * must be on disk already); chunk_state_write_disk writes a new state onto
 * the header as last written.  chunk->hdr_unwritten, the in-memory
 * header's counts differing from the disk's, is not the DIRTY state: it
 * says only that a checkpoint has a header to write. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "fsint.h"
#include "le.h"

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
int chunk_hdr_write_disk(struct cfs_fs *fs, uint32_t c, uint32_t state)
{
	struct chunk *ch = chunk_of(fs, c);
	int ret;

	ch->hdr.state = state;
	ret = header_put(fs, c, &ch->hdr);
	if (ret == 0)
		ch->hdr_unwritten = 0;
	return ret;
}

/* A new state (and error record, last-check time) on the header as last
 * written: the in-memory counters and initialised lengths may describe
 * blocks still in memory, which must not look initialised on disk before
 * they are.  With state_lock held. */
int chunk_state_write_disk(struct cfs_fs *fs, uint32_t c, uint32_t state)
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

/* With state_lock held: the time of a change to chunk ch, no state moved. */
static void note_change_mem(struct chunk *ch)
{
	double now = cfs_now_mono();

	lock_held(&ch->state_lock);
	if (!ch->unmarked && !(ch->disk_state & CFS_STATE_DIRTY))
		ch->first_change = now;
	ch->last_change = now;
}

/* CLEAN or CHANGED -> DIRTY, with state_lock held: the header written
 * dirty but not yet flushed (the caller flushes, once for many). */
static int to_dirty_disk_unflushed(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = chunk_of(fs, c);
	int ret;

	lock_held(&ch->state_lock);
	ch->hdr.generation++;
	ch->hdr.last_write = time(NULL);
	ret = chunk_state_write_disk(fs, c, ch->disk_state | CFS_STATE_DIRTY);
	if (ret == 0)
		ch->unmarked = 0;
	return ret;
}

/* CLEAN or CHANGED -> DIRTY, with state_lock held: the header written
 * dirty and flushed, unless the disk says dirty already.  The change's
 * time is the caller's to note. */
int chunk_to_dirty_disk_locked(struct cfs_fs *fs, uint32_t c)
{
	int ret = 0;

	lock_held(&chunk_of(fs, c)->state_lock);
	if (!(chunk_of(fs, c)->disk_state & CFS_STATE_DIRTY)) {
		ret = to_dirty_disk_unflushed(fs, c);
		if (ret == 0)
			ret = cfs_bdev_flush(fs->bd);
	}
	return ret;
}

/* CLEAN or CHANGED -> DIRTY, on disk at once.
 * The chunk must be marked dirty on stable storage before any of its
 * changed blocks can reach the disk: that is what makes "clean" mean
 * "needs no check" after a crash.  Only state_lock is taken here, since
 * this runs from buf_dirty() with ch->lock possibly held; the header
 * fields written are a snapshot that fsck recomputes anyway. */
int chunk_to_dirty_disk(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = chunk_of(fs, c);
	int ret;

	if (fs->rdonly)
		return -EROFS;
	pthread_mutex_lock(&ch->state_lock);
	note_change_mem(ch);
	ret = chunk_to_dirty_disk_locked(fs, c);
	pthread_mutex_unlock(&ch->state_lock);
	return ret;
}

/* CLEAN -> CHANGED, in memory.  Lazy marking: a change made in memory
 * needs no mark on disk until one of the changed blocks is written
 * (chunk_changed_to_dirty_disk).  Until then the disk holds the chunk as
 * it was when last clean, so it stays clean there, and a crash under a
 * steady load leaves dirty only the chunks whose changes were being
 * written, not every chunk written to lately. */
int chunk_to_changed_mem(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = chunk_of(fs, c);

	if (!fs->lazy)
		return chunk_to_dirty_disk(fs, c);
	if (fs->rdonly)
		return -EROFS;
	pthread_mutex_lock(&ch->state_lock);
	note_change_mem(ch);
	if (!(ch->disk_state & CFS_STATE_DIRTY) && !ch->unmarked) {
		ch->unmarked = 1;
		__atomic_store_n(&fs->unmarked, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&ch->state_lock);
	return 0;
}

/* The cache's note_dirty (lazy marking): the chunk of a buffer turning
 * dirty goes CLEAN -> CHANGED. */
int chunk_blk_to_changed_mem(void *ctx, uint64_t blk)
{
	struct cfs_fs *fs = ctx;

	if (blk < fs->sb.first_chunk_block || blk >= fs->sb.backup_sb_block)
		return fs->rdonly ? -EROFS : 0;
	return chunk_to_changed_mem(fs, blk_chunk(fs, blk));
}

/* CHANGED -> DIRTY for every chunk, on disk: the cache's before_write
 * (lazy marking), with the cache lock held.  Before a changed buffer goes
 * to disk, every chunk changed in memory is marked dirty on disk, one
 * flush for them all.  Every one, not only the
 * buffer's: an operation's changes may span chunks (an entry here, its
 * stub there), and whichever reaches the disk first, the check after a
 * crash must take in each chunk the operation touched. */
int chunk_changed_to_dirty_disk(void *ctx)
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
			ret = to_dirty_disk_unflushed(fs, c);
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

/* A change that leaves nothing to write back in chunk c: only its time
 * is noted (a scrub's snapshot sees it), no state moved, no mark owed. */
static int chunk_note_change_mem(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = chunk_of(fs, c);

	if (fs->rdonly)
		return -EROFS;
	pthread_mutex_lock(&ch->state_lock);
	note_change_mem(ch);
	pthread_mutex_unlock(&ch->state_lock);
	return 0;
}

/* The cache's before_dirty: the chunks of blocks about to change on disk
 * go to DIRTY, on disk (chunk_to_dirty_disk).  With lazy marking only
 * direct writes of file data come here.  Data written where nothing on
 * disk names another structure (a block made since the last full flush,
 * or the file's own) changes nothing a check reads, and leaves nothing of
 * the chunk in memory: the chunk moves to no state, its change's time is
 * only noted (a new block's allocation moved it to CHANGED already).  A
 * block freed since may still be a structure of its chunk on disk. */
int chunk_direct_to_dirty_disk(void *ctx, uint64_t blk, uint32_t count)
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
			ret = chunk_note_change_mem(fs, c);
		else
			ret = chunk_to_dirty_disk(fs, c);
	}
	return ret;
}

/* Only state_lock is taken, as in chunk_to_dirty_disk: corruption shows
 * with inode and chunk locks held.  The header is written at once and
 * flushed, so a crash a moment later cannot lose the mark; its counters
 * are a snapshot, as in chunk_to_dirty_disk (a chunk clean on disk has no
 * change in flight: the first would have to take state_lock to mark it
 * dirty). */
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
	if (fs->rdonly || chunk_state_write_disk(fs, c, ch->disk_state | CFS_STATE_ERROR) < 0 ||
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

/* ---- blocks freed since the last full flush ---- */

int chunk_first_freed(const struct chunk *ch, uint64_t rel, uint64_t n, uint64_t *at,
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

void chunk_freed_note(struct cfs_fs *fs, uint32_t c, uint32_t rel, uint32_t n)
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


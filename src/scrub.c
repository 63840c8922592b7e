/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Online check and repair of a mounted filesystem, one chunk at a time:
 * the checker of src/fsck/ run on what is on the disk while the
 * filesystem stays in use (`chunkfs scrub`, the daemon's errors=repair).
 *
 * For each chunk (locking: docs/LOCKING.md, "Scrub"):
 *  1. a check that holds nobody up (quiet_check), which counts if the
 *     chunk did not change meanwhile and nothing was found;
 *  2. else the fenced check: at the fence (changes held off for a
 *     moment) everything is written back and the chunk fenced, so that
 *     operations naming its inodes wait at their entry; then the check,
 *     with the chunks its findings reach (view_check), runs on a view of
 *     the disk (fs_view_open) through a recorder that holds the view's
 *     writes and notes which chunks it read, while the other operations
 *     go on;
 *  3. at the end (changes held off again) the held writes go to the disk
 *     if no chunk the check read or wrote changed since the fence; else
 *     they are thrown away and the check is made again with changes held
 *     off throughout (the fallback);
 *  4. what the repair wrote is taken back: the chunk headers the view
 *     changed replace the mounted ones, the blocks of the chunks it wrote
 *     are dropped from the mounted cache with the inode-cluster maps read
 *     from them, their in-memory inodes are read
 *     again (heads, in place under their lock: the open counts stay) or
 *     forgotten (continuations and stubs, after every loaded chain that
 *     holds one is let go); the fence ends.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bdev.h"
#include "fsck/fsck.h"

/* Test hooks, in the test build only (-DCFS_TEST_HOOKS: build/san and
 * the unit tests; the installed library reads no environment):
 * CHUNKFS_TEST_SCRUB_PAUSE seconds of sleep at a repair's first write
 * (tests kill the daemon there, or go on with operations while the
 * repair waits), and CHUNKFS_TEST_SCRUB_QUIET_PAUSE at the end of a
 * check that holds nobody up (tests change the filesystem meanwhile);
 * each once per process, said on stderr for the test to wait for. */
#ifdef CFS_TEST_HOOKS
static void test_pause(const char *name, int *done)
{
	const char *e = getenv(name);

	if (e && !__atomic_exchange_n(done, 1, __ATOMIC_RELAXED)) {
		fprintf(stderr, "scrub: test pause (%s)\n", name);
		sleep((unsigned)atoi(e));
	}
}

static int paused_repair, paused_quiet;

/* CHUNKFS_TEST_SCRUB_TRACE names a file told whether each fence held. */
static void trace(struct cfs_fs *fs, uint32_t chunk, int held, const uint8_t *read, uint32_t n)
{
	const char *p = getenv("CHUNKFS_TEST_SCRUB_TRACE");
	FILE *f = p ? fopen(p, "a") : NULL;
	uint32_t c;

	if (!f)
		return;
	fprintf(f, "scrub: fence of chunk %u %s; read:", chunk, held ? "held" : "checked again");
	for (c = 0; read && c < n; c++)
		if (read[c])
			fprintf(f, " %u", c);
	fprintf(f, "; fenced:");
	for (c = 0; c < n; c++)
		if (fs->fenced[c])
			fprintf(f, " %u", c);
	fprintf(f, "\n");
	fclose(f);
}
#else
/* macros, so that not even the names are in the installed library */
#define test_pause(name, done) ((void)0)
#define trace(fs, chunk, held, read, n) ((void)0)
#endif

/* The view's cache hook: the chunk is marked dirty as any writer's, and
 * remembered, for step 4. */
static int view_before_dirty(void *ctx, uint64_t blk, uint32_t count)
{
	struct cfs_fs *view = ctx;
	uint64_t b;
	int ret;

	for (b = blk; b < blk + count && b >= view->sb.first_chunk_block &&
		      b < view->sb.backup_sb_block;
	     b = chunk_base(view, blk_chunk(view, b) + 1))
		view->touched[blk_chunk(view, b)] = 1;
	ret = chunk_direct_to_dirty_disk(ctx, blk, count);
	test_pause("CHUNKFS_TEST_SCRUB_PAUSE", &paused_repair);
	return ret;
}

static void state_lock_all(struct cfs_fs *fs, int lock)
{
	uint32_t c;

	for (c = 0; c < fs->sb.nchunks; c++)
		if (lock)
			pthread_mutex_lock(&fs->chunks[c].state_lock);
		else
			pthread_mutex_unlock(&fs->chunks[c].state_lock);
}

/* The headers the view rewrote replace the mounted filesystem's copies.
 * chunk->lock is taken under state_lock here, against the usual order:
 * only a writer nests them the other way (chunk_to_dirty_disk under an
 * allocation), and writers are held off. */
static void header_take(struct chunk *ch, const struct chunk *vc, double now)
{
	pthread_mutex_lock(&ch->lock);
	ch->hdr = vc->hdr;
	ch->disk_state = vc->disk_state;
	ch->disk_hdr = vc->disk_hdr;
	ch->was_dirty = vc->was_dirty;
	ch->hdr_unwritten = 0;
	ch->hdr_bad = 0;
	ch->last_change = now;   /* cleaned again once idle */
	pthread_mutex_unlock(&ch->lock);
}

static void headers_take(struct cfs_fs *fs, struct cfs_fs *view)
{
	double now = cfs_now_mono();
	uint32_t c;

	for (c = 0; c < fs->sb.nchunks; c++)
		if (view->touched[c])
			header_take(&fs->chunks[c], &view->chunks[c], now);
}

/* ---- the fence: a repair checked while operations go on ----
 *
 * The check of a repair runs without holding anybody up, on a view whose
 * device is a recorder over the real one (struct rec): the view's writes
 * are held in memory, every block it reads is noted by chunk, and each
 * chunk header reads as it was at the fence.  The mounted filesystem goes
 * on meanwhile; only operations naming an inode of the fenced chunks wait
 * (fence_wait).  At the end, with changes held off, the held writes go to
 * the disk only if no chunk the view read or wrote changed since the fence
 * (fence_holds); else they are thrown away and the check is made again with
 * changes held off.  docs/LOCKING.md, "Scrub". */

#define REC_SLOTS 4096

struct held {
	uint64_t blk;           /* UINT64_MAX: a flush */
	struct held *hnext;     /* older writes to the same slot */
	uint8_t data[];
};

struct rec {
	struct cfs_bdev bd;     /* first: the view's device */
	struct cfs_bdev *real;
	uint64_t first, cblocks;
	uint32_t nchunks;
	pthread_mutex_t lock;
	struct held **log;      /* every write and flush, in order */
	size_t nlog, cap;
	struct held *slot[REC_SLOTS];
	uint8_t *hdr;           /* each chunk's header block at the fence */
	uint8_t read[CFS_MAX_CHUNKS];    /* a block besides the header read */
	uint8_t wrote[CFS_MAX_CHUNKS];
	int wrote_out;          /* a block outside every chunk written */
};

static int rec_chunk(const struct rec *rc, uint64_t blk, uint32_t *c)
{
	if (blk < rc->first || blk >= rc->first + rc->nchunks * rc->cblocks)
		return 0;
	*c = (uint32_t)((blk - rc->first) / rc->cblocks);
	return 1;
}

static struct held *rec_find(struct rec *rc, uint64_t blk)
{
	struct held *h = rc->slot[blk % REC_SLOTS];

	while (h && h->blk != blk)
		h = h->hnext;
	return h;
}

static int rec_log(struct rec *rc, struct held *h)
{
	struct held **p = array_room(rc->log, &rc->cap, rc->nlog, sizeof(*p), 256);

	if (!p)
		return -ENOMEM;
	rc->log = p;
	rc->log[rc->nlog++] = h;
	return 0;
}

static int rec_read(struct cfs_bdev *bd, uint64_t blk, uint32_t count, void *buf)
{
	struct rec *rc = (struct rec *)bd;
	uint32_t bs = bd->block_size, i, c;
	int ret = cfs_bdev_read(rc->real, blk, count, buf);
	struct held *h;

	if (ret < 0)
		return ret;
	pthread_mutex_lock(&rc->lock);
	for (i = 0; i < count; i++) {
		uint8_t *dst = (uint8_t *)buf + (size_t)i * bs;

		/* outside the chunks lie the superblocks, which only
		 * cfs_resize changes, and it waits for the fence */
		if (rec_chunk(rc, blk + i, &c)) {
			if (blk + i == rc->first + c * rc->cblocks)
				memcpy(dst, rc->hdr + (size_t)c * bs, bs);
			else
				rc->read[c] = 1;
		}
		if ((h = rec_find(rc, blk + i)))
			memcpy(dst, h->data, bs);
	}
	pthread_mutex_unlock(&rc->lock);
	return 0;
}

static int rec_write(struct cfs_bdev *bd, uint64_t blk, uint32_t count, const void *buf)
{
	struct rec *rc = (struct rec *)bd;
	uint32_t bs = bd->block_size, i, c;
	struct held *h;
	int ret = 0;

	pthread_mutex_lock(&rc->lock);
	for (i = 0; i < count && ret == 0; i++) {
		h = malloc(sizeof(*h) + bs);
		if (!h) {
			ret = -ENOMEM;
			break;
		}
		h->blk = blk + i;
		memcpy(h->data, (const uint8_t *)buf + (size_t)i * bs, bs);
		ret = rec_log(rc, h);
		if (ret < 0) {
			free(h);
			break;
		}
		h->hnext = rc->slot[h->blk % REC_SLOTS];
		rc->slot[h->blk % REC_SLOTS] = h;
		if (rec_chunk(rc, h->blk, &c))
			rc->wrote[c] = 1;
		else
			rc->wrote_out = 1;
	}
	pthread_mutex_unlock(&rc->lock);
	return ret;
}

/* kept in its place among the writes, for the order they rely on */
static int rec_flush(struct cfs_bdev *bd)
{
	struct rec *rc = (struct rec *)bd;
	struct held *h = malloc(sizeof(*h));
	int ret;

	if (!h)
		return -ENOMEM;
	h->blk = UINT64_MAX;
	h->hnext = NULL;
	pthread_mutex_lock(&rc->lock);
	ret = rec_log(rc, h);
	pthread_mutex_unlock(&rc->lock);
	if (ret < 0)
		free(h);
	return ret;
}

static void rec_prefetch(struct cfs_bdev *bd, uint64_t blk, uint32_t count)
{
	cfs_bdev_prefetch(((struct rec *)bd)->real, blk, count);
}

static void rec_destroy(struct cfs_bdev *bd)
{
	(void)bd;   /* freed by rec_free, after the views */
}

static const struct cfs_bdev_ops rec_ops = {
	.read = rec_read,
	.write = rec_write,
	.flush = rec_flush,
	.destroy = rec_destroy,
	.prefetch = rec_prefetch,
};

static void rec_free(struct rec *rc)
{
	size_t i;

	if (!rc)
		return;
	for (i = 0; i < rc->nlog; i++)
		free(rc->log[i]);
	free(rc->log);
	free(rc->hdr);
	pthread_mutex_destroy(&rc->lock);
	free(rc);
}

/* At the fence (changes held off, everything written back): the chunk
 * headers as they are on the disk now. */
static int rec_open(struct cfs_fs *fs, struct rec **out)
{
	struct rec *rc = calloc(1, sizeof(*rc));
	uint32_t c, bs = fs->bd->block_size;
	int ret = 0;

	if (!rc)
		return -ENOMEM;
	pthread_mutex_init(&rc->lock, NULL);
	rc->bd.ops = &rec_ops;
	rc->bd.block_size = bs;
	rc->bd.nblocks = fs->bd->nblocks;
	snprintf(rc->bd.name, sizeof(rc->bd.name), "%s", fs->bd->name);
	rc->real = fs->bd;
	rc->first = fs->sb.first_chunk_block;
	rc->cblocks = fs->sb.chunk_blocks;
	rc->nchunks = fs->sb.nchunks;
	rc->hdr = malloc((size_t)rc->nchunks * bs);
	if (!rc->hdr)
		ret = -ENOMEM;
	for (c = 0; c < rc->nchunks && ret == 0; c++)
		ret = cfs_bdev_read(fs->bd, chunk_base(fs, c), 1, rc->hdr + (size_t)c * bs);
	if (ret < 0) {
		rec_free(rc);
		return ret;
	}
	*out = rc;
	return 0;
}

static int rec_replay(struct rec *rc)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < rc->nlog && ret == 0; i++)
		ret = rc->log[i]->blk == UINT64_MAX
			? cfs_bdev_flush(rc->real)
			: cfs_bdev_write(rc->real, rc->log[i]->blk, 1, rc->log[i]->data);
	return ret ? ret : cfs_bdev_flush(rc->real);
}

/* What says whether a chunk changed: its state on disk, the count of its
 * turns to dirty, the last time a buffer of it turned dirty (a write to
 * the disk too: cache_write_direct marks it as buf_dirty does), its error
 * count and whether its header waits to be written. */
struct snap {
	uint32_t state, errors;
	uint64_t gen;
	double change;
	int hdr_unwritten;
};

static void snap_read(const struct chunk *ch, struct snap *s)
{
	s->state = ch->disk_state;
	s->errors = ch->hdr.error_count;
	s->gen = ch->hdr.generation;
	s->change = ch->last_change;
	s->hdr_unwritten = ch->hdr_unwritten;
}

static void chunk_snap(struct cfs_fs *fs, uint32_t c, struct snap *s)
{
	struct chunk *ch = &fs->chunks[c];

	pthread_mutex_lock(&ch->state_lock);
	snap_read(ch, s);
	pthread_mutex_unlock(&ch->state_lock);
}

static int snap_same(const struct snap *a, const struct snap *b)
{
	return a->state == b->state && a->errors == b->errors && a->gen == b->gen &&
	       a->change == b->change && a->hdr_unwritten == b->hdr_unwritten;
}

struct fence {
	struct rec *rc;
	struct snap snap[CFS_MAX_CHUNKS];     /* every chunk at the fence */
	struct chunk *hdrs;     /* the headers the views rewrote, for headers_take */
	uint8_t have[CFS_MAX_CHUNKS];
	int checked;            /* the chunk was found sound */
};

static void fence_free(struct fence *fc)
{
	if (!fc)
		return;
	rec_free(fc->rc);
	free(fc->hdrs);
	free(fc);
}

/* With changes held off and everything written back: the snapshots first,
 * then the headers, so that a header changed in between (chunk_error from
 * a reader) shows as a change. */
static int fence_begin(struct cfs_fs *fs, uint32_t chunk, struct fence **out)
{
	struct fence *fc = calloc(1, sizeof(*fc));
	uint32_t c;
	int ret;

	if (!fc)
		return -ENOMEM;
	fc->hdrs = calloc(fs->sb.nchunks, sizeof(*fc->hdrs));
	for (c = 0; c < fs->sb.nchunks; c++)
		chunk_snap(fs, c, &fc->snap[c]);
	ret = fc->hdrs ? rec_open(fs, &fc->rc) : -ENOMEM;
	if (ret < 0) {
		fence_free(fc);
		return ret;
	}
	fence_add(fs, chunk);
	*out = fc;
	return 0;
}

/* Operations held off: did any chunk the views read or wrote change since
 * the fence?  If not, what they saw is what a check at the fence would
 * have seen, and the operations since touched none of it. */
static int fence_holds(struct cfs_fs *fs, uint32_t chunk, const struct fence *fc,
		       const uint8_t *touched)
{
	struct snap s;
	uint32_t c;

	if (fc->rc->wrote_out)
		return 0;
	for (c = 0; c < fs->sb.nchunks; c++) {
		if (c != chunk && !fc->rc->read[c] && !fc->rc->wrote[c] && !touched[c])
			continue;
		chunk_snap(fs, c, &s);
		if (!snap_same(&s, &fc->snap[c]))
			return 0;
	}
	return 1;
}

static void fence_keep_headers(struct fence *fc, struct cfs_fs *view)
{
	uint32_t c;

	for (c = 0; c < view->sb.nchunks; c++)
		if (view->touched[c]) {
			fc->hdrs[c] = view->chunks[c];
			fc->have[c] = 1;
		}
}

/* The blocks of the chunks the repair wrote dropped from the mounted
 * cache, and what is kept in memory from them: the inode-cluster maps,
 * which the repair may have changed (a slot it took for a stub or
 * lost+found, a cluster it dropped).  A stale map would hand out the
 * repair's slots again, and the close would give back as empty a cluster
 * the repair filled. */
static int cache_take(struct cfs_fs *fs, const uint8_t *touched)
{
	uint32_t c;
	int tries;

	for (c = 0; c < fs->sb.nchunks; c++) {
		if (!touched[c])
			continue;
		pthread_mutex_lock(&fs->chunks[c].lock);
		icl_forget(fs, c);
		fs->chunks[c].repaired = 1;
		pthread_mutex_unlock(&fs->chunks[c].lock);
		fs->close_check = scrub_close_check;
	}
	for (c = 0; c < fs->sb.nchunks; c++) {
		uint64_t lo = chunk_base(fs, c);

		if (!touched[c])
			continue;
		/* a reader holds a buffer for a few instructions */
		for (tries = 0; cache_drop(&fs->cache, lo, lo + fs->sb.chunk_blocks); tries++) {
			if (tries == 5000)
				return -EBUSY;
			usleep(1000);
		}
	}
	return 0;
}

static int loading_in(struct cfs_fs *fs, const uint8_t *touched)
{
	struct inode *ip;
	size_t i;

	for (i = 0; i < icache_buckets(fs); i++)
		for (ip = fs->icache[i]; ip; ip = ip->hnext)
			if (ip->loading && touched[CFS_INO_CHUNK(ip->ino)])
				return 1;
	return 0;
}

/* Every inode in memory, referenced; loads of the touched chunks that
 * began before their blocks were dropped have ended. */
static int inodes_pin(struct cfs_fs *fs, const uint8_t *touched, struct inode ***out,
		      size_t *n)
{
	struct inode **pin = NULL, **p, *ip;
	size_t i, cap = 0;
	int ret = 0;

	*n = 0;
	pthread_mutex_lock(&fs->icache_lock);
	while (loading_in(fs, touched))
		pthread_cond_wait(&fs->icache_cond, &fs->icache_lock);
	for (i = 0; i < icache_buckets(fs) && ret == 0; i++)
		for (ip = fs->icache[i]; ip; ip = ip->hnext) {
			if (ip->loading)
				continue;
			p = array_room(pin, &cap, *n, sizeof(*p), 256);
			if (!p) {
				ret = -ENOMEM;
				break;
			}
			pin = p;
			ip->ref++;
			pin[(*n)++] = ip;
		}
	pthread_mutex_unlock(&fs->icache_lock);
	*out = pin;
	return ret;
}

static int chain_touched(struct inode *ip, const uint8_t *touched)
{
	int i;

	for (i = 0; i < ip->nchain; i++)
		if (touched[CFS_INO_CHUNK(ip->chain[i]->ino)])
			return 1;
	return 0;
}

static int is_part(const struct inode *ip)
{
	return (ip->d.flags & (CFS_IFL_CONT | CFS_IFL_STUB)) != 0;
}

/* Step 4 for inodes: chains first, so that no loaded chain still holds a
 * continuation when it is forgotten.  An inode somebody holds open (the
 * kernel's references) is read again in place whatever it now is, so that
 * the holder's put finds it; the numbers of those go to *changed, for the
 * caller to tell the cache above (cfs_set_reload_fn) once changes go on. */
static int inodes_take(struct cfs_fs *fs, const uint8_t *touched, cfs_ino_t **changed,
		       size_t *nchanged)
{
	struct inode **pin, *ip;
	size_t i, n;
	int ret = inodes_pin(fs, touched, &pin, &n), r;

	*nchanged = 0;
	*changed = n ? malloc(n * sizeof(**changed)) : NULL;
	for (i = 0; i < n; i++) {
		ip = pin[i];
		pthread_mutex_lock(&ip->lock);
		if (ip->chain && (touched[CFS_INO_CHUNK(ip->ino)] || chain_touched(ip, touched)))
			inode_chain_release(fs, ip);
		pthread_mutex_unlock(&ip->lock);
	}
	for (i = 0; i < n; i++) {
		ip = pin[i];
		if (!touched[CFS_INO_CHUNK(ip->ino)])
			continue;
		pthread_mutex_lock(&ip->lock);
		if (!ip->open && (is_part(ip) || ip->deleted)) {
			inode_forget(fs, ip);
		} else {
			r = inode_reload(fs, ip);
			if (r < 0 && ret == 0)
				ret = r;
			if (ip->open && *changed)
				(*changed)[(*nchanged)++] = ip->ino;
		}
		pthread_mutex_unlock(&ip->lock);
	}
	for (i = 0; i < n; i++)
		inode_put(fs, pin[i]);
	free(pin);
	return ret;
}

/* One check in a fresh view, of the chunks want selects (every chunk with
 * want NULL and vo->force, as fsck -f); its repairs written and taken
 * back (what it wrote before a failure too). */
static int view_run(struct cfs_fs *fs, const uint8_t *want, const struct cfs_fsck_opts *vo,
		    struct cfs_fsck_result *r, uint8_t *touched, struct fsck_reach *reach,
		    struct fence *fc)
{
	struct cfs_fs *view;
	uint32_t c;
	int ret, r2;

	ret = fc ? fs_view_open_bd(fs, &fc->rc->bd, vo->mode == CFS_FSCK_NO, &view)
		 : fs_view_open(fs, vo->mode == CFS_FSCK_NO, &view);
	if (ret < 0)
		return ret;
	view->cache.before_dirty = view_before_dirty;
	/* preen's "the crash left it dirty" is the mount's finding, not the
	 * mark the mounted filesystem's own writes put on disk */
	for (c = 0; c < view->sb.nchunks; c++)
		view->chunks[c].was_dirty = fs->chunks[c].was_dirty;
	ret = fsck_run(view, vo, want, r, reach);
	if (vo->mode != CFS_FSCK_NO) {
		for (c = 0; c < view->sb.nchunks; c++)
			view->touched[c] |= view->chunks[c].hdr_unwritten;
		r2 = fs_write_all(view);
		if (ret == 0)
			ret = r2;
		if (fc)
			fence_keep_headers(fc, view);
		else
			headers_take(fs, view);
		for (c = 0; c < CFS_MAX_CHUNKS; c++)
			touched[c] |= view->touched[c];
	}
	fs_view_close(view);
	return ret;
}

/* Chunk c was checked and found sound: its last-check time, its error mark
 * cleared, in the header (state_lock held, as chunk_error writes it).  The
 * header as last written: a chunk clean on disk may have changes in memory
 * (lazy marking), which its counters on disk must not count yet. */
static int chunk_checked(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = &fs->chunks[c];
	int ret;

	ch->hdr.last_check = time(NULL);
	ch->was_dirty = 0;
	ret = chunk_state_write_disk(fs, c, ch->disk_state & ~(uint32_t)CFS_STATE_ERROR);
	return ret ? ret : cfs_bdev_flush(fs->bd);
}

/* The chunks a repair of the chunks in sel must check in the same run:
 * every chunk the findings reach (struct fsck_reach), followed by checks
 * that change nothing until none is new, added to sel.  Returns 1 when
 * that set is known, 0 when only a check of every chunk will do (a
 * reference lost that cannot be named), or a negative errno. */
static int reach_close(struct cfs_fs *fs, uint8_t *sel, struct fsck_reach *reach,
		       uint8_t *touched, struct fence *fc)
{
	struct cfs_fsck_opts look = { .mode = CFS_FSCK_NO, .threads = 1 };
	struct cfs_fsck_result lr;
	uint8_t add[CFS_MAX_CHUNKS];
	uint32_t c, n;
	int ret;

	for (;;) {
		if (reach->unknown)
			return 0;
		for (c = n = 0; c < fs->sb.nchunks; c++) {
			add[c] = reach->chunk[c] && !sel[c];
			sel[c] |= add[c];
			n += add[c];
			if (add[c] && fc)
				fence_add(fs, c);
		}
		if (n == 0)
			return 1;
		memset(reach, 0, sizeof(*reach));
		ret = view_run(fs, add, &look, &lr, touched, reach, fc);
		if (ret < 0)
			return ret;
	}
}

static int reach_beyond(struct cfs_fs *fs, const uint8_t *sel, const struct fsck_reach *reach)
{
	uint32_t c;

	for (c = 0; c < fs->sb.nchunks; c++)
		if (reach->chunk[c] && !sel[c])
			return 1;
	return reach->unknown;
}

/* A repair of the chunks in sel (NULL: every chunk, as fsck -f), and if
 * its fixes reached further than sel said (a fix's own consequence, which
 * a check that changes nothing cannot see), one of every chunk after it,
 * whose counts add the first one's fixes. */
static int view_repair(struct cfs_fs *fs, const uint8_t *sel, const struct cfs_fsck_opts *vo,
		       struct cfs_fsck_result *r, uint8_t *touched, struct fence *fc)
{
	struct fsck_reach reach = { 0 };
	struct cfs_fsck_result first;
	int ret = view_run(fs, sel, vo, r, touched, &reach, fc);

	if (ret < 0 || !sel)
		return ret;
	r->escalated = 0;   /* the chunks reached were checked instead */
	if (!reach_beyond(fs, sel, &reach))
		return 0;
	if (fc)
		return -EAGAIN;   /* every chunk: with changes held off */
	first = *r;
	ret = view_run(fs, NULL, vo, r, touched, NULL, NULL);
	r->problems += first.fixed;
	r->fixed += first.fixed;
	return ret;
}

/* Steps 2 and 3 (changes held off): chunk c's check.  A repair checks, in
 * one run, the chunk and every chunk its findings reach (a stub cleared
 * here leaves the entry naming it in a directory of another chunk, which
 * must be removed before the inode it named goes to /lost+found under the
 * same name), found by checks that change nothing first; when a reference
 * lost cannot be named, every chunk, as fsck -f. */
static int view_check(struct cfs_fs *fs, uint32_t chunk, const struct cfs_fsck_opts *o,
		      struct cfs_fsck_result *r, uint8_t *touched, struct fence *fc)
{
	struct cfs_fsck_opts vo = *o, look = { .mode = CFS_FSCK_NO, .threads = 1 };
	uint8_t want[CFS_MAX_CHUNKS] = { 0 };
	struct fsck_reach reach = { 0 };
	int ret, known;

	want[chunk] = 1;
	vo.force = 1;
	vo.threads = 1;
	if (!fc)
		state_lock_all(fs, 1);
	if (o->mode == CFS_FSCK_NO) {
		ret = view_run(fs, want, &vo, r, touched, NULL, fc);
		goto out;
	}
	ret = view_run(fs, want, &look, r, touched, &reach, fc);
	if (ret == 0 && !r->problems && !r->escalated) {
		if (fc)
			fc->checked = 1;   /* written if the fence holds */
		else
			ret = chunk_checked(fs, chunk);
		goto out;
	}
	known = ret < 0 ? ret : reach_close(fs, want, &reach, touched, fc);
	if (known < 0)
		ret = known;
	else if (!known && fc)
		ret = -EAGAIN;   /* every chunk: with changes held off */
	else
		ret = view_repair(fs, known ? want : NULL, &vo, r, touched, fc);
out:
	if (!fc)
		state_lock_all(fs, 0);
	return ret;
}

/* The check without holding anybody up, for a chunk nobody writes: changes
 * go on while it runs, and it counts only if the chunk did not change
 * meanwhile and nothing was found (else the caller checks again with
 * changes held off, and that check reports).  A chunk clean on disk needs
 * no write-back first: every chunk was flushed when it was marked clean,
 * and a change to a reference to it would have marked it dirty again.
 * Returns 1 when it counts, 0 when not, or a negative errno. */
static int quiet_check(struct cfs_fs *fs, uint32_t c, const struct cfs_fsck_opts *o,
		       struct cfs_fsck_result *r)
{
	struct cfs_fsck_opts vo = { .mode = CFS_FSCK_NO };
	uint8_t want[CFS_MAX_CHUNKS] = { 0 };
	struct chunk *ch = &fs->chunks[c];
	struct cfs_fs *view;
	struct snap s0, s1;
	int ret = 0, same;

	chunk_snap(fs, c, &s0);
	if ((s0.state & CFS_STATE_ERROR) || ch->was_dirty || ch->hdr_bad ||
	    __atomic_load_n(&ch->failed, __ATOMIC_RELAXED))
		return 0;
	if (s0.state & CFS_STATE_DIRTY) {
		pthread_rwlock_wrlock(&fs->op_lock);
		ret = fs->rdonly ? 0 : fs_write_all(fs);
		chunk_snap(fs, c, &s0);
		pthread_rwlock_unlock(&fs->op_lock);
		if (ret < 0)
			return ret;
	}
	ret = fs_view_open(fs, 1, &view);
	if (ret < 0)
		return ret;
	want[c] = 1;
	vo.threads = 1;
	ret = fsck_run(view, &vo, want, r, NULL);
	fs_view_close(view);
	test_pause("CHUNKFS_TEST_SCRUB_QUIET_PAUSE", &paused_quiet);
	if (ret < 0 || r->problems || r->escalated)
		return ret < 0 ? ret : 0;
	/* the last-check time, in the header as chunk_error writes it */
	pthread_mutex_lock(&ch->state_lock);
	snap_read(ch, &s1);
	same = snap_same(&s0, &s1);
	if (same && o->mode != CFS_FSCK_NO)
		ret = chunk_checked(fs, c);
	pthread_mutex_unlock(&ch->state_lock);
	return ret < 0 ? ret : same;
}

/* What a fenced check finds is told only once its fence held: a check
 * thrown away (a chunk it read changed meanwhile) may have seen another
 * operation half done, and what it fixed was never written; the check
 * made again with changes held off tells its own findings. */
struct finding {
	char *code, *finding, *action, *outcome, *invariant, *text, *name;
	int64_t chunk;
	cfs_ino_t ino;
	size_t namelen;
};

struct findings {
	const struct cfs_fsck_opts *o;
	struct finding *v;
	size_t n;
};

static char *finding_dup(const char *s, size_t len, int *oom)
{
	char *d;

	if (!s)
		return NULL;
	d = malloc(len + 1);
	if (!d) {
		*oom = 1;
		return NULL;
	}
	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

static char *finding_str(const char *s, int *oom)
{
	return finding_dup(s, s ? strlen(s) : 0, oom);
}

static void finding_tell(const struct cfs_fsck_opts *o, const struct cfs_fsck_problem *p)
{
	if (o->report)
		o->report(o->ctx, p->text);
	if (o->problem)
		o->problem(o->ctx, p);
}

static void finding_free(struct finding *e)
{
	free(e->code);
	free(e->finding);
	free(e->action);
	free(e->outcome);
	free(e->invariant);
	free(e->text);
	free(e->name);
}

/* the checker's problem callback (under its report lock) */
static void findings_keep(void *ctx, const struct cfs_fsck_problem *p)
{
	struct findings *h = ctx;
	struct finding *v = realloc(h->v, (h->n + 1) * sizeof(*v)), *e;
	int oom = 0;

	if (!v) {
		finding_tell(h->o, p);   /* better twice than never */
		return;
	}
	h->v = v;
	e = &v[h->n];
	*e = (struct finding){ .chunk = p->chunk, .ino = p->ino, .namelen = p->namelen };
	e->code = finding_str(p->code, &oom);
	e->finding = finding_str(p->finding, &oom);
	e->action = finding_str(p->action, &oom);
	e->outcome = finding_str(p->outcome, &oom);
	e->invariant = finding_str(p->invariant, &oom);
	e->text = finding_str(p->text, &oom);
	e->name = finding_dup(p->name, p->namelen, &oom);
	if (oom) {
		finding_free(e);
		finding_tell(h->o, p);
		return;
	}
	h->n++;
}

static void findings_progress(void *ctx, uint32_t done, uint32_t total)
{
	struct findings *h = ctx;

	if (h->o->progress)
		h->o->progress(h->o->ctx, done, total);
}

/* tell (the fence held) or forget, and free */
static void findings_end(struct findings *h, int tell)
{
	size_t i;

	for (i = 0; i < h->n; i++) {
		struct finding *e = &h->v[i];
		struct cfs_fsck_problem p = {
			.code = e->code, .chunk = e->chunk, .ino = e->ino, .finding = e->finding,
			.action = e->action, .outcome = e->outcome, .invariant = e->invariant,
			.text = e->text, .name = e->name, .namelen = e->namelen,
		};

		if (tell)
			finding_tell(h->o, &p);
		finding_free(e);
	}
	free(h->v);
	h->v = NULL;
	h->n = 0;
}

/* With changes held off at the fence and at the end only: the check of a
 * repair, on a view whose writes are held (struct rec), operations naming
 * the chunks checked waiting at their entry.  Returns with op_lock held
 * exclusively; -EAGAIN when the check must be made again with changes
 * held off (a chunk it read changed, or it needs every chunk). */
static int fenced_check(struct cfs_fs *fs, uint32_t chunk, const struct cfs_fsck_opts *o,
			struct cfs_fsck_result *r, uint8_t *touched, struct findings *h)
{
	struct cfs_fsck_opts ho = *o;
	struct fence *fc = NULL;
	uint32_t c;
	int ret;

	pthread_rwlock_wrlock(&fs->op_lock);
	ret = fs->rdonly ? 0 : fs_write_all(fs);
	if (ret == 0)
		ret = fence_begin(fs, chunk, &fc);
	pthread_rwlock_unlock(&fs->op_lock);
	ho.report = NULL;
	ho.problem = findings_keep;
	ho.progress = findings_progress;
	ho.ctx = h;
	if (ret == 0)
		ret = view_check(fs, chunk, &ho, r, touched, fc);
	pthread_rwlock_wrlock(&fs->op_lock);
	if (ret < 0 || !fence_holds(fs, chunk, fc, touched)) {
		trace(fs, chunk, 0, fc ? fc->rc->read : NULL, fs->sb.nchunks);
		fence_free(fc);
		return -EAGAIN;
	}
	trace(fs, chunk, 1, fc->rc->read, fs->sb.nchunks);
	/* as view_run writes and takes them back with changes held off */
	state_lock_all(fs, 1);
	ret = rec_replay(fc->rc);
	for (c = 0; c < fs->sb.nchunks; c++) {
		if (fc->have[c])
			header_take(&fs->chunks[c], &fc->hdrs[c], cfs_now_mono());
		touched[c] |= fc->rc->wrote[c];
	}
	if (ret == 0 && fc->checked)
		ret = chunk_checked(fs, chunk);
	state_lock_all(fs, 0);
	fence_free(fc);
	return ret;
}

static int scrub_chunk(struct cfs_fs *fs, uint32_t chunk, const struct cfs_fsck_opts *o,
		       struct cfs_fsck_result *r)
{
	uint8_t touched[CFS_MAX_CHUNKS] = { 0 };
	struct findings h = { .o = o };
	cfs_ino_t *changed = NULL;
	size_t nchanged = 0, i;
	int ret, r2;

	memset(r, 0, sizeof(*r));
	if (chunk >= fs->sb.nchunks)
		return -EINVAL;
	if (o->mode != CFS_FSCK_NO && fs->rdonly)
		return -EROFS;
	pthread_mutex_lock(&fs->scrub_lock);
	ret = quiet_check(fs, chunk, o, r);
	if (ret != 0)
		goto out;
	memset(r, 0, sizeof(*r));
	ret = fenced_check(fs, chunk, o, r, touched, &h);
	if (ret == -EAGAIN) {
		findings_end(&h, 0);
		memset(r, 0, sizeof(*r));
		memset(touched, 0, sizeof(touched));
		ret = fs->rdonly ? 0 : fs_write_all(fs);
		if (ret == 0)
			ret = view_check(fs, chunk, o, r, touched, NULL);
	}
	r2 = cache_take(fs, touched);
	if (r2 == 0)
		r2 = inodes_take(fs, touched, &changed, &nchanged);
	/* nothing left for a person: the chunk is back in service */
	if (ret == 0 && r2 == 0 && o->mode != CFS_FSCK_NO && !r->unfixed)
		cfs_chunk_set_failed(fs, chunk, 0);
	fence_end(fs);
	pthread_rwlock_unlock(&fs->op_lock);
	findings_end(&h, 1);   /* the callers' callbacks may take their own locks */
	/* with changes going on again: dropping a file's pages may write them */
	for (i = 0; i < nchanged && fs->reload_fn; i++)
		fs->reload_fn(fs->reload_ctx, changed[i]);
	free(changed);
	ret = ret < 0 ? ret : r2;
out:
	pthread_mutex_unlock(&fs->scrub_lock);
	return ret < 0 ? ret : 0;
}

/* o and r as this library knows them (include/chunkfs.h, "Structs that
 * grow") */
int cfs_scrub(struct cfs_fs *fs, uint32_t chunk, const struct cfs_fsck_opts *o,
	      struct cfs_fsck_result *r)
{
	struct cfs_fsck_opts opts;
	struct cfs_fsck_result res;
	int ret = cfs_struct_in(&opts, sizeof(opts), CFS_FSCK_OPTS_SIZE0, o);

	if (ret < 0)
		return ret;
	ret = scrub_chunk(fs, chunk, &opts, &res);
	cfs_struct_out(r, CFS_FSCK_RESULT_SIZE0, &res, sizeof(res));
	return ret;
}

/* the checker's problem callback: the chunks named */
static void close_problem(void *ctx, const struct cfs_fsck_problem *p)
{
	uint8_t *bad = ctx;

	if (p->chunk >= 0 && p->chunk < CFS_MAX_CHUNKS)
		bad[p->chunk] = 1;
	else
		bad[CFS_MAX_CHUNKS] = 1;   /* the whole filesystem */
}

/* A repair taken back wrongly (in-memory state it replaced, acted on
 * after it) must not end as a chunk marked clean whose disk says
 * otherwise: plain fsck and the mount's check would skip it. */
int scrub_close_check(struct cfs_fs *fs)
{
	struct cfs_fsck_opts vo = { .mode = CFS_FSCK_NO, .threads = 1 };
	uint8_t want[CFS_MAX_CHUNKS] = { 0 }, bad[CFS_MAX_CHUNKS + 1] = { 0 };
	struct cfs_fsck_result r;
	struct cfs_fs *view;
	uint32_t c, n = 0;
	int ret;

	for (c = 0; c < fs->sb.nchunks; c++)
		n += want[c] = (uint8_t)fs->chunks[c].repaired;
	if (!n)
		return 0;
	/* the headers too: the check reads them from the disk */
	ret = fs_write_all(fs);
	if (ret < 0)
		return ret;
	vo.problem = close_problem;
	vo.ctx = bad;
	ret = fs_view_open(fs, 1, &view);
	if (ret < 0)
		return ret;
	ret = fsck_run(view, &vo, want, &r, NULL);
	fs_view_close(view);
	if (ret < 0 || !r.problems)
		return ret;
	for (c = 0; c < fs->sb.nchunks; c++)
		if (bad[c] || (want[c] && bad[CFS_MAX_CHUNKS]))
			chunk_error(fs, c, 0, 0, -EUCLEAN,
				    "an online repair did not hold at unmount");
	return 0;
}

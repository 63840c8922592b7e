/* Online check and repair of a mounted filesystem, one chunk at a time:
 * the checker of src/fsck/ run on what is on the disk while the
 * filesystem stays in use (`chunkfs scrub`, the daemon's errors=repair).
 *
 * For each chunk (locking: docs/LOCKING.md, "Scrub"):
 *  1. every operation that changes the image is held off (op_lock
 *     exclusive, as cfs_sync and cfs_clean_idle do) and everything the
 *     mounted filesystem holds is written back, so the disk is the whole
 *     truth and stays it;
 *  2. the chunk headers are held still (every state_lock), so nobody
 *     writes a header the check is about to rewrite;
 *  3. a view of the disk is opened on the same device with a cache and
 *     inode table of its own (fs_view_open) and the checker's passes run
 *     on the one chunk in it, partner inodes in other chunks read from
 *     the disk too; a repair checks that chunk and the chunks its findings
 *     reach (view_check), and is written through the view;
 *  4. what the repairs wrote is taken back: the chunk headers the view
 *     changed replace the mounted ones, the blocks of the chunks it wrote
 *     are dropped from the mounted cache, their in-memory inodes are read
 *     again (heads, in place under their lock: the open counts stay) or
 *     forgotten (continuations and stubs, after every loaded chain that
 *     holds one is let go).
 * Reads go on throughout; they see the filesystem as it was until step 4.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bdev.h"
#include "fsck/fsck.h"

/* Test hooks (as CHUNKFS_CACHE_KB): CHUNKFS_TEST_SCRUB_PAUSE seconds of
 * sleep at a repair's first write (tests kill the daemon there), and
 * CHUNKFS_TEST_SCRUB_QUIET_PAUSE at the end of a check that holds nobody
 * up (tests change the filesystem meanwhile); each once per process, said
 * on stderr for the test to wait for. */
static void test_pause(const char *name, int *done)
{
	const char *e = getenv(name);

	if (e && !__atomic_exchange_n(done, 1, __ATOMIC_RELAXED)) {
		fprintf(stderr, "scrub: test pause (%s)\n", name);
		sleep((unsigned)atoi(e));
	}
}

static int paused_repair, paused_quiet;

/* The view's cache hook: the chunk is marked dirty as any writer's, and
 * remembered, for step 4. */
static int view_before_dirty(void *ctx, uint64_t blk)
{
	struct cfs_fs *view = ctx;
	int ret;

	if (blk < view->sb.first_chunk_block || blk >= view->sb.backup_sb_block)
		return 0;
	view->touched[blk_chunk(view, blk)] = 1;
	ret = chunk_before_dirty(ctx, blk);
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
 * only a writer nests them the other way (chunk_mark_dirty under an
 * allocation), and writers are held off. */
static void headers_take(struct cfs_fs *fs, struct cfs_fs *view)
{
	double now = cfs_now_mono();
	uint32_t c;

	for (c = 0; c < fs->sb.nchunks; c++) {
		struct chunk *ch = &fs->chunks[c], *vc = &view->chunks[c];

		if (!view->touched[c])
			continue;
		pthread_mutex_lock(&ch->lock);
		ch->hdr = vc->hdr;
		ch->disk_state = vc->disk_state;
		ch->disk_hdr = vc->disk_hdr;
		ch->was_dirty = vc->was_dirty;
		ch->hdr_dirty = 0;
		ch->hdr_bad = 0;
		ch->last_change = now;   /* cleaned again once idle */
		pthread_mutex_unlock(&ch->lock);
	}
}

static int cache_take(struct cfs_fs *fs, const uint8_t *touched)
{
	uint32_t c;
	int tries;

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

	for (i = 0; i < ICACHE_SLOTS; i++)
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
	for (i = 0; i < ICACHE_SLOTS && ret == 0; i++)
		for (ip = fs->icache[i]; ip; ip = ip->hnext) {
			if (ip->loading)
				continue;
			if (*n == cap) {
				cap = cap ? cap * 2 : 256;
				p = realloc(pin, cap * sizeof(*pin));
				if (!p) {
					ret = -ENOMEM;
					break;
				}
				pin = p;
			}
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
		    struct cfs_fsck_result *r, uint8_t *touched, struct fsck_reach *reach)
{
	struct cfs_fs *view;
	uint32_t c;
	int ret, r2;

	ret = fs_view_open(fs, vo->mode == CFS_FSCK_NO, &view);
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
			view->touched[c] |= view->chunks[c].hdr_dirty;
		r2 = fs_write_all(view);
		if (ret == 0)
			ret = r2;
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
	ret = chunk_header_mark(fs, c, ch->disk_state & ~(uint32_t)CFS_STATE_ERROR);
	return ret ? ret : cfs_bdev_flush(fs->bd);
}

/* The chunks a repair of the chunks in sel must check in the same run:
 * every chunk the findings reach (struct fsck_reach), followed by checks
 * that change nothing until none is new, added to sel.  Returns 1 when
 * that set is known, 0 when only a check of every chunk will do (a
 * reference lost that cannot be named), or a negative errno. */
static int reach_close(struct cfs_fs *fs, uint8_t *sel, struct fsck_reach *reach,
		       uint8_t *touched)
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
		}
		if (n == 0)
			return 1;
		memset(reach, 0, sizeof(*reach));
		ret = view_run(fs, add, &look, &lr, touched, reach);
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
		       struct cfs_fsck_result *r, uint8_t *touched)
{
	struct fsck_reach reach = { 0 };
	struct cfs_fsck_result first;
	int ret = view_run(fs, sel, vo, r, touched, &reach);

	if (ret < 0 || !sel)
		return ret;
	r->escalated = 0;   /* the chunks reached were checked instead */
	if (!reach_beyond(fs, sel, &reach))
		return 0;
	first = *r;
	ret = view_run(fs, NULL, vo, r, touched, NULL);
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
		      struct cfs_fsck_result *r, uint8_t *touched)
{
	struct cfs_fsck_opts vo = *o, look = { .mode = CFS_FSCK_NO, .threads = 1 };
	uint8_t want[CFS_MAX_CHUNKS] = { 0 };
	struct fsck_reach reach = { 0 };
	int ret, known;

	want[chunk] = 1;
	vo.force = 1;
	vo.threads = 1;
	state_lock_all(fs, 1);
	if (o->mode == CFS_FSCK_NO) {
		ret = view_run(fs, want, &vo, r, touched, NULL);
		goto out;
	}
	ret = view_run(fs, want, &look, r, touched, &reach);
	if (ret == 0 && !r->problems && !r->escalated) {
		ret = chunk_checked(fs, chunk);
		goto out;
	}
	known = ret < 0 ? ret : reach_close(fs, want, &reach, touched);
	if (known < 0)
		ret = known;
	else
		ret = view_repair(fs, known ? want : NULL, &vo, r, touched);
out:
	state_lock_all(fs, 0);
	return ret;
}

/* What says whether a chunk changed: its state on disk, the count of
 * its turns to dirty, and the last time a buffer of it turned dirty. */
struct snap {
	uint32_t state;
	uint64_t gen;
	double change;
};

static void chunk_snap(struct cfs_fs *fs, uint32_t c, struct snap *s)
{
	struct chunk *ch = &fs->chunks[c];

	pthread_mutex_lock(&ch->state_lock);
	s->state = ch->disk_state;
	s->gen = ch->hdr.generation;
	s->change = ch->last_change;
	pthread_mutex_unlock(&ch->state_lock);
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
	s1.state = ch->disk_state;
	same = s1.state == s0.state && ch->hdr.generation == s0.gen &&
	       ch->last_change == s0.change;
	if (same && o->mode != CFS_FSCK_NO)
		ret = chunk_checked(fs, c);
	pthread_mutex_unlock(&ch->state_lock);
	return ret < 0 ? ret : same;
}

int cfs_scrub(struct cfs_fs *fs, uint32_t chunk, const struct cfs_fsck_opts *o,
	      struct cfs_fsck_result *r)
{
	uint8_t touched[CFS_MAX_CHUNKS] = { 0 };
	cfs_ino_t *changed = NULL;
	size_t nchanged = 0, i;
	int ret, r2;

	memset(r, 0, sizeof(*r));
	if (chunk >= fs->sb.nchunks)
		return -EINVAL;
	if (o->mode != CFS_FSCK_NO && fs->rdonly)
		return -EROFS;
	ret = quiet_check(fs, chunk, o, r);
	if (ret != 0)
		return ret < 0 ? ret : 0;
	memset(r, 0, sizeof(*r));
	pthread_rwlock_wrlock(&fs->op_lock);
	ret = fs->rdonly ? 0 : fs_write_all(fs);
	if (ret == 0)
		ret = view_check(fs, chunk, o, r, touched);
	r2 = cache_take(fs, touched);
	if (r2 == 0)
		r2 = inodes_take(fs, touched, &changed, &nchanged);
	/* nothing left for a person: the chunk is back in service */
	if (ret == 0 && r2 == 0 && o->mode != CFS_FSCK_NO && !r->unfixed)
		cfs_chunk_set_failed(fs, chunk, 0);
	pthread_rwlock_unlock(&fs->op_lock);
	/* with changes going on again: dropping a file's pages may write them */
	for (i = 0; i < nchanged && fs->reload_fn; i++)
		fs->reload_fn(fs->reload_ctx, changed[i]);
	free(changed);
	return ret < 0 ? ret : r2;
}

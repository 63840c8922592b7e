/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fsck's driver: which chunks to check, the workers that check them (every
 * chunk's step A, then every chunk's step B), escalation to every chunk
 * when directories lost entries naming other chunks, the root and
 * lost+found, and the chunks' states at the end.
 *
 * A directory whose entries were dropped or lost may have left stubs
 * behind in chunks that were not checked: then every chunk is checked
 * ("escalation"), unless the stubs are known to be in chunks checked. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bdev.h"
#include "fsck.h"

static int ck_init(struct chunk_check *x, struct fs_check *k, uint32_t c)
{
	struct cfs_fs *fs = k->fs;
	struct chunk_inodes n;
	uint32_t ipc;

	chunk_inodes(fs, c, &n);
	ipc = n.span;   /* the inode table and the chunk's inode clusters */
	memset(x, 0, sizeof(*x));
	x->k = k;
	x->fs = fs;
	x->c = c;
	x->ipc = ipc;
	x->kind = calloc(ipc, 1);
	x->isdir = calloc(ipc, 1);
	x->dirbad = calloc(ipc, 1);
	if (!x->kind || !x->isdir || !x->dirbad)
		return -ENOMEM;
	/* each step allocates (and zeroes) only what it uses */
	if (k->step == 0) {
		x->loser = calloc(ipc, 1);
		x->bbits = calloc((fs->sb.chunk_blocks + 7) / 8, 1);
		x->ibits = calloc(ipc / 8 + 1, 1);
		return x->loser && x->bbits && x->ibits ? 0 : -ENOMEM;
	}
	x->refs = calloc(ipc, 4);
	x->subdirs = calloc(ipc, 4);
	x->held = calloc(ipc, sizeof(*x->held));
	x->used = malloc(sizeof(*x->used) * ipc);
	return x->refs && x->subdirs && x->held && x->used ? 0 : -ENOMEM;
}

static void ck_free(struct chunk_check *x)
{
	uint32_t l;

	for (l = 0; x->held && l < x->ipc; l++)
		inode_put(x->fs, x->held[l]);
	free(x->held);
	free(x->used);
	free(x->kind);
	free(x->isdir);
	free(x->dirbad);
	free(x->loser);
	free(x->refs);
	free(x->subdirs);
	free(x->bbits);
	free(x->ibits);
}

static void check_one(struct fs_check *k, uint32_t c)
{
	struct chunk_check x;
	uint32_t l;

	if (ck_init(&x, k, c) < 0) {
		pr_fix(&x, PR_NO_MEMORY, &(struct pctx){ 0 });
		ck_free(&x);
		return;
	}
	if (k->step == 0) {
		step_a(&x);
		pthread_mutex_lock(&k->lock);
		for (l = 0; l < x.ipc; l++) {
			k->r->inodes += x.kind[l] == K_HEAD;
			k->r->dirs += x.kind[l] == K_HEAD && x.isdir[l];
		}
		pthread_mutex_unlock(&k->lock);
	} else {
		step_b(&x);
	}
	ck_free(&x);
}

static uint32_t next_selected(struct fs_check *k, uint32_t c)
{
	while (c < k->fs->sb.nchunks && !k->sel[c])
		c++;
	return c;
}

static void *worker(void *vk)
{
	struct fs_check *k = vk;

	for (;;) {
		uint32_t c, after;

		pthread_mutex_lock(&k->lock);
		k->next = next_selected(k, k->next);
		if (k->next >= k->fs->sb.nchunks) {
			pthread_mutex_unlock(&k->lock);
			return NULL;
		}
		c = k->next++;
		after = next_selected(k, k->next);
		pthread_mutex_unlock(&k->lock);
		/* this chunk's metadata, and the next one's while this is checked */
		chunk_prefetch(k->fs, c);
		if (after < k->fs->sb.nchunks)
			chunk_prefetch(k->fs, after);
		check_one(k, c);
		pthread_mutex_lock(&k->lock);
		if (k->step == 1) {
			k->ndone++;
			if (k->o->progress)
				k->o->progress(k->o->ctx, k->ndone, k->ntotal);
		}
		pthread_mutex_unlock(&k->lock);
	}
}

static void run_step(struct fs_check *k, int step, int nthreads)
{
	pthread_t tid[64];
	int i, n = 0;

	k->step = step;
	k->next = 0;
	for (i = 0; i < nthreads && i < 64; i++)
		if (pthread_create(&tid[n], NULL, worker, k) == 0)
			n++;
	if (n == 0)
		worker(k);
	for (i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
}

static void run_checks(struct fs_check *k, int nthreads)
{
	uint32_t c, workers;

	k->ntotal = 0;
	for (c = 0; c < k->fs->sb.nchunks; c++)
		k->ntotal += k->sel[c];
	k->ndone = 0;
	workers = nthreads > 0 ? (uint32_t)nthreads : 1;
	if (k->ntotal && k->ntotal < workers)
		workers = k->ntotal;
	k->held_max = FSCK_HELD_TOTAL / workers;
	run_step(k, 0, nthreads);
	run_step(k, 1, nthreads);
}

/* A crash explains entries missing from a whole directory tree of chunk c
 * when c was only dirty.  An entry on disk is lost only with writes made
 * since a chunk was last marked clean (every chunk's changes, headers
 * included, reach the disk then, and a directory's nodes and block map
 * split in an order that keeps every name already on disk), and the
 * stub's chunk was marked dirty on disk before the entry could change
 * there (xref_hold, FORMAT.md 18), and has stayed so: it is being checked.
 * Damage explains nothing. */
static int loss_explained(struct fs_check *k, uint32_t c)
{
	const struct chunk *ch = &k->fs->chunks[c];

	return ch->was_dirty == CFS_STATE_DIRTY && !ch->hdr_bad;
}

/* Preen holds back in a chunk left for a person (see pr_held()), so that
 * chunk's losses do not escalate either: other chunks' checks would act on
 * entries the person has yet to judge, and the next check escalates. */
static int want_escalation(struct fs_check *k, const uint8_t *checked)
{
	uint32_t c, rc = CFS_INO_CHUNK(k->fs->sb.root_ino);

	for (c = 0; c < k->fs->sb.nchunks; c++) {
		if (!k->esc_from[c] || pr_held(k, c))
			continue;
		if ((k->esc_from[c] & ESC_SURE) || !loss_explained(k, c))
			return 1;
	}
	return checked[rc] && !pr_held(k, rc) && root_lost(k->fs);
}

static void finish_chunks(struct fs_check *k, const uint8_t *checked)
{
	struct cfs_fs *fs = k->fs;
	uint32_t c;

	for (c = 0; c < fs->sb.nchunks; c++) {
		struct chunk *ch = &fs->chunks[c];

		if (!checked[c])
			continue;
		pthread_mutex_lock(&ch->state_lock);
		if (k->chunk_unfixed[c] && ch->hdr_bad) {
			/* the rebuilt header was not accepted: leave the disk alone */
		} else if (k->chunk_unfixed[c]) {
			ch->disk_state |= CFS_STATE_ERROR;
			ch->was_dirty |= CFS_STATE_ERROR;
			ch->hdr_unwritten = 1;
		} else {
			ch->disk_state &= ~(uint32_t)CFS_STATE_ERROR;
			ch->was_dirty = 0;
			ch->hdr.last_check = time(NULL);
			ch->hdr_bad = 0;
			ch->hdr_unwritten = 1;
		}
		pthread_mutex_unlock(&ch->state_lock);
	}
}

/* A renumber cut short: finished on a checked image, with the library's
 * own code (the names of the pair found through the old inode's stubs). */
static void finish_renumber(struct fs_check *k)
{
	struct pctx p = { .num = { k->fs->sb.renum_old, k->fs->sb.renum_new } };
	int fix = pr_decide(k, PR_GLOBAL, PR_RENUMBER), ret = fix ? move_renumber_finish(k->fs) : 0;

	pr_report(k, PR_GLOBAL, PR_RENUMBER, &p, fix, ret);
}

/* The primary superblock is rewritten from the backup the open used. */
static int restore_primary(struct fs_check *k)
{
	int fix = pr_decide(k, PR_GLOBAL, PR_SB_BACKUP), ret = fix ? super_write_primary(k->fs) : 0;

	pr_report(k, PR_GLOBAL, PR_SB_BACKUP, &(struct pctx){ 0 }, fix, ret);
	k->r->sb_restored = fix && ret == 0;
	return ret;
}

#define FSCK_CACHE_BYTES (512u << 10)

static int cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

int cfs_fsck(struct cfs_fs *fs, const struct cfs_fsck_opts *o, struct cfs_fsck_result *r)
{
	struct cfs_fsck_opts opts;
	struct cfs_fsck_result res;
	int ret = cfs_struct_in(&opts, sizeof(opts), CFS_FSCK_OPTS_SIZE0, o);

	if (ret < 0)
		return ret;
	ret = fsck_run(fs, &opts, NULL, &res, NULL);
	cfs_struct_out(r, CFS_FSCK_RESULT_SIZE0, &res, sizeof(res));
	return ret;
}

int fsck_run(struct cfs_fs *fs, const struct cfs_fsck_opts *o, const uint8_t *want,
	     struct cfs_fsck_result *r, struct fsck_reach *reach)
{
	uint32_t n = fs->sb.nchunks, c;
	double t0 = cfs_now_mono();
	int threads = o->threads > 0 ? o->threads : cpu_count(), ret = 0;
	size_t old_limit = 0;
	uint8_t *checked;
	struct fs_check k;

	memset(r, 0, sizeof(*r));
	memset(&k, 0, sizeof(k));
	if (o->mode != CFS_FSCK_NO && fs->rdonly)
		return -EROFS;
	k.fs = fs;
	k.o = o;
	k.r = r;
	k.reach = reach;
	pthread_mutex_init(&k.lock, NULL);
	k.sel = calloc(n, 1);
	checked = calloc(n, 1);
	k.chunk_unfixed = calloc(n, sizeof(*k.chunk_unfixed));
	k.esc_from = calloc(n, 1);
	if (!k.sel || !checked || !k.chunk_unfixed || !k.esc_from) {
		ret = -ENOMEM;
		goto out;
	}
	r->chunks = n;
	/* A check reads each block a few times at most, close together: the
	 * kernel's page cache serves it as well as a big cache of our own
	 * would, and memory stays bounded by the chunks in flight. */
	old_limit = cache_set_limit(&fs->cache, FSCK_CACHE_BYTES);
	/* Inode clusters are 16 KiB pieces among data blocks: the kernel's
	 * readahead, which ramps up on reads in ascending order, read 19%
	 * more than the check needs (1M files, 6 GiB).  What runs ahead is
	 * asked for explicitly. */
	cfs_bdev_scattered(fs->bd, 1);
	if (fs->sb_from_backup && (ret = restore_primary(&k)) < 0)
		goto out;
	for (c = 0; c < n; c++)
		k.sel[c] = want ? want[c] :
			   o->force || fs->chunks[c].was_dirty || fs->chunks[c].hdr_bad;
	/* a renumber's two inodes: their counts are set from their names */
	if (!want && (fs->sb.feat_incompat & CFS_FEAT_INCOMPAT_RENUMBER)) {
		if (ino_valid(fs, fs->sb.renum_old))
			k.sel[CFS_INO_CHUNK(fs->sb.renum_old)] = 1;
		if (ino_valid(fs, fs->sb.renum_new))
			k.sel[CFS_INO_CHUNK(fs->sb.renum_new)] = 1;
	}
	run_checks(&k, threads);
	for (c = 0; c < n; c++)
		checked[c] |= k.sel[c];
	/* a scrub checks the chunks it was given: it says so and the caller
	 * goes on to the others, a few at a time */
	if (want && want_escalation(&k, checked))
		r->escalated = 1;
	else if (want_escalation(&k, checked)) {
		for (c = 0; c < n; c++)
			k.sel[c] = !checked[c];
		for (c = 0; c < n && !k.sel[c]; c++)
			;
		if (c < n) {
			r->escalated = 1;
			k.escalated = 1;
			run_checks(&k, threads);
			for (c = 0; c < n; c++)
				checked[c] |= k.sel[c];
		}
	}
	if (o->mode != CFS_FSCK_NO) {
		check_root(&k);
		reconnect_orphans(&k);
	}
	if (fs->sb.feat_incompat & CFS_FEAT_INCOMPAT_RENUMBER)
		finish_renumber(&k);
	if (o->mode != CFS_FSCK_NO)
		finish_chunks(&k, checked);
	for (c = 0; c < n; c++)
		r->checked += checked[c];
out:
	r->seconds = cfs_now_mono() - t0;
	if (old_limit)
		cache_set_limit(&fs->cache, old_limit);
	cfs_bdev_scattered(fs->bd, 0);
	free(k.sel);
	free(checked);
	free(k.chunk_unfixed);
	free(k.esc_from);
	free(k.orphans);
	free(k.resealed);
	pthread_mutex_destroy(&k.lock);
	return ret;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fsck step B: one chunk's references -- continuation chains, directory
 * entries, back-reference stubs and link counts.  A reference to another
 * chunk is verified by reading just the partner inode (or, for a stub, one
 * lookup in its directory). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bdev.h"
#include "fsck.h"


int is_head(struct inode *ip)
{
	return ip->d.mode && !ip->deleted && !(ip->d.flags & (CFS_IFL_CONT | CFS_IFL_STUB));
}

static cfs_ino_t find_pred(struct cfs_fs *fs, cfs_ino_t head, cfs_ino_t ci);

/* Forward pointers of inode l: each must name a continuation of the same
 * file whose back pointer names us (one partner read). */
static void check_cont_slots(struct chunk_check *x, struct inode *ip)
{
	cfs_ino_t head = x->kind[CFS_INO_LOCAL(ip->ino) - 1] == K_HEAD ? ip->ino : ip->d.head;
	int s, changed = 0;

	for (s = 0; s < CFS_NCONT; s++) {
		struct inode *ci = NULL;
		cfs_ino_t n = ip->d.cont[s];
		int ok;

		if (!n)
			continue;
		/* a continuation that points back here is ours; a wrong head
		 * number in it is its own chunk's to fix (check_cont) */
		ok = ino_valid(x->fs, n) && inode_get(x->fs, n, &ci) == 0 &&
		     (ci->d.flags & CFS_IFL_CONT) && ci->d.mode &&
		     (ci->d.back == ip->ino || (ci->d.head == head &&
						find_pred(x->fs, head, n) == ip->ino));
		inode_put(x->fs, ci);
		if (!ok && ino_valid(x->fs, n))
			reach_ino(x->k, n);   /* what it named is an orphan there */
		if (!ok && pr_fix(x, PR_CONT_POINTER, &(struct pctx){ .ino = ip->ino,
								     .num = { n } })) {
			/* under its lock: another chunk's check may be walking
			 * this directory (stub_entry_ok) through its chain */
			pthread_mutex_lock(&ip->lock);
			ip->d.cont[s] = 0;
			pthread_mutex_unlock(&ip->lock);
			changed = 1;
		}
	}
	if (changed) {
		pthread_mutex_lock(&ip->lock);
		inode_chain_release(x->fs, ip);
		inode_write(x->fs, ip);
		pthread_mutex_unlock(&ip->lock);
	}
}

static int slot_holds(struct inode *p, cfs_ino_t ino)
{
	int s;

	for (s = 0; s < CFS_NCONT; s++)
		if (p->d.cont[s] == ino)
			return 1;
	return 0;
}

int cont_release(struct cfs_fs *fs, struct inode *ci)
{
	int ret = ext_remove(fs, ci, 0, UINT64_MAX);

	if (ret == 0)
		ret = xattr_release(fs, ci);
	if (ret == 0)
		ret = inode_free(fs, ci);
	if (ret == 0)
		chunk_count(fs, CFS_INO_CHUNK(ci->ino), CNT_CONTS, -1);
	return ret;
}

/* The inode of the chain (head or continuation of head) whose forward
 * pointer names ci, found by walking the chain from the head: each step
 * reads one partner inode. */
static cfs_ino_t find_pred(struct cfs_fs *fs, cfs_ino_t head, cfs_ino_t ci)
{
	cfs_ino_t queue[64], found = 0;
	int n = 1, i, s;

	queue[0] = head;
	for (i = 0; i < n && !found; i++) {
		struct inode *p;

		if (!ino_valid(fs, queue[i]) || inode_get(fs, queue[i], &p) < 0)
			continue;
		for (s = 0; s < CFS_NCONT; s++) {
			if (p->d.cont[s] == ci)
				found = p->ino;
			else if (p->d.cont[s] && n < 64)
				queue[n++] = p->d.cont[s];
		}
		inode_put(fs, p);
	}
	return found;
}

/* A continuation and its predecessor must agree.  A predecessor that names
 * it settles both its back pointer and its head; one that does not is
 * looked for along the head's chain; failing both, the continuation is
 * re-attached to its head, or freed when it has no live head. */
static void check_cont(struct chunk_check *x, struct inode *ci)
{
	struct cfs_fs *fs = x->fs;
	struct inode *p = NULL, *h = NULL;
	cfs_ino_t pred, head = 0;
	int s;

	if (ino_valid(fs, ci->d.back) && inode_get(fs, ci->d.back, &p) == 0 &&
	    p->d.mode && slot_holds(p, ci->ino) && !(p->d.flags & CFS_IFL_STUB))
		head = (p->d.flags & CFS_IFL_CONT) ? p->d.head : p->ino;
	inode_put(fs, p);
	if (head) {
		if (head != ci->d.head &&
		    pr_fix(x, PR_CONT_HEAD, &(struct pctx){ .ino = ci->ino,
						       .num = { ci->d.head, head } })) {
			ci->d.head = head;
			inode_write(fs, ci);
		}
		return;
	}
	pred = ino_valid(fs, ci->d.head) ? find_pred(fs, ci->d.head, ci->ino) : 0;
	if (pred) {
		if (pr_fix(x, PR_CONT_BACK, &(struct pctx){ .ino = ci->ino,
							   .num = { ci->d.back, pred } })) {
			ci->d.back = pred;
			inode_write(fs, ci);
		}
		return;
	}
	if (ino_valid(fs, ci->d.head) && inode_get(fs, ci->d.head, &h) == 0 && is_head(h)) {
		pthread_mutex_lock(&h->lock);
		for (s = 0; s < CFS_NCONT && h->d.cont[s]; s++)
			;
		if (s < CFS_NCONT && pr_fix(x, PR_CONT_DETACHED,
					    &(struct pctx){ .ino = ci->ino, .num = { h->ino } })) {
			h->d.cont[s] = ci->ino;
			ci->d.back = h->ino;
			inode_chain_release(fs, h);
			inode_write(fs, h);
			inode_write(fs, ci);
			pthread_mutex_unlock(&h->lock);
			inode_put(fs, h);
			return;
		}
		pthread_mutex_unlock(&h->lock);
		if (s < CFS_NCONT) {
			inode_put(fs, h);
			return;
		}
	}
	inode_put(fs, h);
	if (pr_fix(x, PR_CONT_ORPHAN, &(struct pctx){ .ino = ci->ino, .num = { ci->d.head } }))
		cont_release(fs, ci);
}

struct dscan {
	struct chunk_check *x;
	struct inode *dp;
	struct dirent_rec *ok;
	size_t nok, cap;
	uint64_t seen, remote_ok, remote_bad;   /* entries with a stub */
	uint64_t stub_away;     /* bad ones whose stub is in a chunk not checked */
	int bad, oom, unfixed;
	int salvaging, disorder;        /* reading leaves by block; index inconsistent */
};

static int was_resealed(struct fs_check *k, cfs_ino_t ino)
{
	size_t i;
	int found = 0;

	pthread_mutex_lock(&k->lock);
	for (i = 0; i < k->nresealed && !found; i++)
		found = k->resealed[i] == ino;
	pthread_mutex_unlock(&k->lock);
	return found;
}

/* Entry r names inode l of this chunk, which step A resealed, with
 * another type: damage to the inode's mode (the entry's node verified)
 * that left its fields fit for either type, such as a small file's
 * turned a symlink's, whose data would go to /lost+found as a "target".
 * The type is taken from the entry when the inode's fields fit it and
 * nothing else names it (one name, no stub or continuation carrying the
 * type too).  Returns 1 when the entry now matches. */
static int retype_from_entry(struct chunk_check *x, const struct dirent_rec *r)
{
	uint32_t l = CFS_INO_LOCAL(r->ino) - 1;
	uint16_t was = (uint16_t)((x->ftype[l] & ~SLOT_CONTS) << 12), want = (uint16_t)(r->type << 12);
	struct cfs_dinode d;
	struct inode *t;
	char why[160];
	int ok = 0;

	if (S_ISDIR(was) || S_ISDIR(want) || (x->ftype[l] & SLOT_CONTS) || x->nlink[l] != 1 ||
	    !was_resealed(x->k, r->ino) || inode_get(x->fs, r->ino, &t) < 0)
		return 0;
	d = t->d;
	d.mode = (uint16_t)(want | (d.mode & 07777));
	if (!(d.flags & (CFS_IFL_CONT | CFS_IFL_STUB)) &&
	    (S_ISREG(want) || S_ISLNK(want) || S_ISCHR(want) || S_ISBLK(want) ||
	     S_ISFIFO(want) || S_ISSOCK(want)) &&
	    !dinode_impossible(x->fs, &d, why, sizeof(why)) &&
	    pr_fix(x, PR_INODE_TYPE, &(struct pctx){ .ino = r->ino, .num = { was, want },
						    .name = r->name, .namelen = r->namelen })) {
		t->d.mode = d.mode;
		ok = inode_write(x->fs, t) == 0;
		if (ok)
			x->ftype[l] = (uint8_t)((x->ftype[l] & SLOT_CONTS) | r->type);
	}
	inode_put(x->fs, t);
	return ok;
}

static int entry_target_ok(struct chunk_check *x, struct inode *dp, const struct dirent_rec *r)
{
	struct cfs_fs *fs = x->fs;
	struct inode *t = NULL, *s = NULL;
	int ok;

	if (!ino_valid(fs, r->ino) || r->ino == fs->sb.root_ino)
		return 0;
	if (CFS_INO_CHUNK(r->ino) == x->c) {
		uint32_t l = CFS_INO_LOCAL(r->ino) - 1;

		if (!ck_slot_known(x, r->ino) || x->kind[l] != K_HEAD || r->stub)
			return 0;
		if (x->isdir[l] && x->refs[l])
			return 0;   /* a second name for a directory */
		return (x->ftype[l] & ~SLOT_CONTS) == r->type || retype_from_entry(x, r);
	}
	ok = inode_get(fs, r->ino, &t) == 0 && is_head(t) &&
	     ((t->d.mode & S_IFMT) >> 12) == r->type && ino_valid(fs, r->stub) &&
	     CFS_INO_CHUNK(r->stub) == CFS_INO_CHUNK(r->ino) &&
	     inode_get(fs, r->stub, &s) == 0 && (s->d.flags & CFS_IFL_STUB) && s->d.mode &&
	     s->d.head == r->ino && s->d.back == dp->ino && s->d.lo == r->hash;
	inode_put(fs, t);
	inode_put(fs, s);
	return ok;
}

static int name_ok(const struct dirent_rec *r)
{
	return r->namelen && !memchr(r->name, '/', r->namelen) &&
	       strlen(r->name) == r->namelen && strcmp(r->name, ".") && strcmp(r->name, "..");
}

static int same_name(const struct dirent_rec *a, const struct dirent_rec *b)
{
	return a->namelen == b->namelen && !memcmp(a->name, b->name, a->namelen);
}

/* The stub an entry names is judged by the check of its chunk, if that is
 * checked (stub_entry_ok); a number no inode has is no stub at all. */
static int stub_checked(struct chunk_check *x, cfs_ino_t stub)
{
	return !ino_valid(x->fs, stub) || x->k->sel[CFS_INO_CHUNK(stub)];
}

/* In hash order a name met before is among the last records, of its hash. */
static int seen_name(const struct dscan *d, const struct dirent_rec *r)
{
	size_t i;

	for (i = d->nok; i > 0 && d->ok[i - 1].hash == r->hash; i--)
		if (same_name(&d->ok[i - 1], r))
			return 1;
	return 0;
}

static int dscan_entry(void *vc, const struct dirent_rec *r)
{
	struct dscan *d = vc;
	struct chunk_check *x = d->x;
	struct dirent_rec *ok;
	size_t i;

	d->seen++;
	if (!d->salvaging) {
		/* the index walk returns records in hash order, each once: a
		 * step back or a name met again means a node reached twice or
		 * out of place, and the leaves must be read instead */
		if (d->nok && (r->hash < d->ok[d->nok - 1].hash || seen_name(d, r))) {
			d->disorder = 1;
			return 1;
		}
	} else {
		for (i = 0; i < d->nok; i++)   /* salvage may see a record twice */
			if (same_name(&d->ok[i], r))
				return 0;
	}
	if (!name_ok(r) || r->hash != dir_hash(x->fs, r->name, r->namelen) ||
	    !entry_target_ok(x, d->dp, r)) {
		d->bad = 1;
		if (r->stub || CFS_INO_CHUNK(r->ino) != x->c) {
			/* the stub it leaves is in the target's chunk (a number
			 * that names no inode has nothing there) */
			if (ino_valid(x->fs, r->ino))
				reach_ino(x->k, r->ino);
			if (ino_valid(x->fs, r->stub))
				reach_ino(x->k, r->stub);
		}
		if (r->stub) {
			d->remote_bad++;
			d->stub_away += !stub_checked(x, r->stub);
		}
		if (!pr_fix(x, PR_ENTRY_INVALID, &(struct pctx){ .ino = d->dp->ino,
				.num = { r->ino }, .name = r->name, .namelen = r->namelen }))
			d->unfixed = 1;
		return 0;
	}
	ok = array_room(d->ok, &d->cap, d->nok, sizeof(*ok), 64);
	if (!ok) {
		d->oom = 1;
		return 1;
	}
	d->ok = ok;
	/* the name's bytes only: a record is mostly unused name buffer */
	memcpy(&d->ok[d->nok++], r, offsetof(struct dirent_rec, name) + r->namelen + 1);
	d->remote_ok += r->stub != 0;
	if (CFS_INO_CHUNK(r->ino) == x->c)
		x->refs[CFS_INO_LOCAL(r->ino) - 1]++;
	return 0;
}

/* A directory child of this chunk names its parent. */
static void fix_parent(struct chunk_check *x, cfs_ino_t child, cfs_ino_t parent)
{
	uint32_t l = CFS_INO_LOCAL(child) - 1;
	struct inode *t;

	if (x->back[l] == parent || inode_get(x->fs, child, &t) < 0)
		return;
	if (t->d.back != parent &&
	    pr_fix(x, PR_DIR_PARENT, &(struct pctx){ .ino = child,
						    .num = { t->d.back, parent } })) {
		t->d.back = parent;
		inode_write(x->fs, t);
	}
	x->back[l] = t->d.back;
	inode_put(x->fs, t);
}

struct remote_pf {
	struct cfs_fs *fs;
	uint64_t *blk;
	size_t n, cap;
};

static int remote_collect(void *vc, const struct dirent_rec *r)
{
	struct remote_pf *p = vc;
	cfs_ino_t want[2] = { r->ino, r->stub };
	uint64_t *blk;
	uint32_t off;

	if (!r->stub)
		return 0;
	for (int i = 0; i < 2; i++) {
		if (!ino_valid(p->fs, want[i]))
			continue;
		blk = array_room(p->blk, &p->cap, p->n, sizeof(*blk), 256);
		if (!blk)
			return 1;   /* a prefetch is only a hint */
		p->blk = blk;
		p->blk[p->n++] = inode_location(p->fs, want[i], &off);
	}
	return 0;
}

static int blk_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Each entry naming another chunk costs two inode reads there (its target
 * and its stub), made one at a time by the walk.  A directory with many
 * (a top-level directory whose children were spread over the chunks) made a
 * crash check of its chunk wait for a thousand random reads in turn: ask for
 * them all first, in block order, so the device serves them together. */
static void prefetch_remote(struct chunk_check *x, struct inode *dp)
{
	struct remote_pf p = { x->fs, NULL, 0, 0 };
	size_t i, run;

	if (!dp->d.hi || x->dirbad[CFS_INO_LOCAL(dp->ino) - 1])
		return;
	(void)dir_iterate(x->fs, dp, 0, remote_collect, &p);
	if (p.n)   /* p.blk is NULL without entries */
		qsort(p.blk, p.n, sizeof(*p.blk), blk_cmp);
	for (i = 0; i < p.n; i += run) {
		for (run = 1; i + run < p.n && p.blk[i + run] <= p.blk[i + run - 1] + 1; run++)
			;
		cfs_bdev_prefetch(x->fs->bd, p.blk[i], (uint32_t)(p.blk[i + run - 1] - p.blk[i] + 1));
	}
	free(p.blk);
}

static void check_dir(struct chunk_check *x, struct inode *dp)
{
	struct dscan d = { .x = x, .dp = dp };
	uint32_t l = CFS_INO_LOCAL(dp->ino) - 1;
	size_t i;
	int ret = -1, idx_fix = 0;

	pthread_mutex_lock(&dp->lock);
	prefetch_remote(x, dp);
	if (!x->dirbad[l])
		ret = dir_iterate(x->fs, dp, 0, dscan_entry, &d);
	if (ret == 0 && d.disorder)
		ret = -EUCLEAN;
	if (ret < 0) {
		idx_fix = pr_fix(x, PR_DIR_INDEX, &(struct pctx){ .ino = dp->ino });
		for (i = 0; i < d.nok; i++)
			if (CFS_INO_CHUNK(d.ok[i].ino) == x->c)
				x->refs[CFS_INO_LOCAL(d.ok[i].ino) - 1]--;
		d.nok = 0;
		d.remote_ok = d.remote_bad = d.stub_away = 0;
		d.bad = 1;
		d.unfixed = 0;   /* the leaves' entries are judged again */
		d.salvaging = 1;
		if (dp->d.flags & CFS_IFL_EXTENTS)
			dir_salvage(x->fs, dp, dscan_entry, &d);
	}
	/* An entry dropped whose stub is in a chunk not being checked leaves
	 * the stub behind there.  Entries missing (fewer with a stub than hi
	 * counts) may have too: surely if the tree is damaged, else unless a
	 * crash explains their loss (want_escalation).  Lost local entries
	 * need nothing more: their inodes are here. */
	if (d.stub_away)
		x->k->esc_from[x->c] |= ESC_SURE;
	if (d.remote_ok + d.remote_bad < dp->d.hi) {
		x->k->esc_from[x->c] |= ret < 0 ? ESC_SURE : ESC_LOST;
		reach_ino(x->k, 0);   /* lost unseen: their chunks are unknown */
	}
	if (!d.bad && (d.nok != dp->d.lo || d.remote_ok != dp->d.hi) &&
	    pr_fix(x, PR_DIR_COUNTS, &(struct pctx){ .ino = dp->ino,
			.num = { dp->d.lo, dp->d.hi, d.nok, d.remote_ok } })) {
		dp->d.lo = d.nok;
		dp->d.hi = d.remote_ok;
		inode_write(x->fs, dp);
	}
	/* a removal, or a rebuilt index, reported as not fixed must not
	 * happen anyway */
	if (d.bad && !d.unfixed && x->k->o->mode != CFS_FSCK_NO && (ret >= 0 || idx_fix))
		dir_rebuild(x->fs, dp, d.ok, d.nok);
	pthread_mutex_unlock(&dp->lock);
	for (i = 0; i < d.nok; i++) {
		if (d.ok[i].type != (S_IFDIR >> 12))
			continue;
		x->subdirs[l]++;
		if (CFS_INO_CHUNK(d.ok[i].ino) == x->c)
			fix_parent(x, d.ok[i].ino, dp->ino);
	}
	free(d.ok);
}

struct stub_find {
	cfs_ino_t ino, stub;
	uint64_t hash;
	struct dirent_rec r;
	int found, leaves;      /* leaves: reading every leaf, in no order */
};

static int stub_find_cb(void *vc, const struct dirent_rec *r)
{
	struct stub_find *f = vc;

	if (r->hash != f->hash)
		return !f->leaves;
	if (r->ino != f->ino || r->stub != f->stub)
		return 0;
	f->r = *r;
	f->found = 1;
	return 1;
}

/* Whether dp's tree, walked whole, meets a record out of hash order or a
 * name twice: then check_dir() reads its leaves instead (dscan_entry).  A
 * lookup by hash in such a tree can miss an entry without an error (an
 * index naming one leaf twice hides another).  Only the names of the
 * current hash are kept. */
struct order_walk {
	struct dirent_rec *run;
	size_t n, cap;
	int bad;
};

static int order_cb(void *vc, const struct dirent_rec *r)
{
	struct order_walk *w = vc;
	struct dirent_rec *run;
	size_t i;

	if (w->n && r->hash < w->run[0].hash)
		w->bad = 1;
	if (w->n && r->hash != w->run[0].hash)
		w->n = 0;
	for (i = 0; i < w->n && !w->bad; i++)
		w->bad = same_name(&w->run[i], r);
	if (!w->bad) {
		run = array_room(w->run, &w->cap, w->n, sizeof(*run), 4);
		w->bad = !run;   /* out of memory: read the leaves, as when unsure */
		w->run = run ? run : w->run;
	}
	if (w->bad)
		return 1;
	memcpy(&w->run[w->n++], r, offsetof(struct dirent_rec, name) + r->namelen + 1);
	return 0;
}

static int walk_disordered(struct chunk_check *x, struct inode *dp)
{
	struct order_walk w = { 0 };
	size_t slot = dp->ino % (sizeof(x->walked) / sizeof(x->walked[0]));
	int ret;

	/* a tree judged in order stays so (only a disordered one is
	 * rebuilt); one rebuilt since keeps in its leaves what it kept */
	if (x->walked[slot].ino == dp->ino)
		return x->walked[slot].bad;
	ret = dir_iterate(x->fs, dp, 0, order_cb, &w);
	free(w.run);
	x->walked[slot].ino = dp->ino;
	x->walked[slot].bad = ret < 0 || w.bad;
	return x->walked[slot].bad;
}

/* The entry stub s backs, judged by the rules check_dir() applies to it in
 * the directory's chunk: whichever of the two chunks is checked first, an
 * entry that one removes is not counted by the other. */
static int stub_entry_ok(struct chunk_check *x, struct inode *s, struct inode *dp)
{
	struct stub_find f = { s->d.head, s->ino, s->d.lo, { 0 }, 0, 0 };
	struct inode *t;
	int ok, ret;

	pthread_mutex_lock(&dp->lock);
	/* A tree whose walk fails or meets records out of order is rebuilt
	 * from its leaves by the check of its chunk, keeping every entry a
	 * leaf holds (check_dir): look in the leaves too, or a stub checked
	 * before that rebuild would be freed, and then the entry it backs
	 * dropped, a name lost, depending on which chunk a thread checked
	 * first.  Only a miss pays for a whole walk, once a directory. */
	ret = dir_iterate(x->fs, dp, s->d.lo, stub_find_cb, &f);
	if (!f.found && (dp->d.flags & CFS_IFL_EXTENTS) &&
	    (ret < 0 || walk_disordered(x, dp))) {
		f.leaves = 1;
		dir_salvage(x->fs, dp, stub_find_cb, &f);
	}
	ok = f.found;
	pthread_mutex_unlock(&dp->lock);
	if (!ok || !name_ok(&f.r) || f.r.hash != dir_hash(x->fs, f.r.name, f.r.namelen))
		return 0;
	if (inode_get(x->fs, s->d.head, &t) < 0)
		return 0;
	ok = ((t->d.mode & S_IFMT) >> 12) == f.r.type;
	inode_put(x->fs, t);
	return ok;
}

/* What a stub owns, which only damage gives it, goes with it. */
static int stub_release(struct cfs_fs *fs, struct inode *s)
{
	int ret = (s->d.flags & CFS_IFL_EXTENTS) ? ext_remove(fs, s, 0, UINT64_MAX) : 0;

	if (ret == 0)
		ret = xattr_release(fs, s);
	if (ret == 0)
		ret = inode_free(fs, s);
	if (ret == 0)
		chunk_count(fs, CFS_INO_CHUNK(s->ino), CNT_STUBS, -1);
	return ret;
}

/* A stub is valid when its directory has the entry it backs. */
static void check_stub(struct chunk_check *x, struct inode *s)
{
	struct cfs_fs *fs = x->fs;
	struct inode *dp = NULL;
	int ok = CFS_INO_CHUNK(s->d.head) == x->c && ino_valid(fs, s->d.head) &&
		 ck_slot_known(x, s->d.head) && x->kind[CFS_INO_LOCAL(s->d.head) - 1] == K_HEAD;

	if (ok) {
		ok = ino_valid(fs, s->d.back) && inode_get(fs, s->d.back, &dp) == 0 &&
		     is_head(dp) && S_ISDIR(dp->d.mode) && stub_entry_ok(x, s, dp);
		inode_put(fs, dp);
	}
	if (ok) {
		uint32_t t = CFS_INO_LOCAL(s->d.head) - 1;

		x->refs[t]++;
		if (x->isdir[t])
			fix_parent(x, s->d.head, s->d.back);
		return;
	}
	/* the entry it backed, if any, is in the directory's chunk */
	reach_ino(x->k, s->d.back);
	if (pr_fix(x, PR_STUB_ORPHAN, &(struct pctx){ .ino = s->ino }))
		stub_release(fs, s);
}

/* An orphan's finding is reported once it is reconnected (or not), with
 * that outcome. */
void add_orphan(struct chunk_check *x, cfs_ino_t ino, int code)
{
	struct fs_check *k = x->k;
	struct orphan *n;

	pthread_mutex_lock(&k->lock);
	n = realloc(k->orphans, (k->norphans + 1) * sizeof(*n));
	if (n) {
		k->orphans = n;
		k->orphans[k->norphans].ino = ino;
		k->orphans[k->norphans++].code = code;
	}
	pthread_mutex_unlock(&k->lock);
	if (!n)
		pr_report(k, x->c, code, &(struct pctx){ .ino = ino }, 1, -ENOMEM);
}

/* An inode unlinked while open whose holder went away before releasing it. */
static void release_deleted(struct chunk_check *x, struct inode *ip)
{
	int fix = pr_decide(x->k, x->c, PR_DELETED_OPEN), ret = 0;

	/* a head with no link and not open: the library's own eviction */
	if (fix)
		ret = inode_release(x->fs, ip);
	pr_report(x->k, x->c, PR_DELETED_OPEN, &(struct pctx){ .ino = ip->ino }, fix, ret);
}

static void check_links(struct chunk_check *x, struct inode *ip)
{
	struct cfs_fs *fs = x->fs;
	uint32_t l = CFS_INO_LOCAL(ip->ino) - 1, want;
	int root = ip->ino == fs->sb.root_ino, code;

	/* a file being renumbered: its names are split between the pair,
	 * which the finish settles; only the counts follow the names now */
	if (renum_pending(fs, ip->ino) && !x->isdir[l]) {
		if (ip->d.nlink != x->refs[l] && pr_decide(x->k, PR_GLOBAL, PR_RENUMBER)) {
			ip->d.nlink = x->refs[l];
			inode_write(fs, ip);
		}
		return;
	}
	if (!root && x->refs[l] == 0) {
		/* scrub: unlinked (or removed) but still open on the mount */
		if (ip->d.nlink == 0 && inode_live_orphan(fs, ip->ino))
			return;
		if (ip->d.nlink == 0 && !x->isdir[l]) {
			release_deleted(x, ip);
			return;
		}
		code = ip->ino == fs->sb.lpf_ino && x->isdir[l] ? PR_LPF_UNLINKED : PR_ORPHAN;
		if (!pr_decide(x->k, x->c, code)) {
			pr_report(x->k, x->c, code, &(struct pctx){ .ino = ip->ino }, 0, 0);
			return;
		}
		if (x->isdir[l] && ip->d.nlink != 2 + x->subdirs[l]) {
			ip->d.nlink = 2 + x->subdirs[l];
			inode_write(fs, ip);
		}
		add_orphan(x, ip->ino, code);
		return;
	}
	if (x->isdir[l] && x->refs[l] > 1)
		pr_fix(x, PR_DIR_NAMES, &(struct pctx){ .ino = ip->ino, .num = { x->refs[l] } });
	want = x->isdir[l] ? 2 + x->subdirs[l] : x->refs[l];
	if (ip->d.nlink != want &&
	    pr_fix(x, PR_LINK_COUNT, &(struct pctx){ .ino = ip->ino,
						    .num = { ip->d.nlink, want } })) {
		ip->d.nlink = want;
		inode_write(fs, ip);
	}
}

/* Whether check_links must look at head l - 1: its entries and stubs
 * counted, or its subdirectories, disagree with the link count it was
 * loaded with, or nothing names it. */
static int links_wrong(struct chunk_check *x, uint32_t l)
{
	uint32_t want = x->isdir[l] ? 2 + x->subdirs[l] : x->refs[l];

	if (!x->refs[l] && CFS_INO_MAKE(x->c, l + 1) != x->fs->sb.root_ino)
		return 1;
	return (x->isdir[l] && x->refs[l] > 1) || x->nlink[l] != want;
}

static int has_conts(struct chunk_check *x, uint32_t l)
{
	return x->ftype[l] & SLOT_CONTS;
}

static int is_dir(struct chunk_check *x, uint32_t l)
{
	return x->isdir[l];
}

/* fn for each inode of this kind in use for which need (NULL: all) says
 * there is something to look at. */
static void each_inode(struct chunk_check *x, int kind,
		       int (*need)(struct chunk_check *x, uint32_t l),
		       void (*fn)(struct chunk_check *x, struct inode *ip))
{
	uint64_t limit = itable_limit(x);
	uint32_t i, l;

	for (i = 0; i < x->nused; i++) {
		struct inode *ip;

		l = x->used[i];
		if (x->kind[l - 1] != kind || (need && !need(x, l - 1)))
			continue;
		ip = x->held[l - 1];
		if (!ip)
			itable_read_ahead(x, l, limit);   /* a no-op once cached */
		if (!ip && inode_get(x->fs, CFS_INO_MAKE(x->c, l), &ip) < 0)
			continue;
		if (ip->d.mode && !ip->deleted)
			fn(x, ip);
		if (ip != x->held[l - 1])
			inode_put(x->fs, ip);
	}
}

static void slots_of(struct chunk_check *x, struct inode *ip)
{
	check_cont_slots(x, ip);
}

/* Record slot l in use, as *d has it (ip: loaded already, or NULL).  The
 * inodes step B's passes load anyway -- directories, continuations and
 * stubs -- are held until the chunk's step B is over: up to k->held_max
 * of them, so that memory stays bounded; the rest are loaded again by
 * each pass that needs them.  All workers together hold at most
 * FSCK_HELD_TOTAL (about 370 KiB, fsck.h). */
static void slot_record(struct chunk_check *x, uint32_t l, const struct cfs_dinode *d,
			struct inode *ip, uint32_t *nheld)
{
	int s, conts = 0;

	x->kind[l - 1] = (d->flags & CFS_IFL_CONT) ? K_CONT :
			 (d->flags & CFS_IFL_STUB) ? K_STUB : K_HEAD;
	x->isdir[l - 1] = S_ISDIR(d->mode);
	x->dirbad[l - 1] = x->isdir[l - 1] &&
			   (!(d->flags & CFS_IFL_EXTENTS) || d->size < x->fs->bsize);
	for (s = 0; s < CFS_NCONT; s++)
		conts |= d->cont[s] != 0;
	x->nlink[l - 1] = d->nlink;
	x->back[l - 1] = d->back;
	x->ftype[l - 1] = (uint8_t)((d->mode & S_IFMT) >> 12) | (conts ? SLOT_CONTS : 0);
	x->used[x->nused++] = l;
	if ((x->kind[l - 1] != K_HEAD || x->isdir[l - 1]) && *nheld < x->k->held_max &&
	    (ip || inode_get(x->fs, CFS_INO_MAKE(x->c, l), &ip) == 0)) {
		x->held[l - 1] = ip;
		(*nheld)++;
		return;
	}
	inode_put(x->fs, ip);
}

/* Step B starts from the inodes as step A left them, read from the inode
 * table.  A slot that is not sound as it stands (a checksum, a size) is
 * loaded, so that the library judges it as it always does. */
static void load_kinds(struct chunk_check *x)
{
	struct cfs_fs *fs = x->fs;
	uint64_t limit = itable_limit(x);
	uint32_t l, nheld = 0;
	struct cfs_dinode d;
	struct buf *b = NULL;

	for (l = ck_next(x, 1); l <= x->ipc; l = ck_next(x, l + 1)) {
		struct inode *ip;
		uint8_t *raw;

		itable_ahead(x, l, limit);
		raw = itable_slot(x, l, &b);
		if (raw && cfs_dinode_is_zero(raw, fs->isz))
			continue;
		if (raw && cfs_dinode_csum_ok(raw, fs->isz, fs->seed, CFS_INO_MAKE(x->c, l))) {
			cfs_dinode_decode(raw, &d);
			if (!d.mode)
				continue;
			if (dinode_plausible(fs, &d)) {
				slot_record(x, l, &d, NULL, &nheld);
				continue;
			}
		}
		if (inode_get(fs, CFS_INO_MAKE(x->c, l), &ip) < 0)
			continue;
		if (!ip->d.mode || ip->deleted) {
			inode_put(fs, ip);
			continue;
		}
		slot_record(x, l, &ip->d, ip, &nheld);
	}
	buf_put(&fs->cache, b);
}

void step_b(struct chunk_check *x)
{
	x->nlink = malloc(sizeof(*x->nlink) * x->ipc);
	x->back = malloc(sizeof(*x->back) * x->ipc);
	x->ftype = malloc(x->ipc);
	if (!x->nlink || !x->back || !x->ftype) {
		pr_fix(x, PR_NO_MEMORY, &(struct pctx){ 0 });
		goto out;
	}
	load_kinds(x);
	each_inode(x, K_HEAD, has_conts, slots_of);
	each_inode(x, K_CONT, has_conts, slots_of);
	each_inode(x, K_CONT, NULL, check_cont);
	each_inode(x, K_HEAD, is_dir, check_dir);
	each_inode(x, K_STUB, NULL, check_stub);
	each_inode(x, K_HEAD, links_wrong, check_links);
out:
	free(x->nlink);
	free(x->back);
	free(x->ftype);
	x->nlink = x->back = NULL;
	x->ftype = NULL;
}

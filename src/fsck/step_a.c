/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fsck step A: one chunk's inodes, block maps, bitmaps and header counts.
 * It reads only its own chunk, so every chunk's step A runs in parallel;
 * what it leaves (sound inodes, maps and bitmaps) is what step B trusts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bdev.h"
#include "fsck.h"

static void bunset_run(uint8_t *b, uint64_t start, uint64_t n)
{
	uint64_t i;

	for (i = start; i < start + n; i++)
		b[i >> 3] &= (uint8_t)~(1u << (i & 7));
}

static int type_ok(uint16_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR:
	case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		return 1;
	}
	return 0;
}

static int mode_ok(const struct cfs_dinode *d)
{
	return type_ok(d->mode) && !(d->flags & ~0xFu) &&
	       !((d->flags & CFS_IFL_CONT) && (d->flags & CFS_IFL_STUB)) &&
	       !((d->flags & CFS_IFL_INLINE) && (d->flags & CFS_IFL_EXTENTS));
}

int dinode_plausible(struct cfs_fs *fs, const struct cfs_dinode *d)
{
	/* at least what inode_read refuses, so a kept inode can be loaded */
	return mode_ok(d) && !dinode_size_bad(fs, d);
}

static int dinode_conts(const struct cfs_dinode *d)
{
	int s;

	for (s = 0; s < CFS_NCONT; s++)
		if (d->cont[s])
			return 1;
	return 0;
}

/* Why inode d's sizes are impossible, or a head inode's fields contradict
 * the type its mode says (FORMAT.md 10.3), in buf; NULL when they hold.
 * Neither a crash nor any operation writes these (a new inode is written
 * first with no data flag and size 0), so they are damage even under a valid
 * checksum, and the inode's contents cannot be read as that type: a
 * file's data taken for a symlink target, a device with blocks. */
const char *dinode_impossible(struct cfs_fs *fs, const struct cfs_dinode *d, char *buf,
			      size_t n)
{
	const char *why = dinode_size_bad(fs, d);

	if (why) {
		snprintf(buf, n, "%s (size %llu)", why, (unsigned long long)d->size);
		return buf;
	}
	if (d->flags & (CFS_IFL_CONT | CFS_IFL_STUB))
		return NULL;
	if ((S_ISREG(d->mode) || S_ISLNK(d->mode)) &&
	    !(d->flags & (CFS_IFL_INLINE | CFS_IFL_EXTENTS)) && d->size) {
		snprintf(buf, n, "%s of %llu bytes with neither inline data nor an extent "
			 "tree", S_ISREG(d->mode) ? "file" : "symlink",
			 (unsigned long long)d->size);
		return buf;
	}
	if ((S_ISCHR(d->mode) || S_ISBLK(d->mode) || S_ISFIFO(d->mode) ||
	     S_ISSOCK(d->mode)) &&
	    ((d->flags & (CFS_IFL_INLINE | CFS_IFL_EXTENTS)) || d->size || dinode_conts(d) ||
	     (d->rdev && !S_ISCHR(d->mode) && !S_ISBLK(d->mode)))) {
		snprintf(buf, n, "%s with data (flags 0x%x, size %llu, device %llu)",
			 S_ISFIFO(d->mode) ? "fifo" : S_ISSOCK(d->mode) ? "socket" :
			 "device", d->flags, (unsigned long long)d->size,
			 (unsigned long long)d->rdev);
		return buf;
	}
	return NULL;
}

/* Whether a head inode whose checksum fails still reads as one inode of
 * the type its mode says: a checksum is recomputed only then.  Besides
 * what is impossible under any checksum, the fields only a directory
 * has (parent, entry counts) must agree with its mode: a damaged mode
 * that turned a file into a directory, or the reverse, shows there, and
 * the directory entry naming it says the old type (a finding the
 * recompute would leave to step B as a bad entry, the inode going to
 * /lost+found as the wrong type). */
static int dinode_whole(struct cfs_fs *fs, cfs_ino_t ino, const struct cfs_dinode *d)
{
	char why[160];

	if (!mode_ok(d) || dinode_impossible(fs, d, why, sizeof(why)))
		return 0;
	if (d->flags & (CFS_IFL_CONT | CFS_IFL_STUB))
		return 1;
	if (d->head != ino)
		return 0;
	/* a symlink has no holes: a target of one byte or more has a block
	 * (not impossible under a valid checksum: a block map dropped by
	 * MAP_SHARED and the like leaves a symlink so) */
	if (S_ISLNK(d->mode) && (d->flags & CFS_IFL_EXTENTS) && d->size &&
	    !d->nblocks && !dinode_conts(d))
		return 0;
	if (S_ISDIR(d->mode))
		return !(d->flags & CFS_IFL_EXTENTS) || d->back;
	return !d->back && !d->lo && !d->hi;
}

/* ---- step A: inodes ---- */

/* A slot with mode 0 must be a free inode as FORMAT.md 10.2 has it: every
 * field zero but the generation (the library refuses to load, and so to
 * allocate, anything else).  Rewritten as one, keeping the generation. */
static void free_slot_check(struct chunk_check *x, cfs_ino_t ino, uint8_t *raw,
			    const struct cfs_dinode *d, struct buf *b)
{
	struct cfs_fs *fs = x->fs;
	struct cfs_dinode f;
	uint8_t *want = calloc(1, fs->isz);

	if (!want)
		return;
	memset(&f, 0, sizeof(f));
	f.generation = d->generation;
	cfs_dinode_encode(&f, want);
	cfs_dinode_csum_set(want, fs->isz, fs->seed, ino);
	if (memcmp(want, raw, fs->isz) &&
	    pr_fix(x, PR_FREE_INODE_STALE, &(struct pctx){ .ino = ino })) {
		memcpy(raw, want, fs->isz);
		buf_dirty(&fs->cache, b);
	}
	free(want);
}

static void resealed_add(struct fs_check *k, cfs_ino_t ino)
{
	cfs_ino_t *n;

	pthread_mutex_lock(&k->lock);
	n = realloc(k->resealed, (k->nresealed + 1) * sizeof(*n));
	if (n) {   /* else its entries are judged as any (a name lost at worst) */
		k->resealed = n;
		k->resealed[k->nresealed++] = ino;
	}
	pthread_mutex_unlock(&k->lock);
}

/* Slot l's bytes (raw, in table block b) as the inode table holds them:
 * a sound inode is left for the block pass (its kind set, *d decoded), a
 * damaged one is fixed or reported.  Returns 1 for an inode in use. */
static int scan_inode_slot(struct chunk_check *x, uint32_t l, uint8_t *raw, struct buf *b,
			   struct cfs_dinode *d)
{
	struct cfs_fs *fs = x->fs;
	cfs_ino_t ino = CFS_INO_MAKE(x->c, l);
	const char *why = NULL;
	char wb[160];

	if (cfs_dinode_is_zero(raw, fs->isz))
		return 0;
	cfs_dinode_decode(raw, d);
	if (!cfs_dinode_csum_ok(raw, fs->isz, fs->seed, ino)) {
		int ok = d->mode && dinode_whole(fs, ino, d);

		/* a cleared inode's references elsewhere cannot be named */
		if (!ok && d->mode)
			reach_ino(x->k, 0);
		if (!pr_fix(x, ok ? PR_INODE_CSUM_PLAUSIBLE : PR_INODE_CSUM,
			    &(struct pctx){ .ino = ino })) {
			bset(x->ibits, l - 1);   /* left for a person: keep it */
			return 0;
		}
		if (ok) {
			cfs_dinode_csum_set(raw, fs->isz, fs->seed, ino);
			resealed_add(x->k, ino);
		} else {
			memset(raw, 0, fs->isz);
		}
		if (buf_dirty(&fs->cache, b) < 0 || !ok)
			return 0;
	} else if (d->mode && (!mode_ok(d) ||
				(why = dinode_impossible(fs, d, wb, sizeof(wb))))) {
		struct pctx p = { .ino = ino, .num = { d->mode, d->flags }, .str = why };

		reach_ino(x->k, 0);
		if (pr_fix(x, why ? PR_INODE_IMPOSSIBLE : PR_INODE_MODE, &p)) {
			memset(raw, 0, fs->isz);
			buf_dirty(&fs->cache, b);
		} else {
			bset(x->ibits, l - 1);
		}
		return 0;
	}
	if (!d->mode) {
		free_slot_check(x, ino, raw, d, b);
		return 0;
	}
	if ((d->flags & CFS_IFL_STUB) && d->head == ino &&
	    pr_fix(x, PR_STUB_FLAG_ON_HEAD, &(struct pctx){ .ino = ino })) {
		/* a stub names another inode: one naming itself is a file or
		 * directory that got the flag, with its data and names intact */
		d->flags &= (uint16_t)~CFS_IFL_STUB;
		cfs_dinode_encode(d, raw);
		cfs_dinode_csum_set(raw, fs->isz, fs->seed, ino);
		buf_dirty(&fs->cache, b);
	}
	x->kind[l - 1] = (d->flags & CFS_IFL_CONT) ? K_CONT :
			 (d->flags & CFS_IFL_STUB) ? K_STUB : K_HEAD;
	x->isdir[l - 1] = S_ISDIR(d->mode);
	return 1;
}

/* records impossible in themselves (ext_sane) one map may have, each
 * removed alone; more and the map is dropped as pointing outside */
#define IMPOSSIBLE_MAX 16

struct claims {
	struct chunk_check *x;
	uint32_t *blk, *len;
	size_t n, cap;
	int bad;
	int nimp;
	struct extent imp[IMPOSSIBLE_MAX];
};

static int claimed_by(const struct claims *cl, uint32_t blk)
{
	size_t i;

	for (i = 0; i < cl->n; i++)
		if (blk >= cl->blk[i] && blk - cl->blk[i] < cl->len[i])
			return 1;
	return 0;
}

static int claim_cb(void *vc, const struct extent *e, int is_node, uint32_t node)
{
	struct claims *cl = vc;
	struct cfs_fs *fs = cl->x->fs;
	uint32_t start = is_node ? node : e->pblk, n = is_node ? 1 : e->len, i;
	uint32_t *blk, *len = NULL;
	size_t bc, lc;

	if (!is_node && ext_sane(fs, e) < 0) {
		if (cl->nimp == IMPOSSIBLE_MAX) {
			cl->bad = 1;   /* not a record damaged here and there */
			return 1;
		}
		cl->imp[cl->nimp++] = *e;   /* claims nothing */
		return 0;
	}
	if (start < fs->sb.data_start || (uint64_t)start + n > fs->sb.chunk_blocks || !n) {
		cl->bad = 1;
		return 1;
	}
	for (i = 0; i < n; i++)
		if (bget(cl->x->bbits, (uint64_t)start + i)) {
			cl->bad = claimed_by(cl, start + i) ? 4 : 2;
			return 1;
		}
	/* marked now, so that the inode's own extents overlapping each other
	 * are caught too; undone if the map is dropped */
	for (i = 0; i < n; i++)
		bset(cl->x->bbits, (uint64_t)start + i);
	/* two arrays of one length: cap is the smaller of theirs */
	bc = lc = cl->cap;
	blk = array_room(cl->blk, &bc, cl->n, sizeof(*blk), 64);
	if (blk) {
		cl->blk = blk;
		len = array_room(cl->len, &lc, cl->n, sizeof(*len), 64);
	}
	if (!blk || !len) {
		bunset_run(cl->x->bbits, start, n);
		cl->bad = 3;
		return 1;
	}
	cl->len = len;
	cl->cap = lc;
	cl->blk[cl->n] = start;
	cl->len[cl->n++] = n;
	return 0;
}

struct overlap {
	struct chunk_check *x;
	uint32_t *owner;        /* per block: local inode number + 0 */
	uint32_t l;
	uint64_t *pairs;        /* (first owner << 32) | later claimant */
	size_t n, cap;
};

static int overlap_cb(void *vc, const struct extent *e, int is_node, uint32_t node)
{
	struct overlap *o = vc;
	uint64_t start = is_node ? node : e->pblk, n = is_node ? 1 : e->len, b;

	if (!is_node && ext_sane(o->x->fs, e) < 0)
		return 0;   /* removed alone (claim_cb) */
	if (start < o->x->fs->sb.data_start || start + n > o->x->fs->sb.chunk_blocks)
		return 1;   /* a map out of range is dropped anyway */
	for (b = start; b < start + n; b++) {
		uint32_t w = o->owner[b];

		if (!w) {
			o->owner[b] = o->l;
		} else if (w != o->l && (!o->n || o->pairs[o->n - 1] !=
					 ((uint64_t)w << 32 | o->l))) {
			uint64_t *pairs = array_room(o->pairs, &o->cap, o->n, sizeof(*pairs), 16);

			if (!pairs)
				return 1;
			o->pairs = pairs;
			o->pairs[o->n++] = (uint64_t)w << 32 | o->l;
		}
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The inode-table passes go block by block: at the start of each group
 * of FSCK_RA blocks, one device read brings the group into the cache. */
#define FSCK_RA 16

void itable_read_ahead(struct chunk_check *x, uint32_t l, uint64_t limit)
{
	uint64_t left;
	uint32_t off;

	if (l > x->fs->sb.inodes_per_chunk) {
		icl_read_ahead(x, l);
		return;
	}
	if (l > limit)
		return;
	left = (limit - 1) / x->fs->ipb - (l - 1) / x->fs->ipb + 1;
	cache_readahead(&x->fs->cache, inode_location(x->fs, CFS_INO_MAKE(x->c, l), &off),
			left < FSCK_RA ? (uint32_t)left : FSCK_RA);
}

void itable_ahead(struct chunk_check *x, uint32_t l, uint64_t limit)
{
	uint32_t ipc = x->fs->sb.inodes_per_chunk;

	if (l > ipc ? (l - ipc - 1) % CFS_ICL_INODES == 0 :
	    (l - 1) % ((uint64_t)x->fs->ipb * FSCK_RA) == 0)
		itable_read_ahead(x, l, limit);
}

/* Inode slot l's bytes in the inode table, or NULL if unreadable.  The
 * table block stays held in *b across calls, so a pass over the slots
 * gets each block once; the caller puts *b at the end. */
uint8_t *itable_slot(struct chunk_check *x, uint32_t l, struct buf **b)
{
	struct cfs_fs *fs = x->fs;
	uint32_t off;
	uint64_t blk = inode_location(fs, CFS_INO_MAKE(x->c, l), &off);

	if (!*b || (*b)->blk != blk) {
		buf_put(&fs->cache, *b);
		if (cache_get(&fs->cache, blk, 0, b) < 0)
			*b = NULL;
	}
	return *b ? (*b)->data + off : NULL;
}

/* A read-only view of inode slot l straight from the inode table: enough
 * to walk its extents without loading the inode, for a slot step A found
 * valid. */
static int raw_view(struct chunk_check *x, uint32_t l, struct buf **b, struct inode *tmp)
{
	uint8_t *raw = itable_slot(x, l, b);

	if (!raw)
		return -EIO;
	memset(tmp, 0, sizeof(*tmp));
	tmp->ino = CFS_INO_MAKE(x->c, l);
	cfs_dinode_decode(raw, &tmp->d);
	tmp->var = raw + CFS_INODE_FIXED;
	return 0;
}

/* Before any block is claimed, find the maps that overlap and, of each
 * overlapping pair, the one to blame: the inode that overlaps more others
 * (one damaged extent lands on several files, each of which overlaps only
 * it); on a tie, the one scanned later. */
static void find_losers(struct chunk_check *x, uint64_t limit)
{
	struct overlap o = { x, calloc(x->fs->sb.chunk_blocks, 4), 0, NULL, 0, 0 };
	uint32_t *deg = calloc(x->ipc, 4);
	struct buf *b = NULL;
	size_t i, m = 0;

	for (o.l = ck_next(x, 1); o.owner && deg && o.l <= x->ipc; o.l = ck_next(x, o.l + 1)) {
		struct inode tmp;

		itable_ahead(x, o.l, limit);
		if (x->kind[o.l - 1] != K_FREE && raw_view(x, o.l, &b, &tmp) == 0)
			ext_walk(x->fs, &tmp, overlap_cb, &o, NULL);
	}
	buf_put(&x->fs->cache, b);
	if (o.n)
		qsort(o.pairs, o.n, sizeof(*o.pairs), cmp_u64);
	for (i = 0; i < o.n; i++)
		if (!m || o.pairs[m - 1] != o.pairs[i])
			o.pairs[m++] = o.pairs[i];
	for (i = 0; deg && i < m; i++) {
		deg[(o.pairs[i] >> 32) - 1]++;
		deg[(uint32_t)o.pairs[i] - 1]++;
	}
	for (i = 0; deg && i < m; i++) {
		uint32_t a = (uint32_t)(o.pairs[i] >> 32), b = (uint32_t)o.pairs[i];

		x->loser[(deg[a - 1] > deg[b - 1] ? a : b) - 1] = 1;
	}
	free(o.owner);
	free(o.pairs);
	free(deg);
}

/* The longest run one prefetch asks for. */
#define PF_MAX 512

static void dir_prefetch_flush(struct chunk_check *x)
{
	if (x->pf_len)
		cfs_bdev_prefetch(x->fs->bd, x->pf_blk, x->pf_len);
	x->pf_len = 0;
}

/* Step B will read every directory block: start those reads now, into the
 * page cache (not our memory), long before they are needed.  Directories
 * whose blocks follow each other are asked for in one go, as one read, not
 * one each: metadata is packed (chunk_alloc_meta).  Blocks between them
 * are not read along: on an image written before that, they would be file
 * data, and reading it made the check slower. */
static void dir_prefetch(struct chunk_check *x, uint32_t rel, uint32_t n)
{
	uint64_t blk = chunk_base(x->fs, x->c) + rel, end = x->pf_blk + x->pf_len;

	if (x->pf_len && blk >= x->pf_blk && blk <= end && blk + n - x->pf_blk <= PF_MAX) {
		if (blk + n > end)
			x->pf_len = (uint32_t)(blk + n - x->pf_blk);
		return;
	}
	dir_prefetch_flush(x);
	x->pf_blk = blk;
	x->pf_len = n;
}

/* Records impossible in themselves (claim_cb) or out of place (ext_walk)
 * name blocks no lookup reaches: each is reported, and the fix removes it
 * alone, as e2fsck removes one bad extent, then walks the map again (a
 * removal can merge nodes, and out-of-place records past the ones ext_walk
 * keeps come to light: each round removes at least one record, so it
 * ends).  Without the fix the other records' claims stand. */
static int drop_records(struct chunk_check *x, struct inode *ip, struct claims *cl,
			struct ext_skipped *sk, int *changed)
{
	int i, n, fixed, ret;
	size_t j;

	do {
		n = cl->nimp + (sk->nmisplaced < EXT_MISPLACED_MAX ? sk->nmisplaced :
				EXT_MISPLACED_MAX);
		for (i = 0, fixed = 0; i < n; i++) {
			int imp = i < cl->nimp;
			const struct extent *e = imp ? &cl->imp[i] : &sk->misplaced[i - cl->nimp];

			if (!pr_fix(x, imp ? PR_EXTENT_IMPOSSIBLE : PR_EXTENT_MISPLACED,
				    &(struct pctx){ .ino = ip->ino,
						    .num = { e->lblk, e->len, e->pblk } }))
				continue;
			ret = ext_drop(x->fs, ip, e);
			if (ret < 0)
				return ret;
			fixed = 1;
		}
		if (!fixed)
			return 0;
		*changed = 1;
		for (j = 0; j < cl->n; j++)
			bunset_run(x->bbits, cl->blk[j], cl->len[j]);
		cl->n = 0;
		cl->nimp = 0;
		ret = ext_walk(x->fs, ip, claim_cb, cl, sk);
	} while (ret == 0 && !cl->bad && (cl->nimp || sk->nmisplaced));
	return ret;
}

/* Claim the inode's blocks in the truth map, or drop a map that points
 * outside the chunk, overlaps another inode's blocks or cannot be read;
 * records impossible in themselves or out of place go alone (drop_records). */
static uint64_t scan_block_map(struct chunk_check *x, struct inode *ip, int *changed)
{
	struct claims cl = { .x = x };
	struct ext_skipped sk = { 0 };
	uint64_t total = 0;
	size_t i;
	int ret = 0;

	/* before the walk, which refuses such a root as every reader does:
	 * it is a finding of its own, fixed without dropping anything */
	if (ext_root_empty_index(ip)) {
		if (pr_fix(x, PR_MAP_EMPTY_ROOT, &(struct pctx){ .ino = ip->ino })) {
			ext_init_root(x->fs, ip);
			*changed = 1;
		}
		goto out;
	}
	if (x->loser[CFS_INO_LOCAL(ip->ino) - 1])
		cl.bad = 2;
	else
		ret = ext_walk(x->fs, ip, claim_cb, &cl, &sk);
	if (ret == 0 && !cl.bad && (cl.nimp || sk.nmisplaced))
		ret = drop_records(x, ip, &cl, &sk, changed);
	if (ret < 0 || cl.bad) {
		for (i = 0; i < cl.n; i++)
			bunset_run(x->bbits, cl.blk[i], cl.len[i]);
		if (pr_fix(x, cl.bad == 2 ? PR_MAP_SHARED : cl.bad == 4 ? PR_MAP_TWICE :
			   cl.bad == 1 ? PR_MAP_OUTSIDE : PR_MAP_UNREADABLE,
			   &(struct pctx){ .ino = ip->ino })) {
			ext_init_root(x->fs, ip);
			*changed = 1;
		}
		goto out;
	}
	/* claimed as ext_walk sees them, without the leftovers, in any case:
	 * trimming only makes the disk say the same */
	if (sk.leftovers && pr_fix(x, PR_MAP_LEFTOVER, &(struct pctx){ .ino = ip->ino }) &&
	    ext_trim_leftovers(x->fs, ip, 1) > 0)
		*changed = 1;
	for (i = 0; i < cl.n; i++)
		total += cl.len[i];
	if (S_ISDIR(ip->d.mode))
		for (i = 0; i < cl.n; i++)
			dir_prefetch(x, cl.blk[i], cl.len[i]);
out:
	free(cl.blk);
	free(cl.len);
	return total;
}

/* Where the in-inode attributes may start: after the extent root or the
 * inline data (FORMAT.md 15, the 56-byte reservation). */
static uint32_t xattr_floor(struct cfs_fs *fs, struct inode *ip)
{
	uint64_t data = CFS_EXT_ROOT_SIZE;

	if ((ip->d.flags & CFS_IFL_INLINE) && ip->d.size > data)
		data = ip->d.size;
	return data >= fs->varsz ? fs->varsz : (uint32_t)data;
}

/* Drop the in-inode attributes: zero their area, but never the extent root
 * or inline data that a length running over them would reach. */
static void xattr_area_drop(struct cfs_fs *fs, struct inode *ip)
{
	uint32_t from = fs->varsz - ip->d.xattr_len, floor = xattr_floor(fs, ip);

	if (from < floor)
		from = floor;
	memset(ip->var + from, 0, fs->varsz - from);
	ip->d.xattr_len = 0;
}

/* Every attribute listed can be read back by its name, and is listed once:
 * a name holding a NUL byte (listed as two names, or an empty one) or a
 * repeated name is damage the parser alone does not see. */
static int xattrs_readable(struct cfs_fs *fs, struct inode *ip)
{
	ssize_t n = xattr_list(fs, ip, NULL, 0), i, j;
	char *buf;
	int ok = 1;

	if (n <= 0)
		return n == 0;
	buf = malloc((size_t)n);
	if (!buf)
		return 1;   /* cannot tell: keep them */
	n = xattr_list(fs, ip, buf, (size_t)n);
	ok = n >= 0;
	for (i = 0; ok && i < n; i += (ssize_t)strlen(buf + i) + 1) {
		ok = xattr_get(fs, ip, buf + i, NULL, 0) >= 0;
		for (j = 0; ok && j < i; j += (ssize_t)strlen(buf + j) + 1)
			ok = strcmp(buf + i, buf + j) != 0;
	}
	free(buf);
	return ok;
}

static uint64_t scan_xattrs(struct chunk_check *x, struct inode *ip, int *changed)
{
	uint32_t xb = ip->d.xattr_block;
	int ok = 1, area_ok;

	if (!ip->d.xattr_len && !xb)
		return 0;
	area_ok = ip->d.xattr_len <= x->fs->varsz - xattr_floor(x->fs, ip);
	if (!area_ok || (xb && (xb < x->fs->sb.data_start || xb >= x->fs->sb.chunk_blocks ||
				bget(x->bbits, xb))))
		ok = 0;
	if (ok && !xattrs_readable(x->fs, ip))
		ok = 0;
	if (ok) {
		if (xb)
			bset(x->bbits, xb);
		return xb ? 1 : 0;
	}
	/* the attributes kept in the inode may be intact on their own */
	ip->d.xattr_block = 0;
	ok = xb && area_ok && xattrs_readable(x->fs, ip);
	ip->d.xattr_block = xb;
	if (pr_fix(x, ok ? PR_XATTR_BLOCK : PR_XATTRS, &(struct pctx){ .ino = ip->ino })) {
		if (!ok)
			xattr_area_drop(x->fs, ip);
		ip->d.xattr_block = 0;
		*changed = 1;
	} else if (xb && xb >= x->fs->sb.data_start && xb < x->fs->sb.chunk_blocks) {
		bset(x->bbits, xb);   /* left for a person: keep its block */
		return 1;
	}
	return 0;
}

static void clear_raw(struct chunk_check *x, cfs_ino_t ino)
{
	struct buf *b;
	uint32_t off;

	if (cache_get(&x->fs->cache, inode_location(x->fs, ino, &off), 0, &b) < 0)
		return;
	memset(b->data + off, 0, x->fs->isz);
	buf_dirty(&x->fs->cache, b);
	buf_put(&x->fs->cache, b);
}

/* The header's counts, and the directories step B cannot walk. */
static void count_inode(struct chunk_check *x, uint32_t l, const struct cfs_dinode *d)
{
	if (x->kind[l - 1] == K_HEAD && x->isdir[l - 1]) {
		x->ndirs++;
		if (!(d->flags & CFS_IFL_EXTENTS) || d->size < x->fs->bsize)
			x->dirbad[l - 1] = 1;
	}
	x->nconts += x->kind[l - 1] == K_CONT;
	x->nstubs += x->kind[l - 1] == K_STUB;
}

static void scan_inode_blocks(struct chunk_check *x, uint32_t l)
{
	struct cfs_fs *fs = x->fs;
	cfs_ino_t ino = CFS_INO_MAKE(x->c, l);
	struct inode *ip;
	uint64_t owned;
	int changed = 0;

	if (inode_get(fs, ino, &ip) < 0) {
		reach_ino(x->k, 0);
		if (pr_fix(x, PR_INODE_LOAD, &(struct pctx){ .ino = ino }))
			clear_raw(x, ino);
		else
			bset(x->ibits, l - 1);   /* left as it is: still allocated */
		x->kind[l - 1] = K_FREE;
		return;
	}
	bset(x->ibits, l - 1);
	owned = scan_block_map(x, ip, &changed) + scan_xattrs(x, ip, &changed);
	if (owned != ip->d.nblocks &&
	    pr_fix(x, PR_INODE_NBLOCKS, &(struct pctx){ .ino = ino,
							.num = { owned, ip->d.nblocks } })) {
		ip->d.nblocks = owned;
		changed = 1;
	}
	if ((ip->d.flags & CFS_IFL_INLINE) && ip->d.size > file_inline_max(fs, ip) &&
	    pr_fix(x, PR_INLINE_SIZE, &(struct pctx){ .ino = ino, .num = { ip->d.size } })) {
		ip->d.size = file_inline_max(fs, ip);
		changed = 1;
	}
	count_inode(x, l, &ip->d);
	if (changed)
		inode_write(fs, ip);
	inode_put(fs, ip);
}

static void sync_bitmaps(struct chunk_check *x)
{
	struct cfs_fs *fs = x->fs;
	struct chunk *ch = &fs->chunks[x->c];
	uint64_t diffs;
	int w;

	for (w = 0; w < 2; w++) {
		const uint8_t *truth = w ? x->ibits : x->bbits;
		uint32_t *hfree = w ? &ch->hdr.free_inodes : &ch->hdr.free_blocks;
		uint64_t nfree;

		if (chunk_bitmap_sync(fs, x->c, w, truth, 0, &diffs, &nfree) < 0) {
			pr_fix(x, PR_BITMAP_UNREADABLE,
			       &(struct pctx){ .str = w ? "inode" : "block" });
			continue;
		}
		if (diffs && pr_fix(x, w ? PR_INODE_BITMAP : PR_BLOCK_BITMAP,
				    &(struct pctx){ .num = { diffs } }))
			chunk_bitmap_sync(fs, x->c, w, truth, 1, &diffs, &nfree);
		else if (!diffs && *hfree != nfree &&
			 pr_fix(x, w ? PR_FREE_INODES : PR_FREE_BLOCKS,
				&(struct pctx){ .num = { *hfree, nfree } })) {
			pthread_mutex_lock(&ch->lock);
			*hfree = (uint32_t)nfree;
			ch->hdr_unwritten = 1;
			pthread_mutex_unlock(&ch->lock);
		}
	}
	if ((ch->hdr.nconts != x->nconts || ch->hdr.nstubs != x->nstubs ||
	     ch->hdr.ndirs != x->ndirs) &&
	    pr_fix(x, PR_HDR_COUNTS, &(struct pctx){ .num = { ch->hdr.nconts, ch->hdr.nstubs,
							       ch->hdr.ndirs, x->nconts,
							       x->nstubs, x->ndirs } })) {
		pthread_mutex_lock(&ch->lock);
		ch->hdr.nconts = x->nconts;
		ch->hdr.nstubs = x->nstubs;
		ch->hdr.ndirs = x->ndirs;
		ch->hdr_unwritten = 1;
		pthread_mutex_unlock(&ch->lock);
	}
}

/* ---- the quick block pass ----
 * A sound chunk needs none of the full block pass's care: no map overlaps
 * another, so there is no loser to find, and no inode needs loading to be
 * fixed.  So each inode's blocks are claimed straight from its table slot
 * in the same sweep that checks the slots, with nothing loaded, allocated
 * or reported.  The first thing that is not as it should be (a block
 * claimed twice, a map out of range or unreadable or with a split's
 * leftovers, attributes, a block count or an inline size wrong) ends the
 * quick pass: the chunk's claims
 * are dropped and the full pass (find_losers, then scan_inode_blocks for
 * every inode) judges and reports everything as if it had not run. */

struct quick {
	struct chunk_check *x;
	uint64_t owned;
	int dir, bad;
};

static int quick_claim_cb(void *vq, const struct extent *e, int is_node, uint32_t node)
{
	struct quick *q = vq;
	struct chunk_check *x = q->x;
	struct cfs_fs *fs = x->fs;
	uint32_t start = is_node ? node : e->pblk, n = is_node ? 1 : e->len, i;

	if ((!is_node && ext_sane(fs, e) < 0) || start < fs->sb.data_start ||
	    (uint64_t)start + n > fs->sb.chunk_blocks || !n) {
		q->bad = 1;
		return 1;
	}
	for (i = 0; i < n; i++)
		if (bget(x->bbits, (uint64_t)start + i)) {
			q->bad = 1;
			return 1;
		}
	for (i = 0; i < n; i++)
		bset(x->bbits, (uint64_t)start + i);
	q->owned += n;
	if (q->dir)
		dir_prefetch(x, start, n);
	return 0;
}

/* 0 if inode l (raw in the table, decoded in *d) is sound, its blocks
 * claimed and counted; -1 if the full pass must judge the chunk. */
static int quick_scan(struct chunk_check *x, uint32_t l, uint8_t *raw, const struct cfs_dinode *d)
{
	struct cfs_fs *fs = x->fs;
	struct quick q = { x, 0, S_ISDIR(d->mode), 0 };
	uint32_t xb = d->xattr_block;
	struct inode tmp;
	struct ext_skipped sk;

	memset(&tmp, 0, sizeof(tmp));
	tmp.ino = CFS_INO_MAKE(x->c, l);
	tmp.d = *d;
	tmp.var = raw + CFS_INODE_FIXED;
	if (ext_walk(fs, &tmp, quick_claim_cb, &q, &sk) != 0 || q.bad || sk.leftovers ||
	    sk.nmisplaced)
		return -1;
	if (d->xattr_len || xb) {
		if (d->xattr_len > fs->varsz - xattr_floor(fs, &tmp) ||
		    (xb && (xb < fs->sb.data_start || xb >= fs->sb.chunk_blocks ||
			    bget(x->bbits, xb))) ||
		    !xattrs_readable(fs, &tmp))
			return -1;
		if (xb) {
			bset(x->bbits, xb);
			q.owned++;
		}
	}
	if (q.owned != d->nblocks ||
	    ((d->flags & CFS_IFL_INLINE) && d->size > file_inline_max(fs, &tmp)))
		return -1;
	count_inode(x, l, d);
	return 0;
}

/* Back to the state before any block was claimed, for the full pass. */
static void quick_undo(struct chunk_check *x)
{
	uint64_t b;

	memset(x->bbits, 0, (x->fs->sb.chunk_blocks + 7) / 8);
	for (b = 0; b < x->fs->sb.data_start; b++)
		bset(x->bbits, b);
	memset(x->dirbad, 0, x->ipc);
	x->ndirs = x->nconts = x->nstubs = 0;
}

void step_a(struct chunk_check *x)
{
	struct cfs_fs *fs = x->fs;
	uint64_t limit = itable_limit(x), b;
	struct buf *tb = NULL;
	struct cfs_dinode d;
	uint32_t l;
	int quick = 1;

	if (fs->chunks[x->c].hdr_bad) {
		reach_ino(x->k, 0);
		pr_fix(x, PR_CHUNK_HEADER, &(struct pctx){ 0 });
	}
	icl_check(x);
	for (b = 0; b < fs->sb.data_start; b++)
		bset(x->bbits, b);
	for (l = ck_next(x, 1); l <= x->ipc; l = ck_next(x, l + 1)) {
		uint8_t *raw;

		itable_ahead(x, l, limit);
		raw = itable_slot(x, l, &tb);
		if (!raw) {
			reach_ino(x->k, 0);
			pr_fix(x, PR_INODE_UNREADABLE,
			       &(struct pctx){ .ino = CFS_INO_MAKE(x->c, l) });
		} else if (scan_inode_slot(x, l, raw, tb, &d) && quick &&
			 quick_scan(x, l, raw, &d) < 0)
			quick = 0;
	}
	buf_put(&fs->cache, tb);
	if (quick) {
		for (l = ck_next(x, 1); l <= x->ipc; l = ck_next(x, l + 1))
			if (x->kind[l - 1] != K_FREE)
				bset(x->ibits, l - 1);
	} else {
		quick_undo(x);
		icl_reclaim(x);
		find_losers(x, limit);
		for (l = ck_next(x, 1); l <= x->ipc; l = ck_next(x, l + 1)) {
			itable_ahead(x, l, limit);
			if (x->kind[l - 1] != K_FREE)
				scan_inode_blocks(x, l);
		}
	}
	dir_prefetch_flush(x);
	icl_claim_rest(x);
	sync_bitmaps(x);
}

/* fsck: check and repair the chunks that need it, in parallel.
 *
 * Each chunk is checked by itself in two steps, like e2fsck's passes:
 *  A. inodes, block maps, bitmaps and header counts (only this chunk);
 *  B. continuations, directory entries, back-reference stubs and link
 *     counts; a reference to another chunk is verified by reading just the
 *     partner inode (or, for a stub, one lookup in its directory).
 * Every chunk's step A ends before any step B starts, so step B sees sound
 * allocation maps everywhere.  Unreferenced inodes are reconnected to
 * /lost+found at the end, serially.  A directory that lost entries may
 * have left stubs behind in chunks that were not checked: then every
 * chunk is checked ("escalation"). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bdev.h"
#include "fsint.h"

#define K_FREE 0
#define K_HEAD 1
#define K_CONT 2
#define K_STUB 3

struct fk {
	struct cfs_fs *fs;
	const struct cfs_fsck_opts *o;
	struct cfs_fsck_result *r;
	pthread_mutex_t lock;
	uint8_t *sel;           /* chunks to check */
	uint8_t *done_a;        /* step A done */
	uint32_t next, ndone, ntotal;
	int step;
	uint8_t *esc_from;      /* chunks whose directories lost remote entries */
	cfs_ino_t *orphans;     /* to reconnect to lost+found */
	size_t norphans;
	uint64_t *chunk_unfixed;
	uint32_t held_max;      /* step B: inodes each worker may hold */
};

struct ck {
	struct fk *k;
	struct cfs_fs *fs;
	uint32_t c, ipc;
	uint8_t *kind, *isdir, *dirbad, *loser;
	uint32_t *refs, *subdirs;
	uint8_t *bbits, *ibits;
	uint32_t nconts, nstubs, ndirs;
	/* step B: inodes in use, loaded once for all its passes (or NULL) */
	struct inode **held;
	uint32_t *used, nused;          /* step B: the slots in use, in order */
};

/* Record a problem; returns 1 if it is to be fixed now. */
static int problem(struct ck *x, int safe, const char *fmt, ...)
{
	struct fk *k = x->k;
	int fix = k->o->mode == CFS_FSCK_YES || (k->o->mode == CFS_FSCK_PREEN && safe);
	char msg[600];

	/* Preen stops changing a chunk once it holds a problem for a person:
	 * later "safe" fixes would act on what that person has to judge. */
	pthread_mutex_lock(&k->lock);
	if (k->o->mode == CFS_FSCK_PREEN && k->chunk_unfixed[x->c])
		fix = 0;
	pthread_mutex_unlock(&k->lock);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg) - 40, fmt, ap);
	va_end(ap);
	strcat(msg, fix ? " (fixed)" : k->o->mode == CFS_FSCK_NO ? " (not fixed: -n)" :
		   " (not fixed: needs a person)");
	pthread_mutex_lock(&k->lock);
	k->r->problems++;
	if (fix)
		k->r->fixed++;
	else {
		k->r->unfixed++;
		k->chunk_unfixed[x->c]++;
	}
	if (k->o->report)
		k->o->report(k->o->ctx, msg);
	pthread_mutex_unlock(&k->lock);
	return fix;
}

static void bset(uint8_t *b, uint64_t i)
{
	b[i >> 3] |= (uint8_t)(1u << (i & 7));
}

static int bget(const uint8_t *b, uint64_t i)
{
	return (b[i >> 3] >> (i & 7)) & 1;
}

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

static int dinode_plausible(struct cfs_fs *fs, const struct cfs_dinode *d)
{
	if (!type_ok(d->mode) || (d->flags & ~0xFu) ||
	    ((d->flags & CFS_IFL_CONT) && (d->flags & CFS_IFL_STUB)) ||
	    ((d->flags & CFS_IFL_INLINE) && (d->flags & CFS_IFL_EXTENTS)) ||
	    d->xattr_len > fs->varsz)
		return 0;
	/* exactly what inode_read accepts, so a kept inode can be loaded */
	if (d->size > (uint64_t)INT64_MAX ||
	    ((d->flags & CFS_IFL_INLINE) && d->size > fs->varsz - d->xattr_len))
		return 0;
	return 1;
}

/* ---- step A: inodes ---- */

/* A slot with mode 0 must be a free inode as FORMAT.md 10.2 has it: every
 * field zero but the generation (the library refuses to load, and so to
 * allocate, anything else).  Rewritten as one, keeping the generation. */
static void free_slot_check(struct ck *x, cfs_ino_t ino, uint8_t *raw,
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
	    problem(x, 1, "chunk %u: inode %u: free inode with stale fields, cleared", x->c,
		    ino)) {
		memcpy(raw, want, fs->isz);
		buf_dirty(&fs->cache, b);
	}
	free(want);
}

static void scan_inode_slot(struct ck *x, uint32_t l)
{
	struct cfs_fs *fs = x->fs;
	cfs_ino_t ino = CFS_INO_MAKE(x->c, l);
	struct cfs_dinode d;
	struct buf *b;
	uint32_t off;
	uint8_t *raw;

	if (cache_get(&fs->cache, inode_location(fs, ino, &off), 0, &b) < 0) {
		problem(x, 0, "chunk %u: inode %u unreadable", x->c, ino);
		return;
	}
	raw = b->data + off;
	if (cfs_dinode_is_zero(raw, fs->isz))
		goto out;
	cfs_dinode_decode(raw, &d);
	if (!cfs_dinode_csum_ok(raw, fs->isz, fs->seed, ino)) {
		int ok = d.mode && dinode_plausible(fs, &d);

		if (!problem(x, 0, "chunk %u: inode %u: checksum mismatch, %s", x->c, ino,
			     ok ? "contents plausible: checksum recomputed" : "cleared")) {
			bset(x->ibits, l - 1);   /* left for a person: keep it */
			goto out;
		}
		if (ok)
			cfs_dinode_csum_set(raw, fs->isz, fs->seed, ino);
		else
			memset(raw, 0, fs->isz);
		if (buf_dirty(&fs->cache, b) < 0 || !ok)
			goto out;
	} else if (d.mode && !dinode_plausible(fs, &d)) {
		if (problem(x, 0, "chunk %u: inode %u: invalid mode/flags 0%o/0x%x, cleared",
			    x->c, ino, d.mode, d.flags)) {
			memset(raw, 0, fs->isz);
			buf_dirty(&fs->cache, b);
		} else {
			bset(x->ibits, l - 1);
		}
		goto out;
	}
	if (!d.mode) {
		free_slot_check(x, ino, raw, &d, b);
		goto out;
	}
	if ((d.flags & CFS_IFL_STUB) && d.head == ino &&
	    problem(x, 1, "chunk %u: inode %u: stub flag on a head inode, cleared", x->c, ino)) {
		/* a stub names another inode: one naming itself is a file or
		 * directory that got the flag, with its data and names intact */
		d.flags &= (uint16_t)~CFS_IFL_STUB;
		cfs_dinode_encode(&d, raw);
		cfs_dinode_csum_set(raw, fs->isz, fs->seed, ino);
		buf_dirty(&fs->cache, b);
	}
	x->kind[l - 1] = (d.flags & CFS_IFL_CONT) ? K_CONT :
			 (d.flags & CFS_IFL_STUB) ? K_STUB : K_HEAD;
	x->isdir[l - 1] = S_ISDIR(d.mode);
out:
	buf_put(&fs->cache, b);
}

struct claims {
	struct ck *x;
	uint32_t *blk, *len;
	size_t n, cap;
	int bad;
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
	if (cl->n == cl->cap) {
		size_t nc = cl->cap ? cl->cap * 2 : 64;
		uint32_t *a = realloc(cl->blk, nc * 4), *b;

		if (!a) {
			bunset_run(cl->x->bbits, start, n);
			cl->bad = 3;
			return 1;
		}
		cl->blk = a;
		b = realloc(cl->len, nc * 4);
		if (!b) {
			bunset_run(cl->x->bbits, start, n);
			cl->bad = 3;
			return 1;
		}
		cl->len = b;
		cl->cap = nc;
	}
	cl->blk[cl->n] = start;
	cl->len[cl->n++] = n;
	return 0;
}

struct overlap {
	struct ck *x;
	uint32_t *owner;        /* per block: local inode number + 0 */
	uint32_t l;
	uint64_t *pairs;        /* (first owner << 32) | later claimant */
	size_t n, cap;
};

static int overlap_cb(void *vc, const struct extent *e, int is_node, uint32_t node)
{
	struct overlap *o = vc;
	uint64_t start = is_node ? node : e->pblk, n = is_node ? 1 : e->len, b;

	if (start < o->x->fs->sb.data_start || start + n > o->x->fs->sb.chunk_blocks)
		return 1;   /* a map out of range is dropped anyway */
	for (b = start; b < start + n; b++) {
		uint32_t w = o->owner[b];

		if (!w) {
			o->owner[b] = o->l;
		} else if (w != o->l && (!o->n || o->pairs[o->n - 1] !=
					 ((uint64_t)w << 32 | o->l))) {
			if (o->n == o->cap) {
				size_t nc = o->cap ? o->cap * 2 : 16;
				uint64_t *np = realloc(o->pairs, nc * sizeof(*np));

				if (!np)
					return 1;
				o->pairs = np;
				o->cap = nc;
			}
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

static void itable_read_ahead(struct ck *x, uint32_t l, uint64_t limit)
{
	uint64_t left;
	uint32_t off;

	if (l > limit)
		return;
	left = (limit - 1) / x->fs->ipb - (l - 1) / x->fs->ipb + 1;
	cache_readahead(&x->fs->cache, inode_location(x->fs, CFS_INO_MAKE(x->c, l), &off),
			left < FSCK_RA ? (uint32_t)left : FSCK_RA);
}

static void itable_ahead(struct ck *x, uint32_t l, uint64_t limit)
{
	if ((l - 1) % ((uint64_t)x->fs->ipb * FSCK_RA) == 0)
		itable_read_ahead(x, l, limit);
}

/* Inode slot l's bytes in the inode table, or NULL if unreadable.  The
 * table block stays held in *b across calls, so a pass over the slots
 * gets each block once; the caller puts *b at the end. */
static uint8_t *itable_slot(struct ck *x, uint32_t l, struct buf **b)
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
static int raw_view(struct ck *x, uint32_t l, struct buf **b, struct inode *tmp)
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
static void find_losers(struct ck *x, uint64_t limit)
{
	struct overlap o = { x, calloc(x->fs->sb.chunk_blocks, 4), 0, NULL, 0, 0 };
	uint32_t *deg = calloc(x->ipc, 4);
	struct buf *b = NULL;
	size_t i, m = 0;

	for (o.l = 1; o.owner && deg && o.l <= x->ipc && o.l <= limit; o.l++) {
		struct inode tmp;

		itable_ahead(x, o.l, limit);
		if (x->kind[o.l - 1] != K_FREE && raw_view(x, o.l, &b, &tmp) == 0)
			ext_walk(x->fs, &tmp, overlap_cb, &o);
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

/* Claim the inode's blocks in the truth map, or drop a map that points
 * outside the chunk, overlaps another inode's blocks or cannot be read. */
static uint64_t scan_block_map(struct ck *x, struct inode *ip, int *changed)
{
	struct claims cl = { x, NULL, NULL, 0, 0, 0 };
	uint64_t total = 0;
	size_t i;
	int ret = 0;

	if (x->loser[CFS_INO_LOCAL(ip->ino) - 1])
		cl.bad = 2;
	else
		ret = ext_walk(x->fs, ip, claim_cb, &cl);
	if (ret < 0 || cl.bad) {
		for (i = 0; i < cl.n; i++)
			bunset_run(x->bbits, cl.blk[i], cl.len[i]);
		if (problem(x, 1, "chunk %u: inode %u: block map %s, dropped", x->c, ip->ino,
			    cl.bad == 2 ? "shares blocks with another inode" :
			    cl.bad == 4 ? "maps a block twice" :
			    cl.bad == 1 ? "points outside the chunk" : "unreadable")) {
			ext_init_root(x->fs, ip);
			*changed = 1;
		}
		goto out;
	}
	for (i = 0; i < cl.n; i++)
		total += cl.len[i];
	/* step B will read every directory block: start those reads now, into
	 * the page cache (not our memory), long before they are needed */
	if (S_ISDIR(ip->d.mode))
		for (i = 0; i < cl.n; i++)
			cfs_bdev_prefetch(x->fs->bd, chunk_base(x->fs, x->c) + cl.blk[i],
					  cl.len[i]);
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

static uint64_t scan_xattrs(struct ck *x, struct inode *ip, int *changed)
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
	if (problem(x, 0, "chunk %u: inode %u: %s corrupt, dropped", x->c, ip->ino,
		    ok ? "extended attribute block" : "extended attributes")) {
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

static void clear_raw(struct ck *x, cfs_ino_t ino)
{
	struct buf *b;
	uint32_t off;

	if (cache_get(&x->fs->cache, inode_location(x->fs, ino, &off), 0, &b) < 0)
		return;
	memset(b->data + off, 0, x->fs->isz);
	buf_dirty(&x->fs->cache, b);
	buf_put(&x->fs->cache, b);
}

static void scan_inode_blocks(struct ck *x, uint32_t l)
{
	struct cfs_fs *fs = x->fs;
	cfs_ino_t ino = CFS_INO_MAKE(x->c, l);
	struct inode *ip;
	uint64_t owned;
	int changed = 0;

	if (inode_get(fs, ino, &ip) < 0) {
		if (problem(x, 0, "chunk %u: inode %u: cannot be loaded, cleared", x->c, ino))
			clear_raw(x, ino);
		else
			bset(x->ibits, l - 1);   /* left as it is: still allocated */
		x->kind[l - 1] = K_FREE;
		return;
	}
	bset(x->ibits, l - 1);
	owned = scan_block_map(x, ip, &changed) + scan_xattrs(x, ip, &changed);
	if (owned != ip->d.nblocks &&
	    problem(x, 1, "chunk %u: inode %u: owns %llu blocks, records %llu", x->c, ino,
		    (unsigned long long)owned, (unsigned long long)ip->d.nblocks)) {
		ip->d.nblocks = owned;
		changed = 1;
	}
	if ((ip->d.flags & CFS_IFL_INLINE) && ip->d.size > file_inline_max(fs, ip) &&
	    problem(x, 0, "chunk %u: inode %u: inline size %llu too large, truncated", x->c,
		    ino, (unsigned long long)ip->d.size)) {
		ip->d.size = file_inline_max(fs, ip);
		changed = 1;
	}
	if (x->kind[l - 1] == K_HEAD && x->isdir[l - 1]) {
		x->ndirs++;
		if (!(ip->d.flags & CFS_IFL_EXTENTS) || ip->d.size < fs->bsize)
			x->dirbad[l - 1] = 1;
	}
	x->nconts += x->kind[l - 1] == K_CONT;
	x->nstubs += x->kind[l - 1] == K_STUB;
	if (changed)
		inode_write(fs, ip);
	inode_put(fs, ip);
}

static void sync_bitmaps(struct ck *x)
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
			problem(x, 0, "chunk %u: %s bitmap unreadable", x->c, w ? "inode" : "block");
			continue;
		}
		if (diffs && problem(x, 1, "chunk %u: %s bitmap differs in %llu places", x->c,
				     w ? "inode" : "block", (unsigned long long)diffs))
			chunk_bitmap_sync(fs, x->c, w, truth, 1, &diffs, &nfree);
		else if (!diffs && *hfree != nfree &&
			 problem(x, 1, "chunk %u: free %s count %u, should be %llu", x->c,
				 w ? "inode" : "block", *hfree, (unsigned long long)nfree)) {
			pthread_mutex_lock(&ch->lock);
			*hfree = (uint32_t)nfree;
			ch->hdr_dirty = 1;
			pthread_mutex_unlock(&ch->lock);
		}
	}
	if ((ch->hdr.nconts != x->nconts || ch->hdr.nstubs != x->nstubs ||
	     ch->hdr.ndirs != x->ndirs) &&
	    problem(x, 1, "chunk %u: header counts continuations/stubs/dirs %u/%u/%u, "
		    "should be %u/%u/%u", x->c, ch->hdr.nconts, ch->hdr.nstubs, ch->hdr.ndirs,
		    x->nconts, x->nstubs, x->ndirs)) {
		pthread_mutex_lock(&ch->lock);
		ch->hdr.nconts = x->nconts;
		ch->hdr.nstubs = x->nstubs;
		ch->hdr.ndirs = x->ndirs;
		ch->hdr_dirty = 1;
		pthread_mutex_unlock(&ch->lock);
	}
}

static void step_a(struct ck *x)
{
	struct cfs_fs *fs = x->fs;
	uint64_t limit = (uint64_t)fs->chunks[x->c].hdr.itable_init * fs->ipb, b;
	uint32_t l;

	if (fs->chunks[x->c].hdr_bad)
		problem(x, 0, "chunk %u: chunk header destroyed, rebuilt from contents", x->c);
	for (l = 1; l <= x->ipc && l <= limit; l++) {
		itable_ahead(x, l, limit);
		scan_inode_slot(x, l);
	}
	for (b = 0; b < fs->sb.data_start; b++)
		bset(x->bbits, b);
	find_losers(x, limit);
	for (l = 1; l <= x->ipc && l <= limit; l++) {
		itable_ahead(x, l, limit);
		if (x->kind[l - 1] != K_FREE)
			scan_inode_blocks(x, l);
	}
	sync_bitmaps(x);
}

/* ---- step B: references ---- */

static int is_head(struct inode *ip)
{
	return ip->d.mode && !ip->deleted && !(ip->d.flags & (CFS_IFL_CONT | CFS_IFL_STUB));
}

static cfs_ino_t find_pred(struct cfs_fs *fs, cfs_ino_t head, cfs_ino_t ci);

/* Forward pointers of inode l: each must name a continuation of the same
 * file whose back pointer names us (one partner read). */
static void check_cont_slots(struct ck *x, struct inode *ip)
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
		(void)head;
		inode_put(x->fs, ci);
		if (!ok && problem(x, 1, "chunk %u: inode %u: continuation pointer %u invalid, "
				   "cleared", x->c, ip->ino, n)) {
			ip->d.cont[s] = 0;
			changed = 1;
		}
	}
	if (changed) {
		file_chain_release(x->fs, ip);
		inode_write(x->fs, ip);
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

static int cont_release(struct cfs_fs *fs, struct inode *ci)
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
static void check_cont(struct ck *x, struct inode *ci)
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
		    problem(x, 1, "chunk %u: continuation %u names head %u, its chain "
			    "belongs to %u", x->c, ci->ino, ci->d.head, head)) {
			ci->d.head = head;
			inode_write(fs, ci);
		}
		return;
	}
	pred = ino_valid(fs, ci->d.head) ? find_pred(fs, ci->d.head, ci->ino) : 0;
	if (pred) {
		if (problem(x, 1, "chunk %u: continuation %u: back pointer %u, should be %u",
			    x->c, ci->ino, ci->d.back, pred)) {
			ci->d.back = pred;
			inode_write(fs, ci);
		}
		return;
	}
	if (ino_valid(fs, ci->d.head) && inode_get(fs, ci->d.head, &h) == 0 && is_head(h)) {
		pthread_mutex_lock(&h->lock);
		for (s = 0; s < CFS_NCONT && h->d.cont[s]; s++)
			;
		if (s < CFS_NCONT && problem(x, 1, "chunk %u: continuation %u detached from "
					     "file %u, re-attached", x->c, ci->ino, h->ino)) {
			h->d.cont[s] = ci->ino;
			ci->d.back = h->ino;
			file_chain_release(fs, h);
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
	if (problem(x, 1, "chunk %u: continuation %u of dead or full file %u, freed", x->c,
		    ci->ino, ci->d.head))
		cont_release(fs, ci);
}

struct dscan {
	struct ck *x;
	struct inode *dp;
	struct dirent_rec *ok;
	size_t nok, cap;
	uint64_t seen, remote_ok, remote_bad;
	int bad, oom, unfixed;
	int salvaging, disorder;        /* reading leaves by block; index inconsistent */
};

static int entry_target_ok(struct ck *x, struct inode *dp, const struct dirent_rec *r)
{
	struct cfs_fs *fs = x->fs;
	struct inode *t = NULL, *s = NULL;
	int ok;

	if (!ino_valid(fs, r->ino) || r->ino == fs->sb.root_ino)
		return 0;
	if (CFS_INO_CHUNK(r->ino) == x->c) {
		uint32_t l = CFS_INO_LOCAL(r->ino) - 1;

		if (x->kind[l] != K_HEAD || r->stub)
			return 0;
		if (x->isdir[l] && x->refs[l])
			return 0;   /* a second name for a directory */
		if (inode_get(fs, r->ino, &t) < 0)
			return 0;
		ok = ((t->d.mode & S_IFMT) >> 12) == r->type;
		inode_put(fs, t);
		return ok;
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
	struct ck *x = d->x;
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
		d->remote_bad += r->stub || CFS_INO_CHUNK(r->ino) != x->c;
		if (!problem(x, 1, "chunk %u: dir %u: entry '%.*s' -> %u invalid, removed", x->c,
			     d->dp->ino, (int)r->namelen, r->name, r->ino))
			d->unfixed = 1;
		return 0;
	}
	if (d->nok == d->cap) {
		size_t nc = d->cap ? d->cap * 2 : 64;
		struct dirent_rec *n = realloc(d->ok, nc * sizeof(*n));

		if (!n) {
			d->oom = 1;
			return 1;
		}
		d->ok = n;
		d->cap = nc;
	}
	d->ok[d->nok++] = *r;
	d->remote_ok += r->stub != 0;
	if (CFS_INO_CHUNK(r->ino) == x->c)
		x->refs[CFS_INO_LOCAL(r->ino) - 1]++;
	return 0;
}

static void fix_parent(struct ck *x, cfs_ino_t child, cfs_ino_t parent)
{
	struct inode *t;

	if (inode_get(x->fs, child, &t) < 0)
		return;
	if (t->d.back != parent &&
	    problem(x, 1, "chunk %u: dir %u: parent pointer %u, should be %u", x->c, child,
		    t->d.back, parent)) {
		t->d.back = parent;
		inode_write(x->fs, t);
	}
	inode_put(x->fs, t);
}

static void check_dir(struct ck *x, struct inode *dp)
{
	struct dscan d = { x, dp, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	uint32_t l = CFS_INO_LOCAL(dp->ino) - 1;
	size_t i;
	int ret = -1;

	pthread_mutex_lock(&dp->lock);
	if (!x->dirbad[l])
		ret = dir_iterate(x->fs, dp, 0, dscan_entry, &d);
	if (ret == 0 && d.disorder)
		ret = -EUCLEAN;
	if (ret < 0) {
		problem(x, 0, "chunk %u: dir %u: index damaged, rebuilt from its leaves", x->c,
			dp->ino);
		for (i = 0; i < d.nok; i++)
			if (CFS_INO_CHUNK(d.ok[i].ino) == x->c)
				x->refs[CFS_INO_LOCAL(d.ok[i].ino) - 1]--;
		d.nok = 0;
		d.remote_ok = d.remote_bad = 0;
		d.bad = 1;
		d.unfixed = 0;   /* the leaves' entries are judged again */
		d.salvaging = 1;
		if (dp->d.flags & CFS_IFL_EXTENTS)
			dir_salvage(x->fs, dp, dscan_entry, &d);
	}
	/* Entries lost or dropped that named other chunks may have left a
	 * stub behind in a chunk that is not being checked: check them all.
	 * Lost local entries need nothing more: their inodes are here. */
	if (d.remote_bad || d.remote_ok < dp->d.hi)
		x->k->esc_from[x->c] = 1;
	if (!d.bad && (d.nok != dp->d.lo || d.remote_ok != dp->d.hi) &&
	    problem(x, 1, "chunk %u: dir %u: records %llu entries (%llu remote), has %zu "
		    "(%llu)", x->c, dp->ino, (unsigned long long)dp->d.lo,
		    (unsigned long long)dp->d.hi, d.nok, (unsigned long long)d.remote_ok)) {
		dp->d.lo = d.nok;
		dp->d.hi = d.remote_ok;
		inode_write(x->fs, dp);
	}
	/* a removal reported as not fixed must not happen anyway */
	if (d.bad && !d.unfixed && x->k->o->mode != CFS_FSCK_NO &&
	    !(x->k->o->mode == CFS_FSCK_PREEN && ret < 0))
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
	int found;
};

static int stub_find_cb(void *vc, const struct dirent_rec *r)
{
	struct stub_find *f = vc;

	if (r->hash != f->hash)
		return 1;
	if (r->ino != f->ino || r->stub != f->stub)
		return 0;
	f->r = *r;
	f->found = 1;
	return 1;
}

/* The entry stub s backs, judged by the rules check_dir() applies to it in
 * the directory's chunk: whichever of the two chunks is checked first, an
 * entry that one removes is not counted by the other. */
static int stub_entry_ok(struct ck *x, struct inode *s, struct inode *dp)
{
	struct stub_find f = { s->d.head, s->ino, s->d.lo, { 0 }, 0 };
	struct inode *t;
	int ok;

	pthread_mutex_lock(&dp->lock);
	ok = dir_iterate(x->fs, dp, s->d.lo, stub_find_cb, &f) == 0 && f.found;
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
static void check_stub(struct ck *x, struct inode *s)
{
	struct cfs_fs *fs = x->fs;
	struct inode *dp = NULL;
	int ok = CFS_INO_CHUNK(s->d.head) == x->c && ino_valid(fs, s->d.head) &&
		 x->kind[CFS_INO_LOCAL(s->d.head) - 1] == K_HEAD;

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
	if (problem(x, 1, "chunk %u: stub %u backs no directory entry, freed", x->c, s->ino))
		stub_release(fs, s);
}

static void add_orphan(struct ck *x, cfs_ino_t ino)
{
	struct fk *k = x->k;
	cfs_ino_t *n;

	pthread_mutex_lock(&k->lock);
	n = realloc(k->orphans, (k->norphans + 1) * sizeof(*n));
	if (n) {
		k->orphans = n;
		k->orphans[k->norphans++] = ino;
	}
	pthread_mutex_unlock(&k->lock);
}

static void check_links(struct ck *x, struct inode *ip)
{
	struct cfs_fs *fs = x->fs;
	uint32_t l = CFS_INO_LOCAL(ip->ino) - 1, want;
	int root = ip->ino == fs->sb.root_ino;

	if (!root && x->refs[l] == 0) {
		if (ip->d.nlink == 0 && !x->isdir[l]) {
			if (problem(x, 1, "chunk %u: inode %u was deleted while open, released",
				    x->c, ip->ino) && file_release_all(fs, ip) == 0 &&
			    xattr_release(fs, ip) == 0)
				inode_free(fs, ip);
			return;
		}
		if (ip->ino == fs->sb.lpf_ino && x->isdir[l] ?
		    problem(x, 1, "chunk %u: lost+found (inode %u) is in no directory, "
			    "named in / again", x->c, ip->ino) :
		    problem(x, 1, "chunk %u: inode %u is in no directory, moved to "
			    "/lost+found", x->c, ip->ino)) {
			if (x->isdir[l] && ip->d.nlink != 2 + x->subdirs[l]) {
				ip->d.nlink = 2 + x->subdirs[l];
				inode_write(fs, ip);
			}
			add_orphan(x, ip->ino);
		}
		return;
	}
	if (x->isdir[l] && x->refs[l] > 1)
		problem(x, 0, "chunk %u: dir %u has %u names", x->c, ip->ino, x->refs[l]);
	want = x->isdir[l] ? 2 + x->subdirs[l] : x->refs[l];
	if (ip->d.nlink != want &&
	    problem(x, 1, "chunk %u: inode %u: link count %u, should be %u", x->c, ip->ino,
		    ip->d.nlink, want)) {
		ip->d.nlink = want;
		inode_write(fs, ip);
	}
}

static void each_inode(struct ck *x, int kind, int dirs_only,
		       void (*fn)(struct ck *x, struct inode *ip))
{
	uint64_t limit = (uint64_t)x->fs->chunks[x->c].hdr.itable_init * x->fs->ipb;
	uint32_t i, l;

	for (i = 0; i < x->nused; i++) {
		struct inode *ip;

		l = x->used[i];
		if (x->kind[l - 1] != kind || (dirs_only && !x->isdir[l - 1]))
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

static void slots_of(struct ck *x, struct inode *ip)
{
	check_cont_slots(x, ip);
}

static void step_b(struct ck *x)
{
	each_inode(x, K_HEAD, 0, slots_of);
	each_inode(x, K_CONT, 0, slots_of);
	each_inode(x, K_CONT, 0, check_cont);
	each_inode(x, K_HEAD, 1, check_dir);
	each_inode(x, K_STUB, 0, check_stub);
	each_inode(x, K_HEAD, 0, check_links);
}

/* ---- driver ---- */

static int ck_init(struct ck *x, struct fk *k, uint32_t c)
{
	struct cfs_fs *fs = k->fs;
	uint32_t ipc = fs->sb.inodes_per_chunk;

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

static void ck_free(struct ck *x)
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

/* Step B starts from the inodes as step A left them.  Free slots are
 * told apart in the inode table itself; the others are loaded once and
 * held until the chunk's step B is over, for all of its passes: up to
 * k->held_max of them, so that memory stays bounded; the rest are loaded
 * again by each pass.  All workers together hold at most FSCK_HELD_TOTAL
 * (about 370 KiB): a check of one dirty chunk may hold that many. */
#define FSCK_HELD_TOTAL 1024

static void load_kinds(struct ck *x)
{
	struct cfs_fs *fs = x->fs;
	uint64_t limit = (uint64_t)fs->chunks[x->c].hdr.itable_init * fs->ipb;
	uint32_t l, nheld = 0;
	struct buf *b = NULL;

	for (l = 1; l <= x->ipc && l <= limit; l++) {
		struct inode *ip;
		uint8_t *raw;

		itable_ahead(x, l, limit);
		raw = itable_slot(x, l, &b);
		if (raw && cfs_dinode_is_zero(raw, fs->isz))
			continue;
		if (inode_get(fs, CFS_INO_MAKE(x->c, l), &ip) < 0)
			continue;
		if (!ip->d.mode || ip->deleted) {
			inode_put(fs, ip);
			continue;
		}
		x->kind[l - 1] = (ip->d.flags & CFS_IFL_CONT) ? K_CONT :
				 (ip->d.flags & CFS_IFL_STUB) ? K_STUB : K_HEAD;
		x->isdir[l - 1] = S_ISDIR(ip->d.mode);
		x->dirbad[l - 1] = x->isdir[l - 1] &&
				   (!(ip->d.flags & CFS_IFL_EXTENTS) || ip->d.size < fs->bsize);
		x->used[x->nused++] = l;
		if (nheld < x->k->held_max) {
			x->held[l - 1] = ip;
			nheld++;
		} else {
			inode_put(fs, ip);
		}
	}
	buf_put(&fs->cache, b);
}

static void check_one(struct fk *k, uint32_t c)
{
	struct ck x;
	uint32_t l;

	if (ck_init(&x, k, c) < 0) {
		problem(&x, 0, "chunk %u: out of memory", c);
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
		load_kinds(&x);
		step_b(&x);
	}
	ck_free(&x);
}

static uint32_t next_selected(struct fk *k, uint32_t c)
{
	while (c < k->fs->sb.nchunks && !k->sel[c])
		c++;
	return c;
}

static void *worker(void *vk)
{
	struct fk *k = vk;

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

static void run_step(struct fk *k, int step, int nthreads)
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

static void run_checks(struct fk *k, int nthreads)
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

/* A fix reported as made that could not be made after all. */
static void fix_failed(struct fk *k, uint32_t c, const char *msg)
{
	pthread_mutex_lock(&k->lock);
	if (k->o->report)
		k->o->report(k->o->ctx, msg);
	k->r->unfixed++;
	k->r->fixed--;
	k->chunk_unfixed[c]++;
	pthread_mutex_unlock(&k->lock);
}

static void reconnect_one(struct fk *k, cfs_ino_t ino, int hold)
{
	int ret = namei_reconnect(k->fs, ino, hold);
	char msg[160];

	if (ret == -ENOSPC && hold)
		ret = namei_reconnect(k->fs, ino, 0);
	if (ret == -ENOSPC)
		snprintf(msg, sizeof(msg), "inode %u: cannot reconnect to /lost+found: chunk %u "
			 "has no free inode for the stub its entry needs", ino, CFS_INO_CHUNK(ino));
	else if (ret < 0)
		snprintf(msg, sizeof(msg), "inode %u: cannot reconnect to /lost+found: %s",
			 ino, strerror(-ret));
	if (ret < 0)
		fix_failed(k, CFS_INO_CHUNK(ino), msg);
}

/* The reserved lost+found first, so that it goes back into the root under
 * its own name instead of a new one being made. */
static void reconnect_lpf(struct fk *k)
{
	size_t i;

	for (i = 0; i < k->norphans; i++)
		if (k->orphans[i] == k->fs->sb.lpf_ino)
			reconnect_one(k, k->orphans[i], 0);
}

/* Each orphan's entry in lost+found needs a stub in the orphan's chunk.
 * The orphans of a chunk with fewer free inodes than that go into a
 * directory of their own chunk inside lost+found instead, which needs two
 * inodes there once. */
static void reconnect_others(struct fk *k)
{
	uint32_t n = k->fs->sb.nchunks, c;
	uint32_t *count = calloc(n, sizeof(*count));
	size_t i;

	for (i = 0; count && i < k->norphans; i++)
		if (k->orphans[i] != k->fs->sb.lpf_ino)
			count[CFS_INO_CHUNK(k->orphans[i])]++;
	/* decided once per chunk, before any stub or holder takes an inode */
	for (c = 0; count && c < n; c++) {
		struct chunk *ch = &k->fs->chunks[c];

		pthread_mutex_lock(&ch->lock);
		count[c] = ch->hdr.free_inodes < count[c];
		pthread_mutex_unlock(&ch->lock);
	}
	for (i = 0; i < k->norphans; i++)
		if (k->orphans[i] != k->fs->sb.lpf_ino)
			reconnect_one(k, k->orphans[i],
				      count && count[CFS_INO_CHUNK(k->orphans[i])]);
	free(count);
}

static int is_root_dir(struct inode *ip)
{
	return is_head(ip) && S_ISDIR(ip->d.mode);
}

/* A root that step A cleared named top-level directories and files in
 * other chunks, whose stubs and inodes are left there: check them all. */
static int root_lost(struct cfs_fs *fs)
{
	struct inode *ip;
	int lost;

	if (inode_get(fs, fs->sb.root_ino, &ip) < 0)
		return 1;
	lost = !is_root_dir(ip);
	inode_put(fs, ip);
	return lost;
}

/* Preen holds back in a chunk left for a person (see problem()), so that
 * chunk's losses do not escalate either: other chunks' checks would act on
 * entries the person has yet to judge, and the next check escalates. */
static int held(struct fk *k, uint32_t c)
{
	return k->o->mode == CFS_FSCK_PREEN && k->chunk_unfixed[c];
}

static int want_escalation(struct fk *k, const uint8_t *checked)
{
	uint32_t c, rc = CFS_INO_CHUNK(k->fs->sb.root_ino);

	for (c = 0; c < k->fs->sb.nchunks; c++)
		if (k->esc_from[c] && !held(k, c))
			return 1;
	return checked[rc] && !held(k, rc) && root_lost(k->fs);
}

/* Free whatever an inode in the root's slot is, when it is not a directory
 * head: the root must be made again there. */
static int release_any(struct cfs_fs *fs, struct inode *ip)
{
	uint32_t c = CFS_INO_CHUNK(ip->ino);
	int ret;

	if (ip->d.flags & CFS_IFL_CONT)
		return cont_release(fs, ip);
	ret = file_release_all(fs, ip);
	if (ret == 0)
		ret = xattr_release(fs, ip);
	if (ret == 0)
		ret = inode_free(fs, ip);
	if (ret == 0 && (ip->d.flags & CFS_IFL_STUB))
		chunk_count(fs, c, CNT_STUBS, -1);
	return ret;
}

/* The root directory is made again (empty) when step A cleared it or its
 * slot holds something else; what it named is in the orphans by now. */
static void check_root(struct fk *k, struct ck *x0)
{
	struct cfs_fs *fs = k->fs;
	struct inode *ip = NULL;
	int inuse = 0, ret;
	char msg[128];

	if (inode_get(fs, fs->sb.root_ino, &ip) < 0)
		return;   /* unreadable: step A has reported it */
	inuse = ip->d.mode && !ip->deleted;
	if (is_root_dir(ip)) {
		inode_put(fs, ip);
		return;
	}
	if (!problem(x0, 0, inuse ? "root inode %u is not a directory, made again" :
		     "root directory (inode %u) is missing, made again", fs->sb.root_ino)) {
		inode_put(fs, ip);
		return;
	}
	ret = inuse ? release_any(fs, ip) : 0;
	inode_put(fs, ip);
	if (ret == 0)
		ret = namei_root_make(fs);
	if (ret < 0) {
		snprintf(msg, sizeof(msg), "root directory cannot be made again: %s",
			 strerror(-ret));
		fix_failed(k, CFS_INO_CHUNK(fs->sb.root_ino), msg);
	}
}

/* Checked chunks without problems left are clean again; the others carry
 * the error state so that the next check looks at them. */
static void finish_chunks(struct fk *k, const uint8_t *checked)
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
			ch->hdr_dirty = 1;
		} else {
			ch->disk_state &= ~(uint32_t)CFS_STATE_ERROR;
			ch->was_dirty = 0;
			ch->hdr.last_check = time(NULL);
			ch->hdr_bad = 0;
			ch->hdr_dirty = 1;
		}
		pthread_mutex_unlock(&ch->state_lock);
	}
}

#define FSCK_CACHE_BYTES (512u << 10)

static int cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

int cfs_fsck(struct cfs_fs *fs, const struct cfs_fsck_opts *o, struct cfs_fsck_result *r)
{
	uint32_t n = fs->sb.nchunks, c;
	double t0 = cfs_now_mono();
	int threads = o->threads > 0 ? o->threads : cpu_count(), ret = 0;
	size_t old_limit = 0;
	uint8_t *checked;
	struct fk k;
	struct ck x0;

	memset(r, 0, sizeof(*r));
	memset(&k, 0, sizeof(k));
	if (o->mode != CFS_FSCK_NO && fs->rdonly)
		return -EROFS;
	k.fs = fs;
	k.o = o;
	k.r = r;
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
	memset(&x0, 0, sizeof(x0));
	x0.k = &k;
	x0.fs = fs;
	if (fs->sb_from_backup &&
	    problem(&x0, 0, "primary superblock unusable, restored from the backup")) {
		ret = super_write_primary(fs);
		r->sb_restored = ret == 0;
		if (ret < 0)
			goto out;
	}
	for (c = 0; c < n; c++)
		k.sel[c] = o->force || fs->chunks[c].was_dirty || fs->chunks[c].hdr_bad;
	run_checks(&k, threads);
	for (c = 0; c < n; c++)
		checked[c] |= k.sel[c];
	if (want_escalation(&k, checked)) {
		for (c = 0; c < n; c++)
			k.sel[c] = !checked[c];
		for (c = 0; c < n && !k.sel[c]; c++)
			;
		if (c < n) {
			r->escalated = 1;
			run_checks(&k, threads);
			for (c = 0; c < n; c++)
				checked[c] |= k.sel[c];
		}
	}
	if (o->mode != CFS_FSCK_NO) {
		cfs_ino_t lpf;

		check_root(&k, &x0);
		reconnect_lpf(&k);
		if (cfs_lookup(fs, fs->sb.root_ino, "lost+found", &lpf) == -ENOENT &&
		    problem(&x0, 1, "/lost+found is missing, made again") &&
		    (ret = namei_lpf_ensure(fs)) < 0) {
			char msg[128];

			snprintf(msg, sizeof(msg), "/lost+found cannot be made: %s", strerror(-ret));
			fix_failed(&k, 0, msg);
		}
		ret = 0;
		reconnect_others(&k);
		finish_chunks(&k, checked);
	}
	for (c = 0; c < n; c++)
		r->checked += checked[c];
out:
	r->seconds = cfs_now_mono() - t0;
	if (old_limit)
		cache_set_limit(&fs->cache, old_limit);
	free(k.sel);
	free(checked);
	free(k.chunk_unfixed);
	free(k.esc_from);
	free(k.orphans);
	pthread_mutex_destroy(&k.lock);
	return ret;
}

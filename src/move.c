/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Moving a file's pieces between chunks: the engine under defrag,
 * evacuate and shrink (issue 28; docs/MOVE.md).
 *
 * A continuation's blocks are copied into another inode of the same
 * chain (the head, another continuation, or a new continuation in the
 * chunk wanted), the copy is made durable, and only then does the old
 * inode let its blocks go; a continuation left mapping nothing and with
 * no successors is freed, as a truncate frees one.  Continuations are
 * internal: no user-visible inode number changes.
 *
 * Write order of one move, so that a power cut at any write leaves every
 * file's bytes readable and an image fsck -p repairs alone:
 *   1. the copies, into blocks allocated in the target's chunk, written
 *      straight to the device (new blocks: nothing on disk names them);
 *   2. the target's extent map names them; a full flush (fs_write_all):
 *      the commit point.  From here two inodes of the chain map the same
 *      logical blocks with the same bytes: a lookup takes the first in
 *      chain order, whichever that is, and reads the right data;
 *   3. the source's mapping is removed and its blocks freed, then the
 *      emptied continuation is unlinked from its predecessor and freed
 *      (chain_prune's order: pointer cleared first, so a crash leaves at
 *      worst a detached continuation mapping nothing, which fsck frees or
 *      re-attaches).
 * A crash between 2 and 3 leaves the duplicate mapping, which no check
 * objects to and which reads correctly; the next move of the file drops
 * it first (shadow_drop), before anything could expose the shadowed copy.
 *
 * Directory blocks are tree nodes whose header names their own block
 * (FORMAT.md 7): each copy is verified at the old place and sealed for the
 * new one.
 *
 * Everything here runs with every operation excluded (op_lock held
 * exclusively), as resize does: the offline tools, and an online caller
 * only through the same exclusion (docs/MOVE.md says why the mount does
 * not do it yet). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bdev.h"
#include "fsint.h"

/* Blocks copied per device request. */
#define MOVE_RUN 256

struct ext_list {
	struct extent *e;
	size_t n, cap;
};

static int collect_cb(void *ctx, const struct extent *e, int is_node, uint32_t node_rel)
{
	struct ext_list *l = ctx;
	struct extent *ne;

	(void)node_rel;
	if (is_node)
		return 0;
	ne = array_room(l->e, &l->cap, l->n, sizeof(*l->e), 16);
	if (!ne)
		return -ENOMEM;
	l->e = ne;
	l->e[l->n++] = *e;
	return 0;
}

/* The data extents of ip, each checked (FORMAT.md 12). */
static int collect(struct cfs_fs *fs, struct inode *ip, struct ext_list *l)
{
	size_t i;
	int ret = ext_walk(fs, ip, collect_cb, l, NULL);

	for (i = 0; i < l->n && ret == 0; i++)
		if (ext_sane(fs, &l->e[i]) < 0)
			ret = chunk_corrupt(fs, CFS_INO_CHUNK(ip->ino), ip->ino, 0,
					    "impossible extent");
	return ret;
}

static uint64_t data_blocks(const struct ext_list *l)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < l->n; i++)
		n += l->e[i].len;
	return n;
}

/* Blocks a target's chunk must have free to take n data blocks in
 * extents: the blocks, a few extent nodes, and a margin so that a full
 * chunk is not made fuller than the placement would make it. */
static uint64_t room_needed(const struct cfs_fs *fs, uint64_t n, size_t extents)
{
	return n + 4 + 2 * (extents / ((fs->bsize - 32) / 16) + 1);
}

static int chunk_has_room(struct cfs_fs *fs, uint32_t c, uint64_t need)
{
	struct chunk *ch = &fs->chunks[c];
	uint64_t a;

	pthread_mutex_lock(&ch->lock);
	a = chunk_avail_blocks(fs, ch);
	pthread_mutex_unlock(&ch->lock);
	return a >= need;
}

/* Copy n blocks from src_abs to dst_abs (a directory's nodes: verified
 * where they are, sealed for where they go). */
static int copy_blocks(struct cfs_fs *fs, int dir, uint64_t src_abs, uint64_t dst_abs,
		       uint32_t n, uint8_t *buf)
{
	uint32_t k;
	int ret = cache_read_direct(&fs->cache, src_abs, n, buf);

	for (k = 0; k < n && ret == 0 && dir; k++) {
		uint8_t *b = buf + (size_t)k * fs->bsize;

		ret = cfs_meta_verify(b, fs->bsize, fs->seed, CFS_MAGIC_DIR, src_abs + k);
		if (ret < 0) {
			chunk_error(fs, blk_chunk(fs, src_abs + k), 0, src_abs + k, ret,
				    "directory node");
			break;
		}
		cfs_meta_init(b, CFS_MAGIC_DIR, dst_abs + k);
		cfs_meta_csum_set(b, fs->bsize, fs->seed);
	}
	if (ret == 0)
		ret = cache_write_direct(&fs->cache, dst_abs, n, buf);
	return ret;
}

/* Steps 1 and 2 of the comment at the top: src's blocks copied into dst,
 * and dst's map naming them.  On failure dst maps none of them. */
static int copy_into(struct cfs_fs *fs, struct inode *head, struct inode *src,
		     struct inode *dst, const struct ext_list *l, uint64_t *copied)
{
	uint32_t sc = CFS_INO_CHUNK(src->ino), dc = CFS_INO_CHUNK(dst->ino), goal = 0, rel;
	int dir = S_ISDIR(head->d.mode), ret = 0, n;
	struct ext_list done = { 0 };
	uint8_t *buf = malloc((size_t)MOVE_RUN * fs->bsize);
	size_t i, j;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < l->n && ret == 0; i++) {
		const struct extent *e = &l->e[i];
		uint32_t off = 0;

		while (off < e->len && ret == 0) {
			uint32_t want = e->len - off > MOVE_RUN ? MOVE_RUN : e->len - off;
			struct extent ne;

			n = dir ? chunk_alloc_meta(fs, dc, want, &rel) :
				  chunk_alloc_blocks(fs, dc, goal, want, &rel);
			if (n < 0) {
				ret = n;
				break;
			}
			ne.lblk = e->lblk + off;
			ne.pblk = rel;
			ne.len = (uint32_t)n;
			ret = copy_blocks(fs, dir, chunk_base(fs, sc) + e->pblk + off,
					  chunk_base(fs, dc) + rel, (uint32_t)n, buf);
			dst->d.nblocks += (uint32_t)n;  /* before the insert: it may write */
			if (ret == 0)
				ret = ext_insert(fs, dst, &ne);
			if (ret < 0) {
				struct extent m;

				/* an insert that failed may have put its record in */
				if (ext_lookup(fs, dst, ne.lblk, &m) == 1 &&
				    m.pblk + (ne.lblk - m.lblk) == ne.pblk) {
					ext_remove(fs, dst, ne.lblk, ne.lblk + ne.len);
				} else {
					chunk_free_blocks(fs, dc, rel, ne.len);
					dst->d.nblocks -= ne.len;
				}
				break;
			}
			if (dst->d.flags & CFS_IFL_CONT) {
				if (dst->d.hi == dst->d.lo || ne.lblk < dst->d.lo)
					dst->d.lo = dst->d.hi == dst->d.lo ? ne.lblk :
						    ne.lblk < dst->d.lo ? ne.lblk : dst->d.lo;
				if (ne.lblk + ne.len > dst->d.hi)
					dst->d.hi = ne.lblk + ne.len;
			}
			if (collect_cb(&done, &ne, 0, 0) < 0) {
				ext_remove(fs, dst, ne.lblk, ne.lblk + ne.len);
				ret = -ENOMEM;
				break;
			}
			off += (uint32_t)n;
			goal = rel + (uint32_t)n;
			*copied += (uint32_t)n;
		}
	}
	if (ret < 0)   /* best effort: already failing; dst maps none of them */
		for (j = 0; j < done.n; j++)
			ext_remove(fs, dst, done.e[j].lblk, done.e[j].lblk + done.e[j].len);
	if (ret == 0 || done.n)
		ret = inode_write(fs, dst) < 0 && ret == 0 ? -EIO : ret;
	free(done.e);
	free(buf);
	return ret;
}

/* Keep the parts of l's extents inside [from, to). */
static void clip(struct ext_list *l, uint64_t from, uint64_t to)
{
	size_t i, k = 0;

	for (i = 0; i < l->n; i++) {
		struct extent e = l->e[i];
		uint64_t s = e.lblk > from ? e.lblk : from;
		uint64_t end = e.lblk + e.len < to ? e.lblk + e.len : to;

		if (s >= end)
			continue;
		e.pblk += (uint32_t)(s - e.lblk);
		e.lblk = s;
		e.len = (uint32_t)(end - s);
		l->e[k++] = e;
	}
	l->n = k;
}

/* Move the blocks src maps in [from, to) into dst, another inode of
 * head's chain, in the order of the comment at the top. */
static int move_data(struct cfs_fs *fs, struct inode *head, struct inode *src,
		     struct inode *dst, uint64_t from, uint64_t to, uint64_t *copied)
{
	struct ext_list l = { 0 };
	int ret = collect(fs, src, &l);

	clip(&l, from, to);
	if (ret == 0 && l.n)
		ret = copy_into(fs, head, src, dst, &l, copied);
	if (ret == 0 && l.n)
		ret = fs_write_all(fs);              /* 2: the commit */
	if (ret == 0 && l.n)
		ret = ext_remove(fs, src, from, to);
	if (ret == 0 && l.n)
		ret = inode_write(fs, src);
	free(l.e);
	return ret;
}

/* Where to cut ci's extents so that the part before holds at most room
 * blocks (at least one block). */
static uint64_t cut_at(const struct ext_list *l, uint64_t room)
{
	uint64_t n = 0;
	size_t i;

	if (room == 0)
		room = 1;
	for (i = 0; i < l->n; i++) {
		if (n + l->e[i].len >= room)
			return l->e[i].lblk + (room - n);
		n += l->e[i].len;
	}
	return UINT64_MAX;
}

static uint64_t chunk_free_now(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = &fs->chunks[c];
	uint64_t a;

	pthread_mutex_lock(&ch->lock);
	a = chunk_avail_blocks(fs, ch);
	pthread_mutex_unlock(&ch->lock);
	return a;
}

/* Member i's mappings that an earlier member of the chain maps too
 * (a crash between steps 2 and 3) are never read: drop them, so that a
 * later move of the earlier copy cannot bring them to light. */
static int shadow_drop_one(struct cfs_fs *fs, struct inode *head, int i)
{
	struct inode *ip = inode_chain_at(head, i);
	struct ext_list l = { 0 };
	size_t k;
	int ret = collect(fs, ip, &l), j, changed = 0;

	for (k = 0; k < l.n && ret == 0; k++) {
		uint64_t pos = l.e[k].lblk, end = l.e[k].lblk + l.e[k].len;

		while (pos < end && ret == 0) {
			uint64_t next = end, cut = 0;
			struct extent m;

			for (j = 0; j < i && ret == 0 && !cut; j++) {
				struct inode *p = inode_chain_at(head, j);

				if (j > 0 && (pos >= p->d.hi || end <= p->d.lo))
					continue;
				ret = ext_lookup(fs, p, pos, &m);
				if (ret == 1)
					cut = m.lblk + m.len < end ? m.lblk + m.len : end;
				else if (ret == 0 && m.lblk > pos && m.lblk < next)
					next = m.lblk;
			}
			if (ret < 0)
				break;
			ret = 0;
			if (cut) {
				ret = ext_remove(fs, ip, pos, cut);
				changed = 1;
				pos = cut;
			} else {
				pos = next;
			}
		}
	}
	if (ret == 0 && changed)
		ret = inode_write(fs, ip);
	free(l.e);
	return ret;
}

static int shadow_drop(struct cfs_fs *fs, struct inode *head)
{
	int i, ret = 0;

	for (i = 1; i < inode_chain_len(head) && ret == 0; i++)
		ret = shadow_drop_one(fs, head, i);
	return ret;
}

struct move_run {
	struct cfs_move_result *res;
	int evacuate;                   /* empty chunk `avoid` */
	uint32_t avoid;
	uint32_t limit;                 /* and take no chunk from limit on */
	uint32_t home;                  /* renumber into this chunk only (or UINT32_MAX) */
};

static int chunk_barred(const struct move_run *mr, uint32_t c)
{
	return mr->evacuate && (c == mr->avoid || c >= mr->limit);
}

/* A new, empty continuation of head in chunk c, attached to the first
 * member of the chain outside the chunks being emptied with a free
 * forward pointer (as
 * file.c's cont_create, which attaches anywhere). */
static int cont_new(struct cfs_fs *fs, struct inode *head, uint32_t c,
		    const struct move_run *mr, uint64_t lblk, struct inode **out)
{
	struct inode *ci, *p = NULL;
	int i, s = 0, ret;

	for (i = 0; i < inode_chain_len(head) && !p; i++) {
		struct inode *m = inode_chain_at(head, i);

		if (chunk_barred(mr, CFS_INO_CHUNK(m->ino)))
			continue;
		for (s = 0; s < CFS_NCONT; s++)
			if (!m->d.cont[s]) {
				p = m;
				break;
			}
	}
	if (!p)
		return -ENOSPC;
	ret = inode_alloc(fs, c, 1, (uint16_t)(head->d.mode & S_IFMT), &ci);
	if (ret < 0)
		return ret;
	ci->d.flags = CFS_IFL_CONT | CFS_IFL_EXTENTS;
	ci->d.head = head->ino;
	ci->d.back = p->ino;
	ci->d.lo = ci->d.hi = lblk;
	ci->d.nlink = 1;
	ret = inode_write(fs, ci);
	pthread_mutex_unlock(&ci->lock);
	if (ret == 0) {
		p->d.cont[s] = ci->ino;
		ret = inode_write(fs, p);
	}
	if (ret == 0)
		ret = inode_chain_add(head, ci);
	if (ret < 0) {
		p->d.cont[s] = 0;
		inode_write(fs, p);
		inode_free(fs, ci);
		inode_put(fs, ci);
		return ret;
	}
	chunk_count(fs, c, CNT_CONTS, 1);
	*out = ci;
	return 0;
}

/* The member of head's chain to take ci's n blocks (in ext extents):
 * the head when its chunk has room, else the first other member outside
 * avoid whose chunk has; when evacuating, else a new continuation in the
 * chunk with the most room.  NULL: nowhere. */
static struct inode *pick_target(struct cfs_fs *fs, struct inode *head, struct inode *ci,
				 const struct move_run *mr, uint64_t need, uint64_t lblk)
{
	uint32_t c, best = UINT32_MAX;
	uint64_t best_free = 0;
	struct inode *t;
	int i;

	for (i = 0; i < inode_chain_len(head); i++) {
		struct inode *m = inode_chain_at(head, i);

		c = CFS_INO_CHUNK(m->ino);
		if (m == ci || chunk_barred(mr, c))
			continue;
		/* for defrag a move within a chunk gains nothing but a slot:
		 * only into the head, which frees a continuation */
		if (i > 0 && !mr->evacuate && c == CFS_INO_CHUNK(ci->ino))
			continue;
		if (!(m->d.flags & CFS_IFL_EXTENTS))
			continue;
		if (chunk_has_room(fs, c, need))
			return m;
		if (!mr->evacuate)
			return NULL;   /* defrag: the head's chunk or nothing */
	}
	if (!mr->evacuate)
		return NULL;
	for (c = 0; c < fs->sb.nchunks; c++) {
		struct chunk *ch = &fs->chunks[c];
		uint64_t f;

		if (chunk_barred(mr, c) || ch->failed)
			continue;
		pthread_mutex_lock(&ch->lock);
		f = chunk_avail_blocks(fs, ch);
		pthread_mutex_unlock(&ch->lock);
		if (f >= need && f > best_free && chunk_inodes_avail(fs, c) > 0) {
			best = c;
			best_free = f;
		}
	}
	if (best == UINT32_MAX || cont_new(fs, head, best, mr, lblk, &t) < 0)
		return NULL;
	return t;
}

/* Defrag (avoid unused) or evacuate one file: each continuation that
 * should go, last first (successors before their predecessors, so that
 * emptied leaves can be freed), into the member pick_target names. */
static int file_move(struct cfs_fs *fs, cfs_ino_t hino, struct move_run *mr)
{
	struct inode *head;
	int i, ret, moved = 0, before;

	ret = inode_get_head(fs, hino, 1, &head);
	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	ret = inode_chain_load(fs, head);
	if (ret == 0)
		ret = shadow_drop(fs, head);
	before = inode_chain_len(head);
	for (i = inode_chain_len(head) - 1; i >= 1 && ret == 0; i--) {
		struct inode *ci = inode_chain_at(head, i), *t;
		struct ext_list l = { 0 };
		uint64_t need;

		if (mr->evacuate && CFS_INO_CHUNK(ci->ino) != mr->avoid)
			continue;
		ret = collect(fs, ci, &l);
		need = room_needed(fs, data_blocks(&l), l.n);
		if (ret == 0 && l.n == 0) {
			free(l.e);
			continue;      /* empty: the prune below takes it if it can */
		}
		free(l.e);
		if (ret < 0)
			break;
		t = pick_target(fs, head, ci, mr, need, ci->d.lo);
		if (t) {
			ret = move_data(fs, head, ci, t, 0, UINT64_MAX, &mr->res->blocks);
			moved += ret == 0;
			continue;
		}
		/* evacuating, no one chunk takes it all: in pieces, each as
		 * big as the chunk found can take */
		while (mr->evacuate && ret == 0) {
			uint64_t room, cut;

			l.n = 0;
			l.e = NULL;
			l.cap = 0;
			ret = collect(fs, ci, &l);
			if (ret < 0 || l.n == 0) {
				free(l.e);
				break;
			}
			t = pick_target(fs, head, ci, mr, room_needed(fs, 1, 1), ci->d.lo);
			if (!t) {
				free(l.e);
				mr->res->skipped++;
				break;
			}
			room = chunk_free_now(fs, CFS_INO_CHUNK(t->ino));
			room = room > room_needed(fs, 0, l.n) ? room - room_needed(fs, 0, l.n) : 1;
			cut = cut_at(&l, room);
			free(l.e);
			ret = move_data(fs, head, ci, t, 0, cut, &mr->res->blocks);
			moved += ret == 0;
		}
		if (!mr->evacuate)
			mr->res->skipped++;
	}
	if (ret == 0)
		ret = chain_prune(fs, head);
	if (ret == 0 && moved)
		mr->res->files++;
	if (ret == 0 && inode_chain_len(head) < before)
		mr->res->conts_freed += (uint64_t)(before - inode_chain_len(head));
	pthread_mutex_unlock(&head->lock);
	inode_put(fs, head);
	return ret;
}

/* ---- Renumbering a file's own inode (docs/MOVE.md) ----
 *
 * A head inode O in a chunk being emptied gets a new number N in a kept
 * chunk, as resize2fs renumbers ext4 inodes.  Only files, symlinks and
 * special files: a directory's number is also in its node blocks, its
 * children's back fields and its entries' stubs.  Write order:
 *   1. N made: a full copy of O's attributes, in-inode xattrs and inline
 *      data, its xattr block and every block of O's chain, all in N's
 *      chunk, with nlink 0; flushed.  A crash leaves an unnamed inode with
 *      no link, which fsck releases as it does any deleted file;
 *   2. the superblock names the pair (INCOMPAT_RENUMBER, FORMAT.md 4):
 *      from here an open refuses and fsck finishes the move;
 *   3. each name, in rename's order: a stub for N (when the directory is
 *      in another chunk), flushed; the entry names N, nlinks moved by one,
 *      flushed; O's stub freed;
 *   4. O released with its chain, flushed; the superblock's pair cleared.
 * O's names are found through its stubs: the chunk holds no directory
 * (refused before), so every entry naming O is in another chunk. */

struct stubref {
	cfs_ino_t head, stub, dir;
	uint64_t hash;
};

static int cmp_stubref(const void *a, const void *b)
{
	const struct stubref *x = a, *y = b;

	return x->head < y->head ? -1 : x->head > y->head ? 1 :
	       x->stub < y->stub ? -1 : x->stub > y->stub;
}

/* Every stub of chunk c (only those naming `only` unless it is 0),
 * sorted by the inode they back. */
static int chunk_stubs(struct cfs_fs *fs, uint32_t c, cfs_ino_t only, struct stubref **out,
		       size_t *nout)
{
	struct stubref *v = NULL;
	size_t n = 0, cap = 0;
	struct chunk_inodes ni;
	uint32_t l;
	int ret = 0;

	chunk_inodes(fs, c, &ni);
	for (l = 1; l <= ni.span && ret == 0; l++) {
		cfs_ino_t ino = CFS_INO_MAKE(c, l);
		struct inode *ip;
		void *nv;

		if (inode_slot_present(fs, ino) <= 0)
			continue;
		ret = inode_get(fs, ino, &ip);
		if (ret < 0)
			break;
		if (ip->d.mode && (ip->d.flags & CFS_IFL_STUB) && (!only || ip->d.head == only)) {
			nv = array_room(v, &cap, n, sizeof(*v), 64);
			if (!nv) {
				ret = -ENOMEM;
			} else {
				v = nv;
				v[n].head = ip->d.head;
				v[n].stub = ino;
				v[n].dir = ip->d.back;
				v[n++].hash = ip->d.lo;
			}
		}
		inode_put(fs, ip);
	}
	if (ret < 0) {
		free(v);
		return ret;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_stubref);
	*out = v;
	*nout = n;
	return 0;
}

/* Superblock pair set (o, n) or cleared (0): after everything before it
 * is on disk. */
static int renum_mark(struct cfs_fs *fs, cfs_ino_t o, cfs_ino_t n)
{
	int ret = fs_write_all(fs);

	if (ret < 0)
		return ret;
	if (o)
		fs->sb.feat_incompat |= CFS_FEAT_INCOMPAT_RENUMBER;
	else
		fs->sb.feat_incompat &= ~CFS_FEAT_INCOMPAT_RENUMBER;
	fs->sb.renum_old = o;
	fs->sb.renum_new = n;
	return super_write_primary(fs);
}

/* O's xattr block copied to a new block of N's chunk, sealed for it. */
static int renum_xattr_block(struct cfs_fs *fs, struct inode *o, struct inode *n)
{
	uint64_t src = chunk_base(fs, CFS_INO_CHUNK(o->ino)) + o->d.xattr_block, dst;
	uint8_t *b = malloc(fs->bsize);
	uint32_t rel;
	int ret;

	if (!b)
		return -ENOMEM;
	ret = cache_read_direct(&fs->cache, src, 1, b);
	if (ret == 0 && (ret = cfs_meta_verify(b, fs->bsize, fs->seed, CFS_MAGIC_XATTR, src)) < 0)
		chunk_error(fs, CFS_INO_CHUNK(o->ino), o->ino, src, ret, "xattr block");
	if (ret == 0) {
		ret = chunk_alloc_meta(fs, CFS_INO_CHUNK(n->ino), 1, &rel);
		ret = ret < 0 ? ret : 0;
	}
	if (ret == 0) {
		dst = chunk_base(fs, CFS_INO_CHUNK(n->ino)) + rel;
		cfs_xattr_blk_set(b, cfs_xattr_blk_used(b), n->ino);
		cfs_meta_init(b, CFS_MAGIC_XATTR, dst);
		cfs_meta_csum_set(b, fs->bsize, fs->seed);
		ret = cache_write_direct(&fs->cache, dst, 1, b);
		if (ret == 0) {
			n->d.xattr_block = rel;
			n->d.nblocks++;
		} else {
			chunk_free_blocks(fs, CFS_INO_CHUNK(n->ino), rel, 1);
		}
	}
	free(b);
	return ret;
}

/* Step 1: N in chunk t, a copy of head o (its chain loaded). */
static int renum_copy(struct cfs_fs *fs, struct inode *o, uint32_t t, uint64_t *copied,
		      struct inode **out)
{
	struct inode *n;
	uint32_t gen;
	int i, ret = inode_alloc(fs, t, 1, o->d.mode, &n);

	if (ret < 0)
		return ret;
	gen = n->d.generation;
	n->d = o->d;
	memcpy(n->var, o->var, fs->varsz);
	n->d.generation = gen;
	n->d.nlink = 0;
	n->d.head = n->ino;
	n->d.back = 0;
	n->d.lo = n->d.hi = 0;
	memset(n->d.cont, 0, sizeof(n->d.cont));
	n->d.nblocks = 0;
	n->d.xattr_block = 0;
	if (o->d.flags & CFS_IFL_EXTENTS)
		ret = ext_init_root(fs, n);
	if (ret == 0)
		ret = inode_write(fs, n);
	if (ret == 0 && o->d.xattr_block)
		ret = renum_xattr_block(fs, o, n);
	for (i = 0; i < inode_chain_len(o) && ret == 0; i++) {
		struct ext_list l = { 0 };

		ret = collect(fs, inode_chain_at(o, i), &l);
		if (ret == 0 && l.n)
			ret = copy_into(fs, o, inode_chain_at(o, i), n, &l, copied);
		free(l.e);
	}
	if (ret == 0)
		ret = inode_write(fs, n);
	if (ret < 0) {   /* best effort: nothing names it */
		n->d.nlink = 0;
		inode_release(fs, n);
		pthread_mutex_unlock(&n->lock);
		inode_put(fs, n);
		return ret;
	}
	pthread_mutex_unlock(&n->lock);
	*out = n;
	return 0;
}

struct find_name {
	const struct stubref *s;
	struct dirent_rec r;
	int found;
};

static int find_name_cb(void *ctx, const struct dirent_rec *r)
{
	struct find_name *f = ctx;

	if (r->hash != f->s->hash)
		return 1;
	if (r->ino == f->s->head && r->stub == f->s->stub) {
		f->r = *r;
		f->found = 1;
		return 1;
	}
	return 0;
}

/* Step 3 for the entry s backs: it names n instead of o. */
static int renum_name(struct cfs_fs *fs, struct inode *o, struct inode *n,
		      const struct stubref *s)
{
	struct find_name f = { .s = s };
	struct inode *dp;
	cfs_ino_t ns = 0;
	int ret = namei_get_dir(fs, s->dir, &dp);

	if (ret < 0)
		return ret == -ENOENT || ret == -ENOTDIR ? 0 : ret;  /* fsck's: a stray stub */
	pthread_mutex_lock(&dp->lock);
	ret = dir_iterate(fs, dp, s->hash, find_name_cb, &f);
	if (ret >= 0 && !f.found) {
		ret = 0;          /* a stub that backs no entry: fsck frees it */
		goto out;
	}
	if (ret >= 0)
		ret = xref_add(fs, dp, n->ino, n->d.mode, f.r.name, f.r.namelen, &ns);
	if (ret >= 0)
		ret = fs_write_all(fs);
	if (ret >= 0)
		ret = xref_hold(fs, s->stub);
	/* an entry losing its stub: the directory's count of remote entries
	 * down first, as a crash leaving fewer remote entries than it says
	 * reads as entries lost elsewhere (FORMAT.md 17.13) */
	if (ret >= 0 && !ns && f.r.stub) {
		dp->d.hi--;
		ret = inode_write(fs, dp);
		dp->d.hi++;
		if (ret >= 0)
			ret = fs_write_all(fs);
	}
	if (ret >= 0) {
		f.r.ino = n->ino;
		f.r.stub = ns;
		ret = dir_update(fs, dp, &f.r);
	}
	if (ret >= 0)
		ret = inode_write(fs, dp);
	if (ret >= 0) {
		n->d.nlink++;
		o->d.nlink--;
		ret = inode_write(fs, n);
	}
	if (ret >= 0)
		ret = inode_write(fs, o);
	if (ret >= 0)
		ret = fs_write_all(fs);
	if (ret >= 0)
		ret = xref_del(fs, s->stub, o->ino);
out:
	pthread_mutex_unlock(&dp->lock);
	inode_put(fs, dp);
	return ret < 0 ? ret : 0;
}

/* Steps 3 and 4, from wherever an earlier run stopped. */
static int renum_names(struct cfs_fs *fs, struct inode *o, struct inode *n,
		       const struct stubref *v, size_t nv)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < nv && ret == 0; i++)
		if (v[i].head == o->ino)
			ret = renum_name(fs, o, n, &v[i]);
	if (ret == 0 && o->d.nlink) {
		cfs_set_error("inode %u keeps %u names after its stubs' were moved "
			      "(a directory in its chunk names it)", o->ino, o->d.nlink);
		return -EUCLEAN;
	}
	if (ret == 0)
		ret = inode_release(fs, o);
	if (ret == 0)
		ret = renum_mark(fs, 0, 0);
	return ret;
}

/* Chunk for a copy of head o: outside the chunks emptied, room for its
 * blocks and inodes for it and a stub per name; the most room wins. */
static uint32_t renum_target(struct cfs_fs *fs, struct inode *o, const struct move_run *mr)
{
	uint64_t blocks = o->d.xattr_block ? 1 : 0, best_free = 0, need;
	size_t extents = 0;
	uint32_t c, best = UINT32_MAX;
	int i;

	for (i = 0; i < inode_chain_len(o); i++) {
		struct ext_list l = { 0 };

		if (collect(fs, inode_chain_at(o, i), &l) < 0) {
			free(l.e);
			return UINT32_MAX;
		}
		blocks += data_blocks(&l);
		extents += l.n;
		free(l.e);
	}
	need = room_needed(fs, blocks, extents);
	for (c = 0; c < fs->sb.nchunks; c++) {
		uint64_t f;

		if (chunk_barred(mr, c) || fs->chunks[c].failed ||
		    (mr->home != UINT32_MAX && c != mr->home))
			continue;
		f = chunk_free_now(fs, c);
		if (f >= need && f > best_free && chunk_inodes_avail(fs, c) > 1 + (uint64_t)o->d.nlink) {
			best = c;
			best_free = f;
		}
	}
	return best;
}

/* Every chunk the names' moves will change marked dirty on disk before
 * the pair is: fsck, which finishes them after a crash, then changes no
 * chunk the crash left clean (FORMAT.md 18). */
static int renum_dirty(struct cfs_fs *fs, struct inode *o, struct inode *n,
		       const struct stubref *v, size_t nv)
{
	int ret = chunk_to_dirty_disk(fs, CFS_INO_CHUNK(n->ino)), j;
	size_t i;

	for (j = 0; j < inode_chain_len(o) && ret == 0; j++)   /* o's release frees them */
		ret = chunk_to_dirty_disk(fs, CFS_INO_CHUNK(inode_chain_at(o, j)->ino));
	for (i = 0; i < nv && ret == 0; i++)
		if (ino_valid(fs, v[i].dir))
			ret = chunk_to_dirty_disk(fs, CFS_INO_CHUNK(v[i].dir));
	return ret;
}

static int renumber_one(struct cfs_fs *fs, cfs_ino_t hino, const struct stubref *v, size_t nv,
			struct move_run *mr)
{
	struct inode *o, *n = NULL;
	uint32_t t;
	int ret = inode_get_head(fs, hino, 1, &o);

	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	if (S_ISDIR(o->d.mode) || o->d.nlink == 0) {
		pthread_mutex_unlock(&o->lock);
		inode_put(fs, o);
		return 0;
	}
	ret = inode_chain_load(fs, o);
	if (ret == 0)
		ret = shadow_drop(fs, o);
	if (ret == 0)   /* the copies read the device: the latest on it */
		ret = fs_write_all(fs);
	t = UINT32_MAX;
	/* names all in one chunk's directories: there, where it has room, so
	 * that they need no stub (defrag -i's aim, on the way) */
	if (ret == 0 && mr->home == UINT32_MAX && nv && ino_valid(fs, v[0].dir)) {
		size_t i;

		mr->home = CFS_INO_CHUNK(v[0].dir);
		for (i = 1; i < nv; i++)
			if (!ino_valid(fs, v[i].dir) || CFS_INO_CHUNK(v[i].dir) != mr->home)
				break;
		if (i == nv && nv == o->d.nlink && !chunk_barred(mr, mr->home))
			t = renum_target(fs, o, mr);
		mr->home = UINT32_MAX;
	}
	if (ret == 0 && t == UINT32_MAX)
		t = renum_target(fs, o, mr);
	if (ret == 0 && t == UINT32_MAX) {
		mr->res->skipped++;
		goto out;
	}
	if (ret == 0)
		ret = renum_copy(fs, o, t, &mr->res->blocks, &n);
	if (ret == 0)
		ret = renum_dirty(fs, o, n, v, nv);
	if (ret == 0)
		ret = renum_mark(fs, o->ino, n->ino);
	if (ret == 0)
		ret = renum_names(fs, o, n, v, nv);
	if (ret == 0)
		mr->res->files++;
out:
	pthread_mutex_unlock(&o->lock);
	inode_put(fs, o);
	if (n)
		inode_put(fs, n);
	return ret;
}

/* Every file whose own inode is in chunk c gets one elsewhere. */
static int renumber_chunk(struct cfs_fs *fs, uint32_t c, struct move_run *mr)
{
	struct stubref *v = NULL;
	cfs_ino_t *heads = NULL;
	size_t nv = 0, nh = 0, cap = 0, i, lo;
	struct chunk_inodes ni;
	uint32_t l;
	int ret;

	if (fs->chunks[c].hdr.ndirs)
		return 0;         /* refused before, by the callers that need it */
	ret = chunk_stubs(fs, c, 0, &v, &nv);
	chunk_inodes(fs, c, &ni);
	for (l = 1; l <= ni.span && ret == 0; l++) {
		cfs_ino_t ino = CFS_INO_MAKE(c, l);
		struct inode *ip;
		void *nh2;

		if (inode_slot_present(fs, ino) <= 0)
			continue;
		ret = inode_get(fs, ino, &ip);
		if (ret < 0)
			break;
		if (ip->d.mode && !(ip->d.flags & (CFS_IFL_CONT | CFS_IFL_STUB))) {
			nh2 = array_room(heads, &cap, nh, sizeof(*heads), 64);
			if (!nh2)
				ret = -ENOMEM;
			else
				(heads = nh2)[nh++] = ino;
		}
		inode_put(fs, ip);
	}
	for (i = 0, lo = 0; i < nh && ret == 0; i++) {
		size_t hi;

		while (lo < nv && v[lo].head < heads[i])
			lo++;
		for (hi = lo; hi < nv && v[hi].head == heads[i]; hi++)
			;
		if (fs->progress_fn)
			fs->progress_fn(fs->progress_ctx, i, nh);
		ret = renumber_one(fs, heads[i], v + lo, hi - lo, mr);
		lo = hi;
	}
	free(v);
	free(heads);
	return ret;
}

/* fsck, after its check: the renumber the superblock names finished, or
 * undone when N never got complete (then nothing names it). */
int move_renumber_finish(struct cfs_fs *fs)
{
	cfs_ino_t oi = fs->sb.renum_old, ni = fs->sb.renum_new;
	struct inode *o = NULL, *n = NULL;
	struct stubref *v = NULL;
	size_t nv = 0;
	int ret = 0;

	if (!(fs->sb.feat_incompat & CFS_FEAT_INCOMPAT_RENUMBER))
		return 0;
	if (ino_valid(fs, oi) && inode_get_head(fs, oi, 1, &o) < 0)
		o = NULL;
	if (ino_valid(fs, ni) && inode_get_head(fs, ni, 1, &n) < 0)
		n = NULL;
	if (o && n && (o->d.mode & S_IFMT) == (n->d.mode & S_IFMT) && !S_ISDIR(o->d.mode)) {
		ret = chunk_stubs(fs, CFS_INO_CHUNK(oi), oi, &v, &nv);
		if (ret == 0)
			ret = renum_names(fs, o, n, v, nv);
	} else {
		if (n && n->d.nlink == 0)   /* a copy nothing names */
			inode_release(fs, n);
		ret = renum_mark(fs, 0, 0);
	}
	free(v);
	if (o) {
		pthread_mutex_unlock(&o->lock);
		inode_put(fs, o);
	}
	if (n) {
		pthread_mutex_unlock(&n->lock);
		inode_put(fs, n);
	}
	return ret;
}

static int cmp_ino(const void *a, const void *b)
{
	cfs_ino_t x = *(const cfs_ino_t *)a, y = *(const cfs_ino_t *)b;

	return x < y ? -1 : x > y;
}

/* The heads of the files with a continuation in chunk c (every chunk when
 * c is UINT32_MAX), sorted, each once. */
static int heads_with_conts(struct cfs_fs *fs, uint32_t only, cfs_ino_t **out, size_t *nout)
{
	cfs_ino_t *h = NULL;
	size_t n = 0, cap = 0, i, k;
	uint32_t c, l;
	int ret = 0;

	for (c = 0; c < fs->sb.nchunks && ret == 0; c++) {
		struct chunk_inodes ni;

		if (only != UINT32_MAX && c != only)
			continue;
		if (fs->chunks[c].hdr.nconts == 0)
			continue;
		chunk_inodes(fs, c, &ni);
		for (l = 1; l <= ni.span && ret == 0; l++) {
			cfs_ino_t ino = CFS_INO_MAKE(c, l);
			struct inode *ip;
			void *nh;

			if (inode_slot_present(fs, ino) <= 0)
				continue;
			ret = inode_get(fs, ino, &ip);
			if (ret < 0)
				break;
			if (ip->d.mode && (ip->d.flags & CFS_IFL_CONT) && ino_valid(fs, ip->d.head)) {
				nh = array_room(h, &cap, n, sizeof(*h), 64);
				if (!nh)
					ret = -ENOMEM;
				else
					(h = nh)[n++] = ip->d.head;
			}
			inode_put(fs, ip);
		}
	}
	if (ret < 0) {
		free(h);
		return ret;
	}
	if (n)
		qsort(h, n, sizeof(*h), cmp_ino);
	for (i = k = 0; i < n; i++)
		if (k == 0 || h[k - 1] != h[i])
			h[k++] = h[i];
	*out = h;
	*nout = k;
	return 0;
}

static uint64_t count_conts(struct cfs_fs *fs)
{
	uint64_t n = 0;
	uint32_t c;

	for (c = 0; c < fs->sb.nchunks; c++)
		n += fs->chunks[c].hdr.nconts;
	return n;
}

static int move_files(struct cfs_fs *fs, struct move_run *mr)
{
	cfs_ino_t *heads = NULL;
	size_t n = 0, i;
	int ret = heads_with_conts(fs, mr->evacuate ? mr->avoid : UINT32_MAX, &heads, &n);

	for (i = 0; i < n && ret == 0; i++) {
		if (fs->progress_fn)
			fs->progress_fn(fs->progress_ctx, i, n);
		ret = file_move(fs, heads[i], mr);
	}
	if (ret == 0 && fs->progress_fn)
		fs->progress_fn(fs->progress_ctx, n, n);
	if (ret == 0)
		ret = fs_write_all(fs);
	free(heads);
	return ret;
}

/* The usual gate of an offline whole-filesystem change (resize.c's). */
static int move_begin(struct cfs_fs *fs, struct cfs_move_result *res)
{
	memset(res, 0, sizeof(*res));
	if (fs->rdonly) {
		cfs_set_error("the filesystem is open read-only");
		return -EROFS;
	}
	fence_wait(fs, 0);
	pthread_rwlock_wrlock(&fs->op_lock);
	res->conts_before = count_conts(fs);
	return 0;
}

static void chunk_left(struct cfs_fs *fs, uint32_t c, struct cfs_move_result *res)
{
	struct chunk_inodes ni;
	struct chunk *ch = &fs->chunks[c];

	chunk_inodes(fs, c, &ni);
	res->left_conts = ch->hdr.nconts;
	res->left_stubs = ch->hdr.nstubs;
	res->left_inodes = ni.used;
	res->left_blocks = fs->sb.chunk_blocks - fs->sb.data_start - ch->hdr.free_blocks;
}

int move_evacuate_locked(struct cfs_fs *fs, uint32_t c, uint32_t limit,
			 struct cfs_move_result *res)
{
	struct move_run mr = { .res = res, .evacuate = 1, .avoid = c, .limit = limit,
			       .home = UINT32_MAX };
	/* renumbered heads take their chains along: fewer moves after */
	int ret = renumber_chunk(fs, c, &mr);

	if (ret == 0)
		ret = move_files(fs, &mr);

	if (ret == 0)   /* empty inode clusters count as blocks in use */
		ret = chunk_trim_clusters(fs);
	if (ret == 0)
		ret = fs_write_all(fs);
	chunk_left(fs, c, res);
	return ret;
}

/* Defrag's renumbering: a file of chunk b all of whose names are in
 * directories of one other chunk goes there (when it has room), so that
 * none of its names needs a stub any more. */
static int relink_chunk(struct cfs_fs *fs, uint32_t b, struct move_run *mr)
{
	struct stubref *v = NULL;
	size_t nv = 0, i = 0, j, k;
	int ret;

	if (fs->chunks[b].hdr.nstubs == 0)
		return 0;
	ret = chunk_stubs(fs, b, 0, &v, &nv);
	for (; i < nv && ret == 0; i = j) {
		uint32_t home = ino_valid(fs, v[i].dir) ? CFS_INO_CHUNK(v[i].dir) : b;
		struct inode *ip;
		int all;

		for (j = i + 1; j < nv && v[j].head == v[i].head; j++)
			;
		for (k = i; k < j && home != b; k++)
			if (!ino_valid(fs, v[k].dir) || CFS_INO_CHUNK(v[k].dir) != home)
				home = b;
		if (home == b || !ino_valid(fs, v[i].head))
			continue;
		/* every name through a stub: none is in a directory of b */
		if (inode_get(fs, v[i].head, &ip) < 0)
			continue;
		all = ip->d.mode && !S_ISDIR(ip->d.mode) &&
		      !(ip->d.flags & (CFS_IFL_CONT | CFS_IFL_STUB)) && ip->d.nlink == j - i;
		inode_put(fs, ip);
		if (!all)
			continue;
		if (fs->progress_fn)
			fs->progress_fn(fs->progress_ctx, i, nv);
		mr->home = home;
		ret = renumber_one(fs, v[i].head, v + i, j - i, mr);
		mr->home = UINT32_MAX;
	}
	free(v);
	return ret;
}

int cfs_defrag_flags(struct cfs_fs *fs, unsigned flags, struct cfs_move_result *res)
{
	struct move_run mr = { .res = res, .home = UINT32_MAX };
	uint64_t skipped;
	uint32_t b;
	int ret;

	if (flags & ~(unsigned)CFS_DEFRAG_RENUMBER) {
		memset(res, 0, sizeof(*res));
		cfs_set_error("unknown defrag flags 0x%x", flags & ~(unsigned)CFS_DEFRAG_RENUMBER);
		return -EINVAL;
	}
	ret = move_begin(fs, res);
	if (ret < 0)
		return ret;
	/* a file renumbered leaves no stub behind: not one left for want of
	 * room, as a continuation is */
	for (b = 0; b < fs->sb.nchunks && ret == 0 && (flags & CFS_DEFRAG_RENUMBER); b++) {
		skipped = res->skipped;
		ret = relink_chunk(fs, b, &mr);
		res->skipped = skipped;
	}
	if (ret == 0)
		ret = move_files(fs, &mr);
	res->conts_after = count_conts(fs);
	pthread_rwlock_unlock(&fs->op_lock);
	return ret;
}

int cfs_defrag(struct cfs_fs *fs, struct cfs_move_result *res)
{
	return cfs_defrag_flags(fs, 0, res);
}

int cfs_evacuate(struct cfs_fs *fs, uint32_t chunk, struct cfs_move_result *res)
{
	int ret;

	if (chunk >= fs->sb.nchunks) {
		memset(res, 0, sizeof(*res));
		cfs_set_error("no chunk %u: the filesystem has %u", chunk, fs->sb.nchunks);
		return -EINVAL;
	}
	ret = move_begin(fs, res);
	if (ret < 0)
		return ret;
	ret = move_evacuate_locked(fs, chunk, fs->sb.nchunks, res);
	res->conts_after = count_conts(fs);
	pthread_rwlock_unlock(&fs->op_lock);
	return ret;
}

void cfs_set_progress_fn(struct cfs_fs *fs, cfs_progress_fn fn, void *ctx)
{
	fs->progress_fn = fn;
	fs->progress_ctx = ctx;
}

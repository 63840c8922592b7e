/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Extent maps: each inode (head or continuation) maps logical blocks onto
 * blocks of its own chunk with a B+tree rooted in the inode (the first
 * CFS_EXT_ROOT_SIZE bytes of its variable area).  Leaf records and node
 * blocks are laid out by the format layer (format.h, FORMAT.md 12). */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "btree.h"
#include "fsint.h"
#include "tree_node.h"

struct ext_ctx {
	struct cfs_fs *fs;
	struct inode *ip;
};

static size_t ext_leaf_len(const uint8_t *rec, size_t room)
{
	(void)rec;
	return room >= CFS_EXT_SIZE ? CFS_EXT_SIZE : 0;
}

static uint32_t ino_chunk(struct inode *ip)
{
	return CFS_INO_CHUNK(ip->ino);
}

/* Corruption in ip's extent tree (FORMAT.md 18): ip's chunk holds the
 * tree, and the block is the node's, or the inode's own for the root. */
static int ext_bad(struct cfs_fs *fs, struct inode *ip, uint64_t blk, const char *what)
{
	uint32_t off;

	if (!blk)
		blk = inode_location(fs, ip->ino, &off);
	return chunk_corrupt(fs, ino_chunk(ip), ip->ino, blk, what);
}

static int ext_corrupt(void *vc, const struct bt_node *n, const char *what)
{
	struct ext_ctx *x = vc;

	return ext_bad(x->fs, x->ip, tree_node_blk(n), what);
}

static int ext_get(void *vc, uint64_t ptr, int level, struct bt_node *n)
{
	struct ext_ctx *x = vc;
	struct cfs_fs *fs = x->fs;

	(void)level;
	if (ptr < fs->sb.data_start || ptr >= fs->sb.chunk_blocks)
		return ext_bad(fs, x->ip, 0, "extent node out of the chunk");
	return tree_node_get(fs, chunk_base(fs, ino_chunk(x->ip)) + ptr, CFS_MAGIC_EXT,
			     x->ip->ino, ptr, n);
}

static int ext_alloc(void *vc, int level, struct bt_node *n)
{
	struct ext_ctx *x = vc;
	struct cfs_fs *fs = x->fs;
	uint32_t c = ino_chunk(x->ip), rel;
	int ret;

	ret = chunk_alloc_meta(fs, c, 1, &rel);
	if (ret < 0)
		return ret;
	ret = tree_node_new(fs, chunk_base(fs, c) + rel, CFS_MAGIC_EXT, x->ip->ino, rel, level, n);
	if (ret < 0) {
		chunk_free_blocks(fs, c, rel, 1);
		return ret;
	}
	x->ip->d.nblocks++;
	return inode_write(fs, x->ip);
}

static void ext_put(void *vc, struct bt_node *n)
{
	tree_node_put(((struct ext_ctx *)vc)->fs, n);
}

static int ext_release(void *vc, struct bt_node *n)
{
	struct ext_ctx *x = vc;
	int ret;

	ext_put(vc, n);
	n->priv = NULL;
	ret = chunk_free_blocks(x->fs, ino_chunk(x->ip), (uint32_t)n->ptr, 1);
	x->ip->d.nblocks--;
	return ret;
}

static int ext_dirty(void *vc, struct bt_node *n)
{
	struct ext_ctx *x = vc;

	if (!n->priv)
		return inode_write(x->fs, x->ip);
	return buf_dirty(&x->fs->cache, n->priv);
}

/* As a directory's tree (dir_persist): the new node and the index naming
 * it reach the disk before n gives up its extents, so a crash in a split
 * never loses the map of blocks written long before.  A directory's map
 * is how fsck finds its leaves: a lost extent would take names that were
 * on disk with it, and the stubs they left in chunks marked clean. */
static int ext_persist(void *vc, struct bt_node *m, struct bt_node *n)
{
	(void)m;
	/* a root moving down needs only its new node written (ext_fresh) */
	return n ? tree_node_persist(((struct ext_ctx *)vc)->fs, n) : 0;
}

static int ext_fresh(void *vc, struct bt_node *m)
{
	return tree_node_write_new(((struct ext_ctx *)vc)->fs, m);
}

/* An extent that reaches past hi, the key of the next node: a punch
 * shortened it in place and put its tail in a new node, which a split
 * wrote (with the index naming it) before this node (FORMAT.md 12). */
static int ext_clip(uint8_t *rec, uint64_t hi, int fix)
{
	uint64_t lblk;
	uint32_t pblk, len;

	cfs_extent_decode(rec, &lblk, &pblk, &len);
	/* one that wraps is impossible (ext_sane), not clipped */
	if (lblk >= hi || len <= hi - lblk || lblk + len < lblk)
		return 0;
	if (fix)
		cfs_extent_encode(rec, lblk, pblk, (uint32_t)(hi - lblk));
	return 1;
}

static const struct bt_ops ext_ops = {
	.leaf_len = ext_leaf_len, .get = ext_get, .alloc = ext_alloc,
	.release = ext_release, .dirty = ext_dirty, .persist = ext_persist,
	.fresh = ext_fresh,
	.put = ext_put, .corrupt = ext_corrupt, .clip = ext_clip,
};

static void ext_tree(struct cfs_fs *fs, struct inode *ip, struct ext_ctx *x,
		     struct btree *t)
{
	x->fs = fs;
	x->ip = ip;
	t->ops = &ext_ops;
	t->ctx = x;
	t->root.priv = NULL;
	t->root.hdr = ip->var;
	t->root.recs = ip->var + BT_NODE_HDR;
	t->root.cap = CFS_EXT_ROOT_SIZE - BT_NODE_HDR;
	t->root.ptr = 0;
}

int ext_init_root(struct cfs_fs *fs, struct inode *ip)
{
	(void)fs;
	memset(ip->var, 0, CFS_EXT_ROOT_SIZE);
	ip->d.flags = (uint16_t)((ip->d.flags & ~CFS_IFL_INLINE) | CFS_IFL_EXTENTS);
	return 0;
}

int ext_root_empty_index(const struct inode *ip)
{
	return (ip->d.flags & CFS_IFL_EXTENTS) && cfs_btn_level(ip->var) > 0 &&
	       cfs_btn_nrec(ip->var) == 0;
}

static void ext_decode(const uint8_t *r, struct extent *e)
{
	cfs_extent_decode(r, &e->lblk, &e->pblk, &e->len);
}

static void ext_encode(const struct extent *e, uint8_t *r)
{
	cfs_extent_encode(r, e->lblk, e->pblk, e->len);
}

/* A record pointing outside the chunk's data area is corruption; catching
 * it here keeps a hostile image from steering reads or frees elsewhere. */
int ext_sane(const struct cfs_fs *fs, const struct extent *e)
{
	/* past the last block of a file of INT64_MAX bytes no write reaches */
	uint64_t end = (uint64_t)INT64_MAX / fs->bsize + 1;

	if (!e->len || e->len > CFS_EXT_MAX_LEN || e->pblk < fs->sb.data_start ||
	    (uint64_t)e->pblk + e->len > fs->sb.chunk_blocks ||
	    e->lblk > end || e->len > end - e->lblk)
		return -EUCLEAN;
	return 0;
}

int ext_lookup(struct cfs_fs *fs, struct inode *ip, uint64_t lblk, struct extent *e)
{
	struct ext_ctx x;
	struct btree t;
	struct bt_cur c;
	uint64_t next = UINT64_MAX;
	int ret;

	e->lblk = UINT64_MAX;
	if (!(ip->d.flags & CFS_IFL_EXTENTS))
		return 0;
	ext_tree(fs, ip, &x, &t);
	ret = bt_seek(&t, lblk, BT_LE, &c);
	if (ret == 1) {
		ext_decode(bt_rec(&c), e);
		if (ext_sane(fs, e) < 0)
			ret = ext_corrupt(&x, &c.p[0].n, "impossible extent");
		else if (lblk < e->lblk + e->len)
			goto found;
		else if ((ret = bt_next(&c)) == 1)
			next = bt_key(&c);
	} else if (ret == 0) {
		bt_release(&c);
		ret = bt_seek(&t, lblk, BT_GE, &c);
		if (ret == 1)
			next = bt_key(&c);
	}
	bt_release(&c);
	e->lblk = next;
	return ret < 0 ? ret : 0;
found:
	bt_release(&c);
	return 1;
}

int ext_insert(struct cfs_fs *fs, struct inode *ip, const struct extent *e)
{
	struct ext_ctx x;
	struct btree t;
	struct bt_cur c;
	struct extent p;
	uint8_t rec[CFS_EXT_SIZE];
	int ret;

	if (!(ip->d.flags & CFS_IFL_EXTENTS))
		ext_init_root(fs, ip);
	ext_tree(fs, ip, &x, &t);
	ret = bt_seek(&t, e->lblk, BT_LE, &c);
	if (ret == 1) {
		ext_decode(bt_rec(&c), &p);
		if (p.lblk + p.len == e->lblk && p.pblk + p.len == e->pblk &&
		    (uint64_t)p.len + e->len <= CFS_EXT_MAX_LEN) {
			p.len += e->len;
			ext_encode(&p, bt_rec(&c));
			ret = bt_dirty(&c);
			bt_release(&c);
			return ret;
		}
	}
	bt_release(&c);
	if (ret < 0)
		return ret;
	ext_encode(e, rec);
	return bt_insert(&t, rec, CFS_EXT_SIZE);
}

/* Find the first extent overlapping [from, to).  1 found, 0 none. */
static int ext_find_overlap(struct btree *t, uint64_t from, uint64_t to,
			    struct bt_cur *c, struct extent *e)
{
	int ret = bt_seek(t, from, BT_LE, c);

	if (ret == 0) {
		bt_release(c);
		ret = bt_seek(t, from, BT_GE, c);
	}
	while (ret == 1) {
		ext_decode(bt_rec(c), e);
		if (e->lblk >= to)
			return 0;
		if (e->lblk + e->len > from)
			return 1;
		ret = bt_next(c);
	}
	return ret;
}

int ext_remove(struct cfs_fs *fs, struct inode *ip, uint64_t from, uint64_t to)
{
	struct ext_ctx x;
	struct btree t;
	struct bt_cur c;
	struct extent e, tail;
	uint32_t ch = ino_chunk(ip);
	int ret;

	if (!(ip->d.flags & CFS_IFL_EXTENTS) || from >= to)
		return 0;
	ext_tree(fs, ip, &x, &t);
	for (;;) {
		uint64_t s, end;

		ret = ext_find_overlap(&t, from, to, &c, &e);
		if (ret <= 0) {
			bt_release(&c);
			return ret;
		}
		if (ext_sane(fs, &e) < 0) {
			ret = ext_corrupt(&x, &c.p[0].n, "impossible extent");
			bt_release(&c);
			return ret;
		}
		s = e.lblk > from ? e.lblk : from;
		end = e.lblk + e.len < to ? e.lblk + e.len : to;
		tail.len = 0;
		if (e.lblk + e.len > end) {
			tail.lblk = end;
			tail.pblk = e.pblk + (uint32_t)(end - e.lblk);
			tail.len = (uint32_t)(e.lblk + e.len - end);
		}
		if (s > e.lblk) {
			/* keep the head part in place, re-add any tail */
			struct extent h = e;

			h.len = (uint32_t)(s - e.lblk);
			ext_encode(&h, bt_rec(&c));
			ret = bt_dirty(&c);
			bt_release(&c);
		} else if (tail.len) {
			ext_encode(&tail, bt_rec(&c));
			ret = bt_dirty(&c);
			bt_release(&c);
			tail.len = 0;
		} else {
			ret = bt_delete(&c);
		}
		if (ret < 0)
			return ret;
		ret = chunk_free_blocks(fs, ch, e.pblk + (uint32_t)(s - e.lblk),
					(uint32_t)(end - s));
		ip->d.nblocks -= end - s;
		if (ret == 0 && tail.len)
			ret = ext_insert(fs, ip, &tail);
		if (ret == 0)
			ret = inode_write(fs, ip);
		if (ret < 0)
			return ret;
	}
}

int ext_end_below(struct cfs_fs *fs, struct inode *ip, uint64_t below, uint64_t *end)
{
	struct ext_ctx x;
	struct btree t;
	struct bt_cur c;
	struct extent e;
	int ret;

	*end = 0;
	if (!(ip->d.flags & CFS_IFL_EXTENTS) || below == 0)
		return 0;
	ext_tree(fs, ip, &x, &t);
	ret = bt_seek(&t, below - 1, BT_LE, &c);
	if (ret == 1) {
		ext_decode(bt_rec(&c), &e);
		if (ext_sane(fs, &e) < 0)
			ret = ext_corrupt(&x, &c.p[0].n, "impossible extent");
		else
			*end = e.lblk + e.len < below ? e.lblk + e.len : below;
	}
	bt_release(&c);
	return ret < 0 ? ret : 0;
}

struct walk_ctx {
	struct cfs_fs *fs;
	struct inode *ip;
	int (*cb)(void *ctx, const struct extent *e, int is_node, uint32_t node_rel);
	void *ctx;
	uint64_t next;          /* where the next record may start */
	struct ext_skipped *sk; /* the caller's, or ext_walk's own */
};

static void walk_misplaced(struct walk_ctx *w, const struct extent *e)
{
	if (w->sk->nmisplaced < EXT_MISPLACED_MAX)
		w->sk->misplaced[w->sk->nmisplaced] = *e;
	w->sk->nmisplaced++;
}

/* Extents at or past hi after one below it are a split's leftovers
 * (bt_walk): their blocks are the right node's to name, and so are those
 * of the part past hi of an extent that reaches it (ext_clip).  A sound
 * record anywhere else outside [lo, hi), or starting before the one
 * before it ends, is out of place: no crash leaves one (FORMAT.md 12), a
 * lookup by key misses it, and it is skipped and kept aside.  Impossible
 * records go to the callback as they are (ext_sane is its to ask). */
static int ext_walk_node(void *vc, struct bt_node *n, int level, uint64_t lo, uint64_t hi)
{
	struct walk_ctx *w = vc;
	struct extent e;
	int i, ret, below = 0, stale = 0;

	if (level == 0) {
		if ((size_t)bt_nrec(n) * CFS_EXT_SIZE > bt_used(n))
			return ext_bad(w->fs, w->ip, tree_node_blk(n), "bad extent leaf");
		for (i = 0; i < bt_nrec(n); i++) {
			uint8_t *rec = n->recs + (size_t)i * CFS_EXT_SIZE;

			ext_decode(rec, &e);
			if (e.lblk >= hi && below) {
				stale = 1;
				break;
			}
			if (ext_sane(w->fs, &e) == 0) {
				if (e.lblk < lo || e.lblk < w->next || e.lblk >= hi) {
					walk_misplaced(w, &e);
					continue;
				}
				if (ext_clip(rec, hi, 0)) {
					e.len = (uint32_t)(hi - e.lblk);
					stale = 1;
				}
				w->next = e.lblk + e.len;
			}
			below = 1;
			ret = w->cb(w->ctx, &e, 0, 0);
			if (ret)
				return ret;
		}
		w->sk->leftovers += stale;
	}
	if (n->priv)
		return w->cb(w->ctx, NULL, 1, (uint32_t)n->ptr);
	return 0;
}

int ext_walk(struct cfs_fs *fs, struct inode *ip,
	     int (*cb)(void *ctx, const struct extent *e, int is_node, uint32_t node_rel),
	     void *ctx, struct ext_skipped *sk)
{
	struct ext_ctx x;
	struct btree t;
	struct ext_skipped own;
	struct walk_ctx w = { .fs = fs, .ip = ip, .cb = cb, .ctx = ctx, .sk = sk ? sk : &own };
	int ret = 0;

	/* the counts only: the records are written as they are found (the
	 * quick pass walks every inode's map) */
	w.sk->leftovers = w.sk->nmisplaced = 0;
	if (ip->d.flags & CFS_IFL_EXTENTS) {
		ext_tree(fs, ip, &x, &t);
		ret = bt_walk(&t, &w.sk->leftovers, ext_walk_node, &w);
	}
	return ret;
}

int ext_drop(struct cfs_fs *fs, struct inode *ip, const struct extent *bad)
{
	struct ext_ctx x;
	struct btree t;
	struct bt_cur c;
	struct extent e;
	int ret;

	if (!(ip->d.flags & CFS_IFL_EXTENTS))
		return -ENOENT;
	ext_tree(fs, ip, &x, &t);
	/* record by record, not by seeking its key: the damage that made it
	 * impossible may have left keys out of order or twice */
	for (ret = bt_first(&t, &c); ret == 1; ret = bt_next(&c)) {
		ext_decode(bt_rec(&c), &e);
		if (e.lblk == bad->lblk && e.pblk == bad->pblk && e.len == bad->len)
			return bt_delete(&c);
	}
	bt_release(&c);
	return ret < 0 ? ret : -ENOENT;
}

int ext_trim_leftovers(struct cfs_fs *fs, struct inode *ip, int fix)
{
	struct ext_ctx x;
	struct btree t;

	if (!(ip->d.flags & CFS_IFL_EXTENTS))
		return 0;
	ext_tree(fs, ip, &x, &t);
	return bt_trim_leftovers(&t, fix);
}

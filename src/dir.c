/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Directories: a B+tree of name records keyed by a 63-bit name hash,
 * stored in the directory's own logical blocks (so a directory continues
 * across chunks exactly like file data).  Logical block 0 is the root.
 *
 * Node blocks and name records are laid out by the format layer (format.h,
 * FORMAT.md 14.2).  The directory inode's lo field counts its entries ("." and ".." aside)
 * and hi those of them that carry a stub (name another chunk); callers
 * write the inode after every change. */
#include <errno.h>
#include <string.h>

#include "btree.h"
#include "fsint.h"
#include "tree_node.h"

struct dir_ctx {
	struct cfs_fs *fs;
	struct inode *dp;
};

uint64_t dir_hash(struct cfs_fs *fs, const char *name, size_t len)
{
	return cfs_name_hash(fs->sb.hash_seed, name, len);
}


/* Corruption in dp's tree or records (FORMAT.md 18): its entries are its
 * head's chunk's (16.1), whichever chunk holds the node (blk, 0: not
 * known). */
static int dir_bad(struct cfs_fs *fs, struct inode *dp, uint64_t blk, const char *what)
{
	return chunk_corrupt(fs, CFS_INO_CHUNK(dp->ino), dp->ino, blk, what);
}

static int dir_corrupt(void *vc, const struct bt_node *n, const char *what)
{
	struct dir_ctx *x = vc;

	return dir_bad(x->fs, x->dp, tree_node_blk(n), what);
}

static int dir_get_node(struct dir_ctx *x, uint64_t lblk, struct bt_node *n)
{
	struct cfs_fs *fs = x->fs;
	uint64_t abs;
	uint32_t len;
	int ret;

	if (lblk >= x->dp->d.size / fs->bsize)
		return dir_bad(fs, x->dp, 0, "directory node past its size");
	ret = file_map(fs, x->dp, lblk, &abs, &len);
	if (ret == 0)
		return dir_bad(fs, x->dp, 0, "directory node missing");
	if (ret < 0)
		return ret;
	return tree_node_get(fs, abs, CFS_MAGIC_DIR, x->dp->ino, lblk, n);
}

static int dir_get(void *vc, uint64_t ptr, int level, struct bt_node *n)
{
	(void)level;
	return dir_get_node(vc, ptr, n);
}

static int dir_alloc(void *vc, int level, struct bt_node *n)
{
	struct dir_ctx *x = vc;
	struct cfs_fs *fs = x->fs;
	uint64_t lblk = x->dp->d.size / fs->bsize, abs;
	uint32_t got;
	int ret;

	ret = file_alloc(fs, x->dp, lblk, 1, &abs, &got);
	if (ret < 0)
		return ret;
	ret = tree_node_new(fs, abs, CFS_MAGIC_DIR, x->dp->ino, lblk, level, n);
	if (ret < 0) {
		file_punch(fs, x->dp, lblk, lblk + 1);
		return ret;
	}
	x->dp->d.size += fs->bsize;
	return inode_write(fs, x->dp);
}

static void dir_put(void *vc, struct bt_node *n)
{
	tree_node_put(((struct dir_ctx *)vc)->fs, n);
}

static int dir_release(void *vc, struct bt_node *n)
{
	struct dir_ctx *x = vc;

	dir_put(vc, n);
	n->priv = NULL;
	return file_punch(x->fs, x->dp, n->ptr, n->ptr + 1);
}

static int dir_dirty(void *vc, struct bt_node *n)
{
	struct dir_ctx *x = vc;

	return buf_dirty(&x->fs->cache, n->priv);
}

/* Everything dirty reaches the disk before n's new contents: the new
 * node, the index naming it, and the directory's inode and block map
 * through which fsck finds the leaves again after a crash; leaves rely
 * only on unordered buffers, as cache_order requires. */
static int dir_persist(void *vc, struct bt_node *m, struct bt_node *n)
{
	(void)m;
	return tree_node_persist(((struct dir_ctx *)vc)->fs, n);
}

static const struct bt_ops dir_ops = {
	.leaf_len = cfs_dirent_len, .get = dir_get, .alloc = dir_alloc,
	.release = dir_release, .dirty = dir_dirty, .persist = dir_persist,
	.put = dir_put, .corrupt = dir_corrupt,
};

/* One operation on a directory's tree. */
struct dir_op {
	struct dir_ctx x;
	struct btree t;
	struct bt_cur c;
};

/* Open the tree: holds the root block until dir_close. */
static int dir_open(struct cfs_fs *fs, struct inode *dp, struct dir_op *o)
{
	o->x.fs = fs;
	o->x.dp = dp;
	o->t.ops = &dir_ops;
	o->t.ctx = &o->x;
	return dir_get_node(&o->x, 0, &o->t.root);
}

static void dir_close(struct btree *t)
{
	dir_put(t->ctx, &t->root);
}

/* Release the cursor, then the tree. */
static void dir_done(struct dir_op *o)
{
	bt_release(&o->c);
	dir_close(&o->t);
}

int dir_init(struct cfs_fs *fs, struct inode *dp)
{
	struct dir_ctx x = { fs, dp };
	struct bt_node n;
	int ret;

	ext_init_root(fs, dp);
	dp->d.size = 0;
	ret = dir_alloc(&x, 0, &n);
	if (ret < 0)
		return ret;
	ret = dir_dirty(&x, &n);
	dir_put(&x, &n);
	return ret;
}

static void rec_decode(const uint8_t *p, struct dirent_rec *r)
{
	struct cfs_dirent d;

	cfs_dirent_decode(p, &d);
	r->hash = d.hash;
	r->ino = d.ino;
	r->stub = d.stub;
	r->type = d.type;
	r->namelen = d.namelen;
	memcpy(r->name, d.name, d.namelen);
	r->name[d.namelen] = 0;
}

/* An entry naming no possible inode: recorded, -EUCLEAN (dir_iterate
 * still lists it, for the checker, which clears such entries). */
static int rec_check(struct dir_op *o, const struct dirent_rec *r)
{
	struct cfs_fs *fs = o->x.fs;

	if (!ino_valid(fs, r->ino) || (r->stub && !ino_valid(fs, r->stub)))
		return dir_corrupt(&o->x, &o->c.p[0].n, "entry names no valid inode");
	return 0;
}

static size_t rec_encode(const struct dirent_rec *r, uint8_t *p)
{
	struct cfs_dirent d = { r->hash, r->ino, r->stub, r->type, r->namelen,
				(const uint8_t *)r->name };

	return cfs_dirent_encode(&d, p);
}

/* Position the cursor on name's record: 1 found, 0 absent. */
static int dir_find(struct btree *t, const char *name, size_t len, struct bt_cur *c)
{
	struct dir_ctx *x = t->ctx;
	uint64_t h = dir_hash(x->fs, name, len);
	int ret = bt_seek(t, h, BT_GE, c);

	while (ret == 1 && bt_key(c) == h) {
		struct cfs_dirent d;

		cfs_dirent_decode(bt_rec(c), &d);
		if (d.namelen == len && !memcmp(d.name, name, len))
			return 1;
		ret = bt_next(c);
	}
	return ret < 0 ? ret : 0;
}

int dir_lookup(struct cfs_fs *fs, struct inode *dp, const char *name, struct dirent_rec *out)
{
	struct dir_op o;
	int ret = dir_open(fs, dp, &o);

	if (ret < 0)
		return ret;
	ret = dir_find(&o.t, name, strlen(name), &o.c);
	if (ret == 1) {
		rec_decode(bt_rec(&o.c), out);
		if (rec_check(&o, out) < 0)
			ret = -EUCLEAN;
	}
	dir_done(&o);
	return ret < 0 ? ret : ret ? 0 : -ENOENT;
}

int dir_add(struct cfs_fs *fs, struct inode *dp, const struct dirent_rec *r)
{
	uint8_t rec[CFS_DE_FIXED + CFS_NAME_MAX];
	struct dirent_rec e = *r;
	struct dir_op o;
	int ret = dir_open(fs, dp, &o);

	if (ret < 0)
		return ret;
	e.hash = dir_hash(fs, r->name, r->namelen);
	ret = bt_insert(&o.t, rec, rec_encode(&e, rec));
	if (ret == 0) {
		/* entry counts: let fsck notice lost entries, and whether any
		 * of them named another chunk */
		dp->d.lo++;
		dp->d.hi += !!e.stub;
	}
	dir_close(&o.t);
	return ret;
}

int dir_remove(struct cfs_fs *fs, struct inode *dp, const char *name)
{
	struct dir_op o;
	int ret = dir_open(fs, dp, &o);

	if (ret < 0)
		return ret;
	ret = dir_find(&o.t, name, strlen(name), &o.c);
	if (ret == 1) {
		struct cfs_dirent d;
		int remote;

		cfs_dirent_decode(bt_rec(&o.c), &d);
		remote = d.stub != 0;
		ret = bt_delete(&o.c);
		if (ret == 0) {
			dp->d.lo--;
			dp->d.hi -= remote;
		}
	} else {
		bt_release(&o.c);
		if (ret == 0)
			ret = -ENOENT;
	}
	/* Freed nodes leave holes in the directory's logical blocks; once the
	 * directory is empty they all go, so its size does not creep up. */
	if (ret == 0 && bt_nrec(&o.t.root) == 0 && dp->d.size > fs->bsize) {
		ret = file_punch(fs, dp, 1, UINT64_MAX);
		dp->d.size = fs->bsize;
		if (ret == 0)
			ret = inode_write(fs, dp);
	}
	dir_close(&o.t);
	return ret;
}

static int update(struct cfs_fs *fs, struct inode *dp, const struct dirent_rec *r,
		  int ordered)
{
	struct dir_op o;
	int ret = dir_open(fs, dp, &o);

	if (ret < 0)
		return ret;
	ret = dir_find(&o.t, r->name, r->namelen, &o.c);
	/* ordered before the change: a flush meanwhile cannot take the
	 * leaf out ahead of what it is to rely on */
	if (ret == 1 && ordered && (ret = tree_node_persist(fs, &o.c.p[0].n)) == 0)
		ret = 1;
	if (ret == 1) {
		struct cfs_dirent d;

		cfs_dirent_decode(bt_rec(&o.c), &d);
		dp->d.hi += (uint64_t)(r->stub != 0) - (d.stub != 0);
		cfs_dirent_retarget(bt_rec(&o.c), r->ino, r->stub, r->type);
		ret = bt_dirty(&o.c);
	} else if (ret == 0) {
		ret = -ENOENT;
	}
	dir_done(&o);
	return ret;
}

int dir_update(struct cfs_fs *fs, struct inode *dp, const struct dirent_rec *r)
{
	return update(fs, dp, r, 0);
}

int dir_update_last(struct cfs_fs *fs, struct inode *dp, const struct dirent_rec *r)
{
	return update(fs, dp, r, 1);
}

int dir_is_empty(struct cfs_fs *fs, struct inode *dp)
{
	struct dir_op o;
	int ret = dir_open(fs, dp, &o);

	if (ret < 0)
		return ret;
	ret = bt_nrec(&o.t.root) == 0;
	dir_close(&o.t);
	return ret;
}

int dir_iterate(struct cfs_fs *fs, struct inode *dp, uint64_t cookie,
		int (*cb)(void *ctx, const struct dirent_rec *r), void *ctx)
{
	struct dirent_rec r;
	struct dir_op o;
	int ret = dir_open(fs, dp, &o);

	if (ret < 0)
		return ret;
	for (ret = bt_seek(&o.t, cookie, BT_GE, &o.c); ret == 1; ret = bt_next(&o.c)) {
		if (bt_rec_len(&o.c) == 0) {
			ret = dir_corrupt(&o.x, &o.c.p[0].n, "bad directory record");
			break;
		}
		rec_decode(bt_rec(&o.c), &r);
		rec_check(&o, &r);
		if (cb(ctx, &r)) {
			ret = 0;
			break;
		}
	}
	dir_done(&o);
	return ret < 0 ? ret : 0;
}

static int leaf_salvage(struct cfs_fs *fs, struct inode *dp, const uint8_t *blk,
			int (*cb)(void *ctx, const struct dirent_rec *r), void *ctx)
{
	const uint8_t *h = cfs_node_hdr(blk), *recs = cfs_node_recs(blk);
	uint32_t used = cfs_btn_used(h), off = 0;
	uint16_t nrec = cfs_btn_nrec(h), i;
	struct dirent_rec r;
	int ret;

	if (cfs_btn_level(h) != 0 || cfs_node_owner(blk) != dp->ino ||
	    used > cfs_node_cap(fs->bsize))
		return 0;
	for (i = 0; i < nrec; i++) {
		size_t len = cfs_dirent_len(recs + off, used - off);

		if (!len)
			break;
		rec_decode(recs + off, &r);
		ret = cb(ctx, &r);
		if (ret)
			return ret;
		off += (uint32_t)len;
	}
	return 0;
}

int dir_salvage(struct cfs_fs *fs, struct inode *dp,
		int (*cb)(void *ctx, const struct dirent_rec *r), void *ctx)
{
	uint64_t lblk, n = dp->d.size / fs->bsize, abs;
	uint32_t len;
	struct buf *b;
	int ret;

	for (lblk = 0; lblk < n; lblk++) {
		ret = file_map(fs, dp, lblk, &abs, &len);
		if (ret < 0)
			return ret;
		if (ret == 0) {
			/* skip the whole hole: a hostile size must not mean
			 * a walk over every logical block it claims */
			lblk += len - 1;
			continue;
		}
		if (cache_get_meta(&fs->cache, abs, CFS_MAGIC_DIR, &b) < 0)
			continue;
		ret = leaf_salvage(fs, dp, b->data, cb, ctx);
		buf_put(&fs->cache, b);
		if (ret)
			return ret;
	}
	return 0;
}

int dir_rebuild(struct cfs_fs *fs, struct inode *dp, const struct dirent_rec *r, size_t n)
{
	size_t i;
	int ret = file_punch(fs, dp, 0, UINT64_MAX);

	if (ret == 0)
		ret = dir_init(fs, dp);
	dp->d.lo = 0;
	dp->d.hi = 0;
	for (i = 0; i < n && ret == 0; i++)
		ret = dir_add(fs, dp, &r[i]);
	if (ret == 0)
		ret = inode_write(fs, dp);
	return ret;
}

int dir_has_entry(struct cfs_fs *fs, struct inode *dp, uint64_t hash, cfs_ino_t ino,
		  cfs_ino_t stub)
{
	struct dir_op o;
	int ret = dir_open(fs, dp, &o), found = 0;

	if (ret < 0)
		return ret;
	for (ret = bt_seek(&o.t, hash, BT_GE, &o.c); ret == 1 && bt_key(&o.c) == hash;
	     ret = bt_next(&o.c)) {
		struct cfs_dirent d;

		cfs_dirent_decode(bt_rec(&o.c), &d);
		if (d.ino == ino && d.stub == stub) {
			found = 1;
			break;
		}
	}
	dir_done(&o);
	return ret < 0 ? ret : found;
}

/* Directories: a B+tree of name records keyed by a 63-bit name hash,
 * stored in the directory's own logical blocks (so a directory continues
 * across chunks exactly like file data).  Logical block 0 is the root.
 *
 * Node block: common header (16), node header at 16 (level u16, nrec u16,
 * used u32), owner inode u32 at 24, zero u32 at 28, records from 32.
 * Leaf record: 0 u64 hash, 8 u32 inode, 12 u32 stub inode (0 = none),
 * 16 u8 type (DT_*), 17 u8 name length, 18 name bytes (no NUL).
 * The directory inode's lo field counts its entries ("." and ".." aside)
 * and hi those of them that carry a stub (name another chunk); callers
 * write the inode after every change. */
#include <errno.h>
#include <string.h>

#include "btree.h"
#include "fsint.h"
#include "le.h"

#define DIR_NODE_HDR   16
#define DIR_NODE_OWNER 24
#define DIR_RECS       32
#define DIR_REC_FIXED  18

struct dir_ctx {
	struct cfs_fs *fs;
	struct inode *dp;
};

uint64_t dir_hash(struct cfs_fs *fs, const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull ^ fs->sb.hash_seed;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (uint8_t)name[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	h &= 0x7FFFFFFFFFFFFFFFull;   /* readdir offsets are signed */
	return h < 2 ? h + 2 : h;     /* 0 and 1 are "." and ".." */
}

static size_t dir_leaf_len(const uint8_t *rec, size_t room)
{
	size_t l;

	if (room < DIR_REC_FIXED)
		return 0;
	l = DIR_REC_FIXED + rec[17];
	return (rec[17] == 0 || l > room) ? 0 : l;
}

static void node_from_buf(struct cfs_fs *fs, struct buf *b, struct bt_node *n)
{
	n->priv = b;
	n->hdr = b->data + DIR_NODE_HDR;
	n->recs = b->data + DIR_RECS;
	n->cap = fs->bsize - DIR_RECS;
}

static int dir_get_node(struct dir_ctx *x, uint64_t lblk, struct bt_node *n)
{
	struct cfs_fs *fs = x->fs;
	uint64_t abs;
	uint32_t len;
	struct buf *b;
	int ret;

	if (lblk >= x->dp->d.size / fs->bsize)
		return -EUCLEAN;
	ret = file_map(fs, x->dp, lblk, &abs, &len);
	if (ret <= 0)
		return ret ? ret : -EUCLEAN;
	ret = cache_get_meta(&fs->cache, abs, CFS_MAGIC_DIR, &b);
	if (ret < 0)
		return ret;
	if (get_le32(b->data + DIR_NODE_OWNER) != x->dp->ino) {
		buf_put(&fs->cache, b);
		return -EUCLEAN;
	}
	node_from_buf(fs, b, n);
	n->ptr = lblk;
	return 0;
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
	struct buf *b;
	int ret;

	ret = file_alloc(fs, x->dp, lblk, 1, &abs, &got);
	if (ret < 0)
		return ret;
	ret = cache_new_meta(&fs->cache, abs, CFS_MAGIC_DIR, &b);
	if (ret < 0) {
		file_punch(fs, x->dp, lblk, lblk + 1);
		return ret;
	}
	put_le32(b->data + DIR_NODE_OWNER, x->dp->ino);
	node_from_buf(fs, b, n);
	n->ptr = lblk;
	bt_node_init(n, level);
	x->dp->d.size += fs->bsize;
	return inode_write(fs, x->dp);
}

static void dir_put(void *vc, struct bt_node *n)
{
	struct dir_ctx *x = vc;

	if (n->priv)
		buf_put(&x->fs->cache, n->priv);
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

/* Everything dirty goes to disk: the new node, the index naming it, and
 * the directory's inode and block map through which fsck finds the leaves
 * again after a crash. */
static int dir_persist(void *vc, struct bt_node *n)
{
	(void)n;
	return cache_flush(&((struct dir_ctx *)vc)->fs->cache, 0, UINT64_MAX);
}

static const struct bt_ops dir_ops = {
	.leaf_len = dir_leaf_len,
	.get = dir_get,
	.alloc = dir_alloc,
	.release = dir_release,
	.dirty = dir_dirty,
	.persist = dir_persist,
	.put = dir_put,
};

/* Open the tree: holds the root block until dir_close. */
static int dir_open(struct cfs_fs *fs, struct inode *dp, struct dir_ctx *x, struct btree *t)
{
	x->fs = fs;
	x->dp = dp;
	t->ops = &dir_ops;
	t->ctx = x;
	return dir_get_node(x, 0, &t->root);
}

static void dir_close(struct btree *t)
{
	dir_put(t->ctx, &t->root);
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
	r->hash = get_le64(p);
	r->ino = get_le32(p + 8);
	r->stub = get_le32(p + 12);
	r->type = p[16];
	r->namelen = p[17];
	memcpy(r->name, p + DIR_REC_FIXED, r->namelen);
	r->name[r->namelen] = 0;
}

static size_t rec_encode(const struct dirent_rec *r, uint8_t *p)
{
	put_le64(p, r->hash);
	put_le32(p + 8, r->ino);
	put_le32(p + 12, r->stub);
	p[16] = r->type;
	p[17] = r->namelen;
	memcpy(p + DIR_REC_FIXED, r->name, r->namelen);
	return DIR_REC_FIXED + r->namelen;
}

/* Position the cursor on name's record: 1 found, 0 absent. */
static int dir_find(struct btree *t, const char *name, size_t len, struct bt_cur *c)
{
	struct dir_ctx *x = t->ctx;
	uint64_t h = dir_hash(x->fs, name, len);
	int ret = bt_seek(t, h, BT_GE, c);

	while (ret == 1 && bt_key(c) == h) {
		const uint8_t *p = bt_rec(c);

		if (p[17] == len && !memcmp(p + DIR_REC_FIXED, name, len))
			return 1;
		ret = bt_next(c);
	}
	return ret < 0 ? ret : 0;
}

int dir_lookup(struct cfs_fs *fs, struct inode *dp, const char *name, struct dirent_rec *out)
{
	struct dir_ctx x;
	struct btree t;
	struct bt_cur c;
	int ret = dir_open(fs, dp, &x, &t);

	if (ret < 0)
		return ret;
	ret = dir_find(&t, name, strlen(name), &c);
	if (ret == 1)
		rec_decode(bt_rec(&c), out);
	bt_release(&c);
	dir_close(&t);
	return ret < 0 ? ret : ret ? 0 : -ENOENT;
}

int dir_add(struct cfs_fs *fs, struct inode *dp, const struct dirent_rec *r)
{
	uint8_t rec[DIR_REC_FIXED + CFS_NAME_MAX];
	struct dirent_rec e = *r;
	struct dir_ctx x;
	struct btree t;
	int ret = dir_open(fs, dp, &x, &t);

	if (ret < 0)
		return ret;
	e.hash = dir_hash(fs, r->name, r->namelen);
	ret = bt_insert(&t, rec, rec_encode(&e, rec));
	if (ret == 0) {
		/* entry counts: let fsck notice lost entries, and whether any
		 * of them named another chunk */
		dp->d.lo++;
		dp->d.hi += !!e.stub;
	}
	dir_close(&t);
	return ret;
}

int dir_remove(struct cfs_fs *fs, struct inode *dp, const char *name)
{
	struct dir_ctx x;
	struct btree t;
	struct bt_cur c;
	int ret = dir_open(fs, dp, &x, &t);

	if (ret < 0)
		return ret;
	ret = dir_find(&t, name, strlen(name), &c);
	if (ret == 1) {
		int remote = get_le32(bt_rec(&c) + 12) != 0;

		ret = bt_delete(&c);
		if (ret == 0) {
			dp->d.lo--;
			dp->d.hi -= remote;
		}
	} else {
		bt_release(&c);
		if (ret == 0)
			ret = -ENOENT;
	}
	/* Freed nodes leave holes in the directory's logical blocks; once the
	 * directory is empty they all go, so its size does not creep up. */
	if (ret == 0 && bt_nrec(&t.root) == 0 && dp->d.size > fs->bsize) {
		ret = file_punch(fs, dp, 1, UINT64_MAX);
		dp->d.size = fs->bsize;
		if (ret == 0)
			ret = inode_write(fs, dp);
	}
	dir_close(&t);
	return ret;
}

int dir_update(struct cfs_fs *fs, struct inode *dp, const struct dirent_rec *r)
{
	struct dir_ctx x;
	struct btree t;
	struct bt_cur c;
	int ret = dir_open(fs, dp, &x, &t);

	if (ret < 0)
		return ret;
	ret = dir_find(&t, r->name, r->namelen, &c);
	if (ret == 1) {
		uint8_t *p = bt_rec(&c);

		dp->d.hi += (uint64_t)(r->stub != 0) - (get_le32(p + 12) != 0);
		put_le32(p + 8, r->ino);
		put_le32(p + 12, r->stub);
		p[16] = r->type;
		ret = bt_dirty(&c);
	} else if (ret == 0) {
		ret = -ENOENT;
	}
	bt_release(&c);
	dir_close(&t);
	return ret;
}

int dir_is_empty(struct cfs_fs *fs, struct inode *dp)
{
	struct dir_ctx x;
	struct btree t;
	int ret = dir_open(fs, dp, &x, &t);

	if (ret < 0)
		return ret;
	ret = bt_nrec(&t.root) == 0;
	dir_close(&t);
	return ret;
}

int dir_iterate(struct cfs_fs *fs, struct inode *dp, uint64_t cookie,
		int (*cb)(void *ctx, const struct dirent_rec *r), void *ctx)
{
	struct dirent_rec r;
	struct dir_ctx x;
	struct btree t;
	struct bt_cur c;
	int ret = dir_open(fs, dp, &x, &t);

	if (ret < 0)
		return ret;
	for (ret = bt_seek(&t, cookie, BT_GE, &c); ret == 1; ret = bt_next(&c)) {
		if (bt_rec_len(&c) == 0) {
			ret = -EUCLEAN;
			break;
		}
		rec_decode(bt_rec(&c), &r);
		if (cb(ctx, &r)) {
			ret = 0;
			break;
		}
	}
	bt_release(&c);
	dir_close(&t);
	return ret < 0 ? ret : 0;
}

static int leaf_salvage(struct cfs_fs *fs, struct inode *dp, const uint8_t *blk,
			int (*cb)(void *ctx, const struct dirent_rec *r), void *ctx)
{
	uint32_t used = get_le32(blk + DIR_NODE_HDR + 4), off = 0;
	uint16_t nrec = get_le16(blk + DIR_NODE_HDR + 2), i;
	struct dirent_rec r;
	int ret;

	if (get_le16(blk + DIR_NODE_HDR) != 0 || get_le32(blk + DIR_NODE_OWNER) != dp->ino ||
	    used > fs->bsize - DIR_RECS)
		return 0;
	for (i = 0; i < nrec; i++) {
		size_t len = dir_leaf_len(blk + DIR_RECS + off, used - off);

		if (!len)
			break;
		rec_decode(blk + DIR_RECS + off, &r);
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
	struct dir_ctx x;
	struct btree t;
	struct bt_cur c;
	int ret = dir_open(fs, dp, &x, &t), found = 0;

	if (ret < 0)
		return ret;
	for (ret = bt_seek(&t, hash, BT_GE, &c); ret == 1 && bt_key(&c) == hash;
	     ret = bt_next(&c)) {
		const uint8_t *p = bt_rec(&c);

		if (get_le32(p + 8) == ino && get_le32(p + 12) == stub) {
			found = 1;
			break;
		}
	}
	bt_release(&c);
	dir_close(&t);
	return ret < 0 ? ret : found;
}

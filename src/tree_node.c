/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Cached node blocks shared by the extent and directory trees; see
 * tree_node.h. */
#include "tree_node.h"

#include <errno.h>

#include "fsint.h"

static void node_view(struct cfs_fs *fs, struct buf *b, uint64_t ptr, struct bt_node *n)
{
	n->priv = b;
	n->hdr = cfs_node_hdr(b->data);
	n->recs = cfs_node_recs(b->data);
	n->cap = cfs_node_cap(fs->bsize);
	n->ptr = ptr;
}

int tree_node_get(struct cfs_fs *fs, uint64_t abs, uint32_t magic, uint32_t owner,
		  uint64_t ptr, struct bt_node *n)
{
	struct buf *b;
	int ret = cache_get_meta(&fs->cache, abs, magic, &b);

	if (ret < 0)
		return ret;
	if (cfs_node_owner(b->data) != owner) {
		buf_put(&fs->cache, b);
		/* the owner's chunk: its check walks the owner's tree */
		return chunk_corrupt(fs, CFS_INO_CHUNK(owner), owner, abs,
				     "tree node of another inode");
	}
	node_view(fs, b, ptr, n);
	return 0;
}

int tree_node_new(struct cfs_fs *fs, uint64_t abs, uint32_t magic, uint32_t owner,
		  uint64_t ptr, int level, struct bt_node *n)
{
	struct buf *b;
	int ret = cache_new_meta(&fs->cache, abs, magic, &b);

	if (ret < 0)
		return ret;
	cfs_node_set_owner(b->data, owner);
	node_view(fs, b, ptr, n);
	bt_node_init(n, level);
	return 0;
}

uint64_t tree_node_blk(const struct bt_node *n)
{
	return n && n->priv ? ((const struct buf *)n->priv)->blk : 0;
}

void tree_node_put(struct cfs_fs *fs, struct bt_node *n)
{
	if (n->priv)
		buf_put(&fs->cache, n->priv);
}

int tree_node_write_new(struct cfs_fs *fs, struct bt_node *m)
{
	struct buf *b = m ? m->priv : NULL;

	if (b && !chunk_blocks_freed(fs, b->blk, 1))
		return cache_write_alone(&fs->cache, b);
	return tree_node_persist(fs, NULL);
}

int tree_node_persist(struct cfs_fs *fs, struct bt_node *n)
{
	if (n && n->priv && bt_level(n) == 0)
		return cache_order(&fs->cache, n->priv);
	return cache_flush(&fs->cache, 0, UINT64_MAX);
}

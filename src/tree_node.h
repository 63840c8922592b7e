/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Node blocks of the extent and directory trees (FORMAT.md 12, 14.2):
 * both keep each non-root node in one metadata block of the cache, with
 * the owning inode's number in it.  What differs between the two trees is
 * where the block is (a chunk-relative block, a directory logical block)
 * and what pays for it; this is the part they share. */
#ifndef CHUNKFS_TREE_NODE_H
#define CHUNKFS_TREE_NODE_H

#include <stdint.h>

#include "btree.h"

struct cfs_fs;

/* n views the node block at absolute block abs (magic), which must belong
 * to inode owner (else -EUCLEAN, recorded against owner's chunk); ptr is
 * its pointer in the tree. */
int tree_node_get(struct cfs_fs *fs, uint64_t abs, uint32_t magic, uint32_t owner,
		  uint64_t ptr, struct bt_node *n);
/* A new, empty node of the given level in block abs, owned by owner. */
int tree_node_new(struct cfs_fs *fs, uint64_t abs, uint32_t magic, uint32_t owner,
		  uint64_t ptr, int level, struct bt_node *n);
/* The absolute block of n, 0 for a root in an inode. */
uint64_t tree_node_blk(const struct bt_node *n);
/* Drop n's block (nothing for a root in an inode). */
void tree_node_put(struct cfs_fs *fs, struct bt_node *n);
/* bt_ops.persist of both trees: everything dirty reaches the disk before
 * n's new contents (n NULL: the root moving down into a new node).  A
 * splitting leaf is ordered behind the rest lazily (cache_order: one flush
 * for many splits); an index node, or a directory's root moving down, is
 * rare and flushed at once. */
int tree_node_persist(struct cfs_fs *fs, struct bt_node *n);
/* bt_ops.fresh of the extent tree: the new node m reaches the disk now.
 * When nothing on disk can name m's block, m is written alone: the other
 * dirty buffers stay in memory and no chunk is marked dirty for it, as a
 * crash leaves it a free block; else everything is flushed.  (A tree
 * whose nodes are found through another map, as a directory's through
 * its block map, would need that map written too: not this.) */
int tree_node_write_new(struct cfs_fs *fs, struct bt_node *m);

#endif

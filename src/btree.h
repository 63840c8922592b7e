/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A B+tree with 64-bit keys and variable-length leaf records, used for
 * extent maps (fixed 16-byte records in blocks of the inode's chunk) and
 * directories (name records in logical blocks of the directory).
 *
 * Every record, leaf or index, starts with its u64 key.  Index records
 * are BT_IDX_LEN bytes: key, child pointer (layouts: format.h).  An index key is a lower
 * bound of its subtree (the first child's key is never consulted), so
 * deletions never need to update keys.  Duplicate keys are allowed.
 * The root stays where it is: when it overflows, its contents move down
 * into a new node.  Empty nodes are freed; nodes are not merged. */
#ifndef CHUNKFS_BTREE_H
#define CHUNKFS_BTREE_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"

#define BT_MAXD     12
#define BT_IDX_LEN  CFS_BTI_SIZE
#define BT_NODE_HDR CFS_BTN_SIZE   /* level, nrec, used (format.h) */

struct bt_node {
	void *priv;            /* owner's handle (buffer) */
	uint8_t *hdr;          /* BT_NODE_HDR bytes */
	uint8_t *recs;
	uint32_t cap;          /* bytes available for records */
	uint64_t ptr;          /* this node's pointer (not used for the root) */
};

struct bt_ops {
	size_t (*leaf_len)(const uint8_t *rec, size_t room);  /* 0 = corrupt */
	int (*get)(void *ctx, uint64_t ptr, int level, struct bt_node *n);
	int (*alloc)(void *ctx, int level, struct bt_node *n);
	int (*release)(void *ctx, struct bt_node *n);
	int (*dirty)(void *ctx, struct bt_node *n);
	/* the new node m, and the index naming it, reach stable storage
	 * before the node that gives up records to it is rewritten: the
	 * leaf or index node n when it splits, the root (n NULL) when it
	 * moves down into m (may be NULL) */
	int (*persist)(void *ctx, struct bt_node *m, struct bt_node *n);
	/* may be NULL: the new node m, filled, reaches stable storage before
	 * any index names it (before its parent takes it in a split, before
	 * the root moves down into it).  Then no crash leaves an index
	 * naming a node never written. */
	int (*fresh)(void *ctx, struct bt_node *m);
	void (*put)(void *ctx, struct bt_node *n);
	/* corruption found in node n (what: at most 31 bytes): the owner
	 * records it (FORMAT.md 18); may be NULL */
	int (*corrupt)(void *ctx, const struct bt_node *n, const char *what);
	/* may be NULL (records that cover no range of keys): 1 if leaf
	 * record rec, whose key is below hi, covers keys at or past hi, and
	 * with fix it is shortened to end at hi; else 0.  A crash in a split
	 * can leave such a record in the node that gave records away: its
	 * part past hi is the right node's (bt_trim_leftovers). */
	int (*clip)(uint8_t *rec, uint64_t hi, int fix);
};

struct btree {
	const struct bt_ops *ops;
	void *ctx;
	struct bt_node root;
};

struct bt_pos {
	struct bt_node n;
	int i;                 /* record index */
	uint32_t off;          /* byte offset of record i */
};

struct bt_cur {
	struct btree *t;
	int top;               /* root level */
	struct bt_pos p[BT_MAXD];
};

uint16_t bt_level(const struct bt_node *n);
uint16_t bt_nrec(const struct bt_node *n);
uint32_t bt_used(const struct bt_node *n);
void bt_node_init(struct bt_node *n, int level);

#define BT_GE 0   /* position at the first record with key >= k */
#define BT_LE 1   /* position at the last record with key <= k */
/* Returns 1 positioned on a record, 0 if there is none, <0 on error.
 * The cursor must be released with bt_release in every case. */
int bt_seek(struct btree *t, uint64_t key, int mode, struct bt_cur *c);
int bt_first(struct btree *t, struct bt_cur *c);
int bt_next(struct bt_cur *c);
int bt_prev(struct bt_cur *c);
uint8_t *bt_rec(struct bt_cur *c);
size_t bt_rec_len(struct bt_cur *c);
uint64_t bt_key(struct bt_cur *c);
/* The record under the cursor was changed in place (same length). */
int bt_dirty(struct bt_cur *c);
void bt_release(struct bt_cur *c);

int bt_insert(struct btree *t, const uint8_t *rec, size_t len);
/* Delete the record under the cursor; the cursor is released. */
int bt_delete(struct bt_cur *c);
/* Every node, children before parents, with lo and hi: the keys its
 * records stay at or above (the index key naming it, or its parent's lo
 * for a first child: a lookup takes child 0 for every key below child 1's)
 * and below (the next index key above it, UINT64_MAX on the right edge).  With
 * clipped (a tree of unique keys), an index record at or past hi is a
 * split's leftover: not descended, and its node counted in *clipped (the
 * leaf records past hi are cb's to skip).  A crash in a split can keep the node
 * that gave records away as it was, beside the node that took them and
 * the index naming that one: the records stay in both, and those of the
 * left node at or past the new index key are the stale ones. */
typedef int (*bt_walk_cb)(void *ctx, struct bt_node *n, int level, uint64_t lo,
			  uint64_t hi);
int bt_walk(struct btree *t, int *clipped, bt_walk_cb cb, void *ctx);
/* Count the nodes holding such leftovers (records at or past hi, or a
 * record reaching past it: ops->clip), and with fix drop or shorten them
 * (a check's repair; the records the right node holds stay).  Returns the
 * count or a negative errno. */
int bt_trim_leftovers(struct btree *t, int fix);

#endif

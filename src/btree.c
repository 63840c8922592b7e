/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Generic B+tree engine; see btree.h for the rules it keeps. */
#include "btree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint16_t bt_level(const struct bt_node *n) { return cfs_btn_level(n->hdr); }
uint16_t bt_nrec(const struct bt_node *n) { return cfs_btn_nrec(n->hdr); }
uint32_t bt_used(const struct bt_node *n) { return cfs_btn_used(n->hdr); }

static void set_hdr(struct bt_node *n, int level, int nrec, uint32_t used)
{
	cfs_btn_set(n->hdr, (uint16_t)level, (uint16_t)nrec, used);
}

void bt_node_init(struct bt_node *n, int level)
{
	set_hdr(n, level, 0, 0);
}

/* Every impossible value the engine meets goes through here, once, with
 * the node it is in: -EUCLEAN, and the tree's owner records it. */
static int bad(const struct btree *t, const struct bt_node *n, const char *what)
{
	if (t->ops->corrupt)
		t->ops->corrupt(t->ctx, n, what);
	return -EUCLEAN;
}

static int node_check(const struct bt_node *n, int level)
{
	uint32_t used = bt_used(n);

	if (bt_level(n) != level || used > n->cap)
		return -EUCLEAN;
	if (level > 0 && used != (uint32_t)bt_nrec(n) * BT_IDX_LEN)
		return -EUCLEAN;
	return 0;
}

/* The root's level, if the root is one every reader and walk can use:
 * a header that fits its level, and as an index at least one child (a
 * delete makes an emptied root a leaf; load_child refuses an empty node
 * below it).  Else -EUCLEAN. */
static int root_check(const struct btree *t)
{
	int top = bt_level(&t->root);

	if (top >= BT_MAXD || node_check(&t->root, top) < 0)
		return bad(t, &t->root, "bad B+tree root");
	if (top > 0 && bt_nrec(&t->root) == 0)
		return bad(t, &t->root, "empty B+tree index node");
	return top;
}

static size_t rec_len_at(const struct btree *t, const struct bt_node *n, uint32_t off)
{
	uint32_t used = bt_used(n);

	if (off + CFS_BT_KEY_SIZE > used)
		return 0;
	if (bt_level(n) > 0)
		return BT_IDX_LEN;
	return t->ops->leaf_len(n->recs + off, used - off);
}

static int load_child(struct bt_cur *c, int lvl)
{
	struct bt_pos *p = &c->p[lvl];
	uint64_t ptr = cfs_btidx_child(p->n.recs + p->off);
	struct bt_node *ch = &c->p[lvl - 1].n;
	int ret;

	memset(&c->p[lvl - 1], 0, sizeof(c->p[lvl - 1]));
	ret = c->t->ops->get(c->t->ctx, ptr, lvl - 1, ch);
	if (ret < 0)
		return ret;
	ret = node_check(ch, lvl - 1);
	if (ret < 0 || (bt_nrec(ch) == 0)) {
		ret = bad(c->t, ch, ret < 0 ? "bad B+tree node header" : "empty B+tree node");
		c->t->ops->put(c->t->ctx, ch);
		ch->priv = NULL;
		return ret;
	}
	return 0;
}

static void put_below(struct bt_cur *c, int lvl)
{
	int l;

	for (l = 0; l < lvl && l < c->top; l++) {
		if (c->p[l].n.priv)
			c->t->ops->put(c->t->ctx, &c->p[l].n);
		c->p[l].n.priv = NULL;
	}
}

void bt_release(struct bt_cur *c)
{
	put_below(c, c->top);
}

static int choose_child(const struct bt_node *n, uint64_t key, int mode)
{
	int lo = 1, hi = bt_nrec(n) - 1, best = 0;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		uint64_t k = cfs_btrec_key(n->recs + (size_t)mid * BT_IDX_LEN);

		if (mode == BT_GE ? k < key : k <= key) {
			best = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return best;
}

/* Position within the leaf: GE gives the first record >= key (or nrec),
 * LE the last record <= key (or -1). */
static int leaf_position(struct bt_cur *c, uint64_t key, int mode)
{
	struct bt_pos *p = &c->p[0];
	int i, nr = bt_nrec(&p->n), last = -1;
	uint32_t off = 0, last_off = 0;

	for (i = 0; i < nr; i++) {
		size_t len = rec_len_at(c->t, &p->n, off);
		uint64_t k;

		if (!len)
			return bad(c->t, &p->n, "bad B+tree record");
		k = cfs_btrec_key(p->n.recs + off);
		if (mode == BT_GE && k >= key)
			break;
		if (mode == BT_LE) {
			if (k > key)
				break;
			last = i;
			last_off = off;
		}
		off += (uint32_t)len;
	}
	if (mode == BT_GE) {
		p->i = i;
		p->off = off;
	} else {
		p->i = last;
		p->off = last_off;
	}
	return 0;
}

static int descend(struct btree *t, uint64_t key, int mode, struct bt_cur *c)
{
	int lvl, ret;

	int top = root_check(t);

	memset(c, 0, sizeof(*c));
	c->t = t;
	if (top < 0)
		return top;   /* c->top stays 0: release touches nothing */
	c->top = top;
	c->p[c->top].n = t->root;
	for (lvl = c->top; lvl > 0; lvl--) {
		struct bt_pos *p = &c->p[lvl];

		p->i = choose_child(&p->n, key, mode);
		p->off = (uint32_t)p->i * BT_IDX_LEN;
		ret = load_child(c, lvl);
		if (ret < 0)
			return ret;
	}
	return leaf_position(c, key, mode);
}

/* Move to the first record of the next leaf.  1 moved, 0 at the end. */
static int next_leaf(struct bt_cur *c)
{
	int lvl, ret;

	for (lvl = 1; lvl <= c->top; lvl++)
		if (c->p[lvl].i + 1 < bt_nrec(&c->p[lvl].n))
			break;
	if (lvl > c->top)
		return 0;
	put_below(c, lvl);
	c->p[lvl].i++;
	c->p[lvl].off += BT_IDX_LEN;
	for (; lvl > 0; lvl--) {
		ret = load_child(c, lvl);
		if (ret < 0)
			return ret;
		c->p[lvl - 1].i = 0;
		c->p[lvl - 1].off = 0;
	}
	return 1;
}

static int leaf_seek_index(struct bt_cur *c, int want)
{
	struct bt_pos *p = &c->p[0];
	uint32_t off = 0;
	int i;

	for (i = 0; i < want; i++) {
		size_t len = rec_len_at(c->t, &p->n, off);

		if (!len)
			return bad(c->t, &p->n, "bad B+tree record");
		off += (uint32_t)len;
	}
	p->i = want;
	p->off = off;
	return 0;
}

static int prev_leaf(struct bt_cur *c)
{
	int lvl, ret;

	for (lvl = 1; lvl <= c->top; lvl++)
		if (c->p[lvl].i > 0)
			break;
	if (lvl > c->top)
		return 0;
	put_below(c, lvl);
	c->p[lvl].i--;
	c->p[lvl].off -= BT_IDX_LEN;
	for (; lvl > 0; lvl--) {
		ret = load_child(c, lvl);
		if (ret < 0)
			return ret;
		if (lvl - 1 > 0) {
			c->p[lvl - 1].i = bt_nrec(&c->p[lvl - 1].n) - 1;
			c->p[lvl - 1].off = (uint32_t)c->p[lvl - 1].i * BT_IDX_LEN;
		}
	}
	ret = leaf_seek_index(c, bt_nrec(&c->p[0].n) - 1);
	return ret < 0 ? ret : 1;
}

int bt_seek(struct btree *t, uint64_t key, int mode, struct bt_cur *c)
{
	int ret = descend(t, key, mode, c);
	struct bt_pos *p = &c->p[0];

	if (ret < 0)
		return ret;
	if (mode == BT_GE && p->i >= bt_nrec(&p->n))
		return next_leaf(c);
	if (mode == BT_LE && p->i < 0)
		return prev_leaf(c);
	return 1;
}

int bt_first(struct btree *t, struct bt_cur *c)
{
	return bt_seek(t, 0, BT_GE, c);
}

int bt_next(struct bt_cur *c)
{
	struct bt_pos *p = &c->p[0];

	if (p->i + 1 < bt_nrec(&p->n)) {
		size_t len = rec_len_at(c->t, &p->n, p->off);

		if (!len)
			return bad(c->t, &p->n, "bad B+tree record");
		p->i++;
		p->off += (uint32_t)len;
		return 1;
	}
	return next_leaf(c);
}

int bt_prev(struct bt_cur *c)
{
	struct bt_pos *p = &c->p[0];

	if (p->i > 0)
		return leaf_seek_index(c, p->i - 1) < 0 ? -EUCLEAN : 1;   /* recorded there */
	return prev_leaf(c);
}

uint8_t *bt_rec(struct bt_cur *c)
{
	return c->p[0].n.recs + c->p[0].off;
}

size_t bt_rec_len(struct bt_cur *c)
{
	return rec_len_at(c->t, &c->p[0].n, c->p[0].off);
}

uint64_t bt_key(struct bt_cur *c)
{
	return cfs_btrec_key(bt_rec(c));
}

int bt_dirty(struct bt_cur *c)
{
	return c->t->ops->dirty(c->t->ctx, &c->p[0].n);
}

/* ---- insertion ---- */

/* *placed: the record is in the tree (even if an error is returned, e.g.
 * a failed dirty); 0 means the tree is exactly as before the call. */
static int node_insert(struct bt_cur *c, int lvl, const uint8_t *rec, size_t len,
		       int *placed);

/* The root is full: move its records into a new node one level down, so
 * the root keeps its place and the tree grows by one level. */
static int grow_root(struct bt_cur *c)
{
	struct btree *t = c->t;
	struct bt_node *root = &t->root, m;
	int top = c->top, ret;
	uint8_t idx[BT_IDX_LEN];

	if (top + 1 >= BT_MAXD)
		return -EFBIG;
	ret = t->ops->alloc(t->ctx, top, &m);
	if (ret < 0)
		return ret;
	if (bt_used(root) > m.cap) {
		t->ops->release(t->ctx, &m);
		return bad(t, root, "B+tree root overfull");
	}
	memcpy(m.recs, root->recs, bt_used(root));
	set_hdr(&m, top, bt_nrec(root), bt_used(root));
	/* m reaches the disk before the root that will name it gives up its
	 * records: a crash in between leaves them in the root */
	ret = t->ops->dirty(t->ctx, &m);
	if (ret == 0 && t->ops->fresh)
		ret = t->ops->fresh(t->ctx, &m);
	if (ret == 0 && t->ops->persist)
		ret = t->ops->persist(t->ctx, &m, NULL);
	if (ret < 0) {
		t->ops->release(t->ctx, &m);
		return ret;
	}
	cfs_btidx_set(idx, bt_nrec(root) ? cfs_btrec_key(root->recs) : 0, m.ptr);
	memcpy(root->recs, idx, BT_IDX_LEN);
	set_hdr(root, top + 1, 1, BT_IDX_LEN);
	ret = t->ops->dirty(t->ctx, root);
	c->p[top + 1].n = *root;
	c->p[top + 1].i = 0;
	c->p[top + 1].off = 0;
	c->p[top].n = m;
	c->top = top + 1;
	return ret;
}

/* Split point: the first record boundary where the left part holds at
 * least half the bytes, moved back if the right part would not fit. */
static int split_point(const struct btree *t, const struct bt_node *n, const uint8_t *tmp,
		       uint32_t total, int count, int level, uint32_t cap, int *s, uint32_t *lb)
{
	uint32_t off = 0, prev_off = 0;
	int i;

	for (i = 0; i < count; i++) {
		size_t len = level ? BT_IDX_LEN : t->ops->leaf_len(tmp + off, total - off);

		if (!len)
			return bad(t, n, "bad B+tree record");
		if (i > 0 && off >= total / 2)
			break;
		prev_off = off;
		off += (uint32_t)len;
	}
	if (i >= count) {
		i = count - 1;
		off = prev_off;
	}
	if (total - off > cap && i < count - 1)
		return bad(t, n, "B+tree records too long");
	if (off > cap) {
		i--;
		off = prev_off;
	}
	if (i < 1 || off > cap || total - off > cap)
		return bad(t, n, "B+tree records too long");
	*s = i;
	*lb = off;
	return 0;
}

static int split_insert(struct bt_cur *c, int lvl, const uint8_t *rec, size_t len,
			int *placed)
{
	struct btree *t = c->t;
	struct bt_pos *p = &c->p[lvl];
	struct bt_node *n = &p->n, m;
	uint32_t used = bt_used(n), total = used + (uint32_t)len, lb = 0;
	int count = bt_nrec(n) + 1, s = 0, ret, r, linked = 0;
	uint8_t *tmp = malloc(total), idx[BT_IDX_LEN];

	if (!tmp)
		return -ENOMEM;
	memcpy(tmp, n->recs, p->off);
	memcpy(tmp + p->off, rec, len);
	memcpy(tmp + p->off + len, n->recs + p->off, used - p->off);
	ret = split_point(t, n, tmp, total, count, lvl, n->cap, &s, &lb);
	if (ret < 0)
		goto out;
	ret = t->ops->alloc(t->ctx, lvl, &m);
	if (ret < 0)
		goto out;
	if (total - lb > m.cap) {
		t->ops->release(t->ctx, &m);
		ret = bad(t, n, "B+tree records too long");
		goto out;
	}
	memcpy(m.recs, tmp + lb, total - lb);
	set_hdr(&m, lvl, count - s, total - lb);
	ret = t->ops->dirty(t->ctx, &m);
	if (ret == 0 && t->ops->fresh)
		ret = t->ops->fresh(t->ctx, &m);
	cfs_btidx_set(idx, cfs_btrec_key(m.recs), m.ptr);
	c->p[lvl + 1].i++;
	c->p[lvl + 1].off += BT_IDX_LEN;
	r = node_insert(c, lvl + 1, idx, BT_IDX_LEN, &linked);
	if (!ret)
		ret = r;
	if (!linked) {
		/* The parent could not take m (no node for its own split):
		 * drop m; n is as it was, losing nothing. */
		t->ops->release(t->ctx, &m);
		goto out;
	}
	/* m and the index naming it reach the disk before n gives up its
	 * records: a crash in between leaves them in n, or in both (which
	 * the checker tells apart), never in neither. */
	if (t->ops->persist) {
		r = t->ops->persist(t->ctx, &m, n);
		if (!ret)
			ret = r;
	}
	memcpy(n->recs, tmp, lb);
	set_hdr(n, lvl, s, lb);
	/* A failed dirty or write is remembered but m is still linked: the
	 * tree in memory must stay whole. */
	r = t->ops->dirty(t->ctx, n);
	if (!ret)
		ret = r;
	t->ops->put(t->ctx, &m);
	*placed = 1;
out:
	free(tmp);
	return ret;
}

static int node_insert(struct bt_cur *c, int lvl, const uint8_t *rec, size_t len,
		       int *placed)
{
	struct bt_pos *p = &c->p[lvl];
	struct bt_node *n = &p->n;
	uint32_t used = bt_used(n);
	int ret;

	*placed = 0;
	if (used + len <= n->cap) {
		*placed = 1;
		memmove(n->recs + p->off + len, n->recs + p->off, used - p->off);
		memcpy(n->recs + p->off, rec, len);
		set_hdr(n, lvl, bt_nrec(n) + 1, used + (uint32_t)len);
		if (lvl == c->top)
			c->t->root = *n;
		return c->t->ops->dirty(c->t->ctx, n);
	}
	if (lvl == c->top) {
		ret = grow_root(c);
		if (ret < 0)
			return ret;
		return node_insert(c, lvl, rec, len, placed);
	}
	return split_insert(c, lvl, rec, len, placed);
}

int bt_insert(struct btree *t, const uint8_t *rec, size_t len)
{
	struct bt_cur c;
	int placed, ret = descend(t, cfs_btrec_key(rec), BT_GE, &c);

	if (ret == 0)
		ret = node_insert(&c, 0, rec, len, &placed);
	bt_release(&c);
	return ret;
}

/* ---- deletion ---- */

static int node_remove(struct bt_cur *c, int lvl, uint32_t off, size_t len)
{
	struct bt_node *n = &c->p[lvl].n;
	uint32_t used = bt_used(n);

	memmove(n->recs + off, n->recs + off + len, used - off - len);
	set_hdr(n, lvl, bt_nrec(n) - 1, used - (uint32_t)len);
	return c->t->ops->dirty(c->t->ctx, n);
}

int bt_delete(struct bt_cur *c)
{
	struct btree *t = c->t;
	size_t len = bt_rec_len(c);
	int lvl = 0, ret;

	if (!len) {
		ret = bad(t, &c->p[0].n, "bad B+tree record");
		goto out;
	}
	ret = node_remove(c, 0, c->p[0].off, len);
	/* Free emptied nodes bottom-up; the root is never freed. */
	while (ret == 0 && lvl < c->top && bt_nrec(&c->p[lvl].n) == 0) {
		ret = t->ops->release(t->ctx, &c->p[lvl].n);
		c->p[lvl].n.priv = NULL;
		if (ret < 0)
			break;
		lvl++;
		ret = node_remove(c, lvl, c->p[lvl].off, BT_IDX_LEN);
	}
	if (ret == 0 && bt_nrec(&c->p[c->top].n) == 0 && c->top > 0) {
		set_hdr(&c->p[c->top].n, 0, 0, 0);
		ret = t->ops->dirty(t->ctx, &c->p[c->top].n);
	}
	t->root = c->p[c->top].n;
out:
	bt_release(c);
	return ret;
}

struct walk {
	struct btree *t;
	int *clipped;
	bt_walk_cb cb;
	void *ctx;
};

static int walk_node(struct walk *w, struct bt_node *n, int level, uint64_t lo, uint64_t hi)
{
	struct btree *t = w->t;
	int i, ret;

	for (i = 0; level > 0 && i < bt_nrec(n); i++) {
		const uint8_t *idx = n->recs + (size_t)i * BT_IDX_LEN;
		uint64_t chi = i + 1 < bt_nrec(n) ? cfs_btrec_key(idx + BT_IDX_LEN) : hi;
		/* a lookup takes child 0 for every key below the next one */
		uint64_t clo = i ? cfs_btrec_key(idx) : lo;
		struct bt_node ch;

		if (w->clipped && i > 0 && cfs_btrec_key(idx) >= hi) {
			(*w->clipped)++;
			break;
		}
		if (w->clipped && chi > hi)
			chi = hi;
		ret = t->ops->get(t->ctx, cfs_btidx_child(idx), level - 1, &ch);
		if (ret < 0)
			return ret;
		/* as load_child: readers refuse it */
		ret = 0;
		if (node_check(&ch, level - 1) < 0)
			ret = bad(t, &ch, "bad B+tree node header");
		else if (bt_nrec(&ch) == 0)
			ret = bad(t, &ch, "empty B+tree node");
		if (ret == 0)
			ret = walk_node(w, &ch, level - 1, clo, chi);
		t->ops->put(t->ctx, &ch);
		if (ret)
			return ret;
	}
	return w->cb(w->ctx, n, level, lo, hi);
}

int bt_walk(struct btree *t, int *clipped, bt_walk_cb cb, void *ctx)
{
	struct walk w = { t, clipped, cb, ctx };
	int top = root_check(t);

	if (top < 0)
		return top;
	return walk_node(&w, &t->root, top, 0, UINT64_MAX);
}

/* The records of n at or past hi: where they start (bytes, count), and
 * where the record before them starts (*prev). */
static void leftover_at(const struct btree *t, const struct bt_node *n, int level,
			uint64_t hi, uint32_t *off, int *i, uint32_t *prev)
{
	size_t len;

	for (*off = *prev = 0, *i = 0; *i < bt_nrec(n); (*i)++, *off += (uint32_t)len) {
		len = level ? BT_IDX_LEN : t->ops->leaf_len(n->recs + *off, bt_used(n) - *off);
		if (!len || cfs_btrec_key(n->recs + *off) >= hi)
			return;
		*prev = *off;
	}
}

struct trim {
	struct btree *t;
	int fix, nodes, ret;
};

static int trim_cb(void *vt, struct bt_node *n, int level, uint64_t lo, uint64_t hi)
{
	struct trim *tr = vt;
	int (*clip)(uint8_t *rec, uint64_t hi, int fix) = level ? NULL : tr->t->ops->clip;
	uint32_t off, prev;
	int i, span;

	(void)lo;
	leftover_at(tr->t, n, level, hi, &off, &i, &prev);
	/* nothing left below hi is no split's leftover: damage, for others */
	if (i == 0)
		return 0;
	span = clip && clip(n->recs + prev, hi, 0);
	if (i == bt_nrec(n) && !span)
		return 0;
	tr->nodes++;
	if (tr->fix) {
		if (span)
			clip(n->recs + prev, hi, 1);
		set_hdr(n, level, i, off);
		tr->ret = tr->t->ops->dirty(tr->t->ctx, n);
	}
	return tr->ret;
}

int bt_trim_leftovers(struct btree *t, int fix)
{
	struct trim tr = { t, fix, 0, 0 };
	int clipped = 0;
	int ret = bt_walk(t, &clipped, trim_cb, &tr);

	return ret < 0 ? ret : tr.nodes;
}

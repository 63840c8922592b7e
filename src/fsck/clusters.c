/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fsck step A for inode clusters (DYNINODES, FORMAT.md 10.4): the map
 * blocks named by the chunk header, each cluster's place and contents, and
 * the cluster blocks in the truth map.  Clusters are found through the map
 * only, never by reading data blocks, so a check stays bounded by its chunk.
 *
 * A crash cannot leave a listed cluster with stale bytes (its blocks are
 * zeroed and flushed before its record is written), so every finding here
 * is damage, for a person. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fsck.h"

uint32_t ck_next(struct chunk_check *x, uint32_t l)
{
	struct cfs_fs *fs = x->fs;
	struct chunk *ch = &fs->chunks[x->c];
	uint32_t ipc = fs->sb.inodes_per_chunk, i;

	if (l <= ipc && l <= itable_limit(x))
		return l;
	if (l <= ipc)
		l = ipc + 1;
	pthread_mutex_lock(&ch->lock);
	for (i = (l - ipc - 1) / CFS_ICL_INODES; i < ch->icl_n && !ch->icl[i].start; i++)
		l = icl_first_local(fs, i + 1);
	if (i >= ch->icl_n)
		l = x->ipc + 1;
	pthread_mutex_unlock(&ch->lock);
	return l > x->ipc ? x->ipc + 1 : l;
}

void icl_read_ahead(struct chunk_check *x, uint32_t l)
{
	uint32_t off;
	uint64_t blk = inode_location(x->fs, CFS_INO_MAKE(x->c, l), &off);

	if (blk != UINT64_MAX)
		cache_readahead(&x->fs->cache, blk, x->fs->icl_blocks);
}

/* Inodes lost with a cluster may be named by entries of any chunk: those
 * are checked too (escalation), once the loss is fixed.  A dropped record
 * that listed no inode may still have been damaged from one that did. */
static void inodes_lost(struct chunk_check *x, int fixed)
{
	if (fixed)
		x->k->esc_from[x->c] = 1;
}

static void icl_report_drop(struct chunk_check *x, int code, uint32_t i, uint32_t start)
{
	struct pctx p = { .num = { i, start } };
	int fix = pr_fix(x, code, &p);
	struct chunk *ch = &x->fs->chunks[x->c];

	pthread_mutex_lock(&ch->lock);
	icl_drop(x->fs, x->c, i, fix);
	pthread_mutex_unlock(&ch->lock);
	inodes_lost(x, fix);
}

/* Map block k: a block that is no map block loses its clusters (the
 * lenient load of icl_load read none from it); one with a bad checksum, or
 * records outside the data area (left out by the load), is rewritten from
 * the records kept. */
static void icmap_check(struct chunk_check *x, uint32_t k)
{
	struct cfs_fs *fs = x->fs;
	struct chunk *ch = &fs->chunks[x->c];
	uint32_t rel = ch->hdr.icmap[k], nrec = cfs_icmap_nrec(fs->bsize), j;
	uint64_t abs = chunk_base(fs, x->c) + rel;
	struct pctx p = { .num = { k, rel } };
	struct cfs_icl_rec r;
	struct buf *b;
	int v = -EIO, rewrite = 0;

	if (!bget(x->bbits, rel) && cache_get(&fs->cache, abs, 0, &b) == 0) {
		v = cfs_meta_verify(b->data, fs->bsize, fs->seed, CFS_MAGIC_ICMAP, abs);
		if (v != -EUCLEAN && cfs_icmap_index(b->data) != k)
			v = -EUCLEAN;
		for (j = 0; v != -EUCLEAN && j < nrec; j++) {
			cfs_icmap_rec_decode(b->data, j, &r);
			if (r.start && (r.start < fs->sb.data_start ||
					(uint64_t)r.start + fs->icl_blocks > fs->sb.chunk_blocks)) {
				p.num[0] = (uint64_t)k * nrec + j;
				p.num[1] = r.start;
				rewrite |= pr_fix(x, PR_ICL_OUTSIDE, &p);
				inodes_lost(x, rewrite);
			}
		}
		buf_put(&fs->cache, b);
	}
	p.num[0] = k;
	p.num[1] = rel;
	if (v == -EIO || v == -EUCLEAN) {
		if (pr_fix(x, PR_ICMAP_LOST, &p)) {
			inodes_lost(x, 1);
			pthread_mutex_lock(&ch->lock);
			ch->hdr.icmap[k] = 0;
			ch->hdr_unwritten = 1;
			pthread_mutex_unlock(&ch->lock);
		} else if (!bget(x->bbits, rel)) {
			bset(x->bbits, rel);   /* left for a person: keep it */
		}
		return;
	}
	bset(x->bbits, rel);
	if (v == -EBADMSG)
		rewrite |= pr_fix(x, PR_ICMAP_CSUM, &p);
	if (rewrite) {
		pthread_mutex_lock(&ch->lock);
		icl_rewrite_map(fs, x->c, k);
		pthread_mutex_unlock(&ch->lock);
	}
}

/* Slots of cluster i: in use (valid checksum, mode set) and damaged
 * (neither all zero nor a valid checksum). */
static void icl_census(struct chunk_check *x, uint32_t i, uint32_t start, int *inuse, int *bad)
{
	struct cfs_fs *fs = x->fs;
	struct buf *b = NULL;
	uint32_t s;

	*inuse = *bad = 0;
	for (s = 0; s < CFS_ICL_INODES; s++) {
		uint64_t blk = chunk_base(fs, x->c) + start + s / fs->ipb;
		cfs_ino_t ino = CFS_INO_MAKE(x->c, icl_first_local(fs, i) + s);
		struct cfs_dinode d;
		uint8_t *raw;

		if (!b || b->blk != blk) {
			buf_put(&fs->cache, b);
			if (cache_get(&fs->cache, blk, 0, &b) < 0) {
				b = NULL;
				(*bad)++;
				continue;
			}
		}
		raw = b->data + (s % fs->ipb) * fs->isz;
		if (cfs_dinode_is_zero(raw, fs->isz))
			continue;
		if (!cfs_dinode_csum_ok(raw, fs->isz, fs->seed, ino)) {
			(*bad)++;
			continue;
		}
		cfs_dinode_decode(raw, &d);
		*inuse += d.mode != 0;
	}
	buf_put(&fs->cache, b);
}

static int blocks_claimed(struct chunk_check *x, uint32_t start)
{
	uint32_t n;

	for (n = 0; n < x->fs->icl_blocks; n++)
		if (bget(x->bbits, (uint64_t)start + n))
			return 1;
	return 0;
}

static void blocks_claim(struct chunk_check *x, uint32_t start)
{
	uint32_t n;

	for (n = 0; n < x->fs->icl_blocks; n++)
		bset(x->bbits, (uint64_t)start + n);
}

void icl_check(struct chunk_check *x)
{
	struct cfs_fs *fs = x->fs;
	struct chunk *ch = &fs->chunks[x->c];
	uint32_t k, i, n, start;
	int inuse, bad;

	if (!fs->icl_max)
		return;
	for (k = 0; k < CFS_ICMAP_BLOCKS; k++)
		if (ch->hdr.icmap[k])
			icmap_check(x, k);
	pthread_mutex_lock(&ch->lock);
	n = ch->icl_n;
	pthread_mutex_unlock(&ch->lock);
	x->icl_claimed = calloc(n ? n : 1, 1);
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&ch->lock);
		start = ch->icl[i].start;
		pthread_mutex_unlock(&ch->lock);
		if (!start)
			continue;
		cache_readahead(&fs->cache, chunk_base(fs, x->c) + start, fs->icl_blocks);
		if (blocks_claimed(x, start)) {
			icl_report_drop(x, PR_ICL_OVERLAP, i, start);
			continue;
		}
		icl_census(x, i, start, &inuse, &bad);
		if (bad && !inuse) {
			/* stale bytes where the map says a cluster is: not one */
			icl_report_drop(x, PR_ICL_GARBAGE, i, start);
			continue;
		}
		if (inuse || !x->icl_claimed) {
			blocks_claim(x, start);
			if (x->icl_claimed)
				x->icl_claimed[i] = 1;
		}
	}
}

void icl_reclaim(struct chunk_check *x)
{
	struct cfs_fs *fs = x->fs;
	struct chunk *ch = &fs->chunks[x->c];
	uint32_t k, i;

	if (!fs->icl_max)
		return;
	pthread_mutex_lock(&ch->lock);
	for (k = 0; k < CFS_ICMAP_BLOCKS; k++)
		if (ch->hdr.icmap[k])
			bset(x->bbits, ch->hdr.icmap[k]);
	for (i = 0; i < ch->icl_n; i++)
		if (ch->icl[i].start && (!x->icl_claimed || x->icl_claimed[i]))
			blocks_claim(x, ch->icl[i].start);
	pthread_mutex_unlock(&ch->lock);
}

void icl_claim_rest(struct chunk_check *x)
{
	struct cfs_fs *fs = x->fs;
	struct chunk *ch = &fs->chunks[x->c];
	uint32_t i, n, start;

	if (!fs->icl_max)
		return;
	pthread_mutex_lock(&ch->lock);
	n = ch->icl_n;
	pthread_mutex_unlock(&ch->lock);
	for (i = 0; i < n && x->icl_claimed; i++) {
		pthread_mutex_lock(&ch->lock);
		start = ch->icl[i].start;
		pthread_mutex_unlock(&ch->lock);
		if (!start || x->icl_claimed[i])
			continue;
		if (blocks_claimed(x, start))
			icl_report_drop(x, PR_ICL_DATA, i, start);
		else
			blocks_claim(x, start);
	}
	free(x->icl_claimed);
	x->icl_claimed = NULL;
}

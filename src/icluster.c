/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Inode clusters (feature DYNINODES, FORMAT.md 10.4).
 *
 * When a chunk's inode table is used up, the chunk makes CFS_ICL_INODES
 * more inodes from a few of its free data blocks, as XFS allocates inode
 * chunks.  The clusters are listed in at most CFS_ICMAP_BLOCKS map blocks
 * named by the chunk header, each record a start block and a 64-bit mask
 * of the slots in use (XFS's inobt record, with the opposite polarity so
 * that a new record is all zero), so a check finds every inode of a chunk
 * without reading a data block.  Cluster i holds local inodes
 * ipc + 64*i + 1 ... ipc + 64*(i+1).
 *
 * The map is read on first use and kept in struct chunk; every function
 * here expects the chunk's lock held. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "fsint.h"

void icl_setup(struct cfs_fs *fs)
{
	uint64_t max = 0, room;

	fs->icl_blocks = cfs_icl_blocks(fs->bsize, fs->isz);
	if (fs->sb.feat_incompat & CFS_FEAT_INCOMPAT_DYNINODES) {
		max = (uint64_t)CFS_ICMAP_BLOCKS * cfs_icmap_nrec(fs->bsize);
		/* local numbers are 24 bits */
		room = (CFS_MAX_LOCAL_INO - fs->sb.inodes_per_chunk) / CFS_ICL_INODES;
		if (max > room)
			max = room;
	}
	fs->icl_max = (uint32_t)max;
	fs->max_local = fs->sb.inodes_per_chunk + fs->icl_max * CFS_ICL_INODES;
}

void icl_release(struct cfs_fs *fs)
{
	uint32_t c;

	for (c = 0; c < CFS_MAX_CHUNKS; c++) {
		free(fs->chunks[c].icl);
		fs->chunks[c].icl = NULL;
	}
}

void icl_forget(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = &fs->chunks[c];

	free(ch->icl);
	ch->icl = NULL;
	ch->icl_n = ch->icl_nfree = 0;
	ch->icl_loaded = 0;
	ch->icl_frag = 0;   /* blocks may have been freed meanwhile */
}

static uint64_t icmap_abs(struct cfs_fs *fs, uint32_t c, uint32_t k)
{
	return chunk_base(fs, c) + fs->chunks[c].hdr.icmap[k];
}

static int icl_room(struct chunk *ch, uint32_t n)
{
	struct cfs_icl_rec *a;

	if (n <= ch->icl_n)
		return 0;
	a = realloc(ch->icl, n * sizeof(*a));
	if (!a)
		return -ENOMEM;
	memset(a + ch->icl_n, 0, (n - ch->icl_n) * sizeof(*a));
	ch->icl = a;
	ch->icl_n = n;
	return 0;
}

static uint32_t slots_free(uint64_t used)
{
	return CFS_ICL_INODES - (uint32_t)__builtin_popcountll(used);
}

/* A record the map may hold: its blocks inside the chunk's data area. */
static int rec_sane(struct cfs_fs *fs, const struct cfs_icl_rec *r)
{
	return r->start >= fs->sb.data_start &&
	       (uint64_t)r->start + fs->icl_blocks <= fs->sb.chunk_blocks;
}

/* Recorded as the cache records a metadata block of the wrong kind or
 * place (chunk_on_corrupt, through the cache's hook: this file sits below
 * chunk.c). */
static int map_corrupt(struct cfs_fs *fs, uint64_t abs)
{
	if (fs->cache.on_corrupt)
		fs->cache.on_corrupt(fs->cache.ctx, abs, -EUCLEAN);
	return -EUCLEAN;
}

/* For the checker (fs->checking), a map block that does not verify is
 * read as far as it can be (a checksum mismatch: its records; wrong magic,
 * place or index: none) and records outside the data area are left out;
 * fsck reports and rewrites them (src/fsck/clusters.c).  Otherwise any of
 * these fails the load. */
static int icmap_load(struct cfs_fs *fs, uint32_t c, uint32_t k)
{
	struct chunk *ch = &fs->chunks[c];
	uint32_t nrec = cfs_icmap_nrec(fs->bsize), j;
	uint64_t abs = icmap_abs(fs, c, k);
	struct cfs_icl_rec r;
	struct buf *b;
	int ret, v;

	if (!fs->checking) {
		ret = cache_get_meta(&fs->cache, abs, CFS_MAGIC_ICMAP, &b);
		if (ret < 0)
			return ret;
		if (cfs_icmap_index(b->data) != k) {
			buf_put(&fs->cache, b);
			return map_corrupt(fs, abs);
		}
	} else {
		ret = cache_get(&fs->cache, abs, 0, &b);
		if (ret < 0)
			return 0;
		v = cfs_meta_verify(b->data, fs->bsize, fs->seed, CFS_MAGIC_ICMAP, abs);
		if (v == -EUCLEAN || cfs_icmap_index(b->data) != k) {
			buf_put(&fs->cache, b);
			return 0;
		}
	}
	for (j = 0; j < nrec && (uint64_t)k * nrec + j < fs->icl_max; j++) {
		uint32_t i = k * nrec + j;

		cfs_icmap_rec_decode(b->data, j, &r);
		if (!r.start)
			continue;
		if (!rec_sane(fs, &r)) {
			if (fs->checking)
				continue;
			buf_put(&fs->cache, b);
			return map_corrupt(fs, abs);
		}
		ret = icl_room(ch, i + 1);
		if (ret < 0)
			break;
		ch->icl[i] = r;
		ch->icl_nfree += slots_free(r.used);
	}
	buf_put(&fs->cache, b);
	return ret;
}

int icl_load(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = &fs->chunks[c];
	uint32_t k;
	int ret;

	lock_held(&fs->chunks[c].lock);

	if (ch->icl_loaded || !fs->icl_max)
		return 0;
	for (k = 0; k < CFS_ICMAP_BLOCKS; k++) {
		if (!ch->hdr.icmap[k])
			continue;
		ret = icmap_load(fs, c, k);
		if (ret < 0) {
			icl_forget(fs, c);
			return ret;
		}
	}
	ch->icl_loaded = 1;
	return 0;
}

int icl_locate(struct cfs_fs *fs, uint32_t c, uint32_t l, uint64_t *blk, uint32_t *off)
{
	struct chunk *ch = &fs->chunks[c];
	uint32_t i = (l - fs->sb.inodes_per_chunk - 1) / CFS_ICL_INODES;
	uint32_t s = (l - fs->sb.inodes_per_chunk - 1) % CFS_ICL_INODES;
	int ret = icl_load(fs, c);

	lock_held(&fs->chunks[c].lock);

	if (ret < 0)
		return ret;
	if (i >= ch->icl_n || !ch->icl[i].start)
		return 0;
	*blk = chunk_base(fs, c) + ch->icl[i].start + s / fs->ipb;
	*off = (s % fs->ipb) * fs->isz;
	return 1;
}

/* Write cluster i's record into its map block. */
static int rec_write(struct cfs_fs *fs, uint32_t c, uint32_t i)
{
	uint32_t nrec = cfs_icmap_nrec(fs->bsize);
	struct buf *b;
	int ret;

	ret = cache_get_meta(&fs->cache, icmap_abs(fs, c, i / nrec), CFS_MAGIC_ICMAP, &b);
	if (ret < 0)
		return ret;
	cfs_icmap_rec_encode(b->data, i % nrec, &fs->chunks[c].icl[i]);
	ret = buf_dirty(&fs->cache, b);
	buf_put(&fs->cache, b);
	return ret;
}

/* The index a new cluster takes (the first hole, else one past the last),
 * and whether its map block must be made first. */
int icl_next(struct cfs_fs *fs, uint32_t c, uint32_t *i, int *new_map)
{
	struct chunk *ch = &fs->chunks[c];
	uint32_t n;

	lock_held(&fs->chunks[c].lock);

	for (n = 0; n < ch->icl_n && ch->icl[n].start; n++)
		;
	if (n >= fs->icl_max)
		return -ENOSPC;
	*i = n;
	*new_map = !ch->hdr.icmap[n / cfs_icmap_nrec(fs->bsize)];
	return 0;
}

/* Map block k goes to chunk-relative block rel, already marked in use: it
 * is written and flushed before the header names it (the caller writes
 * the header next, and flushes it, so that no inode can be made in a
 * cluster a crash would leave unlisted). */
int icl_map_add(struct cfs_fs *fs, uint32_t c, uint32_t k, uint32_t rel)
{
	struct chunk *ch = &fs->chunks[c];
	uint64_t abs = chunk_base(fs, c) + rel;
	struct buf *b;
	int ret;

	lock_held(&fs->chunks[c].lock);

	ret = cache_new_meta(&fs->cache, abs, CFS_MAGIC_ICMAP, &b);
	if (ret < 0)
		return ret;
	cfs_icmap_set_index(b->data, k);
	ret = buf_dirty(&fs->cache, b);
	buf_put(&fs->cache, b);
	if (ret == 0)
		ret = cache_flush(&fs->cache, abs, abs + 1);
	if (ret < 0)
		return ret;
	ch->hdr.icmap[k] = rel;
	ch->hdr_unwritten = 1;
	return 0;
}

/* Clusters i ... i+n-1 go to the n runs of blocks from rel, already
 * marked in use: they are zeroed and flushed (one flush for all) before
 * the records naming them can be written, so a listed cluster never holds
 * stale bytes that would read as damaged inodes. */
int icl_add(struct cfs_fs *fs, uint32_t c, uint32_t i, uint32_t n, uint32_t rel)
{
	struct chunk *ch = &fs->chunks[c];
	uint64_t abs = chunk_base(fs, c) + rel, end = abs + (uint64_t)n * fs->icl_blocks, b;
	struct buf *bp;
	uint32_t k;
	int ret;

	lock_held(&fs->chunks[c].lock);

	for (b = abs; b < end; b++) {
		ret = cache_get(&fs->cache, b, CG_NOREAD, &bp);
		if (ret < 0)
			return ret;
		memset(bp->data, 0, fs->bsize);
		ret = buf_dirty(&fs->cache, bp);
		buf_put(&fs->cache, bp);
		if (ret < 0)
			return ret;
	}
	ret = cache_flush(&fs->cache, abs, end);
	if (ret == 0)
		ret = icl_room(ch, i + n);
	for (k = 0; ret == 0 && k < n; k++) {
		ch->icl[i + k].start = rel + k * fs->icl_blocks;
		ch->icl[i + k].used = 0;
		ch->icl_nfree += CFS_ICL_INODES;
		ch->hdr.free_inodes += CFS_ICL_INODES;
		ch->hdr_unwritten = 1;
		ret = rec_write(fs, c, i + k);
	}
	return ret;
}

/* How many clusters from index i may be made together: the map's last
 * ones, in one map block, up to CFS_ICL_BATCH. */
uint32_t icl_batch(struct cfs_fs *fs, uint32_t c, uint32_t i)
{
	uint32_t nrec = cfs_icmap_nrec(fs->bsize), n = CFS_ICL_BATCH;

	lock_held(&fs->chunks[c].lock);

	if (i != fs->chunks[c].icl_n)
		return 1;   /* a hole */
	if (n > nrec - i % nrec)
		n = nrec - i % nrec;
	if (n > fs->icl_max - i)
		n = fs->icl_max - i;
	return n ? n : 1;
}

int icl_alloc(struct cfs_fs *fs, uint32_t c, uint32_t *l)
{
	struct chunk *ch = &fs->chunks[c];
	uint32_t i, s;
	int ret;

	lock_held(&fs->chunks[c].lock);

	for (i = 0; i < ch->icl_n; i++)
		if (ch->icl[i].start && ~ch->icl[i].used)
			break;
	if (i == ch->icl_n)
		return -EUCLEAN;   /* icl_nfree said there was one */
	s = (uint32_t)__builtin_ctzll(~ch->icl[i].used);
	ch->icl[i].used |= 1ull << s;
	ret = rec_write(fs, c, i);
	if (ret < 0) {
		ch->icl[i].used &= ~(1ull << s);
		return ret;
	}
	ch->icl_nfree--;
	*l = icl_first_local(fs, i) + s;
	return 0;
}

int icl_free(struct cfs_fs *fs, uint32_t c, uint32_t l)
{
	struct chunk *ch = &fs->chunks[c];
	uint32_t i = (l - fs->sb.inodes_per_chunk - 1) / CFS_ICL_INODES;
	uint64_t bit = 1ull << ((l - fs->sb.inodes_per_chunk - 1) % CFS_ICL_INODES);
	int ret = icl_load(fs, c);

	lock_held(&fs->chunks[c].lock);

	if (ret < 0)
		return ret;
	if (i >= ch->icl_n || !ch->icl[i].start || !(ch->icl[i].used & bit))
		return -EUCLEAN;   /* a double free must not inflate the count */
	ch->icl[i].used &= ~bit;
	ret = rec_write(fs, c, i);
	if (ret < 0) {
		ch->icl[i].used |= bit;
		return ret;
	}
	ch->icl_nfree++;
	return 0;
}

uint32_t icl_count(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = &fs->chunks[c];
	uint32_t i, n = 0;

	lock_held(&fs->chunks[c].lock);

	for (i = 0; i < ch->icl_n; i++)
		n += ch->icl[i].start != 0;
	return n;
}

uint32_t icl_empty(struct cfs_fs *fs, uint32_t c, uint32_t max)
{
	struct chunk *ch = &fs->chunks[c];
	uint32_t i, n = 0;

	for (i = 0; i < ch->icl_n && n < max; i++)
		n += ch->icl[i].start && !ch->icl[i].used;
	return n;
}

uint64_t icl_makeable(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = &fs->chunks[c];

	lock_held(&fs->chunks[c].lock);
	uint64_t n, have = ch->icl_n;   /* holes (dropped by fsck) are rare */
	/* not the repair reserve's blocks (FORMAT.md 16.4), outside a check */
	uint32_t nrec = cfs_icmap_nrec(fs->bsize), blocks = chunk_avail_blocks(fs, ch);

	if (!fs->icl_max || have >= fs->icl_max)
		return 0;
	if (blocks && !ch->hdr.icmap[have / nrec])
		blocks--;   /* the next one needs its map block first */
	n = blocks / fs->icl_blocks;
	if (n > fs->icl_max - have)
		n = fs->icl_max - have;
	return n * CFS_ICL_INODES;
}

int icl_sync(struct cfs_fs *fs, uint32_t c, const uint8_t *truth, int fix, uint64_t *diffs,
	     uint64_t *truth_free)
{
	struct chunk *ch = &fs->chunks[c];
	uint32_t i, s;
	int ret = icl_load(fs, c);

	*diffs = *truth_free = 0;
	if (ret < 0)
		return ret;
	for (i = 0; i < ch->icl_n; i++) {
		uint64_t want = 0, bit0 = icl_first_local(fs, i) - 1;

		if (!ch->icl[i].start)
			continue;
		for (s = 0; s < CFS_ICL_INODES; s++)
			if ((truth[(bit0 + s) >> 3] >> ((bit0 + s) & 7)) & 1)
				want |= 1ull << s;
		*truth_free += slots_free(want);
		if (want == ch->icl[i].used)
			continue;
		*diffs += (uint64_t)__builtin_popcountll(want ^ ch->icl[i].used);
		if (!fix)
			continue;
		ch->icl_nfree += slots_free(want) - slots_free(ch->icl[i].used);
		ch->icl[i].used = want;
		ret = rec_write(fs, c, i);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int icl_remove(struct cfs_fs *fs, uint32_t c, uint32_t i)
{
	struct chunk *ch = &fs->chunks[c];
	int ret;

	lock_held(&fs->chunks[c].lock);

	ch->icl_nfree -= slots_free(ch->icl[i].used);
	ch->hdr.free_inodes -= slots_free(ch->icl[i].used);
	ch->hdr_unwritten = 1;
	memset(&ch->icl[i], 0, sizeof(ch->icl[i]));
	ret = rec_write(fs, c, i);
	while (ch->icl_n && !ch->icl[ch->icl_n - 1].start)
		ch->icl_n--;
	return ret;
}

int icl_map_empty(struct cfs_fs *fs, uint32_t c, uint32_t k)
{
	struct chunk *ch = &fs->chunks[c];
	uint32_t nrec = cfs_icmap_nrec(fs->bsize), j;

	lock_held(&fs->chunks[c].lock);

	for (j = k * nrec; j < ch->icl_n && j < (k + 1) * nrec; j++)
		if (ch->icl[j].start)
			return 0;
	return 1;
}

int icl_drop(struct cfs_fs *fs, uint32_t c, uint32_t i, int write)
{
	struct chunk *ch = &fs->chunks[c];

	lock_held(&fs->chunks[c].lock);

	if (i >= ch->icl_n || !ch->icl[i].start)
		return 0;
	ch->icl_nfree -= slots_free(ch->icl[i].used);
	memset(&ch->icl[i], 0, sizeof(ch->icl[i]));
	return write ? rec_write(fs, c, i) : 0;
}

/* fsck: rewrite every map block from the records in memory (a checksum
 * mismatch; records left out as outside the chunk). */
/* Ask the device for every cluster's blocks at once (a check is about to
 * read them all), adjacent clusters in one request. */
void icl_prefetch(struct cfs_fs *fs, uint32_t c)
{
	struct chunk *ch = &fs->chunks[c];
	uint32_t i, first = 0, len = 0;

	if (icl_load(fs, c) < 0)
		return;
	for (i = 0; i <= ch->icl_n; i++) {
		uint32_t s = i < ch->icl_n ? ch->icl[i].start : 0;

		if (s && len && s == first + len) {
			len += fs->icl_blocks;
			continue;
		}
		if (len)
			cfs_bdev_prefetch(fs->bd, chunk_base(fs, c) + first, len);
		first = s;
		len = s ? fs->icl_blocks : 0;
	}
}

int icl_rewrite_map(struct cfs_fs *fs, uint32_t c, uint32_t k)
{
	struct chunk *ch = &fs->chunks[c];
	uint32_t nrec = cfs_icmap_nrec(fs->bsize), j;
	struct cfs_icl_rec none = { 0, 0 };
	struct buf *b;
	int ret;

	lock_held(&fs->chunks[c].lock);

	cache_forget(&fs->cache, icmap_abs(fs, c, k));
	ret = cache_new_meta(&fs->cache, icmap_abs(fs, c, k), CFS_MAGIC_ICMAP, &b);
	if (ret < 0)
		return ret;
	cfs_icmap_set_index(b->data, k);
	for (j = 0; j < nrec; j++) {
		uint64_t i = (uint64_t)k * nrec + j;

		cfs_icmap_rec_encode(b->data, j, i < ch->icl_n ? &ch->icl[i] : &none);
	}
	ret = buf_dirty(&fs->cache, b);
	buf_put(&fs->cache, b);
	return ret;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cfs_check: a read-only, whole-image consistency check, written apart
 * from fsck (src/fsck/) so that the tests have an oracle that does not
 * share fsck's mistakes; checking with repair, per chunk, is fsck's job.
 * Memory is proportional to the number of inodes, which is fine for the
 * images tests use. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsint.h"

struct oracle {
	struct cfs_fs *fs;
	cfs_report_t report;
	void *ctx;
	int problems;
	uint64_t ninodes;
	uint64_t *base;            /* per chunk: index of its local inode 1 */
	uint32_t *span;            /* per chunk: local numbers (table, clusters) */
	uint32_t *refs, *subdirs, *stubrefs;
	uint8_t *inuse;            /* 0 free, 1 head, 2 cont, 3 stub */
	uint8_t *owned;            /* per-chunk block map being built */
	uint64_t counted;          /* blocks counted for the current inode */
	uint32_t chunk;
};

static void oracle_problem(struct oracle *k, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	k->problems++;
	if (k->report)
		k->report(k->ctx, msg);
}

/* An inode's index in the oracle's arrays; numbers past their chunk's
 * clusters get the last index, which no inode uses (ninodes is one more). */
static uint64_t idx_of(struct oracle *k, cfs_ino_t ino)
{
	uint32_t c = CFS_INO_CHUNK(ino);

	if (CFS_INO_LOCAL(ino) > k->span[c])
		return k->ninodes - 1;
	return k->base[c] + CFS_INO_LOCAL(ino) - 1;
}

static cfs_ino_t ino_at(struct oracle *k, uint64_t i)
{
	uint32_t c = 0;

	while (c + 1 < k->fs->sb.nchunks && k->base[c + 1] <= i)
		c++;
	return CFS_INO_MAKE(c, i - k->base[c] + 1);
}

static void claim(struct oracle *k, uint32_t rel, uint32_t n, cfs_ino_t ino)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint64_t b = (uint64_t)rel + i;

		if (b < k->fs->sb.data_start || b >= k->fs->sb.chunk_blocks) {
			oracle_problem(k, "inode %u: block %llu outside chunk %u's data area", ino,
				       (unsigned long long)b, k->chunk);
			return;
		}
		if (k->owned[b >> 3] & (1u << (b & 7)))
			oracle_problem(k, "chunk %u: block %llu claimed twice (inode %u)", k->chunk,
				       (unsigned long long)b, ino);
		k->owned[b >> 3] |= (uint8_t)(1u << (b & 7));
	}
	k->counted += n;
}

struct ext_claim {
	struct oracle *k;
	cfs_ino_t ino;
};

static int claim_extent(void *vc, const struct extent *e, int is_node, uint32_t node)
{
	struct ext_claim *x = vc;

	if (is_node)
		claim(x->k, node, 1, x->ino);
	else if (ext_sane(x->k->fs, e) < 0)
		oracle_problem(x->k, "inode %u: impossible extent at logical block %llu "
			       "(%u blocks at %u)", x->ino, (unsigned long long)e->lblk, e->len,
			       e->pblk);
	else
		claim(x->k, e->pblk, e->len, x->ino);
	return 0;
}

static void check_inode_blocks(struct oracle *k, struct inode *ip)
{
	struct ext_claim x = { k, ip->ino };
	struct ext_skipped sk;
	int ret, i;

	k->counted = 0;
	ret = ext_walk(k->fs, ip, claim_extent, &x, &sk);
	if (ret < 0)
		oracle_problem(k, "inode %u: unreadable extent tree (%s)", ip->ino, strerror(-ret));
	for (i = 0; i < sk.nmisplaced && i < EXT_MISPLACED_MAX; i++)
		oracle_problem(k, "inode %u: extent at logical block %llu (%u blocks at %u) "
			       "out of key order", ip->ino,
			       (unsigned long long)sk.misplaced[i].lblk, sk.misplaced[i].len,
			       sk.misplaced[i].pblk);
	if (ip->d.xattr_block)
		claim(k, ip->d.xattr_block, 1, ip->ino);
	if (ret == 0 && k->counted != ip->d.nblocks)
		oracle_problem(k, "inode %u: owns %llu blocks, records %llu", ip->ino,
			       (unsigned long long)k->counted, (unsigned long long)ip->d.nblocks);
}

/* What the inode's type rules out (FORMAT.md 10.3): a device, fifo or
 * socket has no data.  (A symlink longer than PATH_MAX is not loaded at
 * all.) */
static void check_inode_type(struct oracle *k, const struct inode *ip)
{
	const struct cfs_dinode *d = &ip->d;
	int s, conts = 0;

	if (d->flags & (CFS_IFL_CONT | CFS_IFL_STUB))
		return;
	for (s = 0; s < CFS_NCONT; s++)
		conts |= d->cont[s] != 0;
	if ((S_ISCHR(d->mode) || S_ISBLK(d->mode) || S_ISFIFO(d->mode) || S_ISSOCK(d->mode)) &&
	    ((d->flags & (CFS_IFL_INLINE | CFS_IFL_EXTENTS)) || d->size || conts))
		oracle_problem(k, "inode %u: type 0%o with data (flags 0x%x, size %llu)", ip->ino,
			       d->mode & S_IFMT, d->flags, (unsigned long long)d->size);
}

static void check_chunk_bitmaps(struct oracle *k, uint32_t c, uint32_t used_inodes,
				uint32_t conts, uint32_t stubs, uint32_t dirs)
{
	struct cfs_fs *fs = k->fs;
	struct chunk *ch = &fs->chunks[c];
	struct chunk_inodes n;
	uint32_t made;

	chunk_inodes(fs, c, &n);
	made = fs->sb.inodes_per_chunk + n.clusters * CFS_ICL_INODES;
	uint64_t b, freeb = 0;
	int set;

	for (b = 0; b < fs->sb.chunk_blocks; b++) {
		int own = b < fs->sb.data_start || (k->owned[b >> 3] & (1u << (b & 7)));

		if (chunk_test_bit(fs, c, 0, (uint32_t)b, &set) < 0) {
			oracle_problem(k, "chunk %u: unreadable block bitmap", c);
			return;
		}
		if (set != own)
			oracle_problem(k, "chunk %u: block %llu is %s but bitmap says %s", c,
				       (unsigned long long)b, own ? "in use" : "free",
				       set ? "used" : "free");
		freeb += !set;
	}
	if (freeb != ch->hdr.free_blocks)
		oracle_problem(k, "chunk %u: free blocks %u, bitmap has %llu", c,
			       ch->hdr.free_blocks, (unsigned long long)freeb);
	if (made - used_inodes != ch->hdr.free_inodes)
		oracle_problem(k, "chunk %u: free inodes %u, counted %u", c, ch->hdr.free_inodes,
			       made - used_inodes);
	if (conts != ch->hdr.nconts || stubs != ch->hdr.nstubs || dirs != ch->hdr.ndirs)
		oracle_problem(k, "chunk %u: counts conts/stubs/dirs %u/%u/%u, counted %u/%u/%u", c,
			       ch->hdr.nconts, ch->hdr.nstubs, ch->hdr.ndirs, conts, stubs, dirs);
}

/* Whether local inode l of a cluster is in use by its map record; -1 when
 * no cluster holds it. */
static int cluster_bit(struct cfs_fs *fs, uint32_t c, uint32_t l)
{
	struct chunk *ch = &fs->chunks[c];
	uint32_t i = (l - fs->sb.inodes_per_chunk - 1) / CFS_ICL_INODES;
	int set = -1;

	pthread_mutex_lock(&ch->lock);
	if (i < ch->icl_n && ch->icl[i].start)
		set = (int)((ch->icl[i].used >> ((l - fs->sb.inodes_per_chunk - 1) %
						 CFS_ICL_INODES)) & 1);
	pthread_mutex_unlock(&ch->lock);
	return set;
}

/* The inode-cluster map blocks and the clusters own their blocks (the map
 * itself was verified when it was loaded). */
static int claim_clusters(struct oracle *k, uint32_t c)
{
	struct cfs_fs *fs = k->fs;
	struct chunk *ch = &fs->chunks[c];
	uint32_t i, n;

	pthread_mutex_lock(&ch->lock);
	if (icl_load(fs, c) < 0) {
		pthread_mutex_unlock(&ch->lock);
		oracle_problem(k, "chunk %u: unreadable inode-cluster map", c);
		return -1;
	}
	for (i = 0; i < CFS_ICMAP_BLOCKS; i++)
		if (ch->hdr.icmap[i])
			claim(k, ch->hdr.icmap[i], 1, 0);
	n = ch->icl_n;
	for (i = 0; i < n; i++)
		if (ch->icl[i].start)
			claim(k, ch->icl[i].start, fs->icl_blocks, 0);
	pthread_mutex_unlock(&ch->lock);
	return 0;
}

/* Pass 1: every inode of chunk c, its blocks and the chunk's bitmaps. */
static void check_chunk(struct oracle *k, uint32_t c)
{
	struct cfs_fs *fs = k->fs;
	uint32_t l, used = 0, conts = 0, stubs = 0, dirs = 0;
	uint64_t limit = (uint64_t)fs->chunks[c].hdr.itable_init * fs->ipb;
	int set;

	k->chunk = c;
	memset(k->owned, 0, (fs->sb.chunk_blocks + 7) / 8);
	if (claim_clusters(k, c) < 0)
		return;
	for (l = 1; l <= k->span[c]; l++) {
		cfs_ino_t ino = CFS_INO_MAKE(c, l);
		struct inode *ip;
		int ret;

		if (l > fs->sb.inodes_per_chunk) {
			set = cluster_bit(fs, c, l);
			if (set < 0)
				continue;   /* no cluster there */
		} else if (chunk_test_bit(fs, c, 1, l - 1, &set) < 0) {
			oracle_problem(k, "chunk %u: unreadable inode bitmap", c);
			return;
		}
		if (l > limit && l <= fs->sb.inodes_per_chunk) {
			if (set)
				oracle_problem(k, "inode %u: allocated beyond the inode table",
					       ino);
			continue;
		}
		ret = inode_get(fs, ino, &ip);
		if (ret < 0) {
			oracle_problem(k, "inode %u: unreadable (%s)", ino, strerror(-ret));
			continue;
		}
		if (!!ip->d.mode != set)
			oracle_problem(k, "inode %u: %s but bitmap says %s", ino,
				       ip->d.mode ? "in use" : "free", set ? "used" : "free");
		if (ip->d.mode) {
			used++;
			k->inuse[idx_of(k, ino)] = (ip->d.flags & CFS_IFL_CONT) ? 2 :
						    (ip->d.flags & CFS_IFL_STUB) ? 3 : 1;
			conts += !!(ip->d.flags & CFS_IFL_CONT);
			stubs += !!(ip->d.flags & CFS_IFL_STUB);
			dirs += S_ISDIR(ip->d.mode) &&
				!(ip->d.flags & (CFS_IFL_CONT | CFS_IFL_STUB));
			check_inode_blocks(k, ip);
			check_inode_type(k, ip);
		}
		inode_put(fs, ip);
	}
	check_chunk_bitmaps(k, c, used, conts, stubs, dirs);
}

struct dir_walk {
	struct oracle *k;
	struct inode *dp;
	uint64_t entries, remote;
};

static void check_entry_stub(struct oracle *k, struct inode *dp, const struct dirent_rec *r)
{
	struct cfs_fs *fs = k->fs;
	struct inode *s;

	if (CFS_INO_CHUNK(r->ino) == CFS_INO_CHUNK(dp->ino)) {
		if (r->stub)
			oracle_problem(k, "dir %u: local entry '%s' has a stub", dp->ino, r->name);
		return;
	}
	if (!r->stub || !ino_valid(fs, r->stub) || CFS_INO_CHUNK(r->stub) != CFS_INO_CHUNK(r->ino)) {
		oracle_problem(k, "dir %u: cross-chunk entry '%s' has no valid stub", dp->ino,
			       r->name);
		return;
	}
	k->stubrefs[idx_of(k, r->stub)]++;
	if (inode_get(fs, r->stub, &s) < 0) {
		oracle_problem(k, "stub %u unreadable", r->stub);
		return;
	}
	if (!(s->d.flags & CFS_IFL_STUB) || s->d.head != r->ino || s->d.back != dp->ino ||
	    s->d.lo != r->hash)
		oracle_problem(k, "stub %u does not match entry '%s' of dir %u", r->stub, r->name,
			       dp->ino);
	inode_put(fs, s);
}

static int check_entry(void *vc, const struct dirent_rec *r)
{
	struct dir_walk *w = vc;
	struct oracle *k = w->k;
	struct cfs_fs *fs = k->fs;
	struct inode *ip;

	w->entries++;
	w->remote += r->stub != 0;
	if (r->hash != dir_hash(fs, r->name, r->namelen))
		oracle_problem(k, "dir %u: entry '%s' has a wrong hash", w->dp->ino, r->name);
	if (!ino_valid(fs, r->ino) || k->inuse[idx_of(k, r->ino)] != 1) {
		oracle_problem(k, "dir %u: entry '%s' names free or invalid inode %u", w->dp->ino,
			       r->name, r->ino);
		return 0;
	}
	k->refs[idx_of(k, r->ino)]++;
	check_entry_stub(k, w->dp, r);
	if (inode_get(fs, r->ino, &ip) < 0)
		return 0;
	if (((ip->d.mode & S_IFMT) >> 12) != r->type)
		oracle_problem(k, "dir %u: entry '%s' type %u, inode says %u", w->dp->ino, r->name,
			       r->type, (ip->d.mode & S_IFMT) >> 12);
	if (S_ISDIR(ip->d.mode)) {
		k->subdirs[idx_of(k, w->dp->ino)]++;
		if (ip->d.back != w->dp->ino)
			oracle_problem(k, "dir %u: parent pointer %u, but it is in dir %u", ip->ino,
				       ip->d.back, w->dp->ino);
	}
	inode_put(fs, ip);
	return 0;
}

static void check_cont(struct oracle *k, struct inode *ci)
{
	struct cfs_fs *fs = k->fs;
	struct inode *p;
	int s, found = 0;

	if (!ino_valid(fs, ci->d.head) || k->inuse[idx_of(k, ci->d.head)] != 1) {
		oracle_problem(k, "continuation %u: head %u is not in use", ci->ino, ci->d.head);
		return;
	}
	if (!ino_valid(fs, ci->d.back) || inode_get(fs, ci->d.back, &p) < 0) {
		oracle_problem(k, "continuation %u: bad back pointer %u", ci->ino, ci->d.back);
		return;
	}
	for (s = 0; s < CFS_NCONT; s++)
		found += p->d.cont[s] == ci->ino;
	if (found != 1 || (p->ino != ci->d.head && p->d.head != ci->d.head))
		oracle_problem(k, "continuation %u: predecessor %u does not point to it once",
			       ci->ino, p->ino);
	inode_put(fs, p);
}

/* Pass 2: directory entries, link counts, stubs and continuations. */
static void check_links(struct oracle *k)
{
	struct cfs_fs *fs = k->fs;
	uint64_t i;

	for (i = 0; i < k->ninodes; i++) {
		cfs_ino_t ino = ino_at(k, i);
		struct inode *ip;
		struct dir_walk w;
		int ret;

		if (!k->inuse[i] || inode_get(fs, ino, &ip) < 0)
			continue;
		if (k->inuse[i] == 2)
			check_cont(k, ip);
		if (k->inuse[i] == 1 && S_ISDIR(ip->d.mode)) {
			w.k = k;
			w.dp = ip;
			w.entries = w.remote = 0;
			ret = dir_iterate(fs, ip, 0, check_entry, &w);
			if (ret < 0)
				oracle_problem(k, "dir %u: unreadable (%s)", ino, strerror(-ret));
			else if (w.entries != ip->d.lo || w.remote != ip->d.hi)
				oracle_problem(k, "dir %u: records %llu entries (%llu remote), has "
					       "%llu (%llu)", ino, (unsigned long long)ip->d.lo,
					       (unsigned long long)ip->d.hi,
					       (unsigned long long)w.entries,
					       (unsigned long long)w.remote);
		}
		inode_put(fs, ip);
	}
	for (i = 0; i < k->ninodes; i++) {
		cfs_ino_t ino = ino_at(k, i);
		struct inode *ip;
		uint32_t want;

		if (k->inuse[i] == 3 && k->stubrefs[i] != 1)
			oracle_problem(k, "stub %u referenced %u times", ino, k->stubrefs[i]);
		if (k->inuse[i] != 1 || inode_get(fs, ino, &ip) < 0)
			continue;
		want = S_ISDIR(ip->d.mode) ? 2 + k->subdirs[i] : k->refs[i];
		if (ino == fs->sb.root_ino && k->refs[i])
			oracle_problem(k, "root directory has %u entries naming it", k->refs[i]);
		else if (S_ISDIR(ip->d.mode) && ino != fs->sb.root_ino && k->refs[i] != 1)
			oracle_problem(k, "dir %u: named by %u entries", ino, k->refs[i]);
		if (!ip->d.nlink && !ip->open && ino != fs->sb.root_ino)
			oracle_problem(k, "inode %u: unreferenced, link count 0 (orphan)", ino);
		else if (ip->d.nlink != want && !(ip->open && ip->d.nlink == 0))
			oracle_problem(k, "inode %u: link count %u, counted %u", ino, ip->d.nlink,
				       want);
		inode_put(fs, ip);
	}
}

int cfs_check(struct cfs_fs *fs, cfs_report_t report, void *ctx)
{
	struct oracle k;
	uint32_t c;

	memset(&k, 0, sizeof(k));
	k.fs = fs;
	k.report = report;
	k.ctx = ctx;
	k.base = calloc(fs->sb.nchunks, sizeof(*k.base));
	k.span = calloc(fs->sb.nchunks, sizeof(*k.span));
	if (!k.base || !k.span) {
		k.problems = -ENOMEM;
		goto out;
	}
	for (c = 0; c < fs->sb.nchunks; c++) {
		k.base[c] = k.ninodes;
		struct chunk_inodes n;

		chunk_inodes(fs, c, &n);
		k.span[c] = n.span;
		k.ninodes += k.span[c];
	}
	k.ninodes++;   /* idx_of's index for numbers past a chunk's clusters */
	if (k.ninodes > (64u << 20)) {
		k.problems = -EFBIG;
		goto out;
	}
	k.refs = calloc(k.ninodes, 4);
	k.subdirs = calloc(k.ninodes, 4);
	k.stubrefs = calloc(k.ninodes, 4);
	k.inuse = calloc(k.ninodes, 1);
	k.owned = calloc((fs->sb.chunk_blocks + 7) / 8, 1);
	if (!k.refs || !k.subdirs || !k.stubrefs || !k.inuse || !k.owned) {
		k.problems = -ENOMEM;
		goto out;
	}
	for (c = 0; c < fs->sb.nchunks; c++)
		check_chunk(&k, c);
	check_links(&k);
out:
	free(k.base);
	free(k.span);
	free(k.refs);
	free(k.subdirs);
	free(k.stubrefs);
	free(k.inuse);
	free(k.owned);
	return k.problems;
}

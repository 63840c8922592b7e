/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of inode clusters (feature DYNINODES, FORMAT.md 10.4;
 * src/icluster.c, the allocation in src/chunk.c, the location in
 * src/inode.c): a chunk whose inode table is used up makes inodes from its
 * free blocks; files there read back, survive a reopen, check clean; freed
 * slots are reused before a new cluster is made; statfs counts what can
 * still be made; the old layout (^dyninodes) keeps a fixed pool. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bdev.h"
#include "chunkfs.h"
#include "fixture.h"
#include "fsint.h"
#include "test.h"

#define SIZE (16u << 20)

static struct cfs_fs *make_fs(uint32_t bs, uint32_t chunks, uint64_t inodes, int dyn,
			      struct cfs_bdev **dev)
{
	/* 64 KiB blocks: 700 one-block files need more than 16 MiB */
	uint64_t size = bs > 4096 ? SIZE * 4ull : SIZE;
	struct cfs_mkfs_opts o = { .size = size, .block_size = bs, .chunks = chunks,
				   .inodes = inodes, .dyninodes = dyn };
	struct cfs_fs *fs;

	CHECK_OK(fixture_mkfs(size, &o, dev, &fs));
	return fs;
}

static uint32_t clusters_of(struct cfs_fs *fs, uint32_t c)
{
	struct chunk_inodes n;

	chunk_inodes(fs, c, &n);
	return n.clusters;
}

static void fsck_clean(struct cfs_fs *fs)
{
	struct cfs_fsck_opts fo = { .mode = CFS_FSCK_NO, .force = 1, .threads = 2,
				    .report = fixture_report };
	struct cfs_fsck_result res;

	CHECK(cfs_fsck(fs, &fo, &res) >= 0);
	CHECK_EQ(res.problems, 0u);
}

/* Both checkers find nothing, then the device goes. */
static void checked_close(struct cfs_fs *fs, struct cfs_bdev *dev)
{
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	CHECK_OK(cfs_close(fs));
	CHECK_OK(fixture_open(dev, CFS_OPEN_RDONLY | CFS_OPEN_REPAIR | CFS_OPEN_NOCHECK, &fs));
	fsck_clean(fs);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

/* n files in one directory, file i holding 1 + i*37 % 700 bytes of
 * pattern i (inline or in a block). */
static void make_files(struct cfs_fs *fs, cfs_ino_t dir, int from, int n, cfs_ino_t *inos)
{
	static uint8_t buf[800];
	char name[32];

	for (int i = from; i < from + n; i++) {
		size_t len = 1 + (size_t)i * 37 % 700;

		snprintf(name, sizeof(name), "f%05d", i);
		CHECK_OK(cfs_mknod(fs, dir, name, S_IFREG | 0644, 0, 0, 0, &inos[i]));
		fixture_fill(buf, len, (unsigned)i);
		CHECK_EQ(cfs_write(fs, inos[i], buf, len, 0), (ssize_t)len);
	}
}

static void read_files(struct cfs_fs *fs, cfs_ino_t dir, int n, const uint8_t *gone)
{
	static uint8_t want[800], got[800];
	char name[32];
	cfs_ino_t ino;

	for (int i = 0; i < n; i++) {
		size_t len = 1 + (size_t)i * 37 % 700;

		snprintf(name, sizeof(name), "f%05d", i);
		if (gone && gone[i]) {
			CHECK_ERR(cfs_lookup(fs, dir, name, &ino), ENOENT);
			continue;
		}
		CHECK_OK(cfs_lookup(fs, dir, name, &ino));
		fixture_fill(want, len, (unsigned)i);
		CHECK_EQ(cfs_read(fs, ino, got, sizeof(got), 0), (ssize_t)len);
		CHECK(!memcmp(want, got, len));
	}
}

/* statfs leaves each chunk's repair reserve out of ffree, not files
 * (FORMAT.md 16.4); every chunk here has at least that many free. */
static uint64_t used_inodes(struct cfs_fs *fs)
{
	struct cfs_statfs st;

	CHECK_OK(cfs_statfs(fs, &st));
	return st.files - st.ffree - (uint64_t)CFS_REPAIR_INODES * fs->sb.nchunks;
}

/* One chunk of 16 table inodes takes 700 files: they land in clusters,
 * read back before and after a reopen, and both checkers agree. */
static void fill_past_table(uint32_t bs)
{
	enum { N = 700 };
	static cfs_ino_t inos[N];
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(bs, 1, 16, 0, &dev);
	struct cfs_info in;
	struct cfs_chunk_info ci;
	cfs_ino_t d;
	int past = 0;

	CHECK_OK(cfs_get_info(fs, &in));
	CHECK(in.feature_incompat & CFS_FEATURE_DYNINODES);
	CHECK_EQ(in.inodes_per_chunk, (uint64_t)(bs / 256 > 16 ? bs / 256 : 16));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &d));
	make_files(fs, d, 0, N, inos);
	for (int i = 0; i < N; i++)
		past += CFS_INO_LOCAL(inos[i]) > in.inodes_per_chunk;
	CHECK(past >= N - (int)in.inodes_per_chunk);
	/* made CFS_ICL_BATCH at a time; the sync gives back those left empty */
	CHECK_OK(cfs_get_chunk_info(fs, 0, &ci));
	CHECK_EQ(ci.clusters % CFS_ICL_BATCH, 0u);
	CHECK_OK(cfs_sync(fs));
	CHECK_OK(cfs_get_chunk_info(fs, 0, &ci));
	CHECK_EQ(ci.clusters, (uint64_t)(N + 3 - in.inodes_per_chunk + 63) / 64);
	CHECK_EQ(used_inodes(fs), (uint64_t)N + 3);   /* root, lost+found, d */
	read_files(fs, d, N, NULL);
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	CHECK_OK(cfs_close(fs));
	CHECK_OK(fixture_open(dev, 0, &fs));
	read_files(fs, d, N, NULL);
	checked_close(fs, dev);
}

static void test_fill_past_table_4k(void)
{
	fill_past_table(4096);
}

/* 1 KiB blocks: a cluster is 16 blocks; 64 KiB: one block holds more than
 * a cluster (its first 64 slots are used). */
static void test_fill_past_table_1k_64k(void)
{
	fill_past_table(1024);
	fill_past_table(65536);
}

/* Freed cluster slots are taken again before a new cluster is made; a
 * double free is refused without changing the counts; the location of a
 * cluster inode is its cluster's block and slot. */
static void test_free_reuse_location(void)
{
	enum { N = 200 };
	static cfs_ino_t inos[N];
	static uint8_t gone[N];
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(4096, 1, 16, 1, &dev);
	struct chunk *ch = &fs->chunks[0];
	uint64_t before, blk;
	uint32_t ipc = fs->sb.inodes_per_chunk, off, nclusters;
	char name[32];
	cfs_ino_t d, again[N];

	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &d));
	make_files(fs, d, 0, N, inos);
	CHECK_OK(cfs_sync(fs));
	nclusters = clusters_of(fs, 0);
	CHECK_EQ(nclusters, (N + 3 - ipc + 63) / 64);
	/* slot s of cluster i: block start + s / ipb, byte (s % ipb) * isz */
	for (int i = 0; i < N; i++) {
		uint32_t l = CFS_INO_LOCAL(inos[i]), k, s;

		if (l <= ipc)
			continue;
		k = (l - ipc - 1) / 64;
		s = (l - ipc - 1) % 64;
		blk = inode_location(fs, inos[i], &off);
		CHECK_EQ(blk, chunk_base(fs, 0) + ch->icl[k].start + s / fs->ipb);
		CHECK_EQ(off, s % fs->ipb * fs->isz);
		CHECK(ch->icl[k].used >> s & 1);
		CHECK_EQ(inode_slot_present(fs, inos[i]), 1);
	}
	/* a number past the last cluster: no slot, reads as free */
	CHECK_EQ(inode_slot_present(fs, CFS_INO_MAKE(0, ipc + 64 * nclusters + 1)), 0);
	CHECK_EQ(inode_location(fs, CFS_INO_MAKE(0, ipc + 64 * nclusters + 1), &off),
		 UINT64_MAX);
	for (int i = 1; i < N; i += 3) {
		snprintf(name, sizeof(name), "f%05d", i);
		CHECK_OK(cfs_unlink(fs, d, name));
		gone[i] = 1;
	}
	before = used_inodes(fs);
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	for (int i = 0; i < N; i++)
		if (gone[i] && CFS_INO_LOCAL(inos[i]) > ipc) {
			pthread_mutex_lock(&ch->lock);
			CHECK_ERR(icl_free(fs, 0, CFS_INO_LOCAL(inos[i])), EUCLEAN);
			pthread_mutex_unlock(&ch->lock);
			break;
		}
	CHECK_EQ(used_inodes(fs), before);
	read_files(fs, d, N, gone);
	for (int i = 0; i < N / 3; i++) {
		snprintf(name, sizeof(name), "g%05d", i);
		CHECK_OK(cfs_mknod(fs, d, name, S_IFREG | 0644, 0, 0, 0, &again[i]));
	}
	CHECK_EQ(clusters_of(fs, 0), nclusters);   /* the freed slots, no new cluster */
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

/* Clusters whose inodes are all free go back to free blocks at sync, map
 * block included, unless the chunk would be left with no free slot: one
 * stays then, ready for the next file. */
static void test_trim_at_sync(void)
{
	enum { N = 150 };
	static cfs_ino_t inos[N];
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(4096, 1, 16, 1, &dev);
	struct chunk *ch = &fs->chunks[0];
	uint32_t free0 = ch->hdr.free_blocks;
	char name[32];
	cfs_ino_t d, f;

	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &d));
	make_files(fs, d, 0, N, inos);
	CHECK_EQ(clusters_of(fs, 0), CFS_ICL_BATCH);
	CHECK_OK(cfs_sync(fs));
	CHECK_EQ(clusters_of(fs, 0), 3u);   /* the fourth, empty, given back */
	/* the last file made is in the last cluster, alone: its removal
	 * leaves the table full and one cluster of free slots only */
	snprintf(name, sizeof(name), "f%05d", N - 1);
	CHECK(CFS_INO_LOCAL(inos[N - 1]) > fs->sb.inodes_per_chunk + 128);
	for (int i = N - 1; i >= 16 + 64 * 2 - 3; i--) {
		snprintf(name, sizeof(name), "f%05d", i);
		CHECK_OK(cfs_unlink(fs, d, name));
	}
	CHECK_OK(cfs_sync(fs));
	CHECK_EQ(clusters_of(fs, 0), 3u);   /* the table full: the empty one stays */
	CHECK_EQ(ch->icl[2].used, 0u);
	CHECK_EQ(chunk_clusters_spare(fs, 0), 0u);   /* nor does statfs count it */
	CHECK_OK(cfs_mknod(fs, d, "again", S_IFREG | 0644, 0, 0, 0, &f));
	CHECK_EQ(CFS_INO_LOCAL(f), fs->sb.inodes_per_chunk + 128 + 1);
	/* cluster 1 emptied while cluster 2 has 63 free slots: it goes */
	for (int i = 16 + 64 - 3; i < 16 + 64 * 2 - 3; i++) {
		snprintf(name, sizeof(name), "f%05d", i);
		CHECK_OK(cfs_unlink(fs, d, name));
	}
	CHECK_EQ(chunk_clusters_spare(fs, 0), fs->icl_blocks);
	CHECK_OK(cfs_sync(fs));
	CHECK_EQ(clusters_of(fs, 0), 2u);
	CHECK_EQ(ch->icl[1].start, 0u);
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	for (int i = 0; i < 16 + 64 - 3; i++) {
		snprintf(name, sizeof(name), "f%05d", i);
		CHECK_OK(cfs_unlink(fs, d, name));
	}
	CHECK_OK(cfs_unlink(fs, d, "again"));
	CHECK_OK(cfs_rmdir(fs, CFS_ROOT_INO, "d"));
	CHECK_OK(cfs_sync(fs));
	CHECK_EQ(clusters_of(fs, 0), 0u);
	CHECK_EQ(ch->hdr.icmap[0], 0u);
	CHECK_EQ(ch->hdr.free_blocks, free0);
	CHECK_EQ(ch->hdr.free_inodes, fs->sb.inodes_per_chunk - 2);
	checked_close(fs, dev);
}

/* n empty files in a new directory d, then between (if any), and every
 * one removed again (d too), without a sync: their clusters are empty,
 * still in the map. */
static void make_and_remove(struct cfs_fs *fs, int n, void (*between)(struct cfs_fs *fs))
{
	char name[32];
	cfs_ino_t d, f;

	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &d));
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%05d", i);
		CHECK_OK(cfs_mknod(fs, d, name, S_IFREG | 0644, 0, 0, 0, &f));
	}
	if (between)
		between(fs);
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%05d", i);
		CHECK_OK(cfs_unlink(fs, d, name));
	}
	CHECK_OK(cfs_rmdir(fs, CFS_ROOT_INO, "d"));
	/* every empty one spare (the table's free slots are left), all but
	 * the one holding a file made in between */
	CHECK(clusters_of(fs, 0) > 60);
	CHECK(icl_empty(fs, 0, UINT32_MAX) + (between ? 1 : 0) >= clusters_of(fs, 0));
	CHECK_EQ(chunk_clusters_spare(fs, 0), (uint64_t)icl_empty(fs, 0, UINT32_MAX) * fs->icl_blocks);
}

/* Issue 25 item 5: the blocks of clusters emptied by deletions are free
 * space at once, without a sync.  statfs counts them, and a write that
 * needs them gets them: at -ENOSPC they are given back as at a sync (all
 * operations excluded, a full flush) and the write goes on.  Before, they
 * came back only at cfs_sync or close, and the write failed short. */
static void test_space_back_at_enospc(void)
{
	static uint8_t buf[1 << 20];
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(4096, 1, 16, 1, &dev);
	struct cfs_statfs a, b;
	uint64_t want, done = 0;
	cfs_ino_t f;

	CHECK_OK(cfs_statfs(fs, &a));
	make_and_remove(fs, 5000, NULL);
	CHECK_OK(cfs_statfs(fs, &b));
	/* the map block is not counted: it goes when its last cluster does */
	CHECK(b.bavail + 1 >= a.bavail);
	CHECK(b.bfree + 1 >= a.bfree);
	want = (a.bavail - 16) * fs->bsize;   /* room for the extent tree */
	CHECK(want > (uint64_t)fs->chunks[0].hdr.free_blocks * fs->bsize);
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "big", S_IFREG | 0644, 0, 0, 0, &f));
	fixture_fill(buf, sizeof(buf), 7);
	while (done < want) {
		size_t n = want - done < sizeof(buf) ? (size_t)(want - done) : sizeof(buf);

		CHECK_EQ(cfs_write(fs, f, buf, n, done), (ssize_t)n);
		done += n;
	}
	CHECK_EQ(clusters_of(fs, 0), 0u);
	CHECK_EQ(chunk_clusters_spare(fs, 0), 0u);
	checked_close(fs, dev);
}

/* /big written until the image is full, the clusters the last batch
 * left empty taken too: nothing is spare. */
static void fill_up(struct cfs_fs *fs)
{
	static uint8_t buf[1 << 16];
	uint64_t off = 0;
	cfs_ino_t f;
	ssize_t w;

	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "big", S_IFREG | 0644, 0, 0, 0, &f));
	do {
		w = cfs_write(fs, f, buf, sizeof(buf), off);
		off += w > 0 ? (uint64_t)w : 0;
	} while (w == (ssize_t)sizeof(buf));
	CHECK(w == -ENOSPC || (w >= 0 && w < (ssize_t)sizeof(buf)));
	CHECK_EQ(chunk_clusters_spare(fs, 0), 0u);
}

/* Not only write: an operation of the head_call kind (fallocate here)
 * that fails with -ENOSPC also gets the blocks of emptied clusters and
 * goes on, on an image that was full before the files were removed. */
static void test_space_back_fallocate(void)
{
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(4096, 1, 16, 1, &dev);
	struct cfs_stat st;
	uint64_t spare, len;
	cfs_ino_t f;

	make_and_remove(fs, 5000, fill_up);
	spare = chunk_clusters_spare(fs, 0);
	CHECK_OK(cfs_lookup(fs, CFS_ROOT_INO, "big", &f));
	CHECK_OK(cfs_getattr(fs, f, &st));
	/* more than the free blocks, less than those and the clusters' */
	len = (fs->chunks[0].hdr.free_blocks + spare / 2) * (uint64_t)fs->bsize;
	CHECK(spare / 2 > 8);
	CHECK_OK(cfs_fallocate(fs, f, 0, st.size, len));
	CHECK(clusters_of(fs, 0) < 2);
	checked_close(fs, dev);
}

/* The idle checkpoint (cfs_clean_idle, the mount's clean_after) gives
 * empty clusters back as a sync does, and marks the chunk clean after. */
static void test_trim_at_checkpoint(void)
{
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(4096, 1, 16, 1, &dev);
	uint32_t free0 = fs->chunks[0].hdr.free_blocks;
	struct cfs_chunk_info ci;

	make_and_remove(fs, 5000, NULL);
	CHECK(fs->chunks[0].hdr.free_blocks < free0 - 60 * fs->icl_blocks);
	CHECK_EQ(cfs_clean_idle(fs, 0), 1);
	CHECK_EQ(clusters_of(fs, 0), 0u);
	CHECK_EQ(chunk_clusters_spare(fs, 0), 0u);
	CHECK_EQ(fs->chunks[0].hdr.icmap[0], 0u);
	CHECK_EQ(fs->chunks[0].hdr.free_blocks, free0);
	CHECK_OK(cfs_get_chunk_info(fs, 0, &ci));
	CHECK_EQ(ci.state, CFS_CHUNK_CLEAN);
	checked_close(fs, dev);
}

/* statfs: free inodes are the free slots plus the clusters the free
 * blocks could make after room for each new inode's name (an upper bound
 * without it, what allocation goes by), as chunk info reports them; each
 * new file takes exactly one of them. */
static void test_statfs_counts(void)
{
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(4096, 2, 32, 0, &dev);
	struct cfs_chunk_info c0, c1;
	struct cfs_statfs a, b;
	cfs_ino_t f;
	char name[32];

	CHECK_OK(cfs_statfs(fs, &a));
	CHECK_OK(cfs_get_chunk_info(fs, 0, &c0));
	CHECK_OK(cfs_get_chunk_info(fs, 1, &c1));
	/* two chunks of ~2040 free blocks: 510 clusters of 64 each and 16
	 * slots, or 16 KiB of clusters and 51 bytes of names an inode */
	CHECK(a.ffree < chunk_inodes_avail(fs, 0) + chunk_inodes_avail(fs, 1));
	CHECK(a.ffree > 2 * 2030 * 4096ull / (256 + 51));
	CHECK_EQ(a.ffree, c0.free_inodes + c1.free_inodes - 2ull * CFS_REPAIR_INODES);
	CHECK_EQ(a.files, c0.inodes + c1.inodes);
	/* less the repair reserve: its inodes, and its blocks for clusters */
	CHECK_EQ(chunk_inodes_avail(fs, 1),
		 16 + (fs->chunks[1].hdr.free_blocks - chunk_repair_blocks(fs)) /
		 fs->icl_blocks * 64ull - CFS_REPAIR_INODES);
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 0, &f));
	}
	CHECK_OK(cfs_statfs(fs, &b));
	CHECK_EQ(b.files - b.ffree, a.files - a.ffree + 100);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

/* ^dyninodes: the fixed pool of FORMAT.md 10.1, full at ipc inodes a
 * chunk; no cluster map, and the image checks as before. */
static void test_old_layout(void)
{
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(4096, 1, 32, -1, &dev);
	struct cfs_info in;
	struct cfs_statfs st;
	cfs_ino_t f;
	char name[32];
	int i, ret = 0;

	CHECK_OK(cfs_get_info(fs, &in));
	CHECK(!(in.feature_incompat & CFS_FEATURE_DYNINODES));
	CHECK_OK(cfs_statfs(fs, &st));
	CHECK_EQ(st.files, 32u);
	for (i = 0; i < 100 && ret == 0; i++) {
		snprintf(name, sizeof(name), "e%d", i);
		ret = cfs_mknod(fs, CFS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 0, &f);
	}
	CHECK_EQ(ret, -ENOSPC);
	/* 32 less root and lost+found, the repair reserve and the inodes
	 * the placement keeps as the way in to the chunk's free blocks */
	CHECK_EQ(i - 1, 30 - (int)CFS_REPAIR_INODES - (int)alloc_inode_reserve(fs));
	CHECK_EQ(clusters_of(fs, 0), 0u);
	CHECK_EQ(fs->chunks[0].hdr.icmap[0], 0u);
	checked_close(fs, dev);
}

/* A chunk out of free blocks cannot make a cluster: ENOSPC once its
 * table is full, and the file goes to a chunk that can. */
static void test_no_blocks_no_cluster(void)
{
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(4096, 2, 32, 0, &dev);
	cfs_ino_t f;
	uint32_t rel, c;
	int n;

	/* take every free block of chunk 1 but the repair reserve, which
	 * makes no cluster outside a check */
	while ((n = chunk_alloc_blocks(fs, 1, 0, 4096, &rel)) > 0)
		;
	CHECK_EQ(n, -ENOSPC);
	CHECK_EQ(fs->chunks[1].hdr.free_blocks, chunk_repair_blocks(fs));
	CHECK_EQ(chunk_inodes_avail(fs, 1), 16u - CFS_REPAIR_INODES);
	for (int i = 0; i < 16 - (int)CFS_REPAIR_INODES; i++)
		CHECK_OK(chunk_alloc_inode(fs, 1, &f));
	CHECK_ERR(chunk_alloc_inode(fs, 1, &f), ENOSPC);
	CHECK_EQ(chunk_inodes_avail(fs, 1), 0u);
	CHECK_OK(chunk_pick(fs, 1, 1, 0, &c));
	CHECK_EQ(c, 0u);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

/* Free blocks only as single gaps: no run for a cluster.  The inode
 * allocation fails with ENOSPC, taking no block, and the chunk counts no
 * cluster from then on (until a block is freed). */
static void test_fragmented_no_run(void)
{
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(4096, 2, 32, 0, &dev);
	struct chunk *ch = &fs->chunks[1];
	uint32_t rel, first = 0, free0;
	cfs_ino_t f;
	int n;

	fs->checking = 1;   /* the repair reserve's blocks too */
	while ((n = chunk_alloc_blocks(fs, 1, 0, 1, &rel)) > 0)
		if (!first)
			first = rel;
	fs->checking = 0;
	CHECK_EQ(n, -ENOSPC);
	for (rel = first; rel + 1 < fs->sb.chunk_blocks; rel += 2)
		CHECK_OK(chunk_free_blocks(fs, 1, rel, 1));
	free0 = ch->hdr.free_blocks;
	CHECK(free0 > 1000);
	CHECK_EQ(chunk_inodes_avail(fs, 1), 16 + (free0 - chunk_repair_blocks(fs) - 1) /
		 fs->icl_blocks * 64ull - CFS_REPAIR_INODES);
	for (int i = 0; i < 16 - (int)CFS_REPAIR_INODES; i++)
		CHECK_OK(chunk_alloc_inode(fs, 1, &f));
	CHECK_ERR(chunk_alloc_inode(fs, 1, &f), ENOSPC);
	CHECK_EQ(ch->icl_frag, 1);
	CHECK_EQ(chunk_inodes_avail(fs, 1), 0u);
	CHECK_EQ(ch->hdr.icmap[0], 0u);        /* the run is looked for first */
	CHECK_EQ(ch->hdr.free_blocks, free0);
	CHECK_OK(chunk_free_blocks(fs, 1, first + 1, 1));   /* a run of 3 */
	CHECK_EQ(ch->icl_frag, 0);
	CHECK(chunk_inodes_avail(fs, 1) > 0);
	for (int i = 0; i < 16 - (int)CFS_REPAIR_INODES; i++)
		CHECK_OK(chunk_free_inode(fs, CFS_INO_MAKE(1, i + 1)));
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

/* An inode of chunk 1 that no directory names (an orphan). */
static cfs_ino_t orphan_make(struct cfs_fs *fs)
{
	struct inode *ip;
	cfs_ino_t ino;

	CHECK_OK(fs_op_begin(fs));
	CHECK_OK(inode_alloc(fs, 1, 1, S_IFREG | 0644, &ip));
	ip->d.nlink = 1;
	CHECK_OK(inode_write(fs, ip));
	pthread_mutex_unlock(&ip->lock);
	ino = ip->ino;
	inode_put(fs, ip);
	fs_op_end(fs);
	return ino;
}

/* fsck -p reconnects more orphans than their chunk has free slots when
 * its free blocks, enough for clusters by count, are single gaps: the
 * chunk cannot make the clusters a stub each would need, so they go into
 * /lost+found/#chunk-1, made from the two slots of the repair reserve.
 * (Counting on the clusters, fsck gave the first two orphans stubs, took
 * the reserve with them and failed the rest with ENOSPC.) */
static void test_orphans_fragmented_chunk(void)
{
	static uint8_t want[4096], got[4096];
	struct cfs_fsck_opts fo = { .mode = CFS_FSCK_YES, .force = 1, .threads = 2,
				    .report = fixture_report };
	struct cfs_fsck_result res;
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(4096, 2, 32, 0, &dev);
	cfs_ino_t big, ino[16], hold, f;
	uint64_t nblk, i;
	char name[32];
	int n = 0;

	CHECK_EQ(fs->chunks[1].hdr.free_inodes, 16u);
	big = ino[n++] = orphan_make(fs);
	/* all of chunk 1's free blocks (the reserve's too), then every
	 * other one of them given back */
	fs->checking = 1;
	for (nblk = 0; fs->chunks[1].hdr.free_blocks; nblk++) {
		fixture_fill(want, sizeof(want), (unsigned)nblk);
		CHECK_EQ(cfs_write(fs, big, want, sizeof(want), nblk * 4096), 4096);
	}
	for (i = 0; i < nblk; i += 2)
		CHECK_OK(cfs_fallocate(fs, big, CFS_FALLOC_PUNCH_HOLE | CFS_FALLOC_KEEP_SIZE,
				       i * 4096, 4096));
	fs->checking = 0;
	CHECK(fs->chunks[1].hdr.free_blocks > 4 * fs->icl_blocks);
	while (n < 16 - (int)CFS_REPAIR_INODES)
		ino[n++] = orphan_make(fs);
	CHECK_ERR(chunk_alloc_inode(fs, 1, &f), ENOSPC);   /* no run for a cluster */
	CHECK_OK(cfs_close(fs));

	CHECK_OK(fixture_open(dev, CFS_OPEN_REPAIR | CFS_OPEN_NOCHECK, &fs));
	CHECK(chunk_inodes_avail(fs, 1) > (uint64_t)n);   /* what it counts on */
	CHECK(cfs_fsck(fs, &fo, &res) >= 0);
	CHECK_EQ(res.unfixed, 0u);
	CHECK(res.fixed >= (uint64_t)n);
	CHECK_OK(cfs_close(fs));
	CHECK_OK(fixture_open(dev, CFS_OPEN_RDONLY | CFS_OPEN_REPAIR | CFS_OPEN_NOCHECK, &fs));
	fsck_clean(fs);
	CHECK_OK(cfs_path_resolve(fs, "/lost+found/#chunk-1", 0, &hold));
	CHECK_EQ(CFS_INO_CHUNK(hold), 1u);
	for (i = 0; i < (uint64_t)n; i++) {
		snprintf(name, sizeof(name), "#%u", ino[i]);
		CHECK_OK(cfs_lookup(fs, hold, name, &f));
		CHECK_EQ(f, ino[i]);
	}
	for (i = 1; i < nblk; i += 2) {
		fixture_fill(want, sizeof(want), (unsigned)i);
		CHECK_EQ(cfs_read(fs, big, got, sizeof(got), i * 4096), 4096);
		CHECK(!memcmp(want, got, sizeof(got)));
	}
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

int main(void)
{
	TEST_RUN(test_fill_past_table_4k);
	TEST_RUN(test_fill_past_table_1k_64k);
	TEST_RUN(test_free_reuse_location);
	TEST_RUN(test_trim_at_sync);
	TEST_RUN(test_statfs_counts);
	TEST_RUN(test_space_back_at_enospc);
	TEST_RUN(test_space_back_fallocate);
	TEST_RUN(test_trim_at_checkpoint);
	TEST_RUN(test_old_layout);
	TEST_RUN(test_no_blocks_no_cluster);
	TEST_RUN(test_fragmented_no_run);
	TEST_RUN(test_orphans_fragmented_chunk);
	return TEST_DONE();
}

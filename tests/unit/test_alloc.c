/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the placement policy (src/alloc.c, docs/ALLOCATION.md)
 * where a rule can be seen in a few operations: top-level directories made
 * by separate opens land in different chunks; with inode clusters a big
 * file's data leaves a chunk of small files alone and takes a chunk where
 * no directory lives, directories fill the chunks' inode tables before
 * any chunk makes clusters, and metadata lies apart from file data. */
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

#define SIZE (96u << 20)
#define NCHUNKS 6

static struct cfs_fs *make_fs(uint64_t inodes, int dyn, struct cfs_bdev **dev)
{
	struct cfs_mkfs_opts o = { .size = SIZE, .block_size = 4096, .chunks = NCHUNKS,
				   .inodes = inodes, .dyninodes = dyn };
	struct cfs_fs *fs;

	CHECK_OK(fixture_mkfs(SIZE, &o, dev, &fs));
	return fs;
}

static struct cfs_fs *reopen(struct cfs_fs *fs, struct cfs_bdev *dev)
{
	CHECK_OK(cfs_close(fs));
	CHECK_OK(fixture_open(dev, 0, &fs));
	return fs;
}

static void checked_close(struct cfs_fs *fs, struct cfs_bdev *dev)
{
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

/* /name with two subdirectories and a few small files, as `chunkfs put
 * -r` of a small tree makes it; the chunk of /name. */
static uint32_t small_tree(struct cfs_fs *fs, const char *name)
{
	static const char data[3000] = "x";
	cfs_ino_t top, sub, f;
	char fn[16];

	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, name, 0755, 0, 0, &top));
	CHECK_OK(cfs_mkdir(fs, top, "sub", 0755, 0, 0, &sub));
	CHECK_OK(cfs_mkdir(fs, top, "big", 0755, 0, 0, &sub));
	for (int i = 0; i < 12; i++) {
		snprintf(fn, sizeof(fn), "f%d", i);
		CHECK_OK(cfs_mknod(fs, top, fn, S_IFREG | 0644, 0, 0, 0, &f));
		CHECK_EQ(cfs_write(fs, f, data, sizeof(data), 0), (ssize_t)sizeof(data));
	}
	return CFS_INO_CHUNK(top);
}

/* Rule 4: top-level directories go to the chunks with the most room,
 * taking turns.  Each tree is made by its own open, as separate `chunkfs
 * put -r` runs do: the turns must not start again at chunk 1 each time
 * (inject.sh found every tree in one chunk). */
static void spread_across_opens(int dyn)
{
	static const char *names[] = { "a", "b", "c", "d", "w" };
	uint32_t chunk[5], root;
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(0, dyn, &dev);

	root = CFS_INO_CHUNK(fs->sb.root_ino);
	for (int i = 0; i < 5; i++) {
		chunk[i] = small_tree(fs, names[i]);
		fs = reopen(fs, dev);
	}
	for (int i = 0; i < 5; i++) {
		printf("  %s: /%s in chunk %u\n", dyn > 0 ? "clusters" : "fixed", names[i],
		       chunk[i]);
		CHECK(chunk[i] != root);
		for (int j = 0; j < i; j++)
			CHECK(chunk[i] != chunk[j]);
	}
	checked_close(fs, dev);
}

static void test_spread_across_opens_clusters(void)
{
	spread_across_opens(1);
}

static void test_spread_across_opens_fixed(void)
{
	spread_across_opens(-1);
}

/* Rule 5 with inode clusters: a chunk whose inode table went to small
 * files keeps taking its directories' files (into clusters), so its free
 * blocks are theirs, not a big file's.  A big file written there keeps
 * only its first sixteenth of a chunk with it; the rest goes to chunks
 * where no directory lives.  Before, the used-up table counted the
 * chunk's blocks as surplus and the big file took them. */
static void test_big_file_leaves_small_files_chunk(void)
{
	static uint8_t buf[1 << 16];
	const uint64_t big = 8u << 20;
	struct cfs_chunk_info before, after;
	uint32_t chunks[64], c, sc;
	cfs_ino_t dir, f;
	struct cfs_bdev *dev;
	/* 256 table inodes a chunk: 600 small files use them up */
	struct cfs_fs *fs = make_fs(NCHUNKS * 256, 1, &dev);
	char fn[16];
	int n, i;
	uint64_t off;

	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "small", 0755, 0, 0, &dir));
	sc = CFS_INO_CHUNK(dir);
	for (i = 0; i < 600; i++) {
		snprintf(fn, sizeof(fn), "f%04d", i);
		CHECK_OK(cfs_mknod(fs, dir, fn, S_IFREG | 0644, 0, 0, 0, &f));
		CHECK_EQ(cfs_write(fs, f, "tiny", 4, 0), 4);
		CHECK_EQ(CFS_INO_CHUNK(f), sc);
	}
	CHECK_OK(cfs_get_chunk_info(fs, sc, &before));
	CHECK(before.clusters > 0);
	CHECK_OK(cfs_mknod(fs, dir, "big", S_IFREG | 0644, 0, 0, 0, &f));
	for (off = 0; off < big; off += sizeof(buf)) {
		fixture_fill(buf, sizeof(buf), (unsigned)(off >> 16));
		CHECK_EQ(cfs_write(fs, f, buf, sizeof(buf), off), (ssize_t)sizeof(buf));
	}
	CHECK_OK(cfs_get_chunk_info(fs, sc, &after));
	printf("  chunk %u of the small files: %llu free blocks before the big file, "
	       "%llu after (a sixteenth of a chunk: %llu)\n", sc,
	       (unsigned long long)before.free_blocks, (unsigned long long)after.free_blocks,
	       (unsigned long long)(before.blocks / 16));
	/* its first sixteenth and an extent node or two */
	CHECK(before.free_blocks - after.free_blocks <= before.blocks / 16 + 4);
	n = cfs_file_chunks(fs, f, chunks, 64);
	CHECK(n >= 2);
	for (i = 1; i < n && i < 64; i++) {
		c = chunks[i];
		CHECK(c != sc);
		CHECK_EQ(fs->chunks[c].hdr.ndirs, 0u);
	}
	fs = reopen(fs, dev);
	for (off = 0; off < big; off += sizeof(buf)) {
		static uint8_t want[1 << 16];

		fixture_fill(want, sizeof(want), (unsigned)(off >> 16));
		CHECK_EQ(cfs_read(fs, f, buf, sizeof(buf), off), (ssize_t)sizeof(buf));
		CHECK(!memcmp(buf, want, sizeof(buf)));
	}
	checked_close(fs, dev);
}

/* With inode clusters, a chunk makes clusters only when the tables are
 * used up: a tree of 20 directories of 40 files (840 inodes) on chunks of
 * 256 table inodes spreads its directories over other chunks' tables, as
 * on the fixed layout, rather than filling its first chunk with clusters
 * while the other tables stay empty. */
static void test_tables_before_clusters(void)
{
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(NCHUNKS * 256, 1, &dev);
	struct cfs_chunk_info ci;
	cfs_ino_t top, sub, f;
	uint64_t clusters = 0;
	uint32_t c, used = 0;
	char fn[16];

	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "top", 0755, 0, 0, &top));
	for (int d = 0; d < 20; d++) {
		snprintf(fn, sizeof(fn), "d%02d", d);
		CHECK_OK(cfs_mkdir(fs, top, fn, 0755, 0, 0, &sub));
		for (int i = 0; i < 40; i++) {
			snprintf(fn, sizeof(fn), "f%02d", i);
			CHECK_OK(cfs_mknod(fs, sub, fn, S_IFREG | 0644, 0, 0, 0, &f));
			CHECK_EQ(CFS_INO_CHUNK(f), CFS_INO_CHUNK(sub));
		}
	}
	for (c = 0; c < NCHUNKS; c++) {
		CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
		clusters += ci.clusters;
		used += ci.inodes - ci.free_inodes > 64;
		printf("  chunk %u: %llu inodes in use, %llu clusters\n", c,
		       (unsigned long long)(ci.inodes - ci.free_inodes),
		       (unsigned long long)ci.clusters);
	}
	/* 840 inodes need at least 4 tables; a directory placed where a few
	 * slots are left may make a cluster for the rest of its files */
	CHECK(used >= 4);
	CHECK(clusters <= 3);
	checked_close(fs, dev);
}

/* Where each block of an inode lies: *lo and *hi are the lowest and the
 * highest chunk-relative block of its data and tree nodes. */
struct span { uint32_t lo, hi; };

static int span_cb(void *ctx, const struct extent *e, int is_node, uint32_t node)
{
	struct span *s = ctx;
	uint32_t a = is_node ? node : e->pblk, b = is_node ? node : e->pblk + e->len - 1;

	if (a < s->lo)
		s->lo = a;
	if (b > s->hi)
		s->hi = b;
	return 0;
}

static struct span blocks_of(struct cfs_fs *fs, cfs_ino_t ino)
{
	struct span s = { UINT32_MAX, 0 };
	struct inode *ip;

	CHECK_OK(inode_get(fs, ino, &ip));
	CHECK_OK(ext_walk(fs, ip, span_cb, &s, NULL));
	inode_put(fs, ip);
	return s;
}

/* Rule 7: directory blocks, extent nodes and xattr blocks come from the
 * last eighth of the chunk, file data from before it, so that a check
 * reads a chunk's metadata in a few long runs.  A directory written with
 * its files, as `cp -a` writes it, gets its blocks one by one between
 * the files' data. */
static void test_metadata_packed(void)
{
	static const char data[3000] = "x";
	static const char big[3000] = "v";
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(0, 1, &dev);
	uint32_t meta = (uint32_t)(fs->sb.chunk_blocks - (fs->sb.chunk_blocks - fs->sb.data_start) / 8);
	struct span s;
	struct inode *ip;
	cfs_ino_t dir, f, first = 0;
	char fn[64];

	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "spool", 0755, 0, 0, &dir));
	for (int i = 0; i < 200; i++) {
		snprintf(fn, sizeof(fn), "message-%04d-with-a-long-name-as-mail-has", i);
		CHECK_OK(cfs_mknod(fs, dir, fn, S_IFREG | 0644, 0, 0, 0, &f));
		CHECK_EQ(cfs_write(fs, f, data, sizeof(data), 0), (ssize_t)sizeof(data));
		if (!first)
			first = f;
		if (CFS_INO_CHUNK(f) != CFS_INO_CHUNK(dir))
			continue;
		s = blocks_of(fs, f);
		CHECK(s.lo <= s.hi);   /* not inline: it has a block */
		CHECK(s.hi < meta);
	}
	CHECK_OK(cfs_setxattr(fs, first, "user.big", big, sizeof(big), 0));
	CHECK_OK(inode_get(fs, first, &ip));
	CHECK(ip->d.xattr_block >= meta);
	inode_put(fs, ip);
	s = blocks_of(fs, dir);
	printf("  directory blocks %u..%u, metadata from %u of %llu\n", s.lo, s.hi, meta,
	       (unsigned long long)fs->sb.chunk_blocks);
	CHECK(s.lo >= meta);
	CHECK(s.hi > s.lo);   /* it grew past one block */
	checked_close(fs, dev);
}

/* Rule 7 too: inode clusters and their map, made once a chunk's table is
 * used up, lie with the metadata, not among the data written meanwhile. */
static void test_clusters_packed(void)
{
	static const char data[3000] = "x";
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(NCHUNKS * 256, 1, &dev);
	uint32_t meta = (uint32_t)(fs->sb.chunk_blocks - (fs->sb.chunk_blocks - fs->sb.data_start) / 8);
	uint32_t c, i, clusters = 0;
	cfs_ino_t dir, f;
	char fn[16];

	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &dir));
	for (i = 0; i < 600; i++) {
		snprintf(fn, sizeof(fn), "f%03u", i);
		CHECK_OK(cfs_mknod(fs, dir, fn, S_IFREG | 0644, 0, 0, 0, &f));
		CHECK_EQ(cfs_write(fs, f, data, sizeof(data), 0), (ssize_t)sizeof(data));
	}
	for (c = 0; c < NCHUNKS; c++) {
		struct chunk *ch = &fs->chunks[c];

		pthread_mutex_lock(&ch->lock);        /* icluster.c's rule */
		CHECK_OK(icl_load(fs, c));
		pthread_mutex_unlock(&ch->lock);
		if (ch->hdr.icmap[0])
			CHECK(ch->hdr.icmap[0] >= meta);
		for (i = 0; i < ch->icl_n; i++)
			if (ch->icl[i].start) {
				CHECK(ch->icl[i].start >= meta);
				clusters++;
			}
	}
	printf("  %u clusters, all from block %u on\n", clusters, meta);
	CHECK(clusters > 0);
	checked_close(fs, dev);
}

int main(void)
{
	TEST_RUN(test_spread_across_opens_clusters);
	TEST_RUN(test_spread_across_opens_fixed);
	TEST_RUN(test_big_file_leaves_small_files_chunk);
	TEST_RUN(test_tables_before_clusters);
	TEST_RUN(test_metadata_packed);
	TEST_RUN(test_clusters_packed);
	return TEST_DONE();
}

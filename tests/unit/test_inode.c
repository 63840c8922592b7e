/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of an inode's life under device faults and crashes
 * (src/inode.c, src/file.c, src/super.c): inline data moved out to a block
 * when a device call fails half-way, the release of an inode deleted while
 * open when that fails at close, and such an inode across a crash; the
 * inode cache growing with the inodes held.
 *
 * The filesystem lives on the fault-injecting memory device; the blocks a
 * step needs are dropped from the cache first (cache_forget on clean
 * buffers), so that step reads them and a read fault lands there. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bdev.h"
#include "chunkfs.h"
#include "fixture.h"
#include "fsint.h"
#include "test.h"

#define SIZE (16u << 20)
#define BS 4096u
#define OLD_LEN 50u
#define NEW_LEN 5000u

static struct cfs_fs *make_fs(struct cfs_bdev **dev)
{
	struct cfs_mkfs_opts o = { .size = SIZE, .block_size = BS, .chunks = 2 };
	struct cfs_fs *fs;

	CHECK_OK(fixture_mkfs(SIZE, &o, dev, &fs));
	return fs;
}

/* Make what is cached clean, then drop the inode's table block and its
 * chunk's block bitmap, so the next change to the file reads both. */
static void cache_cold(struct cfs_fs *fs, cfs_ino_t ino)
{
	uint32_t off;

	CHECK_OK(cfs_sync(fs));
	cache_forget(&fs->cache, inode_location(fs, ino, &off));
	cache_forget(&fs->cache, chunk_base(fs, CFS_INO_CHUNK(ino)) + 1);
}

static void reopen_checked(struct cfs_bdev *dev, struct cfs_fs **fs)
{
	CHECK_OK(cfs_close(*fs));
	CHECK_OK(fixture_open(dev, 0, fs));
	CHECK_EQ(cfs_check(*fs, fixture_report, NULL), 0);
}

/* Ways to make the k-th device call of the next change fail. */
static void cold_read(struct cfs_fs *fs, struct cfs_bdev *dev, cfs_ino_t ino, int k)
{
	struct cfs_bdev_fault_cfg cfg = { .fail_read_at = k };

	cache_cold(fs, ino);
	cfs_bdev_fault_config(dev, &cfg);
}

/* The chunk marked clean, so the first change writes its header. */
static void clean_write(struct cfs_fs *fs, struct cfs_bdev *dev, cfs_ino_t ino, int k)
{
	struct cfs_bdev_fault_cfg cfg = { .fail_write_at = k };

	CHECK_OK(cfs_sync(fs));
	CHECK(cfs_clean_idle(fs, 0) >= 0);
	(void)ino;
	cfs_bdev_fault_config(dev, &cfg);
}

/* A write that moves inline data out to a block, with the k-th device call
 * of the write failing, k = 1.. until the write goes through: each failed
 * write leaves the file with its old size and bytes, maps at most the one
 * block holding them and leaks none.  The file is held open, as the mount holds open files, so that
 * what the failed write left in memory is what the next one works on. */
static void inline_move_faults(void (*arm)(struct cfs_fs *, struct cfs_bdev *, cfs_ino_t, int))
{
	static uint8_t old[OLD_LEN], new[NEW_LEN], got[NEW_LEN];
	static const struct cfs_bdev_fault_cfg none;
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(&dev);
	struct cfs_stat st;
	cfs_ino_t f;
	ssize_t w = -EIO;
	int k, failed = 0;

	fixture_fill(old, sizeof(old), 1);
	fixture_fill(new, sizeof(new), 2);
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &f));
	CHECK_EQ(cfs_write(fs, f, old, OLD_LEN, 0), OLD_LEN);
	CHECK_OK(cfs_inode_get(fs, f));
	for (k = 1; k <= 8 && w == -EIO; k++) {
		arm(fs, dev, f, k);
		w = cfs_write(fs, f, new, NEW_LEN, 0);
		cfs_bdev_fault_config(dev, &none);
		CHECK_OK(cfs_getattr(fs, f, &st));
		if (w == -EIO) {
			failed++;
			CHECK_EQ(st.size, OLD_LEN);
			/* inline still, or moved out before the new bytes failed */
			CHECK(st.blocks == 0 || st.blocks == BS / 512);
			CHECK_EQ(cfs_read(fs, f, got, sizeof(got), 0), OLD_LEN);
			CHECK(!memcmp(got, old, OLD_LEN));
			CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
		}
	}
	CHECK_EQ(w, NEW_LEN);
	CHECK(failed >= 1);
	CHECK_OK(cfs_inode_put(fs, f));
	reopen_checked(dev, &fs);
	CHECK_EQ(cfs_read(fs, f, got, sizeof(got), 0), NEW_LEN);
	CHECK(!memcmp(got, new, NEW_LEN));
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

/* Reads fail in the block bitmap, then in the inode table (the old code
 * lost the inline bytes of an open file there). */
static void test_inline_move_read_faults(void)
{
	inline_move_faults(cold_read);
}

/* The chunk's header write (marking it dirty) fails. */
static void test_inline_move_write_faults(void)
{
	inline_move_faults(clean_write);
}

/* The release at close of a file deleted while open fails on a read: close
 * says so, the chunk stays marked dirty, and preen frees the file. */
static void test_close_release_fault(void)
{
	struct cfs_fsck_opts fo = { .mode = CFS_FSCK_PREEN, .threads = 1, .report = fixture_report };
	static uint8_t data[64 << 10];
	struct cfs_fsck_result res;
	struct cfs_statfs s0, s1;
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(&dev);
	cfs_ino_t f;

	CHECK_OK(cfs_statfs(fs, &s0));
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &f));
	fixture_fill(data, sizeof(data), 3);
	CHECK_EQ(cfs_write(fs, f, data, sizeof(data), 0), sizeof(data));
	CHECK_OK(cfs_inode_get(fs, f));
	CHECK_OK(cfs_unlink(fs, CFS_ROOT_INO, "f"));
	cold_read(fs, dev, f, 1);
	CHECK_ERR(cfs_close(fs), EIO);
	CHECK_ERR(fixture_open(dev, 0, &fs), EUCLEAN);   /* "run chunkfs fsck" */
	CHECK_OK(fixture_open(dev, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs));
	CHECK_OK(cfs_fsck(fs, &fo, &res));
	CHECK_EQ(res.checked, 1);
	CHECK(res.problems >= 1);
	CHECK_EQ(res.unfixed, 0);
	reopen_checked(dev, &fs);
	CHECK_OK(cfs_statfs(fs, &s1));
	CHECK_EQ(s1.bfree, s0.bfree);
	CHECK_EQ(s1.ffree, s0.ffree);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

/* A file deleted while open keeps its chunk dirty, its unlink written once
 * idle: after a crash the chunk is checked and the file freed, where a
 * chunk marked clean meanwhile would keep its space for ever (only fsck -f
 * found it), and one never written would bring the file back. */
static void test_open_orphan_survives_crash(void)
{
	struct cfs_fsck_opts fo = { .mode = CFS_FSCK_PREEN, .threads = 1, .report = fixture_report };
	static uint8_t data[64 << 10];
	struct cfs_fsck_result res;
	struct cfs_chunk_info ci;
	struct cfs_statfs s0, s1;
	struct cfs_bdev *dev, *crashed;
	struct cfs_fs *fs = make_fs(&dev);
	uint64_t n;
	cfs_ino_t f;
	uint32_t c;

	CHECK_OK(cfs_statfs(fs, &s0));
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &f));
	fixture_fill(data, sizeof(data), 4);
	CHECK_EQ(cfs_write(fs, f, data, sizeof(data), 0), sizeof(data));
	CHECK_OK(cfs_inode_get(fs, f));
	CHECK_OK(cfs_sync(fs));
	CHECK_OK(cfs_unlink(fs, CFS_ROOT_INO, "f"));
	CHECK(cfs_clean_idle(fs, 0) >= 0);   /* writes the unlink, marks others clean */
	for (c = 0; c < 2; c++) {
		CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
		CHECK_EQ(ci.state, c == CFS_INO_CHUNK(f) ? CFS_CHUNK_DIRTY : CFS_CHUNK_CLEAN);
	}
	/* the crash: what the device holds now, without the close */
	CHECK_OK(fixture_image_dev(cfs_bdev_fault_bytes(dev, &n), SIZE, BS, &crashed));
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
	CHECK_ERR(fixture_open(crashed, 0, &fs), EUCLEAN);
	CHECK_OK(fixture_open(crashed, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs));
	CHECK_OK(cfs_fsck(fs, &fo, &res));
	CHECK_EQ(res.checked, 1);
	CHECK_EQ(res.problems, res.fixed);
	reopen_checked(crashed, &fs);
	CHECK_ERR(cfs_lookup(fs, CFS_ROOT_INO, "f", &f), ENOENT);
	CHECK_OK(cfs_statfs(fs, &s1));
	CHECK_EQ(s1.bfree, s0.bfree);
	CHECK_EQ(s1.ffree, s0.ffree);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(crashed);
}

/* A mount holds every inode the kernel knows.  The cache's buckets grow
 * with them (a fixed 4,096 made lists of 250 at a million), and every
 * inode held is found again, itself, after each growth. */
static void test_icache_grows(void)
{
	struct cfs_mkfs_opts o = { .size = SIZE, .block_size = BS, .chunks = 2,
				   .inodes = 16384 };
	size_t k, n = (size_t)3 << ICACHE_BITS, base;
	struct inode **held = calloc(n, sizeof(*held)), *ip;
	struct cfs_bdev *dev;
	struct cfs_fs *fs;
	uint32_t ipc;

	CHECK(held != NULL);
	CHECK_OK(fixture_mkfs(SIZE, &o, &dev, &fs));
	ipc = fs->sb.inodes_per_chunk;
	CHECK((uint64_t)ipc * fs->sb.nchunks >= n);
	CHECK_EQ(icache_buckets(fs), (size_t)1 << ICACHE_BITS);
	base = fs->icache_count;
	/* free slots of both chunks load as well as files do */
	for (k = 0; k < n; k++)
		CHECK_OK(inode_get(fs, CFS_INO_MAKE(k % 2, 1 + k / 2), &held[k]));
	CHECK(icache_buckets(fs) >= n / 2);   /* at most two inodes a bucket */
	for (k = 0; k < n; k++) {
		CHECK_OK(inode_get(fs, CFS_INO_MAKE(k % 2, 1 + k / 2), &ip));
		CHECK(ip == held[k]);
		inode_put(fs, ip);
	}
	for (k = 0; k < n; k++)
		inode_put(fs, held[k]);
	CHECK_EQ(fs->icache_count, base);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
	free(held);
}

int main(void)
{
	TEST_RUN(test_inline_move_read_faults);
	TEST_RUN(test_inline_move_write_faults);
	TEST_RUN(test_close_release_fault);
	TEST_RUN(test_open_orphan_survives_crash);
	TEST_RUN(test_icache_grows);
	return TEST_DONE();
}

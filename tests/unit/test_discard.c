/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Discard (cfs_bdev_discard) on each backend, and cfs_trim over it: only
 * free data blocks are given back, files and metadata are untouched. */
#include "bdev.h"
#include "fixture.h"
#include "test.h"
#include "trim.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BS 4096u

static int all_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

static long long allocated_kib(const char *path)
{
	struct stat st;

	CHECK(stat(path, &st) == 0);
	return (long long)st.st_blocks / 2;
}

/* A hole is punched: the blocks read as zeroes and the file takes less
 * room; its size and the blocks around the hole are unchanged. */
static void test_file_discard_punches_hole(void)
{
	char dir[PATH_MAX], path[PATH_MAX + 8];
	struct cfs_bdev *bd;
	uint8_t *w = malloc(64 * BS), *r = malloc(64 * BS);
	struct stat st;
	long long before;

	CHECK(w && r);
	CHECK_OK(fixture_tmpdir(dir, sizeof(dir), "test_discard"));
	snprintf(path, sizeof(path), "%s/d.img", dir);
	CHECK(close(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644)) == 0);
	CHECK(truncate(path, 64 * BS) == 0);
	CHECK_OK(cfs_bdev_file_open(path, O_RDWR, BS, &bd));
	memset(w, 0xa5, 64 * BS);
	CHECK_OK(cfs_bdev_write(bd, 0, 64, w));
	CHECK_OK(cfs_bdev_flush(bd));
	before = allocated_kib(path);
	CHECK(before >= 64 * BS / 1024);
	CHECK_OK(cfs_bdev_discard(bd, 8, 48));
	CHECK_OK(cfs_bdev_flush(bd));
	CHECK(allocated_kib(path) <= before - 48 * BS / 1024);
	CHECK_OK(cfs_bdev_read(bd, 0, 64, r));
	CHECK(memcmp(r, w, 8 * BS) == 0);
	CHECK(all_zero(r + 8 * BS, 48 * BS));
	CHECK(memcmp(r + 56 * BS, w + 56 * BS, 8 * BS) == 0);
	CHECK(stat(path, &st) == 0 && st.st_size == 64 * BS);
	/* checked like a write */
	CHECK_ERR(cfs_bdev_discard(bd, 60, 5), EIO);
	CHECK_ERR(cfs_bdev_discard(bd, 0, 0), EINVAL);
	cfs_bdev_destroy(bd);
	CHECK_OK(cfs_bdev_file_open(path, O_RDONLY, BS, &bd));
	CHECK_ERR(cfs_bdev_discard(bd, 0, 1), EROFS);
	cfs_bdev_destroy(bd);
	unlink(path);
	rmdir(dir);
	free(w);
	free(r);
}

/* The fault device: zeroes, one write call, undone by a cut like a write. */
static void test_fault_discard_is_a_write(void)
{
	struct cfs_bdev *bd;
	struct cfs_bdev_fault_cfg cfg = { .power_cut_at = 2, .keep_prob = 0 };
	struct cfs_bdev_fault_stats st;
	uint8_t w[4 * BS], r[4 * BS];

	CHECK_OK(cfs_bdev_fault_create(16 * BS, BS, &bd));
	memset(w, 0x5a, sizeof(w));
	CHECK_OK(cfs_bdev_write(bd, 0, 4, w));
	CHECK_OK(cfs_bdev_flush(bd));
	cfs_bdev_fault_config(bd, &cfg);
	CHECK_OK(cfs_bdev_discard(bd, 1, 2));
	cfs_bdev_fault_stats(bd, &st);
	CHECK_EQ(st.writes, 1);
	CHECK_OK(cfs_bdev_read(bd, 0, 4, r));
	CHECK(all_zero(r + BS, 2 * BS) && r[0] == 0x5a && r[3 * BS] == 0x5a);
	/* the second write call cuts the power: the discard was never flushed */
	CHECK_OK(cfs_bdev_write(bd, 8, 1, w));
	cfs_bdev_fault_restore(bd);
	CHECK_OK(cfs_bdev_read(bd, 0, 4, r));
	CHECK(memcmp(r, w, sizeof(w)) == 0);
	cfs_bdev_destroy(bd);
}

/* Blocks of a deleted file are zeroed by cfs_trim; a file kept, and all
 * metadata, are not; the image still checks clean. */
static void test_trim_frees_only_free_blocks(void)
{
	struct cfs_mkfs_opts o = { .block_size = BS, .chunks = 4 };
	struct cfs_bdev *dev;
	struct cfs_fs *fs;
	struct cfs_trim_result res;
	cfs_ino_t keep, gone;
	size_t len = 300 * 1024;
	uint8_t *data = malloc(len), *back = malloc(len), *img;
	uint8_t *before;
	uint64_t size, changed = 0, zeroed = 0;

	CHECK(data && back);
	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t)(i * 7 + 1);
	CHECK_OK(cfs_bdev_fault_create(8u << 20, BS, &dev));
	CHECK_OK(cfs_mkfs_bdev(dev, &o));
	CHECK_OK(cfs_open_bdev(dev, 0, &fs));   /* dev is fs's now */
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "keep", 0100644, 0, 0, 0, &keep));
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "gone", 0100644, 0, 0, 0, &gone));
	CHECK_EQ(cfs_write(fs, keep, data, len, 0), (ssize_t)len);
	CHECK_EQ(cfs_write(fs, gone, data, len, 0), (ssize_t)len);
	CHECK_OK(cfs_unlink(fs, CFS_ROOT_INO, "gone"));
	CHECK_OK(cfs_sync(fs));
	img = cfs_bdev_fault_bytes(dev, &size);
	before = malloc(size);
	CHECK(img && before);
	memcpy(before, img, size);

	/* no free run is as long as a chunk: nothing to do */
	CHECK_OK(cfs_trim(fs, 1u << 30, &res));
	CHECK_EQ(res.blocks, 0);
	CHECK(memcmp(before, img, size) == 0);
	CHECK_OK(cfs_trim(fs, 1, &res));
	CHECK(res.blocks > 0 && res.runs > 0);
	/* every block that changed was data (non-zero before, zero now), and
	 * the deleted file's 75 blocks are among them */
	for (uint64_t b = 0; b < size / BS; b++) {
		if (memcmp(before + b * BS, img + b * BS, BS) == 0)
			continue;
		changed++;
		zeroed += all_zero(img + b * BS, BS);
	}
	CHECK_EQ(changed, zeroed);
	CHECK(changed >= 75);
	/* read back from the bytes on the device, not from the cache */
	memcpy(before, img, size);
	CHECK_OK(cfs_close(fs));
	CHECK_OK(fixture_image_dev(before, size, BS, &dev));
	CHECK_OK(cfs_open_bdev(dev, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs));
	CHECK_OK(cfs_lookup(fs, CFS_ROOT_INO, "keep", &keep));
	CHECK_EQ(cfs_read(fs, keep, back, len, 0), (ssize_t)len);
	CHECK(memcmp(back, data, len) == 0);
	CHECK_ERR(cfs_lookup(fs, CFS_ROOT_INO, "gone", &gone), ENOENT);
	CHECK_OK(cfs_check(fs, NULL, NULL));
	CHECK_OK(cfs_close(fs));
	free(before);
	free(data);
	free(back);
}

/* A device that cannot discard: -EOPNOTSUPP, nothing changed. */
static void test_trim_unsupported(void)
{
	struct cfs_mkfs_opts o = { .block_size = BS, .chunks = 2 };
	struct cfs_bdev *dev;
	struct cfs_fs *fs;
	struct cfs_trim_result res;

	CHECK_OK(fixture_mkfs(4u << 20, &o, &dev, &fs));   /* a borrowed view */
	CHECK_ERR(cfs_trim(fs, 1, &res), EOPNOTSUPP);
	CHECK_EQ(res.blocks, 0);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

int main(void)
{
	TEST_RUN(test_file_discard_punches_hole);
	TEST_RUN(test_fault_discard_is_a_write);
	TEST_RUN(test_trim_frees_only_free_blocks);
	TEST_RUN(test_trim_unsupported);
	return TEST_DONE();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cfs_resize: growing by whole chunks into a bigger device, the refusals
 * (shrink, no room for a chunk, a device that cannot grow, read-only),
 * and a power cut at every write of a resize (tests/power.h): the image
 * then opens read-write at the old or the new size, checks clean, keeps
 * its files, and a second resize finishes the job; and the same with the
 * filesystem in use (dirty chunks before, a file into the new ones after),
 * recovered by fsck -p alone. */
#include <stdint.h>
#include <sys/stat.h>

#include "test.h"
#include "power.h"

#define BSIZE     1024
#define OLD_SIZE  (2u << 20)     /* 2 chunks of 1023 blocks */
#define NEW_SIZE  (4u << 20)     /* room for 4 */
#define OLD_N     2
#define NEW_N     4
#define OLD_FILE  600000
#define NEW_FILE  1500000        /* more than the old chunks have free */

static uint8_t *pristine;        /* the old filesystem, then garbage */
static struct power_stats stats;

static void setup(void)
{
	struct cfs_mkfs_opts o = { .block_size = BSIZE, .chunks = OLD_N };
	static uint8_t data[OLD_FILE];
	struct cfs_bdev *bd;
	struct cfs_fs *fs;
	cfs_ino_t f;
	uint64_t size;

	CHECK_OK(fixture_mkfs(OLD_SIZE, &o, &bd, &fs));
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "old", S_IFREG | 0644, 0, 0, 0, &f));
	fixture_fill(data, sizeof(data), 7);
	CHECK_EQ(cfs_write(fs, f, data, sizeof(data), 0), sizeof(data));
	CHECK_OK(cfs_close(fs));
	/* what a disk holds past the old end: anything, never zeroes */
	pristine = malloc(NEW_SIZE);
	memset(pristine, 0xA5, NEW_SIZE);
	memcpy(pristine, cfs_bdev_fault_bytes(bd, &size), OLD_SIZE);
	cfs_bdev_destroy(bd);
}

static struct cfs_fs *open_new(struct cfs_bdev **bd, uint64_t bytes)
{
	struct cfs_fs *fs;

	CHECK_OK(fixture_image_dev(pristine, bytes, BSIZE, bd));
	CHECK_OK(fixture_open(*bd, 0, &fs));
	return fs;
}

static void check_old_file(struct cfs_fs *fs)
{
	static uint8_t want[OLD_FILE], got[OLD_FILE];
	cfs_ino_t f;

	fixture_fill(want, sizeof(want), 7);
	CHECK_OK(cfs_lookup(fs, CFS_ROOT_INO, "old", &f));
	CHECK_EQ(cfs_read(fs, f, got, sizeof(got), 0), sizeof(got));
	CHECK(memcmp(want, got, sizeof(got)) == 0);
}

static void check_clean(struct cfs_fs *fs)
{
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
}

static uint32_t nchunks(struct cfs_fs *fs)
{
	struct cfs_info in;

	CHECK_OK(cfs_get_info(fs, &in));
	CHECK_EQ(in.backup_sb_block, 1 + (uint64_t)in.chunks * in.chunk_blocks);
	CHECK_EQ(in.total_blocks, in.backup_sb_block + 1);
	return in.chunks;
}

/* A file that only fits with the new chunks, in one of them, read back. */
static void use_new_chunks(struct cfs_fs *fs)
{
	static uint8_t data[NEW_FILE], back[NEW_FILE];
	uint32_t chunks[16];
	int i, n, beyond = 0;
	cfs_ino_t f;

	fixture_fill(data, sizeof(data), 11);
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "new", S_IFREG | 0644, 0, 0, 0, &f));
	CHECK_EQ(cfs_write(fs, f, data, sizeof(data), 0), sizeof(data));
	n = cfs_file_chunks(fs, f, chunks, 16);
	CHECK(n > 0);
	for (i = 0; i < n && i < 16; i++)
		beyond |= chunks[i] >= OLD_N;
	CHECK(beyond);
	CHECK_EQ(cfs_read(fs, f, back, sizeof(back), 0), sizeof(back));
	CHECK(memcmp(data, back, sizeof(back)) == 0);
}

static void test_grow_whole_device(void)
{
	struct cfs_resize_result r;
	struct cfs_bdev *bd;
	struct cfs_fs *fs = open_new(&bd, NEW_SIZE);
	static uint8_t data[NEW_FILE];
	cfs_ino_t f;

	/* before: the old chunks cannot hold it (a short write) */
	fixture_fill(data, sizeof(data), 3);
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "toobig", S_IFREG | 0644, 0, 0, 0, &f));
	CHECK(cfs_write(fs, f, data, sizeof(data), 0) < (ssize_t)sizeof(data));
	CHECK_OK(cfs_unlink(fs, CFS_ROOT_INO, "toobig"));
	CHECK_OK(cfs_resize(fs, 0, &r));
	CHECK_EQ(r.old_chunks, OLD_N);
	CHECK_EQ(r.new_chunks, NEW_N);
	CHECK_EQ(r.old_blocks, 1 + OLD_N * 1023 + 1);
	CHECK_EQ(r.new_blocks, 1 + NEW_N * 1023 + 1);
	CHECK_EQ(r.room_blocks, NEW_SIZE / BSIZE);
	CHECK_EQ(nchunks(fs), NEW_N);
	use_new_chunks(fs);
	CHECK_OK(cfs_close(fs));
	CHECK_OK(fixture_open(bd, 0, &fs));
	CHECK_EQ(nchunks(fs), NEW_N);
	check_old_file(fs);
	check_clean(fs);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(bd);
}

/* SIZE below the device's: only as many chunks as fit in it. */
static void test_grow_to_size(void)
{
	struct cfs_resize_result r;
	struct cfs_bdev *bd;
	struct cfs_fs *fs = open_new(&bd, NEW_SIZE);

	CHECK_OK(cfs_resize(fs, 3u << 20, &r));
	CHECK_EQ(r.new_chunks, 3);
	CHECK_EQ(nchunks(fs), 3);
	CHECK_OK(cfs_close(fs));
	CHECK_OK(fixture_open(bd, CFS_OPEN_RDONLY, &fs));
	CHECK_EQ(nchunks(fs), 3);
	check_clean(fs);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(bd);
}

/* Refusals change no byte of the image. */
static void refused(uint64_t dev, uint64_t size, int err, uint32_t flags)
{
	struct cfs_resize_result r;
	struct cfs_bdev *bd;
	struct cfs_fs *fs;
	uint64_t n;

	CHECK_OK(fixture_image_dev(pristine, dev, BSIZE, &bd));
	CHECK_OK(fixture_open(bd, (int)flags, &fs));
	if (err)
		CHECK_ERR(cfs_resize(fs, size, &r), err);
	else
		CHECK_OK(cfs_resize(fs, size, &r));
	CHECK_EQ(r.new_chunks, OLD_N);
	CHECK_EQ(nchunks(fs), OLD_N);
	CHECK_OK(cfs_close(fs));
	CHECK(memcmp(cfs_bdev_fault_bytes(bd, &n), pristine, dev) == 0);
	cfs_bdev_destroy(bd);
}

/* A shrink that moves data is test_move.c's; a size without room for one
 * chunk is refused before anything moves. */
static void test_shrink_refused(void)
{
	refused(NEW_SIZE, 1000 * BSIZE, ENOSPC, 0);
	CHECK(strstr(cfs_last_error(), "one chunk and the two superblocks need"));
}

/* Less than a chunk more: nothing to do, not an error. */
static void test_less_than_a_chunk(void)
{
	refused(NEW_SIZE, OLD_SIZE + 1000 * BSIZE, 0, 0);
	refused(OLD_SIZE + 1000 * BSIZE, 0, 0, 0);
}

/* The fault device cannot grow past its size. */
static void test_device_too_small(void)
{
	refused(NEW_SIZE, 2 * NEW_SIZE, EFBIG, 0);
	CHECK(strstr(cfs_last_error(), "the device holds only 4194304"));
}

static void test_read_only(void)
{
	refused(NEW_SIZE, 0, EROFS, CFS_OPEN_RDONLY);
}

/* ---- power cut at every write ---- */

static void resize_workload(struct cfs_fs *fs, void *arg)
{
	struct cfs_resize_result r;

	(void)arg;
	cfs_resize(fs, 0, &r);
}

/* With the primary lost as well, the repair open's search finds a backup
 * that describes the old or the new filesystem. */
static void check_backup(const char *path)
{
	static uint8_t img[NEW_SIZE];
	struct cfs_bdev *bd;
	struct cfs_fs *fs;
	uint32_t n;

	power_read_image(path, img, sizeof(img));
	memset(img, 0, BSIZE);
	CHECK_OK(fixture_image_dev(img, sizeof(img), BSIZE, &bd));
	CHECK_OK(fixture_open(bd, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs));
	n = nchunks(fs);
	CHECK(n == OLD_N || n == NEW_N);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(bd);
}

static void resize_verify(int64_t k, const char *path, void *arg)
{
	struct cfs_resize_result r;
	struct cfs_fs *fs;
	uint32_t n;

	(void)arg;
	check_backup(path);
	/* the resize dirtied nothing: a plain read-write open works */
	CHECK_OK(cfs_open(path, 0, &fs));
	n = nchunks(fs);
	if (n != OLD_N && n != NEW_N)
		TEST_FAIL("cut %lld: %u chunks", (long long)k, n);
	check_old_file(fs);
	check_clean(fs);
	/* running it again finishes the job */
	CHECK_OK(cfs_resize(fs, 0, &r));
	CHECK_EQ(nchunks(fs), NEW_N);
	use_new_chunks(fs);
	CHECK_OK(cfs_close(fs));
	fs = power_cut_recover(k, path, &stats);
	CHECK_EQ(nchunks(fs), NEW_N);
	check_old_file(fs);
	CHECK_OK(cfs_close(fs));
}

/* Every cut of workload w, each checked by v; returns the cut count. */
static int64_t cut_all(const char *tag, power_workload_t w, power_verify_t v)
{
	struct power_cut pc;
	int64_t n;

	power_cut_init(&pc, pristine, NEW_SIZE, BSIZE, tag);
	memset(&stats, 0, sizeof(stats));
	n = each_power_cut(&pc, w, v, NULL);
	CHECK_EQ(stats.cuts, n);
	printf("%s: %lld cut points, fsck -p repaired %lld\n", tag, (long long)n,
	       (long long)stats.repaired);
	unlink(pc.path);
	return n;
}

static void test_power_cut_every_write(void)
{
	/* 2 new chunks: one header, the backup, the other header, the primary */
	CHECK_EQ(cut_all("resize", resize_workload, resize_verify), 4);
}

/* Online: chunks dirty with work in flight before, a file into the new
 * chunks after; fsck -p alone recovers every cut. */
static void online_workload(struct cfs_fs *fs, void *arg)
{
	static uint8_t data[NEW_FILE];
	struct cfs_resize_result r;
	cfs_ino_t d, f;

	(void)arg;
	fixture_fill(data, sizeof(data), 5);
	if (cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &d) < 0 ||
	    cfs_mknod(fs, d, "before", S_IFREG | 0644, 0, 0, 0, &f) < 0 ||
	    cfs_write(fs, f, data, 100000, 0) < 0 || cfs_sync(fs) < 0 ||
	    cfs_mknod(fs, d, "during", S_IFREG | 0644, 0, 0, 0, &f) < 0 ||
	    cfs_write(fs, f, data, 5000, 0) < 0)
		return;
	if (cfs_resize(fs, 0, &r) < 0)
		return;
	if (cfs_mknod(fs, CFS_ROOT_INO, "after", S_IFREG | 0644, 0, 0, 0, &f) < 0 ||
	    cfs_write(fs, f, data, sizeof(data), 0) < 0)
		return;
	cfs_sync(fs);
}

static void online_verify(int64_t k, const char *path, void *arg)
{
	struct cfs_fs *fs = power_cut_recover(k, path, &stats);
	uint32_t n = nchunks(fs);

	(void)arg;
	if (n != OLD_N && n != NEW_N)
		TEST_FAIL("cut %lld: %u chunks", (long long)k, n);
	check_old_file(fs);
	CHECK_OK(cfs_close(fs));
}

static void test_power_cut_online(void)
{
	CHECK(cut_all("resize_online", online_workload, online_verify) > 8);
}

int main(void)
{
	/* a small cache makes write-back interleave with the resize */
	setenv("CHUNKFS_CACHE_KB", "96", 0);
	setup();
	TEST_RUN(test_grow_whole_device);
	TEST_RUN(test_grow_to_size);
	TEST_RUN(test_shrink_refused);
	TEST_RUN(test_less_than_a_chunk);
	TEST_RUN(test_device_too_small);
	TEST_RUN(test_read_only);
	TEST_RUN(test_power_cut_every_write);
	TEST_RUN(test_power_cut_online);
	free(pristine);
	return TEST_DONE();
}

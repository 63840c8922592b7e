/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The direct write path: whole blocks of a write go from the caller's
 * buffer to the device in one write, bypassing the block cache.
 *  - a cached (even dirty) copy of an overwritten block never wins over
 *    the new data, before or after a flush and a remount;
 *  - blocks a write allocates never show their old contents: around the
 *    written bytes, and after a write that failed on the device;
 *  - a power cut after every device write of a workload mixing direct,
 *    cached and sparse writes leaves an image fsck repairs fully, and
 *    every file whose fsync returned reads back exactly.
 * Free blocks are filled with 0xAA first, so old contents would show. */
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bdev.h"
#include "chunkfs.h"
#include "fixture.h"
#include "test.h"

#define BSIZE    1024
#define IMG_SIZE (3u << 20)
#define OLD      0xAA

static char path[96];

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 2654435761u + seed) >> 11) | 1;   /* never 0 */
}

static void report(void *ctx, const char *msg)
{
	if (ctx)
		fprintf(stderr, "    %s\n", msg);
}

/* A file-backed image whose free blocks hold OLD. */
static void mkfs_file(void)
{
	struct cfs_mkfs_opts o = { .size = IMG_SIZE, .block_size = BSIZE, .chunks = 4 };
	static uint8_t junk[IMG_SIZE];
	int fd;

	snprintf(path, sizeof(path), "%s/cfs_wdirect_%d.img",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid());
	memset(junk, OLD, sizeof(junk));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(fd);
	CHECK_OK(cfs_mkfs(path, &o));
}

static void check_image(struct cfs_fs *fs)
{
	int problems = cfs_check(fs, report, (void *)1);

	CHECK_EQ(problems, 0);
}

/* Read [0, n) of ino and compare it with want; the size must be n. */
static void expect(struct cfs_fs *fs, cfs_ino_t ino, const uint8_t *want, size_t n)
{
	static uint8_t got[65536];
	struct cfs_stat st;
	size_t i;

	CHECK(n <= sizeof(got));
	CHECK_OK(cfs_getattr(fs, ino, &st));
	CHECK_EQ(st.size, n);
	CHECK_EQ(cfs_read(fs, ino, got, sizeof(got), 0), (ssize_t)n);
	for (i = 0; i < n; i++)
		if (got[i] != want[i])
			TEST_FAIL("byte %zu is 0x%02x, expected 0x%02x", i, got[i], want[i]);
}

/* A fresh image (mkfs_file) opened in *fs, with an empty regular file
 * "f" in its root: f's inode. */
static cfs_ino_t open_new_file(struct cfs_fs **fs)
{
	cfs_ino_t f = 0;

	mkfs_file();
	CHECK_OK(cfs_open(path, 0, fs));
	CHECK_OK(cfs_mknod(*fs, CFS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &f));
	return f;
}

/* Close fs and open the image again: f holds exp's size bytes and the
 * image is consistent.  Then remove the image. */
static void remount_expect_done(struct cfs_fs *fs, cfs_ino_t f, const uint8_t *exp,
				size_t size)
{
	CHECK_OK(cfs_close(fs));
	CHECK_OK(cfs_open(path, 0, &fs));
	expect(fs, f, exp, size);
	check_image(fs);
	CHECK_OK(cfs_close(fs));
	unlink(path);
}

/* Write len pattern bytes at off, and apply them to the expected contents
 * exp (of *size bytes, grown as needed). */
static ssize_t wr(struct cfs_fs *fs, cfs_ino_t ino, uint8_t *exp, size_t *size, size_t off,
		  size_t len, unsigned seed)
{
	static uint8_t buf[65536];
	ssize_t n;

	CHECK(off + len <= sizeof(buf));
	fill(buf, len, seed);
	n = cfs_write(fs, ino, buf, len, off);
	if (n == (ssize_t)len) {
		memcpy(exp + off, buf, len);
		if (off + len > *size)
			*size = off + len;
	}
	return n;
}

/* A partial write leaves a dirty cached block; a whole-block write over it
 * goes direct.  The cached copy must follow, also across sync and remount. */
static void test_dirty_cached_copy_loses(void)
{
	static uint8_t exp[16384];
	struct cfs_fs *fs;
	cfs_ino_t f;
	size_t size = 0;

	f = open_new_file(&fs);
	CHECK_EQ(wr(fs, f, exp, &size, 0, 8 * BSIZE, 1), 8 * BSIZE);   /* direct */
	CHECK_OK(cfs_sync(fs));
	CHECK_EQ(wr(fs, f, exp, &size, BSIZE + 10, 100, 2), 100);      /* cached, dirty */
	CHECK_EQ(wr(fs, f, exp, &size, 3 * BSIZE + 1, 3000, 3), 3000);  /* both */
	expect(fs, f, exp, size);
	CHECK_EQ(wr(fs, f, exp, &size, 0, 6 * BSIZE, 4), 6 * BSIZE);   /* direct over them */
	expect(fs, f, exp, size);
	CHECK_OK(cfs_sync(fs));
	expect(fs, f, exp, size);
	/* and again with the cached copies clean (read into the cache) */
	CHECK_EQ(wr(fs, f, exp, &size, 2 * BSIZE + 5, 10, 5), 10);
	CHECK_OK(cfs_sync(fs));
	CHECK_EQ(wr(fs, f, exp, &size, 2 * BSIZE, 2 * BSIZE, 6), 2 * BSIZE);
	expect(fs, f, exp, size);
	check_image(fs);
	remount_expect_done(fs, f, exp, size);
}

/* Writes into holes, unaligned at both ends: the rest of each newly
 * allocated block reads as zeroes, never as OLD. */
static void test_fresh_blocks_zeroed(void)
{
	static uint8_t exp[65536];
	struct cfs_fs *fs;
	struct cfs_setattr sa = { .valid = CFS_SET_SIZE, .size = 60000 };
	cfs_ino_t f;
	size_t size = 0;

	f = open_new_file(&fs);
	CHECK_EQ(wr(fs, f, exp, &size, 1500, 3000, 1), 3000);
	CHECK_EQ(wr(fs, f, exp, &size, 20 * BSIZE + 700, 7 * BSIZE, 2), 7 * BSIZE);
	CHECK_EQ(wr(fs, f, exp, &size, 12 * BSIZE, 2 * BSIZE, 3), 2 * BSIZE);
	CHECK_EQ(wr(fs, f, exp, &size, 40000, 1, 4), 1);
	expect(fs, f, exp, size);
	CHECK_OK(cfs_setattr(fs, f, &sa, NULL));
	size = 60000;
	expect(fs, f, exp, size);
	remount_expect_done(fs, f, exp, size);
}

/* The device write of a direct run fails: the blocks allocated for it are
 * unmapped again, so extending the file over them reads zeroes. */
static void test_failed_write_leaves_hole(void)
{
	struct cfs_mkfs_opts o = { .block_size = BSIZE, .chunks = 4 };
	struct cfs_bdev_fault_cfg fail = { .fail_write_at = 1 }, none = { 0 };
	struct cfs_setattr sa = { .valid = CFS_SET_SIZE, .size = 12000 };
	static uint8_t exp[16384];
	struct cfs_bdev *bd;
	struct cfs_fs *fs;
	struct cfs_statfs before, after;
	uint64_t sz;
	cfs_ino_t f;
	size_t size = 0;

	CHECK_OK(cfs_bdev_fault_create(IMG_SIZE, BSIZE, &bd));
	memset(cfs_bdev_fault_bytes(bd, &sz), OLD, IMG_SIZE);
	CHECK_OK(cfs_mkfs_bdev(bd, &o));
	CHECK_OK(cfs_open_bdev(bd, 0, &fs));
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &f));
	CHECK_EQ(wr(fs, f, exp, &size, 0, 200, 1), 200);   /* inline */
	CHECK_OK(cfs_sync(fs));
	CHECK_OK(cfs_statfs(fs, &before));
	/* nothing else is pending, so the first device write is the data's */
	cfs_bdev_fault_config(bd, &fail);
	CHECK_ERR(wr(fs, f, exp, &size, 2 * BSIZE, 9000, 2), EIO);   /* past EOF: all new */
	cfs_bdev_fault_config(bd, &none);
	expect(fs, f, exp, size);
	CHECK_OK(cfs_statfs(fs, &after));
	CHECK_EQ(after.bfree, before.bfree);   /* nothing leaked */
	CHECK_OK(cfs_setattr(fs, f, &sa, NULL));
	size = 12000;
	expect(fs, f, exp, size);
	check_image(fs);
	CHECK_OK(cfs_close(fs));
}

/* ---- power cut after every device write ---- */

#define NDUR 4

struct durable {
	char name[16];
	uint8_t exp[65536];
	size_t size;
	int valid;
};

static struct durable dur[NDUR];
static uint8_t *pristine;

static int synced(struct cfs_fs *fs, cfs_ino_t f, struct durable *d)
{
	if (cfs_fsync(fs, f, 0) < 0)
		return -1;
	d->valid = 1;
	return 0;
}

/* Returns at the first error (the power cut). */
static void workload(struct cfs_fs *fs)
{
	static uint8_t scratch[65536];
	size_t junk = 0, i;
	cfs_ino_t d, f[NDUR], g;

	memset(dur, 0, sizeof(dur));
	for (i = 0; i < NDUR; i++)
		snprintf(dur[i].name, sizeof(dur[i].name), "f%zu", i);
	if (cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &d) < 0)
		return;
	for (i = 0; i < NDUR; i++)
		if (cfs_mknod(fs, d, dur[i].name, S_IFREG | 0644, 0, 0, 0, &f[i]) < 0)
			return;
	/* a file to free: its blocks come back for the later files */
	if (cfs_mknod(fs, CFS_ROOT_INO, "g", S_IFREG | 0644, 0, 0, 0, &g) < 0 ||
	    wr(fs, g, scratch, &junk, 0, 40000, 9) < 0 || cfs_sync(fs) < 0 ||
	    cfs_unlink(fs, CFS_ROOT_INO, "g") < 0)
		return;
	/* f0: unaligned pieces, each partly cached, partly direct */
	for (i = 0; i < 20000; i += 1500)
		if (wr(fs, f[0], dur[0].exp, &dur[0].size, i, 1500, (unsigned)i) < 0)
			return;
	if (synced(fs, f[0], &dur[0]) < 0)
		return;
	/* f1: direct, then direct and cached overwrites of mapped blocks */
	if (wr(fs, f[1], dur[1].exp, &dur[1].size, 0, 30 * BSIZE, 1) < 0 ||
	    wr(fs, f[1], dur[1].exp, &dur[1].size, 4 * BSIZE, 2 * BSIZE, 2) < 0 ||
	    wr(fs, f[1], dur[1].exp, &dur[1].size, 10000, 700, 3) < 0 ||
	    wr(fs, f[1], dur[1].exp, &dur[1].size, 9 * BSIZE, 3 * BSIZE, 4) < 0 ||
	    synced(fs, f[1], &dur[1]) < 0)
		return;
	/* f2: sparse, unaligned writes into holes */
	if (wr(fs, f[2], dur[2].exp, &dur[2].size, 40000, 5000, 5) < 0 ||
	    wr(fs, f[2], dur[2].exp, &dur[2].size, 3 * BSIZE, 4 * BSIZE, 6) < 0 ||
	    wr(fs, f[2], dur[2].exp, &dur[2].size, 1000, 100, 7) < 0 ||
	    synced(fs, f[2], &dur[2]) < 0)
		return;
	/* f3: bigger than a chunk's share, never synced by itself */
	for (i = 0; i + 8192 <= sizeof(dur[3].exp); i += 8192)
		if (wr(fs, f[3], dur[3].exp, &dur[3].size, i, 8192, (unsigned)i + 11) < 0)
			return;
	cfs_sync(fs);
}

static struct cfs_bdev *fresh_dev(void)
{
	struct cfs_bdev *bd;

	CHECK_OK(fixture_image_dev(pristine, IMG_SIZE, BSIZE, &bd));
	return bd;
}

static int64_t count_writes(void)
{
	struct cfs_bdev_fault_stats st;
	struct cfs_bdev_fault_cfg cfg = { 0 };
	struct cfs_bdev *bd = fresh_dev();
	struct cfs_fs *fs;
	int i;

	cfs_bdev_fault_config(bd, &cfg);
	CHECK_OK(cfs_open_bdev(bd, 0, &fs));
	workload(fs);
	for (i = 0; i < NDUR - 1; i++)
		CHECK(dur[i].valid);
	cfs_bdev_fault_stats(bd, &st);
	CHECK_OK(cfs_close(fs));
	return st.writes;
}

static void verify_after_crash(int64_t k)
{
	struct cfs_fsck_opts o = { .mode = CFS_FSCK_YES, .report = report };
	struct cfs_fsck_result r;
	struct cfs_fs *fs;
	cfs_ino_t d, f;
	int i;

	CHECK_OK(cfs_open(path, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs));
	CHECK_OK(cfs_fsck(fs, &o, &r));
	if (r.unfixed)
		TEST_FAIL("cut %lld: fsck left %llu problems", (long long)k,
			  (unsigned long long)r.unfixed);
	CHECK_OK(cfs_close(fs));
	o.mode = CFS_FSCK_NO;
	o.force = 1;
	o.ctx = (void *)1;
	CHECK_OK(cfs_open(path, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs));
	CHECK_OK(cfs_fsck(fs, &o, &r));
	if (r.problems)
		TEST_FAIL("cut %lld: second fsck found %llu problems", (long long)k,
			  (unsigned long long)r.problems);
	if (cfs_check(fs, report, (void *)1))
		TEST_FAIL("cut %lld: cfs_check found problems", (long long)k);
	for (i = 0; i < NDUR; i++) {
		if (!dur[i].valid)
			continue;
		if (cfs_lookup(fs, CFS_ROOT_INO, "d", &d) < 0 ||
		    cfs_lookup(fs, d, dur[i].name, &f) < 0)
			TEST_FAIL("cut %lld: fsync'd %s lost", (long long)k, dur[i].name);
		expect(fs, f, dur[i].exp, dur[i].size);
	}
	CHECK_OK(cfs_close(fs));
}

static void crash_at(int64_t k, double keep)
{
	struct cfs_bdev_fault_cfg cfg = { .power_cut_at = k, .keep_prob = keep,
					  .seed = (uint64_t)k };
	struct cfs_bdev *bd = fresh_dev();
	struct cfs_fs *fs;

	cfs_bdev_fault_config(bd, &cfg);
	CHECK_OK(cfs_open_bdev(bd, 0, &fs));
	workload(fs);
	cfs_bdev_fault_restore(bd);
	CHECK_OK(cfs_bdev_fault_save(bd, path));
	cfs_close(fs);   /* writes into a device nobody reads again */
	verify_after_crash(k);
}

static void test_crash_every_write(void)
{
	struct cfs_mkfs_opts o = { .block_size = BSIZE, .chunks = 6, .inodes = 600 };
	struct cfs_bdev *bd;
	uint64_t size;
	int64_t w, k;

	snprintf(path, sizeof(path), "%s/cfs_wdirect_%d.img",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid());
	CHECK_OK(cfs_bdev_fault_create(IMG_SIZE, BSIZE, &bd));
	memset(cfs_bdev_fault_bytes(bd, &size), OLD, IMG_SIZE);
	CHECK_OK(cfs_mkfs_bdev(bd, &o));
	pristine = malloc(IMG_SIZE);
	CHECK(pristine);
	memcpy(pristine, cfs_bdev_fault_bytes(bd, &size), IMG_SIZE);
	cfs_bdev_destroy(bd);
	w = count_writes();
	for (k = 1; k <= w; k++)
		crash_at(k, k & 1 ? 0.0 : 0.5);
	printf("write_direct: %lld crash points covered\n", (long long)w);
	unlink(path);
	free(pristine);
	pristine = NULL;
}

int main(void)
{
	/* a small cache makes write-back interleave with the workload */
	setenv("CHUNKFS_CACHE_KB", "96", 0);
	TEST_RUN(test_dirty_cached_copy_loses);
	TEST_RUN(test_fresh_blocks_zeroed);
	TEST_RUN(test_failed_write_leaves_hole);
	TEST_RUN(test_crash_every_write);
	return TEST_DONE();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Block-device layer: generic accessors, file backend, fault backend. */
#include "bdev.h"
#include "fixture.h"
#include "test.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define BS 4096u

static char tmpdir_path[PATH_MAX];

static void fill(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131u + i * 7u + (i >> 8));
}

static int all_bytes(const uint8_t *p, size_t len, uint8_t v)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

/* path = name inside the private temp directory; path is PATH_MAX long. */
static void tmp_path(char *path, const char *name)
{
	int n = snprintf(path, PATH_MAX, "%s/%s", tmpdir_path, name);

	CHECK(n > 0 && n < PATH_MAX);
}

/* A fresh file of size bytes (sparse) under a private temp directory. */
static void make_file(char *path, const char *name, off_t size)
{
	int fd;

	tmp_path(path, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, size) == 0);
	close(fd);
}

/* A file device over a fresh file of size bytes; *path is its name. */
static struct cfs_bdev *file_dev(char *path, const char *name, off_t size)
{
	struct cfs_bdev *bd = NULL;

	make_file(path, name, size);
	CHECK_OK(cfs_bdev_file_open(path, O_RDWR, BS, &bd));
	return bd;
}

/* Close a file device and remove its file. */
static void file_dev_done(struct cfs_bdev *bd, const char *path)
{
	cfs_bdev_destroy(bd);
	unlink(path);
}

static void write_pattern(struct cfs_bdev *bd, uint64_t blk, unsigned seed)
{
	uint8_t w[BS];

	fill(w, BS, seed);
	CHECK_OK(cfs_bdev_write(bd, blk, 1, w));
}

/* 1 if blk holds pattern seed, 0 if it holds zeros, else fails. */
static int holds(struct cfs_bdev *bd, uint64_t blk, unsigned seed)
{
	uint8_t w[BS], r[BS];

	fill(w, BS, seed);
	CHECK_OK(cfs_bdev_read(bd, blk, 1, r));
	if (memcmp(r, w, BS) == 0)
		return 1;
	CHECK(all_bytes(r, BS, 0));
	return 0;
}

/* The fault device's counters at line: reads, writes, flushes and
 * powered_off each as given, where not -1. */
#define CHECK_STATS(bd, reads, writes, flushes, off) \
	check_stats(bd, (int64_t[4]){ reads, writes, flushes, off }, __LINE__)

static void check_stats(struct cfs_bdev *bd, const int64_t want[4], int line)
{
	static const char *const name[4] = { "reads", "writes", "flushes", "powered_off" };
	struct cfs_bdev_fault_stats st;
	int64_t got[4];

	cfs_bdev_fault_stats(bd, &st);
	got[0] = st.reads;
	got[1] = st.writes;
	got[2] = st.flushes;
	got[3] = st.powered_off;
	for (int i = 0; i < 4; i++)
		if (want[i] >= 0 && got[i] != want[i])
			TEST_FAIL("line %d: %s %" PRId64 ", expected %" PRId64, line, name[i],
				  got[i], want[i]);
}

/* 1 if count blocks from blk read back as zeroes, 0 if not; fails the
 * test if the read fails. */
static int reads_zero(struct cfs_bdev *bd, uint64_t blk, uint32_t count)
{
	uint8_t *buf = malloc((size_t)count * BS);
	int zero;

	CHECK(buf);
	memset(buf, 0xAA, (size_t)count * BS);
	CHECK_OK(cfs_bdev_read(bd, blk, count, buf));
	zero = all_bytes(buf, (size_t)count * BS, 0);
	free(buf);
	return zero;
}

static void read_file_at(const char *path, off_t off, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0);
	CHECK_EQ(pread(fd, buf, len, off), (ssize_t)len);
	close(fd);
}

/* ---- file backend ---- */

static void test_file_round_trip(void)
{
	char path[PATH_MAX];
	struct cfs_bdev *bd = file_dev(path, "rt.img", 16 * BS);
	uint8_t w[3 * BS], r[3 * BS], raw[3 * BS];

	CHECK_EQ(bd->nblocks, 16);
	CHECK_EQ(bd->block_size, BS);
	CHECK_EQ(bd->read_only, 0);
	CHECK(strcmp(bd->name, path) == 0);

	fill(w, sizeof(w), 1);
	CHECK_OK(cfs_bdev_write(bd, 2, 3, w));
	memset(r, 0, sizeof(r));
	CHECK_OK(cfs_bdev_read(bd, 2, 3, r));
	CHECK(memcmp(r, w, sizeof(w)) == 0);
	/* Single blocks out of the multi-block run. */
	CHECK_OK(cfs_bdev_read(bd, 3, 1, r));
	CHECK(memcmp(r, w + BS, BS) == 0);
	CHECK_OK(cfs_bdev_flush(bd));
	cfs_bdev_destroy(bd);

	/* The bytes landed at blk * block_size in the file. */
	read_file_at(path, 2 * BS, raw, sizeof(raw));
	CHECK(memcmp(raw, w, sizeof(w)) == 0);
	read_file_at(path, 1 * BS, raw, BS);
	CHECK(all_bytes(raw, BS, 0));

	/* Last block, and persistence across reopen. */
	CHECK_OK(cfs_bdev_file_open(path, O_RDWR, BS, &bd));
	CHECK_OK(cfs_bdev_write(bd, 15, 1, w + 2 * BS));
	CHECK_OK(cfs_bdev_read(bd, 2, 3, r));
	CHECK(memcmp(r, w, sizeof(w)) == 0);
	CHECK_OK(cfs_bdev_read(bd, 15, 1, r));
	CHECK(memcmp(r, w + 2 * BS, BS) == 0);
	file_dev_done(bd, path);
}

static void test_file_bounds(void)
{
	char path[PATH_MAX];
	struct cfs_bdev *bd = file_dev(path, "bounds.img", 16 * BS);
	uint8_t buf[2 * BS];

	memset(buf, 0x5A, sizeof(buf));
	CHECK_ERR(cfs_bdev_read(bd, 16, 1, buf), EIO);
	CHECK_ERR(cfs_bdev_read(bd, 15, 2, buf), EIO);
	CHECK_ERR(cfs_bdev_read(bd, UINT64_MAX, 2, buf), EIO);
	CHECK_ERR(cfs_bdev_read(bd, 1, UINT32_MAX, buf), EIO);
	CHECK_ERR(cfs_bdev_read(bd, 0, 0, buf), EINVAL);
	CHECK_ERR(cfs_bdev_write(bd, 16, 1, buf), EIO);
	CHECK_ERR(cfs_bdev_write(bd, 15, 2, buf), EIO);
	CHECK_ERR(cfs_bdev_write(bd, UINT64_MAX, 2, buf), EIO);
	CHECK_ERR(cfs_bdev_write(bd, 0, 0, buf), EINVAL);
	/* Nothing was written by the rejected calls. */
	CHECK(all_bytes(buf, sizeof(buf), 0x5A));
	CHECK(reads_zero(bd, 14, 2));
	file_dev_done(bd, path);
}

static void test_file_read_only(void)
{
	char path[PATH_MAX];
	struct cfs_bdev *bd = file_dev(path, "ro.img", 8 * BS);
	uint8_t r[BS];

	write_pattern(bd, 1, 7);
	cfs_bdev_destroy(bd);

	CHECK_OK(cfs_bdev_file_open(path, O_RDONLY, BS, &bd));
	CHECK_EQ(bd->read_only, 1);
	memset(r, 0xFF, BS);
	CHECK_ERR(cfs_bdev_write(bd, 1, 1, r), EROFS);
	CHECK_ERR(cfs_bdev_write(bd, 100, 1, r), EROFS);
	CHECK_EQ(holds(bd, 1, 7), 1);
	CHECK_OK(cfs_bdev_flush(bd));
	file_dev_done(bd, path);
}

static void test_file_sparse_reads_zero(void)
{
	char path[PATH_MAX];
	struct cfs_bdev *bd = file_dev(path, "sparse.img", 1024 * BS);
	uint8_t buf[4 * BS], w[BS];
	int fd;

	CHECK(reads_zero(bd, 500, 4));

	/* Shrink the file under the open device: reads past the new EOF
	 * (short read, then EOF) must come back as zeros, not an error. */
	fill(w, BS, 3);
	CHECK_OK(cfs_bdev_write(bd, 9, 1, w));
	fd = open(path, O_RDWR | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, 9 * BS + 100) == 0);
	close(fd);
	memset(buf, 0xAA, sizeof(buf));
	CHECK_OK(cfs_bdev_read(bd, 9, 2, buf));
	CHECK(memcmp(buf, w, 100) == 0);
	CHECK(all_bytes(buf + 100, 2 * BS - 100, 0));
	CHECK(reads_zero(bd, 1000, 4));
	file_dev_done(bd, path);
}

static void test_file_block_size_change(void)
{
	char path[PATH_MAX];
	struct cfs_bdev *bd = file_dev(path, "bsz.img", 16 * BS);
	uint8_t w[BS], r[BS];

	fill(w, BS, 11);
	CHECK_OK(cfs_bdev_write(bd, 2, 1, w));

	CHECK_OK(cfs_bdev_set_block_size(bd, 1024));
	CHECK_EQ(bd->block_size, 1024);
	CHECK_EQ(bd->nblocks, 64);
	CHECK_OK(cfs_bdev_read(bd, 9, 1, r));   /* bytes 9216..10239 */
	CHECK(memcmp(r, w + 1024, 1024) == 0);
	CHECK_OK(cfs_bdev_read(bd, 63, 1, r));
	CHECK_ERR(cfs_bdev_read(bd, 64, 1, r), EIO);

	CHECK_OK(cfs_bdev_set_block_size(bd, 65536));
	CHECK_EQ(bd->nblocks, 1);
	CHECK_OK(cfs_bdev_set_block_size(bd, 512));
	CHECK_EQ(bd->nblocks, 128);

	CHECK_ERR(cfs_bdev_set_block_size(bd, 0), EINVAL);
	CHECK_ERR(cfs_bdev_set_block_size(bd, 1000), EINVAL);
	CHECK_ERR(cfs_bdev_set_block_size(bd, 256), EINVAL);
	CHECK_ERR(cfs_bdev_set_block_size(bd, 131072), EINVAL);
	CHECK_EQ(bd->block_size, 512);  /* unchanged by the failures */
	CHECK_EQ(bd->nblocks, 128);

	CHECK_OK(cfs_bdev_set_block_size(bd, BS));
	CHECK_EQ(bd->nblocks, 16);
	CHECK_OK(cfs_bdev_read(bd, 2, 1, r));
	CHECK(memcmp(r, w, BS) == 0);
	file_dev_done(bd, path);
}

static void test_file_open_errors(void)
{
	char path[PATH_MAX];
	struct cfs_bdev *bd = (struct cfs_bdev *)&bd;

	tmp_path(path, "does-not-exist");
	CHECK_ERR(cfs_bdev_file_open(path, O_RDONLY, BS, &bd), ENOENT);
	CHECK(bd == NULL);
	CHECK_ERR(cfs_bdev_file_open(tmpdir_path, O_RDONLY, BS, &bd), EISDIR);
	CHECK_ERR(cfs_bdev_file_open("/dev/null", O_RDONLY, BS, &bd), ENOTBLK);

	make_file(path, "err.img", 10000);
	CHECK_ERR(cfs_bdev_file_open(path, O_RDWR, 1000, &bd), EINVAL);
	CHECK_ERR(cfs_bdev_file_open(path, O_RDWR, 0, &bd), EINVAL);
	CHECK_ERR(cfs_bdev_file_open(path, O_WRONLY, BS, &bd), EINVAL);
	/* A size that is not a block multiple rounds down. */
	CHECK_OK(cfs_bdev_file_open(path, O_RDONLY, BS, &bd));
	CHECK_EQ(bd->nblocks, 2);
	file_dev_done(bd, path);
}

/* A writer's image shows a POSIX write lock on its first byte that
 * others can test without taking a lock (tools/holder.c), held as long
 * as the writer's flock; a reader takes none. */
static int lock_seen(const char *path)
{
	struct flock l = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0);
	CHECK_EQ(fcntl(fd, F_OFD_GETLK, &l), 0);
	close(fd);
	return l.l_type == F_WRLCK;
}

static void test_file_writer_lock_shown(void)
{
	char path[PATH_MAX];
	struct cfs_bdev *bd = file_dev(path, "lock.img", 8 * BS), *ro, *rw2;

	CHECK_EQ(lock_seen(path), 1);
	CHECK_OK(cfs_bdev_file_open(path, O_RDONLY, BS, &ro));
	CHECK_ERR(cfs_bdev_file_open(path, O_RDWR, BS, &rw2), EBUSY);
	cfs_bdev_destroy(bd);
	CHECK_EQ(lock_seen(path), 0);
	CHECK_OK(cfs_bdev_file_open(path, O_RDWR, BS, &bd));
	CHECK_EQ(lock_seen(path), 1);
	cfs_bdev_destroy(ro);
	file_dev_done(bd, path);
}

/* The descriptor must not leak into children that exec. */
static void test_file_cloexec(void)
{
	char path[PATH_MAX], link[64], target[PATH_MAX];
	struct cfs_bdev *bd;
	struct dirent *de;
	DIR *d;
	int found = 0;

	bd = file_dev(path, "cloexec.img", 4 * BS);
	d = opendir("/proc/self/fd");
	if (!d) {
		cfs_bdev_destroy(bd);
		TEST_SKIP("no /proc/self/fd");
	}
	while ((de = readdir(d))) {
		ssize_t n;
		int fd = atoi(de->d_name);

		if (snprintf(link, sizeof(link), "/proc/self/fd/%s",
			     de->d_name) >= (int)sizeof(link))
			continue;
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (strcmp(target, path) == 0) {
			found = 1;
			CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
		}
	}
	closedir(d);
	CHECK(found);
	file_dev_done(bd, path);
}


/* ---- prefetch ---- */

/* Prefetch is only a hint: it never changes contents, never fails, and
 * ignores the part of a run past the end of the device. */
static void test_prefetch_is_harmless(void)
{
	char path[PATH_MAX];
	struct cfs_bdev *bd = file_dev(path, "pf.img", 16 * BS);
	uint8_t w[2 * BS], r[2 * BS];

	fill(w, sizeof(w), 7);
	CHECK_OK(cfs_bdev_write(bd, 14, 2, w));
	cfs_bdev_prefetch(bd, 0, 16);
	cfs_bdev_prefetch(bd, 14, 100);
	cfs_bdev_prefetch(bd, 16, 1);
	cfs_bdev_prefetch(bd, UINT64_MAX, UINT32_MAX);
	cfs_bdev_prefetch(bd, 3, 0);
	cfs_bdev_prefetch(NULL, 0, 1);
	CHECK_OK(cfs_bdev_read(bd, 14, 2, r));
	CHECK(memcmp(r, w, sizeof(w)) == 0);
	file_dev_done(bd, path);

	/* the fault device has no prefetch: no call reaches it */
	CHECK_OK(cfs_bdev_fault_create(16 * BS, BS, &bd));
	cfs_bdev_prefetch(bd, 0, 16);
	CHECK_STATS(bd, 0, 0, -1, -1);
	cfs_bdev_destroy(bd);
}

/* Pages of path resident in the page cache, of the first npages. */
static long resident_pages(const char *path, size_t npages)
{
	long n = 0, psz = sysconf(_SC_PAGESIZE);
	unsigned char vec[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	void *m;
	size_t i;

	CHECK(fd >= 0 && npages <= sizeof(vec));
	m = mmap(NULL, npages * (size_t)psz, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED);
	CHECK_OK(mincore(m, npages * (size_t)psz, vec));
	for (i = 0; i < npages; i++)
		n += vec[i] & 1;
	munmap(m, npages * (size_t)psz);
	close(fd);
	return n;
}

/* The file backend's prefetch really starts the reads: a run that was
 * evicted from the page cache is resident afterwards (given a moment). */
static void test_prefetch_loads_page_cache(void)
{
	char path[PATH_MAX];
	struct cfs_bdev *bd;
	long psz = sysconf(_SC_PAGESIZE), got = 0;
	size_t npages = 32 * BS / (size_t)psz;
	uint8_t w[BS];
	int fd, i;

	bd = file_dev(path, "pf2.img", 32 * BS);
	fill(w, sizeof(w), 3);
	for (i = 0; i < 32; i++)
		CHECK_OK(cfs_bdev_write(bd, (uint64_t)i, 1, w));
	CHECK_OK(cfs_bdev_flush(bd));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	if (resident_pages(path, npages) != 0) {
		cfs_bdev_destroy(bd);
		unlink(path);
		TEST_SKIP("this TMPDIR's file system keeps files in memory (tmpfs?): eviction, and so prefetch, cannot be observed");
	}
	cfs_bdev_prefetch(bd, 8, 8);
	for (i = 0; i < 200 && got < (long)(8 * BS / (size_t)psz); i++) {
		usleep(5000);
		got = resident_pages(path, npages);
	}
	CHECK_EQ(got, 8 * BS / psz);
	file_dev_done(bd, path);
}

/* ---- fault backend ---- */

static struct cfs_bdev *fault_dev(uint64_t nblocks)
{
	struct cfs_bdev *bd;

	CHECK_OK(cfs_bdev_fault_create(nblocks * BS, BS, &bd));
	return bd;
}

static void config(struct cfs_bdev *bd, int64_t fail_read, int64_t fail_write,
		   int64_t cut, double keep, uint64_t seed)
{
	struct cfs_bdev_fault_cfg cfg = {
		.fail_read_at = fail_read,
		.fail_write_at = fail_write,
		.power_cut_at = cut,
		.keep_prob = keep,
		.seed = seed,
	};

	cfs_bdev_fault_config(bd, &cfg);
}

static void test_fault_create(void)
{
	struct cfs_bdev *bd = (struct cfs_bdev *)&bd;
	uint64_t size;
	uint8_t *bytes;
	uint8_t w[2 * BS], r[2 * BS];

	CHECK_ERR(cfs_bdev_fault_create(BS * 4 + 1, BS, &bd), EINVAL);
	CHECK(bd == NULL);
	CHECK_ERR(cfs_bdev_fault_create(0, BS, &bd), EINVAL);
	CHECK_ERR(cfs_bdev_fault_create(BS * 4, 3000, &bd), EINVAL);

	bd = fault_dev(8);
	CHECK_EQ(bd->nblocks, 8);
	CHECK_EQ(bd->block_size, BS);
	CHECK_EQ(bd->read_only, 0);
	CHECK(strcmp(bd->name, "mem") == 0);
	bytes = cfs_bdev_fault_bytes(bd, &size);
	CHECK(bytes != NULL);
	CHECK_EQ(size, 8 * BS);
	CHECK(all_bytes(bytes, size, 0));

	fill(w, sizeof(w), 5);
	CHECK_OK(cfs_bdev_write(bd, 6, 2, w));
	CHECK(memcmp(bytes + 6 * BS, w, sizeof(w)) == 0);
	CHECK_OK(cfs_bdev_read(bd, 6, 2, r));
	CHECK(memcmp(r, w, sizeof(w)) == 0);
	/* Direct corruption is visible to reads. */
	bytes[6 * BS] ^= 0xFF;
	CHECK_OK(cfs_bdev_read(bd, 6, 1, r));
	CHECK_EQ(r[0], (uint8_t)(w[0] ^ 0xFF));
	CHECK_ERR(cfs_bdev_read(bd, 7, 2, r), EIO);
	CHECK_ERR(cfs_bdev_write(bd, 8, 1, w), EIO);
	cfs_bdev_destroy(bd);
}

static void test_fault_counters(void)
{
	struct cfs_bdev *bd = fault_dev(8);
	uint8_t buf[4 * BS];

	memset(buf, 1, sizeof(buf));
	CHECK_OK(cfs_bdev_write(bd, 0, 4, buf));        /* one call */
	CHECK_OK(cfs_bdev_write(bd, 4, 1, buf));
	CHECK_OK(cfs_bdev_read(bd, 0, 4, buf));
	CHECK_OK(cfs_bdev_flush(bd));
	CHECK_ERR(cfs_bdev_read(bd, 8, 1, buf), EIO);   /* rejected, uncounted */
	CHECK_STATS(bd, 1, 2, 1, 0);

	/* config restarts the count. */
	config(bd, 0, 0, 0, 0, 0);
	CHECK_STATS(bd, 0, 0, 0, -1);
	cfs_bdev_destroy(bd);
}

static void test_fault_fail_read(void)
{
	struct cfs_bdev *bd = fault_dev(8);
	uint8_t r[BS];

	write_pattern(bd, 3, 9);
	config(bd, 2, 0, 0, 0, 0);
	CHECK_EQ(holds(bd, 3, 9), 1);
	memset(r, 0xEE, BS);
	CHECK_ERR(cfs_bdev_read(bd, 3, 1, r), EIO);
	CHECK(all_bytes(r, BS, 0xEE));          /* buffer untouched */
	CHECK_EQ(holds(bd, 3, 9), 1);           /* only the 2nd call fails */
	CHECK_EQ(holds(bd, 3, 9), 1);
	CHECK_STATS(bd, 4, -1, -1, 0);
	cfs_bdev_destroy(bd);
}

static void test_fault_fail_write(void)
{
	struct cfs_bdev *bd = fault_dev(8);
	uint8_t w[2 * BS];

	config(bd, 0, 2, 0, 0, 0);
	write_pattern(bd, 1, 1);
	fill(w, sizeof(w), 2);
	CHECK_ERR(cfs_bdev_write(bd, 1, 2, w), EIO);
	CHECK_EQ(holds(bd, 1, 1), 1);           /* the failed write changed */
	CHECK_EQ(holds(bd, 2, 0), 0);           /* nothing at all */
	write_pattern(bd, 2, 3);
	CHECK_EQ(holds(bd, 2, 3), 1);
	CHECK_STATS(bd, -1, 3, -1, -1);

	/* A failed write is not "pending": a cut cannot resurrect it. */
	config(bd, 0, 1, 0, 1.0, 0);
	CHECK_OK(cfs_bdev_flush(bd));
	CHECK_ERR(cfs_bdev_write(bd, 5, 2, w), EIO);
	cfs_bdev_fault_restore(bd);
	CHECK_EQ(holds(bd, 5, 0), 0);
	CHECK_EQ(holds(bd, 6, 0), 0);
	cfs_bdev_destroy(bd);
}

static void test_fault_power_cut(void)
{
	struct cfs_bdev *bd = fault_dev(8);
	struct cfs_bdev_fault_stats st;
	uint8_t buf[BS];

	write_pattern(bd, 0, 10);
	write_pattern(bd, 1, 11);
	CHECK_OK(cfs_bdev_flush(bd));

	config(bd, 0, 0, 3, 0.0, 1);
	write_pattern(bd, 2, 12);
	CHECK_OK(cfs_bdev_flush(bd));           /* block 2 durable */
	write_pattern(bd, 0, 13);               /* overwrites durable data */
	CHECK_STATS(bd, -1, -1, -1, 0);
	write_pattern(bd, 5, 15);               /* 3rd write succeeds, then cut */
	CHECK_STATS(bd, -1, 3, -1, 1);

	CHECK_ERR(cfs_bdev_read(bd, 0, 1, buf), EIO);
	CHECK_ERR(cfs_bdev_write(bd, 6, 1, buf), EIO);
	CHECK_ERR(cfs_bdev_flush(bd), EIO);
	CHECK_STATS(bd, 1, 4, 2, -1);

	cfs_bdev_fault_restore(bd);
	cfs_bdev_fault_stats(bd, &st);
	CHECK_EQ(st.powered_off, 0);
	CHECK_EQ(st.reads + st.writes + st.flushes, 0);
	CHECK_EQ(holds(bd, 0, 10), 1);          /* unflushed 13 dropped */
	CHECK_EQ(holds(bd, 1, 11), 1);
	CHECK_EQ(holds(bd, 2, 12), 1);
	CHECK_EQ(holds(bd, 5, 15), 0);          /* unflushed, dropped */
	CHECK_EQ(holds(bd, 6, 0), 0);

	/* Usable again, and the cut does not fire a second time. */
	for (unsigned i = 0; i < 6; i++)
		write_pattern(bd, i, 20 + i);
	for (unsigned i = 0; i < 6; i++)
		CHECK_EQ(holds(bd, i, 20 + i), 1);
	CHECK_OK(cfs_bdev_flush(bd));
	cfs_bdev_destroy(bd);
}

/* power_cut_at counts successful writes, not calls. */
static void test_fault_cut_counts_successes(void)
{
	struct cfs_bdev *bd = fault_dev(8);
	uint8_t w[BS];

	config(bd, 0, 2, 2, 1.0, 0);
	write_pattern(bd, 0, 1);
	fill(w, BS, 2);
	CHECK_ERR(cfs_bdev_write(bd, 1, 1, w), EIO);
	CHECK_STATS(bd, -1, -1, -1, 0);
	write_pattern(bd, 2, 3);
	CHECK_STATS(bd, -1, 3, -1, 1);
	cfs_bdev_fault_restore(bd);
	CHECK_EQ(holds(bd, 0, 1), 1);
	CHECK_EQ(holds(bd, 1, 0), 0);
	CHECK_EQ(holds(bd, 2, 3), 1);
	cfs_bdev_destroy(bd);
}

static void test_fault_keep_all(void)
{
	struct cfs_bdev *bd = fault_dev(16);
	uint8_t buf[3 * BS];

	config(bd, 0, 0, 12, 1.0, 7);
	for (unsigned i = 0; i < 10; i++)
		write_pattern(bd, i, 40 + i);
	write_pattern(bd, 0, 99);               /* newest version wins */
	fill(buf, sizeof(buf), 77);
	CHECK_OK(cfs_bdev_write(bd, 12, 3, buf)); /* 12th write: cut */
	CHECK_STATS(bd, -1, -1, -1, 1);
	cfs_bdev_fault_restore(bd);
	CHECK_EQ(holds(bd, 0, 99), 1);
	for (unsigned i = 1; i < 10; i++)
		CHECK_EQ(holds(bd, i, 40 + i), 1);
	memset(buf, 0, sizeof(buf));
	CHECK_OK(cfs_bdev_read(bd, 12, 3, buf));
	{
		uint8_t w[3 * BS];

		fill(w, sizeof(w), 77);
		CHECK(memcmp(buf, w, sizeof(w)) == 0);
	}
	cfs_bdev_destroy(bd);
}

/* Which of two patterns blk holds: 0 for a, 1 for b; anything else fails. */
static int which(struct cfs_bdev *bd, uint64_t blk, unsigned a, unsigned b)
{
	uint8_t wa[BS], wb[BS], r[BS];

	fill(wa, BS, a);
	fill(wb, BS, b);
	CHECK_OK(cfs_bdev_read(bd, blk, 1, r));
	if (memcmp(r, wa, BS) == 0)
		return 0;
	CHECK(memcmp(r, wb, BS) == 0);
	return 1;
}

/* 64 blocks flushed with A, then each rewritten with B and then C, the cut
 * on the last write.  Returns the mask of blocks that survived as C; every
 * other block must be back to A (never the intermediate B). */
static uint64_t cut_survivors(double keep, uint64_t seed)
{
	struct cfs_bdev *bd = fault_dev(64);
	uint64_t mask = 0;

	for (unsigned i = 0; i < 64; i++)
		write_pattern(bd, i, 100 + i);
	CHECK_OK(cfs_bdev_flush(bd));
	config(bd, 0, 0, 128, keep, seed);
	for (unsigned i = 0; i < 64; i++)
		write_pattern(bd, i, 200 + i);
	for (unsigned i = 0; i < 64; i++)
		write_pattern(bd, i, 300 + i);
	CHECK_STATS(bd, -1, -1, -1, 1);
	cfs_bdev_fault_restore(bd);
	for (unsigned i = 0; i < 64; i++)
		if (which(bd, i, 100 + i, 300 + i))
			mask |= 1ull << i;
	cfs_bdev_destroy(bd);
	return mask;
}

static void test_fault_keep_prob_deterministic(void)
{
	uint64_t a = cut_survivors(0.5, 42);
	int n = __builtin_popcountll(a);

	/* Binomial(64, 0.5) outside [8, 56] has probability < 1e-10. */
	CHECK(n >= 8 && n <= 56);
	CHECK_EQ(cut_survivors(0.5, 42), a);
	CHECK(cut_survivors(0.5, 43) != a);
	CHECK_EQ(cut_survivors(0.0, 42), 0);
	CHECK(cut_survivors(1.0, 42) == UINT64_MAX);
	n = __builtin_popcountll(cut_survivors(0.1, 5));
	CHECK(n < 32);
}

static void test_fault_restore_without_cut(void)
{
	struct cfs_bdev *bd = fault_dev(8);

	/* Default config: keep_prob 0, so restore drops what is unflushed. */
	write_pattern(bd, 1, 1);
	CHECK_OK(cfs_bdev_flush(bd));
	write_pattern(bd, 1, 2);
	write_pattern(bd, 2, 3);
	cfs_bdev_fault_restore(bd);
	CHECK_EQ(holds(bd, 1, 1), 1);
	CHECK_EQ(holds(bd, 2, 0), 0);

	/* A configured keep_prob applies to a cut made by restore, and the
	 * configuration is gone afterwards. */
	config(bd, 3, 3, 0, 1.0, 9);
	write_pattern(bd, 3, 4);
	cfs_bdev_fault_restore(bd);
	CHECK_EQ(holds(bd, 3, 4), 1);
	CHECK_EQ(holds(bd, 3, 4), 1);
	CHECK_EQ(holds(bd, 3, 4), 1);   /* 3rd read no longer fails */
	write_pattern(bd, 4, 5);
	write_pattern(bd, 5, 6);
	write_pattern(bd, 6, 7);        /* nor the 3rd write */
	CHECK_STATS(bd, -1, 3, -1, 0);

	/* Survivors of a restore are durable: a second crash keeps them. */
	cfs_bdev_fault_restore(bd);
	CHECK_EQ(holds(bd, 3, 4), 1);
	CHECK_EQ(holds(bd, 6, 0), 0);   /* keep_prob back to 0 */
	cfs_bdev_destroy(bd);
}

static void test_fault_save_load(void)
{
	char path[PATH_MAX], bad[PATH_MAX];
	struct cfs_bdev *a = fault_dev(8), *b = fault_dev(8);
	uint8_t *ba, *bb, raw[8 * BS];
	uint64_t sa, sb;

	write_pattern(a, 0, 1);
	CHECK_OK(cfs_bdev_flush(a));
	write_pattern(a, 7, 2);                 /* unflushed: saved too */
	tmp_path(path, "save.img");
	CHECK_OK(cfs_bdev_fault_save(a, path));
	ba = cfs_bdev_fault_bytes(a, &sa);
	read_file_at(path, 0, raw, sizeof(raw));
	CHECK(memcmp(raw, ba, sa) == 0);

	write_pattern(b, 3, 5);
	CHECK_OK(cfs_bdev_fault_load(b, path));
	bb = cfs_bdev_fault_bytes(b, &sb);
	CHECK_EQ(sb, sa);
	CHECK(memcmp(ba, bb, sa) == 0);
	CHECK_EQ(holds(b, 0, 1), 1);
	CHECK_EQ(holds(b, 7, 2), 1);
	CHECK_EQ(holds(b, 3, 0), 0);
	cfs_bdev_fault_restore(b);              /* loaded data is durable */
	CHECK_EQ(holds(b, 7, 2), 1);
	CHECK_EQ(holds(b, 3, 0), 0);

	/* Wrong size or missing file: error, device untouched. */
	make_file(bad, "short.img", 4 * BS);
	CHECK_ERR(cfs_bdev_fault_load(b, bad), EINVAL);
	tmp_path(bad, "missing.img");
	CHECK_ERR(cfs_bdev_fault_load(b, bad), ENOENT);
	CHECK_EQ(holds(b, 7, 2), 1);
	tmp_path(bad, "short.img");
	unlink(bad);

	cfs_bdev_destroy(a);
	cfs_bdev_destroy(b);
	unlink(path);
}

static void test_fault_api_on_file_bdev(void)
{
	char path[PATH_MAX];
	struct cfs_bdev *bd = file_dev(path, "notfault.img", 4 * BS);
	uint64_t size = 123;

	CHECK(cfs_bdev_fault_bytes(bd, &size) == NULL);
	CHECK_EQ(size, 0);
	CHECK_ERR(cfs_bdev_fault_save(bd, path), EINVAL);
	CHECK_ERR(cfs_bdev_fault_load(bd, path), EINVAL);
	CHECK_STATS(bd, -1, 0, -1, -1);
	cfs_bdev_fault_restore(bd);             /* harmless no-op */
	file_dev_done(bd, path);
}

/* The cut granularity stays the creation block size when addressing uses a
 * smaller one: a partly rewritten unit reverts as a whole. */
static void test_fault_block_size_change(void)
{
	struct cfs_bdev *bd = fault_dev(8);
	uint8_t w[BS], r[BS];

	write_pattern(bd, 1, 1);
	CHECK_OK(cfs_bdev_flush(bd));
	CHECK_OK(cfs_bdev_set_block_size(bd, 1024));
	CHECK_EQ(bd->nblocks, 32);
	memset(w, 0xC3, 1024);
	config(bd, 0, 0, 2, 0.0, 0);
	CHECK_OK(cfs_bdev_write(bd, 5, 1, w));  /* inside 4 KiB block 1 */
	CHECK_OK(cfs_bdev_write(bd, 30, 1, w)); /* inside block 7: cut */
	cfs_bdev_fault_restore(bd);
	CHECK_OK(cfs_bdev_set_block_size(bd, BS));
	CHECK_EQ(holds(bd, 1, 1), 1);
	CHECK_EQ(holds(bd, 7, 0), 0);

	CHECK_OK(cfs_bdev_set_block_size(bd, 1024));
	config(bd, 0, 0, 0, 1.0, 0);
	CHECK_OK(cfs_bdev_write(bd, 5, 1, w));
	cfs_bdev_fault_restore(bd);
	CHECK_OK(cfs_bdev_read(bd, 5, 1, r));
	CHECK(all_bytes(r, 1024, 0xC3));
	CHECK_OK(cfs_bdev_read(bd, 4, 1, r));
	fill(w, BS, 1);
	CHECK(memcmp(r, w, 1024) == 0);
	cfs_bdev_destroy(bd);
}

/* ---- concurrency ---- */

#define NTHREADS 8
#define PER_THREAD 4
#define ITERS 200

struct worker {
	struct cfs_bdev *bd;
	unsigned id;
	int bad;
};

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	uint8_t w[BS], r[BS];

	for (unsigned it = 0; it < ITERS; it++) {
		uint64_t blk = wk->id * PER_THREAD + it % PER_THREAD;

		fill(w, BS, wk->id * 1000 + it);
		if (cfs_bdev_write(wk->bd, blk, 1, w) ||
		    cfs_bdev_read(wk->bd, blk, 1, r) ||
		    memcmp(w, r, BS) != 0)
			wk->bad++;
		if (it % 50 == 0 && cfs_bdev_flush(wk->bd))
			wk->bad++;
	}
	return NULL;
}

static void run_workers(struct cfs_bdev *bd)
{
	struct worker wk[NTHREADS];

	for (unsigned i = 0; i < NTHREADS; i++)
		wk[i] = (struct worker){ .bd = bd, .id = i };
	CHECK_OK(fixture_threads(NTHREADS, worker_main, wk, sizeof(wk[0])));
	for (unsigned i = 0; i < NTHREADS; i++)
		CHECK_EQ(wk[i].bad, 0);
	/* Each block holds its thread's last write to it. */
	for (unsigned i = 0; i < NTHREADS; i++)
		for (unsigned k = 0; k < PER_THREAD; k++)
			CHECK_EQ(holds(bd, i * PER_THREAD + k,
				       i * 1000 + (ITERS - PER_THREAD + k)), 1);
}

static void test_threads(void)
{
	char path[PATH_MAX];
	struct cfs_bdev *bd = fault_dev(NTHREADS * PER_THREAD);
	struct cfs_bdev_fault_stats st;

	run_workers(bd);
	cfs_bdev_fault_stats(bd, &st);
	CHECK_EQ(st.writes, NTHREADS * ITERS);
	CHECK_EQ(st.flushes, NTHREADS * (ITERS / 50));
	cfs_bdev_destroy(bd);

	bd = file_dev(path, "threads.img", NTHREADS * PER_THREAD * BS);
	run_workers(bd);
	file_dev_done(bd, path);
}

int main(void)
{
	if (fixture_tmpdir(tmpdir_path, sizeof(tmpdir_path), "test_bdev"))
		return 1;
	TEST_RUN(test_file_round_trip);
	TEST_RUN(test_file_bounds);
	TEST_RUN(test_file_read_only);
	TEST_RUN(test_file_sparse_reads_zero);
	TEST_RUN(test_file_block_size_change);
	TEST_RUN(test_file_open_errors);
	TEST_RUN(test_file_cloexec);
	TEST_RUN(test_file_writer_lock_shown);
	TEST_RUN(test_prefetch_is_harmless);
	TEST_RUN(test_prefetch_loads_page_cache);
	TEST_RUN(test_fault_create);
	TEST_RUN(test_fault_counters);
	TEST_RUN(test_fault_fail_read);
	TEST_RUN(test_fault_fail_write);
	TEST_RUN(test_fault_power_cut);
	TEST_RUN(test_fault_cut_counts_successes);
	TEST_RUN(test_fault_keep_all);
	TEST_RUN(test_fault_keep_prob_deterministic);
	TEST_RUN(test_fault_restore_without_cut);
	TEST_RUN(test_fault_save_load);
	TEST_RUN(test_fault_api_on_file_bdev);
	TEST_RUN(test_fault_block_size_change);
	TEST_RUN(test_threads);
	rmdir(tmpdir_path);
	return TEST_DONE();
}

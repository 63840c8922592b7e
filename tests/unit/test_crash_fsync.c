/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fsync pays for its own file (issue 26 item 4): cfs_fsync makes durable
 * the file's data and the metadata, not the data other files have
 * written since the last sync.
 *  - Right after an fsync of one file while others have data written and
 *    not synced, a power cut that drops every unflushed write leaves the
 *    fsync'ed file whole, and the other file's data too: fsync writes
 *    every dirty map, and a map never reaches the disk before the data it
 *    names (the cache's data barrier, docs/WRITEBACK.md), so the other
 *    file's block must hold its bytes, never what the block held before.
 *    (fsync does spare other files' data that no written map names yet:
 *    what the kernel or the cache still holds.)
 *  - A power cut at every write of a workload that fsyncs one file twice
 *    among writes, creates and unlinks of others (tests/power.h): fsck -p
 *    repairs the rest alone, no chunk clean at the cut changes, and the
 *    fsync'ed file reads back as it was at its last fsync. */
#include <stdint.h>
#include <sys/stat.h>

#include "test.h"
#include "power.h"
#include "fsint.h"

#define IMG_SIZE  (4u << 20)
#define BSIZE     1024
#define OTHERS    4
#define OTHER_LEN (6 * BSIZE)   /* whole blocks: straight to the device */

static uint8_t *pristine;
static struct power_stats stats;

struct durable {
	cfs_ino_t dir;
	size_t len;             /* as of the last fsync that returned */
	int valid;
};

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 2654435761u + seed) >> 11);
}

/* Others written, "keep" written and fsync'ed, more of both, again. */
static void fsync_workload(struct cfs_fs *fs, void *arg)
{
	static uint8_t buf[16384];
	struct durable *dur = arg;
	cfs_ino_t d1, d2, o[OTHERS], keep, late;
	char name[16];
	int i;

	memset(dur, 0, sizeof(*dur));
	if (cfs_mkdir(fs, CFS_ROOT_INO, "d1", 0755, 0, 0, &d1) < 0 ||
	    cfs_mkdir(fs, CFS_ROOT_INO, "d2", 0755, 0, 0, &d2) < 0)
		return;
	for (i = 0; i < OTHERS; i++) {
		snprintf(name, sizeof(name), "o%d", i);
		fill(buf, OTHER_LEN, (unsigned)i);
		if (cfs_mknod(fs, d1, name, S_IFREG | 0644, 0, 0, 0, &o[i]) < 0 ||
		    cfs_write(fs, o[i], buf, OTHER_LEN, 0) < 0)
			return;
	}
	fill(buf, 10000, 50);
	if (cfs_mknod(fs, d2, "keep", S_IFREG | 0600, 0, 0, 0, &keep) < 0 ||
	    cfs_write(fs, keep, buf, 7000, 0) < 0 || cfs_fsync(fs, keep, 0) < 0)
		return;
	dur->dir = d2;
	dur->len = 7000;
	dur->valid = 1;
	for (i = 0; i < OTHERS; i++) {
		fill(buf, 4000, (unsigned)i + 10);
		if (cfs_write(fs, o[i], buf, 4000, OTHER_LEN) < 0)
			return;
	}
	fill(buf, 3000, 60);
	if (cfs_mknod(fs, d1, "late", S_IFREG | 0644, 0, 0, 0, &late) < 0 ||
	    cfs_write(fs, late, buf, 3000, 0) < 0 || cfs_unlink(fs, d1, "o1") < 0)
		return;
	fill(buf, 10000, 50);
	if (cfs_write(fs, keep, buf + 7000, 3000, 7000) < 0 || cfs_fsync(fs, keep, 0) < 0)
		return;
	dur->len = 10000;
	fill(buf, OTHER_LEN, 70);
	if (cfs_write(fs, o[2], buf, OTHER_LEN, 0) < 0 || cfs_unlink(fs, d1, "o3") < 0)
		return;
}

static void keep_verify(int64_t k, struct cfs_fs *fs, const struct durable *dur)
{
	static uint8_t want[16384], got[16384];
	cfs_ino_t f;

	if (!dur->valid)
		return;
	fill(want, dur->len, 50);
	if (cfs_lookup(fs, dur->dir, "keep", &f) < 0)
		TEST_FAIL("cut %lld: the fsync'ed file is lost", (long long)k);
	if (cfs_read(fs, f, got, sizeof(got), 0) < (ssize_t)dur->len ||
	    memcmp(got, want, dur->len))
		TEST_FAIL("cut %lld: the fsync'ed file differs from its last fsync",
			  (long long)k);
}

static void verify(int64_t k, const char *path, void *arg)
{
	struct cfs_fs *fs = power_cut_recover(k, path, &stats);

	keep_verify(k, fs, arg);
	CHECK_OK(cfs_close(fs));
}

static void test_crash_fsync_every_cut(void)
{
	struct power_cut pc;
	struct durable dur;
	int64_t n;

	power_cut_init(&pc, pristine, IMG_SIZE, BSIZE, "fsync");
	memset(&stats, 0, sizeof(stats));
	n = each_power_cut(&pc, fsync_workload, verify, &dur);
	CHECK(dur.valid && dur.len == 10000);
	POWER_CHECK_ESCALATIONS(stats);
	printf("crash: fsync of one file among others: %lld cut points, %lld needed "
	       "repairs\n", (long long)n, (long long)stats.repaired);
	unlink(pc.path);
}

/* The device block of ino's block lblk. */
static uint64_t block_of(struct cfs_fs *fs, cfs_ino_t ino, uint64_t lblk)
{
	struct inode *ip;
	uint64_t abs = 0;
	uint32_t len;

	CHECK_OK(inode_get_head(fs, ino, 1, &ip));
	CHECK_EQ(file_map(fs, ip, lblk, &abs, &len), 1);
	pthread_mutex_unlock(&ip->lock);
	inode_put(fs, ip);
	return abs;
}

static void test_fsync_orders_others(void)
{
	static uint8_t want[OTHER_LEN], keepbuf[8192];
	struct cfs_bdev_fault_cfg cfg = { 0 };
	struct cfs_bdev *bd;
	struct cfs_fs *fs;
	cfs_ino_t o, keep;
	uint64_t size, oblk, kblk;
	const uint8_t *dev;

	CHECK_OK(fixture_image_dev(pristine, IMG_SIZE, BSIZE, &bd));
	cfs_bdev_fault_config(bd, &cfg);
	CHECK_OK(cfs_open_bdev(bd, 0, &fs));
	fill(want, OTHER_LEN, 1);
	fill(keepbuf, sizeof(keepbuf), 2);
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "other", S_IFREG | 0644, 0, 0, 0, &o));
	CHECK_EQ(cfs_write(fs, o, want, OTHER_LEN, 0), OTHER_LEN);
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "keep", S_IFREG | 0644, 0, 0, 0, &keep));
	CHECK_EQ(cfs_write(fs, keep, keepbuf, sizeof(keepbuf), 0), (ssize_t)sizeof(keepbuf));
	CHECK_OK(cfs_fsync(fs, keep, 0));
	oblk = block_of(fs, o, 0);
	kblk = block_of(fs, keep, 0);
	/* the power goes now: only what was flushed is left */
	cfs_bdev_fault_restore(bd);
	dev = cfs_bdev_fault_bytes(bd, &size);
	CHECK(memcmp(dev + kblk * BSIZE, keepbuf, BSIZE) == 0);
	if (memcmp(dev + oblk * BSIZE, want, BSIZE) != 0)
		TEST_FAIL("the fsync of one file wrote the other's map, but not the "
			  "data it names: a crash shows the block's old bytes");
	cfs_close(fs);
}

int main(void)
{
	struct cfs_mkfs_opts o = { .block_size = BSIZE, .chunks = 4, .inodes = 600 };

	pristine = power_pristine(IMG_SIZE, &o);
	TEST_RUN(test_fsync_orders_others);
	TEST_RUN(test_crash_fsync_every_cut);
	free(pristine);
	return TEST_DONE();
}

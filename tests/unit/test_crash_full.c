/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test-timeout: 900 (tests/run.sh): every write until the image is full */
/* Crash at every write (tests/power.h) on a nearly full filesystem: the
 * allocation paths of issue 11 that only a full image takes.  The image is
 * filled first, uncut, with small files until most chunks have no block
 * left; then the cut workload
 *  - writes a big file, which goes to a chunk that is still empty rather
 *    than into the last free blocks of the full ones, and fsyncs it,
 *  - makes small files until the filesystem is out of room (the chunks'
 *    reserves run out, and chunks make inode clusters from their last
 *    blocks),
 *  - removes every third of them and syncs.
 * After every cut fsck -p alone must repair the image, a forced check
 * find nothing, and the fsync'ed big file read back exactly.
 *
 * At a cut near 1,170 (it varies by a few from run to run with the
 * cache's timing) the files made after the big one, whose entries had not
 * reached the disk, are tens of orphans of the full chunk 5, whose free
 * blocks (by count enough for inode clusters) are too scattered for one:
 * fsck -p once gave them stubs until the free slots ran out, then failed
 * the rest with ENOSPC (issue 11 item 4; src/fsck/lpf.c reconnect_orphans
 * now makes the slots before it counts on them).  CRASH_ONLY=K runs cut K
 * alone (it may not fail alone: the cut index shifts with the timing);
 * CHUNKFS_CRASH_VERBOSE=1 prints every finding. */
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>

#include "test.h"
#include "power.h"

#define IMG_SIZE  (3u << 20)
#define BSIZE     1024
#define CHUNKS    6
#define BIG       (200u << 10)
#define SMALL     1536

static uint8_t *full;
static struct power_stats stats;

struct big {
	cfs_ino_t dir;
	int valid;
};

static int small_file(struct cfs_fs *fs, cfs_ino_t dir, const char *name, unsigned seed)
{
	static uint8_t buf[SMALL];
	cfs_ino_t f;
	int ret = cfs_mknod(fs, dir, name, S_IFREG | 0644, 0, 0, 0, &f);

	if (ret < 0)
		return ret;
	fixture_fill(buf, sizeof(buf), seed);
	return cfs_write(fs, f, buf, sizeof(buf), 0) < 0 ? -ENOSPC : 0;
}

/* Free blocks of the emptiest and the fullest chunk. */
static void chunk_extremes(struct cfs_fs *fs, uint64_t *most, uint64_t *least)
{
	struct cfs_chunk_info ci;
	uint32_t c;

	*most = 0;
	*least = UINT64_MAX;
	for (c = 0; cfs_get_chunk_info(fs, c, &ci) == 0; c++) {
		if (ci.free_blocks > *most)
			*most = ci.free_blocks;
		if (ci.free_blocks < *least)
			*least = ci.free_blocks;
	}
}

/* Uncut: small files in one directory until all but the last chunks are
 * full (a directory's files stay in its chunk while they fit, then spill
 * into the next). */
static void image_make(void)
{
	struct cfs_mkfs_opts o = { .block_size = BSIZE, .chunks = CHUNKS };
	uint8_t *img = power_pristine(IMG_SIZE, &o);
	struct cfs_bdev *dev;
	struct cfs_fs *fs;
	struct cfs_statfs st;
	cfs_ino_t d;
	uint64_t got, most, least;
	char name[32];
	int i;

	CHECK_OK(fixture_image_dev(img, IMG_SIZE, BSIZE, &dev));
	CHECK_OK(fixture_open(dev, 0, &fs));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "old", 0755, 0, 0, &d));
	for (i = 0;; i++) {
		CHECK_OK(cfs_statfs(fs, &st));
		if (st.bfree < st.blocks * 2 / 5)
			break;
		snprintf(name, sizeof(name), "old-%04d", i);
		CHECK_OK(small_file(fs, d, name, (unsigned)i));
	}
	chunk_extremes(fs, &most, &least);
	printf("crash-full: image filled with %d small files: %llu of %llu blocks free, "
	       "emptiest chunk %llu free, fullest %llu\n", i, (unsigned long long)st.bfree,
	       (unsigned long long)st.blocks, (unsigned long long)most,
	       (unsigned long long)least);
	/* the big file must find a chunk with room for all of it */
	CHECK(most * BSIZE > BIG);
	CHECK_OK(cfs_close(fs));
	full = malloc(IMG_SIZE);
	CHECK(full);
	memcpy(full, cfs_bdev_fault_bytes(dev, &got), IMG_SIZE);
	cfs_bdev_destroy(dev);
	free(img);
}

static void full_workload(struct cfs_fs *fs, void *arg)
{
	static uint8_t buf[BIG];
	struct big *bg = arg;
	cfs_ino_t d, f;
	char name[32];
	int i, n, ret;

	memset(bg, 0, sizeof(*bg));
	if (cfs_mkdir(fs, CFS_ROOT_INO, "new", 0755, 0, 0, &d) < 0 ||
	    cfs_mknod(fs, d, "big", S_IFREG | 0644, 0, 0, 0, &f) < 0)
		return;
	fixture_fill(buf, sizeof(buf), 77);
	if (cfs_write(fs, f, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf) ||
	    cfs_fsync(fs, f, 0) < 0 || cfs_fsync(fs, d, 0) < 0)
		return;
	bg->dir = d;
	bg->valid = 1;
	for (n = 0; n < 4000; n++) {
		snprintf(name, sizeof(name), "s-%04d", n);
		ret = small_file(fs, d, name, (unsigned)n + 5000);
		if (ret == -ENOSPC)
			break;
		if (ret < 0)
			return;
	}
	for (i = 0; i < n; i += 3) {
		snprintf(name, sizeof(name), "s-%04d", i);
		if (cfs_unlink(fs, d, name) < 0)
			return;
	}
	cfs_sync(fs);
}

static void big_verify(int64_t k, struct cfs_fs *fs, const struct big *bg)
{
	static uint8_t want[BIG], got[BIG];
	cfs_ino_t f;

	if (!bg->valid)
		return;
	fixture_fill(want, sizeof(want), 77);
	if (cfs_lookup(fs, bg->dir, "big", &f) < 0)
		TEST_FAIL("cut %lld: fsync'd big file lost", (long long)k);
	CHECK_EQ(cfs_read(fs, f, got, sizeof(got), 0), (ssize_t)sizeof(got));
	if (memcmp(got, want, sizeof(got)))
		TEST_FAIL("cut %lld: fsync'd big file differs", (long long)k);
}

static void verify(int64_t k, const char *path, void *arg)
{
	struct cfs_fs *fs = power_cut_recover(k, path, &stats);

	big_verify(k, fs, arg);
	CHECK_OK(cfs_close(fs));
}

/* Uncut, the workload runs into ENOSPC only when the filesystem is out
 * of room, and the big file went to a chunk of its own. */
static void test_full_uncut(void)
{
	struct cfs_bdev *dev;
	struct cfs_fs *fs;
	struct cfs_statfs st;
	struct cfs_chunk_info ci;
	struct cfs_stat sb;
	struct big bg;
	cfs_ino_t f;

	uint64_t before[CHUNKS];
	uint32_t c;

	CHECK_OK(fixture_image_dev(full, IMG_SIZE, BSIZE, &dev));
	CHECK_OK(fixture_open(dev, 0, &fs));
	for (c = 0; c < CHUNKS; c++) {
		CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
		before[c] = ci.free_blocks;
	}
	full_workload(fs, &bg);
	CHECK(bg.valid);
	CHECK_OK(cfs_lookup(fs, bg.dir, "big", &f));
	CHECK_OK(cfs_getattr(fs, f, &sb));
	CHECK_EQ(sb.size, (uint64_t)BIG);
	/* its inode, and so its data, went where all of it fits */
	CHECK(before[CFS_INO_CHUNK(f)] * BSIZE > BIG);
	CHECK_OK(cfs_get_chunk_info(fs, CFS_INO_CHUNK(f), &ci));
	printf("crash-full: big file in chunk %u (%llu of its %llu blocks free after)\n",
	       CFS_INO_CHUNK(f), (unsigned long long)ci.free_blocks,
	       (unsigned long long)ci.blocks);
	CHECK_OK(cfs_statfs(fs, &st));
	printf("crash-full: after the refill and the removals: %llu of %llu blocks free\n",
	       (unsigned long long)st.bfree, (unsigned long long)st.blocks);
	/* a third of the refill was removed: what it held is free again, so
	 * the refill did fill the filesystem before its ENOSPC */
	CHECK(st.bfree < st.blocks / 4);
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

static void test_crash_every_write_full(void)
{
	struct power_cut pc;
	struct big bg;
	int64_t n;

	power_cut_init(&pc, full, IMG_SIZE, BSIZE, "crash-full");
	if (getenv("CRASH_ONLY")) {
		int64_t k = atoll(getenv("CRASH_ONLY"));
		power_cut_at(&pc, k, k & 1 ? 0.0 : 0.5, (uint64_t)k, full_workload, verify, &bg);
		return;
	}
	n = each_power_cut(&pc, full_workload, verify, &bg);
	printf("crash-full: %lld cut points, each repaired by fsck -p alone: %lld needed "
	       "repairs, %lld escalated to all chunks (%lld after a directory tree was "
	       "rebuilt)\n", (long long)n, (long long)stats.repaired,
	       (long long)stats.escalated, (long long)stats.escalated_tree);
	unlink(pc.path);
	POWER_CHECK_ESCALATIONS(stats);
}

int main(void)
{
	/* a small cache makes write-back interleave with the workload */
	setenv("CHUNKFS_CACHE_KB", "96", 0);
	image_make();
	TEST_RUN(test_full_uncut);
	TEST_RUN(test_crash_every_write_full);
	free(full);
	return TEST_DONE();
}

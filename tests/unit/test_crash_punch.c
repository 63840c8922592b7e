/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Crash at every write while a hole is punched in the middle of an extent
 * whose leaf is full (tests/power.h).  The punch shortens the extent in
 * place (its head) and inserts what is left after the hole (its tail); the
 * insert splits the leaf, and the leaf's new neighbour and the index naming
 * it reach the disk before the leaf itself (cache_order).  A crash between
 * leaves the old leaf with the whole extent, whose end lies in the range
 * the new neighbour's index key gives it, beside the tail there: the same
 * blocks mapped twice.  That part is a split's leftover, as the records
 * the old leaf still holds past the key (FORMAT.md 12): every block of the
 * file synced before the punch and outside the hole reads back as it was
 * after fsck -p, at every cut. */
#include <stdint.h>
#include <sys/stat.h>

#include "test.h"
#include "power.h"
#include "fsint.h"

#define IMG_SIZE  (16u << 20)
#define BSIZE     1024
#define BEFORE    31          /* one-block extents before the long one */
#define LONG      20          /* the long extent's blocks */
#define AFTER     30          /* one-block extents after it: the leaf is full */
#define NBLK      (BEFORE + LONG + AFTER)
#define HOLE      (BEFORE + 5)
#define HOLE_LEN  6

static uint8_t *pristine;
static struct power_stats stats;

struct file {
	cfs_ino_t ino;
	int valid;
	/* uncut, before and after the punch: extents, extent nodes, and
	 * where the long extent is among the extents */
	int ext[2], nodes[2], long_at;
};

static int count_cb(void *ctx, const struct extent *e, int is_node, uint32_t rel)
{
	int *c = ctx;

	(void)rel;
	if (is_node) {
		c[1]++;
	} else {
		if (e->len == LONG)
			c[2] = c[0];
		c[0]++;
	}
	return 0;
}

static void shape(struct cfs_fs *fs, struct file *f, int when)
{
	struct inode *ip;
	int c[3] = { 0, 0, -1 };

	if (inode_get(fs, f->ino, &ip) < 0)
		return;
	ext_walk(fs, ip, count_cb, c, NULL);
	inode_put(fs, ip);
	f->ext[when] = c[0];
	f->nodes[when] = c[1];
	if (when == 0)
		f->long_at = c[2];
}

static void fill(uint8_t *b, int i)
{
	memset(b, 'a' + i % 26, BSIZE);
	b[0] = (uint8_t)i;
}

/* Block i of the data lies at logical block lblk_of(i): one-block
 * extents with a hole after each, the long extent's blocks together.  The
 * file is written whole, then the holes punched: one write lets the
 * allocator lay the blocks out as it likes, and no write fills a hole
 * again. */
static uint64_t lblk_of(int i)
{
	if (i < BEFORE)
		return 2 * (uint64_t)i;
	if (i < BEFORE + LONG)
		return 2 * BEFORE + (uint64_t)(i - BEFORE);
	return 2 * BEFORE + LONG + 1 + 2 * (uint64_t)(i - BEFORE - LONG);
}

static int punch(struct cfs_fs *fs, cfs_ino_t ino, uint64_t lblk, uint64_t n)
{
	return cfs_fallocate(fs, ino, CFS_FALLOC_PUNCH_HOLE | CFS_FALLOC_KEEP_SIZE,
			     lblk * BSIZE, n * BSIZE);
}

static void punch_workload(struct cfs_fs *fs, void *arg)
{
	struct file *f = arg;
	static uint8_t b[(2 * NBLK + 1) * BSIZE];
	uint64_t end = lblk_of(NBLK - 1) + 1, l;
	int i;

	memset(f, 0, sizeof(*f));
	if (cfs_mknod(fs, CFS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &f->ino) < 0)
		return;
	for (i = 0; i < NBLK; i++)
		fill(b + lblk_of(i) * BSIZE, i);
	if (cfs_write(fs, f->ino, b, end * BSIZE, 0) != (ssize_t)(end * BSIZE))
		return;
	for (l = 0, i = 0; l < end; l++) {
		if (l == lblk_of(i)) {
			i++;
			continue;
		}
		if (punch(fs, f->ino, l, 1) < 0)
			return;
	}
	if (cfs_sync(fs) < 0)
		return;
	f->valid = 1;
	shape(fs, f, 0);
	if (punch(fs, f->ino, lblk_of(HOLE), HOLE_LEN) < 0)
		return;
	shape(fs, f, 1);
	cfs_sync(fs);
}

static void verify(int64_t k, const char *path, void *arg)
{
	const struct file *f = arg;
	struct cfs_fs *fs = power_cut_recover(k, path, &stats);
	uint8_t want[BSIZE], got[BSIZE];
	int i;

	for (i = 0; f->valid && i < NBLK; i++) {
		if (i >= HOLE && i < HOLE + HOLE_LEN)
			continue;   /* its old bytes or zeroes, by the cut */
		fill(want, i);
		if (cfs_read(fs, f->ino, got, BSIZE, lblk_of(i) * BSIZE) != BSIZE ||
		    memcmp(got, want, BSIZE))
			TEST_FAIL("cut %lld: block %d of the file synced before the punch "
				  "reads wrong", (long long)k, i);
	}
	CHECK_OK(cfs_close(fs));
}

/* The layout the cuts are to exercise: before the punch one full leaf
 * under the root, the long extent the last record its left half keeps in
 * a split; after it, two leaves. */
static void check_layout(const struct power_cut *pc)
{
	struct file f;

	power_threads = 1;
	CHECK(power_cut_count(pc, punch_workload, &f) > 0);
	CHECK(f.valid);
	CHECK_EQ(f.ext[0], NBLK - LONG + 1);    /* (BS - 32) / 16 = 62: full */
	CHECK_EQ(f.nodes[0], 1);
	CHECK_EQ(f.long_at, BEFORE);            /* its tail goes to the new leaf */
	CHECK_EQ(f.ext[1], NBLK - LONG + 2);
	CHECK_EQ(f.nodes[1], 2);
}

static void test_crash_punch_split(void)
{
	struct power_cut pc;
	struct file f;
	int64_t n;

	power_cut_init(&pc, pristine, IMG_SIZE, BSIZE, "punch");
	memset(&stats, 0, sizeof(stats));
	check_layout(&pc);
	n = each_power_cut(&pc, punch_workload, verify, &f);
	printf("crash: punch in a full extent leaf: %lld cut points, %d blocks kept at each, "
	       "%lld needed repairs\n", (long long)n, NBLK - HOLE_LEN, (long long)stats.repaired);
	unlink(pc.path);
}

int main(void)
{
	struct cfs_mkfs_opts o = { .block_size = BSIZE, .chunks = 4, .inodes = 600 };

	pristine = power_pristine(IMG_SIZE, &o);
	TEST_RUN(test_crash_punch_split);
	free(pristine);
	return TEST_DONE();
}

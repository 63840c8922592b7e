/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Renames that leave a whiteout (CFS_RENAME_WHITEOUT, overlayfs's
 * RENAME_WHITEOUT): what the names show after each kind (a file to
 * another directory in another chunk, within one directory, over an
 * existing file, a directory), the flags refused, the whiteout's owner;
 * then a power cut at every write of the same renames (tests/power.h),
 * each recovered by fsck -p alone, with the old name always the file or
 * a whiteout and the file never without a name. */
#include <stdint.h>
#include <sys/stat.h>

#include "test.h"
#include "power.h"

#define IMG_SIZE (3u << 20)
#define BSIZE    1024
#define NFILES   3

static uint8_t *pristine;
static struct power_stats stats;

/* The moves of the workload: a/f0 to b/g0 (another chunk), a/f1 to a/g1
 * (the same directory), a/f2 over b/x; then the directory a/sub to b/sub. */
static const char *const src_name[NFILES] = { "f0", "f1", "f2" };
static const char *const dst_name[NFILES] = { "g0", "g1", "x" };
static const int dst_in_b[NFILES] = { 1, 0, 1 };

static size_t flen(int i)
{
	return 300 + (size_t)i * 1500;
}

static int put_file(struct cfs_fs *fs, cfs_ino_t dir, const char *name, size_t len,
		    unsigned seed)
{
	static uint8_t buf[8192];
	cfs_ino_t f;
	int ret = cfs_mknod(fs, dir, name, S_IFREG | 0644, 0, 0, 0, &f);

	fixture_fill(buf, len, seed);
	if (ret == 0 && cfs_write(fs, f, buf, len, 0) != (ssize_t)len)
		ret = -EIO;
	return ret;
}

/* 1 if name in dir is a regular file of len bytes of seed's pattern. */
static int is_file(struct cfs_fs *fs, cfs_ino_t dir, const char *name, size_t len,
		   unsigned seed)
{
	static uint8_t want[8192], got[8192];
	struct cfs_stat st;
	cfs_ino_t f;

	if (cfs_lookup(fs, dir, name, &f) < 0 || cfs_getattr(fs, f, &st) < 0 ||
	    !S_ISREG(st.mode) || st.size != len)
		return 0;
	fixture_fill(want, len, seed);
	return cfs_read(fs, f, got, sizeof(got), 0) == (ssize_t)len && !memcmp(got, want, len);
}

/* 1 if name in dir is a whiteout: a character device 0/0, mode 0. */
static int is_whiteout(struct cfs_fs *fs, cfs_ino_t dir, const char *name)
{
	struct cfs_stat st;
	cfs_ino_t f;

	return cfs_lookup(fs, dir, name, &f) == 0 && cfs_getattr(fs, f, &st) == 0 &&
	       st.mode == S_IFCHR && st.rdev == 0 && st.size == 0;
}

/* a and b, top-level directories of two chunks, with the files to move
 * and the directory a/sub holding one; all synced.  0 or an error. */
static int populate(struct cfs_fs *fs, cfs_ino_t *a, cfs_ino_t *b)
{
	cfs_ino_t sub;
	int i, ret;

	ret = cfs_mkdir(fs, CFS_ROOT_INO, "a", 0755, 0, 0, a);
	if (ret == 0)
		ret = cfs_mkdir(fs, CFS_ROOT_INO, "b", 0755, 0, 0, b);
	for (i = 0; ret == 0 && i < NFILES; i++)
		ret = put_file(fs, *a, src_name[i], flen(i), (unsigned)i + 1);
	if (ret == 0)
		ret = put_file(fs, *b, "x", 100, 77);
	if (ret == 0)
		ret = cfs_mkdir(fs, *a, "sub", 0750, 0, 0, &sub);
	if (ret == 0)
		ret = put_file(fs, sub, "inner", 500, 55);
	if (ret == 0)
		ret = cfs_sync(fs);
	return ret;
}

static void test_whiteout_rename(void)
{
	struct cfs_mkfs_opts o = { .block_size = BSIZE, .chunks = 6, .inodes = 600 };
	struct cfs_fsck_opts fo = { .mode = CFS_FSCK_NO, .force = 1 };
	struct cfs_fsck_result r;
	struct cfs_bdev *dev;
	struct cfs_fs *fs;
	struct cfs_stat st, ast, bst;
	cfs_ino_t a, b, x_old, f, sub, dotdot;
	int i;

	CHECK_OK(fixture_mkfs(IMG_SIZE, &o, &dev, &fs));
	CHECK_OK(populate(fs, &a, &b));
	CHECK(CFS_INO_CHUNK(a) != CFS_INO_CHUNK(b));
	CHECK_OK(cfs_lookup(fs, b, "x", &x_old));

	/* refused: with an exchange, and flags nobody knows; nothing moves */
	CHECK_ERR(cfs_rename(fs, a, "f0", b, "x", CFS_RENAME_WHITEOUT | CFS_RENAME_EXCHANGE),
		  EINVAL);
	CHECK_ERR(cfs_rename(fs, a, "f0", b, "y", 0x8), EINVAL);
	/* no replace: the target stays, the source is no whiteout */
	CHECK_ERR(cfs_rename(fs, a, "f2", b, "x", CFS_RENAME_WHITEOUT | CFS_RENAME_NOREPLACE),
		  EEXIST);
	CHECK(is_file(fs, a, "f2", flen(2), 3));
	CHECK(is_file(fs, b, "x", 100, 77));
	CHECK_ERR(cfs_rename(fs, a, "nothing", b, "y", CFS_RENAME_WHITEOUT), ENOENT);
	CHECK_ERR(cfs_lookup(fs, a, "nothing", &f), ENOENT);

	for (i = 0; i < NFILES; i++)
		CHECK_OK(cfs_rename_as(fs, a, src_name[i], dst_in_b[i] ? b : a, dst_name[i],
				       CFS_RENAME_WHITEOUT, 1000, 1001));
	for (i = 0; i < NFILES; i++) {
		CHECK(is_whiteout(fs, a, src_name[i]));
		CHECK(is_file(fs, dst_in_b[i] ? b : a, dst_name[i], flen(i), (unsigned)i + 1));
		CHECK_OK(cfs_lookup(fs, a, src_name[i], &f));
		CHECK_OK(cfs_getattr(fs, f, &st));
		CHECK_EQ(st.nlink, 1u);
		CHECK_EQ(st.uid, 1000u);   /* the caller's, as on ext4 */
		CHECK_EQ(st.gid, 1001u);
	}
	/* the file replaced is gone */
	CHECK(cfs_getattr(fs, x_old, &st) < 0 || st.nlink == 0);

	/* a directory: its parent changes, a's link count drops by its "..",
	 * a keeps a whiteout (not a directory) at the name */
	CHECK_OK(cfs_getattr(fs, a, &ast));
	CHECK_OK(cfs_getattr(fs, b, &bst));
	CHECK_OK(cfs_lookup(fs, a, "sub", &sub));
	CHECK_OK(cfs_rename(fs, a, "sub", b, "sub", CFS_RENAME_WHITEOUT));
	CHECK(is_whiteout(fs, a, "sub"));
	CHECK_OK(cfs_lookup(fs, b, "sub", &f));
	CHECK_EQ(f, sub);
	CHECK(is_file(fs, sub, "inner", 500, 55));
	CHECK_OK(cfs_lookup(fs, sub, "..", &dotdot));
	CHECK_EQ(dotdot, b);
	CHECK_OK(cfs_getattr(fs, a, &st));
	CHECK_EQ(st.nlink, ast.nlink - 1);
	CHECK_OK(cfs_getattr(fs, b, &st));
	CHECK_EQ(st.nlink, bst.nlink + 1);
	CHECK_OK(cfs_lookup(fs, a, "sub", &f));
	CHECK_OK(cfs_getattr(fs, f, &st));
	CHECK_EQ(st.uid, 0u);   /* cfs_rename's whiteout is root's */

	/* overlayfs shares one whiteout through hard links, across chunks too */
	CHECK_OK(cfs_lookup(fs, a, "f0", &f));
	CHECK_OK(cfs_link(fs, f, b, "shared"));
	CHECK(is_whiteout(fs, b, "shared"));
	CHECK_OK(cfs_getattr(fs, f, &st));
	CHECK_EQ(st.nlink, 2u);
	/* and removes them like any file */
	CHECK_OK(cfs_unlink(fs, a, "f1"));
	CHECK_ERR(cfs_lookup(fs, a, "f1", &f), ENOENT);

	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	CHECK_OK(cfs_close(fs));
	/* a forced fsck takes the whiteouts as the device nodes they are */
	CHECK_OK(fixture_open(dev, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs));
	CHECK_OK(cfs_fsck(fs, &fo, &r));
	CHECK_EQ(r.problems, 0u);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

/* The workload of every cut: the renames above on a populated image
 * (synced first, so every cut has the files to find), a hard link to a
 * whiteout, and a sync; it returns at the first error, the power cut.
 * The whiteouts and stubs take inode-table blocks never used before, so
 * the chunk headers' watermarks must reach the disk before the entries
 * naming them (fs_write_all). */
static void workload(struct cfs_fs *fs, void *arg)
{
	cfs_ino_t a, b, f;
	int i;

	(void)arg;
	if (populate(fs, &a, &b) < 0)
		return;
	/* a sync after the first: cuts in two write-backs of whiteouts */
	for (i = 0; i < NFILES; i++)
		if (cfs_rename(fs, a, src_name[i], dst_in_b[i] ? b : a, dst_name[i],
			       CFS_RENAME_WHITEOUT) < 0 || (i == 0 && cfs_sync(fs) < 0))
			return;
	if (cfs_rename(fs, a, "sub", b, "sub", CFS_RENAME_WHITEOUT) < 0 ||
	    cfs_lookup(fs, a, "f0", &f) < 0 || cfs_link(fs, f, b, "shared") < 0)
		return;
	cfs_sync(fs);
}

static int64_t whited_out, moved_only;

static void verify(int64_t k, const char *path, void *arg)
{
	struct cfs_fs *fs = power_cut_recover(k, path, &stats);
	cfs_ino_t a, b, sub;
	int i;

	(void)arg;
	if (cfs_lookup(fs, CFS_ROOT_INO, "a", &a) < 0 || cfs_lookup(fs, CFS_ROOT_INO, "b", &b) < 0) {
		CHECK_OK(cfs_close(fs));
		return;   /* cut before the populated image was synced */
	}
	for (i = 0; i < NFILES; i++) {
		cfs_ino_t d = dst_in_b[i] ? b : a;
		int moved = is_file(fs, d, dst_name[i], flen(i), (unsigned)i + 1);

		if (is_whiteout(fs, a, src_name[i])) {
			/* the old name turns into a whiteout only after the
			 * new one is on the disk */
			if (!moved)
				TEST_FAIL("cut %lld: %s is a whiteout but %s is not the file",
					  (long long)k, src_name[i], dst_name[i]);
			whited_out++;
		} else if (!is_file(fs, a, src_name[i], flen(i), (unsigned)i + 1)) {
			TEST_FAIL("cut %lld: a/%s is neither the file nor a whiteout",
				  (long long)k, src_name[i]);
		} else {
			moved_only += moved;
		}
	}
	/* x: the old file or the one moved over it.  Or nothing while f2
	 * is still at its old name: b/x's new entry names f2 through a stub
	 * in a's chunk, and the entry's block can reach the disk without
	 * the stub's (as in any rename or link across chunks), when fsck
	 * removes the entry; the old x was going anyway. */
	if (!is_file(fs, b, "x", 100, 77) && !is_file(fs, b, "x", flen(2), 3) &&
	    !is_file(fs, a, "f2", flen(2), 3))
		TEST_FAIL("cut %lld: b/x lost, and a/f2 with it", (long long)k);
	if (is_whiteout(fs, a, "sub")) {
		if (cfs_lookup(fs, b, "sub", &sub) < 0 || !is_file(fs, sub, "inner", 500, 55))
			TEST_FAIL("cut %lld: a/sub is a whiteout, b/sub not the directory",
				  (long long)k);
	} else if (cfs_lookup(fs, a, "sub", &sub) < 0 || !is_file(fs, sub, "inner", 500, 55)) {
		TEST_FAIL("cut %lld: a/sub is neither the directory nor a whiteout", (long long)k);
	}
	CHECK_OK(cfs_close(fs));
}

static void test_whiteout_power_cuts(void)
{
	struct cfs_mkfs_opts o = { .block_size = BSIZE, .chunks = 6, .inodes = 600 };
	struct power_cut pc;
	int64_t n;

	pristine = power_pristine(IMG_SIZE, &o);
	power_cut_init(&pc, pristine, IMG_SIZE, BSIZE, "whiteout");
	memset(&stats, 0, sizeof(stats));
	n = each_power_cut(&pc, workload, verify, NULL);
	printf("whiteout: %lld cut points, each repaired by fsck -p alone: %lld needed "
	       "repairs, %lld escalated; old names seen as whiteouts %lld times, files "
	       "seen under both names %lld times\n", (long long)n, (long long)stats.repaired,
	       (long long)stats.escalated, (long long)whited_out, (long long)moved_only);
	/* the cuts covered both sides of the renames */
	CHECK(whited_out > 0);
	unlink(pc.path);
	POWER_CHECK_ESCALATIONS(stats);
	free(pristine);
}

int main(void)
{
	/* a small cache makes write-back interleave with the workload */
	setenv("CHUNKFS_CACHE_KB", "96", 0);
	TEST_RUN(test_whiteout_rename);
	TEST_RUN(test_whiteout_power_cuts);
	return TEST_DONE();
}

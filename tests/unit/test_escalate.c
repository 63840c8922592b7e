/* SPDX-License-Identifier: GPL-2.0-or-later */
/* When a check of the dirty chunks must go on to every chunk ("escalation",
 * src/fsck/driver.c), and when not.  A directory's entry naming a file of
 * another chunk has a stub there; an entry dropped or lost may leave its
 * stub behind in a chunk the check did not take.
 *  - An entry dropped whose stub is in a chunk not checked: always.
 *  - Entries lost from a directory of a chunk in error (damage met in
 *    operation): always, as nothing says where their stubs are.
 *  - The same loss in a chunk only dirty, as a crash leaves it: never.  The
 *    writer marks the stub's chunk dirty before the entry can change on
 *    disk, so a crash leaves that chunk dirty too (test_crash*.c cut the
 *    power at every write and require no escalation at all).
 * Each ends with a forced read-only check that finds nothing. */
#include <stdint.h>
#include <sys/stat.h>

#include "test.h"
#include "fixture.h"
#include "fsint.h"

#define IMG_SIZE (4u << 20)

static struct cfs_bdev *dev;
static cfs_ino_t dir_a, file_b;

/* /a (chunk A) names /b/f (chunk B) as /a/l: an entry with a stub in B. */
static void build(void)
{
	struct cfs_mkfs_opts o = { .block_size = 1024, .chunks = 4, .inodes = 400 };
	struct cfs_fs *fs;
	cfs_ino_t b;

	CHECK_OK(fixture_mkfs(IMG_SIZE, &o, &dev, &fs));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "a", 0755, 0, 0, &dir_a));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "b", 0755, 0, 0, &b));
	CHECK_OK(cfs_mknod(fs, b, "f", S_IFREG | 0644, 0, 0, 0, &file_b));
	CHECK_OK(cfs_link(fs, file_b, dir_a, "l"));
	CHECK(CFS_INO_CHUNK(dir_a) != CFS_INO_CHUNK(file_b));
	CHECK_OK(cfs_close(fs));
}

static struct cfs_fs *open_nocheck(void)
{
	struct cfs_fs *fs;

	CHECK_OK(fixture_open(dev, CFS_OPEN_NOCHECK, &fs));
	return fs;
}

/* Leave chunk c marked with state on disk past the close. */
static void mark(struct cfs_fs *fs, uint32_t c, uint32_t state)
{
	CHECK_OK(chunk_hdr_write_disk(fs, c, state));
	fs->chunks[c].was_dirty = state;
}

/* /a/l's entry gone from /a's leaf, its stub and /a's counts kept: what
 * unlink leaves when cut after the leaf's write. */
static void lose_entry(void)
{
	struct cfs_fs *fs = open_nocheck();
	struct inode *dp;

	CHECK_OK(inode_get(fs, dir_a, &dp));
	CHECK_OK(dir_remove(fs, dp, "l"));
	inode_put(fs, dp);
	CHECK_OK(cfs_close(fs));
}

static void fsck_run_mode(int mode, int force, struct cfs_fsck_result *r)
{
	struct cfs_fsck_opts o = { .mode = mode, .force = force, .report = fixture_report,
				   .ctx = getenv("CHUNKFS_TEST_VERBOSE") ? (void *)1 : NULL };
	struct cfs_fs *fs;

	CHECK_OK(fixture_open(dev, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR |
				   (mode == CFS_FSCK_NO ? CFS_OPEN_RDONLY : 0), &fs));
	CHECK_OK(cfs_fsck(fs, &o, r));
	CHECK_OK(cfs_close(fs));
}

static void nothing_left(void)
{
	struct cfs_fsck_result r;

	fsck_run_mode(CFS_FSCK_NO, 1, &r);
	CHECK_EQ(r.problems, 0);
	cfs_bdev_destroy(dev);
	dev = NULL;
}

/* The loss in a chunk left dirty by a crash, with the stub's chunk: just
 * those two are checked, and preen repairs all. */
static void test_crash_loss_no_escalation(void)
{
	struct cfs_fsck_result r;
	struct cfs_fs *fs;

	build();
	lose_entry();
	fs = open_nocheck();
	mark(fs, CFS_INO_CHUNK(dir_a), CFS_STATE_DIRTY);
	mark(fs, CFS_INO_CHUNK(file_b), CFS_STATE_DIRTY);
	CHECK_OK(cfs_close(fs));
	fsck_run_mode(CFS_FSCK_PREEN, 0, &r);
	CHECK_EQ(r.escalated, 0);
	CHECK_EQ(r.checked, 2);
	CHECK_EQ(r.unfixed, 0);
	CHECK(r.fixed >= 2);   /* /a's counts; the stub (and /b/f's link count) */
	nothing_left();
}

/* The loss in a chunk marked in error, the stub's chunk clean: every chunk
 * is checked, and the stub found and freed. */
static void test_damage_loss_escalates(void)
{
	struct cfs_fsck_result r;
	struct cfs_fs *fs;

	build();
	lose_entry();
	fs = open_nocheck();
	chunk_error(fs, CFS_INO_CHUNK(dir_a), dir_a, 0, -EUCLEAN, "test damage");
	CHECK_OK(cfs_close(fs));
	fsck_run_mode(CFS_FSCK_YES, 0, &r);
	CHECK_EQ(r.escalated, 1);
	CHECK_EQ(r.checked, 4);
	CHECK_EQ(r.unfixed, 0);
	CHECK(r.fixed >= 3);   /* /a's counts, the stub, /b/f's link count */
	nothing_left();
}

/* An entry of a dirty chunk whose stub in a clean chunk no longer backs it
 * (its hash changed): preen drops the entry, and goes on to every chunk to
 * free the stub. */
static void test_dropped_entry_stub_elsewhere_escalates(void)
{
	struct cfs_fsck_result r;
	struct dirent_rec e;
	struct inode *dp, *s;
	struct cfs_fs *fs;

	build();
	fs = open_nocheck();
	CHECK_OK(inode_get(fs, dir_a, &dp));
	CHECK_OK(dir_lookup(fs, dp, "l", &e));
	inode_put(fs, dp);
	CHECK(e.stub != 0);
	CHECK_OK(inode_get(fs, e.stub, &s));
	s->d.lo ^= 1;
	CHECK_OK(inode_write(fs, s));
	inode_put(fs, s);
	CHECK_OK(cfs_close(fs));
	fs = open_nocheck();
	mark(fs, CFS_INO_CHUNK(dir_a), CFS_STATE_DIRTY);
	CHECK_OK(cfs_close(fs));
	fsck_run_mode(CFS_FSCK_PREEN, 0, &r);
	CHECK_EQ(r.escalated, 1);
	CHECK_EQ(r.checked, 4);
	CHECK_EQ(r.unfixed, 0);
	nothing_left();
}

int main(void)
{
	TEST_RUN(test_crash_loss_no_escalation);
	TEST_RUN(test_damage_loss_escalates);
	TEST_RUN(test_dropped_entry_stub_elsewhere_escalates);
	return TEST_DONE();
}

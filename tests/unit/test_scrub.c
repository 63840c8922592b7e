/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of an online repair's result (src/scrub.c) as the mounted
 * filesystem goes on from it: what the repair wrote must hold through
 * what the mount does after it (new files, giving back inode clusters at
 * sync and close), as if the repair had been made offline.
 *
 * The damage: an orphan (a file whose entry is gone) in a chunk whose
 * inode table is full, so that moving it to /lost+found (chunk 0) makes
 * its stub in a slot of an inode cluster.  The mounted filesystem had
 * read that chunk's cluster map before the repair, and made and emptied
 * a cluster: the first free slot, where the repair puts the stub. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bdev.h"
#include "chunkfs.h"
#include "fixture.h"
#include "fsint.h"
#include "test.h"

#define SIZE (16u << 20)
#define NFILES 100
#define LEN 300

static void file_fill(cfs_ino_t dir, struct cfs_fs *fs, const char *fmt, int i)
{
	uint8_t buf[LEN];
	char name[32];
	cfs_ino_t f;

	snprintf(name, sizeof(name), fmt, i);
	CHECK_OK(cfs_mknod(fs, dir, name, S_IFREG | 0644, 0, 0, 0, &f));
	fixture_fill(buf, sizeof(buf), (unsigned)f);
	CHECK_EQ(cfs_write(fs, f, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
}

static void file_same(struct cfs_fs *fs, const char *path)
{
	uint8_t want[LEN], got[LEN + 1];
	cfs_ino_t f;

	CHECK_OK(cfs_path_resolve(fs, path, 0, &f));
	fixture_fill(want, sizeof(want), (unsigned)f);
	CHECK_EQ(cfs_read(fs, f, got, sizeof(got), 0), (ssize_t)LEN);
	CHECK(!memcmp(want, got, LEN));
}

static void fsck_clean(struct cfs_bdev *dev)
{
	struct cfs_fsck_opts fo = { .mode = CFS_FSCK_NO, .force = 1, .threads = 1,
				    .report = fixture_report };
	struct cfs_fsck_result res;
	struct cfs_fs *fs;

	CHECK_OK(fixture_open(dev, CFS_OPEN_RDONLY | CFS_OPEN_REPAIR | CFS_OPEN_NOCHECK, &fs));
	CHECK(cfs_fsck(fs, &fo, &res) >= 0);
	CHECK_EQ(res.problems, 0u);
	CHECK_OK(cfs_close(fs));
}

/* The image with the orphan (its inode number in *orphan), and the
 * filesystem opened on it as a mount opens it, in the state the header
 * comment tells; *d the directory of the files. */
static struct cfs_fs *damaged_mount(struct cfs_bdev **dev, cfs_ino_t *d, cfs_ino_t *orphan)
{
	struct cfs_mkfs_opts o = { .size = SIZE, .block_size = 4096, .chunks = 2,
				   .inodes = 32, .dyninodes = 1 };
	struct cfs_fs *fs;
	struct inode *dp;
	uint32_t c, g, j, l;
	char name[32];
	cfs_ino_t f;

	CHECK_OK(fixture_mkfs(SIZE, &o, dev, &fs));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, d));
	c = CFS_INO_CHUNK(*d);
	CHECK(c != CFS_INO_CHUNK(CFS_ROOT_INO));   /* the stub is made in c */
	for (int i = 0; i < NFILES; i++)
		file_fill(*d, fs, "f%03d", i);
	CHECK_OK(cfs_lookup(fs, *d, "f005", orphan));
	CHECK_EQ(CFS_INO_CHUNK(*orphan), c);
	/* a crash's work, as tests/fsck/mkcase.c's orphan-inode */
	CHECK_OK(inode_get(fs, *d, &dp));
	CHECK_OK(dir_remove(fs, dp, "f005"));
	CHECK_OK(inode_write(fs, dp));
	inode_put(fs, dp);
	CHECK_OK(cfs_close(fs));

	CHECK_OK(fixture_open(*dev, 0, &fs));
	/* new files until one opens a cluster j (slots go lowest first: the
	 * clusters before it are full, and it was empty), and then one the
	 * next; those in j removed again: j of free slots only, kept (no sync
	 * gave it back), and enough free slots after it that a close would
	 * give back an empty j */
	for (g = 0, j = UINT32_MAX;; g++) {
		snprintf(name, sizeof(name), "g%03u", g);
		CHECK(g < 1000);
		CHECK_OK(cfs_mknod(fs, *d, name, S_IFREG | 0644, 0, 0, 0, &f));
		l = CFS_INO_LOCAL(f);
		if (l <= fs->sb.inodes_per_chunk || (l - fs->sb.inodes_per_chunk - 1) % CFS_ICL_INODES)
			continue;
		if (j != UINT32_MAX)
			break;
		j = g;
	}
	for (; j < g; j++) {
		snprintf(name, sizeof(name), "g%03u", j);
		CHECK_OK(cfs_unlink(fs, *d, name));
	}
	CHECK(fs->chunks[c].icl_loaded);
	return fs;
}

static void repair(struct cfs_fs *fs, cfs_ino_t d)
{
	struct cfs_fsck_opts o = { .mode = CFS_FSCK_YES, .threads = 1,
				   .report = fixture_report };
	struct cfs_fsck_result r;

	CHECK_OK(cfs_scrub(fs, CFS_INO_CHUNK(d), &o, &r));
	CHECK(r.fixed > 0);
	CHECK_EQ(r.unfixed, 0u);
	o.mode = CFS_FSCK_NO;
	CHECK_OK(cfs_scrub(fs, CFS_INO_CHUNK(d), &o, &r));
	CHECK_EQ(r.problems, 0u);
}

static void orphan_found(struct cfs_fs *fs, cfs_ino_t orphan)
{
	char path[64];

	snprintf(path, sizeof(path), "/lost+found/#%u", orphan);
	file_same(fs, path);
}

static void states(struct cfs_bdev *dev, uint32_t *state)
{
	struct cfs_chunk_info ci;
	struct cfs_fs *fs;

	CHECK_OK(fixture_open(dev, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs));
	for (uint32_t c = 0; c < fs->sb.nchunks; c++) {
		CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
		state[c] = ci.state;
	}
	CHECK_OK(cfs_close(fs));
}

/* Closed right after the repair: the close gives back the clusters it
 * believes empty, and must not give back the one holding the stub. */
static void test_close_after_repair(void)
{
	struct cfs_bdev *dev;
	cfs_ino_t d, orphan;
	struct cfs_fs *fs = damaged_mount(&dev, &d, &orphan);

	uint32_t st[2];

	repair(fs, d);
	orphan_found(fs, orphan);
	CHECK_OK(cfs_close(fs));
	fsck_clean(dev);
	states(dev, st);   /* the check at close found nothing */
	CHECK_EQ(st[0], (uint32_t)CFS_CHUNK_CLEAN);
	CHECK_EQ(st[1], (uint32_t)CFS_CHUNK_CLEAN);
	CHECK_OK(fixture_open(dev, CFS_OPEN_RDONLY, &fs));
	orphan_found(fs, orphan);
	file_same(fs, "/d/f000");
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

/* New files after the repair take slots the repair left free, and a sync
 * between gives back only clusters that are empty. */
static void test_files_after_repair(void)
{
	struct cfs_bdev *dev;
	cfs_ino_t d, orphan;
	struct cfs_fs *fs = damaged_mount(&dev, &d, &orphan);
	char path[32];

	repair(fs, d);
	for (int i = 0; i < 70; i++)
		file_fill(d, fs, "h%03d", i);
	CHECK_OK(cfs_sync(fs));
	orphan_found(fs, orphan);
	CHECK_OK(cfs_close(fs));
	fsck_clean(dev);
	CHECK_OK(fixture_open(dev, CFS_OPEN_RDONLY, &fs));
	orphan_found(fs, orphan);
	for (int i = 0; i < 70; i++) {
		snprintf(path, sizeof(path), "/d/h%03d", i);
		file_same(fs, path);
	}
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

/* Whatever the mount does wrong after a repair, the chunk it repaired is
 * not marked clean at close while its disk says otherwise: here a stub
 * count in memory that the repair's header did not replace (as the
 * stale cluster map was).  The chunk is left in error, so that a check
 * of the chunks needing one (the next mount's, fsck -p) finds it. */
static void test_close_check(void)
{
	struct cfs_fsck_opts fo = { .mode = CFS_FSCK_NO, .threads = 1,
				    .report = fixture_report };
	struct cfs_fsck_result res;
	struct cfs_bdev *dev;
	cfs_ino_t d, orphan;
	struct cfs_fs *fs = damaged_mount(&dev, &d, &orphan);
	uint32_t c = CFS_INO_CHUNK(d), st[2];

	repair(fs, d);
	chunk_count(fs, c, CNT_STUBS, 1);
	CHECK_OK(cfs_close(fs));
	states(dev, st);
	CHECK_EQ(st[c], (uint32_t)CFS_CHUNK_ERROR);
	CHECK_EQ(st[1 - c], (uint32_t)CFS_CHUNK_CLEAN);
	CHECK_OK(fixture_open(dev, CFS_OPEN_RDONLY | CFS_OPEN_REPAIR | CFS_OPEN_NOCHECK, &fs));
	CHECK(cfs_fsck(fs, &fo, &res) >= 0);   /* not forced: the chunks in need */
	CHECK(res.problems > 0);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

int main(void)
{
	TEST_RUN(test_close_after_repair);
	TEST_RUN(test_files_after_repair);
	TEST_RUN(test_close_check);
	return TEST_DONE();
}

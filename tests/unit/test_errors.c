/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of errors met in normal operation (issue 12 item 1): the
 * chunk holding the corruption is marked ERROR on disk at once, with an
 * error record in its header (feature ERROR_RECORD), the call fails with
 * ext4's errno, other chunks go on, and the next check takes that chunk.
 *
 * Corruption is made on the fault device's bytes, with nothing pending and
 * the block dropped from the cache, like damage on the medium. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bdev.h"
#include "chunkfs.h"
#include "fixture.h"
#include "format.h"
#include "fsint.h"
#include "test.h"

#define SIZE (64u << 20)
#define BS 4096u

struct seen {
	int calls;
	uint32_t chunk;
	struct cfs_chunk_error e;
};

static void on_error(void *ctx, uint32_t chunk, const struct cfs_chunk_error *e)
{
	struct seen *s = ctx;

	s->calls++;
	s->chunk = chunk;
	s->e = *e;
}

/* Two top-level directories, each with a file: new top-level directories
 * go to different chunks. */
struct tree {
	cfs_ino_t a, fa, b, fb;
};

static void make_tree(struct cfs_fs *fs, struct tree *t)
{
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "a", 0755, 0, 0, &t->a));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "b", 0755, 0, 0, &t->b));
	CHECK(CFS_INO_CHUNK(t->a) != CFS_INO_CHUNK(t->b));
	CHECK_OK(cfs_mknod(fs, t->a, "f", S_IFREG | 0644, 0, 0, 0, &t->fa));
	CHECK_OK(cfs_mknod(fs, t->b, "f", S_IFREG | 0644, 0, 0, 0, &t->fb));
	CHECK_EQ(cfs_write(fs, t->fa, "aaaa", 4, 0), 4);
	CHECK_EQ(cfs_write(fs, t->fb, "bbbb", 4, 0), 4);
	CHECK_EQ(CFS_INO_CHUNK(t->fa), CFS_INO_CHUNK(t->a));
}

/* Flip a byte of ino's slot in the inode table, on the medium; returns
 * the table block. */
static uint64_t damage_inode(struct cfs_fs *fs, struct cfs_bdev *dev, cfs_ino_t ino)
{
	uint64_t n, blk;
	uint32_t off;

	CHECK_OK(cfs_sync(fs));
	CHECK(cfs_clean_idle(fs, 0) >= 0);
	blk = inode_location(fs, ino, &off);
	cache_forget(&fs->cache, blk);
	cfs_bdev_fault_bytes(dev, &n)[blk * BS + off + 40] ^= 0x5a;
	return blk;
}

/* The chunk header as the medium holds it. */
static void disk_header(struct cfs_fs *fs, struct cfs_bdev *dev, uint32_t c,
			struct cfs_chunk_hdr *h)
{
	uint64_t n;

	cfs_chunk_hdr_decode(cfs_bdev_fault_bytes(dev, &n) + chunk_base(fs, c) * BS, h);
}

static void test_corruption_marks_chunk(void)
{
	struct cfs_mkfs_opts o = { .size = SIZE, .block_size = BS, .chunks = 4 };
	struct cfs_fsck_opts fo = { .mode = CFS_FSCK_PREEN, .threads = 1, .report = fixture_report };
	struct cfs_fsck_result res;
	struct cfs_chunk_info ci;
	struct cfs_chunk_hdr h;
	struct cfs_bdev *dev, *crashed;
	struct cfs_fs *fs;
	struct cfs_stat st;
	struct seen seen = { 0 };
	struct tree t;
	uint64_t blk, n;
	uint32_t ca, cb;
	cfs_ino_t g;
	char buf[8];

	CHECK_OK(fixture_mkfs(SIZE, &o, &dev, &fs));
	make_tree(fs, &t);
	ca = CFS_INO_CHUNK(t.a);
	cb = CFS_INO_CHUNK(t.b);
	cfs_set_error_fn(fs, on_error, &seen);
	blk = damage_inode(fs, dev, t.fa);

	CHECK_ERR(cfs_getattr(fs, t.fa, &st), EBADMSG);
	CHECK_EQ(seen.calls, 1);
	CHECK_EQ(seen.chunk, ca);
	CHECK_OK(cfs_get_chunk_info(fs, ca, &ci));
	CHECK_EQ(ci.state, CFS_CHUNK_ERROR);
	CHECK_EQ(ci.errors, 1);
	CHECK_EQ(ci.first_error.ino, t.fa);
	CHECK_EQ(ci.first_error.block, blk);
	CHECK_EQ(ci.first_error.err, EBADMSG);
	CHECK(strstr(ci.first_error.what, "checksum"));
	CHECK(ci.first_error.time > 0);
	CHECK_EQ(ci.last_error.ino, t.fa);
	/* on the medium already, before any sync */
	disk_header(fs, dev, ca, &h);
	CHECK(h.state & CFS_STATE_ERROR);
	CHECK_EQ(h.error_count, 1);
	CHECK_EQ(h.first_error.block, blk);

	/* again: counted, the first error kept */
	CHECK_ERR(cfs_read(fs, t.fa, buf, sizeof(buf), 0), EBADMSG);
	CHECK_OK(cfs_get_chunk_info(fs, ca, &ci));
	CHECK_EQ(ci.errors, 2);
	CHECK_EQ(ci.first_error.block, blk);
	CHECK(ci.last_error.time >= ci.first_error.time);

	/* the other chunk goes on */
	CHECK_EQ(cfs_read(fs, t.fb, buf, sizeof(buf), 0), 4);
	CHECK_OK(cfs_mknod(fs, t.b, "g", S_IFREG | 0644, 0, 0, 0, &g));
	CHECK_EQ(cfs_write(fs, g, "gggg", 4, 0), 4);
	CHECK_OK(cfs_get_chunk_info(fs, cb, &ci));
	CHECK(!(ci.state & CFS_CHUNK_ERROR));
	CHECK_EQ(ci.errors, 0);
	CHECK_EQ(seen.calls, 2);

	/* a crash now: the mark is there, the open refuses, preen takes
	 * exactly that chunk */
	CHECK_OK(cfs_sync(fs));
	CHECK(cfs_clean_idle(fs, 0) >= 0);
	CHECK_OK(fixture_image_dev(cfs_bdev_fault_bytes(dev, &n), SIZE, BS, &crashed));
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
	CHECK_ERR(fixture_open(crashed, 0, &fs), EUCLEAN);
	CHECK(strstr(cfs_last_error(), "run chunkfs fsck"));
	CHECK_OK(fixture_open(crashed, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs));
	CHECK_OK(cfs_fsck(fs, &fo, &res));
	CHECK_EQ(res.checked, 1);
	CHECK(res.problems >= 1);
	CHECK_OK(cfs_close(fs));
	fo.mode = CFS_FSCK_YES;
	CHECK_OK(fixture_open(crashed, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs));
	CHECK_OK(cfs_fsck(fs, &fo, &res));
	CHECK_EQ(res.unfixed, 0);
	CHECK_OK(cfs_close(fs));
	CHECK_OK(fixture_open(crashed, 0, &fs));
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	CHECK_OK(cfs_get_chunk_info(fs, ca, &ci));
	CHECK_EQ(ci.state, CFS_CHUNK_CLEAN);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(crashed);
}

/* A damaged directory block is recorded with its block, no inode. */
static void test_metadata_block_error(void)
{
	struct cfs_mkfs_opts o = { .size = SIZE, .block_size = BS, .chunks = 4 };
	struct cfs_chunk_info ci;
	struct cfs_bdev *dev;
	struct cfs_fs *fs;
	struct tree t;
	struct inode *ip;
	struct extent e;
	cfs_ino_t x;
	uint64_t n, bad;
	uint32_t ca;

	CHECK_OK(fixture_mkfs(SIZE, &o, &dev, &fs));
	make_tree(fs, &t);
	ca = CFS_INO_CHUNK(t.a);
	CHECK_OK(cfs_sync(fs));
	CHECK(cfs_clean_idle(fs, 0) >= 0);
	/* the directory's root node: its first block */
	CHECK_OK(inode_get(fs, t.a, &ip));
	CHECK_EQ(ext_lookup(fs, ip, 0, &e), 1);
	inode_put(fs, ip);
	bad = chunk_base(fs, ca) + e.pblk;
	CHECK_EQ(cfs_meta_magic(cfs_bdev_fault_bytes(dev, &n) + (bad * BS)), CFS_MAGIC_DIR);
	cache_forget(&fs->cache, bad);
	cfs_bdev_fault_bytes(dev, &n)[bad * BS + 100] ^= 0x01;
	CHECK_ERR(cfs_lookup(fs, t.a, "f", &x), EBADMSG);
	CHECK_OK(cfs_get_chunk_info(fs, ca, &ci));
	CHECK_EQ(ci.state, CFS_CHUNK_ERROR);
	CHECK_EQ(ci.errors, 1);
	CHECK_EQ(ci.first_error.block, bad);
	CHECK_EQ(ci.first_error.ino, 0);
	CHECK(strstr(ci.first_error.what, "checksum"));
	CHECK_OK(cfs_lookup(fs, t.b, "f", &x));
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

/* An image made before the feature: it opens read-write, the chunk is
 * still marked ERROR, but no record is written into its header's reserved
 * bytes. */
static void test_old_image_no_record(void)
{
	struct cfs_mkfs_opts o = { .size = SIZE, .block_size = BS, .chunks = 4 };
	struct cfs_chunk_info ci;
	struct cfs_super sb;
	struct cfs_chunk_hdr h;
	struct cfs_bdev *dev;
	struct cfs_fs *fs;
	struct cfs_stat st;
	struct cfs_info in;
	struct tree t;
	uint64_t n;
	uint8_t *img;
	uint32_t i;

	CHECK_OK(fixture_mkfs(SIZE, &o, &dev, &fs));
	CHECK_OK(cfs_get_info(fs, &in));
	CHECK(in.feature_compat & CFS_FEAT_COMPAT_ERROR_RECORD);
	make_tree(fs, &t);
	CHECK_OK(cfs_close(fs));
	img = cfs_bdev_fault_bytes(dev, &n);
	CHECK_OK(cfs_super_decode(img, &sb));
	sb.feat_compat &= ~CFS_FEAT_COMPAT_ERROR_RECORD;
	cfs_super_encode(&sb, img);
	CHECK_OK(fixture_open(dev, 0, &fs));
	damage_inode(fs, dev, t.fa);
	CHECK_ERR(cfs_getattr(fs, t.fa, &st), EBADMSG);
	CHECK_OK(cfs_get_chunk_info(fs, CFS_INO_CHUNK(t.fa), &ci));
	CHECK_EQ(ci.state, CFS_CHUNK_ERROR);
	CHECK_EQ(ci.errors, 0);
	disk_header(fs, dev, CFS_INO_CHUNK(t.fa), &h);
	CHECK(h.state & CFS_STATE_ERROR);
	img = cfs_bdev_fault_bytes(dev, &n) + chunk_base(fs, CFS_INO_CHUNK(t.fa)) * BS;
	for (i = CFS_OFF_CH_ERR_COUNT; i < CFS_OFF_CH_ERR_LAST + CFS_ERR_REC_SIZE; i++)
		CHECK_EQ(img[i], 0);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

int main(void)
{
	TEST_RUN(test_corruption_marks_chunk);
	TEST_RUN(test_metadata_block_error);
	TEST_RUN(test_old_image_no_record);
	return TEST_DONE();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Extent records out of key order (FORMAT.md 12): a damaged index key in
 * a file's extent root (the inode's checksum valid) leaves one leaf's
 * records outside the key range the index gives that leaf, where a lookup
 * never looks.  Before ext_walk knew the node's lower key those records
 * were skipped without a word: fsck called the map sound, and its bitmap
 * pass then freed blocks the map still named.  Now each is out of place:
 * fsck reports it (EXTENT_MISPLACED, for a person: no crash writes one)
 * and -y removes it alone; every other block of the file reads back. */
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

#define SIZE  (16u << 20)
#define BS    1024u
#define NEXT  100             /* one-block extents, a hole after each */

struct counts {
	int ext, nodes;
};

static int count_cb(void *ctx, const struct extent *e, int is_node, uint32_t rel)
{
	struct counts *c = ctx;

	(void)e;
	(void)rel;
	if (is_node)
		c->nodes++;
	else
		c->ext++;
	return 0;
}

static struct ext_skipped walk(struct cfs_fs *fs, cfs_ino_t ino, struct counts *c)
{
	struct ext_skipped sk;
	struct inode *ip;

	memset(c, 0, sizeof(*c));
	CHECK_OK(inode_get(fs, ino, &ip));
	CHECK_OK(ext_walk(fs, ip, count_cb, c, &sk));
	inode_put(fs, ip);
	return sk;
}

struct found {
	long misplaced, other;
};

static void on_problem(void *ctx, const struct cfs_fsck_problem *p)
{
	struct found *f = ctx;

	if (!strcmp(p->code, "EXTENT_MISPLACED"))
		f->misplaced++;
	else
		f->other++;
}

static struct found run_fsck(struct cfs_bdev *dev, int mode, int force,
			     struct cfs_fsck_result *r)
{
	struct found f = { 0, 0 };
	struct cfs_fsck_opts o = { .mode = mode, .force = force, .threads = 1,
				   .problem = on_problem, .ctx = &f };
	struct cfs_fs *fs;

	CHECK_OK(fixture_open(dev, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs));
	CHECK_OK(cfs_fsck(fs, &o, r));
	CHECK_OK(cfs_close(fs));
	return f;
}

static void fill(uint8_t *b, uint64_t lblk)
{
	memset(b, 'a' + (int)(lblk % 26), BS);
	memcpy(b, &lblk, sizeof(lblk));
}

static void test_index_key_damaged(void)
{
	struct cfs_mkfs_opts o = { .size = SIZE, .block_size = BS, .chunks = 2 };
	static uint8_t data[2 * NEXT * BS], back[2 * NEXT * BS], want[BS];
	struct cfs_fsck_result r;
	struct ext_skipped sk;
	struct counts before, after;
	struct cfs_bdev *dev;
	struct cfs_fs *fs;
	struct inode *ip;
	struct found f;
	cfs_ino_t ino;
	uint64_t k1, k2, l;
	uint8_t *idx;
	int i, inside = 0, children;

	CHECK_OK(fixture_mkfs(SIZE, &o, &dev, &fs));
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &ino));
	for (l = 0; l < 2 * NEXT; l++)
		fill(data + l * BS, l);
	CHECK_EQ(cfs_write(fs, ino, data, sizeof(data), 0), (ssize_t)sizeof(data));
	for (l = 1; l < 2 * NEXT; l += 2)
		CHECK_OK(cfs_fallocate(fs, ino, CFS_FALLOC_PUNCH_HOLE | CFS_FALLOC_KEEP_SIZE,
				       l * BS, BS));
	sk = walk(fs, ino, &before);
	CHECK_EQ(before.ext, NEXT);
	CHECK_EQ(sk.nmisplaced, 0);

	/* the root names three leaves or more: the third one's key made the
	 * second one's, so the second leaf's range is empty */
	CHECK_OK(inode_get(fs, ino, &ip));
	CHECK_EQ(cfs_btn_level(ip->var), 1);
	CHECK(cfs_btn_nrec(ip->var) >= 3);
	children = cfs_btn_nrec(ip->var);
	idx = ip->var + CFS_BTN_SIZE;
	k1 = cfs_btrec_key(idx + CFS_BTI_SIZE);
	k2 = cfs_btrec_key(idx + 2 * CFS_BTI_SIZE);
	cfs_btidx_set(idx + 2 * CFS_BTI_SIZE, k1, cfs_btidx_child(idx + 2 * CFS_BTI_SIZE));
	CHECK_OK(inode_write(fs, ip));
	inode_put(fs, ip);
	CHECK_OK(cfs_sync(fs));
	for (l = 0; l < 2 * NEXT; l += 2)
		inside += l >= k1 && l < k2;
	CHECK(inside > EXT_MISPLACED_MAX);   /* more than one walk keeps */

	sk = walk(fs, ino, &after);
	CHECK_EQ(sk.nmisplaced, inside);
	CHECK_EQ(after.ext, NEXT - inside);
	CHECK_EQ(sk.leftovers, 0);
	CHECK(cfs_check(fs, NULL, NULL) > 0);
	CHECK_OK(cfs_close(fs));

	/* not a crash's: preen leaves it for a person */
	f = run_fsck(dev, CFS_FSCK_PREEN, 1, &r);
	CHECK(f.misplaced > 0);
	CHECK(r.unfixed > 0);
	f = run_fsck(dev, CFS_FSCK_YES, 1, &r);
	CHECK_EQ(f.misplaced, inside);
	CHECK_EQ(r.unfixed, 0);
	f = run_fsck(dev, CFS_FSCK_YES, 1, &r);
	CHECK_EQ(r.problems, 0);

	CHECK_OK(fixture_open(dev, 0, &fs));
	CHECK_EQ(cfs_check(fs, NULL, NULL), 0);
	sk = walk(fs, ino, &after);
	CHECK_EQ(sk.nmisplaced, 0);
	CHECK_EQ(after.ext, NEXT - inside);
	/* the emptied leaf went with its index record: the map names none of
	 * the blocks the check freed, and its keys rise again */
	CHECK_OK(inode_get(fs, ino, &ip));
	CHECK_EQ(cfs_btn_nrec(ip->var), children - 1);
	idx = ip->var + CFS_BTN_SIZE;
	for (i = 2; i < children - 1; i++)
		CHECK(cfs_btrec_key(idx + (size_t)i * CFS_BTI_SIZE) >
		      cfs_btrec_key(idx + (size_t)(i - 1) * CFS_BTI_SIZE));
	inode_put(fs, ip);
	CHECK_EQ(cfs_read(fs, ino, back, sizeof(back), 0), (ssize_t)sizeof(back));
	for (l = 0, i = 0; l < 2 * NEXT; l++) {
		if (l % 2 || (l >= k1 && l < k2))
			memset(want, 0, BS);   /* a hole, or a removed extent */
		else
			fill(want, l);
		i += memcmp(back + l * BS, want, BS) != 0;
	}
	CHECK_EQ(i, 0);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

int main(void)
{
	TEST_RUN(test_index_key_damaged);
	return TEST_DONE();
}

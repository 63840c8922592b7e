/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of corruption found inside decoded structures in normal
 * operation (issue 12 item 1): an impossible value in an extent tree node,
 * a directory node, a directory entry, an xattr block, a stub or a
 * continuation's back pointer, each with valid checksums (what only the
 * structure's own rules catch).  Each marks the chunk the check of which
 * would find it ERROR on disk at once, with an error record naming the
 * inode and the block, the call fails with -EUCLEAN (ext4's EFSCORRUPTED),
 * and operations in other chunks go on.
 *
 * Damage is made on the fault device's bytes, resealed, with nothing
 * pending and the block dropped from the cache, like damage on the medium
 * that a checksum cannot see. */
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

/* Two top-level directories in different chunks: /a holds what gets
 * damaged, /b the work that must go on. */
struct tree {
	struct cfs_bdev *dev;
	struct cfs_fs *fs;
	cfs_ino_t a, b, frag, x, fb;
	uint32_t ca, cb;
};

static void make_tree(struct tree *t)
{
	struct cfs_mkfs_opts o = { .size = SIZE, .block_size = BS, .chunks = 4 };
	static uint8_t buf[BS];
	cfs_ino_t pad;
	int i;

	CHECK_OK(fixture_mkfs(SIZE, &o, &t->dev, &t->fs));
	CHECK_OK(cfs_mkdir(t->fs, CFS_ROOT_INO, "a", 0755, 0, 0, &t->a));
	CHECK_OK(cfs_mkdir(t->fs, CFS_ROOT_INO, "b", 0755, 0, 0, &t->b));
	t->ca = CFS_INO_CHUNK(t->a);
	t->cb = CFS_INO_CHUNK(t->b);
	CHECK(t->ca != t->cb);
	/* one extent per block, more than the root in the inode holds: the
	 * tree has a node block */
	CHECK_OK(cfs_mknod(t->fs, t->a, "frag", S_IFREG | 0644, 0, 0, 0, &t->frag));
	CHECK_OK(cfs_mknod(t->fs, t->a, "pad", S_IFREG | 0644, 0, 0, 0, &pad));
	for (i = 0; i < 8; i++) {
		memset(buf, 'a' + i, sizeof(buf));
		CHECK_EQ(cfs_write(t->fs, t->frag, buf, BS, (uint64_t)i * BS), BS);
		CHECK_EQ(cfs_write(t->fs, pad, buf, BS, (uint64_t)i * BS), BS);
	}
	CHECK_OK(cfs_unlink(t->fs, t->a, "pad"));
	/* an xattr too big for the inode: an overflow block */
	CHECK_OK(cfs_mknod(t->fs, t->a, "x", S_IFREG | 0644, 0, 0, 0, &t->x));
	memset(buf, 'v', 600);
	CHECK_OK(cfs_setxattr(t->fs, t->x, "user.big", buf, 600, 0));
	CHECK_EQ(CFS_INO_CHUNK(t->frag), t->ca);
	CHECK_EQ(CFS_INO_CHUNK(t->x), t->ca);
	CHECK_OK(cfs_mknod(t->fs, t->b, "f", S_IFREG | 0644, 0, 0, 0, &t->fb));
	CHECK_EQ(cfs_write(t->fs, t->fb, "bbbb", 4, 0), 4);
	CHECK_OK(cfs_sync(t->fs));
	CHECK(cfs_clean_idle(t->fs, 0) >= 0);
}

static uint8_t *disk(struct tree *t, uint64_t blk)
{
	uint64_t n;

	return cfs_bdev_fault_bytes(t->dev, &n) + blk * BS;
}

/* Metadata block blk changed on the medium by edit, its checksum made
 * valid again. */
static void damage_block(struct tree *t, uint64_t blk, void (*edit)(uint8_t *p, void *arg),
			 void *arg)
{
	cache_forget(&t->fs->cache, blk);
	edit(disk(t, blk), arg);
	cfs_meta_csum_set(disk(t, blk), BS, t->fs->seed);
}

/* Inode ino changed on the medium by edit (its bytes), resealed; it must
 * not be in memory (nobody holds it). */
static void damage_inode(struct tree *t, cfs_ino_t ino, void (*edit)(uint8_t *p, void *arg),
			 void *arg)
{
	uint32_t off;
	uint64_t blk = inode_location(t->fs, ino, &off);

	cache_forget(&t->fs->cache, blk);
	edit(disk(t, blk) + off, arg);
	cfs_dinode_csum_set(disk(t, blk) + off, t->fs->isz, t->fs->seed, ino);
}

/* The chunk in ERROR, in memory and on the medium, with one record. */
static void check_recorded(struct tree *t, uint32_t c, cfs_ino_t ino, uint64_t blk,
			   const char *what)
{
	struct cfs_chunk_info ci;
	struct cfs_chunk_hdr h;

	CHECK_OK(cfs_get_chunk_info(t->fs, c, &ci));
	CHECK_EQ(ci.state, CFS_CHUNK_ERROR);
	CHECK_EQ(ci.errors, 1);
	CHECK_EQ(ci.first_error.err, EUCLEAN);
	CHECK_EQ(ci.first_error.ino, ino);
	CHECK_EQ(ci.first_error.block, blk);
	if (!strstr(ci.first_error.what, what))
		TEST_FAIL("recorded \"%s\", expected \"%s\"", ci.first_error.what, what);
	cfs_chunk_hdr_decode(disk(t, chunk_base(t->fs, c)), &h);
	CHECK(h.state & CFS_STATE_ERROR);
	CHECK_EQ(h.error_count, 1);
	CHECK_EQ(h.first_error.ino, ino);
	CHECK_EQ(h.first_error.block, blk);
}

/* Work in /b (another chunk) goes on, and no other chunk is marked. */
static void check_others(struct tree *t, uint32_t bad)
{
	struct cfs_chunk_info ci;
	char buf[8], name[32];
	cfs_ino_t g;
	uint32_t c;
	static int n;

	CHECK_EQ(cfs_read(t->fs, t->fb, buf, sizeof(buf), 0), 4);
	snprintf(name, sizeof(name), "g%d", n++);
	CHECK_OK(cfs_mknod(t->fs, t->b, name, S_IFREG | 0644, 0, 0, 0, &g));
	CHECK_EQ(cfs_write(t->fs, g, "gggg", 4, 0), 4);
	for (c = 0; c < t->fs->sb.nchunks; c++) {
		if (c == bad)
			continue;
		CHECK_OK(cfs_get_chunk_info(t->fs, c, &ci));
		CHECK(ci.state != CFS_CHUNK_ERROR);
		CHECK_EQ(ci.errors, 0);
	}
}

static void done(struct tree *t)
{
	CHECK_OK(cfs_close(t->fs));
	cfs_bdev_destroy(t->dev);
}

static int first_node(void *ctx, const struct extent *e, int is_node, uint32_t rel)
{
	(void)e;
	if (is_node && !*(uint32_t *)ctx)
		*(uint32_t *)ctx = rel;
	return 0;
}

/* The absolute block of the first node of ino's extent tree. */
static uint64_t ext_node_blk(struct tree *t, cfs_ino_t ino)
{
	struct inode *ip;
	uint32_t rel = 0;

	CHECK_OK(inode_get(t->fs, ino, &ip));
	CHECK_OK(ext_walk(t->fs, ip, first_node, &rel, NULL));
	inode_put(t->fs, ip);
	CHECK(rel != 0);
	return chunk_base(t->fs, CFS_INO_CHUNK(ino)) + rel;
}

/* The node's first extent: length 0. */
static void set_len0(uint8_t *p, void *arg)
{
	uint64_t lblk;
	uint32_t pblk, len;

	(void)arg;
	cfs_extent_decode(cfs_node_recs(p), &lblk, &pblk, &len);
	cfs_extent_encode(cfs_node_recs(p), lblk, pblk, 0);
}

/* An extent node whose first record maps no block (checksum valid). */
static void test_extent_record(void)
{
	struct tree t;
	uint64_t blk;
	char buf[16];

	make_tree(&t);
	blk = ext_node_blk(&t, t.frag);
	damage_block(&t, blk, set_len0, NULL);
	CHECK_ERR(cfs_read(t.fs, t.frag, buf, sizeof(buf), 0), EUCLEAN);
	check_recorded(&t, t.ca, t.frag, blk, "impossible extent");
	check_others(&t, t.ca);
	done(&t);
}

/* The node's last extent: moved to the first block past the end of a file
 * of INT64_MAX bytes (FORMAT.md 12), where no write puts one. */
static void set_past_end(uint8_t *p, void *arg)
{
	uint8_t *last = cfs_node_recs(p) + (size_t)(cfs_btn_nrec(cfs_node_hdr(p)) - 1) * CFS_EXT_SIZE;
	uint64_t lblk;
	uint32_t pblk, len;

	(void)arg;
	cfs_extent_decode(last, &lblk, &pblk, &len);
	cfs_extent_encode(last, (uint64_t)INT64_MAX / BS + 1, pblk, len);
}

/* A record past any file's end cannot be read at all: a truncate, which
 * must free it, finds it impossible and records the error. */
static void test_extent_past_end(void)
{
	struct cfs_setattr sa = { .valid = CFS_SET_SIZE, .size = 0 };
	struct tree t;
	uint64_t blk;
	char buf[16];

	make_tree(&t);
	blk = ext_node_blk(&t, t.frag);
	damage_block(&t, blk, set_past_end, NULL);
	CHECK_EQ(cfs_read(t.fs, t.frag, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	CHECK_ERR(cfs_setattr(t.fs, t.frag, &sa, NULL), EUCLEAN);
	check_recorded(&t, t.ca, t.frag, blk, "impossible extent");
	check_others(&t, t.ca);
	done(&t);
}

static void set_owner(uint8_t *p, void *arg)
{
	cfs_node_set_owner(p, *(cfs_ino_t *)arg);
}

/* An extent node that says it belongs to another inode. */
static void test_extent_owner(void)
{
	struct tree t;
	uint64_t blk;
	char buf[16];

	make_tree(&t);
	blk = ext_node_blk(&t, t.frag);
	damage_block(&t, blk, set_owner, &t.x);
	CHECK_ERR(cfs_read(t.fs, t.frag, buf, sizeof(buf), 0), EUCLEAN);
	check_recorded(&t, t.ca, t.frag, blk, "another inode");
	check_others(&t, t.ca);
	done(&t);
}

static void set_level(uint8_t *p, void *arg)
{
	uint8_t *h = cfs_node_hdr(p);

	(void)arg;
	cfs_btn_set(h, 7, cfs_btn_nrec(h), cfs_btn_used(h));
}

static uint64_t dir_root_blk(struct tree *t, cfs_ino_t dir)
{
	struct inode *dp;
	uint64_t abs;
	uint32_t len;

	CHECK_OK(inode_get(t->fs, dir, &dp));
	CHECK_EQ(file_map(t->fs, dp, 0, &abs, &len), 1);
	inode_put(t->fs, dp);
	return abs;
}

/* A directory's root node claiming level 7 (checksum valid). */
static void test_dir_node(void)
{
	struct tree t;
	cfs_ino_t ino;
	uint64_t blk;

	make_tree(&t);
	blk = dir_root_blk(&t, t.a);
	damage_block(&t, blk, set_level, NULL);
	CHECK_ERR(cfs_lookup(t.fs, t.a, "frag", &ino), EUCLEAN);
	check_recorded(&t, t.ca, t.a, blk, "B+tree");
	check_others(&t, t.ca);
	done(&t);
}

struct retarget {
	const char *name;
	cfs_ino_t ino;
};

static void set_entry_ino(uint8_t *p, void *arg)
{
	struct retarget *r = arg;
	uint8_t *recs = cfs_node_recs(p);
	uint32_t used = cfs_btn_used(cfs_node_hdr(p)), off;
	struct cfs_dirent d;
	size_t len;

	for (off = 0; (len = cfs_dirent_len(recs + off, used - off)) != 0; off += (uint32_t)len) {
		cfs_dirent_decode(recs + off, &d);
		if (d.namelen == strlen(r->name) && !memcmp(d.name, r->name, d.namelen)) {
			cfs_dirent_retarget(recs + off, r->ino, d.stub, d.type);
			return;
		}
	}
	TEST_FAIL("no entry %s", r->name);
}

/* A directory entry naming inode number 0 (checksum valid): recorded
 * against the directory, found by a lookup and by readdir. */
static void test_dir_entry(void)
{
	struct retarget r = { "x", 0 };
	struct tree t;
	cfs_ino_t ino;
	uint64_t blk;

	make_tree(&t);
	blk = dir_root_blk(&t, t.a);
	damage_block(&t, blk, set_entry_ino, &r);
	CHECK_ERR(cfs_lookup(t.fs, t.a, "x", &ino), EUCLEAN);
	check_recorded(&t, t.ca, t.a, blk, "no valid inode");
	check_others(&t, t.ca);
	done(&t);
}

static void set_xattr_owner(uint8_t *p, void *arg)
{
	cfs_xattr_blk_set(p, cfs_xattr_blk_used(p), *(cfs_ino_t *)arg);
}

/* An xattr overflow block owned by another inode (checksum valid). */
static void test_xattr_block(void)
{
	struct tree t;
	struct inode *ip;
	uint64_t blk;
	char buf[700];

	make_tree(&t);
	CHECK_OK(inode_get(t.fs, t.x, &ip));
	CHECK(ip->d.xattr_block != 0);
	blk = chunk_base(t.fs, t.ca) + ip->d.xattr_block;
	inode_put(t.fs, ip);
	damage_block(&t, blk, set_xattr_owner, &t.frag);
	CHECK_ERR(cfs_getxattr(t.fs, t.x, "user.big", buf, sizeof(buf)), EUCLEAN);
	check_recorded(&t, t.ca, t.x, blk, "another inode");
	check_others(&t, t.ca);
	done(&t);
}

static void set_head(uint8_t *p, void *arg)
{
	struct cfs_dinode d;

	cfs_dinode_decode(p, &d);
	d.head = *(cfs_ino_t *)arg;
	cfs_dinode_encode(&d, p);
}

/* The stub backing /a/link (naming /b/f from /a) names another file as its
 * head (checksum valid): the unlink that frees it finds it, and the stub's
 * chunk (/b's) is marked, not the directory's. */
static void test_stub_back_pointer(void)
{
	struct tree t;
	struct inode *dp;
	struct dirent_rec r;

	make_tree(&t);
	CHECK_OK(cfs_link(t.fs, t.fb, t.a, "link"));
	CHECK_OK(inode_get(t.fs, t.a, &dp));
	CHECK_OK(dir_lookup(t.fs, dp, "link", &r));
	inode_put(t.fs, dp);
	CHECK(r.stub != 0);
	CHECK_EQ(CFS_INO_CHUNK(r.stub), t.cb);
	CHECK_OK(cfs_sync(t.fs));
	CHECK(cfs_clean_idle(t.fs, 0) >= 0);
	damage_inode(&t, r.stub, set_head, &t.frag);
	CHECK_ERR(cfs_unlink(t.fs, t.a, "link"), EUCLEAN);
	check_recorded(&t, t.cb, r.stub, 0, "stub");
	/* /a's chunk goes on */
	{
		char buf[16];
		struct cfs_chunk_info ci;

		CHECK_EQ(cfs_read(t.fs, t.frag, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
		CHECK_OK(cfs_get_chunk_info(t.fs, t.ca, &ci));
		CHECK(ci.state != CFS_CHUNK_ERROR);
	}
	done(&t);
}

/* The library records nothing in a repair open: fsck reports instead. */
static void test_repair_open_records_nothing(void)
{
	struct tree t;
	struct cfs_chunk_info ci;
	struct cfs_fs *fs;
	cfs_ino_t ino;
	uint64_t blk;

	uint32_t seed;

	make_tree(&t);
	blk = dir_root_blk(&t, t.a);
	seed = t.fs->seed;
	CHECK_OK(cfs_close(t.fs));
	set_level(disk(&t, blk), NULL);
	cfs_meta_csum_set(disk(&t, blk), BS, seed);
	CHECK_OK(fixture_open(t.dev, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs));
	CHECK_ERR(cfs_lookup(fs, t.a, "frag", &ino), EUCLEAN);
	CHECK_OK(cfs_get_chunk_info(fs, t.ca, &ci));
	CHECK_EQ(ci.errors, 0);
	CHECK(ci.state != CFS_CHUNK_ERROR);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(t.dev);
}

int main(void)
{
	TEST_RUN(test_extent_record);
	TEST_RUN(test_extent_past_end);
	TEST_RUN(test_extent_owner);
	TEST_RUN(test_dir_node);
	TEST_RUN(test_dir_entry);
	TEST_RUN(test_xattr_block);
	TEST_RUN(test_stub_back_pointer);
	TEST_RUN(test_repair_open_records_nothing);
	return TEST_DONE();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of libchunkfs through its public API on real image files:
 * namespace, data (inline, extents, continuations), xattrs, persistence
 * and the consistency check after each scenario. */
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chunkfs.h"
#include "test.h"

static char img[256];

static void report(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "  check: %s\n", msg);
}

static struct cfs_fs *make_fs(uint64_t size, uint32_t bs, uint32_t chunks, uint64_t inodes)
{
	struct cfs_mkfs_opts o = { .size = size, .block_size = bs, .chunks = chunks,
				   .inodes = inodes };
	struct cfs_fs *fs;

	snprintf(img, sizeof(img), "/tmp/cfs_core_%d.img", (int)getpid());
	unlink(img);
	CHECK_OK(cfs_mkfs(img, &o));
	CHECK_OK(cfs_open(img, 0, &fs));
	return fs;
}

static struct cfs_fs *reopen(struct cfs_fs *fs)
{
	CHECK_OK(cfs_close(fs));
	CHECK_OK(cfs_open(img, 0, &fs));
	CHECK_EQ(cfs_check(fs, report, NULL), 0);
	return fs;
}

static void finish(struct cfs_fs *fs)
{
	CHECK_EQ(cfs_check(fs, report, NULL), 0);
	CHECK_OK(cfs_close(fs));
	unlink(img);
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 2654435761u + seed) >> 13);
}

static void test_mkfs_root(void)
{
	struct cfs_fs *fs = make_fs(64 << 20, 4096, 4, 0);
	struct cfs_stat st;
	struct cfs_info in;
	cfs_ino_t ino;
	uint32_t c;

	CHECK_OK(cfs_getattr(fs, CFS_ROOT_INO, &st));
	CHECK(S_ISDIR(st.mode));
	CHECK_EQ(st.nlink, 3);
	CHECK_OK(cfs_lookup(fs, CFS_ROOT_INO, "lost+found", &ino));
	CHECK_OK(cfs_get_info(fs, &in));
	CHECK_EQ(in.chunks, 4);
	CHECK_EQ(in.block_size, 4096);
	for (c = 0; c < 4; c++) {
		struct cfs_chunk_info ci;

		CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
		CHECK(ci.free_blocks > 0);
	}
	finish(fs);
}

static void test_inline_and_blocks(void)
{
	struct cfs_fs *fs = make_fs(64 << 20, 4096, 2, 0);
	static uint8_t big[300000], back[300000];
	struct cfs_stat st;
	cfs_ino_t a, b;

	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "small", S_IFREG | 0644, 0, 1, 2, &a));
	CHECK_EQ(cfs_write(fs, a, "hello", 5, 0), 5);
	CHECK_OK(cfs_getattr(fs, a, &st));
	CHECK_EQ(st.size, 5);
	CHECK_EQ(st.blocks, 0);
	CHECK_EQ(st.uid, 1);
	CHECK_EQ(cfs_read(fs, a, back, 100, 0), 5);
	CHECK(!memcmp(back, "hello", 5));
	fill(big, sizeof(big), 7);
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "big", S_IFREG | 0644, 0, 0, 0, &b));
	CHECK_EQ(cfs_write(fs, b, big, sizeof(big), 0), sizeof(big));
	/* grow the inline file past the inline limit */
	CHECK_EQ(cfs_write(fs, a, big, 5000, 3), 5000);
	fs = reopen(fs);
	CHECK_EQ(cfs_read(fs, b, back, sizeof(back), 0), sizeof(big));
	CHECK(!memcmp(back, big, sizeof(big)));
	CHECK_EQ(cfs_read(fs, a, back, 10000, 0), 5003);
	CHECK(!memcmp(back, "hel", 3) && !memcmp(back + 3, big, 5000));
	/* sparse write far away, then truncate down */
	CHECK_EQ(cfs_write(fs, b, "x", 1, 10 << 20), 1);
	CHECK_EQ(cfs_read(fs, b, back, 4096, 5 << 20), 4096);
	CHECK(back[0] == 0 && back[4095] == 0);
	struct cfs_setattr sa = { .valid = CFS_SET_SIZE, .size = 1000 };
	CHECK_OK(cfs_setattr(fs, b, &sa, &st));
	CHECK_EQ(st.size, 1000);
	sa.size = 8000;
	CHECK_OK(cfs_setattr(fs, b, &sa, &st));
	CHECK_EQ(cfs_read(fs, b, back, 8000, 0), 8000);
	CHECK(!memcmp(back, big, 1000));
	for (size_t i = 1000; i < 8000; i++)
		if (back[i])
			TEST_FAIL("byte %zu not zero after truncate/extend", i);
	finish(fs);
}

static void test_dirs_many(void)
{
	struct cfs_fs *fs = make_fs(64 << 20, 1024, 2, 0);
	char name[64];
	cfs_ino_t d, f;
	int i, n = 3000;

	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &d));
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "file-%05d-with-a-longer-name", i);
		CHECK_OK(cfs_mknod(fs, d, name, S_IFREG | 0600, 0, 0, 0, &f));
	}
	CHECK_ERR(cfs_mknod(fs, d, "file-00042-with-a-longer-name", S_IFREG, 0, 0, 0, &f), EEXIST);
	fs = reopen(fs);
	for (i = 0; i < n; i += 7) {
		snprintf(name, sizeof(name), "file-%05d-with-a-longer-name", i);
		CHECK_OK(cfs_lookup(fs, d, name, &f));
	}
	CHECK_ERR(cfs_rmdir(fs, CFS_ROOT_INO, "d"), ENOTEMPTY);
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "file-%05d-with-a-longer-name", i);
		CHECK_OK(cfs_unlink(fs, d, name));
	}
	CHECK_OK(cfs_rmdir(fs, CFS_ROOT_INO, "d"));
	CHECK_ERR(cfs_lookup(fs, CFS_ROOT_INO, "d", &f), ENOENT);
	finish(fs);
}

static int count_cb(void *ctx, const char *name, size_t len, cfs_ino_t ino, uint32_t t,
		    uint64_t next)
{
	(void)name; (void)len; (void)ino; (void)t; (void)next;
	(*(int *)ctx)++;
	return 0;
}

static void test_continuation(void)
{
	/* 8 chunks of ~1 MiB: a 3 MiB file must continue in other chunks */
	struct cfs_fs *fs = make_fs(8 << 20, 1024, 8, 0);
	static uint8_t data[3 << 20], back[3 << 20];
	uint32_t chunks[16];
	cfs_ino_t f;
	int n;

	fill(data, sizeof(data), 3);
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "huge", S_IFREG | 0644, 0, 0, 0, &f));
	CHECK_EQ(cfs_write(fs, f, data, sizeof(data), 0), sizeof(data));
	n = cfs_file_chunks(fs, f, chunks, 16);
	CHECK(n >= 3);
	fs = reopen(fs);
	CHECK_EQ(cfs_read(fs, f, back, sizeof(back), 0), sizeof(data));
	CHECK(!memcmp(back, data, sizeof(data)));
	struct cfs_setattr sa = { .valid = CFS_SET_SIZE, .size = 100 };
	CHECK_OK(cfs_setattr(fs, f, &sa, NULL));
	CHECK_EQ(cfs_file_chunks(fs, f, chunks, 16), 1);
	CHECK_OK(cfs_unlink(fs, CFS_ROOT_INO, "huge"));
	finish(fs);
}

static void test_cross_chunk(void)
{
	struct cfs_fs *fs = make_fs(64 << 20, 4096, 8, 0);
	cfs_ino_t d1, d2, f, g;
	uint64_t xrefs = 0;
	uint32_t c;
	int cnt = 0;

	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "a", 0755, 0, 0, &d1));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "b", 0755, 0, 0, &d2));
	CHECK(CFS_INO_CHUNK(d1) != CFS_INO_CHUNK(d2));
	CHECK_OK(cfs_mknod(fs, d1, "f", S_IFREG | 0644, 0, 0, 0, &f));
	CHECK_EQ(CFS_INO_CHUNK(f), CFS_INO_CHUNK(d1));
	CHECK_OK(cfs_link(fs, f, d2, "hard"));
	CHECK_OK(cfs_lookup(fs, d2, "hard", &g));
	CHECK_EQ(g, f);
	for (c = 0; c < 8; c++) {
		struct cfs_chunk_info ci;

		CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
		xrefs += ci.xrefs;
	}
	CHECK(xrefs >= 3);   /* a, b from root, hard from b */
	CHECK_OK(cfs_rename(fs, d1, "f", d2, "moved", 0));
	CHECK_ERR(cfs_rename(fs, CFS_ROOT_INO, "a", d1, "x", 0), EINVAL);
	CHECK_OK(cfs_rename(fs, CFS_ROOT_INO, "a", d2, "a-moved", 0));
	fs = reopen(fs);
	CHECK_OK(cfs_readdir(fs, d2, 0, count_cb, &cnt));
	CHECK_EQ(cnt, 5);
	CHECK_OK(cfs_unlink(fs, d2, "hard"));
	CHECK_OK(cfs_unlink(fs, d2, "moved"));
	finish(fs);
}

static void test_xattr(void)
{
	struct cfs_fs *fs = make_fs(16 << 20, 1024, 1, 0);
	char buf[2048], val[700];
	cfs_ino_t f;
	int i;

	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "x", S_IFREG | 0644, 0, 0, 0, &f));
	CHECK_OK(cfs_setxattr(fs, f, "user.a", "1", 1, 0));
	CHECK_ERR(cfs_setxattr(fs, f, "user.a", "2", 1, CFS_XATTR_CREATE), EEXIST);
	CHECK_ERR(cfs_setxattr(fs, f, "user.b", "2", 1, CFS_XATTR_REPLACE), ENODATA);
	CHECK_ERR(cfs_getxattr(fs, f, "user.none", buf, sizeof(buf)), ENODATA);
	CHECK_ERR(cfs_setxattr(fs, f, "bogus.a", "1", 1, 0), EOPNOTSUPP);
	memset(val, 'v', sizeof(val));
	for (i = 0; i < 1; i++)
		CHECK_OK(cfs_setxattr(fs, f, "trusted.big", val, sizeof(val), 0));
	CHECK_EQ(cfs_getxattr(fs, f, "trusted.big", NULL, 0), sizeof(val));
	CHECK_ERR(cfs_getxattr(fs, f, "trusted.big", buf, 10), ERANGE);
	fs = reopen(fs);
	CHECK_EQ(cfs_getxattr(fs, f, "trusted.big", buf, sizeof(buf)), sizeof(val));
	CHECK(!memcmp(buf, val, sizeof(val)));
	CHECK_EQ(cfs_listxattr(fs, f, buf, sizeof(buf)), strlen("user.a") + 1 + strlen("trusted.big") + 1);
	CHECK_OK(cfs_removexattr(fs, f, "trusted.big"));
	CHECK_ERR(cfs_removexattr(fs, f, "trusted.big"), ENODATA);
	CHECK_EQ(cfs_getxattr(fs, f, "user.a", buf, sizeof(buf)), 1);
	finish(fs);
}

static void test_symlink_rename(void)
{
	struct cfs_fs *fs = make_fs(16 << 20, 4096, 2, 0);
	char buf[5000], longt[3000];
	cfs_ino_t s, l, a, b, r;

	CHECK_OK(cfs_symlink(fs, CFS_ROOT_INO, "s", "target/path", 0, 0, &s));
	CHECK_EQ(cfs_readlink(fs, s, buf, sizeof(buf)), 11);
	memset(longt, 'p', sizeof(longt) - 1);
	longt[sizeof(longt) - 1] = 0;
	CHECK_OK(cfs_symlink(fs, CFS_ROOT_INO, "l", longt, 0, 0, &l));
	CHECK_EQ(cfs_readlink(fs, l, buf, sizeof(buf)), sizeof(longt) - 1);
	CHECK(!memcmp(buf, longt, sizeof(longt) - 1));
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "a", S_IFREG | 0644, 0, 0, 0, &a));
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "b", S_IFREG | 0644, 0, 0, 0, &b));
	CHECK_ERR(cfs_rename(fs, CFS_ROOT_INO, "a", CFS_ROOT_INO, "b", CFS_RENAME_NOREPLACE), EEXIST);
	CHECK_OK(cfs_rename(fs, CFS_ROOT_INO, "a", CFS_ROOT_INO, "b", CFS_RENAME_EXCHANGE));
	CHECK_OK(cfs_lookup(fs, CFS_ROOT_INO, "a", &r));
	CHECK_EQ(r, b);
	CHECK_OK(cfs_rename(fs, CFS_ROOT_INO, "a", CFS_ROOT_INO, "b", 0));
	CHECK_ERR(cfs_lookup(fs, CFS_ROOT_INO, "a", &r), ENOENT);
	CHECK_OK(cfs_path_resolve(fs, "/s", 0, &r));
	CHECK_EQ(r, s);
	finish(fs);
}

static void test_enospc_and_reuse(void)
{
	struct cfs_fs *fs = make_fs(4 << 20, 1024, 4, 0);
	static uint8_t data[64 << 10];
	struct cfs_statfs s0, s1;
	char name[32];
	cfs_ino_t f, d;
	int i, full = 0;

	/* in a subdirectory, so that removing it returns the directory's
	 * own blocks too and every block must come back */
	CHECK_OK(cfs_statfs(fs, &s0));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &d));
	fill(data, sizeof(data), 1);
	for (i = 0; i < 200 && !full; i++) {
		ssize_t r;

		snprintf(name, sizeof(name), "f%d", i);
		CHECK_OK(cfs_mknod(fs, d, name, S_IFREG | 0644, 0, 0, 0, &f));
		r = cfs_write(fs, f, data, sizeof(data), 0);
		if (r == -ENOSPC || (r >= 0 && r < (ssize_t)sizeof(data)))
			full = 1;
		else
			CHECK_EQ(r, sizeof(data));
	}
	CHECK(full);
	CHECK_EQ(cfs_check(fs, report, NULL), 0);
	while (i-- > 0) {
		snprintf(name, sizeof(name), "f%d", i);
		CHECK_OK(cfs_unlink(fs, d, name));
	}
	CHECK_OK(cfs_rmdir(fs, CFS_ROOT_INO, "d"));
	CHECK_OK(cfs_statfs(fs, &s1));
	CHECK_EQ(s1.bfree, s0.bfree);
	CHECK_EQ(s1.ffree, s0.ffree);
	finish(fs);
}

static void test_lock_and_dirty_refusal(void)
{
	struct cfs_fs *fs = make_fs(64 << 20, 4096, 8, 0), *fs2;
	struct cfs_chunk_info ci;
	cfs_ino_t d;
	pid_t pid;
	int st, dirty = 0;
	uint32_t c;

	CHECK_ERR(cfs_open(img, 0, &fs2), EBUSY);
	CHECK(strstr(cfs_last_error(), "in use"));
	CHECK_OK(cfs_open(img, CFS_OPEN_RDONLY, &fs2));
	CHECK_OK(cfs_close(fs2));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "top", 0755, 0, 0, &d));
	CHECK_OK(cfs_close(fs));
	/* a writer that dies without closing: a crash */
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		cfs_ino_t f;

		if (cfs_open(img, 0, &fs) < 0 ||
		    cfs_mknod(fs, d, "f", S_IFREG | 0644, 0, 0, 0, &f) < 0 ||
		    cfs_write(fs, f, "data", 4, 0) != 4 || cfs_sync(fs) < 0)
			_exit(1);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_ERR(cfs_open(img, 0, &fs), EUCLEAN);
	CHECK(strstr(cfs_last_error(), "run chunkfs fsck"));
	CHECK_OK(cfs_open(img, CFS_OPEN_RDONLY, &fs));
	for (c = 0; c < 8; c++) {
		CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
		if (ci.state == CFS_CHUNK_DIRTY) {
			dirty++;
			CHECK_EQ(c, CFS_INO_CHUNK(d));   /* only the chunk written */
		}
	}
	CHECK_EQ(dirty, 1);
	CHECK_EQ(cfs_check(fs, report, NULL), 0);
	CHECK_OK(cfs_close(fs));
	unlink(img);
}

/* An unlinked file or removed directory still held open dies at
 * cfs_close like at its last cfs_inode_put: blocks, xattrs, the chunk's
 * directory count and the inode itself are released, and both checkers
 * find the image consistent (the close path used to leave ndirs one too
 * high: fsck -f -n said "header counts ... dirs 0/0/3, should be 0/0/2"). */
static void test_open_orphans_at_close(void)
{
	struct cfs_fs *fs = make_fs(64 << 20, 4096, 4, 0);
	struct cfs_fsck_opts fo = { .mode = CFS_FSCK_NO, .force = 1, .threads = 1,
				    .report = report };
	struct cfs_fsck_result res;
	static uint8_t data[40000];
	struct cfs_statfs s0, s1;
	cfs_ino_t d, f;

	CHECK_OK(cfs_statfs(fs, &s0));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &d));
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &f));
	fill(data, sizeof(data), 7);
	CHECK_EQ(cfs_write(fs, f, data, sizeof(data), 0), sizeof(data));
	CHECK_OK(cfs_setxattr(fs, f, "user.big", data, 3000, 0));
	CHECK_OK(cfs_inode_get(fs, d));
	CHECK_OK(cfs_inode_get(fs, f));
	CHECK_OK(cfs_rmdir(fs, CFS_ROOT_INO, "d"));
	CHECK_OK(cfs_unlink(fs, CFS_ROOT_INO, "f"));
	fs = reopen(fs);
	CHECK_OK(cfs_statfs(fs, &s1));
	CHECK_EQ(s1.bfree, s0.bfree);
	CHECK_EQ(s1.ffree, s0.ffree);
	CHECK_OK(cfs_close(fs));
	CHECK_OK(cfs_open(img, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs));
	CHECK_OK(cfs_fsck(fs, &fo, &res));
	CHECK_EQ(res.problems, 0);
	finish(fs);
}

int main(void)
{
	TEST_RUN(test_mkfs_root);
	TEST_RUN(test_inline_and_blocks);
	TEST_RUN(test_dirs_many);
	TEST_RUN(test_continuation);
	TEST_RUN(test_cross_chunk);
	TEST_RUN(test_xattr);
	TEST_RUN(test_symlink_rename);
	TEST_RUN(test_enospc_and_reuse);
	TEST_RUN(test_lock_and_dirty_refusal);
	TEST_RUN(test_open_orphans_at_close);
	return TEST_DONE();
}

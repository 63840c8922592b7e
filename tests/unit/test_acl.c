/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of POSIX ACLs (src/acl.c) through the public API: the values
 * the kernel's posix_acl_valid refuses are -EINVAL and change nothing; an
 * access ACL sets the mode and one the mode says all of is not stored; a
 * default ACL only on directories; inheritance at create masked by the
 * create mode, the umask only where no default ACL is; chmod rewriting
 * the owner, mask and other entries; setgid cleared on request;
 * CFS_OPEN_NOACL; everything kept across a close and a clean check.
 * The expected results are ext4's (fs/posix_acl.c). */
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

#define SIZE (16u << 20)
#define BS 4096u
#define ACC "system.posix_acl_access"
#define DEF "system.posix_acl_default"
#define U(p)     { CFS_ACL_USER_OBJ, p, CFS_ACL_UNDEFINED }
#define NU(i, p) { CFS_ACL_USER, p, i }
#define G(p)     { CFS_ACL_GROUP_OBJ, p, CFS_ACL_UNDEFINED }
#define NG(i, p) { CFS_ACL_GROUP, p, i }
#define M(p)     { CFS_ACL_MASK, p, CFS_ACL_UNDEFINED }
#define O(p)     { CFS_ACL_OTHER, p, CFS_ACL_UNDEFINED }
#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

struct blob {
	uint8_t v[256];
	size_t n;
};

static struct blob enc(const struct cfs_acl_ent *e, int n)
{
	struct blob b;

	b.n = cfs_acl_size(n);
	cfs_acl_encode(e, n, b.v);
	return b;
}

static struct cfs_fs *make_fs(struct cfs_bdev **dev)
{
	struct cfs_mkfs_opts o = { .size = SIZE, .block_size = BS, .chunks = 2 };
	struct cfs_fs *fs;

	CHECK_OK(fixture_mkfs(SIZE, &o, dev, &fs));
	return fs;
}

static uint32_t mode_of(struct cfs_fs *fs, cfs_ino_t ino)
{
	struct cfs_stat st;

	CHECK_OK(cfs_getattr(fs, ino, &st));
	return st.mode & 07777;
}

/* The stored ACL of ino under name equals want (n entries). */
static void check_acl(struct cfs_fs *fs, cfs_ino_t ino, const char *name,
		      const struct cfs_acl_ent *want, int n)
{
	struct blob w = enc(want, n);
	uint8_t got[256];
	ssize_t len = cfs_getxattr(fs, ino, name, got, sizeof(got));

	CHECK_EQ(len, (ssize_t)w.n);
	CHECK(memcmp(got, w.v, w.n) == 0);
}

static void test_validation(void)
{
	static const struct cfs_acl_ent minimal[] = { U(6), G(4), O(4) };
	static const struct cfs_acl_ent full[] = { U(7), NU(1000, 6), NU(1001, 4), G(5),
						   NG(100, 7), M(7), O(0) };
	static const struct cfs_acl_ent no_other[] = { U(6), G(4) };
	static const struct cfs_acl_ent order[] = { G(4), U(6), O(4) };
	static const struct cfs_acl_ent no_mask[] = { U(6), NU(1000, 6), G(4), O(4) };
	static const struct cfs_acl_ent user_late[] = { U(6), G(4), NU(1000, 6), M(6), O(4) };
	static const struct cfs_acl_ent bad_perm[] = { U(8), G(4), O(4) };
	static const struct cfs_acl_ent bad_tag[] = { U(6), G(4), { 0x40, 4, 0 }, O(4) };
	static const struct cfs_acl_ent no_id[] = { U(6), NU(CFS_ACL_UNDEFINED, 6), G(4),
						    M(6), O(4) };
	static const struct cfs_acl_ent two_owners[] = { U(6), U(6), G(4), O(4) };
	static const struct cfs_acl_ent after_other[] = { U(6), G(4), O(4), M(4) };
	static const uint8_t version3[] = { 3, 0, 0, 0 };
	struct blob b = enc(minimal, N(minimal));
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(&dev);
	cfs_ino_t f;

	CHECK_EQ(acl_valid(b.v, b.n), 3);
	b = enc(full, N(full));
	CHECK_EQ(acl_valid(b.v, b.n), 7);
	CHECK_EQ(acl_valid(b.v, 4), 0);             /* header alone: no entries */
	CHECK_ERR(acl_valid(b.v, 3), EINVAL);
	CHECK_ERR(acl_valid(b.v, b.n - 1), EINVAL);
	CHECK_ERR(acl_valid(version3, sizeof(version3)), EINVAL);
#define BAD(a) do { b = enc(a, N(a)); CHECK_ERR(acl_valid(b.v, b.n), EINVAL); } while (0)
	BAD(no_other);
	BAD(order);
	BAD(no_mask);
	BAD(user_late);
	BAD(bad_perm);
	BAD(bad_tag);
	BAD(no_id);
	BAD(two_owners);
	BAD(after_other);
#undef BAD

	/* refused values change neither the mode nor what is stored */
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "f", S_IFREG | 0640, 0, 0, 0, &f));
	b = enc(full, N(full));
	CHECK_OK(cfs_setxattr(fs, f, ACC, b.v, b.n, 0));
	CHECK_EQ(mode_of(fs, f), 0770u);
	b = enc(no_mask, N(no_mask));
	CHECK_ERR(cfs_setxattr(fs, f, ACC, b.v, b.n, 0), EINVAL);
	CHECK_ERR(cfs_setxattr(fs, f, ACC, version3, sizeof(version3), 0), EINVAL);
	CHECK_EQ(mode_of(fs, f), 0770u);
	check_acl(fs, f, ACC, full, N(full));
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

static void test_access_sets_mode(void)
{
	static const struct cfs_acl_ent named[] = { U(7), NU(1000, 6), G(5), M(6), O(0) };
	static const struct cfs_acl_ent named_id[] = { { CFS_ACL_USER_OBJ, 7, 42 },
						       NU(1000, 6), G(5), M(6), O(0) };
	static const struct cfs_acl_ent plain[] = { U(6), G(4), O(1) };
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(&dev);
	struct blob b = enc(named_id, N(named_id));
	cfs_ino_t f;

	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "f", S_IFREG | 04644, 0, 0, 0, &f));
	CHECK_ERR(cfs_getxattr(fs, f, ACC, NULL, 0), ENODATA);
	/* the ids of entries without one are stored undefined */
	CHECK_OK(cfs_setxattr(fs, f, ACC, b.v, b.n, CFS_XATTR_CREATE));
	CHECK_EQ(mode_of(fs, f), 04760u);           /* the mask is the group class */
	check_acl(fs, f, ACC, named, N(named));
	/* equivalent to mode bits: the mode changes, nothing is stored */
	b = enc(plain, N(plain));
	CHECK_OK(cfs_setxattr(fs, f, ACC, b.v, b.n, 0));
	CHECK_EQ(mode_of(fs, f), 04641u);
	CHECK_ERR(cfs_getxattr(fs, f, ACC, NULL, 0), ENODATA);
	/* removing what is not stored succeeds, as on ext4; an empty value
	 * removes, as setxattr(2) with no value */
	CHECK_OK(cfs_removexattr(fs, f, ACC));
	b = enc(named, N(named));
	CHECK_OK(cfs_setxattr(fs, f, ACC, b.v, b.n, 0));
	CHECK_OK(cfs_setxattr(fs, f, ACC, b.v, 4, 0));
	CHECK_ERR(cfs_getxattr(fs, f, ACC, NULL, 0), ENODATA);
	CHECK_EQ(mode_of(fs, f), 04760u);           /* removal keeps the mode */
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

static void test_default_only_on_dirs(void)
{
	static const struct cfs_acl_ent def[] = { U(7), NU(1000, 7), G(5), M(7), O(5) };
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(&dev);
	struct blob b = enc(def, N(def));
	cfs_ino_t f, d;

	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &f));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &d));
	CHECK_ERR(cfs_setxattr(fs, f, DEF, b.v, b.n, 0), EACCES);
	CHECK_OK(cfs_removexattr(fs, f, DEF));
	CHECK_OK(cfs_setxattr(fs, d, DEF, b.v, b.n, 0));
	CHECK_EQ(mode_of(fs, d), 0755u);            /* a default ACL leaves the mode */
	check_acl(fs, d, DEF, def, N(def));
	CHECK_ERR(cfs_getxattr(fs, d, ACC, NULL, 0), ENODATA);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

static void test_inherit(void)
{
	static const struct cfs_acl_ent def[] = { U(7), NU(1000, 7), G(5), M(7), O(5) };
	static const struct cfs_acl_ent file_acl[] = { U(6), NU(1000, 7), G(5), M(6), O(4) };
	static const struct cfs_acl_ent plain_def[] = { U(7), G(5), O(0) };
	static const struct cfs_acl_ent e_acl[] = { U(6), NU(1000, 7), G(5), M(0), O(0) };
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(&dev);
	struct blob b = enc(def, N(def));
	cfs_ino_t d, f, sub, sl, e, p, pf, n;

	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &d));
	CHECK_OK(cfs_setxattr(fs, d, DEF, b.v, b.n, 0));
	/* umask 022 is not applied under a default ACL: the mask keeps rw */
	CHECK_OK(cfs_mknod_umask(fs, d, "f", S_IFREG | 0666, 022, 0, 0, 0, &f));
	CHECK_EQ(mode_of(fs, f), 0664u);
	check_acl(fs, f, ACC, file_acl, N(file_acl));
	CHECK_ERR(cfs_getxattr(fs, f, DEF, NULL, 0), ENODATA);
	/* a directory takes the default ACL as its own default too */
	CHECK_OK(cfs_mknod_umask(fs, d, "sub", S_IFDIR | 0777, 077, 0, 0, 0, &sub));
	CHECK_EQ(mode_of(fs, sub), 0775u);
	check_acl(fs, sub, ACC, def, N(def));
	check_acl(fs, sub, DEF, def, N(def));
	/* and passes it on */
	CHECK_OK(cfs_mknod(fs, sub, "e", S_IFREG | 0600, 0, 0, 0, &e));
	CHECK_EQ(mode_of(fs, e), 0600u);
	check_acl(fs, e, ACC, e_acl, N(e_acl));
	/* symlinks take none */
	CHECK_OK(cfs_symlink(fs, d, "sl", "f", 0, 0, &sl));
	CHECK_ERR(cfs_getxattr(fs, sl, ACC, NULL, 0), ENODATA);
	CHECK_EQ(mode_of(fs, sl), 0777u);
	/* no default ACL: the umask applies */
	CHECK_OK(cfs_mknod_umask(fs, CFS_ROOT_INO, "n", S_IFREG | 0666, 022, 0, 0, 0, &n));
	CHECK_EQ(mode_of(fs, n), 0644u);
	CHECK_ERR(cfs_getxattr(fs, n, ACC, NULL, 0), ENODATA);
	/* a default ACL the mode says all of: the mode masked, nothing stored */
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "p", 0755, 0, 0, &p));
	b = enc(plain_def, N(plain_def));
	CHECK_OK(cfs_setxattr(fs, p, DEF, b.v, b.n, 0));
	CHECK_OK(cfs_mknod_umask(fs, p, "pf", S_IFREG | 0666, 0, 0, 0, 0, &pf));
	CHECK_EQ(mode_of(fs, pf), 0640u);
	CHECK_ERR(cfs_getxattr(fs, pf, ACC, NULL, 0), ENODATA);
	/* cfs_mknod keeps refusing directories */
	CHECK_ERR(cfs_mknod(fs, d, "x", S_IFDIR | 0755, 0, 0, 0, &n), EPERM);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

static void test_chmod(void)
{
	static const struct cfs_acl_ent named[] = { U(7), NU(1000, 6), G(5), M(6), O(0) };
	static const struct cfs_acl_ent after[] = { U(6), NU(1000, 6), G(5), M(0), O(4) };
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(&dev);
	struct blob b = enc(named, N(named));
	struct cfs_setattr a = { .valid = CFS_SET_MODE, .mode = 0604 };
	struct cfs_stat st;
	cfs_ino_t f;

	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, 0, &f));
	CHECK_OK(cfs_setxattr(fs, f, ACC, b.v, b.n, 0));
	CHECK_OK(cfs_setattr(fs, f, &a, &st));
	CHECK_EQ(st.mode & 07777, 0604u);
	check_acl(fs, f, ACC, after, N(after));
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

static void test_kill_sgid(void)
{
	static const struct cfs_acl_ent named[] = { U(7), NU(1000, 6), G(5), M(7), O(0) };
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(&dev);
	struct blob b = enc(named, N(named));
	cfs_ino_t f, g;

	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "f", S_IFREG | 02755, 0, 0, 0, &f));
	CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, "g", S_IFREG | 02755, 0, 0, 0, &g));
	CHECK_OK(cfs_setxattr(fs, f, ACC, b.v, b.n, CFS_XATTR_ACL_KILL_SGID));
	CHECK_OK(cfs_setxattr(fs, g, ACC, b.v, b.n, 0));
	CHECK_EQ(mode_of(fs, f), 0770u);
	CHECK_EQ(mode_of(fs, g), 02770u);
	/* the flag means nothing to other attributes */
	CHECK_OK(cfs_setxattr(fs, g, "user.x", "v", 1, CFS_XATTR_ACL_KILL_SGID));
	CHECK_EQ(mode_of(fs, g), 02770u);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

/* Kept across a close, the image clean, and off with CFS_OPEN_NOACL. */
static void test_persist_and_noacl(void)
{
	static const struct cfs_acl_ent def[] = { U(7), G(5), NG(100, 7), M(7), O(5) };
	struct cfs_bdev *dev;
	struct cfs_fs *fs = make_fs(&dev);
	struct blob b = enc(def, N(def));
	cfs_ino_t d, f, n;

	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &d));
	CHECK_OK(cfs_setxattr(fs, d, DEF, b.v, b.n, 0));
	CHECK_OK(cfs_mknod(fs, d, "f", S_IFREG | 0640, 0, 0, 0, &f));
	CHECK_OK(cfs_close(fs));
	CHECK_OK(fixture_open(dev, 0, &fs));
	CHECK_EQ(cfs_check(fs, NULL, NULL), 0);
	check_acl(fs, d, DEF, def, N(def));
	CHECK_EQ(mode_of(fs, f), 0640u);
	CHECK_OK(cfs_close(fs));

	CHECK_OK(fixture_open(dev, CFS_OPEN_NOACL, &fs));
	CHECK_ERR(cfs_getxattr(fs, d, DEF, NULL, 0), EOPNOTSUPP);
	CHECK_ERR(cfs_setxattr(fs, f, ACC, b.v, b.n, 0), EOPNOTSUPP);
	CHECK_ERR(cfs_removexattr(fs, d, DEF), EOPNOTSUPP);
	CHECK_OK(cfs_mknod_umask(fs, d, "n", S_IFREG | 0666, 022, 0, 0, 0, &n));
	CHECK_EQ(mode_of(fs, n), 0644u);            /* umask, no inheritance */
	CHECK_OK(cfs_close(fs));
	CHECK_OK(fixture_open(dev, 0, &fs));
	CHECK_ERR(cfs_getxattr(fs, n, ACC, NULL, 0), ENODATA);
	CHECK_EQ(cfs_check(fs, NULL, NULL), 0);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

int main(void)
{
	TEST_RUN(test_validation);
	TEST_RUN(test_access_sets_mode);
	TEST_RUN(test_default_only_on_dirs);
	TEST_RUN(test_inherit);
	TEST_RUN(test_chmod);
	TEST_RUN(test_kill_sgid);
	TEST_RUN(test_persist_and_noacl);
	return TEST_DONE();
}

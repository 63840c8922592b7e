/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The structs that grow (include/chunkfs.h, docs/API.md): struct_size 0
 * is the first layout; a larger struct from a newer header is taken when
 * what this library does not know is zero and refused (-E2BIG) when not;
 * a smaller one than the first layout is refused; a result is written no
 * further than the caller's struct_size.  Through the public API only,
 * on image files. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chunkfs.h"
#include "test.h"

#define IMG "api_structs.img"
#define PAD 32

/* A caller built against a newer header: the struct, then PAD bytes of
 * fields this library has never heard of. */
struct newer_mkfs {
	struct cfs_mkfs_opts o;
	unsigned char later[PAD];
};

static void test_mkfs_sizes(void)
{
	struct cfs_mkfs_opts o = { .size = 16 << 20 };
	struct newer_mkfs n;
	struct cfs_fs *fs;

	unlink(IMG);
	CHECK_OK(cfs_mkfs(IMG, &o));            /* struct_size 0: first layout */
	o.struct_size = sizeof(o);
	CHECK_OK(cfs_mkfs(IMG, &o));
	memset(&n, 0, sizeof(n));
	n.o = o;
	n.o.struct_size = sizeof(n);
	CHECK_OK(cfs_mkfs(IMG, &n.o));          /* newer, nothing new asked */
	n.later[PAD - 1] = 1;
	CHECK_ERR(cfs_mkfs(IMG, &n.o), E2BIG);  /* asks for what we lack */
	o.struct_size = 4;
	CHECK_ERR(cfs_mkfs(IMG, &o), EINVAL);
	/* the image the accepted calls made is sound */
	CHECK_OK(cfs_open(IMG, 0, &fs));
	CHECK_OK(cfs_close(fs));
	unlink(IMG);
}

static void test_fsck_result_bounded(void)
{
	struct cfs_mkfs_opts mo = { .struct_size = sizeof(mo), .size = 16 << 20 };
	struct cfs_fsck_opts o = { .struct_size = sizeof(o), .mode = CFS_FSCK_NO,
				   .force = 1 };
	unsigned char buf[sizeof(struct cfs_fsck_result) + PAD];
	struct cfs_fsck_result r;
	struct cfs_fs *fs;
	size_t i;

	unlink(IMG);
	CHECK_OK(cfs_mkfs(IMG, &mo));
	CHECK_OK(cfs_open(IMG, CFS_OPEN_RDONLY, &fs));
	/* a caller's result struct followed by bytes it owns */
	memset(buf, 0xAA, sizeof(buf));
	memset(&r, 0, sizeof(r));
	r.struct_size = sizeof(r);
	memcpy(buf, &r, sizeof(r));
	CHECK_EQ(cfs_fsck(fs, &o, (struct cfs_fsck_result *)(void *)buf), 0);
	for (i = sizeof(r); i < sizeof(buf); i++)
		CHECK_EQ(buf[i], 0xAA);
	memcpy(&r, buf, sizeof(r));
	CHECK_EQ(r.struct_size, sizeof(r));     /* kept */
	CHECK(r.chunks > 0);
	CHECK_EQ(r.checked, r.chunks);
	CHECK_EQ(r.problems, 0);
	/* struct_size 0 in both, as a caller of the first version leaves it */
	memset(&r, 0, sizeof(r));
	o.struct_size = 0;
	CHECK_EQ(cfs_fsck(fs, &o, &r), 0);
	CHECK_EQ(r.checked, r.chunks);
	CHECK_EQ(r.struct_size, 0);
	/* options from a newer header that ask for more: refused */
	{
		struct { struct cfs_fsck_opts o; unsigned char later[PAD]; } n;

		memset(&n, 0, sizeof(n));
		n.o = o;
		n.o.struct_size = sizeof(n);
		CHECK_EQ(cfs_fsck(fs, &n.o, &r), 0);
		n.later[0] = 1;
		CHECK_ERR(cfs_fsck(fs, &n.o, &r), E2BIG);
		CHECK_ERR(cfs_scrub(fs, 0, &n.o, &r), E2BIG);
	}
	CHECK_OK(cfs_close(fs));
	unlink(IMG);
}

static void test_open_sizes(void)
{
	struct cfs_mkfs_opts mo = { .struct_size = sizeof(mo), .size = 16 << 20 };
	struct cfs_open_opts o = { .flags = CFS_OPEN_RDONLY };  /* struct_size 0 */
	struct { struct cfs_open_opts o; unsigned char later[PAD]; } n;
	struct cfs_fs *fs;
	cfs_ino_t ino;

	unlink(IMG);
	CHECK_OK(cfs_mkfs(IMG, &mo));
	CHECK_OK(cfs_open_ext(IMG, &o, &fs));
	/* the flags are taken: read-only */
	CHECK_ERR(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &ino), EROFS);
	CHECK_OK(cfs_close(fs));
	CHECK_OK(cfs_open_ext(IMG, NULL, &fs));  /* as cfs_open(IMG, 0, ...) */
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &ino));
	CHECK_OK(cfs_close(fs));
	memset(&n, 0, sizeof(n));
	n.o = o;
	n.o.struct_size = sizeof(n);
	CHECK_OK(cfs_open_ext(IMG, &n.o, &fs)); /* newer, nothing new asked */
	CHECK_OK(cfs_close(fs));
	n.later[3] = 1;
	CHECK_ERR(cfs_open_ext(IMG, &n.o, &fs), E2BIG);
	CHECK(strstr(cfs_last_error(), "open options") != NULL);
	o.struct_size = 4;
	CHECK_ERR(cfs_open_ext(IMG, &o, &fs), EINVAL);
	unlink(IMG);
}

/* FNV-1a of the image file's bytes, read beside the library */
static uint64_t image_hash(void)
{
	unsigned char buf[65536];
	uint64_t h = 1469598103934665603ull;
	ssize_t n, i;
	int fd = open(IMG, O_RDONLY);

	CHECK(fd >= 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (i = 0; i < n; i++)
			h = (h ^ buf[i]) * 1099511628211ull;
	close(fd);
	return h;
}

/* Whether an open wrote to the image before its sync: a chmod of 1000
 * files changes 250 inode table blocks (1 KiB blocks), far more than a
 * 64 KiB cache holds (it keeps 64 blocks, then writes back), far less
 * than the default 64 MiB, which holds them all. */
static int written_before_sync(uint64_t cache_bytes)
{
	struct cfs_mkfs_opts mo = { .struct_size = sizeof(mo), .size = 64 << 20,
				    .block_size = 1024 };
	struct cfs_open_opts o = { .struct_size = sizeof(o), .cache_bytes = cache_bytes };
	struct cfs_setattr sa = { .valid = CFS_SET_MODE, .mode = 0600 };
	cfs_ino_t dir, ino[1000];
	struct cfs_fs *fs;
	uint64_t before;
	char name[32];
	int i, changed;

	unlink(IMG);
	CHECK_OK(cfs_mkfs(IMG, &mo));
	CHECK_OK(cfs_open(IMG, 0, &fs));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &dir));
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "file-%04d", i);
		CHECK_OK(cfs_mknod(fs, dir, name, 0100644, 0, 0, 0, &ino[i]));
	}
	CHECK_OK(cfs_close(fs));
	before = image_hash();
	CHECK_OK(cfs_open_ext(IMG, &o, &fs));
	for (i = 0; i < 1000; i++)
		CHECK_OK(cfs_setattr(fs, ino[i], &sa, NULL));
	changed = image_hash() != before;
	CHECK_OK(cfs_close(fs));
	unlink(IMG);
	return changed;
}

static void test_open_cache_size(void)
{
	CHECK_EQ(written_before_sync(0), 0);
	CHECK_EQ(written_before_sync(64 << 10), 1);
}

int main(void)
{
	TEST_RUN(test_mkfs_sizes);
	TEST_RUN(test_fsck_result_bounded);
	TEST_RUN(test_open_sizes);
	TEST_RUN(test_open_cache_size);
	return TEST_DONE();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The structs that grow (include/chunkfs.h, docs/API.md): struct_size 0
 * is the first layout; a larger struct from a newer header is taken when
 * what this library does not know is zero and refused (-E2BIG) when not;
 * a smaller one than the first layout is refused; a result is written no
 * further than the caller's struct_size.  Through the public API only,
 * on image files. */
#include <errno.h>
#include <stdint.h>
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

int main(void)
{
	TEST_RUN(test_mkfs_sizes);
	TEST_RUN(test_fsck_result_bounded);
	return TEST_DONE();
}

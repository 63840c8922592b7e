/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs resize: grow a filesystem into the space its file or device
 * gained: an unmounted image (resize2fs's job), or a mounted one given by
 * its mount point, which asks the daemon (xfs_growfs's way, an ioctl:
 * daemon/resize_ioctl.h).  The library adds whole chunks (src/resize.c);
 * this says what it did, or why it did nothing, in resize2fs's words.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resize_ioctl.h"
#include "tool.h"

static int parse_args(int argc, char **argv, uint64_t *size)
{
	int c;

	opterr = 0;
	while ((c = getopt(argc, argv, ":")) != -1)
		return bad_option("resize", argv, c);
	if (argc - optind < 1 || argc - optind > 2)
		return usage_error("resize", argc == optind ? "no IMAGE given" :
				   "too many arguments");
	*size = 0;
	if (argc - optind == 2 && (parse_size(argv[optind + 1], size) < 0 || *size == 0))
		return usage_error("resize", "bad size '%s'", argv[optind + 1]);
	return 0;
}

/* Why the space was not enough for another chunk. */
static void say_nothing_to_do(const char *img, const struct cfs_resize_result *r)
{
	uint64_t need = r->new_blocks + r->chunk_blocks;

	printf("The filesystem on %s is already %" PRIu64 " (%uk) blocks long "
	       "(%u chunks).  Nothing to do!\n", img, r->new_blocks,
	       r->block_size / 1024, r->new_chunks);
	if (r->new_chunks >= CFS_MAX_CHUNKS)
		printf("It has %u chunks, the most a filesystem can have.\n", CFS_MAX_CHUNKS);
	else
		printf("Another chunk needs a size of %" PRIu64 " bytes; this one is %"
		       PRIu64 ".\n", need * r->block_size, r->room_blocks * r->block_size);
}

static void say_done(const char *img, const struct cfs_resize_result *r)
{
	uint64_t left = r->room_blocks - r->new_blocks;

	printf("The filesystem on %s is now %" PRIu64 " (%uk) blocks long: "
	       "%u chunks, was %u.\n", img, r->new_blocks, r->block_size / 1024,
	       r->new_chunks, r->old_chunks);
	if (left && r->new_chunks >= CFS_MAX_CHUNKS)
		printf("%" PRIu64 " bytes at the end stay unused (%u chunks is the "
		       "most a filesystem can have).\n", left * r->block_size,
		       CFS_MAX_CHUNKS);
	else if (left)
		printf("%" PRIu64 " bytes at the end stay unused (less than a chunk, "
		       "%" PRIu64 " bytes).\n", left * r->block_size,
		       r->chunk_blocks * r->block_size);
}

static void open_failed(const char *img, int err)
{
	const char *why = cfs_last_error();

	if (!why || !*why)
		why = errstr(err);
	if (err == -EBUSY)
		err_msg("%s: %s: unmount it first, or give its mount point to "
			"grow it online", img, why);
	else
		err_msg("%s: %s", img, why);
}

static int say(const char *what, int ret, const char *why,
	       const struct cfs_resize_result *r)
{
	if (ret < 0) {
		err_msg("%s: %s", what, why && *why ? why : errstr(ret));
		return EX_FAIL;
	}
	if (r->new_chunks == r->old_chunks)
		say_nothing_to_do(what, r);
	else
		say_done(what, r);
	return EX_OK;
}

/* A mount point: the daemon does it. */
static int resize_online(const char *dir, uint64_t size)
{
	struct chunkfs_resize_arg a = { .size = size };
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err = 0;

	if (fd < 0 || ioctl(fd, CHUNKFS_IOC_RESIZE, &a) < 0)
		err = errno;
	if (fd >= 0)
		close(fd);
	if (err == ENOTTY || err == EINVAL) {
		err_msg("%s: not the mount point of a chunkfs mount", dir);
		return EX_FAIL;
	}
	if (err) {
		err_msg("%s: %s", dir, strerror(err));
		return EX_FAIL;
	}
	a.msg[sizeof(a.msg) - 1] = 0;
	return say(dir, a.error, a.msg, &a.res);
}

int cmd_resize(int argc, char **argv)
{
	struct cfs_resize_result r;
	struct cfs_fs *fs;
	struct stat st;
	uint64_t size;
	const char *img;
	int ret, status;

	if ((ret = parse_args(argc, argv, &size)) != 0)
		return ret;
	img = argv[optind];
	if (stat(img, &st) < 0) {
		err_host(img, -errno);
		return EX_FAIL;
	}
	if (S_ISDIR(st.st_mode))
		return resize_online(img, size);
	ret = cfs_open(img, 0, &fs);
	if (ret < 0) {
		open_failed(img, ret);
		return EX_FAIL;
	}
	move_progress_on(fs, "shrink");
	ret = cfs_resize(fs, size, &r);
	status = say(img, ret, cfs_last_error(), &r);
	status = img_close(fs, img, status);
	/* a shrunk image file is cut to SIZE, as a grown one was extended */
	if (status == EX_OK && r.new_chunks < r.old_chunks && S_ISREG(st.st_mode) && size &&
	    truncate(img, (off_t)(size - size % r.block_size)) < 0) {
		err_host(img, -errno);
		status = EX_FAIL;
	}
	return status;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs mkfs: create a filesystem (e2fsprogs-style options). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bdev.h"
#include "tool.h"

struct mkfs_args {
	struct cfs_mkfs_opts o;
	uint8_t uuid[16];
	const char *image;
	const char *size_arg;
	bool force, quiet;
	int excl_fd;            /* a block device, held O_EXCL while mkfs runs */
	bool blkdev;
	bool wipe;              /* old signatures to erase once mkfs is done */
	bool exists;            /* an existing file or device, made in place */
	bool regular;           /* a regular file, file_size long */
	uint64_t file_size;
};

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static int opt_block_size(const char *cmd, const char *arg, struct mkfs_args *a)
{
	uint64_t v;

	if (parse_size(arg, &v) < 0 || !is_pow2(v) || v < 1024 || v > 65536)
		return usage_error(cmd, "invalid block size '%s': must be a power "
				   "of two from 1024 (1K) to 65536 (64K)", arg);
	a->o.block_size = (uint32_t)v;
	return 0;
}

static int opt_chunks(const char *cmd, const char *arg, struct mkfs_args *a)
{
	uint64_t v;

	if (parse_u64(arg, &v) < 0 || v < 1 || v > CFS_MAX_CHUNKS)
		return usage_error(cmd, "invalid chunk count '%s': must be 1..%d",
				   arg, CFS_MAX_CHUNKS);
	a->o.chunks = (uint32_t)v;
	return 0;
}

static int opt_inode_size(const char *cmd, const char *arg, struct mkfs_args *a)
{
	uint64_t v;

	if (parse_size(arg, &v) < 0 || !is_pow2(v) || v < 256 || v > 65536)
		return usage_error(cmd, "invalid inode size '%s': must be a power "
				   "of two from 256 to the block size", arg);
	a->o.inode_size = (uint32_t)v;
	return 0;
}

static int opt_inodes(const char *cmd, const char *arg, struct mkfs_args *a)
{
	uint64_t v;

	if (parse_u64(arg, &v) < 0 || v == 0)
		return usage_error(cmd, "invalid inode count '%s': must be a "
				   "positive number", arg);
	a->o.inodes = v;
	return 0;
}

static int opt_label(const char *cmd, const char *arg, struct mkfs_args *a)
{
	if (strlen(arg) > 63)
		return usage_error(cmd, "label '%s' is too long: %zu bytes, at "
				   "most 63", arg, strlen(arg));
	a->o.label = arg;
	return 0;
}

static int opt_uuid(const char *cmd, const char *arg, struct mkfs_args *a)
{
	if (strcmp(arg, "random") == 0) {
		a->o.uuid = NULL;
		return 0;
	}
	if (strcmp(arg, "nil") == 0 || strcmp(arg, "clear") == 0) {
		memset(a->uuid, 0, sizeof(a->uuid));
	} else if (parse_uuid(arg, a->uuid) < 0) {
		return usage_error(cmd, "invalid UUID '%s': expected the form "
				   "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", arg);
	}
	a->o.uuid = a->uuid;
	return 0;
}

static int parse_args(int argc, char **argv, struct mkfs_args *a)
{
	static const struct option lopts[] = {
		{ "force", no_argument, NULL, 'F' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "label", required_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd = "mkfs";
	int c, ret = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":b:c:L:N:I:O:U:Fq", lopts, NULL)) != -1) {
		switch (c) {
		case 'b': ret = opt_block_size(cmd, optarg, a); break;
		case 'c': ret = opt_chunks(cmd, optarg, a); break;
		case 'L': ret = opt_label(cmd, optarg, a); break;
		case 'N': ret = opt_inodes(cmd, optarg, a); break;
		case 'I': ret = opt_inode_size(cmd, optarg, a); break;
		case 'O': ret = parse_features(cmd, optarg, &a->o.dyninodes); break;
		case 'U': ret = opt_uuid(cmd, optarg, a); break;
		case 'F': a->force = true; break;
		case 'q': a->quiet = true; break;
		default: return bad_option(cmd, argv, c);
		}
		if (ret)
			return ret;
	}
	if (optind >= argc)
		return usage_error(cmd, "no IMAGE given");
	if (argc - optind > 2)
		return usage_error(cmd, "too many arguments (first extra: '%s')",
				   argv[optind + 2]);
	a->image = argv[optind];
	a->size_arg = optind + 1 < argc ? argv[optind + 1] : NULL;
	return 0;
}

/* Cross-option checks and the size argument. */
static int check_args(struct mkfs_args *a)
{
	uint32_t bs = a->o.block_size ? a->o.block_size : 4096;
	const char *cmd = "mkfs";

	if (a->o.inode_size && a->o.inode_size > bs)
		return usage_error(cmd, "invalid inode size %" PRIu32 ": larger "
				   "than the block size %" PRIu32, a->o.inode_size, bs);
	if (a->size_arg) {
		if (parse_size(a->size_arg, &a->o.size) < 0 || a->o.size == 0)
			return usage_error(cmd, "invalid size '%s': expected a "
					   "number of bytes with an optional K, M, G "
					   "or T suffix", a->size_arg);
		if (a->o.size < bs)
			return usage_error(cmd, "invalid size '%s': smaller than "
					   "one block (%" PRIu32 " bytes)", a->size_arg, bs);
	}
	return 0;
}

/* A block device is made as big as SIZE asks, never bigger than it is. */
static int check_blkdev_size(struct mkfs_args *a)
{
	uint64_t dev = 0;

	if (ioctl(a->excl_fd, BLKGETSIZE64, &dev) < 0) {
		err_host(a->image, -errno);
		return EX_FAIL;
	}
	if (a->size_arg && a->o.size > dev) {
		err_msg("%s: SIZE %s is larger than the device (%llu bytes)", a->image,
			a->size_arg, (unsigned long long)dev);
		return EX_FAIL;
	}
	return 0;
}

static bool ask_proceed(void)
{
	char line[16];

	fprintf(stderr, "Proceed anyway? (y,N) ");
	if (!fgets(line, sizeof(line), stdin))
		return false;
	return line[0] == 'y' || line[0] == 'Y';
}

/* Something is there that mkfs would destroy (what: "an ext4 file
 * system", "data ..."): as mke2fs, name it and ask on a terminal;
 * otherwise only -F goes on. */
static int confirm_overwrite(const struct mkfs_args *a, const char *what)
{
	if (a->force)
		return 0;
	if (isatty(0)) {
		fprintf(stderr, "%s contains %s\n", a->image, what);
		if (ask_proceed())
			return 0;
		err_msg("%s: nothing written", a->image);
		return EX_FAIL;
	}
	err_msg("%s contains %s; use -F to overwrite it", a->image, what);
	return EX_FAIL;
}

/* Another filesystem (or a partition table), or in a regular file any
 * byte that is not zero: a file made by truncate or fallocate is taken
 * as it is, one that holds data only with -F, as a device with a
 * signature.  (A device is not read through for data: mke2fs does not
 * either, and it can take hours.) */
static int check_contents(struct mkfs_args *a)
{
	char what[256];
	uint64_t at = 0;
	int ret = dev_signature(a->image, what, sizeof(what));

	if (ret == 0 && !a->blkdev) {
		ret = file_data_at(a->image, &at);
		snprintf(what, sizeof(what), "data (a byte that is not zero at offset "
			 "%llu)", (unsigned long long)at);
	} else if (ret > 0) {
		a->wipe = true;
	}
	if (ret < 0) {
		err_host(a->image, ret);
		return EX_FAIL;
	}
	return ret ? confirm_overwrite(a, what) : 0;
}

/* Refuse to overwrite a filesystem unless forced, or a device in use at
 * all, and require SIZE for a new file.  Sets *creating when the image
 * will be a new file. */
static int check_target(struct mkfs_args *a, bool *creating)
{
	struct img_use use;
	struct stat st;
	struct cfs_fs *fs;

	*creating = false;
	if (stat(a->image, &st) < 0) {
		if (errno != ENOENT) {
			err_host(a->image, -errno);
			return EX_FAIL;
		}
		if (!a->size_arg)
			return usage_error("mkfs", "%s does not exist, so a SIZE is "
					   "needed", a->image);
		*creating = true;
		return 0;
	}
	if (S_ISDIR(st.st_mode)) {
		err_host(a->image, -EISDIR);
		return EX_FAIL;
	}
	if (S_ISREG(st.st_mode) && st.st_size == 0 && !a->size_arg) {
		err_msg("%s: the file is empty; give a SIZE", a->image);
		return EX_FAIL;
	}
	if (dev_claim(a->image, &a->excl_fd) < 0)
		return EX_FAIL;
	a->exists = true;
	a->blkdev = S_ISBLK(st.st_mode);
	a->regular = S_ISREG(st.st_mode);
	a->file_size = (uint64_t)st.st_size;
	if (a->blkdev && check_blkdev_size(a))
		return EX_FAIL;
	img_wait(a->image, &use);
	if (cfs_open(a->image, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs) == 0) {
		cfs_close(fs);
		if (!a->force) {
			err_msg("%s contains a chunkfs filesystem; use -F to "
				"overwrite", a->image);
			return EX_FAIL;
		}
		return 0;
	}
	if (st.st_size == 0 && !a->blkdev)
		return 0;
	return check_contents(a);
}

/* An existing file is never made shorter (mke2fs does not either: the
 * filesystem takes SIZE of it, the rest stays as it was); one shorter
 * than SIZE is made longer first.  The host filesystem's own limit on a
 * file's length is named, as EFBIG alone would not say whose it is. */
static int grow_file(const struct mkfs_args *a)
{
	int fd, ret = 0;

	if (!a->regular || a->o.size <= a->file_size)
		return 0;
	fd = open(a->image, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)a->o.size) < 0)
		ret = -errno;
	if (fd >= 0)
		close(fd);
	if (ret == -EFBIG)
		err_msg("%s: cannot make the file %s long: the host filesystem's "
			"limit on a file's size is smaller (ftruncate: %s)", a->image,
			a->size_arg, errstr(ret));
	else if (ret < 0)
		err_msg("%s: cannot make the file %s long: %s", a->image, a->size_arg,
			errstr(ret));
	return ret;
}

/* Into an existing file or a block device, whose length stays as it is:
 * SIZE may be smaller (cfs_mkfs would take the whole of it, and cut a
 * file to SIZE). */
static int mkfs_in_place(const struct mkfs_args *a)
{
	struct cfs_bdev *bd;
	int ret;

	/* addressed in 1K units until cfs_mkfs_bdev sets the block size */
	ret = cfs_bdev_file_open(a->image, O_RDWR, 1024, &bd);
	if (ret < 0)
		return ret;
	if (a->o.size)
		bd->nblocks = a->o.size / bd->block_size;
	ret = cfs_mkfs_bdev(bd, &a->o);
	cfs_bdev_destroy(bd);
	return ret;
}

static int mkfs_image(const struct mkfs_args *a)
{
	int ret = a->exists ? mkfs_in_place(a) : cfs_mkfs(a->image, &a->o);

	if (ret == 0 && a->wipe) {
		ret = dev_wipe(a->image);
		if (ret < 0)
			err_msg("%s: erasing the old signatures failed: %s", a->image,
				errstr(ret));
	}
	return ret;
}

/* The inodes the filesystem offers, as info and df -i count them: with
 * dyninodes, beyond the inode tables, those the chunks' free blocks can
 * still make. */
static uint64_t inodes_offered(struct cfs_fs *fs, const struct cfs_info *in)
{
	struct cfs_chunk_info ci;
	uint64_t n = 0;

	for (uint32_t c = 0; c < in->chunks; c++)
		if (cfs_get_chunk_info(fs, c, &ci) == 0)
			n += ci.inodes;
	return n;
}

static void print_summary(struct cfs_fs *fs, const struct cfs_info *in)
{
	char uuid[37];
	uint64_t blocks = (uint64_t)in->chunks * in->chunk_blocks;
	uint64_t tables = (uint64_t)in->chunks * in->inodes_per_chunk;

	fmt_uuid(in->uuid, uuid);
	printf("Creating chunkfs filesystem with %" PRIu64 " %uk blocks and %"
	       PRIu64 " inodes\n", in->total_blocks, in->block_size / 1024,
	       inodes_offered(fs, in));
	printf("Filesystem UUID:   %s\n", uuid);
	if (in->label[0])
		printf("Filesystem label:  %.63s\n", in->label);
	printf("Block size:        %u\n", in->block_size);
	printf("Inode size:        %u\n", in->inode_size);
	printf("Chunks:            %u\n", in->chunks);
	printf("Blocks per chunk:  %" PRIu64 " (%" PRIu64 " in all chunks)\n",
	       in->chunk_blocks, blocks);
	printf("Inodes per chunk:  %" PRIu64 " (%" PRIu64 " in all inode tables%s)\n",
	       in->inodes_per_chunk, tables, in->feature_incompat & CFS_FEATURE_DYNINODES ?
	       "; the rest are made from free blocks as files are created" : "");
	printf("Inline data up to: %u bytes\n", in->inline_max);
}

static int report(const struct mkfs_args *a)
{
	struct cfs_fs *fs;
	struct cfs_info in;
	int ret, status = EX_OK;

	if (img_open(a->image, true, &fs) < 0)
		return EX_FAIL;
	ret = cfs_get_info(fs, &in);
	if (ret < 0) {
		err_msg("%s: reading the new filesystem's geometry: %s", a->image,
			errstr(ret));
		status = EX_FAIL;
		goto out;
	}
	print_summary(fs, &in);
out:
	return img_close(fs, a->image, status);
}

static int64_t creation_time(void)
{
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	uint64_t v;

	/* Reproducible images for build systems that set it. */
	if (sde && parse_u64(sde, &v) == 0 && v <= INT64_MAX)
		return (int64_t)v;
	return 0;
}

static const char *mkfs_hint(int err)
{
	switch (-err) {
	case EINVAL: return " (the size, block size, chunk count and inode "
			    "count do not fit together)";
	case ENOSPC: return " (the size is too small for this geometry)";
	case EFBIG: return " (the size is too large)";
	default: return "";
	}
}

int cmd_mkfs(int argc, char **argv)
{
	struct mkfs_args a = { .excl_fd = -1 };
	char before[256];
	const char *why;
	bool creating;
	int ret;

	ret = parse_args(argc, argv, &a);
	if (ret)
		return ret;
	ret = check_args(&a);
	if (ret)
		return ret;
	ret = check_target(&a, &creating);
	if (ret)
		goto out;
	a.o.now = creation_time();
	/* cfs_last_error() cannot be cleared: a message that did not change
	 * is the probe's in check_target, not mkfs's. */
	snprintf(before, sizeof(before), "%s", cfs_last_error());
	ret = grow_file(&a);
	if (ret < 0) {
		ret = EX_FAIL;
		goto out;
	}
	ret = mkfs_image(&a);
	if (ret < 0) {
		why = cfs_last_error();
		if (ret == -EBUSY)
			err_msg("%s: image is in use by another process (mounted?)",
				a.image);
		else if (why && *why && strcmp(why, before) != 0)
			err_msg("%s: cannot create filesystem: %s", a.image, why);
		else
			err_msg("%s: cannot create filesystem: %s%s", a.image,
				errstr(ret), mkfs_hint(ret));
		/* Leave no half-made image behind that we created. */
		if (creating)
			unlink(a.image);
		ret = EX_FAIL;
		goto out;
	}
	ret = a.quiet ? EX_OK : report(&a);
out:
	if (a.excl_fd >= 0)
		close(a.excl_fd);
	return ret;
}

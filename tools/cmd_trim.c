/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs trim: give the free blocks of an unmounted image back to the
 * storage, as fstrim does for a mounted filesystem: holes punched in an
 * image file (so it takes less space on the host), discards on a disk.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "tool.h"
#include "trim.h"

static int parse_args(int argc, char **argv, uint64_t *minlen, bool *verbose)
{
	int c;

	opterr = 0;
	while ((c = getopt(argc, argv, ":m:v")) != -1) {
		switch (c) {
		case 'm':
			if (parse_size(optarg, minlen) < 0)
				return usage_error("trim", "bad minimum length '%s'", optarg);
			break;
		case 'v':
			*verbose = true;
			break;
		default:
			return bad_option("trim", argv, c);
		}
	}
	if (argc - optind != 1)
		return usage_error("trim", argc == optind ? "no IMAGE given" :
				   "too many arguments");
	return 0;
}

int cmd_trim(int argc, char **argv)
{
	struct cfs_trim_result res;
	struct cfs_info in;
	struct cfs_fs *fs;
	uint64_t minlen = 0;
	bool verbose = false;
	const char *img;
	int ret;

	if ((ret = parse_args(argc, argv, &minlen, &verbose)) != 0)
		return ret;
	img = argv[optind];
	ret = cfs_open(img, 0, &fs);
	if (ret < 0) {
		const char *why = cfs_last_error();

		err_msg("%s: %s%s", img, why && *why ? why : errstr(ret),
			ret == -EBUSY ? ": unmount it first" : "");
		return EX_FAIL;
	}
	ret = cfs_get_info(fs, &in);
	if (ret == 0)
		ret = cfs_trim(fs, (minlen + in.block_size - 1) / in.block_size, &res);
	if (ret == -EOPNOTSUPP) {
		err_msg("%s: the storage under it cannot discard (%s)", img, errstr(ret));
		return img_close(fs, img, EX_FAIL);
	}
	if (ret < 0) {
		err_msg("%s: trim failed: %s", img, errstr(ret));
		return img_close(fs, img, EX_FAIL);
	}
	if (verbose)
		printf("%s: %" PRIu64 " bytes (%" PRIu64 " blocks in %" PRIu64
		       " runs) trimmed\n", img, res.blocks * in.block_size,
		       res.blocks, res.runs);
	return img_close(fs, img, EX_OK);
}

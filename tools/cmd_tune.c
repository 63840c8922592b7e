/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs tune: change the label, the UUID and the default mount options
 * of an unmounted image (tune2fs's job), or list them.
 *
 * All three live in the superblock only (src/tune.c), so a change is one
 * superblock write, then the backup's.  A mounted image is refused: the
 * daemon holds the image's lock and its own copy of the superblock.
 * Mount options are checked by the mount's own parser (tools/mount_opts.c)
 * before they are stored; the mount reads them back (daemon/mount.c).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mount_opts.h"
#include "tool.h"
#include "tune.h"

struct tune_args {
	struct cfs_tune t;
	uint8_t uuid[16];
	bool list;
};

static int opt_uuid(const char *arg, struct tune_args *a)
{
	if (strcmp(arg, "random") == 0) {
		a->t.uuid_random = 1;
		a->t.uuid = NULL;
		return 0;
	}
	a->t.uuid_random = 0;
	if (strcmp(arg, "nil") == 0 || strcmp(arg, "clear") == 0)
		memset(a->uuid, 0, sizeof(a->uuid));
	else if (parse_uuid(arg, a->uuid) < 0)
		return usage_error("tune", "invalid UUID '%s': expected the form "
				   "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, random or nil", arg);
	a->t.uuid = a->uuid;
	return 0;
}

/* Default mount options are checked as the mount will check them, as
 * tune2fs -o does: one a mount would refuse or ignore is not stored. */
static int check_mount_opts(const char *opts)
{
	struct mopts o;
	int ret;

	if (cfs_tune_mount_opts_valid(opts) < 0)
		return usage_error("tune", "bad mount options '%s': at most 63 bytes, "
				   "comma-separated, no spaces", opts);
	if (!*opts)
		return 0;
	mopts_init(&o);
	ret = mopts_parse(&o, opts, MOPTS_TUNE);
	mopts_free(&o);
	return ret;
}

static int parse_args(int argc, char **argv, struct tune_args *a)
{
	int c, ret;

	opterr = 0;
	while ((c = getopt(argc, argv, ":L:U:o:O:l")) != -1) {
		switch (c) {
		case 'L':
			if (strlen(optarg) > CFS_TUNE_TEXT_MAX)
				return usage_error("tune", "label too long (at most 63 bytes)");
			a->t.label = optarg;
			break;
		case 'U':
			if ((ret = opt_uuid(optarg, a)) != 0)
				return ret;
			break;
		case 'o':
			if ((ret = check_mount_opts(optarg)) != 0)
				return ret;
			a->t.mount_opts = optarg;
			break;
		case 'O':
			if ((ret = parse_features("tune", optarg, &a->t.dyninodes)) != 0)
				return ret;
			break;
		case 'l':
			a->list = true;
			break;
		default:
			return bad_option("tune", argv, c);
		}
	}
	if (argc - optind != 1)
		return usage_error("tune", argc == optind ? "no IMAGE given" :
				   "too many arguments");
	if (!a->t.label && !a->t.uuid && !a->t.uuid_random && !a->t.mount_opts &&
	    !a->t.dyninodes)
		a->list = true;
	return 0;
}

static void print_tunables(struct cfs_fs *fs)
{
	struct cfs_info in;
	char uuid[37], opts[CFS_TUNE_TEXT_MAX + 1];

	if (cfs_get_info(fs, &in) < 0)
		return;
	fmt_uuid(in.uuid, uuid);
	cfs_tune_mount_opts(fs, opts);
	printf("Filesystem label:         ");
	for (const char *p = in.label; *p && p < in.label + sizeof(in.label); p++)
		putchar((unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p);
	printf("\nFilesystem UUID:          %s\n", uuid);
	printf("Default mount options:    %s\n", *opts ? opts : "(none)");
	printf("Features:                 compat 0x%" PRIx32 ", ro_compat 0x%" PRIx32
	       ", incompat 0x%" PRIx32 "%s\n", in.feature_compat,
	       in.feature_ro_compat, in.feature_incompat,
	       in.feature_incompat & CFS_FEATURE_DYNINODES ? " (dyninodes)" : "");
}

/* Why a read-write open failed, with what to do about it. */
static void open_failed(const char *img, int err)
{
	const char *why = cfs_last_error();

	if (!why || !*why)
		why = errstr(err);
	if (err == -EBUSY)
		err_msg("%s: %s: tune changes the superblock, which the mount "
			"holds; unmount it first", img, why);
	else
		err_msg("%s: %s", img, why);
}

int cmd_tune(int argc, char **argv)
{
	struct tune_args a = { 0 };
	struct cfs_fs *fs = NULL;
	bool change;
	int ret, status = EX_OK;
	const char *img;

	if ((ret = parse_args(argc, argv, &a)) != 0)
		return ret;
	img = argv[optind];
	change = a.t.label || a.t.uuid || a.t.uuid_random || a.t.mount_opts || a.t.dyninodes;
	/* Only the superblock changes, so chunks left dirty by a crash do
	 * not stand in the way (NOCHECK); fsck still sees them dirty. */
	ret = cfs_open(img, change ? CFS_OPEN_NOCHECK :
		       CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs);
	if (ret < 0) {
		open_failed(img, ret);
		return EX_FAIL;
	}
	if (change && (ret = cfs_tune(fs, &a.t)) < 0) {
		const char *why = cfs_last_error();

		err_msg("%s: %s", img, why && *why ? why : errstr(ret));
		status = EX_FAIL;
	}
	if (status == EX_OK && a.list)
		print_tunables(fs);
	return img_close(fs, img, status);
}

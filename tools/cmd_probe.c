/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs probe: what blkid says of other filesystems, for chunkfs, which
 * libblkid does not know.  udev imports `probe --export` (udev/64-chunkfs
 * .rules) so that /dev/disk/by-uuid and by-label, and with them fstab's
 * UUID= and LABEL=, name chunkfs devices too.
 *
 * udev runs it on every block device libblkid did not recognise, so it
 * reads the first 1024 bytes and nothing else: read-only (a descriptor
 * opened for writing makes udev's watch send another event when it is
 * closed), no lock (the mount holds the image's), no library open (which
 * reads every chunk header).  Exit status as blkid's: 0 found, 2 nothing
 * found, 4 usage or other error.
 */
#include <blkid/blkid.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe.h"
#include "tool.h"

#define PROBE_FOUND	0
#define PROBE_NONE	2
#define PROBE_ERROR	4

/* The device's first bytes (*len of them, fewer only at its end) and its
 * size.  0, PROBE_NONE for a drive without a medium, or a negative errno
 * with *what naming the step that failed. */
static int read_head(const char *path, uint8_t *buf, size_t *len, uint64_t *size,
		     const char **what)
{
	struct stat st;
	size_t got = 0;
	int fd, ret = 0;

	*what = "cannot open";
	/* O_NONBLOCK: an empty CD drive says ENOMEDIUM instead of waiting */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return errno == ENOMEDIUM ? PROBE_NONE : -errno;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto out;
	}
	*what = "cannot read its size";
	if (S_ISREG(st.st_mode)) {
		*size = (uint64_t)st.st_size;
	} else if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, size) < 0) {
			ret = -errno;
			goto out;
		}
	} else {
		*what = "not a block device or a regular file";
		ret = -EINVAL;
		goto out;
	}
	*what = "cannot read";
	while (got < CFS_PROBE_BYTES) {
		ssize_t n = pread(fd, buf + got, CFS_PROBE_BYTES - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = errno == ENOMEDIUM ? PROBE_NONE : -errno;
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	*len = got;
out:
	close(fd);
	return ret;
}

static bool uuid_is_nil(const uint8_t u[16])
{
	for (int i = 0; i < 16; i++)
		if (u[i])
			return false;
	return true;
}

/* NAME=VALUE and NAME_ENC=VALUE as `blkid -p -o udev` prints a label or a
 * UUID: whitespace made '_' in the first, every unsafe byte \xNN in the
 * second (what the by-label and by-uuid links are named after). */
static void print_udev_pair(const char *name, const char *value)
{
	char safe[256], enc[4 * 64 + 16];

	blkid_safe_string(value, safe, sizeof(safe));
	blkid_encode_string(value, enc, sizeof(enc));
	printf("ID_FS_%s=%s\nID_FS_%s_ENC=%s\n", name, safe, name, enc);
}

/* A value between double quotes as blkid's own output shows it: the
 * eighth bit as "M-", control bytes as "^X", '"' and '\' escaped. */
static void print_quoted(const char *name, const char *value)
{
	printf(" %s=\"", name);
	for (const unsigned char *c = (const unsigned char *)value; *c; c++) {
		unsigned ch = *c;

		if (ch >= 128) {
			fputs("M-", stdout);
			ch -= 128;
		}
		if (ch < 32 || ch == 0x7f) {
			putchar('^');
			ch ^= 0x40;
		} else if (ch == '"' || ch == '\\') {
			putchar('\\');
		}
		putchar((int)ch);
	}
	putchar('"');
}

static void print_found(const char *path, struct cfs_probe *p, bool export)
{
	char uuid[37], num[16];
	size_t n = strlen(p->label);

	/* libblkid drops a label's trailing whitespace (blkid_probe_set_label),
	 * so the by-label link is the name blkid would give it */
	while (n > 0 && isspace((unsigned char)p->label[n - 1]))
		p->label[--n] = 0;
	fmt_uuid(p->uuid, uuid);
	if (export) {
		/* blkid's order and blkid's omissions: no label, no nil UUID */
		if (p->label[0])
			print_udev_pair("LABEL", p->label);
		if (!uuid_is_nil(p->uuid))
			print_udev_pair("UUID", uuid);
		printf("ID_FS_VERSION=%u\nID_FS_BLOCK_SIZE=%u\nID_FS_TYPE=chunkfs\n"
		       "ID_FS_USAGE=filesystem\n", p->version, p->block_size);
		return;
	}
	printf("%s:", path);
	if (p->label[0])
		print_quoted("LABEL", p->label);
	if (!uuid_is_nil(p->uuid))
		print_quoted("UUID", uuid);
	snprintf(num, sizeof(num), "%u", p->block_size);
	print_quoted("BLOCK_SIZE", num);
	print_quoted("TYPE", "chunkfs");
	putchar('\n');
}

static int parse_args(int argc, char **argv, bool *export)
{
	static const struct option lopts[] = {
		{ "export", no_argument, NULL, 'e' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", lopts, NULL)) != -1) {
		if (c != 'e')
			return bad_option("probe", argv, c);
		*export = true;
	}
	if (argc - optind != 1)
		return usage_error("probe", argc == optind ? "no DEVICE given" :
				   "too many arguments");
	return 0;
}

int cmd_probe(int argc, char **argv)
{
	uint8_t buf[CFS_PROBE_BYTES];
	struct cfs_probe p;
	const char *path, *why;
	bool export = false;
	uint64_t size = 0;
	size_t len = 0;
	int ret;

	/* a usage error is blkid's 4: 2 would say "not chunkfs" */
	if (parse_args(argc, argv, &export) != 0)
		return PROBE_ERROR;
	path = argv[optind];
	ret = read_head(path, buf, &len, &size, &why);
	if (ret == PROBE_NONE)
		return PROBE_NONE;
	if (ret < 0) {
		err_msg("%s: %s: %s", path, why, errstr(ret));
		return PROBE_ERROR;
	}
	ret = cfs_probe_super(buf, len, size, &p, &why);
	if (ret == 0)
		return PROBE_NONE;
	if (ret < 0) {
		/* the magic says chunkfs: saying nothing would hide a damaged
		 * filesystem behind "not chunkfs"; udev logs this line */
		err_msg("%s: a chunkfs whose superblock cannot be used: %s%s", path, why,
			ret == -EBADMSG ? " (chunkfs fsck restores it from the backup)" : "");
		return PROBE_ERROR;
	}
	if (p.newer && !export)
		warn_msg("%s: made by a newer chunkfs (unknown incompatible features): "
			 "this one cannot open it", path);
	print_found(path, &p, export);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		err_msg("writing the output failed: %s", strerror(errno));
		return PROBE_ERROR;
	}
	return PROBE_FOUND;
}

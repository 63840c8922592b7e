/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What is on a device or image file before mkfs writes over it: who holds
 * it (mounted, or open exclusively), and which signatures libblkid finds
 * there.  mke2fs does the same (O_EXCL, check_mount_point, blkid probes).
 */
#include <blkid/blkid.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mntent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool.h"

/* Where the block device rdev is mounted ("" if nowhere we can see). */
static void mount_point_of(dev_t rdev, char *out, size_t len)
{
	FILE *f = setmntent("/proc/self/mounts", "r");
	struct mntent *me;
	struct stat st;

	out[0] = 0;
	if (!f)
		return;
	while ((me = getmntent(f))) {
		if (me->mnt_fsname[0] != '/' || stat(me->mnt_fsname, &st) < 0 ||
		    !S_ISBLK(st.st_mode) || st.st_rdev != rdev)
			continue;
		snprintf(out, len, "%s", me->mnt_dir);
		break;
	}
	endmntent(f);
}

/* mke2fs's words for a device the kernel holds (dev: its path). */
static void refuse_busy(const char *dev, const char *shown)
{
	char mnt[PATH_MAX] = "";
	struct stat st;

	if (stat(dev, &st) == 0)
		mount_point_of(st.st_rdev, mnt, sizeof(mnt));
	if (mnt[0])
		err_msg("%s is mounted on %s; will not make a filesystem here!", shown, mnt);
	else
		err_msg("%s is apparently in use by the system; will not make a "
			"filesystem here!", shown);
}

/* Open the block device path exclusively: the kernel refuses while it is
 * mounted, used by swap, device-mapper or RAID, or opened with O_EXCL by
 * anyone else.  The descriptor is kept for as long as mkfs writes, so
 * nothing can claim the device meanwhile.  Errors are reported. */
static int claim_blkdev(const char *path, const char *shown, int *fd)
{
	*fd = open(path, O_RDWR | O_EXCL | O_CLOEXEC);
	if (*fd >= 0)
		return 0;
	if (errno != EBUSY) {
		err_host(path, -errno);
		return -1;
	}
	refuse_busy(path, shown);
	return -1;
}

/* The loop device backing the regular file real (a resolved path), if
 * any: "/dev/loopN" in out. */
static bool loop_of_file(const char *real, char *out, size_t len)
{
	DIR *d = opendir("/sys/block");
	struct dirent *de;
	char p[PATH_MAX], back[PATH_MAX];
	bool found = false;
	FILE *f;

	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		if (strncmp(de->d_name, "loop", 4) != 0)
			continue;
		snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file", de->d_name);
		f = fopen(p, "r");
		if (!f)
			continue;
		if (fgets(back, sizeof(back), f)) {
			back[strcspn(back, "\n")] = 0;
			if (strcmp(back, real) == 0) {
				snprintf(out, len, "/dev/%s", de->d_name);
				found = true;
			}
		}
		fclose(f);
	}
	closedir(d);
	return found;
}

int dev_claim(const char *path, int *fd)
{
	char real[PATH_MAX], loop[300], what[PATH_MAX + 320];
	struct stat st;
	int lfd;

	*fd = -1;
	if (stat(path, &st) < 0)
		return 0;
	if (S_ISBLK(st.st_mode))
		return claim_blkdev(path, path, fd);
	/* An image file mounted through a loop device: the loop device is
	 * what the kernel holds. */
	if (!S_ISREG(st.st_mode) || !realpath(path, real) ||
	    !loop_of_file(real, loop, sizeof(loop)))
		return 0;
	lfd = open(loop, O_RDONLY | O_EXCL | O_CLOEXEC);
	if (lfd >= 0) {
		close(lfd);
		return 0;
	}
	if (errno != EBUSY)
		return 0;
	snprintf(what, sizeof(what), "%s (through %s)", path, loop);
	refuse_busy(loop, what);
	return -1;
}

static const char *article(const char *word)
{
	return strchr("aeiouAEIOU", word[0]) ? "an" : "a";
}

/* One finding of the probe, as mke2fs words it. */
static void describe(blkid_probe pr, char *out, size_t len)
{
	const char *type = NULL, *label = NULL, *pt = NULL;

	blkid_probe_lookup_value(pr, "TYPE", &type, NULL);
	blkid_probe_lookup_value(pr, "LABEL", &label, NULL);
	blkid_probe_lookup_value(pr, "PTTYPE", &pt, NULL);
	if (type && label && *label)
		snprintf(out, len, "%s %s file system labelled '%s'", article(type), type,
			 label);
	else if (type)
		snprintf(out, len, "%s %s file system", article(type), type);
	else if (pt)
		snprintf(out, len, "a partition table (%s)", pt);
	else
		snprintf(out, len, "an unknown signature");
}

/* A probe of path opened with flags (*fd: to close after blkid_free_probe). */
static int probe_open(const char *path, int flags, int *fd, blkid_probe *pr)
{
	*fd = open(path, flags | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	*pr = blkid_new_probe();
	if (!*pr || blkid_probe_set_device(*pr, *fd, 0, 0) < 0) {
		if (*pr)
			blkid_free_probe(*pr);
		close(*fd);
		return -ENOMEM;
	}
	blkid_probe_enable_superblocks(*pr, 1);
	blkid_probe_set_superblocks_flags(*pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_LABEL |
					  BLKID_SUBLKS_MAGIC | BLKID_SUBLKS_BADCSUM);
	blkid_probe_enable_partitions(*pr, 1);
	blkid_probe_set_partitions_flags(*pr, BLKID_PARTS_MAGIC);
	return 0;
}

int dev_signature(const char *path, char *out, size_t len)
{
	blkid_probe pr;
	int fd, ret = probe_open(path, O_RDONLY, &fd, &pr);

	out[0] = 0;
	if (ret < 0)
		return ret;
	/* the first signature found; mkfs names it and asks */
	if (blkid_do_probe(pr) == 0) {
		describe(pr, out, len);
		ret = 1;
	}
	blkid_free_probe(pr);
	close(fd);
	return ret;
}

int dev_wipe(const char *path)
{
	blkid_probe pr;
	int fd, ret = probe_open(path, O_RDWR, &fd, &pr);

	if (ret < 0)
		return ret;
	/* each wipe steps the probe back, so this ends when nothing is left */
	while (ret == 0 && blkid_do_probe(pr) == 0)
		if (blkid_do_wipe(pr, 0) < 0)
			ret = errno ? -errno : -EIO;
	blkid_free_probe(pr);
	if (fsync(fd) < 0 && ret == 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Whether buf holds a byte other than zero; its index in *at. */
static bool nonzero_at(const unsigned char *buf, size_t n, size_t *at)
{
	for (size_t i = 0; i < n; i++)
		if (buf[i]) {
			*at = i;
			return true;
		}
	return false;
}

int file_data_at(const char *path, uint64_t *at)
{
	unsigned char *buf = malloc(COPY_BUF_SIZE);
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 0;
	off_t data = 0, hole;
	size_t i;

	if (fd < 0 || !buf) {
		ret = fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	/* Holes read as zeros: only the data regions need reading, which
	 * keeps a large sparse file (made by truncate) quick. */
	while (ret == 0 && (data = lseek(fd, data, SEEK_DATA)) >= 0) {
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0) {
			ret = -errno;
			break;
		}
		while (ret == 0 && data < hole) {
			size_t want = (size_t)(hole - data) < COPY_BUF_SIZE ?
				      (size_t)(hole - data) : COPY_BUF_SIZE;
			ssize_t n = pread(fd, buf, want, data);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				ret = n < 0 ? -errno : 0;
				data = hole;
				break;
			}
			if (nonzero_at(buf, (size_t)n, &i)) {
				*at = (uint64_t)data + i;
				ret = 1;
			}
			data += n;
		}
	}
	if (ret == 0 && data < 0 && errno != ENXIO)
		ret = -errno;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs mount: what the mount table says about a directory, for the
 * launcher's checks (a dead mount left at DIR, remount). */
#include <errno.h>
#include <limits.h>
#include <mntent.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon.h"

extern char **environ;

/* dir as the mount table spells it: absolute, symlinks resolved, without
 * touching dir itself (a dead FUSE mount fails every stat with ENOTCONN). */
int mount_dir_abs(const char *dir, char *out, size_t len)
{
	char *copy = strdup(dir), *slash, *base, parent[PATH_MAX];
	int ret = -ENOMEM;

	if (!copy)
		return ret;
	for (size_t n = strlen(copy); n > 1 && copy[n - 1] == '/'; n--)
		copy[n - 1] = 0;
	slash = strrchr(copy, '/');
	base = slash ? slash + 1 : copy;
	if (slash == copy)
		ret = realpath("/", parent) ? 0 : -errno;
	else if (slash) {
		*slash = 0;
		ret = realpath(copy, parent) ? 0 : -errno;
	} else {
		ret = realpath(".", parent) ? 0 : -errno;
	}
	if (ret == 0 && (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0))
		ret = realpath(dir, out) ? 0 : -errno;
	else if (ret == 0 && (size_t)snprintf(out, len, "%s%s%s", parent,
					       strcmp(parent, "/") ? "/" : "", base) >= len)
		ret = -ENAMETOOLONG;
	free(copy);
	return ret;
}

int mount_at(const char *dir, struct mount_entry *e)
{
	FILE *f = setmntent("/proc/self/mounts", "r");
	struct mntent *me;
	char abs[PATH_MAX];
	int found = 0;

	if (!f)
		return -errno;
	if (mount_dir_abs(dir, abs, sizeof(abs)) < 0) {
		endmntent(f);
		return 0;
	}
	/* the last entry is the one on top */
	while ((me = getmntent(f))) {
		if (strcmp(me->mnt_dir, abs) != 0)
			continue;
		snprintf(e->src, sizeof(e->src), "%s", me->mnt_fsname);
		snprintf(e->type, sizeof(e->type), "%s", me->mnt_type);
		snprintf(e->dir, sizeof(e->dir), "%s", me->mnt_dir);
		snprintf(e->opts, sizeof(e->opts), "%s", me->mnt_opts);
		found = 1;
	}
	endmntent(f);
	return found;
}

/* Lazily: a dead mount has nobody to answer a proper unmount. */
int mount_detach(const char *dir)
{
	char *argv[] = { "fusermount3", "-u", "-z", (char *)dir, NULL };
	int status;
	pid_t pid;

	if (geteuid() == 0)
		return umount2(dir, MNT_DETACH) == 0 ? 0 : -errno;
	if (posix_spawnp(&pid, "fusermount3", NULL, NULL, argv, environ) != 0)
		return -ENOENT;
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EPERM;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Who is using an image: a chunkfs mount of it (and its daemon), or a
 * daemon still writing after its mount went away.
 *
 * A FUSE umount returns as soon as the kernel lets go of the mount; the
 * daemon then writes what it still holds and marks every chunk clean,
 * holding the image's write lock (flock) until it is done.  A command
 * run right after umount would see chunks still dirty (fsck reports
 * problems that are not there) or the image "in use": img_wait() waits
 * for such a daemon first.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mntent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "tool.h"

#define WAIT_SAY_AFTER  1.0     /* seconds of waiting before saying so */
#define WAIT_OTHER_MAX  10.0    /* for a holder that is not a daemon */
/* A daemon writes back what it holds after its umount: minutes at most
 * even for a large dirty cache on a slow disk.  Past that, something is
 * wrong (a daemon that is stuck, a mount we could not see), and the
 * caller reports the image in use rather than hanging. */
#define WAIT_DAEMON_MAX 300.0

double mono_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* The same file: a device by its number (another node for it is the
 * same device), anything else by device and inode, so that a hard link,
 * a bind mount or a symlink reaches the same image. */
/* What same_file compares, without a round trip to the filesystem: a
 * file on a FUSE mount whose daemon hangs (another process's open file,
 * found in /proc/PID/fd) would otherwise hang us too.  FUSE answers
 * AT_STATX_DONT_SYNC from the attributes it has. */
static int stat_nosync(const char *path, struct stat *st)
{
	struct statx x;

	if (statx(AT_FDCWD, path, AT_STATX_DONT_SYNC,
		  STATX_TYPE | STATX_INO, &x) < 0)
		return -1;
	memset(st, 0, sizeof(*st));
	st->st_mode = x.stx_mode;
	st->st_ino = x.stx_ino;
	st->st_dev = makedev(x.stx_dev_major, x.stx_dev_minor);
	st->st_rdev = makedev(x.stx_rdev_major, x.stx_rdev_minor);
	return 0;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	mode_t ta = a->st_mode & S_IFMT, tb = b->st_mode & S_IFMT;

	if (ta == S_IFBLK || ta == S_IFCHR || tb == S_IFBLK || tb == S_IFCHR)
		return ta == tb && a->st_rdev == b->st_rdev;
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* The mount point of a chunkfs mount of the image img.  The daemon names
 * the image's real path as the source, but the caller may have reached
 * the image by another one (a hard link, a bind mount): sources are
 * compared as files, not as strings.  Only the source is stat'ed, never
 * the mount point, which a dead or busy daemon would not answer. */
static bool image_mount_point(const struct stat *img, char *out, size_t len)
{
	FILE *f = setmntent("/proc/self/mounts", "r");
	struct mntent *me;
	struct stat st;
	bool found = false;

	if (!f)
		return false;
	while (!found && (me = getmntent(f))) {
		if (strcmp(me->mnt_type, "fuse.chunkfs") != 0 ||
		    stat_nosync(me->mnt_fsname, &st) < 0 || !same_file(&st, img))
			continue;
		snprintf(out, len, "%s", me->mnt_dir);
		found = true;
	}
	endmntent(f);
	return found;
}

static bool pid_has_open(const char *pid, const struct stat *img)
{
	char p[64 + NAME_MAX];
	struct dirent *de;
	struct stat st;
	bool found = false;
	DIR *d;

	snprintf(p, sizeof(p), "/proc/%s/fd", pid);
	d = opendir(p);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/proc/%s/fd/%s", pid, de->d_name);
		if (stat_nosync(p, &st) == 0)
			found = same_file(&st, img);
	}
	closedir(d);
	return found;
}

/* A daemon that holds /dev/fuse open still serves its mount (or is about
 * to): the daemon lets go of it before it writes back and marks its
 * chunks clean (daemon/mount.c, run_mount).  The mount table may not name
 * the image as we can reach it (the daemon was given fsname=, or the
 * path it resolved is gone), but such a daemon is not finishing, and
 * waiting for it would never end. */
static bool serves_mount(pid_t pid)
{
	struct stat fuse;
	char p[32];

	if (pid <= 0 || stat("/dev/fuse", &fuse) < 0)
		return false;
	snprintf(p, sizeof(p), "%d", (int)pid);
	return pid_has_open(p, &fuse);
}

/* Another process that has the image open (the lowest pid; 0 if none we
 * may see: /proc/PID/fd of other users needs root). */
static pid_t image_holder(const struct stat *img)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t self = getpid(), best = 0, pid;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		pid = (pid_t)atoi(de->d_name);
		if (pid <= 0 || pid == self || (best && pid > best))
			continue;
		if (pid_has_open(de->d_name, img))
			best = pid;
	}
	closedir(d);
	return best;
}

/* Whether a writer holds the image: the POSIX write lock on its first
 * byte that the library's writer takes beside its flock (bdev_file.c),
 * tested with F_OFD_GETLK, which takes no lock: even a moment's shared
 * lock would make a writer opening the image just then fail with "in
 * use".  (/proc/locks would show the flock too, but every read of it
 * waits for an RCU grace period.)  A writer that holds only the flock (a
 * chunkfs built before the lock was added) is not seen here; its image
 * still cannot be opened for writing. */
static bool write_locked(const char *img)
{
	struct flock l = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
	int fd = open(img, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	bool locked;

	if (fd < 0)
		return false;
	locked = fcntl(fd, F_OFD_GETLK, &l) == 0 && l.l_type == F_WRLCK;
	close(fd);
	return locked;
}

/* A chunkfs mount daemon: "chunkfs mount ...", "mount.chunkfs ..." or
 * "chunkfs IMAGE DIR -o ..." (as mount.fuse3 runs it). */
static bool is_daemon(pid_t pid)
{
	char p[64], buf[4096];
	size_t l0;
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/cmdline", (int)pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	if (strstr(buf, "mount.chunkfs") || strstr(buf, "mount.fuse.chunkfs"))
		return true;
	/* argv[1] follows argv[0]'s NUL */
	l0 = strlen(buf);
	if ((ssize_t)l0 + 1 < n && strcmp(buf + l0 + 1, "mount") == 0)
		return true;
	for (ssize_t i = 0; i + 3 < n; i++)
		if (buf[i] == 0 && strcmp(buf + i + 1, "-o") == 0)
			return true;
	return false;
}

static void say_waiting(const char *img, pid_t pid, bool daemon)
{
	if (!pid)
		fprintf(stderr, "%s: waiting for the process writing %s to finish\n",
			tool_prog, img);
	else if (daemon)
		fprintf(stderr, "%s: waiting for the chunkfs daemon (pid %d) to finish "
			"writing %s\n", tool_prog, (int)pid, img);
	else
		fprintf(stderr, "%s: waiting for process %d to finish writing %s\n",
			tool_prog, (int)pid, img);
}

int img_wait(const char *img, struct img_use *u)
{
	double t0 = mono_now(), waited;
	bool said = false, looked = false, daemon = false;
	struct stat st;

	memset(u, 0, sizeof(*u));
	if (stat(img, &st) < 0)
		return 0;               /* the caller's open reports it */
	while (write_locked(img)) {
		u->busy = true;
		if (image_mount_point(&st, u->mnt, sizeof(u->mnt))) {
			u->pid = image_holder(&st);
			break;          /* mounted: in use, not finishing */
		}
		if (!looked) {
			/* unknown (another user's process): assume the daemon */
			u->pid = image_holder(&st);
			daemon = !u->pid || is_daemon(u->pid);
			looked = true;
		}
		if (daemon && serves_mount(u->pid))
			break;          /* its mount is somewhere we cannot name */
		waited = mono_now() - t0;
		if (waited >= (daemon ? WAIT_DAEMON_MAX : WAIT_OTHER_MAX)) {
			if (said || daemon)
				fprintf(stderr, "%s: %s is still being written after %.0f "
					"seconds: giving up waiting\n", tool_prog, img, waited);
			break;          /* the caller says "in use" */
		}
		if (!said && waited >= WAIT_SAY_AFTER) {
			say_waiting(img, u->pid, daemon);
			said = true;
		}
		usleep(20000);
		u->busy = false;
	}
	return 0;
}

void warn_mount_unknown(const char *img, const struct img_use *u)
{
	char who[32] = "a process";

	if (!u->busy || u->mnt[0])
		return;
	if (u->pid)
		snprintf(who, sizeof(who), "pid %d", (int)u->pid);
	warn_msg("%s is in use by %s, its mount point not known: this reads the "
		 "image as last written, which may lag behind", img, who);
}

bool img_same(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && same_file(&sa, &sb);
}

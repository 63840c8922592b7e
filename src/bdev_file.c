/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* File / block-device backend.
 *
 * pread/pwrite carry their own offset, so one descriptor can be shared by
 * any number of threads without locking.
 */
#include "bdev.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

struct file_bdev {
	struct cfs_bdev bd;     /* first, so the two pointers convert */
	int fd;
	int is_blkdev;
};

static struct file_bdev *to_file(struct cfs_bdev *bd)
{
	return (struct file_bdev *)bd;
}

static int file_read(struct cfs_bdev *bd, uint64_t blk, uint32_t count,
		     void *buf)
{
	struct file_bdev *f = to_file(bd);
	uint8_t *p = buf;
	size_t left = (size_t)count * bd->block_size;
	off_t off = (off_t)(blk * bd->block_size);

	while (left) {
		ssize_t n = pread(f->fd, p, left, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) {
			/* Images are sparse files that may end in a hole the
			 * size was never extended over; a disk can't. */
			if (f->is_blkdev)
				return -EIO;
			memset(p, 0, left);
			return 0;
		}
		p += n;
		left -= (size_t)n;
		off += n;
	}
	return 0;
}

static int file_write(struct cfs_bdev *bd, uint64_t blk, uint32_t count,
		      const void *buf)
{
	struct file_bdev *f = to_file(bd);
	const uint8_t *p = buf;
	size_t left = (size_t)count * bd->block_size;
	off_t off = (off_t)(blk * bd->block_size);

	while (left) {
		ssize_t n = pwrite(f->fd, p, left, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;    /* no progress and no reason given */
		p += n;
		left -= (size_t)n;
		off += n;
	}
	return 0;
}

static int file_flush(struct cfs_bdev *bd)
{
	struct file_bdev *f = to_file(bd);

	while (fdatasync(f->fd) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

/* Each run written out and waited for, then one write with RWF_DSYNC of
 * a block already among them, its own bytes again: the host filesystem
 * commits the image's metadata (the blocks it allocated for the runs)
 * and flushes the disk's cache, as fdatasync does, but it writes out no
 * other dirty pages of the image.  The caller keeps every writer out, so
 * the block reads back as last written.  Where the host cannot (an old
 * kernel, a pipe), fdatasync. */
static int file_flush_ranges(struct cfs_bdev *bd, const struct cfs_brange *r, size_t n)
{
	struct file_bdev *f = to_file(bd);
	uint64_t end = bd->nblocks * bd->block_size;
	const unsigned how = SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
			     SYNC_FILE_RANGE_WAIT_AFTER;
	struct iovec iov;
	uint8_t *buf;
	size_t i, pick = n;
	ssize_t got;

	for (i = 0; i < n; i++) {
		uint64_t len = r[i].off >= end ? 0 :
			       r[i].len < end - r[i].off ? r[i].len : end - r[i].off;

		if (!len)
			continue;
		/* the last: the file's own data where it has any, not a run
		 * discarded since (a hole read back would be written) */
		pick = i;
		while (sync_file_range(f->fd, (off_t)r[i].off, (off_t)len, how) < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EIO || errno == ENOMEM || errno == ENOSPC)
				return -errno;
			return file_flush(bd);
		}
	}
	if (pick == n)
		return 0;       /* nothing written since the last flush */
	buf = malloc(bd->block_size);
	if (!buf)
		return -ENOMEM;
	iov.iov_base = buf;
	iov.iov_len = bd->block_size;
	got = pread(f->fd, buf, bd->block_size, (off_t)(r[pick].off / bd->block_size *
							 bd->block_size));
	if (got != (ssize_t)bd->block_size) {
		free(buf);
		return file_flush(bd);
	}
	while ((got = pwritev2(f->fd, &iov, 1, (off_t)(r[pick].off / bd->block_size *
						      bd->block_size), RWF_DSYNC)) < 0 &&
	       errno == EINTR)
		;
	free(buf);
	if (got == (ssize_t)bd->block_size)
		return 0;
	if (got < 0 && (errno == EIO || errno == ENOSPC))
		return -errno;
	return file_flush(bd);
}

static void file_prefetch(struct cfs_bdev *bd, uint64_t blk, uint32_t count)
{
	struct file_bdev *f = to_file(bd);

	/* only a hint: a failure costs nothing but the head start */
	(void)posix_fadvise(f->fd, (off_t)(blk * bd->block_size),
			    (off_t)count * bd->block_size, POSIX_FADV_WILLNEED);
}

static void file_scattered(struct cfs_bdev *bd, int on)
{
	struct file_bdev *f = to_file(bd);

	(void)posix_fadvise(f->fd, 0, 0, on ? POSIX_FADV_RANDOM : POSIX_FADV_NORMAL);
}

/* A hole in an image file, a discard on a disk: either way the storage
 * may reuse the space. */
static int file_discard(struct cfs_bdev *bd, uint64_t blk, uint32_t count)
{
	struct file_bdev *f = to_file(bd);
	uint64_t range[2] = { blk * bd->block_size, (uint64_t)count * bd->block_size };

	if (f->is_blkdev)
		return ioctl(f->fd, BLKDISCARD, range) < 0 ? -errno : 0;
	if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)range[0], (off_t)range[1]) < 0)
		return errno == ENOSYS ? -EOPNOTSUPP : -errno;
	return 0;
}

static int file_size(int fd, uint64_t *size, int *is_blkdev);

static int file_grow(struct cfs_bdev *bd, uint64_t bytes)
{
	struct file_bdev *f = to_file(bd);
	uint64_t size;
	int ret = file_size(f->fd, &size, &f->is_blkdev);

	if (ret < 0)
		return ret;
	/* an image file grows, sparse; a disk has the size it has */
	if (!f->is_blkdev && size < bytes) {
		if (ftruncate(f->fd, (off_t)bytes) < 0)
			return -errno;
		size = bytes;
	}
	bd->nblocks = size / bd->block_size;
	return 0;
}

static void file_destroy(struct cfs_bdev *bd)
{
	struct file_bdev *f = to_file(bd);

	close(f->fd);
	free(f);
}

static const struct cfs_bdev_ops file_ops = {
	.read = file_read,
	.write = file_write,
	.flush = file_flush,
	.flush_ranges = file_flush_ranges,
	.destroy = file_destroy,
	.prefetch = file_prefetch,
	.discard = file_discard,
	.grow = file_grow,
	.scattered = file_scattered,
};

static int file_size(int fd, uint64_t *size, int *is_blkdev)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	*is_blkdev = S_ISBLK(st.st_mode);
	if (S_ISREG(st.st_mode)) {
		*size = (uint64_t)st.st_size;
		return 0;
	}
	if (S_ISBLK(st.st_mode))
		return ioctl(fd, BLKGETSIZE64, size) < 0 ? -errno : 0;
	return S_ISDIR(st.st_mode) ? -EISDIR : -ENOTBLK;
}

/* The writer also holds a POSIX write lock on the first byte (an open
 * file description's, so it lives and dies with the flock): others see it
 * with F_OFD_GETLK without taking any lock, where the flock shows only in
 * /proc/locks, whose every read waits for an RCU grace period (about 10 ms
 * of a `chunkfs fsck` that has nothing to check).  Where the file cannot
 * take such locks the flock alone guards the image. */
static int lock_shown(int fd)
{
	struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };

	if (fcntl(fd, F_OFD_SETLK, &l) == 0)
		return 0;
	return errno == EAGAIN || errno == EACCES ? -EBUSY : 0;
}

int cfs_bdev_file_open(const char *path, int flags, uint32_t block_size,
		       struct cfs_bdev **out)
{
	struct file_bdev *f = NULL;
	uint64_t size;
	int acc = flags & O_ACCMODE;
	int ret;

	*out = NULL;
	if (!path || (acc != O_RDONLY && acc != O_RDWR) ||
	    !cfs_bdev_block_size_valid(block_size))
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fd = open(path, flags | O_CLOEXEC, 0644);
	if (f->fd < 0) {
		ret = -errno;
		goto out;
	}
	ret = file_size(f->fd, &size, &f->is_blkdev);
	if (ret)
		goto out;
	/* One writer at a time: a second read-write open (another mount or
	 * an offline edit of a mounted image) would corrupt it.  Readers take
	 * no lock so that `chunkfs info` works on a mounted image. */
	if (acc == O_RDWR && flock(f->fd, LOCK_EX | LOCK_NB) < 0) {
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		goto out;
	}
	if (acc == O_RDWR && (ret = lock_shown(f->fd)) < 0)
		goto out;
	f->bd.ops = &file_ops;
	f->bd.block_size = block_size;
	f->bd.nblocks = size / block_size;
	f->bd.read_only = acc == O_RDONLY;
	snprintf(f->bd.name, sizeof(f->bd.name), "%s", path);
	*out = &f->bd;
	f = NULL;
out:
	if (f) {
		if (f->fd >= 0)
			close(f->fd);
		free(f);
	}
	return ret;
}

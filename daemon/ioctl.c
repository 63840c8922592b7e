/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs mount: ioctls on the mount.
 *
 * The kernel passes a FUSE filesystem "restricted" ioctls only: the
 * command's _IOC direction and size say what it copies in and out, so
 * only well-formed commands (_IOR/_IOW/_IOWR with the argument's true
 * size) can work, and on a directory only with FUSE_CAP_IOCTL_DIR (asked
 * for in op_init).  FITRIM is one (_IOWR('X', 121, struct fstrim_range)),
 * so fstrim(8) reaches us through the mount point; CHUNKFS_IOC_RESIZE
 * (daemon/resize_ioctl.h) is `chunkfs resize MOUNTPOINT`, CHUNKFS_IOC_SCRUB
 * and CHUNKFS_IOC_SCRUB_READ (daemon/scrub_ioctl.h) `chunkfs scrub`,
 * CHUNKFS_IOC_STATUS (daemon/status_ioctl.h) `chunkfs info`.
 *
 * mount_ioctl() is the one dispatch: every ioctl the mount answers is a
 * case there, its work in a function of its own.
 */
#include <errno.h>
#include <linux/fs.h>
#include <string.h>

#include "daemon.h"
#include "resize_ioctl.h"
#include "scrub_ioctl.h"
#include "status_ioctl.h"
#include "trim.h"

/* FITRIM as ext4 does it: CAP_SYS_ADMIN (here: uid 0), EINVAL for a start
 * past the end or a minimum run longer than the filesystem; on return
 * len is the number of bytes discarded.  cfs_trim works on the whole
 * filesystem, so a range covering part of it trims all of it: discarding
 * a free block outside the range is harmless. */
static int ioctl_fitrim(fuse_req_t req, const void *in, size_t in_size,
			struct fstrim_range *out)
{
	struct mnt *m = fuse_req_userdata(req);
	struct cfs_trim_result res;
	struct cfs_info info;
	struct fstrim_range r;
	uint64_t size;
	int ret;

	if (fuse_req_ctx(req)->uid != 0)
		return -EPERM;
	if (m->rdonly)
		return -EROFS;
	if (in_size < sizeof(r))
		return -EINVAL;
	memcpy(&r, in, sizeof(r));
	ret = cfs_get_info(m->fs, &info);
	if (ret < 0)
		return ret;
	size = info.total_blocks * info.block_size;
	if (r.start >= size || r.minlen > size)
		return -EINVAL;
	ret = cfs_trim(m->fs, (r.minlen + info.block_size - 1) / info.block_size, &res);
	if (ret < 0)
		return ret;
	r.len = res.blocks * info.block_size;
	*out = r;
	return 0;
}

void mount_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		 struct fuse_file_info *fi, unsigned flags, const void *in,
		 size_t in_size, size_t out_size)
{
	union {
		struct fstrim_range trim;
		struct chunkfs_resize_arg resize;
		struct chunkfs_scrub_arg scrub;
		struct chunkfs_scrub_page page;
		struct chunkfs_status status;
	} out;
	struct mnt *m = fuse_req_userdata(req);
	size_t out_len = 0;
	int ret;

	(void)ino;
	(void)arg;
	(void)fi;
	if (flags & FUSE_IOCTL_COMPAT) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	switch (cmd) {
	case FITRIM:
		out_len = sizeof(out.trim);
		ret = out_size < out_len ? -EINVAL : ioctl_fitrim(req, in, in_size, &out.trim);
		break;
	case CHUNKFS_IOC_RESIZE:
		out_len = sizeof(out.resize);
		ret = out_size < out_len ? -EINVAL :
		      mount_resize_ioctl(req, ino, in, in_size, &out.resize);
		break;
	case CHUNKFS_IOC_SCRUB:
		out_len = sizeof(out.scrub);
		ret = out_size < out_len ? -EINVAL :
		      mount_scrub_ioctl(req, ino, in, in_size, &out.scrub);
		break;
	case CHUNKFS_IOC_SCRUB_READ:
		out_len = sizeof(out.page);
		ret = out_size < out_len ? -EINVAL :
		      mount_scrub_read_ioctl(req, ino, in, in_size, &out.page);
		break;
	case CHUNKFS_IOC_STATUS:
		out_len = sizeof(out.status);
		memset(&out.status, 0, sizeof(out.status));
		out.status.transport = mount_uring_serving() ? CHUNKFS_TRANSPORT_URING :
				       CHUNKFS_TRANSPORT_DEV;
		ret = out_size < out_len ? -EINVAL : 0;
		break;
	default:
		ret = -ENOTTY;
		break;
	}
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_ioctl(req, 0, &out, out_len);
	/* the request is gone once answered: m was taken before */
	if (cmd == CHUNKFS_IOC_SCRUB)
		scrubber_inval(m);
}

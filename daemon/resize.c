/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's side of online grow (daemon/resize_ioctl.h), a case of the
 * mount's ioctl dispatch (daemon/ioctl.c).  cfs_resize excludes every
 * other operation while it adds chunks, so a workload only pauses.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "resize_ioctl.h"

/* The outcome goes back in out (error and msg), the ioctl itself
 * succeeding, so the caller gets the library's reason; a request that
 * is not one (not the mount point, not root, too short) fails it. */
int mount_resize_ioctl(fuse_req_t req, fuse_ino_t ino, const void *in, size_t in_size,
		       struct chunkfs_resize_arg *out)
{
	struct mnt *m = fuse_req_userdata(req);
	struct cfs_info info;
	const char *why;
	int ret;

	/* asked of the mount point, as xfs_growfs does */
	if (ino != FUSE_ROOT_ID)
		return -ENOTTY;
	if (in_size < sizeof(*out))
		return -EINVAL;
	/* CAP_SYS_ADMIN for resize2fs and xfs_growfs: root here */
	if (fuse_req_ctx(req)->uid != 0)
		return -EPERM;
	memcpy(out, in, sizeof(*out));
	memset(&out->res, 0, sizeof(out->res));
	if (m->rdonly) {
		ret = -EROFS;
		why = "mounted read-only";
	} else if (out->size && cfs_get_info(m->fs, &info) == 0 &&
		   out->size / info.block_size < info.total_blocks) {
		/* the moves are made for an unmounted image only: under a
		 * mount they are untested, and a file whose inode must move
		 * would change number under the kernel (docs/MOVE.md) */
		ret = -EOPNOTSUPP;
		why = "shrinking a mounted filesystem is not supported yet: unmount it "
		      "and give the image (docs/MOVE.md)";
	} else {
		ret = cfs_resize(m->fs, out->size, &out->res);
		why = ret < 0 ? cfs_last_error() : "";
	}
	out->error = ret;
	memset(out->msg, 0, sizeof(out->msg));
	snprintf(out->msg, sizeof(out->msg), "%s", why);
	return 0;
}

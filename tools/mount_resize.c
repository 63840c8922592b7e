/* The daemon's side of online grow (tools/resize_ioctl.h): the ioctl
 * handler of the FUSE operations.  cfs_resize excludes every other
 * operation while it adds chunks, so a workload only pauses.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mount.h"
#include "resize_ioctl.h"

void mount_op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		    struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		    size_t in_bufsz, size_t out_bufsz)
{
	struct mnt *m = fuse_req_userdata(req);
	struct chunkfs_resize_arg a;
	const char *why;
	int ret;

	(void)arg;
	(void)fi;
	(void)flags;
	/* asked of the mount point, as xfs_growfs does */
	if (cmd != CHUNKFS_IOC_RESIZE || ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	if (in_bufsz < sizeof(a) || out_bufsz < sizeof(a)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* CAP_SYS_ADMIN for resize2fs and xfs_growfs: root here */
	if (fuse_req_ctx(req)->uid != 0) {
		fuse_reply_err(req, EPERM);
		return;
	}
	memcpy(&a, in_buf, sizeof(a));
	memset(&a.res, 0, sizeof(a.res));
	if (m->rdonly) {
		ret = -EROFS;
		why = "mounted read-only";
	} else {
		ret = cfs_resize(m->fs, a.size, &a.res);
		why = ret < 0 ? cfs_last_error() : "";
	}
	a.error = ret;
	memset(a.msg, 0, sizeof(a.msg));
	snprintf(a.msg, sizeof(a.msg), "%s", why);
	fuse_reply_ioctl(req, 0, &a, sizeof(a));
}

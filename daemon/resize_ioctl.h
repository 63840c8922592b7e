/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Online grow: what `chunkfs resize MOUNTPOINT` asks the mount's daemon,
 * as xfs_growfs asks XFS, through an ioctl on the mount's root directory
 * (FUSE passes it to the daemon: daemon/resize.c).
 *
 * The daemon always answers with the ioctl succeeding and the outcome in
 * error (0 or a negative errno) and msg, so the reason reaches the caller
 * as well as the errno.  The size is part of the ioctl number, so a caller
 * built with another layout gets ENOTTY.
 */
#ifndef CHUNKFS_RESIZE_IOCTL_H
#define CHUNKFS_RESIZE_IOCTL_H

#include <stdint.h>
#include <sys/ioctl.h>

#include "chunkfs.h"

#define CHUNKFS_RESIZE_MSG 128

struct chunkfs_resize_arg {
	uint64_t size;                  /* in: bytes, 0 = the whole device */
	int32_t error;                  /* out, and the rest */
	uint32_t pad;                   /* zero */
	struct cfs_resize_result res;
	char msg[CHUNKFS_RESIZE_MSG];
};

#define CHUNKFS_IOC_RESIZE _IOWR(0xCF, 1, struct chunkfs_resize_arg)

#endif

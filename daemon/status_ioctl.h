/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What `chunkfs info` asks a mount's daemon about itself, through an
 * ioctl on the mount's root directory (daemon/ioctl.c), as it asks
 * CHUNKFS_IOC_RESIZE and CHUNKFS_IOC_SCRUB: anyone may ask. */
#ifndef CHUNKFS_STATUS_IOCTL_H
#define CHUNKFS_STATUS_IOCTL_H

#include <stdint.h>
#include <sys/ioctl.h>

enum chunkfs_transport {
	CHUNKFS_TRANSPORT_DEV = 1,      /* /dev/fuse */
	CHUNKFS_TRANSPORT_URING = 2,    /* FUSE over io_uring */
};

struct chunkfs_status {
	uint32_t transport;             /* enum chunkfs_transport */
	uint32_t pad;
	uint64_t reserved[7];           /* zero */
};

#define CHUNKFS_IOC_STATUS _IOR(0xCF, 4, struct chunkfs_status)

#endif

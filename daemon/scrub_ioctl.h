/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Online check and repair: what `chunkfs scrub MOUNTPOINT` asks the
 * mount's daemon, as xfs_scrub asks XFS, through ioctls on the mount's
 * root directory (daemon/scrub.c answers).
 *
 * CHUNKFS_IOC_SCRUB checks one chunk (cfs_scrub) and keeps the problems it
 * found; CHUNKFS_IOC_SCRUB_READ hands them over a page at a time, as
 * records of the fields of struct cfs_fsck_problem separated by
 * SCRUB_FS (0x1f), each record ended by SCRUB_RS (0x1e).  The daemon
 * answers with the ioctl succeeding and the outcome in error (0 or a
 * negative errno), except for a caller who may not scrub (EPERM) or a
 * request that is not one.  The size is part of each ioctl number, so a
 * caller built with another layout gets ENOTTY.
 */
#ifndef CHUNKFS_SCRUB_IOCTL_H
#define CHUNKFS_SCRUB_IOCTL_H

#include <stdint.h>
#include <sys/ioctl.h>

#include "chunkfs.h"

#define SCRUB_FS '\x1f'
#define SCRUB_RS '\x1e'
#define SCRUB_QUERY UINT32_MAX          /* chunk: only say how many there are */
#define CHUNKFS_SCRUB_PAGE 4000

struct chunkfs_scrub_arg {
	uint32_t chunk;                 /* in: the chunk, or SCRUB_QUERY */
	int32_t mode;                   /* in: CFS_FSCK_* */
	int32_t error;                  /* out, and the rest */
	uint32_t nchunks;               /* chunks in the filesystem */
	uint64_t token;                 /* names this chunk's report */
	uint64_t report_bytes;
	struct cfs_fsck_result res;
};

struct chunkfs_scrub_page {
	uint64_t token;                 /* in */
	uint64_t off;                   /* in: offset in the report */
	uint32_t len;                   /* out: bytes in data */
	uint32_t pad;
	char data[CHUNKFS_SCRUB_PAGE];
};

#define CHUNKFS_IOC_SCRUB      _IOWR(0xCF, 2, struct chunkfs_scrub_arg)
#define CHUNKFS_IOC_SCRUB_READ _IOWR(0xCF, 3, struct chunkfs_scrub_page)

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* chunkfs probe: is this a chunkfs, and which one (`chunkfs probe`, run by
 * udev on every block device libblkid does not recognise).
 *
 * Internal to the library and the chunkfs command (include/chunkfs.h does
 * not declare it).  The caller reads the bytes (udev wants no lock and no
 * write access); this decides from them alone.
 */
#ifndef CHUNKFS_PROBE_H
#define CHUNKFS_PROBE_H

#include <stddef.h>
#include <stdint.h>

/* How many bytes from the start of the device the probe looks at. */
#define CFS_PROBE_BYTES 1024

struct cfs_probe {
	uint32_t version;        /* format version */
	uint32_t block_size;
	uint8_t uuid[16];        /* the filesystem's UUID as tune sets it */
	char label[64];          /* NUL terminated */
	int newer;               /* incompatible features this chunkfs lacks */
};

/* buf: the first len bytes of a device or file of dev_bytes bytes (len is
 * less than CFS_PROBE_BYTES only when the device is).
 * 0: no chunkfs superblock there (no magic).
 * 1: a chunkfs superblock whose checksum and geometry hold, as an open
 *    checks them (section 20 of docs/FORMAT.md), *p filled in.  With
 *    incompatible features unknown here (p->newer) the geometry is not
 *    checked: a newer chunkfs may lay it out otherwise, and the identity
 *    is still good.
 * -EBADMSG (checksum), -EUCLEAN (truncated, bad geometry) or
 * -EPROTONOSUPPORT (format version): the magic is there but the
 *    superblock cannot be used; *why says why. */
int cfs_probe_super(const uint8_t *buf, size_t len, uint64_t dev_bytes,
		    struct cfs_probe *p, const char **why);

#endif

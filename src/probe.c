/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Identifying a chunkfs from the first bytes of a device: the primary
 * superblock only, as libblkid does for every filesystem.  The backup is
 * not searched: finding it means reading up to 17 MiB at the end of the
 * device (src/super.c, find_backup), too much for a probe udev runs on
 * every block device, and a damaged primary is fsck's to restore.
 */
#include <errno.h>
#include <string.h>

#include "format.h"
#include "probe.h"

int cfs_probe_super(const uint8_t *buf, size_t len, uint64_t dev_bytes,
		    struct cfs_probe *p, const char **why)
{
	uint8_t sbuf[CFS_SB_SIZE] = { 0 };
	struct cfs_super sb;
	int ret;

	*why = NULL;
	memset(p, 0, sizeof(*p));
	memcpy(sbuf, buf, len < sizeof(sbuf) ? len : sizeof(sbuf));
	ret = cfs_super_decode(sbuf, &sb);
	if (ret == -EUCLEAN)
		return 0;
	/* the magic, then the end of the device: a few bytes of a chunkfs
	 * would otherwise show as a checksum mismatch */
	if (len < CFS_SB_SIZE)
		return *why = "image is truncated (shorter than its superblock)", -EUCLEAN;
	if (ret < 0)
		return *why = "superblock checksum mismatch", ret;
	if (sb.version != CFS_FORMAT_VERSION)
		return *why = "unsupported format version", -EPROTONOSUPPORT;
	p->newer = (sb.feat_incompat & ~CFS_FEAT_INCOMPAT_SUPP) != 0;
	if (!p->newer) {
		/* validate before dividing by the block size it names */
		ret = cfs_super_validate(&sb, UINT64_MAX, why);
		if (ret == 0)
			ret = cfs_super_validate(&sb, dev_bytes / sb.block_size, why);
		if (ret < 0)
			return ret;
	}
	p->version = sb.version;
	p->block_size = sb.block_size;
	memcpy(p->uuid, sb.user_uuid, sizeof(p->uuid));
	memcpy(p->label, sb.label, sizeof(p->label));
	p->label[sizeof(p->label) - 1] = 0;
	return 1;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* chunkfs tune: the superblock fields that may change after mkfs.
 *
 * The UUID seeds every checksum and is copied into every chunk header, so
 * changing it in place would mean rewriting all metadata, and a crash half
 * way would leave an image no one can read.  Instead, as ext4's
 * metadata_csum_seed does, the first change keeps the original UUID as
 * meta_uuid (incompat META_UUID) for the metadata and the new one is only
 * shown; one superblock write makes the change, atomically under its CRC.
 */
#include "tune.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "bdev.h"
#include "fsint.h"

int cfs_tune_mount_opts_valid(const char *s)
{
	size_t n = strlen(s);

	if (n > CFS_TUNE_TEXT_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] <= ' ' || s[i] > '~')
			return -EINVAL;
		if (s[i] == ',' && (i == 0 || i + 1 == n || s[i + 1] == ','))
			return -EINVAL;
	}
	return 0;
}

static int tune_uuid(struct cfs_super *sb, const struct cfs_tune *t)
{
	uint8_t u[16];

	if (t->uuid_random) {
		if (getrandom(u, sizeof(u), 0) != sizeof(u))
			return -errno;
		u[6] = (uint8_t)((u[6] & 0x0F) | 0x40);     /* version 4 */
		u[8] = (uint8_t)((u[8] & 0x3F) | 0x80);     /* RFC 4122 variant */
	} else {
		memcpy(u, t->uuid, sizeof(u));
	}
	/* sb->uuid is what metadata is bound to; only the shown one moves */
	memcpy(sb->user_uuid, u, sizeof(u));
	if (memcmp(u, sb->uuid, sizeof(u)) == 0)
		sb->feat_incompat &= ~CFS_FEAT_INCOMPAT_META_UUID;
	else
		sb->feat_incompat |= CFS_FEAT_INCOMPAT_META_UUID;
	return 0;
}

static int tune_apply(struct cfs_super *sb, const struct cfs_tune *t)
{
	if (t->label) {
		if (strlen(t->label) > CFS_TUNE_TEXT_MAX) {
			cfs_set_error("label too long (at most 63 bytes)");
			return -EINVAL;
		}
		memset(sb->label, 0, sizeof(sb->label));
		memcpy(sb->label, t->label, strlen(t->label));
	}
	if (t->mount_opts) {
		if (cfs_tune_mount_opts_valid(t->mount_opts) < 0) {
			cfs_set_error("bad mount options '%s' (at most 63 bytes, "
				      "comma-separated, no spaces)", t->mount_opts);
			return -EINVAL;
		}
		memset(sb->mount_opts, 0, sizeof(sb->mount_opts));
		memcpy(sb->mount_opts, t->mount_opts, strlen(t->mount_opts));
		if (*t->mount_opts)
			sb->feat_compat |= CFS_FEAT_COMPAT_MOUNT_OPTS;
		else
			sb->feat_compat &= ~CFS_FEAT_COMPAT_MOUNT_OPTS;
	}
	if (t->uuid || t->uuid_random)
		return tune_uuid(sb, t);
	return 0;
}

/* DYNINODES (FORMAT.md 10.4) can be turned off only while no chunk has
 * an inode cluster: an older chunkfs would not see their inodes. */
static int tune_dyninodes(struct cfs_fs *fs, struct cfs_super *sb, int on)
{
	struct chunk_inodes n;
	uint32_t c;

	if (on > 0) {
		sb->feat_incompat |= CFS_FEAT_INCOMPAT_DYNINODES;
		return 0;
	}
	for (c = 0; c < fs->sb.nchunks; c++)
		if (chunk_inodes(fs, c, &n), n.clusters) {
			cfs_set_error("chunk %u has inode clusters: dyninodes cannot be "
				      "turned off", c);
			return -EBUSY;
		}
	sb->feat_incompat &= ~CFS_FEAT_INCOMPAT_DYNINODES;
	return 0;
}

static int super_write_at(struct cfs_fs *fs, const struct cfs_super *sb, uint64_t blk)
{
	int ret = write_super(fs->bd, sb, blk);

	return ret ? ret : cfs_bdev_flush(fs->bd);
}

int cfs_tune(struct cfs_fs *fs, const struct cfs_tune *t)
{
	struct cfs_super sb = fs->sb;
	int ret;

	if (fs->rdonly)
		return -EROFS;
	if (fs->sb_from_backup) {
		/* the primary is bad: leave its repair to fsck */
		cfs_set_error("the primary superblock is damaged (run chunkfs fsck)");
		return -EUCLEAN;
	}
	ret = tune_apply(&sb, t);
	if (ret == 0 && t->dyninodes)
		ret = tune_dyninodes(fs, &sb, t->dyninodes);
	if (ret < 0)
		return ret;
	/* A crash between the two leaves a good primary with the change and
	 * an older backup, which fsck only reads when the primary is lost. */
	ret = super_write_at(fs, &sb, 0);
	if (ret == 0) {
		fs->sb = sb;
		icl_setup(fs);
	}
	if (ret == 0)
		ret = super_write_at(fs, &sb, sb.backup_sb_block);
	if (ret < 0)
		cfs_set_error("writing the superblock: %s", strerror(-ret));
	return ret;
}

void cfs_tune_mount_opts(struct cfs_fs *fs, char out[CFS_TUNE_TEXT_MAX + 1])
{
	memset(out, 0, CFS_TUNE_TEXT_MAX + 1);
	if (fs->sb.feat_compat & CFS_FEAT_COMPAT_MOUNT_OPTS)
		memcpy(out, fs->sb.mount_opts, strnlen(fs->sb.mount_opts,
						       CFS_TUNE_TEXT_MAX));
}

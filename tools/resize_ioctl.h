/* Online grow: what `chunkfs resize MOUNTPOINT` asks the mount's daemon,
 * as xfs_growfs asks XFS, through an ioctl on the mount's root directory
 * (FUSE passes it to the daemon: tools/mount_resize.c).
 *
 * Every field lies at its natural alignment with no padding, so 32- and
 * 64-bit callers agree on the layout.  The daemon always answers with the
 * ioctl succeeding and the outcome in error (0 or a negative errno) and
 * msg, so the reason reaches the caller as well as the errno.
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
	uint32_t old_chunks, new_chunks, block_size;
	uint64_t old_blocks, new_blocks, room_blocks, chunk_blocks;
	char msg[CHUNKFS_RESIZE_MSG];
};

#define CHUNKFS_IOC_RESIZE _IOWR(0xCF, 1, struct chunkfs_resize_arg)

static inline void resize_arg_from(struct chunkfs_resize_arg *a,
				   const struct cfs_resize_result *r)
{
	a->old_chunks = r->old_chunks;
	a->new_chunks = r->new_chunks;
	a->block_size = r->block_size;
	a->old_blocks = r->old_blocks;
	a->new_blocks = r->new_blocks;
	a->room_blocks = r->room_blocks;
	a->chunk_blocks = r->chunk_blocks;
}

static inline void resize_arg_to(const struct chunkfs_resize_arg *a,
				 struct cfs_resize_result *r)
{
	r->old_chunks = a->old_chunks;
	r->new_chunks = a->new_chunks;
	r->block_size = a->block_size;
	r->old_blocks = a->old_blocks;
	r->new_blocks = a->new_blocks;
	r->room_blocks = a->room_blocks;
	r->chunk_blocks = a->chunk_blocks;
}

#endif

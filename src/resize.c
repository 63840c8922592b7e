/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Grow a filesystem into space its device gained (resize2fs, xfs_growfs).
 *
 * Every chunk has the same size (docs/FORMAT.md section 6), so growing
 * means adding whole chunks after the last one: nothing already on disk
 * moves, and a new chunk costs one header block, as at mkfs (its bitmaps
 * and inode table start past their watermarks).  What is left over,
 * less than a chunk, stays unused like mkfs's remainder.
 *
 * Write order, so that a crash at any write leaves an image that opens
 * and checks clean at the old or the new size:
 *   1. headers of the new chunks after the first, flush (past the old
 *      filesystem's end: nothing reads them yet);
 *   2. the backup superblock at its new place, flush;
 *   3. the first new chunk's header, flush: it takes the old backup's
 *      block, so until step 2 was durable there was always one backup;
 *   4. the primary superblock, flush: the commit point.
 * Until step 4 the primary describes the old filesystem, whose blocks the
 * resize never touched; a search for the backup (repair open) finds the
 * new one, whose chunks are all written by then but the first new one.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "bdev.h"
#include "fsint.h"

/* A new chunk as mkfs makes one: clean, empty, nothing initialised. */
static void chunk_new(struct cfs_fs *fs, uint32_t c, int64_t now)
{
	struct chunk *ch = &fs->chunks[c];

	if (ch->index != c) {
		/* (c > 0) not set up by an earlier resize that failed */
		pthread_mutex_init(&ch->lock, NULL);
		pthread_mutex_init(&ch->state_lock, NULL);
	}
	ch->index = c;
	memset(&ch->hdr, 0, sizeof(ch->hdr));
	ch->hdr.index = c;
	memcpy(ch->hdr.uuid, fs->sb.uuid, 16);
	ch->hdr.free_blocks = (uint32_t)(fs->sb.chunk_blocks - fs->sb.data_start);
	ch->hdr.free_inodes = fs->sb.inodes_per_chunk;
	ch->hdr.last_check = now;
	ch->disk_state = 0;
	ch->disk_hdr = ch->hdr;
	ch->unmarked = 0;
	ch->hdr_dirty = 0;
	ch->hdr_bad = 0;
	ch->was_dirty = 0;
	ch->last_change = 0;
	ch->alloc_hint = fs->sb.data_start;
	ch->ialloc_hint = 0;
}

/* How many chunks fit in room blocks: the superblock, the chunks and
 * the backup after them. */
static uint32_t chunks_fitting(const struct cfs_super *sb, uint64_t room)
{
	uint64_t n = room < 2 ? 0 : (room - 2) / sb->chunk_blocks;

	return n > CFS_MAX_CHUNKS ? CFS_MAX_CHUNKS : (uint32_t)n;
}

static int write_flush(struct cfs_fs *fs, int ret)
{
	return ret < 0 ? ret : cfs_bdev_flush(fs->bd);
}

static int headers_write(struct cfs_fs *fs, uint32_t from, uint32_t to)
{
	int ret = 0;

	for (uint32_t c = from; c < to && ret == 0; c++)
		ret = chunk_write_header(fs, c, 0);
	return write_flush(fs, ret);
}

/* Steps 1-4 of the comment at the top. */
static int grow_write(struct cfs_fs *fs, const struct cfs_super *nsb)
{
	uint32_t old = fs->sb.nchunks;
	int64_t now = time(NULL);
	struct cfs_super osb = fs->sb;
	int ret;

	for (uint32_t c = old; c < nsb->nchunks; c++)
		chunk_new(fs, c, now);
	ret = headers_write(fs, old + 1, nsb->nchunks);
	if (ret == 0)
		ret = write_flush(fs, write_super(fs->bd, nsb, nsb->backup_sb_block));
	if (ret == 0)
		ret = headers_write(fs, old, old + 1);
	if (ret < 0)
		return ret;
	fs->sb = *nsb;
	ret = super_write_primary(fs);
	if (ret < 0)
		fs->sb = osb;   /* on disk it is one or the other: fsck decides */
	return ret;
}

/* The target size in blocks, and a superblock for it; -EOPNOTSUPP for a
 * shrink. */
static int grow_plan(struct cfs_fs *fs, uint64_t size, struct cfs_super *nsb,
		     struct cfs_resize_result *res)
{
	uint64_t room;
	int ret;

	if (size == 0) {
		/* the device's size now, not at the open */
		ret = cfs_bdev_grow(fs->bd, 0);
		if (ret < 0) {
			cfs_set_error("cannot get the device's size: %s", strerror(-ret));
			return ret;
		}
		size = fs->bd->nblocks * fs->bsize;
	}
	room = size / fs->bsize;
	res->room_blocks = room;
	if (room < fs->sb.total_blocks) {
		cfs_set_error("shrinking is not supported: the filesystem needs %llu "
			      "blocks of %u bytes, the new size holds %llu",
			      (unsigned long long)fs->sb.total_blocks, fs->bsize,
			      (unsigned long long)room);
		return -EOPNOTSUPP;
	}
	*nsb = fs->sb;
	nsb->nchunks = chunks_fitting(&fs->sb, room);
	if (nsb->nchunks < fs->sb.nchunks)    /* past the end of a capped cb */
		nsb->nchunks = fs->sb.nchunks;
	nsb->backup_sb_block = nsb->first_chunk_block +
			       (uint64_t)nsb->nchunks * nsb->chunk_blocks;
	nsb->total_blocks = nsb->backup_sb_block + 1;
	return 0;
}

static int resize_locked(struct cfs_fs *fs, uint64_t size, struct cfs_resize_result *res)
{
	struct cfs_super nsb;
	const char *why;
	int ret;

	/* a size between two blocks is its whole blocks, as resize2fs reads
	 * it: an image file is extended to that */
	size -= size % fs->bsize;
	ret = grow_plan(fs, size, &nsb, res);

	if (ret < 0 || nsb.nchunks == fs->sb.nchunks)
		return ret;
	if (size && fs->bd->nblocks * fs->bsize < size) {
		ret = cfs_bdev_grow(fs->bd, size);
		if (ret == -ERANGE) {
			cfs_set_error("cannot grow to %llu bytes: the device holds only %llu",
				      (unsigned long long)size,
				      (unsigned long long)(fs->bd->nblocks * fs->bsize));
			ret = -EFBIG;
		} else if (ret == -EFBIG) {
			cfs_set_error("cannot extend the image file to %llu bytes: the host "
				      "filesystem's limit on a file's size is smaller "
				      "(ftruncate: %s)", (unsigned long long)size,
				      strerror(EFBIG));
		} else if (ret < 0)
			cfs_set_error("cannot extend the image to %llu bytes: %s",
				      (unsigned long long)size, strerror(-ret));
		if (ret < 0)
			return ret;
	}
	ret = cfs_super_validate(&nsb, fs->bd->nblocks, &why);
	if (ret < 0) {
		cfs_set_error("new superblock would be invalid: %s", why);
		return ret;
	}
	ret = grow_write(fs, &nsb);
	if (ret < 0)
		cfs_set_error("writing the new chunks: %s", strerror(-ret));
	return ret;
}

static void result_fill(struct cfs_fs *fs, struct cfs_resize_result *res)
{
	res->new_chunks = fs->sb.nchunks;
	res->new_blocks = fs->sb.total_blocks;
	res->chunk_blocks = fs->sb.chunk_blocks;
	res->block_size = fs->bsize;
}

int cfs_resize(struct cfs_fs *fs, uint64_t size, struct cfs_resize_result *res)
{
	int ret;

	memset(res, 0, sizeof(*res));
	result_fill(fs, res);
	res->old_chunks = fs->sb.nchunks;
	res->old_blocks = fs->sb.total_blocks;
	if (fs->rdonly) {
		cfs_set_error("the filesystem is open read-only");
		return -EROFS;
	}
	if (fs->sb_from_backup) {
		cfs_set_error("the primary superblock is damaged (run chunkfs fsck)");
		return -EUCLEAN;
	}
	fence_wait(fs, 0);   /* nor a repair checked meanwhile (src/scrub.c) */
	/* no operation in flight sees the chunk count change under it */
	pthread_rwlock_wrlock(&fs->op_lock);
	ret = resize_locked(fs, size, res);
	result_fill(fs, res);
	pthread_rwlock_unlock(&fs->op_lock);
	return ret;
}

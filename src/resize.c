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
#include <stdlib.h>
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
	ch->hdr_unwritten = 0;
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
		ret = chunk_hdr_write_disk(fs, c, 0);
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

/* The target size in blocks, and a superblock for it (fewer chunks when
 * it is smaller: shrink_write's). */
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
	*nsb = fs->sb;
	nsb->nchunks = chunks_fitting(&fs->sb, room);
	if (room < fs->sb.total_blocks && nsb->nchunks == 0) {
		cfs_set_error("cannot shrink to %llu bytes: one chunk and the two "
			      "superblocks need %llu", (unsigned long long)size,
			      (unsigned long long)((fs->sb.chunk_blocks + 2) * fs->bsize));
		return -ENOSPC;
	}
	if (room >= fs->sb.total_blocks && nsb->nchunks < fs->sb.nchunks)
		nsb->nchunks = fs->sb.nchunks;   /* past the end of a capped cb */
	nsb->backup_sb_block = nsb->first_chunk_block +
			       (uint64_t)nsb->nchunks * nsb->chunk_blocks;
	nsb->total_blocks = nsb->backup_sb_block + 1;
	return 0;
}

/* Data blocks in use in chunks [from, n), and what chunks [0, from) can
 * still take. */
static void shrink_room(struct cfs_fs *fs, uint32_t from, uint64_t *used, uint64_t *avail)
{
	uint64_t data = fs->sb.chunk_blocks - fs->sb.data_start;
	uint32_t c;

	*used = *avail = 0;
	for (c = 0; c < fs->sb.nchunks; c++) {
		struct chunk *ch = &fs->chunks[c];

		pthread_mutex_lock(&ch->lock);
		if (c >= from)
			*used += data - ch->hdr.free_blocks;
		else
			*avail += chunk_avail_blocks(fs, ch);
		pthread_mutex_unlock(&ch->lock);
	}
}

/* Whether chunks [from, n) can be emptied: no directory's own inode in
 * them (files are renumbered, directories not yet), and room in the
 * chunks kept for their blocks.  Said before anything moves. */
static int shrink_check(struct cfs_fs *fs, uint32_t from)
{
	uint64_t used, avail;
	uint32_t c;

	for (c = from; c < fs->sb.nchunks; c++) {
		struct chunk *ch = &fs->chunks[c];

		if (ch->hdr.ndirs) {
			cfs_set_error("chunk %u holds %u directories: moving them would change "
				      "their inode numbers, which chunkfs does for files only "
				      "(docs/MOVE.md)", c, ch->hdr.ndirs);
			return -EOPNOTSUPP;
		}
	}
	shrink_room(fs, from, &used, &avail);
	if (used > avail) {
		cfs_set_error("the data does not fit: the chunks to drop hold %llu blocks "
			      "in use, the %u chunks kept have %llu free",
			      (unsigned long long)used, from, (unsigned long long)avail);
		return -ENOSPC;
	}
	return 0;
}

/* Shrink: the chunks past the new end emptied (src/move.c), then dropped.
 * Write order, the reverse of grow's:
 *   1. every move, each crash-safe on its own, and a full flush: the old
 *      filesystem, whole and consistent, with the last chunks empty;
 *   2. the primary superblock, flush: the commit point.  An open now
 *      never reads the dropped chunks; the old backup still describes
 *      the old size, whose chunks are all still on disk and empty;
 *   3. the backup at its new place (the first dropped chunk's header
 *      block, which nothing reads any more), flush;
 *   4. the old backup zeroed, flush, so that a search for a backup
 *      (repair open, FORMAT.md 4) cannot find the old size.
 * Writing the backup first, as grow does, would overwrite a header the
 * primary still names: a crash then would leave a chunk header to
 * rebuild. */
static int shrink_write(struct cfs_fs *fs, const struct cfs_super *nsb)
{
	struct cfs_move_result mr;
	struct cfs_super osb = fs->sb;
	uint8_t *zero;
	uint32_t c;
	int ret = shrink_check(fs, nsb->nchunks);

	for (c = fs->sb.nchunks; c-- > nsb->nchunks && ret == 0;)
		ret = move_evacuate_locked(fs, c, nsb->nchunks, &mr);
	/* what a later chunk's moves put in an earlier one counts too */
	for (c = nsb->nchunks; c < fs->sb.nchunks && ret == 0; c++) {
		ret = move_evacuate_locked(fs, c, nsb->nchunks, &mr);
		if (ret == 0 && (mr.left_inodes || mr.left_blocks)) {
			cfs_set_error("chunk %u still holds %llu inodes (%llu continuations) "
				      "and %llu blocks after the move: nothing was dropped",
				      c, (unsigned long long)mr.left_inodes,
				      (unsigned long long)mr.left_conts,
				      (unsigned long long)mr.left_blocks);
			ret = -ENOSPC;
		}
	}
	if (ret == 0)
		ret = fs_write_all(fs);
	if (ret < 0)
		return ret;
	fs->sb = *nsb;
	ret = super_write_primary(fs);
	if (ret < 0) {
		fs->sb = osb;   /* on disk it is one or the other: fsck decides */
		return ret;
	}
	ret = write_flush(fs, write_super(fs->bd, nsb, nsb->backup_sb_block));
	zero = calloc(1, fs->bsize);
	if (!zero)
		return ret < 0 ? ret : -ENOMEM;
	if (ret == 0)
		ret = write_flush(fs, cfs_bdev_write(fs->bd, osb.backup_sb_block, 1, zero));
	free(zero);
	return ret;
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
	if (nsb.nchunks < fs->sb.nchunks)
		return shrink_write(fs, &nsb);
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

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Allocation policy: which chunk a new inode, a new directory or a file's
 * next blocks go to.  The rules and the measurements behind them are in
 * docs/ALLOCATION.md, whose first section holds the space rules a user can
 * rely on.
 *
 * Every rule here is a preference.  Reserves are soft: a chunk's reserve is
 * handed out only when no chunk has room outside its reserve (chunk_pick's
 * second pass), so ENOSPC comes only when the whole filesystem is out.
 * Free counts are read without the chunk lock: a stale count only makes a
 * choice less good, and the allocation itself checks under the lock. */
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>

#include "fsint.h"

static uint64_t data_blocks(const struct cfs_fs *fs)
{
	return fs->sb.chunk_blocks - fs->sb.data_start;
}

/* 1/256 of a chunk's inodes, at least 2: for continuations and stubs of
 * files that live elsewhere, so its free blocks stay reachable. */
uint32_t alloc_inode_reserve(const struct cfs_fs *fs)
{
	uint32_t r = fs->sb.inodes_per_chunk / 256;

	return r < 2 ? 2 : r;
}

/* 1/256 of a chunk's data blocks, at least 4: for the growth of its own
 * directories, extent-tree nodes and xattr blocks, so a directory full of
 * small files does not continue in another chunk.  Small, because once
 * the chunk's inodes are gone only its own files can use it. */
uint32_t alloc_block_reserve(const struct cfs_fs *fs)
{
	uint64_t r = data_blocks(fs) / 256;

	return r < 4 ? 4 : (uint32_t)r;
}

uint64_t alloc_room_inodes(struct cfs_fs *fs, uint32_t c)
{
	uint64_t a = chunk_inodes_avail(fs, c), r = alloc_inode_reserve(fs);

	return a > r ? a - r : 0;
}

/* The inode slots c has now outside its reserves: free ones of its table
 * and of the clusters it made, none still to be made.  With inode
 * clusters the placement of directories fills chunks' tables before it
 * makes clusters anywhere (see room_inodes). */
static uint64_t room_slots(struct cfs_fs *fs, uint32_t c)
{
	uint64_t a = fs->chunks[c].hdr.free_inodes;
	uint64_t r = alloc_inode_reserve(fs) + (fs->checking ? 0 : CFS_REPAIR_INODES);

	return a > r ? a - r : 0;
}

/* The inodes c can give outside its reserves: with slots, only those it
 * has now.  Without inode clusters both counts are the same. */
static uint64_t room_inodes(struct cfs_fs *fs, uint32_t c, int slots)
{
	return slots ? room_slots(fs, c) : alloc_room_inodes(fs, c);
}

uint64_t alloc_room_blocks(struct cfs_fs *fs, uint32_t c)
{
	uint64_t a = chunk_avail_blocks(fs, &fs->chunks[c]), r = alloc_block_reserve(fs);

	return a > r ? a - r : 0;
}

/* How much room c has, as the smaller of its free inode and free block
 * fractions (cross-multiplied, so no division): a chunk rich in one and
 * poor in the other is as full as the poorer says. */
static uint64_t balance(struct cfs_fs *fs, uint32_t c, int slots)
{
	uint64_t i = room_inodes(fs, c, slots) * data_blocks(fs);
	uint64_t b = alloc_room_blocks(fs, c) * fs->sb.inodes_per_chunk;

	return i < b ? i : b;
}

/* When the preferred chunk is full, spill into the next chunk that has
 * room, in a fixed order: a busy directory then keeps writing into one
 * overflow chunk at a time instead of dirtying every chunk.  Room outside
 * the chunks' reserves (alloc.c) first, then any room at all, then (no
 * chunk has the blocks) any inode. */
int chunk_pick(struct cfs_fs *fs, uint32_t want, uint32_t need_inodes, uint32_t need_blocks,
	       uint32_t *out)
{
	uint32_t i, c, n = fs->sb.nchunks;
	int pass;

	if (want >= n)
		want = 0;
	for (pass = 0; pass < 3; pass++) {
		for (i = 0; i < n; i++) {
			c = (want + i) % n;
			if ((pass == 0 ? alloc_room_inodes(fs, c) >= need_inodes &&
					 alloc_room_blocks(fs, c) >= need_blocks :
			     pass == 1 ? chunk_avail_blocks(fs, &fs->chunks[c]) >= need_blocks : 1) &&
			    inodes_ensure(fs, c, need_inodes)) {
				*out = c;
				return 0;
			}
		}
	}
	return -ENOSPC;
}

/* Whether c counts as as good as the best balance best_bal: within 1/8 of
 * it, with need_inodes inodes and a block outside its reserves.
 * Directories made one after another, before any of them fills, must not
 * all go to the one chunk that is best by a hair. */
static int near_best(struct cfs_fs *fs, uint32_t c, uint64_t best_bal, uint32_t need_inodes,
		     int slots)
{
	return balance(fs, c, slots) * 8 >= best_bal * 7 &&
	       room_inodes(fs, c, slots) >= need_inodes && alloc_room_blocks(fs, c);
}

/* The chunk with the most room by balance, at least need_inodes inodes
 * and one block outside its reserves.  Among the near-ties (near_best),
 * a top-level directory (rotate) goes to the one holding the fewest
 * directories, as ext4's Orlov allocator spreads top-level directories
 * by its groups' directory counts: the counts are on disk (the chunk
 * headers' ndirs), so trees made by separate opens of the filesystem
 * land apart too; equal counts go to the first from fs->spread_next,
 * which moves on.  Anything else goes to the first near-tie from chunk
 * from, in a fixed order, so a growing tree spills into one chunk at a
 * time and dirties few.  The root's chunk comes last: it holds the root
 * and lost+found, which every path crosses and the checker needs first.
 * -ENOSPC if none. */
static int best_chunk(struct cfs_fs *fs, uint32_t need_inodes, int rotate, uint32_t from,
		      int slots, uint32_t *out)
{
	uint32_t i, c, n = fs->sb.nchunks, root = CFS_INO_CHUNK(fs->sb.root_ino);
	uint64_t best_bal = 0, b, fewest = UINT64_MAX;
	int ret = -ENOSPC;

	for (c = 0; c < n; c++) {
		b = balance(fs, c, slots);
		if (b > best_bal && room_inodes(fs, c, slots) >= need_inodes &&
		    alloc_room_blocks(fs, c))
			best_bal = b;
	}
	if (!best_bal)
		return -ENOSPC;
	pthread_mutex_lock(&fs->spread_lock);
	if (rotate)
		from = fs->spread_next;
	for (i = 0; i < 2 * n && (ret < 0 || (rotate && i < n)); i++) {
		c = (from + i) % n;
		if (i < n && c == root && n > 1)
			continue;
		if (!near_best(fs, c, best_bal, need_inodes, slots))
			continue;
		if (!rotate || fs->chunks[c].hdr.ndirs < fewest) {
			fewest = fs->chunks[c].hdr.ndirs;
			*out = c;
			ret = 0;
		}
	}
	if (ret == 0 && rotate)
		fs->spread_next = (*out + 1) % n;
	pthread_mutex_unlock(&fs->spread_lock);
	return ret;
}

/* Room for a new directory's children: 1/64 of a chunk's inodes and
 * blocks outside the reserves (at least 4 of each); with slots, inodes
 * the chunk has now, and with clusters at least a cluster's worth: the
 * free slots of its last cluster alone are no table room. */
static int dir_fits(struct cfs_fs *fs, uint32_t c, int slots)
{
	uint64_t ni = fs->sb.inodes_per_chunk / 64, nb = data_blocks(fs) / 64;

	if (slots && fs->icl_max && ni < CFS_ICL_INODES)
		ni = CFS_ICL_INODES;

	return room_inodes(fs, c, slots) >= (ni < 4 ? 4 : ni) &&
	       alloc_room_blocks(fs, c) >= (nb < 4 ? 4 : nb);
}

/* The last resort for a new inode, when every chunk is down to its
 * reserves: a chunk keeps its reserved inodes while it has free blocks,
 * as they are the way in to those blocks (a continuation of a file that
 * lives elsewhere), so the blocks of a chunk never go stranded behind a
 * table full of heads.  The parent's chunk first (no stub needed). */
static int last_resort(struct cfs_fs *fs, uint32_t c, uint32_t *out)
{
	uint32_t i, n = fs->sb.nchunks;
	uint64_t keep = alloc_inode_reserve(fs);

	for (i = 0; i < n; i++) {
		uint32_t k = (c + i) % n;
		uint64_t need = (i ? 2 : 1) + (chunk_avail_blocks(fs, &fs->chunks[k]) ? keep : 0);

		if (chunk_inodes_avail(fs, k) >= need) {
			*out = k;
			return 0;
		}
	}
	return -ENOSPC;
}

/* Where what does not fit with its parent goes: the first chunk after
 * the parent's with room for it (a directory's children too; with slots,
 * in inodes it has now), in a fixed order, so a growing tree spills into
 * one chunk at a time and dirties few; a chunk without blocks to spare is
 * passed over. */
static int first_fit(struct cfs_fs *fs, uint32_t c, uint32_t mode, int slots, uint32_t *out)
{
	uint32_t i, k, n = fs->sb.nchunks;

	for (i = 1; i < n; i++) {
		k = (c + i) % n;
		if (S_ISDIR(mode) ? dir_fits(fs, k, slots) :
		    alloc_room_inodes(fs, k) >= 2 && alloc_room_blocks(fs, k)) {
			*out = k;
			return 0;
		}
	}
	return -ENOSPC;
}

/* A new directory that does not go with its parent, in this order: a
 * chunk with room for its children in the inodes it has now (the first
 * after the parent's), then the parent's chunk making inode clusters,
 * then any chunk making them.  Without clusters the last two find
 * nothing new.  Tables are filled before clusters are made: their inodes
 * are already paid for, and a chunk's metadata, which a check reads,
 * stays a sequential table rather than clusters among its data (the 1M
 * data set in 64 chunks of 16 GiB: without this, 24 chunks full, 10,348
 * clusters, and 39 chunks empty). */
static int dir_place(struct cfs_fs *fs, uint32_t c, uint32_t mode, uint32_t *out)
{
	if (first_fit(fs, c, mode, 1, out) == 0)
		return 0;
	if (dir_fits(fs, c, 0)) {
		*out = c;
		return 0;
	}
	return first_fit(fs, c, mode, 0, out);
}

/* A chunk with inodes to spare but no block outside its reserve, the
 * first after c. */
static int inode_rich(struct cfs_fs *fs, uint32_t c, uint32_t *out)
{
	uint32_t i, k, n = fs->sb.nchunks;

	for (i = 1; i < n; i++) {
		k = (c + i) % n;
		if (alloc_room_inodes(fs, k) >= 2 && !alloc_room_blocks(fs, k)) {
			*out = k;
			return 0;
		}
	}
	return -ENOSPC;
}

int alloc_new_inode_chunk(struct cfs_fs *fs, const struct inode *dp, uint32_t mode,
			  uint32_t *out)
{
	uint32_t c = CFS_INO_CHUNK(dp->ino);
	int top = S_ISDIR(mode) && dp->ino == fs->sb.root_ino;

	if (S_ISDIR(mode)) {
		/* a child directory stays with its parent while its own
		 * children will fit there too; otherwise one cross-chunk
		 * reference (its entry) buys a chunk with room for them all */
		if (!top && dir_fits(fs, c, 1)) {
			*out = c;
			return 0;
		}
	} else if (alloc_room_inodes(fs, c)) {
		/* With its directory, even when the chunk has no block left
		 * for it: its data then continues elsewhere, one inode there,
		 * as a stub beside it elsewhere would cost; and inodes of a
		 * chunk without blocks are used rather than stranded. */
		*out = c;
		return 0;
	}
	/* Elsewhere the entry needs a stub beside the inode: two inodes.  A
	 * file takes them first from a chunk whose blocks are gone (big
	 * files took them): those inodes could hold nothing else with data,
	 * and its data continuing elsewhere costs one inode there, where a
	 * file and its stub would cost two. */
	if (!S_ISDIR(mode) && inode_rich(fs, c, out) == 0)
		return 0;
	if (top ? best_chunk(fs, 2, 1, 0, 1, out) == 0 || best_chunk(fs, 2, 1, 0, 0, out) == 0 :
	    S_ISDIR(mode) ? dir_place(fs, c, mode, out) == 0 : first_fit(fs, c, mode, 0, out) == 0)
		return 0;
	if (!top && best_chunk(fs, 2, 0, (c + 1) % fs->sb.nchunks, 0, out) == 0)
		return 0;
	return last_resort(fs, c, out);
}

/* A file counts as big from 1/16 of a chunk's data blocks on (at least
 * 16 blocks): its further data goes to the chunk with the most room
 * rather than taking the last blocks of a chunk full of small files. */
static uint64_t big_from(struct cfs_fs *fs)
{
	uint64_t t = data_blocks(fs) / 16;

	return t < 16 ? 16 : t;
}

static int is_big(struct cfs_fs *fs, uint64_t lblk)
{
	return lblk >= big_from(fs);
}

uint32_t alloc_data_want(struct cfs_fs *fs, const struct inode *head, uint64_t lblk,
			 uint32_t want)
{
	uint64_t t = big_from(fs);

	if (S_ISDIR(head->d.mode))
		return want;
	/* one allocation never crosses into being big, and a big file's
	 * allocations come a sixteenth of a chunk at a time, so that where
	 * its data goes is decided again that often */
	if (lblk < t && lblk + want > t)
		return (uint32_t)(t - lblk);
	return want > t ? (uint32_t)t : want;
}

/* Blocks of c a big file may take freely, those that the chunk's own small
 * files will not need.
 *
 * With inodes a fixed pool: the blocks beyond the chunk's share of blocks
 * per inode (the mkfs ratio: -N, or one inode per 16 KiB) for each inode
 * of its table still free, kept for the small files those inodes will
 * hold; blocks taken from a chunk whose inodes are still free would strand
 * those inodes.  A chunk has a surplus once its own files have used more
 * inodes than blocks by that ratio: its later files go elsewhere anyway.
 *
 * With inode clusters no inode strands, and a chunk whose table is used
 * up keeps taking its directories' new files (into clusters): its free
 * blocks are what they will need, not a surplus.  Small files come to a
 * chunk with their directory, so the blocks no small file will want are
 * those of a chunk where no directory lives: all its blocks outside the
 * reserve are surplus, and a big file takes such a chunk whole. */
static uint64_t surplus(struct cfs_fs *fs, uint32_t c)
{
	uint64_t b = alloc_room_blocks(fs, c), keep;

	if (fs->icl_max)
		return fs->chunks[c].hdr.ndirs ? 0 : b;
	keep = (uint64_t)fs->chunks[c].hdr.free_inodes * data_blocks(fs) / fs->sb.inodes_per_chunk;
	return b > keep ? b - keep : 0;
}

/* What c's own small files may still ask of it: its free inodes while
 * inodes are a fixed pool, each one a small file to come; with inode
 * clusters, which make inodes from any free block, the directories
 * living in it, whose new files come to it. */
static uint64_t demand(struct cfs_fs *fs, uint32_t c)
{
	return fs->icl_max ? fs->chunks[c].hdr.ndirs : alloc_room_inodes(fs, c);
}

/* Whether chunk a is richer than chunk b in free blocks per unit of
 * demand by the factor num/den (cross-multiplied; +1: a chunk may have
 * none). */
static int richer(struct cfs_fs *fs, uint32_t a, uint32_t b, uint64_t num, uint64_t den)
{
	return alloc_room_blocks(fs, a) * (demand(fs, b) + 1) * den >
	       alloc_room_blocks(fs, b) * (demand(fs, a) + 1) * num;
}

/* Where a big file's data goes, among the chunks with room and an inode
 * for a continuation: the one with the most surplus; if none has any, the
 * one with the most free blocks per unit of demand (blocks its own small
 * files are least likely to need).  *by_surplus says which; 0 if no chunk has
 * room. */
static int richest(struct cfs_fs *fs, uint32_t *out, int *by_surplus)
{
	uint32_t c, best = 0;
	uint64_t most = 0, s;
	int found = 0;

	for (c = 0; c < fs->sb.nchunks; c++) {
		if (!alloc_room_blocks(fs, c) || !chunk_inodes_avail(fs, c))
			continue;
		s = surplus(fs, c);
		if (s > most || (!most && (!found || richer(fs, c, best, 1, 1)))) {
			most = s > most ? s : most;
			best = c;
			found = 1;
		}
	}
	*out = best;
	*by_surplus = most > 0;
	return found;
}

int alloc_data_fits(struct cfs_fs *fs, const struct inode *head, uint32_t c, uint64_t lblk)
{
	uint32_t r;
	int by_surplus;

	if (!chunk_avail_blocks(fs, &fs->chunks[c]))
		return 0;
	/* a directory grows in its own chunk's reserve */
	if (S_ISDIR(head->d.mode))
		return 1;
	if (!alloc_room_blocks(fs, c))
		return 0;
	if (!is_big(fs, lblk) || surplus(fs, c) || !richest(fs, &r, &by_surplus))
		return 1;
	/* No surplus here: move to a chunk that has some.  When no chunk
	 * has any, stay while this chunk has at least 15/16 of the blocks
	 * per unit of demand of the richest: big data is then spread thinly
	 * over the chunks, each keeping blocks in proportion to its demand
	 * (free inodes, or with clusters directories). */
	return !by_surplus && !richer(fs, r, c, 16, 15);
}

int alloc_data_chunk(struct cfs_fs *fs, const struct inode *head, uint64_t lblk,
		     uint32_t *out)
{
	uint32_t c = CFS_INO_CHUNK(head->ino);
	int by_surplus;

	if (!S_ISDIR(head->d.mode) && is_big(fs, lblk) && richest(fs, out, &by_surplus))
		return 0;
	/* a small file or a directory: the next chunk with room, in a fixed
	 * order, so a busy directory spills into one chunk at a time */
	return chunk_pick(fs, (c + 1) % fs->sb.nchunks, 1, 2, out);
}

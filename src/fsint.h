/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal state of an open chunkfs, shared by the library's layers.
 * What each lock below protects, and the order they are taken in:
 * docs/LOCKING.md. */
#ifndef CHUNKFS_FSINT_H
#define CHUNKFS_FSINT_H

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "chunkfs.h"
#include "cache.h"
#include "format.h"
#include "runset.h"
#include "lockcheck.h"

struct chunk {
	uint32_t index;
	pthread_mutex_t lock;           /* header fields, bitmaps */
	pthread_mutex_t state_lock;     /* disk_state and header writes */
	struct cfs_chunk_hdr hdr;
	struct cfs_chunk_hdr disk_hdr;  /* as last read or written */
	uint32_t disk_state;            /* state last written to disk */
	int hdr_unwritten;              /* in-memory header differs from disk
					   (not the DIRTY state: chunk.c) */
	int hdr_bad;                    /* header was rebuilt (repair open) */
	uint32_t was_dirty;             /* needed a check at open: stays so
					   until fsck clears it */
	double last_change;             /* monotonic seconds */
	/* lazy marking (fs->lazy): changed in memory since last clean, not
	 * yet marked dirty on disk; and when that first change was made */
	int unmarked;
	double first_change;
	int failed;                     /* kept out of service: heads of this
					   chunk are -EUCLEAN (cfs_chunk_set_failed) */
	int repaired;                   /* an online repair wrote to it since
					   the open: checked again at close
					   (scrub_close_check) */
	uint32_t alloc_hint;            /* next data block to try */
	uint32_t meta_hint;             /* next metadata block (chunk_alloc_meta) */
	uint32_t ialloc_hint;
	/* DYNINODES (icluster.c), under lock: the inode-cluster map, loaded
	 * on first use; icl[i] is cluster i (start 0: none) */
	struct cfs_icl_rec *icl;
	uint32_t icl_n;                 /* entries in icl (one past the last) */
	uint32_t icl_nfree;             /* free slots in the clusters */
	int icl_loaded;
	int icl_frag;                   /* no free run for a cluster was found:
					   none counted until a block is freed */
	/* under lock: blocks freed since the last full flush began
	 * (chunk_blocks_freed): before the latest mark, and since it */
	struct runset freed_old, freed_new;
	uint64_t freed_gen;             /* marks so far (chunk_freed_mark) */
};

struct inode {
	cfs_ino_t ino;
	int ref;                        /* in-memory references */
	int open;                       /* cfs_inode_get references */
	int deleted;                    /* freed on disk */
	int loading;                    /* being read: others wait */
	pthread_mutex_t lock;           /* head: everything of the file */
	struct cfs_dinode d;
	uint8_t *var;                   /* variable area, inode_size-148 bytes */
	struct inode *hnext;
	/* head only: loaded continuation chain (refs held), NULL if unloaded */
	struct inode **chain;
	int nchain;
};

/* The inode cache's buckets: 2^ICACHE_BITS at first, doubled whenever it
 * holds more than two inodes a bucket (a mount keeps every inode the
 * kernel knows: a million after a walk of a million files). */
#define ICACHE_BITS     12
#define ICACHE_BITS_MAX 24

struct cfs_fs {
	/* at close, before chunks are marked clean: set by an online repair
	 * (scrub_close_check), called by cfs_close */
	int (*close_check)(struct cfs_fs *fs);
	struct cfs_bdev *bd;
	struct cfs_super sb;
	int rdonly;
	int noacl;                      /* CFS_OPEN_NOACL */
	int own_bd;                     /* destroy bd at close */
	uint64_t cache_asked;           /* cfs_open_opts.cache_bytes (0: default) */
	int sb_from_backup;             /* primary superblock was unusable */
	uint32_t seed;                  /* checksum seed */
	uint32_t bsize, isz;
	uint32_t varsz;                 /* variable area bytes in an inode */
	uint32_t ipb;                   /* inodes per block */
	uint64_t bits_per_bm;           /* bits per bitmap block */
	uint32_t icl_blocks;            /* DYNINODES: blocks per inode cluster */
	uint32_t icl_max;               /* clusters a chunk may have (0: none) */
	uint32_t max_local;             /* highest local inode number */
	struct cache cache;
	struct chunk *chunks;
	pthread_mutex_t icache_lock;
	pthread_cond_t icache_cond;     /* an inode finished loading */
	struct inode **icache;          /* 2^icache_bits buckets (inode.c) */
	unsigned icache_bits;
	size_t icache_count;            /* inodes hashed */
	pthread_rwlock_t op_lock;       /* shared by ops, exclusive to clean */
	pthread_mutex_t rename_lock;    /* serialises directory moves */
	pthread_mutex_t spread_lock;
	uint32_t spread_next;           /* next chunk for a top-level dir */
	int error;                      /* sticky write-back error */
	int ro_error;                   /* changes refused (cfs_set_readonly) */
	double idle_flushed;            /* monotonic time of cfs_clean_idle's
					   last flush of every change */
	int lazy;                       /* chunks marked dirty at write-back
					   (chunk_changed_to_dirty_disk), not at
					   first change (chunk_to_changed_mem) */
	int unmarked;                   /* some chunk->unmarked may be set */
	int checking;                   /* opened for fsck (CFS_OPEN_REPAIR): what
					   it finds is the checker's to report */
	cfs_error_fn error_fn;          /* told of each error recorded */
	void *error_ctx;
	cfs_reload_fn reload_fn;        /* told of inodes a repair changed */
	void *reload_ctx;
	/* a scrub's view of a mounted filesystem (src/scrub.c): the mounted
	 * one, and the chunks the view has written to */
	struct cfs_fs *live;
	uint8_t *touched;
	/* a repair's fence (src/scrub.c, docs/LOCKING.md "Scrub"): while
	 * fence_on, operations naming an inode of a chunk in fenced wait at
	 * their entry (fence_wait) */
	pthread_mutex_t scrub_lock;     /* one cfs_scrub at a time */
	pthread_mutex_t fence_lock;
	pthread_cond_t fence_cond;
	int fence_on;
	uint8_t fenced[CFS_MAX_CHUNKS];
	cfs_block_fn block_fn;          /* told around a wait at the fence */
	void *block_ctx;
	cfs_progress_fn progress_fn;    /* move.c: files done of total */
	void *progress_ctx;
};

static inline uint64_t chunk_base(const struct cfs_fs *fs, uint32_t c)
{
	return fs->sb.first_chunk_block + (uint64_t)c * fs->sb.chunk_blocks;
}

static inline struct chunk *chunk_of(struct cfs_fs *fs, uint32_t c)
{
	return &fs->chunks[c];
}

static inline uint32_t blk_chunk(const struct cfs_fs *fs, uint64_t abs)
{
	return (uint32_t)((abs - fs->sb.first_chunk_block) / fs->sb.chunk_blocks);
}

static inline int ino_valid(const struct cfs_fs *fs, cfs_ino_t ino)
{
	return CFS_INO_CHUNK(ino) < fs->sb.nchunks && CFS_INO_LOCAL(ino) != 0 &&
	       CFS_INO_LOCAL(ino) <= fs->max_local;
}

double cfs_now_mono(void);
/* Structs that grow (include/chunkfs.h): an options struct as the caller
 * passed it, into dst as this library knows it (dsize bytes; first: the
 * size of the CHUNKFS_0.1 layout, which struct_size 0 means), the rest
 * zero; -E2BIG when it is larger and sets what we do not know, -EINVAL
 * when smaller than the first layout.  cfs_struct_out copies a result
 * back, no further than the caller's struct_size. */
int cfs_struct_in(void *dst, size_t dsize, size_t first, const void *src);
/* The CHUNKFS_0.1 layouts end at these fields (a later field goes after) */
#define CFS_MKFS_OPTS_SIZE0 \
	(offsetof(struct cfs_mkfs_opts, dyninodes) + sizeof(int))
#define CFS_FSCK_OPTS_SIZE0 \
	(offsetof(struct cfs_fsck_opts, problem) + sizeof(void (*)(void)))
#define CFS_FSCK_RESULT_SIZE0 \
	(offsetof(struct cfs_fsck_result, seconds) + sizeof(double))
#define CFS_OPEN_OPTS_SIZE0 \
	(offsetof(struct cfs_open_opts, cache_bytes) + sizeof(uint64_t))
void cfs_struct_out(void *dst, size_t first, const void *src, size_t ssize);
/* Room for element n of growable array a (esz-byte elements, *cap of them
 * allocated; doubling, starting at first): a or its moved copy, or NULL with
 * a and *cap unchanged. */
void *array_room(void *a, size_t *cap, size_t n, size_t esz, size_t first);
void cfs_now(int64_t *sec, uint32_t *nsec);
void cfs_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* scrub.c: at close, after the last write-back, before any chunk is
 * marked clean: the chunks an online repair wrote since the open are
 * checked once more on the disk (their headers written first), and one
 * where something is found is marked ERROR instead, for the next mount's
 * check or fsck -p. */
int scrub_close_check(struct cfs_fs *fs);

/* chunk.c: the header and its state */
int chunk_load_all(struct cfs_fs *fs, int repair);
void chunk_prefetch(struct cfs_fs *fs, uint32_t c);
/* The state protocol (its diagram heads chunk.c): CLEAN -> CHANGED in
 * memory, CLEAN or CHANGED -> DIRTY on disk, the header written. */
int chunk_to_changed_mem(struct cfs_fs *fs, uint32_t c);
int chunk_to_dirty_disk(struct cfs_fs *fs, uint32_t c);
/* chunk_to_dirty_disk with state_lock held, leaving the times alone. */
int chunk_to_dirty_disk_locked(struct cfs_fs *fs, uint32_t c);
/* The cache's hooks: note_dirty, before_write, before_dirty. */
int chunk_blk_to_changed_mem(void *ctx, uint64_t blk);
int chunk_changed_to_dirty_disk(void *ctx);
int chunk_direct_to_dirty_disk(void *ctx, uint64_t blk, uint32_t count);
/* The in-memory header whole, with this state (its counts' blocks on disk
 * already); or only a new state on the header as last written. */
int chunk_hdr_write_disk(struct cfs_fs *fs, uint32_t c, uint32_t state);
int chunk_state_write_disk(struct cfs_fs *fs, uint32_t c, uint32_t state);
/* Whether any of the n blocks from abs (one chunk's) was freed since the
 * last full flush began, so that a structure on disk may still name it.
 * One that was not is free on disk, or named by what names it now: it may
 * be written without marking its chunk dirty first. */
int chunk_blocks_freed(struct cfs_fs *fs, uint64_t abs, uint64_t n);
/* Around a full flush of the cache: what the flush makes lasting (the
 * frees noted before it began) is forgotten after it.  gen: one per
 * chunk, filled by the mark. */
void chunk_freed_mark(struct cfs_fs *fs, uint64_t *gen);
void chunk_freed_forget(struct cfs_fs *fs, const uint64_t *gen);
/* Blocks freed in chunk c (its lock held) may still be named on disk until
 * the next full flush: noted for chunk_blocks_freed. */
void chunk_freed_note(struct cfs_fs *fs, uint32_t c, uint32_t rel, uint32_t n);
/* The first block of ch (its lock held) freed since the last full flush in
 * [rel, rel + n) and the end of its freed run: 1, or 0 if none. */
int chunk_first_freed(const struct chunk *ch, uint64_t rel, uint64_t n, uint64_t *at,
		      uint64_t *end);
/* Corruption met in chunk c in normal operation (err -EBADMSG or -EUCLEAN;
 * ino and blk 0 when not known): the chunk is marked ERROR on disk at once
 * and the error recorded in its header.  Safe under any inode or chunk
 * lock. */
void chunk_error(struct cfs_fs *fs, uint32_t c, cfs_ino_t ino, uint64_t blk, int err,
		 const char *what);
/* chunk_error for an impossible value found in normal operation, for
 * "return chunk_corrupt(...)": returns -EUCLEAN, ext4's EFSCORRUPTED. */
static inline int chunk_corrupt(struct cfs_fs *fs, uint32_t c, cfs_ino_t ino, uint64_t blk,
				const char *what)
{
	chunk_error(fs, c, ino, blk, -EUCLEAN, what);
	return -EUCLEAN;
}
/* The cache's on_corrupt hook: chunk_error for the block's chunk. */
void chunk_on_corrupt(void *ctx, uint64_t blk, int err);

/* chunk_alloc.c: bitmaps and allocation */
/* Allocate up to want contiguous blocks near goal (chunk-relative).
 * Returns the count (>=1) and *rel, or -ENOSPC. */
int chunk_alloc_blocks(struct cfs_fs *fs, uint32_t c, uint32_t goal, uint32_t want,
		       uint32_t *rel);
/* As chunk_alloc_blocks, for metadata (tree nodes, directory and xattr
 * blocks): packed together away from where file data is made and freed,
 * so that a check reads a chunk's metadata in few long runs, and a root
 * moving down finds a block free on disk (chunk_blocks_freed) to write
 * alone. */
int chunk_alloc_meta(struct cfs_fs *fs, uint32_t c, uint32_t want, uint32_t *rel);
int chunk_free_blocks(struct cfs_fs *fs, uint32_t c, uint32_t rel, uint32_t count);
int chunk_alloc_inode(struct cfs_fs *fs, uint32_t c, cfs_ino_t *ino);
int chunk_alloc_inode_at(struct cfs_fs *fs, uint32_t c, uint32_t l);
int chunk_free_inode(struct cfs_fs *fs, cfs_ino_t ino);
/* How many inodes chunk c can still give: free slots, and what new inode
 * clusters could be made from its free blocks (DYNINODES), less the
 * repair reserve outside a check.  Every test of a chunk's free inodes
 * goes through here. */
uint64_t chunk_inodes_avail(struct cfs_fs *fs, uint32_t c);
/* Chunk c's inodes (loads its cluster map). */
struct chunk_inodes {
	uint64_t avail;                 /* as chunk_inodes_avail */
	uint64_t free;                  /* as avail, the repair reserve in */
	uint64_t used;                  /* in use, table and clusters */
	uint32_t clusters;              /* inode clusters made */
	uint32_t span;                  /* local numbers that may be in use */
};
void chunk_inodes(struct cfs_fs *fs, uint32_t c, struct chunk_inodes *n);
/* Give inode clusters whose inodes are all free back to free blocks.  With
 * every operation excluded, and followed by a full flush, so the map says
 * so on disk before the blocks can be used again. */
int chunk_trim_clusters(struct cfs_fs *fs);
/* The blocks chunk_trim_clusters would give back in chunk c now: free
 * space a writer can have (statfs counts them, fs_space_back gets them). */
uint64_t chunk_clusters_spare(struct cfs_fs *fs, uint32_t c);
/* Test a bit in a bitmap (for the checker): which 0 = block, 1 = inode. */
int chunk_test_bit(struct cfs_fs *fs, uint32_t c, int which, uint32_t bit, int *set);
void chunk_count(struct cfs_fs *fs, uint32_t c, int field, int delta);
#define CNT_CONTS 0
#define CNT_STUBS 1
#define CNT_DIRS  2
int chunk_bitmap_sync(struct cfs_fs *fs, uint32_t c, int which, const uint8_t *truth,
		      int fix, uint64_t *diffs, uint64_t *truth_free);
/* The repair reserve (CFS_REPAIR_INODES and _BLOCKS, FORMAT.md section
 * 16.4): only a repair open (fsck) allocates it, so that the checker can
 * always give the orphans of a full chunk a directory of that chunk under
 * /lost+found (the directory and its stub) instead of a stub each.
 * chunk_avail is what a normal allocation may take of free. */
static inline uint32_t chunk_avail(const struct cfs_fs *fs, uint32_t free, uint32_t reserve)
{
	return fs->checking ? free : free > reserve ? free - reserve : 0;
}
/* Tiny chunks keep at most an eighth of their data area. */
static inline uint32_t chunk_repair_blocks(const struct cfs_fs *fs)
{
	uint64_t eighth = (fs->sb.chunk_blocks - fs->sb.data_start) / 8;

	return eighth < CFS_REPAIR_BLOCKS ? (uint32_t)eighth : CFS_REPAIR_BLOCKS;
}
#define chunk_avail_inodes(fs, ch) chunk_avail((fs), (ch)->hdr.free_inodes, CFS_REPAIR_INODES)
#define chunk_avail_blocks(fs, ch) chunk_avail((fs), (ch)->hdr.free_blocks, chunk_repair_blocks(fs))
/* Whether chunk c has need inodes free now, making inode clusters for
 * them if it must (chunk.c). */
int inodes_ensure(struct cfs_fs *fs, uint32_t c, uint32_t need);

/* alloc.c: placement policy (docs/ALLOCATION.md).  Reserves are soft:
 * room_* count what a chunk has outside them. */
uint32_t alloc_inode_reserve(const struct cfs_fs *fs);
uint32_t alloc_block_reserve(const struct cfs_fs *fs);
uint64_t alloc_room_inodes(struct cfs_fs *fs, uint32_t c);
uint64_t alloc_room_blocks(struct cfs_fs *fs, uint32_t c);
/* Pick a chunk with the inodes (and blocks) needed: want if it has them,
 * else the next one after it that does (alloc.c, though named for what it
 * picks). */
int chunk_pick(struct cfs_fs *fs, uint32_t want, uint32_t need_inodes, uint32_t need_blocks,
	       uint32_t *c);
/* The chunk for a new inode of this mode named in directory dp, or
 * -ENOSPC when the filesystem has no inode to spare for one. */
int alloc_new_inode_chunk(struct cfs_fs *fs, const struct inode *dp, uint32_t mode,
			  uint32_t *c);
/* How many of the want blocks from lblk on one allocation may take. */
uint32_t alloc_data_want(struct cfs_fs *fs, const struct inode *head, uint64_t lblk,
			 uint32_t want);
/* Whether the file head may take its block lblk from chunk c. */
int alloc_data_fits(struct cfs_fs *fs, const struct inode *head, uint32_t c, uint64_t lblk);
/* The chunk for a new continuation of head holding lblk. */
int alloc_data_chunk(struct cfs_fs *fs, const struct inode *head, uint64_t lblk,
		     uint32_t *c);

/* icluster.c: inode clusters (DYNINODES, FORMAT.md 10.4).  Every function
 * taking a chunk expects its lock held. */
void icl_setup(struct cfs_fs *fs);
void icl_release(struct cfs_fs *fs);
int icl_load(struct cfs_fs *fs, uint32_t c);
/* Drop the map kept in memory: the next use reads it from the disk again
 * (after a repair of the mounted filesystem rewrote it, src/scrub.c). */
void icl_forget(struct cfs_fs *fs, uint32_t c);
/* Where local inode l (> inodes_per_chunk) lives: 1 and *blk, *off when
 * its cluster exists, 0 when not (the slot reads as a free inode). */
int icl_locate(struct cfs_fs *fs, uint32_t c, uint32_t l, uint64_t *blk, uint32_t *off);
/* A free slot of an existing cluster, or of a new one made from free
 * blocks: *l its local number. */
int icl_alloc(struct cfs_fs *fs, uint32_t c, uint32_t *l);
int icl_free(struct cfs_fs *fs, uint32_t c, uint32_t l);
/* Clusters the chunk has; of those, with no slot in use (up to max). */
uint32_t icl_count(struct cfs_fs *fs, uint32_t c);
uint32_t icl_empty(struct cfs_fs *fs, uint32_t c, uint32_t max);
/* Inodes new clusters could still give from the chunk's free blocks. */
uint64_t icl_makeable(struct cfs_fs *fs, uint32_t c);
/* fsck: make the clusters' used masks say what truth (one bit per local
 * inode, from 1) says; as chunk_bitmap_sync. */
int icl_sync(struct cfs_fs *fs, uint32_t c, const uint8_t *truth, int fix, uint64_t *diffs,
	     uint64_t *truth_free);
/* The index a new cluster takes, and whether its map block is missing. */
int icl_next(struct cfs_fs *fs, uint32_t c, uint32_t *i, int *new_map);
/* Put map block k, or cluster i, at chunk-relative block rel (allocated by
 * the caller); ordered and flushed so that a crash never lists a cluster
 * whose blocks hold stale bytes. */
int icl_map_add(struct cfs_fs *fs, uint32_t c, uint32_t k, uint32_t rel);
int icl_add(struct cfs_fs *fs, uint32_t c, uint32_t i, uint32_t n, uint32_t rel);
/* Clusters made together from index i (their blocks one run): up to
 * CFS_ICL_BATCH, fewer at the end of a map block or at a hole. */
#define CFS_ICL_BATCH 4
uint32_t icl_batch(struct cfs_fs *fs, uint32_t c, uint32_t i);
/* Start reading every cluster of chunk c (for a check). */
void icl_prefetch(struct cfs_fs *fs, uint32_t c);
/* Remove cluster i, all of whose slots are free, from the map and the
 * counts (its blocks are the caller's to free). */
int icl_remove(struct cfs_fs *fs, uint32_t c, uint32_t i);
/* Map block k lists no cluster. */
int icl_map_empty(struct cfs_fs *fs, uint32_t c, uint32_t k);
/* fsck: drop cluster i from the map (in memory; on disk too with write);
 * its blocks are left to the caller.  Rewrite map block k from memory. */
int icl_drop(struct cfs_fs *fs, uint32_t c, uint32_t i, int write);
int icl_rewrite_map(struct cfs_fs *fs, uint32_t c, uint32_t k);
static inline uint32_t icl_first_local(const struct cfs_fs *fs, uint32_t i)
{
	return fs->sb.inodes_per_chunk + i * CFS_ICL_INODES + 1;
}

/* inode.c */
/* The longest symlink target (FORMAT.md 21): PATH_MAX less its NUL. */
#define CFS_SYMLINK_MAX 4095
uint64_t inode_location(struct cfs_fs *fs, cfs_ino_t ino, uint32_t *off);
/* Why the sizes in d are impossible (NULL: they hold): what later code
 * trusts when it copies into or out of the inode, and a symlink target no
 * caller's PATH_MAX buffer holds.  An inode with such sizes is never
 * loaded (-EUCLEAN); fsck clears it. */
const char *dinode_size_bad(const struct cfs_fs *fs, const struct cfs_dinode *d);
/* 1: the slot was written (table watermark, existing cluster); 0: it
 * reads as a free inode; <0: the cluster map cannot be read. */
int inode_slot_present(struct cfs_fs *fs, cfs_ino_t ino);
int inode_get(struct cfs_fs *fs, cfs_ino_t ino, struct inode **out);
/* The inode cache's first buckets (-ENOMEM), and how many there are now:
 * a walk of every bucket holds icache_lock, or it may miss inodes moved
 * when a load grows the table. */
int icache_init(struct cfs_fs *fs);
size_t icache_buckets(const struct cfs_fs *fs);
/* Read an in-memory inode's dinode and variable area again from the
 * table (scrub, after a repair); the caller holds it locked. */
int inode_reload(struct cfs_fs *fs, struct inode *ip);
/* Is ino an inode the mounted filesystem behind this scrub view (see
 * fs_view_open) holds open with no link left: a legitimate orphan, not a
 * leak?  0 for any other filesystem. */
int inode_live_orphan(struct cfs_fs *view, cfs_ino_t ino);
/* Take ip out of the inode table: the next inode_get reads it afresh, and
 * this copy is freed when its last holder puts it. */
void inode_forget(struct cfs_fs *fs, struct inode *ip);
void inode_put(struct cfs_fs *fs, struct inode *ip);
/* Free an in-memory inode that nobody references any more. */
void inode_destroy(struct inode *ip);
/* A head inode in use, else -ENOENT; locked when lock is set. */
int inode_get_head(struct cfs_fs *fs, cfs_ino_t ino, int lock, struct inode **out);
int inode_write(struct cfs_fs *fs, struct inode *ip);
/* Allocate and initialise a new inode in chunk c (or another chunk if c
 * is full, unless exact); returns it referenced and locked: the caller
 * unlocks it once the inode is complete (a directory has its root block,
 * a continuation or stub its flags), so that nobody finds it half made. */
int inode_alloc(struct cfs_fs *fs, uint32_t c, int exact, uint16_t mode,
		struct inode **out);
/* Free the inode's slot on disk (its blocks must already be released).
 * A head inode dies only through inode_release (file.c). */
int inode_free(struct cfs_fs *fs, struct inode *ip);
void inode_touch(struct inode *ip, int a, int m, int c);
/* The continuation chain of a head inode: loaded (forward pointers checked
 * against back pointers) on first use, held until the head leaves memory.
 * Member 0 is the head itself, 1.. its continuations breadth-first. */
int inode_chain_load(struct cfs_fs *fs, struct inode *head);
void inode_chain_release(struct cfs_fs *fs, struct inode *head);
/* Append a continuation; the chain takes over the caller's reference. */
int inode_chain_add(struct inode *head, struct inode *ci);
/* Remove member i (>= 1) and drop its reference. */
void inode_chain_drop(struct cfs_fs *fs, struct inode *head, int i);
static inline int inode_chain_len(const struct inode *head)
{
	return head->nchain + 1;
}
static inline struct inode *inode_chain_at(struct inode *head, int i)
{
	return i == 0 ? head : head->chain[i - 1];
}
void inode_lock2(struct inode *a, struct inode *b);
void inode_unlock2(struct inode *a, struct inode *b);

/* extent.c: per-inode extent tree, blocks of the inode's own chunk */
struct extent {
	uint64_t lblk;
	uint32_t pblk;                  /* chunk-relative */
	uint32_t len;
};
/* Mapping covering lblk: 1 found (*e filled), 0 hole (*e = next extent
 * start in e->lblk, or UINT64_MAX). */
int ext_lookup(struct cfs_fs *fs, struct inode *ip, uint64_t lblk, struct extent *e);
int ext_insert(struct cfs_fs *fs, struct inode *ip, const struct extent *e);
/* Remove mappings in [from, to) and free their blocks. */
int ext_remove(struct cfs_fs *fs, struct inode *ip, uint64_t from, uint64_t to);
/* *end = the end of the last extent that starts below below, cut at
 * below; 0 when none does. */
int ext_end_below(struct cfs_fs *fs, struct inode *ip, uint64_t below, uint64_t *end);
int ext_init_root(struct cfs_fs *fs, struct inode *ip);
/* 1 if ip's extent root is an index node with no records: no write leaves
 * one (a root emptied by a delete becomes a leaf), every lookup and walk
 * refuses it, and it names no block, so an empty leaf (ext_init_root)
 * loses nothing. */
int ext_root_empty_index(const struct inode *ip);
/* 0 if extent record e can be (FORMAT.md 12: a length, blocks inside the
 * chunk's data area, logical blocks below the end of a file of INT64_MAX
 * bytes), else -EUCLEAN.  ext_walk
 * hands every record to its callback as it is: walkers that use the
 * numbers test them. */
int ext_sane(const struct cfs_fs *fs, const struct extent *e);
/* fsck's repair of one impossible (ext_sane) or out-of-place (ext_walk)
 * record: the first record
 * equal to *bad goes; no block is freed (the check rebuilds the bitmaps
 * from what the maps claim).  -ENOENT if there is none. */
int ext_drop(struct cfs_fs *fs, struct inode *ip, const struct extent *bad);
/* What ext_walk skipped: the nodes holding a split's leftovers
 * (ext_trim_leftovers drops them) and the records out of place, outside
 * their node's key range or starting before the record before them ends
 * (the first EXT_MISPLACED_MAX kept, for ext_drop). */
#define EXT_MISPLACED_MAX 16
struct ext_skipped {
	int leftovers;
	int nmisplaced;
	struct extent misplaced[EXT_MISPLACED_MAX];
};
/* Iterate all extents in key order (for checking/reporting): cb returns
 * non-zero to stop.  What it skips is told in *sk (may be NULL). */
int ext_walk(struct cfs_fs *fs, struct inode *ip,
	     int (*cb)(void *ctx, const struct extent *e, int is_node, uint32_t node_rel),
	     void *ctx, struct ext_skipped *sk);
int ext_count_free(struct cfs_fs *fs, struct inode *ip);
/* The extent nodes holding a split's leftovers (bt_trim_leftovers), which
 * ext_walk skips and counts; with fix the leftovers are dropped.  Count or
 * -errno. */
int ext_trim_leftovers(struct cfs_fs *fs, struct inode *ip, int fix);

/* file.c: logical block mapping over the continuation chain */
int file_map(struct cfs_fs *fs, struct inode *head, uint64_t lblk, uint64_t *abs,
	     uint32_t *len);
int file_alloc(struct cfs_fs *fs, struct inode *head, uint64_t lblk, uint32_t want,
	       uint64_t *abs, uint32_t *got);
/* file_alloc of blocks written with zeroes, and the device flushed, before
 * any map names them (FORMAT.md 13.3): a crash shows zeroes there, never
 * what the blocks held before. */
int file_alloc_zeroed(struct cfs_fs *fs, struct inode *head, uint64_t lblk, uint32_t want,
		      uint64_t *abs, uint32_t *got);
int file_punch(struct cfs_fs *fs, struct inode *head, uint64_t from, uint64_t to);
/* The end of the last mapped block below below in the whole chain. */
int file_end_below(struct cfs_fs *fs, struct inode *head, uint64_t below, uint64_t *end);
/* Collapse (insert 0) or insert len logical blocks at lblk: every block
 * mapped at or past lblk (+ len for a collapse) moves by len, crash-safely
 * (FORMAT.md 13.3).  A collapse first drops [lblk, lblk + len).  The size
 * is the caller's. */
int file_shift(struct cfs_fs *fs, struct inode *head, uint64_t lblk, uint64_t len,
	       int insert);
/* Drop continuations that map nothing and have no successors (children
 * before parents). */
int chain_prune(struct cfs_fs *fs, struct inode *head);
/* Blocks held by the file across its chain, and the chunks of its chain
 * (the first max of them; returns how many there are). */
int64_t file_blocks(struct cfs_fs *fs, struct inode *head);
int file_chunks(struct cfs_fs *fs, struct inode *head, uint32_t *chunks, int max);
ssize_t file_read(struct cfs_fs *fs, struct inode *ip, void *buf, size_t n, uint64_t off);
ssize_t file_write(struct cfs_fs *fs, struct inode *ip, const void *buf, size_t n,
		   uint64_t off);
int file_truncate(struct cfs_fs *fs, struct inode *ip, uint64_t size);
/* Release every block and continuation of a head inode. */
int file_release_all(struct cfs_fs *fs, struct inode *ip);
/* The one way a head inode dies: once it has no link left and nobody holds
 * it open (cfs_inode_get), release its blocks and continuations, its
 * xattrs, its place in the chunk's directory count, and its slot.  Any
 * other inode (linked, open, already freed, a continuation or a stub) is
 * left alone.  0 or a negative errno; the caller holds the inode's lock
 * (or the whole filesystem) inside an operation. */
int inode_release(struct cfs_fs *fs, struct inode *ip);
uint32_t file_inline_max(struct cfs_fs *fs, struct inode *ip);
/* Move inline data to a block; the file keeps its size. */
int inline_to_extents(struct cfs_fs *fs, struct inode *ip);

/* dir.c */
uint64_t dir_hash(struct cfs_fs *fs, const char *name, size_t len);
struct dirent_rec {
	uint64_t hash;
	cfs_ino_t ino;
	cfs_ino_t stub;                 /* back-reference stub, 0 if same chunk */
	uint8_t type;                   /* DT_* */
	uint8_t namelen;
	char name[CFS_NAME_MAX + 1];
};
int dir_init(struct cfs_fs *fs, struct inode *dp);
int dir_lookup(struct cfs_fs *fs, struct inode *dp, const char *name, struct dirent_rec *out);
int dir_add(struct cfs_fs *fs, struct inode *dp, const struct dirent_rec *r);
int dir_remove(struct cfs_fs *fs, struct inode *dp, const char *name);
int dir_update(struct cfs_fs *fs, struct inode *dp, const struct dirent_rec *r);
/* dir_update whose new entry reaches the disk only after every change
 * made before it (what it names, and the rest of the operation). */
int dir_update_last(struct cfs_fs *fs, struct inode *dp, const struct dirent_rec *r);
int dir_is_empty(struct cfs_fs *fs, struct inode *dp);
/* fsck: every well-formed record of every readable leaf among the
 * directory's logical blocks, whatever the state of the index above. */
int dir_salvage(struct cfs_fs *fs, struct inode *dp,
		int (*cb)(void *ctx, const struct dirent_rec *r), void *ctx);
/* Replace the whole tree by one holding exactly these entries. */
int dir_rebuild(struct cfs_fs *fs, struct inode *dp, const struct dirent_rec *r, size_t n);
/* Is there an entry with this hash naming ino through stub?  1 / 0. */
int dir_has_entry(struct cfs_fs *fs, struct inode *dp, uint64_t hash, cfs_ino_t ino,
		  cfs_ino_t stub);
/* Iterate from cookie (a hash); cb returns non-zero to stop. */
int dir_iterate(struct cfs_fs *fs, struct inode *dp, uint64_t cookie,
		int (*cb)(void *ctx, const struct dirent_rec *r), void *ctx);

/* xref.c: back-reference stubs for cross-chunk directory entries */
int xref_add(struct cfs_fs *fs, struct inode *dp, cfs_ino_t target, uint16_t mode,
	     const char *name, size_t len, cfs_ino_t *stub);
int xref_del(struct cfs_fs *fs, cfs_ino_t stub, cfs_ino_t target);
/* Before an entry naming stub changes: stub's chunk marked dirty on disk. */
int xref_hold(struct cfs_fs *fs, cfs_ino_t stub);

/* super.c */
int super_write_primary(struct cfs_fs *fs);
/* Encode sb into block blk (no flush). */
int write_super(struct cfs_bdev *bd, const struct cfs_super *sb, uint64_t blk);
int fs_op_begin(struct cfs_fs *fs);    /* -EROFS on a read-only fs */
void fs_op_end(struct cfs_fs *fs);
/* Every buffer and chunk header to disk, flushed (op_lock held exclusive). */
int fs_write_all(struct cfs_fs *fs);
struct cfs_brange;
/* cfs_sync whose flushes leave other files' data alone: what was written
 * but file data, and the block runs data[0..n) (one file's, for fsync;
 * turned into byte runs in place), durable. */
int fs_sync_ranges(struct cfs_fs *fs, struct cfs_brange *data, size_t n);
/* After an operation failed with err, outside it: when err is -ENOSPC,
 * give empty inode clusters back as cfs_sync does (every operation
 * excluded, a full flush before any of their blocks is used again).
 * 1: blocks were given back, the operation may try again. */
int fs_space_back(struct cfs_fs *fs, int64_t err);
/* A second open of a mounted filesystem's device, sharing nothing in
 * memory with it (its own cache, inodes and chunk headers, read from the
 * disk): what scrub checks.  fs_view_close frees it without writing
 * (fs_write_all first) and without marking any chunk clean. */
int fs_view_open(struct cfs_fs *live, int rdonly, struct cfs_fs **out);
/* fs_view_open on another device (a scrub's recorder over live->bd). */
int fs_view_open_bd(struct cfs_fs *live, struct cfs_bdev *bd, int rdonly, struct cfs_fs **out);
void fs_view_close(struct cfs_fs *view);

/* move.c: chunk c emptied of continuations into chunks below limit, with
 * every operation excluded (cfs_resize's shrink); what stays in c is
 * counted in res. */
int move_evacuate_locked(struct cfs_fs *fs, uint32_t c, uint32_t limit,
			 struct cfs_move_result *res);
/* fsck: finish the inode renumber the superblock names (FORMAT.md 4) */
int move_renumber_finish(struct cfs_fs *fs);

/* fence.c: wait while a repair's fence holds the chunk of ino (0: while
 * any fence is on).  Called first thing at an entry point, with nothing
 * held: docs/LOCKING.md, "Scrub".  fence_add and fence_end are
 * src/scrub.c's. */
void fence_wait(struct cfs_fs *fs, cfs_ino_t ino);
void fence_init(struct cfs_fs *fs);
void fence_add(struct cfs_fs *fs, uint32_t c);
void fence_end(struct cfs_fs *fs);

/* namei.c, for fsck's lost+found (src/fsck/lpf.c): a directory head
 * (-ENOTDIR otherwise); name -> ip in dp, with a stub if they are in
 * different chunks; a new directory ip made in dp; a new inode whose making
 * failed, released. */
int namei_get_dir(struct cfs_fs *fs, cfs_ino_t ino, struct inode **out);
int namei_link_add(struct cfs_fs *fs, struct inode *dp, const char *name, struct inode *ip);
int namei_init_dir(struct cfs_fs *fs, struct inode *dp, struct inode *ip);
int namei_drop_new(struct cfs_fs *fs, struct inode *ip);

/* xattr.c */
int xattr_set(struct cfs_fs *fs, struct inode *ip, const char *name, const void *v,
	      size_t n, int flags);
ssize_t xattr_get(struct cfs_fs *fs, struct inode *ip, const char *name, void *buf,
		  size_t n);
ssize_t xattr_list(struct cfs_fs *fs, struct inode *ip, char *buf, size_t n);
int xattr_remove(struct cfs_fs *fs, struct inode *ip, const char *name);
int xattr_release(struct cfs_fs *fs, struct inode *ip);

/* acl.c: POSIX ACLs on top of the xattrs (rules: include/chunkfs.h,
 * cfs_setxattr and cfs_mknod_umask).  All run with ip (and dp) locked. */
enum { ACLT_ACCESS = 1, ACLT_DEFAULT = 2 };
/* ACLT_* for the xattr names of ACLs, else 0. */
int acl_type(const char *name);
/* The entries of a valid ACL value, or -EINVAL. */
int acl_valid(const void *v, size_t n);
/* Set (v NULL: remove) ip's ACL of the type, the mode updated in memory;
 * flags: CFS_XATTR_ACL_KILL_SGID. */
int acl_set(struct cfs_fs *fs, struct inode *ip, int type, const void *v, size_t n,
	    int flags);
ssize_t acl_get(struct cfs_fs *fs, struct inode *ip, int type, void *buf, size_t n);
/* After a change of ip's mode: its access ACL follows. */
int acl_chmod(struct cfs_fs *fs, struct inode *ip);
/* ip, new in dp: inherit dp's default ACL, or apply umask; ip written. */
int acl_init_new(struct cfs_fs *fs, struct inode *dp, struct inode *ip, uint32_t umask);

#endif

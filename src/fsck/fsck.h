/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fsck internals: the state of a check, the problem table's API, and what
 * the two steps share.
 *
 *   problem.c  the problem table and its reporter
 *   step_a.c   step A: inodes, block maps, bitmaps and header counts
 *   clusters.c step A's checks of the inode-cluster maps and clusters
 *   step_b.c   step B: continuations, directory entries, stubs, link counts
 *   lpf.c      the root, /lost+found and the reconnection of orphans
 *   driver.c   chunk selection, workers, escalation, results (cfs_fsck)
 *
 * Each chunk is checked by itself in two steps, as e2fsck checks in
 * passes; a reference to another chunk is verified by reading just the
 * partner inode (or, for a stub, one lookup in its directory).  Every
 * chunk's step A ends before any step B starts, so step B sees sound
 * allocation maps everywhere.  Unreferenced inodes are reconnected to
 * /lost+found at the end, serially.  Within a step, a "pass" is one walk
 * over the chunk's inodes (step A's quick and full block passes, step B's
 * passes over the inodes it holds), never a step.
 *
 * struct fs_check is one check of the filesystem (k in the code), struct
 * chunk_check one chunk's check in one step (x). */
#ifndef CHUNKFS_FSCK_H
#define CHUNKFS_FSCK_H

#include <pthread.h>
#include <stdint.h>

#include "fsint.h"

/* What an inode slot holds, as step A found it (or step B reloads it). */
#define K_FREE 0
#define K_HEAD 1
#define K_CONT 2
#define K_STUB 3

/* The chunks a check's fixes reach beyond the chunks it checks (scrub, which
 * repairs only some): where a reference that a fix here removes lives in
 * another chunk, that chunk must be checked in the same run, or it keeps
 * the dangling half (a directory entry naming a stub cleared here, a
 * forward pointer to a continuation freed here).  unknown: a fix lost a
 * reference whose other half cannot be named (a cleared inode, directory
 * entries lost unseen), so only a check of every chunk finds it. */
struct fsck_reach {
	uint8_t chunk[CFS_MAX_CHUNKS];
	int unknown;
};

struct orphan {
	cfs_ino_t ino;
	int code;               /* the problem it was found as (PR_ORPHAN, ...) */
};

/* One check of the filesystem (k). */
struct fs_check {
	struct cfs_fs *fs;
	const struct cfs_fsck_opts *o;
	struct cfs_fsck_result *r;
	pthread_mutex_t lock;
	uint8_t *sel;           /* chunks to check */
	uint32_t next, ndone, ntotal;
	int step;
	int escalated;          /* checking the chunks escalation added */
	uint8_t *esc_from;      /* per chunk: why its directories may have left
				 * stubs in chunks not checked (ESC_*) */
	struct orphan *orphans; /* to reconnect to lost+found */
	size_t norphans;
	cfs_ino_t *resealed;    /* step A recomputed their checksums: the
				 * inodes' fields, not their entries', are
				 * the ones damage may have changed */
	size_t nresealed;
	uint64_t *chunk_unfixed;
	uint32_t held_max;      /* step B: inodes each worker may hold */
	struct fsck_reach *reach;       /* or NULL */
};

/* fs_check.esc_from: stubs may be left in chunks not checked (an entry dropped
 * whose stub is in one; entries with stubs gone from a directory whose
 * tree is damaged); or entries with stubs are missing from a directory
 * whose tree is whole, which a crash explains in a dirty chunk
 * (want_escalation). */
#define ESC_SURE 1
#define ESC_LOST 2

/* One chunk's check, in one step (x). */
struct chunk_check {
	struct fs_check *k;
	struct cfs_fs *fs;
	uint32_t c, ipc;
	uint8_t *kind, *isdir, *dirbad, *loser;
	uint32_t *refs, *subdirs;
	uint8_t *bbits, *ibits;
	uint32_t nconts, nstubs, ndirs;
	/* step B: inodes in use, loaded once for all its passes (or NULL) */
	struct inode **held;
	uint32_t *used, nused;          /* step B: the slots in use, in order */
	/* step B: per slot, from the inode table, so that the inodes that
	 * need nothing more are never loaded: link count, parent (back
	 * pointer), file type (mode >> 12) with SLOT_CONTS if any forward
	 * pointer is set */
	uint32_t *nlink, *back;
	uint8_t *ftype;
	uint8_t *icl_claimed;           /* step A: clusters whose blocks are claimed */
	/* step B: directories of other chunks whose whole walk was judged
	 * (walk_disordered), so that many stubs missing from one directory
	 * after a crash cost one walk of it, not one each */
	struct { cfs_ino_t ino; uint8_t bad; } walked[64];
	/* step A: directory blocks to prefetch, gathered into one run while
	 * they lie together (metadata is packed: chunk_alloc_meta) */
	uint64_t pf_blk;
	uint32_t pf_len;
};

#define SLOT_CONTS 0x80

/* the pair of an inode renumber cut short (FORMAT.md 4), else 0 */
static inline int renum_pending(const struct cfs_fs *fs, cfs_ino_t ino)
{
	return (fs->sb.feat_incompat & CFS_FEAT_INCOMPAT_RENUMBER) &&
	       (ino == fs->sb.renum_old || ino == fs->sb.renum_new);
}

/* ---- the problem table (problem.c) ---- */

enum problem_code {
	/* the whole filesystem */
	PR_SB_BACKUP,
	PR_ROOT_MISSING,
	PR_ROOT_NOT_DIR,
	PR_LPF_MISSING,
	PR_RENUMBER,
	/* step A */
	PR_CHUNK_HEADER,
	PR_NO_MEMORY,
	PR_ICMAP_LOST,
	PR_ICMAP_CSUM,
	PR_ICL_OUTSIDE,
	PR_ICL_OVERLAP,
	PR_ICL_GARBAGE,
	PR_ICL_DATA,
	PR_INODE_UNREADABLE,
	PR_INODE_CSUM_PLAUSIBLE,
	PR_INODE_CSUM,
	PR_INODE_MODE,
	PR_INODE_IMPOSSIBLE,
	PR_INODE_TYPE,
	PR_FREE_INODE_STALE,
	PR_STUB_FLAG_ON_HEAD,
	PR_INODE_LOAD,
	PR_MAP_SHARED,
	PR_MAP_LEFTOVER,
	PR_MAP_TWICE,
	PR_MAP_OUTSIDE,
	PR_EXTENT_IMPOSSIBLE,
	PR_EXTENT_MISPLACED,
	PR_MAP_UNREADABLE,
	PR_MAP_EMPTY_ROOT,
	PR_XATTR_BLOCK,
	PR_XATTRS,
	PR_INODE_NBLOCKS,
	PR_INLINE_SIZE,
	PR_BITMAP_UNREADABLE,
	PR_BLOCK_BITMAP,
	PR_INODE_BITMAP,
	PR_FREE_BLOCKS,
	PR_FREE_INODES,
	PR_HDR_COUNTS,
	/* step B */
	PR_CONT_POINTER,
	PR_CONT_HEAD,
	PR_CONT_BACK,
	PR_CONT_DETACHED,
	PR_CONT_ORPHAN,
	PR_DIR_INDEX,
	PR_ENTRY_INVALID,
	PR_DIR_COUNTS,
	PR_DIR_PARENT,
	PR_STUB_ORPHAN,
	PR_DELETED_OPEN,
	PR_LPF_UNLINKED,
	PR_ORPHAN,
	PR_DIR_NAMES,
	PR_LINK_COUNT,
	PR_COUNT
};

/* The context a finding is reported in: the reporter writes "chunk C: "
 * and the table entry's subject ("inode I: ", "dir I: ", ...) before the
 * message, whose %-codes take the rest: %0..%5 num[], %n the name, %s str. */
struct pctx {
	cfs_ino_t ino;
	uint64_t num[6];
	const char *name;
	size_t namelen;
	const char *str;
};

#define PR_GLOBAL UINT32_MAX    /* the chunk of a whole-filesystem problem */

/* Will problem code found in chunk c (or PR_GLOBAL) be fixed in this mode? */
int pr_decide(struct fs_check *k, uint32_t c, int code);
/* Report it, with the outcome: fixed (fix and !err), the fix failed (err),
 * or why it was not fixed; counted in the results. */
void pr_report(struct fs_check *k, uint32_t c, int code, const struct pctx *p, int fix, int err);
/* Both at once, for a finding of chunk x->c: 1 if it is to be fixed now. */
int pr_fix(struct chunk_check *x, int code, const struct pctx *p);
/* Preen leaves chunk c alone: it holds a finding for a person. */
int pr_held(struct fs_check *k, uint32_t c);

/* ---- shared by the steps ---- */

static inline void bset(uint8_t *b, uint64_t i)
{
	b[i >> 3] |= (uint8_t)(1u << (i & 7));
}

static inline int bget(const uint8_t *b, uint64_t i)
{
	return (b[i >> 3] >> (i & 7)) & 1;
}

static inline uint64_t itable_limit(struct chunk_check *x)
{
	return (uint64_t)x->fs->chunks[x->c].hdr.itable_init * x->fs->ipb;
}

int is_head(struct inode *ip);
int dinode_plausible(struct cfs_fs *fs, const struct cfs_dinode *d);
/* Why inode d cannot be what its mode says (into buf), or NULL */
const char *dinode_impossible(struct cfs_fs *fs, const struct cfs_dinode *d, char *buf,
			      size_t n);

/* icluster.c: inode clusters (DYNINODES) */
/* The first slot at or after l that was ever written (inode table below
 * its watermark, existing clusters), or x->ipc + 1. */
uint32_t ck_next(struct chunk_check *x, uint32_t l);
/* An inode number of this chunk within the slots the check knows (the
 * table and the clusters there were when it started): a number past them
 * (valid with DYNINODES) is in no cluster, a free inode. */
static inline int ck_slot_known(const struct chunk_check *x, cfs_ino_t ino)
{
	return CFS_INO_CHUNK(ino) == x->c && CFS_INO_LOCAL(ino) <= x->ipc;
}
/* Read the blocks of the cluster holding slot l (> inodes_per_chunk). */
void icl_read_ahead(struct chunk_check *x, uint32_t l);
/* Step A, before the inode scan: the map blocks, and every cluster's
 * place and contents; the blocks of clusters with inodes are claimed. */
void icl_check(struct chunk_check *x);
/* Step A's full pass, after the quick one is undone: the claims
 * icl_check made (map blocks kept, clusters with inodes) again. */
void icl_reclaim(struct chunk_check *x);
/* Step A, after the block maps are claimed: a cluster with no inode in use
 * that shares blocks with a file is dropped, the others claimed. */
void icl_claim_rest(struct chunk_check *x);
void itable_read_ahead(struct chunk_check *x, uint32_t l, uint64_t limit);
void itable_ahead(struct chunk_check *x, uint32_t l, uint64_t limit);
uint8_t *itable_slot(struct chunk_check *x, uint32_t l, struct buf **b);
/* Free what a continuation owns, and the continuation. */
int cont_release(struct cfs_fs *fs, struct inode *ci);

/* Inodes step B may hold loaded, over all workers (see slot_record()). */
#define FSCK_HELD_TOTAL 1024

void step_a(struct chunk_check *x);
void step_b(struct chunk_check *x);
void add_orphan(struct chunk_check *x, cfs_ino_t ino, int code);

/* Record, whether or not the finding is fixed, that a finding of this
 * check reaches the chunk of ino (0: a reference that cannot be named). */
void reach_ino(struct fs_check *k, cfs_ino_t ino);

/* driver.c: cfs_fsck on the chunks want selects (NULL: those that need
 * it, as cfs_fsck); with want, escalation is left to the caller, told by
 * r->escalated (scrub), and reach (if not NULL) gets the chunks the
 * findings reach (see struct fsck_reach). */
int fsck_run(struct cfs_fs *fs, const struct cfs_fsck_opts *o, const uint8_t *want,
	     struct cfs_fsck_result *r, struct fsck_reach *reach);

/* lpf.c */
void check_root(struct fs_check *k);
int root_lost(struct cfs_fs *fs);
void lpf_check(struct fs_check *k);
void reconnect_orphans(struct fs_check *k);

#endif

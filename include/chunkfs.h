/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libchunkfs: public API.
 *
 * chunkfs is one filesystem split into up to 256 independently checkable
 * chunks.  This library owns the on-disk format (docs/FORMAT.md) and every
 * operation on it.  All functions return 0 (or a byte count) on success and
 * a negative errno on failure, the errno a Linux kernel filesystem would give.
 *
 * Inode numbers: chunk number in the top 8 bits, chunk-local number below.
 * The API is inode-based, like FUSE's low-level API; cfs_path_resolve()
 * helps path-based callers.  Every function is safe to call from many threads.
 */
#ifndef CHUNKFS_H
#define CHUNKFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* libchunkfs is built with -fvisibility=hidden: what this header declares
 * is all that its shared library exports, so a program's own names never
 * meet the library's internal ones. */
#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC visibility push(default)
#define CFS_VISIBILITY_PUSHED
#endif

#define CFS_VERSION_STRING "0.1.0"

typedef uint32_t cfs_ino_t;

#define CFS_INO_CHUNK(ino)      ((uint32_t)(ino) >> 24)
#define CFS_INO_LOCAL(ino)      ((uint32_t)(ino) & 0xFFFFFFu)
#define CFS_INO_MAKE(chunk, l)  (((uint32_t)(chunk) << 24) | ((uint32_t)(l) & 0xFFFFFFu))
#define CFS_ROOT_INO            CFS_INO_MAKE(0, 1)
#define CFS_NAME_MAX            255
#define CFS_MAX_CHUNKS          256

struct cfs_fs;

/* ---- mkfs ---- */
/* Structs that grow: cfs_mkfs_opts, cfs_open_opts, cfs_fsck_opts and
 * cfs_fsck_result start with struct_size, which the caller sets to sizeof
 * the struct as its header has it (0: the layout of CHUNKFS_0.1, the
 * first).  Fields are only ever added at the end.  The library reads nothing of an
 * options struct past struct_size (later fields count as 0), refuses
 * with -E2BIG one larger than it knows whose extra bytes are not all zero
 * (options this library cannot honour), and writes nothing of a result
 * past struct_size.  So a program built against an older or newer
 * header works with this library: docs/API.md. */
struct cfs_mkfs_opts {
	uint32_t struct_size;   /* sizeof(struct cfs_mkfs_opts), or 0 */
	uint64_t size;          /* bytes; 0 = use the existing file/device size */
	uint32_t block_size;    /* 0 = 4096; power of two 1024..65536 */
	uint32_t chunks;        /* 0 = automatic */
	uint32_t inode_size;    /* 0 = 256; power of two 256..block_size */
	uint64_t inodes;        /* total inodes wanted; 0 = automatic */
	const char *label;      /* NULL = none; at most 63 bytes */
	const uint8_t *uuid;    /* 16 bytes, NULL = random */
	int64_t now;            /* creation time (seconds); 0 = time(NULL) */
	int dyninodes;          /* inode clusters (DYNINODES): 0 = default (on),
				   1 = on, -1 = off (the fixed-table layout) */
};
/* Create a filesystem on a file (created if missing, extended to size) or
 * block device. */
int cfs_mkfs(const char *path, const struct cfs_mkfs_opts *opts);
/* The chunk count mkfs picks for a filesystem of nblocks blocks. */
uint32_t cfs_mkfs_default_chunks(uint64_t nblocks, uint32_t block_size);

/* ---- open/close ---- */
#define CFS_OPEN_RDONLY   0x1   /* never write the image */
#define CFS_OPEN_NOCHECK  0x2   /* allow opening with dirty chunks for writing */
#define CFS_OPEN_FORCE    0x4   /* allow unknown ro-compat features rw (tests) */
#define CFS_OPEN_REPAIR   0x8   /* fsck: fall back to the backup superblock,
				   rebuild destroyed chunk headers */
#define CFS_OPEN_NOACL    0x10  /* POSIX ACLs off, as ext4's noacl: their
				   xattrs refused with -EOPNOTSUPP, none
				   inherited or followed by chmod */

int cfs_open(const char *path, int flags, struct cfs_fs **out);
/* cfs_open with more to say: a struct that grows (struct_size, above). */
struct cfs_open_opts {
	uint32_t struct_size;   /* sizeof(struct cfs_open_opts), or 0 */
	int flags;              /* CFS_OPEN_* */
	/* the block cache's size in bytes; 0 = the default, 64 MiB.  It holds
	 * at least 64 blocks whatever this says.  A smaller cache writes
	 * changes back sooner and in smaller batches. */
	uint64_t cache_bytes;
};
/* opts NULL: as cfs_open(path, 0, out). */
int cfs_open_ext(const char *path, const struct cfs_open_opts *opts,
		 struct cfs_fs **out);
/* Flush everything, mark every chunk clean, release.  Always frees fs. */
int cfs_close(struct cfs_fs *fs);
/* Write every dirty buffer and flush the device; chunks stay dirty. */
int cfs_sync(struct cfs_fs *fs);
/* A checkpoint, once the oldest change not yet marked clean is
 * idle_seconds old (or its chunk has been idle that long): every change is
 * made durable and every chunk marked clean, busy or not (chunks holding an
 * unlinked open inode stay dirty).  Returns the number of chunks marked
 * clean, 0 when none was due. */
int cfs_clean_idle(struct cfs_fs *fs, double idle_seconds);
/* Human-readable reason for the last cfs_open, cfs_open_ext or cfs_mkfs
 * failure in this thread, e.g. "not a chunkfs image (bad magic)".  Never
 * NULL; meaningful only right after a failed call. */
const char *cfs_last_error(void);

/* ---- attributes ---- */
struct cfs_stat {
	cfs_ino_t ino;
	uint32_t mode;          /* S_IF* | permission bits */
	uint32_t nlink;
	uint32_t uid, gid;
	uint64_t rdev;
	uint64_t size;
	uint64_t blocks;        /* 512-byte units allocated */
	uint32_t blksize;
	uint32_t generation;
	struct timespec atime, mtime, ctime, crtime;
};

#define CFS_SET_MODE       0x001
#define CFS_SET_UID        0x002
#define CFS_SET_GID        0x004
#define CFS_SET_SIZE       0x008
#define CFS_SET_ATIME      0x010
#define CFS_SET_MTIME      0x020
#define CFS_SET_ATIME_NOW  0x040
#define CFS_SET_MTIME_NOW  0x080
#define CFS_SET_CTIME      0x100
#define CFS_SET_KEEP_CTIME 0x200   /* leave ctime alone (atime-only updates) */

struct cfs_setattr {
	uint32_t valid;         /* CFS_SET_* */
	uint32_t mode, uid, gid;
	uint64_t size;
	struct timespec atime, mtime, ctime;
};

int cfs_getattr(struct cfs_fs *fs, cfs_ino_t ino, struct cfs_stat *st);
/* Applies attr; on success fills st (if non-NULL) with the new attributes.
 * Changing the size truncates or extends (sparse).  Permission checks are
 * the caller's job (FUSE default_permissions); setuid/setgid clearing on
 * chown is done here as ext4 does. */
int cfs_setattr(struct cfs_fs *fs, cfs_ino_t ino, const struct cfs_setattr *attr,
		struct cfs_stat *st);

/* ---- namespace ---- */
int cfs_lookup(struct cfs_fs *fs, cfs_ino_t dir, const char *name, cfs_ino_t *ino);
/* Regular files, FIFOs, sockets and device nodes (mode carries the type). */
int cfs_mknod(struct cfs_fs *fs, cfs_ino_t dir, const char *name, uint32_t mode,
	      uint64_t rdev, uint32_t uid, uint32_t gid, cfs_ino_t *ino);
int cfs_mkdir(struct cfs_fs *fs, cfs_ino_t dir, const char *name, uint32_t mode,
	      uint32_t uid, uint32_t gid, cfs_ino_t *ino);
/* cfs_mknod, or cfs_mkdir where mode has S_IFDIR, as the kernel creates
 * on a filesystem with ACLs: the parent's default ACL, if it has one, is
 * inherited and masks mode (POSIX.1e), else umask does.  cfs_mknod and
 * cfs_mkdir are this with umask 0: they inherit too. */
int cfs_mknod_umask(struct cfs_fs *fs, cfs_ino_t dir, const char *name, uint32_t mode,
		    uint32_t umask, uint64_t rdev, uint32_t uid, uint32_t gid,
		    cfs_ino_t *ino);
int cfs_symlink(struct cfs_fs *fs, cfs_ino_t dir, const char *name,
		const char *target, uint32_t uid, uint32_t gid, cfs_ino_t *ino);
/* Returns the target length; copies at most size bytes (no NUL added). */
ssize_t cfs_readlink(struct cfs_fs *fs, cfs_ino_t ino, char *buf, size_t size);
int cfs_link(struct cfs_fs *fs, cfs_ino_t ino, cfs_ino_t newdir, const char *newname);
int cfs_unlink(struct cfs_fs *fs, cfs_ino_t dir, const char *name);
int cfs_rmdir(struct cfs_fs *fs, cfs_ino_t dir, const char *name);
#define CFS_RENAME_NOREPLACE 0x1
#define CFS_RENAME_EXCHANGE  0x2
/* Leave a whiteout (a character device 0/0, mode 0) at the old name, in
 * the same step as the move (renameat2's RENAME_WHITEOUT, for overlayfs);
 * not with CFS_RENAME_EXCHANGE. */
#define CFS_RENAME_WHITEOUT  0x4
int cfs_rename(struct cfs_fs *fs, cfs_ino_t olddir, const char *oldname,
	       cfs_ino_t newdir, const char *newname, unsigned flags);
/* cfs_rename by uid:gid, who own the whiteout it may leave (cfs_rename's
 * is root's). */
int cfs_rename_as(struct cfs_fs *fs, cfs_ino_t olddir, const char *oldname,
		  cfs_ino_t newdir, const char *newname, unsigned flags,
		  uint32_t uid, uint32_t gid);

/* Inodes with nlink 0 stay allocated while referenced (open files). */
int cfs_inode_get(struct cfs_fs *fs, cfs_ino_t ino);
int cfs_inode_put(struct cfs_fs *fs, cfs_ino_t ino);

/* readdir: entries in a stable order; cookie 0 starts, each entry carries
 * the cookie of the next.  "." and ".." come first.  The callback returns
 * non-zero to stop (the entry it stopped on is not consumed). */
typedef int (*cfs_filldir_t)(void *ctx, const char *name, size_t namelen,
			     cfs_ino_t ino, uint32_t dtype, uint64_t next_cookie);
int cfs_readdir(struct cfs_fs *fs, cfs_ino_t dir, uint64_t cookie,
		cfs_filldir_t fill, void *ctx);

/* Resolve an absolute path ("/" = root).  follow: follow a final symlink. */
int cfs_path_resolve(struct cfs_fs *fs, const char *path, int follow, cfs_ino_t *ino);
/* Split path into its parent directory inode and final component. */
int cfs_path_parent(struct cfs_fs *fs, const char *path, cfs_ino_t *dir,
		    char name[CFS_NAME_MAX + 1]);

/* ---- data ---- */
ssize_t cfs_read(struct cfs_fs *fs, cfs_ino_t ino, void *buf, size_t size, uint64_t off);
ssize_t cfs_write(struct cfs_fs *fs, cfs_ino_t ino, const void *buf, size_t size,
		  uint64_t off);
int cfs_fsync(struct cfs_fs *fs, cfs_ino_t ino, int datasync);
/* fallocate modes: Linux's FALLOC_FL_* values and rules (fallocate(2));
 * a mode the library does not know is -EOPNOTSUPP (docs/API.md).
 * COLLAPSE_RANGE and INSERT_RANGE take whole blocks and no other flag. */
#define CFS_FALLOC_KEEP_SIZE      0x01
#define CFS_FALLOC_PUNCH_HOLE     0x02
#define CFS_FALLOC_COLLAPSE_RANGE 0x08
#define CFS_FALLOC_ZERO_RANGE     0x10
#define CFS_FALLOC_INSERT_RANGE   0x20
int cfs_fallocate(struct cfs_fs *fs, cfs_ino_t ino, int mode, uint64_t off, uint64_t len);
/* SEEK_DATA / SEEK_HOLE */
int64_t cfs_lseek(struct cfs_fs *fs, cfs_ino_t ino, int64_t off, int whence);

/* ---- extended attributes ---- */
#define CFS_XATTR_CREATE  0x1
#define CFS_XATTR_REPLACE 0x2
/* system.posix_acl_access: clear setgid too (the caller is neither in the
 * file's group nor privileged; the kernel's in_group_or_capable). */
#define CFS_XATTR_ACL_KILL_SGID 0x4
/* system.posix_acl_access and system.posix_acl_default take the Linux
 * xattr form of an ACL (version 2); a malformed one is -EINVAL, a default
 * ACL on a non-directory -EACCES.  An access ACL sets the mode's
 * permission bits, and one the mode bits say all of is not stored (as
 * ext4); cfs_setattr of the mode rewrites it.  Removing one never stored
 * succeeds.  CREATE and REPLACE do not apply to them. */
int cfs_setxattr(struct cfs_fs *fs, cfs_ino_t ino, const char *name,
		 const void *value, size_t size, int flags);
/* Returns the value size; size 0 queries it; -ERANGE if buf too small. */
ssize_t cfs_getxattr(struct cfs_fs *fs, cfs_ino_t ino, const char *name,
		     void *buf, size_t size);
/* NUL-separated names; same size conventions as listxattr(2). */
ssize_t cfs_listxattr(struct cfs_fs *fs, cfs_ino_t ino, char *buf, size_t size);
int cfs_removexattr(struct cfs_fs *fs, cfs_ino_t ino, const char *name);

/* ---- filesystem information ---- */
struct cfs_statfs {
	uint32_t block_size;
	uint64_t blocks, bfree, bavail;
	uint64_t files, ffree;
	uint32_t namemax;
};
int cfs_statfs(struct cfs_fs *fs, struct cfs_statfs *st);

#define CFS_CHUNK_CLEAN 0
#define CFS_CHUNK_DIRTY 1
#define CFS_CHUNK_ERROR 2

struct cfs_info {
	uint32_t version;
	uint32_t block_size, inode_size;
	uint32_t chunks;
	uint64_t chunk_blocks;          /* blocks per chunk */
	uint64_t inodes_per_chunk;
	uint64_t total_blocks;          /* blocks the filesystem uses (to the backup
					   superblock); a device may be larger */
	uint64_t first_chunk_block;     /* block where chunk 0 starts */
	uint64_t backup_sb_block;
	uint32_t feature_compat, feature_ro_compat, feature_incompat;
	uint8_t uuid[16];
	char label[64];
	int64_t created;
	cfs_ino_t root;
	uint32_t inline_max;            /* largest inline file, bytes */
};
/* Corruption met in normal operation (a checksum mismatch, an impossible
 * value) marks its chunk ERROR on disk at once, so that the next check
 * (fsck -p, the check at mount) takes it, and is recorded in the chunk's
 * header like ext4's error fields: a count, the first and the last error.
 * The call that met it fails with -EBADMSG (checksum) or -EUCLEAN; other
 * chunks are not affected. */
struct cfs_chunk_error {
	int64_t time;                   /* seconds since the epoch */
	cfs_ino_t ino;                  /* 0: not known */
	int err;                        /* errno returned: EBADMSG, EUCLEAN */
	uint64_t block;                 /* absolute block, 0: not known */
	char what[32];                  /* what was wrong */
};
/* The repair reserve: each chunk keeps this many free inodes and blocks
 * (an eighth of its data blocks when that is fewer) that only fsck
 * allocates, so that it can always reconnect the orphans of a full chunk
 * to /lost+found (FORMAT.md section 16.4).  Normal allocation treats a
 * chunk at its reserve as full; free_blocks and free_inodes below include
 * it, cfs_statfs's bavail does not. */
#define CFS_REPAIR_INODES 2u
#define CFS_REPAIR_BLOCKS 8u
/* feature_incompat bit: chunks make inodes from free blocks (FORMAT.md 10.4) */
#define CFS_FEATURE_DYNINODES 0x2u

struct cfs_chunk_info {
	uint32_t index;
	int state;                      /* CFS_CHUNK_* */
	uint64_t generation;
	int64_t last_check, last_write;
	uint64_t blocks, free_blocks;   /* data area */
	/* free_inodes: what the chunk can still give: free slots, and the
	 * inode clusters its free blocks could make (DYNINODES) after room
	 * for each new inode's name (FORMAT.md 10.4); inodes: that plus
	 * those in use */
	uint64_t inodes, free_inodes;
	uint64_t clusters;              /* inode clusters made (DYNINODES) */
	uint64_t conts;                 /* continuation inodes in this chunk */
	uint64_t xrefs;                 /* cross-chunk link stand-ins in this chunk */
	uint32_t errors;                /* errors recorded (0 without the feature) */
	struct cfs_chunk_error first_error, last_error;
};
int cfs_get_info(struct cfs_fs *fs, struct cfs_info *info);
/* Called for each error recorded, from the thread that met it (for a log:
 * keep it short, it may run under the library's locks). */
typedef void (*cfs_error_fn)(void *ctx, uint32_t chunk, const struct cfs_chunk_error *e);
void cfs_set_error_fn(struct cfs_fs *fs, cfs_error_fn fn, void *ctx);
/* From now on every call that would change the filesystem fails with
 * -EROFS, as on ext4 after an error with errors=remount-ro; what was
 * changed before is still written (cfs_sync, cfs_clean_idle, cfs_close).
 * Safe from an error callback. */
void cfs_set_readonly(struct cfs_fs *fs);
/* Keep a chunk out of service (failed set) or put it back: while out,
 * every call naming a file or directory of that chunk fails with
 * -EUCLEAN, other chunks go on.  For a chunk in error that needs a
 * person; cfs_scrub puts the chunk back when it leaves nothing unfixed
 * there.  Safe from an error callback. */
int cfs_chunk_set_failed(struct cfs_fs *fs, uint32_t chunk, int failed);
/* -EUCLEAN for a chunk whose header could not be read (an open with
 * CFS_OPEN_REPAIR rebuilt it in memory, and a check has not replaced it
 * yet): its figures would be invented. */
int cfs_get_chunk_info(struct cfs_fs *fs, uint32_t chunk, struct cfs_chunk_info *ci);

/* Which chunks hold a file's data: fills up to max entries with chunk
 * numbers (head first), returns the number of inodes in its chain. */
int cfs_file_chunks(struct cfs_fs *fs, cfs_ino_t ino, uint32_t *chunks, int max);

/* Read-only consistency check of the whole image (every chunk): bitmaps,
 * free counts, link counts, continuation chains, checksums.  Reports each
 * problem through report (may be NULL).  Returns the number of problems
 * found (0 = consistent) or a negative errno. */
typedef void (*cfs_report_t)(void *ctx, const char *msg);
int cfs_check(struct cfs_fs *fs, cfs_report_t report, void *ctx);

/* ---- resize ----
 * Grow fs (open read-write) into size bytes of its device, 0 meaning the
 * whole device as it is now (re-read: a file or disk may have grown since
 * the open); an image file shorter than size is extended.  Only whole
 * chunks of the existing size are added (at most 256 in all), so up to a
 * chunk's worth of the space stays unused.  Crash-safe: the primary
 * superblock is written last.  -EOPNOTSUPP below the current size
 * (shrinking), -EFBIG past what the device can hold. */
struct cfs_resize_result {
	uint32_t old_chunks, new_chunks;
	uint64_t old_blocks, new_blocks;    /* total_blocks before and after */
	uint64_t room_blocks;               /* blocks of the target size */
	uint64_t chunk_blocks;
	uint32_t block_size;
};
int cfs_resize(struct cfs_fs *fs, uint64_t size, struct cfs_resize_result *res);

/* ---- moving chunks' contents (src/move.c, docs/MOVE.md) ----
 * Offline (fs open read-write, nobody else using it), crash-safe at every
 * write: a power cut leaves every file's bytes readable and an image
 * fsck -p repairs alone.  No user-visible inode number changes.
 *
 * cfs_defrag brings each file's and directory's continuations back into
 * its head inode's chunk where that chunk has room.  cfs_evacuate moves
 * every continuation out of chunk into other chunks; what it cannot move
 * (files and stubs whose own inode is in the chunk: their number would
 * change) is counted in left_*.  cfs_resize to a smaller size evacuates
 * the chunks past the new end and drops them, or refuses (-ENOSPC) when
 * anything stays in them.  Progress goes to the function set by
 * cfs_set_progress_fn (done of total files), if any. */
struct cfs_move_result {
	uint64_t files;                 /* files whose pieces moved */
	uint64_t conts_freed;           /* continuation inodes freed */
	uint64_t blocks;                /* blocks copied */
	uint64_t skipped;               /* continuations left: no room */
	uint64_t conts_before, conts_after;     /* in the whole filesystem */
	/* evacuate: what the chunk still holds */
	uint64_t left_inodes, left_conts, left_stubs, left_blocks;
};
int cfs_defrag(struct cfs_fs *fs, struct cfs_move_result *res);
/* cfs_defrag, and with CFS_DEFRAG_RENUMBER first each file whose names are
 * all in directories of one other chunk gets a new inode number there
 * (its data along, when that chunk has room): no name of it then needs a
 * cross-chunk reference.  st_ino changes, as after a shrink. */
#define CFS_DEFRAG_RENUMBER 0x1
int cfs_defrag_flags(struct cfs_fs *fs, unsigned flags, struct cfs_move_result *res);
int cfs_evacuate(struct cfs_fs *fs, uint32_t chunk, struct cfs_move_result *res);
typedef void (*cfs_progress_fn)(void *ctx, uint64_t done, uint64_t total);
void cfs_set_progress_fn(struct cfs_fs *fs, cfs_progress_fn fn, void *ctx);

/* ---- fsck ----
 * Checks the chunks that need it (dirty, marked in error, or with a
 * destroyed header; all with force), each self-contained, on several
 * threads; cross-chunk references are verified by reading only the partner
 * inode.  Open the image with CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, and with
 * CFS_OPEN_RDONLY for a check that changes nothing. */
#define CFS_FSCK_NO     0   /* report only (-n) */
#define CFS_FSCK_PREEN  1   /* fix what is safe, leave the rest (-p) */
#define CFS_FSCK_YES    2   /* fix everything (-y) */

/* One finding, as the checker's problem table describes it. */
struct cfs_fsck_problem {
	const char *code;       /* e.g. "INODE_CSUM": stable, for scripts */
	int64_t chunk;          /* -1: the whole filesystem */
	cfs_ino_t ino;          /* the inode concerned, or 0 */
	const char *finding;    /* what is wrong */
	const char *action;     /* what fixing it does */
	const char *outcome;    /* "fixed", "not fixed: -n", "needs a person",
				 * "fix failed: ..." */
	const char *invariant;  /* the docs/FORMAT.md section it protects */
	const char *text;       /* the whole line, as given to report */
	/* the directory entry's name (not NUL-terminated) for a finding
	 * about one entry (ino is then its directory), else NULL */
	const char *name;
	size_t namelen;
};

struct cfs_fsck_opts {
	uint32_t struct_size;   /* sizeof(struct cfs_fsck_opts), or 0 */
	int mode;               /* CFS_FSCK_* */
	int force;              /* check clean chunks too (-f) */
	int threads;            /* 0 = number of CPUs */
	cfs_report_t report;    /* one line per problem, may be NULL */
	void *ctx;
	/* progress: chunks done of total (called from worker threads) */
	void (*progress)(void *ctx, uint32_t done, uint32_t total);
	/* each problem with its code (may be NULL; called under a lock) */
	void (*problem)(void *ctx, const struct cfs_fsck_problem *p);
};

struct cfs_fsck_result {
	uint32_t struct_size;   /* sizeof(struct cfs_fsck_result), or 0: set
				   by the caller, kept by the library */
	uint32_t chunks;        /* in the filesystem */
	uint32_t checked;       /* chunks checked */
	uint64_t problems;      /* found */
	uint64_t fixed;
	uint64_t unfixed;       /* left for a person (preen) or read-only */
	uint64_t inodes, dirs;  /* in use, in the checked chunks */
	int escalated;          /* lost directory entries forced a full check */
	int sb_restored;        /* primary superblock rewritten from backup */
	double seconds;
};

int cfs_fsck(struct cfs_fs *fs, const struct cfs_fsck_opts *opts,
	     struct cfs_fsck_result *res);

/* ---- scrub ----
 * Check (and repair, by opts->mode) one chunk of a filesystem that is in
 * use, as cfs_fsck checks it offline: what is on the disk, not what is
 * cached, after writing back what is cached.  While it runs, every call
 * that changes the filesystem waits (about one chunk's check time); calls
 * that only read go on.  Repairs are taken back into the open filesystem
 * (cached blocks dropped, in-memory inodes read again).  A check that
 * ends with nothing left unfixed records the chunk's last-check time
 * (not with CFS_FSCK_NO, which writes nothing).  opts->force and
 * opts->threads are ignored.  res->escalated: the chunk's directories
 * lost entries naming other chunks, which want a check of every chunk. */
int cfs_scrub(struct cfs_fs *fs, uint32_t chunk, const struct cfs_fsck_opts *opts,
	      struct cfs_fsck_result *res);
/* Told, after a scrub's repair, of each inode held open (cfs_inode_get)
 * in the chunks the repair wrote, which was read again: a cache above
 * (the kernel's, through FUSE) should drop what it holds of it.  Called
 * from the scrubbing thread with no lock of the library held. */
typedef void (*cfs_reload_fn)(void *ctx, cfs_ino_t ino);
void cfs_set_reload_fn(struct cfs_fs *fs, cfs_reload_fn fn, void *ctx);
/* Told around a wait of the calling thread for a scrub's repair (begin 1,
 * then 0): an operation naming an inode of a chunk under repair waits at
 * its entry, holding nothing of the library, until the repair is taken
 * back.  A server with a fixed pool of threads lets another take its
 * place meanwhile, so that operations on the other chunks go on. */
typedef void (*cfs_block_fn)(void *ctx, int begin);
void cfs_set_block_fn(struct cfs_fs *fs, cfs_block_fn fn, void *ctx);

#ifdef CFS_VISIBILITY_PUSHED
#pragma GCC visibility pop
#undef CFS_VISIBILITY_PUSHED
#endif

#ifdef __cplusplus
}
#endif
#endif

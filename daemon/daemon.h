/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The chunkfs FUSE daemon: what the launcher (daemon/mount.c: options,
 * checks before mounting, daemon start-up) shares with the FUSE operations
 * (daemon/ops.c: thin op_* handlers over libchunkfs, one ops table,
 * the cleaner thread).
 */
#ifndef CHUNKFS_MOUNT_H
#define CHUNKFS_MOUNT_H

#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "mount_opts.h"
#include "tool.h"

#define ATTR_TIMEOUT    60.0            /* seconds the kernel caches attributes */
/* Names (negative ones too) are kept longer: every change to the
 * namespace comes through this mount, which updates the kernel's entries
 * as it makes it.  Then an unlink, rename or open of a name seen a while
 * ago needs no LOOKUP first. */
#define ENTRY_TIMEOUT   60.0
#define MAX_WRITE       (1u << 20)
#define WRITERS_SLOTS   256
#define INVAL_SLOTS     64
#define NAME_SLOTS      256
/* A file that lost a name but kept others goes out without attributes
 * in readdirplus for this long (daemon/ops.c, name_lost): far longer
 * than the unlinking process can take to run again after our reply. */
#define LOST_SLOTS      256
#define LOST_QUIET      10.0            /* seconds */
/* Write-back and a full disk (daemon/space.c, docs/WRITEBACK.md):
 * the most the mount's bdi may hold dirty (lowered to this at mount when
 * we may), and what the reserve adds to that bound: free space that is
 * only looked at every SPACE_RECHECK_MS or an eighth of the reserve
 * written, the kernel's overshoot of its dirty limit between two checks
 * of its own, and the extent blocks the data needs. */
#define SPACE_DIRTY_MAX     (16ull << 20)
#define SPACE_SLACK         (16ull << 20)
#define SPACE_RECHECK_MS    20
/* fuse_file_info.fh of a file open for writing */
#define FH_WRITER           1

/* Inodes with a writable open file: the kernel may hold dirty pages for
 * them (writeback cache), which lseek must flush before answering. */
struct writer {
	cfs_ino_t ino;
	unsigned n;
	int wb_err;              /* a write-back failed: write() not yet told */
	bool overflowed;         /* write() was told, and space is still low */
	struct writer *next;
};

/* A name an inode was last looked up or made under. */
struct recent_name {
	cfs_ino_t ino, parent;
	char name[CFS_NAME_MAX + 1];
};

struct mnt {
	struct cfs_fs *fs;
	struct fuse_session *se;
	double timeout;          /* attributes */
	double entry_timeout;
	enum atime_mode atime;
	bool diratime;
	bool rdonly;
	bool uring;              /* asked for FUSE over io_uring */
	bool discard;            /* -o discard: trim freed blocks, batched */
	bool noacl;              /* -o noacl: no POSIX ACLs (CFS_OPEN_NOACL) */
	double clean_after;
	/* the cleaner thread */
	pthread_t cleaner;
	bool cleaner_started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	/* -o discard: an operation may have freed blocks since the last
	 * trim, made at trimmed */
	_Atomic bool freed;
	struct timespec trimmed;
	bool discard_off;        /* the storage cannot discard (cleaner only) */
	/* inodes whose write-back failed: what the kernel caches of them
	 * (pages, the size it grew) no longer matches the image */
	cfs_ino_t inval[INVAL_SLOTS];
	unsigned ninval;
	/* where to find them: the kernel takes a file's size from us only
	 * for an inode it makes anew, after the name is invalidated (by ino
	 * modulo NAME_SLOTS; an overwritten slot only costs the size fix) */
	pthread_mutex_t nlock;
	struct recent_name names[NAME_SLOTS];
	/* also under nlock: files that lost one of several names, and when
	 * (mono_now(); by a hash of ino, an overwritten slot only reopens
	 * the race name_lost closes); lost_last is the newest */
	struct lost_name {
		cfs_ino_t ino;
		double at;
	} lost[LOST_SLOTS];
	_Atomic double lost_last;
	/* space_low(): free space below space_reserve, as last seen at
	 * space_checked (ms), space_written bytes ago */
	uint64_t space_reserve;
	_Atomic long long space_checked;
	_Atomic uint64_t space_written;
	_Atomic bool space_is_low;
	/* writable opens, by inode */
	pthread_mutex_t wlock;
	struct writer *writers[WRITERS_SLOTS];
	struct fuse_conn_info_opts *conn_opts;
	unsigned max_read;       /* -o max_read=, which libfuse wants repeated
				    at init (0: none) */
	/* errors= and scrub_interval= (daemon/errors.c) */
	const char *image, *dir;
	enum errors_mode errors;
	double scrub_interval;   /* seconds to check every chunk in, 0: never */
	pthread_t scrubber;
	bool scrubber_started;
	pthread_mutex_t slock;
	pthread_cond_t swake;
	bool sstop;
	uint8_t repair_pending[CFS_MAX_CHUNKS];  /* chunks to scrub at once */
	uint8_t chunk_out[CFS_MAX_CHUNKS];       /* left for a person: out of
						    service, not scrubbed again */
	cfs_ino_t *changed;      /* inodes a repair changed: the kernel's */
	size_t nchanged;         /* copies to drop (scrubber_inval) */
	struct recent_name *gone;   /* names a repair removed (ino unused) */
	size_t ngone;
};

extern const struct fuse_lowlevel_ops chunkfs_ops;

/* FUSE over io_uring (daemon/uring.c) */
bool mount_uring_built(void);           /* libfuse >= 3.18 with io_uring */
bool mount_uring_kernel_on(void);       /* the fuse module's enable_uring */
const char *mount_uring_param(void);    /* its path in /sys */
bool mount_uring_serving(void);         /* a request came over a ring */
struct fuse_lowlevel_ops mount_uring_ops(void);
int mount_uring_start(unsigned nthreads);
void mount_uring_stop(struct fuse_session *se);
void mount_uring_block(void);
void mount_uring_repair(int begin);     /* around every cfs_scrub */
/* fuse_lowlevel_notify_inval_inode (off >= 0: its pages too) and
 * _inval_entry for any thread: over io_uring a thread that replied to a
 * ring request must not wait in the kernel for a request (uring.c) */
int mount_inval_inode(struct fuse_session *se, fuse_ino_t ino, off_t off, off_t len);
int mount_inval_entry(struct fuse_session *se, fuse_ino_t parent, const char *name);

/* ioctls on the mount (daemon/ioctl.c): one dispatch, one case each */
void mount_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		 struct fuse_file_info *fi, unsigned flags, const void *in,
		 size_t in_size, size_t out_size);
/* CHUNKFS_IOC_RESIZE (daemon/resize.c): online grow */
struct chunkfs_resize_arg;
int mount_resize_ioctl(fuse_req_t req, fuse_ino_t ino, const void *in, size_t in_size,
		       struct chunkfs_resize_arg *out);

/* CHUNKFS_IOC_SCRUB and _READ (daemon/scrub.c): online check */
struct chunkfs_scrub_arg;
struct chunkfs_scrub_page;
int mount_scrub_ioctl(fuse_req_t req, fuse_ino_t ino, const void *in, size_t in_size,
		      struct chunkfs_scrub_arg *out);
int mount_scrub_read_ioctl(fuse_req_t req, fuse_ino_t ino, const void *in, size_t in_size,
			   struct chunkfs_scrub_page *out);
/* cfs_scrub, telling the io_uring transport that requests may wait */
int mount_cfs_scrub(struct mnt *m, uint32_t chunk, const struct cfs_fsck_opts *o,
		    struct cfs_fsck_result *res);
/* cfs_scrub of one chunk, each problem written to records (may be NULL) */
int mount_scrub_chunk(struct mnt *m, uint32_t chunk, int mode, struct cfs_fsck_result *res,
		      FILE *records);

/* daemon/errors.c: the library's error callback (ctx the mnt), and
 * the thread that scrubs chunks in error (errors=repair) and in the
 * background (scrub_interval=); start registers the callback. */
void mount_on_error(void *ctx, uint32_t chunk, const struct cfs_chunk_error *e);
int scrubber_start(struct mnt *m);
void scrubber_stop(struct mnt *m);
/* `chunkfs scrub` put chunk c back in service */
void scrubber_chunk_back(struct mnt *m, uint32_t c);
/* Tell the kernel to drop what it caches of the inodes the last repairs
 * changed and of the names they removed; not from inside a request (the
 * ioctl's, after its reply). */
void scrubber_inval(struct mnt *m);
/* A repair's finding (a cfs_fsck_opts.problem callback's): the name of a
 * directory entry it removed is queued for scrubber_inval. */
void scrubber_problem(struct mnt *m, const struct cfs_fsck_problem *p);
/* daemon/ops.c: drop the kernel's entry for the name ino was last
 * looked up or made under, if it is remembered */
void mount_name_inval(struct mnt *m, cfs_ino_t ino);

/* FUSE requests served, by opcode (counted always, a relaxed atomic add
 * each); written at unmount to the file named by CHUNKFS_REQUEST_COUNTS. */
void req_counts_write(const char *path);

/* The request loop (daemon/loop.c).  mount_loop_block_signals
 * before starting any thread; mount_loop serves the session with nthreads
 * workers until it ends (unmount, or a signal let through by *old). */
void mount_loop_block_signals(sigset_t *old);
int mount_loop(struct fuse_session *se, unsigned nthreads, const sigset_t *old);
/* cfs_block_fn for the library: a worker about to wait for a repair lets
 * another serve meanwhile. */
void mount_loop_block(void *ctx, int begin);

/* The thread that marks idle chunks clean (not started read-only). */
int cleaner_start(struct mnt *m);
void cleaner_stop(struct mnt *m);

/* ---- write-back and a full disk (daemon/space.c) ---- */
/* After the mount: bound what the kernel may hold dirty, size the
 * reserve. */
void space_setup(struct mnt *m);
/* Count writable opens of ino (delta +1 at open, -1 at release); at exit
 * free the table of files still open for writing. */
void writers_add(struct mnt *m, cfs_ino_t ino, int delta);
void writers_free(struct mnt *m);
bool has_writers(struct mnt *m, cfs_ino_t ino);
/* A write-back of ino failed with err: its next write() is told. */
void writer_failed(struct mnt *m, cfs_ino_t ino, int err);
/* Whether free space is below the reserve, written bytes just stored. */
bool space_low(struct mnt *m, uint64_t written);
/* The attribute timeout for a reply about cs's inode. */
double space_attr_timeout(struct mnt *m, const struct cfs_stat *cs);
/* A file opened (fi: the reply to be): direct_io, or its attributes
 * dropped, when space is low. */
void space_open(struct mnt *m, cfs_ino_t ino, struct fuse_file_info *fi);
/* At a GETATTR with the handle of a file open for writing, the start of
 * a buffered write(): 0 to let it go on, or its error. */
int space_gate(struct mnt *m, cfs_ino_t ino);

/* ---- the mount table (daemon/table.c) ---- */
struct mount_entry {
	char src[4096], dir[4096];
	char type[64], opts[512];
};
/* DIR as /proc/mounts spells it (absolute, resolved), without a stat of
 * DIR itself. */
int mount_dir_abs(const char *dir, char *out, size_t len);
/* The mount on top at DIR: 1 and *e, 0 if none, or a negative errno. */
int mount_at(const char *dir, struct mount_entry *e);
/* Detach the mount at DIR lazily (umount2 as root, else fusermount3). */
int mount_detach(const char *dir);

#endif

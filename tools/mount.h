/* The chunkfs FUSE daemon: what the launcher (tools/cmd_mount.c: options,
 * checks before mounting, daemon start-up) shares with the FUSE operations
 * (tools/mount_ops.c: thin op_* handlers over libchunkfs, one ops table,
 * the cleaner thread).
 */
#ifndef CHUNKFS_MOUNT_H
#define CHUNKFS_MOUNT_H

#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>

#include "tool.h"

#define ATTR_TIMEOUT    1.0             /* seconds the kernel caches attributes */
/* Names (negative ones too) are kept longer: every change to the
 * namespace comes through this mount, which updates the kernel's entries
 * as it makes it.  Then an unlink, rename or open of a name seen a while
 * ago needs no LOOKUP first. */
#define ENTRY_TIMEOUT   60.0
#define MAX_WRITE       (1u << 20)
#define WRITERS_SLOTS   256

enum atime_mode { ATIME_OFF, ATIME_REL, ATIME_STRICT };

/* Inodes with a writable open file: the kernel may hold dirty pages for
 * them (writeback cache), which lseek must flush before answering. */
struct writer {
	cfs_ino_t ino;
	unsigned n;
	struct writer *next;
};

struct mnt {
	struct cfs_fs *fs;
	struct fuse_session *se;
	double timeout;          /* attributes */
	double entry_timeout;
	enum atime_mode atime;
	bool diratime;
	bool rdonly;
	double clean_after;
	/* the cleaner thread */
	pthread_t cleaner;
	bool cleaner_started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
	/* writable opens, by inode */
	pthread_mutex_t wlock;
	struct writer *writers[WRITERS_SLOTS];
	struct fuse_conn_info_opts *conn_opts;
};

extern const struct fuse_lowlevel_ops chunkfs_ops;

/* The thread that marks idle chunks clean (not started read-only). */
int cleaner_start(struct mnt *m);
void cleaner_stop(struct mnt *m);
/* At exit: free the table of files still open for writing. */
void writers_free(struct mnt *m);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs mount: the FUSE operations (libfuse3 low-level API), as in
 * libfuse's example/passthrough_ll.c: one thin op_* handler per request
 * over one library call, and one ops table.  The launcher (options, the
 * check before mounting, daemon start-up) is daemon/mount.c.
 *
 * FUSE node ids are chunkfs inode numbers (CFS_ROOT_INO == FUSE_ROOT_ID),
 * so stat and readdir show the chunk in the top 8 bits.  Errors are
 * negative errnos turned into replies at the edge (reply_err).
 *
 * The kernel's lookup references are kept in the library's per-inode open
 * count: every reply that hands the kernel an entry takes cfs_inode_get, and
 * forget gives them back.  So an unlinked inode the kernel still knows
 * (an open file, a cwd) stays allocated until the kernel forgets it, as on
 * a kernel filesystem.  Opens take one more reference until release.
 *
 * A background thread (the cleaner) runs a checkpoint (cfs_clean_idle)
 * once a change is clean_after seconds old: changes written back, chunks
 * marked clean.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <time.h>

#include "daemon.h"
#include "trim.h"

static struct mnt *mnt_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void reply_err(fuse_req_t req, int ret)
{
	fuse_reply_err(req, ret < 0 ? -ret : ret);
}

/* ---- request counts --------------------------------------------------- */

#define REQ_OPS(X) X(FORGET) X(BATCH_FORGET) X(STATFS) X(LOOKUP) X(GETATTR) X(SETATTR) X(READLINK) X(MKNOD) X(MKDIR) X(SYMLINK) X(LINK) X(UNLINK) X(RMDIR) X(RENAME) X(READDIR) X(READDIRPLUS) X(OPENDIR) X(RELEASEDIR) X(FSYNCDIR) X(OPEN) X(CREATE) X(RELEASE) X(READ) X(WRITE) X(FSYNC) X(FALLOCATE) X(LSEEK) X(SETXATTR) X(GETXATTR) X(LISTXATTR) X(REMOVEXATTR) X(IOCTL)

enum req_op {
#define REQ_ENUM(n) REQ_##n,
	REQ_OPS(REQ_ENUM)
	REQ_N
};

static const char *const req_names[] = {
#define REQ_NAME(n) #n,
	REQ_OPS(REQ_NAME)
};

static _Atomic unsigned long req_counts[REQ_N];

static void req_count(enum req_op op, unsigned long n)
{
	atomic_fetch_add_explicit(&req_counts[op], n, memory_order_relaxed);
}

/* "OPCODE COUNT" lines, opcodes never seen left out. */
void req_counts_write(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fuse_log(FUSE_LOG_ERR, "chunkfs: %s: %s\n", path, strerror(errno));
		return;
	}
	for (int i = 0; i < REQ_N; i++) {
		unsigned long n = atomic_load(&req_counts[i]);

		if (n)
			fprintf(f, "%s %lu\n", req_names[i], n);
	}
	if (fclose(f) != 0)
		fuse_log(FUSE_LOG_ERR, "chunkfs: %s: %s\n", path, strerror(errno));
}

/* ---- attributes ----------------------------------------------------- */

static void stat_from(const struct cfs_stat *cs, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = cs->ino;
	st->st_mode = cs->mode;
	st->st_nlink = cs->nlink;
	st->st_uid = cs->uid;
	st->st_gid = cs->gid;
	st->st_rdev = (dev_t)cs->rdev;
	st->st_size = (off_t)cs->size;
	st->st_blocks = (blkcnt_t)cs->blocks;
	st->st_blksize = cs->blksize;
	st->st_atim = cs->atime;
	st->st_mtim = cs->mtime;
	st->st_ctim = cs->ctime;
}

/* Fill e for ino and take the kernel's lookup reference on it. */
static int entry_get(struct mnt *m, cfs_ino_t ino, struct fuse_entry_param *e)
{
	struct cfs_stat cs;
	int ret = cfs_inode_get(m->fs, ino);

	if (ret < 0)
		return ret;
	ret = cfs_getattr(m->fs, ino, &cs);
	if (ret < 0) {
		cfs_inode_put(m->fs, ino);
		return ret;
	}
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->generation = cs.generation;
	e->attr_timeout = space_attr_timeout(m, &cs);
	e->entry_timeout = m->entry_timeout;
	stat_from(&cs, &e->attr);
	return 0;
}

/* Reply with ino's entry; a failed reply means the kernel took no
 * reference, so give it back. */
static void reply_entry(fuse_req_t req, int ret, cfs_ino_t ino)
{
	struct mnt *m = mnt_of(req);
	struct fuse_entry_param e;

	if (ret == 0)
		ret = entry_get(m, ino, &e);
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	if (fuse_reply_entry(req, &e) != 0)
		cfs_inode_put(m->fs, ino);
}

static int ts_cmp(const struct timespec *a, const struct timespec *b)
{
	if (a->tv_sec != b->tv_sec)
		return a->tv_sec < b->tv_sec ? -1 : 1;
	if (a->tv_nsec != b->tv_nsec)
		return a->tv_nsec < b->tv_nsec ? -1 : 1;
	return 0;
}

/* relatime: update atime only if it is not newer than mtime or ctime, or
 * is a day old, so repeated reads do not keep dirtying a chunk. */
static bool atime_due(const struct mnt *m, const struct cfs_stat *cs)
{
	struct timespec now;

	if (m->atime == ATIME_STRICT)
		return true;
	if (ts_cmp(&cs->atime, &cs->mtime) <= 0 || ts_cmp(&cs->atime, &cs->ctime) <= 0)
		return true;
	clock_gettime(CLOCK_REALTIME, &now);
	return now.tv_sec - cs->atime.tv_sec >= 24 * 3600;
}

/* Access time of a file opened for reading or a directory listed.  Reads
 * served from the kernel's page cache never reach us, so this is done at
 * open.  ctime stays as it is: an atime update is not a change. */
static void touch_atime(struct mnt *m, cfs_ino_t ino, bool dir)
{
	struct cfs_setattr a;
	struct cfs_stat cs;

	if (m->rdonly || m->atime == ATIME_OFF || (dir && !m->diratime))
		return;
	if (cfs_getattr(m->fs, ino, &cs) < 0 || !atime_due(m, &cs))
		return;
	memset(&a, 0, sizeof(a));
	a.valid = CFS_SET_ATIME_NOW | CFS_SET_KEEP_CTIME;
	if (cfs_setattr(m->fs, ino, &a, NULL) == 0)
		fuse_lowlevel_notify_inval_inode(m->se, ino, -1, 0);
}

/* An operation that may have freed blocks ran: -o discard trims soon. */
static void may_have_freed(struct mnt *m)
{
	if (m->discard)
		atomic_store_explicit(&m->freed, true, memory_order_relaxed);
}

/* ---- lifecycle ------------------------------------------------------ */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct mnt *m = userdata;

	/* Only this daemon changes the image (it holds the lock), so the
	 * kernel may cache pages and write them back lazily. */
	if (!m->rdonly && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* ioctls on directories: FITRIM goes to the mount point */
	if (conn->capable & FUSE_CAP_IOCTL_DIR)
		conn->want |= FUSE_CAP_IOCTL_DIR;
	/* POSIX ACLs: the kernel checks them (default_permissions is on
	 * anyway), the library keeps them (src/acl.c).  The umask is ours to
	 * apply, since a parent's default ACL replaces it: without
	 * DONT_MASK the kernel would mask the mode before we see it, and a
	 * default ACL granting group write would lose it to umask 022.
	 * Without the capability (noacl, or an old kernel) the xattrs are
	 * refused, as ext4's noacl does, rather than stored unenforced. */
	if (!m->noacl && (conn->capable & FUSE_CAP_POSIX_ACL) &&
	    (conn->capable & FUSE_CAP_DONT_MASK))
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
	else
		m->noacl = true;
	/* Let the kernel clear setuid/setgid on write, truncate and chown
	 * (it sends us the new mode), and truncate on O_TRUNC through
	 * setattr: then both follow the VFS rules exactly. */
	conn->want &= ~(FUSE_CAP_HANDLE_KILLPRIV | FUSE_CAP_ATOMIC_O_TRUNC);
	/* Data reaches us in memory buffers and goes into the block cache:
	 * splicing through a pipe would add a copy, not save one. */
	conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
			FUSE_CAP_SPLICE_MOVE);
	/* O_DIRECT writes one request at a time: the kernel turns a short
	 * write among async ones into EIO, where a full disk must give a
	 * short count and then ENOSPC. */
	conn->want &= ~FUSE_CAP_ASYNC_DIO;
	conn->max_write = MAX_WRITE;
	conn->max_background = 128;
	conn->congestion_threshold = 96;
	conn->time_gran = 1;
	if (m->conn_opts)
		fuse_apply_conn_info_opts(m->conn_opts, conn);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct mnt *m = mnt_of(req);

	req_count(REQ_FORGET, 1);
	while (nlookup--)
		cfs_inode_put(m->fs, (cfs_ino_t)ino);
	may_have_freed(m);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	struct mnt *m = mnt_of(req);

	req_count(REQ_BATCH_FORGET, 1);
	for (size_t i = 0; i < count; i++)
		for (uint64_t n = forgets[i].nlookup; n; n--)
			cfs_inode_put(m->fs, (cfs_ino_t)forgets[i].ino);
	may_have_freed(m);
	fuse_reply_none(req);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct cfs_statfs cs;
	struct statvfs sv;
	int ret = cfs_statfs(mnt_of(req)->fs, &cs);

	req_count(REQ_STATFS, 1);
	(void)ino;
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = cs.block_size;
	sv.f_frsize = cs.block_size;
	sv.f_blocks = cs.blocks;
	sv.f_bfree = cs.bfree;
	sv.f_bavail = cs.bavail;
	sv.f_files = cs.files;
	sv.f_ffree = cs.ffree;
	sv.f_favail = cs.ffree;
	sv.f_namemax = cs.namemax;
	fuse_reply_statfs(req, &sv);
}

/* ---- namespace ------------------------------------------------------ */

static void name_remember(struct mnt *m, cfs_ino_t ino, fuse_ino_t parent,
			  const char *name)
{
	struct recent_name *r = &m->names[ino % NAME_SLOTS];

	pthread_mutex_lock(&m->nlock);
	r->ino = ino;
	r->parent = (cfs_ino_t)parent;
	snprintf(r->name, sizeof(r->name), "%s", name);
	pthread_mutex_unlock(&m->nlock);
}

static bool name_recall(struct mnt *m, cfs_ino_t ino, struct recent_name *out)
{
	pthread_mutex_lock(&m->nlock);
	*out = m->names[ino % NAME_SLOTS];
	pthread_mutex_unlock(&m->nlock);
	return out->ino == ino && out->name[0];
}

void mount_name_inval(struct mnt *m, cfs_ino_t ino)
{
	struct recent_name r;

	if (name_recall(m, ino, &r))
		mount_inval_entry(m->se, r.parent, r.name);
}

/* ---- names a file lost -------------------------------------------------
 * The kernel applies a successful unlink (and a rename over a file) to the
 * inode it caches by dropping its link count by one (fuse_entry_unlinked),
 * in the unlinking process, once that runs again after our reply; while
 * the attributes of any other reply simply replace the count.  So a reply
 * that carries a file's attributes read after our unlink, but that the
 * kernel applies before the unlinking process has dropped the count, has
 * the count dropped twice.  For a file with another name that is a
 * readdirplus of the other name's directory (its lock is not the one the
 * unlink holds): the kernel then believes the file has no links, stat
 * shows nlink 0 and link(2) of the other name fails with ENOENT without
 * asking us (vfs_link), until the attributes are fetched again.  A file
 * that lost a name but kept others therefore goes out without attributes
 * in readdirplus for LOST_QUIET seconds: the kernel asks for them when it
 * needs them, well after the count was dropped.  A lookup or getattr of the file
 * by another process in the same moment could do the same, but needs the
 * kernel to have neither the other name nor the attributes cached. */

static struct lost_name *lost_slot(struct mnt *m, cfs_ino_t ino)
{
	/* inode numbers of different chunks share their low bits */
	return &m->lost[(ino * 0x9e3779b97f4a7c15ull) >> 56 & (LOST_SLOTS - 1)];
}

/* The kernel will drop ino's link count for a name we are removing.
 * Noted before the name goes: a readdirplus that reads the count after it
 * went then sees the note (name_lost_lately after entry_get). */
static void name_lost(struct mnt *m, cfs_ino_t ino)
{
	struct lost_name *l = lost_slot(m, ino);
	double now = mono_now();

	pthread_mutex_lock(&m->nlock);
	l->ino = ino;
	l->at = now;
	pthread_mutex_unlock(&m->nlock);
	atomic_store(&m->lost_last, now);
}

static bool name_lost_lately(struct mnt *m, cfs_ino_t ino)
{
	struct lost_name *l;
	double now;
	bool ret;

	if (!atomic_load(&m->lost_last))
		return false;
	now = mono_now();
	if (now - atomic_load(&m->lost_last) >= LOST_QUIET)
		return false;
	l = lost_slot(m, ino);
	pthread_mutex_lock(&m->nlock);
	ret = l->ino == ino && now - l->at < LOST_QUIET;
	pthread_mutex_unlock(&m->nlock);
	return ret;
}

/* The file that name in dir names, if it is one that keeps another name
 * once this one goes (0 if not).  The kernel holds dir's lock for the
 * unlink or rename to come, so nothing else changes the name meanwhile. */
static cfs_ino_t keeps_other_name(struct mnt *m, fuse_ino_t dir, const char *name)
{
	struct cfs_stat cs;
	cfs_ino_t ino;

	if (cfs_lookup(m->fs, (cfs_ino_t)dir, name, &ino) < 0 ||
	    cfs_getattr(m->fs, ino, &cs) < 0 || S_ISDIR(cs.mode) || cs.nlink < 2)
		return 0;
	return ino;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mnt *m = mnt_of(req);
	cfs_ino_t ino;
	int ret = cfs_lookup(m->fs, (cfs_ino_t)parent, name, &ino);

	req_count(REQ_LOOKUP, 1);
	/* A negative entry may be cached like a positive one: every change
	 * to the image comes through this mount, which invalidates it. */
	if (ret == -ENOENT) {
		struct fuse_entry_param e = { .ino = 0, .entry_timeout = m->entry_timeout };

		fuse_reply_entry(req, &e);
		return;
	}
	if (ret == 0)
		name_remember(m, ino, parent, name);
	reply_entry(req, ret, ino);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mnt *m = mnt_of(req);
	struct cfs_stat cs;
	struct stat st;
	int ret = 0;

	req_count(REQ_GETATTR, 1);
	/* with a writer's handle: the kernel is about to take a buffered
	 * write() (and, rarely, a read or lseek past what it knows) */
	if (fi && fi->fh == FH_WRITER)
		ret = space_gate(m, (cfs_ino_t)ino);
	if (ret == 0)
		ret = cfs_getattr(m->fs, (cfs_ino_t)ino, &cs);
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	stat_from(&cs, &st);
	fuse_reply_attr(req, &st, space_attr_timeout(m, &cs));
}

static void setattr_from(const struct stat *st, int to_set, struct cfs_setattr *a)
{
	memset(a, 0, sizeof(*a));
	if (to_set & FUSE_SET_ATTR_MODE) {
		a->valid |= CFS_SET_MODE;
		a->mode = st->st_mode;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		a->valid |= CFS_SET_UID;
		a->uid = st->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		a->valid |= CFS_SET_GID;
		a->gid = st->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		a->valid |= CFS_SET_SIZE;
		a->size = (uint64_t)st->st_size;
	}
	/* UTIME_OMIT never gets here: the kernel leaves the bit unset */
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		a->valid |= CFS_SET_ATIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		a->valid |= CFS_SET_ATIME;
		a->atime = st->st_atim;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		a->valid |= CFS_SET_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		a->valid |= CFS_SET_MTIME;
		a->mtime = st->st_mtim;
	}
	/* with the writeback cache the kernel keeps ctime and sends it */
	if (to_set & FUSE_SET_ATTR_CTIME) {
		a->valid |= CFS_SET_CTIME;
		a->ctime = st->st_ctim;
	}
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct mnt *m = mnt_of(req);
	struct cfs_setattr a;
	struct cfs_stat cs;
	struct stat st;
	int ret;

	req_count(REQ_SETATTR, 1);
	(void)fi;
	setattr_from(attr, to_set, &a);
	ret = cfs_setattr(m->fs, (cfs_ino_t)ino, &a, &cs);
	if (a.valid & CFS_SET_SIZE)
		may_have_freed(m);
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	stat_from(&cs, &st);
	fuse_reply_attr(req, &st, space_attr_timeout(m, &cs));
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	ssize_t n = cfs_readlink(mnt_of(req)->fs, (cfs_ino_t)ino, buf, sizeof(buf) - 1);

	req_count(REQ_READLINK, 1);
	if (n < 0) {
		reply_err(req, (int)n);
		return;
	}
	if ((size_t)n >= sizeof(buf)) {
		reply_err(req, -ENAMETOOLONG);
		return;
	}
	buf[n] = 0;
	fuse_reply_readlink(req, buf);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	cfs_ino_t ino = 0;
	int ret = (mode & S_IFMT) == S_IFDIR ? -EPERM :
		  cfs_mknod_umask(mnt_of(req)->fs, (cfs_ino_t)parent, name, mode,
				  ctx->umask, rdev, ctx->uid, ctx->gid, &ino);

	req_count(REQ_MKNOD, 1);
	reply_entry(req, ret, ino);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	cfs_ino_t ino = 0;
	int ret = cfs_mknod_umask(mnt_of(req)->fs, (cfs_ino_t)parent, name,
				  S_IFDIR | (mode & 07777), ctx->umask, 0, ctx->uid,
				  ctx->gid, &ino);

	req_count(REQ_MKDIR, 1);
	reply_entry(req, ret, ino);
}

static void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
		       const char *name)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	cfs_ino_t ino = 0;
	int ret = cfs_symlink(mnt_of(req)->fs, (cfs_ino_t)parent, name, target,
			      ctx->uid, ctx->gid, &ino);

	req_count(REQ_SYMLINK, 1);
	reply_entry(req, ret, ino);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	int ret = cfs_link(mnt_of(req)->fs, (cfs_ino_t)ino, (cfs_ino_t)newparent, newname);

	req_count(REQ_LINK, 1);
	reply_entry(req, ret, (cfs_ino_t)ino);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mnt *m = mnt_of(req);
	cfs_ino_t kept = keeps_other_name(m, parent, name);
	int ret;

	req_count(REQ_UNLINK, 1);
	if (kept)
		name_lost(m, kept);
	ret = cfs_unlink(m->fs, (cfs_ino_t)parent, name);
	may_have_freed(m);
	reply_err(req, ret);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int ret = cfs_rmdir(mnt_of(req)->fs, (cfs_ino_t)parent, name);

	req_count(REQ_RMDIR, 1);
	may_have_freed(mnt_of(req));
	reply_err(req, ret);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct mnt *m = mnt_of(req);
	unsigned cflags = 0;
	cfs_ino_t kept = 0;
	int ret;

	req_count(REQ_RENAME, 1);
	if (flags & RENAME_NOREPLACE)
		cflags |= CFS_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		cflags |= CFS_RENAME_EXCHANGE;
	/* overlayfs's upper layer: an upper on a FUSE mount must have it */
	if (flags & RENAME_WHITEOUT)
		cflags |= CFS_RENAME_WHITEOUT;
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) {
		ret = -EINVAL;
	} else {
		/* an exchange unlinks nothing, nor does a move that may not
		 * replace; one over a file does, and the kernel drops that
		 * file's count as for an unlink */
		if (!(flags & (RENAME_EXCHANGE | RENAME_NOREPLACE)))
			kept = keeps_other_name(m, newparent, newname);
		if (kept)
			name_lost(m, kept);
		ret = cfs_rename_as(m->fs, (cfs_ino_t)parent, name, (cfs_ino_t)newparent,
				    newname, cflags, ctx->uid, ctx->gid);
	}
	may_have_freed(m);
	reply_err(req, ret);
}

/* ---- directories ---------------------------------------------------- */

struct dent {
	cfs_ino_t ino;
	uint32_t dtype;
	uint64_t next;
	char name[CFS_NAME_MAX + 1];
};

/* Entries of one readdir reply, gathered first so that the attributes of
 * readdirplus are read after the directory lock is dropped. */
struct dbatch {
	fuse_req_t req;
	bool plus;
	size_t room;
	struct dent *v;
	size_t n, cap;
	int err;
};

static size_t dent_size(struct dbatch *b, const char *name)
{
	if (b->plus)
		return fuse_add_direntry_plus(b->req, NULL, 0, name, NULL, 0);
	return fuse_add_direntry(b->req, NULL, 0, name, NULL, 0);
}

static int dbatch_add(void *ctx, const char *name, size_t len, cfs_ino_t ino,
		      uint32_t dtype, uint64_t next)
{
	struct dbatch *b = ctx;
	struct dent *d;
	size_t need;

	if (len > CFS_NAME_MAX)
		len = CFS_NAME_MAX;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		struct dent *v = realloc(b->v, cap * sizeof(*v));

		if (!v) {
			b->err = -ENOMEM;
			return 1;
		}
		b->v = v;
		b->cap = cap;
	}
	d = &b->v[b->n];
	memcpy(d->name, name, len);
	d->name[len] = 0;
	need = dent_size(b, d->name);
	if (need > b->room)
		return 1;
	b->room -= need;
	d->ino = ino;
	d->dtype = dtype;
	d->next = next;
	b->n++;
	return 0;
}

static bool is_dot(const char *name)
{
	return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
}

/* Readdirplus gives the kernel a lookup reference for every entry but the
 * dots.  An entry that vanished meanwhile goes out as a plain one (ino 0
 * means "no attributes" to the kernel). */
static size_t dent_fill(struct mnt *m, struct dbatch *b, struct dent *d, char *p,
			size_t left, bool *pinned)
{
	struct fuse_entry_param e;

	*pinned = false;
	if (b->plus && !is_dot(d->name) && entry_get(m, d->ino, &e) == 0) {
		/* asked after the attributes are read: a name_lost that
		 * came before the unlink they show is seen */
		if (!S_ISDIR(e.attr.st_mode) && name_lost_lately(m, d->ino))
			cfs_inode_put(m->fs, d->ino);
		else
			*pinned = true;
	}
	if (!*pinned) {
		memset(&e, 0, sizeof(e));
		e.attr.st_ino = d->ino;
		e.attr.st_mode = d->dtype << 12;
	}
	if (b->plus)
		return fuse_add_direntry_plus(b->req, p, left, d->name, &e, (off_t)d->next);
	return fuse_add_direntry(b->req, p, left, d->name, &e.attr, (off_t)d->next);
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct mnt *m = mnt_of(req);
	struct dbatch b = { .req = req, .plus = plus, .room = size };
	size_t used = 0, i, npinned = 0;
	bool *pinned = NULL;
	char *buf = NULL;
	int ret = cfs_readdir(m->fs, (cfs_ino_t)ino, (uint64_t)off, dbatch_add, &b);

	if (ret == 0)
		ret = b.err;
	if (ret == 0 && (!(buf = malloc(size ? size : 1)) ||
			 !(pinned = calloc(b.n + 1, sizeof(*pinned)))))
		ret = -ENOMEM;
	if (ret < 0) {
		reply_err(req, ret);
		goto out;
	}
	for (i = 0; i < b.n; i++) {
		used += dent_fill(m, &b, &b.v[i], buf + used, size - used, &pinned[i]);
		npinned += pinned[i];
	}
	if (off == 0)
		touch_atime(m, (cfs_ino_t)ino, true);
	if (fuse_reply_buf(req, buf, used) != 0 && npinned)
		for (i = 0; i < b.n; i++)
			if (pinned[i])
				cfs_inode_put(m->fs, b.v[i].ino);
out:
	free(pinned);
	free(buf);
	free(b.v);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	req_count(REQ_READDIR, 1);
	(void)fi;
	do_readdir(req, ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	req_count(REQ_READDIRPLUS, 1);
	(void)fi;
	do_readdir(req, ino, size, off, true);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct cfs_stat cs;
	int ret = cfs_getattr(mnt_of(req)->fs, (cfs_ino_t)ino, &cs);

	req_count(REQ_OPENDIR, 1);
	if (ret == 0 && !S_ISDIR(cs.mode))
		ret = -ENOTDIR;
	if (ret < 0)
		reply_err(req, ret);
	else
		fuse_reply_open(req, fi);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	req_count(REQ_RELEASEDIR, 1);
	(void)ino;
	(void)fi;
	reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	req_count(REQ_FSYNCDIR, 1);
	(void)fi;
	reply_err(req, cfs_fsync(mnt_of(req)->fs, (cfs_ino_t)ino, datasync));
}

/* ---- files ---------------------------------------------------------- */

static bool writable(const struct fuse_file_info *fi)
{
	return (fi->flags & O_ACCMODE) != O_RDONLY;
}

/* The file handle's reference (cfs_inode_get) lasts until release. */
static int file_opened(struct mnt *m, cfs_ino_t ino, struct fuse_file_info *fi)
{
	int ret = cfs_inode_get(m->fs, ino);

	if (ret < 0)
		return ret;
	/* nothing else changes the image, so cached pages stay valid */
	fi->keep_cache = 1;
	space_open(m, ino, fi);
	if (writable(fi)) {
		/* GETATTR with this handle is the start of a buffered write() */
		fi->fh = FH_WRITER;
		writers_add(m, ino, 1);
	}
	return 0;
}

static void file_closed(struct mnt *m, cfs_ino_t ino, const struct fuse_file_info *fi)
{
	if (writable(fi))
		writers_add(m, ino, -1);
	cfs_inode_put(m->fs, ino);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mnt *m = mnt_of(req);
	int ret = file_opened(m, (cfs_ino_t)ino, fi);

	req_count(REQ_OPEN, 1);
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_WRONLY)
		touch_atime(m, (cfs_ino_t)ino, false);
	if (fuse_reply_open(req, fi) != 0)
		file_closed(m, (cfs_ino_t)ino, fi);
}

/* O_CREAT without O_EXCL that lost a race with another creator opens
 * the file that won, as open(2) would. */
static int create_inode(fuse_req_t req, fuse_ino_t parent, const char *name,
			mode_t mode, int flags, cfs_ino_t *ino)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct mnt *m = mnt_of(req);
	int ret = cfs_mknod_umask(m->fs, (cfs_ino_t)parent, name, S_IFREG | (mode & 07777),
				  ctx->umask, 0, ctx->uid, ctx->gid, ino);

	if (ret == -EEXIST && !(flags & O_EXCL))
		ret = cfs_lookup(m->fs, (cfs_ino_t)parent, name, ino);
	return ret;
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct mnt *m = mnt_of(req);
	struct fuse_entry_param e;
	cfs_ino_t ino = 0;
	int ret = create_inode(req, parent, name, mode, fi->flags, &ino);

	req_count(REQ_CREATE, 1);
	if (ret == 0)
		ret = entry_get(m, ino, &e);
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	name_remember(m, ino, parent, name);
	ret = file_opened(m, ino, fi);
	if (ret < 0) {
		cfs_inode_put(m->fs, ino);
		reply_err(req, ret);
		return;
	}
	if (fuse_reply_create(req, &e, fi) != 0) {
		file_closed(m, ino, fi);
		cfs_inode_put(m->fs, ino);
	}
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	req_count(REQ_RELEASE, 1);
	file_closed(mnt_of(req), (cfs_ino_t)ino, fi);
	may_have_freed(mnt_of(req));
	reply_err(req, 0);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	char *buf = malloc(size ? size : 1);
	ssize_t n;

	req_count(REQ_READ, 1);
	(void)fi;
	if (!buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	n = cfs_read(mnt_of(req)->fs, (cfs_ino_t)ino, buf, size, (uint64_t)off);
	if (n < 0)
		reply_err(req, (int)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

/* With the writeback cache a failed write (ENOSPC) comes back at fsync or
 * close, but the kernel keeps the pages and the size it grew the file to:
 * stat and read would go on showing bytes that are not in the image.
 * The cleaner thread invalidates the inode soon after; not here, since
 * the kernel may be waiting on this very write (libfuse: no notify from
 * the path of a related request). */
static void inval_later(struct mnt *m, cfs_ino_t ino)
{
	unsigned i;

	pthread_mutex_lock(&m->lock);
	for (i = 0; i < m->ninval && m->inval[i] != ino; i++)
		;
	if (i == m->ninval && m->ninval < INVAL_SLOTS)
		m->inval[m->ninval++] = ino;
	pthread_cond_signal(&m->wake);
	pthread_mutex_unlock(&m->lock);
}

/* O_APPEND needs nothing here: with the writeback cache the kernel picks
 * the offset (it owns the file size), without it the kernel passes the
 * end of file it knows, which is ours since nothing else writes.
 * A write-back the image cannot take whole fails whole: its pages are
 * the kernel's to mark in error (fsync, close), and the file's next
 * write() is told (space_gate). */
static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		     off_t off, struct fuse_file_info *fi)
{
	struct mnt *m = mnt_of(req);
	ssize_t n = cfs_write(m->fs, (cfs_ino_t)ino, buf, size, (uint64_t)off);

	req_count(REQ_WRITE, 1);
	if (fi->writepage && n >= 0 && (size_t)n < size) {
		ssize_t r = cfs_write(m->fs, (cfs_ino_t)ino, buf + n, size - (size_t)n,
				      (uint64_t)off + (uint64_t)n);

		if (r < 0)
			n = r;
		else
			n = (size_t)r == size - (size_t)n ? (ssize_t)size : -ENOSPC;
	}
	/* before the reply: a gate may be waiting for this very write-back */
	if (fi->writepage && n < 0)
		writer_failed(m, (cfs_ino_t)ino, (int)n);
	if (n < 0)
		reply_err(req, (int)n);
	else
		fuse_reply_write(req, (size_t)n);
	if (fi->writepage && n < 0)
		inval_later(m, (cfs_ino_t)ino);
	space_low(m, n > 0 ? (uint64_t)n : 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	req_count(REQ_FSYNC, 1);
	(void)fi;
	reply_err(req, cfs_fsync(mnt_of(req)->fs, (cfs_ino_t)ino, datasync));
}

/* Every mode the library has; the kernel's FUSE forwards only some of
 * them (Linux 6.x: KEEP_SIZE, PUNCH_HOLE and ZERO_RANGE) and answers the
 * rest with EOPNOTSUPP itself. */
static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
			 off_t len, struct fuse_file_info *fi)
{
	static const struct { int fl, cfs; } modes[] = {
		{ FALLOC_FL_KEEP_SIZE, CFS_FALLOC_KEEP_SIZE },
		{ FALLOC_FL_PUNCH_HOLE, CFS_FALLOC_PUNCH_HOLE },
		{ FALLOC_FL_ZERO_RANGE, CFS_FALLOC_ZERO_RANGE },
		{ FALLOC_FL_COLLAPSE_RANGE, CFS_FALLOC_COLLAPSE_RANGE },
		{ FALLOC_FL_INSERT_RANGE, CFS_FALLOC_INSERT_RANGE },
	};
	int cmode = 0, known = 0, ret;
	size_t i;

	req_count(REQ_FALLOCATE, 1);
	(void)fi;
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		known |= modes[i].fl;
		if (mode & modes[i].fl)
			cmode |= modes[i].cfs;
	}
	if (mode & ~known)
		ret = -EOPNOTSUPP;
	else if (off < 0 || len <= 0)
		ret = -EINVAL;
	else
		ret = cfs_fallocate(mnt_of(req)->fs, (cfs_ino_t)ino, cmode,
				    (uint64_t)off, (uint64_t)len);
	may_have_freed(mnt_of(req));
	reply_err(req, ret);
}

/* SEEK_DATA/SEEK_HOLE.  The kernel does not write back its dirty pages
 * first, so while the file is open for writing we make it (invalidating
 * the page cache launders dirty pages); otherwise data still in the kernel
 * would look like a hole, and cp would copy zeros. */
static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct mnt *m = mnt_of(req);
	int64_t ret;

	req_count(REQ_LSEEK, 1);
	(void)fi;
	if (has_writers(m, (cfs_ino_t)ino))
		mount_inval_inode(m->se, ino, 0, 0);
	ret = cfs_lseek(m->fs, (cfs_ino_t)ino, off, whence);
	if (ret < 0)
		reply_err(req, (int)ret);
	else
		fuse_reply_lseek(req, (off_t)ret);
}

/* ---- extended attributes -------------------------------------------- */

static void reply_xattr_buf(fuse_req_t req, ssize_t n, const char *buf, size_t size)
{
	if (n < 0)
		reply_err(req, (int)n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

/* Setting an access ACL clears setgid unless the caller is in the file's
 * group or root, as the VFS does (in_group_or_capable; CVE-2016-7097).
 * The kernel says so in FUSE_SETXATTR_ACL_KILL_SGID, but libfuse does not
 * pass that flag on: the same test here, on the caller's ids, root
 * standing for CAP_FSETID. */
static bool kill_sgid(fuse_req_t req, fuse_ino_t ino)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct cfs_stat st;
	gid_t groups[64];
	int i, n;

	if (ctx->uid == 0 || cfs_getattr(mnt_of(req)->fs, (cfs_ino_t)ino, &st) < 0 ||
	    !(st.mode & S_ISGID) || st.gid == ctx->gid)
		return false;
	n = fuse_req_getgroups(req, 64, groups);
	for (i = 0; i < n && i < 64; i++)
		if (groups[i] == st.gid)
			return false;
	return true;
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	int cflags = 0;

	req_count(REQ_SETXATTR, 1);
	/* without the kernel's checks (noacl, or a kernel without
	 * FUSE_CAP_POSIX_ACL) an ACL would be stored but never enforced */
	if (mnt_of(req)->noacl && strncmp(name, "system.posix_acl_", 17) == 0) {
		reply_err(req, -EOPNOTSUPP);
		return;
	}
	if (strcmp(name, "system.posix_acl_access") == 0 && kill_sgid(req, ino))
		cflags |= CFS_XATTR_ACL_KILL_SGID;
	if (flags & XATTR_CREATE)
		cflags |= CFS_XATTR_CREATE;
	if (flags & XATTR_REPLACE)
		cflags |= CFS_XATTR_REPLACE;
	reply_err(req, cfs_setxattr(mnt_of(req)->fs, (cfs_ino_t)ino, name, value, size,
				    cflags));
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char *buf = size ? malloc(size) : NULL;
	ssize_t n;

	req_count(REQ_GETXATTR, 1);
	if (size && !buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	n = cfs_getxattr(mnt_of(req)->fs, (cfs_ino_t)ino, name, buf, size);
	reply_xattr_buf(req, n, buf, size);
	free(buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char *buf = size ? malloc(size) : NULL;
	ssize_t n;

	req_count(REQ_LISTXATTR, 1);
	if (size && !buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	n = cfs_listxattr(mnt_of(req)->fs, (cfs_ino_t)ino, buf, size);
	reply_xattr_buf(req, n, buf, size);
	free(buf);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	int ret = cfs_removexattr(mnt_of(req)->fs, (cfs_ino_t)ino, name);

	req_count(REQ_REMOVEXATTR, 1);
	may_have_freed(mnt_of(req));
	reply_err(req, ret);
}

/* ---- ioctls: daemon/ioctl.c ------------------------------------- */

static void op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		     struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		     size_t in_bufsz, size_t out_bufsz)
{
	req_count(REQ_IOCTL, 1);
	mount_ioctl(req, ino, cmd, arg, fi, flags, in_buf, in_bufsz, out_bufsz);
}

const struct fuse_lowlevel_ops chunkfs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.symlink = op_symlink,
	.link = op_link,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	/* No .flush: close(2) has nothing to tell us (the kernel writes back
	 * the file's dirty pages and returns their errors first either way),
	 * and after libfuse's ENOSYS to the first FLUSH the kernel stops
	 * sending one per close: a round trip less for every file made. */
	.release = op_release,
	.fsync = op_fsync,
	.fallocate = op_fallocate,
	.lseek = op_lseek,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.ioctl = op_ioctl,
};

/* ---- the cleaner ---------------------------------------------------- */

static void ts_add_ms(struct timespec *t, long ms)
{
	t->tv_nsec += ms * 1000000L;
	t->tv_sec += t->tv_nsec / 1000000000L;
	t->tv_nsec %= 1000000000L;
}

/* Invalidate what inval_later queued.  Called with m->lock held; pauses
 * 200 ms after, so that pages whose write-back keeps failing (each
 * invalidation writes them back again) cannot keep the thread busy. */
static void inval_queued(struct mnt *m)
{
	cfs_ino_t inval[INVAL_SLOTS];
	unsigned n = m->ninval;
	struct timespec pause;

	memcpy(inval, m->inval, n * sizeof(*inval));
	m->ninval = 0;
	pthread_mutex_unlock(&m->lock);
	for (unsigned i = 0; i < n; i++) {
		mount_inval_inode(m->se, inval[i], 0, 0);
		mount_name_inval(m, inval[i]);
	}
	pthread_mutex_lock(&m->lock);
	clock_gettime(CLOCK_MONOTONIC, &pause);
	ts_add_ms(&pause, 200);
	while (!m->stop && pthread_cond_timedwait(&m->wake, &m->lock, &pause) == 0)
		;
}

/* -o discard, batched: once an operation that may have freed blocks has
 * run and clean_after seconds (at least one) have passed since the last
 * trim, discard the free blocks (cfs_trim flushes first, so nothing in
 * memory still claims one). */
static void discard_freed(struct mnt *m, const struct timespec *now)
{
	double wait = m->clean_after > 1 ? m->clean_after : 1;
	struct cfs_trim_result res;
	int ret;

	if (m->discard_off ||
	    (double)(now->tv_sec - m->trimmed.tv_sec) +
	    (now->tv_nsec - m->trimmed.tv_nsec) / 1e9 < wait ||
	    !atomic_exchange(&m->freed, false))
		return;
	ret = cfs_trim(m->fs, 1, &res);
	m->trimmed = *now;
	if (ret == -EOPNOTSUPP) {
		fuse_log(FUSE_LOG_WARNING, "chunkfs: -o discard: the storage cannot "
			 "discard; discard turned off\n");
		m->discard_off = true;
	} else if (ret < 0) {
		fuse_log(FUSE_LOG_ERR, "chunkfs: -o discard: %s\n", errstr(ret));
	}
}

/* About once a second, a checkpoint when due (a change clean_after
 * seconds old), so that a crash costs a check of only the chunks whose
 * changes were being written; and invalidate, as soon as queued, the
 * inodes whose write-back failed. */
static void *cleaner_main(void *arg)
{
	struct mnt *m = arg;
	struct timespec tick, now;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &tick);
	ts_add_ms(&tick, 1000);
	pthread_mutex_lock(&m->lock);
	while (!m->stop) {
		if (!m->ninval)
			pthread_cond_timedwait(&m->wake, &m->lock, &tick);
		if (m->stop)
			break;
		if (m->ninval)
			inval_queued(m);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (m->stop || ts_cmp(&now, &tick) < 0)
			continue;
		pthread_mutex_unlock(&m->lock);
		ret = cfs_clean_idle(m->fs, m->clean_after);
		if (ret < 0)
			fuse_log(FUSE_LOG_ERR, "chunkfs: marking idle chunks clean: %s\n",
				 errstr(ret));
		if (m->discard)
			discard_freed(m, &now);
		tick = now;
		ts_add_ms(&tick, 1000);
		pthread_mutex_lock(&m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

int cleaner_start(struct mnt *m)
{
	pthread_condattr_t ca;
	int ret;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&m->lock, NULL);
	if (m->rdonly)
		return 0;
	if (m->discard)
		clock_gettime(CLOCK_MONOTONIC, &m->trimmed);
	ret = pthread_create(&m->cleaner, NULL, cleaner_main, m);
	if (ret)
		return -ret;
	m->cleaner_started = true;
	return 0;
}

void cleaner_stop(struct mnt *m)
{
	if (!m->cleaner_started)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = true;
	pthread_cond_signal(&m->wake);
	pthread_mutex_unlock(&m->lock);
	pthread_join(m->cleaner, NULL);
	m->cleaner_started = false;
}


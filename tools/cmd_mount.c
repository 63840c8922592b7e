/* chunkfs mount: serve a chunkfs image through FUSE (libfuse3 low-level API).
 *
 *   chunkfs mount [-f] [-d] [-o OPTIONS] IMAGE DIR
 *   mount.chunkfs IMAGE DIR [-o OPTIONS]        (mount(8) helper conventions)
 *   chunkfs IMAGE DIR -o OPTIONS                (what mount.fuse3 runs for
 *                                                `mount -t fuse.chunkfs`)
 *
 * FUSE node ids are chunkfs inode numbers (CFS_ROOT_INO == FUSE_ROOT_ID),
 * so stat and readdir show the chunk in the top 8 bits.  Each handler is a
 * thin wrapper over one library call; errors are negative errnos turned
 * into replies at the edge (reply_err).
 *
 * The kernel's lookup references are kept in the library's per-inode open
 * count: every reply that hands the kernel an entry takes cfs_inode_get, and
 * forget gives them back.  So an unlinked inode the kernel still knows
 * (an open file, a cwd) stays allocated until the kernel forgets it, as on
 * a kernel filesystem.  Opens take one more reference until release.
 *
 * Before mounting, chunks left dirty by a crash are checked and preened
 * (cfs_fsck, as `chunkfs fsck -p`); a background thread marks chunks clean
 * once idle for clean_after seconds; unmounting (or SIGTERM/SIGINT) ends
 * with cfs_close, which marks every chunk clean.
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <syslog.h>
#include <unistd.h>

#include "tool.h"

#define ATTR_TIMEOUT    1.0             /* seconds the kernel caches attributes */
/* Names (negative ones too) are kept longer: every change to the
 * namespace comes through this mount, which updates the kernel's entries
 * as it makes it.  Then an unlink, rename or open of a name seen a while
 * ago needs no LOOKUP first. */
#define ENTRY_TIMEOUT   60.0
#define MAX_WRITE       (1u << 20)
#define DEFAULT_CLEAN   5.0
#define MAX_DEFAULT_THREADS 16
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

static struct mnt *mnt_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void reply_err(fuse_req_t req, int ret)
{
	fuse_reply_err(req, ret < 0 ? -ret : ret);
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
	e->attr_timeout = m->timeout;
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
	/* Let the kernel clear setuid/setgid on write, truncate and chown
	 * (it sends us the new mode), and truncate on O_TRUNC through
	 * setattr: then both follow the VFS rules exactly. */
	conn->want &= ~(FUSE_CAP_HANDLE_KILLPRIV | FUSE_CAP_ATOMIC_O_TRUNC);
	/* Data reaches us in memory buffers and goes into the block cache:
	 * splicing through a pipe would add a copy, not save one. */
	conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
			FUSE_CAP_SPLICE_MOVE);
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

	while (nlookup--)
		cfs_inode_put(m->fs, (cfs_ino_t)ino);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	struct mnt *m = mnt_of(req);

	for (size_t i = 0; i < count; i++)
		for (uint64_t n = forgets[i].nlookup; n; n--)
			cfs_inode_put(m->fs, (cfs_ino_t)forgets[i].ino);
	fuse_reply_none(req);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct cfs_statfs cs;
	struct statvfs sv;
	int ret = cfs_statfs(mnt_of(req)->fs, &cs);

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

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mnt *m = mnt_of(req);
	cfs_ino_t ino;
	int ret = cfs_lookup(m->fs, (cfs_ino_t)parent, name, &ino);

	/* A negative entry may be cached like a positive one: every change
	 * to the image comes through this mount, which invalidates it. */
	if (ret == -ENOENT) {
		struct fuse_entry_param e = { .ino = 0, .entry_timeout = m->entry_timeout };

		fuse_reply_entry(req, &e);
		return;
	}
	reply_entry(req, ret, ino);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mnt *m = mnt_of(req);
	struct cfs_stat cs;
	struct stat st;
	int ret = cfs_getattr(m->fs, (cfs_ino_t)ino, &cs);

	(void)fi;
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	stat_from(&cs, &st);
	fuse_reply_attr(req, &st, m->timeout);
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

	(void)fi;
	setattr_from(attr, to_set, &a);
	ret = cfs_setattr(m->fs, (cfs_ino_t)ino, &a, &cs);
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
	stat_from(&cs, &st);
	fuse_reply_attr(req, &st, m->timeout);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[PATH_MAX + 1];
	ssize_t n = cfs_readlink(mnt_of(req)->fs, (cfs_ino_t)ino, buf, sizeof(buf) - 1);

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
	int ret = cfs_mknod(mnt_of(req)->fs, (cfs_ino_t)parent, name, mode, rdev,
			    ctx->uid, ctx->gid, &ino);

	reply_entry(req, ret, ino);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	cfs_ino_t ino = 0;
	int ret = cfs_mkdir(mnt_of(req)->fs, (cfs_ino_t)parent, name, mode,
			    ctx->uid, ctx->gid, &ino);

	reply_entry(req, ret, ino);
}

static void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
		       const char *name)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	cfs_ino_t ino = 0;
	int ret = cfs_symlink(mnt_of(req)->fs, (cfs_ino_t)parent, name, target,
			      ctx->uid, ctx->gid, &ino);

	reply_entry(req, ret, ino);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	int ret = cfs_link(mnt_of(req)->fs, (cfs_ino_t)ino, (cfs_ino_t)newparent, newname);

	reply_entry(req, ret, (cfs_ino_t)ino);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	reply_err(req, cfs_unlink(mnt_of(req)->fs, (cfs_ino_t)parent, name));
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	reply_err(req, cfs_rmdir(mnt_of(req)->fs, (cfs_ino_t)parent, name));
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	unsigned cflags = 0;
	int ret;

	if (flags & RENAME_NOREPLACE)
		cflags |= CFS_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		cflags |= CFS_RENAME_EXCHANGE;
	/* RENAME_WHITEOUT (overlayfs) is not supported */
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		ret = -EINVAL;
	else
		ret = cfs_rename(mnt_of(req)->fs, (cfs_ino_t)parent, name,
				 (cfs_ino_t)newparent, newname, cflags);
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
	if (!b->plus || is_dot(d->name) || entry_get(m, d->ino, &e) < 0) {
		memset(&e, 0, sizeof(e));
		e.attr.st_ino = d->ino;
		e.attr.st_mode = d->dtype << 12;
	} else {
		*pinned = true;
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
	(void)fi;
	do_readdir(req, ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, true);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct cfs_stat cs;
	int ret = cfs_getattr(mnt_of(req)->fs, (cfs_ino_t)ino, &cs);

	if (ret == 0 && !S_ISDIR(cs.mode))
		ret = -ENOTDIR;
	if (ret < 0)
		reply_err(req, ret);
	else
		fuse_reply_open(req, fi);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	(void)fi;
	reply_err(req, cfs_fsync(mnt_of(req)->fs, (cfs_ino_t)ino, datasync));
}

/* ---- files ---------------------------------------------------------- */

static bool writable(const struct fuse_file_info *fi)
{
	return (fi->flags & O_ACCMODE) != O_RDONLY;
}

static struct writer **writer_slot(struct mnt *m, cfs_ino_t ino)
{
	struct writer **w = &m->writers[ino % WRITERS_SLOTS];

	while (*w && (*w)->ino != ino)
		w = &(*w)->next;
	return w;
}

/* Count writable opens of ino (delta +1 at open, -1 at release). */
static void writers_add(struct mnt *m, cfs_ino_t ino, int delta)
{
	struct writer **w, *n;

	pthread_mutex_lock(&m->wlock);
	w = writer_slot(m, ino);
	if (!*w && delta > 0 && (n = calloc(1, sizeof(*n)))) {
		n->ino = ino;
		*w = n;
	}
	if (*w) {
		(*w)->n += (unsigned)delta;
		if ((*w)->n == 0) {
			n = *w;
			*w = n->next;
			free(n);
		}
	}
	pthread_mutex_unlock(&m->wlock);
}

/* At exit: files still open when the filesystem went away. */
static void writers_free(struct mnt *m)
{
	for (int i = 0; i < WRITERS_SLOTS; i++)
		while (m->writers[i]) {
			struct writer *w = m->writers[i];

			m->writers[i] = w->next;
			free(w);
		}
}

static bool has_writers(struct mnt *m, cfs_ino_t ino)
{
	bool ret;

	pthread_mutex_lock(&m->wlock);
	ret = *writer_slot(m, ino) != NULL;
	pthread_mutex_unlock(&m->wlock);
	return ret;
}

/* The file handle's reference (cfs_inode_get) lasts until release. */
static int file_opened(struct mnt *m, cfs_ino_t ino, struct fuse_file_info *fi)
{
	int ret = cfs_inode_get(m->fs, ino);

	if (ret < 0)
		return ret;
	/* nothing else changes the image, so cached pages stay valid */
	fi->keep_cache = 1;
	if (writable(fi))
		writers_add(m, ino, 1);
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
	int ret = cfs_mknod(m->fs, (cfs_ino_t)parent, name, S_IFREG | (mode & 07777), 0,
			    ctx->uid, ctx->gid, ino);

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

	if (ret == 0)
		ret = entry_get(m, ino, &e);
	if (ret < 0) {
		reply_err(req, ret);
		return;
	}
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
	file_closed(mnt_of(req), (cfs_ino_t)ino, fi);
	reply_err(req, 0);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	char *buf = malloc(size ? size : 1);
	ssize_t n;

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

/* O_APPEND needs nothing here: with the writeback cache the kernel picks
 * the offset (it owns the file size), without it the kernel passes the
 * end of file it knows, which is ours since nothing else writes. */
static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		     off_t off, struct fuse_file_info *fi)
{
	ssize_t n = cfs_write(mnt_of(req)->fs, (cfs_ino_t)ino, buf, size, (uint64_t)off);

	(void)fi;
	if (n < 0)
		reply_err(req, (int)n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	(void)fi;
	reply_err(req, cfs_fsync(mnt_of(req)->fs, (cfs_ino_t)ino, datasync));
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
			 off_t len, struct fuse_file_info *fi)
{
	int cmode = 0, ret;

	(void)fi;
	if (mode & FALLOC_FL_KEEP_SIZE)
		cmode |= CFS_FALLOC_KEEP_SIZE;
	if (mode & FALLOC_FL_PUNCH_HOLE)
		cmode |= CFS_FALLOC_PUNCH_HOLE;
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE))
		ret = -EOPNOTSUPP;
	else if (off < 0 || len <= 0)
		ret = -EINVAL;
	else
		ret = cfs_fallocate(mnt_of(req)->fs, (cfs_ino_t)ino, cmode,
				    (uint64_t)off, (uint64_t)len);
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

	(void)fi;
	if (has_writers(m, (cfs_ino_t)ino))
		fuse_lowlevel_notify_inval_inode(m->se, ino, 0, 0);
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

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	int cflags = 0;

	/* POSIX ACLs would be stored but never enforced (the kernel checks
	 * only the mode bits without FUSE_CAP_POSIX_ACL): refuse them, as
	 * ext4 mounted with noacl does. */
	if (strncmp(name, "system.posix_acl_", 17) == 0) {
		reply_err(req, -EOPNOTSUPP);
		return;
	}
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
	reply_err(req, cfs_removexattr(mnt_of(req)->fs, (cfs_ino_t)ino, name));
}

static const struct fuse_lowlevel_ops chunkfs_ops = {
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
};

/* ---- the cleaner ---------------------------------------------------- */

/* About once a second, mark chunks clean that have been idle for
 * clean_after seconds, so that a crash costs a check of only the chunks
 * that were in use. */
static void *cleaner_main(void *arg)
{
	struct mnt *m = arg;
	struct timespec t;
	int ret;

	pthread_mutex_lock(&m->lock);
	while (!m->stop) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		t.tv_sec += 1;
		pthread_cond_timedwait(&m->wake, &m->lock, &t);
		if (m->stop)
			break;
		pthread_mutex_unlock(&m->lock);
		ret = cfs_clean_idle(m->fs, m->clean_after);
		if (ret < 0)
			fuse_log(FUSE_LOG_ERR, "chunkfs: marking idle chunks clean: %s\n",
				 errstr(ret));
		pthread_mutex_lock(&m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

static int cleaner_start(struct mnt *m)
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
	ret = pthread_create(&m->cleaner, NULL, cleaner_main, m);
	if (ret)
		return -ret;
	m->cleaner_started = true;
	return 0;
}

static void cleaner_stop(struct mnt *m)
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

/* ---- options -------------------------------------------------------- */

struct mopts {
	const char *image, *dir;
	bool helper;                    /* mount(8) helper conventions */
	bool foreground, debug, fake;
	bool rdonly, nocheck;
	bool user_dev, user_suid, user_fsname, user_subtype;
	double clean_after;
	enum atime_mode atime;
	bool diratime;
	unsigned max_threads;
	char *fuse;                     /* options passed on to libfuse */
};

/* Options that only mean something to mount(8) and fstab. */
static bool fstab_only(const char *o)
{
	static const char *const names[] = {
		"", "defaults", "auto", "noauto", "user", "nouser", "users", "owner",
		"group", "nofail", "_netdev", "loop", NULL
	};

	for (int i = 0; names[i]; i++)
		if (strcmp(o, names[i]) == 0)
			return true;
	return strncmp(o, "x-", 2) == 0 || strncmp(o, "comment=", 8) == 0;
}

static int add_fuse_opt(struct mopts *o, const char *opt)
{
	return fuse_opt_add_opt(&o->fuse, opt) == 0 ? 0 : -ENOMEM;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v) || v < 0 || v > 1e6)
		return -EINVAL;
	*out = v;
	return 0;
}

/* One -o option: ours, one for mount(8) only, or one for libfuse. */
static int mount_opt(struct mopts *o, const char *opt)
{
	uint64_t n;

	if (strncmp(opt, "clean_after=", 12) == 0) {
		if (parse_seconds(opt + 12, &o->clean_after) < 0)
			return usage_error("mount", "bad clean_after '%s' (seconds)", opt + 12);
		return 0;
	}
	if (strncmp(opt, "max_threads=", 12) == 0) {
		if (parse_u64(opt + 12, &n) < 0 || n < 1 || n > 1024)
			return usage_error("mount", "bad max_threads '%s' (1-1024)", opt + 12);
		o->max_threads = (unsigned)n;
		return 0;
	}
	if (strcmp(opt, "nocheck") == 0)
		return (o->nocheck = true), 0;
	if (strcmp(opt, "default_permissions") == 0 || fstab_only(opt))
		return 0;               /* always on, or not ours */
	if (strcmp(opt, "ro") == 0)
		o->rdonly = true;
	else if (strcmp(opt, "rw") == 0)
		o->rdonly = false;
	else if (strcmp(opt, "noatime") == 0)
		o->atime = ATIME_OFF;
	else if (strcmp(opt, "relatime") == 0 || strcmp(opt, "atime") == 0)
		o->atime = ATIME_REL;
	else if (strcmp(opt, "strictatime") == 0)
		o->atime = ATIME_STRICT;
	else if (strcmp(opt, "nodiratime") == 0)
		o->diratime = false;
	else if (strcmp(opt, "diratime") == 0)
		o->diratime = true;
	else if (strcmp(opt, "debug") == 0)
		o->debug = o->foreground = true;
	else if (strcmp(opt, "dev") == 0 || strcmp(opt, "nodev") == 0)
		o->user_dev = true;
	else if (strcmp(opt, "suid") == 0 || strcmp(opt, "nosuid") == 0)
		o->user_suid = true;
	else if (strncmp(opt, "fsname=", 7) == 0)
		o->user_fsname = true;
	else if (strncmp(opt, "subtype=", 8) == 0)
		o->user_subtype = true;
	return add_fuse_opt(o, opt) < 0 ? EX_FAIL : 0;
}

/* Split a -o list at commas not escaped by a backslash (libfuse's rule). */
static int mount_opts(struct mopts *o, const char *list)
{
	char *s = strdup(list), *p, *start;
	int ret = 0;

	if (!s)
		return EX_FAIL;
	for (p = start = s; ret == 0; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			continue;
		}
		if (*p && *p != ',')
			continue;
		bool last = !*p;

		*p = 0;
		ret = mount_opt(o, start);
		if (last)
			break;
		start = p + 1;
	}
	free(s);
	return ret;
}

/* mount(8) calls helpers as "mount.TYPE SPEC DIR [-sfnv] [-N NS] [-o OPTS]
 * [-t TYPE]"; -f there means "fake", and -r/-w mean ro/rw. */
static int parse_helper_args(struct mopts *o, int argc, char **argv)
{
	int opt, ret;

	while ((opt = getopt(argc, argv, ":sfnvrwo:t:N:")) != -1) {
		switch (opt) {
		case 's': case 'n': case 'v': case 't':
			break;
		case 'f':
			o->fake = true;
			break;
		case 'r':
			o->rdonly = true;
			break;
		case 'w':
			o->rdonly = false;
			break;
		case 'o':
			if ((ret = mount_opts(o, optarg)) != 0)
				return ret;
			break;
		case 'N':
			return usage_error("mount", "-N (mount namespaces) is not supported");
		default:
			return bad_option("mount", argv, opt);
		}
	}
	return 0;
}

static int parse_cli_args(struct mopts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "options", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 }
	};
	int opt, ret;

	while ((opt = getopt_long(argc, argv, ":fdo:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			o->foreground = true;
			break;
		case 'd':
			o->debug = o->foreground = true;
			break;
		case 'o':
			if ((ret = mount_opts(o, optarg)) != 0)
				return ret;
			break;
		default:
			return bad_option("mount", argv, opt);
		}
	}
	return 0;
}

static int parse_args(struct mopts *o, int argc, char **argv)
{
	int ret;

	opterr = 0;
	ret = o->helper ? parse_helper_args(o, argc, argv) : parse_cli_args(o, argc, argv);
	if (ret)
		return ret;
	if (argc - optind != 2)
		return usage_error("mount", argc - optind < 2 ? "IMAGE and DIR are required" :
				   "too many arguments");
	o->image = argv[optind];
	o->dir = argv[optind + 1];
	return 0;
}

/* The options libfuse gets: the user's, plus default_permissions (the
 * kernel checks modes and owners), the image as the source in
 * /proc/mounts, type fuse.chunkfs, and, as root, dev and suid as for any
 * kernel filesystem (mount.fuse3 does the same). */
static int final_fuse_opts(struct mopts *o, const char *image)
{
	char *fsname = NULL;
	int ret = 0;

	if (!o->user_fsname) {
		ret = fuse_opt_add_opt_escaped(&fsname, image);
		if (ret == 0) {
			size_t len = strlen(fsname) + 8;
			char *opt = malloc(len);

			ret = -1;
			if (opt) {
				snprintf(opt, len, "fsname=%s", fsname);
				ret = fuse_opt_add_opt(&o->fuse, opt);
				free(opt);
			}
		}
		free(fsname);
	}
	if (ret == 0 && !o->user_subtype)
		ret = fuse_opt_add_opt(&o->fuse, "subtype=chunkfs");
	if (ret == 0)
		ret = fuse_opt_add_opt(&o->fuse, "default_permissions");
	if (ret == 0 && geteuid() == 0 && !o->user_dev)
		ret = fuse_opt_add_opt(&o->fuse, "dev");
	if (ret == 0 && geteuid() == 0 && !o->user_suid)
		ret = fuse_opt_add_opt(&o->fuse, "suid");
	return ret == 0 ? 0 : -ENOMEM;
}

/* ---- opening the image ---------------------------------------------- */

/* "1,3,7" of the chunks that are not clean; returns how many. */
static uint32_t dirty_list(struct cfs_fs *fs, char *buf, size_t len)
{
	struct cfs_info info;
	uint32_t c, n = 0;
	size_t used = 0;

	buf[0] = 0;
	cfs_get_info(fs, &info);
	for (c = 0; c < info.chunks; c++) {
		struct cfs_chunk_info ci;

		if (cfs_get_chunk_info(fs, c, &ci) < 0 || ci.state == CFS_CHUNK_CLEAN)
			continue;
		if (used + 16 < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%u", n ? "," : "", c);
		else if (used + 4 < len && buf[used - 1] != '.')
			used += (size_t)snprintf(buf + used, len - used, ",...");
		n++;
	}
	return n;
}

/* A read-only mount takes no write lock in the library; a shared lock of
 * our own keeps writers (another mount, chunkfs put) out meanwhile. */
static int lock_shared(const char *image, int *fd)
{
	*fd = open(image, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	if (flock(*fd, LOCK_SH | LOCK_NB) < 0) {
		int ret = errno == EWOULDBLOCK ? -EBUSY : -errno;

		close(*fd);
		*fd = -1;
		return ret;
	}
	return 0;
}

/* Problems fsck reports while preening, shown as they come. */
static void preen_report(void *ctx, const char *msg)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static unsigned shown;
	const char *img = ctx;

	pthread_mutex_lock(&lock);
	if (shown++ < 40)
		fprintf(stderr, "%s: %s: %s\n", tool_prog, img, msg);
	pthread_mutex_unlock(&lock);
}

/* Check and repair the chunks that need it, as `chunkfs fsck -p` does:
 * 0 when the image may now be mounted, an error when a person is needed. */
static int preen(const struct mopts *o, const char *image)
{
	struct cfs_fsck_opts fo = { .mode = CFS_FSCK_PREEN, .report = preen_report,
				    .ctx = (void *)o->image };
	struct cfs_fsck_result r;
	struct cfs_fs *fs;
	char list[256];
	int ret, cret;

	ret = cfs_open(image, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs);
	if (ret < 0) {
		err_msg("%s: %s", o->image, cfs_last_error());
		return ret;
	}
	dirty_list(fs, list, sizeof(list));
	ret = cfs_fsck(fs, &fo, &r);
	cret = cfs_close(fs);
	if (ret < 0 || cret < 0) {
		err_msg("%s: checking chunks %s failed: %s", o->image, list,
			errstr(ret < 0 ? ret : cret));
		return ret < 0 ? ret : cret;
	}
	fprintf(stderr, "%s: %s: checked %u of %u chunks (%s%s) in %.3fs: ", tool_prog,
		o->image, r.checked, r.chunks, list,
		r.escalated ? "; lost directory entries: every chunk" : "", r.seconds);
	if (!r.problems)
		fprintf(stderr, "no problems\n");
	else
		fprintf(stderr, "%llu problem%s, %llu fixed\n", (unsigned long long)r.problems,
			r.problems > 1 ? "s" : "", (unsigned long long)r.fixed);
	if (r.unfixed) {
		err_msg("%s: %llu problem%s need%s a person: run chunkfs fsck %s", o->image,
			(unsigned long long)r.unfixed, r.unfixed > 1 ? "s" : "",
			r.unfixed > 1 ? "" : "s", o->image);
		return -EUCLEAN;
	}
	return 0;
}

/* Chunks left dirty by a crash are checked (and preened) before the
 * mount, unless -o nocheck.  A read-only look tells whether any are. */
static int check_before_mount(const struct mopts *o, const char *image)
{
	struct cfs_fs *fs;
	char list[256];
	uint32_t n;
	int ret = cfs_open(image, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs);

	if (ret < 0) {
		err_msg("%s: %s", o->image, cfs_last_error());
		return ret;
	}
	n = dirty_list(fs, list, sizeof(list));
	cfs_close(fs);
	if (!n || o->nocheck)
		return 0;
	return preen(o, image);
}

static int open_image(const struct mopts *o, const char *image, struct cfs_fs **fs,
		      int *lockfd)
{
	int flags = o->rdonly ? CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK : 0;
	char list[256];
	uint32_t n;
	int ret;

	*lockfd = -1;
	ret = check_before_mount(o, image);
	if (ret < 0)
		return ret;
	if (o->nocheck)
		flags |= CFS_OPEN_NOCHECK;
	if (o->rdonly && (ret = lock_shared(image, lockfd)) < 0) {
		err_msg("%s: %s", o->image, ret == -EBUSY ?
			"image is in use by another process (mounted?)" : errstr(ret));
		return ret;
	}
	ret = cfs_open(image, flags, fs);
	if (ret < 0) {
		err_msg("%s: %s", o->image, cfs_last_error());
		return ret;
	}
	n = dirty_list(*fs, list, sizeof(list));
	if (n && !o->nocheck) {
		/* dirtied by someone else between the check and now */
		err_msg("%s: %u chunk%s need checking (%s): run chunkfs fsck", o->image,
			n, n > 1 ? "s" : "", list);
		return -EUCLEAN;
	}
	if (n)
		warn_msg("%s: mounting with %u unchecked chunk%s (%s): -o nocheck",
			 o->image, n, n > 1 ? "s" : "", list);
	return 0;
}

/* ---- main ----------------------------------------------------------- */

/* In the background, the daemon's complaints go to syslog (fuse_log's
 * levels are syslog's priorities). */
static void log_to_syslog(enum fuse_log_level level, const char *fmt, va_list ap)
{
	vsyslog((int)level, fmt, ap);
}

static void daemonize(const struct mopts *o)
{
	fuse_daemonize(o->foreground);
	if (o->foreground)
		return;
	openlog("chunkfs", LOG_PID, LOG_DAEMON);
	fuse_set_log_func(log_to_syslog);
}

static int check_mountpoint(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) < 0) {
		err_host(dir, -errno);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		err_host(dir, -ENOTDIR);
		return -1;
	}
	return 0;
}

static struct fuse_session *session_new(struct mnt *m, struct mopts *o)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL;

	if (fuse_opt_add_arg(&args, tool_prog) == 0 &&
	    (!o->debug || fuse_opt_add_arg(&args, "-d") == 0) &&
	    fuse_opt_add_arg(&args, "-o") == 0 && fuse_opt_add_arg(&args, o->fuse) == 0) {
		/* max_write=, max_background= and friends tune conn */
		m->conn_opts = fuse_parse_conn_info_opts(&args);
		if (m->conn_opts)
			se = fuse_session_new(&args, &chunkfs_ops, sizeof(chunkfs_ops), m);
	}
	fuse_opt_free_args(&args);
	return se;
}

static int serve(struct mnt *m, struct mopts *o)
{
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	int ret;

	if (!cfg)
		return -ENOMEM;
	fuse_loop_cfg_set_clone_fd(cfg, 1);
	fuse_loop_cfg_set_max_threads(cfg, o->max_threads);
	ret = cleaner_start(m);
	if (ret == 0)
		ret = fuse_session_loop_mt(m->se, cfg);
	cleaner_stop(m);
	fuse_loop_cfg_destroy(cfg);
	/* the loop returns the signal number when stopped by one */
	return ret < 0 ? ret : 0;
}

static int run_mount(struct mopts *o, const char *image)
{
	struct mnt m = { .timeout = ATTR_TIMEOUT, .entry_timeout = ENTRY_TIMEOUT,
			 .atime = o->atime,
			 .diratime = o->diratime, .rdonly = o->rdonly,
			 .clean_after = o->clean_after };
	int lockfd, ret, status = EX_FAIL;

	pthread_mutex_init(&m.wlock, NULL);
	if (check_mountpoint(o->dir) < 0 || final_fuse_opts(o, image) < 0)
		return EX_FAIL;
	if (open_image(o, image, &m.fs, &lockfd) < 0)
		goto out;
	m.se = session_new(&m, o);
	if (!m.se)
		goto out;
	/* A shell starts background jobs with SIGINT ignored, and libfuse
	 * only catches signals left at their default: SIGINT and SIGTERM
	 * must unmount however we were started.  (SIGHUP keeps its
	 * disposition, so nohup still works.) */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (fuse_set_signal_handlers(m.se) != 0)
		goto out_session;
	if (fuse_session_mount(m.se, o->dir) != 0)
		goto out_signals;
	/* errors past this point go to syslog unless in the foreground */
	daemonize(o);
	ret = serve(&m, o);
	if (ret < 0)
		fuse_log(FUSE_LOG_ERR, "chunkfs: %s: %s\n", o->dir, errstr(ret));
	else
		status = EX_OK;
	fuse_session_unmount(m.se);
out_signals:
	fuse_remove_signal_handlers(m.se);
out_session:
	fuse_session_destroy(m.se);
out:
	/* cfs_close writes everything and marks every chunk clean */
	if (m.fs && cfs_close(m.fs) < 0) {
		fuse_log(FUSE_LOG_ERR, "chunkfs: %s: closing the image failed; chunks stay "
			 "dirty\n", o->image);
		status = EX_FAIL;
	}
	if (lockfd >= 0)
		close(lockfd);
	writers_free(&m);
	free(m.conn_opts);
	return status;
}

/* Called by mount.fuse3 as "chunkfs IMAGE DIR -o OPTS" (its convention
 * for type fuse.chunkfs; it always passes -o, with at least dev,suid):
 * IMAGE is no command name, DIR is a directory.  Without the -o it is
 * more likely a typo than a mount, and no mount is made. */
bool mount_helper_call(int argc, char **argv);

bool mount_helper_call(int argc, char **argv)
{
	struct stat st;

	return argc == 5 && strcmp(argv[3], "-o") == 0 && argv[1][0] != '-' &&
	       stat(argv[2], &st) == 0 && S_ISDIR(st.st_mode) &&
	       stat(argv[1], &st) == 0 && !S_ISDIR(st.st_mode);
}

/* One worker per CPU, at least two (one can wait on the disk, say in an
 * fsync, while the other serves).  More only cost: every idle worker
 * waits in read(2) on /dev/fuse and the kernel wakes the one that has
 * waited longest, so a serial workload hands each request to another
 * thread; 16 workers on 2 CPUs were up to 1.4x slower than 2 at
 * create/stat/unlink, and slower with 4 processes in parallel too. */
static unsigned default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 2)
		return 2;
	return n > MAX_DEFAULT_THREADS ? MAX_DEFAULT_THREADS : (unsigned)n;
}

int cmd_mount(int argc, char **argv);

int cmd_mount(int argc, char **argv)
{
	struct mopts o = { .clean_after = DEFAULT_CLEAN, .atime = ATIME_REL,
			   .diratime = true, .max_threads = default_threads() };
	char *image;
	int ret;

	o.helper = strncmp(tool_prog, "mount.", 6) == 0 || strcmp(argv[0], "mount") != 0;
	ret = parse_args(&o, argc, argv);
	if (ret == 0 && o.fake)
		ret = EX_OK;
	else if (ret == 0) {
		/* the daemon leaves the working directory */
		image = realpath(o.image, NULL);
		if (!image) {
			err_host(o.image, -errno);
			ret = EX_FAIL;
		} else {
			ret = run_mount(&o, image);
			free(image);
		}
	}
	free(o.fuse);
	return ret;
}

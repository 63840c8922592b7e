/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs mount: FUSE over io_uring.
 *
 * With -o io_uring (the default where the kernel offers it: the fuse
 * module's enable_uring parameter, Linux 6.14 and later) libfuse >= 3.18
 * registers one ring per CPU with the kernel, and a request is handed to
 * the daemon, and its reply back, through shared memory: one io_uring
 * command commits a reply and fetches the next request, with no wake-up of
 * a thread blocked in read(2) on /dev/fuse.  INIT, FORGET, INTERRUPT and
 * notifications still come over /dev/fuse (daemon/loop.c).
 *
 * libfuse serves each CPU's ring from one thread of its own and calls the
 * handler in it; the next request of that CPU waits until the handler
 * returns.  A request that may wait on the disk for long (the ones the
 * /dev/fuse loop hands its reader role on for: data, fsync, truncation,
 * ioctls) would so hold up every process of its CPU.  Those are passed to
 * a pool of workers here, which call the same handler and reply from
 * there (libfuse takes a reply from any thread: the ring's lock orders it
 * with the ring's own thread).  Everything else is served in the ring's
 * thread, which is the point of the ring.  A job queued while every
 * worker is busy starts one more (up to MAX_EXTRA), and so does a worker
 * about to wait for a repair (cfs_block_fn), as the /dev/fuse loop does:
 * a job that waits for another (an lseek waits for the WRITEs of the
 * pages it has the kernel write back) never waits for a free worker.
 *
 * Job lifetime: what the request points at (a write's data, an ioctl's
 * input) is in the ring's buffer, which stays the request's until the
 * reply; what libfuse built on its stack (struct fuse_file_info, the new
 * attributes of a setattr) is copied into the job.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"

/* libfuse 3.18 defines the capability with the transport */
#ifdef FUSE_CAP_OVER_IO_URING
#define HAVE_URING 1
#else
#define HAVE_URING 0
#endif

#define URING_PARAM "/sys/module/fuse/parameters/enable_uring"
#define MAX_EXTRA   64          /* workers started beyond the pool */

/* Every operation the ring may bring: the long ones always pass to the
 * pool, the others only while a check or repair runs (see repairs). */
enum job_op {
	JOB_READ, JOB_WRITE, JOB_FSYNC, JOB_FSYNCDIR, JOB_FALLOCATE, JOB_LSEEK,
	JOB_SETATTR, JOB_IOCTL,
	JOB_LOOKUP, JOB_GETATTR, JOB_READLINK, JOB_MKNOD, JOB_MKDIR, JOB_SYMLINK,
	JOB_LINK, JOB_UNLINK, JOB_RMDIR, JOB_RENAME, JOB_OPENDIR, JOB_READDIR,
	JOB_READDIRPLUS, JOB_RELEASEDIR, JOB_OPEN, JOB_CREATE, JOB_RELEASE,
	JOB_STATFS, JOB_SETXATTR, JOB_GETXATTR, JOB_LISTXATTR, JOB_REMOVEXATTR,
};

/* A request's arguments, by the names of the handlers' parameters.
 * Strings and buffers stay where libfuse put them (the ring's buffer). */
struct job {
	struct job *next;
	enum job_op op;
	fuse_req_t req;
	fuse_ino_t ino, ino2;           /* ino or parent; newparent */
	const char *name, *name2;       /* name; newname, link target */
	const char *buf;                /* write data, xattr value, ioctl input */
	void *arg;                      /* ioctl */
	size_t size, size2;             /* size, ioctl's out_bufsz */
	off_t off, len;
	int i;                          /* mode, datasync, whence, flags, to_set */
	unsigned u;                     /* rename flags, ioctl cmd and flags */
	unsigned u2;
	dev_t rdev;
	mode_t mode;
	struct stat attr;
	struct fuse_file_info fi;
	bool has_fi;
};

static struct pool {
	pthread_mutex_t lock;
	pthread_cond_t work;
	struct job *head, **tail;
	bool stop;
	unsigned idle;
	unsigned n, nextra;
	pthread_t *t;
	pthread_t extra[MAX_EXTRA];
} pool = { .lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER };

static __thread bool t_pool;    /* this thread is one of the pool's workers */

/* The kernel took the ring at INIT (libfuse then starts its threads). */
static _Atomic bool ring_on;

bool mount_uring_built(void)
{
	return HAVE_URING;
}

bool mount_uring_kernel_on(void)
{
	char c = 0;
	FILE *f = fopen(URING_PARAM, "r");

	if (!f)
		return false;
	if (fread(&c, 1, 1, f) != 1)
		c = 0;
	fclose(f);
	return c == 'Y' || c == 'y' || c == '1';
}

const char *mount_uring_param(void)
{
	return URING_PARAM;
}

bool mount_uring_serving(void)
{
	return ring_on;
}

static void job_run(struct job *j)
{
	const struct fuse_lowlevel_ops *op = &chunkfs_ops;
	struct fuse_file_info *fi = j->has_fi ? &j->fi : NULL;
	fuse_req_t r = j->req;

	switch (j->op) {
	case JOB_READ: op->read(r, j->ino, j->size, j->off, fi); break;
	case JOB_WRITE: op->write(r, j->ino, j->buf, j->size, j->off, fi); break;
	case JOB_FSYNC: op->fsync(r, j->ino, j->i, fi); break;
	case JOB_FSYNCDIR: op->fsyncdir(r, j->ino, j->i, fi); break;
	case JOB_FALLOCATE: op->fallocate(r, j->ino, j->i, j->off, j->len, fi); break;
	case JOB_LSEEK: op->lseek(r, j->ino, j->off, j->i, fi); break;
	case JOB_SETATTR: op->setattr(r, j->ino, &j->attr, j->i, fi); break;
	case JOB_IOCTL:
		op->ioctl(r, j->ino, j->u, j->arg, fi, j->u2, j->buf, j->size, j->size2);
		break;
	case JOB_LOOKUP: op->lookup(r, j->ino, j->name); break;
	case JOB_GETATTR: op->getattr(r, j->ino, fi); break;
	case JOB_READLINK: op->readlink(r, j->ino); break;
	case JOB_MKNOD: op->mknod(r, j->ino, j->name, j->mode, j->rdev); break;
	case JOB_MKDIR: op->mkdir(r, j->ino, j->name, j->mode); break;
	case JOB_SYMLINK: op->symlink(r, j->name2, j->ino, j->name); break;
	case JOB_LINK: op->link(r, j->ino, j->ino2, j->name2); break;
	case JOB_UNLINK: op->unlink(r, j->ino, j->name); break;
	case JOB_RMDIR: op->rmdir(r, j->ino, j->name); break;
	case JOB_RENAME: op->rename(r, j->ino, j->name, j->ino2, j->name2, j->u); break;
	case JOB_OPENDIR: op->opendir(r, j->ino, fi); break;
	case JOB_READDIR: op->readdir(r, j->ino, j->size, j->off, fi); break;
	case JOB_READDIRPLUS: op->readdirplus(r, j->ino, j->size, j->off, fi); break;
	case JOB_RELEASEDIR: op->releasedir(r, j->ino, fi); break;
	case JOB_OPEN: op->open(r, j->ino, fi); break;
	case JOB_CREATE: op->create(r, j->ino, j->name, j->mode, fi); break;
	case JOB_RELEASE: op->release(r, j->ino, fi); break;
	case JOB_STATFS: op->statfs(r, j->ino); break;
	case JOB_SETXATTR: op->setxattr(r, j->ino, j->name, j->buf, j->size, j->i); break;
	case JOB_GETXATTR: op->getxattr(r, j->ino, j->name, j->size); break;
	case JOB_LISTXATTR: op->listxattr(r, j->ino, j->size); break;
	case JOB_REMOVEXATTR: op->removexattr(r, j->ino, j->name); break;
	}
	free(j);
}

static void *pool_worker(void *arg)
{
	struct job *j;

	(void)arg;
	t_pool = true;
	pthread_mutex_lock(&pool.lock);
	for (;;) {
		while (!pool.head && !pool.stop) {
			pool.idle++;
			pthread_cond_wait(&pool.work, &pool.lock);
			pool.idle--;
		}
		j = pool.head;
		if (!j)
			break;          /* stopping, and nothing left to serve */
		pool.head = j->next;
		if (!pool.head)
			pool.tail = &pool.head;
		pthread_mutex_unlock(&pool.lock);
		job_run(j);
		pthread_mutex_lock(&pool.lock);
	}
	pthread_mutex_unlock(&pool.lock);
	return NULL;
}

/* One more worker when none is idle (pool.lock held): see job_queue and
 * mount_uring_block for the two waits it keeps from stalling the pool. */
static void pool_grow_locked(void)
{
	if (pool.idle == 0 && !pool.stop && pool.nextra < MAX_EXTRA &&
	    pthread_create(&pool.extra[pool.nextra], NULL, pool_worker, NULL) == 0)
		pool.nextra++;
}

/* Hands j to the pool; served in this thread when the pool cannot take
 * it (no memory was the job's own problem, see job_new). */
static void job_queue(struct job *j)
{
	pthread_mutex_lock(&pool.lock);
	if (pool.n == 0 || pool.stop) {
		pthread_mutex_unlock(&pool.lock);
		job_run(j);
		return;
	}
	j->next = NULL;
	*pool.tail = j;
	pool.tail = &j->next;
	/* Every worker busy: one more.  A job may wait for another: an lseek
	 * has the kernel write back the file's pages first (op_lseek), and
	 * their WRITEs come to this pool; with every worker in such a wait,
	 * nothing would ever serve them. */
	pool_grow_locked();
	pthread_cond_signal(&pool.work);
	pthread_mutex_unlock(&pool.lock);
}

/* Checks and repairs running (cfs_scrub: scrub.c, errors.c).
 * Any request may then wait at a repair's fence, and one that waits in a
 * ring's thread holds up its whole CPU: while one runs, every request
 * passes to the pool.  One that came in just before still waits in its
 * ring; that is a pause of its CPU for the repair, not a deadlock (the
 * repair never needs a request to go on). */
static _Atomic int repairs;

void mount_uring_repair(int begin)
{
	repairs += begin ? 1 : -1;
}

/* A job for a ring request that goes to the pool, or NULL: then the
 * handler runs here (a /dev/fuse request, whose loop hands the long ones
 * on itself; a quick one while nothing is repaired; no memory). */
static struct job *job_new(fuse_req_t req, enum job_op op, fuse_ino_t ino,
			   const struct fuse_file_info *fi, bool always)
{
	struct job *j;

#if HAVE_URING
	if (!fuse_req_is_uring(req))
		return NULL;
#else
	return NULL;
#endif
	if (!always && repairs == 0)
		return NULL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->op = op;
	j->req = req;
	j->ino = ino;
	if (fi) {
		j->fi = *fi;
		j->has_fi = true;
	}
	return j;
}

/* ---- notifications that wait for requests ------------------------------
 * io_uring hands a request to the daemon through the ring command of an
 * entry that waits in the kernel, and it does so in the task that
 * submitted that command (io_uring_cmd_complete_in_task: task work of
 * the submitter).  A pool worker that replies submits the entry's next
 * COMMIT_AND_FETCH itself, so it owns that entry until the entry takes a
 * request; and the kernel hands out the entry last returned first.  Task
 * work runs when its task returns to user space or sleeps interruptibly,
 * never while it sleeps in D.  So a worker that had the kernel invalidate
 * a file's pages (fuse_reverse_inval_inode: laundering a dirty page waits
 * for its WRITE, in D) waited for a WRITE queued on the very entry whose
 * delivery only it could run: the nearly-full hang of issue 26.  An entry
 * invalidation takes the directory's lock in D in the same way.
 *
 * Such notifications are made by one thread of their own, which never
 * submits to a ring, while the asking thread waits on a condition
 * variable: an interruptible sleep, in which its task work runs. */

struct note {
	struct note *next;
	struct fuse_session *se;
	fuse_ino_t ino;                 /* inode, or the entry's parent */
	const char *name;               /* the entry's name, or NULL */
	off_t off, len;
	int ret;
	bool done;
};

static struct notifier {
	pthread_mutex_t lock;
	pthread_cond_t todo, done;
	struct note *head, **tail;
	bool running, stop;
	pthread_t t;
} nt = { .lock = PTHREAD_MUTEX_INITIALIZER, .todo = PTHREAD_COND_INITIALIZER,
	 .done = PTHREAD_COND_INITIALIZER };

static __thread bool t_notifier;

static int note_send(const struct note *n)
{
	if (n->name)
		return fuse_lowlevel_notify_inval_entry(n->se, n->ino, n->name,
							strlen(n->name));
	return fuse_lowlevel_notify_inval_inode(n->se, n->ino, n->off, n->len);
}

static void *notifier_main(void *arg)
{
	struct note *n;

	(void)arg;
	t_notifier = true;
	pthread_mutex_lock(&nt.lock);
	for (;;) {
		while (!nt.head && !nt.stop)
			pthread_cond_wait(&nt.todo, &nt.lock);
		n = nt.head;
		if (!n)
			break;          /* stopping, and nothing left to send */
		nt.head = n->next;
		if (!nt.head)
			nt.tail = &nt.head;
		pthread_mutex_unlock(&nt.lock);
		n->ret = note_send(n);
		pthread_mutex_lock(&nt.lock);
		n->done = true;
		pthread_cond_broadcast(&nt.done);
	}
	pthread_mutex_unlock(&nt.lock);
	return NULL;
}

/* Sends n from the notifier and waits for it, or here where no ring can
 * be waiting on this thread (no ring, the notifier itself, or stopped). */
static int note_wait(struct note *n)
{
	pthread_mutex_lock(&nt.lock);
	if (!ring_on || !nt.running || nt.stop || t_notifier) {
		pthread_mutex_unlock(&nt.lock);
		return note_send(n);
	}
	n->next = NULL;
	n->done = false;
	*nt.tail = n;
	nt.tail = &n->next;
	pthread_cond_signal(&nt.todo);
	while (!n->done)
		pthread_cond_wait(&nt.done, &nt.lock);
	pthread_mutex_unlock(&nt.lock);
	return n->ret;
}

int mount_inval_inode(struct fuse_session *se, fuse_ino_t ino, off_t off, off_t len)
{
	struct note n = { .se = se, .ino = ino, .off = off, .len = len };

	/* attributes only: nothing in the kernel waits for a request */
	if (off < 0)
		return fuse_lowlevel_notify_inval_inode(se, ino, off, len);
	return note_wait(&n);
}

int mount_inval_entry(struct fuse_session *se, fuse_ino_t parent, const char *name)
{
	struct note n = { .se = se, .ino = parent, .name = name };

	return note_wait(&n);
}

static int notifier_start(void)
{
	int ret;

	nt.head = NULL;
	nt.tail = &nt.head;
	nt.stop = false;
	ret = -pthread_create(&nt.t, NULL, notifier_main, NULL);
	nt.running = ret == 0;
	return ret;
}

/* What is queued is sent first; a later caller sends its own. */
static void notifier_stop(void)
{
	pthread_mutex_lock(&nt.lock);
	if (!nt.running) {
		pthread_mutex_unlock(&nt.lock);
		return;
	}
	nt.stop = true;
	pthread_cond_signal(&nt.todo);
	pthread_mutex_unlock(&nt.lock);
	pthread_join(nt.t, NULL);
	pthread_mutex_lock(&nt.lock);
	nt.running = false;
	pthread_mutex_unlock(&nt.lock);
}

/* ---- the ops table over the ring ---------------------------------------
 * Each: a job when the request passes to the pool, else the handler now. */

static void ur_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct job *j = job_new(req, JOB_READ, ino, fi, true);

	if (!j)
		return chunkfs_ops.read(req, ino, size, off, fi);
	j->size = size;
	j->off = off;
	job_queue(j);
}

static void ur_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		     off_t off, struct fuse_file_info *fi)
{
	struct job *j = job_new(req, JOB_WRITE, ino, fi, true);

	if (!j)
		return chunkfs_ops.write(req, ino, buf, size, off, fi);
	j->buf = buf;
	j->size = size;
	j->off = off;
	job_queue(j);
}

static void ur_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	struct job *j = job_new(req, JOB_FSYNC, ino, fi, true);

	if (!j)
		return chunkfs_ops.fsync(req, ino, datasync, fi);
	j->i = datasync;
	job_queue(j);
}

static void ur_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	struct job *j = job_new(req, JOB_FSYNCDIR, ino, fi, true);

	if (!j)
		return chunkfs_ops.fsyncdir(req, ino, datasync, fi);
	j->i = datasync;
	job_queue(j);
}

static void ur_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
			 off_t len, struct fuse_file_info *fi)
{
	struct job *j = job_new(req, JOB_FALLOCATE, ino, fi, true);

	if (!j)
		return chunkfs_ops.fallocate(req, ino, mode, off, len, fi);
	j->i = mode;
	j->off = off;
	j->len = len;
	job_queue(j);
}

static void ur_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct job *j = job_new(req, JOB_LSEEK, ino, fi, true);

	if (!j)
		return chunkfs_ops.lseek(req, ino, off, whence, fi);
	j->off = off;
	j->i = whence;
	job_queue(j);
}

/* Only a truncation frees blocks; a change of times or mode is quick. */
static void ur_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct job *j = job_new(req, JOB_SETATTR, ino, fi, to_set & FUSE_SET_ATTR_SIZE);

	if (!j)
		return chunkfs_ops.setattr(req, ino, attr, to_set, fi);
	j->attr = *attr;
	j->i = to_set;
	job_queue(j);
}

static void ur_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		     struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		     size_t in_bufsz, size_t out_bufsz)
{
	struct job *j = job_new(req, JOB_IOCTL, ino, fi, true);

	if (!j)
		return chunkfs_ops.ioctl(req, ino, cmd, arg, fi, flags, in_buf, in_bufsz,
					 out_bufsz);
	j->u = cmd;
	j->arg = arg;
	j->u2 = flags;
	j->buf = in_buf;
	j->size = in_bufsz;
	j->size2 = out_bufsz;
	job_queue(j);
}

static void ur_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct job *j = job_new(req, JOB_LOOKUP, parent, NULL, false);

	if (!j)
		return chunkfs_ops.lookup(req, parent, name);
	j->name = name;
	job_queue(j);
}

/* With a writer's handle, the kernel is about to take a write(): while
 * space is low the handler has the kernel write back the file's pages
 * and waits for their WRITEs (space_gate), which in a ring's thread
 * would wait for that very thread. */
static void ur_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct job *j = job_new(req, JOB_GETATTR, ino, fi, fi && fi->fh == FH_WRITER);

	if (!j)
		return chunkfs_ops.getattr(req, ino, fi);
	job_queue(j);
}

static void ur_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct job *j = job_new(req, JOB_READLINK, ino, NULL, false);

	if (!j)
		return chunkfs_ops.readlink(req, ino);
	job_queue(j);
}

static void ur_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	struct job *j = job_new(req, JOB_MKNOD, parent, NULL, false);

	if (!j)
		return chunkfs_ops.mknod(req, parent, name, mode, rdev);
	j->name = name;
	j->mode = mode;
	j->rdev = rdev;
	job_queue(j);
}

static void ur_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct job *j = job_new(req, JOB_MKDIR, parent, NULL, false);

	if (!j)
		return chunkfs_ops.mkdir(req, parent, name, mode);
	j->name = name;
	j->mode = mode;
	job_queue(j);
}

static void ur_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
		       const char *name)
{
	struct job *j = job_new(req, JOB_SYMLINK, parent, NULL, false);

	if (!j)
		return chunkfs_ops.symlink(req, target, parent, name);
	j->name = name;
	j->name2 = target;
	job_queue(j);
}

static void ur_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	struct job *j = job_new(req, JOB_LINK, ino, NULL, false);

	if (!j)
		return chunkfs_ops.link(req, ino, newparent, newname);
	j->ino2 = newparent;
	j->name2 = newname;
	job_queue(j);
}

static void ur_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct job *j = job_new(req, JOB_UNLINK, parent, NULL, false);

	if (!j)
		return chunkfs_ops.unlink(req, parent, name);
	j->name = name;
	job_queue(j);
}

static void ur_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct job *j = job_new(req, JOB_RMDIR, parent, NULL, false);

	if (!j)
		return chunkfs_ops.rmdir(req, parent, name);
	j->name = name;
	job_queue(j);
}

static void ur_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	struct job *j = job_new(req, JOB_RENAME, parent, NULL, false);

	if (!j)
		return chunkfs_ops.rename(req, parent, name, newparent, newname, flags);
	j->name = name;
	j->ino2 = newparent;
	j->name2 = newname;
	j->u = flags;
	job_queue(j);
}

static void ur_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct job *j = job_new(req, JOB_OPENDIR, ino, fi, false);

	if (!j)
		return chunkfs_ops.opendir(req, ino, fi);
	job_queue(j);
}

static void ur_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct job *j = job_new(req, JOB_READDIR, ino, fi, false);

	if (!j)
		return chunkfs_ops.readdir(req, ino, size, off, fi);
	j->size = size;
	j->off = off;
	job_queue(j);
}

static void ur_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	struct job *j = job_new(req, JOB_READDIRPLUS, ino, fi, false);

	if (!j)
		return chunkfs_ops.readdirplus(req, ino, size, off, fi);
	j->size = size;
	j->off = off;
	job_queue(j);
}

static void ur_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct job *j = job_new(req, JOB_RELEASEDIR, ino, fi, false);

	if (!j)
		return chunkfs_ops.releasedir(req, ino, fi);
	job_queue(j);
}

static void ur_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct job *j = job_new(req, JOB_OPEN, ino, fi, false);

	if (!j)
		return chunkfs_ops.open(req, ino, fi);
	job_queue(j);
}

static void ur_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct job *j = job_new(req, JOB_CREATE, parent, fi, false);

	if (!j)
		return chunkfs_ops.create(req, parent, name, mode, fi);
	j->name = name;
	j->mode = mode;
	job_queue(j);
}

static void ur_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct job *j = job_new(req, JOB_RELEASE, ino, fi, false);

	if (!j)
		return chunkfs_ops.release(req, ino, fi);
	job_queue(j);
}

static void ur_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct job *j = job_new(req, JOB_STATFS, ino, NULL, false);

	if (!j)
		return chunkfs_ops.statfs(req, ino);
	job_queue(j);
}

static void ur_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	struct job *j = job_new(req, JOB_SETXATTR, ino, NULL, false);

	if (!j)
		return chunkfs_ops.setxattr(req, ino, name, value, size, flags);
	j->name = name;
	j->buf = value;
	j->size = size;
	j->i = flags;
	job_queue(j);
}

static void ur_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct job *j = job_new(req, JOB_GETXATTR, ino, NULL, false);

	if (!j)
		return chunkfs_ops.getxattr(req, ino, name, size);
	j->name = name;
	j->size = size;
	job_queue(j);
}

static void ur_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct job *j = job_new(req, JOB_LISTXATTR, ino, NULL, false);

	if (!j)
		return chunkfs_ops.listxattr(req, ino, size);
	j->size = size;
	job_queue(j);
}

static void ur_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct job *j = job_new(req, JOB_REMOVEXATTR, ino, NULL, false);

	if (!j)
		return chunkfs_ops.removexattr(req, ino, name);
	j->name = name;
	job_queue(j);
}

/* Notes which transport the kernel took (daemon/mount.c says it in
 * the mount's log once it serves). */
static void ur_init(void *userdata, struct fuse_conn_info *conn)
{
	chunkfs_ops.init(userdata, conn);
#if HAVE_URING
	ring_on = conn->capable_ext & FUSE_CAP_OVER_IO_URING;
#endif
}

/* The handlers a mount with -o io_uring is given: chunkfs_ops with the
 * long ones passing through the pool. */
struct fuse_lowlevel_ops mount_uring_ops(void)
{
	struct fuse_lowlevel_ops ops = chunkfs_ops;

	ops.init = ur_init;
	ops.read = ur_read;
	ops.write = ur_write;
	ops.fsync = ur_fsync;
	ops.fsyncdir = ur_fsyncdir;
	ops.fallocate = ur_fallocate;
	ops.lseek = ur_lseek;
	ops.setattr = ur_setattr;
	ops.ioctl = ur_ioctl;
	ops.lookup = ur_lookup;
	ops.getattr = ur_getattr;
	ops.readlink = ur_readlink;
	ops.mknod = ur_mknod;
	ops.mkdir = ur_mkdir;
	ops.symlink = ur_symlink;
	ops.link = ur_link;
	ops.unlink = ur_unlink;
	ops.rmdir = ur_rmdir;
	ops.rename = ur_rename;
	ops.opendir = ur_opendir;
	ops.readdir = ur_readdir;
	ops.readdirplus = ur_readdirplus;
	ops.releasedir = ur_releasedir;
	ops.open = ur_open;
	ops.create = ur_create;
	ops.release = ur_release;
	ops.statfs = ur_statfs;
	ops.setxattr = ur_setxattr;
	ops.getxattr = ur_getxattr;
	ops.listxattr = ur_listxattr;
	ops.removexattr = ur_removexattr;
	return ops;
}

/* Called (cfs_block_fn, through mount_loop_block) by a thread about to
 * wait for a repair: a pool worker makes sure another can serve. */
void mount_uring_block(void)
{
	if (!t_pool)
		return;
	pthread_mutex_lock(&pool.lock);
	pool_grow_locked();
	pthread_mutex_unlock(&pool.lock);
}

int mount_uring_start(unsigned nthreads)
{
	int ret = 0;

	pool.t = calloc(nthreads, sizeof(*pool.t));
	if (!pool.t)
		return -ENOMEM;
	ret = notifier_start();
	if (ret < 0) {
		free(pool.t);
		pool.t = NULL;
		return ret;
	}
	pool.head = NULL;
	pool.tail = &pool.head;
	pool.stop = false;
	for (pool.n = 0; pool.n < nthreads; pool.n++) {
		ret = -pthread_create(&pool.t[pool.n], NULL, pool_worker, NULL);
		if (ret < 0)
			break;
	}
	return pool.n > 0 ? 0 : ret;
}

/* libfuse's own loops stop the rings when they end, with this; ours
 * does at the same point, once the pool has served what it had (a reply
 * needs its ring).  It is not in libfuse's public API: a weak reference,
 * so that a libfuse without the symbol still links, and then the rings
 * are left to the process's exit. */
extern int fuse_uring_stop(struct fuse_session *se) __attribute__((weak));

/* After the session ended: the workers serve what is queued, then end;
 * then the rings stop. */
void mount_uring_stop(struct fuse_session *se)
{
	unsigned i, n;

	pthread_mutex_lock(&pool.lock);
	pool.stop = true;
	pthread_cond_broadcast(&pool.work);
	n = pool.n;
	pthread_mutex_unlock(&pool.lock);
	for (i = 0; i < n; i++)
		pthread_join(pool.t[i], NULL);
	/* stop is set: no worker starts another any more */
	for (i = 0; i < pool.nextra; i++)
		pthread_join(pool.extra[i], NULL);
	free(pool.t);
	pool.t = NULL;
	pool.n = pool.nextra = 0;
	notifier_stop();
#if HAVE_URING
	if (fuse_uring_stop)
		fuse_uring_stop(se);
#else
	(void)se;
#endif
}

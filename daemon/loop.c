/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs mount: the loop that takes FUSE requests from /dev/fuse.
 *
 * libfuse's multi-threaded loop lets every idle worker sleep in read(2)
 * on /dev/fuse, and the kernel wakes the one that has waited longest: a
 * serial workload (one process creating, stating or unlinking files) pays
 * for two sleeps and two wake-ups per request, the daemon's and the
 * caller's, and hands each request to another thread.  The round trip,
 * not the daemon's own code, is most of the time of such a request.
 *
 * Here one worker at a time is the reader (leader/followers).  After
 * serving a request it polls /dev/fuse for a short while before it
 * sleeps, so the next request of a serial caller, which follows within
 * microseconds, is taken without a wake-up.  The reader serves quick
 * requests itself and keeps the role; before a request that may wait on
 * the disk for long (data, fsync, a truncation, trim) it hands
 * the role to an idle worker, so one fsync does not stall every other
 * caller.  Spinning yields the CPU on every round, so a caller that
 * shares the CPU runs at once.
 *
 * Signals (SIGINT, SIGTERM, SIGHUP: libfuse's handlers end the session)
 * are taken only by the launching thread, which waits in ppoll on an
 * eventfd that a worker raises when the session ends (unmount).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"

/* Opcodes of the FUSE protocol (linux/fuse.h) that may wait on the disk
 * or run long: the reader hands its role on before serving them.  Freeing
 * an unlinked file (at FORGET or RELEASE) is served in line: its extents
 * are freed in a few block writes, like an unlink on a kernel filesystem. */
enum {
	OP_SETATTR = 4, OP_READ = 15, OP_WRITE = 16, OP_FSYNC = 20, OP_FLUSH = 25,
	OP_FSYNCDIR = 30, OP_IOCTL = 39, OP_FALLOCATE = 43, OP_LSEEK = 46,
	OP_COPY_FILE_RANGE = 47,
};
#define IN_HEADER_LEN 40          /* struct fuse_in_header */
#define SETATTR_SIZE  (1u << 3)   /* FATTR_SIZE in fuse_setattr_in.valid */

static bool may_block(const struct fuse_buf *b)
{
	const char *in = b->mem;
	uint32_t op, valid;

	if (b->size < IN_HEADER_LEN)
		return false;
	memcpy(&op, in + 4, sizeof(op));
	switch (op) {
	case OP_READ: case OP_WRITE: case OP_FSYNC: case OP_FLUSH: case OP_FSYNCDIR:
	case OP_IOCTL: case OP_FALLOCATE: case OP_LSEEK: case OP_COPY_FILE_RANGE:
		return true;
	case OP_SETATTR:
		/* a truncation frees blocks; a change of times or mode does not */
		if (b->size < IN_HEADER_LEN + sizeof(valid))
			return false;
		memcpy(&valid, in + IN_HEADER_LEN, sizeof(valid));
		return valid & SETATTR_SIZE;
	}
	return false;
}

/* How long the reader polls before it sleeps: longer than a serial
 * caller takes between two requests (a few microseconds in the kernel and
 * its own code), short enough to cost nothing noticeable when idle. */
#define SPIN_NS 50000

/* Workers started beyond the pool while others wait for a repair. */
#define MAX_EXTRA 64

struct loop {
	struct fuse_session *se;
	int fd, evfd;
	pthread_mutex_t lock;
	pthread_cond_t turn;         /* the reader role is free, or done */
	bool reading;                /* a worker holds the reader role */
	bool done;
	int err;                     /* first receive error (negative) */
	unsigned idle;               /* workers waiting for the reader role */
	/* workers started for those waiting at a repair's fence */
	pthread_t extra[MAX_EXTRA];
	unsigned nextra;
};

static __thread struct loop *t_loop;   /* the loop this worker serves */
static __thread bool t_reader;         /* this worker holds the reader role */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void loop_end(struct loop *l, int err)
{
	uint64_t one = 1;

	pthread_mutex_lock(&l->lock);
	if (err < 0 && !l->err)
		l->err = err;
	l->done = true;
	pthread_cond_broadcast(&l->turn);
	pthread_mutex_unlock(&l->lock);
	/* wakes the launcher and every worker asleep in poll */
	if (write(l->evfd, &one, sizeof(one)) < 0)
		fuse_log(FUSE_LOG_ERR, "chunkfs: eventfd: %s\n", strerror(errno));
}

/* One request into b: > 0 its size, 0 the session is over, < 0 an error.
 * The descriptor is non-blocking: poll first, then sleep in poll. */
static int loop_receive(struct loop *l, struct fuse_buf *b)
{
	struct pollfd p[2] = { { .fd = l->fd, .events = POLLIN },
			       { .fd = l->evfd, .events = POLLIN } };
	uint64_t until = now_ns() + SPIN_NS;
	int r;

	for (;;) {
		r = fuse_session_receive_buf(l->se, b);
		if (fuse_session_exited(l->se))
			return 0;
		if (r != -EAGAIN && r != -EINTR)
			return r;
		if (now_ns() < until) {
			sched_yield();
			continue;
		}
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return -errno;
		if (p[1].revents)
			return 0;
		until = now_ns() + SPIN_NS;
	}
}

static void *loop_worker(void *arg)
{
	struct loop *l = arg;
	struct fuse_buf b = { .mem = NULL };
	bool pending = false;
	int r;

	t_loop = l;
	pthread_mutex_lock(&l->lock);
	for (;;) {
		l->idle++;
		while (l->reading && !l->done)
			pthread_cond_wait(&l->turn, &l->lock);
		l->idle--;
		if (l->done)
			break;
		l->reading = true;
		t_reader = true;
		pthread_mutex_unlock(&l->lock);
		for (;;) {
			r = loop_receive(l, &b);
			if (r <= 0) {
				loop_end(l, r);
				pthread_mutex_lock(&l->lock);
				goto out;
			}
			if (may_block(&b)) {
				pending = true;
				break;
			}
			fuse_session_process_buf(l->se, &b);
			if (!t_reader)
				break;   /* it waited for a repair (mount_loop_block) */
		}
		pthread_mutex_lock(&l->lock);
		if (t_reader) {
			t_reader = false;
			l->reading = false;
			pthread_cond_signal(&l->turn);
		}
		if (pending) {
			pending = false;
			pthread_mutex_unlock(&l->lock);
			fuse_session_process_buf(l->se, &b);
			pthread_mutex_lock(&l->lock);
		}
	}
out:
	pthread_mutex_unlock(&l->lock);
	free(b.mem);
	return NULL;
}

/* The library's cfs_block_fn: the calling worker is about to wait for a
 * repair (docs/LOCKING.md, "Scrub").  It gives up the reader role, and
 * when no worker is left to take it one more is started, so that requests
 * on the other chunks are still served however many wait. */
void mount_loop_block(void *ctx, int begin)
{
	struct loop *l = t_loop;

	(void)ctx;
	if (!begin)
		return;
	if (!l) {
		mount_uring_block();    /* not one of ours: the io_uring pool's? */
		return;
	}
	pthread_mutex_lock(&l->lock);
	if (t_reader) {
		t_reader = false;
		l->reading = false;
		pthread_cond_signal(&l->turn);
	}
	if (l->idle == 0 && !l->done && l->nextra < MAX_EXTRA &&
	    pthread_create(&l->extra[l->nextra], NULL, loop_worker, l) == 0)
		l->nextra++;
	pthread_mutex_unlock(&l->lock);
}

/* The signals that end the session go to the launching thread only:
 * called before any other thread starts (the cleaner too), with the old
 * mask kept for mount_loop. */
void mount_loop_block_signals(sigset_t *old)
{
	sigset_t block;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, old);
}

/* The launcher's part: wait, with the signals of *old let through, until
 * a signal handler or a worker ends the session. */
static void loop_wait(struct loop *l, const sigset_t *old)
{
	struct pollfd p = { .fd = l->evfd, .events = POLLIN };

	while (!fuse_session_exited(l->se)) {
		if (ppoll(&p, 1, NULL, old) < 0 && errno != EINTR)
			break;
		if (p.revents)
			break;
	}
}

int mount_loop(struct fuse_session *se, unsigned nthreads, const sigset_t *old)
{
	struct loop l = { .se = se, .fd = fuse_session_fd(se), .evfd = -1 };
	pthread_t *t = calloc(nthreads, sizeof(*t));
	unsigned i, n = 0;
	int ret = 0, fl;

	if (!t)
		return -ENOMEM;
	l.evfd = eventfd(0, EFD_CLOEXEC);
	fl = fcntl(l.fd, F_GETFL);
	if (l.evfd < 0 || fl < 0 || fcntl(l.fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		ret = -errno;
		goto out;
	}
	pthread_mutex_init(&l.lock, NULL);
	pthread_cond_init(&l.turn, NULL);
	for (i = 0; i < nthreads; i++) {
		ret = -pthread_create(&t[n], NULL, loop_worker, &l);
		if (ret < 0)
			break;
		n++;
	}
	if (n > 0) {
		ret = 0;
		loop_wait(&l, old);
	}
	fuse_session_exit(se);
	loop_end(&l, 0);
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	/* done is set: no worker starts another any more */
	for (i = 0; i < l.nextra; i++)
		pthread_join(l.extra[i], NULL);
	if (ret == 0 && l.err < 0 && l.err != -ENODEV)
		ret = l.err;
	pthread_cond_destroy(&l.turn);
	pthread_mutex_destroy(&l.lock);
out:
	if (l.evfd >= 0)
		close(l.evfd);
	free(t);
	return ret;
}

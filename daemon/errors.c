/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the daemon does when the library records an error in a chunk
 * (-o errors=, as ext4's), and the background scrub (-o scrub_interval=).
 *
 *   continue    log it; the chunk stays marked for the next check
 *   remount-ro  log it, and refuse every change from now on (EROFS)
 *   repair      log it, and scrub that chunk at once with preen's rules
 *               (the scrubber thread below): what preen may fix is fixed
 *               and the chunk stays in service; what needs a person keeps
 *               the chunk marked in error on disk and out of service
 *               (EUCLEAN for its files) until `chunkfs scrub -y` or an
 *               offline fsck repairs it; the rest of the filesystem goes on
 *
 * scrub_interval=T: the scrubber checks one chunk every T/chunks seconds,
 * round robin, so each is checked within T, with preen's rules: a clean
 * chunk gets its last-check time, damage is logged and marks the chunk
 * (and with errors=repair, what preen may fix is fixed).
 *
 * The error callback only records and wakes: it runs in the thread that met
 * the error, maybe under the library's locks, where a scrub (which waits
 * for every change to end) cannot start.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "daemon.h"

void mount_on_error(void *ctx, uint32_t chunk, const struct cfs_chunk_error *e)
{
	struct mnt *m = ctx;

	fuse_log(FUSE_LOG_ERR, "chunkfs: %s: chunk %u marked in error: %s (inode %u, "
		 "block %llu): %s; %s\n", m->image, chunk, e->what, e->ino,
		 (unsigned long long)e->block, strerror(e->err),
		 m->errors == ERRORS_REPAIR ? "repairing it online" :
		 m->errors == ERRORS_RO ? "refusing changes from now on (errors=remount-ro)" :
		 "run chunkfs fsck -p");
	if (m->errors == ERRORS_RO) {
		cfs_set_readonly(m->fs);
		return;
	}
	if (m->errors != ERRORS_REPAIR || chunk >= CFS_MAX_CHUNKS)
		return;
	pthread_mutex_lock(&m->slock);
	/* a chunk left for a person is not scrubbed again by every error */
	if (!m->chunk_out[chunk]) {
		m->repair_pending[chunk] = 1;
		pthread_cond_signal(&m->swake);
	}
	pthread_mutex_unlock(&m->slock);
}

static void log_problem(void *ctx, const char *msg)
{
	struct mnt *m = ctx;

	fuse_log(FUSE_LOG_WARNING, "chunkfs: %s: scrub: %s\n", m->image, msg);
}

static void problem_queue(void *ctx, const struct cfs_fsck_problem *p)
{
	scrubber_problem(ctx, p);
}

/* One chunk, preen's rules; what is left for a person takes the chunk out
 * of service when repair was asked for. */
static void scrub_one(struct mnt *m, uint32_t c, bool repair)
{
	struct cfs_fsck_opts o = { .mode = CFS_FSCK_PREEN, .report = log_problem,
				   .problem = problem_queue, .ctx = m };
	struct cfs_fsck_result r;
	int ret = mount_cfs_scrub(m, c, &o, &r);

	if (ret < 0) {
		fuse_log(FUSE_LOG_ERR, "chunkfs: %s: scrub of chunk %u failed: %s\n", m->image,
			 c, strerror(-ret));
		return;
	}
	if (r.unfixed) {
		if (repair) {
			cfs_chunk_set_failed(m->fs, c, 1);
			pthread_mutex_lock(&m->slock);
			m->chunk_out[c] = 1;
			pthread_mutex_unlock(&m->slock);
		}
		fuse_log(FUSE_LOG_ERR, "chunkfs: %s: chunk %u: %llu problem(s) need a person%s; "
			 "run chunkfs scrub -y -c %u %s (or chunkfs fsck -y offline)\n", m->image,
			 c, (unsigned long long)r.unfixed,
			 repair ? ": its files fail with EUCLEAN until then" : "", c, m->dir);
		return;
	}
	pthread_mutex_lock(&m->slock);
	m->chunk_out[c] = 0;
	pthread_mutex_unlock(&m->slock);
	if (r.problems || repair)
		fuse_log(FUSE_LOG_NOTICE, "chunkfs: %s: chunk %u checked online: %llu problem(s) "
			 "fixed, back in service\n", m->image, c, (unsigned long long)r.fixed);
}

static int pending_next(struct mnt *m)
{
	for (uint32_t c = 0; c < CFS_MAX_CHUNKS; c++)
		if (m->repair_pending[c]) {
			m->repair_pending[c] = 0;
			return (int)c;
		}
	return -1;
}

static void deadline_after(struct timespec *t, double secs)
{
	clock_gettime(CLOCK_MONOTONIC, t);
	t->tv_sec += (time_t)secs;
	t->tv_nsec += (long)((secs - (double)(time_t)secs) * 1e9);
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

static double step_seconds(struct mnt *m)
{
	struct cfs_info in;

	if (cfs_get_info(m->fs, &in) < 0 || in.chunks == 0)
		return m->scrub_interval;
	return m->scrub_interval / in.chunks;
}

static void *scrubber_main(void *arg)
{
	struct mnt *m = arg;
	struct timespec next;
	uint32_t turn = 0;
	int c;

	deadline_after(&next, m->scrub_interval > 0 ? step_seconds(m) : 3600);
	pthread_mutex_lock(&m->slock);
	while (!m->sstop) {
		c = pending_next(m);
		if (c >= 0) {
			pthread_mutex_unlock(&m->slock);
			scrub_one(m, (uint32_t)c, true);
			scrubber_inval(m);
			pthread_mutex_lock(&m->slock);
			continue;
		}
		if (m->scrub_interval > 0 &&
		    pthread_cond_timedwait(&m->swake, &m->slock, &next) == ETIMEDOUT) {
			struct cfs_info in;

			pthread_mutex_unlock(&m->slock);
			if (cfs_get_info(m->fs, &in) == 0 && in.chunks) {
				scrub_one(m, turn % in.chunks, m->errors == ERRORS_REPAIR);
				scrubber_inval(m);
				turn = (turn + 1) % in.chunks;
			}
			deadline_after(&next, step_seconds(m));
			pthread_mutex_lock(&m->slock);
		} else if (m->scrub_interval <= 0) {
			pthread_cond_wait(&m->swake, &m->slock);
		}
	}
	pthread_mutex_unlock(&m->slock);
	return NULL;
}

void scrubber_chunk_back(struct mnt *m, uint32_t c)
{
	if (c >= CFS_MAX_CHUNKS)
		return;
	pthread_mutex_lock(&m->slock);
	m->chunk_out[c] = 0;
	pthread_mutex_unlock(&m->slock);
}

void scrubber_problem(struct mnt *m, const struct cfs_fsck_problem *p)
{
	struct recent_name *n;

	if (!p->name || !p->namelen || p->namelen > CFS_NAME_MAX || strcmp(p->outcome, "fixed"))
		return;
	pthread_mutex_lock(&m->slock);
	n = realloc(m->gone, (m->ngone + 1) * sizeof(*n));
	if (n) {
		m->gone = n;
		n += m->ngone++;
		n->ino = 0;
		n->parent = p->ino;
		memcpy(n->name, p->name, p->namelen);
		n->name[p->namelen] = '\0';
	}
	pthread_mutex_unlock(&m->slock);
}

static void changed_queue(void *ctx, cfs_ino_t ino)
{
	struct mnt *m = ctx;
	cfs_ino_t *n;

	pthread_mutex_lock(&m->slock);
	n = realloc(m->changed, (m->nchanged + 1) * sizeof(*n));
	if (n) {
		m->changed = n;
		m->changed[m->nchanged++] = ino;
	}
	pthread_mutex_unlock(&m->slock);
}

void scrubber_inval(struct mnt *m)
{
	struct recent_name *gone;
	cfs_ino_t *list;
	size_t n, ngone;

	pthread_mutex_lock(&m->slock);
	list = m->changed;
	n = m->nchanged;
	m->changed = NULL;
	m->nchanged = 0;
	gone = m->gone;
	ngone = m->ngone;
	m->gone = NULL;
	m->ngone = 0;
	pthread_mutex_unlock(&m->slock);
	for (size_t i = 0; i < ngone; i++)
		mount_inval_entry(m->se, gone[i].parent, gone[i].name);
	free(gone);
	/* the name too: a repair may have moved the inode (to /lost+found),
	 * and the kernel takes a file's size from us only for an inode it
	 * looks up anew */
	for (size_t i = 0; i < n; i++) {
		mount_inval_inode(m->se, list[i], 0, 0);
		mount_name_inval(m, list[i]);
	}
	free(list);
}

int scrubber_start(struct mnt *m)
{
	pthread_condattr_t ca;
	int ret;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->swake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&m->slock, NULL);
	cfs_set_error_fn(m->fs, mount_on_error, m);
	cfs_set_reload_fn(m->fs, changed_queue, m);
	/* a read-only mount repairs nothing; continue and remount-ro need
	 * no thread */
	if (m->rdonly || (m->errors != ERRORS_REPAIR && m->scrub_interval <= 0))
		return 0;
	ret = pthread_create(&m->scrubber, NULL, scrubber_main, m);
	if (ret)
		return -ret;
	m->scrubber_started = true;
	return 0;
}

void scrubber_stop(struct mnt *m)
{
	if (m->scrubber_started) {
		pthread_mutex_lock(&m->slock);
		m->sstop = true;
		pthread_cond_signal(&m->swake);
		pthread_mutex_unlock(&m->slock);
		pthread_join(m->scrubber, NULL);
		m->scrubber_started = false;
	}
	free(m->changed);      /* nobody left to tell */
	m->changed = NULL;
	m->nchanged = 0;
	free(m->gone);
	m->gone = NULL;
	m->ngone = 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs mount: write() that reports a full disk (docs/WRITEBACK.md).
 *
 * With the writeback cache the kernel takes a buffered write into its
 * page cache and returns; we see the data only at write-back, when a
 * failure can no longer reach write().  Three things keep what write()
 * accepted within what the image can hold:
 *
 *  - a bound on what the kernel holds: the mount's bdi may keep at most
 *    SPACE_DIRTY_MAX dirty (lowered at mount when root; read otherwise),
 *    and space->reserve covers that bound plus SPACE_SLACK;
 *  - low space: once free space is below the reserve, every inode open
 *    for writing loses its cached attributes, and regular files get
 *    attributes that expire at once.  The kernel then asks for them
 *    (GETATTR with the file handle) at the start of every buffered
 *    write(), and an error we give there is write()'s error;
 *  - the gate at that GETATTR (space_gate): write back what the kernel
 *    holds of the file, then refuse with the write-back's error, and
 *    with ENOSPC while the disk stays full for a file that overflowed.
 *
 * New write-only opens while space is low bypass the cache altogether
 * (direct_io): their write()s reach cfs_write and fail exactly.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"

/* ---- the bdi's bound on dirty data ---------------------------------- */

static int read_u64(const char *path, uint64_t *v)
{
	FILE *f = fopen(path, "re");
	int ret = -EIO;

	if (!f)
		return -errno;
	if (fscanf(f, "%" SCNu64, v) == 1)
		ret = 0;
	fclose(f);
	return ret;
}

static int write_u64(const char *path, uint64_t v)
{
	FILE *f = fopen(path, "we");
	int ret = 0;

	if (!f)
		return -errno;
	if (fprintf(f, "%" PRIu64 "\n", v) < 0)
		ret = -EIO;
	if (fclose(f) != 0 && ret == 0)
		ret = -errno;
	return ret;
}

/* The most the kernel lets all writers hold dirty: vm.dirty_bytes, or
 * vm.dirty_ratio of all memory (the kernel takes it of the memory
 * available, never more). */
static uint64_t global_dirty_max(void)
{
	uint64_t bytes = 0, ratio = 20, kb = 0;
	char line[256];
	FILE *f;

	if (read_u64("/proc/sys/vm/dirty_bytes", &bytes) == 0 && bytes)
		return bytes;
	read_u64("/proc/sys/vm/dirty_ratio", &ratio);
	f = fopen("/proc/meminfo", "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %" SCNu64 " kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	if (!kb)
		kb = 1ull << 30;        /* 1 TiB: unknown means large */
	return kb * 1024 / 100 * ratio;
}

/* The device number of the mount on top at dir, from mountinfo (a stat
 * of dir would be a request to ourselves, not yet served). */
static int mount_dev(const char *dir, unsigned *maj, unsigned *min)
{
	char abs[4096], line[8192], path[4096];
	FILE *f;
	int found = 0;

	if (mount_dir_abs(dir, abs, sizeof(abs)) < 0)
		return 0;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned a, b;
		size_t o = 0;

		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &a, &b, path) != 3)
			continue;
		/* mountinfo escapes space, tab, newline and backslash as \ooo */
		for (size_t i = 0; path[i]; i++, o++) {
			if (path[i] == '\\' && path[i + 1] >= '0' && path[i + 1] <= '3' &&
			    path[i + 2] >= '0' && path[i + 2] <= '7' &&
			    path[i + 3] >= '0' && path[i + 3] <= '7') {
				path[o] = (char)((path[i + 1] - '0') * 64 +
						 (path[i + 2] - '0') * 8 + (path[i + 3] - '0'));
				i += 3;
			} else {
				path[o] = path[i];
			}
		}
		path[o] = 0;
		if (strcmp(path, abs) == 0) {
			*maj = a;
			*min = b;
			found = 1;      /* the last one is on top */
		}
	}
	fclose(f);
	return found;
}

/* What the mount's bdi may hold dirty, lowered to SPACE_DIRTY_MAX when we
 * may: the kernel keeps a byte limit as a share of the global limit
 * (max_ratio_fine, in millionths), so the bound is that share of the
 * largest global limit.  Without a strict limit (or a bdi we can read),
 * only the global limit bounds it. */
static uint64_t bdi_dirty_bound(const char *dir)
{
	uint64_t global = global_dirty_max(), v, fine;
	unsigned maj, min;
	char base[64], path[96];

	if (!mount_dev(dir, &maj, &min))
		return global;
	snprintf(base, sizeof(base), "/sys/class/bdi/%u:%u", maj, min);
	snprintf(path, sizeof(path), "%s/strict_limit", base);
	if (read_u64(path, &v) == 0 && v == 0)
		write_u64(path, 1);
	if (read_u64(path, &v) < 0 || v == 0)
		return global;
	snprintf(path, sizeof(path), "%s/max_bytes", base);
	if (read_u64(path, &v) == 0 && v > SPACE_DIRTY_MAX)
		write_u64(path, SPACE_DIRTY_MAX);
	snprintf(path, sizeof(path), "%s/max_ratio_fine", base);
	if (read_u64(path, &fine) < 0 || fine > 1000000)
		return global;
	return global / 1000000 * fine + global % 1000000 * fine / 1000000;
}

void space_setup(struct mnt *m)
{
	m->space_reserve = bdi_dirty_bound(m->dir) + SPACE_SLACK;
}

/* ---- writers -------------------------------------------------------- */

static struct writer **writer_slot(struct mnt *m, cfs_ino_t ino)
{
	struct writer **w = &m->writers[ino % WRITERS_SLOTS];

	while (*w && (*w)->ino != ino)
		w = &(*w)->next;
	return w;
}

void writers_add(struct mnt *m, cfs_ino_t ino, int delta)
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

void writers_free(struct mnt *m)
{
	for (int i = 0; i < WRITERS_SLOTS; i++)
		while (m->writers[i]) {
			struct writer *w = m->writers[i];

			m->writers[i] = w->next;
			free(w);
		}
}

bool has_writers(struct mnt *m, cfs_ino_t ino)
{
	bool ret;

	pthread_mutex_lock(&m->wlock);
	ret = *writer_slot(m, ino) != NULL;
	pthread_mutex_unlock(&m->wlock);
	return ret;
}

void writer_failed(struct mnt *m, cfs_ino_t ino, int err)
{
	struct writer *w;

	pthread_mutex_lock(&m->wlock);
	w = *writer_slot(m, ino);
	if (w)
		w->wb_err = err;
	pthread_mutex_unlock(&m->wlock);
}

/* Every inode open for writing loses its cached attributes, so that its
 * next buffered write() passes the gate.  Not under wlock: the kernel
 * takes no lock of ours, but an inode list may be long. */
static void writers_stop(struct mnt *m)
{
	cfs_ino_t *inos = NULL;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&m->wlock);
	for (int i = 0; i < WRITERS_SLOTS; i++)
		for (struct writer *w = m->writers[i]; w; w = w->next) {
			if (n == cap) {
				size_t ncap = cap ? 2 * cap : 64;
				cfs_ino_t *p = realloc(inos, ncap * sizeof(*p));

				if (!p)
					break;
				inos = p;
				cap = ncap;
			}
			inos[n++] = w->ino;
		}
	pthread_mutex_unlock(&m->wlock);
	for (size_t i = 0; i < n; i++)
		fuse_lowlevel_notify_inval_inode(m->se, inos[i], -1, 0);
	free(inos);
}

/* ---- free space ----------------------------------------------------- */

static uint64_t free_bytes(struct mnt *m)
{
	struct cfs_statfs cs;

	if (cfs_statfs(m->fs, &cs) < 0)
		return 0;
	return cs.bavail * cs.block_size;
}

static long long mono_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
	return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Looked at again at most every SPACE_RECHECK_MS, or after an eighth of
 * the reserve was written (cfs_statfs takes every chunk's lock), by
 * whichever request comes; the one that sees the change to low stops
 * the cached writers. */
bool space_low(struct mnt *m, uint64_t written)
{
	long long ms = mono_ms();
	uint64_t since = atomic_fetch_add(&m->space_written, written) + written;
	bool low;

	if (ms - atomic_load(&m->space_checked) < SPACE_RECHECK_MS &&
	    since < m->space_reserve / 8)
		return atomic_load(&m->space_is_low);
	atomic_store(&m->space_checked, ms);
	atomic_store(&m->space_written, 0);
	low = free_bytes(m) < m->space_reserve;
	if (low && !atomic_exchange(&m->space_is_low, true))
		writers_stop(m);
	else if (!low)
		atomic_store(&m->space_is_low, false);
	return low;
}

double space_attr_timeout(struct mnt *m, const struct cfs_stat *cs)
{
	if (S_ISREG(cs->mode) && !m->rdonly && atomic_load(&m->space_is_low))
		return 0;
	return m->timeout;
}

void space_open(struct mnt *m, cfs_ino_t ino, struct fuse_file_info *fi)
{
	if (m->rdonly || (fi->flags & O_ACCMODE) == O_RDONLY || !space_low(m, 0))
		return;
	/* Write-only (cp, >, dd: no mmap of it is possible): straight
	 * through, so write() fails with ENOSPC exactly. */
	if ((fi->flags & O_ACCMODE) == O_WRONLY) {
		fi->direct_io = 1;
		return;
	}
	/* Read-write: cached (mmap needs it), its attributes dropped in case
	 * the kernel still holds them from before the space ran low. */
	fuse_lowlevel_notify_inval_inode(m->se, ino, -1, 0);
}

int space_gate(struct mnt *m, cfs_ino_t ino)
{
	struct writer *w;
	bool full = false;
	int err = 0;

	if (!space_low(m, 0))
		return 0;
	/* Write back what the kernel holds of the file: the WRITE requests
	 * that makes come to the other workers. */
	mount_loop_block(NULL, 1);
	mount_inval_inode(m->se, ino, 0, 0);
	if (free_bytes(m) == 0)
		full = true;
	pthread_mutex_lock(&m->wlock);
	w = *writer_slot(m, ino);
	if (w && w->wb_err) {
		err = w->wb_err;
		w->wb_err = 0;
		w->overflowed = true;
	} else if (w && w->overflowed) {
		if (full)
			err = -ENOSPC;
		else
			w->overflowed = false;
	}
	pthread_mutex_unlock(&m->wlock);
	return err;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A repair's fence (docs/LOCKING.md, "Scrub"): while src/scrub.c checks
 * and repairs a set of chunks with the filesystem in use, an operation
 * naming an inode of one of them waits at its entry until the repair is
 * taken back.  Below every other file of the library: the entry points
 * call fence_wait before they take any lock. */
#include <string.h>

#include "fsint.h"

void fence_init(struct cfs_fs *fs)
{
	pthread_mutex_init(&fs->scrub_lock, NULL);
	pthread_mutex_init(&fs->fence_lock, NULL);
	pthread_cond_init(&fs->fence_cond, NULL);
}

static int is_fenced(struct cfs_fs *fs, cfs_ino_t ino)
{
	uint32_t c = CFS_INO_CHUNK(ino);

	return fs->fence_on && (!ino || (c < CFS_MAX_CHUNKS && fs->fenced[c]));
}

/* An operation that reads fence_on just before it is set goes on: that is
 * allowed, fence_holds finds what it changed. */
void fence_wait(struct cfs_fs *fs, cfs_ino_t ino)
{
	int told = 0;

	if (!__atomic_load_n(&fs->fence_on, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&fs->fence_lock);
	while (is_fenced(fs, ino)) {
		/* fence_lock is let go while the server is told: its hook
		 * may start a thread, which may come here at once */
		if (!told && fs->block_fn) {
			pthread_mutex_unlock(&fs->fence_lock);
			fs->block_fn(fs->block_ctx, 1);
			told = 1;
			pthread_mutex_lock(&fs->fence_lock);
			continue;
		}
		pthread_cond_wait(&fs->fence_cond, &fs->fence_lock);
	}
	pthread_mutex_unlock(&fs->fence_lock);
	if (told)
		fs->block_fn(fs->block_ctx, 0);
}

void cfs_set_block_fn(struct cfs_fs *fs, cfs_block_fn fn, void *ctx)
{
	fs->block_fn = fn;
	fs->block_ctx = ctx;
}

void fence_add(struct cfs_fs *fs, uint32_t c)
{
	pthread_mutex_lock(&fs->fence_lock);
	fs->fenced[c] = 1;
	__atomic_store_n(&fs->fence_on, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&fs->fence_lock);
}

void fence_end(struct cfs_fs *fs)
{
	pthread_mutex_lock(&fs->fence_lock);
	__atomic_store_n(&fs->fence_on, 0, __ATOMIC_RELEASE);
	memset(fs->fenced, 0, sizeof(fs->fenced));
	pthread_cond_broadcast(&fs->fence_cond);
	pthread_mutex_unlock(&fs->fence_lock);
}

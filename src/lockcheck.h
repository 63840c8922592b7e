/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Lock rules a build can check (docs/LOCKING.md), as SQLite asserts
 * sqlite3_mutex_held(): a function whose comment says "with X held"
 * starts with lock_held(&X).  On in the sanitizer build (make check sets
 * CFS_LOCK_CHECKS), nothing at all otherwise.  glibc records the owner of
 * every kind of mutex it locks; elsewhere the check is left out. */
#ifndef CHUNKFS_LOCKCHECK_H
#define CHUNKFS_LOCKCHECK_H

#include <pthread.h>

#if defined(CFS_LOCK_CHECKS) && defined(__GLIBC__)
#include <assert.h>
#include <unistd.h>

static inline int cfs_mutex_held(const pthread_mutex_t *m)
{
	return m->__data.__owner == gettid();
}

#define lock_held(m) assert(cfs_mutex_held(m))
#else
#define lock_held(m) ((void)(m))
#endif

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Test fixtures: filesystems and images on the in-memory fault device.
 *
 * Shared by the unit tests (#include "fixture.h") and the fuzz harness
 * (#include "../fixture.h").  Header-only because tests/fuzz/run.sh builds
 * the harness from its one source file, outside the Makefile.  The helpers
 * return 0 or a negative errno and never use test.h's CHECK, which the
 * harness does not have; unit tests wrap them in CHECK_OK.
 */
#ifndef CHUNKFS_TEST_FIXTURE_H
#define CHUNKFS_TEST_FIXTURE_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "chunkfs.h"

/* cfs_open_bdev takes ownership of its device and cfs_close destroys it.
 * A borrowed view forwards to another device and leaves it alive when
 * destroyed, so its bytes can be looked at, damaged or reopened after
 * cfs_close. */
struct fixture_borrow {
	struct cfs_bdev bd;
	struct cfs_bdev *in;
};

/* The filesystem sets the view's block size; the device follows it. */
static inline int fixture_borrow_sync(struct fixture_borrow *w)
{
	if (w->in->block_size == w->bd.block_size)
		return 0;
	return cfs_bdev_set_block_size(w->in, w->bd.block_size);
}

static inline int fixture_borrow_read(struct cfs_bdev *bd, uint64_t blk, uint32_t count,
				      void *buf)
{
	struct fixture_borrow *w = (struct fixture_borrow *)bd;
	int ret = fixture_borrow_sync(w);

	return ret ? ret : cfs_bdev_read(w->in, blk, count, buf);
}

static inline int fixture_borrow_write(struct cfs_bdev *bd, uint64_t blk, uint32_t count,
				       const void *buf)
{
	struct fixture_borrow *w = (struct fixture_borrow *)bd;
	int ret = fixture_borrow_sync(w);

	return ret ? ret : cfs_bdev_write(w->in, blk, count, buf);
}

static inline int fixture_borrow_flush(struct cfs_bdev *bd)
{
	return cfs_bdev_flush(((struct fixture_borrow *)bd)->in);
}

static inline void fixture_borrow_destroy(struct cfs_bdev *bd)
{
	free(bd);
}

/* A borrowed view of in, or NULL when out of memory. */
static inline struct cfs_bdev *fixture_borrow_new(struct cfs_bdev *in)
{
	static const struct cfs_bdev_ops ops = {
		.read = fixture_borrow_read, .write = fixture_borrow_write,
		.flush = fixture_borrow_flush, .destroy = fixture_borrow_destroy,
	};
	struct fixture_borrow *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->bd.ops = &ops;
	w->bd.block_size = in->block_size;
	w->bd.nblocks = in->nblocks;
	memcpy(w->bd.name, in->name, sizeof(w->bd.name));
	w->in = in;
	return &w->bd;
}

/* Open the filesystem on dev through a borrowed view: dev stays the
 * caller's. */
static inline int fixture_open(struct cfs_bdev *dev, int flags, struct cfs_fs **fs)
{
	struct cfs_bdev *w = fixture_borrow_new(dev);

	return w ? cfs_open_bdev(w, flags, fs) : -ENOMEM;
}

/* A new fault device of bytes bytes (blocks of bs) holding a copy of img. */
static inline int fixture_image_dev(const void *img, uint64_t bytes, uint32_t bs,
				    struct cfs_bdev **out)
{
	uint64_t n;
	int ret = cfs_bdev_fault_create(bytes, bs, out);

	if (ret < 0)
		return ret;
	memcpy(cfs_bdev_fault_bytes(*out, &n), img, bytes);
	return 0;
}

/* mkfs o (block_size set) on a new fault device of size bytes, opened
 * read-write through a borrowed view; the device is the caller's to
 * destroy after cfs_close. */
static inline int fixture_mkfs(uint64_t size, const struct cfs_mkfs_opts *o,
			       struct cfs_bdev **dev, struct cfs_fs **fs)
{
	int ret = cfs_bdev_fault_create(size, o->block_size, dev);

	if (ret < 0)
		return ret;
	ret = cfs_mkfs_bdev(*dev, o);
	if (ret == 0)
		ret = fixture_open(*dev, 0, fs);
	if (ret < 0) {
		cfs_bdev_destroy(*dev);
		*dev = NULL;
	}
	return ret;
}

/* File contents: a pattern seeded by s (seeds far apart give different
 * bytes; neighbouring ones mostly the same). */
static inline void fixture_fill(uint8_t *p, size_t n, unsigned s)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 2654435761u + s) >> 13);
}

/* A cfs_check/cfs_fsck report callback: every finding to stderr. */
static inline void fixture_report(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "  check: %s\n", msg);
}

/* A new private directory $TMPDIR/prog.XXXXXX (TMPDIR unset: /tmp) in
 * dir, len bytes long; 0, or a negative errno after saying why on stderr. */
static inline int fixture_tmpdir(char *dir, size_t len, const char *prog)
{
	const char *base = getenv("TMPDIR");
	int n = snprintf(dir, len, "%s/%s.XXXXXX", base && *base ? base : "/tmp", prog);
	int err = -ENAMETOOLONG;

	if (n >= 0 && (size_t)n < len)
		err = mkdtemp(dir) ? 0 : -errno;
	if (err)
		fprintf(stderr, "%s: cannot make a directory %s: %s\n", prog, dir,
			strerror(-err));
	return err;
}

/* Run fn in n threads at once, thread i on element i (size bytes each) of
 * args, and wait for them all: 0, or a negative errno when a thread could
 * not be started (those that were are waited for). */
static inline int fixture_threads(int n, void *(*fn)(void *), void *args, size_t size)
{
	pthread_t *th = calloc((size_t)n, sizeof(*th));
	int i, started, ret = th ? 0 : -ENOMEM;

	for (started = 0; started < n && ret == 0; started++) {
		ret = -pthread_create(&th[started], NULL, fn,
				      (char *)args + (size_t)started * size);
		if (ret)
			break;
	}
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
	return ret;
}

/* ---- reading a directory ---------------------------------------------- */

#define FIXTURE_MAX_ENTS 128

/* The entries one cfs_readdir call listed, at most max of them (max <=
 * FIXTURE_MAX_ENTS); "." and ".." too unless skip_dots. */
struct fixture_ents {
	char name[FIXTURE_MAX_ENTS][CFS_NAME_MAX + 1];
	cfs_ino_t ino[FIXTURE_MAX_ENTS];
	int n, max, skip_dots;
	int overflow;           /* it listed more than max: stopped there */
	size_t bad_len;         /* it listed a name this long (> CFS_NAME_MAX) */
};

static inline int fixture_ents_cb(void *ctx, const char *name, size_t len, cfs_ino_t ino,
				  uint32_t type, uint64_t next)
{
	struct fixture_ents *e = ctx;

	(void)type;
	(void)next;
	if (e->skip_dots && ((len == 1 && name[0] == '.') ||
			     (len == 2 && !memcmp(name, "..", 2))))
		return 0;
	if (len > CFS_NAME_MAX) {
		e->bad_len = len;
		return 1;
	}
	if (e->n >= e->max) {
		e->overflow = 1;
		return 1;
	}
	memcpy(e->name[e->n], name, len);
	e->name[e->n][len] = 0;
	e->ino[e->n++] = ino;
	return 0;
}

/* An empty list for up to max entries, or NULL when out of memory. */
static inline struct fixture_ents *fixture_ents_new(int max, int skip_dots)
{
	struct fixture_ents *e = malloc(sizeof(*e));

	if (e) {
		e->n = e->overflow = 0;
		e->bad_len = 0;
		e->max = max < FIXTURE_MAX_ENTS ? max : FIXTURE_MAX_ENTS;
		e->skip_dots = skip_dots;
	}
	return e;
}

/* List dir from cookie into e (emptied first); cfs_readdir's result. */
static inline int fixture_readdir(struct cfs_fs *fs, cfs_ino_t dir, uint64_t cookie,
				  struct fixture_ents *e)
{
	e->n = e->overflow = 0;
	e->bad_len = 0;
	return cfs_readdir(fs, dir, cookie, fixture_ents_cb, e);
}

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libchunkfs called from many threads at once, as the FUSE mount will.
 *
 * Private workers each own a top-level directory (spread over chunks)
 * with three subdirectories and do thousands of random operations in it:
 * create, write, read-verify, rename within and across their directories
 * (also onto their own existing files), unlink, mkdir/rmdir, setxattr,
 * truncate, and growing one big file far enough to need continuation
 * inodes.  Shared workers do the same in one directory they all use, with
 * names partitioned by thread (so each thread's expected outcomes stay
 * deterministic), renaming between it and a private directory.  An
 * observer walks the whole tree meanwhile (readdir, getattr, read,
 * statfs) and calls cfs_clean_idle(fs, 0) now and then.
 *
 * Every thread checks each result against its own model as it goes; at
 * the end every file is read back exactly, cfs_check() must find nothing,
 * and the same holds after close and reopen.
 *
 * Environment: CHUNKFS_THREADS_SEED=N replays a seed (interleavings
 * differ anyway); CHUNKFS_THREADS_OPS=N operations per worker;
 * CHUNKFS_THREADS_SERIAL=1 runs the workers one after another (a failure
 * that stays is a model or single-thread bug); CHUNKFS_THREADS_PARANOID=1
 * verifies all of a worker's files after each of its operations and names
 * the one that broke them; CHUNKFS_THREADS_TRACE=<worker> prints its ops.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bdev.h"
#include "chunkfs.h"
#include "fixture.h"
#include "test.h"

#define NPRIV 4                 /* private workers */
#define NSHARED 2               /* shared-directory workers */
#define NWORK (NPRIV + NSHARED)
#define MAXFILES 48             /* live small files per worker */
#define SMALL_MAX 40000         /* small files stay below this */
#define BIG_STEP 65536
#define BIG_MAX (3u << 20)      /* big file: more than a chunk holds */
#define XMAX 700                /* xattr values up to this (overflow block) */

#define IMG_SIZE (40u << 20)
#define IMG_BS 1024
#define IMG_CHUNKS 16           /* 2.5 MiB chunks: continuations happen */

static struct cfs_fs *fs;
static struct cfs_bdev *dev;
static atomic_int stop_observer;
static atomic_int failures;
static cfs_ino_t shared_dir;
static unsigned ops_per_worker = 4000;

/* ---- per-thread models ---- */

struct mfile {
	int dir;                        /* index into the worker's dirs */
	char name[40];
	cfs_ino_t ino;
	uint8_t *data;
	size_t size;
	uint8_t xval[XMAX];
	size_t xlen;                    /* 0 = no xattr */
};

struct worker {
	int id;
	int shared;                     /* works in the shared directory */
	uint64_t rng;
	pthread_t th;
	cfs_ino_t top;
	cfs_ino_t dirs[4];              /* a, b, c, and the shared dir */
	int ndirs;
	struct mfile f[MAXFILES];
	int nf;
	cfs_ino_t xdirs[8];             /* extra empty directories */
	char xnames[8][24];
	int nx;
	cfs_ino_t big;
	uint64_t bigsize;
	unsigned counter;               /* unique names */
	unsigned nops[16];
	int failed;
	unsigned xattr_enospc;
	char lastop[160];
};

static struct worker W[NWORK];

static uint64_t rnd(struct worker *w)
{
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return w->rng * 0x2545F4914F6CDD1Dull;
}

static uint64_t below(struct worker *w, uint64_t n)
{
	return n ? rnd(w) % n : 0;
}

/* A thread must not longjmp into the main thread's harness: failures are
 * printed with the operation that failed and counted. */
static void fail(struct worker *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void fail(struct worker *w, const char *fmt, ...)
{
	va_list ap;
	char msg[300];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "  worker %d: %s (during: %s)\n", w ? w->id : -1, msg,
		w ? w->lastop : "-");
	if (w)
		w->failed = 1;
	atomic_fetch_add(&failures, 1);
}

#define OK(w, expr)                                                           \
	({                                                                    \
		long long _r = (long long)(expr);                             \
		if (_r < 0)                                                   \
			fail(w, "%s: %s (%lld)", #expr, strerror((int)-_r), _r); \
		_r;                                                           \
	})

/* Workers do not hold their inodes open: inodes are loaded from the table
 * while other threads write them, the case of a regression (fixed): two
 * threads loading one inode at once used to bring old contents back. */
static void pin(struct worker *w, cfs_ino_t ino)
{
	(void)w;
	(void)ino;
}

static void unpin(struct worker *w, cfs_ino_t ino)
{
	(void)w;
	(void)ino;
}

static uint8_t big_byte(int id, uint64_t off)
{
	return (uint8_t)(((off >> 3) * 2654435761u + (unsigned)id * 97u) >> 9);
}

static void fill_rand(struct worker *w, uint8_t *p, size_t n)
{
	uint64_t r = rnd(w);
	size_t i;

	for (i = 0; i < n; i++) {
		if ((i & 7) == 0)
			r = rnd(w);
		p[i] = (uint8_t)(r >> ((i & 7) * 8));
	}
}

static const char *dname(int i)
{
	static const char *n[] = { "a", "b", "c", "shared" };

	return n[i];
}

static int verify_file(struct worker *w, struct mfile *f)
{
	uint8_t *buf = malloc(f->size + 100 + XMAX);
	struct cfs_stat st;
	cfs_ino_t ino;
	ssize_t n;
	int ok = 1;

	if (!buf)
		return 0;
	if (OK(w, cfs_lookup(fs, w->dirs[f->dir], f->name, &ino)) < 0) {
		free(buf);
		return 0;
	}
	if (ino != f->ino) {
		fail(w, "%s/%s is inode %u, expected %u", dname(f->dir), f->name, ino, f->ino);
		ok = 0;
	}
	if (OK(w, cfs_getattr(fs, f->ino, &st)) == 0 && st.size != f->size) {
		fail(w, "%s: size %llu, expected %zu", f->name, (unsigned long long)st.size,
		     f->size);
		ok = 0;
	}
	n = cfs_read(fs, f->ino, buf, f->size + 100, 0);
	if (n != (ssize_t)f->size) {
		fail(w, "read %s: %zd, expected %zu", f->name, n, f->size);
		ok = 0;
	} else if (f->size && memcmp(buf, f->data, f->size)) {
		size_t i = 0;

		while (buf[i] == f->data[i])
			i++;
		fail(w, "read %s: content differs at byte %zu of %zu", f->name, i, f->size);
		ok = 0;
	}
	if (f->xlen) {
		n = cfs_getxattr(fs, f->ino, "user.t", buf, XMAX);
		if (n != (ssize_t)f->xlen || memcmp(buf, f->xval, f->xlen)) {
			fail(w, "getxattr %s: %zd, expected %zu bytes", f->name, n, f->xlen);
			ok = 0;
		}
	} else {
		n = cfs_getxattr(fs, f->ino, "user.t", buf, XMAX);
		if (n != -ENODATA) {
			fail(w, "getxattr %s: %zd, expected -ENODATA", f->name, n);
			ok = 0;
		}
	}
	free(buf);
	return ok;
}

static void verify_big(struct worker *w)
{
	static _Thread_local uint8_t buf[BIG_STEP];
	uint64_t off;
	struct cfs_stat st;

	if (!w->big)
		return;
	if (OK(w, cfs_getattr(fs, w->big, &st)) == 0 && st.size != w->bigsize)
		fail(w, "big: size %llu, expected %llu", (unsigned long long)st.size,
		     (unsigned long long)w->bigsize);
	for (off = 0; off < w->bigsize; off += BIG_STEP) {
		ssize_t n = cfs_read(fs, w->big, buf, BIG_STEP, off);
		size_t i;

		if (n != BIG_STEP) {
			fail(w, "big: read at %llu gave %zd", (unsigned long long)off, n);
			return;
		}
		for (i = 0; i < BIG_STEP; i++)
			if (buf[i] != big_byte(w->id, off + i)) {
				fail(w, "big: byte %llu differs",
				     (unsigned long long)(off + i));
				return;
			}
	}
}

static void name_new(struct worker *w, char *out, size_t n)
{
	/* the thread's prefix partitions names in the shared directory */
	snprintf(out, n, "t%d_%u", w->id, w->counter++);
}

static int pick_dir(struct worker *w)
{
	/* shared workers mostly use the shared directory */
	if (w->shared && below(w, 3))
		return 3;
	return (int)below(w, 3);
}

static void op_create(struct worker *w)
{
	struct mfile *f;

	if (w->nf >= MAXFILES)
		return;
	f = &w->f[w->nf];
	memset(f, 0, sizeof(*f));
	f->dir = pick_dir(w);
	name_new(w, f->name, sizeof(f->name));
	snprintf(w->lastop, sizeof(w->lastop), "create %s/%s", dname(f->dir), f->name);
	if (OK(w, cfs_mknod(fs, w->dirs[f->dir], f->name, S_IFREG | 0644, 0, 1000,
			    1000, &f->ino)) < 0)
		return;
	pin(w, f->ino);
	f->size = below(w, 4) ? below(w, 300) : below(w, SMALL_MAX);
	f->data = malloc(f->size + 1);
	if (!f->data) {
		fail(w, "out of memory");
		return;
	}
	fill_rand(w, f->data, f->size);
	w->nf++;
	if (f->size && cfs_write(fs, f->ino, f->data, f->size, 0) != (ssize_t)f->size)
		fail(w, "initial write of %zu bytes failed", f->size);
}

static void op_write(struct worker *w)
{
	struct mfile *f;
	size_t off, len;
	uint8_t *nd;
	ssize_t n;

	if (!w->nf)
		return;
	f = &w->f[below(w, (uint64_t)w->nf)];
	off = below(w, f->size + 2000);
	if (off > SMALL_MAX)
		off = SMALL_MAX;
	len = 1 + below(w, 9000);
	if (off + len > SMALL_MAX)
		len = SMALL_MAX - off;
	snprintf(w->lastop, sizeof(w->lastop), "write %s off %zu len %zu (size %zu)",
		 f->name, off, len, f->size);
	if (off + len > f->size) {
		nd = realloc(f->data, off + len);
		if (!nd) {
			fail(w, "out of memory");
			return;
		}
		f->data = nd;
		/* a write past the end leaves a hole of zeroes */
		if (off > f->size)
			memset(f->data + f->size, 0, off - f->size);
	}
	fill_rand(w, f->data + off, len);
	n = cfs_write(fs, f->ino, f->data + off, len, off);
	if (n != (ssize_t)len)
		fail(w, "write returned %zd", n);
	/* a zero-length write changes nothing, not even past the end */
	if (len && off + len > f->size)
		f->size = off + len;
	if (below(w, 8) == 0)
		OK(w, cfs_fsync(fs, f->ino, 1));
}

static void op_truncate(struct worker *w)
{
	struct mfile *f;
	struct cfs_setattr sa = { .valid = CFS_SET_SIZE };
	struct cfs_stat st;
	uint8_t *nd;

	if (!w->nf)
		return;
	f = &w->f[below(w, (uint64_t)w->nf)];
	sa.size = below(w, f->size + 5000);
	if (sa.size > SMALL_MAX)
		sa.size = SMALL_MAX;
	snprintf(w->lastop, sizeof(w->lastop), "truncate %s to %llu", f->name,
		 (unsigned long long)sa.size);
	if (OK(w, cfs_setattr(fs, f->ino, &sa, &st)) < 0)
		return;
	if (sa.size > f->size) {
		nd = realloc(f->data, sa.size);
		if (!nd) {
			fail(w, "out of memory");
			return;
		}
		f->data = nd;
		memset(f->data + f->size, 0, sa.size - f->size);
	}
	f->size = sa.size;
	if (st.size != sa.size)
		fail(w, "setattr reported size %llu", (unsigned long long)st.size);
}

static void op_read(struct worker *w)
{
	struct mfile *f;

	if (!w->nf)
		return;
	f = &w->f[below(w, (uint64_t)w->nf)];
	snprintf(w->lastop, sizeof(w->lastop), "verify %s/%s", dname(f->dir), f->name);
	verify_file(w, f);
}

static void drop_file(struct worker *w, int i)
{
	/* unlinked while open: freed only now */
	unpin(w, w->f[i].ino);
	free(w->f[i].data);
	w->f[i] = w->f[--w->nf];
}

static void op_unlink(struct worker *w)
{
	int i;
	struct mfile *f;
	cfs_ino_t ino;

	if (!w->nf)
		return;
	i = (int)below(w, (uint64_t)w->nf);
	f = &w->f[i];
	snprintf(w->lastop, sizeof(w->lastop), "unlink %s/%s", dname(f->dir), f->name);
	if (OK(w, cfs_unlink(fs, w->dirs[f->dir], f->name)) < 0)
		return;
	if (cfs_lookup(fs, w->dirs[f->dir], f->name, &ino) != -ENOENT)
		fail(w, "unlinked name still found");
	drop_file(w, i);
}

/* mode 0: same directory, 1: another directory, 2: onto an existing file */
static void op_rename(struct worker *w, int mode)
{
	struct mfile *f, *g = NULL;
	char nn[40];
	int i, nd, gi = -1;
	cfs_ino_t ino;

	if (!w->nf)
		return;
	i = (int)below(w, (uint64_t)w->nf);
	f = &w->f[i];
	if (mode == 2) {
		if (w->nf < 2)
			return;
		do
			gi = (int)below(w, (uint64_t)w->nf);
		while (gi == i);
		g = &w->f[gi];
		nd = g->dir;
		snprintf(nn, sizeof(nn), "%s", g->name);
	} else {
		nd = mode == 0 ? f->dir : pick_dir(w);
		name_new(w, nn, sizeof(nn));
	}
	snprintf(w->lastop, sizeof(w->lastop), "rename %s/%s -> %s/%s", dname(f->dir),
		 f->name, dname(nd), nn);
	if (OK(w, cfs_rename(fs, w->dirs[f->dir], f->name, w->dirs[nd], nn, 0)) < 0)
		return;
	if (cfs_lookup(fs, w->dirs[f->dir], f->name, &ino) != -ENOENT)
		fail(w, "old name still found after rename");
	if (OK(w, cfs_lookup(fs, w->dirs[nd], nn, &ino)) == 0 && ino != f->ino)
		fail(w, "new name is inode %u, expected %u", ino, f->ino);
	f->dir = nd;
	snprintf(f->name, sizeof(f->name), "%s", nn);
	if (g) {
		/* the replaced file is gone */
		drop_file(w, gi);
	}
}

static void op_dirs(struct worker *w)
{
	if (w->nx < 8 && below(w, 2)) {
		int k = w->nx;

		snprintf(w->xnames[k], sizeof(w->xnames[k]), "x%u", w->counter++);
		snprintf(w->lastop, sizeof(w->lastop), "mkdir %s", w->xnames[k]);
		if (OK(w, cfs_mkdir(fs, w->top, w->xnames[k], 0755, 0, 0, &w->xdirs[k])) == 0) {
			pin(w, w->xdirs[k]);
			w->nx++;
		}
	} else if (w->nx) {
		int k = (int)below(w, (uint64_t)w->nx);

		snprintf(w->lastop, sizeof(w->lastop), "rmdir %s", w->xnames[k]);
		if (OK(w, cfs_rmdir(fs, w->top, w->xnames[k])) == 0) {
			unpin(w, w->xdirs[k]);
			w->nx--;
			w->xdirs[k] = w->xdirs[w->nx];
			memcpy(w->xnames[k], w->xnames[w->nx], sizeof(w->xnames[k]));
		}
	}
	/* a subdirectory holding files cannot go */
	{
		int d, has = 0, i;

		d = (int)below(w, 3);
		for (i = 0; i < w->nf; i++)
			has |= w->f[i].dir == d;
		if (has) {
			snprintf(w->lastop, sizeof(w->lastop), "rmdir non-empty %s", dname(d));
			if (cfs_rmdir(fs, w->top, dname(d)) != -ENOTEMPTY)
				fail(w, "rmdir of a non-empty directory did not give ENOTEMPTY");
		}
	}
}

static uint64_t chunk_free(cfs_ino_t ino)
{
	struct cfs_chunk_info ci;

	if (cfs_get_chunk_info(fs, CFS_INO_CHUNK(ino), &ci) < 0)
		return 0;
	return ci.free_blocks;
}

static void op_xattr(struct worker *w)
{
	struct mfile *f;
	uint8_t back[XMAX];
	ssize_t n;

	if (!w->nf)
		return;
	f = &w->f[below(w, (uint64_t)w->nf)];
	snprintf(w->lastop, sizeof(w->lastop), "xattr %s", f->name);
	if (f->xlen && below(w, 4) == 0) {
		if (OK(w, cfs_removexattr(fs, f->ino, "user.t")) == 0)
			f->xlen = 0;
		return;
	}
	/* mostly small (in the inode), sometimes big (overflow block) */
	f->xlen = below(w, 3) ? 1 + below(w, 40) : 100 + below(w, XMAX - 100);
	fill_rand(w, f->xval, f->xlen);
	{
		uint64_t before = chunk_free(f->ino);
		int ret = cfs_setxattr(fs, f->ino, "user.t", f->xval, f->xlen, 0);

		/* An overflow block must come from the inode's own chunk (the
		 * format keeps every block reference chunk-local), so a value
		 * that does not fit the inode's spare space (shared with inline
		 * data) may fail when that chunk is full. */
		if (ret == -ENOSPC && (before < 256 || chunk_free(f->ino) < 256)) {
			w->xattr_enospc++;
			ret = cfs_removexattr(fs, f->ino, "user.t");
			if (ret < 0 && ret != -ENODATA)
				fail(w, "removexattr after ENOSPC: %d", ret);
			f->xlen = 0;
			return;
		}
		if (ret < 0) {
			fail(w, "setxattr of %zu bytes: %d", f->xlen, ret);
			f->xlen = 0;
			return;
		}
	}
	n = cfs_getxattr(fs, f->ino, "user.t", back, sizeof(back));
	if (n != (ssize_t)f->xlen || memcmp(back, f->xval, f->xlen))
		fail(w, "getxattr right after setxattr: %zd", n);
}

static void op_big(struct worker *w)
{
	static _Thread_local uint8_t buf[BIG_STEP];
	uint64_t i;

	if (!w->big) {
		snprintf(w->lastop, sizeof(w->lastop), "create big");
		if (OK(w, cfs_mknod(fs, w->dirs[0], "big", S_IFREG | 0644, 0, 0, 0,
				    &w->big)) < 0)
			w->big = 0;
		else
			pin(w, w->big);
		w->bigsize = 0;
		return;
	}
	if (w->bigsize >= BIG_MAX) {
		struct cfs_setattr sa = { .valid = CFS_SET_SIZE, .size = 0 };

		/* verify all of it once, then start over (frees the chain) */
		snprintf(w->lastop, sizeof(w->lastop), "verify and truncate big");
		verify_big(w);
		if (OK(w, cfs_setattr(fs, w->big, &sa, NULL)) == 0)
			w->bigsize = 0;
		return;
	}
	for (i = 0; i < BIG_STEP; i++)
		buf[i] = big_byte(w->id, w->bigsize + i);
	snprintf(w->lastop, sizeof(w->lastop), "append big at %llu",
		 (unsigned long long)w->bigsize);
	if (cfs_write(fs, w->big, buf, BIG_STEP, w->bigsize) != BIG_STEP)
		fail(w, "big append failed");
	else
		w->bigsize += BIG_STEP;
}

/* The thread's own names in the shared directory are exactly its model. */
struct lsctx {
	struct worker *w;
	int found[MAXFILES];
	int stray;
};

static int ls_cb(void *ctx, const char *name, size_t len, cfs_ino_t ino, uint32_t t,
		 uint64_t next)
{
	struct lsctx *l = ctx;
	char pre[16];
	int i, plen;

	(void)t;
	(void)next;
	plen = snprintf(pre, sizeof(pre), "t%d_", l->w->id);
	if (len <= (size_t)plen || memcmp(name, pre, (size_t)plen))
		return 0;
	for (i = 0; i < l->w->nf; i++)
		if (l->w->f[i].dir == 3 && strlen(l->w->f[i].name) == len &&
		    !memcmp(l->w->f[i].name, name, len)) {
			if (l->w->f[i].ino != ino)
				l->stray++;
			l->found[i]++;
			return 0;
		}
	l->stray++;
	return 0;
}

static void op_list_shared(struct worker *w)
{
	struct lsctx l = { .w = w };
	int i;

	snprintf(w->lastop, sizeof(w->lastop), "readdir shared");
	if (OK(w, cfs_readdir(fs, shared_dir, 0, ls_cb, &l)) < 0)
		return;
	if (l.stray)
		fail(w, "%d unexpected own entries in the shared directory", l.stray);
	for (i = 0; i < w->nf; i++)
		if (w->f[i].dir == 3 && l.found[i] != 1)
			fail(w, "%s seen %d times in the shared directory", w->f[i].name,
			     l.found[i]);
}

static void op_rename_within(struct worker *w)
{
	op_rename(w, 0);
}

static void op_rename_across(struct worker *w)
{
	op_rename(w, 1);
}

static void op_rename_over(struct worker *w)
{
	op_rename(w, 2);
}

/* The mix: op k runs when the roll r (0..99) is below mix[k].upto and
 * every earlier one's; above them all, op_big (not in the shared
 * directory), op_list_shared (only there) or op_read.  k indexes nops. */
static const struct {
	unsigned upto;
	void (*op)(struct worker *w);
} mix[] = {
	{ 16, op_create }, { 30, op_write }, { 42, op_read },
	{ 50, op_rename_within }, { 58, op_rename_across }, { 62, op_rename_over },
	{ 70, op_unlink }, { 75, op_dirs }, { 83, op_xattr }, { 88, op_truncate },
};

/* Run the op the roll r picks; its nops index. */
static int op_run(struct worker *w, unsigned r)
{
	int k;

	for (k = 0; k < (int)(sizeof(mix) / sizeof(mix[0])); k++)
		if (r < mix[k].upto) {
			mix[k].op(w);
			return k;
		}
	if (!w->shared && r < 96) {
		op_big(w);
		return 10;
	}
	if (w->shared) {
		op_list_shared(w);
		return 11;
	}
	op_read(w);
	return 2;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char top[16];
	unsigned i;
	int d;

	snprintf(top, sizeof(top), "w%d", w->id);
	snprintf(w->lastop, sizeof(w->lastop), "mkdir %s", top);
	if (OK(w, cfs_mkdir(fs, CFS_ROOT_INO, top, 0755, 0, 0, &w->top)) < 0)
		return NULL;
	pin(w, w->top);
	for (d = 0; d < 3; d++) {
		if (OK(w, cfs_mkdir(fs, w->top, dname(d), 0755, 0, 0, &w->dirs[d])) < 0)
			return NULL;
		pin(w, w->dirs[d]);
	}
	w->dirs[3] = shared_dir;
	for (i = 0; i < ops_per_worker && !w->failed; i++) {
		unsigned r = (unsigned)below(w, 100);
		int k;

		k = op_run(w, r);
		w->nops[k]++;
		if (getenv("CHUNKFS_THREADS_TRACE") &&
		    atoi(getenv("CHUNKFS_THREADS_TRACE")) == w->id)
			fprintf(stderr, "  trace %d.%u: %s\n", w->id, i, w->lastop);
		if (getenv("CHUNKFS_THREADS_PARANOID")) {
			char op[160];
			int j;

			memcpy(op, w->lastop, sizeof(op));
			for (j = 0; j < w->nf && !w->failed; j++)
				verify_file(w, &w->f[j]);
			if (w->failed)
				fprintf(stderr, "  worker %d: op %u broke it: %s\n", w->id, i, op);
		}
	}
	return NULL;
}

/* ---- the observer ---- */

struct obs {
	unsigned walks, stats, reads, cleans, cleaned, entries, errors, syncs;
};

static atomic_uint known_bug_hits;

static int obs_ok(int ret)
{
	/* racing with unlink/rmdir/rename: the thing may be gone or reused */
	if (ret >= 0 || ret == -ENOENT || ret == -ENOTDIR || ret == -EISDIR)
		return 1;
	return 0;
}

struct obs_dir {
	cfs_ino_t ino[512];
	uint32_t type[512];
	int n;
};

static int obs_cb(void *ctx, const char *name, size_t len, cfs_ino_t ino, uint32_t t,
		  uint64_t next)
{
	struct obs_dir *d = ctx;

	(void)next;
	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	if (len == 0 || len > CFS_NAME_MAX || !ino)
		atomic_fetch_add(&failures, 1);
	if (d->n < 512) {
		d->ino[d->n] = ino;
		d->type[d->n] = t;
		d->n++;
	}
	return 0;
}

static void obs_walk(struct obs *o, cfs_ino_t dir, int depth)
{
	struct obs_dir *d = calloc(1, sizeof(*d));
	static _Thread_local uint8_t buf[8192];
	int i, ret;

	if (!d)
		return;
	ret = cfs_readdir(fs, dir, 0, obs_cb, d);
	if (!obs_ok(ret)) {
		fail(NULL, "observer: readdir %u: %d", dir, ret);
		o->errors++;
	}
	for (i = 0; i < d->n; i++) {
		struct cfs_stat st;

		o->entries++;
		ret = cfs_getattr(fs, d->ino[i], &st);
		o->stats++;
		if (!obs_ok(ret)) {
			fail(NULL, "observer: getattr %u: %d", d->ino[i], ret);
			o->errors++;
			continue;
		}
		if (ret < 0)
			continue;
		if (S_ISDIR(st.mode) && depth < 4) {
			obs_walk(o, d->ino[i], depth + 1);
		} else if (S_ISREG(st.mode)) {
			ssize_t n = cfs_read(fs, d->ino[i], buf, sizeof(buf),
					     st.size > sizeof(buf) ? st.size / 2 : 0);

			o->reads++;
			if (!obs_ok((int)n)) {
				fail(NULL, "observer: read %u: %zd", d->ino[i], n);
				o->errors++;
			}
		}
	}
	free(d);
}

static void *observer_main(void *arg)
{
	struct obs *o = arg;
	struct cfs_statfs sf;
	struct cfs_chunk_info ci;

	while (!atomic_load(&stop_observer)) {
		if (cfs_statfs(fs, &sf) < 0 || sf.bfree > sf.blocks || sf.ffree > sf.files) {
			fail(NULL, "observer: statfs inconsistent");
			o->errors++;
		}
		if (cfs_get_chunk_info(fs, o->walks % IMG_CHUNKS, &ci) < 0)
			o->errors++;
		obs_walk(o, CFS_ROOT_INO, 0);
		o->walks++;
		if (o->walks % 4 == 1) {
			/* cfs_sync (and cfs_fsync) run concurrently with writers */
			int r = cfs_sync(fs);

			o->syncs++;
			if (r < 0) {
				fail(NULL, "observer: cfs_sync: %d", r);
				o->errors++;
			}
		}
		if (o->walks % 3 == 0) {
			int n = cfs_clean_idle(fs, 0);

			o->cleans++;
			if (n < 0) {
				fail(NULL, "observer: cfs_clean_idle: %d", n);
				o->errors++;
			} else {
				o->cleaned += (unsigned)n;
			}
		}
	}
	return NULL;
}

/* ---- final verification ---- */

static void verify_all(const char *when)
{
	int i, j;

	for (i = 0; i < NWORK; i++) {
		struct worker *w = &W[i];

		snprintf(w->lastop, sizeof(w->lastop), "final verification %s", when);
		for (j = 0; j < w->nf; j++)
			verify_file(w, &w->f[j]);
		verify_big(w);
		if (w->shared)
			op_list_shared(w);
		for (j = 0; j < w->nx; j++) {
			cfs_ino_t ino;

			if (OK(w, cfs_lookup(fs, w->top, w->xnames[j], &ino)) == 0 &&
			    ino != w->xdirs[j])
				fail(w, "directory %s changed inode", w->xnames[j]);
		}
	}
	CHECK_EQ(atomic_load(&failures), 0);
}

static void test_threads(void)
{
	struct cfs_mkfs_opts o = { .block_size = IMG_BS, .chunks = IMG_CHUNKS };
	const char *s = getenv("CHUNKFS_THREADS_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) : 20261203;
	struct obs ob = { 0 };
	pthread_t obs_th;
	struct timespec t0, t1;
	unsigned tot[16] = { 0 };
	int i, k, problems;
	unsigned xenospc = 0;
	uint32_t c, chunks[64];

	if (getenv("CHUNKFS_THREADS_OPS"))
		ops_per_worker = (unsigned)atoi(getenv("CHUNKFS_THREADS_OPS"));
	printf("    seed %llu (CHUNKFS_THREADS_SEED=%llu to replay), %d workers x %u ops\n",
	       (unsigned long long)seed, (unsigned long long)seed, NWORK, ops_per_worker);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_OK(fixture_mkfs(IMG_SIZE, &o, &dev, &fs));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "shared", 0777, 0, 0, &shared_dir));
	pin(NULL, shared_dir);
	pin(NULL, CFS_ROOT_INO);

	for (i = 0; i < NWORK; i++) {
		W[i].id = i;
		W[i].shared = i >= NPRIV;
		W[i].rng = seed * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0x632BE59BD9B4E019ull + 1;
	}
	CHECK_EQ(pthread_create(&obs_th, NULL, observer_main, &ob), 0);
	for (i = 0; i < NWORK; i++) {
		CHECK_EQ(pthread_create(&W[i].th, NULL, worker_main, &W[i]), 0);
		/* serial: tells a model mistake from a concurrency bug */
		if (getenv("CHUNKFS_THREADS_SERIAL"))
			pthread_join(W[i].th, NULL);
	}
	for (i = 0; i < NWORK && !getenv("CHUNKFS_THREADS_SERIAL"); i++)
		pthread_join(W[i].th, NULL);
	atomic_store(&stop_observer, 1);
	pthread_join(obs_th, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	for (i = 0; i < NWORK; i++) {
		for (k = 0; k < 16; k++)
			tot[k] += W[i].nops[k];
		xenospc += W[i].xattr_enospc;
	}
	printf("    %.1fs: create %u write %u verify %u rename %u/%u/%u unlink %u "
	       "dirs %u xattr %u truncate %u big %u ls %u\n",
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
	       tot[0], tot[1], tot[2], tot[3], tot[4], tot[5], tot[6], tot[7], tot[8],
	       tot[9], tot[10], tot[11]);
	printf("    setxattr -ENOSPC in a full home chunk: %u\n", xenospc);
	printf("    observer: %u walks, %u entries, %u getattr, %u reads, %u clean_idle "
	       "(%u chunks cleaned), %u syncs, %u errors, %u known-bug errors tolerated\n",
	       ob.walks, ob.entries, ob.stats, ob.reads, ob.cleans, ob.cleaned, ob.syncs,
	       ob.errors, atomic_load(&known_bug_hits));
	CHECK_EQ(atomic_load(&failures), 0);
	CHECK(ob.walks > 0 && ob.cleans > 0);

	/* the big files really went through continuations */
	{
		int conts = 0;

		for (c = 0; c < IMG_CHUNKS; c++) {
			struct cfs_chunk_info ci;

			CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
			conts += (int)ci.conts;
		}
		for (i = 0; i < NPRIV; i++)
			if (W[i].big)
				printf("    big file of worker %d: %llu bytes, %d inodes in "
				       "its chain\n", i, (unsigned long long)W[i].bigsize,
				       cfs_file_chunks(fs, W[i].big, chunks, 64));
		printf("    continuation inodes: %d\n", conts);
	}

	verify_all("before close");
	/* let go of everything held open, as an unmount would */
	for (i = 0; i < NWORK; i++) {
		struct worker *w = &W[i];

		for (k = 0; k < w->nf; k++)
			unpin(w, w->f[k].ino);
		for (k = 0; k < w->nx; k++)
			unpin(w, w->xdirs[k]);
		for (k = 0; k < 3 && w->dirs[k]; k++)
			unpin(w, w->dirs[k]);
		if (w->big)
			unpin(w, w->big);
		if (w->top)
			unpin(w, w->top);
	}
	unpin(NULL, shared_dir);
	unpin(NULL, CFS_ROOT_INO);
	CHECK_EQ(atomic_load(&failures), 0);
	problems = cfs_check(fs, fixture_report, NULL);
	CHECK_EQ(problems, 0);
	CHECK_OK(cfs_close(fs));
	fs = NULL;
	CHECK_OK(fixture_open(dev, 0, &fs));
	problems = cfs_check(fs, fixture_report, NULL);
	CHECK_EQ(problems, 0);
	verify_all("after reopen");
	CHECK_OK(cfs_close(fs));
	fs = NULL;
	for (i = 0; i < NWORK; i++)
		for (k = 0; k < W[i].nf; k++)
			free(W[i].f[k].data);
	cfs_bdev_destroy(dev);
}

int main(void)
{
	TEST_RUN(test_threads);
	return TEST_DONE();
}

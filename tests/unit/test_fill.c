/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fill tests (issue 11 items 1 and 5): a workload writes until its first
 * ENOSPC, which must come only when the whole filesystem is out of room:
 * free blocks below 1% of the data blocks, or free inodes below 1% of the
 * inodes (inodes are a fixed pool).  A chunk that runs out must never
 * strand the free blocks or inodes of the others.  At the first ENOSPC each
 * run prints the free blocks and inodes of the whole filesystem and of its
 * fullest and emptiest chunk, and the bookkeeping (continuation inodes and
 * cross-chunk references) as a share of the entries made.  It also holds
 * statfs to its word: what it said was available before the fill (bavail,
 * ffree) must have been obtained, within 1%, by the time space ran out, and
 * at that point it must say (almost) nothing is left of what ran out.
 *
 * make check runs a few small configurations (in memory, about a minute
 * under the sanitizers); CHUNKFS_FILL_LONG=1 (make fill-long) runs the
 * whole matrix (1, 4 and 16 GiB sparse image files in $TMPDIR, 1 to 256
 * chunks, 1 KiB to 64 KiB blocks).  CHUNKFS_FILL_ONLY=SUBSTRING runs the
 * configurations whose name contains it.
 *
 * test_statfs_inodes (make check only): what df -i reports is what a fill
 * with empty files really makes, within 5%, at 1, 4 and 64 KiB blocks.
 */
#include "test.h"

#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"

enum workload { W_TINY, W_BIG, W_MIX, W_DEEP, W_WIDE, W_LINKS, W_CHURN, W_ISSUE };
static const char *const wl_name[] = { "tiny", "big", "mix", "deep", "wide", "links",
				       "churn", "issue" };

struct cfg {
	uint64_t size;
	uint32_t bs, chunks;            /* 0 chunks: mkfs's default */
	uint64_t inodes;                /* 0: mkfs's default */
	enum workload wl;
};

struct run {
	struct cfs_fs *fs;
	const struct cfg *cfg;
	char name[96];
	uint64_t rnd;
	uint64_t files, dirs, links;    /* made so far */
	cfs_ino_t *made;                /* regular files, for links and deletes */
	char (*made_dir)[12];           /* ... and where: dir index, name */
	cfs_ino_t *dirino;
	uint64_t nmade, cap, ndirs, dcap;
	uint8_t *buf;
	size_t bufsz;
	struct cfs_statfs before;
	const char *op;                 /* the call that failed */
	int big_done;
};

static uint64_t rnd_next(struct run *r)
{
	r->rnd ^= r->rnd << 13;
	r->rnd ^= r->rnd >> 7;
	r->rnd ^= r->rnd << 17;
	return r->rnd;
}

static uint64_t rnd_below(struct run *r, uint64_t n)
{
	return n ? rnd_next(r) % n : 0;
}

#define MB (1ull << 20)
#define GB (1ull << 30)

/* Size of a file of the 1M data set (bench/gen_dataset.py). */
static uint64_t small_size(struct run *r)
{
	uint64_t p = rnd_below(r, 100);

	if (p < 55)
		return rnd_below(r, 2049);
	if (p < 90)
		return 2049 + rnd_below(r, 4096);
	return 6145 + rnd_below(r, 2048);
}

/* Remember a directory files may go to. */
static int dir_push(struct run *r, cfs_ino_t ino)
{
	if (r->ndirs == r->dcap) {
		r->dcap = r->dcap ? r->dcap * 2 : 256;
		r->dirino = realloc(r->dirino, r->dcap * sizeof(*r->dirino));
		if (!r->dirino)
			return -ENOMEM;
	}
	r->dirino[r->ndirs++] = ino;
	return 0;
}

/* Remember a file made in directory index di. */
static int made_push(struct run *r, cfs_ino_t ino, uint64_t di)
{
	if (r->nmade == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 1024;
		r->made = realloc(r->made, r->cap * sizeof(*r->made));
		r->made_dir = realloc(r->made_dir, r->cap * sizeof(*r->made_dir));
		if (!r->made || !r->made_dir)
			return -ENOMEM;
	}
	r->made[r->nmade] = ino;
	snprintf(r->made_dir[r->nmade], sizeof(r->made_dir[0]), "%" PRIu64, di);
	r->nmade++;
	return 0;
}

static int add_dir(struct run *r, cfs_ino_t parent, cfs_ino_t *out)
{
	char name[32];
	int ret;

	snprintf(name, sizeof(name), "d%" PRIu64, r->dirs);
	r->op = "mkdir";
	ret = cfs_mkdir(r->fs, parent, name, 0755, 0, 0, out);
	if (ret < 0)
		return ret;
	r->dirs++;
	return dir_push(r, *out);
}

/* Write size bytes in pieces of at most the buffer; -ENOSPC when space
 * runs out (a short write counts too). */
static int write_all(struct run *r, cfs_ino_t ino, uint64_t size)
{
	uint64_t off = 0;

	r->op = "write";
	while (off < size) {
		size_t n = size - off < r->bufsz ? (size_t)(size - off) : r->bufsz;
		ssize_t w = cfs_write(r->fs, ino, r->buf, n, off);

		if (w < 0)
			return (int)w;
		if ((size_t)w < n)
			return -ENOSPC;
		off += (uint64_t)w;
	}
	return 0;
}

/* A new file of size bytes in directory dir (index di). */
static int add_file(struct run *r, uint64_t di, uint64_t size)
{
	char name[32];
	cfs_ino_t ino;
	int ret;

	snprintf(name, sizeof(name), "f%" PRIu64, r->files);
	r->op = "create";
	ret = cfs_mknod(r->fs, r->dirino[di], name, S_IFREG | 0644, 0, 0, 0, &ino);
	if (ret < 0)
		return ret;
	r->files++;
	ret = made_push(r, ino, di);
	return ret < 0 ? ret : write_all(r, ino, size);
}

static uint64_t chunk_size_bytes(struct run *r)
{
	struct cfs_info in;

	cfs_get_info(r->fs, &in);
	return in.chunk_blocks * in.block_size;
}

/* One step of the workload: 0, or the first error (-ENOSPC expected). */
static int step(struct run *r)
{
	uint64_t di;
	cfs_ino_t d;
	int ret;

	switch (r->cfg->wl) {
	case W_TINY:   /* 0..300 bytes: inline or one block */
		if (r->files % 200 == 0 && (ret = add_dir(r, CFS_ROOT_INO, &d)) < 0)
			return ret;
		return add_file(r, r->ndirs - 1, rnd_below(r, 301));
	case W_BIG: {  /* 1/3 to 2 chunks each */
		uint64_t cs = chunk_size_bytes(r);

		if (!r->ndirs && (ret = add_dir(r, CFS_ROOT_INO, &d)) < 0)
			return ret;
		return add_file(r, rnd_below(r, r->ndirs), cs / 3 + rnd_below(r, cs * 5 / 3));
	}
	case W_MIX: case W_CHURN:
		/* the data set's shape: big files first (a tenth of the space),
		 * then top-level directories of small files in subdirectories */
		if (r->files < 4 && r->cfg->wl == W_MIX) {
			if (!r->ndirs && (ret = add_dir(r, CFS_ROOT_INO, &d)) < 0)
				return ret;
			return add_file(r, 0, r->cfg->size / 40);
		}
		if (r->files % 1000 == 0 && (ret = add_dir(r, CFS_ROOT_INO, &d)) < 0)
			return ret;
		if (r->files % 20 == 0) {
			di = r->ndirs - 1 - rnd_below(r, r->ndirs < 3 ? r->ndirs : 3);
			if ((ret = add_dir(r, r->dirino[di], &d)) < 0)
				return ret;
		}
		return add_file(r, r->ndirs - 1 - rnd_below(r, r->ndirs < 4 ? r->ndirs : 4),
				small_size(r));
	case W_ISSUE: { /* issue 11's mount case: 60% in 48 MiB files, then
			 * files of 0-9,000 bytes in 300 directories, runs of 200 */
		struct cfs_statfs st;

		if (!r->ndirs && (ret = dir_push(r, CFS_ROOT_INO)) < 0)
			return ret;   /* the root, for the big files */
		CHECK_OK(cfs_statfs(r->fs, &st));
		if (!r->big_done && (st.blocks - st.bfree) * 100 < st.blocks * 60)
			return add_file(r, 0, 48 * MB);
		r->big_done = 1;
		while (r->ndirs < 301)
			if ((ret = add_dir(r, CFS_ROOT_INO, &d)) < 0)
				return ret;
		return add_file(r, 1 + (r->files / 200) % 300, rnd_below(r, 9001));
	}
	case W_DEEP:   /* a chain of directories, a few files in each */
		if (r->files % 8 == 0 &&
		    (ret = add_dir(r, r->ndirs ? r->dirino[r->ndirs - 1] : CFS_ROOT_INO, &d)) < 0)
			return ret;
		return add_file(r, r->ndirs - 1, small_size(r));
	case W_WIDE:   /* one directory holding every file and many directories */
		if (!r->ndirs && (ret = add_dir(r, CFS_ROOT_INO, &d)) < 0)
			return ret;
		if (r->files % 50 == 0 && (ret = add_dir(r, r->dirino[0], &d)) < 0)
			return ret;
		return add_file(r, 0, small_size(r));
	case W_LINKS: { /* every other file also named from another directory */
		char name[32];

		if (r->files % 100 == 0 && (ret = add_dir(r, CFS_ROOT_INO, &d)) < 0)
			return ret;
		ret = add_file(r, r->ndirs - 1, small_size(r));
		if (ret < 0 || r->files % 2 || r->ndirs < 2)
			return ret;
		snprintf(name, sizeof(name), "l%" PRIu64, r->links);
		r->op = "link";
		ret = cfs_link(r->fs, r->made[r->nmade - 1], r->dirino[rnd_below(r, r->ndirs - 1)],
			       name);
		if (ret == 0)
			r->links++;
		return ret;
	}
	}
	return -EINVAL;
}

struct totals {
	uint64_t blocks, free_blocks, inodes, free_inodes, conts, xrefs;
	uint64_t repair_blocks, repair_inodes;   /* the checker's reserve, FORMAT.md 16.4 */
	uint32_t fullest, emptiest;
	struct cfs_chunk_info full, empty;
};

static void totals_get(struct cfs_fs *fs, struct totals *t)
{
	struct cfs_info in;
	struct cfs_chunk_info ci;
	uint32_t c;
	double fmax = -1, fmin = 2;

	memset(t, 0, sizeof(*t));
	cfs_get_info(fs, &in);
	for (c = 0; c < in.chunks; c++) {
		double f;

		if (cfs_get_chunk_info(fs, c, &ci) < 0)
			continue;
		t->blocks += ci.blocks;
		t->free_blocks += ci.free_blocks;
		t->inodes += ci.inodes;
		t->free_inodes += ci.free_inodes;
		t->conts += ci.conts;
		t->xrefs += ci.xrefs;
		t->repair_blocks += ci.free_blocks < CFS_REPAIR_BLOCKS ? ci.free_blocks : CFS_REPAIR_BLOCKS;
		t->repair_inodes += ci.free_inodes < CFS_REPAIR_INODES ? ci.free_inodes : CFS_REPAIR_INODES;
		f = 1.0 - (double)ci.free_blocks / (double)ci.blocks;
		if (f > fmax) {
			fmax = f;
			t->fullest = c;
			t->full = ci;
		}
		if (f < fmin) {
			fmin = f;
			t->emptiest = c;
			t->empty = ci;
		}
	}
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

/* The report at the first ENOSPC, and the 1% rule. */
static void at_enospc(struct run *r, const char *what)
{
	struct totals t;
	struct cfs_statfs st;
	uint64_t entries = r->files + r->dirs + r->links;
	uint64_t got_b, got_i;
	int blocks_out, inodes_out;

	totals_get(r->fs, &t);
	CHECK_OK(cfs_statfs(r->fs, &st));
	printf("  %s: first ENOSPC (%s, %s) after %" PRIu64 " files, %" PRIu64 " dirs, %" PRIu64
	       " links\n", r->name, what, r->op, r->files, r->dirs, r->links);
	printf("    free: blocks %" PRIu64 "/%" PRIu64 " (%.2f%%), inodes %" PRIu64 "/%" PRIu64
	       " (%.2f%%); fullest chunk %u: %" PRIu64 " blocks %" PRIu64 " inodes free; "
	       "emptiest chunk %u: %" PRIu64 " blocks %" PRIu64 " inodes free\n",
	       t.free_blocks, t.blocks, pct(t.free_blocks, t.blocks), t.free_inodes, t.inodes,
	       pct(t.free_inodes, t.inodes), t.fullest, t.full.free_blocks, t.full.free_inodes,
	       t.emptiest, t.empty.free_blocks, t.empty.free_inodes);
	printf("    bookkeeping: %" PRIu64 " continuations + %" PRIu64 " cross-chunk references"
	       " = %.2f%% of %" PRIu64 " entries\n", t.conts, t.xrefs,
	       pct(t.conts + t.xrefs, entries), entries);
	if (getenv("CHUNKFS_FILL_VERBOSE")) {
		struct cfs_info in;
		struct cfs_chunk_info ci;
		uint32_t c;

		cfs_get_info(r->fs, &in);
		for (c = 0; c < in.chunks; c++)
			if (cfs_get_chunk_info(r->fs, c, &ci) == 0)
				printf("    chunk %u: free %" PRIu64 " blocks %" PRIu64
				       " inodes, %" PRIu64 " conts %" PRIu64 " xrefs\n", c,
				       ci.free_blocks, ci.free_inodes, ci.conts, ci.xrefs);
	}
	/* 1% plus the documented repair reserve, which only fsck may take */
	blocks_out = (t.free_blocks - t.repair_blocks) * 100 < t.blocks;
	inodes_out = (t.free_inodes - t.repair_inodes) * 100 < t.inodes;
	if (!blocks_out && !inodes_out)
		TEST_FAIL("%s: ENOSPC with %.2f%% of blocks and %.2f%% of inodes free", r->name,
			  pct(t.free_blocks, t.blocks), pct(t.free_inodes, t.inodes));
	/* statfs: what it promised was there to be had */
	got_b = r->before.bfree - st.bfree;
	got_i = r->before.ffree - st.ffree;
	printf("    statfs promised %" PRIu64 " blocks, %" PRIu64 " inodes; got %" PRIu64
	       " blocks, %" PRIu64 " inodes; now says %" PRIu64 " blocks, %" PRIu64
	       " inodes available\n", r->before.bavail, r->before.ffree, got_b, got_i,
	       st.bavail, st.ffree);
	if (blocks_out && got_b * 100 < r->before.bavail * 99)
		TEST_FAIL("%s: statfs promised %" PRIu64 " blocks, only %" PRIu64 " obtained",
			  r->name, r->before.bavail, got_b);
	if (inodes_out && !blocks_out && got_i * 100 < r->before.ffree * 99)
		TEST_FAIL("%s: statfs promised %" PRIu64 " inodes, only %" PRIu64 " obtained",
			  r->name, r->before.ffree, got_i);
	if (blocks_out && st.bavail * 100 > st.blocks)
		TEST_FAIL("%s: out of blocks, statfs says %" PRIu64 " available", r->name,
			  st.bavail);
	if (inodes_out && !blocks_out && st.ffree * 100 > st.files)
		TEST_FAIL("%s: out of inodes, statfs says %" PRIu64 " available", r->name,
			  st.ffree);
}

/* Fill until the first ENOSPC; any other error fails the test. */
static void fill(struct run *r)
{
	int ret;

	CHECK_OK(cfs_statfs(r->fs, &r->before));
	do
		ret = step(r);
	while (ret == 0);
	if (ret != -ENOSPC)
		TEST_FAIL("%s: error %d (%s) before ENOSPC", r->name, ret, strerror(-ret));
	at_enospc(r, r->cfg->wl == W_CHURN ? "fill" : wl_name[r->cfg->wl]);
}

/* Delete about a third of the churn run's files. */
static void delete_some(struct run *r)
{
	uint64_t i, k = 0;
	char name[32];

	for (i = 0; i < r->nmade; i++) {
		if (rnd_below(r, 3)) {
			r->made[k] = r->made[i];
			memcpy(r->made_dir[k], r->made_dir[i], sizeof(r->made_dir[0]));
			k++;
			continue;
		}
		/* the churn run names each file i<inode number> */
		snprintf(name, sizeof(name), "i%" PRIu64, (uint64_t)r->made[i]);
		CHECK_OK(cfs_unlink(r->fs, r->dirino[strtoull(r->made_dir[i], NULL, 10)], name));
	}
	r->nmade = k;
}

static void report_cb(void *ctx, const char *msg)
{
	(void)ctx;
	printf("    check: %s\n", msg);
}

static void run_cfg(const struct cfg *cfg, const char *dir)
{
	struct cfs_mkfs_opts o = { .size = cfg->size, .block_size = cfg->bs,
				   .chunks = cfg->chunks, .inodes = cfg->inodes };
	struct cfs_bdev *dev = NULL;
	struct run r;
	char path[512];
	struct cfs_info in;
	int round;

	memset(&r, 0, sizeof(r));
	r.cfg = cfg;
	r.rnd = 0x9e3779b97f4a7c15ull ^ cfg->size ^ cfg->bs ^ ((uint64_t)cfg->chunks << 40) ^
		(uint64_t)cfg->wl;
	r.bufsz = 1 << 20;
	r.buf = malloc(r.bufsz);
	CHECK(r.buf);
	fixture_fill(r.buf, r.bufsz, 7);
	if (dir) {
		snprintf(path, sizeof(path), "%s/fill.img", dir);
		unlink(path);
		CHECK_OK(cfs_mkfs(path, &o));
		CHECK_OK(cfs_open(path, 0, &r.fs));
	} else {
		CHECK_OK(fixture_mkfs(cfg->size, &o, &dev, &r.fs));
	}
	cfs_get_info(r.fs, &in);
	snprintf(r.name, sizeof(r.name), "%s %" PRIu64 "M bs%u c%u i%" PRIu64, wl_name[cfg->wl],
		 cfg->size >> 20, in.block_size, in.chunks, in.inodes_per_chunk);
	if (cfg->wl != W_CHURN) {
		fill(&r);
	} else {
		/* rounds of random deletes and refills: each refill must
		 * again reach the whole filesystem */
		for (round = 0; round < 3; round++) {
			int ret;

			CHECK_OK(cfs_statfs(r.fs, &r.before));
			for (;;) {
				char name[32];
				cfs_ino_t d, ino;
				uint64_t di;

				if (r.files % 300 == 0 && (ret = add_dir(&r, CFS_ROOT_INO, &d)) < 0)
					break;
				di = r.ndirs - 1 - rnd_below(&r, r.ndirs < 8 ? r.ndirs : 8);
				r.op = "create";
				ret = cfs_mknod(r.fs, r.dirino[di], "new", S_IFREG | 0644, 0, 0, 0,
						&ino);
				if (ret < 0)
					break;
				snprintf(name, sizeof(name), "i%" PRIu64, (uint64_t)ino);
				CHECK_OK(cfs_rename(r.fs, r.dirino[di], "new", r.dirino[di], name, 0));
				r.files++;
				CHECK_OK(made_push(&r, ino, di));
				ret = write_all(&r, ino, rnd_below(&r, 8) ? small_size(&r) :
					  chunk_size_bytes(&r) / 4 + rnd_below(&r, chunk_size_bytes(&r)));
				if (ret < 0)
					break;
			}
			if (ret != -ENOSPC)
				TEST_FAIL("%s: error %d before ENOSPC", r.name, ret);
			snprintf(r.name, sizeof(r.name), "churn %" PRIu64 "M bs%u c%u round %d",
				 cfg->size >> 20, in.block_size, in.chunks, round);
			at_enospc(&r, "refill");
			delete_some(&r);
		}
	}
	CHECK_OK(cfs_sync(r.fs));
	CHECK_EQ(cfs_check(r.fs, report_cb, NULL), 0);
	CHECK_OK(cfs_close(r.fs));
	if (dev)
		cfs_bdev_destroy(dev);
	if (dir)
		unlink(path);
	free(r.buf);
	free(r.made);
	free(r.made_dir);
	free(r.dirino);
	fflush(stdout);
}

/* df -i with inode clusters: the free inodes statfs reports are those a
 * fill with empty files (names of 12 bytes, 1,000 to a directory) really
 * makes, within 5%, at 1, 4 and 64 KiB blocks; the clusters the free
 * blocks could make without room for the names were 85-92% true. */
static void statfs_inodes(uint64_t size, uint32_t bs)
{
	struct cfs_mkfs_opts o = { .size = size, .block_size = bs, .chunks = 4 };
	struct cfs_bdev *dev;
	struct cfs_fs *fs;
	struct cfs_statfs a, b;
	cfs_ino_t d = 0, ino;
	uint64_t made = 0, dirs = 0;
	char name[32];
	int ret;

	CHECK_OK(fixture_mkfs(size, &o, &dev, &fs));
	CHECK_OK(cfs_statfs(fs, &a));
	for (;;) {
		if (made % 1000 == 0) {
			snprintf(name, sizeof(name), "d%05" PRIu64, dirs);
			if ((ret = cfs_mkdir(fs, CFS_ROOT_INO, name, 0755, 0, 0, &d)) < 0)
				break;
			dirs++;
		}
		snprintf(name, sizeof(name), "%012" PRIu64, made);
		if ((ret = cfs_mknod(fs, d, name, S_IFREG | 0644, 0, 0, 0, &ino)) < 0)
			break;
		made++;
	}
	CHECK_EQ(ret, -ENOSPC);
	CHECK_OK(cfs_statfs(fs, &b));
	printf("  statfs %" PRIu64 "M bs%u: df -i said %" PRIu64 " free, %" PRIu64
	       " files and %" PRIu64 " directories made (%.1f%%); then %" PRIu64 " free, %"
	       PRIu64 " blocks available\n", size >> 20, bs, a.ffree, made, dirs,
	       pct(made + dirs, a.ffree), b.ffree, b.bavail);
	CHECK((made + dirs) * 100 >= a.ffree * 95 && (made + dirs) * 100 <= a.ffree * 105);
	CHECK(b.ffree * 100 <= b.files);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
}

static void test_statfs_inodes(void)
{
	statfs_inodes(32 * MB, 1024);
	statfs_inodes(32 * MB, 4096);
	statfs_inodes(64 * MB, 65536);
}

static const struct cfg *cfgs;
static size_t ncfgs;
static const char *img_dir;

static int wanted(const struct cfg *c)
{
	const char *only = getenv("CHUNKFS_FILL_ONLY");
	char name[64];

	if (!only)
		return 1;
	snprintf(name, sizeof(name), "%s %" PRIu64 "M bs%u c%u", wl_name[c->wl], c->size >> 20,
		 c->bs, c->chunks);
	return strstr(name, only) != NULL;
}

/* make check: small images in memory, a minute in all under ASan */
static const struct cfg quick[] = {
	{ 64 * MB, 4096, 16, 0, W_TINY },
	{ 64 * MB, 4096, 8, 0, W_BIG },
	{ 96 * MB, 1024, 24, 0, W_MIX },
	{ 64 * MB, 4096, 32, 0, W_DEEP },
	{ 48 * MB, 4096, 4, 0, W_WIDE },
	{ 64 * MB, 4096, 16, 0, W_LINKS },
	{ 64 * MB, 4096, 16, 0, W_CHURN },
	/* the issue's shape: chunks short of inodes, big files first */
	{ 128 * MB, 4096, 32, 8192, W_MIX },
	{ 256 * MB, 4096, 16, 0, W_ISSUE },
};

/* make fill-long: the matrix, on sparse image files */
static const struct cfg matrix[] = {
	{ 2 * GB, 4096, 64, 0, W_ISSUE },
	{ 1 * GB, 1024, 1, 0, W_MIX },
	{ 1 * GB, 4096, 16, 0, W_TINY },
	{ 1 * GB, 4096, 256, 0, W_MIX },
	{ 1 * GB, 65536, 8, 0, W_BIG },
	{ 1 * GB, 65536, 64, 0, W_MIX },
	{ 1 * GB, 4096, 64, 0, W_LINKS },
	{ 1 * GB, 4096, 64, 0, W_DEEP },
	{ 1 * GB, 4096, 32, 0, W_WIDE },
	{ 1 * GB, 4096, 32, 0, W_CHURN },
	{ 4 * GB, 4096, 0, 0, W_MIX },
	{ 4 * GB, 1024, 128, 0, W_TINY },
	{ 4 * GB, 4096, 256, 0, W_BIG },
	{ 4 * GB, 16384, 32, 0, W_CHURN },
	{ 16 * GB, 4096, 0, 0, W_MIX },
	{ 16 * GB, 4096, 0, 0, W_TINY },
	{ 16 * GB, 65536, 256, 0, W_BIG },
};

static void test_fill(void)
{
	size_t i;

	for (i = 0; i < ncfgs; i++)
		if (wanted(&cfgs[i]))
			run_cfg(&cfgs[i], img_dir);
}

int main(void)
{
	char dir[256];

	if (getenv("CHUNKFS_FILL_LONG")) {
		if (fixture_tmpdir(dir, sizeof(dir), "test_fill") < 0)
			return 1;
		img_dir = dir;
		cfgs = matrix;
		ncfgs = sizeof(matrix) / sizeof(matrix[0]);
	} else {
		cfgs = quick;
		ncfgs = sizeof(quick) / sizeof(quick[0]);
	}
	TEST_RUN(test_fill);
	if (!img_dir)
		TEST_RUN(test_statfs_inodes);
	if (img_dir)
		rmdir(img_dir);
	return TEST_DONE();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Crash at every write (tests/power.h) of a workload during which idle
 * chunks are marked clean while another chunk stays busy, as the mount
 * does every clean_after seconds.  A chunk marked clean names inodes of the
 * busy chunk (a directory entry and its stub): they were flushed before it
 * was marked, so after any later crash they must be there.  The busy
 * chunk's header on disk must then say so too: its inode-table watermark
 * is what fsck reads up to, and a header written when the chunk went dirty
 * (before its table grew) hid every inode made since, so that fsck -p
 * dropped a directory a clean chunk still named (the "lost directory" the
 * benchmark saw: `ls -R` listed it, then could not open it).
 *
 * Besides power_cut_recover's checks (fsck -p alone repairs, nothing is
 * left, chunks clean at the cut untouched), every file made before the
 * clean reads back, and no cut escalates the check to every chunk (but
 * after rebuilding a directory tree): a crash leaves only the chunks it
 * was writing to be checked (entries naming inodes the busy chunk never
 * wrote, in directories of chunks dirty again, made fsck check every chunk
 * before).  Cuts drop every
 * unflushed write, keep a seeded half, or keep them all (kill -9 of the
 * mount daemon: what it wrote is in the kernel's page cache). */
#include <stdint.h>
#include <sys/stat.h>

#include "test.h"
#include "power.h"
#include "fsint.h"

#define IMG_SIZE  (3u << 20)
#define BSIZE     1024
#define BEFORE    10          /* files in the busy directory before the clean */

static uint8_t *pristine;
static struct power_stats stats;

struct idle_state {
	cfs_ino_t parent, busy;
	int cleaned;            /* the clean completed before the cut */
};

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 2654435761u + seed) >> 11);
}

/* Every dirty chunk but busy's is idle: mark them clean, as the mount's
 * clean_after timer does.  Returns what cfs_clean_idle returns. */
static int clean_all_but(struct cfs_fs *fs, uint32_t busy)
{
	uint32_t c;

	for (c = 0; c < fs->sb.nchunks; c++)
		fs->chunks[c].last_change = c == busy ? cfs_now_mono() : -1e9;
	return cfs_clean_idle(fs, 1e8);
}

static void idle_workload(struct cfs_fs *fs, void *arg)
{
	struct idle_state *s = arg;
	uint8_t buf[300];
	cfs_ino_t f, q;
	char name[32];
	int i;

	memset(s, 0, sizeof(*s));
	s->parent = CFS_ROOT_INO;
	for (i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		if (cfs_mknod(fs, s->parent, name, S_IFREG | 0644, 0, 0, 0, &f) < 0)
			return;
	}
	/* a new top-level directory goes to another chunk than the root:
	 * its entry has a stub */
	if (cfs_mkdir(fs, s->parent, "churn", 0755, 0, 0, &s->busy) < 0)
		return;
	for (i = 0; i < BEFORE; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		fill(buf, sizeof(buf), (unsigned)i);
		if (cfs_mknod(fs, s->busy, name, S_IFREG | 0644, 0, 0, 0, &f) < 0 ||
		    cfs_write(fs, f, buf, sizeof(buf), 0) < 0)
			return;
	}
	if (clean_all_but(fs, CFS_INO_CHUNK(s->busy)) <= 0)
		return;
	s->cleaned = 1;
	/* the busy chunk goes on; new directories, entries in chunks that
	 * were just marked clean and are dirty again */
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		if (cfs_mknod(fs, s->busy, name, S_IFREG | 0644, 0, 0, 0, &f) < 0)
			return;
		if (i % 3 == 0) {
			char to[32];

			snprintf(to, sizeof(to), "r%d", i);
			if (cfs_rename(fs, s->busy, name, s->busy, to, 0) < 0)
				return;
		}
	}
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "q%d", i);
		if (cfs_mkdir(fs, CFS_ROOT_INO, name, 0755, 0, 0, &q) < 0 ||
		    cfs_mknod(fs, q, "x", S_IFREG | 0644, 0, 0, 0, &f) < 0)
			return;
	}
	if (cfs_unlink(fs, s->busy, "c0") < 0)
		return;
	cfs_sync(fs);
}

/* Files the clean flushed read back. */
static void cleaned_verify(int64_t k, struct cfs_fs *fs, const struct idle_state *s)
{
	uint8_t want[300], got[400];
	char name[32];
	cfs_ino_t f;
	int i;

	if (!s->cleaned)
		return;
	if (cfs_lookup(fs, s->parent, "churn", &f) < 0 || f != s->busy)
		TEST_FAIL("cut %lld: /churn, made before the clean, is lost", (long long)k);
	for (i = 1; i < BEFORE; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		fill(want, sizeof(want), (unsigned)i);
		if (cfs_lookup(fs, s->busy, name, &f) < 0)
			TEST_FAIL("cut %lld: /churn/%s, made before the clean, is lost",
				  (long long)k, name);
		CHECK_EQ(cfs_read(fs, f, got, sizeof(got), 0), (ssize_t)sizeof(want));
		if (memcmp(got, want, sizeof(want)))
			TEST_FAIL("cut %lld: /churn/%s differs", (long long)k, name);
	}
}

static void verify(int64_t k, const char *path, void *arg)
{
	struct cfs_fs *fs = power_cut_recover(k, path, &stats);

	cleaned_verify(k, fs, arg);
	CHECK_OK(cfs_close(fs));
}

/* Workload 2: a scrub (errors=repair, `chunkfs scrub -p`) checks the
 * root's chunk while its changes are in memory only, which lazy marking
 * leaves clean on disk; found sound, the chunk gets its last-check time
 * written.  That header must be the one last written: the one in memory
 * counts inodes and blocks the disk does not hold yet, and a crash after
 * it left a chunk marked clean whose counters fsck -f found wrong. */
struct scrub_state {
	int clean_at_scrub;     /* the chunk was clean on disk, changed in memory */
	int scrubbed;           /* the scrub counted (found nothing) */
};

static void scrub_workload(struct cfs_fs *fs, void *arg)
{
	struct cfs_fsck_opts o = { .mode = CFS_FSCK_PREEN, .threads = 1 };
	struct scrub_state *s = arg;
	struct cfs_fsck_result r;
	struct cfs_chunk_info ci;
	uint32_t rc = CFS_INO_CHUNK(CFS_ROOT_INO);
	uint8_t buf[300];
	cfs_ino_t f;
	char name[32];
	int i;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		fill(buf, sizeof(buf), (unsigned)i);
		if (cfs_mknod(fs, CFS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 0, &f) < 0 ||
		    cfs_write(fs, f, buf, sizeof(buf), 0) < 0)
			return;
	}
	s->clean_at_scrub = cfs_get_chunk_info(fs, rc, &ci) == 0 &&
			    ci.state == CFS_CHUNK_CLEAN && fs->chunks[rc].unmarked;
	if (cfs_scrub(fs, rc, &o, &r) < 0 || r.problems)
		return;
	s->scrubbed = 1;
	for (i = 4; i < 8; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		if (cfs_mknod(fs, CFS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 0, &f) < 0)
			return;
	}
	cfs_sync(fs);
}

struct clean_findings {
	uint8_t clean[256];
	int64_t cut;
	int n;
};

static void clean_problem(void *ctx, const struct cfs_fsck_problem *p)
{
	struct clean_findings *cf = ctx;

	if (p->chunk >= 0 && p->chunk < 256 && cf->clean[p->chunk]) {
		fprintf(stderr, "    cut %lld: chunk %lld, marked clean: %s\n",
			(long long)cf->cut, (long long)p->chunk, p->text);
		cf->n++;
	}
}

/* Before the repair: a forced check (-f -n) finds nothing in a chunk the
 * cut left marked clean (that is what clean promises: no check needed). */
static void clean_consistent(int64_t k, const char *path)
{
	struct clean_findings cf = { .cut = k };
	struct cfs_fsck_opts o = { .mode = CFS_FSCK_NO, .force = 1, .threads = 1,
				   .problem = clean_problem, .ctx = &cf };
	struct cfs_fsck_result r;
	struct cfs_chunk_info ci;
	struct cfs_fs *fs;
	uint32_t c;

	CHECK_OK(cfs_open(path, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs));
	for (c = 0; c < 256 && cfs_get_chunk_info(fs, c, &ci) == 0; c++)
		cf.clean[c] = ci.state == CFS_CHUNK_CLEAN;
	o.problem = clean_problem;
	CHECK_OK(cfs_fsck(fs, &o, &r));
	CHECK_OK(cfs_close(fs));
	if (cf.n)
		TEST_FAIL("cut %lld: %d findings in chunks marked clean", (long long)k, cf.n);
}

static void scrub_verify(int64_t k, const char *path, void *arg)
{
	(void)arg;
	clean_consistent(k, path);
	CHECK_OK(cfs_close(power_cut_recover(k, path, &stats)));
}

static void setup(void)
{
	struct cfs_mkfs_opts o = { .block_size = BSIZE, .chunks = 6, .inodes = 600 };

	pristine = power_pristine(IMG_SIZE, &o);
}

/* The layout the workload relies on: / and /churn in different chunks. */
static int64_t layout_check(const struct power_cut *pc)
{
	struct idle_state s;
	int64_t n = power_cut_count(pc, idle_workload, &s);

	CHECK(s.cleaned);
	if (CFS_INO_CHUNK(s.parent) == CFS_INO_CHUNK(s.busy))
		TEST_FAIL("/ and /churn are both in chunk %u: the test needs them apart",
			  CFS_INO_CHUNK(s.busy));
	return n;
}

static void test_crash_idle_every_write(void)
{
	static const double keep[] = { 0.0, 0.5, 1.0 };
	struct power_cut pc;
	struct idle_state s;
	int64_t n, k;
	size_t i;

	power_cut_init(&pc, pristine, IMG_SIZE, BSIZE, "crash_idle");
	memset(&stats, 0, sizeof(stats));
	n = layout_check(&pc);
	for (i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		for (k = 1; k <= n; k++)
			power_cut_at(&pc, k, keep[i], (uint64_t)k, idle_workload, verify, &s);
	printf("crash_idle: %lld cut points, unflushed writes dropped, half kept and all "
	       "kept: %lld needed repairs, %lld escalated to all chunks (%lld after a directory "
	       "tree was rebuilt)\n", (long long)n, (long long)stats.repaired,
	       (long long)stats.escalated, (long long)stats.escalated_tree);
	unlink(pc.path);
	POWER_CHECK_ESCALATIONS(stats);
}

static void test_crash_scrub_lazy(void)
{
	struct power_cut pc;
	struct scrub_state s;
	int64_t n, k;

	power_cut_init(&pc, pristine, IMG_SIZE, BSIZE, "crash_scrub");
	memset(&stats, 0, sizeof(stats));
	n = power_cut_count(&pc, scrub_workload, &s);
	CHECK(s.clean_at_scrub);
	CHECK(s.scrubbed);
	for (k = 1; k <= n; k++) {
		power_cut_at(&pc, k, 0.0, (uint64_t)k, scrub_workload, scrub_verify, &s);
		power_cut_at(&pc, k, 1.0, (uint64_t)k, scrub_workload, scrub_verify, &s);
	}
	printf("crash_idle: scrub of a chunk changed in memory only: %lld cut points, "
	       "unflushed writes dropped and all kept: %lld needed repairs\n", (long long)n,
	       (long long)stats.repaired);
	unlink(pc.path);
	POWER_CHECK_ESCALATIONS(stats);
}

int main(void)
{
	/* a small cache makes write-back interleave with the workload */
	setenv("CHUNKFS_CACHE_KB", "96", 0);
	setup();
	TEST_RUN(test_crash_idle_every_write);
	TEST_RUN(test_crash_scrub_lazy);
	free(pristine);
	return TEST_DONE();
}

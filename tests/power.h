/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Power cuts at every write, in the spirit of littlefs's reentrant tests:
 * a workload runs on the fault-injecting device from a pristine image, the
 * power is cut after its k-th write for every k (the unflushed writes
 * dropped, or a seeded random subset kept), and the image that survived is
 * handed to a verify function.
 *
 *   each_power_cut(&pc, workload, verify, arg)   every cut of the workload
 *   power_cut_at(&pc, k, keep, seed, ...)         one cut
 *   power_cut_recover(k, path, &stats)            what the boot after a
 *       crash does: fsck -p must repair everything by itself; then a forced
 *       fsck -y finds nothing, cfs_check agrees, every chunk is clean and no
 *       chunk clean at the cut was changed (POWER_CHECK_ESCALATIONS: and
 *       only a rebuilt directory tree escalated the check).  Returns the image
 *       opened read-only for the workload's own checks (fsync'ed data).
 *
 * For unit tests (uses test.h); #include after it. */
#ifndef CHUNKFS_TEST_POWER_H
#define CHUNKFS_TEST_POWER_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bdev.h"
#include "chunkfs.h"
#include "fixture.h"
#include "test.h"

struct power_cut {
	const uint8_t *image;   /* the pristine image every run starts from */
	size_t size;
	uint32_t bsize;
	char path[96];          /* where the crashed image is saved */
};

/* The workload returns at its first error (the power cut); it must set up
 * whatever arg holds for verify itself, as it runs once per cut. */
typedef void (*power_workload_t)(struct cfs_fs *fs, void *arg);
typedef void (*power_verify_t)(int64_t cut, const char *path, void *arg);

struct power_stats {
	int64_t cuts, repaired, escalated;
	/* escalations where fsck -p rebuilt a directory tree: a crash during
	 * a split losing entries made since, or damage, which the checker
	 * cannot tell apart (src/fsck/step_b.c check_dir) */
	int64_t escalated_tree;
};

/* A crash leaves only the chunks it was writing to be checked, but for
 * entries lost from a directory tree it had to rebuild. */
#define POWER_CHECK_ESCALATIONS(st) CHECK_EQ((st).escalated, (st).escalated_tree)

static inline void power_cut_init(struct power_cut *pc, const uint8_t *image, size_t size,
				  uint32_t bsize, const char *tag)
{
	pc->image = image;
	pc->size = size;
	pc->bsize = bsize;
	/* tmpfs when there is one: fsck's fdatasync is then cheap */
	snprintf(pc->path, sizeof(pc->path), "%s/cfs_%s_%d.img",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", tag, (int)getpid());
}

/* The pristine image a test's cuts start from: o's mkfs on a fault device
 * of size bytes, copied out (the caller frees it). */
static inline uint8_t *power_pristine(size_t size, const struct cfs_mkfs_opts *o)
{
	struct cfs_bdev *bd;
	uint64_t got;
	uint8_t *image = malloc(size);

	CHECK(image);
	CHECK_OK(cfs_bdev_fault_create(size, o->block_size, &bd));
	CHECK_OK(cfs_mkfs_bdev(bd, o));
	memcpy(image, cfs_bdev_fault_bytes(bd, &got), size);
	cfs_bdev_destroy(bd);
	return image;
}

static inline struct cfs_fs *power_open(const struct power_cut *pc, struct cfs_bdev **bdp,
					const struct cfs_bdev_fault_cfg *cfg)
{
	struct cfs_fs *fs;

	CHECK_OK(fixture_image_dev(pc->image, pc->size, pc->bsize, bdp));
	cfs_bdev_fault_config(*bdp, cfg);
	CHECK_OK(cfs_open_bdev(*bdp, 0, &fs));
	return fs;
}

/* How many writes the whole workload does, uncut. */
static inline int64_t power_cut_count(const struct power_cut *pc, power_workload_t w,
				      void *arg)
{
	struct cfs_bdev_fault_cfg cfg = { 0 };
	struct cfs_bdev_fault_stats st;
	struct cfs_bdev *bd;
	struct cfs_fs *fs = power_open(pc, &bd, &cfg);

	w(fs, arg);
	cfs_bdev_fault_stats(bd, &st);
	CHECK_OK(cfs_close(fs));
	return st.writes;
}

static inline void power_cut_at(const struct power_cut *pc, int64_t k, double keep,
				uint64_t seed, power_workload_t w, power_verify_t v, void *arg)
{
	struct cfs_bdev_fault_cfg cfg = { .power_cut_at = k, .keep_prob = keep, .seed = seed };
	struct cfs_bdev *bd;
	struct cfs_fs *fs = power_open(pc, &bd, &cfg);
	uint64_t size;
	uint8_t *p;
	int fd;

	w(fs, arg);
	/* the power is back: the device now holds what survived */
	cfs_bdev_fault_restore(bd);
	p = cfs_bdev_fault_bytes(bd, &size);
	fd = open(pc->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, p, size), (ssize_t)size);
	close(fd);
	cfs_close(fs);   /* writes into a device nobody reads again */
	v(k, pc->path, arg);
}

/* Every cut: odd k drops every unflushed write, even k keeps a seeded
 * half.  Returns the number of cuts. */
static inline int64_t each_power_cut(const struct power_cut *pc, power_workload_t w,
				     power_verify_t v, void *arg)
{
	int64_t n = power_cut_count(pc, w, arg), k;

	for (k = 1; k <= n; k++)
		power_cut_at(pc, k, k & 1 ? 0.0 : 0.5, (uint64_t)k, w, v, arg);
	return n;
}

static inline void power_report(void *ctx, const char *msg)
{
	if (ctx || getenv("CHUNKFS_CRASH_VERBOSE"))
		fprintf(stderr, "    %s\n", msg);
}

static inline size_t power_file_size(const char *path)
{
	struct stat sb;

	CHECK_OK(stat(path, &sb));
	return (size_t)sb.st_size;
}

static inline void power_read_image(const char *path, uint8_t *dst, size_t size)
{
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0);
	CHECK_EQ(read(fd, dst, size), (ssize_t)size);
	close(fd);
}

/* Chunks clean at the cut must come out of the repair unchanged, apart
 * from their header (the last-check time). */
static inline void power_clean_untouched(int64_t k, const uint8_t *clean,
					 const struct cfs_info *in, const uint8_t *before,
					 const uint8_t *after)
{
	uint32_t c;

	for (c = 0; c < in->chunks; c++) {
		uint64_t from = (in->first_chunk_block + (uint64_t)c * in->chunk_blocks + 1) *
				in->block_size;
		uint64_t len = (in->chunk_blocks - 1) * (uint64_t)in->block_size;

		if (clean[c] && memcmp(before + from, after + from, len))
			TEST_FAIL("cut %lld: fsck changed chunk %u, which was clean", (long long)k, c);
	}
}

/* A directory tree rebuilt in the last power_fsck */
static int power_dir_rebuilt;
/* fsck's worker threads (0: one per CPU); 1 checks the chunks in order */
static int power_threads;

static inline void power_problem(void *ctx, const struct cfs_fsck_problem *p)
{
	(void)ctx;
	power_dir_rebuilt |= !strcmp(p->code, "DIR_INDEX");
}

static inline void power_fsck(struct cfs_fs *fs, int mode, int force, int64_t k,
			      struct cfs_fsck_result *r)
{
	struct cfs_fsck_opts o = { .mode = mode, .force = force, .report = power_report,
				   .ctx = mode == CFS_FSCK_PREEN ? NULL : (void *)1,
				   .problem = power_problem, .threads = power_threads };

	power_dir_rebuilt = 0;
	CHECK_OK(cfs_fsck(fs, &o, r));
	(void)k;
}

static inline struct cfs_fs *power_cut_recover(int64_t k, const char *path,
					       struct power_stats *st)
{
	struct cfs_fsck_result r;
	struct cfs_info in;
	struct cfs_fs *fs;
	uint8_t clean[256] = { 0 }, *before, *after;
	uint32_t c;
	size_t size;
	int problems;

	if (getenv("CHUNKFS_CRASH_VERBOSE"))
		fprintf(stderr, "  cut %lld:\n", (long long)k);
	CHECK_OK(cfs_open(path, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs));
	CHECK_OK(cfs_get_info(fs, &in));
	for (c = 0; c < in.chunks && c < 256; c++) {
		struct cfs_chunk_info ci;

		CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
		clean[c] = ci.state == CFS_CHUNK_CLEAN;
	}
	CHECK_OK(cfs_close(fs));
	size = power_file_size(path);
	before = malloc(size);
	after = malloc(size);
	CHECK(before && after);
	power_read_image(path, before, size);
	/* the boot after the crash: preen, with nobody to ask */
	CHECK_OK(cfs_open(path, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs));
	power_fsck(fs, CFS_FSCK_PREEN, 0, k, &r);
	if (r.unfixed)
		TEST_FAIL("cut %lld: fsck -p left %llu problems for a person", (long long)k,
			  (unsigned long long)r.unfixed);
	st->cuts++;
	st->repaired += r.fixed > 0;
	st->escalated += r.escalated;
	st->escalated_tree += r.escalated && power_dir_rebuilt;
	CHECK_OK(cfs_close(fs));
	power_read_image(path, after, size);
	power_clean_untouched(k, clean, &in, before, after);
	free(before);
	free(after);
	/* then a forced repair only proves nothing is left */
	CHECK_OK(cfs_open(path, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs));
	power_fsck(fs, CFS_FSCK_YES, 1, k, &r);
	if (r.problems)
		TEST_FAIL("cut %lld: fsck -y -f after fsck -p found %llu problems", (long long)k,
			  (unsigned long long)r.problems);
	CHECK_OK(cfs_close(fs));
	CHECK_OK(cfs_open(path, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs));
	problems = cfs_check(fs, power_report, (void *)1);
	if (problems)
		TEST_FAIL("cut %lld: cfs_check found %d problems", (long long)k, problems);
	for (c = 0; c < in.chunks; c++) {
		struct cfs_chunk_info ci;

		CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
		CHECK_EQ(ci.state, CFS_CHUNK_CLEAN);
	}
	return fs;
}

#endif

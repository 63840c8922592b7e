/* SPDX-License-Identifier: GPL-2.0-or-later */
/* test-timeout: 1800 (tests/run.sh): every write of four workloads */
/* Crash at every write point (tests/power.h): each workload runs on the
 * fault-injecting device, power is cut after write k for every k (unflushed
 * writes dropped, or a seeded random subset kept), and then, as at the boot
 * after a crash:
 *  - fsck -p alone repairs everything (nothing left for a person),
 *  - a forced fsck -y afterwards finds nothing,
 *  - the library's own consistency check agrees, every chunk is clean,
 *  - every chunk that was clean at the cut needed no change,
 *  - no cut made the check go on to every chunk, but after rebuilding a
 *    directory tree (POWER_CHECK_ESCALATIONS),
 *  - every file whose fsync returned reads back exactly. */
#include <stdint.h>
#include <sys/stat.h>

#include "test.h"
#include "power.h"
#include "fsint.h"

#define IMG_SIZE  (3u << 20)
#define BSIZE     1024

static uint8_t *pristine, *pristine_cl;
static struct power_stats stats;

struct durable {
	const char *name;
	size_t len;
	unsigned seed;
	cfs_ino_t dir;
	int valid;
};

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 2654435761u + seed) >> 11);
}

/* Workload 1: files small and bigger than a chunk (continuations), an
 * fsync, then links, renames across directories, an xattr, a truncate and
 * unlinks.  Returns after the first error (the power cut). */
static void files_workload(struct cfs_fs *fs, void *arg)
{
	static uint8_t buf[700000];
	struct durable *dur = arg;
	cfs_ino_t a, b, c, f, g, h;
	char name[32];
	int i;

	memset(dur, 0, sizeof(*dur));
	if (cfs_mkdir(fs, CFS_ROOT_INO, "a", 0755, 0, 0, &a) < 0 ||
	    cfs_mkdir(fs, CFS_ROOT_INO, "b", 0755, 0, 0, &b) < 0 ||
	    cfs_mkdir(fs, a, "c", 0755, 0, 0, &c) < 0)
		return;
	for (i = 0; i < 12; i++) {
		if (i == 6 && cfs_sync(fs) < 0)
			return;
		snprintf(name, sizeof(name), "small%d", i);
		if (cfs_mknod(fs, i & 1 ? b : a, name, S_IFREG | 0644, 0, 0, 0, &f) < 0)
			return;
		fill(buf, 40 + i * 300, (unsigned)i);
		if (cfs_write(fs, f, buf, 40 + i * 300, 0) < 0)
			return;
	}
	/* bigger than a chunk: continues into others */
	if (cfs_mknod(fs, c, "big", S_IFREG | 0644, 0, 0, 0, &g) < 0)
		return;
	fill(buf, sizeof(buf), 99);
	/* the first half in one call (whole blocks go straight to the device),
	 * the rest in unaligned pieces: partial blocks go through the cache
	 * and push metadata out of it, so write-back interleaves with the
	 * workload */
	if (cfs_write(fs, g, buf, sizeof(buf) / 2, 0) < 0)
		return;
	for (size_t off = sizeof(buf) / 2; off < sizeof(buf); off += 1001) {
		size_t n = sizeof(buf) - off < 1001 ? sizeof(buf) - off : 1001;

		if (cfs_write(fs, g, buf + off, n, off) < 0)
			return;
	}
	if (cfs_mknod(fs, b, "synced", S_IFREG | 0600, 0, 0, 0, &h) < 0)
		return;
	fill(buf, 5000, 7);
	if (cfs_write(fs, h, buf, 5000, 0) < 0 || cfs_fsync(fs, h, 0) < 0)
		return;
	dur->name = "synced";
	dur->len = 5000;
	dur->seed = 7;
	dur->dir = b;
	dur->valid = 1;
	if (cfs_link(fs, g, b, "big-link") < 0 ||
	    cfs_rename(fs, a, "small0", b, "moved0", 0) < 0 ||
	    cfs_rename(fs, CFS_ROOT_INO, "a", b, "a-moved", 0) < 0 ||
	    cfs_setxattr(fs, g, "user.k", "v", 1, 0) < 0 ||
	    cfs_unlink(fs, b, "small1") < 0)
		return;
	struct cfs_setattr sa = { .valid = CFS_SET_SIZE, .size = 3000 };
	if (cfs_setattr(fs, g, &sa, NULL) < 0)
		return;
	for (i = 2; i < 12; i += 2) {
		snprintf(name, sizeof(name), "small%d", i);
		if (cfs_unlink(fs, c == 0 ? b : a, name) < 0)
			return;
	}
	cfs_sync(fs);
}

/* The fsync'ed file of a workload reads back exactly. */
static void durable_verify(int64_t k, struct cfs_fs *fs, const struct durable *dur)
{
	static uint8_t want[8192], got[8192];
	cfs_ino_t f;

	if (!dur->valid)
		return;
	fill(want, dur->len, dur->seed);
	if (cfs_lookup(fs, dur->dir, dur->name, &f) < 0)
		TEST_FAIL("cut %lld: fsync'd file %s lost", (long long)k, dur->name);
	CHECK_EQ(cfs_read(fs, f, got, sizeof(got), 0), (ssize_t)dur->len);
	if (memcmp(got, want, dur->len))
		TEST_FAIL("cut %lld: fsync'd file %s differs", (long long)k, dur->name);
}

static void verify(int64_t k, const char *path, void *arg)
{
	struct cfs_fs *fs = power_cut_recover(k, path, &stats);

	durable_verify(k, fs, arg);
	CHECK_OK(cfs_close(fs));
}

/* Workload 2: directories whose B+trees split (a leaf holds a few dozen
 * names of 1 KiB blocks) while names come, go and move between
 * directories of different chunks: entries with back-reference stubs, an
 * index over several leaves, directories renamed and removed. */
static void dirs_workload(struct cfs_fs *fs, void *arg)
{
	struct durable *dur = arg;
	cfs_ino_t top[3], f, sub;
	char name[64], other[64];
	int i;

	memset(dur, 0, sizeof(*dur));
	for (i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "top%d", i);
		if (cfs_mkdir(fs, CFS_ROOT_INO, name, 0755, 0, 0, &top[i]) < 0)
			return;
	}
	for (i = 0; i < 150; i++) {
		snprintf(name, sizeof(name), "entry-with-a-longer-name-%03d", i);
		if (cfs_mknod(fs, top[i % 3], name, S_IFREG | 0644, 0, 0, 0, &f) < 0)
			return;
		if (i % 5 == 0 && cfs_write(fs, f, name, strlen(name), 0) < 0)
			return;
		if (i == 62) {   /* neither moved nor removed below */
			if (cfs_fsync(fs, f, 0) < 0 || cfs_fsync(fs, top[2], 0) < 0)
				return;
			dur->name = "entry-with-a-longer-name-062";
			dur->len = 0;
			dur->dir = top[2];
			dur->valid = 1;
		}
	}
	if (cfs_mkdir(fs, top[1], "sub", 0755, 0, 0, &sub) < 0)
		return;
	/* names move into the other top directories (other chunks) */
	for (i = 0; i < 150; i += 4) {
		snprintf(name, sizeof(name), "entry-with-a-longer-name-%03d", i);
		snprintf(other, sizeof(other), "moved-%03d", i);
		if (cfs_rename(fs, top[i % 3], name, i % 8 ? top[(i + 1) % 3] : sub, other, 0) < 0)
			return;
	}
	if (cfs_rename(fs, top[1], "sub", top[2], "sub-moved", 0) < 0)
		return;
	for (i = 1; i < 150; i += 3) {
		snprintf(name, sizeof(name), "entry-with-a-longer-name-%03d", i);
		if (i % 4 && cfs_unlink(fs, top[i % 3], name) < 0)
			return;
	}
	cfs_sync(fs);
}

/* Remove every entry of dir (and of the directories in it, one level)
 * but keep; 0 or the first error. */
static int empty_dir(struct cfs_fs *fs, cfs_ino_t dir, const char *keep,
		     struct fixture_ents *e, int depth)
{
	cfs_ino_t sub;
	int i, n, ret;

	ret = fixture_readdir(fs, dir, 0, e);
	n = e->n;
	for (i = 0; ret >= 0 && i < n; i++) {
		char name[CFS_NAME_MAX + 1];

		snprintf(name, sizeof(name), "%s", e->name[i]);
		if (keep && !strcmp(name, keep))
			continue;
		ret = cfs_unlink(fs, dir, name);
		if (ret == -EISDIR && depth == 0 && cfs_lookup(fs, dir, name, &sub) == 0) {
			ret = empty_dir(fs, sub, NULL, e, 1);
			if (ret >= 0)
				ret = cfs_rmdir(fs, dir, name);
			if (ret >= 0)
				ret = fixture_readdir(fs, dir, 0, e);   /* e was reused */
			n = e->n;
			i = -1;
		}
	}
	return ret < 0 ? ret : 0;
}

/* The directory workload's top directories emptied, but for the
 * fsync'ed name; 0 or the first error. */
static int empty_tops(struct cfs_fs *fs, const struct durable *dur, struct fixture_ents *e)
{
	cfs_ino_t top;
	char name[16];
	int t, ret = 0;

	for (t = 0; ret == 0 && t < 3; t++) {
		snprintf(name, sizeof(name), "top%d", t);
		ret = cfs_lookup(fs, CFS_ROOT_INO, name, &top);
		if (ret == 0)
			ret = empty_dir(fs, top, t == 2 && dur->valid ? dur->name : NULL, e, 0);
	}
	return ret < 0 ? ret : 0;
}

/* Workload 3, on the image of 16-inode tables: the directory workload
 * (its chunks make inode clusters), then every name removed but the
 * fsync'ed one and a sync, which gives the emptied clusters back. */
static void clusters_workload(struct cfs_fs *fs, void *arg)
{
	struct fixture_ents *e = fixture_ents_new(FIXTURE_MAX_ENTS, 1);

	dirs_workload(fs, arg);
	if (e && empty_tops(fs, arg, e) == 0)
		cfs_sync(fs);
	free(e);
}

/* What the uncut reuse workload saw: clusters before and after the idle
 * checkpoint, blocks of empty clusters before the fill and after it. */
static struct {
	uint64_t before_idle, after_idle, spare_before_fill, spare_after_fill;
} reuse_seen;

static uint64_t clusters_now(struct cfs_fs *fs)
{
	struct cfs_chunk_info ci;
	uint64_t n = 0;

	for (uint32_t c = 0; cfs_get_chunk_info(fs, c, &ci) == 0; c++)
		n += ci.clusters;
	return n;
}

static uint64_t spare_now(struct cfs_fs *fs)
{
	uint64_t n = 0;

	for (uint32_t c = 0; c < fs->sb.nchunks; c++)
		n += chunk_clusters_spare(fs, c);
	return n;
}

/* Workload 4 (issue 25 item 5), on the image of 16-inode tables: the
 * directory workload, every name removed but the fsync'ed one, and the
 * idle checkpoint (the mount's clean_after), which gives the emptied
 * clusters back and marks the chunks clean; then more files, in new
 * clusters on those blocks, all removed again without a sync (in the
 * root: an orphan a cut leaves goes to /lost+found, in the root's chunk,
 * which must not be one the checkpoint left clean), and a file
 * written until the image is full: at -ENOSPC it takes the blocks of the
 * clusters just emptied (fs_space_back: a sync, then the write again). */
static void clusters_reuse_workload(struct cfs_fs *fs, void *arg)
{
	static uint8_t buf[16384];
	struct fixture_ents *e = fixture_ents_new(FIXTURE_MAX_ENTS, 1);
	cfs_ino_t f;
	char name[16];
	uint64_t off = 0;
	ssize_t w;
	int t;

	dirs_workload(fs, arg);
	if (!e || empty_tops(fs, arg, e) < 0)
		goto out;
	reuse_seen.before_idle = clusters_now(fs);
	if (cfs_clean_idle(fs, 0) < 0)
		goto out;
	reuse_seen.after_idle = clusters_now(fs);
	for (t = 0; t < 2 * 150; t++) {
		snprintf(name, sizeof(name), "n%03d", t % 150);
		if ((t < 150 ? cfs_mknod(fs, CFS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 0, &f) :
			       cfs_unlink(fs, CFS_ROOT_INO, name)) < 0)
			goto out;
	}
	reuse_seen.spare_before_fill = spare_now(fs);
	if (cfs_mknod(fs, CFS_ROOT_INO, "fill", S_IFREG | 0644, 0, 0, 0, &f) < 0)
		goto out;
	fill(buf, sizeof(buf), 5);
	do {
		w = cfs_write(fs, f, buf, sizeof(buf), off);
		off += w > 0 ? (uint64_t)w : 0;
	} while (w == (ssize_t)sizeof(buf));
	if (w < 0 && w != -ENOSPC)
		goto out;
	reuse_seen.spare_after_fill = spare_now(fs);
	cfs_sync(fs);
out:
	free(e);
}

static uint8_t *pristine_make(uint64_t inodes)
{
	struct cfs_mkfs_opts o = { .block_size = BSIZE, .chunks = 6, .inodes = inodes };

	return power_pristine(IMG_SIZE, &o);
}

/* The second image has inode tables of 16 inodes a chunk: the directory
 * workload's chunks make inode clusters (FORMAT.md 10.4) as they fill. */
static void setup(void)
{
	pristine = pristine_make(600);
	pristine_cl = pristine_make(96);
}

static void every_cut_on(const uint8_t *img, const char *what, power_workload_t w)
{
	struct power_cut pc;
	struct durable dur;
	int64_t n;

	power_cut_init(&pc, img, IMG_SIZE, BSIZE, "crash");
	memset(&stats, 0, sizeof(stats));
	n = each_power_cut(&pc, w, verify, &dur);
	printf("crash: %s: %lld cut points (odd: unflushed writes dropped, even: a seeded "
	       "half kept), each repaired by fsck -p alone: %lld needed repairs, %lld "
	       "escalated to all chunks (%lld after a directory tree was rebuilt)\n", what,
	       (long long)n, (long long)stats.repaired, (long long)stats.escalated,
	       (long long)stats.escalated_tree);
	unlink(pc.path);
	POWER_CHECK_ESCALATIONS(stats);
}

static void every_cut(const char *what, power_workload_t w)
{
	every_cut_on(pristine, what, w);
}

static void test_crash_every_write(void)
{
	every_cut("files", files_workload);
}

static void test_crash_every_write_dirs(void)
{
	every_cut("directories", dirs_workload);
}

/* Every cut while chunks make inode clusters: the map block written and
 * flushed before the header naming it, the cluster zeroed and flushed
 * before its record; fsck -p must repair whatever a cut leaves. */
static void test_crash_every_write_clusters(void)
{
	struct cfs_bdev *dev;
	struct cfs_fs *fs;
	struct cfs_chunk_info ci;
	struct durable dur;
	uint32_t c;
	uint64_t n = 0;

	/* uncut, the directory workload makes clusters, and the whole
	 * workload gives back all but the one the fsync'ed file keeps */
	for (int pass = 0; pass < 2; pass++) {
		uint64_t was = n;

		CHECK_OK(fixture_image_dev(pristine_cl, IMG_SIZE, BSIZE, &dev));
		CHECK_OK(fixture_open(dev, 0, &fs));
		(pass ? clusters_workload : dirs_workload)(fs, &dur);
		CHECK(dur.valid);
		for (c = 0, n = 0; cfs_get_chunk_info(fs, c, &ci) == 0; c++)
			n += ci.clusters;
		CHECK(pass ? n <= 1 && n < was : n >= 2);
		CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
		CHECK_OK(cfs_close(fs));
		cfs_bdev_destroy(dev);
	}
	every_cut_on(pristine_cl, "inode clusters made and given back", clusters_workload);
}

/* Every cut while emptied clusters are given back by the idle checkpoint
 * and at -ENOSPC, and a file takes their blocks at once: the map says
 * they are gone on disk before a byte of the file is there, so no cut
 * leaves a listed cluster holding file data. */
static void test_crash_every_write_cluster_reuse(void)
{
	struct cfs_bdev *dev;
	struct cfs_fs *fs;
	struct durable dur;

	CHECK_OK(fixture_image_dev(pristine_cl, IMG_SIZE, BSIZE, &dev));
	CHECK_OK(fixture_open(dev, 0, &fs));
	clusters_reuse_workload(fs, &dur);
	CHECK(dur.valid);
	CHECK(reuse_seen.after_idle < reuse_seen.before_idle);
	CHECK(reuse_seen.spare_before_fill > 0);
	CHECK_EQ(reuse_seen.spare_after_fill, 0u);
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(dev);
	every_cut_on(pristine_cl, "emptied clusters given back while in use", clusters_reuse_workload);
}

static void test_crash_random_subset(void)
{
	uint64_t seed = getenv("CHUNKFS_CRASH_SEED") ? strtoull(getenv("CHUNKFS_CRASH_SEED"), 0, 0)
						    : 20261203;
	const char *e = getenv("CHUNKFS_CRASH_ROUNDS");
	int64_t n = e ? atoll(e) : 50, i, w1, w2;
	struct power_cut pc;
	struct durable dur;

	power_cut_init(&pc, pristine, IMG_SIZE, BSIZE, "crash");
	w1 = power_cut_count(&pc, files_workload, &dur);
	w2 = power_cut_count(&pc, dirs_workload, &dur);
	printf("crash: seed %llu, %lld random cut points keeping a random half\n",
	       (unsigned long long)seed, (long long)n);
	memset(&stats, 0, sizeof(stats));
	srandom((unsigned)seed);
	for (i = 0; i < n; i++) {
		int dirs = random() % 2;

		power_cut_at(&pc, 1 + random() % (dirs ? w2 : w1), 0.5, seed + (uint64_t)i,
			     dirs ? dirs_workload : files_workload, verify, &dur);
	}
	printf("crash: %lld crash points covered (random subsets kept), %lld escalated to all "
	       "chunks (%lld after a directory tree was rebuilt)\n", (long long)n,
	       (long long)stats.escalated, (long long)stats.escalated_tree);
	unlink(pc.path);
	POWER_CHECK_ESCALATIONS(stats);
}

int main(void)
{
	/* a small cache makes write-back interleave with the workload */
	setenv("CHUNKFS_CACHE_KB", "96", 0);
	setup();
	TEST_RUN(test_crash_every_write);
	TEST_RUN(test_crash_every_write_dirs);
	TEST_RUN(test_crash_every_write_clusters);
	TEST_RUN(test_crash_every_write_cluster_reuse);
	TEST_RUN(test_crash_random_subset);
	free(pristine);
	free(pristine_cl);
	return TEST_DONE();
}

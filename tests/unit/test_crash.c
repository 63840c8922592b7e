/* Crash at every write point: a scripted workload runs on the
 * fault-injecting device, power is cut after write k for every k (unflushed
 * writes dropped, or a seeded random subset kept), and then:
 *  - fsck -y ends with nothing left unfixed,
 *  - a forced read-only fsck afterwards finds nothing,
 *  - the library's own consistency check agrees,
 *  - every file whose fsync returned reads back exactly,
 *  - every chunk that was clean at the cut needed no change. */
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bdev.h"
#include "chunkfs.h"
#include "fixture.h"
#include "test.h"

#define IMG_SIZE  (3u << 20)
#define BSIZE     1024

static uint8_t *pristine;
static char path[96];
static int verbose;
static int64_t n_repaired, n_escalated;
static uint8_t before[IMG_SIZE], after[IMG_SIZE];

static void read_image(uint8_t *dst)
{
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0);
	CHECK_EQ(read(fd, dst, IMG_SIZE), IMG_SIZE);
	close(fd);
}

/* A chunk that was clean at the cut must come out of fsck unchanged,
 * apart from its header (last-check time). */
static void check_clean_untouched(int64_t k, const uint8_t *clean, const struct cfs_info *in)
{
	uint32_t c;

	for (c = 0; c < in->chunks; c++) {
		uint64_t from = (in->first_chunk_block + (uint64_t)c * in->chunk_blocks + 1) * BSIZE;
		uint64_t len = (in->chunk_blocks - 1) * BSIZE;

		if (clean[c] && memcmp(before + from, after + from, len))
			TEST_FAIL("cut %lld: fsck changed chunk %u, which was clean", (long long)k, c);
	}
}

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

/* The workload: returns after the first error (the power cut). */
static void workload(struct cfs_fs *fs, struct durable *dur)
{
	static uint8_t buf[700000];
	cfs_ino_t a, b, c, f, g, h;
	char name[32];
	int i;

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

static struct cfs_bdev *fresh_dev(void)
{
	struct cfs_bdev *bd;

	CHECK_OK(fixture_image_dev(pristine, IMG_SIZE, BSIZE, &bd));
	return bd;
}

static void save_bytes(struct cfs_bdev *bd)
{
	uint64_t size;
	uint8_t *p = cfs_bdev_fault_bytes(bd, &size);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	CHECK(fd >= 0);
	CHECK_EQ(write(fd, p, size), (ssize_t)size);
	close(fd);
}

static void report(void *ctx, const char *msg)
{
	if (verbose || ctx)
		fprintf(stderr, "    %s\n", msg);
}

static int64_t count_writes(void)
{
	struct cfs_bdev_fault_stats st;
	struct cfs_bdev *bd = fresh_dev();
	struct cfs_bdev_fault_cfg cfg = { 0 };
	struct durable dur = { 0 };
	struct cfs_fs *fs;

	cfs_bdev_fault_config(bd, &cfg);
	CHECK_OK(cfs_open_bdev(bd, 0, &fs));
	workload(fs, &dur);
	CHECK(dur.valid);
	cfs_bdev_fault_stats(bd, &st);
	CHECK_OK(cfs_close(fs));
	return st.writes;
}

/* Everything after the cut, on the crashed image saved in path. */
static void verify_after_crash(int64_t k, const struct durable *dur)
{
	struct cfs_fsck_opts o = { .mode = CFS_FSCK_YES, .report = report };
	struct cfs_fsck_result r;
	struct cfs_fs *fs;
	uint8_t clean[256] = { 0 };
	struct cfs_info in;
	uint32_t c;
	int problems;

	CHECK_OK(cfs_open(path, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs));
	CHECK_OK(cfs_get_info(fs, &in));
	for (c = 0; c < in.chunks; c++) {
		struct cfs_chunk_info ci;

		CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
		clean[c] = ci.state == CFS_CHUNK_CLEAN;
	}
	CHECK_OK(cfs_close(fs));
	read_image(before);
	CHECK_OK(cfs_open(path, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs));
	CHECK_OK(cfs_fsck(fs, &o, &r));
	if (r.unfixed)
		TEST_FAIL("cut %lld: fsck left %llu problems", (long long)k,
			  (unsigned long long)r.unfixed);
	n_repaired += r.fixed > 0;
	n_escalated += r.escalated;
	CHECK_OK(cfs_close(fs));
	read_image(after);
	check_clean_untouched(k, clean, &in);
	/* second, forced and read-only: must find nothing at all */
	o.mode = CFS_FSCK_NO;
	o.force = 1;
	o.ctx = (void *)1;
	CHECK_OK(cfs_open(path, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs));
	CHECK_OK(cfs_fsck(fs, &o, &r));
	if (r.problems)
		TEST_FAIL("cut %lld: second fsck found %llu problems", (long long)k,
			  (unsigned long long)r.problems);
	problems = cfs_check(fs, report, (void *)1);
	if (problems)
		TEST_FAIL("cut %lld: cfs_check found %d problems", (long long)k, problems);
	for (c = 0; c < in.chunks; c++) {
		struct cfs_chunk_info ci;

		CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
		CHECK_EQ(ci.state, CFS_CHUNK_CLEAN);
	}
	if (dur->valid) {
		static uint8_t want[8192], got[8192];
		cfs_ino_t f;

		fill(want, dur->len, dur->seed);
		if (cfs_lookup(fs, dur->dir, dur->name, &f) < 0)
			TEST_FAIL("cut %lld: fsync'd file lost", (long long)k);
		CHECK_EQ(cfs_read(fs, f, got, sizeof(got), 0), (ssize_t)dur->len);
		if (memcmp(got, want, dur->len))
			TEST_FAIL("cut %lld: fsync'd file differs", (long long)k);
	}
	CHECK_OK(cfs_close(fs));
}

static void crash_at(int64_t k, double keep, uint64_t seed)
{
	struct cfs_bdev *bd = fresh_dev();
	struct cfs_bdev_fault_cfg cfg = { .power_cut_at = k, .keep_prob = keep, .seed = seed };
	struct durable dur = { 0 };
	struct cfs_fs *fs;

	cfs_bdev_fault_config(bd, &cfg);
	CHECK_OK(cfs_open_bdev(bd, 0, &fs));
	workload(fs, &dur);
	/* the power is back: the device now holds what survived */
	cfs_bdev_fault_restore(bd);
	save_bytes(bd);
	cfs_close(fs);   /* writes into a device nobody reads again */
	verify_after_crash(k, &dur);
}

static void setup(void)
{
	struct cfs_mkfs_opts o = { .block_size = BSIZE, .chunks = 6, .inodes = 600 };
	struct cfs_bdev *bd;
	uint64_t size;

	/* tmpfs when there is one: fsck's fdatasync is then cheap */
	snprintf(path, sizeof(path), "%s/cfs_crash_%d.img",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid());
	CHECK_OK(cfs_bdev_fault_create(IMG_SIZE, BSIZE, &bd));
	CHECK_OK(cfs_mkfs_bdev(bd, &o));
	pristine = malloc(IMG_SIZE);
	memcpy(pristine, cfs_bdev_fault_bytes(bd, &size), IMG_SIZE);
	cfs_bdev_destroy(bd);
}

static void test_crash_every_write(void)
{
	int64_t w, k;

	setup();
	w = count_writes();
	printf("crash: workload does %lld writes; cutting after each\n", (long long)w);
	for (k = 1; k <= w; k++)
		crash_at(k, k & 1 ? 0.0 : 0.5, (uint64_t)k);
	printf("crash: %lld crash points covered (odd k: unflushed writes dropped, even k: "
	       "a seeded half kept): %lld needed repairs, %lld escalated to all chunks\n",
	       (long long)w, (long long)n_repaired, (long long)n_escalated);
}

static void test_crash_random_subset(void)
{
	uint64_t seed = getenv("CHUNKFS_CRASH_SEED") ? strtoull(getenv("CHUNKFS_CRASH_SEED"), 0, 0)
						    : 20261203;
	const char *e = getenv("CHUNKFS_CRASH_ROUNDS");
	int64_t w = count_writes(), i, n = e ? atoll(e) : 50;

	printf("crash: seed %llu, %lld random cut points keeping a random half\n",
	       (unsigned long long)seed, (long long)n);
	srandom((unsigned)seed);
	for (i = 0; i < n; i++)
		crash_at(1 + random() % w, 0.5, seed + (uint64_t)i);
	printf("crash: %lld crash points covered (random subsets kept)\n", (long long)n);
}

int main(void)
{
	verbose = getenv("CHUNKFS_CRASH_VERBOSE") != NULL;
	/* a small cache makes write-back interleave with the workload */
	setenv("CHUNKFS_CACHE_KB", "96", 0);
	TEST_RUN(test_crash_every_write);
	TEST_RUN(test_crash_random_subset);
	unlink(path);
	free(pristine);
	return TEST_DONE();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The move engine (src/move.c): cfs_defrag brings continuations of files
 * and of a directory back into their head's chunk; cfs_evacuate empties
 * a chunk of continuations and says what it could not move; cfs_resize
 * to fewer chunks moves the last chunks' continuations out and drops
 * them, or refuses (a directory living there, data that does not fit).  Each
 * with every file's bytes and every name compared, and cfs_check clean;
 * and a power cut at every write of a defrag and of a shrink
 * (tests/power.h): fsck -p repairs alone, every file intact. */
#include <stdint.h>
#include <sys/stat.h>

#include "test.h"
#include "power.h"

#define BSIZE   1024
#define SIZE    (1u << 20)      /* 4 chunks of 255 blocks */
#define NCHUNK  4
#define NFILES  4
#define PIECE   5000            /* appended to each file per round */
#define ROUNDS  40
#define NNAMES  40              /* long names in directory "d" */

static uint8_t *fragmented;     /* the image every test starts from */
static size_t flen[NFILES];

static void file_bytes(uint8_t *p, size_t n, int f)
{
	fixture_fill(p, n, 1000u * (unsigned)f + 17);
}

static void dname(char *buf, size_t n, int i)
{
	snprintf(buf, n, "%03d-%0200d", i, i);
}

static uint64_t conts(struct cfs_fs *fs)
{
	struct cfs_info in;
	uint64_t n = 0;
	uint32_t c;

	CHECK_OK(cfs_get_info(fs, &in));
	for (c = 0; c < in.chunks; c++) {
		struct cfs_chunk_info ci;

		CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
		n += ci.conts;
	}
	return n;
}

/* Files f0..f3 in the root grow in turns, with long names added to d
 * between the turns, until every chunk has taken pieces; then f1 and f3
 * go, so the chunks of f0's and f2's heads have room again. */
static void setup(void)
{
	struct cfs_mkfs_opts o = { .block_size = BSIZE, .chunks = NCHUNK };
	static uint8_t buf[PIECE * ROUNDS];
	struct cfs_bdev *bd;
	struct cfs_fs *fs;
	cfs_ino_t f[NFILES], d, x;
	char name[256];
	uint64_t size;
	int r, i, n = 0;

	CHECK_OK(fixture_mkfs(SIZE, &o, &bd, &fs));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &d));
	for (i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		CHECK_OK(cfs_mknod(fs, CFS_ROOT_INO, name, S_IFREG | 0644, 0, 0, 0, &f[i]));
	}
	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < NFILES; i++) {
			file_bytes(buf, flen[i] + PIECE, i);
			CHECK_EQ(cfs_write(fs, f[i], buf + flen[i], PIECE, flen[i]), PIECE);
			flen[i] += PIECE;
		}
		for (i = 0; i < 2 && n < NNAMES; i++, n++) {
			dname(name, sizeof(name), n);
			CHECK_OK(cfs_mknod(fs, d, name, S_IFREG | 0600, 0, 0, 0, &x));
		}
	}
	CHECK_OK(cfs_unlink(fs, CFS_ROOT_INO, "f1"));
	CHECK_OK(cfs_unlink(fs, CFS_ROOT_INO, "f3"));
	flen[1] = flen[3] = 0;
	CHECK(conts(fs) >= 3);
	CHECK_OK(cfs_close(fs));
	fragmented = malloc(SIZE);
	CHECK(fragmented);
	memcpy(fragmented, cfs_bdev_fault_bytes(bd, &size), SIZE);
	cfs_bdev_destroy(bd);
}

/* Every file's bytes and every name of d as made by setup. */
static void check_files(struct cfs_fs *fs)
{
	static uint8_t want[PIECE * ROUNDS], got[PIECE * ROUNDS];
	struct fixture_ents *e = fixture_ents_new(FIXTURE_MAX_ENTS, 0);
	char name[256];
	cfs_ino_t ino, d;
	int i;

	for (i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		if (!flen[i]) {
			CHECK_ERR(cfs_lookup(fs, CFS_ROOT_INO, name, &ino), ENOENT);
			continue;
		}
		CHECK_OK(cfs_lookup(fs, CFS_ROOT_INO, name, &ino));
		file_bytes(want, flen[i], i);
		CHECK_EQ(cfs_read(fs, ino, got, sizeof(got), 0), (ssize_t)flen[i]);
		if (memcmp(want, got, flen[i]))
			TEST_FAIL("f%d: bytes differ", i);
	}
	CHECK_OK(cfs_lookup(fs, CFS_ROOT_INO, "d", &d));
	for (i = 0; i < NNAMES; i++) {
		dname(name, sizeof(name), i);
		CHECK_OK(cfs_lookup(fs, d, name, &ino));
	}
	CHECK(e);
	CHECK_OK(fixture_readdir(fs, d, 0, e));
	CHECK_EQ(e->n, NNAMES + 2);
	free(e);
}

static struct cfs_fs *open_frag(struct cfs_bdev **bd)
{
	struct cfs_fs *fs;

	CHECK_OK(fixture_image_dev(fragmented, SIZE, BSIZE, bd));
	CHECK_OK(fixture_open(*bd, 0, &fs));
	return fs;
}

static void reopen_check(struct cfs_bdev *bd)
{
	struct cfs_fs *fs;

	CHECK_OK(fixture_open(bd, CFS_OPEN_RDONLY, &fs));
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	check_files(fs);
	CHECK_OK(cfs_close(fs));
}

static void test_defrag(void)
{
	struct cfs_move_result r;
	struct cfs_bdev *bd;
	struct cfs_fs *fs = open_frag(&bd);
	uint64_t before = conts(fs);

	check_files(fs);
	CHECK_OK(cfs_defrag(fs, &r));
	CHECK_EQ(r.conts_before, before);
	CHECK_EQ(r.conts_after, conts(fs));
	CHECK(r.conts_after < before);
	CHECK(r.conts_freed >= before - r.conts_after);
	CHECK(r.blocks > 0);
	check_files(fs);
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	/* nothing left to gain: a second run moves nothing */
	CHECK_OK(cfs_defrag(fs, &r));
	CHECK_EQ(r.conts_before, r.conts_after);
	CHECK_OK(cfs_close(fs));
	reopen_check(bd);
	cfs_bdev_destroy(bd);
}

static int head_chunk_of(struct cfs_fs *fs, const char *name)
{
	cfs_ino_t ino;

	CHECK_OK(cfs_lookup(fs, CFS_ROOT_INO, name, &ino));
	return (int)CFS_INO_CHUNK(ino);
}

/* A chunk with continuations and no head: emptied of them. */
static void test_evacuate(void)
{
	struct cfs_move_result r;
	struct cfs_chunk_info ci;
	struct cfs_bdev *bd;
	struct cfs_fs *fs = open_frag(&bd);
	uint32_t c, target = UINT32_MAX;

	for (c = NCHUNK; c-- > 0 && target == UINT32_MAX;) {
		CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
		if (ci.conts && (int)c != head_chunk_of(fs, "f0") &&
		    (int)c != head_chunk_of(fs, "f2") && (int)c != head_chunk_of(fs, "d"))
			target = c;
	}
	CHECK(target != UINT32_MAX);
	CHECK_OK(cfs_evacuate(fs, target, &r));
	CHECK_OK(cfs_get_chunk_info(fs, target, &ci));
	CHECK_EQ(ci.conts, 0);
	CHECK_EQ(r.left_conts, 0);
	CHECK_EQ(r.left_inodes, 0);
	CHECK_EQ(r.left_blocks, 0);
	CHECK_EQ(ci.free_blocks, ci.blocks);
	check_files(fs);
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	CHECK_ERR(cfs_evacuate(fs, NCHUNK, &r), EINVAL);
	CHECK_OK(cfs_close(fs));
	reopen_check(bd);
	cfs_bdev_destroy(bd);
}

/* The chunk count a shrink can reach: past every chunk holding a head. */
static uint32_t shrink_target(struct cfs_fs *fs)
{
	uint32_t keep = 1;
	int c;

	c = head_chunk_of(fs, "f0");
	keep = (uint32_t)c + 1 > keep ? (uint32_t)c + 1 : keep;
	c = head_chunk_of(fs, "f2");
	keep = (uint32_t)c + 1 > keep ? (uint32_t)c + 1 : keep;
	c = head_chunk_of(fs, "d");
	keep = (uint32_t)c + 1 > keep ? (uint32_t)c + 1 : keep;
	return keep;
}

static uint64_t bytes_for(uint32_t n)
{
	struct cfs_bdev *bd;
	struct cfs_fs *fs;
	struct cfs_info in;

	CHECK_OK(fixture_image_dev(fragmented, SIZE, BSIZE, &bd));
	CHECK_OK(fixture_open(bd, CFS_OPEN_RDONLY, &fs));
	CHECK_OK(cfs_get_info(fs, &in));
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(bd);
	return (2 + (uint64_t)n * in.chunk_blocks) * in.block_size;
}

static void test_shrink(void)
{
	struct cfs_resize_result rr;
	struct cfs_info in;
	struct cfs_bdev *bd;
	struct cfs_fs *fs = open_frag(&bd);
	uint32_t keep = shrink_target(fs);

	CHECK(keep < NCHUNK);
	/* chunk 0 alone cannot take everything: refused, nothing dropped */
	if (keep == 1) {
		CHECK_ERR(cfs_resize(fs, bytes_for(1) - 1, &rr), ENOSPC);
		CHECK_OK(cfs_get_info(fs, &in));
		CHECK_EQ(in.chunks, NCHUNK);
	}
	CHECK_OK(cfs_resize(fs, bytes_for(keep), &rr));
	CHECK_EQ(rr.old_chunks, NCHUNK);
	CHECK_EQ(rr.new_chunks, keep);
	CHECK_OK(cfs_get_info(fs, &in));
	CHECK_EQ(in.chunks, keep);
	CHECK_EQ(in.backup_sb_block, 1 + (uint64_t)keep * in.chunk_blocks);
	check_files(fs);
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	CHECK_OK(cfs_close(fs));
	reopen_check(bd);
	cfs_bdev_destroy(bd);
}

/* A chunk holding a directory's own inode: refused (files' are
 * renumbered, tests/unit/test_renumber.c). */
static void test_shrink_refused(void)
{
	struct cfs_resize_result rr;
	struct cfs_info in;
	struct cfs_bdev *bd;
	struct cfs_fs *fs = open_frag(&bd);
	uint32_t keep = shrink_target(fs);

	if (keep > 1) {
		CHECK_ERR(cfs_resize(fs, bytes_for(keep - 1), &rr), EOPNOTSUPP);
		CHECK(strstr(cfs_last_error(), "inode numbers"));
		CHECK_OK(cfs_get_info(fs, &in));
		CHECK_EQ(in.chunks, NCHUNK);
	}
	CHECK_OK(cfs_close(fs));
	reopen_check(bd);
	cfs_bdev_destroy(bd);
}

/* ---- a power cut at every write ---- */

static struct power_stats stats;

static void defrag_workload(struct cfs_fs *fs, void *arg)
{
	struct cfs_move_result r;

	(void)arg;
	cfs_defrag(fs, &r);
}

static void shrink_workload(struct cfs_fs *fs, void *arg)
{
	struct cfs_resize_result rr;

	cfs_resize(fs, *(uint64_t *)arg, &rr);
}

static void verify(int64_t k, const char *path, void *arg)
{
	struct cfs_fs *fs = power_cut_recover(k, path, &stats);

	(void)arg;
	check_files(fs);
	CHECK_OK(cfs_close(fs));
}

static void test_power_defrag(void)
{
	struct power_cut pc;
	int64_t n;

	memset(&stats, 0, sizeof(stats));
	power_cut_init(&pc, fragmented, SIZE, BSIZE, "move");
	n = each_power_cut(&pc, defrag_workload, verify, NULL);
	fprintf(stderr, "  defrag: %lld cuts, %lld repaired\n", (long long)n,
		(long long)stats.repaired);
	CHECK(n > 10);
	unlink(pc.path);
}

static void test_power_shrink(void)
{
	struct power_cut pc;
	struct cfs_bdev *bd;
	struct cfs_fs *fs = open_frag(&bd);
	uint64_t size = bytes_for(shrink_target(fs));
	int64_t n;

	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(bd);
	memset(&stats, 0, sizeof(stats));
	power_cut_init(&pc, fragmented, SIZE, BSIZE, "shrink");
	n = each_power_cut(&pc, shrink_workload, verify, &size);
	fprintf(stderr, "  shrink: %lld cuts, %lld repaired\n", (long long)n,
		(long long)stats.repaired);
	CHECK(n > 10);
	unlink(pc.path);
}

int main(void)
{
	setup();
	TEST_RUN(test_defrag);
	TEST_RUN(test_evacuate);
	TEST_RUN(test_shrink);
	TEST_RUN(test_shrink_refused);
	TEST_RUN(test_power_defrag);
	TEST_RUN(test_power_shrink);
	free(fragmented);
	return TEST_DONE();
}

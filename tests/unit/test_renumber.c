/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Inode renumbering (src/move.c, docs/MOVE.md): a chunk holding files'
 * own inodes (regular files inline and in extents, one with a
 * continuation, xattrs in the inode and in a block, a symlink, a fifo,
 * hard links from two directories) is evacuated and dropped by a shrink;
 * each file gets a new number outside it, every name follows, bytes,
 * xattrs and link counts unchanged; defrag -i brings files named from
 * one other chunk only into it.  A power cut at every write of the
 * evacuate (tests/power.h): a normal open refuses an image cut in the
 * middle of a renumber and fsck -n reports it, fsck -p alone finishes
 * it, every file is intact at every name.
 * test-timeout: 900 */
#include <stdint.h>
#include <sys/stat.h>

#include "test.h"
#include "power.h"

#define BSIZE   1024
#define SIZE    (1u << 20)      /* 4 chunks of 255 blocks */
#define NCHUNK  4

static uint8_t *pristine;
static uint32_t chunk_b;         /* the chunk of files only, to empty */

/* What setup made: each name, the file it is (same id: hard links). */
static const struct nm {
	const char *dir;        /* "" root, "a" */
	const char *name;
	int id;
} names[] = {
	{ "", "big", 0 }, { "", "big2", 0 }, { "a", "big3", 0 },
	{ "", "small", 1 }, { "a", "small2", 1 },
	{ "a", "cf", 2 },
	{ "", "sl", 3 },
	{ "", "ff", 4 },
};
#define NNAMES (sizeof(names) / sizeof(names[0]))
static const size_t flen[] = { 40000, 20, 60000 };
static const uint32_t nlinks[] = { 3, 2, 1, 1, 1 };
#define TARGET "some/where/else"

static void file_bytes(uint8_t *p, size_t n, int f)
{
	fixture_fill(p, n, 77u * (unsigned)f + 5);
}

static cfs_ino_t dir_of(struct cfs_fs *fs, const char *d)
{
	cfs_ino_t ino = CFS_ROOT_INO;

	if (*d)
		CHECK_OK(cfs_lookup(fs, CFS_ROOT_INO, d, &ino));
	return ino;
}

static void xattr_bytes(uint8_t *p, size_t n)
{
	fixture_fill(p, n, 4242);
}

/* Top-level directories go round the chunks: a in one, b in the last;
 * big, small and cf made in b, so in its chunk, then renamed out and b
 * removed: the last chunk holds files only, named from other chunks.
 * cf grows while a filler fills the chunk, so it continues elsewhere. */
static void setup(void)
{
	struct cfs_mkfs_opts o = { .block_size = BSIZE, .chunks = NCHUNK };
	static uint8_t buf[300000];
	struct cfs_bdev *bd;
	struct cfs_fs *fs;
	cfs_ino_t d[NCHUNK + 2], a = 0, b = 0, ino, f0, f1, f2;
	char name[32];
	uint64_t size;
	int i;

	CHECK_OK(fixture_mkfs(SIZE, &o, &bd, &fs));
	for (i = 0; i < NCHUNK + 2; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, name, 0755, 0, 0, &d[i]));
		if (!b && CFS_INO_CHUNK(d[i]) == NCHUNK - 1)
			b = d[i];
		else if (!a && CFS_INO_CHUNK(d[i]) != 0 && CFS_INO_CHUNK(d[i]) != NCHUNK - 1)
			a = d[i];
	}
	CHECK(a && b);
	for (i = 0; i < NCHUNK + 2; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		if (d[i] == a)
			CHECK_OK(cfs_rename(fs, CFS_ROOT_INO, name, CFS_ROOT_INO, "a", 0));
		else if (d[i] == b)
			CHECK_OK(cfs_rename(fs, CFS_ROOT_INO, name, CFS_ROOT_INO, "b", 0));
		else
			CHECK_OK(cfs_rmdir(fs, CFS_ROOT_INO, name));
	}
	chunk_b = CFS_INO_CHUNK(b);
	CHECK_OK(cfs_mknod(fs, b, "big", S_IFREG | 0640, 0, 1000, 100, &f0));
	file_bytes(buf, flen[0], 0);
	CHECK_EQ(cfs_write(fs, f0, buf, flen[0], 0), (ssize_t)flen[0]);
	xattr_bytes(buf, 600);
	CHECK_OK(cfs_setxattr(fs, f0, "user.big", buf, 600, 0));
	CHECK_OK(cfs_setxattr(fs, f0, "user.s", "v", 1, 0));
	CHECK_OK(cfs_mknod(fs, b, "small", S_IFREG | 0600, 0, 0, 0, &f1));
	file_bytes(buf, flen[1], 1);
	CHECK_EQ(cfs_write(fs, f1, buf, flen[1], 0), (ssize_t)flen[1]);
	CHECK_OK(cfs_setxattr(fs, f1, "user.s", "w", 1, 0));
	CHECK_OK(cfs_mknod(fs, b, "filler", S_IFREG | 0600, 0, 0, 0, &ino));
	CHECK_OK(cfs_mknod(fs, b, "cf", S_IFREG | 0600, 0, 0, 0, &f2));
	file_bytes(buf, flen[2], 2);
	CHECK_EQ(cfs_write(fs, f2, buf, flen[2] / 2, 0), (ssize_t)(flen[2] / 2));
	memset(buf + flen[2], 0, 150000);
	CHECK_EQ(cfs_write(fs, ino, buf + flen[2], 150000, 0), 150000);
	CHECK_EQ(cfs_write(fs, f2, buf + flen[2] / 2, flen[2] / 2, flen[2] / 2),
		 (ssize_t)(flen[2] / 2));
	CHECK_OK(cfs_unlink(fs, b, "filler"));
	CHECK_OK(cfs_symlink(fs, b, "sl", TARGET, 0, 0, &ino));
	CHECK_OK(cfs_mknod(fs, b, "ff", S_IFIFO | 0644, 0, 0, 0, &ino));
	CHECK_OK(cfs_rename(fs, b, "big", CFS_ROOT_INO, "big", 0));
	CHECK_OK(cfs_rename(fs, b, "small", CFS_ROOT_INO, "small", 0));
	CHECK_OK(cfs_rename(fs, b, "cf", a, "cf", 0));
	CHECK_OK(cfs_rename(fs, b, "sl", CFS_ROOT_INO, "sl", 0));
	CHECK_OK(cfs_rename(fs, b, "ff", CFS_ROOT_INO, "ff", 0));
	CHECK_OK(cfs_link(fs, f0, CFS_ROOT_INO, "big2"));
	CHECK_OK(cfs_link(fs, f0, a, "big3"));
	CHECK_OK(cfs_link(fs, f1, a, "small2"));
	CHECK_OK(cfs_rmdir(fs, CFS_ROOT_INO, "b"));
	{
		struct cfs_chunk_info ci;
		uint32_t c, conts = 0;

		for (c = 0; c < NCHUNK; c++) {
			CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
			conts += ci.conts;
		}
		CHECK(conts > 0);      /* cf continues out of its chunk */
	}
	CHECK_OK(cfs_close(fs));
	pristine = malloc(SIZE);
	CHECK(pristine);
	memcpy(pristine, cfs_bdev_fault_bytes(bd, &size), SIZE);
	cfs_bdev_destroy(bd);
}

/* Every name, with its bytes, xattrs, link count; hard links one inode.
 * moved: no number in chunk_b. */
static void check_files(struct cfs_fs *fs, int moved)
{
	static uint8_t want[200000], got[200000];
	cfs_ino_t ids[5] = { 0 };
	struct cfs_stat st;
	size_t i;

	for (i = 0; i < NNAMES; i++) {
		const struct nm *n = &names[i];
		cfs_ino_t ino;
		int id = n->id;

		if (cfs_lookup(fs, dir_of(fs, n->dir), n->name, &ino) < 0)
			TEST_FAIL("%s/%s: %s", n->dir, n->name, cfs_last_error());
		if (ids[id] && ids[id] != ino)
			TEST_FAIL("%s/%s: inode %u, its link names %u", n->dir, n->name, ino,
				  ids[id]);
		ids[id] = ino;
		if (moved && CFS_INO_CHUNK(ino) == chunk_b)
			TEST_FAIL("%s/%s: inode %u still in chunk %u", n->dir, n->name, ino,
				  chunk_b);
		CHECK_OK(cfs_getattr(fs, ino, &st));
		CHECK_EQ(st.ino, ino);
		CHECK_EQ(st.nlink, nlinks[id]);
		if (id <= 2) {
			CHECK(S_ISREG(st.mode));
			file_bytes(want, flen[id], id);
			CHECK_EQ(cfs_read(fs, ino, got, sizeof(got), 0), (ssize_t)flen[id]);
			if (memcmp(want, got, flen[id]))
				TEST_FAIL("%s/%s: bytes differ", n->dir, n->name);
		}
		if (id == 0) {
			CHECK_EQ(st.mode, S_IFREG | 0640);
			CHECK_EQ(st.uid, 1000);
			CHECK_EQ(st.gid, 100);
			xattr_bytes(want, 600);
			CHECK_EQ(cfs_getxattr(fs, ino, "user.big", got, sizeof(got)), 600);
			if (memcmp(want, got, 600))
				TEST_FAIL("big: xattr differs");
			CHECK_EQ(cfs_getxattr(fs, ino, "user.s", got, sizeof(got)), 1);
			CHECK_EQ(got[0], 'v');
		}
		if (id == 1) {
			CHECK_EQ(cfs_getxattr(fs, ino, "user.s", got, sizeof(got)), 1);
			CHECK_EQ(got[0], 'w');
		}
		if (id == 3) {
			CHECK_EQ(cfs_readlink(fs, ino, (char *)got, sizeof(got)),
				 (ssize_t)strlen(TARGET));
			CHECK(!memcmp(got, TARGET, strlen(TARGET)));
		}
		if (id == 4)
			CHECK_EQ(st.mode, S_IFIFO | 0644);
	}
}

static struct cfs_fs *open_pristine(struct cfs_bdev **bd)
{
	struct cfs_fs *fs;

	CHECK_OK(fixture_image_dev(pristine, SIZE, BSIZE, bd));
	CHECK_OK(fixture_open(*bd, 0, &fs));
	return fs;
}

static void reopen_check(struct cfs_bdev *bd)
{
	struct cfs_fs *fs;

	CHECK_OK(fixture_open(bd, CFS_OPEN_RDONLY, &fs));
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	check_files(fs, 1);
	CHECK_OK(cfs_close(fs));
}

static void test_evacuate(void)
{
	struct cfs_move_result r;
	struct cfs_chunk_info ci;
	struct cfs_bdev *bd;
	struct cfs_fs *fs = open_pristine(&bd);

	check_files(fs, 0);
	CHECK_OK(cfs_get_chunk_info(fs, chunk_b, &ci));
	CHECK(ci.xrefs >= 8);
	CHECK_OK(cfs_evacuate(fs, chunk_b, &r));
	CHECK_EQ(r.left_inodes, 0);
	CHECK_EQ(r.left_blocks, 0);
	CHECK(r.files >= 5);
	CHECK_OK(cfs_get_chunk_info(fs, chunk_b, &ci));
	CHECK_EQ(ci.free_blocks, ci.blocks);
	check_files(fs, 1);
	{       /* named from one chunk only: renumbered into it */
		cfs_ino_t a, ino;

		CHECK_OK(cfs_lookup(fs, CFS_ROOT_INO, "a", &a));
		CHECK_OK(cfs_lookup(fs, a, "cf", &ino));
		CHECK_EQ(CFS_INO_CHUNK(ino), CFS_INO_CHUNK(a));
		CHECK_OK(cfs_lookup(fs, CFS_ROOT_INO, "sl", &ino));
		CHECK_EQ(CFS_INO_CHUNK(ino), 0);
	}
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	CHECK_OK(cfs_close(fs));
	reopen_check(bd);
	cfs_bdev_destroy(bd);
}

static uint64_t bytes_for(struct cfs_fs *fs, uint32_t n)
{
	struct cfs_info in;

	CHECK_OK(cfs_get_info(fs, &in));
	return (2 + (uint64_t)n * in.chunk_blocks) * in.block_size;
}

/* The last chunk, of files only, dropped. */
static void test_shrink(void)
{
	struct cfs_resize_result rr;
	struct cfs_info in;
	struct cfs_bdev *bd;
	struct cfs_fs *fs = open_pristine(&bd);

	CHECK_EQ(chunk_b, NCHUNK - 1);
	CHECK_OK(cfs_resize(fs, bytes_for(fs, NCHUNK - 1), &rr));
	CHECK_EQ(rr.new_chunks, NCHUNK - 1);
	CHECK_OK(cfs_get_info(fs, &in));
	CHECK_EQ(in.chunks, NCHUNK - 1);
	check_files(fs, 1);
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	/* a directory's own inode is still refused: a is in a dropped chunk */
	CHECK_ERR(cfs_resize(fs, bytes_for(fs, 1), &rr), EOPNOTSUPP);
	CHECK(strstr(cfs_last_error(), "directories"));
	CHECK_OK(cfs_close(fs));
	reopen_check(bd);
	cfs_bdev_destroy(bd);
}

static uint64_t xrefs(struct cfs_fs *fs)
{
	struct cfs_chunk_info ci;
	uint64_t n = 0;
	uint32_t c;

	for (c = 0; c < NCHUNK; c++) {
		CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
		n += ci.xrefs;
	}
	return n;
}

/* defrag -i: a file whose names are all in one other chunk's directories
 * goes there (cf to a's chunk, sl and ff to the root's); one named from
 * two chunks (big, small) stays. */
static void test_defrag_renumber(void)
{
	struct cfs_move_result r;
	struct cfs_bdev *bd;
	struct cfs_fs *fs = open_pristine(&bd);
	cfs_ino_t a, ino, big;
	uint64_t before = xrefs(fs);

	CHECK_ERR(cfs_defrag_flags(fs, 0x80, &r), EINVAL);
	CHECK_OK(cfs_lookup(fs, CFS_ROOT_INO, "big", &big));
	CHECK_OK(cfs_defrag_flags(fs, CFS_DEFRAG_RENUMBER, &r));
	CHECK(r.files >= 3);
	CHECK_EQ(xrefs(fs), before - 3);
	CHECK_OK(cfs_lookup(fs, CFS_ROOT_INO, "a", &a));
	CHECK_OK(cfs_lookup(fs, a, "cf", &ino));
	CHECK_EQ(CFS_INO_CHUNK(ino), CFS_INO_CHUNK(a));
	CHECK_OK(cfs_lookup(fs, CFS_ROOT_INO, "sl", &ino));
	CHECK_EQ(CFS_INO_CHUNK(ino), 0);
	CHECK_OK(cfs_lookup(fs, CFS_ROOT_INO, "ff", &ino));
	CHECK_EQ(CFS_INO_CHUNK(ino), 0);
	CHECK_OK(cfs_lookup(fs, CFS_ROOT_INO, "big", &ino));
	CHECK_EQ(ino, big);
	check_files(fs, 0);
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	/* nothing left to bring home */
	CHECK_OK(cfs_defrag_flags(fs, CFS_DEFRAG_RENUMBER, &r));
	CHECK_EQ(xrefs(fs), before - 3);
	CHECK_OK(cfs_close(fs));
	CHECK_OK(fixture_open(bd, CFS_OPEN_RDONLY, &fs));
	CHECK_EQ(cfs_check(fs, fixture_report, NULL), 0);
	check_files(fs, 0);
	CHECK_OK(cfs_close(fs));
	cfs_bdev_destroy(bd);
}

/* ---- a power cut at every write ---- */

static struct power_stats stats;
static int64_t refused;

static void evacuate_workload(struct cfs_fs *fs, void *arg)
{
	struct cfs_move_result r;

	(void)arg;
	cfs_evacuate(fs, chunk_b, &r);
}

static int saw_renumber;

static void renumber_problem(void *ctx, const struct cfs_fsck_problem *p)
{
	(void)ctx;
	if (!strcmp(p->code, "RENUMBER") && p->chunk == -1 && !strcmp(p->outcome, "not fixed: -n"))
		saw_renumber = 1;
}

/* fsck -n on an image cut mid-renumber: reports it, changes nothing. */
static void check_readonly_fsck(const char *path)
{
	struct cfs_fsck_opts o = { .struct_size = sizeof(o), .mode = CFS_FSCK_NO,
				   .threads = 1, .problem = renumber_problem };
	struct cfs_fsck_result r = { .struct_size = sizeof(r) };
	struct cfs_fs *fs;

	saw_renumber = 0;
	CHECK_OK(cfs_open(path, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs));
	CHECK_OK(cfs_fsck(fs, &o, &r));
	CHECK(r.unfixed > 0);
	CHECK(saw_renumber);
	CHECK_OK(cfs_close(fs));
}

static void verify(int64_t k, const char *path, void *arg)
{
	struct cfs_fs *fs;
	int ret;

	(void)arg;
	/* cut in the middle of a renumber: only fsck may open it */
	ret = cfs_open(path, CFS_OPEN_RDONLY, &fs);
	if (ret == 0) {
		CHECK_OK(cfs_close(fs));
	} else {
		CHECK_EQ(ret, -EUCLEAN);
		CHECK(strstr(cfs_last_error(), "renumber"));
		refused++;
		if (refused % 16 == 1)
			check_readonly_fsck(path);
	}
	fs = power_cut_recover(k, path, &stats);
	check_files(fs, 0);
	CHECK_OK(cfs_close(fs));
}

static void test_power_evacuate(void)
{
	struct power_cut pc;
	int64_t n;

	memset(&stats, 0, sizeof(stats));
	power_cut_init(&pc, pristine, SIZE, BSIZE, "renum");
	n = each_power_cut(&pc, evacuate_workload, verify, NULL);
	fprintf(stderr, "  evacuate: %lld cuts, %lld repaired, %lld refused mid-renumber\n",
		(long long)n, (long long)stats.repaired, (long long)refused);
	CHECK(n > 10);
	CHECK(refused > 0);
	POWER_CHECK_ESCALATIONS(stats);
	unlink(pc.path);
}

static void defrag_workload(struct cfs_fs *fs, void *arg)
{
	struct cfs_move_result r;

	(void)arg;
	cfs_defrag_flags(fs, CFS_DEFRAG_RENUMBER, &r);
}

static void test_power_defrag_renumber(void)
{
	struct power_cut pc;
	int64_t n;

	memset(&stats, 0, sizeof(stats));
	refused = 0;
	power_cut_init(&pc, pristine, SIZE, BSIZE, "renum-defrag");
	n = each_power_cut(&pc, defrag_workload, verify, NULL);
	fprintf(stderr, "  defrag -i: %lld cuts, %lld repaired, %lld refused mid-renumber\n",
		(long long)n, (long long)stats.repaired, (long long)refused);
	CHECK(n > 10);
	CHECK(refused > 0);
	POWER_CHECK_ESCALATIONS(stats);
	unlink(pc.path);
}

int main(void)
{
	setup();
	TEST_RUN(test_evacuate);
	TEST_RUN(test_shrink);
	TEST_RUN(test_defrag_renumber);
	TEST_RUN(test_power_evacuate);
	TEST_RUN(test_power_defrag_renumber);
	free(pristine);
	return TEST_DONE();
}

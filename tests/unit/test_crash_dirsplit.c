/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Crash at every write while one big directory's B+tree splits again and
 * again (tests/power.h): names that were on disk before the splits began
 * must survive every cut.  A split moves records out of a full node into a
 * new one; if the shrunken node reached the disk before the new node, the
 * index naming it and the directory's block map, the moved names would be
 * in neither node after the crash, and fsck could only take their inodes
 * to lost+found.  Besides the checks of power_cut_recover (fsck -p alone
 * repairs, then nothing is left to repair), every synced name resolves to
 * its own inode in the directory. */
#include <stdint.h>
#include <sys/stat.h>

#include "test.h"
#include "power.h"
#include "btree.h"
#include "fsint.h"

#define IMG_SIZE  (3u << 20)
#define BSIZE     1024
#define SYNCED    48          /* names made, then synced, before the splits */
#define MORE      260         /* names made after them: many more splits */
#define MAP_DOWN  200         /* map_workload: the map's root moves down */
#define MAP_SPLIT 4000        /* ... and its node splits too */

static uint8_t *pristine;
static struct power_stats stats;

struct synced {
	cfs_ino_t dir;
	cfs_ino_t ino[SYNCED];
	int valid;
	int more;               /* map_workload: names after the synced ones */
	/* map_workload, uncut: the directory's map, and the stubs' chunk
	 * before the directory's */
	int map_level, map_nrec, apart;
};

/* Names spread over the whole key range, so later inserts land in the
 * leaves holding the synced names and split them. */
static void name_of(char *buf, size_t n, int i)
{
	snprintf(buf, n, "%08x-name-in-a-big-directory-%d", (unsigned)(i * 2654435761u), i);
}

static void split_workload(struct cfs_fs *fs, void *arg)
{
	struct synced *s = arg;
	cfs_ino_t big, f;
	char name[80];
	int i;

	memset(s, 0, sizeof(*s));
	if (cfs_mkdir(fs, CFS_ROOT_INO, "big", 0755, 0, 0, &big) < 0)
		return;
	for (i = 0; i < SYNCED; i++) {
		name_of(name, sizeof(name), i);
		if (cfs_mknod(fs, big, name, S_IFREG | 0644, 0, 0, 0, &s->ino[i]) < 0)
			return;
	}
	if (cfs_sync(fs) < 0)
		return;
	s->dir = big;
	s->valid = 1;
	for (i = SYNCED; i < SYNCED + MORE; i++) {
		name_of(name, sizeof(name), i);
		if (cfs_mknod(fs, big, name, S_IFREG | 0644, 0, 0, 0, &f) < 0)
			return;
		/* some go again, so leaves also lose records between splits */
		if (i % 7 == 0) {
			name_of(name, sizeof(name), i - 1);
			if (cfs_unlink(fs, big, name) < 0)
				return;
		}
	}
	cfs_sync(fs);
}

/* Workload 2: the directory's block map splits.  Names go in turns to the
 * directory and to a subdirectory of it (same chunk), so each takes the
 * block after the other's last node and new nodes start extents of their
 * own: past three the map's root in the inode moves down into a node
 * block, which later splits.  Had a crash kept the rewritten root or the
 * shrunken node but not the node taking the extents, the leaves they map
 * were lost, and with them names made long before.  The synced names are
 * links to files of another chunk: entries with stubs there, in a chunk
 * marked clean since, which fsck on one thread checks before the
 * directory's, so it judges the stubs while the directory's tree is still
 * as the crash left it.  Later names are links to one file (no inode
 * each). */
static void map_workload(struct cfs_fs *fs, void *arg)
{
	struct synced *s = arg;
	cfs_ino_t big, sub, other, one;
	struct inode *ip;
	struct bt_node root;
	char name[80];
	int i, more = s->more;

	memset(s, 0, sizeof(*s));
	s->more = more;
	if (cfs_mkdir(fs, CFS_ROOT_INO, "other", 0755, 0, 0, &other) < 0 ||
	    cfs_mkdir(fs, CFS_ROOT_INO, "big", 0755, 0, 0, &big) < 0 ||
	    cfs_mkdir(fs, big, "sub", 0755, 0, 0, &sub) < 0 ||
	    cfs_mknod(fs, big, "one", S_IFREG | 0644, 0, 0, 0, &one) < 0)
		return;
	for (i = 0; i < SYNCED + more; i++) {
		if (i == SYNCED) {
			if (cfs_sync(fs) < 0)
				return;
			s->dir = big;
			s->valid = 1;
		}
		name_of(name, sizeof(name), i);
		if (i < SYNCED ? cfs_mknod(fs, other, name, S_IFREG | 0644, 0, 0, 0, &s->ino[i]) < 0 ||
				 cfs_link(fs, s->ino[i], big, name) < 0
			       : cfs_link(fs, one, i & 1 ? sub : big, name) < 0)
			return;
	}
	if (cfs_sync(fs) < 0 || inode_get(fs, big, &ip) < 0)
		return;
	root.hdr = ip->var;
	s->map_level = bt_level(&root);
	s->map_nrec = bt_nrec(&root);
	s->apart = CFS_INO_CHUNK(other) < CFS_INO_CHUNK(big);
	inode_put(fs, ip);
}

static void verify(int64_t k, const char *path, void *arg)
{
	const struct synced *s = arg;
	struct cfs_fs *fs = power_cut_recover(k, path, &stats);
	char name[80];
	cfs_ino_t ino;
	int i;

	for (i = 0; s->valid && i < SYNCED; i++) {
		name_of(name, sizeof(name), i);
		if (cfs_lookup(fs, s->dir, name, &ino) < 0)
			TEST_FAIL("cut %lld: synced name %s lost", (long long)k, name);
		if (ino != s->ino[i])
			TEST_FAIL("cut %lld: synced name %s names inode %llu, not %llu",
				  (long long)k, name, (unsigned long long)ino,
				  (unsigned long long)s->ino[i]);
	}
	CHECK_OK(cfs_close(fs));
}

static void setup(void)
{
	/* a fixed uuid: the name hashes, so the splits, are the same each run */
	static const uint8_t uuid[16] = { 0x20, 0x26, 0x12, 0x03, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	struct cfs_mkfs_opts o = { .block_size = BSIZE, .chunks = 4, .inodes = 600, .uuid = uuid };

	pristine = power_pristine(IMG_SIZE, &o);
}

static void test_crash_dir_splits(void)
{
	struct power_cut pc;
	struct synced s;
	int64_t n;

	power_cut_init(&pc, pristine, IMG_SIZE, BSIZE, "dirsplit");
	memset(&stats, 0, sizeof(stats));
	n = each_power_cut(&pc, split_workload, verify, &s);
	printf("crash: big directory: %lld cut points during splits, %d synced names kept "
	       "at each, %lld needed repairs\n", (long long)n, SYNCED, (long long)stats.repaired);
	unlink(pc.path);
}

/* map_workload with more names after the synced ones, uncut: what the
 * cuts are to exercise happens (the map's root moved down, or its node
 * split too); returns the number of writes. */
static int64_t map_layout(const struct power_cut *pc, struct synced *s, int more, int split)
{
	int64_t n;

	s->more = more;
	power_threads = 1;
	n = power_cut_count(pc, map_workload, s);
	CHECK(s->apart);
	CHECK(s->map_level >= 1);
	if (split)
		CHECK(s->map_level >= 2 || s->map_nrec >= 2);
	return n;
}

static void test_crash_dir_map_moves_down(void)
{
	struct power_cut pc;
	struct synced s;
	int64_t n;

	power_cut_init(&pc, pristine, IMG_SIZE, BSIZE, "dirmap");
	memset(&stats, 0, sizeof(stats));
	map_layout(&pc, &s, MAP_DOWN, 0);
	n = each_power_cut(&pc, map_workload, verify, &s);
	printf("crash: directory map: %lld cut points while its root moves down, %d synced "
	       "names kept at each, %lld needed repairs, %lld escalated to all chunks (%lld "
	       "after a directory tree was rebuilt)\n", (long long)n, SYNCED,
	       (long long)stats.repaired, (long long)stats.escalated,
	       (long long)stats.escalated_tree);
	unlink(pc.path);
	POWER_CHECK_ESCALATIONS(stats);
}

/* Its node splits after thousands of writes: a seeded sample of cuts in
 * the second half (CHUNKFS_CRASH_ROUNDS of them, default 40), each keeping
 * a random half of the writes not flushed. */
static void test_crash_dir_map_splits(void)
{
	const char *e = getenv("CHUNKFS_CRASH_ROUNDS");
	int64_t rounds = e ? atoll(e) : 40, n, i;
	struct power_cut pc;
	struct synced s;

	power_cut_init(&pc, pristine, IMG_SIZE, BSIZE, "dirmap");
	memset(&stats, 0, sizeof(stats));
	n = map_layout(&pc, &s, MAP_SPLIT, 1);
	srandom(20261203);
	for (i = 0; i < rounds; i++)
		power_cut_at(&pc, n / 2 + random() % (n - n / 2), 0.5, (uint64_t)i, map_workload,
			     verify, &s);
	printf("crash: directory map: %lld of %lld cut points while its node splits, %d synced "
	       "names kept at each, %lld needed repairs, %lld escalated to all chunks (%lld "
	       "after a directory tree was rebuilt)\n",
	       (long long)rounds, (long long)n, SYNCED, (long long)stats.repaired,
	       (long long)stats.escalated, (long long)stats.escalated_tree);
	unlink(pc.path);
	POWER_CHECK_ESCALATIONS(stats);
}

int main(void)
{
	/* a small cache: write-back and eviction interleave with the splits */
	setenv("CHUNKFS_CACHE_KB", "96", 0);
	setup();
	TEST_RUN(test_crash_dir_splits);
	TEST_RUN(test_crash_dir_map_moves_down);
	TEST_RUN(test_crash_dir_map_splits);
	free(pristine);
	return TEST_DONE();
}

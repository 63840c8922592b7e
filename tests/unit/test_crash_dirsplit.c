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

#define IMG_SIZE  (3u << 20)
#define BSIZE     1024
#define SYNCED    48          /* names made, then synced, before the splits */
#define MORE      260         /* names made after them: many more splits */

static uint8_t *pristine;
static struct power_stats stats;

struct synced {
	cfs_ino_t dir;
	cfs_ino_t ino[SYNCED];
	int valid;
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
	struct cfs_mkfs_opts o = { .block_size = BSIZE, .chunks = 4, .inodes = 600 };

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

int main(void)
{
	/* a small cache: write-back and eviction interleave with the splits */
	setenv("CHUNKFS_CACHE_KB", "96", 0);
	setup();
	TEST_RUN(test_crash_dir_splits);
	free(pristine);
	return TEST_DONE();
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* metaops: the metadata and many-writers workloads of the chunkfs benchmark.
 *
 *   metaops create DIR N [SIZE]   mkdir DIR/dNNN (1000 files each) and create N files
 *                                 of SIZE bytes (default 0), then syncfs
 *   metaops stat   DIR N          lstat every file made by create
 *   metaops unlink DIR N          unlink every file and rmdir the dNNN dirs, then syncfs
 *   metaops churn  DIR            create, write 4 KiB, rename and delete files in DIR
 *                                 forever (the crash workload; killed from outside)
 *   metaops lstat-tree DIR        lstat every entry under DIR (what `git status`
 *                                 does to a work tree), in nftw's order
 *   metaops fsync  FILE N         N rounds of a 4 KiB pwrite and fsync of FILE;
 *                                 prints "N SECONDS MEDIAN_MS P99_MS" of the rounds
 *
 * METAOPS_PER_DIR=N puts N files in each dNNN directory instead of 1000
 * (say 100000: one big directory, whose B+tree splits over and over).
 *
 * Prints "OPS SECONDS" (operations, wall seconds measured inside the
 * process with CLOCK_MONOTONIC, so process start-up is not counted).
 * Exits 1 on the first failing system call, naming it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long PER_DIR = 1000;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "metaops: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void name(char *buf, size_t n, const char *dir, long i)
{
	snprintf(buf, n, "%s/d%03ld/f%06ld", dir, i / PER_DIR, i);
}

static long tree_entries;

static int count_entry(const char *p, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)f;
	if (type == FTW_NS)
		die("lstat", p);
	tree_entries++;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Latency of one process's small durable writes: each round rewrites a
 * 4 KiB block of FILE and waits for fsync, as a database's commit does. */
static void fsync_rounds(const char *path, long n, const char *buf)
{
	double *lat = calloc(n > 0 ? n : 1, sizeof(*lat));
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	double t0 = now();

	if (!lat || n <= 0)
		die("rounds", path);
	if (fd < 0)
		die("open", path);
	for (long i = 0; i < n; i++) {
		double a = now();
		if (pwrite(fd, buf + (i % 4096), 4096, (off_t)(i % 256) * 4096) != 4096)
			die("pwrite", path);
		if (fsync(fd) < 0)
			die("fsync", path);
		lat[i] = (now() - a) * 1000;
	}
	double total = now() - t0;
	if (close(fd) < 0)
		die("close", path);
	qsort(lat, n, sizeof(*lat), cmp_double);
	printf("%ld %.6f %.4f %.4f\n", n, total, lat[(n - 1) / 2], lat[(long)((n - 1) * 0.99)]);
	free(lat);
}

static void do_syncfs(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		die("open", dir);
	if (syncfs(fd) < 0)
		die("syncfs", dir);
	close(fd);
}

int main(int argc, char **argv)
{
	char p[4096];
	static char buf[1 << 20];
	if (argc < 3) {
		fprintf(stderr, "usage: metaops create|stat|unlink DIR N [SIZE] | churn DIR | "
			"lstat-tree DIR | fsync FILE N\n");
		return 2;
	}
	const char *op = argv[1], *dir = argv[2];
	if (getenv("METAOPS_PER_DIR") && atol(getenv("METAOPS_PER_DIR")) > 0)
		PER_DIR = atol(getenv("METAOPS_PER_DIR"));
	long n = argc > 3 ? atol(argv[3]) : 0;
	long size = argc > 4 ? atol(argv[4]) : 0;
	if (size > (long)sizeof buf)
		size = sizeof buf;
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (char)(i * 2654435761u >> 13);
	double t0 = now();
	long ops = 0;
	if (!strcmp(op, "create")) {
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			die("mkdir", dir);
		for (long i = 0; i < n; i++) {
			if (i % PER_DIR == 0) {
				snprintf(p, sizeof p, "%s/d%03ld", dir, i / PER_DIR);
				if (mkdir(p, 0755) < 0)
					die("mkdir", p);
			}
			name(p, sizeof p, dir, i);
			int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
			if (fd < 0)
				die("create", p);
			if (size && write(fd, buf, size) != size)
				die("write", p);
			if (close(fd) < 0)
				die("close", p);
			ops++;
		}
		do_syncfs(dir);
	} else if (!strcmp(op, "stat")) {
		struct stat st;
		for (long i = 0; i < n; i++) {
			name(p, sizeof p, dir, i);
			if (lstat(p, &st) < 0)
				die("stat", p);
			ops++;
		}
	} else if (!strcmp(op, "unlink")) {
		for (long i = 0; i < n; i++) {
			name(p, sizeof p, dir, i);
			if (unlink(p) < 0)
				die("unlink", p);
			ops++;
			if (i % PER_DIR == PER_DIR - 1 || i == n - 1) {
				snprintf(p, sizeof p, "%s/d%03ld", dir, i / PER_DIR);
				if (rmdir(p) < 0)
					die("rmdir", p);
			}
		}
		do_syncfs(dir);
	} else if (!strcmp(op, "lstat-tree")) {
		if (nftw(dir, count_entry, 64, FTW_PHYS) < 0)
			die("nftw", dir);
		ops = tree_entries;
	} else if (!strcmp(op, "fsync")) {
		fsync_rounds(dir, n, buf);
		return 0;
	} else if (!strcmp(op, "churn")) {
		char q[4096];
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			die("mkdir", dir);
		for (long i = 0;; i++) {
			snprintf(p, sizeof p, "%s/c%ld", dir, i % 500);
			int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd < 0)
				die("create", p);
			if (write(fd, buf + (i % 4096), 4096) != 4096)
				die("write", p);
			close(fd);
			snprintf(q, sizeof q, "%s/r%ld", dir, i % 50);
			if (i % 3 == 0 && rename(p, q) < 0)
				die("rename", p);
			if (i % 7 == 0)
				unlink(q);
		}
	} else {
		fprintf(stderr, "metaops: unknown operation %s\n", op);
		return 2;
	}
	printf("%ld %.6f\n", ops, now() - t0);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cfscheck: the library's read-only consistency check (cfs_check) of an
 * image, for the mount tests (the chunkfs command has no check yet).
 *
 *   cfscheck IMAGE
 *
 * Prints one line per problem, "chunk N: MESSAGE", where N is the chunk
 * the message is about (from "chunk N" in it, else the chunk of the first
 * inode number it names; "?" if neither), then "dirty: N,M" (the chunks
 * not marked clean) and "problems: N".  Exit status 0 when consistent,
 * 1 when problems were found, 2 when the check could not run.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunkfs.h"

/* The chunk a cfs_check message is about. */
static long msg_chunk(const char *msg)
{
	static const char *const inode_words[] = { "inode ", "dir ", "stub ",
						   "continuation ", NULL };
	const char *p = strstr(msg, "chunk ");
	char *end;

	if (p) {
		long c = strtol(p + 6, &end, 10);

		if (end != p + 6)
			return c;
	}
	for (int i = 0; inode_words[i]; i++) {
		size_t n = strlen(inode_words[i]);

		if (strncmp(msg, inode_words[i], n) == 0) {
			unsigned long ino = strtoul(msg + n, &end, 10);

			if (end != msg + n)
				return (long)(ino >> 24);
		}
	}
	return -1;
}

static void report(void *ctx, const char *msg)
{
	long c = msg_chunk(msg);

	(void)ctx;
	if (c < 0)
		printf("chunk ?: %s\n", msg);
	else
		printf("chunk %ld: %s\n", c, msg);
}

static void print_dirty(struct cfs_fs *fs)
{
	struct cfs_info info;
	const char *sep = "";

	cfs_get_info(fs, &info);
	printf("dirty:");
	for (uint32_t c = 0; c < info.chunks; c++) {
		struct cfs_chunk_info ci;

		if (cfs_get_chunk_info(fs, c, &ci) == 0 && ci.state != CFS_CHUNK_CLEAN) {
			printf("%s%u", *sep ? sep : " ", c);
			sep = ",";
		}
	}
	printf("\n");
}

int main(int argc, char **argv)
{
	struct cfs_fs *fs;
	int ret;

	if (argc != 2) {
		fprintf(stderr, "usage: cfscheck IMAGE\n");
		return 2;
	}
	ret = cfs_open(argv[1], CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs);
	if (ret < 0) {
		fprintf(stderr, "cfscheck: %s: %s\n", argv[1], cfs_last_error());
		return 2;
	}
	ret = cfs_check(fs, report, NULL);
	print_dirty(fs);
	cfs_close(fs);
	if (ret < 0) {
		fprintf(stderr, "cfscheck: %s: check failed: %s\n", argv[1], strerror(-ret));
		return 2;
	}
	printf("problems: %d\n", ret);
	return ret ? 1 : 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs defrag and chunkfs evacuate: the library's move engine
 * (src/move.c) on an unmounted image, with the "Bookkeeping" figure of
 * chunkfs info before and after, and a progress line on a terminal
 * (also used by cmd_resize.c's shrink).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tool.h"

struct books {
	uint64_t inuse, conts, xrefs;
};

/* What chunkfs info counts (cmd_info.c bookkeeping_pct): continuations
 * and stubs as a share of the files and directories. */
static int books_get(struct cfs_fs *fs, struct books *b)
{
	struct cfs_info in;
	uint32_t c;
	int ret = cfs_get_info(fs, &in);

	memset(b, 0, sizeof(*b));
	for (c = 0; c < in.chunks && ret == 0; c++) {
		struct cfs_chunk_info ci;

		ret = cfs_get_chunk_info(fs, c, &ci);
		if (ret < 0)
			break;
		b->inuse += ci.inodes - ci.free_inodes;
		b->conts += ci.conts;
		b->xrefs += ci.xrefs;
	}
	return ret;
}

static double books_pct(const struct books *b)
{
	uint64_t books = b->conts + b->xrefs;

	return b->inuse > books ? 100.0 * (double)books / (double)(b->inuse - books) : 0.0;
}

static void books_say(const char *when, const struct books *b)
{
	printf("%-7s %" PRIu64 " continuations, %" PRIu64 " cross-chunk refs, "
	       "bookkeeping %.2f%%\n", when, b->conts, b->xrefs, books_pct(b));
}

/* The progress line: files done of total, on a terminal only. */
static void move_progress(void *ctx, uint64_t done, uint64_t total)
{
	const char *what = ctx;

	if (done != total && done % 16)
		return;
	fprintf(stderr, "\r%s: %" PRIu64 " of %" PRIu64 " files\033[K", what, done, total);
	if (done == total)
		fputs("\r\033[K", stderr);
	fflush(stderr);
}

void move_progress_on(struct cfs_fs *fs, const char *what)
{
	if (isatty(STDERR_FILENO) == 1)
		cfs_set_progress_fn(fs, move_progress, (void *)what);
}

static int open_rw(const char *img, struct cfs_fs **fs)
{
	int ret = cfs_open(img, 0, fs);

	if (ret < 0) {
		const char *why = cfs_last_error();

		err_msg("%s: %s%s", img, why && *why ? why : errstr(ret),
			ret == -EBUSY ? ": unmount it first" : "");
		return EX_FAIL;
	}
	return EX_OK;
}

static int no_options(const char *cmd, int argc, char **argv, int nargs, const char *need)
{
	int c;

	opterr = 0;
	while ((c = getopt(argc, argv, ":")) != -1)
		return bad_option(cmd, argv, c);
	if (argc - optind != nargs)
		return usage_error(cmd, argc - optind < nargs ? "no %s given" :
				   "too many arguments", need);
	return 0;
}

int cmd_defrag(int argc, char **argv)
{
	struct cfs_move_result r;
	struct books before, after;
	struct cfs_fs *fs;
	const char *img;
	unsigned flags = 0;
	int ret, c;

	opterr = 0;
	while ((c = getopt(argc, argv, ":i")) != -1) {
		if (c != 'i')
			return bad_option("defrag", argv, c);
		flags |= CFS_DEFRAG_RENUMBER;
	}
	if (argc - optind != 1)
		return usage_error("defrag", argc - optind < 1 ? "no %s given" :
				   "too many arguments", "IMAGE");
	img = argv[optind];
	if (open_rw(img, &fs) != EX_OK)
		return EX_FAIL;
	ret = books_get(fs, &before);
	move_progress_on(fs, "defrag");
	if (ret == 0)
		ret = cfs_defrag_flags(fs, flags, &r);
	if (ret < 0) {
		const char *why = cfs_last_error();

		err_msg("%s: defrag failed: %s", img, why && *why ? why : errstr(ret));
		return img_close(fs, img, EX_FAIL);
	}
	books_get(fs, &after);
	books_say("before:", &before);
	books_say("after:", &after);
	printf("%s: %" PRIu64 " files moved together, %" PRIu64 " continuations freed, "
	       "%" PRIu64 " blocks copied, %" PRIu64 " left for want of room\n", img,
	       r.files, r.conts_freed, r.blocks, r.skipped);
	return img_close(fs, img, EX_OK);
}

int cmd_evacuate(int argc, char **argv)
{
	struct cfs_move_result r;
	struct books before, after;
	struct cfs_fs *fs;
	const char *img;
	uint64_t chunk;
	int ret, status = EX_OK;

	if ((ret = no_options("evacuate", argc, argv, 2, "IMAGE and CHUNK")) != 0)
		return ret;
	img = argv[optind];
	if (parse_u64(argv[optind + 1], &chunk) < 0 || chunk >= CFS_MAX_CHUNKS)
		return usage_error("evacuate", "bad chunk number '%s'", argv[optind + 1]);
	if (open_rw(img, &fs) != EX_OK)
		return EX_FAIL;
	ret = books_get(fs, &before);
	move_progress_on(fs, "evacuate");
	if (ret == 0)
		ret = cfs_evacuate(fs, (uint32_t)chunk, &r);
	if (ret < 0) {
		const char *why = cfs_last_error();

		err_msg("%s: evacuate failed: %s", img, why && *why ? why : errstr(ret));
		return img_close(fs, img, EX_FAIL);
	}
	books_get(fs, &after);
	books_say("before:", &before);
	books_say("after:", &after);
	printf("%s: chunk %" PRIu64 ": %" PRIu64 " blocks moved out, %" PRIu64
	       " continuations freed\n", img, chunk, r.blocks, r.conts_freed);
	if (r.left_inodes || r.left_blocks) {
		printf("%s: chunk %" PRIu64 " still holds %" PRIu64 " inodes (%" PRIu64
		       " continuations, %" PRIu64 " cross-chunk refs) and %" PRIu64
		       " blocks\n", img, chunk, r.left_inodes, r.left_conts, r.left_stubs,
		       r.left_blocks);
		if (r.left_inodes > r.left_conts + r.left_stubs)
			printf("Directories whose own inode is in the chunk stay (they are "
			       "not renumbered yet), and so do the chunk's files then, and "
			       "files no other chunk has room for whole.\n");
		status = EX_FAIL;
	} else {
		printf("%s: chunk %" PRIu64 " is empty\n", img, chunk);
	}
	return img_close(fs, img, status);
}

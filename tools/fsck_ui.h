/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What chunkfs fsck prints, shared with chunkfs scrub (tools/cmd_scrub.c),
 * which reports the same problems of a mounted filesystem the same way:
 * the problem lines, the summary, --json, the progress and the exit code
 * (fsck(8)).  Defined in tools/cmd_fsck.c. */
#ifndef CHUNKFS_FSCK_UI_H
#define CHUNKFS_FSCK_UI_H

#include <pthread.h>

#include "tool.h"

#define FSCK_OK        0
#define FSCK_FIXED     1
#define FSCK_UNFIXED   4
#define FSCK_ERROR     8
#define FSCK_USAGE     16

struct fsck_ui {
	const char *img;           /* the image (fsck) or mount point (scrub) */
	int verbose, json, progress_fd;
	int bar;                   /* a bar on the terminal (-C 0) */
	int online;                /* scrub: img is a mount point, which fsck
				    * refuses; chunks not checked were not
				    * selected (-c) */
	char **msgs;               /* kept for --json */
	size_t nmsgs;
	char **probs;              /* the same, as JSON objects with their codes */
	size_t nprobs;
	char *error;               /* why the check could not be made (exit 8) */
	pthread_mutex_t lock;
};

/* cfs_fsck_opts callbacks, ctx a struct fsck_ui */
void ui_report(void *ctx, const char *msg);
void ui_progress(void *ctx, uint32_t done, uint32_t total);
void ui_problem(void *ctx, const struct cfs_fsck_problem *p);

/* -n, -p/-a, -y into *mode (-1: none yet); two different ones are a
 * usage error (reported: -1) */
int fsck_mode_opt(const char *cmd, int *mode, int opt);
/* -C FD: progress on FD, a bar on the terminal for 0 (else -1, reported) */
int fsck_progress_opt(const char *cmd, struct fsck_ui *u, const char *arg);
/* After the options (--json may follow -C): 0, or FSCK_ERROR (reported)
 * when the -C descriptor is not open, as e2fsck refuses it */
int fsck_progress_check(const char *cmd, struct fsck_ui *u);
/* Why the check failed (exit 8), on stderr, and kept for --json */
void ui_error(struct fsck_ui *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void print_json(struct fsck_ui *u, const struct cfs_fsck_result *r, int code);
/* --json of a check that could not be made: the image, exit and error */
void print_json_error(struct fsck_ui *u, int code);
void print_summary(struct fsck_ui *u, const struct cfs_fsck_result *r, int mode);
int exit_code(const struct cfs_fsck_result *r);
void fsck_ui_free(struct fsck_ui *u);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs fsck: e2fsck's options and fsck(8)'s exit codes over the
 * library's parallel, dirty-chunk-only checker.  Its output (lines,
 * summary, --json) is chunkfs scrub's too (tools/fsck_ui.h). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsck_ui.h"

/* Keep s (taken) at the end of *v, or free it. */
static void keep(char ***v, size_t *n, char *s)
{
	char **nv = s ? realloc(*v, (*n + 1) * sizeof(*nv)) : NULL;

	if (!nv) {
		free(s);
		return;
	}
	*v = nv;
	nv[(*n)++] = s;
}

void ui_report(void *ctx, const char *msg)
{
	struct fsck_ui *u = ctx;

	pthread_mutex_lock(&u->lock);
	if (u->bar)
		fputs("\r\033[K", stderr);
	if (u->json) {
		keep(&u->msgs, &u->nmsgs, strdup(msg));
	} else {
		printf("%s: %s\n", u->img, msg);
		fflush(stdout);
	}
	pthread_mutex_unlock(&u->lock);
}

void ui_progress(void *ctx, uint32_t done, uint32_t total)
{
	struct fsck_ui *u = ctx;
	int width = 40, fill = total ? (int)((uint64_t)done * width / total) : width;

	pthread_mutex_lock(&u->lock);
	if (u->bar) {
		fprintf(stderr, "\r%s: chunk %u/%u [%.*s%*s] %3u%%", u->img, done, total, fill,
			"========================================", width - fill, "",
			total ? done * 100 / total : 100);
		if (done == total)
			fputs("\r\033[K", stderr);
		fflush(stderr);
	} else if (u->progress_fd > 0) {
		dprintf(u->progress_fd, "1 %u %u %s\n", done, total, u->img);
	}
	pthread_mutex_unlock(&u->lock);
}

static void json_str_to(FILE *f, const char *s)
{
	putc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			putc(ch, f);
	}
	putc('"', f);
}

static void json_str(const char *s)
{
	json_str_to(stdout, s);
}

/* --json: each problem as an object with its code (under u->lock: the
 * library calls this with its own lock held, one problem at a time). */
void ui_problem(void *ctx, const struct cfs_fsck_problem *p)
{
	struct fsck_ui *u = ctx;
	char *obj = NULL;
	size_t len;
	FILE *f;

	if (!u->json || !(f = open_memstream(&obj, &len)))
		return;
	fputs("{\"code\":", f);
	json_str_to(f, p->code);
	if (p->chunk >= 0)
		fprintf(f, ",\"chunk\":%lld", (long long)p->chunk);
	if (p->ino)
		fprintf(f, ",\"inode\":%u", p->ino);
	fputs(",\"finding\":", f);
	json_str_to(f, p->finding);
	fputs(",\"action\":", f);
	json_str_to(f, p->action);
	fputs(",\"outcome\":", f);
	json_str_to(f, p->outcome);
	fputs(",\"invariant\":", f);
	json_str_to(f, p->invariant);
	putc('}', f);
	if (fclose(f) != 0) {
		free(obj);
		return;
	}
	pthread_mutex_lock(&u->lock);
	keep(&u->probs, &u->nprobs, obj);
	pthread_mutex_unlock(&u->lock);
}

void print_json(struct fsck_ui *u, const struct cfs_fsck_result *r, int code)
{
	size_t i;

	printf("{\"image\":");
	json_str(u->img);
	printf(",\"chunks\":%u,\"checked\":%u,\"skipped\":%u,\"inodes\":%llu,\"dirs\":%llu,"
	       "\"problems\":%llu,\"fixed\":%llu,\"unfixed\":%llu,\"escalated\":%s,"
	       "\"superblock_restored\":%s,\"seconds\":%.6f,\"exit\":%d,\"messages\":[",
	       r->chunks, r->checked, r->chunks - r->checked, (unsigned long long)r->inodes,
	       (unsigned long long)r->dirs, (unsigned long long)r->problems,
	       (unsigned long long)r->fixed, (unsigned long long)r->unfixed,
	       r->escalated ? "true" : "false", r->sb_restored ? "true" : "false",
	       r->seconds, code);
	for (i = 0; i < u->nmsgs; i++) {
		if (i)
			putchar(',');
		json_str(u->msgs[i]);
	}
	printf("],\"problem_list\":[");
	for (i = 0; i < u->nprobs; i++)
		printf("%s%s", i ? "," : "", u->probs[i]);
	printf("]}\n");
}

void print_json_error(struct fsck_ui *u, int code)
{
	printf("{\"image\":");
	json_str(u->img ? u->img : "");
	printf(",\"exit\":%d,\"error\":", code);
	json_str(u->error ? u->error : "failed");
	printf("}\n");
}

void ui_error(struct fsck_ui *u, const char *fmt, ...)
{
	va_list ap;
	char *msg = NULL;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0) {
		err_msg("%s", fmt);   /* the words without their values: better than none */
		return;
	}
	err_msg("%s", msg);
	if (!u->error)
		u->error = msg;   /* the first cause */
	else
		free(msg);
}

void print_summary(struct fsck_ui *u, const struct cfs_fsck_result *r, int mode)
{
	printf("%s: checked %u of %u chunks (%u %s)%s in %.3fs\n", u->img,
	       r->checked, r->chunks, r->chunks - r->checked,
	       u->online ? "not selected" : "clean, skipped",
	       r->escalated ? " [lost directory entries: checked every chunk]" : "",
	       r->seconds);
	if (u->verbose || r->problems)
		printf("%s: %llu inodes, %llu directories in the checked chunks; "
		       "%llu problems, %llu fixed, %llu left\n", u->img,
		       (unsigned long long)r->inodes, (unsigned long long)r->dirs,
		       (unsigned long long)r->problems, (unsigned long long)r->fixed,
		       (unsigned long long)r->unfixed);
	if (!r->unfixed || (mode != CFS_FSCK_PREEN && mode != CFS_FSCK_NO))
		return;
	/* fsck refuses a mounted filesystem: online, scrub repairs */
	if (mode == CFS_FSCK_PREEN && u->online)
		printf("%s: UNEXPECTED INCONSISTENCY; RUN chunkfs scrub -y %s MANUALLY "
		       "(without -a or -p)\n", u->img, u->img);
	else if (mode == CFS_FSCK_PREEN)
		printf("%s: UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY "
		       "(without -a or -p)\n", u->img);
	else if (u->online)
		printf("%s: problems found; run chunkfs scrub -y %s to repair them\n",
		       u->img, u->img);
	else
		printf("%s: problems found; run chunkfs fsck -y to repair them\n", u->img);
}

int exit_code(const struct cfs_fsck_result *r)
{
	if (r->unfixed)
		return FSCK_UNFIXED;
	return r->fixed ? FSCK_FIXED : FSCK_OK;
}

/* As e2fsck on a mounted filesystem: what is on disk lags behind what
 * the daemon holds, so a read-only check may report problems that are
 * not there (or miss some). */
static void warn_in_use(const char *img, const struct img_use *use)
{
	char pid[32] = "";

	if (use->pid)
		snprintf(pid, sizeof(pid), " (pid %d)", (int)use->pid);
	if (use->mnt[0])
		warn_msg("%s is mounted on %s by the chunkfs daemon%s: the check reads "
			 "the image as last written, so its results may be wrong", img,
			 use->mnt, pid);
	else
		warn_msg("%s is being written by another process%s: the check's results "
			 "may be wrong", img, pid);
}

static int run(struct fsck_ui *u, struct cfs_fsck_opts *o, struct cfs_fsck_result *r)
{
	int flags = CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, ret;
	struct img_use use;
	struct cfs_fs *fs;

	if (o->mode == CFS_FSCK_NO)
		flags |= CFS_OPEN_RDONLY;
	img_wait(u->img, &use);
	if (o->mode == CFS_FSCK_NO && use.busy)
		warn_in_use(u->img, &use);
	ret = cfs_open(u->img, flags, &fs);
	if (ret < 0) {
		ui_error(u, "%s: %s", u->img, *cfs_last_error() ? cfs_last_error() : errstr(ret));
		return FSCK_ERROR;
	}
	ret = cfs_fsck(fs, o, r);
	if (ret < 0) {
		ui_error(u, "%s: check failed: %s", u->img, errstr(ret));
		cfs_close(fs);
		return FSCK_ERROR;
	}
	ret = cfs_close(fs);
	if (ret < 0) {
		ui_error(u, "%s: writing the repairs failed: %s", u->img, errstr(ret));
		return FSCK_ERROR;
	}
	return exit_code(r);
}

static int ask_repair(void)
{
	char line[16];

	fprintf(stderr, "Repair these problems? [y/N] ");
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	return line[0] == 'y' || line[0] == 'Y';
}

/* -n, -p (or -a) and -y each say what to do with a problem: two of them
 * together are a mistake, refused as e2fsck does rather than one of them
 * silently winning (-n -y used to repair). */
int fsck_mode_opt(const char *cmd, int *mode, int opt)
{
	int m = opt == 'n' ? CFS_FSCK_NO : opt == 'y' ? CFS_FSCK_YES : CFS_FSCK_PREEN;

	if (*mode >= 0 && *mode != m) {
		usage_error(cmd, "only one of the options -p/-a, -n or -y may be specified");
		return -1;
	}
	*mode = m;
	return 0;
}

int fsck_progress_opt(const char *cmd, struct fsck_ui *u, const char *arg)
{
	uint64_t v;

	if (parse_u64(arg, &v) < 0 || v > 1024) {
		usage_error(cmd, "bad progress descriptor '%s'", arg);
		return -1;
	}
	u->progress_fd = (int)v;
	u->bar = v == 0 && isatty(2);
	return 0;
}

int fsck_progress_check(const char *cmd, struct fsck_ui *u)
{
	/* the lines would be lost, or written into a file opened later on
	 * that number */
	if (u->progress_fd > 0 && fcntl(u->progress_fd, F_GETFD) < 0) {
		ui_error(u, "%s: progress descriptor %d: %s", cmd, u->progress_fd,
			 strerror(errno));
		return FSCK_ERROR;
	}
	return 0;
}

static int parse_args(int argc, char **argv, struct cfs_fsck_opts *o, struct fsck_ui *u)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	int opt;

	o->mode = -1;
	opterr = 0;   /* bad_option says it, once */
	while ((opt = getopt_long(argc, argv, ":npayfj:C:vVh", lo, NULL)) != -1) {
		switch (opt) {
		case 'n': case 'p': case 'a': case 'y':
			if (fsck_mode_opt("fsck", &o->mode, opt) < 0)
				return FSCK_USAGE;
			break;
		case 'f': o->force = 1; break;
		case 'v': u->verbose = 1; break;
		case 'J': u->json = 1; break;
		case 'V':
			printf("chunkfs fsck %s\n", CFS_VERSION_STRING);
			exit(FSCK_OK);
		case 'h':
			usage("fsck", stdout);
			exit(FSCK_OK);
		case 'j':
			if (parse_u64(optarg, &v) < 0 || v < 1 || v > 64) {
				usage_error("fsck", "bad thread count '%s' (1-64)", optarg);
				return FSCK_USAGE;
			}
			o->threads = (int)v;
			break;
		case 'C':
			if (fsck_progress_opt("fsck", u, optarg) < 0)
				return FSCK_USAGE;
			o->progress = ui_progress;
			break;
		default:
			bad_option("fsck", argv, opt);
			return FSCK_USAGE;
		}
	}
	if (optind != argc - 1) {
		usage_error("fsck", optind >= argc ? "no image given" : "too many arguments");
		return FSCK_USAGE;
	}
	u->img = argv[optind];
	return fsck_progress_check("fsck", u);
}

int cmd_fsck(int argc, char **argv)
{
	struct fsck_ui u = { .progress_fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER };
	struct cfs_fsck_opts o = { .report = ui_report, .problem = ui_problem, .ctx = &u };
	struct cfs_fsck_result r;
	int code, interactive = 0;

	code = parse_args(argc, argv, &o, &u);
	if (code)
		goto out;
	if (o.mode < 0) {
		/* like e2fsck: repairs without -p/-y need someone to answer */
		if (!isatty(0) || u.json) {
			ui_error(&u, "%s: need a terminal for interactive repairs; "
				 "use -n, -p or -y", u.img);
			code = FSCK_ERROR;
			goto out;
		}
		o.mode = CFS_FSCK_NO;
		interactive = 1;
	}
	code = run(&u, &o, &r);
	if (interactive && code == FSCK_UNFIXED) {
		print_summary(&u, &r, o.mode);
		if (ask_repair()) {
			o.mode = CFS_FSCK_YES;
			code = run(&u, &o, &r);
		}
	}
	if (code != FSCK_ERROR) {
		if (u.json)
			print_json(&u, &r, code);
		else
			print_summary(&u, &r, o.mode);
	}
out:
	/* a usage error is told before --json is known to be asked for */
	if (code == FSCK_ERROR && u.json)
		print_json_error(&u, code);
	fsck_ui_free(&u);
	return code;
}

void fsck_ui_free(struct fsck_ui *u)
{
	size_t i;

	for (i = 0; i < u->nmsgs; i++)
		free(u->msgs[i]);
	free(u->msgs);
	for (i = 0; i < u->nprobs; i++)
		free(u->probs[i]);
	free(u->probs);
	free(u->error);
}

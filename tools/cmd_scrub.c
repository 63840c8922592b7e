/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs scrub: check and repair a mounted filesystem, one chunk at a
 * time, as xfs_scrub and e2scrub do.  The mount's daemon runs the checker
 * of chunkfs fsck on each chunk (cfs_scrub) when asked through an ioctl
 * on the mount point (daemon/scrub_ioctl.h, daemon/scrub.c); this
 * side chooses the chunks and reports what it found exactly as chunkfs
 * fsck does (tools/fsck_ui.h), with fsck's exit codes.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <mntent.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "fsck_ui.h"
#include "scrub_ioctl.h"

struct scrub_args {
	int all;                   /* -A: every chunkfs mount */
	int mode;
	const char *chunks;        /* -c LIST, NULL = every chunk */
	struct cfs_fsck_opts o;    /* the ui's callbacks */
};

/* The findings told so far for one mount point.  A repair of one chunk
 * checks, in the same run, every chunk its findings reach (all of them
 * when a reference lost cannot be named), so a finding left unfixed (-p,
 * or a fix that failed) is found again by the scrub of each chunk that
 * reaches it, and by that chunk's own: it is told, and counted, once. */
struct told {
	void *texts;               /* tsearch tree of the problem lines */
	struct cfs_fsck_result *total;
};

static int scrub_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

static int text_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* A problem line not told before: now remembered.  Out of memory it is
 * told again rather than never. */
static int first_time(struct told *t, const char *text)
{
	char *dup, **node;

	if (tfind(text, &t->texts, text_cmp))
		return 0;
	dup = strdup(text);
	node = dup ? tsearch(dup, &t->texts, text_cmp) : NULL;
	if (!node || *node != dup)
		free(dup);
	return 1;
}

/* One record of the daemon's report, replayed into the ui as the checker
 * would have reported it (unless told before), and counted. */
static void replay_record(struct fsck_ui *u, struct told *t, char *rec)
{
	char *f[8];
	struct cfs_fsck_problem p;
	int i;

	for (i = 0; i < 8; i++) {
		f[i] = rec;
		rec = strchr(rec, i < 7 ? SCRUB_FS : '\0');
		if (!rec && i < 7)
			return;     /* not a whole record: not ours */
		if (rec)
			*rec++ = '\0';
	}
	p.code = f[0];
	p.chunk = strtoll(f[1], NULL, 10);
	p.ino = (cfs_ino_t)strtoul(f[2], NULL, 10);
	p.finding = f[3];
	p.action = f[4];
	p.outcome = f[5];
	p.invariant = f[6];
	p.text = f[7];
	if (!first_time(t, p.text))
		return;
	t->total->problems++;
	if (strcmp(p.outcome, "fixed") == 0)
		t->total->fixed++;
	else
		t->total->unfixed++;
	ui_problem(u, &p);
	ui_report(u, p.text);
}

static int report_fetch(int fd, const struct chunkfs_scrub_arg *a, struct fsck_ui *u,
			struct told *t)
{
	struct chunkfs_scrub_page *pg = malloc(sizeof(*pg));
	char *all = malloc(a->report_bytes + 1), *rec, *end;
	uint64_t off = 0;
	int ret = pg && all ? 0 : -ENOMEM;

	while (ret == 0 && off < a->report_bytes) {
		memset(pg, 0, sizeof(*pg));
		pg->token = a->token;
		pg->off = off;
		ret = scrub_ioctl(fd, CHUNKFS_IOC_SCRUB_READ, pg);
		if (ret == 0 && (pg->len == 0 || pg->len > a->report_bytes - off))
			ret = -EIO;
		if (ret == 0) {
			memcpy(all + off, pg->data, pg->len);
			off += pg->len;
		}
	}
	if (ret == 0) {
		all[off] = '\0';
		for (rec = all; (end = strchr(rec, SCRUB_RS)); rec = end + 1) {
			*end = '\0';
			replay_record(u, t, rec);
		}
	}
	free(pg);
	free(all);
	return ret;
}

/* A repair may check every chunk (r->checked is then all of them): its
 * counts of inodes and directories are the filesystem's, and stay.  One
 * that checked the chunks its findings reach besides counts them once.
 * The problems are counted as their records are told (replay_record). */
static void result_add(struct cfs_fsck_result *t, const struct cfs_fsck_result *r, int *full)
{
	if (r->checked >= r->chunks && r->chunks > 1) {
		*full = 1;
		t->checked = t->chunks;
		t->inodes = r->inodes;
		t->dirs = r->dirs;
	} else if (!*full) {
		t->checked += r->checked;
		if (t->checked > t->chunks)
			t->checked = t->chunks;
		t->inodes += r->inodes;
		t->dirs += r->dirs;
	}
	t->escalated |= r->escalated;
}

/* "0,3,5-7" into sel; a chunk past the filesystem's is an error. */
static int chunks_parse(const char *list, uint8_t *sel, uint32_t n)
{
	char *dup = strdup(list), *tok, *save = NULL, *dash;
	uint64_t lo, hi;
	int ret = dup ? 0 : -ENOMEM;

	for (tok = dup ? strtok_r(dup, ",", &save) : NULL; tok && ret == 0;
	     tok = strtok_r(NULL, ",", &save)) {
		dash = strchr(tok, '-');
		if (dash)
			*dash = '\0';
		if (parse_u64(tok, &lo) < 0 || (dash && parse_u64(dash + 1, &hi) < 0)) {
			ret = -EINVAL;
			break;
		}
		if (!dash)
			hi = lo;
		if (lo > hi || hi >= n) {
			ret = -ERANGE;
			break;
		}
		for (; lo <= hi; lo++)
			sel[lo] = 1;
	}
	free(dup);
	return ret;
}

static int scrub_chunk(int fd, uint32_t c, struct scrub_args *sa, struct fsck_ui *u,
		       struct told *t, int *full)
{
	struct chunkfs_scrub_arg a = { .chunk = c, .mode = sa->mode };
	struct cfs_fsck_result *total = t->total;
	int ret = scrub_ioctl(fd, CHUNKFS_IOC_SCRUB, &a);

	if (ret == 0 && a.report_bytes)
		ret = report_fetch(fd, &a, u, t);
	if (ret == 0)
		ret = a.error;
	if (ret == 0)
		result_add(total, &a.res, full);
	return ret;
}

static void scrub_failed(struct fsck_ui *u, int err)
{
	const char *dir = u->img;

	if (err == -ENOTTY || err == -ENOSYS || err == -EINVAL)
		ui_error(u, "%s: not a chunkfs mount point (or its daemon cannot scrub)", dir);
	else if (err == -EPERM)
		ui_error(u, "%s: only root or the user who mounted it may scrub it", dir);
	else if (err == -EROFS)
		ui_error(u, "%s: mounted read-only: use -n", dir);
	else
		ui_error(u, "%s: scrub failed: %s", dir, errstr(err));
}

static int run(struct scrub_args *sa, struct fsck_ui *u, struct cfs_fsck_result *total)
{
	struct chunkfs_scrub_arg q = { .chunk = SCRUB_QUERY, .mode = sa->mode };
	uint8_t sel[CFS_MAX_CHUNKS] = { 0 };
	struct told t = { NULL, total };
	uint32_t c, done = 0, want = 0;
	int full = 0;
	double t0 = mono_now();
	int fd = open(u->img, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret;

	ret = fd < 0 ? -errno : scrub_ioctl(fd, CHUNKFS_IOC_SCRUB, &q);
	if (ret == 0)
		ret = q.error;
	if (ret < 0) {
		scrub_failed(u, ret);
		goto out;
	}
	total->chunks = q.nchunks;
	if (sa->chunks && (ret = chunks_parse(sa->chunks, sel, q.nchunks)) < 0) {
		ui_error(u, "%s: bad chunk list '%s' (chunks 0-%u, e.g. 0,3,5-7)", u->img,
			 sa->chunks, q.nchunks - 1);
		goto out;
	}
	if (!sa->chunks)
		memset(sel, 1, q.nchunks);
	for (c = 0; c < q.nchunks; c++)
		want += sel[c];
	for (c = 0; c < q.nchunks && ret == 0; c++) {
		if (!sel[c])
			continue;
		ret = scrub_chunk(fd, c, sa, u, &t, &full);
		if (ret < 0) {
			scrub_failed(u, ret);
			break;
		}
		done++;
		if (sa->o.progress)
			sa->o.progress(u, done, want);
	}
out:
	tdestroy(t.texts, free);
	total->seconds = mono_now() - t0;
	if (fd >= 0)
		close(fd);
	return ret;
}

static int parse_args(int argc, char **argv, struct scrub_args *sa, struct fsck_ui *u)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	opterr = 0;   /* bad_option says it, once */
	while ((opt = getopt_long(argc, argv, ":Anpayc:C:vVh", lo, NULL)) != -1) {
		switch (opt) {
		case 'A': sa->all = 1; break;
		case 'n': case 'p': case 'a': case 'y':
			if (fsck_mode_opt("scrub", &sa->mode, opt) < 0)
				return FSCK_USAGE;
			break;
		case 'c': sa->chunks = optarg; break;
		case 'v': u->verbose = 1; break;
		case 'J': u->json = 1; break;
		case 'V':
			printf("chunkfs scrub %s\n", CFS_VERSION_STRING);
			exit(FSCK_OK);
		case 'h':
			usage("scrub", stdout);
			exit(FSCK_OK);
		case 'C':
			if (fsck_progress_opt("scrub", u, optarg) < 0)
				return FSCK_USAGE;
			sa->o.progress = ui_progress;
			break;
		default:
			bad_option("scrub", argv, opt);
			return FSCK_USAGE;
		}
	}
	if (sa->all && (optind != argc || sa->chunks)) {
		usage_error("scrub", "-A takes no mount point and no -c");
		return FSCK_USAGE;
	}
	if (!sa->all && optind != argc - 1) {
		usage_error("scrub", optind >= argc ? "no mount point given" : "too many arguments");
		return FSCK_USAGE;
	}
	u->img = sa->all ? NULL : argv[optind];
	if (sa->mode < 0)
		sa->mode = CFS_FSCK_NO;    /* as xfs_scrub -n: a look first */
	return fsck_progress_check("scrub", u);
}

/* One mount point: the check, its summary, its exit code. */
static int scrub_mount(struct scrub_args *sa, const struct fsck_ui *proto, const char *dir)
{
	struct fsck_ui u = *proto;
	struct cfs_fsck_result r;
	int code;

	memset(&r, 0, sizeof(r));
	u.img = dir;
	code = run(sa, &u, &r) < 0 ? FSCK_ERROR : exit_code(&r);
	if (code != FSCK_ERROR) {
		if (u.json)
			print_json(&u, &r, code);
		else
			print_summary(&u, &r, sa->mode);
	} else if (u.json) {
		print_json_error(&u, code);
	}
	fsck_ui_free(&u);
	return code;
}

/* -A: every chunkfs mount in the mount table, as fsck -A does every
 * filesystem of fstab (the timer's chunkfs-scrub_all.service); the exit
 * codes are or-ed together. */
static int scrub_all(struct scrub_args *sa, const struct fsck_ui *proto)
{
	FILE *f = setmntent("/proc/self/mounts", "r");
	struct mntent *me;
	int code = FSCK_OK;

	if (!f) {
		err_msg("/proc/self/mounts: %s", strerror(errno));
		return FSCK_ERROR;
	}
	while ((me = getmntent(f)))
		if (strcmp(me->mnt_type, "fuse.chunkfs") == 0)
			code |= scrub_mount(sa, proto, me->mnt_dir);
	endmntent(f);
	return code;
}

int cmd_scrub(int argc, char **argv)
{
	struct fsck_ui u = { .progress_fd = -1, .online = 1, .lock = PTHREAD_MUTEX_INITIALIZER };
	struct scrub_args sa = { .mode = -1 };
	int code = parse_args(argc, argv, &sa, &u);

	if (code) {
		if (code == FSCK_ERROR && u.json)
			print_json_error(&u, code);
		fsck_ui_free(&u);
		return code;
	}
	return sa.all ? scrub_all(&sa, &u) : scrub_mount(&sa, &u, u.img);
}

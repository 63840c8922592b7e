/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs mount: the launcher of the FUSE daemon.
 *
 *   chunkfs mount [-f] [-d] [-o OPTIONS] IMAGE DIR
 *   mount.chunkfs IMAGE DIR [-o OPTIONS]        (mount(8) helper conventions)
 *   chunkfs IMAGE DIR -o OPTIONS                (what mount.fuse3 runs for
 *                                                `mount -t fuse.chunkfs`)
 *
 * Option parsing, the checks before mounting, and the daemon's start-up
 * and end; the FUSE operations are in tools/mount_ops.c, the request
 * loop in tools/mount_loop.c.
 *
 * Before mounting, chunks left dirty by a crash are checked and preened
 * (cfs_fsck, as `chunkfs fsck -p`); unmounting (or SIGTERM/SIGINT) ends
 * with cfs_close, which marks every chunk clean.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <unistd.h>

#include "mount.h"

#define DEFAULT_CLEAN   5.0
#define MAX_DEFAULT_THREADS 16

/* ---- options -------------------------------------------------------- */

struct mopts {
	const char *image, *dir;
	bool helper;                    /* mount(8) helper conventions */
	bool foreground, debug, fake;
	bool rdonly, nocheck, remount;
	bool user_dev, user_suid, user_fsname, user_subtype;
	double clean_after;
	enum errors_mode errors;
	double scrub_interval;
	enum atime_mode atime;
	bool diratime;
	bool discard;
	unsigned max_threads;
	char *fuse;                     /* options passed on to libfuse */
};

/* ext4 options seen in fstab files that change nothing a user relies on
 * here: accepted, and named as ignored. */
static bool ext4_harmless(const char *o)
{
	static const char *const names[] = {
		"user_xattr", "lazytime", "nolazytime",
		"noacl", "barrier", "barrier=1", "nobarrier", "barrier=0",
		"errors=panic", "data=ordered",
		"auto_da_alloc", "noauto_da_alloc", "delalloc", "i_version",
		"noquota", "journal_checksum", "block_validity", NULL
	};

	for (int i = 0; names[i]; i++)
		if (strcmp(o, names[i]) == 0)
			return true;
	return strncmp(o, "commit=", 7) == 0 || strncmp(o, "stripe=", 7) == 0;
}

/* ext4 options that promise what chunkfs does not do: refused by name
 * rather than passed to libfuse ("unknown option(s)"). */
static const char *ext4_unsupported(const char *o)
{
	static const char *const names[] = {
		"acl", "nouser_xattr", "data=journal", "data=writeback", "quota",
		"usrquota", "grpquota", "prjquota", "dax", "nodelalloc", "journal_async_commit",
		NULL
	};

	for (int i = 0; names[i]; i++)
		if (strcmp(o, names[i]) == 0)
			return names[i];
	if (strncmp(o, "usrjquota=", 10) == 0 || strncmp(o, "grpjquota=", 10) == 0 ||
	    strncmp(o, "jqfmt=", 6) == 0 || strncmp(o, "resuid=", 7) == 0 ||
	    strncmp(o, "resgid=", 7) == 0 || strncmp(o, "sb=", 3) == 0 ||
	    strncmp(o, "journal_dev=", 12) == 0)
		return o;
	return NULL;
}

/* Options that only mean something to mount(8) and fstab. */
static bool fstab_only(const char *o)
{
	static const char *const names[] = {
		"", "defaults", "auto", "noauto", "user", "nouser", "users", "owner",
		"group", "nofail", "_netdev", "loop", NULL
	};

	for (int i = 0; names[i]; i++)
		if (strcmp(o, names[i]) == 0)
			return true;
	return strncmp(o, "x-", 2) == 0 || strncmp(o, "comment=", 8) == 0;
}

static int add_fuse_opt(struct mopts *o, const char *opt)
{
	return fuse_opt_add_opt(&o->fuse, opt) == 0 ? 0 : -ENOMEM;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v) || v < 0 || v > 1e6)
		return -EINVAL;
	*out = v;
	return 0;
}

/* SECONDS, or a number of days, hours, minutes or seconds: 7d, 12h, 30m, 90s. */
static int parse_interval(const char *s, double *out)
{
	static const struct { char unit; double secs; } units[] = {
		{ 'd', 86400 }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 },
	};
	size_t n = strlen(s);
	char num[32];

	for (size_t i = 0; n > 1 && n < sizeof(num) && i < 4; i++)
		if (s[n - 1] == units[i].unit) {
			memcpy(num, s, n - 1);
			num[n - 1] = 0;
			if (parse_seconds(num, out) < 0 || *out * units[i].secs > 366 * 86400.0)
				return -EINVAL;
			*out *= units[i].secs;
			return 0;
		}
	return parse_seconds(s, out);
}

/* One -o option: ours, one for mount(8) only, or one for libfuse. */
static int mount_opt(struct mopts *o, const char *opt)
{
	uint64_t n;

	if (strncmp(opt, "clean_after=", 12) == 0) {
		if (parse_seconds(opt + 12, &o->clean_after) < 0)
			return usage_error("mount", "bad clean_after '%s' (seconds)", opt + 12);
		return 0;
	}
	if (strncmp(opt, "errors=", 7) == 0 && strcmp(opt, "errors=panic") != 0) {
		if (errors_mode_parse(opt + 7, &o->errors) < 0)
			return usage_error("mount", "bad errors '%s' (continue, remount-ro or "
					   "repair)", opt + 7);
		return 0;
	}
	if (strncmp(opt, "scrub_interval=", 15) == 0) {
		if (parse_interval(opt + 15, &o->scrub_interval) < 0)
			return usage_error("mount", "bad scrub_interval '%s' (seconds, or Nd, "
					   "Nh, Nm, Ns; 0 for none)", opt + 15);
		return 0;
	}
	if (strncmp(opt, "max_threads=", 12) == 0) {
		if (parse_u64(opt + 12, &n) < 0 || n < 1 || n > 1024)
			return usage_error("mount", "bad max_threads '%s' (1-1024)", opt + 12);
		o->max_threads = (unsigned)n;
		return 0;
	}
	if (strcmp(opt, "nocheck") == 0)
		return (o->nocheck = true), 0;
	if (strcmp(opt, "discard") == 0 || strcmp(opt, "nodiscard") == 0)
		return (o->discard = opt[0] == 'd'), 0;
	if (strcmp(opt, "remount") == 0)
		return (o->remount = true), 0;
	if (ext4_harmless(opt)) {
		warn_msg("mount: option '%s' means nothing to chunkfs: ignored", opt);
		return 0;
	}
	if (ext4_unsupported(opt))
		return usage_error("mount", "option '%s' is not supported by chunkfs", opt);
	if (strcmp(opt, "default_permissions") == 0 || fstab_only(opt))
		return 0;               /* always on, or not ours */
	if (strcmp(opt, "ro") == 0)
		o->rdonly = true;
	else if (strcmp(opt, "rw") == 0)
		o->rdonly = false;
	else if (strcmp(opt, "noatime") == 0)
		o->atime = ATIME_OFF;
	else if (strcmp(opt, "relatime") == 0 || strcmp(opt, "atime") == 0)
		o->atime = ATIME_REL;
	else if (strcmp(opt, "strictatime") == 0)
		o->atime = ATIME_STRICT;
	else if (strcmp(opt, "nodiratime") == 0)
		o->diratime = false;
	else if (strcmp(opt, "diratime") == 0)
		o->diratime = true;
	else if (strcmp(opt, "debug") == 0)
		o->debug = o->foreground = true;
	else if (strcmp(opt, "dev") == 0 || strcmp(opt, "nodev") == 0)
		o->user_dev = true;
	else if (strcmp(opt, "suid") == 0 || strcmp(opt, "nosuid") == 0)
		o->user_suid = true;
	else if (strncmp(opt, "fsname=", 7) == 0)
		o->user_fsname = true;
	else if (strncmp(opt, "subtype=", 8) == 0)
		o->user_subtype = true;
	return add_fuse_opt(o, opt) < 0 ? EX_FAIL : 0;
}

/* Split a -o list at commas not escaped by a backslash (libfuse's rule). */
static int mount_opts(struct mopts *o, const char *list)
{
	char *s = strdup(list), *p, *start;
	int ret = 0;

	if (!s)
		return EX_FAIL;
	for (p = start = s; ret == 0; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			continue;
		}
		if (*p && *p != ',')
			continue;
		bool last = !*p;

		*p = 0;
		ret = mount_opt(o, start);
		if (last)
			break;
		start = p + 1;
	}
	free(s);
	return ret;
}

/* mount(8) calls helpers as "mount.TYPE SPEC DIR [-sfnv] [-N NS] [-o OPTS]
 * [-t TYPE]"; -f there means "fake", and -r/-w mean ro/rw. */
static int parse_helper_args(struct mopts *o, int argc, char **argv)
{
	int opt, ret;

	while ((opt = getopt(argc, argv, ":sfnvrwo:t:N:")) != -1) {
		switch (opt) {
		case 's': case 'n': case 'v': case 't':
			break;
		case 'f':
			o->fake = true;
			break;
		case 'r':
			o->rdonly = true;
			break;
		case 'w':
			o->rdonly = false;
			break;
		case 'o':
			if ((ret = mount_opts(o, optarg)) != 0)
				return ret;
			break;
		case 'N':
			return usage_error("mount", "-N (mount namespaces) is not supported");
		default:
			return bad_option("mount", argv, opt);
		}
	}
	return 0;
}

static int parse_cli_args(struct mopts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "options", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 }
	};
	int opt, ret;

	while ((opt = getopt_long(argc, argv, ":fdo:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			o->foreground = true;
			break;
		case 'd':
			o->debug = o->foreground = true;
			break;
		case 'o':
			if ((ret = mount_opts(o, optarg)) != 0)
				return ret;
			break;
		default:
			return bad_option("mount", argv, opt);
		}
	}
	return 0;
}

static int parse_args(struct mopts *o, int argc, char **argv)
{
	int ret;

	opterr = 0;
	ret = o->helper ? parse_helper_args(o, argc, argv) : parse_cli_args(o, argc, argv);
	if (ret)
		return ret;
	if (argc - optind != 2)
		return usage_error("mount", argc - optind < 2 ? "IMAGE and DIR are required" :
				   "too many arguments");
	o->image = argv[optind];
	o->dir = argv[optind + 1];
	return 0;
}

/* The options libfuse gets: the user's, plus default_permissions (the
 * kernel checks modes and owners), the image as the source in
 * /proc/mounts, type fuse.chunkfs, and, as root, dev and suid as for any
 * kernel filesystem (mount.fuse3 does the same). */
static int final_fuse_opts(struct mopts *o, const char *image)
{
	char *fsname = NULL;
	int ret = 0;

	if (!o->user_fsname) {
		ret = fuse_opt_add_opt_escaped(&fsname, image);
		if (ret == 0) {
			size_t len = strlen(fsname) + 8;
			char *opt = malloc(len);

			ret = -1;
			if (opt) {
				snprintf(opt, len, "fsname=%s", fsname);
				ret = fuse_opt_add_opt(&o->fuse, opt);
				free(opt);
			}
		}
		free(fsname);
	}
	if (ret == 0 && !o->user_subtype)
		ret = fuse_opt_add_opt(&o->fuse, "subtype=chunkfs");
	if (ret == 0)
		ret = fuse_opt_add_opt(&o->fuse, "default_permissions");
	if (ret == 0 && geteuid() == 0 && !o->user_dev)
		ret = fuse_opt_add_opt(&o->fuse, "dev");
	if (ret == 0 && geteuid() == 0 && !o->user_suid)
		ret = fuse_opt_add_opt(&o->fuse, "suid");
	return ret == 0 ? 0 : -ENOMEM;
}

/* ---- opening the image ---------------------------------------------- */

/* "1,3,7" of the chunks that are not clean; returns how many. */
static uint32_t dirty_list(struct cfs_fs *fs, char *buf, size_t len)
{
	struct cfs_info info;
	uint32_t c, n = 0;
	size_t used = 0;

	buf[0] = 0;
	cfs_get_info(fs, &info);
	for (c = 0; c < info.chunks; c++) {
		struct cfs_chunk_info ci;

		if (cfs_get_chunk_info(fs, c, &ci) < 0 || ci.state == CFS_CHUNK_CLEAN)
			continue;
		if (used + 16 < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%u", n ? "," : "", c);
		else if (used + 4 < len && buf[used - 1] != '.')
			used += (size_t)snprintf(buf + used, len - used, ",...");
		n++;
	}
	return n;
}

/* A read-only mount takes no write lock in the library; a shared lock of
 * our own keeps writers (another mount, chunkfs put) out meanwhile. */
static int lock_shared(const char *image, int *fd)
{
	*fd = open(image, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	if (flock(*fd, LOCK_SH | LOCK_NB) < 0) {
		int ret = errno == EWOULDBLOCK ? -EBUSY : -errno;

		close(*fd);
		*fd = -1;
		return ret;
	}
	return 0;
}

/* Problems fsck reports while preening, shown as they come. */
static void preen_report(void *ctx, const char *msg)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static unsigned shown;
	const char *img = ctx;

	pthread_mutex_lock(&lock);
	if (shown++ < 40)
		fprintf(stderr, "%s: %s: %s\n", tool_prog, img, msg);
	pthread_mutex_unlock(&lock);
}

/* The dirty chunks of image, read-only, for a message. */
static const char *list_of(const char *image, char *buf, size_t len)
{
	struct cfs_fs *fs;

	snprintf(buf, len, "?");
	if (cfs_open(image, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs) == 0) {
		dirty_list(fs, buf, len);
		cfs_close(fs);
	}
	return buf;
}

/* Check and repair the chunks that need it, as `chunkfs fsck -p` does:
 * 0 when the image may now be mounted, an error when a person is needed. */
static int preen(const struct mopts *o, const char *image)
{
	struct cfs_fsck_opts fo = { .mode = CFS_FSCK_PREEN, .report = preen_report,
				    .ctx = (void *)o->image };
	struct cfs_fsck_result r;
	struct cfs_fs *fs;
	char list[256];
	int ret, cret;

	ret = cfs_open(image, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs);
	if (ret == -EACCES || ret == -EPERM || ret == -EROFS) {
		err_msg("%s: chunks %s need checking, but the image is not writable (%s): "
			"mount it with -o ro,nocheck to look at it unchecked", o->image,
			list_of(image, list, sizeof(list)), errstr(ret));
		return ret;
	}
	if (ret < 0) {
		err_msg("%s: %s", o->image, cfs_last_error());
		return ret;
	}
	dirty_list(fs, list, sizeof(list));
	ret = cfs_fsck(fs, &fo, &r);
	cret = cfs_close(fs);
	if (ret < 0 || cret < 0) {
		err_msg("%s: checking chunks %s failed: %s", o->image, list,
			errstr(ret < 0 ? ret : cret));
		return ret < 0 ? ret : cret;
	}
	fprintf(stderr, "%s: %s: checked %u of %u chunks (%s%s) in %.3fs: ", tool_prog,
		o->image, r.checked, r.chunks, list,
		r.escalated ? "; lost directory entries: every chunk" : "", r.seconds);
	if (!r.problems)
		fprintf(stderr, "no problems\n");
	else
		fprintf(stderr, "%llu problem%s, %llu fixed\n", (unsigned long long)r.problems,
			r.problems > 1 ? "s" : "", (unsigned long long)r.fixed);
	if (r.unfixed) {
		err_msg("%s: %llu problem%s need%s a person: run chunkfs fsck %s", o->image,
			(unsigned long long)r.unfixed, r.unfixed > 1 ? "s" : "",
			r.unfixed > 1 ? "" : "s", o->image);
		return -EUCLEAN;
	}
	return 0;
}

/* Chunks left dirty by a crash are checked (and preened) before the
 * mount, unless -o nocheck.  A read-only look tells whether any are. */
static int check_before_mount(const struct mopts *o, const char *image)
{
	struct cfs_fs *fs;
	char list[256];
	uint32_t n;
	int ret = cfs_open(image, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs);

	if (ret < 0) {
		err_msg("%s: %s", o->image, cfs_last_error());
		return ret;
	}
	n = dirty_list(fs, list, sizeof(list));
	cfs_close(fs);
	if (!n || o->nocheck)
		return 0;
	return preen(o, image);
}


static int open_image(const struct mopts *o, const char *image, struct cfs_fs **fs,
		      int *lockfd)
{
	int flags = o->rdonly ? CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK : 0;
	struct img_use use;
	char list[256];
	uint32_t n;
	int ret;

	*lockfd = -1;
	img_wait(image, &use);
	ret = check_before_mount(o, image);
	if (ret < 0)
		return ret;
	if (o->nocheck)
		flags |= CFS_OPEN_NOCHECK;
	if (o->rdonly && (ret = lock_shared(image, lockfd)) < 0) {
		err_msg("%s: %s", o->image, ret == -EBUSY ?
			"image is in use by another process (mounted?)" : errstr(ret));
		return ret;
	}
	ret = cfs_open(image, flags, fs);
	if (ret < 0) {
		err_msg("%s: %s", o->image, cfs_last_error());
		return ret;
	}
	n = dirty_list(*fs, list, sizeof(list));
	if (n && !o->nocheck) {
		/* dirtied by someone else between the check and now */
		err_msg("%s: %u chunk%s need checking (%s): run chunkfs fsck", o->image,
			n, n > 1 ? "s" : "", list);
		return -EUCLEAN;
	}
	if (n)
		warn_msg("%s: mounting with %u unchecked chunk%s (%s): -o nocheck",
			 o->image, n, n > 1 ? "s" : "", list);
	return 0;
}

/* ---- main ----------------------------------------------------------- */

/* In the background, the daemon's complaints go to syslog (fuse_log's
 * levels are syslog's priorities). */
static void log_to_syslog(enum fuse_log_level level, const char *fmt, va_list ap)
{
	vsyslog((int)level, fmt, ap);
}

static void daemonize(const struct mopts *o)
{
	fuse_daemonize(o->foreground);
	if (o->foreground)
		return;
	openlog("chunkfs", LOG_PID, LOG_DAEMON);
	fuse_set_log_func(log_to_syslog);
}

/* A FUSE mount at dir whose daemon is gone (killed) answers everything
 * with ENOTCONN; mounting on top of it would stack a second mount over
 * a dead one.  A dead mount of this same image is replaced, anything
 * else is left to the user. */
static int check_dead_mount(const struct mopts *o, const char *image)
{
	struct mount_entry e;
	struct statvfs sv;
	int ret = mount_at(o->dir, &e);

	if (ret <= 0 || strncmp(e.type, "fuse", 4) != 0)
		return 0;
	if (statvfs(o->dir, &sv) == 0 || errno != ENOTCONN)
		return 0;
	if (strcmp(e.type, "fuse.chunkfs") != 0 || strcmp(e.src, image) != 0) {
		err_msg("%s: a dead mount is still attached: run umount %s (fusermount3 "
			"-u %s) first", o->dir, o->dir, o->dir);
		return -1;
	}
	ret = mount_detach(e.dir);
	if (ret < 0) {
		err_msg("%s: a dead mount of %s is still attached and could not be "
			"removed (%s): run umount %s (fusermount3 -u %s) first", o->dir,
			o->image, errstr(ret), o->dir, o->dir);
		return -1;
	}
	warn_msg("%s: replaced a dead mount of %s (its daemon had gone)", o->dir, o->image);
	return 0;
}

static int check_mountpoint(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) < 0) {
		err_host(dir, -errno);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		err_host(dir, -ENOTDIR);
		return -1;
	}
	return 0;
}

static struct fuse_session *session_new(struct mnt *m, struct mopts *o)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL;

	if (fuse_opt_add_arg(&args, tool_prog) == 0 &&
	    (!o->debug || fuse_opt_add_arg(&args, "-d") == 0) &&
	    fuse_opt_add_arg(&args, "-o") == 0 && fuse_opt_add_arg(&args, o->fuse) == 0) {
		/* max_write=, max_background= and friends tune conn */
		m->conn_opts = fuse_parse_conn_info_opts(&args);
		if (m->conn_opts)
			se = fuse_session_new(&args, &chunkfs_ops, sizeof(chunkfs_ops), m);
	}
	fuse_opt_free_args(&args);
	return se;
}

static int serve(struct mnt *m, struct mopts *o)
{
	sigset_t old;
	int ret;

	mount_loop_block_signals(&old);
	cfs_set_block_fn(m->fs, mount_loop_block, NULL);
	ret = cleaner_start(m);
	if (ret == 0)
		ret = scrubber_start(m);
	if (ret == 0)
		ret = mount_loop(m->se, o->max_threads, &old);
	scrubber_stop(m);
	cleaner_stop(m);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

static int run_mount(struct mopts *o, const char *image)
{
	struct mnt m = { .timeout = ATTR_TIMEOUT, .entry_timeout = ENTRY_TIMEOUT,
			 .atime = o->atime,
			 .diratime = o->diratime, .rdonly = o->rdonly,
			 .discard = o->discard && !o->rdonly,
			 .clean_after = o->clean_after,
			 .image = o->image, .dir = o->dir, .errors = o->errors,
			 .scrub_interval = o->scrub_interval };
	int lockfd, ret, status = EX_FAIL;

	pthread_mutex_init(&m.wlock, NULL);
	pthread_mutex_init(&m.nlock, NULL);
	if (check_dead_mount(o, image) < 0 || check_mountpoint(o->dir) < 0 ||
	    final_fuse_opts(o, image) < 0)
		return EX_FAIL;
	if (open_image(o, image, &m.fs, &lockfd) < 0)
		goto out;
	m.se = session_new(&m, o);
	if (!m.se)
		goto out;
	/* A shell starts background jobs with SIGINT ignored, and libfuse
	 * only catches signals left at their default: SIGINT and SIGTERM
	 * must unmount however we were started.  (SIGHUP keeps its
	 * disposition, so nohup still works.) */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (fuse_set_signal_handlers(m.se) != 0)
		goto out_session;
	if (fuse_session_mount(m.se, o->dir) != 0)
		goto out_signals;
	space_setup(&m);
	/* errors past this point go to syslog unless in the foreground */
	daemonize(o);
	ret = serve(&m, o);
	if (ret < 0)
		fuse_log(FUSE_LOG_ERR, "chunkfs: %s: %s\n", o->dir, errstr(ret));
	else
		status = EX_OK;
	fuse_session_unmount(m.se);
	if (getenv("CHUNKFS_REQUEST_COUNTS"))
		req_counts_write(getenv("CHUNKFS_REQUEST_COUNTS"));
out_signals:
	fuse_remove_signal_handlers(m.se);
out_session:
	fuse_session_destroy(m.se);
out:
	/* cfs_close writes everything and marks every chunk clean */
	if (m.fs && cfs_close(m.fs) < 0) {
		fuse_log(FUSE_LOG_ERR, "chunkfs: %s: closing the image failed; chunks stay "
			 "dirty\n", o->image);
		status = EX_FAIL;
	}
	if (lockfd >= 0)
		close(lockfd);
	writers_free(&m);
	free(m.conn_opts);
	return status;
}

/* An image file the user may not write (mode 0444, chattr +i, a
 * read-only filesystem) is mounted read-only with a warning, as the
 * kernel does for a write-protected device. */
static int check_writable(struct mopts *o, const char *image)
{
	int fd;

	if (o->rdonly)
		return 0;
	fd = open(image, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno != EACCES && errno != EPERM && errno != EROFS)
		return 0;               /* opening the image reports it */
	warn_msg("%s is not writable (%s): mounting read-only", o->image, strerror(errno));
	o->rdonly = true;
	return add_fuse_opt(o, "ro");
}

/* -o remount,ro or remount,rw of a chunkfs mount at DIR: the kernel
 * writes back what it holds and then refuses (or again allows) writes;
 * the daemon goes on as it is.  A daemon started read-only (no write
 * lock on the image) cannot take writes: that needs a new mount. */
static int remount(const struct mopts *o, const char *image)
{
	static const struct { unsigned long st, ms; } keep[] = {
		{ ST_NOSUID, MS_NOSUID }, { ST_NODEV, MS_NODEV }, { ST_NOEXEC, MS_NOEXEC },
		{ ST_SYNCHRONOUS, MS_SYNCHRONOUS }, { ST_NOATIME, MS_NOATIME },
		{ ST_NODIRATIME, MS_NODIRATIME }, { ST_RELATIME, MS_RELATIME },
	};
	unsigned long flags = MS_REMOUNT | (o->rdonly ? MS_RDONLY : 0);
	struct mount_entry e;
	struct statvfs sv;
	struct img_use use;

	if (mount_at(o->dir, &e) <= 0 || strcmp(e.type, "fuse.chunkfs") != 0) {
		err_msg("%s: not a chunkfs mount, nothing to remount", o->dir);
		return EX_FAIL;
	}
	if (strcmp(e.src, image) != 0) {
		err_msg("%s: a mount of %s, not of %s", o->dir, e.src, o->image);
		return EX_FAIL;
	}
	if (statvfs(o->dir, &sv) < 0) {
		err_host(o->dir, -errno);
		return EX_FAIL;
	}
	img_wait(image, &use);
	if (!o->rdonly && !use.busy) {
		err_msg("%s was mounted read-only (-o ro): unmount it and mount it again "
			"to write", o->dir);
		return EX_FAIL;
	}
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		if (sv.f_flag & keep[i].st)
			flags |= keep[i].ms;
	if (mount(e.src, e.dir, e.type, flags, NULL) < 0) {
		if (errno == EPERM)
			err_msg("%s: remounting needs root (fusermount3 cannot remount): "
				"unmount it and mount it again%s", o->dir,
				o->rdonly ? " with -o ro" : "");
		else
			err_msg("%s: remount failed: %s", o->dir, strerror(errno));
		return EX_FAIL;
	}
	return EX_OK;
}

/* Called by mount.fuse3 as "chunkfs IMAGE DIR -o OPTS" (its convention
 * for type fuse.chunkfs; it always passes -o, with at least dev,suid):
 * IMAGE is no command name, DIR is a directory.  Without the -o it is
 * more likely a typo than a mount, and no mount is made. */
bool mount_helper_call(int argc, char **argv);

bool mount_helper_call(int argc, char **argv)
{
	struct stat st;

	return argc == 5 && strcmp(argv[3], "-o") == 0 && argv[1][0] != '-' &&
	       stat(argv[2], &st) == 0 && S_ISDIR(st.st_mode) &&
	       stat(argv[1], &st) == 0 && !S_ISDIR(st.st_mode);
}

/* One worker per CPU, at least two (one can wait on the disk, say in an
 * fsync, while the other serves).  More only cost: every idle worker
 * waits in read(2) on /dev/fuse and the kernel wakes the one that has
 * waited longest, so a serial workload hands each request to another
 * thread; 16 workers on 2 CPUs were up to 1.4x slower than 2 at
 * create/stat/unlink, and slower with 4 processes in parallel too. */
static unsigned default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 2)
		return 2;
	return n > MAX_DEFAULT_THREADS ? MAX_DEFAULT_THREADS : (unsigned)n;
}

int cmd_mount(int argc, char **argv);

int cmd_mount(int argc, char **argv)
{
	struct mopts o = { .clean_after = DEFAULT_CLEAN, .atime = ATIME_REL,
			   .diratime = true, .max_threads = default_threads() };
	char *image;
	int ret;

	o.helper = strncmp(tool_prog, "mount.", 6) == 0 || strcmp(argv[0], "mount") != 0;
	ret = parse_args(&o, argc, argv);
	if (ret == 0 && o.fake)
		ret = EX_OK;
	else if (ret == 0) {
		/* the daemon leaves the working directory */
		image = realpath(o.image, NULL);
		if (!image) {
			err_host(o.image, -errno);
			ret = EX_FAIL;
		} else {
			if (o.remount)
				ret = remount(&o, image);
			else if (check_writable(&o, image) < 0)
				ret = EX_FAIL;
			else
				ret = run_mount(&o, image);
			free(image);
		}
	}
	free(o.fuse);
	return ret;
}


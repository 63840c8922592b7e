/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs mount: the launcher of the FUSE daemon.
 *
 *   chunkfs mount [-f] [-d] [-o OPTIONS] IMAGE DIR
 *   mount.chunkfs IMAGE DIR [-o OPTIONS]        (mount(8) helper conventions)
 *   chunkfs IMAGE DIR -o OPTIONS                (what mount.fuse3 runs for
 *                                                `mount -t fuse.chunkfs`)
 *
 * The command line, the checks before mounting, and the daemon's start-up
 * and end; what each -o option means is in tools/mount_opts.c, the FUSE
 * operations in daemon/ops.c, the request loop in daemon/loop.c.
 *
 * Before mounting, chunks left dirty by a crash are checked and preened
 * (cfs_fsck, as `chunkfs fsck -p`); unmounting (or SIGTERM/SIGINT) ends
 * with cfs_close, which marks every chunk clean.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "daemon.h"
#include "tune.h"

/* ---- options -------------------------------------------------------- */

/* The -o lists of the command line (-r and -w as "ro" and "rw"), in their
 * order: they are applied after the image's defaults, which they override. */
struct opt_lists {
	const char **list;
	size_t n;
};

/* mount(8) calls helpers as "mount.TYPE SPEC DIR [-sfnv] [-N NS] [-o OPTS]
 * [-t TYPE]"; -f there means "fake", and -r/-w mean ro/rw. */
static int parse_helper_args(struct mopts *o, int argc, char **argv, struct opt_lists *l)
{
	int opt;

	while ((opt = getopt(argc, argv, ":sfnvrwo:t:N:")) != -1) {
		switch (opt) {
		case 's': case 'n': case 'v': case 't':
			break;
		case 'f':
			o->fake = true;
			break;
		case 'r':
			l->list[l->n++] = "ro";
			break;
		case 'w':
			l->list[l->n++] = "rw";
			break;
		case 'o':
			l->list[l->n++] = optarg;
			break;
		case 'N':
			return usage_error("mount", "-N (mount namespaces) is not supported");
		default:
			return bad_option("mount", argv, opt);
		}
	}
	return 0;
}

static int parse_cli_args(struct mopts *o, int argc, char **argv, struct opt_lists *l)
{
	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "options", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 }
	};
	int opt;

	while ((opt = getopt_long(argc, argv, ":fdo:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			o->foreground = true;
			break;
		case 'd':
			o->debug = o->foreground = true;
			break;
		case 'o':
			l->list[l->n++] = optarg;
			break;
		default:
			return bad_option("mount", argv, opt);
		}
	}
	return 0;
}

/* The image's default mount options (chunkfs tune -o).  An image that
 * cannot be read has none: opening it for the mount says what is wrong. */
static int stored_defaults(struct mopts *o)
{
	char opts[CFS_TUNE_TEXT_MAX + 1] = "";
	struct cfs_fs *fs;

	if (cfs_open(o->image, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs) == 0) {
		cfs_tune_mount_opts(fs, opts);
		cfs_close(fs);
	}
	return *opts ? mopts_parse(o, opts, MOPTS_STORED) : 0;
}

static int parse_args(struct mopts *o, int argc, char **argv)
{
	struct opt_lists l = { .list = calloc((size_t)argc, sizeof(*l.list)) };
	int ret;

	if (!l.list)
		return EX_FAIL;
	opterr = 0;
	ret = o->helper ? parse_helper_args(o, argc, argv, &l) :
			  parse_cli_args(o, argc, argv, &l);
	if (ret == 0 && argc - optind != 2)
		ret = usage_error("mount", argc - optind < 2 ? "IMAGE and DIR are required" :
				  "too many arguments");
	if (ret == 0) {
		o->image = argv[optind];
		o->dir = argv[optind + 1];
		ret = stored_defaults(o);
	}
	for (size_t i = 0; ret == 0 && i < l.n; i++)
		ret = mopts_parse(o, l.list[i], MOPTS_CMDLINE);
	free(l.list);
	return ret;
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
	if (ret == 0 && o->atime == ATIME_OFF)
		ret = fuse_opt_add_opt(&o->fuse, "noatime");
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
	if (o->noacl)
		flags |= CFS_OPEN_NOACL;
	if (o->rdonly && (ret = lock_shared(image, lockfd)) < 0) {
		err_msg("%s: %s", o->image, ret == -EBUSY ?
			"image is in use by another process (mounted?)" : errstr(ret));
		return ret;
	}
	ret = cfs_open_ext(image, &(struct cfs_open_opts){ .struct_size =
			   sizeof(struct cfs_open_opts), .flags = flags,
			   .cache_bytes = o->cache_bytes }, fs);
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

/* ---- starting the daemon -------------------------------------------- */

/* Whether the mount serves: a thread of the daemon asks for the mount's
 * statfs, which the kernel holds back until the daemon has answered its
 * first request (INIT), then hands to a worker.  A daemon whose INIT
 * fails, or which dies, never answers: the kernel fails the statfs once
 * the daemon's /dev/fuse is closed.  Until the answer the launcher waits
 * and the daemon's errors still go to the terminal. */
struct ready {
	const char *dir;        /* absolute: the daemon leaves the working directory */
	int fd;                 /* to the waiting launcher; -1: none (foreground) */
	pthread_t thread;
	bool started;
	/* the answer, read after the thread is joined: the mount served, or
	 * someone unmounted it first (the statfs was the directory's) */
	bool serving, gone;
};

/* Once serving, the daemon's complaints go to syslog (fuse_log's levels
 * are syslog's priorities). */
static void log_to_syslog(enum fuse_log_level level, const char *fmt, va_list ap)
{
	vsyslog((int)level, fmt, ap);
}

static void *ready_probe(void *arg)
{
	struct ready *r = arg;
	struct statfs sf;
	int null;

	if (statfs(r->dir, &sf) < 0)
		return NULL;
	r->gone = sf.f_type != FUSE_SUPER_MAGIC;
	r->serving = !r->gone;
	if (r->serving && r->fd >= 0) {
		openlog("chunkfs", LOG_PID, LOG_DAEMON);
		fuse_set_log_func(log_to_syslog);
		null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
			close(null);
		}
		if (write(r->fd, "", 1) != 1)
			syslog(LOG_ERR, "%s: telling the launcher failed: %m", r->dir);
		close(r->fd);
		r->fd = -1;
	}
	if (r->serving)
		fuse_log(FUSE_LOG_INFO, "chunkfs: %s: serving over %s\n", r->dir,
			 mount_uring_serving() ? "io_uring" : "/dev/fuse");
	return NULL;
}

/* With the signals blocked (no handler may run in the probe). */
static int ready_start(struct ready *r)
{
	int ret = -pthread_create(&r->thread, NULL, ready_probe, r);

	r->started = ret == 0;
	return ret;
}

/* Once the daemon's /dev/fuse is closed, which answers a probe still
 * waiting: a mount whose loop ended as it should but which never served
 * (its INIT failed) failed. */
static int ready_join(struct ready *r, const struct mopts *o, int status)
{
	if (!r->started)
		return status;
	pthread_join(r->thread, NULL);
	if (status != EX_OK || r->serving || r->gone)
		return status;
	fuse_log(FUSE_LOG_ERR, "chunkfs: %s: the mount ended before it served\n", o->dir);
	return EX_FAIL;
}

/* The launcher, in the background: exit as the daemon reports, 0 once it
 * serves.  A daemon that ended before said why on the terminal; one
 * killed left a dead mount, removed here. */
static int launcher_wait(const struct mopts *o, const char *dir, pid_t pid, int fd)
{
	struct statvfs sv;
	ssize_t n;
	char c;
	int st;

	do
		n = read(fd, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		return EX_OK;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return EX_FAIL;
	if (WIFEXITED(st) && WEXITSTATUS(st) != EX_OK)
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		err_msg("%s: the daemon was killed (signal %d) before it served", o->dir,
			WTERMSIG(st));
	else
		err_msg("%s: the daemon ended before it served", o->dir);
	if (statvfs(dir, &sv) < 0 && errno == ENOTCONN)
		mount_detach(dir);
	return EX_FAIL;
}

/* In the background, a fork: the launcher waits for the daemon (above);
 * the daemon leaves the terminal's session.  Either way the daemon leaves
 * the working directory. */
static int daemonize(const struct mopts *o, struct fuse_session *se, struct ready *r)
{
	int fds[2];
	pid_t pid;

	if (chdir("/") < 0)
		return -errno;
	if (o->foreground)
		return 0;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (pid > 0) {
		close(fds[1]);
		/* The mount and the image are the daemon's now: no cleanup.
		 * The kernel ends a mount when the last /dev/fuse descriptor
		 * closes: not this copy. */
		close(fuse_session_fd(se));
		/* libfuse's handlers would only end a session it no longer
		 * serves: ^C while waiting stops the waiting */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		_exit(launcher_wait(o, r->dir, pid, fds[0]));
	}
	close(fds[0]);
	r->fd = fds[1];
	setsid();
	return 0;
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

void mount_version(FILE *f)
{
	fprintf(f, "libfuse %s; FUSE over io_uring: %s\n", fuse_pkgversion(),
		!mount_uring_built() ? "not in this libfuse (3.18 or later has it)" :
		mount_uring_kernel_on() ? "yes (-o io_uring)" :
		"built in, off in the kernel");
}

/* Ring entries per CPU.  A request passed to the pool keeps its entry
 * until its reply, and some wait for others (a writer's getattr while
 * space is low waits for the WRITEs of the pages it has the kernel write
 * back), so libfuse's 8 can run out under a few writers.  An entry's
 * buffer is max_write (1 MiB), touched only when a request that large
 * uses it. */
#define URING_Q_DEPTH "64"

/* Which transport the mount asks for: io_uring where this build and the
 * kernel have it (said once when the kernel has it off), unless
 * no_io_uring; -o io_uring where it cannot be had is an error. */
static int pick_transport(struct mnt *m, struct mopts *o)
{
	bool kernel = mount_uring_kernel_on();

	m->uring = false;
	/* libfuse's own switch, for running a test suite on both transports
	 * without changing its every mount: an explicit option wins */
	if (o->transport == TRANSPORT_AUTO && getenv("FUSE_URING_ENABLE"))
		o->transport = atoi(getenv("FUSE_URING_ENABLE")) ? TRANSPORT_URING :
			       TRANSPORT_DEV;
	if (o->transport == TRANSPORT_DEV || !mount_uring_built() ||
	    (o->transport == TRANSPORT_AUTO && !kernel))
		/* or libfuse would take the ring with the table of /dev/fuse */
		setenv("FUSE_URING_ENABLE", "0", 1);
	if (o->transport == TRANSPORT_DEV)
		return 0;
	if (!mount_uring_built()) {
		if (o->transport == TRANSPORT_URING) {
			err_msg("%s: -o io_uring: this chunkfs was built with libfuse %s, "
				"which has no FUSE over io_uring (3.18 or later has)",
				o->dir, fuse_pkgversion());
			return -1;
		}
		return 0;
	}
	if (!kernel) {
		char how[256];

		snprintf(how, sizeof(how), "as root, echo Y > %s (or boot with "
			 "fuse.enable_uring=1)", mount_uring_param());
		if (o->transport == TRANSPORT_URING) {
			err_msg("%s: -o io_uring: the kernel has FUSE over io_uring off or "
				"lacks it; to turn it on: %s", o->dir, how);
			return -1;
		}
		/* The default: said once, at mount.  A kernel without the
		 * parameter has nothing to turn on. */
		if (access(mount_uring_param(), F_OK) == 0)
			fprintf(stderr, "%s: %s: serving over /dev/fuse: the kernel has "
				"FUSE over io_uring off; to turn it on: %s "
				"(-o no_io_uring: no such note)\n", tool_prog, o->dir, how);
		return 0;
	}
	m->uring = true;
	return 0;
}

/* The init of the table the session serves with (chunkfs_ops', or the
 * io_uring table's, which says which transport the kernel took). */
static void (*table_init)(void *userdata, struct fuse_conn_info *conn);

/* libfuse 3 fails the kernel's first request (and the daemon ends)
 * unless init repeats the max_read= the kernel was given. */
static void mount_init(void *userdata, struct fuse_conn_info *conn)
{
	struct mnt *m = userdata;

	table_init(userdata, conn);
	conn->max_read = m->max_read;
#ifdef CFS_TEST_HOOKS
	/* tests/mount/cli.sh: a daemon that dies before it serves (the test
	 * build only: the installed daemon reads no test hook) */
	if (getenv("CHUNKFS_TEST_KILL_AT_INIT"))
		raise(SIGKILL);
#endif
}

static struct fuse_session *session_new(struct mnt *m, struct mopts *o)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL;
	/* libfuse keeps a copy of the table */
	struct fuse_lowlevel_ops ops = m->uring ? mount_uring_ops() : chunkfs_ops;

	table_init = ops.init;
	ops.init = mount_init;
	if (fuse_opt_add_arg(&args, tool_prog) == 0 &&
	    (!o->debug || fuse_opt_add_arg(&args, "-d") == 0) &&
	    fuse_opt_add_arg(&args, "-o") == 0 && fuse_opt_add_arg(&args, o->fuse) == 0 &&
	    (!m->uring || fuse_opt_add_arg(&args, "-oio_uring,io_uring_q_depth="
					   URING_Q_DEPTH) == 0)) {
		/* max_write=, max_background= and friends tune conn */
		m->conn_opts = fuse_parse_conn_info_opts(&args);
		if (m->conn_opts)
			se = fuse_session_new(&args, &ops, sizeof(ops), m);
	}
	fuse_opt_free_args(&args);
	return se;
}

static int serve(struct mnt *m, struct mopts *o, struct ready *r)
{
	sigset_t old;
	int ret;

	mount_loop_block_signals(&old);
	cfs_set_block_fn(m->fs, mount_loop_block, NULL);
	ret = cleaner_start(m);
	if (ret == 0)
		ret = scrubber_start(m);
	if (ret == 0 && m->uring)
		ret = mount_uring_start(o->max_threads);
	if (ret == 0)
		ret = ready_start(r);
	if (ret == 0)
		ret = mount_loop(m->se, o->max_threads, &old);
	if (m->uring)
		mount_uring_stop(m->se);
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
			 .discard = o->discard && !o->rdonly, .noacl = o->noacl,
			 .clean_after = o->clean_after,
			 .image = o->image, .dir = o->dir, .errors = o->errors,
			 .scrub_interval = o->scrub_interval, .max_read = o->max_read };
	struct ready r = { .fd = -1 };
	char *dir = NULL;
	int lockfd = -1, ret, status = EX_FAIL;

	pthread_mutex_init(&m.wlock, NULL);
	pthread_mutex_init(&m.nlock, NULL);
	if (check_dead_mount(o, image) < 0 || check_mountpoint(o->dir) < 0 ||
	    final_fuse_opts(o, image) < 0)
		return EX_FAIL;
	/* absolute, for the unmount after the daemon left the directory */
	dir = realpath(o->dir, NULL);
	if (!dir) {
		err_host(o->dir, -errno);
		return EX_FAIL;
	}
	r.dir = dir;
	if (pick_transport(&m, o) < 0)
		goto out;
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
	if (fuse_session_mount(m.se, dir) != 0)
		goto out_signals;
	space_setup(&m);
	ret = daemonize(o, m.se, &r);
	if (ret == 0)
		ret = serve(&m, o, &r);
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
	status = ready_join(&r, o, status);
	if (r.fd >= 0)
		close(r.fd);
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
	free(dir);
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
	return mopts_add_fuse(o, "ro") < 0 ? -ENOMEM : 0;
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
	if (!img_same(e.src, image)) {
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
bool mount_helper_call(int argc, char **argv)
{
	struct stat st;

	return argc == 5 && strcmp(argv[3], "-o") == 0 && argv[1][0] != '-' &&
	       stat(argv[2], &st) == 0 && S_ISDIR(st.st_mode) &&
	       stat(argv[1], &st) == 0 && !S_ISDIR(st.st_mode);
}

int cmd_mount(int argc, char **argv)
{
	struct mopts o;
	char *image;
	int ret;

	mopts_init(&o);

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
	mopts_free(&o);
	return ret;
}


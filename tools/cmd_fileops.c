/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Offline file access: ls, stat, cat, mkdir, rm, ln, mv. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "tool.h"

static mode_t current_umask(void)
{
	mode_t m = umask(0);

	umask(m);
	return m;
}

/* Parse options that are all plain flags; returns EX_OK, or the exit
 * status of a usage error.  flags[i] is set for optstring letter i. */
static int parse_flags(const char *cmd, int argc, char **argv, const char *letters,
		       bool *flags)
{
	char optstring[32];
	int c;

	snprintf(optstring, sizeof(optstring), ":%s", letters);
	opterr = 0;
	while ((c = getopt_long(argc, argv, optstring, NULL, NULL)) != -1) {
		const char *p = c > 0 && c != ':' && c != '?' ? strchr(letters, c) : NULL;

		if (!p)
			return bad_option(cmd, argv, c);
		flags[p - letters] = true;
	}
	return EX_OK;
}

/* Where ls, stat and cat read: the image, or, while it is mounted, its
 * mount point (root, a directory descriptor).  What is on disk lags
 * behind the mount (by up to clean_after seconds, and the kernel's
 * writeback) and changes under an offline reader; through the mount
 * point they are ordinary reads of the live filesystem. */
struct src {
	struct cfs_fs *fs;              /* NULL: through the mount */
	int root;
	char mnt[4096];
};

/* Check the operand count and open the image named by argv[optind]: to
 * read (s given), through its mount point while it is mounted. */
static int open_operands(const char *cmd, int argc, char **argv, int min, int max,
			 bool rdonly, struct cfs_fs **fs, struct src *s)
{
	int n = argc - optind;
	struct img_use use;

	if (n < 1)
		return usage_error(cmd, "no IMAGE given");
	if (n - 1 < min)
		return usage_error(cmd, "missing operand after '%s'", argv[argc - 1]);
	if (max >= 0 && n - 1 > max)
		return usage_error(cmd, "too many arguments (first extra: '%s')",
				   argv[optind + 1 + max]);
	if (s) {
		img_wait(argv[optind], &use);
		s->fs = NULL;
		s->root = -1;
		snprintf(s->mnt, sizeof(s->mnt), "%s", use.mnt);
		if (use.mnt[0]) {
			s->root = open(use.mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (s->root >= 0)
				return EX_OK;
			err_msg("%s is mounted on %s, which cannot be read: %s", argv[optind],
				use.mnt, errstr(-errno));
			return EX_FAIL;
		}
		warn_mount_unknown(argv[optind], &use);
	}
	if (img_open(argv[optind], rdonly, fs) < 0)
		return EX_FAIL;
	if (s)
		s->fs = *fs;
	return EX_OK;
}

static int close_src(struct src *s, const char *img, int status)
{
	if (s->fs)
		return img_close(s->fs, img, status);
	close(s->root);
	return status;
}

static int resolve(struct cfs_fs *fs, const char *path, int follow, cfs_ino_t *ino,
		   struct cfs_stat *st)
{
	int ret = cfs_path_resolve(fs, path, follow, ino);

	if (ret >= 0 && st)
		ret = cfs_getattr(fs, *ino, st);
	return ret < 0 ? ret : 0;
}

static int flush_stdout(void)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		err_msg("writing standard output: %s", errstr(-errno));
		return EX_FAIL;
	}
	return EX_OK;
}

/* A symlink's target, malloc'd and NUL-terminated. */
static int read_link(struct cfs_fs *fs, cfs_ino_t ino, char **out)
{
	size_t cap = 256;
	char *buf = NULL;
	ssize_t n;

	for (;;) {
		char *nb = realloc(buf, cap + 1);

		if (!nb) {
			free(buf);
			return -ENOMEM;
		}
		buf = nb;
		n = cfs_readlink(fs, ino, buf, cap);
		if (n < 0) {
			free(buf);
			return (int)n;
		}
		if ((size_t)n <= cap)
			break;
		if (n > 1 << 20) {	/* no sane target is this long */
			free(buf);
			return -EUCLEAN;
		}
		cap = (size_t)n;
	}
	buf[n] = 0;
	*out = buf;
	return 0;
}

/* ==== a mounted image, through its mount point ======================= */

/* path (an image path) opened below root as the image would resolve it:
 * ".." and absolute symlinks stay inside the mount, and no other mount
 * under it is entered. */
static int live_open(int root, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};
	long fd;

	while (*path == '/')
		path++;
	fd = syscall(SYS_openat2, root, *path ? path : ".", &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

static int live_stat(int fd, struct cfs_stat *st)
{
	struct statx x;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
		  STATX_BASIC_STATS | STATX_BTIME, &x) < 0)
		return -errno;
	memset(st, 0, sizeof(*st));
	st->ino = (cfs_ino_t)x.stx_ino;
	st->mode = x.stx_mode;
	st->nlink = x.stx_nlink;
	st->uid = x.stx_uid;
	st->gid = x.stx_gid;
	st->rdev = makedev(x.stx_rdev_major, x.stx_rdev_minor);
	st->size = x.stx_size;
	st->blocks = x.stx_blocks;
	st->blksize = x.stx_blksize;
	st->atime = (struct timespec){ x.stx_atime.tv_sec, x.stx_atime.tv_nsec };
	st->mtime = (struct timespec){ x.stx_mtime.tv_sec, x.stx_mtime.tv_nsec };
	st->ctime = (struct timespec){ x.stx_ctime.tv_sec, x.stx_ctime.tv_nsec };
	if (x.stx_mask & STATX_BTIME)
		st->crtime = (struct timespec){ x.stx_btime.tv_sec, x.stx_btime.tv_nsec };
	return 0;
}

static int src_resolve(const struct src *s, const char *path, int follow,
		       cfs_ino_t *ino, struct cfs_stat *st)
{
	struct cfs_stat tmp;
	int fd, ret;

	if (s->fs)
		return resolve(s->fs, path, follow, ino, st);
	fd = live_open(s->root, path, O_PATH | (follow ? 0 : O_NOFOLLOW));
	if (fd < 0)
		return fd;
	ret = live_stat(fd, st ? st : &tmp);
	close(fd);
	if (ret == 0)
		*ino = st ? st->ino : tmp.ino;
	return ret;
}

/* A symlink's target, malloc'd and NUL-terminated. */
static int src_readlink(const struct src *s, const char *path, cfs_ino_t ino,
			char **out)
{
	char *buf;
	ssize_t n;
	int fd;

	if (s->fs)
		return read_link(s->fs, ino, out);
	fd = live_open(s->root, path, O_PATH | O_NOFOLLOW);
	if (fd < 0)
		return fd;
	buf = malloc(PATH_MAX + 1);
	n = buf ? readlinkat(fd, "", buf, PATH_MAX) : -1;
	if (n < 0) {
		n = buf ? -errno : -ENOMEM;
		free(buf);
		close(fd);
		return (int)n;
	}
	close(fd);
	buf[n] = 0;
	*out = buf;
	return 0;
}

static int src_dir_read(const struct src *s, const char *path, cfs_ino_t ino,
			bool skip_dots, struct dir_list *dl)
{
	int fd, ret;

	if (s->fs)
		return dir_read(s->fs, ino, skip_dots, dl);
	fd = live_open(s->root, path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	ret = dir_read_host(fd, skip_dots, dl);
	close(fd);
	return ret;
}

/* ==== ls ============================================================= */

struct ls_opts {
	bool l, a, i, d, R, tty;
	bool headers;
	bool first;
	struct walk_stack ws;
};

struct ls_ent {
	const char *name;
	cfs_ino_t ino;
	struct cfs_stat st;
	char *link;
	int err;
};

struct ls_widths {
	int ino, nlink, uid, gid, size;
};

static void put_name(const char *name, bool tty)
{
	/* On a terminal, keep control bytes from the image out of it. */
	for (const char *p = name; *p; p++)
		putchar(tty && ((unsigned char)*p < 0x20 || *p == 0x7f) ? '?' : *p);
}

static int num_width(uint64_t v)
{
	int w = 1;

	while (v >= 10) {
		v /= 10;
		w++;
	}
	return w;
}

static int max_int(int a, int b)
{
	return a > b ? a : b;
}

static void size_field(const struct cfs_stat *st, char *buf, size_t len)
{
	if (S_ISCHR(st->mode) || S_ISBLK(st->mode))
		snprintf(buf, len, "%u, %u", major((dev_t)st->rdev), minor((dev_t)st->rdev));
	else
		snprintf(buf, len, "%" PRIu64, st->size);
}

static void ls_widths(const struct ls_ent *e, size_t n, struct ls_widths *w)
{
	char sz[48];

	memset(w, 0, sizeof(*w));
	for (size_t k = 0; k < n; k++) {
		w->ino = max_int(w->ino, num_width(e[k].ino));
		if (e[k].err)
			continue;
		size_field(&e[k].st, sz, sizeof(sz));
		w->nlink = max_int(w->nlink, num_width(e[k].st.nlink));
		w->uid = max_int(w->uid, num_width(e[k].st.uid));
		w->gid = max_int(w->gid, num_width(e[k].st.gid));
		w->size = max_int(w->size, (int)strlen(sz));
	}
}

static void ls_long(const struct ls_ent *e, const struct ls_widths *w)
{
	char mode[11], sz[48], when[32];
	time_t t = (time_t)e->st.mtime.tv_sec;
	struct tm tm;

	fmt_mode(e->st.mode, mode);
	size_field(&e->st, sz, sizeof(sz));
	if (localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
	else
		snprintf(when, sizeof(when), "@%lld", (long long)e->st.mtime.tv_sec);
	printf("%s %*" PRIu32 " %*" PRIu32 " %*" PRIu32 " %*s %s ", mode, w->nlink,
	       e->st.nlink, w->uid, e->st.uid, w->gid, e->st.gid, w->size, sz, when);
}

static void ls_print(const struct ls_opts *o, const struct ls_ent *e, size_t n)
{
	struct ls_widths w;

	ls_widths(e, n, &w);
	for (size_t k = 0; k < n; k++) {
		if (e[k].err)
			continue;
		if (o->i)
			printf("%*" PRIu32 " ", w.ino, e[k].ino);
		if (o->l)
			ls_long(&e[k], &w);
		put_name(e[k].name, o->tty);
		if (o->l && e[k].link) {
			fputs(" -> ", stdout);
			put_name(e[k].link, o->tty);
		}
		putchar('\n');
	}
}

/* Attributes (and link target) of one entry; reports its own errors. */
static int ls_fill(const struct src *s, const char *img, const char *path,
		   const struct ls_opts *o, struct ls_ent *e)
{
	int ret = s->fs ? cfs_getattr(s->fs, e->ino, &e->st) :
		  src_resolve(s, path, 0, &e->ino, &e->st);

	if (ret >= 0 && o->l && S_ISLNK(e->st.mode))
		ret = src_readlink(s, path, e->ino, &e->link);
	if (ret < 0) {
		err_img(img, path, ret);
		e->err = ret;
	}
	return ret < 0 ? ret : 0;
}

static int ls_dir(const struct src *s, const char *img, const char *path,
		  cfs_ino_t ino, struct ls_opts *o);

/* Entries of one directory, with attributes when they are needed. */
static int ls_gather(const struct src *s, const char *img, const char *path,
		     const struct ls_opts *o, struct dir_list *dl, struct ls_ent **out)
{
	struct ls_ent *ents = calloc(dl->n ? dl->n : 1, sizeof(*ents));
	int status = EX_OK;

	if (!ents) {
		err_img(img, path, -ENOMEM);
		return EX_FAIL;
	}
	for (size_t k = 0; k < dl->n; k++) {
		ents[k].name = dl->ent[k].name;
		ents[k].ino = dl->ent[k].ino;
		if (o->l || o->R) {
			char *p = path_join(path, ents[k].name);

			if (!p || ls_fill(s, img, p ? p : path, o, &ents[k]) < 0)
				status = EX_FAIL;
			free(p);
		}
	}
	*out = ents;
	return status;
}

static int ls_recurse(const struct src *s, const char *img, const char *path,
		      struct ls_ent *ents, size_t n, struct ls_opts *o)
{
	int status = EX_OK;

	for (size_t k = 0; k < n; k++) {
		char *p;

		if (ents[k].err || !S_ISDIR(ents[k].st.mode) ||
		    strcmp(ents[k].name, ".") == 0 || strcmp(ents[k].name, "..") == 0)
			continue;
		p = path_join(path, ents[k].name);
		if (!p) {
			err_img(img, path, -ENOMEM);
			return EX_FAIL;
		}
		if (ls_dir(s, img, p, ents[k].ino, o) != EX_OK)
			status = EX_FAIL;
		free(p);
	}
	return status;
}

static int ls_dir(const struct src *s, const char *img, const char *path,
		  cfs_ino_t ino, struct ls_opts *o)
{
	struct dir_list dl;
	struct ls_ent *ents = NULL;
	int ret, status;

	ret = walk_push(&o->ws, ino);
	if (ret < 0) {
		err_img(img, path, ret == -ELOOP ? -EUCLEAN : ret);
		return EX_FAIL;
	}
	ret = src_dir_read(s, path, ino, !o->a, &dl);
	if (ret < 0) {
		walk_pop(&o->ws);
		err_img(img, path, ret);
		return EX_FAIL;
	}
	dir_list_sort(&dl);
	status = ls_gather(s, img, path, o, &dl, &ents);
	if (o->headers) {
		if (!o->first)
			putchar('\n');
		put_name(path, o->tty);
		fputs(":\n", stdout);
	}
	o->first = false;
	ls_print(o, ents, dl.n);
	if (o->R && ls_recurse(s, img, path, ents, dl.n, o) != EX_OK)
		status = EX_FAIL;
	for (size_t k = 0; k < dl.n; k++)
		free(ents[k].link);
	free(ents);
	dir_list_free(&dl);
	walk_pop(&o->ws);
	return status;
}

static int ls_one(const struct src *s, const char *img, const char *arg,
		  struct ls_opts *o)
{
	char *path = img_path(arg);
	struct ls_ent e = { .name = arg };
	int ret, status = EX_OK;

	if (!path) {
		err_img(img, arg, -ENOMEM);
		return EX_FAIL;
	}
	/* Like ls, follow a symlink operand unless listing it long or -d. */
	ret = src_resolve(s, path, !(o->l || o->d), &e.ino, &e.st);
	if (ret < 0) {
		err_img(img, path, ret);
		status = EX_FAIL;
		goto out;
	}
	if (S_ISDIR(e.st.mode) && !o->d) {
		status = ls_dir(s, img, path, e.ino, o);
		goto out;
	}
	if (ls_fill(s, img, path, o, &e) < 0)
		status = EX_FAIL;
	else
		ls_print(o, &e, 1);
	o->first = false;
	free(e.link);
out:
	free(path);
	return status;
}

int cmd_ls(int argc, char **argv)
{
	struct ls_opts o = { .first = true };
	bool f[5] = { 0 };
	struct cfs_fs *fs;
	struct src s;
	int status, npaths;

	status = parse_flags("ls", argc, argv, "laidR", f);
	if (status)
		return status;
	o.l = f[0], o.a = f[1], o.i = f[2], o.d = f[3], o.R = f[4];
	o.tty = isatty(STDOUT_FILENO) == 1;
	status = open_operands("ls", argc, argv, 0, -1, true, &fs, &s);
	if (status)
		return status;
	npaths = argc - optind - 1;
	o.headers = o.R || npaths > 1;
	if (npaths == 0) {
		status = ls_one(&s, argv[optind], "/", &o);
	} else {
		for (int k = optind + 1; k < argc; k++)
			if (ls_one(&s, argv[optind], argv[k], &o) != EX_OK)
				status = EX_FAIL;
	}
	walk_free(&o.ws);
	if (flush_stdout() != EX_OK)
		status = EX_FAIL;
	return close_src(&s, argv[optind], status);
}

/* ==== stat =========================================================== */

static void stat_chunks(struct cfs_fs *fs, cfs_ino_t ino)
{
	uint32_t small[64], *chunks = small;
	int cap = 64, n = cfs_file_chunks(fs, ino, small, cap);

	if (n > cap) {
		chunks = malloc((size_t)n * sizeof(*chunks));
		cap = n;
		n = chunks ? cfs_file_chunks(fs, ino, chunks, cap) : -ENOMEM;
	}
	if (n < 0) {
		printf("  Chunks: (%s)\n", errstr(n));
		goto out;
	}
	printf("  Chunks: %d inode%s in chain; data in chunk%s", n, n == 1 ? "" : "s",
	       n == 1 ? "" : "s");
	for (int k = 0; k < n && k < cap; k++)
		printf("%s%" PRIu32, k ? "," : " ", chunks[k]);
	putchar('\n');
out:
	if (chunks != small)
		free(chunks);
}

/* Through the mount: the names of a symlink's own attributes are not
 * reachable without following it (none are listed for it). */
static ssize_t src_listxattr(const struct src *s, const char *path,
			     const struct cfs_stat *st, char *buf, size_t len)
{
	char proc[64];
	ssize_t n;
	int fd;

	if (s->fs)
		return cfs_listxattr(s->fs, st->ino, buf, len);
	if (S_ISLNK(st->mode))
		return 0;
	fd = live_open(s->root, path, O_PATH | O_NOFOLLOW);
	if (fd < 0)
		return fd;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = listxattr(proc, buf, len);
	if (n < 0)
		n = -errno;
	close(fd);
	return n;
}

static void stat_xattrs(const struct src *s, const char *path, const struct cfs_stat *st)
{
	ssize_t n = src_listxattr(s, path, st, NULL, 0);
	char *buf;

	if (n <= 0) {
		if (n < 0)
			printf(" Xattrs: (%s)\n", errstr((int)n));
		return;
	}
	buf = malloc((size_t)n);
	if (!buf)
		return;
	n = src_listxattr(s, path, st, buf, (size_t)n);
	if (n > 0) {
		fputs(" Xattrs:", stdout);
		for (ssize_t off = 0; off < n; off += (ssize_t)strnlen(buf + off, (size_t)(n - off)) + 1)
			printf(" %.*s", (int)strnlen(buf + off, (size_t)(n - off)), buf + off);
		putchar('\n');
	}
	free(buf);
}

static void stat_times(const struct cfs_stat *st)
{
	char t[80];

	fmt_time(&st->atime, t, sizeof(t));
	printf("Access: %s\n", t);
	fmt_time(&st->mtime, t, sizeof(t));
	printf("Modify: %s\n", t);
	fmt_time(&st->ctime, t, sizeof(t));
	printf("Change: %s\n", t);
	/* through a mount the kernel may not know it (statx without btime) */
	fmt_time(&st->crtime, t, sizeof(t));
	printf(" Birth: %s\n", st->crtime.tv_sec || st->crtime.tv_nsec ? t : "-");
}

static void stat_print(const struct src *s, const char *path, const struct cfs_stat *st)
{
	char mode[11], *target = NULL;

	fmt_mode(st->mode, mode);
	fputs("  File: ", stdout);
	put_name(path, isatty(STDOUT_FILENO) == 1);
	if (S_ISLNK(st->mode) && src_readlink(s, path, st->ino, &target) == 0)
		printf(" -> %s", target);
	free(target);
	printf("\n  Size: %-12" PRIu64 " Blocks: %-10" PRIu64 " IO Block: %-6" PRIu32
	       " %s\n", st->size, st->blocks, st->blksize, type_name(st->mode));
	printf(" Inode: %-12" PRIu32 " (chunk %" PRIu32 ", local %" PRIu32 ")  "
	       "Links: %-5" PRIu32 " Generation: %" PRIu32, st->ino,
	       CFS_INO_CHUNK(st->ino), CFS_INO_LOCAL(st->ino), st->nlink,
	       st->generation);
	if (S_ISCHR(st->mode) || S_ISBLK(st->mode))
		printf("  Device type: %u,%u", major((dev_t)st->rdev), minor((dev_t)st->rdev));
	printf("\nAccess: (%04o/%s)  Uid: %" PRIu32 "  Gid: %" PRIu32 "\n",
	       st->mode & 07777, mode, st->uid, st->gid);
	stat_times(st);
	if (s->fs)
		stat_chunks(s->fs, st->ino);
	else
		printf("  Chunks: (not known through the mount on %s)\n", s->mnt);
	stat_xattrs(s, path, st);
}

int cmd_stat(int argc, char **argv)
{
	bool follow = false;
	struct cfs_fs *fs;
	struct src s;
	int status;

	status = parse_flags("stat", argc, argv, "L", &follow);
	if (status)
		return status;
	status = open_operands("stat", argc, argv, 1, -1, true, &fs, &s);
	if (status)
		return status;
	for (int k = optind + 1; k < argc; k++) {
		char *path = img_path(argv[k]);
		struct cfs_stat st;
		cfs_ino_t ino;
		int ret = path ? src_resolve(&s, path, follow, &ino, &st) : -ENOMEM;

		if (ret < 0) {
			err_img(argv[optind], path ? path : argv[k], ret);
			status = EX_FAIL;
		} else {
			stat_print(&s, path, &st);
		}
		free(path);
	}
	if (flush_stdout() != EX_OK)
		status = EX_FAIL;
	return close_src(&s, argv[optind], status);
}

/* ==== cat ============================================================ */

/* A file of the mounted image opened to read through the mount.  Only a
 * regular file is opened: a device node there would be the host's device,
 * and a FIFO would block; they read as empty, as from the image. */
static int live_open_file(const struct src *s, const char *path, int *fd)
{
	struct cfs_stat st;
	char proc[64];
	int pfd = live_open(s->root, path, O_PATH), ret;

	*fd = -1;
	if (pfd < 0)
		return pfd;
	ret = live_stat(pfd, &st);
	if (ret == 0 && S_ISDIR(st.mode))
		ret = -EISDIR;
	if (ret == 0 && S_ISREG(st.mode)) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
		*fd = open(proc, O_RDONLY | O_CLOEXEC);
		if (*fd < 0)
			ret = -errno;
	}
	close(pfd);
	return ret;
}

/* The next bytes of the file at off: from the image, or through the
 * mount (fd), which is read in order. */
static ssize_t src_read(const struct src *s, cfs_ino_t ino, int fd, char *buf,
			uint64_t off)
{
	ssize_t n;

	if (s->fs)
		return cfs_read(s->fs, ino, buf, COPY_BUF_SIZE, off);
	if (fd < 0)
		return 0;
	do
		n = read(fd, buf, COPY_BUF_SIZE);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* Returns 0, or a negative errno; *out_err tells whether it was ours. */
static int cat_one(const struct src *s, const char *path, char *buf, bool *out_err)
{
	struct cfs_stat st;
	cfs_ino_t ino = 0;
	uint64_t off = 0;
	int ret, fd = -1;

	*out_err = false;
	if (s->fs) {
		ret = resolve(s->fs, path, 1, &ino, &st);
		if (ret == 0 && S_ISDIR(st.mode))
			ret = -EISDIR;
	} else {
		ret = live_open_file(s, path, &fd);
	}
	while (ret == 0) {
		ssize_t n = src_read(s, ino, fd, buf, off);

		if (n <= 0) {
			ret = (int)n;
			break;
		}
		off += (uint64_t)n;
		ret = fd_write_all(STDOUT_FILENO, buf, (size_t)n, -1);
		if (ret < 0)
			*out_err = true;
	}
	if (fd >= 0)
		close(fd);
	return ret;
}

int cmd_cat(int argc, char **argv)
{
	struct cfs_fs *fs;
	struct src s;
	char *buf;
	int status;

	status = parse_flags("cat", argc, argv, "", NULL);
	if (status)
		return status;
	status = open_operands("cat", argc, argv, 1, -1, true, &fs, &s);
	if (status)
		return status;
	buf = malloc(COPY_BUF_SIZE);
	for (int k = optind + 1; k < argc && buf; k++) {
		char *path = img_path(argv[k]);
		bool out_err = false;
		int ret = path ? cat_one(&s, path, buf, &out_err) : -ENOMEM;

		if (ret < 0 && out_err) {
			err_msg("writing standard output: %s", errstr(ret));
			status = EX_FAIL;
			free(path);
			break;
		}
		if (ret < 0) {
			err_img(argv[optind], path ? path : argv[k], ret);
			status = EX_FAIL;
		}
		free(path);
	}
	if (!buf) {
		err_msg("%s", errstr(-ENOMEM));
		status = EX_FAIL;
	}
	free(buf);
	return close_src(&s, argv[optind], status);
}


/* ==== mkdir ========================================================== */

struct mkdir_opts {
	bool parents;
	uint32_t mode;
};

/* One component of mkdir -p: path exists as a directory or is created in
 * parent.  *ino is the directory either way. */
static int mkdir_step(struct cfs_fs *fs, const char *path, cfs_ino_t parent,
		      uint32_t mode, cfs_ino_t *ino)
{
	struct cfs_stat st;
	int ret = resolve(fs, path, 1, ino, &st);

	if (ret == -ENOENT)
		return cfs_mkdir(fs, parent, path_base(path), mode, geteuid(),
				 getegid(), ino);
	if (ret == 0 && !S_ISDIR(st.mode))
		ret = -ENOTDIR;
	return ret;
}

/* On failure path is cut at the component that failed, for the message. */
static int mkdir_parents(struct cfs_fs *fs, char *path, uint32_t mode)
{
	uint32_t inter = (0777 & ~current_umask()) | 0300;
	cfs_ino_t cur;
	char *p = path;
	int ret = cfs_path_resolve(fs, "/", 1, &cur);

	if (strcmp(path, "/") == 0)
		return ret;
	while (ret >= 0 && p) {
		char *next = strchr(p + 1, '/');

		if (next)
			*next = 0;
		ret = mkdir_step(fs, path, cur, next ? inter : mode, &cur);
		if (next && ret >= 0)
			*next = '/';
		p = next;
	}
	return ret < 0 ? ret : 0;
}

static int mkdir_one(struct cfs_fs *fs, char *path, uint32_t mode)
{
	char name[CFS_NAME_MAX + 1];
	cfs_ino_t dir, ino;
	int ret;

	if (strcmp(path, "/") == 0)
		return -EEXIST;
	ret = cfs_path_parent(fs, path, &dir, name);
	if (ret >= 0)
		ret = cfs_mkdir(fs, dir, name, mode, geteuid(), getegid(), &ino);
	return ret < 0 ? ret : 0;
}

static int mkdir_args(int argc, char **argv, struct mkdir_opts *o)
{
	int c;

	o->mode = 0777 & ~current_umask();
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":pm:", NULL, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->parents = true;
			break;
		case 'm':
			if (parse_mode(optarg, &o->mode) < 0)
				return usage_error("mkdir", "invalid mode '%s': "
						   "expected octal 0..7777", optarg);
			break;
		default:
			return bad_option("mkdir", argv, c);
		}
	}
	return EX_OK;
}

int cmd_mkdir(int argc, char **argv)
{
	struct mkdir_opts o = { 0 };
	struct cfs_fs *fs;
	int status;

	status = mkdir_args(argc, argv, &o);
	if (status)
		return status;
	status = open_operands("mkdir", argc, argv, 1, -1, false, &fs, NULL);
	if (status)
		return status;
	for (int k = optind + 1; k < argc; k++) {
		char *path = img_path(argv[k]);
		int ret = -ENOMEM;

		if (path && o.parents)
			ret = mkdir_parents(fs, path, o.mode);
		else if (path)
			ret = mkdir_one(fs, path, o.mode);
		if (ret < 0) {
			err_img(argv[optind], path ? path : argv[k], ret);
			status = EX_FAIL;
		}
		free(path);
		if (err_is_fatal(ret))
			break;
	}
	return img_close(fs, argv[optind], status);
}

/* ==== rm ============================================================= */

struct rm_opts {
	bool r, f, d;
	struct walk_stack ws;
};

static int rm_tree(struct cfs_fs *fs, const char *img, const char *path,
		   cfs_ino_t dir, struct rm_opts *o);

static int rm_entry(struct cfs_fs *fs, const char *img, const char *path,
		    cfs_ino_t dir, const struct dir_entry *e, struct rm_opts *o)
{
	struct cfs_stat st;
	int ret = cfs_getattr(fs, e->ino, &st);

	if (ret < 0)
		return ret;
	if (!S_ISDIR(st.mode))
		return cfs_unlink(fs, dir, e->name);
	if (rm_tree(fs, img, path, e->ino, o) != EX_OK)
		return 1;	/* already reported; keep the directory */
	return cfs_rmdir(fs, dir, e->name);
}

/* Empty the directory dir (which is path); errors are reported here. */
static int rm_tree(struct cfs_fs *fs, const char *img, const char *path,
		   cfs_ino_t dir, struct rm_opts *o)
{
	struct dir_list dl = { 0 };
	int ret, status = EX_OK;

	ret = walk_push(&o->ws, dir);
	if (ret < 0) {
		err_img(img, path, ret == -ELOOP ? -EUCLEAN : ret);
		return EX_FAIL;
	}
	ret = dir_read(fs, dir, true, &dl);
	if (ret < 0) {
		err_img(img, path, ret);
		status = EX_FAIL;
	}
	for (size_t k = 0; k < dl.n; k++) {
		char *child = path_join(path, dl.ent[k].name);

		ret = child ? rm_entry(fs, img, child, dir, &dl.ent[k], o) : -ENOMEM;
		if (ret < 0)
			err_img(img, child ? child : path, ret);
		free(child);
		if (ret != 0)
			status = EX_FAIL;
		if (err_is_fatal(ret))
			break;
	}
	dir_list_free(&dl);
	walk_pop(&o->ws);
	return status;
}

static int rm_one(struct cfs_fs *fs, const char *img, const char *path,
		  struct rm_opts *o)
{
	char name[CFS_NAME_MAX + 1];
	struct cfs_stat st;
	cfs_ino_t dir, ino;
	int ret;

	if (strcmp(path, "/") == 0) {
		err_msg("%s:/: refusing to remove the root directory", img);
		return EX_FAIL;
	}
	ret = cfs_path_parent(fs, path, &dir, name);
	if (ret >= 0 && (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)) {
		err_msg("%s:%s: refusing to remove '.' or '..'", img, path);
		return EX_FAIL;
	}
	if (ret >= 0)
		ret = cfs_lookup(fs, dir, name, &ino);
	if (ret >= 0)
		ret = cfs_getattr(fs, ino, &st);
	if (ret == -ENOENT && o->f)
		return EX_OK;
	if (ret >= 0 && S_ISDIR(st.mode)) {
		if (o->r && rm_tree(fs, img, path, ino, o) != EX_OK)
			return EX_FAIL;
		if (!o->r && !o->d) {
			err_msg("%s:%s: is a directory (use -r or -d)", img, path);
			return EX_FAIL;
		}
		ret = cfs_rmdir(fs, dir, name);
	} else if (ret >= 0) {
		ret = cfs_unlink(fs, dir, name);
	}
	if (ret < 0) {
		err_img(img, path, ret);
		return EX_FAIL;
	}
	return EX_OK;
}

int cmd_rm(int argc, char **argv)
{
	struct rm_opts o = { 0 };
	bool f[4] = { 0 };
	struct cfs_fs *fs;
	int status;

	status = parse_flags("rm", argc, argv, "rfdR", f);
	if (status)
		return status;
	o.r = f[0] || f[3], o.f = f[1], o.d = f[2];
	if (argc - optind < 2 && o.f && argc - optind == 1)
		return EX_OK;	/* rm -f with no operands is not an error */
	status = open_operands("rm", argc, argv, 1, -1, false, &fs, NULL);
	if (status)
		return status;
	for (int k = optind + 1; k < argc; k++) {
		char *path = img_path(argv[k]);

		if (!path) {
			err_img(argv[optind], argv[k], -ENOMEM);
			status = EX_FAIL;
			break;
		}
		if (rm_one(fs, argv[optind], path, &o) != EX_OK)
			status = EX_FAIL;
		free(path);
	}
	walk_free(&o.ws);
	return img_close(fs, argv[optind], status);
}

/* ==== ln, mv ========================================================= */

/* cp/ln/mv rule: an existing directory as destination means "inside it,
 * under the source's name".  Returns the malloc'd final destination. */
static char *dest_in_dir(struct cfs_fs *fs, const char *dest, const char *src)
{
	struct cfs_stat st;
	cfs_ino_t ino;
	char *base, *out;

	if (resolve(fs, dest, 1, &ino, &st) < 0 || !S_ISDIR(st.mode))
		return strdup(dest);
	base = host_base(src);
	if (!base)
		return NULL;
	out = *base ? path_join(dest, base) : strdup(dest);
	free(base);
	return out;
}

/* *bad is set to the path the error is about (target or link). */
static int do_link(struct cfs_fs *fs, const char *target, const char *link,
		   bool sym, char **bad)
{
	char name[CFS_NAME_MAX + 1];
	struct cfs_stat st;
	cfs_ino_t dir, ino;
	int ret;

	if (!sym) {
		*bad = img_path(target);
		ret = *bad ? resolve(fs, *bad, 0, &ino, &st) : -ENOMEM;
		if (ret == 0 && S_ISDIR(st.mode))
			ret = -EPERM;	/* as link(2) for directories */
		if (ret < 0)
			return ret;
		free(*bad);
	}
	*bad = strdup(link);
	ret = cfs_path_parent(fs, link, &dir, name);
	if (ret >= 0 && sym)
		ret = cfs_symlink(fs, dir, name, target, geteuid(), getegid(), &ino);
	else if (ret >= 0)
		ret = cfs_link(fs, ino, dir, name);
	return ret < 0 ? ret : 0;
}

int cmd_ln(int argc, char **argv)
{
	bool sym = false;
	struct cfs_fs *fs;
	char *lpath, *link = NULL, *bad = NULL;
	int status, ret;

	status = parse_flags("ln", argc, argv, "s", &sym);
	if (status)
		return status;
	status = open_operands("ln", argc, argv, 2, 2, false, &fs, NULL);
	if (status)
		return status;
	lpath = img_path(argv[optind + 2]);
	if (lpath)
		link = dest_in_dir(fs, lpath, argv[optind + 1]);
	ret = link ? do_link(fs, argv[optind + 1], link, sym, &bad) : -ENOMEM;
	if (ret == -EPERM && !sym && bad && strcmp(bad, link) != 0) {
		err_msg("%s:%s: hard link not allowed for a directory",
			argv[optind], bad);
		status = EX_FAIL;
	} else if (ret < 0) {
		err_img(argv[optind], bad ? bad : argv[optind + 2], ret);
		status = EX_FAIL;
	}
	free(bad);
	free(lpath);
	free(link);
	return img_close(fs, argv[optind], status);
}

static int do_rename(struct cfs_fs *fs, const char *src, const char *dst)
{
	char oname[CFS_NAME_MAX + 1], nname[CFS_NAME_MAX + 1];
	cfs_ino_t odir, ndir;
	int ret;

	if (strcmp(src, "/") == 0)
		return -EBUSY;
	ret = cfs_path_parent(fs, src, &odir, oname);
	if (ret >= 0)
		ret = cfs_path_parent(fs, dst, &ndir, nname);
	if (ret >= 0)
		ret = cfs_rename(fs, odir, oname, ndir, nname, 0);
	return ret < 0 ? ret : 0;
}

int cmd_mv(int argc, char **argv)
{
	struct cfs_fs *fs;
	char *src, *dpath, *dst = NULL;
	int status, ret;

	status = parse_flags("mv", argc, argv, "", NULL);
	if (status)
		return status;
	status = open_operands("mv", argc, argv, 2, 2, false, &fs, NULL);
	if (status)
		return status;
	src = img_path(argv[optind + 1]);
	dpath = img_path(argv[optind + 2]);
	if (src && dpath)
		dst = dest_in_dir(fs, dpath, src);
	ret = dst ? do_rename(fs, src, dst) : -ENOMEM;
	if (ret < 0) {
		err_msg("%s:%s: cannot move to %s: %s", argv[optind],
			src ? src : argv[optind + 1], dst ? dst : argv[optind + 2],
			errstr(ret));
		status = EX_FAIL;
	}
	free(src);
	free(dpath);
	free(dst);
	return img_close(fs, argv[optind], status);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs get / put: copy files and trees out of and into an image.
 *
 * Both keep modes, times (ns), symlinks, hard links, special files, xattrs
 * (user., trusted., security.) and holes; owners always going in, and
 * going out when run as root.  Per-file errors are reported and the copy
 * goes on; errors that make the rest pointless (ENOSPC, EIO, corruption)
 * stop it.  Directories get their attributes after their contents, so
 * read-only directories and directory mtimes come out right.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "tool.h"

/* Host holes are made at this granularity when copying out. */
#define HOLE_GRAIN 4096u

/* ---- hard link map -------------------------------------------------- */

struct link_ent {
	uint64_t k1, k2;
	cfs_ino_t ino;          /* put: the image inode made for the host file */
	char *path;             /* get: the host path made for the image inode */
	bool used;
};

struct link_map {
	struct link_ent *t;
	size_t cap, n;
};

static size_t map_slot(const struct link_map *m, uint64_t k1, uint64_t k2)
{
	uint64_t h = (k1 * 0x9e3779b97f4a7c15ULL) ^ (k2 + 0x632be59bd9b4e019ULL);

	h ^= h >> 29;
	return (size_t)h & (m->cap - 1);
}

static struct link_ent *map_find(struct link_map *m, uint64_t k1, uint64_t k2)
{
	if (!m->cap)
		return NULL;
	for (size_t i = map_slot(m, k1, k2);; i = (i + 1) & (m->cap - 1)) {
		struct link_ent *e = &m->t[i];

		if (!e->used)
			return NULL;
		if (e->k1 == k1 && e->k2 == k2)
			return e;
	}
}

static int map_grow(struct link_map *m)
{
	struct link_map n = { .cap = m->cap ? m->cap * 2 : 256 };

	n.t = calloc(n.cap, sizeof(*n.t));
	if (!n.t)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->t[i].used)
			continue;
		for (j = map_slot(&n, m->t[i].k1, m->t[i].k2); n.t[j].used;
		     j = (j + 1) & (n.cap - 1))
			;
		n.t[j] = m->t[i];
	}
	n.n = m->n;
	free(m->t);
	*m = n;
	return 0;
}

static int map_add(struct link_map *m, uint64_t k1, uint64_t k2, cfs_ino_t ino,
		   const char *path)
{
	size_t i;

	if ((m->n + 1) * 2 > m->cap && map_grow(m) < 0)
		return -ENOMEM;
	for (i = map_slot(m, k1, k2); m->t[i].used; i = (i + 1) & (m->cap - 1))
		;
	m->t[i] = (struct link_ent){ .k1 = k1, .k2 = k2, .ino = ino, .used = true };
	if (path && !(m->t[i].path = strdup(path))) {
		m->t[i].used = false;
		return -ENOMEM;
	}
	m->n++;
	return 0;
}

static void map_free(struct link_map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->t[i].path);
	free(m->t);
	memset(m, 0, sizeof(*m));
}

/* ---- shared context ------------------------------------------------- */

struct copy_args {
	bool recursive, verbose;
	int progress_fd;                /* PROGRESS_TTY, PROGRESS_OFF or -C's */
};

struct copy_ctx {
	struct cfs_fs *fs;
	const char *img;
	char *buf;                      /* COPY_BUF_SIZE */
	bool recursive, root, stop;
	bool xattr_warned;
	int status;
	uint32_t block_size;            /* image block size: put's hole grain */
	struct stat img_st;             /* the image file, never copied into itself */
	struct progress prog;
	struct walk_stack ws;
	struct link_map links;
};

/* Record a failure; errors that doom the rest of the copy stop it. */
static void copy_failed(struct copy_ctx *c, int err)
{
	c->status = EX_FAIL;
	if (err_is_fatal(err))
		c->stop = true;
}

static void img_err(struct copy_ctx *c, const char *ipath, int err)
{
	err_img(c->img, ipath, err);
	copy_failed(c, err);
}

static void host_err(struct copy_ctx *c, const char *hpath, int err)
{
	err_host(hpath, err);
	copy_failed(c, err);
}

/* POSIX ACLs too, as cp -a and rsync -A copy them: each side's library or
 * kernel checks the value and sets the mode from it. */
static bool xattr_copied(const char *name)
{
	return strncmp(name, "user.", 5) == 0 || strncmp(name, "trusted.", 8) == 0 ||
	       strncmp(name, "security.", 9) == 0 ||
	       strcmp(name, "system.posix_acl_access") == 0 ||
	       strcmp(name, "system.posix_acl_default") == 0;
}

/* The host refusing an xattr is not worth failing the copy for. */
static void xattr_host_refused(struct copy_ctx *c, const char *hpath,
			       const char *name, int err)
{
	if (c->xattr_warned)
		return;
	c->xattr_warned = true;
	warn_msg("%s: cannot set extended attribute %s: %s (further such "
		 "failures are not reported)", hpath, name, errstr(err));
}

static bool all_zero(const char *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

static bool is_dot(const char *name)
{
	return strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
}

static int setup_ctx(struct copy_ctx *c, const char *img, const char *what,
		     const struct copy_args *a)
{
	memset(c, 0, sizeof(*c));
	c->img = img;
	c->recursive = a->recursive;
	c->root = geteuid() == 0;
	c->buf = malloc(COPY_BUF_SIZE);
	if (!c->buf)
		return -ENOMEM;
	if (stat(img, &c->img_st) < 0)
		memset(&c->img_st, 0, sizeof(c->img_st));
	progress_init(&c->prog, what, a->progress_fd, a->verbose);
	return 0;
}

static void free_ctx(struct copy_ctx *c)
{
	free(c->buf);
	walk_free(&c->ws);
	map_free(&c->links);
}

/* ==== get: image -> host ============================================== */

static int get_entry(struct copy_ctx *c, cfs_ino_t ino, const char *ipath,
		     const char *hpath);

/* Hand emit() the pieces of buf (len bytes at off, cut at multiples of
 * grain) that are not all zero, so that zero pieces stay holes; the first
 * error. */
static int write_nonzero(const char *buf, size_t len, uint64_t off, uint32_t grain,
			 int (*emit)(void *ctx, const char *p, size_t n, uint64_t at),
			 void *ctx)
{
	size_t i = 0;

	while (i < len) {
		size_t n = grain - (size_t)((off + i) % grain);
		int ret;

		if (n > len - i)
			n = len - i;
		if (!all_zero(buf + i, n)) {
			ret = emit(ctx, buf + i, n, off + i);
			if (ret < 0)
				return ret;
		}
		i += n;
	}
	return 0;
}

static int host_piece(void *fd, const char *p, size_t n, uint64_t at)
{
	return fd_write_all(*(int *)fd, p, n, (off_t)at);
}

/* Write buf at off, leaving holes for aligned all-zero pieces. */
static int write_sparse(int fd, const char *buf, size_t len, uint64_t off)
{
	return write_nonzero(buf, len, off, HOLE_GRAIN, host_piece, &fd);
}

/* Copy [start, end) of the image file to fd.  *img_side tells whose error. */
static int get_region(struct copy_ctx *c, cfs_ino_t ino, int fd, uint64_t start,
		      uint64_t end, bool *img_side)
{
	while (start < end) {
		size_t want = end - start < COPY_BUF_SIZE ? end - start : COPY_BUF_SIZE;
		ssize_t n = cfs_read(c->fs, ino, c->buf, want, start);
		int ret;

		*img_side = true;
		if (n <= 0)
			return n < 0 ? (int)n : -EIO;	/* short of its size */
		*img_side = false;
		ret = write_sparse(fd, c->buf, (size_t)n, start);
		if (ret < 0)
			return ret;
		start += (uint64_t)n;
		progress_add(&c->prog, 0, (uint64_t)n);
	}
	return 0;
}

/* Next data extent at or after off: [*data, *hole).  Falls back to "all
 * data" if the library cannot seek.  Returns 1 when no data is left. */
static int get_next_extent(struct copy_ctx *c, cfs_ino_t ino, uint64_t off,
			   uint64_t size, uint64_t *data, uint64_t *hole)
{
	int64_t d = cfs_lseek(c->fs, ino, (int64_t)off, SEEK_DATA), h;

	if (d == -ENXIO)
		return 1;
	if (d < 0 || (uint64_t)d < off) {
		*data = off;
		*hole = size;
		return 0;
	}
	h = cfs_lseek(c->fs, ino, d, SEEK_HOLE);
	*data = (uint64_t)d;
	*hole = (h <= d || (uint64_t)h > size) ? size : (uint64_t)h;
	return *data >= size;
}

static int get_data(struct copy_ctx *c, cfs_ino_t ino, uint64_t size, int fd,
		    bool *img_side)
{
	uint64_t off = 0, data, hole;
	int ret = 0;

	while (off < size && get_next_extent(c, ino, off, size, &data, &hole) == 0) {
		ret = get_region(c, ino, fd, data, hole, img_side);
		if (ret < 0)
			return ret;
		off = hole;
	}
	*img_side = false;
	if (ftruncate(fd, (off_t)size) < 0)
		return -errno;
	return 0;
}

/* Xattrs of ino onto the host file (fd, or hpath when fd < 0). */
static void get_xattrs(struct copy_ctx *c, cfs_ino_t ino, const char *ipath,
		       const char *hpath, int fd)
{
	ssize_t len = cfs_listxattr(c->fs, ino, NULL, 0);
	char *names = NULL, *val = NULL;

	if (len > 0 && (names = malloc((size_t)len)) != NULL)
		len = cfs_listxattr(c->fs, ino, names, (size_t)len);
	if (len < 0)
		img_err(c, ipath, (int)len);
	for (ssize_t off = 0; names && len > 0 && off < len;) {
		const char *name = names + off;
		ssize_t vlen;

		off += (ssize_t)strnlen(name, (size_t)(len - off)) + 1;
		if (!xattr_copied(name))
			continue;
		vlen = cfs_getxattr(c->fs, ino, name, NULL, 0);
		free(val);
		val = vlen >= 0 ? malloc((size_t)vlen + 1) : NULL;
		if (val)
			vlen = cfs_getxattr(c->fs, ino, name, val, (size_t)vlen);
		if (vlen < 0) {
			img_err(c, ipath, (int)vlen);
			continue;
		}
		if ((fd >= 0 ? fsetxattr(fd, name, val, (size_t)vlen, 0) :
		     lsetxattr(hpath, name, val, (size_t)vlen, 0)) < 0)
			xattr_host_refused(c, hpath, name, -errno);
	}
	free(val);
	free(names);
}

/* Owner, mode, xattrs and times, in the order that keeps each: chown
 * clears setuid bits, and everything else changes ctime only. */
static void get_attrs(struct copy_ctx *c, const struct cfs_stat *st,
		      const char *ipath, const char *hpath, int fd)
{
	struct timespec ts[2] = { st->atime, st->mtime };
	bool lnk = S_ISLNK(st->mode);
	int r;

	if (c->root) {
		r = fd >= 0 ? fchown(fd, st->uid, st->gid) :
			      lchown(hpath, st->uid, st->gid);
		if (r < 0)
			host_err(c, hpath, -errno);
	}
	if (!lnk && (fd >= 0 ? fchmod(fd, st->mode & 07777) :
		     chmod(hpath, st->mode & 07777)) < 0)
		host_err(c, hpath, -errno);
	get_xattrs(c, st->ino, ipath, hpath, fd);
	r = fd >= 0 ? futimens(fd, ts) :
		      utimensat(AT_FDCWD, hpath, ts, AT_SYMLINK_NOFOLLOW);
	if (r < 0)
		host_err(c, hpath, -errno);
}

/* Create a host file, replacing a non-directory already there. */
static int host_create(const char *hpath)
{
	int fd = open(hpath, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0 && (errno == ELOOP || errno == ETXTBSY || errno == EACCES)) {
		struct stat hs;

		if (lstat(hpath, &hs) == 0 && !S_ISDIR(hs.st_mode) && unlink(hpath) == 0)
			fd = open(hpath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				  O_CLOEXEC, 0600);
	}
	return fd < 0 ? -errno : fd;
}

static void get_file(struct copy_ctx *c, const struct cfs_stat *st,
		     const char *ipath, const char *hpath)
{
	bool img_side = false;
	int fd = host_create(hpath), ret;

	if (fd < 0) {
		host_err(c, hpath, fd);
		return;
	}
	ret = get_data(c, st->ino, st->size, fd, &img_side);
	if (ret < 0 && img_side)
		img_err(c, ipath, ret);
	else if (ret < 0)
		host_err(c, hpath, ret);
	get_attrs(c, st, ipath, hpath, fd);
	if (close(fd) < 0)
		host_err(c, hpath, -errno);
}

/* Replace whatever non-directory is at hpath: mkfifo/symlink/link don't. */
static int retry_after_unlink(int ret, const char *hpath)
{
	struct stat hs;

	if (ret != -EEXIST || lstat(hpath, &hs) < 0 || S_ISDIR(hs.st_mode))
		return 0;
	return unlink(hpath) == 0;
}

/* A symlink or special file was made at hpath (ret 0) or not: give it
 * ipath's attributes, or say why not. */
static void got_node(struct copy_ctx *c, int ret, const struct cfs_stat *st,
		     const char *ipath, const char *hpath)
{
	if (ret < 0)
		host_err(c, hpath, ret);
	else
		get_attrs(c, st, ipath, hpath, -1);
}

static void get_symlink(struct copy_ctx *c, const struct cfs_stat *st,
			const char *ipath, const char *hpath)
{
	char *target;
	ssize_t n;
	int ret;

	/* PATH_MAX bounds what the host could take anyway. */
	target = malloc(PATH_MAX + 1);
	n = target ? cfs_readlink(c->fs, st->ino, target, PATH_MAX) : -ENOMEM;
	if (n < 0 || n > PATH_MAX) {
		img_err(c, ipath, n < 0 ? (int)n : -ENAMETOOLONG);
		free(target);
		return;
	}
	target[n] = 0;
	do {
		ret = symlink(target, hpath) < 0 ? -errno : 0;
	} while (ret < 0 && retry_after_unlink(ret, hpath));
	free(target);
	got_node(c, ret, st, ipath, hpath);
}

static void get_special(struct copy_ctx *c, const struct cfs_stat *st,
			const char *ipath, const char *hpath)
{
	int ret;

	do {
		ret = mknod(hpath, (st->mode & S_IFMT) | 0600, (dev_t)st->rdev) < 0 ?
		      -errno : 0;
	} while (ret < 0 && retry_after_unlink(ret, hpath));
	got_node(c, ret, st, ipath, hpath);
}

/* A further name for an inode already copied out. */
static bool get_hardlink(struct copy_ctx *c, const struct cfs_stat *st,
			 const char *ipath, const char *hpath)
{
	struct link_ent *e;
	int ret;

	if (S_ISDIR(st->mode) || st->nlink < 2)
		return false;
	e = map_find(&c->links, st->ino, 0);
	if (!e) {
		if (map_add(&c->links, st->ino, 0, 0, hpath) < 0)
			img_err(c, ipath, -ENOMEM);
		return false;
	}
	do {
		ret = link(e->path, hpath) < 0 ? -errno : 0;
	} while (ret < 0 && retry_after_unlink(ret, hpath));
	if (ret < 0)
		host_err(c, hpath, ret);
	return true;
}

static void get_dir_entries(struct copy_ctx *c, cfs_ino_t dir, const char *ipath,
			    const char *hpath)
{
	struct dir_list dl;
	int ret = dir_read(c->fs, dir, true, &dl);

	if (ret < 0) {
		img_err(c, ipath, ret);
		return;
	}
	for (size_t k = 0; k < dl.n && !c->stop; k++) {
		const char *name = dl.ent[k].name;
		char *ip, *hp;

		if (name_is_unsafe(name)) {
			err_msg("%s:%s: skipping an entry with an invalid name",
				c->img, ipath);
			copy_failed(c, -EUCLEAN);
			continue;
		}
		ip = path_join(ipath, name);
		hp = path_join(hpath, name);
		if (ip && hp)
			get_entry(c, dl.ent[k].ino, ip, hp);
		else
			img_err(c, ipath, -ENOMEM);
		free(ip);
		free(hp);
	}
	dir_list_free(&dl);
}

static void get_dir(struct copy_ctx *c, const struct cfs_stat *st,
		    const char *ipath, const char *hpath)
{
	struct stat hs;
	int ret = walk_push(&c->ws, st->ino);

	if (ret < 0) {
		img_err(c, ipath, ret == -ELOOP ? -EUCLEAN : ret);
		return;
	}
	if (mkdir(hpath, 0700) < 0) {
		ret = -errno;
		if (ret != -EEXIST || lstat(hpath, &hs) < 0 || !S_ISDIR(hs.st_mode)) {
			host_err(c, hpath, ret);
			goto out;
		}
	}
	get_dir_entries(c, st->ino, ipath, hpath);
	get_attrs(c, st, ipath, hpath, -1);
out:
	walk_pop(&c->ws);
}

static int get_entry(struct copy_ctx *c, cfs_ino_t ino, const char *ipath,
		     const char *hpath)
{
	struct cfs_stat st;
	int ret = cfs_getattr(c->fs, ino, &st);

	if (ret < 0) {
		img_err(c, ipath, ret);
		return ret;
	}
	if (S_ISDIR(st.mode) && !c->recursive) {
		err_msg("%s:%s: is a directory (use -r)", c->img, ipath);
		copy_failed(c, -EISDIR);
		return -EISDIR;
	}
	if (get_hardlink(c, &st, ipath, hpath))
		;
	else if (S_ISREG(st.mode))
		get_file(c, &st, ipath, hpath);
	else if (S_ISDIR(st.mode))
		get_dir(c, &st, ipath, hpath);
	else if (S_ISLNK(st.mode))
		get_symlink(c, &st, ipath, hpath);
	else
		get_special(c, &st, ipath, hpath);
	progress_add(&c->prog, 1, 0);
	return 0;
}

/* Host destination: DEST, or DEST/name when DEST is a directory. */
static char *get_dest(const char *dest, const char *ipath)
{
	struct stat hs;
	const char *base = path_base(ipath);

	if (stat(dest, &hs) < 0 || !S_ISDIR(hs.st_mode))
		return strdup(dest);
	return *base ? path_join(dest, base) : strdup(dest);
}

static int get_args(int argc, char **argv, struct copy_args *a)
{
	static const struct option lopts[] = {
		{ "no-progress", no_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t fd;
	int c;

	opterr = 0;
	a->progress_fd = PROGRESS_TTY;
	while ((c = getopt_long(argc, argv, ":rRaC:v", lopts, NULL)) != -1) {
		switch (c) {
		case 'r': case 'R': case 'a':
			a->recursive = true;
			break;
		case 'v':
			a->verbose = true;
			break;
		case 'P':
			a->progress_fd = PROGRESS_OFF;
			break;
		case 'C':
			/* fsck's -C: 0 the line on the terminal, else lines on FD,
			 * which must be open (not one opened later, the image's) */
			if (parse_u64(optarg, &fd) < 0 || fd > 1024)
				return usage_error(argv[0], "bad progress descriptor '%s'", optarg);
			if (fd > 0 && fcntl((int)fd, F_GETFD) < 0)
				return usage_error(argv[0], "progress descriptor %s: %s", optarg,
						   strerror(errno));
			a->progress_fd = (int)fd;
			break;
		default:
			return bad_option(argv[0], argv, c);
		}
	}
	if (argc - optind < 3)
		return usage_error(argv[0], argc == optind ? "no IMAGE given" :
				   "missing SRC or DEST");
	if (argc - optind > 3)
		return usage_error(argv[0], "too many arguments (first extra: '%s')",
				   argv[optind + 3]);
	return EX_OK;
}

static void get_top(struct copy_ctx *c, const char *src, const char *dest)
{
	char *ipath = img_path(src), *hpath = NULL;
	cfs_ino_t ino;
	int ret = ipath ? cfs_path_resolve(c->fs, ipath, !c->recursive, &ino) : -ENOMEM;

	if (ret >= 0 && !(hpath = get_dest(dest, ipath)))
		ret = -ENOMEM;
	if (ret < 0)
		img_err(c, ipath ? ipath : src, ret);
	else
		get_entry(c, ino, ipath, hpath);
	free(ipath);
	free(hpath);
}

/* A mounted image is not copied from: what is on disk lags behind the
 * mount and changes while get reads it, so the copy would be of files
 * as they were (or a mix).  The mount point has the live files. */
static bool get_mounted(const char *img, const char *src)
{
	struct img_use use;

	img_wait(img, &use);
	warn_mount_unknown(img, &use);
	if (!use.mnt[0])
		return false;
	err_msg("%s is mounted on %s: get would copy the image as last written, "
		"not what the mount holds; copy from the mount instead (cp -a %s%s%s "
		"DEST)",
		img, use.mnt, use.mnt, src[0] == '/' ? "" : "/", src);
	return true;
}

/* get or put: IMAGE SRC DEST, the image opened read-only for get; top
 * copies SRC to DEST. */
static int copy_main(int argc, char **argv, bool rdonly,
		     void (*top)(struct copy_ctx *c, const char *src, const char *dest))
{
	struct copy_ctx c;
	struct copy_args a = { 0 };
	int status;

	status = get_args(argc, argv, &a);
	if (status)
		return status;
	if (rdonly && get_mounted(argv[optind], argv[optind + 1]))
		return EX_FAIL;
	if (setup_ctx(&c, argv[optind], argv[0], &a) < 0) {
		err_msg("%s", errstr(-ENOMEM));
		return EX_FAIL;
	}
	if (img_open(argv[optind], rdonly, &c.fs) < 0) {
		free_ctx(&c);
		return EX_FAIL;
	}
	top(&c, argv[optind + 1], argv[optind + 2]);
	/* the time until the data is on the disk, and after any error */
	status = img_close(c.fs, argv[optind], c.status);
	progress_done(&c.prog);
	free_ctx(&c);
	return status;
}

int cmd_get(int argc, char **argv)
{
	return copy_main(argc, argv, true, get_top);
}

/* ==== put: host -> image ============================================== */

static int put_entry(struct copy_ctx *c, const char *hpath, const struct stat *hs,
		     cfs_ino_t dir, const char *name, const char *ipath);

static int put_write(struct copy_ctx *c, cfs_ino_t ino, const char *buf,
		     size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = cfs_write(c->fs, ino, buf, len, off);

		if (n <= 0)
			return n < 0 ? (int)n : -EIO;
		buf += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

struct img_file {
	struct copy_ctx *c;
	cfs_ino_t ino;
};

static int img_piece(void *file, const char *p, size_t n, uint64_t at)
{
	struct img_file *f = file;

	return put_write(f->c, f->ino, p, n, at);
}

/* Write buf at off; a sparse source's all-zero blocks stay holes. */
static int put_piece(struct copy_ctx *c, cfs_ino_t ino, const char *buf,
		     size_t len, uint64_t off, bool sparse)
{
	struct img_file f = { c, ino };

	if (!sparse)
		return put_write(c, ino, buf, len, off);
	return write_nonzero(buf, len, off, c->block_size ? c->block_size : 4096, img_piece, &f);
}

/* Where the next data starts: SEEK_DATA, or off when the host can't say
 * (pipes, filesystems without SEEK_DATA, /proc files that claim size 0). */
static int host_next_data(int fd, bool seek, uint64_t off, uint64_t *data,
			  uint64_t *hole)
{
	off_t d = seek ? lseek(fd, (off_t)off, SEEK_DATA) : -1, h;

	if (seek && d < 0 && errno == ENXIO)
		return 1;
	if (d < 0) {
		*data = off;
		*hole = UINT64_MAX;
		return 0;
	}
	h = lseek(fd, d, SEEK_HOLE);
	*data = (uint64_t)d;
	*hole = h > d ? (uint64_t)h : UINT64_MAX;
	return 0;
}

/* Copy [start, end) of fd (to EOF if end is UINT64_MAX); *end_out is where
 * the data really ended.  *host_side tells whose error. */
static int put_region(struct copy_ctx *c, cfs_ino_t ino, int fd, uint64_t start,
		      uint64_t end, bool sparse, uint64_t *end_out, bool *host_side)
{
	bool seekable = end != UINT64_MAX || lseek(fd, 0, SEEK_CUR) >= 0;
	int ret;

	while (start < end) {
		size_t want = end - start < COPY_BUF_SIZE ? end - start : COPY_BUF_SIZE;
		ssize_t n = seekable ? pread(fd, c->buf, want, (off_t)start) :
				       read(fd, c->buf, want);

		if (n < 0 && errno == EINTR)
			continue;
		*host_side = true;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		*host_side = false;
		ret = put_piece(c, ino, c->buf, (size_t)n, start, sparse);
		if (ret < 0)
			return ret;
		start += (uint64_t)n;
		progress_add(&c->prog, 0, (uint64_t)n);
	}
	*end_out = start;
	return 0;
}

/* Copy the content; *size_out is the file size to set at the end. */
static int put_data(struct copy_ctx *c, cfs_ino_t ino, int fd, const struct stat *hs,
		    uint64_t *size_out, bool *host_side)
{
	bool sparse = S_ISREG(hs->st_mode) &&
		      (uint64_t)hs->st_blocks * 512 < (uint64_t)hs->st_size;
	uint64_t off = 0, data, hole, end = 0;
	int ret;
	bool seek = S_ISREG(hs->st_mode) && hs->st_size > 0;

	*host_side = false;
	while (host_next_data(fd, seek, off, &data, &hole) == 0) {
		ret = put_region(c, ino, fd, data, hole, sparse, &end, host_side);
		if (ret < 0)
			return ret;
		if (end < hole || hole == UINT64_MAX)
			break;	/* EOF */
		off = hole;
	}
	*size_out = end;
	if (S_ISREG(hs->st_mode) && (uint64_t)hs->st_size > end &&
	    lseek(fd, 0, SEEK_END) == hs->st_size)
		*size_out = (uint64_t)hs->st_size;	/* a trailing hole */
	return 0;
}

static void put_xattrs(struct copy_ctx *c, const char *hpath, int fd, cfs_ino_t ino,
		       const char *ipath)
{
	ssize_t len = fd >= 0 ? flistxattr(fd, NULL, 0) : llistxattr(hpath, NULL, 0);
	char *names = NULL, *val = NULL;

	if (len > 0 && (names = malloc((size_t)len)) != NULL)
		len = fd >= 0 ? flistxattr(fd, names, (size_t)len) :
				llistxattr(hpath, names, (size_t)len);
	for (ssize_t off = 0; names && len > 0 && off < len && !c->stop;) {
		const char *name = names + off;
		ssize_t vlen;
		int ret;

		off += (ssize_t)strnlen(name, (size_t)(len - off)) + 1;
		if (!xattr_copied(name))
			continue;
		vlen = fd >= 0 ? fgetxattr(fd, name, NULL, 0) : lgetxattr(hpath, name, NULL, 0);
		free(val);
		val = vlen >= 0 ? malloc((size_t)vlen + 1) : NULL;
		if (val)
			vlen = fd >= 0 ? fgetxattr(fd, name, val, (size_t)vlen) :
					 lgetxattr(hpath, name, val, (size_t)vlen);
		if (vlen < 0)
			continue;	/* vanished or not readable to us */
		ret = cfs_setxattr(c->fs, ino, name, val, (size_t)vlen, 0);
		if (ret < 0)
			img_err(c, ipath, ret);
	}
	free(val);
	free(names);
}

static void put_attrs(struct copy_ctx *c, const struct stat *hs, cfs_ino_t ino,
		      const char *ipath, uint64_t size, bool set_size)
{
	struct cfs_setattr a = {
		.valid = CFS_SET_ATIME | CFS_SET_MTIME,
		.atime = hs->st_atim,
		.mtime = hs->st_mtim,
	};
	int ret;

	if (!S_ISLNK(hs->st_mode)) {
		a.valid |= CFS_SET_MODE;
		a.mode = hs->st_mode & 07777;
	}
	if (set_size) {
		a.valid |= CFS_SET_SIZE;
		a.size = size;
	}
	ret = cfs_setattr(c->fs, ino, &a, NULL);
	if (ret < 0)
		img_err(c, ipath, ret);
}

/* An existing regular file is written into, as cp does: its other hard
 * links see the new content.  Emptied first, owned as the source. */
static int put_reuse(struct copy_ctx *c, const struct stat *hs, cfs_ino_t ino)
{
	struct cfs_setattr a = {
		.valid = CFS_SET_SIZE | CFS_SET_UID | CFS_SET_GID,
		.size = 0, .uid = hs->st_uid, .gid = hs->st_gid,
	};

	return cfs_setattr(c->fs, ino, &a, NULL);
}

/* ino: the existing regular file to write into, or 0 to make one. */
static int put_file(struct copy_ctx *c, const char *hpath, const struct stat *hs,
		    cfs_ino_t dir, const char *name, const char *ipath, cfs_ino_t ino)
{
	bool stdin_src = strcmp(hpath, "-") == 0, host_side = false, made = !ino;
	int fd = stdin_src ? STDIN_FILENO : open(hpath, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	uint64_t size = 0;
	int ret;

	if (fd < 0) {
		host_err(c, hpath, -errno);
		return -1;
	}
	if (made)
		ret = cfs_mknod(c->fs, dir, name, S_IFREG | (hs->st_mode & 07777), 0,
				hs->st_uid, hs->st_gid, &ino);
	else
		ret = put_reuse(c, hs, ino);
	if (ret < 0) {
		img_err(c, ipath, ret);
		goto out;
	}
	ret = put_data(c, ino, fd, hs, &size, &host_side);
	if (ret < 0) {
		if (host_side)
			host_err(c, hpath, ret);
		else
			img_err(c, ipath, ret);
		/* A half-copied file is worse than none (think ENOSPC); one
		 * that was there before stays, as cp leaves it. */
		if (made)
			cfs_unlink(c->fs, dir, name);
		goto out;
	}
	if (!stdin_src)
		put_xattrs(c, hpath, fd, ino, ipath);
	put_attrs(c, hs, ino, ipath, size, true);
out:
	if (!stdin_src)
		close(fd);
	return ret < 0 ? -1 : 0;
}

/* Names of a host directory, sorted so that images come out the same. */
static int host_list(const char *hpath, char ***names, size_t *n)
{
	DIR *d = opendir(hpath);
	struct dirent *de;
	size_t cap = 0;
	int ret = 0;

	*names = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while (ret == 0 && (errno = 0, de = readdir(d)) != NULL) {
		if (is_dot(de->d_name))
			continue;
		if (*n == cap) {
			char **nn = realloc(*names, (cap = cap ? cap * 2 : 64) * sizeof(*nn));

			if (!nn) {
				ret = -ENOMEM;
				break;
			}
			*names = nn;
		}
		if (!((*names)[*n] = strdup(de->d_name)))
			ret = -ENOMEM;
		else
			(*n)++;
	}
	if (ret == 0 && errno)
		ret = -errno;
	closedir(d);
	return ret;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void put_dir_entry(struct copy_ctx *c, const char *hpath, cfs_ino_t dir,
			  const char *name, const char *ipath)
{
	char *hp = path_join(hpath, name), *ip = path_join(ipath, name);
	struct stat hs;

	if (!hp || !ip)
		img_err(c, ipath, -ENOMEM);
	else if (lstat(hp, &hs) < 0)
		host_err(c, hp, -errno);
	else if (hs.st_dev == c->img_st.st_dev && hs.st_ino == c->img_st.st_ino)
		warn_msg("%s: skipped: this is the image being written", hp);
	else
		put_entry(c, hp, &hs, dir, name, ip);
	free(hp);
	free(ip);
}

static void put_dir_entries(struct copy_ctx *c, const char *hpath, cfs_ino_t dir,
			    const char *ipath)
{
	char **names;
	size_t n;
	int ret = host_list(hpath, &names, &n);

	if (ret < 0)
		host_err(c, hpath, ret);
	if (n > 1)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t k = 0; k < n; k++) {
		if (!c->stop)
			put_dir_entry(c, hpath, dir, names[k], ipath);
		free(names[k]);
	}
	free(names);
}

/* A symlink or special file was made as ino (ret 0) or not: give it
 * hpath's xattrs and attributes (0), or say why not (-1). */
static int put_made(struct copy_ctx *c, int ret, const char *hpath, const struct stat *hs,
		    cfs_ino_t ino, const char *ipath)
{
	if (ret < 0) {
		img_err(c, ipath, ret);
		return -1;
	}
	put_xattrs(c, hpath, -1, ino, ipath);
	put_attrs(c, hs, ino, ipath, 0, false);
	return 0;
}

/* Make the directory, or reuse the one there (merging like cp -r). */
static int put_dir(struct copy_ctx *c, const char *hpath, const struct stat *hs,
		   cfs_ino_t dir, const char *name, const char *ipath, cfs_ino_t *ino)
{
	int ret = 0;

	if (*ino == 0)
		ret = cfs_mkdir(c->fs, dir, name, hs->st_mode & 07777, hs->st_uid,
				hs->st_gid, ino);
	if (ret < 0) {
		img_err(c, ipath, ret);
		return -1;
	}
	put_dir_entries(c, hpath, *ino, ipath);
	put_xattrs(c, hpath, -1, *ino, ipath);
	put_attrs(c, hs, *ino, ipath, 0, false);
	return 0;
}

static int put_symlink(struct copy_ctx *c, const char *hpath, const struct stat *hs,
		       cfs_ino_t dir, const char *name, const char *ipath,
		       cfs_ino_t *ino)
{
	size_t cap = hs->st_size > 0 ? (size_t)hs->st_size + 1 : 4097;
	char *target = malloc(cap);
	ssize_t n = target ? readlink(hpath, target, cap) : -1;
	int ret;

	if (n < 0 || (size_t)n >= cap) {
		host_err(c, hpath, n < 0 ? -errno : -ENAMETOOLONG);
		free(target);
		return -1;
	}
	target[n] = 0;
	ret = cfs_symlink(c->fs, dir, name, target, hs->st_uid, hs->st_gid, ino);
	free(target);
	return put_made(c, ret, hpath, hs, *ino, ipath);
}

static int put_special(struct copy_ctx *c, const char *hpath, const struct stat *hs,
		       cfs_ino_t dir, const char *name, const char *ipath,
		       cfs_ino_t *ino)
{
	int ret = cfs_mknod(c->fs, dir, name, hs->st_mode & (S_IFMT | 07777),
			    (uint64_t)hs->st_rdev, hs->st_uid, hs->st_gid, ino);

	return put_made(c, ret, hpath, hs, *ino, ipath);
}

/* What is at dir/name already: 0 = nothing (or removed), 1 = a directory
 * to merge into, 2 = a regular file to write into (*ino), -1 = conflict
 * (reported).  reuse: a regular file may be written into. */
static int put_clear(struct copy_ctx *c, const struct stat *hs, cfs_ino_t dir,
		     const char *name, const char *ipath, bool reuse, cfs_ino_t *ino)
{
	struct cfs_stat st;
	int ret = cfs_lookup(c->fs, dir, name, ino);

	if (ret == -ENOENT) {
		*ino = 0;
		return 0;
	}
	if (ret >= 0)
		ret = cfs_getattr(c->fs, *ino, &st);
	if (ret >= 0 && S_ISDIR(st.mode) != S_ISDIR(hs->st_mode))
		ret = S_ISDIR(st.mode) ? -EISDIR : -ENOTDIR;
	if (ret >= 0 && S_ISDIR(st.mode))
		return 1;
	if (ret >= 0 && reuse && S_ISREG(st.mode))
		return 2;
	if (ret >= 0)
		ret = cfs_unlink(c->fs, dir, name);
	if (ret < 0) {
		img_err(c, ipath, ret);
		return -1;
	}
	*ino = 0;
	return 0;
}

/* The copy of a host inode already copied in (a further hard link). */
static struct link_ent *put_copied(struct copy_ctx *c, const struct stat *hs)
{
	if (S_ISDIR(hs->st_mode) || hs->st_nlink < 2)
		return NULL;
	return map_find(&c->links, (uint64_t)hs->st_dev, (uint64_t)hs->st_ino);
}

/* A further name for a host inode already copied in. */
static bool put_hardlink(struct copy_ctx *c, const struct stat *hs, cfs_ino_t dir,
			 const char *name, const char *ipath)
{
	struct link_ent *e = put_copied(c, hs);
	int ret;

	if (!e)
		return false;
	ret = cfs_link(c->fs, e->ino, dir, name);
	if (ret < 0)
		img_err(c, ipath, ret);
	return true;
}

static void put_remember(struct copy_ctx *c, const struct stat *hs, cfs_ino_t dir,
			 const char *name, const char *ipath)
{
	cfs_ino_t ino;

	if (S_ISDIR(hs->st_mode) || hs->st_nlink < 2)
		return;
	if (cfs_lookup(c->fs, dir, name, &ino) < 0)
		return;
	if (map_add(&c->links, (uint64_t)hs->st_dev, (uint64_t)hs->st_ino, ino, NULL) < 0)
		img_err(c, ipath, -ENOMEM);
}

static int put_entry(struct copy_ctx *c, const char *hpath, const struct stat *hs,
		     cfs_ino_t dir, const char *name, const char *ipath)
{
	bool regular = S_ISREG(hs->st_mode) || strcmp(hpath, "-") == 0;
	cfs_ino_t ino = 0;
	int ret = put_clear(c, hs, dir, name, ipath, regular && !put_copied(c, hs), &ino);

	if (ret < 0)
		return ret;
	if (put_hardlink(c, hs, dir, name, ipath))
		ret = 0;
	else if (S_ISDIR(hs->st_mode))
		ret = put_dir(c, hpath, hs, dir, name, ipath, &ino);
	else if (regular)
		ret = put_file(c, hpath, hs, dir, name, ipath, ret == 2 ? ino : 0);
	else if (S_ISLNK(hs->st_mode))
		ret = put_symlink(c, hpath, hs, dir, name, ipath, &ino);
	else
		ret = put_special(c, hpath, hs, dir, name, ipath, &ino);
	if (ret == 0)
		put_remember(c, hs, dir, name, ipath);
	progress_add(&c->prog, 1, 0);
	return ret;
}

/* The root directory as the destination itself: merge into it. */
static void put_into_root(struct copy_ctx *c, const char *hpath, const struct stat *hs)
{
	cfs_ino_t root;
	int ret = cfs_path_resolve(c->fs, "/", 1, &root);

	if (ret < 0) {
		img_err(c, "/", ret);
		return;
	}
	if (!S_ISDIR(hs->st_mode)) {
		img_err(c, "/", -EISDIR);
		return;
	}
	put_dir(c, hpath, hs, 0, "", "/", &root);
}

/* Image destination: DEST, or DEST/name when DEST is a directory. */
static char *put_dest(struct copy_ctx *c, const char *dest, const char *src)
{
	char *d = img_path(dest), *base, *out;
	struct cfs_stat st;
	cfs_ino_t ino;

	if (!d)
		return NULL;
	if (cfs_path_resolve(c->fs, d, 1, &ino) < 0 || cfs_getattr(c->fs, ino, &st) < 0 ||
	    !S_ISDIR(st.mode))
		return d;
	base = host_base(src);
	out = base && *base && strcmp(src, "-") != 0 ? path_join(d, base) :
	      base ? strdup(d) : NULL;
	free(base);
	free(d);
	return out;
}

static int put_stat_src(struct copy_ctx *c, const char *src, struct stat *hs)
{
	int ret = strcmp(src, "-") == 0 ? fstat(STDIN_FILENO, hs) :
		  c->recursive ? lstat(src, hs) : stat(src, hs);

	if (ret < 0) {
		host_err(c, src, -errno);
		return -1;
	}
	if (strcmp(src, "-") == 0) {
		hs->st_mode = S_IFREG | 0644;	/* whatever stdin is, make a file */
		hs->st_uid = geteuid();
		hs->st_gid = getegid();
		clock_gettime(CLOCK_REALTIME, &hs->st_mtim);
		hs->st_atim = hs->st_mtim;
		hs->st_nlink = 1;
	} else if (S_ISDIR(hs->st_mode) && !c->recursive) {
		err_msg("%s: is a directory (use -r)", src);
		c->status = EX_FAIL;
		return -1;
	}
	return 0;
}

static void put_top(struct copy_ctx *c, const char *src, const char *dest)
{
	char name[CFS_NAME_MAX + 1], *ipath = NULL;
	struct cfs_info info;
	struct stat hs;
	cfs_ino_t dir;
	int ret;

	if (put_stat_src(c, src, &hs) < 0)
		return;
	if (cfs_get_info(c->fs, &info) == 0)
		c->block_size = info.block_size;
	ipath = put_dest(c, dest, src);
	if (!ipath) {
		img_err(c, dest, -ENOMEM);
		return;
	}
	if (strcmp(ipath, "/") == 0) {
		put_into_root(c, src, &hs);
		goto out;
	}
	ret = cfs_path_parent(c->fs, ipath, &dir, name);
	if (ret < 0)
		img_err(c, ipath, ret);
	else
		put_entry(c, src, &hs, dir, name, ipath);
out:
	free(ipath);
}

int cmd_put(int argc, char **argv)
{
	return copy_main(argc, argv, false, put_top);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Directory listing, tree-walk cycle guard and the progress line shared by
 * the commands that walk trees (ls -R, rm -r, get -r, put -r). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool.h"

/* ---- directory listing ---------------------------------------------- */

struct dir_fill_ctx {
	struct dir_list *dl;
	bool skip_dots;
	uint64_t cookie;
	size_t seen;
	int err;
};

static int dir_fill(void *arg, const char *name, size_t namelen, cfs_ino_t ino,
		    uint32_t dtype, uint64_t next_cookie)
{
	struct dir_fill_ctx *c = arg;
	struct dir_list *dl = c->dl;
	struct dir_entry *e;

	c->seen++;
	c->cookie = next_cookie;
	if (c->skip_dots && ((namelen == 1 && name[0] == '.') ||
			     (namelen == 2 && name[0] == '.' && name[1] == '.')))
		return 0;
	if (dl->n == dl->cap) {
		size_t cap = dl->cap ? dl->cap * 2 : 64;
		struct dir_entry *n = realloc(dl->ent, cap * sizeof(*n));

		if (!n)
			goto nomem;
		dl->ent = n;
		dl->cap = cap;
	}
	e = &dl->ent[dl->n];
	e->name = strndup(name, namelen);
	if (!e->name)
		goto nomem;
	e->ino = ino;
	e->dtype = dtype;
	dl->n++;
	return 0;
nomem:
	c->err = -ENOMEM;
	return 1;
}

/* The readdir contract lets the library deliver everything in one call;
 * calling again from the last cookie until nothing comes back also copes
 * with an implementation that returns a bufferful at a time. */
int dir_read(struct cfs_fs *fs, cfs_ino_t dir, bool skip_dots, struct dir_list *dl)
{
	struct dir_fill_ctx c = { .dl = dl, .skip_dots = skip_dots };
	uint64_t start;
	int ret;

	memset(dl, 0, sizeof(*dl));
	for (;;) {
		start = c.cookie;
		c.seen = 0;
		ret = cfs_readdir(fs, dir, start, dir_fill, &c);
		if (c.err)
			ret = c.err;
		if (ret < 0)
			goto out;
		if (c.seen == 0)
			break;
		if (c.cookie == start) {
			ret = -EIO;	/* no progress: a looping directory */
			goto out;
		}
	}
	ret = 0;
out:
	if (ret < 0)
		dir_list_free(dl);
	return ret;
}

int dir_read_host(int dfd, bool skip_dots, struct dir_list *dl)
{
	struct dir_fill_ctx c = { .dl = dl, .skip_dots = skip_dots };
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;
	struct dirent *de;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	memset(dl, 0, sizeof(*dl));
	if (!d) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		return ret;
	}
	while (!c.err) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			ret = -errno;
			break;
		}
		dir_fill(&c, de->d_name, strlen(de->d_name), (cfs_ino_t)de->d_ino,
			 de->d_type, 0);
	}
	if (c.err)
		ret = c.err;
	closedir(d);
	if (ret < 0)
		dir_list_free(dl);
	return ret;
}

void dir_list_free(struct dir_list *dl)
{
	for (size_t i = 0; i < dl->n; i++)
		free(dl->ent[i].name);
	free(dl->ent);
	memset(dl, 0, sizeof(*dl));
}

static int ent_cmp(const void *a, const void *b)
{
	const struct dir_entry *x = a, *y = b;

	return strcmp(x->name, y->name);
}

void dir_list_sort(struct dir_list *dl)
{
	if (dl->n > 1)
		qsort(dl->ent, dl->n, sizeof(dl->ent[0]), ent_cmp);
}

/* ---- cycle guard ---------------------------------------------------- */

int walk_push(struct walk_stack *ws, cfs_ino_t ino)
{
	if (ws->n >= WALK_MAX_DEPTH)
		return -ELOOP;
	for (size_t i = 0; i < ws->n; i++)
		if (ws->ino[i] == ino)
			return -ELOOP;
	if (ws->n == ws->cap) {
		size_t cap = ws->cap ? ws->cap * 2 : 32;
		cfs_ino_t *n = realloc(ws->ino, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		ws->ino = n;
		ws->cap = cap;
	}
	ws->ino[ws->n++] = ino;
	return 0;
}

void walk_pop(struct walk_stack *ws)
{
	if (ws->n)
		ws->n--;
}

void walk_free(struct walk_stack *ws)
{
	free(ws->ino);
	memset(ws, 0, sizeof(*ws));
}

/* ---- progress ------------------------------------------------------- */

/* at most ten updates a second, as e2fsck -C and rsync do */
#define PROGRESS_INTERVAL_NS 100000000LL

/* The progress line being shown, so an error message can clear it first. */
static struct progress *active;

static double since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

void progress_init(struct progress *p, const char *what, int fd, bool summary)
{
	const char *ms = getenv("CHUNKFS_PROGRESS_MS");

	memset(p, 0, sizeof(*p));
	p->what = what;
	p->on = fd == PROGRESS_TTY && isatty(STDERR_FILENO) == 1;
	p->fd = fd > 0 ? fd : -1;
	p->summary = summary;
	/* the tests set the interval, to see updates of a copy of a few files */
	p->interval_ns = ms && *ms ? strtoll(ms, NULL, 10) * 1000000LL : PROGRESS_INTERVAL_NS;
	clock_gettime(CLOCK_MONOTONIC, &p->start);
	p->last = p->start;
	if (p->on)
		active = p;
}

void progress_clear(void)
{
	if (active && active->shown) {
		fputs("\r\033[K", stderr);
		active->shown = false;
	}
}

/* "1.5 GiB": bytes in the largest binary unit under 1024 of it */
static void fmt_bytes(double b, char *out, size_t len)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	int u = 0;

	while (b >= 1024 && u < 5) {
		b /= 1024;
		u++;
	}
	snprintf(out, len, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

static void progress_show(struct progress *p, const struct timespec *now)
{
	double t = since(&p->start, now);
	char size[32], rate[32];
	unsigned s = (unsigned)t;

	fmt_bytes((double)p->bytes, size, sizeof(size));
	fmt_bytes(t > 0 ? (double)p->bytes / t : 0, rate, sizeof(rate));
	if (p->on) {
		fprintf(stderr, "\r%s: %llu files, %s, %s/s, %u:%02u:%02u\033[K", p->what,
			(unsigned long long)p->files, size, rate, s / 3600, s / 60 % 60, s % 60);
		fflush(stderr);
		p->shown = true;
	}
	if (p->fd > 0)
		dprintf(p->fd, "%llu %llu %.3f\n", (unsigned long long)p->files,
			(unsigned long long)p->bytes, t);
}

void progress_add(struct progress *p, uint64_t files, uint64_t bytes)
{
	struct timespec now;
	long long dt;

	p->files += files;
	p->bytes += bytes;
	if (!p->on && p->fd < 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	dt = (long long)(now.tv_sec - p->last.tv_sec) * 1000000000LL +
	     (now.tv_nsec - p->last.tv_nsec);
	if (dt < p->interval_ns)
		return;
	p->last = now;
	progress_show(p, &now);
}

void progress_done(struct progress *p)
{
	struct timespec now;
	char size[32], rate[32], line[160];
	double t;

	if (active == p)
		active = NULL;
	clock_gettime(CLOCK_MONOTONIC, &now);
	t = since(&p->start, &now);
	if (p->fd > 0)
		dprintf(p->fd, "%llu %llu %.3f\n", (unsigned long long)p->files,
			(unsigned long long)p->bytes, t);
	if (!p->on && !p->summary)
		return;
	fmt_bytes((double)p->bytes, size, sizeof(size));
	fmt_bytes(t > 0 ? (double)p->bytes / t : 0, rate, sizeof(rate));
	snprintf(line, sizeof(line), "%s: %llu files, %llu bytes (%s) in %.1f s, %s/s",
		 p->what, (unsigned long long)p->files, (unsigned long long)p->bytes, size,
		 t, rate);
	/* one summary: on stdout with -v, else where the progress line was */
	if (p->on)
		fputs("\r\033[K", stderr);
	if (p->summary) {
		printf("%s\n", line);
		fflush(stdout);
	} else {
		fprintf(stderr, "%s\n", line);
	}
}

bool err_is_fatal(int err)
{
	switch (-err) {
	case ENOSPC: case EIO: case EROFS: case ENOMEM: case EDQUOT:
	case EUCLEAN:
		return true;
	default:
		return false;
	}
}

int fd_write_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = off < 0 ? write(fd, p, len) : pwrite(fd, p, len, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
		if (off >= 0)
			off += n;
	}
	return 0;
}

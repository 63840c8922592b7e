/* SPDX-License-Identifier: GPL-2.0-or-later */
/* fsop: run file system calls from a script and check each result.
 *
 *   fsop [-C DIR] < SCRIPT
 *
 * Script lines (blank lines and "# ..." are ignored):
 *   == NAME              start test NAME (its result line is printed when the
 *                        next starts or at the end)
 *   OP ARG... => WANT    run OP, compare its result with WANT
 *   OP ARG...            run OP, any result is fine (setup)
 * A result is "OK", "OK VALUE" or "ERR ENAME" (e.g. "ERR ENOTEMPTY"); WANT
 * "*" accepts anything.  Output: "PASS NAME" or "FAIL NAME: line N: OP ...
 * gave X, want Y" per test (the tests/cli protocol), nothing else.  Exit
 * status 0 unless a line could not be parsed.
 *
 * Arguments: "@N" anywhere in an argument becomes N letters 'n' (long
 * names), "\n", "\t", "\0", "\xNN", "\\" and "\s" (space) are escapes in data.
 * Handles: open stores a file descriptor under a name (one word) that
 * later ops use.
 *
 * OPS
 *   open H PATH FLAGS [MODE]   FLAGS like O_WRONLY|O_CREAT|O_EXCL
 *   close H / fsync H / fdatasync H
 *   write H DATA / pwrite H OFF DATA          -> OK bytes
 *   read H N / pread H OFF N                  -> OK data (escaped)
 *   lseek H OFF SET|CUR|END|DATA|HOLE         -> OK offset
 *   ftruncate H SIZE / truncate PATH SIZE
 *   fallocate H 0|KEEP_SIZE|KEEP_SIZE,PUNCH_HOLE OFF LEN
 *   stat PATH F,F.. / lstat PATH F,.. / fstat H F,..
 *        F: type mode nlink uid gid size blocks ino chunk rdev
 *   mkdir PATH MODE / rmdir PATH / unlink PATH / mknod PATH TYPE MODE [MAJ MIN]
 *   rename A B / renameat2 A B NOREPLACE|EXCHANGE|WHITEOUT
 *   link A B / symlink TARGET PATH / readlink PATH
 *   chmod PATH MODE / chown PATH UID GID / lchown PATH UID GID
 *   utimens PATH ATIME MTIME     (NOW, OMIT or SEC[.NSEC])
 *   setxattr PATH NAME VALUE 0|CREATE|REPLACE / lsetxattr ...
 *   getxattr PATH NAME [SIZE] / lgetxattr ... / listxattr PATH / removexattr PATH NAME
 *   statfs PATH F  (F: bsize blocks bfree bavail files ffree namemax)
 *   ls PATH                    -> OK sorted names (without . and ..)
 *   count PATH                 -> OK number of entries (without . and ..)
 *   umask MODE / sleep MS / chdir PATH / access PATH r|w|x|rw..
 *   savetime SLOT PATH         remember PATH's atime, mtime, ctime
 *   cmptime SLOT PATH          -> OK a? m? c? with ? one of < = > (now vs saved)
 *   mkfiles DIR N              create N empty files DIR/f0..  -> OK N
 *   sameino A B                -> OK same | OK different
 *   readdir_check DIR PREFIX N read DIR (small buffers, in steps) and check
 *                              that PREFIX0..PREFIX<N-1> each appear exactly
 *                              once -> OK | ERR missing NAME | ERR twice NAME
 *   churn DIR N SECS           create and remove DIR/churnI (I < N) for SECS
 *                              seconds -> OK rounds
 *   relink A B SECS            link A B, lstat A (2 links), unlink B, over
 *                              and over for SECS seconds -> OK | ERR what
 *                              went wrong in which round
 *   listloop DIR SECS          read DIR over and over for SECS seconds -> OK
 *   stress OWN SHARED SECS SEED [MANIFEST]
 *                              random creates, writes, appends, truncates,
 *                              reads (checked), renames between OWN and SHARED,
 *                              links, unlinks, mkdir/rmdir for SECS seconds on
 *                              files named wSEED_*; finally every file left is
 *                              read back -> OK | ERR what went wrong.  With
 *                              MANIFEST (a file outside the mount), also every
 *                              64th step a file OWN/dSEED_N is written and
 *                              fsync'ed with its directory, then listed in
 *                              MANIFEST as "PATH TAG LENGTH", never to change
 *   durable_check MANIFEST     every file MANIFEST lists reads back exactly
 *                              -> OK | ERR what went wrong
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define MAXARGS 8
#define MAXH 32
#define OUTMAX 8192
#define DATAMAX (70 * 1024)

struct handle {
	char name[32];
	int fd;
};

static struct handle handles[MAXH];
static struct timespec saved[16][3];
static char out[OUTMAX];

static const char *errname(int e)
{
	static const struct { int e; const char *n; } t[] = {
#define E(x) { x, #x }
		E(EPERM), E(ENOENT), E(EIO), E(ENXIO), E(E2BIG), E(EBADF), E(EAGAIN),
		E(ENOMEM), E(EACCES), E(EFAULT), E(EBUSY), E(EEXIST), E(EXDEV),
		E(ENODEV), E(ENOTDIR), E(EISDIR), E(EINVAL), E(ENFILE), E(EMFILE),
		E(ETXTBSY), E(EFBIG), E(ENOSPC), E(ESPIPE), E(EROFS), E(EMLINK),
		E(ERANGE), E(ENAMETOOLONG), E(ENOSYS), E(ENOTEMPTY), E(ELOOP),
		E(ENODATA), E(EOPNOTSUPP), E(ENOTCONN), E(EUCLEAN), E(EOVERFLOW),
		E(EDQUOT), E(ESTALE), E(EBADMSG),
#undef E
	};
	static char buf[32];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].e == e)
			return t[i].n;
	snprintf(buf, sizeof(buf), "E%d", e);
	return buf;
}

static void set_out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out, sizeof(out), fmt, ap);
	va_end(ap);
}

/* Result of a call returning -1/errno. */
static void res(long r)
{
	if (r < 0)
		set_out("ERR %s", errname(errno));
	else
		set_out("OK");
}

static void res_val(long long r)
{
	if (r < 0)
		set_out("ERR %s", errname(errno));
	else
		set_out("OK %lld", r);
}

/* Expand "@N" into N 'n's and backslash escapes; returns the length. */
static size_t expand(const char *in, char *o, size_t cap)
{
	size_t n = 0;

	while (*in && n + 1 < cap) {
		if (*in == '@' && in[1] >= '0' && in[1] <= '9') {
			long k = strtol(in + 1, (char **)&in, 10);

			while (k-- > 0 && n + 1 < cap)
				o[n++] = 'n';
			continue;
		}
		if (in[0] == '\\' && in[1] == 'x' && in[2] && in[3]) {
			char hex[3] = { in[2], in[3], 0 };

			o[n++] = (char)strtol(hex, NULL, 16);
			in += 4;
			continue;
		}
		if (*in == '\\' && in[1]) {
			in++;
			o[n++] = *in == 'n' ? '\n' : *in == 't' ? '\t' : *in == '0' ? 0 :
				 *in == 's' ? ' ' : *in;
			in++;
			continue;
		}
		o[n++] = *in++;
	}
	o[n] = 0;
	return n;
}

static void escape(const char *d, size_t n)
{
	size_t o = 3;

	strcpy(out, n ? "OK " : "OK");
	for (size_t i = 0; i < n && o + 5 < OUTMAX; i++) {
		unsigned char c = (unsigned char)d[i];

		if (c == 0)
			o += (size_t)sprintf(out + o, "\\0");
		else if (c == '\n')
			o += (size_t)sprintf(out + o, "\\n");
		else if (c < 32 || c > 126 || c == '\\')
			o += (size_t)sprintf(out + o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	out[o] = 0;
}

static int *hfd(const char *name, bool create)
{
	for (int i = 0; i < MAXH; i++)
		if (handles[i].name[0] && strcmp(handles[i].name, name) == 0)
			return &handles[i].fd;
	if (!create)
		return NULL;
	for (int i = 0; i < MAXH; i++)
		if (!handles[i].name[0]) {
			snprintf(handles[i].name, sizeof(handles[i].name), "%s", name);
			return &handles[i].fd;
		}
	return NULL;
}

static int fd_of(const char *name)
{
	int *p = hfd(name, false);

	return p ? *p : -1;
}

static int parse_flags(const char *s)
{
	static const struct { const char *n; int v; } t[] = {
		{ "O_RDONLY", O_RDONLY }, { "O_WRONLY", O_WRONLY }, { "O_RDWR", O_RDWR },
		{ "O_CREAT", O_CREAT }, { "O_EXCL", O_EXCL }, { "O_TRUNC", O_TRUNC },
		{ "O_APPEND", O_APPEND }, { "O_DIRECTORY", O_DIRECTORY },
		{ "O_NOFOLLOW", O_NOFOLLOW }, { "O_SYNC", O_SYNC }, { "O_DSYNC", O_DSYNC },
		{ "O_PATH", O_PATH }, { "O_NONBLOCK", O_NONBLOCK }, { "O_DIRECT", O_DIRECT },
		{ "O_TMPFILE", O_TMPFILE },
	};
	char buf[256], *tok, *save;
	int v = 0;

	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save)) {
		size_t i;

		for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
			if (strcmp(tok, t[i].n) == 0)
				break;
		if (i == sizeof(t) / sizeof(t[0]))
			return -1;
		v |= t[i].v;
	}
	return v;
}

static long long num(const char *s)
{
	return strtoll(s, NULL, 0);
}

static mode_t mode_arg(const char *s)
{
	return (mode_t)strtoul(s, NULL, 8);
}

static const char *type_str(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG: return "reg";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "lnk";
	case S_IFIFO: return "fifo";
	case S_IFCHR: return "chr";
	case S_IFBLK: return "blk";
	case S_IFSOCK: return "sock";
	}
	return "?";
}

static void stat_fields(const struct stat *st, const char *fields)
{
	char buf[256], *tok, *save;
	size_t o = 2;

	strcpy(out, "OK");
	snprintf(buf, sizeof(buf), "%s", fields);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char v[64];

		if (!strcmp(tok, "type"))
			snprintf(v, sizeof(v), "%s", type_str(st->st_mode));
		else if (!strcmp(tok, "mode"))
			snprintf(v, sizeof(v), "%04o", st->st_mode & 07777);
		else if (!strcmp(tok, "nlink"))
			snprintf(v, sizeof(v), "%lu", (unsigned long)st->st_nlink);
		else if (!strcmp(tok, "uid"))
			snprintf(v, sizeof(v), "%u", st->st_uid);
		else if (!strcmp(tok, "gid"))
			snprintf(v, sizeof(v), "%u", st->st_gid);
		else if (!strcmp(tok, "size"))
			snprintf(v, sizeof(v), "%lld", (long long)st->st_size);
		else if (!strcmp(tok, "blocks"))
			snprintf(v, sizeof(v), "%lld", (long long)st->st_blocks);
		else if (!strcmp(tok, "ino"))
			snprintf(v, sizeof(v), "%llu", (unsigned long long)st->st_ino);
		else if (!strcmp(tok, "chunk"))
			snprintf(v, sizeof(v), "%llu", (unsigned long long)st->st_ino >> 24);
		else if (!strcmp(tok, "rdev"))
			snprintf(v, sizeof(v), "%u:%u", major(st->st_rdev), minor(st->st_rdev));
		else if (!strcmp(tok, "atime") || !strcmp(tok, "mtime"))
			snprintf(v, sizeof(v), "%lld.%09ld",
				 (long long)(tok[0] == 'a' ? st->st_atim : st->st_mtim).tv_sec,
				 (tok[0] == 'a' ? st->st_atim : st->st_mtim).tv_nsec);
		else
			snprintf(v, sizeof(v), "?%s", tok);
		o += (size_t)snprintf(out + o, OUTMAX - o, " %s", v);
	}
}

static int names_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ls (list) or count the entries of a directory. */
static void op_dir(const char *path, bool list)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char **v = NULL;
	size_t n = 0, cap = 0, o;

	if (!d) {
		res(-1);
		return;
	}
	errno = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (list) {
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				v = realloc(v, cap * sizeof(*v));
			}
			v[n] = strdup(e->d_name);
		}
		n++;
	}
	if (errno) {
		res(-1);
		closedir(d);
		return;
	}
	closedir(d);
	if (!list) {
		set_out("OK %zu", n);
		return;
	}
	if (n)
		qsort(v, n, sizeof(*v), names_cmp);
	strcpy(out, "OK");
	o = 2;
	for (size_t i = 0; i < n; i++) {
		o += (size_t)snprintf(out + o, OUTMAX - o, " %s", v[i]);
		if (o >= OUTMAX)
			o = OUTMAX - 1;
		free(v[i]);
	}
	free(v);
}

static int parse_time(const char *s, struct timespec *ts)
{
	if (!strcmp(s, "NOW")) {
		ts->tv_sec = 0;
		ts->tv_nsec = UTIME_NOW;
	} else if (!strcmp(s, "OMIT")) {
		ts->tv_sec = 0;
		ts->tv_nsec = UTIME_OMIT;
	} else {
		char *end;

		ts->tv_sec = strtoll(s, &end, 10);
		ts->tv_nsec = *end == '.' ? strtol(end + 1, NULL, 10) : 0;
	}
	return 0;
}

static char cmpc(const struct timespec *now, const struct timespec *then)
{
	if (now->tv_sec != then->tv_sec)
		return now->tv_sec > then->tv_sec ? '>' : '<';
	if (now->tv_nsec != then->tv_nsec)
		return now->tv_nsec > then->tv_nsec ? '>' : '<';
	return '=';
}

static void op_times(char **a, bool save)
{
	int slot = (int)num(a[1]) & 15;
	struct stat st;

	if (lstat(a[2], &st) < 0) {
		res(-1);
		return;
	}
	if (save) {
		saved[slot][0] = st.st_atim;
		saved[slot][1] = st.st_mtim;
		saved[slot][2] = st.st_ctim;
		set_out("OK");
		return;
	}
	set_out("OK a%c m%c c%c", cmpc(&st.st_atim, &saved[slot][0]),
		cmpc(&st.st_mtim, &saved[slot][1]), cmpc(&st.st_ctim, &saved[slot][2]));
}

static void op_xattr_get(char **a, int n, bool l)
{
	size_t size = n > 3 ? (size_t)num(a[3]) : 65536;
	char *buf = malloc(size ? size : 1);
	ssize_t r = l ? lgetxattr(a[1], a[2], buf, size) : getxattr(a[1], a[2], buf, size);

	if (r < 0)
		res(-1);
	else if (size == 0 || n > 3)
		set_out("OK %zd", r);
	else
		escape(buf, (size_t)r);
	free(buf);
}

static void op_listxattr(const char *path)
{
	char buf[65536], *names[512];
	ssize_t r = llistxattr(path, buf, sizeof(buf));
	size_t n = 0, o = 2;

	if (r < 0) {
		res(-1);
		return;
	}
	for (char *p = buf; p < buf + r && n < 512; p += strlen(p) + 1)
		names[n++] = p;
	if (n)
		qsort(names, n, sizeof(*names), names_cmp);
	strcpy(out, "OK");
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(out + o, OUTMAX - o, " %s", names[i]);
}

static int xflags(const char *s)
{
	return !strcmp(s, "CREATE") ? XATTR_CREATE : !strcmp(s, "REPLACE") ? XATTR_REPLACE : 0;
}

static void op_statfs(char **a)
{
	struct statvfs sv;
	unsigned long long v;

	if (statvfs(a[1], &sv) < 0) {
		res(-1);
		return;
	}
	v = !strcmp(a[2], "bsize") ? sv.f_bsize : !strcmp(a[2], "blocks") ? sv.f_blocks :
	    !strcmp(a[2], "bfree") ? sv.f_bfree : !strcmp(a[2], "bavail") ? sv.f_bavail :
	    !strcmp(a[2], "files") ? sv.f_files : !strcmp(a[2], "ffree") ? sv.f_ffree :
	    !strcmp(a[2], "namemax") ? sv.f_namemax : 0;
	set_out("OK %llu", v);
}

static void op_mknod(char **a, int n)
{
	mode_t t = !strcmp(a[2], "fifo") ? S_IFIFO : !strcmp(a[2], "chr") ? S_IFCHR :
		   !strcmp(a[2], "blk") ? S_IFBLK : !strcmp(a[2], "sock") ? S_IFSOCK : S_IFREG;
	dev_t dev = n > 5 ? makedev((unsigned)num(a[4]), (unsigned)num(a[5])) : 0;

	res(mknod(a[1], t | mode_arg(a[3]), dev));
}

static void op_rw(char **a, int n, bool is_write, bool positional)
{
	int fd = fd_of(a[1]);
	off_t off = positional ? (off_t)num(a[2]) : 0;
	const char *arg = a[positional ? 3 : 2];
	static char data[DATAMAX];
	ssize_t r;

	(void)n;
	if (is_write) {
		size_t len = expand(arg, data, sizeof(data));

		r = positional ? pwrite(fd, data, len, off) : write(fd, data, len);
		res_val(r);
		return;
	}
	size_t len = (size_t)num(arg);

	if (len > OUTMAX / 5)
		len = OUTMAX / 5;
	r = positional ? pread(fd, data, len, off) : read(fd, data, len);
	if (r < 0)
		res(-1);
	else
		escape(data, (size_t)r);
}

static int whence_of(const char *s)
{
	return !strcmp(s, "SET") ? SEEK_SET : !strcmp(s, "CUR") ? SEEK_CUR :
	       !strcmp(s, "END") ? SEEK_END : !strcmp(s, "DATA") ? SEEK_DATA : SEEK_HOLE;
}

struct flag_name {
	const char *name;
	int bit;
};

#define FLAGS_IN(s, t) flags_in(s, t, sizeof(t) / sizeof(t[0]))

/* The bits of the names of t that s mentions, however it joins them
 * ("A|B", "A,B"; "0" for none). */
static int flags_in(const char *s, const struct flag_name *t, size_t n)
{
	int bits = 0;

	for (size_t i = 0; i < n; i++)
		if (strstr(s, t[i].name))
			bits |= t[i].bit;
	return bits;
}

static void op_fallocate(char **a)
{
	static const struct flag_name t[] = {
		{ "KEEP_SIZE", FALLOC_FL_KEEP_SIZE }, { "PUNCH_HOLE", FALLOC_FL_PUNCH_HOLE },
		{ "ZERO_RANGE", FALLOC_FL_ZERO_RANGE },
	};

	res(fallocate(fd_of(a[1]), FLAGS_IN(a[2], t), (off_t)num(a[3]), (off_t)num(a[4])));
}

static void op_utimens(char **a)
{
	struct timespec ts[2];

	parse_time(a[2], &ts[0]);
	parse_time(a[3], &ts[1]);
	res(utimensat(AT_FDCWD, a[1], ts, AT_SYMLINK_NOFOLLOW));
}

static void op_mkfiles(char **a)
{
	long n = (long)num(a[2]), i;
	char path[4096];

	for (i = 0; i < n; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/f%ld", a[1], i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			break;
		close(fd);
	}
	if (i < n)
		set_out("ERR %s at %ld", errname(errno), i);
	else
		set_out("OK %ld", n);
}

static void op_sameino(char **a)
{
	struct stat x, y;

	if (lstat(a[1], &x) < 0 || lstat(a[2], &y) < 0)
		res(-1);
	else
		set_out("OK %s", x.st_ino == y.st_ino && x.st_dev == y.st_dev ?
			"same" : "different");
}

/* getdents64 with a small buffer, so the listing takes many calls (and
 * many FUSE readdir requests) while the directory changes. */
static void op_readdir_check(char **a)
{
	long n = (long)num(a[3]), i;
	size_t plen = strlen(a[2]);
	unsigned char *seen = calloc((size_t)n + 1, 1);
	char buf[1024];
	int fd = open(a[1], O_RDONLY | O_DIRECTORY);
	long r;

	if (fd < 0 || !seen) {
		res(-1);
		free(seen);
		return;
	}
	set_out("OK");
	while ((r = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < r;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			char *end;

			off += d->d_reclen;
			if (strncmp(d->d_name, a[2], plen) != 0)
				continue;
			i = strtol(d->d_name + plen, &end, 10);
			if (*end || i < 0 || i >= n)
				continue;
			if (seen[i]++ == 1)
				set_out("ERR twice %s", d->d_name);
		}
	}
	if (r < 0)
		res(-1);
	for (i = 0; i < n && !strcmp(out, "OK"); i++)
		if (!seen[i])
			set_out("ERR missing %s%ld", a[2], i);
	close(fd);
	free(seen);
}

static void op_churn(char **a)
{
	long n = (long)num(a[2]), rounds = 0;
	time_t end = time(NULL) + (time_t)num(a[3]);
	char path[4096];

	while (time(NULL) < end) {
		for (long i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/churn%ld", a[1], i);
			close(open(path, O_WRONLY | O_CREAT, 0644));
		}
		for (long i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/churn%ld", a[1], i);
			unlink(path);
		}
		rounds++;
	}
	set_out("OK %ld", rounds ? 1L : 0L);
}

/* A second name made and removed again and again: each time the file
 * must have two links, and the kernel must never take it for unlinked
 * (link(2) of a file it believes has no links fails with ENOENT). */
static const char *relink_round(char **a)
{
	struct stat st;

	if (link(a[1], a[2]) < 0)
		return "link";
	if (lstat(a[1], &st) < 0)
		return "lstat";
	if (st.st_nlink != 2) {
		errno = EMLINK;
		return "lstat: not 2 links";
	}
	return unlink(a[2]) < 0 ? "unlink" : NULL;
}

static void op_relink(char **a)
{
	time_t end = time(NULL) + (time_t)num(a[3]);
	long rounds = 0;
	const char *what = NULL;

	while (!what && time(NULL) < end) {
		rounds++;
		what = relink_round(a);
	}
	if (what)
		set_out("ERR %s in round %ld: %s", errname(errno), rounds, what);
	else
		set_out("OK");
}

static void op_listloop(char **a)
{
	time_t end = time(NULL) + (time_t)num(a[2]);

	while (time(NULL) < end) {
		DIR *d = opendir(a[1]);

		if (!d) {
			res(-1);
			return;
		}
		while (readdir(d))
			;
		closedir(d);
	}
	set_out("OK");
}

/* ---- stress ---- */

#define SNF 48

struct sfile {
	bool exists, shared;
	unsigned tag;
	size_t len;
};

static uint8_t pat(unsigned tag, size_t k)
{
	return (uint8_t)(tag * 31u + k * 7u + k / 4096u);
}

static void spath(char *buf, size_t n, char **a, long seed, int i, bool shared, const char *sfx)
{
	snprintf(buf, n, "%s/w%ld_%d%s", shared ? a[2] : a[1], seed, i, sfx);
}

static int s_write(const char *path, unsigned tag, size_t from, size_t to, int flags)
{
	static uint8_t buf[65536];
	int fd = open(path, O_WRONLY | flags, 0644);
	size_t k;

	if (fd < 0)
		return -1;
	for (k = from; k < to;) {
		size_t n = to - k < sizeof(buf) ? to - k : sizeof(buf);

		for (size_t j = 0; j < n; j++)
			buf[j] = pat(tag, k + j);
		if (pwrite(fd, buf, n, (off_t)k) != (ssize_t)n) {
			close(fd);
			return -1;
		}
		k += n;
	}
	return close(fd);
}

static int s_verify(const char *path, const struct sfile *f)
{
	static uint8_t buf[65536];
	int fd = open(path, O_RDONLY);
	size_t k = 0;
	ssize_t n;
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size != f->len) {
		close(fd);
		errno = EBADMSG;
		return -1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t j = 0; j < n; j++, k++)
			if (buf[j] != pat(f->tag, k)) {
				close(fd);
				errno = EBADMSG;
				return -1;
			}
	}
	close(fd);
	if (n < 0 || k != f->len) {
		errno = EBADMSG;
		return -1;
	}
	return 0;
}

/* One random step on file i; -1 with errno on an unexpected result. */
static int s_step(char **a, long seed, struct sfile *f, int i, unsigned *tagc)
{
	char p[4096], q[4096];
	struct sfile *x = &f[i];
	size_t len;

	spath(p, sizeof(p), a, seed, i, x->shared, "");
	switch (rand() % 9) {
	case 0: /* create or overwrite */
		len = (size_t)(rand() % 3 ? rand() % 3000 : rand() % 300000);
		x->tag = ++*tagc;
		if (s_write(p, x->tag, 0, len, O_CREAT | O_TRUNC) < 0)
			return -1;
		x->exists = true;
		x->len = len;
		return 0;
	case 1: /* read back */
		return x->exists ? s_verify(p, x) : 0;
	case 2: /* move to the other directory */
		if (!x->exists)
			return 0;
		spath(q, sizeof(q), a, seed, i, !x->shared, "");
		if (rename(p, q) < 0)
			return -1;
		x->shared = !x->shared;
		return 0;
	case 3: /* delete */
		if (!x->exists)
			return unlink(p) == 0 || errno != ENOENT ? -1 : 0;
		x->exists = false;
		return unlink(p);
	case 4: /* append */
		if (!x->exists)
			return 0;
		len = (size_t)(rand() % 20000);
		if (s_write(p, x->tag, x->len, x->len + len, O_APPEND) < 0)
			return -1;
		x->len += len;
		return 0;
	case 5: /* shrink */
		if (!x->exists || !x->len)
			return 0;
		x->len = (size_t)rand() % x->len;
		return truncate(p, (off_t)x->len);
	case 6: /* a directory comes and goes */
		spath(q, sizeof(q), a, seed, i, false, ".d");
		if (mkdir(q, 0755) < 0 && errno != EEXIST)
			return -1;
		return rand() % 2 ? rmdir(q) : 0;
	case 7: /* a second link in the other directory, then gone again */
		if (!x->exists)
			return 0;
		spath(q, sizeof(q), a, seed, i, !x->shared, ".l");
		struct stat st;

		if (link(p, q) < 0 || lstat(p, &st) < 0)
			return -1;
		if (st.st_nlink != 2) {
			errno = EMLINK;
			return -1;
		}
		return unlink(q);
	default: /* rename over another file of ours */
		if (!x->exists)
			return 0;
		int j = rand() % SNF;

		if (j == i)
			return 0;
		spath(q, sizeof(q), a, seed, j, x->shared, "");
		if (rename(p, q) < 0)
			return -1;
		f[j] = *x;
		x->exists = false;
		return 0;
	}
}

/* A file that must survive a crash: written, fsync'ed, its directory
 * fsync'ed, and only then listed in the manifest. */
static int s_durable(const char *dir, long seed, long n, unsigned tag, int man)
{
	char p[4096], line[4200];
	size_t len = (size_t)(rand() % 3 ? rand() % 5000 : rand() % 200000);
	int fd, dfd, ret;

	snprintf(p, sizeof(p), "%s/d%ld_%ld", dir, seed, n);
	if (s_write(p, tag, 0, len, O_CREAT | O_EXCL) < 0)
		return -1;
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return -1;
	ret = fsync(fd);
	close(fd);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (ret < 0 || dfd < 0 || fsync(dfd) < 0) {
		if (dfd >= 0)
			close(dfd);
		return -1;
	}
	close(dfd);
	ret = snprintf(line, sizeof(line), "%s %u %zu\n", p, tag, len);
	return write(man, line, (size_t)ret) == ret ? 0 : -1;
}

static void op_durable_check(char **a)
{
	FILE *f = fopen(a[1], "r");
	char p[4096];
	struct sfile x = { .exists = true };

	if (!f) {
		set_out("ERR %s opening %s", errname(errno), a[1]);
		return;
	}
	while (fscanf(f, "%4095s %u %zu", p, &x.tag, &x.len) == 3) {
		if (s_verify(p, &x) < 0) {
			set_out("ERR %s verifying %s (%zu bytes)", errname(errno), p, x.len);
			fclose(f);
			return;
		}
	}
	fclose(f);
	set_out("OK");
}

static void op_stress(char **a, int n)
{
	long seed = (long)num(a[4]), steps = 0, durable = 0;
	int man = n > 5 ? open(a[5], O_WRONLY | O_APPEND | O_CREAT, 0644) : -1;
	time_t end = time(NULL) + (time_t)num(a[3]);
	static struct sfile f[SNF];
	unsigned tagc = (unsigned)seed << 16;
	char p[4096];

	memset(f, 0, sizeof(f));
	srand((unsigned)seed);
	set_out("OK");
	if (n > 5 && man < 0) {
		set_out("ERR %s opening %s", errname(errno), a[5]);
		return;
	}
	while (time(NULL) < end) {
		int i = rand() % SNF;

		if (man >= 0 && steps % 64 == 63 &&
		    s_durable(a[1], seed, durable++, ++tagc, man) < 0) {
			set_out("ERR %s writing durable file %ld", errname(errno), durable - 1);
			close(man);
			return;
		}
		if (s_step(a, seed, f, i, &tagc) < 0) {
			spath(p, sizeof(p), a, seed, i, f[i].shared, "");
			set_out("ERR %s at step %ld on %s", errname(errno), steps, p);
			if (man >= 0)
				close(man);
			return;
		}
		steps++;
	}
	if (man >= 0)
		close(man);
	for (int i = 0; i < SNF; i++) {
		spath(p, sizeof(p), a, seed, i, f[i].shared, "");
		if (f[i].exists && s_verify(p, &f[i]) < 0) {
			set_out("ERR %s verifying %s", errname(errno), p);
			return;
		}
	}
	fprintf(stderr, "stress %ld: %ld steps\n", seed, steps);
}

static void op_access(char **a)
{
	static const struct flag_name t[] = { { "r", R_OK }, { "w", W_OK }, { "x", X_OK } };
	int m = FLAGS_IN(a[2], t);

	res(access(a[1], m ? m : F_OK));
}

static void op_renameat2(char **a)
{
	static const struct flag_name t[] = {
		{ "NOREPLACE", RENAME_NOREPLACE }, { "EXCHANGE", RENAME_EXCHANGE },
		{ "WHITEOUT", RENAME_WHITEOUT },
	};

	res(renameat2(AT_FDCWD, a[1], AT_FDCWD, a[2], (unsigned)FLAGS_IN(a[3], t)));
}

static void op_open(char **a, int n)
{
	int flags = parse_flags(a[3]), fd, *slot;

	if (flags < 0) {
		set_out("BAD FLAGS");
		return;
	}
	fd = open(a[2], flags, n > 4 ? mode_arg(a[4]) : 0644);
	if (fd < 0) {
		res(-1);
		return;
	}
	slot = hfd(a[1], true);
	if (*slot > 0)
		close(*slot);
	*slot = fd;
	set_out("OK");
}

static void op_stat(char **a, int how)
{
	struct stat st;
	int r = how == 0 ? stat(a[1], &st) : how == 1 ? lstat(a[1], &st) :
		fstat(fd_of(a[1]), &st);

	if (r < 0)
		res(-1);
	else
		stat_fields(&st, a[2]);
}

static void op_readlink(const char *path)
{
	char buf[4096];
	ssize_t r = readlink(path, buf, sizeof(buf));

	if (r < 0)
		res(-1);
	else
		escape(buf, (size_t)r);
}

static void op_close(const char *name)
{
	int *p = hfd(name, false);

	if (!p) {
		set_out("BAD HANDLE");
		return;
	}
	res(close(*p));
	*p = -1;
}

/* Run one op; false if it is unknown or has too few arguments. */
static bool run(char **a, int n)
{
	static const struct { const char *op; int args; } need[] = {
		{ "open", 4 }, { "close", 2 }, { "fsync", 2 }, { "fdatasync", 2 },
		{ "write", 3 }, { "pwrite", 4 }, { "read", 3 }, { "pread", 4 },
		{ "lseek", 4 }, { "ftruncate", 3 }, { "truncate", 3 }, { "fallocate", 5 },
		{ "stat", 3 }, { "lstat", 3 }, { "fstat", 3 }, { "mkdir", 3 },
		{ "rmdir", 2 }, { "unlink", 2 }, { "mknod", 4 }, { "rename", 3 },
		{ "renameat2", 4 }, { "link", 3 }, { "symlink", 3 }, { "readlink", 2 },
		{ "chmod", 3 }, { "chown", 4 }, { "lchown", 4 }, { "utimens", 4 },
		{ "setxattr", 5 }, { "lsetxattr", 5 }, { "getxattr", 3 },
		{ "lgetxattr", 3 }, { "listxattr", 2 }, { "removexattr", 3 },
		{ "statfs", 3 }, { "ls", 2 }, { "count", 2 }, { "umask", 2 },
		{ "sleep", 2 }, { "chdir", 2 }, { "access", 3 }, { "savetime", 3 },
		{ "cmptime", 3 }, { "mkfiles", 3 }, { "sameino", 3 },
		{ "readdir_check", 4 }, { "churn", 4 }, { "stress", 5 },
		{ "durable_check", 2 }, { "relink", 4 }, { "listloop", 3 },
	};
	const char *op = a[0];
	size_t i;

	for (i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!strcmp(op, need[i].op))
			break;
	if (i == sizeof(need) / sizeof(need[0]) || n < need[i].args)
		return false;
	errno = 0;
	if (!strcmp(op, "open")) op_open(a, n);
	else if (!strcmp(op, "close")) op_close(a[1]);
	else if (!strcmp(op, "fsync")) res(fsync(fd_of(a[1])));
	else if (!strcmp(op, "fdatasync")) res(fdatasync(fd_of(a[1])));
	else if (!strcmp(op, "write")) op_rw(a, n, true, false);
	else if (!strcmp(op, "pwrite")) op_rw(a, n, true, true);
	else if (!strcmp(op, "read")) op_rw(a, n, false, false);
	else if (!strcmp(op, "pread")) op_rw(a, n, false, true);
	else if (!strcmp(op, "lseek"))
		res_val(lseek(fd_of(a[1]), (off_t)num(a[2]), whence_of(a[3])));
	else if (!strcmp(op, "ftruncate")) res(ftruncate(fd_of(a[1]), (off_t)num(a[2])));
	else if (!strcmp(op, "truncate")) res(truncate(a[1], (off_t)num(a[2])));
	else if (!strcmp(op, "fallocate")) op_fallocate(a);
	else if (!strcmp(op, "stat")) op_stat(a, 0);
	else if (!strcmp(op, "lstat")) op_stat(a, 1);
	else if (!strcmp(op, "fstat")) op_stat(a, 2);
	else if (!strcmp(op, "mkdir")) res(mkdir(a[1], mode_arg(a[2])));
	else if (!strcmp(op, "rmdir")) res(rmdir(a[1]));
	else if (!strcmp(op, "unlink")) res(unlink(a[1]));
	else if (!strcmp(op, "mknod")) op_mknod(a, n);
	else if (!strcmp(op, "rename")) res(rename(a[1], a[2]));
	else if (!strcmp(op, "renameat2")) op_renameat2(a);
	else if (!strcmp(op, "link")) res(link(a[1], a[2]));
	else if (!strcmp(op, "symlink")) res(symlink(a[1], a[2]));
	else if (!strcmp(op, "readlink")) op_readlink(a[1]);
	else if (!strcmp(op, "chmod")) res(chmod(a[1], mode_arg(a[2])));
	else if (!strcmp(op, "chown"))
		res(chown(a[1], (uid_t)num(a[2]), (gid_t)num(a[3])));
	else if (!strcmp(op, "lchown"))
		res(lchown(a[1], (uid_t)num(a[2]), (gid_t)num(a[3])));
	else if (!strcmp(op, "utimens")) op_utimens(a);
	else if (!strcmp(op, "setxattr") || !strcmp(op, "lsetxattr")) {
		static char v[DATAMAX];
		size_t len = expand(a[3], v, sizeof(v));

		res(op[0] == 'l' ? lsetxattr(a[1], a[2], v, len, xflags(a[4])) :
		    setxattr(a[1], a[2], v, len, xflags(a[4])));
	} else if (!strcmp(op, "getxattr")) op_xattr_get(a, n, false);
	else if (!strcmp(op, "lgetxattr")) op_xattr_get(a, n, true);
	else if (!strcmp(op, "listxattr")) op_listxattr(a[1]);
	else if (!strcmp(op, "removexattr")) res(lremovexattr(a[1], a[2]));
	else if (!strcmp(op, "statfs")) op_statfs(a);
	else if (!strcmp(op, "ls")) op_dir(a[1], true);
	else if (!strcmp(op, "count")) op_dir(a[1], false);
	else if (!strcmp(op, "umask")) { umask(mode_arg(a[1])); set_out("OK"); }
	else if (!strcmp(op, "sleep")) { usleep((useconds_t)num(a[1]) * 1000); set_out("OK"); }
	else if (!strcmp(op, "chdir")) res(chdir(a[1]));
	else if (!strcmp(op, "access")) op_access(a);
	else if (!strcmp(op, "savetime")) op_times(a, true);
	else if (!strcmp(op, "cmptime")) op_times(a, false);
	else if (!strcmp(op, "mkfiles")) op_mkfiles(a);
	else if (!strcmp(op, "sameino")) op_sameino(a);
	else if (!strcmp(op, "readdir_check")) op_readdir_check(a);
	else if (!strcmp(op, "churn")) op_churn(a);
	else if (!strcmp(op, "relink")) op_relink(a);
	else if (!strcmp(op, "listloop")) op_listloop(a);
	else if (!strcmp(op, "stress")) op_stress(a, n);
	else if (!strcmp(op, "durable_check")) op_durable_check(a);
	return true;
}

struct test {
	char name[128];
	bool active, failed;
	char why[OUTMAX + 512];
};

static void test_end(struct test *t)
{
	if (!t->active)
		return;
	if (t->failed)
		printf("FAIL %s: %s\n", t->name, t->why);
	else
		printf("PASS %s\n", t->name);
	fflush(stdout);
	t->active = false;
}

/* Split "op args => want" into expanded args and the wanted result. */
static int split(char *line, char **a, char *storage, size_t cap, char **want)
{
	char *arrow = strstr(line, " => "), *tok, *save;
	int n = 0;
	size_t used = 0;

	*want = NULL;
	if (arrow) {
		*arrow = 0;
		*want = arrow + 4;
	}
	for (tok = strtok_r(line, " \t", &save); tok && n < MAXARGS;
	     tok = strtok_r(NULL, " \t", &save)) {
		/* data arguments keep their escapes; op_rw/setxattr expand them */
		bool raw = (n == 2 && (!strcmp(a[0], "write"))) ||
			   (n == 3 && (!strcmp(a[0], "pwrite") || !strcmp(a[0], "setxattr") ||
				       !strcmp(a[0], "lsetxattr")));
		size_t len;

		a[n] = storage + used;
		if (raw) {
			len = strlen(tok);
			memcpy(a[n], tok, len + 1);
		} else {
			len = expand(tok, a[n], cap - used);
		}
		used += len + 1;
		n++;
	}
	return n;
}

int main(int argc, char **argv)
{
	static char storage[4 * DATAMAX];
	char line[8192], *a[MAXARGS], *want;
	struct test t = { .active = false };
	int lineno = 0, bad = 0;

	for (int i = 0; i < MAXH; i++)
		handles[i].fd = -1;
	if (argc == 3 && !strcmp(argv[1], "-C") && chdir(argv[2]) < 0) {
		perror(argv[2]);
		return 2;
	}
	while (fgets(line, sizeof(line), stdin)) {
		size_t len = strlen(line);
		int n;

		lineno++;
		while (len && (line[len - 1] == '\n' || line[len - 1] == ' '))
			line[--len] = 0;
		if (!len || line[0] == '#')
			continue;
		if (!strncmp(line, "== ", 3)) {
			test_end(&t);
			snprintf(t.name, sizeof(t.name), "%.120s", line + 3);
			t.active = true;
			t.failed = false;
			continue;
		}
		char copy[8192];

		snprintf(copy, sizeof(copy), "%s", line);
		n = split(line, a, storage, sizeof(storage), &want);
		if (n == 0 || !run(a, n)) {
			fprintf(stderr, "fsop: line %d: cannot parse '%s'\n", lineno, copy);
			bad = 1;
			continue;
		}
		if (!want || !strcmp(want, "*") || !strcmp(want, out))
			continue;
		if (!t.failed) {
			char *arrow = strstr(copy, " => ");

			if (arrow)
				*arrow = 0;
			snprintf(t.why, sizeof(t.why), "line %d: %.300s gave '%.3000s', want '%.3000s'",
				 lineno, copy, out, want);
		}
		t.failed = true;
		if (!t.active) {
			snprintf(t.name, sizeof(t.name), "line%d", lineno);
			t.active = true;
		}
	}
	test_end(&t);
	return bad ? 2 : 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Mount options: which are chunkfs's, which only mean something to
 * mount(8) and fstab, which go on to libfuse, and what values each takes.
 *
 * Everything libfuse would refuse, and everything it would take only for
 * the kernel's first request to fail (a max_write the request buffer
 * cannot hold ends the daemon at once and leaves a dead mount), is
 * refused here, with the range allowed and why: one voice and one exit
 * status for every bad option, and chunkfs tune -o can check a default
 * before storing it.
 */
#include <errno.h>
#include <fuse_opt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mount_opts.h"
#include "tool.h"

/* -o errors=: the names, in enum errors_mode's order */
static const char *const errors_names[] = { "continue", "remount-ro", "repair" };

int errors_mode_parse(const char *s, enum errors_mode *out)
{
	for (int i = 0; i < 3; i++)
		if (strcmp(s, errors_names[i]) == 0) {
			*out = (enum errors_mode)i;
			return 0;
		}
	return -EINVAL;
}

#define DEFAULT_CLEAN           5.0
/* cache_size=: below 64 KiB the library would cache 64 blocks anyway,
 * and a cache beyond 1 TiB is no limit at all */
#define MIN_CACHE               (64ull << 10)
#define MAX_CACHE               (1ull << 40)
#define MAX_DEFAULT_THREADS     16
/* libfuse reads a request into a buffer of 256 pages plus a header
 * (FUSE_MAX_MAX_PAGES), and the kernel refuses to fill a buffer smaller
 * than 8 KiB or than a request of max_write bytes with its headers: so
 * max_write is at least 8 KiB less libfuse's 4 KiB header, at most the
 * 256 pages. */
#define FUSE_MAX_PAGES          256
#define MIN_MAX_WRITE           4096

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

void mopts_init(struct mopts *o)
{
	*o = (struct mopts){ .clean_after = DEFAULT_CLEAN, .atime = ATIME_REL,
			     .diratime = true, .max_threads = default_threads() };
}

void mopts_free(struct mopts *o)
{
	free(o->fuse);
	o->fuse = NULL;
}

int mopts_add_fuse(struct mopts *o, const char *opt)
{
	return fuse_opt_add_opt(&o->fuse, opt) == 0 ? 0 : -ENOMEM;
}

/* What each step of parsing one option made of it. */
enum {
	IGNORED = -1,   /* refused, but stored in the superblock: left out */
	NOT_MINE = 0,   /* for the next step */
	DONE = 1,       /* applied, nothing for libfuse */
	/* EX_USAGE (2): refused, said so */
	PASS = 3,       /* applied, and libfuse gets it too */
	NOMEM = 4,
};

/* A bad option: refused (EX_USAGE, after one line naming the command),
 * or, stored in the superblock, IGNORED after a warning that says where
 * it comes from and what changes it. */
static int refuse(const struct mopts *o, enum mopts_from from, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int refuse(const struct mopts *o, enum mopts_from from, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (from == MOPTS_STORED) {
		warn_msg("%s: default mount options in the superblock: %s: ignored "
			 "(chunkfs tune -o changes them)", o->image, why);
		return IGNORED;
	}
	if (strcmp(tool_prog, "chunkfs") == 0)
		err_msg("%s: %s", from == MOPTS_TUNE ? "tune" : "mount", why);
	else
		err_msg("%s", why);
	return EX_USAGE;
}

/* o is one of names, or starts with one of prefixes (either may be NULL). */
static bool listed(const char *o, const char *const *names, const char *const *prefixes)
{
	for (int i = 0; names && names[i]; i++)
		if (strcmp(o, names[i]) == 0)
			return true;
	for (int i = 0; prefixes && prefixes[i]; i++)
		if (strncmp(o, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

/* ext4 options seen in fstab files that change nothing a user relies on
 * here: accepted, and named as ignored. */
static bool ext4_harmless(const char *o)
{
	static const char *const names[] = {
		"user_xattr", "lazytime", "nolazytime",
		"barrier", "barrier=1", "nobarrier", "barrier=0",
		"errors=panic", "data=ordered",
		"auto_da_alloc", "noauto_da_alloc", "delalloc", "i_version",
		"noquota", "journal_checksum", "block_validity", NULL
	};
	static const char *const prefixes[] = { "commit=", "stripe=", NULL };

	return listed(o, names, prefixes);
}

/* Options that promise what chunkfs does not do: ext4's (quotas,
 * journalling modes) and libfuse's for block-device mounts (fuseblk). */
static bool unsupported(const char *o)
{
	static const char *const names[] = {
		"nouser_xattr", "data=journal", "data=writeback", "quota",
		"usrquota", "grpquota", "prjquota", "dax", "nodelalloc",
		"journal_async_commit", "blkdev", NULL
	};
	static const char *const prefixes[] = {
		"usrjquota=", "grpjquota=", "jqfmt=", "resuid=", "resgid=", "sb=",
		"journal_dev=", "blksize=", NULL
	};

	return listed(o, names, prefixes);
}

/* Options that only mean something to mount(8) and fstab. */
static bool fstab_only(const char *o)
{
	static const char *const names[] = {
		"", "defaults", "auto", "noauto", "user", "nouser", "users", "owner",
		"group", "nofail", "_netdev", "loop", NULL
	};
	static const char *const prefixes[] = { "x-", "comment=", NULL };

	return listed(o, names, prefixes);
}

/* libfuse 3's own options that chunkfs passes on as they are: of the
 * kernel mount, the session and the connection (those with a number
 * are in sized[] below). */
static bool fuse_passed(const char *o)
{
	static const char *const names[] = {
		"allow_other", "allow_root", "auto_unmount", "exec", "noexec",
		"async", "sync", "dirsync", "sync_read", "async_read",
		"atomic_o_trunc", "no_remote_lock", "no_remote_flock",
		"no_remote_posix_lock", "splice_write", "no_splice_write",
		"splice_move", "no_splice_move", "splice_read", "no_splice_read",
		"auto_inval_data", "no_auto_inval_data", "readdirplus=yes",
		"readdirplus=no", "readdirplus=auto", "async_dio", "no_async_dio",
		"writeback_cache", "no_writeback_cache", NULL
	};
	/* any value: names, and SELinux contexts the kernel checks */
	static const char *const prefixes[] = {
		"fsname=", "subtype=", "user=", "context=", "fscontext=",
		"defcontext=", "rootcontext=", NULL
	};

	return listed(o, names, prefixes);
}

/* Options with a whole number, the range the kernel and libfuse can
 * serve, and why; max 0 is FUSE_MAX_PAGES pages.  The range is checked
 * before libfuse sees the number: outside it the kernel truncates it
 * (16 bits), raises it, or refuses every request after the mount. */
static const struct sized {
	const char *name;               /* with its '=' */
	uint64_t min, max;
	const char *unit, *why;
} sized[] = {
	{ "max_write=", MIN_MAX_WRITE, 0, "bytes", "a FUSE request buffer holds at "
	  "least 4 KiB of data, and libfuse's at most 256 pages" },
	{ "max_read=", 4096, UINT32_MAX, "bytes", "the kernel reads whole 4 KiB pages" },
	{ "max_readahead=", 0, UINT32_MAX, "bytes", NULL },
	{ "max_background=", 1, 65535, "requests", "the kernel keeps it in 16 bits" },
	{ "congestion_threshold=", 1, 65535, "requests",
	  "the kernel keeps it in 16 bits" },
	{ "time_gran=", 1, 1000000000, "nanoseconds", "the kernel ignores any other" },
	{ "max_threads=", 1, 1024, "worker threads", NULL },
};

/* One of sized[] with a good number: max_threads= is the daemon's,
 * max_read= it must also know (daemon/mount.c, mount_init). */
static int sized_opt(struct mopts *o, enum mopts_from from, const char *opt)
{
	for (size_t i = 0; i < sizeof(sized) / sizeof(sized[0]); i++) {
		const struct sized *s = &sized[i];
		size_t len = strlen(s->name);
		uint64_t n, max = s->max ? s->max :
			FUSE_MAX_PAGES * (uint64_t)sysconf(_SC_PAGESIZE);

		if (strncmp(opt, s->name, len) != 0)
			continue;
		if (parse_u64(opt + len, &n) < 0 || n < s->min || n > max)
			return refuse(o, from, "bad %.*s '%s': %llu to %llu %s%s%s%s",
				      (int)len - 1, opt, opt + len,
				      (unsigned long long)s->min, (unsigned long long)max,
				      s->unit, s->why ? " (" : "", s->why ? s->why : "",
				      s->why ? ")" : "");
		if (strcmp(s->name, "max_threads=") == 0) {
			o->max_threads = (unsigned)n;
			return DONE;
		}
		if (strcmp(s->name, "max_read=") == 0)
			o->max_read = (unsigned)n;
		return PASS;
	}
	return NOT_MINE;
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

/* chunkfs's options with a value. */
static int value_opt(struct mopts *o, enum mopts_from from, const char *opt)
{
	if (strncmp(opt, "clean_after=", 12) == 0) {
		if (parse_seconds(opt + 12, &o->clean_after) < 0)
			return refuse(o, from, "bad clean_after '%s': seconds, 0 to 1000000",
				      opt + 12);
		return DONE;
	}
	if (strncmp(opt, "cache_size=", 11) == 0) {
		uint64_t n;

		if (parse_size(opt + 11, &n) < 0 || n < MIN_CACHE || n > MAX_CACHE)
			return refuse(o, from, "bad cache_size '%s': 64K to 1T (K, M, G, T: "
				      "powers of 1024)", opt + 11);
		o->cache_bytes = n;
		return DONE;
	}
	if (strncmp(opt, "errors=", 7) == 0 && strcmp(opt, "errors=panic") != 0) {
		if (errors_mode_parse(opt + 7, &o->errors) < 0)
			return refuse(o, from, "bad errors '%s': continue, remount-ro or "
				      "repair", opt + 7);
		return DONE;
	}
	if (strncmp(opt, "scrub_interval=", 15) == 0) {
		if (parse_interval(opt + 15, &o->scrub_interval) < 0)
			return refuse(o, from, "bad scrub_interval '%s': seconds, or Nd, Nh, "
				      "Nm, Ns, at most 366 days; 0 for none", opt + 15);
		return DONE;
	}
	if (strncmp(opt, "readdirplus=", 12) == 0 && !fuse_passed(opt))
		return refuse(o, from, "bad readdirplus '%s': yes, no or auto", opt + 12);
	return NOT_MINE;
}

/* chunkfs's flags that libfuse does not know. */
static bool flag_opt(struct mopts *o, const char *opt)
{
	if (strcmp(opt, "nocheck") == 0 || strcmp(opt, "check") == 0)
		o->nocheck = opt[0] == 'n';
	else if (strcmp(opt, "io_uring") == 0 || strcmp(opt, "no_io_uring") == 0)
		o->transport = opt[0] == 'i' ? TRANSPORT_URING : TRANSPORT_DEV;
	else if (strcmp(opt, "discard") == 0 || strcmp(opt, "nodiscard") == 0)
		o->discard = opt[0] == 'd';
	else if (strcmp(opt, "acl") == 0 || strcmp(opt, "noacl") == 0)
		o->noacl = opt[0] == 'n';
	else if (strcmp(opt, "nodiratime") == 0 || strcmp(opt, "diratime") == 0)
		o->diratime = opt[0] == 'd';
	else if (strcmp(opt, "remount") == 0)
		o->remount = true;
	else if (strcmp(opt, "default_permissions") == 0)
		;                       /* always on */
	else
		return false;
	return true;
}

/* Flags chunkfs notes and libfuse also gets. */
static bool noted_fuse_opt(struct mopts *o, const char *opt)
{
	if (strcmp(opt, "ro") == 0 || strcmp(opt, "rw") == 0)
		o->rdonly = opt[1] == 'o';
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
	else
		return false;
	return true;
}

/* What a mount would only ignore, or what is no default: not stored by
 * tune, and ignored with a warning when an older tune stored it. */
static int no_default(const struct mopts *o, enum mopts_from from, const char *opt)
{
	if (from == MOPTS_CMDLINE)
		return NOT_MINE;
	if (ext4_harmless(opt))
		return refuse(o, from, "option '%s' means nothing to chunkfs", opt);
	if (fstab_only(opt))
		return refuse(o, from, "option '%s' is for fstab only", opt);
	if (strcmp(opt, "remount") == 0 || strcmp(opt, "debug") == 0)
		return refuse(o, from, "option '%s' cannot be a default (give it to the "
			      "mount)", opt);
	return NOT_MINE;
}

static int other_opt(struct mopts *o, enum mopts_from from, const char *opt)
{
	if (flag_opt(o, opt))
		return DONE;
	/* The last of these wins; the kernel is given noatime only when that
	 * one is (final_fuse_opts in daemon/mount.c), as libfuse 3.18 knows no "atime" to take
	 * back a noatime given before (the defaults', perhaps). */
	if (strcmp(opt, "relatime") == 0 || strcmp(opt, "strictatime") == 0 ||
	    strcmp(opt, "atime") == 0 || strcmp(opt, "noatime") == 0) {
		o->atime = opt[0] == 'n' ? ATIME_OFF : opt[0] == 's' ? ATIME_STRICT :
			   ATIME_REL;
		return DONE;
	}
	if (ext4_harmless(opt)) {
		warn_msg("mount: option '%s' means nothing to chunkfs: ignored", opt);
		return DONE;
	}
	if (unsupported(opt))
		return refuse(o, from, "option '%s' is not supported by chunkfs", opt);
	if (fstab_only(opt))
		return DONE;
	if (noted_fuse_opt(o, opt) || fuse_passed(opt))
		return PASS;
	return refuse(o, from, "unknown mount option '%s' (see mount.chunkfs(8))", opt);
}

/* One option: chunkfs's, one for mount(8) only, or one for libfuse. */
static int mount_opt(struct mopts *o, enum mopts_from from, const char *opt)
{
	int ret = no_default(o, from, opt);

	if (ret == NOT_MINE)
		ret = value_opt(o, from, opt);
	if (ret == NOT_MINE)
		ret = sized_opt(o, from, opt);
	if (ret == NOT_MINE)
		ret = other_opt(o, from, opt);
	if (ret == PASS)
		ret = mopts_add_fuse(o, opt) < 0 ? NOMEM : DONE;
	if (ret == NOMEM)
		err_msg("mount: %s", errstr(-ENOMEM));
	return ret == EX_USAGE ? EX_USAGE : ret == NOMEM ? EX_FAIL : 0;
}

/* Split at commas not escaped by a backslash (libfuse's rule). */
int mopts_parse(struct mopts *o, const char *list, enum mopts_from from)
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
		ret = mount_opt(o, from, start);
		if (last)
			break;
		start = p + 1;
	}
	free(s);
	return ret;
}

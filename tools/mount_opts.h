/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Mount options (-o): one parser for what chunkfs mount is given on its
 * command line, for the defaults chunkfs tune -o stores in the superblock,
 * and for tune's check of them before they are stored
 * (tools/mount_opts.c).  No libfuse header is needed to use it.
 */
#ifndef CHUNKFS_MOUNT_OPTS_H
#define CHUNKFS_MOUNT_OPTS_H

#include <stdbool.h>
#include <stdint.h>

enum atime_mode { ATIME_OFF, ATIME_REL, ATIME_STRICT };
/* -o io_uring, -o no_io_uring, or neither: io_uring where offered */
enum transport { TRANSPORT_AUTO, TRANSPORT_URING, TRANSPORT_DEV };
/* -o errors= (daemon/errors.c) */
enum errors_mode { ERRORS_CONTINUE, ERRORS_RO, ERRORS_REPAIR };
int errors_mode_parse(const char *s, enum errors_mode *out);

struct mopts {
	const char *image, *dir;
	bool helper;                    /* mount(8) helper conventions */
	bool foreground, debug, fake;
	bool rdonly, nocheck, remount;
	bool user_dev, user_suid, user_fsname, user_subtype;
	double clean_after;
	uint64_t cache_bytes;           /* cache_size= (0: the library's default) */
	enum errors_mode errors;
	double scrub_interval;
	enum atime_mode atime;
	bool diratime;
	bool discard;
	bool noacl;
	unsigned max_threads;
	unsigned max_read;              /* 0: not given */
	enum transport transport;       /* io_uring (default where offered) or not */
	char *fuse;                     /* options passed on to libfuse */
};

/* Where a -o list comes from, which decides what a bad option does. */
enum mopts_from {
	MOPTS_CMDLINE,  /* given to the mount: refused, one line, EX_USAGE */
	MOPTS_STORED,   /* the image's defaults: warned about (naming the
			 * superblock) and ignored, so that no stored option
			 * can make an image unmountable */
	MOPTS_TUNE,     /* about to be stored by chunkfs tune -o: refused, and
			 * so is what a mount would only ignore */
};

/* The defaults of a mount. */
void mopts_init(struct mopts *o);
/* Apply the comma-separated list (commas escaped by a backslash stay) to
 * o, in order, so that a later option wins.  Returns 0, EX_USAGE after
 * the message for a refused option, or EX_FAIL (out of memory). */
int mopts_parse(struct mopts *o, const char *list, enum mopts_from from);
/* Add one option for libfuse: 0 or -ENOMEM. */
int mopts_add_fuse(struct mopts *o, const char *opt);
void mopts_free(struct mopts *o);

#endif

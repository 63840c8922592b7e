/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* chunkfs tune: change the label, the UUID and the default mount options,
 * which live in the superblock only (primary and backup).
 *
 * Internal to the library and the chunkfs command (include/chunkfs.h does
 * not declare it yet).  All functions return 0 or a negative errno, and set
 * cfs_last_error() to the reason.
 */
#ifndef CHUNKFS_TUNE_H
#define CHUNKFS_TUNE_H

#include <stdint.h>

#include "chunkfs.h"

#define CFS_TUNE_TEXT_MAX 63     /* label and mount options, bytes */

struct cfs_tune {
	const char *label;           /* NULL: keep */
	const uint8_t *uuid;         /* NULL: keep */
	int uuid_random;             /* a new random (version 4) UUID */
	const char *mount_opts;      /* NULL: keep; "": none */
	int dyninodes;               /* 0: keep; 1: on; -1: off (no clusters) */
};

/* Apply t to fs (opened read-write): the primary superblock is written and
 * flushed, then the backup.  Metadata stays bound to the UUID the
 * filesystem was made with (feature META_UUID, docs/FORMAT.md section 19),
 * so nothing outside the superblock changes. */
int cfs_tune(struct cfs_fs *fs, const struct cfs_tune *t);

/* The default mount options stored by cfs_tune ("" if none). */
void cfs_tune_mount_opts(struct cfs_fs *fs, char out[CFS_TUNE_TEXT_MAX + 1]);

/* -EINVAL unless s is a comma-separated option list a superblock can hold:
 * at most 63 bytes of printable ASCII, no spaces, no empty option. */
int cfs_tune_mount_opts_valid(const char *s);

#endif

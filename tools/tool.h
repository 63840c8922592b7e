/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Shared declarations of the chunkfs multi-call command.
 *
 * Conventions: helpers return 0 or a negative errno; commands return a
 * process exit status (EX_OK, EX_FAIL, EX_USAGE) and print their own
 * errors, always prefixed "chunkfs: ".
 */
#ifndef CHUNKFS_TOOL_H
#define CHUNKFS_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "chunkfs.h"

#define EX_OK		0
#define EX_FAIL		1
#define EX_USAGE	2

/* Exit status of fsck.chunkfs for "operational error" (fsck(8)). */
#define EX_FSCK_ERROR	8

#define COPY_BUF_SIZE	(1u << 20)

/* ---- commands (argv[0] is the command name) ---- */
int cmd_mkfs(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_mkdir(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_ln(int argc, char **argv);
int cmd_mv(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_put(int argc, char **argv);
int cmd_fsck(int argc, char **argv);
int cmd_scrub(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_defrag(int argc, char **argv);
int cmd_evacuate(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_trim(int argc, char **argv);
int cmd_resize(int argc, char **argv);
/* daemon/mount.c: the mount, and the daemon's parts the dispatch needs */
int cmd_mount(int argc, char **argv);
/* argv is mount(8)'s call of a helper: "IMAGE DIR -o OPTIONS" */
bool mount_helper_call(int argc, char **argv);
/* For --version: the libfuse linked, and FUSE over io_uring */
void mount_version(FILE *f);

/* ---- chunk map (tools/chunkmap.c, for chunkfs info --map / --svg) ---- */
struct chunk_row {
	struct cfs_chunk_info ci;
	int err;                        /* cfs_get_chunk_info failure */
};
/* Grid of the chunks as text on out. */
int chunkmap_text(FILE *out, const char *img, const struct cfs_info *in,
		  const struct chunk_row *rows);
/* The same as an SVG file at path ("-": stdout); a negative errno. */
int chunkmap_svg(const char *path, const char *img, const struct cfs_info *in,
		 const struct chunk_row *rows);
/* A writer (a mount) holds img. */
bool chunkmap_image_in_use(const char *img);

/* ---- messages ---- */
void err_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warn_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "chunkfs: IMG:PATH: strerror(-err)" */
void err_img(const char *img, const char *path, int err);
/* "chunkfs: PATH: strerror(-err)" for host paths */
void err_host(const char *path, int err);
const char *errstr(int err);

/* Print usage of cmd (NULL = top level) to out. */
void usage(const char *cmd, FILE *out);
/* Usage error: message (may be NULL), usage to stderr; returns EX_USAGE. */
int usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Report what getopt_long rejected; returns EX_USAGE. */
int bad_option(const char *cmd, char **argv, int opt);

/* ---- devices (tools/device.c) ---- */
/* Refuse (reported, -1) a block device that is mounted or in use, or an
 * image file mounted through a loop device; else 0, with *fd an exclusive
 * descriptor of a block device (to keep until done) or -1. */
int dev_claim(const char *path, int *fd);
/* 1 and a description ("an ext4 file system labelled 'data'") when
 * libblkid finds a filesystem or partition table on path, 0 if none. */
int dev_signature(const char *path, char *out, size_t len);
/* 1 and the offset of the first byte that is not zero in the file at
 * path, 0 if it holds only zeros (or holes), or a negative errno. */
int file_data_at(const char *path, uint64_t *at);
/* Erase every signature libblkid finds on path (after mkfs, so that
 * blkid and mount no longer see the old filesystem). */
int dev_wipe(const char *path);

/* ---- who uses an image (tools/holder.c) ---- */
struct img_use {
	bool busy;              /* still held by a writer when we went on */
	pid_t pid;              /* that writer (0 if unknown) */
	char mnt[4096];         /* where the image is mounted, "" if not */
};
/* Wait for a chunkfs daemon that still writes IMAGE after its umount
 * (saying so after a second), so that what follows sees the image as
 * the daemon left it.  Fills *u with who holds it after that. */
int img_wait(const char *img, struct img_use *u);
/* a and b name the same image (a hard link, a bind mount, a symlink, or
 * another node of the same device). */
bool img_same(const char *a, const char *b);
/* After img_wait: warn that what is read may lag behind when a writer
 * holds the image and no mount point of it was found. */
void warn_mount_unknown(const char *img, const struct img_use *u);
/* Seconds on the monotonic clock (tools/holder.c). */
double mono_now(void);
/* img_open, telling who else uses the image (tools/chunkfs.c). */
int img_open_use(const char *img, bool rdonly, struct cfs_fs **fs, struct img_use *u);

/* ---- parsing ---- */
/* Size with optional K/M/G/T suffix (powers of 1024, either case). */
int parse_size(const char *s, uint64_t *out);
/* Plain unsigned decimal number. */
int parse_u64(const char *s, uint64_t *out);
/* Octal permission bits (at most 07777). */
int parse_mode(const char *s, uint32_t *out);
/* xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (either case), nothing else. */
int parse_uuid(const char *s, uint8_t out[16]);
/* A feature list as mke2fs -O takes it: comma-separated names, each
 * turned off by a leading '^'.  Known: dyninodes (*dyninodes 1 or -1). */
int parse_features(const char *cmd, const char *s, int *dyninodes);

/* ---- image access ---- */
/* Open img; prints the error and returns a negative errno on failure. */
int img_open(const char *img, bool rdonly, struct cfs_fs **fs);
/* Close (flush, mark clean); prints an error on failure.  Returns the exit
 * status to use given the status so far. */
int img_close(struct cfs_fs *fs, const char *img, int status);

/* Normalised absolute image path: "a//b/./c/" -> "/a/b/c".  malloc'd. */
char *img_path(const char *in);
/* Join dir and name with one '/'.  malloc'd; NULL on ENOMEM. */
char *path_join(const char *dir, const char *name);
/* Final component of an image path ("" for "/").  Points into path. */
const char *path_base(const char *path);
/* Last component of a host path ignoring trailing slashes; "" when there
 * is no usable name (".", "..", "/").  malloc'd. */
char *host_base(const char *path);

void fmt_mode(uint32_t mode, char out[11]);
void fmt_uuid(const uint8_t u[16], char out[37]);
const char *type_name(uint32_t mode);
/* "2024-01-31 12:34:56.123456789 +0000" in local time */
void fmt_time(const struct timespec *ts, char *buf, size_t len);

/* ---- directory iteration ---- */
struct dir_entry {
	char *name;
	cfs_ino_t ino;
	uint32_t dtype;
};
struct dir_list {
	struct dir_entry *ent;
	size_t n, cap;
};
/* Read all entries of dir (with "." and ".." unless skip_dots). */
int dir_read(struct cfs_fs *fs, cfs_ino_t dir, bool skip_dots, struct dir_list *dl);
/* The same of the host directory open at dfd (a mounted image read
 * through its mount point). */
int dir_read_host(int dfd, bool skip_dots, struct dir_list *dl);
void dir_list_free(struct dir_list *dl);
void dir_list_sort(struct dir_list *dl);
/* An entry name a hostile image could use to escape a target directory. */
bool name_is_unsafe(const char *name);

/* Ancestors of the directory being walked, for cycle detection on
 * corrupted images (directories cannot be hard linked legitimately). */
struct walk_stack {
	cfs_ino_t *ino;
	size_t n, cap;
};
int walk_push(struct walk_stack *ws, cfs_ino_t ino);
void walk_pop(struct walk_stack *ws);
void walk_free(struct walk_stack *ws);
#define WALK_MAX_DEPTH 4096

/* tools/cmd_move.c: the move engine's progress line on a terminal */
void move_progress_on(struct cfs_fs *fs, const char *what);

/* ---- progress of a tree copy (put -r, get -r) ---- */
/* fd of progress_init: the line on stderr when it is a terminal (the
 * default, and -C 0), nothing (--no-progress), or a line "FILES BYTES
 * SECONDS" on fd at each update and at the end (-C FD, for front-ends). */
#define PROGRESS_TTY	0
#define PROGRESS_OFF	(-1)
struct progress {
	bool on;                /* the line on stderr */
	bool shown;
	bool summary;           /* -v: the summary on stdout at the end */
	int fd;                 /* > 0: lines on fd */
	const char *what;       /* "put", "get" */
	long long interval_ns;
	uint64_t files, bytes;
	struct timespec start, last;
};
void progress_init(struct progress *p, const char *what, int fd, bool summary);
void progress_add(struct progress *p, uint64_t files, uint64_t bytes);
/* The end: the line on a terminal becomes the summary (files, bytes,
 * time, rate), which -v prints on stdout instead. */
void progress_done(struct progress *p);
/* Erase the progress line (before printing a message). */
void progress_clear(void);

/* Write all of buf to fd, at off, or at the file position when off < 0;
 * retries short writes and EINTR.  0 or -errno. */
int fd_write_all(int fd, const void *buf, size_t len, off_t off);

/* Errors after which a tree copy stops instead of going on. */
bool err_is_fatal(int err);

extern const char *tool_prog;

#endif

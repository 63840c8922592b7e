/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs: the multi-call command (mkfs, info and offline file access).
 *
 * Dispatch is on argv[1] ("chunkfs mkfs ...") or on the name it was
 * invoked by ("mkfs.chunkfs ...", so that `mkfs -t chunkfs` works).
 * This file also holds the helpers every command shares.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool.h"

const char *tool_prog = "chunkfs";

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *synopsis;
	const char *help;
};

static const struct command commands[] = {
	{ "mkfs", cmd_mkfs,
	  "[-b BLOCKSIZE] [-c CHUNKS] [-L LABEL] [-N INODES] [-I INODE_SIZE]\n"
	  "            [-O FEATURES] [-U UUID] [-F] [-q] IMAGE [SIZE]",
	  "Create a chunkfs filesystem on IMAGE (a file, created if missing, or a\n"
	  "block device).  SIZE and BLOCKSIZE take K, M, G, T suffixes (powers of\n"
	  "1024).  SIZE is required when IMAGE does not exist; on a block device\n"
	  "it may be smaller than the device, never larger.  A device that is\n"
	  "mounted or in use is refused.\n"
	  "  -b BLOCKSIZE   block size, a power of two from 1K to 64K (default 4K)\n"
	  "  -c CHUNKS      number of chunks, 1..256 (default: from the size)\n"
	  "  -L LABEL       volume label, at most 63 bytes\n"
	  "  -N INODES      total number of inodes wanted\n"
	  "  -I INODE_SIZE  inode size in bytes, a power of two >= 256\n"
	  "  -O FEATURES    comma-separated; ^ turns one off.  dyninodes (default\n"
	  "                 on): a chunk whose inode table is full makes inodes\n"
	  "                 from its free blocks; ^dyninodes: a fixed inode table\n"
	  "  -U UUID        filesystem UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx,\n"
	  "                 \"random\" or \"nil\")\n"
	  "  -F             overwrite an existing filesystem (chunkfs, or any that\n"
	  "                 libblkid finds: without -F mkfs names it and asks on a\n"
	  "                 terminal, else refuses)\n"
	  "  -q             quiet: print nothing on success\n" },
	{ "info", cmd_info, "[--json | --map | --svg FILE] IMAGE",
	  "Show geometry, features and the state of every chunk.\n"
	  "  --json         machine-readable output\n"
	  "  --map          a grid of the chunks: clean/dirty/error, how full in\n"
	  "                 blocks and inodes, continuations, cross-chunk refs\n"
	  "  --svg FILE     the same picture as an SVG file (\"-\": stdout)\n" },
	{ "ls", cmd_ls, "[-l] [-a] [-i] [-d] [-R] IMAGE [PATH...]",
	  "List directory contents inside the image.\n"
	  "  -l  long listing     -a  include dot files   -i  inode numbers\n"
	  "  -d  list directories themselves              -R  recurse\n" },
	{ "stat", cmd_stat, "[-L] IMAGE PATH...",
	  "Show the attributes of files inside the image, including the chunks\n"
	  "holding their data.\n"
	  "  -L  follow a final symbolic link\n" },
	{ "cat", cmd_cat, "IMAGE PATH...",
	  "Write the contents of files inside the image to standard output.\n" },
	{ "get", cmd_get, "[-r] [-v] [-C FD | --no-progress] IMAGE SRC DEST",
	  "Copy SRC out of the image to the host path DEST (into DEST if it is a\n"
	  "directory), keeping modes, times, symlinks, hard links and xattrs, and\n"
	  "owners when run as root.\n"
	  "  -r             copy a whole directory tree\n"
	  "  -v             say at the end how many files and bytes, in how long\n"
	  "  -C FD          progress: 0 = a line on the terminal (the default when\n"
	  "                 stderr is one), else \"FILES BYTES SECONDS\" lines on FD\n"
	  "  --no-progress  no progress line\n"
	  "On a terminal the progress line (files, bytes, rate, time; at most ten\n"
	  "updates a second) ends as that summary.\n" },
	{ "put", cmd_put, "[-r] [-v] [-C FD | --no-progress] IMAGE SRC DEST",
	  "Copy the host file SRC (\"-\" for standard input) into the image as\n"
	  "DEST (into DEST if it is a directory), keeping modes, owners, times,\n"
	  "symlinks, hard links, special files, xattrs and holes.  An existing\n"
	  "regular file is written into, as cp does (its other links see it).\n"
	  "  -r             copy a whole directory tree\n"
	  "  -v             say at the end how many files and bytes, in how long\n"
	  "  -C FD          progress: 0 = a line on the terminal (the default when\n"
	  "                 stderr is one), else \"FILES BYTES SECONDS\" lines on FD\n"
	  "  --no-progress  no progress line\n"
	  "On a terminal the progress line (files, bytes, rate, time; at most ten\n"
	  "updates a second) ends as that summary.\n" },
	{ "mkdir", cmd_mkdir, "[-p] [-m MODE] IMAGE PATH...",
	  "Create directories inside the image.\n"
	  "  -p       create missing parents; no error if it exists\n"
	  "  -m MODE  permission bits in octal (default 0777 minus umask)\n" },
	{ "rm", cmd_rm, "[-r] [-f] [-d] IMAGE PATH...",
	  "Remove files inside the image.\n"
	  "  -r  remove directories and their contents\n"
	  "  -d  remove empty directories\n"
	  "  -f  ignore missing files\n" },
	{ "ln", cmd_ln, "[-s] IMAGE TARGET LINKNAME",
	  "Make a hard link (or with -s a symbolic link) inside the image.\n"
	  "If LINKNAME is a directory the link is made inside it.\n" },
	{ "mv", cmd_mv, "IMAGE SRC DEST",
	  "Rename SRC to DEST inside the image (into DEST if it is a directory).\n" },
	{ "fsck", cmd_fsck, "[-n|-p|-a|-y] [-f] [-j N] [-C FD] [-v] [--json] IMAGE",
	  "Check the chunks that need it (dirty or in error; all with -f) on\n"
	  "several threads and repair them.  Only one of -n, -p/-a, -y.\n"
	  "  -n      open read-only, change nothing\n"
	  "  -p, -a  preen: fix what is safe, exit 4 if a person is needed\n"
	  "  -y      fix everything\n"
	  "  -f      check clean chunks too\n"
	  "  -j N    worker threads (default: number of CPUs)\n"
	  "  -C FD   progress: 0 = a bar on the terminal, else lines on FD\n"
	  "  -v      verbose summary\n"
	  "  --json  machine-readable summary on stdout\n"
	  "Exit status (fsck(8)): 0 clean, 1 errors corrected, 4 errors left,\n"
	  "8 operational error, 16 usage error.\n" },
	{ "mount", cmd_mount, "[-f] [-d] [-o OPTION[,OPTION...]] IMAGE DIR",
	  "Mount IMAGE at DIR through FUSE; runs in the background until unmounted\n"
	  "(umount DIR, fusermount3 -u DIR, SIGTERM or SIGINT), which marks every\n"
	  "chunk clean.  Chunks left dirty by a crash are checked first (as by\n"
	  "chunkfs fsck -p); the mount is refused when a person is needed.\n"
	  "  -f  stay in the foreground      -d  foreground with FUSE debug output\n"
	  "Options (-o, comma-separated):\n"
	  "  ro                read-only\n"
	  "  allow_other       let other users in (the kernel checks permissions)\n"
	  "  clean_after=SECS  write back and mark chunks clean SECS after a change (default 5)\n"
	  "  nocheck           skip that check (at your own risk)\n"
	  "  cache_size=SIZE   the daemon's block cache (K, M, G, T; default 64M)\n"
	  "  errors=continue (default), errors=remount-ro, errors=repair\n"
	  "                    on corruption in a chunk: go on; refuse changes; or\n"
	  "                    check and repair that chunk at once (preen's rules:\n"
	  "                    what needs a person keeps it out of service)\n"
	  "  scrub_interval=T  check every chunk in the background within T\n"
	  "                    (seconds, or Nd, Nh, Nm; default 0: never)\n"
	  "  discard           give freed blocks back to the storage (batched);\n"
	  "                    fstrim DIR does it on demand\n"
	  "  noacl             no POSIX ACLs: setfacl refused, none inherited\n"
	  "                    (as ext4's noacl; acl, the default, undoes it)\n"
	  "  noatime, relatime (default), strictatime, nodiratime\n"
	  "  max_threads=N     FUSE worker threads (default: number of CPUs, 2-16)\n"
	  "  io_uring, no_io_uring\n"
	  "                    FUSE over io_uring (where libfuse and the kernel have\n"
	  "                    it), or over /dev/fuse (the default)\n"
	  "  and the usual FUSE and mount options (see mount.chunkfs(8)).\n"
	  "remount,ro and remount,rw (root) change a live mount.  ext4 options\n"
	  "that mean nothing here (user_xattr, lazytime, barrier, ...) are ignored,\n"
	  "saying so; those it cannot honour (quotas, dax, ...) are refused.\n"
	  "As mount.chunkfs (mount(8)'s helper conventions, IMAGE DIR first):\n"
	  "  -f  fake: all but the mount     -r, -w  read-only, read-write\n"
	  "  -n, -s, -v, -t TYPE  ignored    -o OPTIONS  as above\n" },
	{ "scrub", cmd_scrub, "[-n|-p|-a|-y] [-c CHUNKS] [-C FD] [-v] [--json] MOUNTPOINT|-A",
	  "Check a mounted filesystem one chunk at a time, and repair it, with\n"
	  "the checker of chunkfs fsck, while it stays in use (as xfs_scrub).\n"
	  "What is on the disk is checked, not the daemon's cache.  A chunk\n"
	  "nobody writes meanwhile is checked holding nothing up; otherwise\n"
	  "changes wait for that chunk's check; reads never wait.  Only root or\n"
	  "the user who mounted may scrub.\n"
	  "  -n          report only, change nothing (the default)\n"
	  "  -p, -a      preen: fix what is safe, exit 4 if a person is needed\n"
	  "  -y          fix everything the checker can\n"
	  "  -c CHUNKS   only these chunks (e.g. 0,3,5-7; default: all)\n"
	  "  -A          every chunkfs mount (exit codes or-ed)\n"
	  "  -C FD       progress: 0 = a bar on the terminal, else lines on FD\n"
	  "  -v          verbose summary\n"
	  "  --json      machine-readable summary on stdout (as fsck --json)\n"
	  "Exit status (fsck(8)): 0 clean, 1 errors corrected, 4 errors left,\n"
	  "8 operational error, 16 usage error.\n" },
	/* admin commands */
	{ "tune", cmd_tune, "[-L LABEL] [-U UUID] [-o OPTIONS] [-O FEATURES] [-l] IMAGE",
	  "Change the label, the UUID or the default mount options of an\n"
	  "unmounted image (a mounted one is refused); without options, or with\n"
	  "-l, list them.\n"
	  "  -L LABEL    volume label, at most 63 bytes (\"\" for none)\n"
	  "  -U UUID     xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, \"random\" or \"nil\"\n"
	  "  -o OPTIONS  default mount options, comma-separated, applied before\n"
	  "              those given to the mount (\"\" for none)\n"
	  "  -O FEATURES dyninodes: let chunks make inodes from free blocks;\n"
	  "              ^dyninodes: back to fixed inode tables (refused while a\n"
	  "              chunk has inode clusters)\n"
	  "  -l          list them (after any change)\n" },
	{ "trim", cmd_trim, "[-m MINLEN] [-v] IMAGE",
	  "Give the free blocks of an unmounted image back to the storage, as\n"
	  "fstrim does: holes punched in an image file, discards on a device.\n"
	  "  -m MINLEN  only free runs of at least MINLEN bytes (K, M, G suffixes)\n"
	  "  -v         say how much was trimmed\n" },
	{ "resize", cmd_resize, "IMAGE|MOUNTPOINT [SIZE]",
	  "Grow a filesystem into the space its file or device gained, as\n"
	  "resize2fs does: an unmounted IMAGE, or a mounted one through its\n"
	  "MOUNTPOINT while in use (as xfs_growfs does).  Whole chunks are added\n"
	  "(at most 256), so up to a chunk's worth stays unused.  SIZE (K, M, G,\n"
	  "T suffixes; whole blocks of it count) defaults to the whole file or\n"
	  "device; an image file shorter than SIZE is extended.  A smaller SIZE\n"
	  "shrinks an unmounted IMAGE: the last chunks' continuations are moved\n"
	  "into the chunks kept, files whose own inode is there renumbered, then\n"
	  "the chunks dropped and an image file cut to SIZE; refused when\n"
	  "directories live in those chunks or the data does not fit.\n" },
	{ "defrag", cmd_defrag, "[-i] IMAGE",
	  "Bring each file's and directory's continuations back into its own\n"
	  "chunk where that chunk has room, on an unmounted image; says the\n"
	  "Bookkeeping figure of chunkfs info before and after.\n"
	  "  -i  first give each file whose names are all in directories of one\n"
	  "      other chunk a new inode number there (its data along), so its\n"
	  "      names need no cross-chunk reference; st_ino changes\n" },
	{ "evacuate", cmd_evacuate, "IMAGE CHUNK",
	  "Move every continuation out of one chunk of an unmounted image, and\n"
	  "give the files whose own inode is there a new number elsewhere, so\n"
	  "that the chunk can be dropped (resize) or examined alone; says what\n"
	  "stays (directories' own inodes, and their chunk's files; exit 1).\n" },
	{ "probe", cmd_probe, "[--export] DEVICE|IMAGE",
	  "Say whether DEVICE holds a chunkfs, and its label and UUID, as blkid\n"
	  "does for other filesystems (libblkid does not know chunkfs).  Reads\n"
	  "the primary superblock only, read-only, without a lock: a mounted\n"
	  "filesystem can be probed.  The udev rule 64-chunkfs.rules imports\n"
	  "--export's output, which makes the /dev/disk/by-uuid and by-label\n"
	  "links that UUID= and LABEL= in fstab use.\n"
	  "  --export  KEY=VALUE lines as blkid prints them for udev\n"
	  "            (ID_FS_UUID, ID_FS_LABEL, their _ENC forms, ID_FS_TYPE...)\n"
	  "Exit status (blkid's): 0 found, 2 not a chunkfs (nothing printed),\n"
	  "4 usage error, I/O error or a damaged superblock.\n" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* ---- messages ------------------------------------------------------- */

/* One message line on stderr, after stdout and the progress line are out
 * of the way: "prog: " then what (e.g. "warning: ") then the text. */
static void msg_v(const char *what, const char *fmt, va_list ap)
{
	fflush(stdout);
	progress_clear();
	fprintf(stderr, "%s: %s", tool_prog, what);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void err_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	msg_v("", fmt, ap);
	va_end(ap);
}

void warn_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	msg_v("warning: ", fmt, ap);
	va_end(ap);
}

const char *errstr(int err)
{
	if (err < 0)
		err = -err;
	if (err == EUCLEAN)
		return "Filesystem is corrupted (checksum or structure error)";
	return strerror(err);
}

void err_img(const char *img, const char *path, int err)
{
	err_msg("%s:%s: %s", img, path, errstr(err));
}

void err_host(const char *path, int err)
{
	err_msg("%s: %s", path, errstr(err));
}

/* ---- usage ---------------------------------------------------------- */

static void usage_top(FILE *out)
{
	fprintf(out, "usage: chunkfs COMMAND [OPTION...] IMAGE [ARG...]\n"
		     "       chunkfs COMMAND --help | --help | --version\n\n"
		     "chunkfs %s: a filesystem split into independently "
		     "checkable chunks.\n\nCommands:\n", CFS_VERSION_STRING);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-6s %s\n", commands[i].name, commands[i].synopsis);
	fprintf(out, "\nAlso invoked as mkfs.chunkfs (= chunkfs mkfs), fsck.chunkfs (= chunkfs\n"
		     "fsck) and mount.chunkfs (= chunkfs mount).\n"
		     "Paths inside IMAGE are absolute; relative ones start at /.\n"
		     "Exit status: 0 success, 1 operational error, 2 usage error.\n");
}

void usage(const char *cmd, FILE *out)
{
	const struct command *c = cmd ? find_command(cmd) : NULL;

	if (!c) {
		usage_top(out);
		return;
	}
	if (strcmp(tool_prog, "chunkfs") == 0)
		fprintf(out, "usage: chunkfs %s %s\n\n%s", c->name, c->synopsis, c->help);
	else
		fprintf(out, "usage: %s %s\n\n%s", tool_prog, c->synopsis, c->help);
}

int usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	if (fmt) {
		fprintf(stderr, "%s: ", tool_prog);
		if (cmd && strcmp(tool_prog, "chunkfs") == 0)
			fprintf(stderr, "%s: ", cmd);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	usage(cmd, stderr);
	return EX_USAGE;
}

/* getopt_long ran with opterr = 0 and a leading ':' in optstring, so
 * '?' is an unknown option and ':' a missing argument. */
int bad_option(const char *cmd, char **argv, int opt)
{
	const char *arg = argv[optind - 1];
	char shortopt[3] = { '-', (char)optopt, 0 };

	if (optopt == 0 || (arg && arg[0] == '-' && arg[1] == '-'))
		shortopt[0] = 0;
	if (opt == ':')
		return usage_error(cmd, "option '%s' requires an argument",
				   shortopt[0] ? shortopt : arg);
	return usage_error(cmd, "unknown option '%s'", shortopt[0] ? shortopt : arg);
}

/* ---- parsing -------------------------------------------------------- */

int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || !*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end) {
		switch (*end) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		default: return -EINVAL;
		}
		if (end[1])
			return -EINVAL;
	}
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

int parse_mode(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s < '0' || *s > '7')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 8);
	if (errno || *end || v > 07777)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Canonical 8-4-4-4-12 form only, so a typo cannot be half-accepted. */
int parse_uuid(const char *s, uint8_t out[16])
{
	int n = 0;

	if (strlen(s) != 36)
		return -EINVAL;
	for (int i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return -EINVAL;
			continue;
		}
		if (hexval(s[i]) < 0 || hexval(s[i + 1]) < 0)
			return -EINVAL;
		out[n++] = (uint8_t)(hexval(s[i]) << 4 | hexval(s[i + 1]));
		i++;
	}
	return 0;
}

int parse_features(const char *cmd, const char *s, int *dyninodes)
{
	char *copy = strdup(s), *tok, *save = NULL;
	int ret = 0;

	if (!copy)
		return usage_error(cmd, "out of memory");
	for (tok = strtok_r(copy, ",", &save); tok && !ret; tok = strtok_r(NULL, ",", &save)) {
		int off = *tok == '^';

		if (strcmp(tok + off, "dyninodes") == 0)
			*dyninodes = off ? -1 : 1;
		else
			ret = usage_error(cmd, "unknown feature '%s' (known: dyninodes, "
					  "^dyninodes)", tok + off);
	}
	free(copy);
	return ret;
}

/* ---- image access --------------------------------------------------- */

int img_open(const char *img, bool rdonly, struct cfs_fs **fs)
{
	struct img_use u;

	return img_open_use(img, rdonly, fs, &u);
}

int img_open_use(const char *img, bool rdonly, struct cfs_fs **fs, struct img_use *u)
{
	int flags = rdonly ? (CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK) : 0;
	const char *why;
	int ret;

	img_wait(img, u);
	ret = cfs_open(img, flags, fs);
	if (ret < 0) {
		why = cfs_last_error();
		if (!why || !*why)
			why = errstr(ret);
		err_msg("%s: %s", img, why);
		*fs = NULL;
	}
	return ret;
}

int img_close(struct cfs_fs *fs, const char *img, int status)
{
	int ret;

	if (!fs)
		return status;
	ret = cfs_close(fs);
	if (ret < 0) {
		err_msg("%s: closing the image failed: %s", img, errstr(ret));
		return EX_FAIL;
	}
	return status;
}

/* ---- paths ---------------------------------------------------------- */

char *img_path(const char *in)
{
	size_t len = strlen(in);
	char *out = malloc(len + 2);
	size_t o = 0;
	const char *p = in;

	if (!out)
		return NULL;
	while (*p) {
		const char *q;
		size_t n;

		while (*p == '/')
			p++;
		q = p;
		while (*q && *q != '/')
			q++;
		n = (size_t)(q - p);
		if (n && !(n == 1 && p[0] == '.')) {
			out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p = q;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = 0;
	return out;
}

char *path_join(const char *dir, const char *name)
{
	size_t dl = strlen(dir), nl = strlen(name);
	char *out;

	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	out = malloc(dl + nl + 2);
	if (!out)
		return NULL;
	memcpy(out, dir, dl);
	if (dl == 0 || dir[dl - 1] != '/')
		out[dl++] = '/';
	memcpy(out + dl, name, nl + 1);
	return out;
}

const char *path_base(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

char *host_base(const char *path)
{
	size_t len = strlen(path);
	size_t start;

	while (len > 0 && path[len - 1] == '/')
		len--;
	start = len;
	while (start > 0 && path[start - 1] != '/')
		start--;
	len -= start;
	if (len == 0 || (len == 1 && path[start] == '.') ||
	    (len == 2 && path[start] == '.' && path[start + 1] == '.'))
		return strdup("");
	return strndup(path + start, len);
}

bool name_is_unsafe(const char *name)
{
	return !*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	       strchr(name, '/') != NULL;
}

/* ---- formatting ----------------------------------------------------- */

void fmt_mode(uint32_t mode, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";
	char t;

	switch (mode & S_IFMT) {
	case S_IFDIR: t = 'd'; break;
	case S_IFLNK: t = 'l'; break;
	case S_IFCHR: t = 'c'; break;
	case S_IFBLK: t = 'b'; break;
	case S_IFIFO: t = 'p'; break;
	case S_IFSOCK: t = 's'; break;
	case S_IFREG: t = '-'; break;
	default: t = '?'; break;
	}
	out[0] = t;
	for (int i = 0; i < 9; i++)
		out[1 + i] = (mode & (0400u >> i)) ? rwx[i] : '-';
	if (mode & S_ISUID)
		out[3] = (mode & S_IXUSR) ? 's' : 'S';
	if (mode & S_ISGID)
		out[6] = (mode & S_IXGRP) ? 's' : 'S';
	if (mode & S_ISVTX)
		out[9] = (mode & S_IXOTH) ? 't' : 'T';
	out[10] = 0;
}

const char *type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symbolic link";
	case S_IFCHR: return "character special file";
	case S_IFBLK: return "block special file";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	case S_IFREG: return "regular file";
	default: return "unknown type";
	}
}

void fmt_uuid(const uint8_t u[16], char out[37])
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4], u[5],
		 u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

void fmt_time(const struct timespec *ts, char *buf, size_t len)
{
	time_t t = (time_t)ts->tv_sec;
	struct tm tm;
	char date[64], zone[16];
	long nsec = ts->tv_nsec;

	if (nsec < 0 || nsec > 999999999)
		nsec = 0;
	if (!localtime_r(&t, &tm)) {
		snprintf(buf, len, "@%lld.%09ld", (long long)ts->tv_sec, nsec);
		return;
	}
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &tm);
	strftime(zone, sizeof(zone), "%z", &tm);
	snprintf(buf, len, "%s.%09ld %s", date, nsec, zone);
}

static int run_command(const struct command *c, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(c->name, stdout);
			return EX_OK;
		}
	}
	optind = 1;
	return c->fn(argc, argv);
}

static int main_dispatch(int argc, char **argv)
{
	const struct command *c;

	if (argc < 2)
		return usage_error(NULL, "no command given");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(argc > 2 ? argv[2] : NULL, stdout);
		return EX_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("chunkfs %s\n", CFS_VERSION_STRING);
		mount_version(stdout);
		return EX_OK;
	}
	c = find_command(argv[1]);
	/* mount.fuse3 runs "chunkfs IMAGE DIR -o ..." for -t fuse.chunkfs */
	if (!c && mount_helper_call(argc, argv))
		return cmd_mount(argc, argv);
	if (!c)
		return usage_error(NULL, "unknown command '%s'", argv[1]);
	return run_command(c, argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
	const char *self = argc > 0 && argv[0] ? path_base(argv[0]) : "chunkfs";

	static const struct { const char *name, *cmd; } helpers[] = {
		{ "mkfs.chunkfs", "mkfs" }, { "fsck.chunkfs", "fsck" },
		{ "mount.chunkfs", "mount" }, { "mount.fuse.chunkfs", "mount" },
	};
	size_t i;

	for (i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++) {
		if (strcmp(self, helpers[i].name) == 0) {
			tool_prog = helpers[i].name;
			return run_command(find_command(helpers[i].cmd), argc, argv);
		}
	}
	return main_dispatch(argc, argv);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs info: geometry, features and per-chunk state, as text or JSON. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "status_ioctl.h"
#include "tool.h"

struct totals {
	uint64_t blocks, free_blocks, inodes, free_inodes, conts, xrefs, clusters;
	uint32_t dirty, errors, unreadable;
	int64_t last_write;             /* newest of the chunks' */
	int64_t last_check;             /* oldest of the chunks' */
	uint32_t last_check_chunk;
	bool last_check_set;
};

/* While the image is mounted, what is on disk lags behind the daemon
 * (by up to clean_after seconds, and the kernel's writeback): the live
 * totals come from the mount itself. */
struct live {
	const struct img_use *use;
	bool have;                      /* statvfs of the mount worked */
	struct statvfs sv;
	struct timespec written;        /* the image file's mtime */
	const char *transport;          /* as the daemon says, NULL: unknown */
};

static const char *state_name(int state)
{
	switch (state) {
	case CFS_CHUNK_CLEAN: return "clean";
	case CFS_CHUNK_DIRTY: return "dirty";
	case CFS_CHUNK_ERROR: return "error";
	case CFS_CHUNK_DIRTY | CFS_CHUNK_ERROR: return "dirty+error";
	default: return "unknown";
	}
}

static uint64_t used(uint64_t total, uint64_t free)
{
	return free > total ? 0 : total - free;
}

/* ---- JSON ----------------------------------------------------------- */

/* Length of a valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2; cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3; cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4; cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* JSON string of the first n bytes of s.  Bytes that are not valid UTF-8
 * are emitted as the Latin-1 code point of the same value, so the output
 * is always valid JSON and no byte is silently dropped. */
static void json_str(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;

	putchar('"');
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		size_t len = utf8_len(s + i, n - i);

		if (c == '"' || c == '\\') {
			printf("\\%c", c);
		} else if (c == '\n') {
			fputs("\\n", stdout);
		} else if (c == '\t') {
			fputs("\\t", stdout);
		} else if (c < 0x20 || c == 0x7f || len == 0) {
			printf("\\u%04x", c);
			len = 1;
		} else {
			fwrite(s + i, 1, len, stdout);
		}
		i += len ? len : 1;
	}
	putchar('"');
}

static void json_info(const struct cfs_info *in)
{
	char uuid[37];

	fmt_uuid(in->uuid, uuid);
	printf("{\n  \"version\": %" PRIu32 ",\n  \"uuid\": \"%s\",\n  \"label\": ",
	       in->version, uuid);
	json_str(in->label, strnlen(in->label, sizeof(in->label)));
	printf(",\n  \"created\": %" PRId64 ",\n", in->created);
	printf("  \"block_size\": %" PRIu32 ",\n  \"inode_size\": %" PRIu32 ",\n",
	       in->block_size, in->inode_size);
	printf("  \"chunk_count\": %" PRIu32 ",\n  \"blocks_per_chunk\": %" PRIu64
	       ",\n  \"inodes_per_chunk\": %" PRIu64 ",\n", in->chunks,
	       in->chunk_blocks, in->inodes_per_chunk);
	printf("  \"total_blocks\": %" PRIu64 ",\n  \"first_chunk_block\": %" PRIu64
	       ",\n  \"backup_sb_block\": %" PRIu64 ",\n", in->total_blocks,
	       in->first_chunk_block, in->backup_sb_block);
	printf("  \"root_ino\": %" PRIu32 ",\n  \"inline_max\": %" PRIu32 ",\n",
	       in->root, in->inline_max);
	printf("  \"features\": {\"compat\": %" PRIu32 ", \"ro_compat\": %" PRIu32
	       ", \"incompat\": %" PRIu32 "},\n", in->feature_compat,
	       in->feature_ro_compat, in->feature_incompat);
}

/* Continuation inodes and cross-chunk references (stubs) as a share of
 * the files and directories, which are the other inodes in use: the
 * price of splitting the filesystem into chunks (issue 11 asks <= 1%). */
static double bookkeeping_pct(const struct totals *t)
{
	uint64_t inuse = used(t->inodes, t->free_inodes), books = t->conts + t->xrefs;

	return inuse > books ? 100.0 * (double)books / (double)(inuse - books) : 0.0;
}

static void json_totals(const struct totals *t)
{
	printf("  \"totals\": {\"blocks\": %" PRIu64 ", \"used_blocks\": %" PRIu64
	       ", \"free_blocks\": %" PRIu64 ", \"inodes\": %" PRIu64
	       ", \"used_inodes\": %" PRIu64 ", \"free_inodes\": %" PRIu64
	       ", \"conts\": %" PRIu64 ", \"xrefs\": %" PRIu64
	       ", \"bookkeeping_pct\": %.2f"
	       ", \"dirty_chunks\": %" PRIu32 ", \"error_chunks\": %" PRIu32 "},\n",
	       t->blocks, used(t->blocks, t->free_blocks), t->free_blocks,
	       t->inodes, used(t->inodes, t->free_inodes), t->free_inodes,
	       t->conts, t->xrefs, bookkeeping_pct(t), t->dirty, t->errors);
}

/* ---- errors met in operation (the chunk header's error record) ------ */

static void json_error(const char *key, const struct cfs_chunk_error *e)
{
	printf(", \"%s\": {\"time\": %" PRId64 ", \"ino\": %" PRIu32
	       ", \"block\": %" PRIu64 ", \"errno\": %d, \"what\": ", key, e->time,
	       e->ino, e->block, e->err);
	json_str(e->what, strnlen(e->what, sizeof(e->what)));
	putchar('}');
}

/* Inside a chunk's JSON object: "errors" always, the records when any. */
static void json_chunk_errors(const struct cfs_chunk_info *c)
{
	printf(",\n     \"errors\": %" PRIu32, c->errors);
	if (!c->errors)
		return;
	json_error("first_error", &c->first_error);
	json_error("last_error", &c->last_error);
}

static void text_error(const char *which, const struct cfs_chunk_error *e)
{
	char when[80];
	struct timespec ts = { .tv_sec = (time_t)e->time };

	fmt_time(&ts, when, sizeof(when));
	printf("    %s %s: ", which, when);
	if (e->ino)
		printf("inode %" PRIu32 ", ", e->ino);
	if (e->block)
		printf("block %" PRIu64 ", ", e->block);
	printf("%.*s (%s)\n", (int)strnlen(e->what, sizeof(e->what)), e->what,
	       strerror(e->err));
}

/* After the table: the error record of every chunk that has one. */
static void text_errors(const struct chunk_row *rows, uint32_t n)
{
	bool head = false;

	for (uint32_t i = 0; i < n; i++) {
		const struct cfs_chunk_info *c = &rows[i].ci;

		if (rows[i].err || !c->errors)
			continue;
		if (!head)
			printf("\nErrors met in operation (run chunkfs fsck -p):\n");
		head = true;
		printf("  chunk %" PRIu32 ": %" PRIu32 " error%s\n", c->index, c->errors,
		       c->errors == 1 ? "" : "s");
		text_error("first", &c->first_error);
		if (c->errors > 1)
			text_error("last ", &c->last_error);
	}
}

static void json_chunk(const struct chunk_row *r, uint32_t idx, bool last)
{
	const struct cfs_chunk_info *c = &r->ci;

	if (r->err) {
		printf("    {\"index\": %" PRIu32 ", \"state\": \"unreadable\", "
		       "\"error\": ", idx);
		json_str(errstr(r->err), strlen(errstr(r->err)));
		printf("}%s\n", last ? "" : ",");
		return;
	}
	printf("    {\"index\": %" PRIu32 ", \"state\": \"%s\", \"state_code\": %d"
	       ", \"generation\": %" PRIu64 ", \"last_check\": %" PRId64
	       ", \"last_write\": %" PRId64 ",\n", c->index, state_name(c->state),
	       c->state, c->generation, c->last_check, c->last_write);
	printf("     \"blocks\": %" PRIu64 ", \"used_blocks\": %" PRIu64
	       ", \"free_blocks\": %" PRIu64 ", \"inodes\": %" PRIu64
	       ", \"used_inodes\": %" PRIu64 ", \"free_inodes\": %" PRIu64
	       ", \"conts\": %" PRIu64 ", \"xrefs\": %" PRIu64
	       ", \"clusters\": %" PRIu64,
	       c->blocks, used(c->blocks, c->free_blocks), c->free_blocks,
	       c->inodes, used(c->inodes, c->free_inodes), c->free_inodes,
	       c->conts, c->xrefs, c->clusters);
	json_chunk_errors(c);
	printf("}%s\n", last ? "" : ",");
}

static void json_live(const struct live *l)
{
	const struct statvfs *v = &l->sv;

	if (!l->use->mnt[0])
		return;
	printf("  \"mounted\": {\"dir\": ");
	json_str(l->use->mnt, strlen(l->use->mnt));
	printf(", \"pid\": %d, \"image_written\": %lld", (int)l->use->pid,
	       (long long)l->written.tv_sec);
	if (l->transport) {
		printf(", \"transport\": ");
		json_str(l->transport, strlen(l->transport));
	}
	if (l->have)
		printf(", \"live\": {\"blocks\": %llu, \"free_blocks\": %llu, "
		       "\"inodes\": %llu, \"free_inodes\": %llu}",
		       (unsigned long long)v->f_blocks, (unsigned long long)v->f_bfree,
		       (unsigned long long)v->f_files, (unsigned long long)v->f_ffree);
	printf("},\n");
}

static void print_json(const struct cfs_info *in, const struct chunk_row *rows,
		       const struct totals *t, const struct live *l)
{
	json_info(in);
	json_live(l);
	json_totals(t);
	printf("  \"chunks\": [\n");
	for (uint32_t i = 0; i < in->chunks; i++)
		json_chunk(&rows[i], i, i + 1 == in->chunks);
	printf("  ]\n}\n");
}

/* ---- text ----------------------------------------------------------- */

/* Labels come from the image: keep terminal control bytes out of it. */
static void print_label(const char *label)
{
	size_t n = strnlen(label, 64);

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)label[i];

		if (c < 0x20 || c == 0x7f || c == '\\')
			printf("\\x%02x", c);
		else
			putchar(c);
	}
}

static void text_info(const struct cfs_info *in)
{
	char uuid[37], created[80];
	struct timespec ts = { .tv_sec = (time_t)in->created };

	fmt_uuid(in->uuid, uuid);
	fmt_time(&ts, created, sizeof(created));
	printf("Filesystem UUID:     %s\n", uuid);
	printf("Filesystem label:    ");
	print_label(in->label);
	printf("\nFormat version:      %" PRIu32 "\n", in->version);
	printf("Features:            compat 0x%" PRIx32 ", ro_compat 0x%" PRIx32
	       ", incompat 0x%" PRIx32 "%s\n", in->feature_compat,
	       in->feature_ro_compat, in->feature_incompat,
	       in->feature_incompat & CFS_FEATURE_DYNINODES ? " (dyninodes)" : "");
	printf("Created:             %s\n", created);
	printf("Block size:          %" PRIu32 "\n", in->block_size);
	printf("Inode size:          %" PRIu32 "\n", in->inode_size);
	printf("Inline data limit:   %" PRIu32 " bytes\n", in->inline_max);
	printf("Total blocks:        %" PRIu64 "\n", in->total_blocks);
	printf("First chunk block:   %" PRIu64 "\n", in->first_chunk_block);
	printf("Backup superblock:   %" PRIu64 "\n", in->backup_sb_block);
	printf("Chunks:              %" PRIu32 "\n", in->chunks);
	printf("Blocks per chunk:    %" PRIu64 "\n", in->chunk_blocks);
	printf("Inodes per chunk:    %" PRIu64 "\n", in->inodes_per_chunk);
	printf("Root inode:          %" PRIu32 " (chunk %" PRIu32 ", local %" PRIu32
	       ")\n", in->root, CFS_INO_CHUNK(in->root), CFS_INO_LOCAL(in->root));
}

/* As dumpe2fs's "Last write time" and "Last checked". */
static void print_times(const struct totals *t)
{
	struct timespec ts = { .tv_sec = (time_t)t->last_write };
	char buf[80];

	fmt_time(&ts, buf, sizeof(buf));
	printf("Last write time:     %s\n", t->last_write ? buf : "never");
	ts.tv_sec = (time_t)t->last_check;
	fmt_time(&ts, buf, sizeof(buf));
	printf("Last checked:        %s (chunk %" PRIu32 ", the longest ago)\n",
	       t->last_check ? buf : "never", t->last_check_chunk);
}

/* The mount's live totals, and what the figures from the image are. */
static void text_live(const struct live *l)
{
	const struct statvfs *v = &l->sv;
	char when[80], pid[32] = "";

	if (!l->use->mnt[0])
		return;
	if (l->use->pid)
		snprintf(pid, sizeof(pid), ", pid %d", (int)l->use->pid);
	printf("Mounted on:          %s (chunkfs daemon%s%s%s)\n", l->use->mnt, pid,
	       l->transport ? ", over " : "", l->transport ? l->transport : "");
	if (l->have)
		printf("Live (from the mount): %llu blocks used, %llu free of %llu; "
		       "%llu inodes used, %llu free\n",
		       (unsigned long long)(v->f_blocks - v->f_bfree),
		       (unsigned long long)v->f_bfree, (unsigned long long)v->f_blocks,
		       (unsigned long long)(v->f_files - v->f_ffree),
		       (unsigned long long)v->f_ffree);
	fmt_time(&l->written, when, sizeof(when));
	printf("The figures below are the image as last written (%s); the mount "
	       "writes behind by up to clean_after seconds\n\n", when);
}

static void text_totals(const struct totals *t)
{
	printf("Data blocks:         %" PRIu64 " used, %" PRIu64 " free of %" PRIu64
	       "\n", used(t->blocks, t->free_blocks), t->free_blocks, t->blocks);
	printf("Inodes:              %" PRIu64 " used, %" PRIu64 " free of %" PRIu64
	       "\n", used(t->inodes, t->free_inodes), t->free_inodes, t->inodes);
	printf("Inode clusters:      %" PRIu64 " (64 inodes each, made from free blocks)\n",
	       t->clusters);
	printf("Continuations:       %" PRIu64 "\n", t->conts);
	printf("Cross-chunk refs:    %" PRIu64 "\n", t->xrefs);
	printf("Bookkeeping:         %.2f%% (continuations and cross-chunk refs per "
	       "file or directory)\n", bookkeeping_pct(t));
	print_times(t);
	printf("Dirty chunks:        %" PRIu32 "\n", t->dirty);
	if (t->errors)
		printf("Chunks with errors:  %" PRIu32 "\n", t->errors);
	if (t->unreadable)
		printf("Unreadable chunks:   %" PRIu32 "\n", t->unreadable);
}

static void text_chunk(const struct chunk_row *r, uint32_t idx)
{
	const struct cfs_chunk_info *c = &r->ci;

	if (r->err) {
		printf("%5" PRIu32 "  unreadable: %s\n", idx, errstr(r->err));
		return;
	}
	printf("%5" PRIu32 "  %-11s %10" PRIu64 " %10" PRIu64 " %9" PRIu64 " %9"
	       PRIu64 " %6" PRIu64 " %6" PRIu64 " %10" PRIu64 "\n", c->index,
	       state_name(c->state), used(c->blocks, c->free_blocks),
	       c->free_blocks, used(c->inodes, c->free_inodes), c->free_inodes,
	       c->conts, c->xrefs, c->generation);
}

/* The inode clusters each chunk made (FORMAT.md 10.4), where there are any. */
static void text_clusters(const struct chunk_row *rows, uint32_t n)
{
	bool any = false;

	for (uint32_t i = 0; i < n; i++) {
		if (rows[i].err || !rows[i].ci.clusters)
			continue;
		printf("%s %" PRIu32 ":%" PRIu64, any ? "" : "\nInode clusters (chunk:count):",
		       i, rows[i].ci.clusters);
		any = true;
	}
	if (any)
		printf("\n");
}

static void print_text(const struct cfs_info *in, const struct chunk_row *rows,
		       const struct totals *t, const struct live *l)
{
	text_live(l);
	text_info(in);
	text_totals(t);
	printf("\nchunk  state        used-blks  free-blks used-inos free-inos "
	       " conts  xrefs generation\n");
	for (uint32_t i = 0; i < in->chunks; i++)
		text_chunk(&rows[i], i);
	text_clusters(rows, in->chunks);
	text_errors(rows, in->chunks);
}

/* ---- gathering ------------------------------------------------------ */

static void add_row(struct totals *t, const struct chunk_row *r)
{
	const struct cfs_chunk_info *c = &r->ci;

	if (r->err) {
		t->unreadable++;
		return;
	}
	t->blocks += c->blocks;
	t->free_blocks += c->free_blocks;
	t->inodes += c->inodes;
	t->free_inodes += c->free_inodes;
	t->conts += c->conts;
	t->xrefs += c->xrefs;
	t->clusters += c->clusters;
	if (c->last_write > t->last_write)
		t->last_write = c->last_write;
	if (!t->last_check_set || c->last_check < t->last_check) {
		t->last_check = c->last_check;
		t->last_check_chunk = c->index;
		t->last_check_set = true;
	}
	if (c->state & CFS_CHUNK_DIRTY)
		t->dirty++;
	if (c->state & CFS_CHUNK_ERROR)
		t->errors++;
}

static int gather(struct cfs_fs *fs, const struct cfs_info *in,
		  struct chunk_row **rowsp, struct totals *t)
{
	struct chunk_row *rows;

	memset(t, 0, sizeof(*t));
	if (in->chunks == 0 || in->chunks > CFS_MAX_CHUNKS)
		return -EUCLEAN;
	rows = calloc(in->chunks, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (uint32_t i = 0; i < in->chunks; i++) {
		rows[i].err = cfs_get_chunk_info(fs, i, &rows[i].ci);
		if (rows[i].err > 0)
			rows[i].err = 0;
		add_row(t, &rows[i]);
	}
	*rowsp = rows;
	return 0;
}

/* Which transport serves the mount at dir, as its daemon says
 * (CHUNKFS_IOC_STATUS); NULL from a daemon too old to say. */
static const char *live_transport(const char *dir)
{
	struct chunkfs_status st = { 0 };
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret;

	if (fd < 0)
		return NULL;
	ret = ioctl(fd, CHUNKFS_IOC_STATUS, &st);
	close(fd);
	if (ret < 0)
		return NULL;
	return st.transport == CHUNKFS_TRANSPORT_URING ? "io_uring" :
	       st.transport == CHUNKFS_TRANSPORT_DEV ? "/dev/fuse" : NULL;
}

static void live_get(const char *img, const struct img_use *use, struct live *l)
{
	struct stat st;

	memset(l, 0, sizeof(*l));
	l->use = use;
	if (!use->mnt[0])
		return;
	l->have = statvfs(use->mnt, &l->sv) == 0;
	if (stat(img, &st) == 0)
		l->written = st.st_mtim;
	l->transport = live_transport(use->mnt);
}

/* What to print: the table, --json, --map, or --svg FILE (svg != NULL). */
struct show_mode {
	bool json, map;
	const char *svg;
};

static int print_picture(const struct show_mode *m, const char *img,
			 const struct cfs_info *in, const struct chunk_row *rows)
{
	int ret;

	if (m->map)
		chunkmap_text(stdout, img, in, rows);
	if (!m->svg)
		return 0;
	ret = chunkmap_svg(m->svg, img, in, rows);
	if (ret < 0)
		err_msg("%s: %s", m->svg, errstr(ret));
	return ret;
}

static int show(struct cfs_fs *fs, const char *img, const struct show_mode *m,
		const struct live *l)
{
	struct cfs_info in;
	struct chunk_row *rows = NULL;
	struct totals t;
	int ret;

	ret = cfs_get_info(fs, &in);
	if (ret >= 0)
		ret = gather(fs, &in, &rows, &t);
	if (ret < 0) {
		err_msg("%s: cannot read filesystem information: %s", img, errstr(ret));
		return EX_FAIL;
	}
	if (m->map || m->svg)
		ret = print_picture(m, img, &in, rows);
	else if (m->json)
		print_json(&in, rows, &t, l);
	else
		print_text(&in, rows, &t, l);
	free(rows);
	if (ret < 0)
		return EX_FAIL;
	if (t.unreadable) {
		err_msg("%s: %" PRIu32 " chunk header(s) could not be read (shown as "
			"unreadable): chunkfs fsck -y rebuilds them", img, t.unreadable);
		return EX_FAIL;
	}
	return EX_OK;
}

/* Open img to read; when a bad chunk header (or a bad primary superblock
 * with a good backup) fails the open, open it as fsck -n does instead,
 * so that every readable chunk is still shown.  The failure is reported
 * all the same, and *status is EX_FAIL then. */
static int info_open(const char *img, struct cfs_fs **fs, struct img_use *use,
		     int *status)
{
	char why[256];
	int ret;

	*status = EX_OK;
	img_wait(img, use);
	ret = cfs_open(img, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, fs);
	if (ret == 0)
		return 0;
	snprintf(why, sizeof(why), "%s", *cfs_last_error() ? cfs_last_error() : errstr(ret));
	err_msg("%s: %s", img, why);
	*status = EX_FAIL;
	if (cfs_open(img, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, fs) == 0)
		return 0;
	*fs = NULL;
	return ret;
}

int cmd_info(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "map", no_argument, NULL, 'm' },
		{ "svg", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	struct img_use use;
	struct live live;
	struct cfs_fs *fs;
	struct show_mode mode = { 0 };
	int c, status;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", lopts, NULL)) != -1) {
		if (c == 'j')
			mode.json = true;
		else if (c == 'm')
			mode.map = true;
		else if (c == 's')
			mode.svg = optarg;
		else
			return bad_option("info", argv, c);
	}
	if (mode.json && (mode.map || mode.svg))
		return usage_error("info", "--json does not go with --map or --svg");
	if (argc - optind != 1)
		return usage_error("info", argc == optind ? "no IMAGE given" :
				   "too many arguments");
	if (info_open(argv[optind], &fs, &use, &status) < 0)
		return EX_FAIL;
	live_get(argv[optind], &use, &live);
	if (show(fs, argv[optind], &mode, &live) != EX_OK)
		status = EX_FAIL;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		err_msg("writing standard output: %s", errstr(-errno));
		status = EX_FAIL;
	}
	return img_close(fs, argv[optind], status);
}

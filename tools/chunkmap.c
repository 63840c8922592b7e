/* SPDX-License-Identifier: GPL-2.0-or-later */
/* chunkfs info --map / --svg: a picture of the chunks.
 *
 * One cell per chunk: its state (clean, dirty, error, unreadable), how full
 * it is in blocks and in inodes, and whether it holds continuation inodes
 * or cross-chunk references.  --map draws the cells as a grid of text on a
 * terminal (coloured when stdout is one); --svg writes the same as a
 * standalone SVG file with a tooltip per chunk.
 *
 * The numbers are the chunk headers as read from the image.  On a mounted
 * image that is the live clean/dirty state (a chunk is marked dirty on disk
 * before its first change), but the counts are those of each header's last
 * write, so the output says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "tool.h"

#define MAP_COLUMNS     8       /* cells per text row */
#define SVG_COLUMNS     16
#define SVG_CELL        56      /* px, square */
#define SVG_GAP         6
#define SVG_MARGIN      16
#define SVG_HEAD        86      /* title and legend above the grid */

/* The image is held by a writer (the mount takes an exclusive flock on
 * it), so what we read is a snapshot of a filesystem in use. */
bool chunkmap_image_in_use(const char *img)
{
	int fd = open(img, O_RDONLY | O_CLOEXEC);
	bool busy = false;

	if (fd < 0)
		return false;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0)
		busy = errno == EWOULDBLOCK;
	close(fd);
	return busy;
}

static uint64_t used_of(uint64_t total, uint64_t free)
{
	return free > total ? 0 : total - free;
}

/* Tenths full: '.' empty, '0'..'9' (partly full, rounded down), '#' full. */
static char fullness(uint64_t total, uint64_t free)
{
	uint64_t used = used_of(total, free);

	if (used == 0 || total == 0)
		return '.';
	if (used >= total)
		return '#';
	return (char)('0' + used * 10 / total);
}

static char state_char(const struct chunk_row *r)
{
	if (r->err)
		return '?';
	if (r->ci.state & CFS_CHUNK_ERROR)
		return 'E';
	return (r->ci.state & CFS_CHUNK_DIRTY) ? 'D' : 'C';
}

static char link_char(const struct chunk_row *r)
{
	if (r->err)
		return ' ';
	if (r->ci.conts && r->ci.xrefs)
		return '*';
	if (r->ci.conts)
		return 'c';
	return r->ci.xrefs ? 'x' : ' ';
}

/* ---- text ----------------------------------------------------------- */

static const char *state_color(char s)
{
	switch (s) {
	case 'C': return "\033[32m";    /* green */
	case 'D': return "\033[33m";    /* yellow */
	case 'E': return "\033[1;31m";  /* bold red */
	default: return "\033[35m";     /* magenta: unreadable */
	}
}

static bool want_color(FILE *out)
{
	const char *term = getenv("TERM");

	return isatty(fileno(out)) && !getenv("NO_COLOR") && term &&
	       strcmp(term, "dumb") != 0;
}

static void map_header(FILE *out, const char *img, const struct cfs_info *in,
		       bool live)
{
	fprintf(out, "%s: %" PRIu32 " chunks of %" PRIu64 " blocks (%" PRIu32
		" bytes) and %" PRIu64 " inodes\n", img, in->chunks,
		in->chunk_blocks, in->block_size, in->inodes_per_chunk);
	if (live)
		fprintf(out, "(mounted: states are live, counts as of each chunk's "
			"last header write)\n");
	fprintf(out, "cell: state, blocks used, inodes used, links\n"
		     "  state  C clean  D dirty  E error  ? unreadable\n"
		     "  used   . none  0-9 tenths  # full\n"
		     "  links  c continuation inodes  x cross-chunk references"
		     "  * both\n\n");
}

static void map_grid(FILE *out, const struct cfs_info *in,
		     const struct chunk_row *rows, bool color)
{
	fprintf(out, "     ");
	for (uint32_t c = 0; c < MAP_COLUMNS && c < in->chunks; c++)
		fprintf(out, " +%-3" PRIu32, c);
	for (uint32_t i = 0; i < in->chunks; i++) {
		const struct chunk_row *r = &rows[i];
		char s = state_char(r);

		if (i % MAP_COLUMNS == 0)
			fprintf(out, "\n%4" PRIu32 " ", i);
		fprintf(out, " %s%c%s", color ? state_color(s) : "", s,
			color ? "\033[0m" : "");
		if (r->err)
			fprintf(out, "   ");
		else
			fprintf(out, "%c%c%c", fullness(r->ci.blocks, r->ci.free_blocks),
				fullness(r->ci.inodes, r->ci.free_inodes), link_char(r));
	}
	fputc('\n', out);
}

static void map_summary(FILE *out, const struct cfs_info *in,
			const struct chunk_row *rows)
{
	uint64_t b = 0, fb = 0, n = 0, fn = 0, conts = 0, xrefs = 0;
	uint32_t dirty = 0, errs = 0, bad = 0, linked = 0;

	for (uint32_t i = 0; i < in->chunks; i++) {
		const struct cfs_chunk_info *c = &rows[i].ci;

		if (rows[i].err) {
			bad++;
			continue;
		}
		b += c->blocks, fb += c->free_blocks;
		n += c->inodes, fn += c->free_inodes;
		conts += c->conts, xrefs += c->xrefs;
		dirty += (c->state & CFS_CHUNK_DIRTY) != 0;
		errs += (c->state & CFS_CHUNK_ERROR) != 0;
		linked += (c->conts || c->xrefs);
	}
	fprintf(out, "\n%" PRIu32 " dirty, %" PRIu32 " in error, %" PRIu32
		" unreadable; blocks %" PRIu64 "%% used, inodes %" PRIu64
		"%% used; %" PRIu64 " continuations and %" PRIu64
		" cross-chunk references in %" PRIu32 " chunks\n", dirty, errs, bad,
		b ? used_of(b, fb) * 100 / b : 0, n ? used_of(n, fn) * 100 / n : 0,
		conts, xrefs, linked);
}

int chunkmap_text(FILE *out, const char *img, const struct cfs_info *in,
		  const struct chunk_row *rows)
{
	map_header(out, img, in, chunkmap_image_in_use(img));
	map_grid(out, in, rows, want_color(out));
	map_summary(out, in, rows);
	return 0;
}

/* ---- SVG ------------------------------------------------------------ */

/* Text from the image or the command line, as XML character data: markup
 * characters escaped, control bytes (not allowed in XML 1.0) as '?'. */
static void xml_text(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		switch (c) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			fputc(c < 0x20 || c == 0x7f || c >= 0x80 ? '?' : c, f);
		}
	}
}

static const char *state_fill(char s)
{
	switch (s) {
	case 'C': return "#cfe8cf";
	case 'D': return "#ffe08a";
	case 'E': return "#f4a3a3";
	default: return "#d0d0d0";
	}
}

static const char *state_word(char s)
{
	switch (s) {
	case 'C': return "clean";
	case 'D': return "dirty";
	case 'E': return "error";
	default: return "unreadable";
	}
}

/* A vertical bar at x showing used/total of the cell's height. */
static void svg_bar(FILE *f, int x, int y, uint64_t total, uint64_t free,
		    const char *color)
{
	int h = SVG_CELL - 22;
	int fill = total ? (int)(used_of(total, free) * (uint64_t)h / total) : 0;

	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"8\" height=\"%d\" "
		   "fill=\"#ffffff\" stroke=\"#999999\" stroke-width=\"0.5\"/>",
		x, y + 18, h);
	if (fill > 0)
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"8\" height=\"%d\" "
			   "fill=\"%s\"/>", x, y + 18 + h - fill, fill, color);
}

static void svg_cell(FILE *f, const struct chunk_row *r, uint32_t i)
{
	const struct cfs_chunk_info *c = &r->ci;
	int x = SVG_MARGIN + (int)(i % SVG_COLUMNS) * (SVG_CELL + SVG_GAP);
	int y = SVG_HEAD + (int)(i / SVG_COLUMNS) * (SVG_CELL + SVG_GAP);
	char s = state_char(r);

	fprintf(f, "<g class=\"chunk %s\"><title>chunk %" PRIu32 ": %s", state_word(s), i,
		state_word(s));
	if (r->err)
		fprintf(f, " (%s)", errstr(r->err));
	else
		fprintf(f, "; blocks %" PRIu64 " of %" PRIu64 " used; inodes %"
			PRIu64 " of %" PRIu64 " used; %" PRIu64 " continuations; %"
			PRIu64 " cross-chunk references; generation %" PRIu64,
			used_of(c->blocks, c->free_blocks), c->blocks,
			used_of(c->inodes, c->free_inodes), c->inodes, c->conts,
			c->xrefs, c->generation);
	fprintf(f, "</title>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
		   "rx=\"4\" fill=\"%s\" stroke=\"%s\" stroke-width=\"%d\"/>",
		x, y, SVG_CELL, SVG_CELL, state_fill(s),
		s == 'E' ? "#b00000" : "#666666", s == 'E' ? 2 : 1);
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">%" PRIu32 "</text>",
		x + 4, y + 13, i);
	if (!r->err) {
		svg_bar(f, x + 6, y, c->blocks, c->free_blocks, "#3b6fb6");
		svg_bar(f, x + 18, y, c->inodes, c->free_inodes, "#8a4fb0");
		if (c->conts)
			fprintf(f, "<circle cx=\"%d\" cy=\"%d\" r=\"5\" fill=\"#e07b00\"/>",
				x + SVG_CELL - 10, y + 26);
		if (c->xrefs)
			fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" "
				   "fill=\"#008080\"/>", x + SVG_CELL - 15, y + 38);
	}
	fprintf(f, "</g>\n");
}

static void svg_legend(FILE *f, const char *img, const struct cfs_info *in,
		       bool live)
{
	static const char states[] = "CDE?";
	int x = SVG_MARGIN;

	fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">"
		   "chunkfs ", SVG_MARGIN);
	xml_text(f, img, strlen(img));
	if (in->label[0]) {
		fputs(" \xe2\x80\x94 ", f);     /* em dash */
		xml_text(f, in->label, sizeof(in->label));
	}
	fprintf(f, "</text>\n<text x=\"%d\" y=\"40\" font-size=\"11\">%" PRIu32
		" chunks of %" PRIu64 " blocks (%" PRIu32 " bytes) and %" PRIu64
		" inodes%s</text>\n", SVG_MARGIN, in->chunks, in->chunk_blocks,
		in->block_size, in->inodes_per_chunk,
		live ? "; mounted: states live, counts as of each header's last write" :
		       "; read from the image");
	for (int i = 0; i < 4; i++, x += 86)
		fprintf(f, "<rect x=\"%d\" y=\"52\" width=\"12\" height=\"12\" "
			   "fill=\"%s\" stroke=\"#666666\"/><text x=\"%d\" y=\"62\" "
			   "font-size=\"11\">%s</text>\n", x, state_fill(states[i]),
			x + 16, state_word(states[i]));
	fprintf(f, "<rect x=\"%d\" y=\"52\" width=\"8\" height=\"12\" fill=\"#3b6fb6\"/>"
		   "<text x=\"%d\" y=\"62\" font-size=\"11\">blocks used</text>\n"
		   "<rect x=\"%d\" y=\"52\" width=\"8\" height=\"12\" fill=\"#8a4fb0\"/>"
		   "<text x=\"%d\" y=\"62\" font-size=\"11\">inodes used</text>\n"
		   "<circle cx=\"%d\" cy=\"58\" r=\"5\" fill=\"#e07b00\"/>"
		   "<text x=\"%d\" y=\"62\" font-size=\"11\">continuations</text>\n"
		   "<rect x=\"%d\" y=\"53\" width=\"10\" height=\"10\" fill=\"#008080\"/>"
		   "<text x=\"%d\" y=\"62\" font-size=\"11\">cross-chunk references</text>\n",
		x, x + 12, x + 90, x + 102, x + 185, x + 193, x + 285, x + 299);
}

static int svg_write(FILE *f, const char *img, const struct cfs_info *in,
		     const struct chunk_row *rows)
{
	uint32_t cols = in->chunks < SVG_COLUMNS ? in->chunks : SVG_COLUMNS;
	uint32_t nrows = (in->chunks + SVG_COLUMNS - 1) / SVG_COLUMNS;
	int w = 2 * SVG_MARGIN + (int)cols * (SVG_CELL + SVG_GAP);
	int h = SVG_HEAD + (int)nrows * (SVG_CELL + SVG_GAP) + SVG_MARGIN;

	if (w < 640)
		w = 640;        /* room for the legend */
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		   "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n"
		   "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n",
		w, h, w, h);
	svg_legend(f, img, in, chunkmap_image_in_use(img));
	for (uint32_t i = 0; i < in->chunks; i++)
		svg_cell(f, &rows[i], i);
	fprintf(f, "</svg>\n");
	return 0;
}

int chunkmap_svg(const char *path, const char *img, const struct cfs_info *in,
		 const struct chunk_row *rows)
{
	bool to_stdout = strcmp(path, "-") == 0;
	FILE *f = to_stdout ? stdout : fopen(path, "w");
	int ret;

	if (!f)
		return -errno;
	svg_write(f, img, in, rows);
	errno = 0;
	ret = fflush(f) != 0 || ferror(f) ? (errno ? -errno : -EIO) : 0;
	if (!to_stdout && fclose(f) != 0 && ret == 0)
		ret = -errno;
	return ret;
}

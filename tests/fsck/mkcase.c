/* SPDX-License-Identifier: GPL-2.0-or-later */
/* mkcase: images for the fsck corruption library (tests/fsck/run.sh).
 *
 *   mkcase build IMG            populated 4-chunk image (+ IMG.manifest)
 *   mkcase build64 IMG          populated 64-chunk image (+ IMG.manifest)
 *   mkcase buildfull IMG        4-chunk image with every chunk full of inodes
 *                               and blocks (+ IMG.manifest)
 *   mkcase buildcl IMG          2 chunks of 16-inode tables, one with inode
 *                               clusters (DYNINODES) (+ IMG.manifest)
 *   mkcase damage CASE IMG      apply one named damage to IMG
 *   mkcase verify IMG           walk IMG (normal read-only open, so every
 *                               chunk must be clean), read everything, and
 *                               print one line per object: where it is and
 *                               whether its contents are still the ones it
 *                               was written with (IMG.manifest)
 *   mkcase names IMG            "NUMBER NAME" of every inode of an intact image
 *   mkcase symbolize NAMES      filter: inode numbers in fsck output -> [NAME]
 *   mkcase list                 the damage names
 *
 * Every image is deterministic: fixed uuid (hence fixed name hashes) and a
 * fixed sequence of operations, so inode numbers are the same on every run
 * and the expected fsck output can name them.
 *
 * A damage is one of two kinds.  "Media" damage edits bytes of the closed
 * image (a flipped byte, a zeroed block, a field changed and the checksum
 * resealed).  "Logical" damage performs, through the library's internal
 * functions (src/fsint.h), one half of an operation that a crash could
 * have cut: an entry removed but not its inode, an inode freed but not its
 * entry.  Afterwards every chunk whose bytes changed is marked DIRTY in its
 * header, as a crash would leave it (the dirty protocol marks a chunk dirty
 * on disk before any of its changed blocks is written); the others keep
 * their original, clean header.  Damage names starting with "clean-" leave
 * every chunk clean: damage that a dirty-only check cannot see.
 *
 * Built by tests/fsck/run.sh against the library of the build under test,
 * with -Isrc for the internal headers. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chunkfs.h"
#include "format.h"
#include "fsint.h"
#include "../damage.h"

#define BS 1024

static const uint8_t UUID[16] = {
	0x6b, 0x1c, 0x2e, 0x4f, 0x90, 0x11, 0x4a, 0x3b,
	0x8c, 0x5d, 0x6e, 0x7f, 0x80, 0x91, 0xa2, 0xb3,
};

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("mkcase: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

#define OK(expr)                                                                  \
	do {                                                                      \
		long long _r = (long long)(expr);                                 \
		if (_r < 0)                                                       \
			die("%s:%d: %s: %s (%s)", __FILE__, __LINE__, #expr,      \
			    strerror((int)-_r), cfs_last_error());                \
	} while (0)

/* File contents: a pattern seeded by the file's manifest number. */
static void manifest_pattern(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(((i + seed * 7919u) * 2654435761u) >> 13);
}

/* ---- building ------------------------------------------------------------ */

struct builder {
	struct cfs_fs *fs;
	FILE *mf;
	uint32_t next_seed;
};

static cfs_ino_t resolve(struct cfs_fs *fs, const char *path)
{
	cfs_ino_t ino;
	int ret = cfs_path_resolve(fs, path, 0, &ino);

	if (ret < 0)
		die("resolve %s: %s", path, strerror(-ret));
	return ino;
}

static cfs_ino_t mkdir_p(struct builder *b, const char *path)
{
	char parent[256], *slash;
	cfs_ino_t dir, ino;

	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	*slash = 0;
	dir = resolve(b->fs, *parent ? parent : "/");
	OK(cfs_mkdir(b->fs, dir, slash + 1, 0755, 0, 0, &ino));
	fprintf(b->mf, "%u dir 0 0 %s\n", ino, path);
	return ino;
}

/* A regular file of size bytes, written 64 KiB at a time. */
static cfs_ino_t mkfile(struct builder *b, const char *path, size_t size)
{
	const size_t step = 1 << 16;
	char parent[256], *slash;
	cfs_ino_t dir, ino;
	uint32_t seed = ++b->next_seed;
	uint8_t *whole;
	size_t off;

	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	*slash = 0;
	dir = resolve(b->fs, *parent ? parent : "/");
	OK(cfs_mknod(b->fs, dir, slash + 1, S_IFREG | 0644, 0, 0, 0, &ino));
	/* the pattern is defined over the whole file */
	whole = malloc(size + 1);
	if (!whole)
		die("out of memory");
	manifest_pattern(whole, size, seed);
	for (off = 0; off < size; off += step) {
		size_t n = size - off < step ? size - off : step;

		if (cfs_write(b->fs, ino, whole + off, n, off) != (ssize_t)n)
			die("write %s failed", path);
	}
	free(whole);
	fprintf(b->mf, "%u reg %u %zu %s\n", ino, seed, size, path);
	return ino;
}

static void mklink(struct builder *b, const char *target, const char *path)
{
	char parent[256], *slash;

	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	*slash = 0;
	OK(cfs_link(b->fs, resolve(b->fs, target), resolve(b->fs, *parent ? parent : "/"),
		    slash + 1));
}

static void mksym(struct builder *b, const char *target, const char *path)
{
	char parent[256], *slash;
	cfs_ino_t ino;

	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	*slash = 0;
	OK(cfs_symlink(b->fs, resolve(b->fs, *parent ? parent : "/"), slash + 1, target, 0, 0,
		       &ino));
	fprintf(b->mf, "%u lnk 0 %zu %s\n", ino, strlen(target), path);
}

static void begin(struct builder *b, const char *img, uint64_t size, uint32_t chunks,
		  uint64_t inodes, int dyninodes)
{
	struct cfs_mkfs_opts o = { .size = size, .block_size = BS, .chunks = chunks,
				   .inodes = inodes, .label = "fsck-case", .uuid = UUID,
				   .now = 1700000000, .dyninodes = dyninodes };
	char mf[4096];

	unlink(img);
	OK(cfs_mkfs(img, &o));
	OK(cfs_open(img, 0, &b->fs));
	snprintf(mf, sizeof(mf), "%s.manifest", img);
	b->mf = fopen(mf, "w");
	if (!b->mf)
		die("%s: %s", mf, strerror(errno));
	b->next_seed = 0;
}

static void end(struct builder *b)
{
	int n = cfs_check(b->fs, NULL, NULL);

	if (n != 0)
		die("the fresh image is inconsistent (%d problems)", n);
	OK(cfs_close(b->fs));
	fclose(b->mf);
}

/* Four chunks of 1023 one-KiB blocks.  Top-level directories are spread
 * over the chunks, so the root (chunk 0) names them through stubs.  The
 * fixed inode tables of images made before DYNINODES (-O ^dyninodes), so
 * that the cases check that layout too (and a chunk can run out of
 * inodes: orphans-full-chunk); the 64-chunk and icl-* images have it. */
static void build4(const char *img)
{
	struct builder b;
	uint8_t val[600];
	cfs_ino_t ino;
	char name[64];
	int i;

	begin(&b, img, 4u << 20, 4, 512, -1);
	mkdir_p(&b, "/d1");
	mkdir_p(&b, "/d2");
	mkdir_p(&b, "/d3");
	mkdir_p(&b, "/d1/sub");
	/* inline file with xattrs: one in the inode, one in an overflow block */
	ino = mkfile(&b, "/d1/small", 13);
	OK(cfs_setxattr(b.fs, ino, "user.a", "1", 1, 0));
	manifest_pattern(val, sizeof(val), 4242);
	OK(cfs_setxattr(b.fs, ino, "user.big", val, sizeof(val), 0));
	mkfile(&b, "/d1/multi", 20000);
	mkfile(&b, "/d1/multi2", 9000);
	mkfile(&b, "/d1/sub/f1", 40);
	mkfile(&b, "/d1/sub/f2", 3000);
	mkfile(&b, "/d1/sub/f3", 70);
	/* a fragmented file: one extent per block, too many for the extent
	 * root in the inode, so its tree has a node block */
	{
		static uint8_t whole[24 * BS];
		cfs_ino_t frag, pad;
		uint32_t seed = ++b.next_seed;

		OK(cfs_mknod(b.fs, resolve(b.fs, "/d1"), "frag", S_IFREG | 0644, 0, 0, 0, &frag));
		OK(cfs_mknod(b.fs, resolve(b.fs, "/d1"), "pad", S_IFREG | 0644, 0, 0, 0, &pad));
		manifest_pattern(whole, sizeof(whole), seed);
		for (i = 0; i < 24; i++) {
			if (cfs_write(b.fs, frag, whole + i * BS, BS, (uint64_t)i * BS) != BS)
				die("write frag");
			if (cfs_write(b.fs, pad, whole, BS, (uint64_t)i * BS) != BS)
				die("write pad");
		}
		fprintf(b.mf, "%u reg %u %zu /d1/frag\n", frag, seed, sizeof(whole));
		OK(cfs_unlink(b.fs, resolve(b.fs, "/d1"), "pad"));
	}
	mkfile(&b, "/d2/f", 5000);
	mkfile(&b, "/d2/g", 100);
	mksym(&b, "/d1/small", "/d2/sym");
	mkdir_p(&b, "/d2/empty");
	for (i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "/d2/many/n%02d", i);
		if (i == 0)
			mkdir_p(&b, "/d2/many");
		mkfile(&b, name, (size_t)(i * 700));
	}
	/* a directory whose tree has an index node above several leaves */
	for (i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "/d2/tree/entry-with-a-longish-name-%02d", i);
		if (i == 0)
			mkdir_p(&b, "/d2/tree");
		mkfile(&b, name, (size_t)(i % 5) * 20);
	}
	/* hard links across chunks: stubs in the target's chunk */
	mklink(&b, "/d2/f", "/d1/link-f");
	mklink(&b, "/d1/multi", "/d2/link-multi");
	mklink(&b, "/d2/g", "/xlink");
	/* bigger than a chunk: the head's chunk fills, continuations follow */
	mkfile(&b, "/d3/big", 1300000);
	end(&b);
}

/* 64 chunks of 64 blocks: a few trees, a file with continuations. */
static void build64(const char *img)
{
	struct builder b;
	char name[64];
	int i;

	begin(&b, img, 64u * 64 * BS + 4 * BS, 64, 64 * 16, 0);
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "/t%d", i);
		mkdir_p(&b, name);
		snprintf(name, sizeof(name), "/t%d/a", i);
		mkfile(&b, name, 3000);
		snprintf(name, sizeof(name), "/t%d/b", i);
		mkfile(&b, name, 60);
	}
	mkfile(&b, "/t0/long", 120000);
	mklink(&b, "/t1/a", "/t2/link-a");
	end(&b);
}

/* buildfull's inodes: small inline files round-robin in the four
 * directories until every one is refused; the first file of each chunk
 * becomes its filler.  *next numbers the names across calls. */
static void fill_files(struct builder *bp, const cfs_ino_t *dir, const char *const *dirs,
		       cfs_ino_t *filler, uint32_t *fseed, uint64_t *fsize, int *next)
{
	struct builder b = *bp;
	static uint8_t data[40];
	char name[64], path[80];
	cfs_ino_t ino;
	uint32_t c;
	int i, fails;

	for (i = *next, fails = 0; fails < 4; i++) {
		uint32_t seed = b.next_seed + 1;
		int r, d = i % 4;

		snprintf(name, sizeof(name), "f%03d", i);
		snprintf(path, sizeof(path), "%s/%s", dirs[d], name);
		r = cfs_mknod(b.fs, dir[d], name, S_IFREG | 0644, 0, 0, 0, &ino);
		if (r == -ENOSPC) {
			fails++;
			continue;
		}
		OK(r);
		fails = 0;
		b.next_seed = seed;
		manifest_pattern(data, 40, seed);
		if (cfs_write(b.fs, ino, data, 40, 0) != 40)
			die("write %s failed", path);
		fprintf(b.mf, "%u reg %u %d %s\n", ino, seed, 40, path);
		c = CFS_INO_CHUNK(ino);
		if (!filler[c]) {
			filler[c] = ino;
			fseed[c] = seed;
			fsize[c] = 40;
		}
	}
	*next = i;
	bp->next_seed = b.next_seed;
}

/* Every chunk full: no inode and no block left that a normal allocation may
 * take (only the repair reserve, FORMAT.md section 16.4).  Four chunks of 511
 * blocks and 32 inodes: top-level directories /a../d spread over the chunks,
 * small inline files in them round-robin until no inode is left, then a
 * file in each chunk written until its chunk has no block left. */
static void buildfull(const char *img)
{
	static const char *dirs[] = { "/a", "/b", "/c", "/d" };
	static uint8_t data[BS];
	struct builder b;
	cfs_ino_t dir[4], filler[4] = { 0 };
	uint32_t fseed[4] = { 0 }, c;
	uint64_t fsize[4] = { 0 };
	int i, next = 0;

	begin(&b, img, 2u << 20, 4, 128, -1);   /* the old layout: a chunk full of inodes */
	for (i = 0; i < 4; i++)
		dir[i] = mkdir_p(&b, dirs[i]);
	/* inodes: round-robin until every directory is refused */
	fill_files(&b, dir, dirs, filler, fseed, fsize, &next);
	/* blocks: each chunk's first file grows until its chunk is full (it
	 * cannot continue elsewhere: no chunk has an inode left) */
	for (c = 0; c < 4; c++) {
		ssize_t w;

		if (!filler[c])
			die("no file was made in chunk %u", c);
		for (;;) {
			/* the pattern is defined over the whole file */
			for (i = 0; i < BS; i++)
				data[i] = (uint8_t)((((size_t)i + fsize[c] + fseed[c] * 7919u) *
						     2654435761u) >> 13);
			w = cfs_write(b.fs, filler[c], data, BS, fsize[c]);
			if (w == -ENOSPC)
				break;
			if (w <= 0)
				die("filling chunk %u: %s", c, strerror((int)-w));
			fsize[c] += (uint64_t)w;
		}
	}
	/* the inodes the placement policy (alloc.c) kept as the way in to
	 * blocks that are gone now */
	fill_files(&b, dir, dirs, filler, fseed, fsize, &next);
	for (c = 0; c < 4; c++) {
		struct cfs_chunk_info ci;

		OK(cfs_get_chunk_info(b.fs, c, &ci));
		if (ci.free_inodes > CFS_REPAIR_INODES || ci.free_blocks > CFS_REPAIR_BLOCKS)
			die("chunk %u is not full: %u inodes and %u blocks free", c,
			    (unsigned)ci.free_inodes, (unsigned)ci.free_blocks);
	}
	fflush(b.mf);
	end(&b);
	/* the fillers' final sizes: rewrite their manifest lines */
	{
		char mf[4096], line[512], tmp[4200];
		FILE *in, *out;

		snprintf(mf, sizeof(mf), "%s.manifest", img);
		snprintf(tmp, sizeof(tmp), "%s.tmp", mf);
		in = fopen(mf, "r");
		out = fopen(tmp, "w");
		if (!in || !out)
			die("%s: %s", mf, strerror(errno));
		while (fgets(line, sizeof(line), in)) {
			unsigned long no = strtoul(line, NULL, 10);

			for (c = 0; c < 4; c++)
				if (no == filler[c])
					break;
			if (c < 4) {
				char *p = strchr(line, ' '), *q;

				/* "INO reg SEED SIZE PATH" */
				p = strchr(p + 1, ' ');
				p = strchr(p + 1, ' ');
				q = strchr(p + 1, ' ');
				fprintf(out, "%u reg %u %llu%s", filler[c], fseed[c],
					(unsigned long long)fsize[c], q);
			} else {
				fputs(line, out);
			}
		}
		fclose(in);
		if (fclose(out) != 0 || rename(tmp, mf) < 0)
			die("%s: %s", mf, strerror(errno));
	}
}

/* 2 chunks whose inode tables hold 16 inodes: /many's chunk makes two
 * inode clusters (FORMAT.md 10.4) for its 100 files; /many/big, made
 * first, has its inode in the table and 20 blocks of data. */
static void buildcl(const char *img)
{
	struct builder b;
	char name[64];
	int i;

	begin(&b, img, 2u << 20, 2, 32, 1);
	mkdir_p(&b, "/many");
	mkfile(&b, "/many/big", 20 * BS);
	mkdir_p(&b, "/other");
	mkfile(&b, "/other/f", 3000);
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "/many/f%03d", i);
		mkfile(&b, name, (size_t)(i % 7) * 90);
	}
	/* a name in the root's chunk (the placement puts /other with /many):
	 * a cross-chunk entry and its stub beside a cluster inode */
	mklink(&b, "/many/f050", "/link-f050");
	OK(cfs_sync(b.fs));   /* gives back the clusters made ahead, empty */
	{
		struct cfs_chunk_info ci;

		OK(cfs_get_chunk_info(b.fs, CFS_INO_CHUNK(resolve(b.fs, "/many")), &ci));
		if (ci.clusters != 2)
			die("/many's chunk has %llu inode clusters, not 2",
			    (unsigned long long)ci.clusters);
	}
	end(&b);
}

/* ---- raw access to a closed image --------------------------------------- */

struct img {
	struct damage_img d;    /* the bytes and their geometry */
	const char *path;
};

static void img_load(struct img *m, const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	uint8_t *p;
	size_t size, off;

	if (fd < 0 || fstat(fd, &st) < 0)
		die("%s: %s", path, strerror(errno));
	m->path = path;
	size = (size_t)st.st_size;
	p = malloc(size);
	if (!p || read(fd, p, size) != (ssize_t)size)
		die("%s: cannot read", path);
	close(fd);
	if (damage_img_init(&m->d, p, size) == 0)
		return;
	/* the backup (the last block of the filesystem) describes the same
	 * geometry and survives a zeroed primary */
	for (off = size / BS * BS; off >= BS; off -= BS)
		if (damage_img_init(&m->d, p + off - BS, size) == 0 &&
		    m->d.sb.backup_sb_block * BS == off - BS)
			break;
	if (off < BS)
		die("%s: no superblock, no backup", path);
	m->d.p = p;
}

/* Write the image back and release it. */
static void img_save(struct img *m)
{
	int fd = open(m->path, O_WRONLY);

	if (fd < 0 || pwrite(fd, m->d.p, m->d.size, 0) != (ssize_t)m->d.size || fsync(fd) < 0)
		die("%s: cannot write", m->path);
	close(fd);
	free(m->d.p);
	m->d.p = NULL;
}

static uint8_t *blk(struct img *m, uint64_t b)
{
	if ((b + 1) * BS > m->d.size)
		die("block %llu outside the image", (unsigned long long)b);
	return damage_blk(&m->d, b);
}

static uint8_t *iraw(struct img *m, cfs_ino_t ino)
{
	uint32_t l = CFS_INO_LOCAL(ino) - 1;

	blk(m, damage_itable(&m->d, CFS_INO_CHUNK(ino), l / m->d.ipb));
	return damage_inode(&m->d, ino);
}

static void iget(struct img *m, cfs_ino_t ino, struct cfs_dinode *d)
{
	cfs_dinode_decode(iraw(m, ino), d);
}

/* Write the fixed fields back and reseal: a damage that passes checksums. */
static void iput(struct img *m, cfs_ino_t ino, const struct cfs_dinode *d)
{
	uint8_t *raw = iraw(m, ino);

	cfs_dinode_encode(d, raw);
	cfs_dinode_csum_set(raw, m->d.sb.inode_size, m->d.seed, ino);
}

/* Reseal inode ino after a change of its raw bytes. */
static void ireseal(struct img *m, cfs_ino_t ino)
{
	cfs_dinode_csum_set(iraw(m, ino), m->d.sb.inode_size, m->d.seed, ino);
}

static void reseal(struct img *m, uint64_t b)
{
	blk(m, b);
	damage_reseal(&m->d, b);
}

static void hdr_get(struct img *m, uint32_t c, struct cfs_chunk_hdr *h)
{
	cfs_chunk_hdr_decode(blk(m, damage_cbase(&m->d, c)), h);
}

static void hdr_put(struct img *m, uint32_t c, const struct cfs_chunk_hdr *h)
{
	cfs_chunk_hdr_encode(h, blk(m, damage_cbase(&m->d, c)));
	reseal(m, damage_cbase(&m->d, c));
}

/* The extent root of an inode (a B+tree node header). */
static uint8_t *ext_root(struct img *m, cfs_ino_t ino)
{
	return iraw(m, ino) + CFS_OFF_IN_VAR;
}

/* First extent of an inode whose extent root is a leaf. */
static void first_extent(struct img *m, cfs_ino_t ino, uint8_t **rec)
{
	uint8_t *root = ext_root(m, ino);

	if (cfs_btn_level(root) != 0 || cfs_btn_nrec(root) == 0)
		die("inode %u: extent root is not a non-empty leaf", ino);
	*rec = root + CFS_BTN_SIZE;
}

/* Chunk-relative block of an inode's first extent. */
static uint32_t first_pblk(struct img *m, cfs_ino_t ino, uint64_t *lblk)
{
	uint32_t pblk, len;
	uint8_t *rec;

	first_extent(m, ino, &rec);
	cfs_extent_decode(rec, lblk, &pblk, &len);
	return pblk;
}

/* Make ino's first extent start at block pblk (resealed). */
static void set_first_pblk(struct img *m, cfs_ino_t ino, uint32_t pblk)
{
	uint32_t old, len;
	uint64_t lblk;
	uint8_t *rec;

	first_extent(m, ino, &rec);
	cfs_extent_decode(rec, &lblk, &old, &len);
	cfs_extent_encode(rec, lblk, pblk, len);
	ireseal(m, ino);
}

/* Absolute block of logical block 0 of a directory (its root node). */
static uint64_t dir_root_block(struct img *m, cfs_ino_t dir)
{
	uint64_t lblk;
	uint32_t pblk = first_pblk(m, dir, &lblk);

	if (lblk != 0)
		die("dir %u: first extent does not start at 0", dir);
	return damage_cbase(&m->d, CFS_INO_CHUNK(dir)) + pblk;
}

/* Absolute block of the node block an inode's extent root (an index)
 * points at first. */
static uint64_t first_ext_node(struct img *m, cfs_ino_t ino, const char *what)
{
	uint8_t *root = ext_root(m, ino);

	if (cfs_btn_level(root) == 0)
		die("%s has no extent node", what);
	return damage_cbase(&m->d, CFS_INO_CHUNK(ino)) + cfs_btidx_child(root + CFS_BTN_SIZE);
}

/* Chunks an interrupted operation had already marked dirty although the
 * damage changed none of their blocks (the dirty protocol marks a chunk
 * when its first buffer is dirtied, before anything is written). */
static uint8_t also_dirty[CFS_MAX_CHUNKS];

/* ---- opening through the library, for logical damage -------------------- */

static struct cfs_fs *lib_open(const char *img)
{
	struct cfs_fs *fs;

	OK(cfs_open(img, CFS_OPEN_NOCHECK, &fs));
	return fs;
}

static cfs_ino_t lookup_ro(const char *img, const char *path)
{
	struct cfs_fs *fs;
	cfs_ino_t ino;

	OK(cfs_open(img, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs));
	ino = resolve(fs, path);
	cfs_close(fs);
	return ino;
}

/* Remove a directory entry and nothing else (keeps the stub, the inode and
 * its link count): the first step of an unlink.  write_dir: the directory
 * inode with its new entry counts was written too (unlink writes it last,
 * after freeing the stub; a crash before that leaves the old counts). */
static void remove_entry_only(struct cfs_fs *fs, const char *dirpath, const char *name,
			      int write_dir)
{
	struct inode *dp;

	OK(inode_get(fs, resolve(fs, dirpath), &dp));
	OK(dir_remove(fs, dp, name));
	if (write_dir)
		OK(inode_write(fs, dp));
	inode_put(fs, dp);
}

/* Free an inode the way the last unlink would (blocks, xattrs, continuations,
 * bitmap), without touching any entry naming it: the second half. */
static void free_inode_only(struct cfs_fs *fs, cfs_ino_t ino)
{
	struct inode *ip;

	OK(inode_get(fs, ino, &ip));
	if (ip->d.flags & CFS_IFL_STUB) {
		OK(inode_free(fs, ip));
		chunk_count(fs, CFS_INO_CHUNK(ino), CNT_STUBS, -1);
	} else {
		OK(file_release_all(fs, ip));
		OK(xattr_release(fs, ip));
		OK(inode_free(fs, ip));
	}
	inode_put(fs, ip);
}

/* ---- the damages --------------------------------------------------------- */

struct damage {
	const char *name;
	const char *what;
	void (*fn)(const char *img);
};

/* Change the fixed fields of inode ino of img through edit(d, v) and
 * reseal it: a damage that passes checksums. */
static void edit_inode(const char *img, cfs_ino_t ino,
		       void (*edit)(struct cfs_dinode *d, uint64_t v), uint64_t v)
{
	struct cfs_dinode d;
	struct img m;

	img_load(&m, img);
	iget(&m, ino, &d);
	edit(&d, v);
	iput(&m, ino, &d);
	img_save(&m);
}

static void set_nlink(struct cfs_dinode *d, uint64_t v)
{
	d->nlink = (uint32_t)v;
}

static void set_back(struct cfs_dinode *d, uint64_t v)
{
	d->back = (uint32_t)v;
}

static void set_head(struct cfs_dinode *d, uint64_t v)
{
	d->head = (uint32_t)v;
}

static void set_xattr_len(struct cfs_dinode *d, uint64_t v)
{
	d->xattr_len = (uint16_t)v;
}

static void set_cont0(struct cfs_dinode *d, uint64_t v)
{
	d->cont[0] = (uint32_t)v;
}

/* the STUB flag on an inode that owns blocks */
static void set_stub(struct cfs_dinode *d, uint64_t v)
{
	(void)v;
	if (!d->nblocks)
		die("the inode to flag a stub owns no block");
	d->flags |= CFS_IFL_STUB;
}

/* entry count lo (v = 0: one more, and one more with a stub) */
static void set_entries(struct cfs_dinode *d, uint64_t v)
{
	if (v) {
		d->lo = v;
	} else {
		d->hi += 1;
		d->lo += 1;
	}
}

/* one byte of /d1/multi's inode (its mtime) changed, checksum not updated */
static void d_inode_csum(const char *img)
{
	cfs_ino_t ino = lookup_ro(img, "/d1/multi");
	struct img m;

	img_load(&m, img);
	iraw(&m, ino)[CFS_OFF_IN_MTIME + 1] ^= 0x40;
	img_save(&m);
}

/* Inode ino overwritten with garbage (no valid checksum). */
static void garbage_inode(const char *img, cfs_ino_t ino)
{
	struct img m;
	uint8_t *raw;
	uint32_t i;

	img_load(&m, img);
	raw = iraw(&m, ino);
	for (i = 0; i < m.d.sb.inode_size; i++)
		raw[i] = (uint8_t)(i * 37 + 11);
	img_save(&m);
}

/* /d1/sub/f3's inode overwritten with garbage (no valid checksum) */
static void d_inode_garbage(const char *img)
{
	garbage_inode(img, lookup_ro(img, "/d1/sub/f3"));
}

/* The first record's inode number in a directory's root node: a byte of
 * it flipped. */
static void flip_first_entry(struct img *m, cfs_ino_t dir)
{
	cfs_node_recs(blk(m, dir_root_block(m, dir)))[CFS_OFF_DE_INO] ^= 0x01;
}

/* a byte in the records of /d1/sub's only directory node flipped */
static void d_dirnode_csum(const char *img)
{
	cfs_ino_t dir = lookup_ro(img, "/d1/sub");
	struct img m;

	img_load(&m, img);
	flip_first_entry(&m, dir);
	img_save(&m);
}

/* The first extent of the file at to made to point at the first block of
 * the file at from (resealed). */
static void share_first_block(const char *img, const char *from, const char *to)
{
	cfs_ino_t a = lookup_ro(img, from), b = lookup_ro(img, to);
	struct img m;
	uint64_t l;

	img_load(&m, img);
	set_first_pblk(&m, b, first_pblk(&m, a, &l));
	img_save(&m);
}

/* /d1/multi2's first extent made to point at /d1/multi's first block */
static void d_dup_block(const char *img)
{
	share_first_block(img, "/d1/multi", "/d1/multi2");
}

/* the other way round: /d1/multi's first extent (an inode checked before
 * /d1/multi2) made to point at /d1/multi2's first block */
static void d_dup_block_first(const char *img)
{
	share_first_block(img, "/d1/multi2", "/d1/multi");
}

/* /d1/multi (two names) says nlink 7 */
static void d_link_count(const char *img)
{
	edit_inode(img, lookup_ro(img, "/d1/multi"), set_nlink, 7);
}

/* the same, on a chunk that stays marked clean */
static void d_clean_link_count(const char *img)
{
	d_link_count(img);
}

/* /d1/sub/f3's entry removed, the inode kept (nlink 1, no name) */
static void d_orphan_inode(const char *img)
{
	struct cfs_fs *fs = lib_open(img);

	remove_entry_only(fs, "/d1/sub", "f3", 1);
	OK(cfs_close(fs));
}

/* /d1/sub/f2's inode freed (blocks and all), its entry kept */
static void d_entry_freed_inode(const char *img)
{
	struct cfs_fs *fs = lib_open(img);

	free_inode_only(fs, resolve(fs, "/d1/sub/f2"));
	OK(cfs_close(fs));
}

/* The first continuation of the file at path. */
static cfs_ino_t first_cont(const char *img, const char *path)
{
	cfs_ino_t head = lookup_ro(img, path);
	struct cfs_dinode d;
	struct img m;

	img_load(&m, img);
	iget(&m, head, &d);
	free(m.d.p);
	if (!d.cont[0])
		die("%s has no continuation", path);
	return d.cont[0];
}
/* /d3/big's head loses its forward pointer to its first continuation.
 * Every operation that changes a chain changes the continuation's chunk
 * too, so a crash leaves both chunks dirty.  (With the continuation's
 * chunk clean, a dirty-only check cannot see it: nothing in the head's
 * chunk names it any more.) */
static void d_cont_broken(const char *img)
{
	also_dirty[CFS_INO_CHUNK(first_cont(img, "/d3/big"))] = 1;
	edit_inode(img, lookup_ro(img, "/d3/big"), set_cont0, 0);
}

/* /d3/big's first continuation: back pointer names another inode */
static void d_cont_wrong_back(const char *img)
{
	edit_inode(img, first_cont(img, "/d3/big"), set_back, lookup_ro(img, "/d1/multi"));
}

/* /d3/big's first continuation: head names another file */
static void d_cont_wrong_head(const char *img)
{
	edit_inode(img, first_cont(img, "/d3/big"), set_head, lookup_ro(img, "/d1/multi"));
}

/* Stub of an entry: the one backing dir/name. */
static cfs_ino_t stub_of(struct cfs_fs *fs, const char *dirpath, const char *name)
{
	struct dirent_rec r;
	struct inode *dp;

	OK(inode_get(fs, resolve(fs, dirpath), &dp));
	OK(dir_lookup(fs, dp, name, &r));
	inode_put(fs, dp);
	if (!r.stub)
		die("%s/%s has no stub", dirpath, name);
	return r.stub;
}

/* /xlink (root, chunk 0) names /d2/g in another chunk: its stub freed.
 * unlink removes the entry first, so chunk 0 was dirty already. */
static void d_dangling_xentry(const char *img)
{
	struct cfs_fs *fs = lib_open(img);

	free_inode_only(fs, stub_of(fs, "/", "xlink"));
	OK(cfs_close(fs));
	also_dirty[0] = 1;
}

/* /d1/link-f removed from /d1, its stub in /d2/f's chunk left behind: an
 * unlink cut after the entry's block reached the disk, before the stub was
 * freed.  The stub's chunk was marked dirty before the entry changed
 * (xref_hold), so the crash left it dirty too and the check of the dirty
 * chunks finds the stub; /d1's entry counts still include the entry. */
static void d_orphan_stub(const char *img)
{
	struct cfs_fs *fs = lib_open(img);

	also_dirty[CFS_INO_CHUNK(stub_of(fs, "/d1", "link-f"))] = 1;
	remove_entry_only(fs, "/d1", "link-f", 0);
	OK(cfs_close(fs));
}

static uint32_t chunk_of_path(const char *img, const char *path)
{
	return CFS_INO_CHUNK(lookup_ro(img, path));
}

/* the chunk header of /d1's chunk zeroed */
static void d_zero_chunk_header(const char *img)
{
	uint32_t c = chunk_of_path(img, "/d1");
	struct img m;

	img_load(&m, img);
	memset(blk(&m, damage_cbase(&m.d, c)), 0, BS);
	img_save(&m);
}

/* the primary superblock zeroed */
static void d_zero_superblock(const char *img)
{
	struct img m;

	img_load(&m, img);
	memset(blk(&m, 0), 0, BS);
	img_save(&m);
}

/* /d1's chunk: three free blocks marked in use, /d1/multi's first block
 * marked free */
static void d_block_bitmap(const char *img)
{
	cfs_ino_t multi = lookup_ro(img, "/d1/multi");
	uint32_t c = CFS_INO_CHUNK(multi), i;
	struct cfs_chunk_hdr h;
	struct img m;
	uint64_t l;
	uint8_t *bm;

	img_load(&m, img);
	hdr_get(&m, c, &h);
	if (h.bbm_init < 1)
		die("block bitmap of chunk %u not initialised", c);
	bm = blk(&m, damage_cbase(&m.d, c) + 1);
	cfs_bitmap_set(bm, first_pblk(&m, multi, &l), 0);
	for (i = 1000; i < 1003; i++)
		cfs_bitmap_set(bm, i, 1);
	reseal(&m, damage_cbase(&m.d, c) + 1);
	img_save(&m);
}

/* /d1's chunk: a free inode marked in use, /d1/multi2 marked free */
static void d_inode_bitmap(const char *img)
{
	cfs_ino_t ino = lookup_ro(img, "/d1/multi2");
	uint32_t c = CFS_INO_CHUNK(ino), l = CFS_INO_LOCAL(ino) - 1, freel = 100;
	struct cfs_chunk_hdr h;
	struct img m;
	uint8_t *bm;

	img_load(&m, img);
	hdr_get(&m, c, &h);
	if (h.ibm_init < 1)
		die("inode bitmap of chunk %u not initialised", c);
	bm = blk(&m, damage_cbase(&m.d, c) + 1 + m.d.sb.bbm_blocks);
	cfs_bitmap_set(bm, l, 0);
	cfs_bitmap_set(bm, freel, 1);
	reseal(&m, damage_cbase(&m.d, c) + 1 + m.d.sb.bbm_blocks);
	img_save(&m);
}

/* Change chunk c's header through edit (resealed). */
static void edit_header(const char *img, uint32_t c, void (*edit)(struct cfs_chunk_hdr *h))
{
	struct cfs_chunk_hdr h;
	struct img m;

	img_load(&m, img);
	hdr_get(&m, c, &h);
	edit(&h);
	hdr_put(&m, c, &h);
	img_save(&m);
}

static void wrong_free_counts(struct cfs_chunk_hdr *h)
{
	h->free_blocks += 5;
	h->free_inodes -= 2;
}

static void wrong_counters(struct cfs_chunk_hdr *h)
{
	h->nconts += 1;
	h->nstubs += 2;
	h->ndirs += 3;
}

/* /d1's chunk header: free block and free inode counts off by a few */
static void d_free_counts(const char *img)
{
	edit_header(img, chunk_of_path(img, "/d1"), wrong_free_counts);
}

/* /d1's chunk header: continuation, stub and directory counts wrong */
static void d_header_counts(const char *img)
{
	edit_header(img, chunk_of_path(img, "/d1"), wrong_counters);
}

/* /d1/sub says it has 5 entries (it has 3) */
static void d_dir_count(const char *img)
{
	edit_inode(img, lookup_ro(img, "/d1/sub"), set_entries, 5);
}

/* /d2 says one more of its entries names another chunk than do: a crash
 * lost an entry made or removed since a chunk was last marked clean, whose
 * stub is in a chunk dirty too, so the dirty chunks alone are checked */
static void d_dir_remote_count(const char *img)
{
	edit_inode(img, lookup_ro(img, "/d2"), set_entries, 0);
}

/* The entries of /d1/small's (inode ino) xattr overflow block, which
 * start with user.big (e); its absolute block in *b. */
static uint8_t *small_user_big(struct img *m, cfs_ino_t ino, uint64_t *b,
			       struct cfs_xattr_ent *e)
{
	struct cfs_dinode d;
	uint8_t *p;

	iget(m, ino, &d);
	if (!d.xattr_block)
		die("/d1/small has no xattr block");
	*b = damage_cbase(&m->d, CFS_INO_CHUNK(ino)) + d.xattr_block;
	p = cfs_xattr_blk_data(blk(m, *b));
	if (cfs_xattr_ent_decode(p, cfs_xattr_blk_cap(BS), e) < 0 || e->ns != 1 ||
	    e->nlen != 3 || memcmp(e->name, "big", 3))
		die("/d1/small's xattr block does not start with user.big");
	return p;
}

/* the xattr overflow block of /d1/small: a byte flipped */
static void d_xattr_block(const char *img)
{
	struct cfs_xattr_ent e;
	struct img m;
	uint8_t *p;
	uint64_t b;

	img_load(&m, img);
	p = small_user_big(&m, lookup_ro(img, "/d1/small"), &b, &e);
	if (e.vlen < 62)
		die("/d1/small's user.big is too short");
	p[e.value - p + 61] ^= 0x20;            /* a byte of its value */
	img_save(&m);
}

/* the extent tree node of /d1/frag: a byte flipped */
static void d_extent_node(const char *img)
{
	cfs_ino_t ino = lookup_ro(img, "/d1/frag");
	struct img m;

	img_load(&m, img);
	/* the length of its second extent */
	cfs_node_recs(blk(&m, first_ext_node(&m, ino, "/d1/frag")))[CFS_EXT_SIZE + CFS_OFF_EXT_LEN] ^=
		0x04;
	img_save(&m);
}

/* The extent root of directory path emptied (a valid empty tree,
 * resealed): all its entries are lost. */
static void empty_ext_root(const char *img, const char *path)
{
	cfs_ino_t ino = lookup_ro(img, path);
	struct img m;

	img_load(&m, img);
	memset(ext_root(&m, ino), 0, CFS_EXT_ROOT_SIZE);
	ireseal(&m, ino);
	img_save(&m);
}

/* /d2/tree's extent root emptied: its 64 entries are lost, more orphans
 * than chunk 2 has free inodes (48) for a stub each under /lost+found */
static void d_orphans_full_chunk(const char *img)
{
	empty_ext_root(img, "/d2/tree");
}

/* 64 chunks: /t5/a's link count wrong in its (dirty) chunk */
static void d_c64_link_count(const char *img)
{
	edit_inode(img, lookup_ro(img, "/t5/a"), set_nlink, 3);
}

/* 64 chunks: /t2/link-a removed, leaving its stub in /t1/a's chunk, which
 * an unlink marks dirty first (as orphan-stub); the directory's remote
 * count says an entry was lost: 2 chunks of 64 checked */
static void d_c64_orphan_stub(const char *img)
{
	struct cfs_fs *fs = lib_open(img);

	also_dirty[CFS_INO_CHUNK(stub_of(fs, "/t2", "link-a"))] = 1;
	remove_entry_only(fs, "/t2", "link-a", 0);
	OK(cfs_close(fs));
}

/* the root directory's only node zeroed: every top-level name is lost */
static void d_root_dirnode(const char *img)
{
	struct img m;

	img_load(&m, img);
	memset(blk(&m, dir_root_block(&m, CFS_ROOT_INO)), 0, BS);
	img_save(&m);
}

/* Every chunk full (mkcase buildfull): /b's extent root emptied (resealed),
 * so its entries are lost: 16 orphans in its own chunk, which has only the
 * repair reserve left, and a few in other chunks */
static void d_full_orphans(const char *img)
{
	empty_ext_root(img, "/b");
}

/* Every chunk full: the root's only node zeroed, so /a../d, in four
 * chunks, are orphans whose stubs in the root were lost */
static void d_full_root_dirnode(const char *img)
{
	d_root_dirnode(img);
}

/* lost+found's inode (2) overwritten with garbage */
static void d_lpf_garbage(const char *img)
{
	garbage_inode(img, 2);
}

/* the root inode (1) overwritten with garbage */
static void d_root_garbage(const char *img)
{
	garbage_inode(img, CFS_ROOT_INO);
}

/* /d1/sub claims 2^40 bytes and its node fails its checksum, so fsck
 * salvages it logical block by logical block */
static void d_dir_huge_size(const char *img)
{
	cfs_ino_t dir = lookup_ro(img, "/d1/sub");
	struct cfs_dinode d;
	struct img m;

	img_load(&m, img);
	flip_first_entry(&m, dir);
	iget(&m, dir, &d);
	d.size = 1ull << 40;
	iput(&m, dir, &d);
	img_save(&m);
}

/* /d2/many/n03 (3 data blocks) gets the STUB flag */
static void d_stub_with_blocks(const char *img)
{
	edit_inode(img, lookup_ro(img, "/d2/many/n03"), set_stub, 0);
}

/* /d1/frag's extent node says it holds no record (resealed) */
static void d_extent_node_empty(const char *img)
{
	cfs_ino_t ino = lookup_ro(img, "/d1/frag");
	struct img m;
	uint8_t *h;
	uint64_t b;

	img_load(&m, img);
	b = first_ext_node(&m, ino, "/d1/frag");
	h = cfs_node_hdr(blk(&m, b));
	cfs_btn_set(h, cfs_btn_level(h), 0, 0);
	reseal(&m, b);
	img_save(&m);
}

/* /d1/small's overflow block: the name length of user.big one longer and
 * the value length one shorter, so the entry keeps its size and the name
 * takes the value's first byte, made a NUL (resealed) */
static void d_xattr_name_nul(const char *img)
{
	struct cfs_xattr_ent e;
	uint8_t *p, old[BS];
	struct img m;
	uint64_t b;

	img_load(&m, img);
	p = small_user_big(&m, lookup_ro(img, "/d1/small"), &b, &e);
	memcpy(old, p, cfs_xattr_blk_cap(BS));
	cfs_xattr_ent_decode(old, cfs_xattr_blk_cap(BS), &e);
	old[e.value - old] = 0;                 /* the value's first byte */
	e.nlen = 4;
	e.vlen--;
	e.value++;
	cfs_xattr_ent_encode(&e, p);
	reseal(&m, b);
	img_save(&m);
}

/* the first free inode slot of /d1's chunk (the next one allocated
 * there): mode 0 like a free inode, but xattr_len 0xFFFF, resealed */
static void d_free_slot_garbage(const char *img)
{
	uint32_t c0 = chunk_of_path(img, "/d1"), c = c0, k, l = 0;
	struct cfs_chunk_hdr h;
	struct cfs_dinode d;
	struct img m;
	uint8_t *bm;

	img_load(&m, img);
	/* /d1's chunk, else the first after it with such a slot: where
	 * files land depends on the allocation policy */
	for (k = 0; k < m.d.sb.nchunks; k++) {
		c = (c0 + k) % m.d.sb.nchunks;
		hdr_get(&m, c, &h);
		bm = blk(&m, damage_cbase(&m.d, c) + 1 + m.d.sb.bbm_blocks);
		for (l = 0; l < m.d.sb.inodes_per_chunk && cfs_bitmap_get(bm, l); l++)
			;
		if ((l / m.d.ipb) < h.itable_init)
			break;
	}
	if (k == m.d.sb.nchunks)
		die("no free slot below an inode table watermark in any chunk");
	memset(&d, 0, sizeof(d));
	d.generation = 7;
	d.xattr_len = 0xFFFF;
	iput(&m, CFS_INO_MAKE(c, l + 1), &d);
	img_save(&m);
}

/* /d1/multi (extents) says 100 bytes of in-inode xattrs: more than the
 * variable area leaves beside the extent root, so they overlap it */
static void d_xattr_len_overlap(const char *img)
{
	edit_inode(img, lookup_ro(img, "/d1/multi"), set_xattr_len, 100);
}

/* /d2/f's extent root (a leaf of its extents) made an index with no
 * records, resealed: what fsck_random met as the level of an empty root
 * changed.  A walk found no child, claimed nothing and called the map
 * sound, while every lookup refused it: the file stayed unreadable. */
static void d_extent_root_empty(const char *img)
{
	cfs_ino_t ino = lookup_ro(img, "/d2/f");
	struct img m;
	uint8_t *root;

	img_load(&m, img);
	root = ext_root(&m, ino);
	if (cfs_btn_level(root) != 0 || cfs_btn_nrec(root) == 0)
		die("/d2/f's extent root is not a leaf with records");
	cfs_btn_set(root, 1, 0, 0);
	ireseal(&m, ino);
	img_save(&m);
}

/* /d1/frag's extent node, loaded into m: a leaf of 2 records or more, at
 * block *b */
static uint8_t *frag_leaf(struct img *m, const char *img, uint64_t *b)
{
	cfs_ino_t ino = lookup_ro(img, "/d1/frag");
	uint8_t *node;

	img_load(m, img);
	*b = first_ext_node(m, ino, "/d1/frag");
	node = blk(m, *b);
	if (cfs_btn_level(cfs_node_hdr(node)) != 0 || cfs_btn_nrec(cfs_node_hdr(node)) < 2)
		die("/d1/frag's node is not a leaf of 2 records or more");
	return node;
}

/* /d1/frag's first two extent records, decoded, to be changed and put
 * back (frag_two_put: resealed and saved) */
struct frag_two {
	struct img m;
	uint64_t b, lblk[2];
	uint32_t pblk[2], len[2];
	uint8_t *rec;
};

static void frag_two_get(struct frag_two *f, const char *img)
{
	int i;

	f->rec = cfs_node_recs(frag_leaf(&f->m, img, &f->b));
	for (i = 0; i < 2; i++)
		cfs_extent_decode(f->rec + i * CFS_EXT_SIZE, &f->lblk[i], &f->pblk[i], &f->len[i]);
}

static void frag_two_put(struct frag_two *f)
{
	int i;

	for (i = 0; i < 2; i++)
		cfs_extent_encode(f->rec + i * CFS_EXT_SIZE, f->lblk[i], f->pblk[i], f->len[i]);
	reseal(&f->m, f->b);
	img_save(&f->m);
}

/* /d1/frag's extent node: the second record maps the first one's block too */
static void d_extent_self_overlap(const char *img)
{
	struct frag_two f;

	frag_two_get(&f, img);
	f.pblk[1] = f.pblk[0];
	frag_two_put(&f);
}

/* /d1/frag's extent node: the last record moved past the end of any file
 * (logical block 2^63 / BS, resealed); the others stay sound */
static void d_extent_impossible(const char *img)
{
	uint32_t pblk, len;
	uint64_t b, lblk;
	struct img m;
	uint8_t *node = frag_leaf(&m, img, &b);
	uint8_t *last = cfs_node_recs(node) +
			(size_t)(cfs_btn_nrec(cfs_node_hdr(node)) - 1) * CFS_EXT_SIZE;

	cfs_extent_decode(last, &lblk, &pblk, &len);
	cfs_extent_encode(last, (uint64_t)INT64_MAX / BS + 1, pblk, len);
	reseal(&m, b);
	img_save(&m);
}

/* /d1/frag's extent node: the first record points before the chunk's data
 * area, and the second took the first one's key (resealed): the repair
 * must remove the impossible record, not the other one under that key */
static void d_extent_impossible_dup(const char *img)
{
	struct frag_two f;

	frag_two_get(&f, img);
	f.pblk[0] = 1;
	f.lblk[1] = f.lblk[0];
	frag_two_put(&f);
}

/* /d1/frag's extent node: the second record took the first one's key,
 * its blocks its own (resealed): two records on one logical block, the
 * later out of key order */
static void d_extent_key_dup(const char *img)
{
	struct frag_two f;

	frag_two_get(&f, img);
	f.lblk[1] = f.lblk[0];
	frag_two_put(&f);
}

/* The entry NAME in directory DIR's root node (a leaf) made to say TYPE,
 * the node resealed. */
static void retype_entry(struct img *m, cfs_ino_t dir, const char *name, uint8_t type)
{
	uint8_t *node, *recs;
	struct cfs_dirent e;
	uint32_t used, off;
	size_t len, nlen = strlen(name);

	node = blk(m, dir_root_block(m, dir));
	if (cfs_btn_level(cfs_node_hdr(node)) != 0)
		die("directory %u's root node is not a leaf", dir);
	used = cfs_btn_used(cfs_node_hdr(node));
	recs = cfs_node_recs(node);
	for (off = 0; (len = cfs_dirent_len(recs + off, used - off)) != 0; off += (uint32_t)len) {
		cfs_dirent_decode(recs + off, &e);
		if (e.namelen == nlen && !memcmp(e.name, name, nlen))
			break;
	}
	if (!len)
		die("no entry %s in directory %u's node", name, dir);
	cfs_dirent_retarget(recs + off, e.ino, e.stub, type);
	reseal(m, dir_root_block(m, dir));
}

/* retype_entry on image img, the directory by its path */
static void retype_entry_at(const char *img, const char *dir, const char *name, uint8_t type)
{
	cfs_ino_t d_ino = lookup_ro(img, dir);
	struct img m;

	img_load(&m, img);
	retype_entry(&m, d_ino, name, type);
	img_save(&m);
}

/* /d2's entry link-multi (naming /d1/multi in chunk 1, through a stub in
 * chunk 1, which fsck's workers take before chunk 2): its type byte says
 * directory (resealed) */
static void d_xentry_wrong_type(const char *img)
{
	retype_entry_at(img, "/d2", "link-multi", DT_DIR);
}

/* /d1/sub's entry f2 (a regular file of its own chunk): its type byte
 * says symlink (resealed); the inode is sound */
static void d_entry_wrong_type(const char *img)
{
	retype_entry_at(img, "/d1/sub", "f2", DT_LNK);
}

/* The file at path with its type bits made a symlink's, the checksum
 * left wrong. */
static void csum_symlink_bits(const char *img, const char *path)
{
	cfs_ino_t ino = lookup_ro(img, path);
	struct cfs_dinode d;
	struct img m;
	uint8_t *raw;

	img_load(&m, img);
	raw = iraw(&m, ino);
	cfs_dinode_decode(raw, &d);
	d.mode = (uint16_t)(S_IFLNK | (d.mode & 07777));
	cfs_dinode_encode(&d, raw);   /* the checksum is not recomputed */
	img_save(&m);
}

/* /d1/multi2 (9000 bytes in blocks) made a symlink, its checksum wrong:
 * every other field is sound, but no symlink is 9000 bytes long (issue 25
 * item 4: recomputing the checksum made it a symlink in /lost+found whose
 * "target" was the file's data) */
static void d_inode_csum_type(const char *img)
{
	csum_symlink_bits(img, "/d1/multi2");
}

/* /d1/sub/f1 (40 bytes inline) made a symlink, its checksum wrong: a
 * symlink of 40 bytes is possible, but its entry says a file */
static void d_inode_csum_small_type(const char *img)
{
	csum_symlink_bits(img, "/d1/sub/f1");
}

/* File DIR/NAME's inode and entry given type MODE (DT_ the same), both
 * resealed: a type change that passes every checksum. */
static void retype_file(const char *img, const char *dir, const char *name, uint16_t mode)
{
	char path[256];
	cfs_ino_t ino, d_ino = lookup_ro(img, dir);
	struct cfs_dinode d;
	struct img m;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ino = lookup_ro(img, path);
	img_load(&m, img);
	iget(&m, ino, &d);
	d.mode = mode;
	iput(&m, ino, &d);
	retype_entry(&m, d_ino, name, (uint8_t)((mode & S_IFMT) >> 12));
	img_save(&m);
}

/* /d1/multi2 made a symlink, and its entry too: the state the checksum
 * recompute of inode-csum-type left (once moved to /lost+found), which a
 * later check called clean */
static void d_symlink_too_long(const char *img)
{
	retype_file(img, "/d1", "multi2", S_IFLNK | 0777);
}

/* /d2/many/n03 (2100 bytes in blocks) made a fifo, and its entry too: a
 * fifo that owns data */
static void d_fifo_with_data(const char *img)
{
	retype_file(img, "/d2/many", "n03", S_IFIFO | 0644);
}

/* /d2/tree's root node, loaded into m, and its block: an index node of
 * 3 records or more (the build made it so) */
static uint8_t *tree_index(struct img *m, const char *img, uint64_t *b)
{
	cfs_ino_t dir = lookup_ro(img, "/d2/tree");
	uint8_t *node;

	img_load(m, img);
	*b = dir_root_block(m, dir);
	node = blk(m, *b);
	if (cfs_btn_level(cfs_node_hdr(node)) != 1 || cfs_btn_nrec(cfs_node_hdr(node)) < 3)
		die("/d2/tree's root is not an index node of 3 records or more");
	return node;
}

/* /d2/tree's index node: its third child pointer made equal to its second
 * (resealed): one leaf is reached twice, another not at all */
static void d_dir_index_dup_child(const char *img)
{
	struct img m;
	uint64_t b;
	uint8_t *rec = cfs_node_recs(tree_index(&m, img, &b)) + CFS_BTI_SIZE;

	cfs_btidx_set(rec + CFS_BTI_SIZE, cfs_btrec_key(rec + CFS_BTI_SIZE), cfs_btidx_child(rec));
	reseal(&m, b);
	img_save(&m);
}

/* The hash range [*lo, *hi) of the third child of /d2/tree's index node */
static void tree_third_leaf(const char *img, uint64_t *lo, uint64_t *hi)
{
	struct img m;
	uint64_t b;
	uint8_t *node = tree_index(&m, img, &b), *rec = cfs_node_recs(node) + 2 * CFS_BTI_SIZE;

	*lo = cfs_btrec_key(rec);
	*hi = cfs_btn_nrec(cfs_node_hdr(node)) > 3 ? cfs_btrec_key(rec + CFS_BTI_SIZE) :
						     UINT64_MAX;
	free(m.d.p);
}

/* dir-index-dup-child with a hard link /d2/tree/xlink-N to /d1/small (a
 * stub in /d1's chunk, checked before /d2's) in the leaf the damage
 * hides: a lookup by hash misses the entry without an error, while the
 * check of /d2/tree reads the leaves and keeps it.  The stub must be
 * judged by the leaves too, whichever chunk a thread checks first. */
static void d_dir_index_xentry(const char *img)
{
	uint64_t lo, hi, h;
	struct cfs_fs *fs;
	char name[32];
	int i;

	tree_third_leaf(img, &lo, &hi);
	fs = lib_open(img);
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "xlink-%d", i);
		h = dir_hash(fs, name, strlen(name));
		if (h >= lo && h < hi)
			break;
	}
	if (i == 1000)
		die("no name hashes into /d2/tree's third leaf");
	if (CFS_INO_CHUNK(resolve(fs, "/d1/small")) >= CFS_INO_CHUNK(resolve(fs, "/d2/tree")))
		die("/d1/small's chunk is not checked before /d2/tree's");
	OK(cfs_link(fs, resolve(fs, "/d1/small"), resolve(fs, "/d2/tree"), name));
	OK(cfs_close(fs));
	tree_third_leaf(img, &lo, &hi);
	if (h < lo || h >= hi)
		die("%s left /d2/tree's third leaf", name);
	d_dir_index_dup_child(img);
}

/* ---- inode clusters (icl-* cases, the buildcl image) ---- */

/* The absolute block of map block 0 of /many's chunk, and that chunk. */
static uint64_t icmap_block(struct img *m, const char *img, uint32_t *c)
{
	struct cfs_chunk_hdr h;

	*c = chunk_of_path(img, "/many");
	hdr_get(m, *c, &h);
	if (!h.icmap[0])
		die("chunk %u has no inode-cluster map", *c);
	return damage_cbase(&m->d, *c) + h.icmap[0];
}

/* Cluster record j of /many's map block 0 edited through edit, resealed. */
static void edit_icl(const char *img, uint32_t j, void (*edit)(struct img *m, uint32_t c,
								 struct cfs_icl_rec *r))
{
	struct cfs_icl_rec r;
	struct img m;
	uint64_t b;
	uint32_t c;

	img_load(&m, img);
	b = icmap_block(&m, img, &c);
	cfs_icmap_rec_decode(blk(&m, b), j, &r);
	if (!r.start)
		die("no inode cluster %u", j);
	edit(&m, c, &r);
	cfs_icmap_rec_encode(blk(&m, b), j, &r);
	reseal(&m, b);
	img_save(&m);
}

/* /many's map block: one byte of its zero area flipped, not resealed */
static void d_icl_map_csum(const char *img)
{
	struct img m;
	uint32_t c;

	img_load(&m, img);
	blk(&m, icmap_block(&m, img, &c))[CFS_OFF_IM_INDEX + 6] ^= 0x40;
	img_save(&m);
}

/* /many's map block overwritten: no longer a map block */
static void d_icl_map_lost(const char *img)
{
	struct img m;
	uint32_t c;

	img_load(&m, img);
	memset(blk(&m, icmap_block(&m, img, &c)), 0x5A, BS);
	img_save(&m);
}

static void icl_outside(struct img *m, uint32_t c, struct cfs_icl_rec *r)
{
	(void)c;
	r->start = (uint32_t)m->d.sb.chunk_blocks - 4;
}

/* cluster 1 of /many's chunk: its start past the end of the data area */
static void d_icl_outside(const char *img)
{
	edit_icl(img, 1, icl_outside);
}

static const char *on_file_path = "/many/big";

static void icl_on_file(struct img *m, uint32_t c, struct cfs_icl_rec *r)
{
	uint64_t lblk;

	(void)c;
	r->start = first_pblk(m, lookup_ro(m->path, on_file_path), &lblk);
}

/* cluster 0 of /many's chunk points at /many/big's data blocks */
static void d_icl_on_file(const char *img)
{
	edit_icl(img, 0, icl_on_file);
}

/* /many/big's first extent starts at cluster 0's first block */
static void d_icl_extent_into(const char *img)
{
	cfs_ino_t big = lookup_ro(img, on_file_path);
	struct cfs_icl_rec r;
	struct img m;
	uint32_t c;

	img_load(&m, img);
	cfs_icmap_rec_decode(blk(&m, icmap_block(&m, img, &c)), 0, &r);
	set_first_pblk(&m, big, r.start);
	img_save(&m);
}

static void icl_used_wrong(struct img *m, uint32_t c, struct cfs_icl_rec *r)
{
	(void)m;
	(void)c;
	r->used ^= 1ull << 3 | 1ull << 63;   /* an inode in use, a free slot */
}

/* cluster 1's used mask: one inode in use marked free, one free slot used */
static void d_icl_used_mask(const char *img)
{
	edit_icl(img, 1, icl_used_wrong);
}

static const struct damage damages[] = {
	{ "icl-map-csum", "inode-cluster map block checksum mismatch", d_icl_map_csum },
	{ "icl-map-lost", "inode-cluster map block overwritten", d_icl_map_lost },
	{ "icl-outside", "inode cluster outside the chunk", d_icl_outside },
	{ "icl-on-file", "inode cluster record points at a file's data", d_icl_on_file },
	{ "icl-extent-into", "file extent pointing into an inode cluster",
	  d_icl_extent_into },
	{ "icl-used-mask", "inode cluster used mask wrong", d_icl_used_mask },
	{ "inode-csum", "inode checksum mismatch (contents plausible)", d_inode_csum },
	{ "inode-garbage", "inode overwritten with garbage", d_inode_garbage },
	{ "dirnode-csum", "directory node checksum mismatch", d_dirnode_csum },
	{ "dup-block", "block claimed by two inodes", d_dup_block },
	{ "dup-block-first", "block claimed by two inodes, the damaged one checked first",
	  d_dup_block_first },
	{ "link-count", "wrong link count", d_link_count },
	{ "clean-link-count", "wrong link count in a chunk marked clean", d_clean_link_count },
	{ "orphan-inode", "inode in use but named by no entry", d_orphan_inode },
	{ "entry-freed-inode", "directory entry naming a freed inode", d_entry_freed_inode },
	{ "cont-broken", "continuation chain: forward pointer cleared", d_cont_broken },
	{ "cont-wrong-back", "continuation back pointer names the wrong inode",
	  d_cont_wrong_back },
	{ "cont-wrong-head", "continuation head names the wrong file", d_cont_wrong_head },
	{ "dangling-xentry", "cross-chunk entry whose stub was freed", d_dangling_xentry },
	{ "orphan-stub", "stub backing no entry", d_orphan_stub },
	{ "zero-chunk-header", "chunk header zeroed", d_zero_chunk_header },
	{ "zero-superblock", "primary superblock zeroed", d_zero_superblock },
	{ "block-bitmap", "block bitmap disagrees with the inodes", d_block_bitmap },
	{ "inode-bitmap", "inode bitmap disagrees with the inodes", d_inode_bitmap },
	{ "free-counts", "wrong free block and inode counts", d_free_counts },
	{ "header-counts", "wrong continuation/stub/directory counts", d_header_counts },
	{ "dir-count", "wrong directory entry count", d_dir_count },
	{ "dir-remote-count", "directory remote entry count too high", d_dir_remote_count },
	{ "xattr-block", "xattr overflow block checksum mismatch", d_xattr_block },
	{ "extent-node", "extent tree node checksum mismatch", d_extent_node },
	{ "root-dirnode", "root directory node zeroed", d_root_dirnode },
	{ "lpf-garbage", "lost+found inode overwritten", d_lpf_garbage },
	{ "root-garbage", "root inode overwritten", d_root_garbage },
	{ "dir-huge-size", "directory size 2^40 with a damaged node", d_dir_huge_size },
	{ "orphans-full-chunk", "64 orphans in a chunk with 48 free inodes", d_orphans_full_chunk },
	{ "stub-with-blocks", "a file with data blocks flagged as a stub",
	  d_stub_with_blocks },
	{ "extent-node-empty", "extent node with no records (checksum valid)",
	  d_extent_node_empty },
	{ "xattr-name-nul", "xattr name containing a NUL (checksum valid)", d_xattr_name_nul },
	{ "free-slot-garbage", "a free inode slot with garbage fields (checksum valid)",
	  d_free_slot_garbage },
	{ "xattr-len-overlap", "in-inode xattr length overlapping the extent root",
	  d_xattr_len_overlap },
	{ "extent-self-overlap", "two extents of one file on the same block",
	  d_extent_self_overlap },
	{ "extent-root-empty", "extent root made an index with no records (checksum valid)",
	  d_extent_root_empty },
	{ "dir-index-dup-child", "directory index naming one leaf twice (checksum valid)",
	  d_dir_index_dup_child },
	{ "dir-index-xentry", "directory index naming one leaf twice, a cross-chunk entry "
	  "in the leaf it hides (checksum valid)", d_dir_index_xentry },
	{ "extent-impossible", "an extent past the end of any file (checksum valid)",
	  d_extent_impossible },
	{ "extent-impossible-dup", "an extent before the data area, the next one under its "
	  "key (checksum valid)", d_extent_impossible_dup },
	{ "extent-key-dup", "two extents under one key, on blocks of their own (checksum valid)",
	  d_extent_key_dup },
	{ "xentry-wrong-type", "cross-chunk entry with the wrong type (checksum valid)",
	  d_xentry_wrong_type },
	{ "entry-wrong-type", "entry with the wrong type, its inode in its chunk (checksum "
	  "valid)", d_entry_wrong_type },
	{ "inode-csum-type", "inode checksum mismatch: a file's type bits say symlink",
	  d_inode_csum_type },
	{ "inode-csum-small-type", "inode checksum mismatch: a small file's type bits say "
	  "symlink", d_inode_csum_small_type },
	{ "symlink-too-long", "a file's inode and entry made a symlink of 9000 bytes "
	  "(checksums valid)", d_symlink_too_long },
	{ "fifo-with-data", "a file's inode and entry made a fifo that owns blocks "
	  "(checksums valid)", d_fifo_with_data },
	{ "full-orphans", "every chunk full: 16 orphans in a chunk with only its reserve left",
	  d_full_orphans },
	{ "full-root-dirnode", "every chunk full: the root directory node zeroed",
	  d_full_root_dirnode },
	{ "c64-link-count", "64 chunks: wrong link count in one dirty chunk",
	  d_c64_link_count },
	{ "c64-orphan-stub", "64 chunks: lost remote entry, stub in a clean chunk",
	  d_c64_orphan_stub },
};

#define NDAMAGES (sizeof(damages) / sizeof(damages[0]))

/* Mark DIRTY every chunk whose contents changed (header fields other than
 * the state, generation and times included); give the others back their
 * original header.  A chunk whose header is no longer a header is left as
 * it is (fsck finds it destroyed). */
static void mark_dirty_as_a_crash_would(const char *img, const struct img *before, int clean)
{
	struct img m;
	uint32_t c;

	img_load(&m, img);
	if (m.d.size != before->d.size)
		die("image size changed");
	for (c = 0; c < before->d.sb.nchunks; c++) {
		uint64_t base = damage_cbase(&m.d, c), len = (before->d.sb.chunk_blocks - 1) * BS;
		struct cfs_chunk_hdr h0, h1;
		int changed;
		uint8_t *hb = blk(&m, base);

		if (cfs_meta_verify(hb, BS, m.d.seed, CFS_MAGIC_CHUNK, base) < 0)
			continue;
		cfs_chunk_hdr_decode(before->d.p + base * BS, &h0);
		cfs_chunk_hdr_decode(hb, &h1);
		changed = memcmp(before->d.p + (base + 1) * BS, m.d.p + (base + 1) * BS, len) != 0;
		h1.state = h0.state;
		h1.generation = h0.generation;
		h1.last_write = h0.last_write;
		h1.last_check = h0.last_check;
		changed |= memcmp(&h0, &h1, sizeof(h0)) != 0 || also_dirty[c];
		if (changed && !clean) {
			h1.state = CFS_STATE_DIRTY;
			h1.generation++;
			h1.last_write = 1700000100;
			hdr_put(&m, c, &h1);
			printf("chunk %u marked dirty\n", c);
		} else if (changed) {
			hdr_put(&m, c, &h1);
			printf("chunk %u changed, left clean\n", c);
		} else {
			memcpy(hb, before->d.p + base * BS, BS);
		}
	}
	img_save(&m);
}

static void damage(const char *name, const char *img)
{
	struct img before;
	size_t i;

	for (i = 0; i < NDAMAGES; i++)
		if (!strcmp(damages[i].name, name))
			break;
	if (i == NDAMAGES)
		die("no damage called '%s' (mkcase list)", name);
	img_load(&before, img);
	printf("%s: %s\n", name, damages[i].what);
	damages[i].fn(img);
	mark_dirty_as_a_crash_would(img, &before, !strncmp(name, "clean-", 6));
	free(before.d.p);
}

/* ---- verify ---------------------------------------------------------------- */

struct mfent {
	cfs_ino_t ino;
	char kind[8];
	uint32_t seed;
	size_t size;
	char path[256];
	int seen;
};

static struct mfent *mf;
static size_t nmf;

static void load_manifest(const char *img)
{
	char path[4096], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s.manifest", img);
	f = fopen(path, "r");
	if (!f)
		die("%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		struct mfent e = { 0 };

		if (sscanf(line, "%u %7s %u %zu %255s", &e.ino, e.kind, &e.seed, &e.size,
			   e.path) != 5)
			die("bad manifest line: %s", line);
		mf = realloc(mf, (nmf + 1) * sizeof(*mf));
		if (!mf)
			die("out of memory");
		mf[nmf++] = e;
	}
	fclose(f);
}

static struct mfent *mf_find(cfs_ino_t ino)
{
	size_t i;

	for (i = 0; i < nmf; i++)
		if (mf[i].ino == ino)
			return &mf[i];
	return NULL;
}

struct names {
	char (*name)[CFS_NAME_MAX + 1];
	cfs_ino_t *ino;
	size_t n, cap;
};

static int collect(void *ctx, const char *name, size_t len, cfs_ino_t ino, uint32_t t,
		   uint64_t next)
{
	struct names *nm = ctx;

	(void)t;
	(void)next;
	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	if (nm->n == nm->cap) {
		nm->cap = nm->cap ? nm->cap * 2 : 32;
		nm->name = realloc(nm->name, nm->cap * sizeof(*nm->name));
		nm->ino = realloc(nm->ino, nm->cap * sizeof(*nm->ino));
		if (!nm->name || !nm->ino)
			die("out of memory");
	}
	memcpy(nm->name[nm->n], name, len);
	nm->name[nm->n][len] = 0;
	nm->ino[nm->n++] = ino;
	return 0;
}

/* Sort by name, keeping each inode beside its name. */
static void sort_names(struct names *nm)
{
	size_t i, j;

	for (i = 0; i < nm->n; i++) {
		size_t best = i;

		for (j = i + 1; j < nm->n; j++)
			if (strcmp(nm->name[j], nm->name[best]) < 0)
				best = j;
		if (best != i) {
			char t[CFS_NAME_MAX + 1];
			cfs_ino_t ti = nm->ino[i];

			memcpy(t, nm->name[i], sizeof(t));
			memcpy(nm->name[i], nm->name[best], sizeof(t));
			memcpy(nm->name[best], t, sizeof(t));
			nm->ino[i] = nm->ino[best];
			nm->ino[best] = ti;
		}
	}
}

static int problems;

static void verify_file(struct cfs_fs *fs, const char *path, cfs_ino_t ino,
			const struct cfs_stat *st)
{
	struct mfent *e = mf_find(ino);
	uint8_t *got, *want;
	ssize_t n;

	if (!e || strcmp(e->kind, "reg")) {
		printf("%s: regular file, %llu bytes, not in the manifest\n", path,
		       (unsigned long long)st->size);
		return;
	}
	got = malloc(st->size + 1);
	want = malloc(e->size + 1);
	if (!got || !want)
		die("out of memory");
	n = cfs_read(fs, ino, got, st->size + 1, 0);
	manifest_pattern(want, e->size, e->seed);
	if (n < 0) {
		printf("%s: read error %s\n", path, strerror((int)-n));
		problems++;
	} else if ((size_t)n != st->size) {
		printf("%s: read %zd bytes of %llu\n", path, n, (unsigned long long)st->size);
		problems++;
	} else if (st->size == e->size && !memcmp(got, want, e->size)) {
		printf("%s: intact (%s)\n", path, e->path);
	} else {
		size_t same = 0;

		while (same < st->size && same < e->size && got[same] == want[same])
			same++;
		printf("%s: CHANGED (%s): %llu bytes, %zu expected, first %zu bytes right\n",
		       path, e->path, (unsigned long long)st->size, e->size, same);
	}
	e->seen = 1;
	free(got);
	free(want);
}

static void verify_dir(struct cfs_fs *fs, const char *path, cfs_ino_t dir, int depth)
{
	struct names nm = { 0 };
	size_t i;
	int ret;

	if (depth > 32) {
		printf("%s: too deep\n", path);
		problems++;
		return;
	}
	ret = cfs_readdir(fs, dir, 0, collect, &nm);
	if (ret < 0) {
		printf("%s: readdir: %s\n", path, strerror(-ret));
		problems++;
		return;
	}
	sort_names(&nm);
	for (i = 0; i < nm.n; i++) {
		char sub[1024];
		struct cfs_stat st;
		cfs_ino_t l;

		snprintf(sub, sizeof(sub), "%s/%s", strcmp(path, "/") ? path : "", nm.name[i]);
		if (cfs_lookup(fs, dir, nm.name[i], &l) < 0 || l != nm.ino[i]) {
			printf("%s: lookup does not find what readdir listed\n", sub);
			problems++;
		}
		ret = cfs_getattr(fs, nm.ino[i], &st);
		if (ret < 0) {
			printf("%s: getattr: %s\n", sub, strerror(-ret));
			problems++;
			continue;
		}
		if (S_ISDIR(st.mode)) {
			struct mfent *e = mf_find(nm.ino[i]);

			if (e)
				e->seen = 1;
			printf("%s/: directory, %u links\n", sub, st.nlink);
			verify_dir(fs, sub, nm.ino[i], depth + 1);
		} else if (S_ISREG(st.mode)) {
			verify_file(fs, sub, nm.ino[i], &st);
		} else if (S_ISLNK(st.mode)) {
			char t[4200];
			ssize_t n = cfs_readlink(fs, nm.ino[i], t, sizeof(t) - 1);
			struct mfent *e = mf_find(nm.ino[i]);

			if (e)
				e->seen = 1;
			if (n < 0) {
				printf("%s: readlink: %s\n", sub, strerror((int)-n));
				problems++;
			} else {
				t[n] = 0;
				printf("%s -> %s\n", sub, t);
			}
		} else {
			printf("%s: type 0%o\n", sub, st.mode & S_IFMT);
		}
		{
			char names[1024];
			ssize_t n = cfs_listxattr(fs, nm.ino[i], names, sizeof(names));

			if (n < 0) {
				printf("%s: listxattr: %s\n", sub, strerror((int)-n));
				problems++;
			} else if (n > 0) {
				ssize_t k = 0;
				uint8_t v[1100];

				while (k < n) {
					ssize_t vl = cfs_getxattr(fs, nm.ino[i], names + k, v,
								  sizeof(v));

					printf("%s: xattr %s, %zd bytes\n", sub, names + k, vl);
					if (vl < 0)
						problems++;
					k += (ssize_t)strlen(names + k) + 1;
				}
			}
		}
	}
	free(nm.name);
	free(nm.ino);
}

static int verify(const char *img)
{
	struct cfs_fs *fs;
	size_t i;
	int ret;

	load_manifest(img);
	/* a normal open: refused while any chunk still needs checking */
	ret = cfs_open(img, CFS_OPEN_RDONLY, &fs);
	if (ret < 0)
		die("open %s: %s", img, cfs_last_error());
	verify_dir(fs, "/", CFS_ROOT_INO, 0);
	for (i = 0; i < nmf; i++)
		if (!mf[i].seen)
			printf("%s: GONE\n", mf[i].path);
	ret = cfs_check(fs, NULL, NULL);
	if (ret != 0) {
		printf("cfs_check: %d problems\n", ret);
		problems++;
	}
	cfs_close(fs);
	return problems ? 1 : 0;
}

/* ---- inode names ------------------------------------------------------------ */

/* names IMG: "NUMBER NAME" for every in-use inode reachable from the root
 * of an undamaged image: heads by their first path, stubs as
 * "stub:DIR/ENTRY", continuations as "cont:PATH:K" (K-th of the chain,
 * breadth-first).  run.sh shows fsck's inode numbers as these names, so the
 * expect files read well and survive changes of allocation policy. */
struct nwalk {
	struct cfs_fs *fs;
	const char *path;
	struct names *nm;
	cfs_ino_t *stubs;
};

static cfs_ino_t *named;
static size_t nnamed;

static int seen_ino(cfs_ino_t ino)
{
	size_t i;

	for (i = 0; i < nnamed; i++)
		if (named[i] == ino)
			return 1;
	named = realloc(named, (nnamed + 1) * sizeof(*named));
	if (!named)
		die("out of memory");
	named[nnamed++] = ino;
	return 0;
}

static int stub_cb(void *ctx, const struct dirent_rec *r)
{
	struct nwalk *w = ctx;

	if (r->stub)
		printf("%u stub:%s%s%s\n", r->stub, w->path, strcmp(w->path, "/") ? "/" : "",
		       r->name);
	return 0;
}

static void name_conts(struct cfs_fs *fs, cfs_ino_t head, const char *path)
{
	cfs_ino_t q[256];
	int nq = 0, i, k = 0, s;

	q[nq++] = head;
	for (i = 0; i < nq; i++) {
		struct inode *ip;

		OK(inode_get(fs, q[i], &ip));
		for (s = 0; s < CFS_NCONT; s++)
			if (ip->d.cont[s] && nq < 256) {
				q[nq++] = ip->d.cont[s];
				printf("%u cont:%s:%d\n", ip->d.cont[s], path, ++k);
			}
		inode_put(fs, ip);
	}
}

static void name_dir(struct cfs_fs *fs, const char *path, cfs_ino_t dir, int depth)
{
	struct names nm = { 0 };
	struct nwalk w = { fs, path, &nm, NULL };
	struct inode *dp;
	size_t i;

	if (depth > 32)
		die("%s: too deep", path);
	OK(inode_get(fs, dir, &dp));
	OK(dir_iterate(fs, dp, 0, stub_cb, &w));
	inode_put(fs, dp);
	OK(cfs_readdir(fs, dir, 0, collect, &nm));
	sort_names(&nm);
	for (i = 0; i < nm.n; i++) {
		char sub[1024];
		struct cfs_stat st;

		snprintf(sub, sizeof(sub), "%s/%s", strcmp(path, "/") ? path : "", nm.name[i]);
		if (seen_ino(nm.ino[i]))
			continue;
		printf("%u %s\n", nm.ino[i], sub);
		OK(cfs_getattr(fs, nm.ino[i], &st));
		if (S_ISDIR(st.mode))
			name_dir(fs, sub, nm.ino[i], depth + 1);
		else
			name_conts(fs, nm.ino[i], sub);
	}
	free(nm.name);
	free(nm.ino);
}

static int names(const char *img)
{
	struct cfs_fs *fs;

	OK(cfs_open(img, CFS_OPEN_RDONLY, &fs));
	printf("%u /\n", CFS_ROOT_INO);
	seen_ino(CFS_ROOT_INO);
	name_dir(fs, "/", CFS_ROOT_INO, 0);
	cfs_close(fs);
	return 0;
}

/* symbolize NAMES: copy stdin to stdout, writing "[NAME]" for each number
 * that names an inode: after "inode ", "dir ", "stub ", "continuation ",
 * "file ", "pointer ", "-> " or "#", and any number of 8 digits or more
 * (inodes of chunks 1 and up: never a count in these small images). */
static int symbolize(const char *namefile)
{
	static const char *const kw[] = { "inode ", "dir ", "stub ", "continuation ",
					   "file ", "pointer ", "-> ", "#" };
	char line[4096], nm[512];
	cfs_ino_t *ino = NULL;
	char **name = NULL;
	size_t n = 0, i, k;
	FILE *f = fopen(namefile, "r");

	if (!f)
		die("%s: %s", namefile, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		unsigned v;

		if (sscanf(line, "%u %511s", &v, nm) != 2)
			continue;
		ino = realloc(ino, (n + 1) * sizeof(*ino));
		name = realloc(name, (n + 1) * sizeof(*name));
		if (!ino || !name || !(name[n] = strdup(nm)))
			die("out of memory");
		ino[n++] = v;
	}
	fclose(f);
	while (fgets(line, sizeof(line), stdin)) {
		char *p = line;

		while (*p) {
			size_t kl = 0;
			char *end;
			unsigned long v;

			for (k = 0; k < sizeof(kw) / sizeof(kw[0]); k++)
				if (!strncmp(p, kw[k], strlen(kw[k]))) {
					kl = strlen(kw[k]);
					break;
				}
			/* a number of 8 digits or more standing alone is an inode
			 * of chunk 1 or later whatever precedes it */
			if (!kl && *p >= '1' && *p <= '9' && (p == line || !isalnum((unsigned char)p[-1])) &&
			    strspn(p, "0123456789") >= 8)
				kl = 0;
			else if (!kl || p[kl] < '0' || p[kl] > '9') {
				putchar(*p++);
				continue;
			}
			v = strtoul(p + kl, &end, 10);
			for (i = 0; i < n && ino[i] != v; i++)
				;
			if (i == n || (*end >= '0' && *end <= '9')) {
				fwrite(p, 1, (size_t)(end - p), stdout);
			} else {
				fwrite(p, 1, kl, stdout);
				printf("[%s]", name[i]);
			}
			p = end;
		}
	}
	for (i = 0; i < n; i++)
		free(name[i]);
	free(name);
	free(ino);
	return 0;
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc == 3 && !strcmp(argv[1], "build"))
		build4(argv[2]);
	else if (argc == 3 && !strcmp(argv[1], "build64"))
		build64(argv[2]);
	else if (argc == 3 && !strcmp(argv[1], "buildfull"))
		buildfull(argv[2]);
	else if (argc == 3 && !strcmp(argv[1], "buildcl"))
		buildcl(argv[2]);
	else if (argc == 4 && !strcmp(argv[1], "damage"))
		damage(argv[2], argv[3]);
	else if (argc == 3 && !strcmp(argv[1], "verify"))
		return verify(argv[2]);
	else if (argc == 3 && !strcmp(argv[1], "names"))
		return names(argv[2]);
	else if (argc == 3 && !strcmp(argv[1], "symbolize"))
		return symbolize(argv[2]);
	else if (argc == 2 && !strcmp(argv[1], "list"))
		for (i = 0; i < NDAMAGES; i++)
			printf("%s\n", damages[i].name);
	else
		die("usage: mkcase build|build64|buildfull|buildcl IMG | damage CASE IMG | verify IMG | "
		    "names IMG | symbolize NAMES | list");
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Damaged and hostile images never crash or hang libchunkfs.
 *
 * A populated image (directories, a directory big enough for a multi-node
 * tree, inline files, multi-block files, a file continued through other
 * chunks, xattrs in the inode and in an overflow block, hard links across
 * chunks, short and long symlinks) is built on the fault device.  Its
 * metadata blocks are located by walking the geometry (superblock, chunk
 * headers, bitmaps, inode tables) and by magic in the data areas (extent,
 * directory and xattr blocks).  Then, round after round, a copy of the
 * pristine bytes is damaged:
 *   - random bytes anywhere, or a random metadata block zeroed or
 *     bit-flipped (mostly caught by checksums);
 *   - a metadata block, an inode or the superblock with random fields
 *     changed and the checksum recomputed: a hostile image that passes
 *     every checksum, which is what reaches the parsers;
 * and opened read-only and read-write (both NOCHECK).  If it opens, the
 * whole tree is walked and read (readdir, getattr, read, readlink,
 * listxattr, getxattr), cfs_check runs, and a read-write open also gets
 * writes, renames, unlinks and a close.
 *
 * Asserted: no crash, no sanitizer report, no hang (alarm() per round),
 * every error a negative errno, no result out of range.  Separately: a
 * corrupt primary superblock and a truncated device are refused with a
 * reason from cfs_last_error(); empty and 100-byte image files likewise.
 *
 * CHUNKFS_CORRUPT_SEED=N replays; CHUNKFS_CORRUPT_ROUNDS=N changes the
 * number of rounds; CHUNKFS_CORRUPT_VERBOSE=1 prints each round. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bdev.h"
#include "chunkfs.h"
#include "damage.h"
#include "fixture.h"
#include "format.h"
#include "test.h"

#define IMG_SIZE (4u << 20)
#define IMG_BS 1024
#define IMG_CHUNKS 4                    /* 1 MiB chunks: continuations */

static struct damage_img pr;            /* the pristine image */
static struct damage_map meta;
static int verbose;
static volatile sig_atomic_t cur_round = -1;

/* ---- result checking ---- */

static long bad_results;

/* Every call returns success (>= 0) or a negative errno. */
static long rv(long r, const char *what)
{
	if (r < -4095) {
		if (!bad_results++)
			fprintf(stderr, "  round %d: %s returned %ld, not an errno\n",
				(int)cur_round, what, r);
	}
	return r;
}

#define RV(expr) rv((long)(expr), #expr)

/* ---- building the pristine image ---- */

static void build_pristine(void)
{
	/* a fixed uuid fixes the name hashes, hence the directory trees: the
	 * image, and so what a seed damages, is the same on every run */
	static const uint8_t uuid[16] = "0123456789abcdef";
	struct cfs_mkfs_opts o = { .block_size = IMG_BS, .chunks = IMG_CHUNKS, .inodes = 512,
				   .label = "corrupt-me", .uuid = uuid, .now = 1700000000 };
	struct cfs_bdev *dev;
	struct cfs_fs *fs;
	cfs_ino_t d1, d2, sub, many, f, big, multi, ino;
	static uint8_t buf[1 << 16];
	char name[64], longlink[600];
	uint64_t off;
	uint32_t chunks[16];
	int i, n;

	CHECK_OK(fixture_mkfs(IMG_SIZE, &o, &dev, &fs));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d1", 0755, 1, 2, &d1));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d2", 0750, 3, 4, &d2));
	CHECK(CFS_INO_CHUNK(d1) != CFS_INO_CHUNK(d2));
	CHECK_OK(cfs_mkdir(fs, d1, "sub", 0700, 0, 0, &sub));
	CHECK_OK(cfs_mkdir(fs, d1, "many", 0755, 0, 0, &many));
	/* a directory with a multi-node tree */
	for (i = 0; i < 150; i++) {
		snprintf(name, sizeof(name), "entry-with-a-longish-name-%04d", i);
		CHECK_OK(cfs_mknod(fs, many, name, S_IFREG | 0644, 0, 0, 0, &f));
		if (i % 10 == 0)
			CHECK_EQ(cfs_write(fs, f, name, strlen(name), 0), strlen(name));
	}
	/* inline file with xattrs, one big enough for the overflow block */
	CHECK_OK(cfs_mknod(fs, d1, "small", S_IFREG | 0644, 0, 5, 6, &f));
	CHECK_EQ(cfs_write(fs, f, "hello, world\n", 13, 0), 13);
	CHECK_OK(cfs_setxattr(fs, f, "user.a", "1", 1, 0));
	fixture_fill(buf, 600, 9);
	CHECK_OK(cfs_setxattr(fs, f, "user.big", buf, 600, 0));
	CHECK_OK(cfs_setxattr(fs, f, "trusted.t", "tt", 2, 0));
	/* multi-block file */
	CHECK_OK(cfs_mknod(fs, sub, "multi", S_IFREG | 0600, 0, 0, 0, &multi));
	fixture_fill(buf, 20000, 1);
	CHECK_EQ(cfs_write(fs, multi, buf, 20000, 0), 20000);
	CHECK_OK(cfs_setxattr(fs, multi, "user.m", "mm", 2, 0));
	/* a sparse file */
	CHECK_OK(cfs_mknod(fs, d2, "sparse", S_IFREG | 0644, 0, 0, 0, &f));
	CHECK_EQ(cfs_write(fs, f, "x", 1, 300000), 1);
	/* a file bigger than a chunk: continuation inodes */
	CHECK_OK(cfs_mknod(fs, d2, "big", S_IFREG | 0644, 0, 0, 0, &big));
	for (off = 0; off < 1600000; off += sizeof(buf)) {
		fixture_fill(buf, sizeof(buf), (unsigned)off);
		CHECK_EQ(cfs_write(fs, big, buf, sizeof(buf), off), sizeof(buf));
	}
	n = cfs_file_chunks(fs, big, chunks, 16);
	CHECK(n >= 2);
	/* a fragmented file: one extent per block, too many for the inode's
	 * extent root, so the tree has nodes */
	CHECK_OK(cfs_mknod(fs, d1, "frag", S_IFREG | 0644, 0, 0, 0, &f));
	for (i = 0; i < 120; i++) {
		fixture_fill(buf, IMG_BS, (unsigned)i);
		CHECK_EQ(cfs_write(fs, f, buf, IMG_BS, (uint64_t)i * 2 * IMG_BS), IMG_BS);
		/* interleave another file's blocks so extents cannot merge */
		CHECK_EQ(cfs_write(fs, multi, buf, 100, 20000 + (uint64_t)i * 100), 100);
	}
	/* hard links across chunks (stub inodes) */
	CHECK_OK(cfs_link(fs, multi, d2, "multi-link"));
	CHECK_OK(cfs_link(fs, big, d1, "big-link"));
	/* symlinks: inline and block-based */
	CHECK_OK(cfs_symlink(fs, d1, "sym", "/d1/small", 0, 0, &ino));
	memset(longlink, 'L', sizeof(longlink) - 1);
	longlink[0] = '/';
	longlink[sizeof(longlink) - 1] = 0;
	CHECK_OK(cfs_symlink(fs, d2, "longsym", longlink, 0, 0, &ino));
	/* an empty directory and a device node */
	CHECK_OK(cfs_mkdir(fs, d2, "empty", 0755, 0, 0, &ino));
	CHECK_OK(cfs_mknod(fs, d2, "fifo", S_IFIFO | 0644, 0, 0, 0, &ino));
	CHECK_EQ(cfs_check(fs, NULL, NULL), 0);
	CHECK_OK(cfs_close(fs));
	CHECK_OK(damage_img_take(&pr, dev));
	CHECK(pr.size == IMG_SIZE && pr.bs == IMG_BS);
	printf("    image: %u chunks of %llu blocks, big file in %d chunks\n", pr.sb.nchunks,
	       (unsigned long long)pr.sb.chunk_blocks, n);
}

/* ---- where the metadata is ---- */

static void find_metadata(void)
{
	int i;

	damage_find_metadata(&pr, &meta, 1);
	printf("    metadata blocks:");
	for (i = 0; i < DK_N; i++)
		printf(" %s %d%s", damage_kind_name[i], meta.count[i], i + 1 < DK_N ? "," : "\n");
}

static int pick_meta(enum damage_kind want)
{
	int cand[4096], n = 0, i;

	for (i = 0; i < meta.n; i++)
		if (meta.b[i].k == want)
			cand[n++] = i;
	return n ? cand[below((uint64_t)n)] : (int)below((uint64_t)meta.n);
}

/* ---- damage ---- */

/* Plausible-but-wrong values: small, boundary, huge. */
static uint64_t evil(void)
{
	static const uint64_t v[] = { 0, 1, 2, 3, 7, 8, 15, 16, 255, 256, 1023, 1024, 4096,
				      65535, 65536, 0x7FFFFFFF, 0x80000000u, 0xFFFFFFFFu,
				      0x100000000ull, 0x7FFFFFFFFFFFFFFFull,
				      0xFFFFFFFFFFFFFFFFull };

	if (below(3) == 0)
		return rnd();
	return v[below(sizeof(v) / sizeof(v[0]))];
}

static void put_evil(uint8_t *p, int width)
{
	damage_put(p, width, evil());
}

#define V  CFS_OFF_IN_VAR                 /* an inode's extent root */
#define R0 (CFS_OFF_IN_VAR + CFS_BTN_SIZE)   /* its first record */
#define R1 (R0 + CFS_EXT_SIZE)            /* its second record */

/* A hostile inode: one of the in-use inodes of an inode-table block gets
 * random fields (mode, flags, size, link count, continuation pointers,
 * xattr length, the extent root or inline data) and a valid checksum. */
static void evil_inode(uint8_t *blk)
{
	static const struct damage_field f[] = {
		{ CFS_OFF_IN_MODE, 2 }, { CFS_OFF_IN_FLAGS, 2 }, { CFS_OFF_IN_NLINK, 4 },
		{ CFS_OFF_IN_SIZE, 8 }, { CFS_OFF_IN_XATTR_BLK, 4 }, { CFS_OFF_IN_NBLOCKS, 8 },
		{ CFS_OFF_IN_HEAD, 4 }, { CFS_OFF_IN_BACK, 4 }, { CFS_OFF_IN_LO, 8 },
		{ CFS_OFF_IN_HI, 8 }, { CFS_OFF_IN_CONT, 4 }, { CFS_OFF_IN_CONT + 4, 4 },
		{ CFS_OFF_IN_CONT + 8, 4 }, { CFS_OFF_IN_CONT + 12, 4 },
		{ CFS_OFF_IN_XATTR_LEN, 2 },
		/* extent root header and first records */
		{ V + CFS_OFF_BTN_LEVEL, 2 }, { V + CFS_OFF_BTN_NREC, 2 },
		{ V + CFS_OFF_BTN_USED, 4 }, { R0 + CFS_OFF_BTI_KEY, 8 },
		{ R0 + CFS_OFF_BTI_CHILD, 8 }, { R1 + CFS_OFF_EXT_LBLK, 4 },
		{ DAMAGE_HI32(R1 + CFS_OFF_EXT_LBLK), 4 }, { R1 + CFS_OFF_EXT_PBLK, 8 },
	};
	uint32_t isz = pr.sb.inode_size;
	int used[CFS_MAX_BLOCK / CFS_MIN_INODE], n = 0, j, k;

	for (j = 0; j < (int)pr.ipb; j++)
		if (!cfs_dinode_is_zero(blk + j * isz, isz))
			used[n++] = j;
	if (!n)
		return;
	j = used[below((uint64_t)n)];
	for (k = 1 + (int)below(3); k > 0; k--) {
		int i = (int)below(sizeof(f) / sizeof(f[0]));
		uint8_t *raw = blk + j * isz;

		if (i == 0 && below(2)) {
			/* a plausible type makes the other fields matter */
			static const uint16_t modes[] = { S_IFREG | 0644, S_IFDIR | 0755,
							  S_IFLNK | 0777, S_IFIFO | 0600,
							  S_IFCHR | 0600, 0 };

			damage_put(raw + CFS_OFF_IN_MODE, 2, modes[below(6)]);
		} else if (i == 1 && below(2)) {
			damage_put(raw + CFS_OFF_IN_FLAGS, 2, 1u << below(5));
		} else {
			put_evil(raw + f[i].off, f[i].w);
		}
	}
}

#define N0 CFS_OFF_NODE_RECS                /* a node block's first record */

/* A hostile metadata block: header fields of the block's own format. */
static void evil_block(uint8_t *p, enum damage_kind k)
{
	int n = 1 + (int)below(3);

	while (n--) {
		switch (k) {
		case DK_CHDR: {
			static const struct damage_field f[] = {
				{ CFS_OFF_CH_INDEX, 4 }, { CFS_OFF_CH_STATE, 4 },
				{ CFS_OFF_CH_GEN, 8 }, { CFS_OFF_CH_FREE_BLK, 4 },
				{ CFS_OFF_CH_FREE_INO, 4 }, { CFS_OFF_CH_BBM_INIT, 4 },
				{ CFS_OFF_CH_IBM_INIT, 4 }, { CFS_OFF_CH_ITAB_INIT, 4 },
				{ CFS_OFF_CH_NCONTS, 4 }, { CFS_OFF_CH_NSTUBS, 4 },
				{ CFS_OFF_CH_NDIRS, 4 },
			};
			int i = (int)below(sizeof(f) / sizeof(f[0]));

			put_evil(p + f[i].off, f[i].w);
			break;
		}
		case DK_EXT:
		case DK_DIR: {
			/* node header (level, nrec, used, owner), the first
			 * records: keys, child pointers, lengths, names */
			static const struct damage_field f[] = {
				{ CFS_OFF_NODE_HDR + CFS_OFF_BTN_LEVEL, 2 },
				{ CFS_OFF_NODE_HDR + CFS_OFF_BTN_NREC, 2 },
				{ CFS_OFF_NODE_HDR + CFS_OFF_BTN_USED, 4 },
				{ CFS_OFF_NODE_OWNER, 4 }, { N0 + CFS_OFF_BTI_KEY, 8 },
				{ N0 + CFS_OFF_EXT_PBLK, 4 }, { N0 + CFS_OFF_EXT_LEN, 4 },
				{ N0 + CFS_EXT_SIZE + CFS_OFF_EXT_LBLK, 8 },
				{ N0 + CFS_EXT_SIZE + CFS_OFF_EXT_PBLK, 8 },
			};
			int i = (int)below(sizeof(f) / sizeof(f[0]) + 2);

			if (i < (int)(sizeof(f) / sizeof(f[0])))
				put_evil(p + f[i].off, f[i].w);
			else
				p[N0 + below(IMG_BS - N0)] = (uint8_t)rnd();
			break;
		}
		case DK_XATTR:
			/* used, owner, or the two reserved u32 after them */
			if (below(2))
				put_evil(p + CFS_OFF_XB_USED + 4 * below(4), 4);
			else
				p[CFS_BLOCK_HDR + below(IMG_BS - CFS_BLOCK_HDR)] = (uint8_t)rnd();
			break;
		case DK_BBM:
		case DK_IBM:
			p[CFS_OFF_BM_BITS + below(IMG_BS - CFS_OFF_BM_BITS)] ^= (uint8_t)(1u << below(8));
			break;
		case DK_ITABLE:
			evil_inode(p);
			break;
		case DK_SB:
		case DK_BACKUP: {
			static const struct damage_field f[] = {
				{ CFS_OFF_SB_VERSION, 4 }, { CFS_OFF_SB_BLOCK_SIZE, 4 },
				{ CFS_OFF_SB_COMPAT, 4 }, { CFS_OFF_SB_RO_COMPAT, 4 },
				{ CFS_OFF_SB_INCOMPAT, 4 }, { CFS_OFF_SB_INODE_SIZE, 4 },
				{ CFS_OFF_SB_NCHUNKS, 4 }, { CFS_OFF_SB_IPC, 4 },
				{ CFS_OFF_SB_CHUNK_BLOCKS, 8 }, { CFS_OFF_SB_FIRST_CHUNK, 8 },
				{ CFS_OFF_SB_TOTAL_BLOCKS, 8 }, { CFS_OFF_SB_BACKUP, 8 },
				{ CFS_OFF_SB_ROOT, 4 }, { CFS_OFF_SB_LPF, 4 },
				{ CFS_OFF_SB_BBM_BLOCKS, 4 }, { CFS_OFF_SB_IBM_BLOCKS, 4 },
				{ CFS_OFF_SB_ITABLE, 4 }, { CFS_OFF_SB_DATA_START, 4 },
				{ CFS_OFF_SB_HASH_SEED, 4 },
			};
			int i = (int)below(sizeof(f) / sizeof(f[0]));

			put_evil(p + f[i].off, f[i].w);
			break;
		}
		default:
			break;
		}
	}
}

/* Regressions (all fixed): a B+tree root whose level field is >= BT_MAXD (12)
 * makes bt_release() read past its cursor (src/btree.c descend() sets
 * c->top before validating it): an inode with a hostile extent root, or a
 * directory whose root node has a hostile level, crashes the library.
 * ext_walk_node() (src/extent.c, used by cfs_check)
 * reads nrec 16-byte records of a leaf without checking them against the
 * leaf's used bytes: a hostile record count reads past the block.
 * An inline inode whose size is larger than its inline
 * area is not refused when loaded: inline_to_extents() (a write past the
 * inline limit) copies size bytes out of the area, and file_truncate()
 * clears size - newsize bytes in it: heap overflows.  Damage reaches all of
 * these fields unclamped. */

/* Damage img (a copy of the pristine image); returns a short description. */
static const char *damage(uint8_t *img, char *desc, size_t dn)
{
	struct damage_img d = pr;
	int how = (int)below(10), i, n;
	const struct damage_meta *m;

	d.p = img;
	switch (how) {
	case 0: /* random bytes anywhere in the metadata-rich start of chunks */
		n = 1 + (int)below(16);
		for (i = 0; i < n; i++) {
			m = &meta.b[below((uint64_t)meta.n)];
			img[m->blk * IMG_BS + below(IMG_BS)] = (uint8_t)rnd();
		}
		snprintf(desc, dn, "%d random bytes in metadata blocks", n);
		break;
	case 1: /* zero a metadata block */
		m = &meta.b[below((uint64_t)meta.n)];
		memset(img + m->blk * IMG_BS, 0, IMG_BS);
		snprintf(desc, dn, "zeroed %s at %llu", damage_kind_name[m->k],
			 (unsigned long long)m->blk);
		break;
	case 2: /* flip bits in a metadata block */
		m = &meta.b[below((uint64_t)meta.n)];
		n = 1 + (int)below(8);
		for (i = 0; i < n; i++)
			img[m->blk * IMG_BS + below(IMG_BS)] ^= (uint8_t)(1u << below(8));
		snprintf(desc, dn, "%d bit flips in %s at %llu", n, damage_kind_name[m->k],
			 (unsigned long long)m->blk);
		break;
	default: { /* hostile, checksums valid */
		static const enum damage_kind ks[] = { DK_ITABLE, DK_ITABLE, DK_ITABLE, DK_DIR,
						       DK_DIR, DK_EXT, DK_XATTR, DK_CHDR,
						       DK_BBM, DK_IBM, DK_SB };

		m = &meta.b[pick_meta(ks[below(sizeof(ks) / sizeof(ks[0]))])];
		evil_block(img + m->blk * IMG_BS, m->k);
		damage_reseal(&d, m->blk);
		snprintf(desc, dn, "hostile %s at %llu (checksum valid)",
			 damage_kind_name[m->k], (unsigned long long)m->blk);
		break;
	}
	}
	return desc;
}

/* ---- exercising an image ---- */

struct walk {
	struct cfs_fs *fs;
	long errors;            /* negative results seen */
	long items;
	cfs_ino_t files[64];    /* some regular files for the write phase */
	int nfiles;
	cfs_ino_t dirs[32];
	int ndirs;
};

static void walk_dir(struct walk *w, cfs_ino_t dir, int depth);

static long known_bug_hits;

/* An offset or a negative errno. */
static void lseek_check(int64_t r, uint64_t size)
{
	(void)size;
	rv((long)r, "cfs_lseek");
}

static void visit(struct walk *w, cfs_ino_t dir, const char *name, cfs_ino_t ino, int depth)
{
	static uint8_t buf[1 << 16];
	struct cfs_stat st;
	char lbuf[4200], names[2048];
	cfs_ino_t l;
	ssize_t n;
	long r;

	w->items++;
	if (w->items > 3000)
		return;
	r = RV(cfs_lookup(w->fs, dir, name, &l));
	if (r < 0)
		w->errors++;
	r = RV(cfs_getattr(w->fs, ino, &st));
	if (r < 0) {
		w->errors++;
		return;
	}
	if (S_ISDIR(st.mode)) {
		if (w->ndirs < 32)
			w->dirs[w->ndirs++] = ino;
		if (depth < 12)
			walk_dir(w, ino, depth + 1);
	} else if (S_ISREG(st.mode)) {
		uint64_t off, step = sizeof(buf);
		int reads = 0;

		if (w->nfiles < 64)
			w->files[w->nfiles++] = ino;
		/* every byte of plausible sizes; samples of absurd ones */
		if (st.size > (8u << 20))
			step = st.size / 16;
		for (off = 0; off < st.size && reads < 64; off += step, reads++) {
			n = RV(cfs_read(w->fs, ino, buf, sizeof(buf), off));
			if (n < 0) {
				w->errors++;
				break;
			}
			if ((size_t)n > sizeof(buf)) {
				bad_results++;
				fprintf(stderr, "  round %d: read returned %zd > %zu\n",
					(int)cur_round, n, sizeof(buf));
			}
			if (n == 0)
				break;
		}
		lseek_check(cfs_lseek(w->fs, ino, 0, SEEK_DATA), st.size);
		lseek_check(cfs_lseek(w->fs, ino, 0, SEEK_HOLE), st.size);
	} else if (S_ISLNK(st.mode)) {
		n = RV(cfs_readlink(w->fs, ino, lbuf, sizeof(lbuf)));
		if (n < 0)
			w->errors++;
	}
	n = RV(cfs_listxattr(w->fs, ino, names, sizeof(names)));
	if (n < 0) {
		w->errors++;
	} else if ((size_t)n > sizeof(names)) {
		bad_results++;
	} else {
		ssize_t i = 0;

		RV(cfs_listxattr(w->fs, ino, NULL, 0));
		while (i < n) {
			size_t len = strnlen(names + i, (size_t)(n - i));

			if (len == (size_t)(n - i))
				break;          /* unterminated: stop */
			r = RV(cfs_getxattr(w->fs, ino, names + i, lbuf, sizeof(lbuf)));
			if (r < 0)
				w->errors++;
			RV(cfs_getxattr(w->fs, ino, names + i, NULL, 0));
			i += (ssize_t)len + 1;
		}
	}
}

static void walk_dir(struct walk *w, cfs_ino_t dir, int depth)
{
	struct fixture_ents *e = fixture_ents_new(128, 0);
	long r;
	int i;

	if (!e)
		return;
	r = RV(fixture_readdir(w->fs, dir, 0, e));
	if (r < 0)
		w->errors++;
	if (e->bad_len) {
		bad_results++;
		fprintf(stderr, "  round %d: readdir name length %zu\n", (int)cur_round, e->bad_len);
	}
	for (i = 0; i < e->n; i++) {
		if (!strcmp(e->name[i], ".") || !strcmp(e->name[i], ".."))
			continue;
		visit(w, dir, e->name[i], e->ino[i], depth);
	}
	/* resuming from a cookie in the middle */
	if (e->n > 4) {
		struct fixture_ents *e2 = fixture_ents_new(128, 0);

		if (e2) {
			RV(fixture_readdir(w->fs, dir, 3, e2));
			free(e2);
		}
	}
	free(e);
}

static int walk_fs(struct cfs_fs *fs, struct walk *w)
{
	struct cfs_statfs sf;
	struct cfs_info in;
	cfs_ino_t ino;
	uint32_t c;

	memset(w, 0, sizeof(*w));
	w->fs = fs;
	if (RV(cfs_statfs(fs, &sf)) < 0)
		w->errors++;
	RV(cfs_get_info(fs, &in));
	for (c = 0; c < in.chunks; c++) {
		struct cfs_chunk_info ci;

		RV(cfs_get_chunk_info(fs, c, &ci));
	}
	walk_dir(w, CFS_ROOT_INO, 0);
	/* path resolution through symlinks, and the known names */
	RV(cfs_path_resolve(fs, "/d1/sym", 1, &ino));
	RV(cfs_path_resolve(fs, "/d2/longsym", 1, &ino));
	RV(cfs_path_resolve(fs, "/d1/sub/multi", 0, &ino));
	RV(cfs_path_resolve(fs, "/d2/big", 0, &ino));
	if (RV(cfs_check(fs, NULL, NULL)) < 0)
		w->errors++;
	return w->errors == 0;
}

static void write_phase(struct cfs_fs *fs, struct walk *w)
{
	static uint8_t buf[20000];
	cfs_ino_t ino;
	int i;

	fixture_fill(buf, sizeof(buf), 77);
	RV(cfs_mknod(fs, CFS_ROOT_INO, "newfile", S_IFREG | 0644, 0, 0, 0, &ino));
	RV(cfs_mkdir(fs, CFS_ROOT_INO, "newdir", 0755, 0, 0, &ino));
	for (i = 0; i < w->nfiles && i < 12; i++) {
		cfs_ino_t f = w->files[below((uint64_t)w->nfiles)];
		struct cfs_setattr sa = { .valid = CFS_SET_SIZE, .size = below(30000) };

		RV(cfs_write(fs, f, buf, 1 + below(sizeof(buf)), below(40000)));
		RV(cfs_setxattr(fs, f, "user.new", buf, 1 + below(700), 0));
		RV(cfs_setattr(fs, f, &sa, NULL));
		RV(cfs_removexattr(fs, f, "user.a"));
		RV(cfs_fallocate(fs, f, 0, below(50000), below(20000)));
	}
	for (i = 0; i < w->ndirs && i < 8; i++) {
		cfs_ino_t d = w->dirs[below((uint64_t)w->ndirs)];

		RV(cfs_mknod(fs, d, "added", S_IFREG | 0644, 0, 0, 0, &ino));
		RV(cfs_symlink(fs, d, "addlink", "/somewhere", 0, 0, &ino));
		RV(cfs_rename(fs, d, "added", CFS_ROOT_INO, "moved", 0));
		RV(cfs_link(fs, ino, CFS_ROOT_INO, "linked"));
		RV(cfs_unlink(fs, CFS_ROOT_INO, "linked"));
	}
	/* remove what the original tree had (whatever is left of it) */
	RV(cfs_unlink(fs, CFS_ROOT_INO, "moved"));
	{
		cfs_ino_t d1, d2, many;

		if (cfs_lookup(fs, CFS_ROOT_INO, "d1", &d1) == 0) {
			RV(cfs_unlink(fs, d1, "small"));
			RV(cfs_unlink(fs, d1, "big-link"));
			RV(cfs_rename(fs, d1, "sub", CFS_ROOT_INO, "sub-moved", 0));
			if (cfs_lookup(fs, d1, "many", &many) == 0)
				for (i = 0; i < 150; i += 7) {
					char name[64];

					snprintf(name, sizeof(name),
						 "entry-with-a-longish-name-%04d", i);
					RV(cfs_unlink(fs, many, name));
				}
		}
		if (cfs_lookup(fs, CFS_ROOT_INO, "d2", &d2) == 0) {
			RV(cfs_unlink(fs, d2, "big"));
			RV(cfs_unlink(fs, d2, "multi-link"));
			RV(cfs_rmdir(fs, d2, "empty"));
			RV(cfs_rename(fs, d2, "longsym", CFS_ROOT_INO, "ls", 0));
		}
	}
	RV(cfs_sync(fs));
	RV(cfs_clean_idle(fs, 0));
	RV(cfs_check(fs, NULL, NULL));
}

/* ---- the rounds ---- */

static struct cfs_bdev *device_with(const uint8_t *img, uint64_t bytes)
{
	struct cfs_bdev *bd;

	CHECK_OK(fixture_image_dev(img, bytes, IMG_BS, &bd));
	return bd;
}

static void test_rounds(void)
{
	const char *s = getenv("CHUNKFS_CORRUPT_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) : 0xC0DEFACE;
	int rounds = getenv("CHUNKFS_CORRUPT_ROUNDS") ?
		     atoi(getenv("CHUNKFS_CORRUPT_ROUNDS")) : 400;
	static uint8_t *img;    /* static: reachable after a failed CHECK */
	int r, opened_ro = 0, opened_rw = 0, refused = 0, readable = 0, rw_closed_err = 0;
	long errors = 0;
	char desc[160];

	if (!img)
		img = malloc(IMG_SIZE);
	CHECK(img);
	printf("    seed %llu (CHUNKFS_CORRUPT_SEED=%llu to replay), %d rounds\n",
	       (unsigned long long)seed, (unsigned long long)seed, rounds);
	rng = seed ? seed : 1;
	signal(SIGALRM, damage_on_alarm);
	for (r = 0; r < rounds; r++) {
		struct cfs_fs *fs;
		struct walk w;
		int ret, mode;

		cur_round = r;
		memcpy(img, pr.p, IMG_SIZE);
		damage(img, desc, sizeof(desc));
		if (verbose)
			printf("    round %d: %s\n", r, desc);
		alarm(30);
		for (mode = 0; mode < 2; mode++) {
			int flags = mode ? CFS_OPEN_NOCHECK : CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK;

			ret = (int)RV(cfs_open_bdev(device_with(img, IMG_SIZE), flags, &fs));
			if (ret < 0) {
				const char *why = cfs_last_error();

				refused++;
				if (!why || !*why) {
					bad_results++;
					fprintf(stderr, "  round %d (%s): open refused (%d) "
						"without a reason\n", r, desc, ret);
				}
				if (verbose)
					printf("      refused: %s\n", why);
				continue;
			}
			if (mode == 0)
				opened_ro++;
			else
				opened_rw++;
			if (walk_fs(fs, &w) && mode == 0)
				readable++;
			errors += w.errors;
			if (mode == 1)
				write_phase(fs, &w);
			ret = (int)RV(cfs_close(fs));
			if (ret < 0)
				rw_closed_err++;
		}
		alarm(0);
		if (bad_results)
			TEST_FAIL("round %d (%s): %ld bad results", r, desc, bad_results);
	}
	printf("    %d rounds: read-only opens %d (fully readable %d), read-write opens %d, "
	       "refused %d, errors met while reading %ld, closes with an error %d\n",
	       rounds, opened_ro, readable, opened_rw, refused, errors, rw_closed_err);
	printf("    known-bug results tolerated: %ld\n", known_bug_hits);
	/* most damage is detected, but some images must open (else the walk
	 * and the write phase would never run) */
	CHECK(opened_ro > rounds / 4);
	CHECK(opened_rw > rounds / 4);
	CHECK(readable > 0);
}

/* A damaged primary superblock is refused, with a reason. */
static void test_bad_superblock(void)
{
	static const int offs[] = { 0, 3, 4, 8, 12, 32, 40, 100, 600, 1023 };
	uint8_t *img = malloc(IMG_SIZE);
	size_t i;

	CHECK(img);
	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		int mode;

		for (mode = 0; mode < 3; mode++) {
			static const int fl[] = { 0, CFS_OPEN_NOCHECK,
						  CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK };
			struct cfs_fs *fs = NULL;
			int ret;

			memcpy(img, pr.p, IMG_SIZE);
			img[offs[i]] ^= 0x10;
			ret = cfs_open_bdev(device_with(img, IMG_SIZE), fl[mode], &fs);
			if (ret == 0) {
				cfs_close(fs);
				TEST_FAIL("superblock byte %d damaged: opened (flags %d)",
					  offs[i], fl[mode]);
			}
			CHECK(ret < 0 && ret >= -4095);
			CHECK(strlen(cfs_last_error()) > 0);
			if (mode == 0 && i < 2)
				printf("    byte %d: %s (%s)\n", offs[i], cfs_last_error(),
				       strerror(-ret));
		}
	}
	/* a zeroed primary superblock: not a chunkfs image */
	memcpy(img, pr.p, IMG_SIZE);
	memset(img, 0, IMG_BS);
	{
		struct cfs_fs *fs;

		CHECK(cfs_open_bdev(device_with(img, IMG_SIZE), 0, &fs) < 0);
		CHECK(strstr(cfs_last_error(), "magic") || strstr(cfs_last_error(), "chunkfs"));
	}
	free(img);
}

/* The device is smaller than the superblock says. */
static void test_truncated(void)
{
	/* the filesystem ends at total_blocks (the backup superblock is its
	 * last block); the device may be bigger, but not smaller */
	const uint64_t end = pr.sb.total_blocks * IMG_BS;
	const uint64_t sizes[] = { end - IMG_BS, end - 2 * IMG_BS, end / 2, 64 * IMG_BS,
				   2 * IMG_BS };
	size_t i;

	CHECK(end <= IMG_SIZE);

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct cfs_fs *fs = NULL;
		int ret = cfs_open_bdev(device_with(pr.p, sizes[i]),
					CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs);

		if (ret == 0) {
			cfs_close(fs);
			TEST_FAIL("image cut to %llu bytes opened",
				  (unsigned long long)sizes[i]);
		}
		CHECK(ret < 0 && ret >= -4095);
		if (!strstr(cfs_last_error(), "truncated"))
			TEST_FAIL("cut to %llu bytes: \"%s\" does not say truncated",
				  (unsigned long long)sizes[i], cfs_last_error());
	}
	printf("    %s\n", cfs_last_error());
}

/* Image files too small to hold a superblock. */
static void test_tiny_files(void)
{
	const char *tmp = getenv("TMPDIR");
	static const size_t sizes[] = { 0, 100, 1023 };
	char path[512];
	size_t i;

	snprintf(path, sizeof(path), "%s/cfs_corrupt_%d.img", tmp && *tmp ? tmp : "/tmp",
		 (int)getpid());
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct cfs_fs *fs = NULL;
		int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644), ret, fl;
		uint8_t junk[1024];

		CHECK(fd >= 0);
		/* a plausible start: the real superblock's first bytes */
		memcpy(junk, pr.p, sizeof(junk));
		CHECK_EQ(write(fd, junk, sizes[i]), (ssize_t)sizes[i]);
		close(fd);
		for (fl = 0; fl < 2; fl++) {
			ret = cfs_open(path, fl ? CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK : 0, &fs);
			if (ret == 0) {
				cfs_close(fs);
				unlink(path);
				TEST_FAIL("a %zu-byte file opened", sizes[i]);
			}
			CHECK(ret < 0 && ret >= -4095);
			CHECK(strlen(cfs_last_error()) > 0);
		}
		printf("    %zu-byte file: %s (%s)\n", sizes[i], cfs_last_error(),
		       strerror(-ret));
	}
	unlink(path);
}

static void test_build(void)
{
	build_pristine();
	find_metadata();
	CHECK(meta.count[DK_EXT] > 0);
	CHECK(meta.count[DK_DIR] > 1);
	CHECK(meta.count[DK_XATTR] > 0);
}

int main(void)
{
	verbose = getenv("CHUNKFS_CORRUPT_VERBOSE") != NULL;
	TEST_RUN(test_build);
	if (!pr.p) {
		printf("no image: nothing else can run\n");
		return TEST_DONE();
	}
	TEST_RUN(test_bad_superblock);
	TEST_RUN(test_truncated);
	TEST_RUN(test_tiny_files);
	TEST_RUN(test_rounds);
	free(pr.p);
	return TEST_DONE();
}

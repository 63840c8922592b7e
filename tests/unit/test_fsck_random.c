/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Random damage: fsck repairs whatever it is given, and a repaired image is
 * consistent, opens normally, reads and can be emptied.
 *
 * A populated image (4 chunks of 1 KiB blocks: directories with a
 * multi-node tree, inline and multi-block files, a file continued through
 * other chunks, a fragmented file with an extent node, xattrs in the inode
 * and in an overflow block, hard links and entries across chunks, symlinks)
 * is built on the fault device.  Its metadata blocks are found from the
 * geometry and by magic.  Each round damages a copy of it:
 *   - random bytes overwritten in a random metadata block, the block zeroed,
 *     or bits flipped (caught by checksums: fsck must cope with the loss);
 *   - fields changed to plausible values (another inode's number, a count
 *     off by one, a block of the data area, a flag) or to hostile ones, and
 *     the checksum resealed (what reaches fsck's logic);
 * then every chunk is marked dirty, or only the damaged one (fsck -y is then
 * followed by fsck -y -f, which must fix whatever references from clean
 * chunks were left), or fsck is forced; the image is saved to a file (on
 * /dev/shm when there is one) and:
 *   - cfs_fsck(YES) on an open with NOCHECK|REPAIR returns, within the
 *     round's alarm, without a sanitizer report, and leaves nothing unfixed;
 *   - a second, forced, read-only cfs_fsck finds no problem, cfs_check
 *     agrees, and every chunk is clean;
 *   - the image opens read-write with no flag (no chunk left dirty or in
 *     error), the whole tree is walked and every file, link and xattr read
 *     without an error;
 *   - everything is deleted again: no operation fails, and afterwards a
 *     forced check finds nothing and only the root and lost+found remain
 *     (no inode or block leaked by the repair).
 * A failing round keeps its damaged image as fsck_random_fail.img in
 * $TMPDIR for `chunkfs fsck -y -f` by hand, and prints its seed.
 *
 * Then the same again on the image with every chunk filled to its repair
 * reserve (inodes and blocks): whatever a round orphans must still reach
 * /lost+found.
 *
 * CHUNKFS_FSCK_SEED=N replays (round r of seed N uses seed N + r);
 * CHUNKFS_FSCK_ROUNDS=N sets the number of rounds (default 450 on the
 * populated image and 150 on the full one: about 15 s with sanitizers;
 * make crash-long uses thousands on each); CHUNKFS_FSCK_IMAGE=populated|full
 * runs only one of the two;
 * CHUNKFS_FSCK_VERBOSE=1 prints every round and fsck's messages;
 * CHUNKFS_FSCK_KEEP_GOING=1 reports every failing round and fails at the end.
 * No known fsck bug is tolerated: every failing round fails the test. */
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
#define BS 1024

static int full;                        /* its chunks are full (test_build_full) */
static struct damage_img pr;            /* the pristine image */
static struct damage_map meta;
static cfs_ino_t used_ino[600];
static int nused;
static int verbose;
static char path[512], keep_path[512];
static volatile sig_atomic_t cur_round = -1;

/* splitmix64: neighbouring seeds give unrelated rounds */
static uint64_t mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	x ^= x >> 31;
	return x ? x : 1;
}

/* ---- the populated image ------------------------------------------------------ */

static cfs_ino_t mkfile(struct cfs_fs *fs, cfs_ino_t dir, const char *name, size_t size,
			unsigned s)
{
	static uint8_t buf[1 << 16];
	cfs_ino_t ino;
	size_t off;

	CHECK_OK(cfs_mknod(fs, dir, name, S_IFREG | 0644, 0, 0, 0, &ino));
	for (off = 0; off < size; off += sizeof(buf)) {
		size_t n = size - off < sizeof(buf) ? size - off : sizeof(buf);

		fixture_fill(buf, n, s + (unsigned)off);
		CHECK_EQ(cfs_write(fs, ino, buf, n, off), (ssize_t)n);
	}
	return ino;
}

/* Empty files round-robin in dirs until no chunk can take another inode;
 * the first file headed in each chunk goes to grow[] when it has none. */
static void fill_inodes(struct cfs_fs *fs, const cfs_ino_t *dirs, int ndirs, const char *prefix,
			cfs_ino_t *grow)
{
	char name[32];
	int i, fails;

	for (i = 0, fails = 0; fails < ndirs; i++) {
		cfs_ino_t ino;
		int r;

		snprintf(name, sizeof(name), "%s-%04d", prefix, i);
		r = cfs_mknod(fs, dirs[i % ndirs], name, S_IFREG | 0644, 0, 0, 0, &ino);
		if (r == -ENOSPC) {
			fails++;
			continue;
		}
		CHECK_OK(r);
		fails = 0;
		if (!grow[CFS_INO_CHUNK(ino)])
			grow[CFS_INO_CHUNK(ino)] = ino;
	}
}

/* Fill every chunk to its repair reserve: empty files until no chunk can
 * take another inode, then one file headed in each chunk written until no
 * block is left, then empty files again for the inodes the placement
 * policy (alloc.c) kept as a way in to blocks that are now gone. */
static void fill_chunks(struct cfs_fs *fs, const cfs_ino_t *dirs, int ndirs)
{
	static uint8_t buf[BS];
	cfs_ino_t grow[4] = { 0 }, more[4] = { 0 };
	uint64_t size[4] = { 0 };
	uint32_t c;

	fill_inodes(fs, dirs, ndirs, "fill", grow);
	for (c = 0; c < 4; c++) {
		ssize_t w;

		CHECK(grow[c] != 0);
		fixture_fill(buf, BS, c);
		while ((w = cfs_write(fs, grow[c], buf, BS, size[c])) > 0)
			size[c] += (uint64_t)w;
		CHECK_EQ(w, -ENOSPC);
	}
	fill_inodes(fs, dirs, ndirs, "last", more);
	for (c = 0; c < 4; c++) {
		struct cfs_chunk_info ci;

		CHECK_OK(cfs_get_chunk_info(fs, c, &ci));
		/* one inode more may stay: a chunk's last one above the reserve
		 * goes only to a file of a directory of its own, as one of
		 * another directory would need a stub there too */
		if (ci.free_inodes > CFS_REPAIR_INODES + 1 || ci.free_blocks > CFS_REPAIR_BLOCKS)
			printf("full image: chunk %u: %llu inodes %llu blocks free\n", c,
			       (unsigned long long)ci.free_inodes,
			       (unsigned long long)ci.free_blocks);
		CHECK(ci.free_inodes <= CFS_REPAIR_INODES + 1 && ci.free_blocks <= CFS_REPAIR_BLOCKS);
	}
}

static void build_pristine(void)
{
	/* a fixed uuid fixes the name hashes, hence the directory trees: the
	 * image, and so every seed's damage, is the same on every run */
	static const uint8_t uuid[16] = { 0x3d, 0x51, 0x0a, 0x7e, 0x22, 0x9c, 0x4b, 0x10,
					  0x8f, 0x61, 0x05, 0xc2, 0x77, 0xe4, 0x19, 0xab };
	struct cfs_mkfs_opts o = { .block_size = BS, .chunks = 4, .inodes = 512,
				   .label = "fsck-random", .uuid = uuid, .now = 1700000000 };
	struct cfs_bdev *dev;
	struct cfs_fs *fs;
	cfs_ino_t d1, d2, d3, sub, many, f, g, multi, big, frag, pad, ino;
	static uint8_t buf[BS];
	char name[64];
	int i;

	/* full chunks on the fixed inode tables: with inode clusters a chunk
	 * runs out of inodes only with its blocks */
	if (full)
		o.dyninodes = -1;
	CHECK_OK(fixture_mkfs(IMG_SIZE, &o, &dev, &fs));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d1", 0755, 0, 0, &d1));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d2", 0755, 0, 0, &d2));
	CHECK_OK(cfs_mkdir(fs, CFS_ROOT_INO, "d3", 0755, 0, 0, &d3));
	CHECK(CFS_INO_CHUNK(d1) != CFS_INO_CHUNK(d2));
	CHECK_OK(cfs_mkdir(fs, d1, "sub", 0700, 0, 0, &sub));
	CHECK_OK(cfs_mkdir(fs, d2, "many", 0755, 0, 0, &many));
	for (i = 0; i < 60; i++) {
		snprintf(name, sizeof(name), "entry-with-a-longish-name-%04d", i);
		mkfile(fs, many, name, (size_t)(i % 7) * 150, (unsigned)i);
	}
	f = mkfile(fs, d1, "small", 13, 1);
	CHECK_OK(cfs_setxattr(fs, f, "user.a", "1", 1, 0));
	fixture_fill(buf, 600, 9);
	CHECK_OK(cfs_setxattr(fs, f, "user.big", buf, 600, 0));
	multi = mkfile(fs, d1, "multi", 20000, 2);
	CHECK_OK(cfs_setxattr(fs, multi, "user.m", "mm", 2, 0));
	mkfile(fs, sub, "f1", 40, 3);
	mkfile(fs, sub, "f2", 3000, 4);
	g = mkfile(fs, d2, "g", 5000, 5);
	mkfile(fs, d2, "sparse", 0, 6);
	CHECK_OK(cfs_lookup(fs, d2, "sparse", &ino));
	CHECK_EQ(cfs_write(fs, ino, "x", 1, 200000), 1);
	/* a fragmented file: its extent tree needs a node block */
	CHECK_OK(cfs_mknod(fs, d1, "frag", S_IFREG | 0644, 0, 0, 0, &frag));
	CHECK_OK(cfs_mknod(fs, d1, "pad", S_IFREG | 0644, 0, 0, 0, &pad));
	for (i = 0; i < 24; i++) {
		fixture_fill(buf, BS, (unsigned)i);
		CHECK_EQ(cfs_write(fs, frag, buf, BS, (uint64_t)i * BS), BS);
		CHECK_EQ(cfs_write(fs, pad, buf, BS, (uint64_t)i * BS), BS);
	}
	CHECK_OK(cfs_unlink(fs, d1, "pad"));
	CHECK_OK(cfs_symlink(fs, d2, "sym", "/d1/small", 0, 0, &ino));
	{
		char longlink[300];

		memset(longlink, 'L', sizeof(longlink) - 1);
		longlink[0] = '/';
		longlink[sizeof(longlink) - 1] = 0;
		CHECK_OK(cfs_symlink(fs, d2, "longsym", longlink, 0, 0, &ino));
	}
	CHECK_OK(cfs_mkdir(fs, d2, "empty", 0755, 0, 0, &ino));
	CHECK_OK(cfs_mknod(fs, d2, "fifo", S_IFIFO | 0644, 0, 0, 0, &ino));
	/* cross-chunk names: stubs in the targets' chunks */
	CHECK_OK(cfs_link(fs, g, d1, "link-g"));
	CHECK_OK(cfs_link(fs, multi, d2, "link-multi"));
	CHECK_OK(cfs_link(fs, g, CFS_ROOT_INO, "xlink"));
	CHECK_OK(cfs_rename(fs, d1, "sub", d2, "sub-moved", 0));
	/* bigger than a chunk: continuations */
	big = mkfile(fs, d3, "big", 1300000, 7);
	{
		uint32_t chunks[8];

		CHECK(cfs_file_chunks(fs, big, chunks, 8) >= 2);
	}
	if (full)
		fill_chunks(fs, (cfs_ino_t[]){ d1, d2, d3, many }, 4);
	CHECK_EQ(cfs_check(fs, NULL, NULL), 0);
	CHECK_OK(cfs_close(fs));
	CHECK_OK(damage_img_take(&pr, dev));
	CHECK(pr.size == IMG_SIZE && pr.bs == BS);
}

/* ---- damage ------------------------------------------------------------------------ */

/* A value for a field of width w: plausible (an in-use inode number, a
 * small count, a data-area block) or hostile. */
static uint64_t value(int w, uint64_t old)
{
	switch (below(8)) {
	case 0: return used_ino[below((uint64_t)nused)];
	case 1: return old + 1;
	case 2: return old ? old - 1 : 1;
	case 3: return 0;
	case 4: return pr.sb.data_start + below(pr.sb.chunk_blocks - pr.sb.data_start);
	case 5: return below(16);
	case 6: return old ^ (1ull << below((uint64_t)w * 8));
	default: return rnd();
	}
}

#define R0 (CFS_OFF_IN_VAR + CFS_BTN_SIZE)   /* an inode's first extent */
#define N0 CFS_OFF_NODE_RECS                /* a node block's first record */
#define NH CFS_OFF_NODE_HDR                 /* a node block's B+tree header */

/* The fields changed: of an inode, a chunk header, a directory or extent
 * node (its header, its first records) and an xattr block (its header, its
 * first entry). */
static const struct damage_field ifld[] = {
	{ CFS_OFF_IN_MODE, 2 }, { CFS_OFF_IN_FLAGS, 2 }, { CFS_OFF_IN_NLINK, 4 },
	{ CFS_OFF_IN_SIZE, 8 }, { CFS_OFF_IN_XATTR_BLK, 4 }, { CFS_OFF_IN_NBLOCKS, 8 },
	{ CFS_OFF_IN_HEAD, 4 }, { CFS_OFF_IN_BACK, 4 }, { CFS_OFF_IN_LO, 8 },
	{ CFS_OFF_IN_HI, 8 }, { CFS_OFF_IN_CONT, 4 }, { CFS_OFF_IN_CONT + 4, 4 },
	{ CFS_OFF_IN_CONT + 8, 4 }, { CFS_OFF_IN_CONT + 12, 4 }, { CFS_OFF_IN_XATTR_LEN, 2 },
	{ CFS_OFF_IN_VAR + CFS_OFF_BTN_LEVEL, 2 }, { CFS_OFF_IN_VAR + CFS_OFF_BTN_NREC, 2 },
	{ R0 + CFS_OFF_EXT_LBLK, 8 }, { R0 + CFS_OFF_EXT_PBLK, 4 }, { R0 + CFS_OFF_EXT_LEN, 4 },
};
static const struct damage_field hfld[] = {
	{ CFS_OFF_CH_STATE, 4 }, { CFS_OFF_CH_FREE_BLK, 4 }, { CFS_OFF_CH_FREE_INO, 4 },
	{ CFS_OFF_CH_BBM_INIT, 4 }, { CFS_OFF_CH_IBM_INIT, 4 }, { CFS_OFF_CH_ITAB_INIT, 4 },
	{ CFS_OFF_CH_NCONTS, 4 }, { CFS_OFF_CH_NSTUBS, 4 }, { CFS_OFF_CH_NDIRS, 4 },
};
static const struct damage_field dfld[] = {
	{ NH + CFS_OFF_BTN_LEVEL, 2 }, { NH + CFS_OFF_BTN_NREC, 2 }, { NH + CFS_OFF_BTN_USED, 4 },
	{ CFS_OFF_NODE_OWNER, 4 }, { N0 + CFS_OFF_DE_HASH, 8 }, { N0 + CFS_OFF_DE_INO, 4 },
	{ N0 + CFS_OFF_DE_STUB, 4 }, { N0 + CFS_OFF_DE_TYPE, 1 }, { N0 + CFS_OFF_DE_NAMELEN, 1 },
};
static const struct damage_field efld[] = {
	{ NH + CFS_OFF_BTN_LEVEL, 2 }, { NH + CFS_OFF_BTN_NREC, 2 }, { NH + CFS_OFF_BTN_USED, 4 },
	{ CFS_OFF_NODE_OWNER, 4 }, { N0 + CFS_OFF_EXT_LBLK, 8 }, { N0 + CFS_OFF_EXT_PBLK, 4 },
	{ N0 + CFS_OFF_EXT_LEN, 4 }, { N0 + CFS_EXT_SIZE + CFS_OFF_EXT_LBLK, 8 },
};
static const struct damage_field xfld[] = {
	{ CFS_OFF_XB_USED, 4 }, { CFS_OFF_XB_OWNER, 4 }, { CFS_OFF_XB_DATA + CFS_OFF_XE_NS, 1 },
	{ CFS_OFF_XB_DATA + CFS_OFF_XE_NLEN, 1 }, { CFS_OFF_XB_DATA + CFS_OFF_XE_VLEN, 2 },
};

#define PICK(t) (t)[below(sizeof(t) / sizeof((t)[0]))]

/* Change fields the checksum then covers again. */
static void field_damage(const struct damage_img *img, const struct damage_meta *m, char *d,
			 size_t dn)
{
	uint8_t *p = damage_blk(img, m->blk);
	uint32_t isz = img->sb.inode_size;
	size_t used = strlen(d);
	int n = 1 + (int)below(3), i;

	for (i = 0; i < n; i++) {
		struct damage_field f;

		switch (m->k) {
		case DK_ITABLE: {
			int slots[CFS_MAX_BLOCK / CFS_MIN_INODE], ns = 0, j, k;

			for (j = 0; j < (int)img->ipb; j++)
				if (!cfs_dinode_is_zero(p + j * isz, isz))
					slots[ns++] = j;
			if (!ns)
				return;
			j = slots[below((uint64_t)ns)];
			k = (int)below(sizeof(ifld) / sizeof(ifld[0]));
			f = (struct damage_field){ j * (int)isz + ifld[k].off, ifld[k].w };
			if (ifld[k].off == CFS_OFF_IN_FLAGS && below(2)) {   /* one flag bit */
				damage_put(p + f.off, 2, damage_get(p + f.off, 2) ^ (1u << below(4)));
				goto next;
			}
			break;
		}
		case DK_CHDR:
			f = PICK(hfld);
			break;
		case DK_BBM: case DK_IBM:
			/* a run of bits set or cleared */
			f = (struct damage_field){
				CFS_OFF_BM_BITS + (int)below(BS - CFS_OFF_BM_BITS), 1 };
			p[f.off] = below(2) ? (uint8_t)(p[f.off] | (1u << below(8))) :
					      (uint8_t)(p[f.off] & ~(1u << below(8)));
			goto next;
		case DK_DIR:
			f = PICK(dfld);
			break;
		case DK_EXT:
			f = PICK(efld);
			break;
		case DK_XATTR:
			f = PICK(xfld);
			break;
		default:
			return;
		}
		damage_put(p + f.off, f.w, value(f.w, damage_get(p + f.off, f.w)));
next:
		used += (size_t)snprintf(d + used, used < dn ? dn - used : 0, " @%d", f.off);
	}
	damage_reseal(img, m->blk);
}

/* Chunk only (or every chunk if only < 0) whose header is still a header:
 * state DIRTY (resealed). */
static void mark_dirty(const struct damage_img *img, int only)
{
	uint32_t c;

	for (c = 0; c < img->sb.nchunks; c++) {
		uint64_t b = damage_cbase(img, c);
		uint8_t *p = damage_blk(img, b);
		struct cfs_chunk_hdr h;

		if (only >= 0 && c != (uint32_t)only)
			continue;
		if (cfs_meta_verify(p, BS, img->seed, CFS_MAGIC_CHUNK, b) < 0)
			continue;
		cfs_chunk_hdr_decode(p, &h);
		h.state |= CFS_STATE_DIRTY;
		cfs_chunk_hdr_encode(&h, p);
		cfs_meta_csum_set(p, BS, img->seed);
	}
}

#define M_FORCE     0
#define M_ALL_DIRTY 1
#define M_ONE_DIRTY 2

static void damage(uint8_t *img, char *d, size_t dn, int *mode)
{
	const struct damage_meta *m = &meta.b[below((uint64_t)meta.n)];
	struct damage_img di = pr;
	uint8_t *p = img + m->blk * BS;
	int how = (int)below(10), i, n;

	di.p = img;
	/* the checksum-valid damage reaches the checker's logic: most rounds */
	if (m->k == DK_SB && how >= 5)
		how = (int)below(5);   /* a resealed superblock is another filesystem */
	snprintf(d, dn, "%s at block %llu: ", damage_kind_name[m->k],
		 (unsigned long long)m->blk);
	if (how == 0) {
		memset(p, 0, BS);
		strncat(d, "zeroed", dn - strlen(d) - 1);
	} else if (how <= 2) {
		n = 1 + (int)below(16);
		for (i = 0; i < n; i++)
			p[below(BS)] = (uint8_t)rnd();
		snprintf(d + strlen(d), dn - strlen(d), "%d random bytes", n);
	} else if (how <= 4) {
		n = 1 + (int)below(8);
		for (i = 0; i < n; i++)
			p[below(BS)] ^= (uint8_t)(1u << below(8));
		snprintf(d + strlen(d), dn - strlen(d), "%d bits flipped", n);
	} else {
		strncat(d, "fields resealed", dn - strlen(d) - 1);
		field_damage(&di, m, d, dn);
	}
	/* force: fsck -f; all dirty; or only the damaged chunk dirty, as after
	 * a crash confined to it (fsck then checks that chunk, plus whatever
	 * escalation adds) */
	*mode = (int)below(4);
	if (*mode == M_FORCE)
		strncat(d, ", fsck -f", dn - strlen(d) - 1);
	else if (*mode == M_ONE_DIRTY && m->k != DK_SB) {
		mark_dirty(&di, (int)((m->blk - pr.sb.first_chunk_block) / pr.sb.chunk_blocks));
		strncat(d, ", its chunk dirty", dn - strlen(d) - 1);
	} else {
		*mode = M_ALL_DIRTY;
		mark_dirty(&di, -1);
		strncat(d, ", all chunks dirty", dn - strlen(d) - 1);
	}
}

/* ---- after the repair ----------------------------------------------------------------- */

static char fail_msg[2048];

#define ROUND_FAIL(...)                                                              \
	do {                                                                         \
		if (!fail_msg[0])                                                    \
			snprintf(fail_msg, sizeof(fail_msg), __VA_ARGS__);           \
	} while (0)

/* Walk and read everything; returns the number of objects. */
static int walk(struct cfs_fs *fs, cfs_ino_t dir, const char *p, int depth)
{
	static uint8_t buf[1 << 16];
	struct fixture_ents *e = fixture_ents_new(96, 1);
	int i, n = 0, ret;

	CHECK(e);
	if (depth > 16) {
		ROUND_FAIL("%s: directories nested deeper than 16", p);
		free(e);
		return 0;
	}
	ret = fixture_readdir(fs, dir, 0, e);
	if (ret < 0)
		ROUND_FAIL("readdir %s: %s", p, strerror(-ret));
	for (i = 0; i < e->n; i++) {
		char sub[600], names[512], t[4200];
		struct cfs_stat st;
		cfs_ino_t l;
		ssize_t r;

		snprintf(sub, sizeof(sub), "%s/%s", p, e->name[i]);
		n++;
		if (cfs_lookup(fs, dir, e->name[i], &l) < 0 || l != e->ino[i])
			ROUND_FAIL("lookup %s does not find what readdir listed", sub);
		ret = cfs_getattr(fs, e->ino[i], &st);
		if (ret < 0) {
			ROUND_FAIL("getattr %s: %s", sub, strerror(-ret));
			continue;
		}
		if (S_ISDIR(st.mode)) {
			n += walk(fs, e->ino[i], sub, depth + 1);
		} else if (S_ISREG(st.mode)) {
			uint64_t off;

			for (off = 0; off < st.size && off < (8u << 20); off += sizeof(buf)) {
				r = cfs_read(fs, e->ino[i], buf, sizeof(buf), off);
				if (r < 0) {
					ROUND_FAIL("read %s at %llu: %s", sub,
						   (unsigned long long)off, strerror((int)-r));
					break;
				}
			}
		} else if (S_ISLNK(st.mode)) {
			r = cfs_readlink(fs, e->ino[i], t, sizeof(t));
			if (r < 0)
				ROUND_FAIL("readlink %s: %s", sub, strerror((int)-r));
		}
		r = cfs_listxattr(fs, e->ino[i], names, sizeof(names));
		if (r < 0) {
			ROUND_FAIL("listxattr %s: %s", sub, strerror((int)-r));
		} else {
			ssize_t k = 0;

			while (k < r) {
				ssize_t v = cfs_getxattr(fs, e->ino[i], names + k, t, sizeof(t));

				if (v < 0)
					ROUND_FAIL("getxattr %s %s: %s", sub, names + k,
						   strerror((int)-v));
				k += (ssize_t)strnlen(names + k, (size_t)(r - k)) + 1;
			}
		}
	}
	free(e);
	return n;
}

/* Delete everything below dir (and, unless top, dir's entries). */
static void delete_all(struct cfs_fs *fs, cfs_ino_t dir, const char *p, int depth)
{
	struct fixture_ents *e = fixture_ents_new(96, 1);
	int i, ret, pass;

	CHECK(e);
	for (pass = 0; pass < 8; pass++) {   /* > 96 entries: again */
		ret = fixture_readdir(fs, dir, 0, e);
		if (ret < 0) {
			ROUND_FAIL("readdir %s before deleting: %s", p, strerror(-ret));
			break;
		}
		for (i = 0; i < e->n; i++) {
			struct cfs_stat st;
			char sub[600];

			snprintf(sub, sizeof(sub), "%s/%s", p, e->name[i]);
			if (depth == 0 && !strcmp(e->name[i], "lost+found")) {
				if (pass == 0)
					delete_all(fs, e->ino[i], sub, depth + 1);
				continue;
			}
			if (cfs_getattr(fs, e->ino[i], &st) < 0)
				continue;
			if (S_ISDIR(st.mode)) {
				if (depth < 16)
					delete_all(fs, e->ino[i], sub, depth + 1);
				ret = cfs_rmdir(fs, dir, e->name[i]);
			} else {
				ret = cfs_unlink(fs, dir, e->name[i]);
			}
			if (ret < 0)
				ROUND_FAIL("deleting %s: %s", sub, strerror(-ret));
		}
		if (!e->overflow || fail_msg[0])
			break;
	}
	free(e);
}

/* What fsck and cfs_check said in this round: [0] the repair, [1] the
 * second run, [2] cfs_check. */
static char said[3][16384];

static void report(void *ctx, const char *msg)
{
	char *log = ctx;
	size_t used;

	if (verbose)
		printf("      %s\n", msg);
	if (!log)
		return;
	used = strlen(log);
	if (used + strlen(msg) + 2 < sizeof(said[0])) {
		strcpy(log + used, msg);
		strcat(log + used, "\n");
	}
}

static void save(const uint8_t *img, const char *to)
{
	int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	CHECK(fd >= 0);
	CHECK_EQ(write(fd, img, IMG_SIZE), (ssize_t)IMG_SIZE);
	close(fd);
}

struct totals {
	long rounds, found, problems, escalated, sb_restored, refused, one_dirty,
	     left_for_forced;
};

/* From the chunks' counts: statfs's free inodes leave the repair reserve out. */
static uint64_t inodes_in_use(struct cfs_fs *fs)
{
	struct cfs_chunk_info ci;
	uint64_t n = 0;
	uint32_t c;

	for (c = 0; cfs_get_chunk_info(fs, c, &ci) == 0; c++)
		n += ci.inodes - ci.free_inodes;
	return n;
}

/* One round on the damaged image saved in path.  Sets fail_msg. */
static void one_round(struct totals *t, int mode, cfs_ino_t *lpf_after)
{
	struct cfs_fsck_opts o = { .mode = CFS_FSCK_YES, .force = mode == M_FORCE,
				   .report = report, .ctx = said[0] };
	struct cfs_fsck_result r;
	struct cfs_fs *fs;
	int ret;
	uint32_t c;

	said[0][0] = said[1][0] = said[2][0] = 0;
	*lpf_after = 0;

	ret = cfs_open(path, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs);
	if (ret < 0) {
		/* one damaged block: the backup superblock and header rebuilds
		 * should always let fsck in */
		ROUND_FAIL("repair open refused: %s", cfs_last_error());
		t->refused++;
		return;
	}
	ret = cfs_fsck(fs, &o, &r);
	if (ret < 0)
		ROUND_FAIL("cfs_fsck YES: %s", strerror(-ret));
	else if (r.unfixed)
		ROUND_FAIL("fsck -y left %llu problems unfixed", (unsigned long long)r.unfixed);
	t->found += r.problems > 0;
	t->problems += (long)r.problems;
	t->escalated += r.escalated;
	t->sb_restored += r.sb_restored;
	ret = cfs_close(fs);
	if (ret < 0)
		ROUND_FAIL("close after the repair: %s", strerror(-ret));
	if (fail_msg[0])
		return;
	if (mode == M_ONE_DIRTY) {
		/* damage is not a crash: what it did to references from clean
		 * chunks may be left for a forced check, which must fix it */
		o.force = 1;
		o.ctx = said[0];
		if (cfs_open(path, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs) < 0) {
			ROUND_FAIL("open for the forced check: %s", cfs_last_error());
			return;
		}
		ret = cfs_fsck(fs, &o, &r);
		if (ret < 0)
			ROUND_FAIL("forced cfs_fsck YES: %s", strerror(-ret));
		else if (r.unfixed)
			ROUND_FAIL("fsck -y -f left %llu problems unfixed",
				   (unsigned long long)r.unfixed);
		t->left_for_forced += r.problems > 0;
		if (cfs_close(fs) < 0)
			ROUND_FAIL("close after the forced repair");
		if (fail_msg[0])
			return;
	}

	/* second run: forced, read-only, must find nothing */
	o.mode = CFS_FSCK_NO;
	o.force = 1;
	o.ctx = said[1];
	ret = cfs_open(path, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs);
	if (ret < 0) {
		ROUND_FAIL("open after the repair: %s", cfs_last_error());
		return;
	}
	ret = cfs_fsck(fs, &o, &r);
	if (ret < 0 || r.problems)
		ROUND_FAIL("second fsck -n -f: %d, %llu problems (rerun with "
			   "CHUNKFS_FSCK_VERBOSE=1)", ret, (unsigned long long)r.problems);
	ret = cfs_check(fs, report, said[2]);
	if (ret != 0)
		ROUND_FAIL("cfs_check after the repair: %d problems (CHUNKFS_FSCK_VERBOSE=1 "
			   "shows them)", ret);
	for (c = 0; c < pr.sb.nchunks; c++) {
		struct cfs_chunk_info ci;

		if (cfs_get_chunk_info(fs, c, &ci) == 0 && ci.state != CFS_CHUNK_CLEAN)
			ROUND_FAIL("chunk %u left in state %d", c, ci.state);
	}
	cfs_close(fs);
	if (fail_msg[0])
		return;

	/* a normal read-write open: refused if anything still needs a check */
	ret = cfs_open(path, 0, &fs);
	if (ret < 0) {
		ROUND_FAIL("normal open after the repair: %s", cfs_last_error());
		return;
	}
	/* FORMAT.md: /lost+found is inode 2 in every chunkfs */
	if (cfs_lookup(fs, CFS_ROOT_INO, "lost+found", lpf_after) < 0) {
		*lpf_after = 0;
		ROUND_FAIL("no /lost+found after the repair");
	} else if (*lpf_after != 2) {
		ROUND_FAIL("/lost+found is inode %u after the repair, not 2", *lpf_after);
	}
	walk(fs, CFS_ROOT_INO, "", 0);
	if (!fail_msg[0])
		delete_all(fs, CFS_ROOT_INO, "", 0);
	ret = cfs_close(fs);
	if (ret < 0)
		ROUND_FAIL("close after deleting everything: %s", strerror(-ret));
	if (fail_msg[0])
		return;
	ret = cfs_open(path, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs);
	if (ret < 0) {
		ROUND_FAIL("open after deleting everything: %s", cfs_last_error());
		return;
	}
	o.ctx = NULL;
	ret = cfs_fsck(fs, &o, &r);
	if (ret < 0 || r.problems)
		ROUND_FAIL("fsck -n -f after deleting everything: %llu problems",
			   (unsigned long long)r.problems);
	if (inodes_in_use(fs) != 2)
		ROUND_FAIL("after deleting everything %llu inodes are in use, not 2",
			   (unsigned long long)inodes_in_use(fs));
	cfs_close(fs);
}

static void test_random_damage(void)
{
	const char *s = getenv("CHUNKFS_FSCK_SEED");
	const char *rs = getenv("CHUNKFS_FSCK_ROUNDS");
	uint64_t seed = s ? strtoull(s, NULL, 0) : 0xF5C4D00Dull;
	long rounds = rs ? atol(rs) : full ? 150 : 450, i, nfailed = 0;
	int keep_going = getenv("CHUNKFS_FSCK_KEEP_GOING") != NULL;
	static uint8_t *img;
	struct totals t = { 0 };
	char desc[256];

	if (!img)
		img = malloc(IMG_SIZE);
	CHECK(img);
	printf("    %s image, seed %llu (CHUNKFS_FSCK_IMAGE=%s CHUNKFS_FSCK_SEED=%llu to "
	       "replay), %ld rounds\n", full ? "full" : "populated", (unsigned long long)seed,
	       full ? "full" : "populated", (unsigned long long)seed, rounds);
	signal(SIGALRM, damage_on_alarm);
	for (i = 0; i < rounds; i++) {
		cfs_ino_t lpf;
		int mode;

		cur_round = (int)i;
		rng = mix(seed + (uint64_t)i);
		memcpy(img, pr.p, IMG_SIZE);
		damage(img, desc, sizeof(desc), &mode);
		if (verbose)
			printf("    round %ld: %s\n", i, desc);
		save(img, path);
		fail_msg[0] = 0;
		alarm(60);
		one_round(&t, mode, &lpf);
		t.one_dirty += mode == M_ONE_DIRTY;
		alarm(0);
		t.rounds++;
		if (fail_msg[0] && keep_going) {
			printf("    FAILED round %ld (seed %llu): %s: %s\n", i,
			       (unsigned long long)(seed + (uint64_t)i), desc, fail_msg);
			nfailed++;
		} else if (fail_msg[0]) {
			save(img, keep_path);
			TEST_FAIL("round %ld (CHUNKFS_FSCK_IMAGE=%s CHUNKFS_FSCK_SEED=%llu "
				  "CHUNKFS_FSCK_ROUNDS=1 replays it): %s: %s; the damaged image "
				  "is kept in %s", i, full ? "full" : "populated",
				  (unsigned long long)(seed + (uint64_t)i), desc, fail_msg,
				  keep_path);
		}
	}
	if (nfailed)
		TEST_FAIL("%ld of %ld rounds failed", nfailed, rounds);
	printf("    %ld rounds: fsck found damage in %ld (%ld problems), %ld escalated "
	       "to every chunk, %ld restored the superblock; %ld with only the damaged "
	       "chunk dirty, of which %ld left something for a forced check\n", t.rounds,
	       t.found, t.problems, t.escalated, t.sb_restored, t.one_dirty,
	       t.left_for_forced);
	/* the damage must mostly be noticed, else this tests nothing */
	CHECK(rounds < 20 || t.found > rounds / 2);
}

static void test_build(void)
{
	int i;

	build_pristine();
	damage_find_metadata(&pr, &meta, 0);
	nused = damage_used_inodes(&pr, used_ino, (int)(sizeof(used_ino) / sizeof(used_ino[0])));
	printf("    metadata blocks:");
	for (i = 0; i < DK_N; i++)
		if (i != DK_BACKUP)
			printf(" %s %d%s", damage_kind_name[i], meta.count[i],
			       i + 1 < DK_N ? "," : "\n");
	CHECK(meta.count[DK_EXT] > 0 && meta.count[DK_DIR] > 4 && meta.count[DK_XATTR] > 0);
}

/* The same tree with every chunk full but for the repair reserve: fsck
 * must still reconnect whatever the damage orphans (FORMAT.md section 16.4). */
static void test_build_full(void)
{
	test_build();
}

static void test_random_damage_full(void)
{
	test_random_damage();
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	const char *image = getenv("CHUNKFS_FSCK_IMAGE");

	verbose = getenv("CHUNKFS_FSCK_VERBOSE") != NULL;
	snprintf(path, sizeof(path), "%s/cfs_fsck_random_%d.img",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : tmp && *tmp ? tmp : "/tmp",
		 (int)getpid());
	snprintf(keep_path, sizeof(keep_path), "%s/fsck_random_fail.img",
		 tmp && *tmp ? tmp : "/tmp");
	if (!image || !strcmp(image, "populated")) {
		TEST_RUN(test_build);
		if (pr.p)
			TEST_RUN(test_random_damage);
		free(pr.p);
		pr.p = NULL;
	}
	if (!image || !strcmp(image, "full")) {
		full = 1;
		TEST_RUN(test_build_full);
		if (pr.p)
			TEST_RUN(test_random_damage_full);
		free(pr.p);
	}
	unlink(path);
	return TEST_DONE();
}

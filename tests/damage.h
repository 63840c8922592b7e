/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Damaging images: what the corruption tests (test_corrupt.c,
 * test_fsck_random.c), the fsck case maker (tests/fsck/mkcase.c) and the
 * fuzz harness share.
 *
 * An image is held in memory with the geometry of its superblock.  Its
 * metadata blocks are found from that geometry (superblocks, chunk headers,
 * initialised bitmap and inode-table blocks) and by magic in the data areas
 * (extent, directory and xattr blocks).  Every field a damage changes is
 * addressed by the names of src/format.h, and every checksum is recomputed
 * by the format layer's own functions, so a format change touches
 * src/format*.[ch] and docs/FORMAT.md only.
 *
 * Header-only, and without test.h's CHECK: mkcase and the fuzz harness are
 * built from one source file each.  Functions return 0 or a negative errno.
 */
#ifndef CHUNKFS_TEST_DAMAGE_H
#define CHUNKFS_TEST_DAMAGE_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bdev.h"
#include "chunkfs.h"
#include "format.h"
#include "rnd.h"

/* SIGALRM handler: a round that hangs aborts (tests/run.sh counts a death
 * by signal as a failure). */
static inline void damage_on_alarm(int sig)
{
	static const char msg[] = "  HANG: a round took longer than its alarm\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
	abort();
}

/* ---- an image in memory -------------------------------------------------- */

struct damage_img {
	uint8_t *p;             /* the image's bytes */
	uint64_t size;
	struct cfs_super sb;    /* its geometry */
	uint32_t bs, seed, ipb;
};

/* Read the geometry of the image at p (size bytes) from its primary
 * superblock (checksum and magic only: the fuzz harness gives it any
 * bytes). */
static inline int damage_img_init(struct damage_img *m, uint8_t *p, uint64_t size)
{
	int ret = cfs_super_decode(p, &m->sb);

	if (ret < 0)
		return ret;
	if (!m->sb.inode_size || m->sb.inode_size > m->sb.block_size)
		return -EUCLEAN;
	m->p = p;
	m->size = size;
	m->bs = m->sb.block_size;
	m->seed = cfs_fs_seed(m->sb.uuid);
	m->ipb = m->bs / m->sb.inode_size;
	return 0;
}

/* Take the bytes of a fault device (then destroyed) as the image. */
static inline int damage_img_take(struct damage_img *m, struct cfs_bdev *dev)
{
	uint64_t size;
	uint8_t *bytes = cfs_bdev_fault_bytes(dev, &size), *p = bytes ? malloc(size) : NULL;
	int ret = -ENOMEM;

	if (p) {
		memcpy(p, bytes, size);
		ret = damage_img_init(m, p, size);
		if (ret < 0)
			free(p);
	}
	cfs_bdev_destroy(dev);
	return ret;
}

static inline uint8_t *damage_blk(const struct damage_img *m, uint64_t b)
{
	return m->p + b * m->bs;
}

/* First absolute block of chunk c. */
static inline uint64_t damage_cbase(const struct damage_img *m, uint32_t c)
{
	return m->sb.first_chunk_block + (uint64_t)c * m->sb.chunk_blocks;
}

/* Inode table block k of chunk c. */
static inline uint64_t damage_itable(const struct damage_img *m, uint32_t c, uint32_t k)
{
	return damage_cbase(m, c) + 1 + m->sb.bbm_blocks + m->sb.ibm_blocks + k;
}

/* The inode_size bytes of inode ino. */
static inline uint8_t *damage_inode(const struct damage_img *m, cfs_ino_t ino)
{
	uint32_t l = CFS_INO_LOCAL(ino) - 1;

	return damage_blk(m, damage_itable(m, CFS_INO_CHUNK(ino), l / m->ipb)) +
	       (l % m->ipb) * m->sb.inode_size;
}

/* Reseal every inode in use (not all zero) of inode-table block k of
 * chunk c. */
static inline void damage_reseal_itable(const struct damage_img *m, uint32_t c, uint32_t k)
{
	uint8_t *p = damage_blk(m, damage_itable(m, c, k));
	uint32_t isz = m->sb.inode_size, j;

	for (j = 0; j < m->ipb; j++)
		if (!cfs_dinode_is_zero(p + j * isz, isz))
			cfs_dinode_csum_set(p + j * isz, isz, m->seed,
					    CFS_INO_MAKE(c, k * m->ipb + j + 1));
}

/* Recompute whatever checksum covers block b, so that a damage passes it:
 * a superblock's, an inode table block's inodes', or a metadata block's. */
static inline void damage_reseal(const struct damage_img *m, uint64_t b)
{
	uint64_t rel = b - m->sb.first_chunk_block, r = rel % m->sb.chunk_blocks;
	uint64_t first_itable = 1 + m->sb.bbm_blocks + m->sb.ibm_blocks;

	if (b == 0 || b == m->sb.backup_sb_block)
		cfs_super_csum_set(damage_blk(m, b));
	else if (r >= first_itable && r < m->sb.data_start)
		damage_reseal_itable(m, (uint32_t)(rel / m->sb.chunk_blocks),
				     (uint32_t)(r - first_itable));
	else
		cfs_meta_csum_set(damage_blk(m, b), m->bs, m->seed);
}

/* ---- where the metadata is ----------------------------------------------- */

enum damage_kind {
	DK_SB, DK_BACKUP, DK_CHDR, DK_BBM, DK_IBM, DK_ITABLE, DK_EXT, DK_DIR, DK_XATTR,
	DK_N
};

static const char *const damage_kind_name[DK_N] = {
	"superblock", "backup superblock", "chunk header", "block bitmap", "inode bitmap",
	"inode table", "extent node", "directory node", "xattr block",
};

struct damage_meta {
	uint64_t blk;
	enum damage_kind k;
};

struct damage_map {
	struct damage_meta b[4096];
	int n;
	int count[DK_N];
};

static inline void damage_map_add(struct damage_map *map, uint64_t blk, enum damage_kind k)
{
	if (map->n < (int)(sizeof(map->b) / sizeof(map->b[0]))) {
		map->b[map->n++] = (struct damage_meta){ blk, k };
		map->count[k]++;
	}
}

/* Every metadata block of the image: the superblock (and its backup if
 * with_backup), then chunk by chunk its header, the bitmap and inode table
 * blocks below their watermarks and, by magic, the metadata blocks of its
 * data area. */
static inline void damage_find_metadata(const struct damage_img *m, struct damage_map *map,
					int with_backup)
{
	uint32_t c, i;

	memset(map, 0, sizeof(*map));
	damage_map_add(map, 0, DK_SB);
	if (with_backup)
		damage_map_add(map, m->sb.backup_sb_block, DK_BACKUP);
	for (c = 0; c < m->sb.nchunks; c++) {
		uint64_t base = damage_cbase(m, c), b;
		struct cfs_chunk_hdr h;

		damage_map_add(map, base, DK_CHDR);
		cfs_chunk_hdr_decode(damage_blk(m, base), &h);
		for (i = 0; i < h.bbm_init; i++)
			damage_map_add(map, base + 1 + i, DK_BBM);
		for (i = 0; i < h.ibm_init; i++)
			damage_map_add(map, base + 1 + m->sb.bbm_blocks + i, DK_IBM);
		for (i = 0; i < h.itable_init; i++)
			damage_map_add(map, damage_itable(m, c, i), DK_ITABLE);
		for (b = base + m->sb.data_start; b < base + m->sb.chunk_blocks; b++) {
			uint32_t magic = cfs_meta_magic(damage_blk(m, b));

			if (magic == CFS_MAGIC_EXT)
				damage_map_add(map, b, DK_EXT);
			else if (magic == CFS_MAGIC_DIR)
				damage_map_add(map, b, DK_DIR);
			else if (magic == CFS_MAGIC_XATTR)
				damage_map_add(map, b, DK_XATTR);
		}
	}
}

/* The inodes in use (mode not 0) below the inode-table watermarks, in
 * order, at most max of them; returns how many. */
static inline int damage_used_inodes(const struct damage_img *m, cfs_ino_t *out, int max)
{
	uint32_t c, k, j;
	int n = 0;

	for (c = 0; c < m->sb.nchunks; c++) {
		struct cfs_chunk_hdr h;

		cfs_chunk_hdr_decode(damage_blk(m, damage_cbase(m, c)), &h);
		for (k = 0; k < h.itable_init; k++)
			for (j = 0; j < m->ipb && n < max; j++) {
				cfs_ino_t ino = CFS_INO_MAKE(c, k * m->ipb + j + 1);
				struct cfs_dinode d;

				cfs_dinode_decode(damage_inode(m, ino), &d);
				if (d.mode)
					out[n++] = ino;
			}
	}
	return n;
}

/* ---- fields -------------------------------------------------------------- */

/* A field to damage: its byte offset in its block (or inode) and width. */
struct damage_field {
	int off, w;
};

/* The high half of the u64 at off, as a u32 field. */
#define DAMAGE_HI32(off) ((off) + 4)

static inline void damage_put(uint8_t *p, int w, uint64_t v)
{
	put_le(p, (unsigned)w, v);
}

static inline uint64_t damage_get(const uint8_t *p, int w)
{
	return get_le(p, (unsigned)w);
}

#endif

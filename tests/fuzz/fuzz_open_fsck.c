/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer harness over the image-open, read-only walk and fsck paths.
 *
 * Input: one flag byte, then the image (1 KiB blocks; padded with zeros to
 * a whole block).  Flag bit 0 set: every checksum of the image is
 * recomputed first (superblock, chunk headers, bitmaps, extent, directory
 * and xattr nodes found by magic, every non-zero inode), so that the
 * mutations reach the parsers and the checker's logic instead of stopping
 * at a checksum mismatch.  The image lives on the in-memory fault device.
 *
 * Per input:
 *   1. read-only open (NOCHECK); if it opens: statfs, chunk info, a bounded
 *      walk of the tree reading files, links and xattrs, cfs_check, and a
 *      forced read-only cfs_fsck;
 *   2. repair open (NOCHECK|REPAIR) of a fresh copy: cfs_fsck YES, forced,
 *      close; then a read-only reopen and a forced read-only cfs_fsck.
 * Only memory errors, undefined behaviour, leaks, crashes and hangs are
 * failures here (tests/unit/test_fsck_random.c checks the results).
 *
 * Built and run by tests/fuzz/run.sh (make fuzz, make check). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bdev.h"
#include "chunkfs.h"
#include "../damage.h"
#include "../fixture.h"
#include "format.h"

#define BS 1024
#define MAX_IMAGE (1u << 20)

/* ---- checksums ---------------------------------------------------------------- */

static void reseal_all(uint8_t *img, size_t size)
{
	struct damage_img m;
	uint64_t b, nblocks = size / BS;
	uint32_t c, k;

	cfs_super_csum_set(img);
	if (damage_img_init(&m, img, size) < 0 || m.bs != BS || !m.sb.chunk_blocks ||
	    m.sb.inode_size < CFS_MIN_INODE || (m.sb.inode_size & (m.sb.inode_size - 1)))
		return;
	/* the backup superblock, if it is inside the image */
	if (m.sb.backup_sb_block < nblocks &&
	    get_le32(damage_blk(&m, m.sb.backup_sb_block) + CFS_OFF_SB_MAGIC) == CFS_SB_MAGIC)
		cfs_super_csum_set(damage_blk(&m, m.sb.backup_sb_block));
	for (b = 1; b < nblocks; b++) {
		uint32_t magic = cfs_meta_magic(damage_blk(&m, b));

		if (magic == CFS_MAGIC_CHUNK || magic == CFS_MAGIC_BBM || magic == CFS_MAGIC_IBM ||
		    magic == CFS_MAGIC_EXT || magic == CFS_MAGIC_DIR || magic == CFS_MAGIC_XATTR)
			cfs_meta_csum_set(damage_blk(&m, b), BS, m.seed);
	}
	/* inode tables, by geometry */
	for (c = 0; c < m.sb.nchunks && c < CFS_MAX_CHUNKS; c++)
		for (k = 0; k < m.sb.itable_blocks && damage_itable(&m, c, k) < nblocks; k++)
			damage_reseal_itable(&m, c, k);
}

/* ---- the walk --------------------------------------------------------------------- */

static void walk(struct cfs_fs *fs, cfs_ino_t dir, int depth, int *budget)
{
	static uint8_t buf[1 << 14];
	struct fixture_ents *e;
	int i;

	if (depth > 8 || *budget <= 0)
		return;
	e = fixture_ents_new(64, 0);
	if (!e)
		return;
	fixture_readdir(fs, dir, 0, e);
	for (i = 0; i < e->n && *budget > 0; i++) {
		struct cfs_stat st;
		char names[512], lnk[512];
		cfs_ino_t l;
		ssize_t n;

		(*budget)--;
		if (!strcmp(e->name[i], ".") || !strcmp(e->name[i], ".."))
			continue;
		cfs_lookup(fs, dir, e->name[i], &l);
		if (cfs_getattr(fs, e->ino[i], &st) < 0)
			continue;
		if (S_ISDIR(st.mode)) {
			walk(fs, e->ino[i], depth + 1, budget);
		} else if (S_ISREG(st.mode)) {
			uint64_t off;
			int k = 0;

			for (off = 0; off < st.size && k < 8; off += sizeof(buf), k++)
				if (cfs_read(fs, e->ino[i], buf, sizeof(buf), off) <= 0)
					break;
		} else if (S_ISLNK(st.mode)) {
			cfs_readlink(fs, e->ino[i], lnk, sizeof(lnk));
		}
		n = cfs_listxattr(fs, e->ino[i], names, sizeof(names));
		if (n > 0 && (size_t)n <= sizeof(names)) {
			ssize_t k = 0;

			while (k < n) {
				size_t len = strnlen(names + k, (size_t)(n - k));

				if (len == (size_t)(n - k))
					break;
				cfs_getxattr(fs, e->ino[i], names + k, lnk, sizeof(lnk));
				k += (ssize_t)len + 1;
			}
		}
	}
	free(e);
}

static void fsck_ro(struct cfs_fs *fs)
{
	struct cfs_fsck_opts o = { .mode = CFS_FSCK_NO, .force = 1, .threads = 2 };
	struct cfs_fsck_result r;

	cfs_fsck(fs, &o, &r);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfs_fsck_opts o = { .mode = CFS_FSCK_YES, .force = 1, .threads = 2 };
	struct cfs_fsck_result r;
	struct cfs_statfs sf;
	struct cfs_info in;
	struct cfs_bdev *bd;
	struct cfs_fs *fs;
	size_t isize;
	uint8_t *img;
	uint32_t c;
	int budget = 400;

	if (size < 1 + CFS_SB_SIZE || size - 1 > MAX_IMAGE)
		return 0;
	isize = (size - 1 + BS - 1) / BS * BS;
	img = calloc(1, isize);
	if (!img)
		return 0;
	memcpy(img, data + 1, size - 1);
	if (data[0] & 1)
		reseal_all(img, isize);

	/* 1: read-only */
	if (fixture_image_dev(img, isize, BS, &bd) == 0 &&
	    cfs_open_bdev(bd, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs) == 0) {
		cfs_statfs(fs, &sf);
		if (cfs_get_info(fs, &in) == 0)
			for (c = 0; c < in.chunks; c++) {
				struct cfs_chunk_info ci;

				cfs_get_chunk_info(fs, c, &ci);
			}
		walk(fs, CFS_ROOT_INO, 0, &budget);
		cfs_check(fs, NULL, NULL);
		fsck_ro(fs);
		cfs_close(fs);
	}

	/* 2: repair, then look again at what the repair left */
	if (fixture_image_dev(img, isize, BS, &bd) == 0) {
		if (fixture_open(bd, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR, &fs) == 0) {
			cfs_fsck(fs, &o, &r);
			cfs_close(fs);
			/* the image's block size may have stayed on the device */
			cfs_bdev_set_block_size(bd, BS);
			if (fixture_open(bd, CFS_OPEN_RDONLY | CFS_OPEN_NOCHECK, &fs) == 0) {
				budget = 200;
				walk(fs, CFS_ROOT_INO, 0, &budget);
				fsck_ro(fs);
				cfs_close(fs);
			}
		}
		cfs_bdev_destroy(bd);
	}
	free(img);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cfsdamage: the damage the CLI and mount tests do to an image, through
 * tests/damage.h and the format layer, so that no test script writes an
 * on-disk offset or a checksum by hand.  Built by cfsdamage_build
 * (tests/cli/lib.sh).
 *
 *   cfsdamage IMAGE incompat BITS   set feature bits BITS (e.g. 0x80000000)
 *                                   in the primary superblock's incompat
 *                                   field and reseal it
 *   cfsdamage IMAGE inode INO [MASK]
 *                                   flip the bits MASK (default
 *                                   0x5A5A5A5A5A5A5A5A) of inode INO's ctime
 *                                   (a little-endian u64: MASK 0x10 flips
 *                                   bit 4 of its first byte) and leave its
 *                                   checksum wrong
 *   cfsdamage IMAGE dirnode C       flip a bit of the first directory node
 *                                   block of chunk C (its last byte), the
 *                                   checksum left wrong; prints the block
 *   cfsdamage IMAGE meta C SEED [reseal]
 *                                   flip random bits of one random byte of a
 *                                   random metadata block of chunk C (header,
 *                                   bitmaps, inode table, extent, directory
 *                                   and xattr blocks), chosen from SEED; with
 *                                   reseal its checksum is recomputed so the
 *                                   damage passes it; prints "KIND BLOCK
 *                                   OFFSET" (the online repair test,
 *                                   tests/mount/inject.sh)
 *   cfsdamage IMAGE blocks SEED N   overwrite 8 random bytes of each of N
 *                                   distinct random allocated blocks, chosen
 *                                   from SEED: bitmap and inode table blocks
 *                                   below their watermarks, and data-area
 *                                   blocks whose bit is set in the block
 *                                   bitmap, never a superblock or chunk
 *                                   header (the online-repair soak,
 *                                   tests/mount/scrub_soak.sh); prints each
 *                                   block
 *   cfsdamage IMAGE stubs INO       flip a bit of the entry hash of every
 *                                   stub of inode INO (its names in
 *                                   directories of other chunks) and reseal:
 *                                   each backs no entry any more, and the
 *                                   entries they backed name no stub; prints
 *                                   how many
 *   cfsdamage IMAGE ibit INO        clear inode INO's bit in its chunk's
 *                                   inode bitmap and reseal the block: the
 *                                   table holds it in use, the bitmap and
 *                                   the free count say free
 *   cfsdamage IMAGE chdr C SEED     write random bytes (from SEED) over the
 *                                   whole header block of chunk C
 *   cfsdamage IMAGE super N         zero superblock N (0 the primary, 1
 *                                   the backup), the whole block
 *   cfsdamage IMAGE sbflip N        flip a bit of superblock N's label
 *                                   (0 the primary, 1 the backup), its
 *                                   checksum left wrong (chunkfs probe)
 *   cfsdamage IMAGE dirlevel C      make the first directory node block of
 *                                   chunk C claim B+tree level 7 and reseal
 *                                   it: only the node's own rules see it;
 *                                   prints the block
 *   cfsdamage IMAGE mountopts TEXT  store TEXT as the default mount options,
 *                                   unchecked, through the library's
 *                                   cfs_tune: what an older chunkfs tune -o
 *                                   stored (tests/mount/cli.sh)
 *
 * The image is changed in place (mapped shared).  Exit status 0 when done,
 * 1 when the image cannot be opened or the damage not made, 2 on a usage
 * error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "damage.h"
#include "rnd.h"
#include "tune.h"

static int usage(void)
{
	fprintf(stderr, "usage: cfsdamage IMAGE incompat BITS\n"
			"       cfsdamage IMAGE inode INO [MASK]\n"
			"       cfsdamage IMAGE dirnode CHUNK\n"
			"       cfsdamage IMAGE meta CHUNK SEED [reseal]\n"
			"       cfsdamage IMAGE blocks SEED N\n"
			"       cfsdamage IMAGE stubs INO\n"
			"       cfsdamage IMAGE ibit INO\n"
			"       cfsdamage IMAGE dirlevel CHUNK\n"
			"       cfsdamage IMAGE mountopts TEXT\n"
			"       cfsdamage IMAGE chdr CHUNK SEED\n"
			"       cfsdamage IMAGE super 0|1\n"
			"       cfsdamage IMAGE sbflip 0|1\n");
	return 2;
}

/* The number in s (any base strtoull takes), or -1 if s is not one. */
static long long number(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	return *s && !*end && v <= INT64_MAX ? (long long)v : -1;
}

static int set_incompat(struct damage_img *m, uint64_t bits)
{
	uint8_t *f = damage_blk(m, 0) + CFS_OFF_SB_INCOMPAT;

	damage_put(f, 4, damage_get(f, 4) | bits);
	damage_reseal(m, 0);
	return 0;
}

static int garble_inode(struct damage_img *m, uint64_t ino, uint64_t mask)
{
	uint32_t c = CFS_INO_CHUNK_OF(ino), l = CFS_INO_LOCAL_OF(ino);
	uint8_t *f;

	if (ino > UINT32_MAX || c >= m->sb.nchunks || l < 1 || l > m->sb.inodes_per_chunk)
		return -ERANGE;
	f = damage_inode(m, ino) + CFS_OFF_IN_CTIME;
	damage_put(f, 8, damage_get(f, 8) ^ mask);
	return 0;
}

static void dirnode_flip(struct damage_img *m, uint64_t blk)
{
	damage_blk(m, blk)[m->bs - 1] ^= 1;
}

static void dirnode_level7(struct damage_img *m, uint64_t blk)
{
	uint8_t *h = damage_blk(m, blk) + CFS_OFF_NODE_HDR;

	cfs_btn_set(h, 7, cfs_btn_nrec(h), cfs_btn_used(h));
	damage_reseal(m, blk);
}

static int garble_dirnode(struct damage_img *m, uint64_t c,
			  void (*edit)(struct damage_img *m, uint64_t blk))
{
	static struct damage_map map;
	uint64_t first = damage_cbase(m, (uint32_t)c);

	if (c >= m->sb.nchunks)
		return -ERANGE;
	damage_find_metadata(m, &map, 0);
	for (int i = 0; i < map.n; i++)
		if (map.b[i].k == DK_DIR && map.b[i].blk >= first &&
		    map.b[i].blk < first + m->sb.chunk_blocks) {
			edit(m, map.b[i].blk);
			printf("%llu\n", (unsigned long long)map.b[i].blk);
			return 0;
		}
	return -ENOENT;
}

static int garble_stubs(struct damage_img *m, uint64_t ino)
{
	static cfs_ino_t used[1 << 16];
	int n, i, hit = 0;

	if (ino > UINT32_MAX || CFS_INO_CHUNK_OF(ino) >= m->sb.nchunks)
		return -ERANGE;
	n = damage_used_inodes(m, used, (int)(sizeof(used) / sizeof(used[0])));
	for (i = 0; i < n; i++) {
		uint8_t *d = damage_inode(m, used[i]);

		if (!(damage_get(d + CFS_OFF_IN_FLAGS, 2) & CFS_IFL_STUB) ||
		    damage_get(d + CFS_OFF_IN_HEAD, 4) != ino)
			continue;
		damage_put(d + CFS_OFF_IN_LO, 8, damage_get(d + CFS_OFF_IN_LO, 8) ^ 1);
		cfs_dinode_csum_set(d, m->sb.inode_size, m->seed, used[i]);
		hit++;
	}
	printf("%d\n", hit);
	return hit ? 0 : -ENOENT;
}

static int clear_ibit(struct damage_img *m, uint64_t ino)
{
	uint32_t c = CFS_INO_CHUNK_OF(ino), l = CFS_INO_LOCAL_OF(ino);
	uint64_t bpb = (uint64_t)(m->bs - CFS_BLOCK_HDR) * 8, bit, blk;
	uint8_t *bits;

	if (ino > UINT32_MAX || c >= m->sb.nchunks || l < 1 || l > m->sb.inodes_per_chunk)
		return -ERANGE;
	bit = l - 1;
	blk = damage_cbase(m, c) + 1 + m->sb.bbm_blocks + bit / bpb;
	bits = damage_blk(m, blk) + CFS_OFF_BM_BITS;
	if (!(bits[(bit % bpb) >> 3] & (1u << (bit & 7))))
		return -ENOENT;   /* free already */
	bits[(bit % bpb) >> 3] &= (uint8_t)~(1u << (bit & 7));
	damage_reseal(m, blk);
	return 0;
}

static int garble_meta(struct damage_img *m, uint64_t c, uint64_t seed, int reseal)
{
	static struct damage_map map;
	uint64_t first = damage_cbase(m, (uint32_t)c);
	int idx[4096], n = 0;
	uint32_t off;
	uint8_t flip;

	if (c >= m->sb.nchunks)
		return -ERANGE;
	damage_find_metadata(m, &map, 0);
	for (int i = 0; i < map.n; i++)
		if (map.b[i].blk >= first && map.b[i].blk < first + m->sb.chunk_blocks)
			idx[n++] = i;
	if (!n)
		return -ENOENT;
	rng = seed * 2 + 1;      /* the same SEED picks the same damage */
	struct damage_meta *d = &map.b[idx[below((uint64_t)n)]];
	off = (uint32_t)below(m->bs);
	flip = (uint8_t)(below(255) + 1);
	damage_blk(m, d->blk)[off] ^= flip;
	if (reseal)
		damage_reseal(m, d->blk);
	printf("%s %llu %u\n", damage_kind_name[d->k], (unsigned long long)d->blk, off);
	return 0;
}

static int garble_chdr(struct damage_img *m, uint64_t c, uint64_t seed)
{
	uint8_t *h;

	if (c >= m->sb.nchunks)
		return -ERANGE;
	h = damage_blk(m, damage_cbase(m, (uint32_t)c));
	rng = seed * 2 + 1;
	for (uint32_t i = 0; i < m->bs; i++)
		h[i] = (uint8_t)rnd();
	return 0;
}

static int zero_super(struct damage_img *m, uint64_t which)
{
	if (which > 1)
		return -ERANGE;
	memset(damage_blk(m, which ? m->sb.backup_sb_block : 0), 0, m->bs);
	return 0;
}

static int flip_super(struct damage_img *m, uint64_t which)
{
	if (which > 1)
		return -ERANGE;
	damage_blk(m, which ? m->sb.backup_sb_block : 0)[CFS_OFF_SB_LABEL] ^= 0x01;
	return 0;
}

/* Every allocated block apart from the superblocks and chunk headers, in
 * order; *n of them.  NULL when out of memory. */
static uint64_t *allocated_blocks(const struct damage_img *m, uint64_t *n)
{
	uint64_t bpb = (uint64_t)(m->bs - CFS_BLOCK_HDR) * 8, rel, *v, cap = 0, k;
	uint32_t c, i;

	*n = 0;
	for (c = 0; c < m->sb.nchunks; c++)
		cap += m->sb.chunk_blocks;
	v = malloc((cap ? cap : 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (c = 0; c < m->sb.nchunks; c++) {
		uint64_t base = damage_cbase(m, c);
		struct cfs_chunk_hdr h;

		cfs_chunk_hdr_decode(damage_blk(m, base), &h);
		for (i = 0; i < h.bbm_init; i++)
			v[(*n)++] = base + 1 + i;
		for (i = 0; i < h.ibm_init; i++)
			v[(*n)++] = base + 1 + m->sb.bbm_blocks + i;
		for (i = 0; i < h.itable_init; i++)
			v[(*n)++] = damage_itable(m, c, i);
		for (rel = m->sb.data_start; rel < m->sb.chunk_blocks; rel++) {
			k = rel / bpb;
			if (k >= h.bbm_init)
				break;   /* never written: all free */
			if (cfs_bitmap_get(damage_blk(m, base + 1 + k), rel % bpb))
				v[(*n)++] = base + rel;
		}
	}
	return v;
}

static int garble_blocks(struct damage_img *m, uint64_t seed, uint64_t count)
{
	uint64_t n, i, j, t, *v = allocated_blocks(m, &n);

	if (!v)
		return -ENOMEM;
	if (count > n) {
		free(v);
		return -ENOSPC;
	}
	rng = seed * 2 + 1;      /* the same SEED picks the same damage */
	/* the first count of a partial Fisher-Yates shuffle: distinct, and
	 * chosen from the bitmaps as they were before any block was hit */
	for (i = 0; i < count; i++) {
		j = i + below(n - i);
		t = v[i];
		v[i] = v[j];
		v[j] = t;
	}
	for (i = 0; i < count; i++) {
		uint8_t *b = damage_blk(m, v[i]);

		for (j = 0; j < 8; j++)
			b[below(m->bs)] = (uint8_t)rnd();
		printf("%llu\n", (unsigned long long)v[i]);
	}
	free(v);
	return 0;
}

/* The arguments after IMAGE VERB each verb takes: at least, at most. */
static int verb_args(const char *verb, int *least, int *most)
{
	*least = *most = 1;
	if (!strcmp(verb, "inode"))
		*most = 2;
	if (!strcmp(verb, "chdr"))
		*least = *most = 2;
	if (!strcmp(verb, "meta") || !strcmp(verb, "blocks")) {
		*least = 2;
		*most = strcmp(verb, "meta") ? 2 : 3;
	}
	return strcmp(verb, "incompat") && strcmp(verb, "inode") && strcmp(verb, "dirnode") &&
	       strcmp(verb, "meta") && strcmp(verb, "dirlevel") && strcmp(verb, "stubs") &&
	       strcmp(verb, "ibit") && strcmp(verb, "chdr") && strcmp(verb, "super") &&
	       strcmp(verb, "sbflip") && strcmp(verb, "blocks");
}

/* Default mount options as the library stores them, whatever they are. */
static int store_mount_opts(const char *img, const char *text)
{
	struct cfs_tune t = { .mount_opts = text };
	struct cfs_fs *fs;
	int ret = cfs_open(img, CFS_OPEN_NOCHECK, &fs);

	if (ret == 0) {
		ret = cfs_tune(fs, &t);
		if (cfs_close(fs) < 0 && ret == 0)
			ret = -EIO;
	}
	if (ret < 0)
		fprintf(stderr, "cfsdamage: %s: mountopts %s: %s\n", img, text, strerror(-ret));
	return ret < 0;
}

int main(int argc, char **argv)
{
	struct damage_img m;
	struct stat st;
	long long arg, mask = 0x5A5A5A5A5A5A5A5All;
	void *p = MAP_FAILED;
	int fd, ret, least, most;

	if (argc == 4 && !strcmp(argv[2], "mountopts"))
		return store_mount_opts(argv[1], argv[3]);
	if (argc < 3 || verb_args(argv[2], &least, &most) || argc - 3 < least ||
	    argc - 3 > most || (arg = number(argv[3])) < 0 ||
	    (argc >= 5 && (mask = number(argv[4])) < 0) ||
	    (argc == 5 && strcmp(argv[2], "meta") && strcmp(argv[2], "chdr") && mask == 0) ||
	    (argc == 6 && strcmp(argv[5], "reseal")))
		return usage();
	fd = open(argv[1], O_RDWR | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		ret = -errno;
		goto out;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	ret = damage_img_init(&m, p, (uint64_t)st.st_size);
	if (ret < 0)
		goto out;
	if (!strcmp(argv[2], "incompat"))
		ret = set_incompat(&m, (uint64_t)arg);
	else if (!strcmp(argv[2], "inode"))
		ret = garble_inode(&m, (uint64_t)arg, (uint64_t)mask);
	else if (!strcmp(argv[2], "meta"))
		ret = garble_meta(&m, (uint64_t)arg, (uint64_t)mask, argc == 6);
	else if (!strcmp(argv[2], "chdr"))
		ret = garble_chdr(&m, (uint64_t)arg, (uint64_t)mask);
	else if (!strcmp(argv[2], "super"))
		ret = zero_super(&m, (uint64_t)arg);
	else if (!strcmp(argv[2], "sbflip"))
		ret = flip_super(&m, (uint64_t)arg);
	else if (!strcmp(argv[2], "blocks"))
		ret = garble_blocks(&m, (uint64_t)arg, (uint64_t)mask);
	else if (!strcmp(argv[2], "ibit"))
		ret = clear_ibit(&m, (uint64_t)arg);
	else if (!strcmp(argv[2], "stubs"))
		ret = garble_stubs(&m, (uint64_t)arg);
	else if (!strcmp(argv[2], "dirnode"))
		ret = garble_dirnode(&m, (uint64_t)arg, dirnode_flip);
	else
		ret = garble_dirnode(&m, (uint64_t)arg, dirnode_level7);
	if (ret == 0 && msync(p, (size_t)st.st_size, MS_SYNC) < 0)
		ret = -errno;
out:
	if (p != MAP_FAILED)
		munmap(p, (size_t)st.st_size);
	if (fd >= 0)
		close(fd);
	if (ret < 0)
		fprintf(stderr, "cfsdamage: %s: %s %s: %s\n", argv[1], argv[2], argv[3],
			strerror(-ret));
	return ret < 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Encoders and decoders for the fixed on-disk structures: superblock,
 * common metadata block header, chunk header, inode.  Their offsets
 * (format.h) are the contract documented in docs/FORMAT.md. */
#include "format.h"

#include <errno.h>
#include <string.h>

#include "crc32c.h"
#include "le.h"

/* Each structure's integer fields are listed once, as X(member, offset,
 * bits), and that list expands into both its encoder and its decoder:
 * straight-line code, as if written out twice.  Signed members are stored
 * as their two's complement bits. */
#define FIELD_ENCODE(member, off, bits) put_le##bits(buf + (off), (uint##bits##_t)s->member);
#define FIELD_DECODE(member, off, bits) s->member = get_le##bits(buf + (off));
/* ... and into a check that each member is as wide as its field. */
#define FIELD_WIDTH(type, member, bits) \
	_Static_assert(sizeof(((type *)0)->member) * 8 == (bits), "width of " #member);
#define SB_WIDTH(member, off, bits) FIELD_WIDTH(struct cfs_super, member, bits)
#define CH_WIDTH(member, off, bits) FIELD_WIDTH(struct cfs_chunk_hdr, member, bits)
#define IN_WIDTH(member, off, bits) FIELD_WIDTH(struct cfs_dinode, member, bits)

uint32_t cfs_fs_seed(const uint8_t uuid[16])
{
	return crc32c(0, uuid, 16);
}

/* crc32c over len bytes but the u32 crc field at byte at. */
static uint32_t crc_around(uint32_t seed, const uint8_t *p, size_t len, size_t at)
{
	uint32_t c = crc32c(seed, p, at);

	return crc32c(c, p + at + 4, len - at - 4);
}

static uint32_t sb_crc(const uint8_t *buf)
{
	return crc_around(0, buf, CFS_SB_SIZE, CFS_OFF_SB_CRC);
}

/* The superblock's integer fields (uuid and label are byte strings). */
#define SB_FIELDS(X) \
	X(version, CFS_OFF_SB_VERSION, 32) \
	X(block_size, CFS_OFF_SB_BLOCK_SIZE, 32) \
	X(feat_compat, CFS_OFF_SB_COMPAT, 32) \
	X(feat_ro_compat, CFS_OFF_SB_RO_COMPAT, 32) \
	X(feat_incompat, CFS_OFF_SB_INCOMPAT, 32) \
	X(inode_size, CFS_OFF_SB_INODE_SIZE, 32) \
	X(nchunks, CFS_OFF_SB_NCHUNKS, 32) \
	X(inodes_per_chunk, CFS_OFF_SB_IPC, 32) \
	X(chunk_blocks, CFS_OFF_SB_CHUNK_BLOCKS, 64) \
	X(first_chunk_block, CFS_OFF_SB_FIRST_CHUNK, 64) \
	X(total_blocks, CFS_OFF_SB_TOTAL_BLOCKS, 64) \
	X(backup_sb_block, CFS_OFF_SB_BACKUP, 64) \
	X(root_ino, CFS_OFF_SB_ROOT, 32) \
	X(lpf_ino, CFS_OFF_SB_LPF, 32) \
	X(created, CFS_OFF_SB_CREATED, 64) \
	X(bbm_blocks, CFS_OFF_SB_BBM_BLOCKS, 32) \
	X(ibm_blocks, CFS_OFF_SB_IBM_BLOCKS, 32) \
	X(itable_blocks, CFS_OFF_SB_ITABLE, 32) \
	X(data_start, CFS_OFF_SB_DATA_START, 32) \
	X(hash_seed, CFS_OFF_SB_HASH_SEED, 32)
SB_FIELDS(SB_WIDTH)

void cfs_super_encode(const struct cfs_super *s, uint8_t *buf)
{
	memset(buf, 0, CFS_SB_SIZE);
	put_le32(buf + CFS_OFF_SB_MAGIC, CFS_SB_MAGIC);
	SB_FIELDS(FIELD_ENCODE)
	if (s->feat_incompat & CFS_FEAT_INCOMPAT_META_UUID) {
		memcpy(buf + CFS_OFF_SB_UUID, s->user_uuid, 16);
		memcpy(buf + CFS_OFF_SB_META_UUID, s->uuid, 16);
	} else {
		memcpy(buf + CFS_OFF_SB_UUID, s->uuid, 16);
	}
	if (s->feat_compat & CFS_FEAT_COMPAT_MOUNT_OPTS)
		memcpy(buf + CFS_OFF_SB_MOUNT_OPTS, s->mount_opts, strnlen(s->mount_opts, 63));
	if (s->feat_incompat & CFS_FEAT_INCOMPAT_RENUMBER) {
		put_le32(buf + CFS_OFF_SB_RENUM_OLD, s->renum_old);
		put_le32(buf + CFS_OFF_SB_RENUM_NEW, s->renum_new);
	}
	memcpy(buf + CFS_OFF_SB_LABEL, s->label, strnlen(s->label, 63));
	cfs_super_csum_set(buf);
}

void cfs_super_csum_set(uint8_t *buf)
{
	put_le32(buf + CFS_OFF_SB_CRC, sb_crc(buf));
}

int cfs_super_decode(const uint8_t *buf, struct cfs_super *s)
{
	if (get_le32(buf + CFS_OFF_SB_MAGIC) != CFS_SB_MAGIC)
		return -EUCLEAN;
	if (get_le32(buf + CFS_OFF_SB_CRC) != sb_crc(buf))
		return -EBADMSG;
	memset(s, 0, sizeof(*s));
	SB_FIELDS(FIELD_DECODE)
	memcpy(s->user_uuid, buf + CFS_OFF_SB_UUID, 16);
	memcpy(s->uuid, buf + (s->feat_incompat & CFS_FEAT_INCOMPAT_META_UUID ?
			       CFS_OFF_SB_META_UUID : CFS_OFF_SB_UUID), 16);
	if (s->feat_compat & CFS_FEAT_COMPAT_MOUNT_OPTS)
		memcpy(s->mount_opts, buf + CFS_OFF_SB_MOUNT_OPTS, 63);
	if (s->feat_incompat & CFS_FEAT_INCOMPAT_RENUMBER) {
		s->renum_old = get_le32(buf + CFS_OFF_SB_RENUM_OLD);
		s->renum_new = get_le32(buf + CFS_OFF_SB_RENUM_NEW);
	}
	memcpy(s->label, buf + CFS_OFF_SB_LABEL, 63);
	s->label[63] = 0;
	return 0;
}

static int is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/* A hostile superblock must not lead to huge allocations, overflowing
 * arithmetic or reads outside the device, so every derived quantity is
 * recomputed here and compared. */
int cfs_super_validate(const struct cfs_super *sb, uint64_t dev_blocks, const char **why)
{
	uint64_t bs = sb->block_size, bits = (bs - CFS_BLOCK_HDR) * 8;
	uint64_t ipb;

	*why = NULL;
	if (!is_pow2(bs) || bs < CFS_MIN_BLOCK || bs > CFS_MAX_BLOCK)
		return *why = "bad block size", -EUCLEAN;
	if (!is_pow2(sb->inode_size) || sb->inode_size < CFS_MIN_INODE ||
	    sb->inode_size > bs)
		return *why = "bad inode size", -EUCLEAN;
	if (sb->nchunks < 1 || sb->nchunks > 256)
		return *why = "bad chunk count", -EUCLEAN;
	if (sb->inodes_per_chunk < 1 || sb->inodes_per_chunk > CFS_MAX_LOCAL_INO)
		return *why = "bad inodes per chunk", -EUCLEAN;
	if (sb->chunk_blocks < 8 || sb->chunk_blocks > 0xFFFFFFFFull)
		return *why = "bad chunk size", -EUCLEAN;
	ipb = bs / sb->inode_size;
	if (sb->bbm_blocks != div_up(sb->chunk_blocks, bits) ||
	    sb->ibm_blocks != div_up(sb->inodes_per_chunk, bits) ||
	    sb->itable_blocks != div_up(sb->inodes_per_chunk, ipb) ||
	    sb->data_start != 1ull + sb->bbm_blocks + sb->ibm_blocks + sb->itable_blocks ||
	    sb->data_start >= sb->chunk_blocks)
		return *why = "inconsistent chunk geometry", -EUCLEAN;
	if (sb->first_chunk_block != 1 ||
	    sb->backup_sb_block != 1 + sb->nchunks * sb->chunk_blocks ||
	    sb->total_blocks != sb->backup_sb_block + 1)
		return *why = "inconsistent chunk layout", -EUCLEAN;
	if (sb->total_blocks > dev_blocks)
		return *why = "image is truncated (filesystem larger than device)", -EUCLEAN;
	if (CFS_INO_CHUNK_OF(sb->root_ino) >= sb->nchunks ||
	    CFS_INO_LOCAL_OF(sb->root_ino) == 0 ||
	    CFS_INO_LOCAL_OF(sb->root_ino) > sb->inodes_per_chunk)
		return *why = "bad root inode number", -EUCLEAN;
	return 0;
}

/* Common metadata block header (every metadata block but the superblock). */

void cfs_meta_init(uint8_t *blk, uint32_t magic, uint64_t blocknr)
{
	put_le32(blk + CFS_OFF_MB_MAGIC, magic);
	put_le32(blk + CFS_OFF_MB_CRC, 0);
	put_le64(blk + CFS_OFF_MB_BLOCKNR, blocknr);
}

static uint32_t meta_crc(const uint8_t *blk, uint32_t bsize, uint32_t seed)
{
	return crc_around(seed, blk, bsize, CFS_OFF_MB_CRC);
}

void cfs_meta_csum_set(uint8_t *blk, uint32_t bsize, uint32_t seed)
{
	put_le32(blk + CFS_OFF_MB_CRC, meta_crc(blk, bsize, seed));
}

uint32_t cfs_meta_magic(const uint8_t *blk)
{
	return get_le32(blk + CFS_OFF_MB_MAGIC);
}

int cfs_meta_verify(const uint8_t *blk, uint32_t bsize, uint32_t seed,
		    uint32_t magic, uint64_t blocknr)
{
	if (get_le32(blk + CFS_OFF_MB_MAGIC) != magic)
		return -EUCLEAN;
	if (get_le32(blk + CFS_OFF_MB_CRC) != meta_crc(blk, bsize, seed))
		return -EBADMSG;
	if (get_le64(blk + CFS_OFF_MB_BLOCKNR) != blocknr)
		return -EUCLEAN;
	return 0;
}

/* Chunk header: block 0 of each chunk, after the common header. */

/* The chunk header's integer fields (the uuid and the error records'
 * texts are byte strings). */
#define CH_FIELDS(X) \
	X(index, CFS_OFF_CH_INDEX, 32) \
	X(state, CFS_OFF_CH_STATE, 32) \
	X(generation, CFS_OFF_CH_GEN, 64) \
	X(last_check, CFS_OFF_CH_LAST_CHECK, 64) \
	X(last_write, CFS_OFF_CH_LAST_WRITE, 64) \
	X(free_blocks, CFS_OFF_CH_FREE_BLK, 32) \
	X(free_inodes, CFS_OFF_CH_FREE_INO, 32) \
	X(bbm_init, CFS_OFF_CH_BBM_INIT, 32) \
	X(ibm_init, CFS_OFF_CH_IBM_INIT, 32) \
	X(itable_init, CFS_OFF_CH_ITAB_INIT, 32) \
	X(nconts, CFS_OFF_CH_NCONTS, 32) \
	X(nstubs, CFS_OFF_CH_NSTUBS, 32) \
	X(ndirs, CFS_OFF_CH_NDIRS, 32) \
	X(error_count, CFS_OFF_CH_ERR_COUNT, 32)
CH_FIELDS(CH_WIDTH)

/* An error record's integer fields (what is a byte string). */
#define ER_FIELDS(X) \
	X(time, CFS_OFF_ER_TIME, 64) \
	X(ino, CFS_OFF_ER_INO, 32) \
	X(err, CFS_OFF_ER_ERRNO, 32) \
	X(block, CFS_OFF_ER_BLOCK, 64)
#define ER_WIDTH(member, off, bits) FIELD_WIDTH(struct cfs_err_rec, member, bits)
ER_FIELDS(ER_WIDTH)

static void err_rec_encode(const struct cfs_err_rec *s, uint8_t *buf)
{
	ER_FIELDS(FIELD_ENCODE)
	memset(buf + CFS_OFF_ER_WHAT, 0, CFS_ERR_WHAT_LEN);
	memcpy(buf + CFS_OFF_ER_WHAT, s->what, strnlen(s->what, CFS_ERR_WHAT_LEN - 1));
}

static void err_rec_decode(const uint8_t *buf, struct cfs_err_rec *s)
{
	ER_FIELDS(FIELD_DECODE)
	memcpy(s->what, buf + CFS_OFF_ER_WHAT, CFS_ERR_WHAT_LEN);
	s->what[CFS_ERR_WHAT_LEN - 1] = 0;
}

void cfs_chunk_hdr_encode(const struct cfs_chunk_hdr *s, uint8_t *buf)
{
	int i;

	CH_FIELDS(FIELD_ENCODE)
	memcpy(buf + CFS_OFF_CH_UUID, s->uuid, 16);
	err_rec_encode(&s->first_error, buf + CFS_OFF_CH_ERR_FIRST);
	err_rec_encode(&s->last_error, buf + CFS_OFF_CH_ERR_LAST);
	for (i = 0; i < CFS_ICMAP_BLOCKS; i++)
		put_le32(buf + CFS_OFF_CH_ICMAP + 4 * i, s->icmap[i]);
}

void cfs_chunk_hdr_decode(const uint8_t *buf, struct cfs_chunk_hdr *s)
{
	int i;

	memset(s, 0, sizeof(*s));   /* padding too: callers compare headers whole */
	CH_FIELDS(FIELD_DECODE)
	memcpy(s->uuid, buf + CFS_OFF_CH_UUID, 16);
	err_rec_decode(buf + CFS_OFF_CH_ERR_FIRST, &s->first_error);
	err_rec_decode(buf + CFS_OFF_CH_ERR_LAST, &s->last_error);
	for (i = 0; i < CFS_ICMAP_BLOCKS; i++)
		s->icmap[i] = get_le32(buf + CFS_OFF_CH_ICMAP + 4 * i);
}

/* Inode-cluster map block: common header, index, records from
 * CFS_OFF_IM_RECS. */

uint32_t cfs_icmap_nrec(uint32_t bsize)
{
	return (bsize - CFS_OFF_IM_RECS) / CFS_ICR_SIZE;
}

uint32_t cfs_icmap_index(const uint8_t *blk)
{
	return get_le32(blk + CFS_OFF_IM_INDEX);
}

void cfs_icmap_set_index(uint8_t *blk, uint32_t k)
{
	put_le32(blk + CFS_OFF_IM_INDEX, k);
}

void cfs_icmap_rec_decode(const uint8_t *blk, uint32_t i, struct cfs_icl_rec *r)
{
	const uint8_t *p = blk + CFS_OFF_IM_RECS + (size_t)i * CFS_ICR_SIZE;

	r->start = get_le32(p + CFS_OFF_ICR_START);
	r->used = get_le64(p + CFS_OFF_ICR_USED);
}

void cfs_icmap_rec_encode(uint8_t *blk, uint32_t i, const struct cfs_icl_rec *r)
{
	uint8_t *p = blk + CFS_OFF_IM_RECS + (size_t)i * CFS_ICR_SIZE;

	put_le32(p + CFS_OFF_ICR_START, r->start);
	put_le32(p + CFS_OFF_ICR_START + 4, 0);
	put_le64(p + CFS_OFF_ICR_USED, r->used);
}

/* Inode, inode_size bytes in the inode table: its fields, all integers. */
#define IN_FIELDS(X) \
	X(mode, CFS_OFF_IN_MODE, 16) \
	X(flags, CFS_OFF_IN_FLAGS, 16) \
	X(nlink, CFS_OFF_IN_NLINK, 32) \
	X(uid, CFS_OFF_IN_UID, 32) \
	X(gid, CFS_OFF_IN_GID, 32) \
	X(size, CFS_OFF_IN_SIZE, 64) \
	X(atime, CFS_OFF_IN_ATIME, 64) \
	X(mtime, CFS_OFF_IN_MTIME, 64) \
	X(ctime, CFS_OFF_IN_CTIME, 64) \
	X(crtime, CFS_OFF_IN_CRTIME, 64) \
	X(atime_ns, CFS_OFF_IN_ATIME_NS, 32) \
	X(mtime_ns, CFS_OFF_IN_MTIME_NS, 32) \
	X(ctime_ns, CFS_OFF_IN_CTIME_NS, 32) \
	X(crtime_ns, CFS_OFF_IN_CRTIME_NS, 32) \
	X(generation, CFS_OFF_IN_GEN, 32) \
	X(xattr_block, CFS_OFF_IN_XATTR_BLK, 32) \
	X(nblocks, CFS_OFF_IN_NBLOCKS, 64) \
	X(rdev, CFS_OFF_IN_RDEV, 64) \
	X(head, CFS_OFF_IN_HEAD, 32) \
	X(back, CFS_OFF_IN_BACK, 32) \
	X(lo, CFS_OFF_IN_LO, 64) \
	X(hi, CFS_OFF_IN_HI, 64) \
	X(cont[0], CFS_OFF_IN_CONT, 32) \
	X(cont[1], CFS_OFF_IN_CONT + 4, 32) \
	X(cont[2], CFS_OFF_IN_CONT + 8, 32) \
	X(cont[3], CFS_OFF_IN_CONT + 12, 32) \
	X(xattr_len, CFS_OFF_IN_XATTR_LEN, 16)
IN_FIELDS(IN_WIDTH)

void cfs_dinode_decode(const uint8_t *buf, struct cfs_dinode *s)
{
	IN_FIELDS(FIELD_DECODE)
}

void cfs_dinode_encode(const struct cfs_dinode *s, uint8_t *buf)
{
	IN_FIELDS(FIELD_ENCODE)
	memset(buf + CFS_OFF_IN_RESERVED, 0, CFS_OFF_IN_VAR - CFS_OFF_IN_RESERVED);
}

/* The inode's crc is its last u32. */
static uint32_t dinode_crc_at(uint32_t isz)
{
	return isz - 4;
}

static uint32_t dinode_crc(const uint8_t *raw, uint32_t isz, uint32_t seed, uint32_t ino)
{
	uint8_t n[4];

	put_le32(n, ino);
	return crc32c(crc32c(seed, n, 4), raw, dinode_crc_at(isz));
}

void cfs_dinode_csum_set(uint8_t *raw, uint32_t isz, uint32_t seed, uint32_t ino)
{
	put_le32(raw + dinode_crc_at(isz), dinode_crc(raw, isz, seed, ino));
}

int cfs_dinode_is_zero(const uint8_t *raw, uint32_t isz)
{
	uint32_t i;

	for (i = 0; i < isz; i++)
		if (raw[i])
			return 0;
	return 1;
}

/* A never-used inode slot is all zeroes, crc included: valid and free. */
int cfs_dinode_csum_ok(const uint8_t *raw, uint32_t isz, uint32_t seed, uint32_t ino)
{
	if (get_le32(raw + dinode_crc_at(isz)) == dinode_crc(raw, isz, seed, ino))
		return 1;
	return cfs_dinode_is_zero(raw, isz);
}

/* Encoders and decoders for the fixed on-disk structures: superblock,
 * common metadata block header, chunk header, inode.  Their offsets
 * (format.h) are the contract documented in docs/FORMAT.md. */
#include "format.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "crc32c.h"
#include "le.h"

/* One integer field: its offset on disk, its width (2, 4 or 8 bytes: the
 * width of its member, so that each table line names both once) and its
 * member in the decoded structure.  Signed members are stored as their
 * two's complement bits. */
struct field {
	uint16_t off;
	uint8_t size;
	uint16_t mem;
};

#define FIELD(type, member, off) \
	{ (off), sizeof(((type *)0)->member), offsetof(type, member) }
#define FIELDS_ENCODE(t, s, buf) fields_encode(t, sizeof(t) / sizeof((t)[0]), s, buf)
#define FIELDS_DECODE(t, buf, s) fields_decode(t, sizeof(t) / sizeof((t)[0]), buf, s)

/* A member of size bytes, widened. */
static uint64_t member_get(const uint8_t *m, unsigned size)
{
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	if (size == 2)
		return memcpy(&v16, m, 2), v16;
	if (size == 4)
		return memcpy(&v32, m, 4), v32;
	return memcpy(&v64, m, 8), v64;
}

static void member_set(uint8_t *m, unsigned size, uint64_t v)
{
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;

	if (size == 2)
		memcpy(m, &v16, 2);
	else if (size == 4)
		memcpy(m, &v32, 4);
	else
		memcpy(m, &v, 8);
}

static void fields_encode(const struct field *f, size_t n, const void *s, uint8_t *buf)
{
	size_t i;

	for (i = 0; i < n; i++)
		put_le(buf + f[i].off, f[i].size, member_get((const uint8_t *)s + f[i].mem, f[i].size));
}

static void fields_decode(const struct field *f, size_t n, const uint8_t *buf, void *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		member_set((uint8_t *)s + f[i].mem, f[i].size, get_le(buf + f[i].off, f[i].size));
}

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
static const struct field sb_fields[] = {
	FIELD(struct cfs_super, version, CFS_OFF_SB_VERSION),
	FIELD(struct cfs_super, block_size, CFS_OFF_SB_BLOCK_SIZE),
	FIELD(struct cfs_super, feat_compat, CFS_OFF_SB_COMPAT),
	FIELD(struct cfs_super, feat_ro_compat, CFS_OFF_SB_RO_COMPAT),
	FIELD(struct cfs_super, feat_incompat, CFS_OFF_SB_INCOMPAT),
	FIELD(struct cfs_super, inode_size, CFS_OFF_SB_INODE_SIZE),
	FIELD(struct cfs_super, nchunks, CFS_OFF_SB_NCHUNKS),
	FIELD(struct cfs_super, inodes_per_chunk, CFS_OFF_SB_IPC),
	FIELD(struct cfs_super, chunk_blocks, CFS_OFF_SB_CHUNK_BLOCKS),
	FIELD(struct cfs_super, first_chunk_block, CFS_OFF_SB_FIRST_CHUNK),
	FIELD(struct cfs_super, total_blocks, CFS_OFF_SB_TOTAL_BLOCKS),
	FIELD(struct cfs_super, backup_sb_block, CFS_OFF_SB_BACKUP),
	FIELD(struct cfs_super, root_ino, CFS_OFF_SB_ROOT),
	FIELD(struct cfs_super, lpf_ino, CFS_OFF_SB_LPF),
	FIELD(struct cfs_super, created, CFS_OFF_SB_CREATED),
	FIELD(struct cfs_super, bbm_blocks, CFS_OFF_SB_BBM_BLOCKS),
	FIELD(struct cfs_super, ibm_blocks, CFS_OFF_SB_IBM_BLOCKS),
	FIELD(struct cfs_super, itable_blocks, CFS_OFF_SB_ITABLE),
	FIELD(struct cfs_super, data_start, CFS_OFF_SB_DATA_START),
	FIELD(struct cfs_super, hash_seed, CFS_OFF_SB_HASH_SEED),
};

void cfs_super_encode(const struct cfs_super *sb, uint8_t *buf)
{
	memset(buf, 0, CFS_SB_SIZE);
	put_le32(buf + CFS_OFF_SB_MAGIC, CFS_SB_MAGIC);
	FIELDS_ENCODE(sb_fields, sb, buf);
	if (sb->feat_incompat & CFS_FEAT_INCOMPAT_META_UUID) {
		memcpy(buf + CFS_OFF_SB_UUID, sb->user_uuid, 16);
		memcpy(buf + CFS_OFF_SB_META_UUID, sb->uuid, 16);
	} else {
		memcpy(buf + CFS_OFF_SB_UUID, sb->uuid, 16);
	}
	if (sb->feat_compat & CFS_FEAT_COMPAT_MOUNT_OPTS)
		memcpy(buf + CFS_OFF_SB_MOUNT_OPTS, sb->mount_opts,
		       strnlen(sb->mount_opts, 63));
	memcpy(buf + CFS_OFF_SB_LABEL, sb->label, strnlen(sb->label, 63));
	cfs_super_csum_set(buf);
}

void cfs_super_csum_set(uint8_t *buf)
{
	put_le32(buf + CFS_OFF_SB_CRC, sb_crc(buf));
}

int cfs_super_decode(const uint8_t *buf, struct cfs_super *sb)
{
	if (get_le32(buf + CFS_OFF_SB_MAGIC) != CFS_SB_MAGIC)
		return -EUCLEAN;
	if (get_le32(buf + CFS_OFF_SB_CRC) != sb_crc(buf))
		return -EBADMSG;
	memset(sb, 0, sizeof(*sb));
	FIELDS_DECODE(sb_fields, buf, sb);
	memcpy(sb->user_uuid, buf + CFS_OFF_SB_UUID, 16);
	memcpy(sb->uuid, buf + (sb->feat_incompat & CFS_FEAT_INCOMPAT_META_UUID ?
				CFS_OFF_SB_META_UUID : CFS_OFF_SB_UUID), 16);
	if (sb->feat_compat & CFS_FEAT_COMPAT_MOUNT_OPTS)
		memcpy(sb->mount_opts, buf + CFS_OFF_SB_MOUNT_OPTS, 63);
	memcpy(sb->label, buf + CFS_OFF_SB_LABEL, 63);
	sb->label[63] = 0;
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

/* The chunk header's integer fields (the uuid is a byte string). */
static const struct field ch_fields[] = {
	FIELD(struct cfs_chunk_hdr, index, CFS_OFF_CH_INDEX),
	FIELD(struct cfs_chunk_hdr, state, CFS_OFF_CH_STATE),
	FIELD(struct cfs_chunk_hdr, generation, CFS_OFF_CH_GEN),
	FIELD(struct cfs_chunk_hdr, last_check, CFS_OFF_CH_LAST_CHECK),
	FIELD(struct cfs_chunk_hdr, last_write, CFS_OFF_CH_LAST_WRITE),
	FIELD(struct cfs_chunk_hdr, free_blocks, CFS_OFF_CH_FREE_BLK),
	FIELD(struct cfs_chunk_hdr, free_inodes, CFS_OFF_CH_FREE_INO),
	FIELD(struct cfs_chunk_hdr, bbm_init, CFS_OFF_CH_BBM_INIT),
	FIELD(struct cfs_chunk_hdr, ibm_init, CFS_OFF_CH_IBM_INIT),
	FIELD(struct cfs_chunk_hdr, itable_init, CFS_OFF_CH_ITAB_INIT),
	FIELD(struct cfs_chunk_hdr, nconts, CFS_OFF_CH_NCONTS),
	FIELD(struct cfs_chunk_hdr, nstubs, CFS_OFF_CH_NSTUBS),
	FIELD(struct cfs_chunk_hdr, ndirs, CFS_OFF_CH_NDIRS),
	FIELD(struct cfs_chunk_hdr, error_count, CFS_OFF_CH_ERR_COUNT),
};

/* An error record's integer fields (what is a byte string). */
static const struct field er_fields[] = {
	FIELD(struct cfs_err_rec, time, CFS_OFF_ER_TIME),
	FIELD(struct cfs_err_rec, ino, CFS_OFF_ER_INO),
	FIELD(struct cfs_err_rec, err, CFS_OFF_ER_ERRNO),
	FIELD(struct cfs_err_rec, block, CFS_OFF_ER_BLOCK),
};

static void err_rec_encode(const struct cfs_err_rec *e, uint8_t *p)
{
	FIELDS_ENCODE(er_fields, e, p);
	memset(p + CFS_OFF_ER_WHAT, 0, CFS_ERR_WHAT_LEN);
	memcpy(p + CFS_OFF_ER_WHAT, e->what, strnlen(e->what, CFS_ERR_WHAT_LEN - 1));
}

static void err_rec_decode(const uint8_t *p, struct cfs_err_rec *e)
{
	FIELDS_DECODE(er_fields, p, e);
	memcpy(e->what, p + CFS_OFF_ER_WHAT, CFS_ERR_WHAT_LEN);
	e->what[CFS_ERR_WHAT_LEN - 1] = 0;
}

void cfs_chunk_hdr_encode(const struct cfs_chunk_hdr *h, uint8_t *blk)
{
	FIELDS_ENCODE(ch_fields, h, blk);
	memcpy(blk + CFS_OFF_CH_UUID, h->uuid, 16);
	err_rec_encode(&h->first_error, blk + CFS_OFF_CH_ERR_FIRST);
	err_rec_encode(&h->last_error, blk + CFS_OFF_CH_ERR_LAST);
}

void cfs_chunk_hdr_decode(const uint8_t *blk, struct cfs_chunk_hdr *h)
{
	memset(h, 0, sizeof(*h));   /* padding too: callers compare headers whole */
	FIELDS_DECODE(ch_fields, blk, h);
	memcpy(h->uuid, blk + CFS_OFF_CH_UUID, 16);
	err_rec_decode(blk + CFS_OFF_CH_ERR_FIRST, &h->first_error);
	err_rec_decode(blk + CFS_OFF_CH_ERR_LAST, &h->last_error);
}

/* Inode, inode_size bytes in the inode table. */

static const struct field in_fields[] = {
	FIELD(struct cfs_dinode, mode, CFS_OFF_IN_MODE),
	FIELD(struct cfs_dinode, flags, CFS_OFF_IN_FLAGS),
	FIELD(struct cfs_dinode, nlink, CFS_OFF_IN_NLINK),
	FIELD(struct cfs_dinode, uid, CFS_OFF_IN_UID),
	FIELD(struct cfs_dinode, gid, CFS_OFF_IN_GID),
	FIELD(struct cfs_dinode, size, CFS_OFF_IN_SIZE),
	FIELD(struct cfs_dinode, atime, CFS_OFF_IN_ATIME),
	FIELD(struct cfs_dinode, mtime, CFS_OFF_IN_MTIME),
	FIELD(struct cfs_dinode, ctime, CFS_OFF_IN_CTIME),
	FIELD(struct cfs_dinode, crtime, CFS_OFF_IN_CRTIME),
	FIELD(struct cfs_dinode, atime_ns, CFS_OFF_IN_ATIME_NS),
	FIELD(struct cfs_dinode, mtime_ns, CFS_OFF_IN_MTIME_NS),
	FIELD(struct cfs_dinode, ctime_ns, CFS_OFF_IN_CTIME_NS),
	FIELD(struct cfs_dinode, crtime_ns, CFS_OFF_IN_CRTIME_NS),
	FIELD(struct cfs_dinode, generation, CFS_OFF_IN_GEN),
	FIELD(struct cfs_dinode, xattr_block, CFS_OFF_IN_XATTR_BLK),
	FIELD(struct cfs_dinode, nblocks, CFS_OFF_IN_NBLOCKS),
	FIELD(struct cfs_dinode, rdev, CFS_OFF_IN_RDEV),
	FIELD(struct cfs_dinode, head, CFS_OFF_IN_HEAD),
	FIELD(struct cfs_dinode, back, CFS_OFF_IN_BACK),
	FIELD(struct cfs_dinode, lo, CFS_OFF_IN_LO),
	FIELD(struct cfs_dinode, hi, CFS_OFF_IN_HI),
	FIELD(struct cfs_dinode, cont[0], CFS_OFF_IN_CONT),
	FIELD(struct cfs_dinode, cont[1], CFS_OFF_IN_CONT + 4),
	FIELD(struct cfs_dinode, cont[2], CFS_OFF_IN_CONT + 8),
	FIELD(struct cfs_dinode, cont[3], CFS_OFF_IN_CONT + 12),
	FIELD(struct cfs_dinode, xattr_len, CFS_OFF_IN_XATTR_LEN),
};

void cfs_dinode_decode(const uint8_t *raw, struct cfs_dinode *d)
{
	FIELDS_DECODE(in_fields, raw, d);
}

void cfs_dinode_encode(const struct cfs_dinode *d, uint8_t *raw)
{
	FIELDS_ENCODE(in_fields, d, raw);
	memset(raw + CFS_OFF_IN_RESERVED, 0, CFS_OFF_IN_VAR - CFS_OFF_IN_RESERVED);
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

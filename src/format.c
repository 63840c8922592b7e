/* Encoders and decoders for the fixed on-disk structures: superblock,
 * common metadata block header, chunk header, inode.  Their offsets
 * (format.h) are the contract documented in docs/FORMAT.md. */
#include "format.h"

#include <errno.h>
#include <string.h>

#include "crc32c.h"
#include "le.h"

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

void cfs_super_encode(const struct cfs_super *sb, uint8_t *buf)
{
	memset(buf, 0, CFS_SB_SIZE);
	put_le32(buf + CFS_OFF_SB_MAGIC, CFS_SB_MAGIC);
	put_le32(buf + CFS_OFF_SB_VERSION, sb->version);
	put_le32(buf + CFS_OFF_SB_BLOCK_SIZE, sb->block_size);
	put_le32(buf + CFS_OFF_SB_COMPAT, sb->feat_compat);
	put_le32(buf + CFS_OFF_SB_RO_COMPAT, sb->feat_ro_compat);
	put_le32(buf + CFS_OFF_SB_INCOMPAT, sb->feat_incompat);
	put_le32(buf + CFS_OFF_SB_INODE_SIZE, sb->inode_size);
	put_le32(buf + CFS_OFF_SB_NCHUNKS, sb->nchunks);
	put_le32(buf + CFS_OFF_SB_IPC, sb->inodes_per_chunk);
	put_le64(buf + CFS_OFF_SB_CHUNK_BLOCKS, sb->chunk_blocks);
	put_le64(buf + CFS_OFF_SB_FIRST_CHUNK, sb->first_chunk_block);
	put_le64(buf + CFS_OFF_SB_TOTAL_BLOCKS, sb->total_blocks);
	put_le64(buf + CFS_OFF_SB_BACKUP, sb->backup_sb_block);
	put_le32(buf + CFS_OFF_SB_ROOT, sb->root_ino);
	put_le32(buf + CFS_OFF_SB_LPF, sb->lpf_ino);
	put_le64(buf + CFS_OFF_SB_CREATED, (uint64_t)sb->created);
	memcpy(buf + CFS_OFF_SB_UUID, sb->uuid, 16);
	memcpy(buf + CFS_OFF_SB_LABEL, sb->label, strnlen(sb->label, 63));
	put_le32(buf + CFS_OFF_SB_BBM_BLOCKS, sb->bbm_blocks);
	put_le32(buf + CFS_OFF_SB_IBM_BLOCKS, sb->ibm_blocks);
	put_le32(buf + CFS_OFF_SB_ITABLE, sb->itable_blocks);
	put_le32(buf + CFS_OFF_SB_DATA_START, sb->data_start);
	put_le32(buf + CFS_OFF_SB_HASH_SEED, sb->hash_seed);
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
	sb->version = get_le32(buf + CFS_OFF_SB_VERSION);
	sb->block_size = get_le32(buf + CFS_OFF_SB_BLOCK_SIZE);
	sb->feat_compat = get_le32(buf + CFS_OFF_SB_COMPAT);
	sb->feat_ro_compat = get_le32(buf + CFS_OFF_SB_RO_COMPAT);
	sb->feat_incompat = get_le32(buf + CFS_OFF_SB_INCOMPAT);
	sb->inode_size = get_le32(buf + CFS_OFF_SB_INODE_SIZE);
	sb->nchunks = get_le32(buf + CFS_OFF_SB_NCHUNKS);
	sb->inodes_per_chunk = get_le32(buf + CFS_OFF_SB_IPC);
	sb->chunk_blocks = get_le64(buf + CFS_OFF_SB_CHUNK_BLOCKS);
	sb->first_chunk_block = get_le64(buf + CFS_OFF_SB_FIRST_CHUNK);
	sb->total_blocks = get_le64(buf + CFS_OFF_SB_TOTAL_BLOCKS);
	sb->backup_sb_block = get_le64(buf + CFS_OFF_SB_BACKUP);
	sb->root_ino = get_le32(buf + CFS_OFF_SB_ROOT);
	sb->lpf_ino = get_le32(buf + CFS_OFF_SB_LPF);
	sb->created = (int64_t)get_le64(buf + CFS_OFF_SB_CREATED);
	memcpy(sb->uuid, buf + CFS_OFF_SB_UUID, 16);
	memcpy(sb->label, buf + CFS_OFF_SB_LABEL, 63);
	sb->label[63] = 0;
	sb->bbm_blocks = get_le32(buf + CFS_OFF_SB_BBM_BLOCKS);
	sb->ibm_blocks = get_le32(buf + CFS_OFF_SB_IBM_BLOCKS);
	sb->itable_blocks = get_le32(buf + CFS_OFF_SB_ITABLE);
	sb->data_start = get_le32(buf + CFS_OFF_SB_DATA_START);
	sb->hash_seed = get_le32(buf + CFS_OFF_SB_HASH_SEED);
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

static void err_rec_encode(const struct cfs_err_rec *e, uint8_t *p)
{
	put_le64(p + CFS_OFF_ER_TIME, (uint64_t)e->time);
	put_le32(p + CFS_OFF_ER_INO, e->ino);
	put_le32(p + CFS_OFF_ER_ERRNO, e->err);
	put_le64(p + CFS_OFF_ER_BLOCK, e->block);
	memset(p + CFS_OFF_ER_WHAT, 0, CFS_ERR_WHAT_LEN);
	memcpy(p + CFS_OFF_ER_WHAT, e->what, strnlen(e->what, CFS_ERR_WHAT_LEN - 1));
}

static void err_rec_decode(const uint8_t *p, struct cfs_err_rec *e)
{
	e->time = (int64_t)get_le64(p + CFS_OFF_ER_TIME);
	e->ino = get_le32(p + CFS_OFF_ER_INO);
	e->err = get_le32(p + CFS_OFF_ER_ERRNO);
	e->block = get_le64(p + CFS_OFF_ER_BLOCK);
	memcpy(e->what, p + CFS_OFF_ER_WHAT, CFS_ERR_WHAT_LEN);
	e->what[CFS_ERR_WHAT_LEN - 1] = 0;
}

void cfs_chunk_hdr_encode(const struct cfs_chunk_hdr *h, uint8_t *blk)
{
	put_le32(blk + CFS_OFF_CH_INDEX, h->index);
	put_le32(blk + CFS_OFF_CH_STATE, h->state);
	put_le64(blk + CFS_OFF_CH_GEN, h->generation);
	put_le64(blk + CFS_OFF_CH_LAST_CHECK, (uint64_t)h->last_check);
	put_le64(blk + CFS_OFF_CH_LAST_WRITE, (uint64_t)h->last_write);
	put_le32(blk + CFS_OFF_CH_FREE_BLK, h->free_blocks);
	put_le32(blk + CFS_OFF_CH_FREE_INO, h->free_inodes);
	put_le32(blk + CFS_OFF_CH_BBM_INIT, h->bbm_init);
	put_le32(blk + CFS_OFF_CH_IBM_INIT, h->ibm_init);
	put_le32(blk + CFS_OFF_CH_ITAB_INIT, h->itable_init);
	put_le32(blk + CFS_OFF_CH_NCONTS, h->nconts);
	put_le32(blk + CFS_OFF_CH_NSTUBS, h->nstubs);
	put_le32(blk + CFS_OFF_CH_NDIRS, h->ndirs);
	memcpy(blk + CFS_OFF_CH_UUID, h->uuid, 16);
	put_le32(blk + CFS_OFF_CH_ERR_COUNT, h->error_count);
	err_rec_encode(&h->first_error, blk + CFS_OFF_CH_ERR_FIRST);
	err_rec_encode(&h->last_error, blk + CFS_OFF_CH_ERR_LAST);
}

void cfs_chunk_hdr_decode(const uint8_t *blk, struct cfs_chunk_hdr *h)
{
	memset(h, 0, sizeof(*h));   /* padding too: callers compare headers whole */
	h->index = get_le32(blk + CFS_OFF_CH_INDEX);
	h->state = get_le32(blk + CFS_OFF_CH_STATE);
	h->generation = get_le64(blk + CFS_OFF_CH_GEN);
	h->last_check = (int64_t)get_le64(blk + CFS_OFF_CH_LAST_CHECK);
	h->last_write = (int64_t)get_le64(blk + CFS_OFF_CH_LAST_WRITE);
	h->free_blocks = get_le32(blk + CFS_OFF_CH_FREE_BLK);
	h->free_inodes = get_le32(blk + CFS_OFF_CH_FREE_INO);
	h->bbm_init = get_le32(blk + CFS_OFF_CH_BBM_INIT);
	h->ibm_init = get_le32(blk + CFS_OFF_CH_IBM_INIT);
	h->itable_init = get_le32(blk + CFS_OFF_CH_ITAB_INIT);
	h->nconts = get_le32(blk + CFS_OFF_CH_NCONTS);
	h->nstubs = get_le32(blk + CFS_OFF_CH_NSTUBS);
	h->ndirs = get_le32(blk + CFS_OFF_CH_NDIRS);
	memcpy(h->uuid, blk + CFS_OFF_CH_UUID, 16);
	h->error_count = get_le32(blk + CFS_OFF_CH_ERR_COUNT);
	err_rec_decode(blk + CFS_OFF_CH_ERR_FIRST, &h->first_error);
	err_rec_decode(blk + CFS_OFF_CH_ERR_LAST, &h->last_error);
}

/* Inode, inode_size bytes in the inode table. */

void cfs_dinode_decode(const uint8_t *raw, struct cfs_dinode *d)
{
	int i;

	d->mode = get_le16(raw + CFS_OFF_IN_MODE);
	d->flags = get_le16(raw + CFS_OFF_IN_FLAGS);
	d->nlink = get_le32(raw + CFS_OFF_IN_NLINK);
	d->uid = get_le32(raw + CFS_OFF_IN_UID);
	d->gid = get_le32(raw + CFS_OFF_IN_GID);
	d->size = get_le64(raw + CFS_OFF_IN_SIZE);
	d->atime = (int64_t)get_le64(raw + CFS_OFF_IN_ATIME);
	d->mtime = (int64_t)get_le64(raw + CFS_OFF_IN_MTIME);
	d->ctime = (int64_t)get_le64(raw + CFS_OFF_IN_CTIME);
	d->crtime = (int64_t)get_le64(raw + CFS_OFF_IN_CRTIME);
	d->atime_ns = get_le32(raw + CFS_OFF_IN_ATIME_NS);
	d->mtime_ns = get_le32(raw + CFS_OFF_IN_MTIME_NS);
	d->ctime_ns = get_le32(raw + CFS_OFF_IN_CTIME_NS);
	d->crtime_ns = get_le32(raw + CFS_OFF_IN_CRTIME_NS);
	d->generation = get_le32(raw + CFS_OFF_IN_GEN);
	d->xattr_block = get_le32(raw + CFS_OFF_IN_XATTR_BLK);
	d->nblocks = get_le64(raw + CFS_OFF_IN_NBLOCKS);
	d->rdev = get_le64(raw + CFS_OFF_IN_RDEV);
	d->head = get_le32(raw + CFS_OFF_IN_HEAD);
	d->back = get_le32(raw + CFS_OFF_IN_BACK);
	d->lo = get_le64(raw + CFS_OFF_IN_LO);
	d->hi = get_le64(raw + CFS_OFF_IN_HI);
	for (i = 0; i < CFS_NCONT; i++)
		d->cont[i] = get_le32(raw + CFS_OFF_IN_CONT + 4 * i);
	d->xattr_len = get_le16(raw + CFS_OFF_IN_XATTR_LEN);
}

void cfs_dinode_encode(const struct cfs_dinode *d, uint8_t *raw)
{
	int i;

	put_le16(raw + CFS_OFF_IN_MODE, d->mode);
	put_le16(raw + CFS_OFF_IN_FLAGS, d->flags);
	put_le32(raw + CFS_OFF_IN_NLINK, d->nlink);
	put_le32(raw + CFS_OFF_IN_UID, d->uid);
	put_le32(raw + CFS_OFF_IN_GID, d->gid);
	put_le64(raw + CFS_OFF_IN_SIZE, d->size);
	put_le64(raw + CFS_OFF_IN_ATIME, (uint64_t)d->atime);
	put_le64(raw + CFS_OFF_IN_MTIME, (uint64_t)d->mtime);
	put_le64(raw + CFS_OFF_IN_CTIME, (uint64_t)d->ctime);
	put_le64(raw + CFS_OFF_IN_CRTIME, (uint64_t)d->crtime);
	put_le32(raw + CFS_OFF_IN_ATIME_NS, d->atime_ns);
	put_le32(raw + CFS_OFF_IN_MTIME_NS, d->mtime_ns);
	put_le32(raw + CFS_OFF_IN_CTIME_NS, d->ctime_ns);
	put_le32(raw + CFS_OFF_IN_CRTIME_NS, d->crtime_ns);
	put_le32(raw + CFS_OFF_IN_GEN, d->generation);
	put_le32(raw + CFS_OFF_IN_XATTR_BLK, d->xattr_block);
	put_le64(raw + CFS_OFF_IN_NBLOCKS, d->nblocks);
	put_le64(raw + CFS_OFF_IN_RDEV, d->rdev);
	put_le32(raw + CFS_OFF_IN_HEAD, d->head);
	put_le32(raw + CFS_OFF_IN_BACK, d->back);
	put_le64(raw + CFS_OFF_IN_LO, d->lo);
	put_le64(raw + CFS_OFF_IN_HI, d->hi);
	for (i = 0; i < CFS_NCONT; i++)
		put_le32(raw + CFS_OFF_IN_CONT + 4 * i, d->cont[i]);
	put_le16(raw + CFS_OFF_IN_XATTR_LEN, d->xattr_len);
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

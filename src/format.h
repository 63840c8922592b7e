/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The chunkfs on-disk format: constants, byte offsets, decoded structures
 * and their codecs.  docs/FORMAT.md is the prose contract (its section
 * numbers are given in brackets).  The format layer is this header,
 * format.c (superblock, chunk header, inode, common block header) and
 * format_node.c (B+tree nodes, extent and directory records, xattr entries
 * and blocks): nothing else encodes or decodes on-disk bytes.  The offsets
 * are public so that the damage tools of the tests (tests/damage.h,
 * tests/fsck/mkcase.c) can name the field they change; library code goes
 * through the codecs. */
#ifndef CHUNKFS_FORMAT_H
#define CHUNKFS_FORMAT_H

#include <stdint.h>
#include <stddef.h>

#include "le.h"

#define CFS_SB_MAGIC        0x53464B43u   /* "CKFS" */
#define CFS_FORMAT_VERSION  1
#define CFS_SB_SIZE         1024          /* bytes used in block 0 */

#define CFS_MAGIC_CHUNK     0x44484B43u   /* "CKHD" chunk header */
#define CFS_MAGIC_BBM       0x42424B43u   /* "CKBB" block bitmap */
#define CFS_MAGIC_IBM       0x42494B43u   /* "CKIB" inode bitmap */
#define CFS_MAGIC_EXT       0x58454B43u   /* "CKEX" extent tree node */
#define CFS_MAGIC_DIR       0x52444B43u   /* "CKDR" directory tree node */
#define CFS_MAGIC_XATTR     0x41584B43u   /* "CKXA" xattr overflow block */
#define CFS_MAGIC_ICMAP     0x4D494B43u   /* "CKIM" inode-cluster map block */

/* Feature flags.  Unknown incompat: refuse.  Unknown ro_compat: read-only. */
/* compat: mount_opts holds default mount options (chunkfs tune -o) */
#define CFS_FEAT_COMPAT_MOUNT_OPTS   0x1u
/* compat: chunk headers keep an error record (count, first, last) */
#define CFS_FEAT_COMPAT_ERROR_RECORD 0x2u
/* incompat: metadata is bound to meta_uuid, uuid is free (chunkfs tune -U) */
#define CFS_FEAT_INCOMPAT_META_UUID  0x1u
/* incompat: a chunk makes inode clusters from free blocks when its inode
 * table is used up (local numbers past inodes_per_chunk) [10.4] */
#define CFS_FEAT_INCOMPAT_DYNINODES  0x2u
/* incompat: a file's own inode is being renumbered (evacuate, shrink):
 * renum_old's names are moving to renum_new; fsck finishes it [4, 19] */
#define CFS_FEAT_INCOMPAT_RENUMBER   0x4u
#define CFS_FEAT_COMPAT_SUPP     (CFS_FEAT_COMPAT_MOUNT_OPTS | CFS_FEAT_COMPAT_ERROR_RECORD)
#define CFS_FEAT_RO_COMPAT_SUPP  0u
#define CFS_FEAT_INCOMPAT_SUPP   (CFS_FEAT_INCOMPAT_META_UUID | CFS_FEAT_INCOMPAT_DYNINODES | \
				  CFS_FEAT_INCOMPAT_RENUMBER)

#define CFS_BLOCK_HDR       16            /* common metadata block header */
#define CFS_INO_CHUNK_OF(i) ((uint32_t)(i) >> 24)
#define CFS_INO_LOCAL_OF(i) ((uint32_t)(i) & 0xFFFFFFu)
#define CFS_MIN_BLOCK       1024
#define CFS_MAX_BLOCK       65536
#define CFS_MIN_INODE       256
#define CFS_MAX_LOCAL_INO   0xFFFFFFu

/* chunk states */
#define CFS_STATE_CLEAN     0
#define CFS_STATE_DIRTY     1
#define CFS_STATE_ERROR     2             /* flag: fsck left errors */

/* inode flags */
#define CFS_IFL_INLINE      0x0001        /* data lives in the inode */
#define CFS_IFL_EXTENTS     0x0002        /* data area holds an extent root */
#define CFS_IFL_CONT        0x0004        /* continuation of head */
#define CFS_IFL_STUB        0x0008        /* cross-chunk link back-reference */

#define CFS_INODE_FIXED     144           /* start of the variable area */
#define CFS_EXT_ROOT_SIZE   56            /* extent root in the variable area */
#define CFS_NCONT           4             /* continuation pointers per inode */

/* ---- byte offsets ---------------------------------------------------------- */

/* Superblock [4]: CFS_SB_SIZE bytes at byte 0 of block 0 and of the backup. */
enum {
	CFS_OFF_SB_MAGIC        = 0,    /* u32 CFS_SB_MAGIC */
	CFS_OFF_SB_CRC          = 4,    /* u32 crc32c(0) of [0,4) then [8,1024) */
	CFS_OFF_SB_VERSION      = 8,    /* u32 */
	CFS_OFF_SB_BLOCK_SIZE   = 12,   /* u32 */
	CFS_OFF_SB_COMPAT       = 16,   /* u32 */
	CFS_OFF_SB_RO_COMPAT    = 20,   /* u32 */
	CFS_OFF_SB_INCOMPAT     = 24,   /* u32 */
	CFS_OFF_SB_INODE_SIZE   = 28,   /* u32 */
	CFS_OFF_SB_NCHUNKS      = 32,   /* u32 */
	CFS_OFF_SB_IPC          = 36,   /* u32 inodes per chunk */
	CFS_OFF_SB_CHUNK_BLOCKS = 40,   /* u64 */
	CFS_OFF_SB_FIRST_CHUNK  = 48,   /* u64 */
	CFS_OFF_SB_TOTAL_BLOCKS = 56,   /* u64 */
	CFS_OFF_SB_BACKUP       = 64,   /* u64 */
	CFS_OFF_SB_ROOT         = 72,   /* u32 */
	CFS_OFF_SB_LPF          = 76,   /* u32 lost+found */
	CFS_OFF_SB_CREATED      = 80,   /* s64 */
	CFS_OFF_SB_UUID         = 88,   /* u8[16] */
	CFS_OFF_SB_LABEL        = 104,  /* char[64], NUL padded */
	CFS_OFF_SB_BBM_BLOCKS   = 168,  /* u32 */
	CFS_OFF_SB_IBM_BLOCKS   = 172,  /* u32 */
	CFS_OFF_SB_ITABLE       = 176,  /* u32 */
	CFS_OFF_SB_DATA_START   = 180,  /* u32 */
	CFS_OFF_SB_HASH_SEED    = 184,  /* u32 */
	CFS_OFF_SB_META_UUID    = 188,  /* u8[16], with INCOMPAT_META_UUID */
	CFS_OFF_SB_MOUNT_OPTS   = 204,  /* char[64], NUL padded, with COMPAT_MOUNT_OPTS */
	CFS_OFF_SB_RENUM_OLD    = 268,  /* u32, with INCOMPAT_RENUMBER */
	CFS_OFF_SB_RENUM_NEW    = 272,  /* u32, with INCOMPAT_RENUMBER */
};

/* Common metadata block header [7]: the first CFS_BLOCK_HDR bytes of every
 * metadata block but the superblock and the inode table.  A bitmap block's
 * bits follow it [9]. */
enum {
	CFS_OFF_MB_MAGIC   = 0,    /* u32 */
	CFS_OFF_MB_CRC     = 4,    /* u32 crc32c(seed) of [0,4) then [8,bsize) */
	CFS_OFF_MB_BLOCKNR = 8,    /* u64 absolute block number of this block */
	CFS_OFF_BM_BITS    = CFS_BLOCK_HDR,
};

/* Chunk header [8]: block 0 of each chunk, after the common header. */
enum {
	CFS_OFF_CH_INDEX      = 16,   /* u32 chunk number */
	CFS_OFF_CH_STATE      = 20,   /* u32 CFS_STATE_* */
	CFS_OFF_CH_GEN        = 24,   /* u64 incremented each time marked dirty */
	CFS_OFF_CH_LAST_CHECK = 32,   /* s64 */
	CFS_OFF_CH_LAST_WRITE = 40,   /* s64 */
	CFS_OFF_CH_FREE_BLK   = 48,   /* u32 */
	CFS_OFF_CH_FREE_INO   = 52,   /* u32 */
	CFS_OFF_CH_BBM_INIT   = 56,   /* u32 block bitmap blocks written */
	CFS_OFF_CH_IBM_INIT   = 60,   /* u32 inode bitmap blocks written */
	CFS_OFF_CH_ITAB_INIT  = 64,   /* u32 inode table blocks written */
	CFS_OFF_CH_NCONTS     = 68,   /* u32 */
	CFS_OFF_CH_NSTUBS     = 72,   /* u32 */
	CFS_OFF_CH_NDIRS      = 76,   /* u32 */
	CFS_OFF_CH_UUID       = 80,   /* u8[16] filesystem uuid */
	/* error record (feature ERROR_RECORD; zero without it) */
	CFS_OFF_CH_ERR_COUNT  = 96,   /* u32 errors met in operation */
	CFS_OFF_CH_ERR_FIRST  = 104,  /* record: the first of them */
	CFS_OFF_CH_ERR_LAST   = 160,  /* record: the last */
	/* DYNINODES: chunk-relative blocks of the inode-cluster map, 0 = none */
	CFS_OFF_CH_ICMAP      = 216,  /* u32[CFS_ICMAP_BLOCKS] */
};

/* Inode clusters [10.4] (DYNINODES): CFS_ICL_INODES inodes in
 * cfs_icl_blocks() contiguous data-area blocks, listed in map blocks. */
#define CFS_ICMAP_BLOCKS    16            /* map blocks per chunk, at most */
#define CFS_ICL_INODES      64            /* inodes per cluster */
enum {
	CFS_OFF_IM_INDEX = 16,     /* u32 which of the chunk's map blocks (0..15) */
	CFS_OFF_IM_RECS  = 32,     /* records, to the end of the block */
	CFS_OFF_ICR_START = 0,     /* u32 chunk-relative first block, 0 = no cluster */
	CFS_OFF_ICR_USED  = 8,     /* u64 bit s: slot s in use */
	CFS_ICR_SIZE      = 16,
};

/* One error of the chunk header's record, at CFS_OFF_CH_ERR_FIRST/LAST. */
enum {
	CFS_OFF_ER_TIME  = 0,          /* s64 seconds */
	CFS_OFF_ER_INO   = 8,          /* u32 inode, 0 = not known */
	CFS_OFF_ER_ERRNO = 12,         /* u32 errno returned (EBADMSG, EUCLEAN) */
	CFS_OFF_ER_BLOCK = 16,         /* u64 absolute block, 0 = not known */
	CFS_OFF_ER_WHAT  = 24,         /* char[32] what was wrong, NUL padded */
	CFS_ERR_WHAT_LEN = 32,
	CFS_ERR_REC_SIZE = 56,
};

/* Inode [10.2]: inode_size bytes in the inode table; the crc is the last
 * u32 (inode_size - 4). */
enum {
	CFS_OFF_IN_MODE      = 0,    /* u16 */
	CFS_OFF_IN_FLAGS     = 2,    /* u16 CFS_IFL_* */
	CFS_OFF_IN_NLINK     = 4,    /* u32 */
	CFS_OFF_IN_UID       = 8,    /* u32 */
	CFS_OFF_IN_GID       = 12,   /* u32 */
	CFS_OFF_IN_SIZE      = 16,   /* u64 */
	CFS_OFF_IN_ATIME     = 24,   /* s64 */
	CFS_OFF_IN_MTIME     = 32,   /* s64 */
	CFS_OFF_IN_CTIME     = 40,   /* s64 */
	CFS_OFF_IN_CRTIME    = 48,   /* s64 */
	CFS_OFF_IN_ATIME_NS  = 56,   /* u32 */
	CFS_OFF_IN_MTIME_NS  = 60,   /* u32 */
	CFS_OFF_IN_CTIME_NS  = 64,   /* u32 */
	CFS_OFF_IN_CRTIME_NS = 68,   /* u32 */
	CFS_OFF_IN_GEN       = 72,   /* u32 */
	CFS_OFF_IN_XATTR_BLK = 76,   /* u32 chunk-relative */
	CFS_OFF_IN_NBLOCKS   = 80,   /* u64 */
	CFS_OFF_IN_RDEV      = 88,   /* u64 */
	CFS_OFF_IN_HEAD      = 96,   /* u32 */
	CFS_OFF_IN_BACK      = 100,  /* u32 */
	CFS_OFF_IN_LO        = 104,  /* u64 */
	CFS_OFF_IN_HI        = 112,  /* u64 */
	CFS_OFF_IN_CONT      = 120,  /* u32[CFS_NCONT] */
	CFS_OFF_IN_XATTR_LEN = 136,  /* u16 */
	CFS_OFF_IN_RESERVED  = 138,  /* 6 bytes, zero */
	CFS_OFF_IN_VAR       = CFS_INODE_FIXED,   /* variable area [10.3] */
};

/* B+tree node header [11], at the start of an inode's extent root and at
 * CFS_OFF_NODE_HDR of a node block; index records follow it. */
enum {
	CFS_OFF_BTN_LEVEL = 0,     /* u16, 0 = leaf */
	CFS_OFF_BTN_NREC  = 2,     /* u16 */
	CFS_OFF_BTN_USED  = 4,     /* u32 bytes of records */
	CFS_BTN_SIZE      = 8,
	CFS_OFF_BTI_KEY   = 0,     /* u64, also the key of every leaf record */
	CFS_BT_KEY_SIZE   = 8,
	CFS_OFF_BTI_CHILD = 8,     /* u64 */
	CFS_BTI_SIZE      = 16,    /* index record */
};

/* Extent and directory node blocks [12, 14.2]. */
enum {
	CFS_OFF_NODE_HDR   = 16,   /* B+tree node header */
	CFS_OFF_NODE_OWNER = 24,   /* u32 inode owning the tree */
	CFS_OFF_NODE_RECS  = 32,   /* records, to the end of the block */
};

/* Extent leaf record [12]. */
enum {
	CFS_OFF_EXT_LBLK = 0,      /* u64 first logical block (the key) */
	CFS_OFF_EXT_PBLK = 8,      /* u32 chunk-relative physical block */
	CFS_OFF_EXT_LEN  = 12,     /* u32 blocks */
	CFS_EXT_SIZE     = 16,
};
#define CFS_EXT_MAX_LEN 0x7FFFFFFFu

/* Directory leaf record [14.2]: CFS_DE_FIXED + namelen bytes. */
enum {
	CFS_OFF_DE_HASH    = 0,    /* u64 (the key) */
	CFS_OFF_DE_INO     = 8,    /* u32 */
	CFS_OFF_DE_STUB    = 12,   /* u32, 0 = none */
	CFS_OFF_DE_TYPE    = 16,   /* u8 DT_* */
	CFS_OFF_DE_NAMELEN = 17,   /* u8 1..255 */
	CFS_OFF_DE_NAME    = 18,   /* name bytes, no NUL */
	CFS_DE_FIXED       = 18,
};

/* Extended attribute entry [15]: CFS_XE_FIXED + nlen + vlen bytes. */
enum {
	CFS_OFF_XE_NS   = 0,       /* u8 namespace 1..4 */
	CFS_OFF_XE_NLEN = 1,       /* u8 */
	CFS_OFF_XE_VLEN = 2,       /* u16 */
	CFS_OFF_XE_NAME = 4,       /* name, then value */
	CFS_XE_FIXED    = 4,
};
#define CFS_XATTR_NS_MAX 4

/* Xattr overflow block [15], after the common header. */
enum {
	CFS_OFF_XB_USED  = 16,     /* u32 bytes of entries */
	CFS_OFF_XB_OWNER = 20,     /* u32 inode */
	CFS_OFF_XB_DATA  = 32,     /* entries */
};

/* POSIX ACL value [15.1]: a header, then CFS_ACL_ENT_SIZE-byte entries. */
enum {
	CFS_OFF_ACL_VERSION = 0,   /* u32, CFS_ACL_VERSION */
	CFS_ACL_HDR_SIZE    = 4,
	CFS_OFF_ACE_TAG     = 0,   /* u16 CFS_ACL_* */
	CFS_OFF_ACE_PERM    = 2,   /* u16 rwx as 4, 2, 1 */
	CFS_OFF_ACE_ID      = 4,   /* u32 uid or gid */
	CFS_ACL_ENT_SIZE    = 8,
};

struct cfs_super {
	uint32_t version;
	uint32_t block_size;
	uint32_t feat_compat, feat_ro_compat, feat_incompat;
	uint32_t inode_size;
	uint32_t nchunks;
	uint32_t inodes_per_chunk;
	uint64_t chunk_blocks;
	uint64_t first_chunk_block;
	uint64_t total_blocks;
	uint64_t backup_sb_block;
	uint32_t root_ino;
	uint32_t lpf_ino;
	int64_t created;
	/* uuid is the one metadata is bound to (checksum seed, chunk
	 * headers); user_uuid is the filesystem's UUID as shown.  They differ
	 * only with CFS_FEAT_INCOMPAT_META_UUID, where uuid is meta_uuid. */
	uint8_t uuid[16];
	uint8_t user_uuid[16];
	char label[64];
	uint32_t bbm_blocks, ibm_blocks, itable_blocks, data_start;
	uint32_t hash_seed;
	char mount_opts[64];    /* with CFS_FEAT_COMPAT_MOUNT_OPTS */
	uint32_t renum_old, renum_new;  /* with CFS_FEAT_INCOMPAT_RENUMBER */
};

struct cfs_chunk_hdr {
	uint32_t index;
	uint32_t state;
	uint64_t generation;
	int64_t last_check, last_write;
	uint32_t free_blocks, free_inodes;
	uint32_t bbm_init, ibm_init, itable_init;
	uint32_t nconts, nstubs, ndirs;
	uint8_t uuid[16];
	uint32_t error_count;
	struct cfs_err_rec {
		int64_t time;
		uint32_t ino, err;
		uint64_t block;
		char what[CFS_ERR_WHAT_LEN];   /* NUL terminated */
	} first_error, last_error;
	uint32_t icmap[CFS_ICMAP_BLOCKS];   /* DYNINODES: map blocks, 0 = none */
};

/* One inode cluster of a map block [10.4]. */
struct cfs_icl_rec {
	uint32_t start;           /* chunk-relative, 0 = no cluster */
	uint64_t used;            /* bit s: slot s in use */
};

struct cfs_dinode {
	uint16_t mode;
	uint16_t flags;
	uint32_t nlink;
	uint32_t uid, gid;
	uint64_t size;
	int64_t atime, mtime, ctime, crtime;
	uint32_t atime_ns, mtime_ns, ctime_ns, crtime_ns;
	uint32_t generation;
	uint32_t xattr_block;     /* chunk-relative, 0 = none */
	uint64_t nblocks;         /* blocks owned in this chunk */
	uint64_t rdev;
	uint32_t head;            /* head inode (self for a head) */
	uint32_t back;            /* cont: predecessor; stub: directory; dir: parent */
	uint64_t lo, hi;          /* cont: mapped logical range; stub: lo = name hash */
	uint32_t cont[CFS_NCONT];
	uint16_t xattr_len;       /* bytes of in-inode xattrs after the data area */
};

/* Seed for every checksum of this filesystem (covers the uuid so blocks of
 * another chunkfs are never mistaken for ours). */
uint32_t cfs_fs_seed(const uint8_t uuid[16]);

int cfs_super_decode(const uint8_t *buf, struct cfs_super *sb);  /* -EUCLEAN/-EBADMSG */
void cfs_super_encode(const struct cfs_super *sb, uint8_t *buf); /* CFS_SB_SIZE bytes */
/* Geometry sanity: every field consistent and inside the device. */
int cfs_super_validate(const struct cfs_super *sb, uint64_t dev_blocks, const char **why);

void cfs_chunk_hdr_encode(const struct cfs_chunk_hdr *h, uint8_t *blk);
void cfs_chunk_hdr_decode(const uint8_t *blk, struct cfs_chunk_hdr *h);

/* Inode-cluster map block [10.4]: records per block, the block's index,
 * record i. */
uint32_t cfs_icmap_nrec(uint32_t bsize);
uint32_t cfs_icmap_index(const uint8_t *blk);
void cfs_icmap_set_index(uint8_t *blk, uint32_t k);
void cfs_icmap_rec_decode(const uint8_t *blk, uint32_t i, struct cfs_icl_rec *r);
void cfs_icmap_rec_encode(uint8_t *blk, uint32_t i, const struct cfs_icl_rec *r);
/* Blocks of one cluster: enough for CFS_ICL_INODES inodes, at least one. */
static inline uint32_t cfs_icl_blocks(uint32_t bsize, uint32_t isz)
{
	uint32_t n = (uint32_t)(((uint64_t)CFS_ICL_INODES * isz + bsize - 1) / bsize);

	return n ? n : 1;
}

/* Inode codec: raw is inode_size bytes.  The variable area
 * (raw + CFS_INODE_FIXED) is left to its owners (data, extents, xattrs). */
void cfs_dinode_decode(const uint8_t *raw, struct cfs_dinode *d);
void cfs_dinode_encode(const struct cfs_dinode *d, uint8_t *raw);
void cfs_dinode_csum_set(uint8_t *raw, uint32_t isz, uint32_t seed, uint32_t ino);
int cfs_dinode_csum_ok(const uint8_t *raw, uint32_t isz, uint32_t seed, uint32_t ino);
int cfs_dinode_is_zero(const uint8_t *raw, uint32_t isz);

/* Common metadata block header: magic, crc32c, own block number. */
void cfs_meta_init(uint8_t *blk, uint32_t magic, uint64_t blocknr);
void cfs_meta_csum_set(uint8_t *blk, uint32_t bsize, uint32_t seed);
/* 0, -EBADMSG (checksum), -EUCLEAN (wrong magic or block number). */
int cfs_meta_verify(const uint8_t *blk, uint32_t bsize, uint32_t seed,
		    uint32_t magic, uint64_t blocknr);
uint32_t cfs_meta_magic(const uint8_t *blk);
/* Recompute the superblock's own crc (CFS_SB_SIZE bytes at buf). */
void cfs_super_csum_set(uint8_t *buf);

/* Bitmap block [9]: item i is bit i & 7 of byte CFS_OFF_BM_BITS + i / 8. */
static inline int cfs_bitmap_get(const uint8_t *blk, uint64_t i)
{
	return (blk[CFS_OFF_BM_BITS + i / 8] >> (i % 8)) & 1;
}
static inline void cfs_bitmap_set(uint8_t *blk, uint64_t i, int v)
{
	uint8_t *p = blk + CFS_OFF_BM_BITS + i / 8, m = (uint8_t)(1u << (i % 8));

	*p = v ? (uint8_t)(*p | m) : (uint8_t)(*p & ~m);
}

/* ---- B+tree nodes [11] -------------------------------------------------------
 * h is a node header (an extent root, or cfs_node_hdr() of a node block);
 * rec a record.  Inline: the tree engine reads these for every step. */
static inline uint16_t cfs_btn_level(const uint8_t *h)
{
	return get_le16(h + CFS_OFF_BTN_LEVEL);
}
static inline uint16_t cfs_btn_nrec(const uint8_t *h)
{
	return get_le16(h + CFS_OFF_BTN_NREC);
}
static inline uint32_t cfs_btn_used(const uint8_t *h)
{
	return get_le32(h + CFS_OFF_BTN_USED);
}
static inline void cfs_btn_set(uint8_t *h, uint16_t level, uint16_t nrec, uint32_t used)
{
	put_le16(h + CFS_OFF_BTN_LEVEL, level);
	put_le16(h + CFS_OFF_BTN_NREC, nrec);
	put_le32(h + CFS_OFF_BTN_USED, used);
}
static inline uint64_t cfs_btrec_key(const uint8_t *rec)
{
	return get_le64(rec + CFS_OFF_BTI_KEY);
}
static inline uint64_t cfs_btidx_child(const uint8_t *rec)
{
	return get_le64(rec + CFS_OFF_BTI_CHILD);
}
static inline void cfs_btidx_set(uint8_t *rec, uint64_t key, uint64_t child)
{
	put_le64(rec + CFS_OFF_BTI_KEY, key);
	put_le64(rec + CFS_OFF_BTI_CHILD, child);
}

/* Extent and directory node blocks: the header, the records, their room,
 * the owning inode. */
uint8_t *cfs_node_hdr(const uint8_t *blk);
uint8_t *cfs_node_recs(const uint8_t *blk);
uint32_t cfs_node_cap(uint32_t bsize);
uint32_t cfs_node_owner(const uint8_t *blk);
void cfs_node_set_owner(uint8_t *blk, uint32_t ino);

/* Extent leaf record (CFS_EXT_SIZE bytes). */
void cfs_extent_decode(const uint8_t *rec, uint64_t *lblk, uint32_t *pblk, uint32_t *len);
void cfs_extent_encode(uint8_t *rec, uint64_t lblk, uint32_t pblk, uint32_t len);

/* Directory leaf record; name points into the record (no NUL). */
struct cfs_dirent {
	uint64_t hash;
	uint32_t ino, stub;
	uint8_t type, namelen;
	const uint8_t *name;
};
/* Length of the record at rec, room bytes before the end of the node's
 * records: 0 if it is corrupt (no name, or longer than room). */
size_t cfs_dirent_len(const uint8_t *rec, size_t room);
void cfs_dirent_decode(const uint8_t *rec, struct cfs_dirent *d);
size_t cfs_dirent_encode(const struct cfs_dirent *d, uint8_t *rec);   /* bytes */
/* The name hash [14.3]: 2 .. 2^63-1 (0 and 1 are the readdir cookies of
 * "." and ".."). */
uint64_t cfs_name_hash(uint32_t seed, const void *name, size_t len);
/* Point an existing record elsewhere; its name and hash stay. */
void cfs_dirent_retarget(uint8_t *rec, uint32_t ino, uint32_t stub, uint8_t type);

/* Extended attribute entry; name and value point into the entry. */
struct cfs_xattr_ent {
	uint8_t ns, nlen;
	uint16_t vlen;
	const uint8_t *name, *value;
};
/* Decode the entry at p, room bytes before the end of its area: its size,
 * or -EUCLEAN if it is invalid or does not fit. */
int cfs_xattr_ent_decode(const uint8_t *p, uint32_t room, struct cfs_xattr_ent *e);
uint32_t cfs_xattr_ent_size(uint32_t nlen, uint32_t vlen);
uint32_t cfs_xattr_ent_encode(const struct cfs_xattr_ent *e, uint8_t *p);  /* bytes */

/* POSIX ACL values [15.1]: the value of system.posix_acl_access and
 * system.posix_acl_default is the Linux xattr form (linux/posix_acl_xattr.h),
 * a version header and 8-byte entries, stored as the kernel passes it. */
#define CFS_ACL_VERSION     2
#define CFS_ACL_UNDEFINED   0xFFFFFFFFu   /* the id of the entries without one */
enum {
	CFS_ACL_USER_OBJ = 0x01, CFS_ACL_USER = 0x02, CFS_ACL_GROUP_OBJ = 0x04,
	CFS_ACL_GROUP = 0x08, CFS_ACL_MASK = 0x10, CFS_ACL_OTHER = 0x20,
};
struct cfs_acl_ent {
	uint16_t tag, perm;
	uint32_t id;
};
/* The entries of the n-byte value v, or -EINVAL: not version 2, or not a
 * header and whole entries. */
int cfs_acl_count(const void *v, size_t n);
void cfs_acl_decode(const void *v, int count, struct cfs_acl_ent *e);
/* The value's size for count entries; encode writes exactly that many bytes. */
size_t cfs_acl_size(int count);
void cfs_acl_encode(const struct cfs_acl_ent *e, int count, void *v);

/* Xattr overflow block: entries from cfs_xattr_blk_data, cap bytes of room. */
uint32_t cfs_xattr_blk_used(const uint8_t *blk);
uint32_t cfs_xattr_blk_owner(const uint8_t *blk);
void cfs_xattr_blk_set(uint8_t *blk, uint32_t used, uint32_t owner);
uint8_t *cfs_xattr_blk_data(const uint8_t *blk);
uint32_t cfs_xattr_blk_cap(uint32_t bsize);

#endif

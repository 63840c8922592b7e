/* The chunkfs on-disk format: constants, decoded structures and their
 * codecs.  docs/FORMAT.md is the prose contract; byte offsets are repeated
 * beside each field in format.c, which is the only place that encodes or
 * decodes superblocks, chunk headers, inodes and metadata block headers. */
#ifndef CHUNKFS_FORMAT_H
#define CHUNKFS_FORMAT_H

#include <stdint.h>
#include <stddef.h>

#define CFS_SB_MAGIC        0x53464B43u   /* "CKFS" */
#define CFS_FORMAT_VERSION  1
#define CFS_SB_SIZE         1024          /* bytes used in block 0 */

#define CFS_MAGIC_CHUNK     0x44484B43u   /* "CKHD" chunk header */
#define CFS_MAGIC_BBM       0x42424B43u   /* "CKBB" block bitmap */
#define CFS_MAGIC_IBM       0x42494B43u   /* "CKIB" inode bitmap */
#define CFS_MAGIC_EXT       0x58454B43u   /* "CKEX" extent tree node */
#define CFS_MAGIC_DIR       0x52444B43u   /* "CKDR" directory tree node */
#define CFS_MAGIC_XATTR     0x41584B43u   /* "CKXA" xattr overflow block */

/* Feature flags.  Unknown incompat: refuse.  Unknown ro_compat: read-only. */
/* compat: mount_opts holds default mount options (chunkfs tune -o) */
#define CFS_FEAT_COMPAT_MOUNT_OPTS   0x1u
/* incompat: metadata is bound to meta_uuid, uuid is free (chunkfs tune -U) */
#define CFS_FEAT_INCOMPAT_META_UUID  0x1u
#define CFS_FEAT_COMPAT_SUPP     CFS_FEAT_COMPAT_MOUNT_OPTS
#define CFS_FEAT_RO_COMPAT_SUPP  0u
#define CFS_FEAT_INCOMPAT_SUPP   CFS_FEAT_INCOMPAT_META_UUID

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

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The format layer against docs/FORMAT.md: every codec puts every field at
 * the byte offset the document gives (written here as plain numbers, on
 * purpose: they are the contract, format.h only names them), decodes what
 * it encoded, and the checksums cover what the document says. */
#include <stdint.h>
#include <string.h>

#include "format.h"
#include "test.h"

/* A value whose every byte differs, so that a field at a wrong offset or of
 * a wrong width shows. */
#define VAL(k) (0x0807060504030201ull * ((k) + 1ull) + 0x1111111111111111ull * (k))

static void check_le(const uint8_t *p, unsigned w, uint64_t v, const char *what)
{
	if (get_le(p, w) != (w == 8 ? v : v & ((1ull << (8 * w)) - 1)))
		TEST_FAIL("%s: 0x%llx on disk, 0x%llx encoded", what,
			  (unsigned long long)get_le(p, w), (unsigned long long)v);
}

/* FORMAT.md 4 */
static void test_superblock(void)
{
	static const struct { unsigned off, w; } f[] = {
		{ 8, 4 }, { 12, 4 }, { 16, 4 }, { 20, 4 }, { 24, 4 }, { 28, 4 }, { 32, 4 },
		{ 36, 4 }, { 40, 8 }, { 48, 8 }, { 56, 8 }, { 64, 8 }, { 72, 4 }, { 76, 4 },
		{ 80, 8 }, { 168, 4 }, { 172, 4 }, { 176, 4 }, { 180, 4 }, { 184, 4 },
	};
	static struct cfs_super sb = {   /* static: padding zero, for memcmp */
		.version = (uint32_t)VAL(0), .block_size = (uint32_t)VAL(1),
		.feat_compat = (uint32_t)VAL(2), .feat_ro_compat = (uint32_t)VAL(3),
		.feat_incompat = (uint32_t)VAL(4), .inode_size = (uint32_t)VAL(5),
		.nchunks = (uint32_t)VAL(6), .inodes_per_chunk = (uint32_t)VAL(7),
		.chunk_blocks = VAL(8), .first_chunk_block = VAL(9), .total_blocks = VAL(10),
		.backup_sb_block = VAL(11), .root_ino = (uint32_t)VAL(12),
		.lpf_ino = (uint32_t)VAL(13), .created = (int64_t)VAL(14),
		.bbm_blocks = (uint32_t)VAL(15), .ibm_blocks = (uint32_t)VAL(16),
		.itable_blocks = (uint32_t)VAL(17), .data_start = (uint32_t)VAL(18),
		.hash_seed = (uint32_t)VAL(19), .label = "a label",
		.uuid = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 },
		.user_uuid = { 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 },
		.mount_opts = "user_xattr,errors=continue",
	};
	struct cfs_super back;
	uint8_t buf[CFS_SB_SIZE];
	unsigned i;

	cfs_super_encode(&sb, buf);
	CHECK_EQ(get_le32(buf), 0x53464B43);
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		check_le(buf + f[i].off, f[i].w, VAL(i), "superblock field");
	/* VAL(4) and VAL(2) have bit 0 set: INCOMPAT_META_UUID puts the UUID
	 * shown at 88 and the checksum seed's at 188; COMPAT_MOUNT_OPTS the
	 * options at 204 */
	CHECK(sb.feat_incompat & 1 && sb.feat_compat & 1);
	CHECK(!memcmp(buf + 88, sb.user_uuid, 16));
	CHECK(!memcmp(buf + 188, sb.uuid, 16));
	CHECK(!memcmp(buf + 204, "user_xattr,errors=continue", 27));
	CHECK(!memcmp(buf + 104, "a label", 8));
	CHECK_OK(cfs_super_decode(buf, &back));
	CHECK(!memcmp(&sb, &back, sizeof(sb)));
	/* the crc at 4 covers [0,4) and [8,1024) */
	buf[1023] ^= 1;
	CHECK_ERR(cfs_super_decode(buf, &back), EBADMSG);
	cfs_super_csum_set(buf);
	CHECK_OK(cfs_super_decode(buf, &back));
	/* without META_UUID the one UUID is at 88 and is the seed too; without
	 * MOUNT_OPTS nothing is at 204 */
	back = sb;
	back.feat_incompat = back.feat_compat = 0;
	cfs_super_encode(&back, buf);
	CHECK(!memcmp(buf + 88, sb.uuid, 16));
	CHECK_EQ(buf[188] | buf[204], 0);
	CHECK_OK(cfs_super_decode(buf, &back));
	CHECK(!memcmp(back.uuid, sb.uuid, 16) && !memcmp(back.user_uuid, sb.uuid, 16));
}

/* FORMAT.md 7 and 8 */
static void test_chunk_header(void)
{
	/* the error record's fields after the uuid: count, then first and
	 * last (time, ino, errno, block) */
	static const struct { unsigned off, w; } f[] = {
		{ 16, 4 }, { 20, 4 }, { 24, 8 }, { 32, 8 }, { 40, 8 }, { 48, 4 }, { 52, 4 },
		{ 56, 4 }, { 60, 4 }, { 64, 4 }, { 68, 4 }, { 72, 4 }, { 76, 4 },
		{ 96, 4 }, { 104, 8 }, { 112, 4 }, { 116, 4 }, { 120, 8 },
		{ 160, 8 }, { 168, 4 }, { 172, 4 }, { 176, 8 },
		/* DYNINODES: the inode-cluster map blocks, u32[16] (10.4) */
		{ 216, 4 }, { 220, 4 }, { 224, 4 }, { 228, 4 }, { 232, 4 }, { 236, 4 },
		{ 240, 4 }, { 244, 4 }, { 248, 4 }, { 252, 4 }, { 256, 4 }, { 260, 4 },
		{ 264, 4 }, { 268, 4 }, { 272, 4 }, { 276, 4 },
	};
	static struct cfs_chunk_hdr h = {
		(uint32_t)VAL(0), (uint32_t)VAL(1), VAL(2), (int64_t)VAL(3), (int64_t)VAL(4),
		(uint32_t)VAL(5), (uint32_t)VAL(6), (uint32_t)VAL(7), (uint32_t)VAL(8),
		(uint32_t)VAL(9), (uint32_t)VAL(10), (uint32_t)VAL(11), (uint32_t)VAL(12),
		{ 9, 8, 7 }, (uint32_t)VAL(13),
		{ (int64_t)VAL(14), (uint32_t)VAL(15), (uint32_t)VAL(16), VAL(17), "first" },
		{ (int64_t)VAL(18), (uint32_t)VAL(19), (uint32_t)VAL(20), VAL(21), "last" },
		{ (uint32_t)VAL(22), (uint32_t)VAL(23), (uint32_t)VAL(24), (uint32_t)VAL(25),
		  (uint32_t)VAL(26), (uint32_t)VAL(27), (uint32_t)VAL(28), (uint32_t)VAL(29),
		  (uint32_t)VAL(30), (uint32_t)VAL(31), (uint32_t)VAL(32), (uint32_t)VAL(33),
		  (uint32_t)VAL(34), (uint32_t)VAL(35), (uint32_t)VAL(36), (uint32_t)VAL(37) },
	};
	struct cfs_chunk_hdr back;
	static uint8_t blk[1024];
	unsigned i;

	cfs_meta_init(blk, CFS_MAGIC_CHUNK, 0x1122334455ull);
	cfs_chunk_hdr_encode(&h, blk);
	cfs_meta_csum_set(blk, sizeof(blk), 77);
	CHECK_EQ(get_le32(blk), 0x44484B43);
	CHECK_EQ(get_le64(blk + 8), 0x1122334455ull);
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		check_le(blk + f[i].off, f[i].w, VAL(i), "chunk header field");
	CHECK(!memcmp(blk + 80, h.uuid, 16));
	CHECK(!memcmp(blk + 128, "first", 6) && !memcmp(blk + 184, "last", 5));
	memset(&back, 0, sizeof(back));
	cfs_chunk_hdr_decode(blk, &back);
	CHECK(!memcmp(&h, &back, sizeof(h)));
	CHECK_OK(cfs_meta_verify(blk, sizeof(blk), 77, CFS_MAGIC_CHUNK, 0x1122334455ull));
	blk[1023] ^= 1;
	CHECK_ERR(cfs_meta_verify(blk, sizeof(blk), 77, CFS_MAGIC_CHUNK, 0x1122334455ull),
		  EBADMSG);
}

/* FORMAT.md 10.4: the inode-cluster map block and its records */
static void test_icluster_map(void)
{
	static uint8_t blk[4096];
	struct cfs_icl_rec r = { 0x11223344u, 0x8877665544332211ull }, back;

	CHECK_EQ(cfs_icmap_nrec(4096), 254u);
	CHECK_EQ(cfs_icmap_nrec(1024), 62u);
	CHECK_EQ(cfs_icl_blocks(4096, 256), 4u);
	CHECK_EQ(cfs_icl_blocks(1024, 256), 16u);
	CHECK_EQ(cfs_icl_blocks(65536, 256), 1u);
	CHECK_EQ(CFS_MAGIC_ICMAP, 0x4D494B43u);
	memset(blk, 0xAA, sizeof(blk));
	cfs_meta_init(blk, CFS_MAGIC_ICMAP, 99);
	cfs_icmap_set_index(blk, 7);
	check_le(blk + 16, 4, 7, "map block index");
	CHECK_EQ(cfs_icmap_index(blk), 7u);
	cfs_icmap_rec_encode(blk, 3, &r);
	check_le(blk + 32 + 3 * 16, 4, r.start, "cluster start");
	check_le(blk + 32 + 3 * 16 + 4, 4, 0, "cluster record zero");
	check_le(blk + 32 + 3 * 16 + 8, 8, r.used, "cluster used mask");
	cfs_icmap_rec_decode(blk, 3, &back);
	CHECK(back.start == r.start && back.used == r.used);
	CHECK_EQ(blk[32 + 2 * 16 + 15], 0xAA);   /* its neighbours untouched */
	CHECK_EQ(blk[32 + 4 * 16], 0xAA);
}

/* FORMAT.md 10.2 */
static void test_inode(void)
{
	static const struct { unsigned off, w; } f[] = {
		{ 0, 2 }, { 2, 2 }, { 4, 4 }, { 8, 4 }, { 12, 4 }, { 16, 8 }, { 24, 8 },
		{ 32, 8 }, { 40, 8 }, { 48, 8 }, { 56, 4 }, { 60, 4 }, { 64, 4 }, { 68, 4 },
		{ 72, 4 }, { 76, 4 }, { 80, 8 }, { 88, 8 }, { 96, 4 }, { 100, 4 }, { 104, 8 },
		{ 112, 8 }, { 120, 4 }, { 124, 4 }, { 128, 4 }, { 132, 4 }, { 136, 2 },
	};
	static struct cfs_dinode d = {
		(uint16_t)VAL(0), (uint16_t)VAL(1), (uint32_t)VAL(2), (uint32_t)VAL(3),
		(uint32_t)VAL(4), VAL(5), (int64_t)VAL(6), (int64_t)VAL(7), (int64_t)VAL(8),
		(int64_t)VAL(9), (uint32_t)VAL(10), (uint32_t)VAL(11), (uint32_t)VAL(12),
		(uint32_t)VAL(13), (uint32_t)VAL(14), (uint32_t)VAL(15), VAL(16), VAL(17),
		(uint32_t)VAL(18), (uint32_t)VAL(19), VAL(20), VAL(21),
		{ (uint32_t)VAL(22), (uint32_t)VAL(23), (uint32_t)VAL(24), (uint32_t)VAL(25) },
		(uint16_t)VAL(26),
	};
	struct cfs_dinode back;
	uint8_t raw[256];
	unsigned i;

	memset(raw, 0xEE, sizeof(raw));
	cfs_dinode_encode(&d, raw);
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		check_le(raw + f[i].off, f[i].w, VAL(i), "inode field");
	for (i = 138; i < 144; i++)
		CHECK_EQ(raw[i], 0);            /* reserved */
	CHECK_EQ(raw[144], 0xEE);               /* the variable area is not the codec's */
	memset(&back, 0, sizeof(back));
	cfs_dinode_decode(raw, &back);
	CHECK(!memcmp(&d, &back, sizeof(d)));
	/* the crc (last u32) covers le32(ino) and the rest */
	cfs_dinode_csum_set(raw, sizeof(raw), 5, 0x01000007);
	CHECK(cfs_dinode_csum_ok(raw, sizeof(raw), 5, 0x01000007));
	CHECK(!cfs_dinode_csum_ok(raw, sizeof(raw), 5, 0x01000008));
	raw[200] ^= 1;
	CHECK(!cfs_dinode_csum_ok(raw, sizeof(raw), 5, 0x01000007));
}

/* FORMAT.md 11, 12, 14.2 */
static void test_tree_nodes(void)
{
	static uint8_t blk[1024];
	struct cfs_dirent e = { 0x7766554433221100ull, 0x02000003, 0x03000004, 4, 5,
				(const uint8_t *)"hello" }, back;
	uint64_t lblk;
	uint32_t pblk, len;
	uint8_t *recs;

	cfs_node_set_owner(blk, 0x01000009);
	cfs_btn_set(cfs_node_hdr(blk), 3, 2, 32);
	CHECK_EQ(get_le16(blk + 16), 3);
	CHECK_EQ(get_le16(blk + 18), 2);
	CHECK_EQ(get_le32(blk + 20), 32);
	CHECK_EQ(get_le32(blk + 24), 0x01000009);
	CHECK_EQ(cfs_node_recs(blk) - blk, 32);
	CHECK_EQ(cfs_node_cap(1024), 1024 - 32);
	recs = cfs_node_recs(blk);
	cfs_btidx_set(recs, 0x1234, 0x5678);
	CHECK_EQ(get_le64(recs), 0x1234);
	CHECK_EQ(get_le64(recs + 8), 0x5678);
	cfs_extent_encode(recs + 16, 0xA1A2A3A4A5ull, 0xB1B2B3B4, 0x7C1C2C3C);
	CHECK_EQ(get_le64(recs + 16), 0xA1A2A3A4A5ull);
	CHECK_EQ(get_le32(recs + 24), 0xB1B2B3B4);
	CHECK_EQ(get_le32(recs + 28), 0x7C1C2C3C);
	cfs_extent_decode(recs + 16, &lblk, &pblk, &len);
	CHECK(lblk == 0xA1A2A3A4A5ull && pblk == 0xB1B2B3B4 && len == 0x7C1C2C3C);
	/* a directory record is 18 + namelen bytes */
	CHECK_EQ(cfs_dirent_encode(&e, recs), 23);
	CHECK_EQ(get_le64(recs), e.hash);
	CHECK_EQ(get_le32(recs + 8), e.ino);
	CHECK_EQ(get_le32(recs + 12), e.stub);
	CHECK_EQ(recs[16], 4);
	CHECK_EQ(recs[17], 5);
	CHECK(!memcmp(recs + 18, "hello", 5));
	CHECK_EQ(cfs_dirent_len(recs, 23), 23);
	CHECK_EQ(cfs_dirent_len(recs, 22), 0);
	cfs_dirent_decode(recs, &back);
	CHECK(back.hash == e.hash && back.ino == e.ino && back.stub == e.stub &&
	      back.type == 4 && back.namelen == 5 && !memcmp(back.name, "hello", 5));
	recs[17] = 0;
	CHECK_EQ(cfs_dirent_len(recs, 100), 0);
	/* FORMAT.md 14.3 test vectors */
	CHECK_EQ(cfs_name_hash(0, "lost+found", 10), 0x30cfa239cd62f34aull);
	CHECK_EQ(cfs_name_hash(0, "a", 1), 0x02a2a958a9bece5bull);
	CHECK_EQ(cfs_name_hash(0x1f1a1510, "lost+found", 10), 0x6c4d59d664d726b1ull);
	CHECK_EQ(cfs_name_hash(0x1f1a1510, "hello", 5), 0x2e916f979c7dc07full);
}

/* FORMAT.md 9 and 15 */
static void test_xattrs_and_bitmaps(void)
{
	static uint8_t blk[1024];
	struct cfs_xattr_ent e = { 2, 3, 4, (const uint8_t *)"abc", (const uint8_t *)"wxyz" },
			     back;
	uint8_t *p = cfs_xattr_blk_data(blk);

	CHECK_EQ(p - blk, 32);
	CHECK_EQ(cfs_xattr_blk_cap(1024), 1024 - 32);
	cfs_xattr_blk_set(blk, 11, 0x0200000A);
	CHECK_EQ(get_le32(blk + 16), 11);
	CHECK_EQ(get_le32(blk + 20), 0x0200000A);
	CHECK_EQ(cfs_xattr_ent_encode(&e, p), 11);
	CHECK(!memcmp(p, "\x02\x03\x04\x00" "abcwxyz", 11));
	CHECK_EQ(cfs_xattr_ent_decode(p, 11, &back), 11);
	CHECK(back.ns == 2 && back.nlen == 3 && back.vlen == 4 &&
	      !memcmp(back.name, "abc", 3) && !memcmp(back.value, "wxyz", 4));
	CHECK_ERR(cfs_xattr_ent_decode(p, 10, &back), EUCLEAN);
	p[0] = 5;                               /* namespaces are 1..4 */
	CHECK_ERR(cfs_xattr_ent_decode(p, 11, &back), EUCLEAN);
	/* bitmap item i: bit i & 7 of byte 16 + i / 8 */
	memset(blk, 0, sizeof(blk));
	cfs_bitmap_set(blk, 21, 1);
	CHECK_EQ(blk[16 + 2], 1u << 5);
	CHECK(cfs_bitmap_get(blk, 21) && !cfs_bitmap_get(blk, 20));
	cfs_bitmap_set(blk, 21, 0);
	CHECK_EQ(blk[18], 0);
}

int main(void)
{
	TEST_RUN(test_superblock);
	TEST_RUN(test_chunk_header);
	TEST_RUN(test_inode);
	TEST_RUN(test_icluster_map);
	TEST_RUN(test_tree_nodes);
	TEST_RUN(test_xattrs_and_bitmaps);
	return TEST_DONE();
}

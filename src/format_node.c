/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Encoders and decoders for the structures inside data-area blocks and the
 * inode's variable area: extent and directory node blocks, extent and
 * directory leaf records, xattr entries and overflow blocks.  Offsets are
 * in format.h; the B+tree node header accessors are inline there. */
#include "format.h"

#include <errno.h>
#include <string.h>

/* ---- extent and directory node blocks [12, 14.2] ---- */

uint8_t *cfs_node_hdr(const uint8_t *blk)
{
	return (uint8_t *)blk + CFS_OFF_NODE_HDR;
}

uint8_t *cfs_node_recs(const uint8_t *blk)
{
	return (uint8_t *)blk + CFS_OFF_NODE_RECS;
}

uint32_t cfs_node_cap(uint32_t bsize)
{
	return bsize - CFS_OFF_NODE_RECS;
}

uint32_t cfs_node_owner(const uint8_t *blk)
{
	return get_le32(blk + CFS_OFF_NODE_OWNER);
}

void cfs_node_set_owner(uint8_t *blk, uint32_t ino)
{
	put_le32(blk + CFS_OFF_NODE_OWNER, ino);
}

/* ---- extent leaf record [12] ---- */

void cfs_extent_decode(const uint8_t *rec, uint64_t *lblk, uint32_t *pblk, uint32_t *len)
{
	*lblk = get_le64(rec + CFS_OFF_EXT_LBLK);
	*pblk = get_le32(rec + CFS_OFF_EXT_PBLK);
	*len = get_le32(rec + CFS_OFF_EXT_LEN);
}

void cfs_extent_encode(uint8_t *rec, uint64_t lblk, uint32_t pblk, uint32_t len)
{
	put_le64(rec + CFS_OFF_EXT_LBLK, lblk);
	put_le32(rec + CFS_OFF_EXT_PBLK, pblk);
	put_le32(rec + CFS_OFF_EXT_LEN, len);
}

/* ---- directory leaf record [14.2] ---- */

size_t cfs_dirent_len(const uint8_t *rec, size_t room)
{
	size_t l;

	if (room < CFS_DE_FIXED)
		return 0;
	l = CFS_DE_FIXED + rec[CFS_OFF_DE_NAMELEN];
	return (rec[CFS_OFF_DE_NAMELEN] == 0 || l > room) ? 0 : l;
}

void cfs_dirent_decode(const uint8_t *rec, struct cfs_dirent *d)
{
	d->hash = get_le64(rec + CFS_OFF_DE_HASH);
	d->ino = get_le32(rec + CFS_OFF_DE_INO);
	d->stub = get_le32(rec + CFS_OFF_DE_STUB);
	d->type = rec[CFS_OFF_DE_TYPE];
	d->namelen = rec[CFS_OFF_DE_NAMELEN];
	d->name = rec + CFS_OFF_DE_NAME;
}

size_t cfs_dirent_encode(const struct cfs_dirent *d, uint8_t *rec)
{
	put_le64(rec + CFS_OFF_DE_HASH, d->hash);
	rec[CFS_OFF_DE_NAMELEN] = d->namelen;
	memcpy(rec + CFS_OFF_DE_NAME, d->name, d->namelen);
	cfs_dirent_retarget(rec, d->ino, d->stub, d->type);
	return CFS_DE_FIXED + (size_t)d->namelen;
}

/* 63-bit FNV-1a with MurmurHash3's fmix64 finaliser [14.3]. */
uint64_t cfs_name_hash(uint32_t seed, const void *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull ^ seed;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= ((const uint8_t *)name)[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	h &= 0x7FFFFFFFFFFFFFFFull;   /* readdir offsets are signed */
	return h < 2 ? h + 2 : h;     /* 0 and 1 are "." and ".." */
}

void cfs_dirent_retarget(uint8_t *rec, uint32_t ino, uint32_t stub, uint8_t type)
{
	put_le32(rec + CFS_OFF_DE_INO, ino);
	put_le32(rec + CFS_OFF_DE_STUB, stub);
	rec[CFS_OFF_DE_TYPE] = type;
}

/* ---- extended attributes [15] ---- */

uint32_t cfs_xattr_ent_size(uint32_t nlen, uint32_t vlen)
{
	return CFS_XE_FIXED + nlen + vlen;
}

int cfs_xattr_ent_decode(const uint8_t *p, uint32_t room, struct cfs_xattr_ent *e)
{
	uint32_t size;

	if (room < CFS_XE_FIXED)
		return -EUCLEAN;
	e->ns = p[CFS_OFF_XE_NS];
	e->nlen = p[CFS_OFF_XE_NLEN];
	e->vlen = get_le16(p + CFS_OFF_XE_VLEN);
	size = cfs_xattr_ent_size(e->nlen, e->vlen);
	if (!e->ns || e->ns > CFS_XATTR_NS_MAX || !e->nlen || size > room)
		return -EUCLEAN;
	e->name = p + CFS_OFF_XE_NAME;
	e->value = e->name + e->nlen;
	return (int)size;
}

uint32_t cfs_xattr_ent_encode(const struct cfs_xattr_ent *e, uint8_t *p)
{
	p[CFS_OFF_XE_NS] = e->ns;
	p[CFS_OFF_XE_NLEN] = e->nlen;
	put_le16(p + CFS_OFF_XE_VLEN, e->vlen);
	memcpy(p + CFS_OFF_XE_NAME, e->name, e->nlen);
	memcpy(p + CFS_OFF_XE_NAME + e->nlen, e->value, e->vlen);
	return cfs_xattr_ent_size(e->nlen, e->vlen);
}

uint32_t cfs_xattr_blk_used(const uint8_t *blk)
{
	return get_le32(blk + CFS_OFF_XB_USED);
}

uint32_t cfs_xattr_blk_owner(const uint8_t *blk)
{
	return get_le32(blk + CFS_OFF_XB_OWNER);
}

void cfs_xattr_blk_set(uint8_t *blk, uint32_t used, uint32_t owner)
{
	put_le32(blk + CFS_OFF_XB_USED, used);
	put_le32(blk + CFS_OFF_XB_OWNER, owner);
}

uint8_t *cfs_xattr_blk_data(const uint8_t *blk)
{
	return (uint8_t *)blk + CFS_OFF_XB_DATA;
}

uint32_t cfs_xattr_blk_cap(uint32_t bsize)
{
	return bsize - CFS_OFF_XB_DATA;
}

/* ---- POSIX ACL values [15.1] ---- */

size_t cfs_acl_size(int count)
{
	return CFS_ACL_HDR_SIZE + (size_t)count * CFS_ACL_ENT_SIZE;
}

int cfs_acl_count(const void *v, size_t n)
{
	if (n < CFS_ACL_HDR_SIZE || (n - CFS_ACL_HDR_SIZE) % CFS_ACL_ENT_SIZE ||
	    get_le32((const uint8_t *)v + CFS_OFF_ACL_VERSION) != CFS_ACL_VERSION)
		return -EINVAL;
	return (int)((n - CFS_ACL_HDR_SIZE) / CFS_ACL_ENT_SIZE);
}

void cfs_acl_decode(const void *v, int count, struct cfs_acl_ent *e)
{
	const uint8_t *p = (const uint8_t *)v + CFS_ACL_HDR_SIZE;
	int i;

	for (i = 0; i < count; i++, p += CFS_ACL_ENT_SIZE) {
		e[i].tag = get_le16(p + CFS_OFF_ACE_TAG);
		e[i].perm = get_le16(p + CFS_OFF_ACE_PERM);
		e[i].id = get_le32(p + CFS_OFF_ACE_ID);
	}
}

void cfs_acl_encode(const struct cfs_acl_ent *e, int count, void *v)
{
	uint8_t *p = v;
	int i;

	put_le32(p + CFS_OFF_ACL_VERSION, CFS_ACL_VERSION);
	for (i = 0, p += CFS_ACL_HDR_SIZE; i < count; i++, p += CFS_ACL_ENT_SIZE) {
		put_le16(p + CFS_OFF_ACE_TAG, e[i].tag);
		put_le16(p + CFS_OFF_ACE_PERM, e[i].perm);
		put_le32(p + CFS_OFF_ACE_ID, e[i].id);
	}
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Extended attributes: packed entries at the end of the inode's variable
 * area, overflowing into one block of the inode's own chunk (layouts:
 * format.h, FORMAT.md 15).  Namespaces: 1 user, 2 trusted, 3 security,
 * 4 system.  Updates read every entry, change the list and repack it:
 * attributes are few and small. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fsint.h"

static const char *const prefixes[] = { NULL, "user.", "trusted.", "security.", "system." };

struct xlist {
	struct cfs_xattr_ent *e;
	int n;
	struct buf *blk;
};

static int name_split(const char *full, uint8_t *ns, const char **name)
{
	uint8_t i;

	for (i = 1; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t pl = strlen(prefixes[i]);

		if (!strncmp(full, prefixes[i], pl)) {
			*ns = i;
			*name = full + pl;
			if (!**name)
				return -EINVAL;
			return strlen(*name) > 255 ? -ERANGE : 0;
		}
	}
	return -EOPNOTSUPP;
}

static uint32_t xattr_room(struct cfs_fs *fs, struct inode *ip)
{
	uint64_t data = CFS_EXT_ROOT_SIZE;

	if ((ip->d.flags & CFS_IFL_INLINE) && ip->d.size > data)
		data = ip->d.size;
	return data >= fs->varsz ? 0 : (uint32_t)(fs->varsz - data);
}

static int parse_area(const uint8_t *p, uint32_t len, struct xlist *l)
{
	uint32_t off = 0;

	while (off < len) {
		struct cfs_xattr_ent *n, e;
		int size = cfs_xattr_ent_decode(p + off, len - off, &e);

		if (size < 0)
			return size;
		n = realloc(l->e, sizeof(*n) * (size_t)(l->n + 1));
		if (!n)
			return -ENOMEM;
		l->e = n;
		l->e[l->n++] = e;
		off += (uint32_t)size;
	}
	return 0;
}

static void xlist_free(struct cfs_fs *fs, struct xlist *l)
{
	free(l->e);
	buf_put(&fs->cache, l->blk);
	memset(l, 0, sizeof(*l));
}

/* Corruption in ip's xattrs (FORMAT.md 18), in the block blk: the inode's
 * own (0) or its overflow block. */
static int xattr_bad(struct cfs_fs *fs, struct inode *ip, uint64_t blk, const char *what)
{
	uint32_t off;

	if (!blk)
		blk = inode_location(fs, ip->ino, &off);
	return chunk_corrupt(fs, CFS_INO_CHUNK(ip->ino), ip->ino, blk, what);
}

static int xlist_load(struct cfs_fs *fs, struct inode *ip, struct xlist *l)
{
	uint32_t c = CFS_INO_CHUNK(ip->ino), used;
	int ret;

	memset(l, 0, sizeof(*l));
	if (ip->d.xattr_len > fs->varsz)
		return xattr_bad(fs, ip, 0, "xattr length too big");
	ret = parse_area(ip->var + fs->varsz - ip->d.xattr_len, ip->d.xattr_len, l);
	if (ret == -EUCLEAN)
		ret = xattr_bad(fs, ip, 0, "bad xattr entry in the inode");
	if (ret < 0 || !ip->d.xattr_block)
		goto out;
	if (ip->d.xattr_block < fs->sb.data_start ||
	    ip->d.xattr_block >= fs->sb.chunk_blocks) {
		ret = xattr_bad(fs, ip, 0, "xattr block out of the chunk");
		goto out;
	}
	ret = cache_get_meta(&fs->cache, chunk_base(fs, c) + ip->d.xattr_block,
			     CFS_MAGIC_XATTR, &l->blk);
	if (ret < 0)
		goto out;   /* recorded by the cache (chunk_on_corrupt) */
	used = cfs_xattr_blk_used(l->blk->data);
	if (cfs_xattr_blk_owner(l->blk->data) != ip->ino) {
		ret = xattr_bad(fs, ip, l->blk->blk, "xattr block of another inode");
		goto out;
	}
	if (used > cfs_xattr_blk_cap(fs->bsize)) {
		ret = xattr_bad(fs, ip, l->blk->blk, "xattr block overfull");
		goto out;
	}
	ret = parse_area(cfs_xattr_blk_data(l->blk->data), used, l);
	if (ret == -EUCLEAN)
		ret = xattr_bad(fs, ip, l->blk->blk, "bad xattr entry in its block");
out:
	if (ret < 0)
		xlist_free(fs, l);
	return ret;
}

static int xlist_find(struct xlist *l, uint8_t ns, const char *name)
{
	size_t nl = strlen(name);
	int i;

	for (i = 0; i < l->n; i++)
		if (l->e[i].ns == ns && l->e[i].nlen == nl && !memcmp(l->e[i].name, name, nl))
			return i;
	return -1;
}

static uint32_t ent_size(const struct cfs_xattr_ent *e)
{
	return cfs_xattr_ent_size(e->nlen, e->vlen);
}

/* Repack: entries fill the inode area first, the rest go to the block. */
static int xlist_store(struct cfs_fs *fs, struct inode *ip, struct xlist *l)
{
	uint32_t room = xattr_room(fs, ip), in = 0, out = 0, c = CFS_INO_CHUNK(ip->ino);
	uint32_t cap = cfs_xattr_blk_cap(fs->bsize), rel;
	uint8_t *ibuf = calloc(1, fs->varsz), *bbuf = calloc(1, fs->bsize);
	struct buf *nb = NULL;
	int i, ret = 0;

	if (!ibuf || !bbuf) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < l->n; i++) {
		uint32_t sz = ent_size(&l->e[i]);

		if (out == 0 && in + sz <= room)
			in += cfs_xattr_ent_encode(&l->e[i], ibuf + in);
		else if (out + sz <= cap)
			out += cfs_xattr_ent_encode(&l->e[i], bbuf + out);
		else {
			ret = -ENOSPC;
			goto out;
		}
	}
	if (out && !ip->d.xattr_block) {
		ret = chunk_alloc_meta(fs, c, 1, &rel);
		if (ret < 0)
			goto out;
		ret = cache_new_meta(&fs->cache, chunk_base(fs, c) + rel, CFS_MAGIC_XATTR, &nb);
		if (ret < 0) {
			chunk_free_blocks(fs, c, rel, 1);
			goto out;
		}
		ip->d.xattr_block = rel;
		ip->d.nblocks++;
	} else if (out) {
		nb = l->blk;
		l->blk = NULL;
	}
	if (nb) {
		memcpy(cfs_xattr_blk_data(nb->data), bbuf, out);
		memset(cfs_xattr_blk_data(nb->data) + out, 0, cap - out);
		cfs_xattr_blk_set(nb->data, out, ip->ino);
		ret = buf_dirty(&fs->cache, nb);
		buf_put(&fs->cache, nb);
		if (ret < 0)
			goto out;
	} else if (ip->d.xattr_block) {
		buf_put(&fs->cache, l->blk);
		l->blk = NULL;
		ret = chunk_free_blocks(fs, c, ip->d.xattr_block, 1);
		ip->d.xattr_block = 0;
		ip->d.nblocks--;
	}
	memset(ip->var + fs->varsz - ip->d.xattr_len, 0, ip->d.xattr_len);
	memcpy(ip->var + fs->varsz - in, ibuf, in);
	ip->d.xattr_len = (uint16_t)in;
	if (ret == 0)
		ret = inode_write(fs, ip);
out:
	free(ibuf);
	free(bbuf);
	return ret;
}

/* Split full into its namespace and name (the key, e), load ip's
 * attributes into l and find the key among them: *i is its index, or -1. */
static int xlist_open(struct cfs_fs *fs, struct inode *ip, const char *full, struct xlist *l,
		      struct cfs_xattr_ent *e, int *i)
{
	const char *name;
	int ret = name_split(full, &e->ns, &name);

	if (ret < 0)
		return ret;
	e->nlen = (uint8_t)strlen(name);
	e->name = (const uint8_t *)name;
	ret = xlist_load(fs, ip, l);
	if (ret < 0)
		return ret;
	*i = xlist_find(l, e->ns, name);
	return 0;
}

int xattr_set(struct cfs_fs *fs, struct inode *ip, const char *full, const void *v,
	      size_t n, int flags)
{
	struct xlist l;
	struct cfs_xattr_ent e, *ne;
	const char *name;
	int i, ret = name_split(full, &e.ns, &name);

	if (ret < 0)
		return ret;
	if (n > 65535 || cfs_xattr_ent_size((uint32_t)strlen(name), (uint32_t)n) >
			  cfs_xattr_blk_cap(fs->bsize))
		return -E2BIG;
	ret = xlist_open(fs, ip, full, &l, &e, &i);
	if (ret < 0)
		return ret;
	if (i >= 0 && (flags & CFS_XATTR_CREATE)) {
		ret = -EEXIST;
		goto out;
	}
	if (i < 0 && (flags & CFS_XATTR_REPLACE)) {
		ret = -ENODATA;
		goto out;
	}
	e.vlen = (uint16_t)n;
	e.value = v;
	if (i >= 0) {
		l.e[i] = e;
	} else {
		ne = realloc(l.e, sizeof(*ne) * (size_t)(l.n + 1));
		if (!ne) {
			ret = -ENOMEM;
			goto out;
		}
		l.e = ne;
		l.e[l.n++] = e;
	}
	ret = xlist_store(fs, ip, &l);
out:
	xlist_free(fs, &l);
	return ret;
}

ssize_t xattr_get(struct cfs_fs *fs, struct inode *ip, const char *full, void *buf,
		  size_t n)
{
	struct cfs_xattr_ent key;
	struct xlist l;
	int i;
	ssize_t ret = xlist_open(fs, ip, full, &l, &key, &i);

	if (ret < 0)
		return ret;
	if (i < 0)
		ret = -ENODATA;
	else if (n && n < l.e[i].vlen)
		ret = -ERANGE;
	else {
		if (n)
			memcpy(buf, l.e[i].value, l.e[i].vlen);
		ret = l.e[i].vlen;
	}
	xlist_free(fs, &l);
	return ret;
}

ssize_t xattr_list(struct cfs_fs *fs, struct inode *ip, char *buf, size_t n)
{
	struct xlist l;
	size_t total = 0;
	ssize_t ret = xlist_load(fs, ip, &l);
	int i;

	if (ret < 0)
		return ret;
	for (i = 0; i < l.n; i++) {
		const char *p = prefixes[l.e[i].ns];
		size_t pl = strlen(p), len = pl + l.e[i].nlen + 1;

		if (n && total + len > n) {
			xlist_free(fs, &l);
			return -ERANGE;
		}
		if (n) {
			memcpy(buf + total, p, pl);
			memcpy(buf + total + pl, l.e[i].name, l.e[i].nlen);
			buf[total + len - 1] = 0;
		}
		total += len;
	}
	xlist_free(fs, &l);
	return (ssize_t)total;
}

int xattr_remove(struct cfs_fs *fs, struct inode *ip, const char *full)
{
	struct cfs_xattr_ent key;
	struct xlist l;
	int i, ret = xlist_open(fs, ip, full, &l, &key, &i);

	if (ret < 0)
		return ret;
	if (i < 0) {
		ret = -ENODATA;
	} else {
		l.e[i] = l.e[--l.n];
		ret = xlist_store(fs, ip, &l);
	}
	xlist_free(fs, &l);
	return ret;
}

int xattr_release(struct cfs_fs *fs, struct inode *ip)
{
	int ret = 0;

	if (ip->d.xattr_block) {
		ret = chunk_free_blocks(fs, CFS_INO_CHUNK(ip->ino), ip->d.xattr_block, 1);
		ip->d.xattr_block = 0;
		ip->d.nblocks--;
	}
	memset(ip->var + fs->varsz - ip->d.xattr_len, 0, ip->d.xattr_len);
	ip->d.xattr_len = 0;
	return ret;
}

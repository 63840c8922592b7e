/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* POSIX.1e access control lists, kept as the xattrs system.posix_acl_access
 * and system.posix_acl_default (value layout: format.h, FORMAT.md 15.1).
 *
 * The rules live here, in the library, rather than in the FUSE daemon: the
 * kernel enforces ACLs (FUSE_CAP_POSIX_ACL) but leaves to the filesystem
 * what ext4 does in fs/posix_acl.c -- the mode kept in step with the access
 * ACL, inheritance of the parent's default ACL at create, chmod rewriting
 * the ACL -- and `chunkfs put` and other library users create files too:
 * done here, they all get the same result as the mount.
 *
 * Values are checked as the kernel's posix_acl_from_xattr and
 * posix_acl_valid check them, and stored re-encoded (ids of the entries
 * that have none set to the undefined id, as the kernel writes them). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsint.h"

#define NAME_ACCESS  "system.posix_acl_access"
#define NAME_DEFAULT "system.posix_acl_default"
#define PERMS        7u

struct acl {
	int n;
	struct cfs_acl_ent *e;
};

int acl_type(const char *name)
{
	if (!strcmp(name, NAME_ACCESS))
		return ACLT_ACCESS;
	if (!strcmp(name, NAME_DEFAULT))
		return ACLT_DEFAULT;
	return 0;
}

/* posix_acl_valid: each kind in its place (owner, named users, owning
 * group, named groups, mask, other), a mask wherever a named entry is,
 * only rwx, and a real id on named entries. */
static int acl_check(const struct acl *a)
{
	enum { S_UOBJ, S_USER, S_GROUP, S_OTHER, S_DONE } st = S_UOBJ;
	int i, named = 0;

	for (i = 0; i < a->n; i++) {
		const struct cfs_acl_ent *e = &a->e[i];

		if (e->perm & ~PERMS)
			return -EINVAL;
		switch (e->tag) {
		case CFS_ACL_USER_OBJ:
			if (st != S_UOBJ)
				return -EINVAL;
			st = S_USER;
			break;
		case CFS_ACL_USER:
		case CFS_ACL_GROUP:
			if (st != (e->tag == CFS_ACL_USER ? S_USER : S_GROUP) ||
			    e->id == CFS_ACL_UNDEFINED)
				return -EINVAL;
			named = 1;
			break;
		case CFS_ACL_GROUP_OBJ:
			if (st != S_USER)
				return -EINVAL;
			st = S_GROUP;
			break;
		case CFS_ACL_MASK:
			if (st != S_GROUP)
				return -EINVAL;
			st = S_OTHER;
			break;
		case CFS_ACL_OTHER:
			if (st != S_OTHER && !(st == S_GROUP && !named))
				return -EINVAL;
			st = S_DONE;
			break;
		default:
			return -EINVAL;
		}
	}
	return st == S_DONE ? 0 : -EINVAL;
}

/* Decode and check the value v of n bytes.  An ACL of no entries is
 * valid: setting it removes the ACL, as the kernel does. */
static int acl_parse(const void *v, size_t n, struct acl *a)
{
	int i, count = cfs_acl_count(v, n);

	a->n = 0;
	a->e = NULL;
	if (count < 0)
		return count;
	if (count == 0)
		return 0;
	a->e = calloc((size_t)count, sizeof(*a->e));
	if (!a->e)
		return -ENOMEM;
	a->n = count;
	cfs_acl_decode(v, count, a->e);
	for (i = 0; i < count; i++)
		if (a->e[i].tag != CFS_ACL_USER && a->e[i].tag != CFS_ACL_GROUP)
			a->e[i].id = CFS_ACL_UNDEFINED;
	return acl_check(a);
}

int acl_valid(const void *v, size_t n)
{
	struct acl a;
	int ret = acl_parse(v, n, &a);

	free(a.e);
	return ret < 0 ? ret : a.n;
}

/* posix_acl_equiv_mode: the permission bits the ACL gives the owner, the
 * group class and others into *mode; 0 if the ACL says no more than
 * those bits do, 1 if it has named entries or a mask. */
static int equiv_mode(const struct acl *a, uint16_t *mode)
{
	uint16_t m = 0;
	int i, not_equiv = 0;

	for (i = 0; i < a->n; i++) {
		uint16_t p = a->e[i].perm & PERMS;

		switch (a->e[i].tag) {
		case CFS_ACL_USER_OBJ:
			m |= (uint16_t)(p << 6);
			break;
		case CFS_ACL_GROUP_OBJ:
			m |= (uint16_t)(p << 3);
			break;
		case CFS_ACL_OTHER:
			m |= p;
			break;
		case CFS_ACL_MASK:
			m = (uint16_t)((m & ~S_IRWXG) | (p << 3));
			not_equiv = 1;
			break;
		default:
			not_equiv = 1;
			break;
		}
	}
	*mode = (uint16_t)((*mode & ~(S_IRWXU | S_IRWXG | S_IRWXO)) | m);
	return not_equiv;
}

/* posix_acl_create_masq: the inherited ACL loses what the create mode
 * does not grant, and the mode what the ACL does not; the mask (else the
 * owning group entry) stands for the group class.  1 if the result needs
 * storing beside the mode. */
static int create_masq(struct acl *a, uint16_t *mode)
{
	struct cfs_acl_ent *group = NULL, *mask = NULL;
	uint16_t m = *mode;
	int i, not_equiv = 0;

	for (i = 0; i < a->n; i++) {
		struct cfs_acl_ent *e = &a->e[i];

		switch (e->tag) {
		case CFS_ACL_USER_OBJ:
			e->perm &= (uint16_t)((m >> 6) & PERMS);
			m &= (uint16_t)((e->perm << 6) | ~S_IRWXU);
			break;
		case CFS_ACL_OTHER:
			e->perm &= (uint16_t)(m & PERMS);
			m &= (uint16_t)(e->perm | ~S_IRWXO);
			break;
		case CFS_ACL_GROUP_OBJ:
			group = e;
			break;
		case CFS_ACL_MASK:
			mask = e;
			not_equiv = 1;
			break;
		default:
			not_equiv = 1;
			break;
		}
	}
	if (!mask)
		mask = group;
	if (!mask)
		return -EINVAL;       /* acl_check makes this unreachable */
	mask->perm &= (uint16_t)((m >> 3) & PERMS);
	m &= (uint16_t)((mask->perm << 3) | ~S_IRWXG);
	*mode = (uint16_t)((*mode & ~(S_IRWXU | S_IRWXG | S_IRWXO)) |
			   (m & (S_IRWXU | S_IRWXG | S_IRWXO)));
	return not_equiv;
}

/* posix_acl_chmod_masq: the owner, group class and other entries take the
 * mode's bits. */
static void chmod_masq(struct acl *a, uint16_t mode)
{
	struct cfs_acl_ent *group = NULL, *mask = NULL;
	int i;

	for (i = 0; i < a->n; i++) {
		struct cfs_acl_ent *e = &a->e[i];

		if (e->tag == CFS_ACL_USER_OBJ)
			e->perm = (mode >> 6) & PERMS;
		else if (e->tag == CFS_ACL_OTHER)
			e->perm = mode & PERMS;
		else if (e->tag == CFS_ACL_GROUP_OBJ)
			group = e;
		else if (e->tag == CFS_ACL_MASK)
			mask = e;
	}
	if (mask)
		mask->perm = (mode >> 3) & PERMS;
	else if (group)
		group->perm = (mode >> 3) & PERMS;
}

/* Load the stored ACL of the type: -ENODATA if there is none. */
static int acl_load(struct cfs_fs *fs, struct inode *ip, int type, struct acl *a)
{
	const char *name = type == ACLT_ACCESS ? NAME_ACCESS : NAME_DEFAULT;
	void *v = NULL;
	ssize_t n;
	int ret;

	a->n = 0;
	a->e = NULL;
	n = xattr_get(fs, ip, name, NULL, 0);
	if (n < 0)
		return (int)n;
	v = malloc(n ? (size_t)n : 1);
	if (!v)
		return -ENOMEM;
	n = xattr_get(fs, ip, name, v, (size_t)n);
	ret = n < 0 ? (int)n : acl_parse(v, (size_t)n, a);
	free(v);
	if (ret < 0) {
		free(a->e);
		a->e = NULL;
		a->n = 0;
	}
	return ret;
}

static int acl_store(struct cfs_fs *fs, struct inode *ip, int type, const struct acl *a)
{
	const char *name = type == ACLT_ACCESS ? NAME_ACCESS : NAME_DEFAULT;
	size_t n = cfs_acl_size(a->n);
	void *v = malloc(n);
	int ret;

	if (!v)
		return -ENOMEM;
	cfs_acl_encode(a->e, a->n, v);
	ret = xattr_set(fs, ip, name, v, n, 0);
	free(v);
	return ret;
}

/* Removing what was never stored succeeds, as on ext4. */
static int acl_drop(struct cfs_fs *fs, struct inode *ip, int type)
{
	int ret = xattr_remove(fs, ip, type == ACLT_ACCESS ? NAME_ACCESS : NAME_DEFAULT);

	return ret == -ENODATA ? 0 : ret;
}

int acl_set(struct cfs_fs *fs, struct inode *ip, int type, const void *v, size_t n,
	    int flags)
{
	struct acl a = { 0, NULL };
	uint16_t mode = ip->d.mode;
	int ret;

	if (fs->noacl)
		return -EOPNOTSUPP;
	if (v && n) {           /* an empty value removes, as setxattr(2)'s */
		ret = acl_parse(v, n, &a);
		if (ret < 0)
			goto out;
	}
	/* the VFS's rule (set_posix_acl): only directories have one */
	if (type == ACLT_DEFAULT && !S_ISDIR(ip->d.mode)) {
		ret = a.n ? -EACCES : 0;
		goto out;
	}
	if (!a.n) {
		ret = acl_drop(fs, ip, type);
		goto out;
	}
	if (type == ACLT_DEFAULT) {
		ret = acl_store(fs, ip, type, &a);
		goto out;
	}
	/* posix_acl_update_mode: the mode follows the ACL; an ACL the mode
	 * says all of is not kept */
	ret = equiv_mode(&a, &mode) ? acl_store(fs, ip, type, &a) : acl_drop(fs, ip, type);
	if (ret < 0)
		goto out;
	if (flags & CFS_XATTR_ACL_KILL_SGID)
		mode &= (uint16_t)~S_ISGID;
	ip->d.mode = mode;
out:
	free(a.e);
	return ret;
}

ssize_t acl_get(struct cfs_fs *fs, struct inode *ip, int type, void *buf, size_t n)
{
	if (fs->noacl)
		return -EOPNOTSUPP;
	return xattr_get(fs, ip, type == ACLT_ACCESS ? NAME_ACCESS : NAME_DEFAULT, buf, n);
}

int acl_chmod(struct cfs_fs *fs, struct inode *ip)
{
	struct acl a;
	int ret;

	if (fs->noacl || S_ISLNK(ip->d.mode))
		return 0;
	ret = acl_load(fs, ip, ACLT_ACCESS, &a);
	if (ret == -ENODATA)
		return 0;
	if (ret == 0 && a.n) {
		chmod_masq(&a, ip->d.mode);
		ret = acl_store(fs, ip, ACLT_ACCESS, &a);
	}
	free(a.e);
	return ret;
}

int acl_init_new(struct cfs_fs *fs, struct inode *dp, struct inode *ip, uint32_t umask)
{
	struct acl def = { 0, NULL }, acc = { 0, NULL };
	uint16_t mode = ip->d.mode;
	int ret = 0;

	if (S_ISLNK(mode))
		return 0;
	if (!fs->noacl)
		ret = acl_load(fs, dp, ACLT_DEFAULT, &def);
	if (fs->noacl || ret == -ENODATA || (ret == 0 && !def.n)) {
		ip->d.mode = (uint16_t)(mode & ~(umask & 0777));
		ret = inode_write(fs, ip);
		goto out;
	}
	if (ret < 0)
		goto out;
	acc.e = malloc(sizeof(*acc.e) * (size_t)def.n);
	if (!acc.e) {
		ret = -ENOMEM;
		goto out;
	}
	acc.n = def.n;
	memcpy(acc.e, def.e, sizeof(*acc.e) * (size_t)def.n);
	ret = create_masq(&acc, &mode);
	if (ret < 0)
		goto out;
	ip->d.mode = mode;
	ret = ret ? acl_store(fs, ip, ACLT_ACCESS, &acc) : 0;
	if (ret == 0 && S_ISDIR(mode))
		ret = acl_store(fs, ip, ACLT_DEFAULT, &def);
	if (ret == 0)
		ret = inode_write(fs, ip);
out:
	free(def.e);
	free(acc.e);
	return ret;
}

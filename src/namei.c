/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Namespace operations of the public API: lookup, create, link, unlink,
 * rmdir, rename, readdir and path resolution.
 *
 * Locking follows the VFS (a directory before its children, an ancestor
 * before its descendant under fs->rename_lock): docs/LOCKING.md. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fsint.h"

#define DT_OF(mode) ((uint8_t)(((mode) & S_IFMT) >> 12))

static int name_check(const char *name)
{
	size_t n = strlen(name);

	if (n == 0)
		return -ENOENT;
	if (n > CFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (strchr(name, '/'))
		return -EINVAL;
	return 0;
}

static int is_dot(const char *name)
{
	return !strcmp(name, ".") || !strcmp(name, "..");
}

/* A name a new entry may take: valid, and never "." or "..". */
static int new_name_check(const char *name)
{
	int ret = name_check(name);

	return ret == 0 && is_dot(name) ? -EEXIST : ret;
}

/* With dp locked: whether the directory get_dir found has been removed
 * since (unlinked: mode 0, deleted, or no link), or removed and its
 * number taken by a new inode: the cached inode stays while referenced,
 * and then shows the new one, say a regular file, whose data must never
 * be read or written as directory nodes. */
static int dir_gone(const struct inode *dp)
{
	return !dp->d.mode || dp->deleted || !dp->d.nlink || !S_ISDIR(dp->d.mode);
}

/* With dp locked: 0 when name is free in dp, -EEXIST when it is taken,
 * -ENOENT when dp itself has been removed. */
static int name_free(struct cfs_fs *fs, struct inode *dp, const char *name)
{
	struct dirent_rec r;
	int ret;

	if (dir_gone(dp))
		return -ENOENT;
	ret = dir_lookup(fs, dp, name, &r);
	return ret == 0 ? -EEXIST : ret == -ENOENT ? 0 : ret;
}

/* Namespace operations lock inodes themselves, in VFS order. */
static int get_head(struct cfs_fs *fs, cfs_ino_t ino, struct inode **out)
{
	return inode_get_head(fs, ino, 0, out);
}

static int get_dir(struct cfs_fs *fs, cfs_ino_t ino, struct inode **out)
{
	int ret = get_head(fs, ino, out);

	if (ret == 0 && !S_ISDIR((*out)->d.mode)) {
		inode_put(fs, *out);
		*out = NULL;   /* callers put whatever they were given */
		return -ENOTDIR;
	}
	return ret;
}

static void dirent_fill(struct dirent_rec *r, cfs_ino_t ino, cfs_ino_t stub,
			uint32_t mode, const char *name)
{
	memset(r, 0, sizeof(*r));
	r->ino = ino;
	r->stub = stub;
	r->type = DT_OF(mode);
	r->namelen = (uint8_t)strlen(name);
	memcpy(r->name, name, r->namelen);
}

/* Add name -> ip in dp, with a back-reference stub if they live in
 * different chunks. */
static int link_add(struct cfs_fs *fs, struct inode *dp, const char *name, struct inode *ip)
{
	struct dirent_rec r;
	cfs_ino_t stub;
	int ret = xref_add(fs, dp, ip->ino, ip->d.mode, name, strlen(name), &stub);

	if (ret < 0)
		return ret;
	dirent_fill(&r, ip->ino, stub, ip->d.mode, name);
	ret = dir_add(fs, dp, &r);
	if (ret < 0)
		xref_del(fs, stub, ip->ino);
	return ret;
}

static int link_remove(struct cfs_fs *fs, struct inode *dp, const struct dirent_rec *r)
{
	int ret = xref_hold(fs, r->stub);

	if (ret == 0)
		ret = dir_remove(fs, dp, r->name);

	if (ret == 0)
		ret = xref_del(fs, r->stub, r->ino);
	return ret;
}

int cfs_lookup(struct cfs_fs *fs, cfs_ino_t dir, const char *name, cfs_ino_t *ino)
{
	struct inode *dp;
	struct dirent_rec r;
	int ret = name_check(name);

	if (ret < 0)
		return ret;
	fence_wait(fs, dir);
	ret = get_dir(fs, dir, &dp);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&dp->lock);
	if (dir_gone(dp)) {
		ret = -ENOENT;   /* removed after get_dir looked at it */
	} else if (!strcmp(name, ".")) {
		*ino = dp->ino;
	} else if (!strcmp(name, "..")) {
		*ino = dp->d.back;
	} else {
		ret = dir_lookup(fs, dp, name, &r);
		if (ret == 0)
			*ino = r.ino;
	}
	pthread_mutex_unlock(&dp->lock);
	inode_put(fs, dp);
	return ret;
}

static int init_new(struct cfs_fs *fs, struct inode *dp, struct inode *ip, uint64_t rdev,
		    uint32_t uid, uint32_t gid, const char *target)
{
	ssize_t n;

	ip->d.uid = uid;
	ip->d.gid = gid;
	if (dp->d.mode & S_ISGID) {
		ip->d.gid = dp->d.gid;
		if (S_ISDIR(ip->d.mode))
			ip->d.mode |= S_ISGID;
	}
	ip->d.nlink = S_ISDIR(ip->d.mode) ? 2 : 1;
	if (S_ISDIR(ip->d.mode)) {
		ip->d.back = dp->ino;
		return dir_init(fs, ip);
	}
	if (S_ISCHR(ip->d.mode) || S_ISBLK(ip->d.mode))
		ip->d.rdev = rdev;
	if (S_ISREG(ip->d.mode) || S_ISLNK(ip->d.mode))
		ip->d.flags = CFS_IFL_INLINE;
	if (target) {
		n = file_write(fs, ip, target, strlen(target), 0);
		if (n < 0)
			return (int)n;
	}
	return inode_write(fs, ip);
}

/* A new inode where the placement policy puts it.  Others allocate
 * meanwhile, so the chunk chosen can be full when its inode is taken:
 * then choose again.  The slots are made first, the stub's too away from
 * the parent's chunk: a chunk counted on for an inode cluster may find no
 * free run for it, and then counts none (inodes_ensure). */
static int new_inode(struct cfs_fs *fs, struct inode *dp, uint32_t mode, struct inode **ip)
{
	uint32_t c, tries;
	int ret = -ENOSPC;

	for (tries = 0; tries < fs->sb.nchunks && ret == -ENOSPC; tries++) {
		ret = alloc_new_inode_chunk(fs, dp, mode, &c);
		if (ret == 0 && !inodes_ensure(fs, c, c == CFS_INO_CHUNK(dp->ino) ? 1 : 2))
			ret = -ENOSPC;
		if (ret == 0)
			ret = inode_alloc(fs, c, 1, (uint16_t)mode, ip);
	}
	return ret;
}

static int create_once(struct cfs_fs *fs, cfs_ino_t dir, const char *name, uint32_t mode,
		       uint32_t umask, uint64_t rdev, uint32_t uid, uint32_t gid,
		       const char *target, cfs_ino_t *out)
{
	struct inode *dp, *ip = NULL;
	int ret = new_name_check(name);

	if (ret < 0)
		return ret;
	fence_wait(fs, dir);
	ret = fs_op_begin(fs);
	if (ret < 0)
		return ret;
	ret = get_dir(fs, dir, &dp);
	if (ret < 0)
		goto out_op;
	pthread_mutex_lock(&dp->lock);
	ret = name_free(fs, dp, name);
	if (ret < 0)
		goto out;
	ret = new_inode(fs, dp, mode, &ip);
	if (ret < 0)
		goto out;
	/* counted now, so that the release below on failure balances it */
	if (S_ISDIR(mode))
		chunk_count(fs, CFS_INO_CHUNK(ip->ino), CNT_DIRS, 1);
	ret = init_new(fs, dp, ip, rdev, uid, gid, target);
	if (ret == 0)
		ret = acl_init_new(fs, dp, ip, umask);
	if (ret == 0)
		ret = link_add(fs, dp, name, ip);
	if (ret < 0) {
		ip->d.nlink = 0;
		inode_release(fs, ip);
		goto out;
	}
	if (S_ISDIR(mode))
		dp->d.nlink++;
	inode_touch(dp, 0, 1, 1);
	ret = inode_write(fs, dp);
	if (out)
		*out = ip->ino;
out:
	if (ip)
		pthread_mutex_unlock(&ip->lock);   /* from inode_alloc */
	pthread_mutex_unlock(&dp->lock);
	inode_put(fs, ip);
	inode_put(fs, dp);
out_op:
	fs_op_end(fs);
	return ret;
}

static int do_create(struct cfs_fs *fs, cfs_ino_t dir, const char *name, uint32_t mode,
		     uint32_t umask, uint64_t rdev, uint32_t uid, uint32_t gid,
		     const char *target, cfs_ino_t *out)
{
	int ret = create_once(fs, dir, name, mode, umask, rdev, uid, gid, target, out);

	if (fs_space_back(fs, ret))
		ret = create_once(fs, dir, name, mode, umask, rdev, uid, gid, target, out);
	return ret;
}

int cfs_mknod_umask(struct cfs_fs *fs, cfs_ino_t dir, const char *name, uint32_t mode,
		    uint32_t umask, uint64_t rdev, uint32_t uid, uint32_t gid,
		    cfs_ino_t *ino)
{
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFIFO: case S_IFSOCK: case S_IFCHR: case S_IFBLK:
		break;
	case 0:
		mode |= S_IFREG;
		break;
	case S_IFDIR:
		return do_create(fs, dir, name, S_IFDIR | (mode & 07777), umask, 0, uid, gid,
				 NULL, ino);
	default:
		return -EINVAL;
	}
	return do_create(fs, dir, name, mode & (S_IFMT | 07777), umask, rdev, uid, gid, NULL,
			 ino);
}

int cfs_mknod(struct cfs_fs *fs, cfs_ino_t dir, const char *name, uint32_t mode,
	      uint64_t rdev, uint32_t uid, uint32_t gid, cfs_ino_t *ino)
{
	if ((mode & S_IFMT) == S_IFDIR)
		return -EPERM;
	return cfs_mknod_umask(fs, dir, name, mode, 0, rdev, uid, gid, ino);
}

int cfs_mkdir(struct cfs_fs *fs, cfs_ino_t dir, const char *name, uint32_t mode,
	      uint32_t uid, uint32_t gid, cfs_ino_t *ino)
{
	return do_create(fs, dir, name, S_IFDIR | (mode & 07777), 0, 0, uid, gid, NULL, ino);
}

int cfs_symlink(struct cfs_fs *fs, cfs_ino_t dir, const char *name, const char *target,
		uint32_t uid, uint32_t gid, cfs_ino_t *ino)
{
	size_t n = strlen(target);

	if (n == 0)
		return -ENOENT;
	if (n > CFS_SYMLINK_MAX)
		return -ENAMETOOLONG;
	return do_create(fs, dir, name, S_IFLNK | 0777, 0, 0, uid, gid, target, ino);
}

static int link_once(struct cfs_fs *fs, cfs_ino_t ino, cfs_ino_t newdir, const char *newname)
{
	struct inode *dp = NULL, *ip = NULL;
	int ret = new_name_check(newname);

	if (ret < 0)
		return ret;
	fence_wait(fs, ino);
	fence_wait(fs, newdir);
	ret = fs_op_begin(fs);
	if (ret < 0)
		return ret;
	ret = get_head(fs, ino, &ip);
	if (ret == 0 && S_ISDIR(ip->d.mode))
		ret = -EPERM;
	if (ret == 0)
		ret = get_dir(fs, newdir, &dp);
	if (ret < 0)
		goto out_put;
	pthread_mutex_lock(&dp->lock);
	pthread_mutex_lock(&ip->lock);
	ret = name_free(fs, dp, newname);
	if (ret < 0)
		goto out;
	ret = -ENOENT;
	if (ip->d.nlink == 0)
		goto out;
	ret = -EMLINK;
	if (ip->d.nlink >= 65000)
		goto out;
	ret = link_add(fs, dp, newname, ip);
	if (ret < 0)
		goto out;
	ip->d.nlink++;
	inode_touch(ip, 0, 0, 1);
	inode_touch(dp, 0, 1, 1);
	ret = inode_write(fs, ip);
	if (ret == 0)
		ret = inode_write(fs, dp);
out:
	pthread_mutex_unlock(&ip->lock);
	pthread_mutex_unlock(&dp->lock);
out_put:
	inode_put(fs, ip);
	inode_put(fs, dp);
	fs_op_end(fs);
	return ret;
}

int cfs_link(struct cfs_fs *fs, cfs_ino_t ino, cfs_ino_t newdir, const char *newname)
{
	int ret = link_once(fs, ino, newdir, newname);

	if (fs_space_back(fs, ret))
		ret = link_once(fs, ino, newdir, newname);
	return ret;
}

static int do_remove(struct cfs_fs *fs, cfs_ino_t dir, const char *name, int rmdir)
{
	struct inode *dp, *ip = NULL;
	struct dirent_rec r;
	int ret = name_check(name);

	if (ret < 0)
		return ret;
	if (is_dot(name))
		return rmdir ? (!strcmp(name, ".") ? -EINVAL : -ENOTEMPTY) : -EISDIR;
	fence_wait(fs, dir);
	ret = fs_op_begin(fs);
	if (ret < 0)
		return ret;
	ret = get_dir(fs, dir, &dp);
	if (ret < 0)
		goto out_op;
	pthread_mutex_lock(&dp->lock);
	ret = dir_gone(dp) ? -ENOENT : dir_lookup(fs, dp, name, &r);
	if (ret == 0)
		ret = get_head(fs, r.ino, &ip);
	if (ret < 0)
		goto out;
	pthread_mutex_lock(&ip->lock);
	if (rmdir && !S_ISDIR(ip->d.mode))
		ret = -ENOTDIR;
	else if (!rmdir && S_ISDIR(ip->d.mode))
		ret = -EISDIR;
	else if (rmdir && (ret = dir_is_empty(fs, ip)) >= 0)
		ret = ret ? 0 : -ENOTEMPTY;
	if (ret == 0)
		ret = link_remove(fs, dp, &r);
	if (ret == 0) {
		if (rmdir) {
			ip->d.nlink = 0;
			dp->d.nlink--;
		} else {
			ip->d.nlink--;
		}
		inode_touch(ip, 0, 0, 1);
		inode_touch(dp, 0, 1, 1);
		ret = inode_write(fs, ip);
		if (ret == 0)
			ret = inode_write(fs, dp);
		if (ret == 0)
			ret = inode_release(fs, ip);
	}
	pthread_mutex_unlock(&ip->lock);
out:
	pthread_mutex_unlock(&dp->lock);
	inode_put(fs, ip);
	inode_put(fs, dp);
out_op:
	fs_op_end(fs);
	return ret;
}

int cfs_unlink(struct cfs_fs *fs, cfs_ino_t dir, const char *name)
{
	return do_remove(fs, dir, name, 0);
}

int cfs_rmdir(struct cfs_fs *fs, cfs_ino_t dir, const char *name)
{
	return do_remove(fs, dir, name, 1);
}

/* ---- rename ---- */

/* Is directory a an ancestor of (or equal to) directory d?  Walks d's
 * parent pointers; stable because rename_lock is held. */
static int is_ancestor(struct cfs_fs *fs, cfs_ino_t a, cfs_ino_t d)
{
	int steps;

	for (steps = 0; steps < 1 << 20; steps++) {
		struct inode *ip;
		cfs_ino_t up;
		int ret;

		if (d == a)
			return 1;
		if (d == fs->sb.root_ino)
			return 0;
		ret = inode_get(fs, d, &ip);
		if (ret < 0)
			return ret;
		up = ip->d.back;
		inode_put(fs, ip);
		d = up;
	}
	return -EUCLEAN;
}

struct rn {
	struct inode *od, *nd, *src, *dst;
	struct inode *wh;   /* the whiteout of CFS_RENAME_WHITEOUT, locked */
	int wh_named;       /* the source entry names it */
	struct dirent_rec sr, dr;
	int have_dst;
	unsigned flags;
	uint32_t uid, gid;  /* the whiteout's owner */
};

static int rename_checks(struct cfs_fs *fs, struct rn *x)
{
	int sdir = S_ISDIR(x->src->d.mode), ret;

	if (sdir && (ret = is_ancestor(fs, x->src->ino, x->nd->ino)) != 0)
		return ret < 0 ? ret : -EINVAL;
	if (!x->have_dst)
		return 0;
	if (x->flags & CFS_RENAME_EXCHANGE) {
		if (S_ISDIR(x->dst->d.mode) &&
		    (ret = is_ancestor(fs, x->dst->ino, x->od->ino)) != 0)
			return ret < 0 ? ret : -EINVAL;
		return 0;
	}
	if (sdir && !S_ISDIR(x->dst->d.mode))
		return -ENOTDIR;
	if (!sdir && S_ISDIR(x->dst->d.mode))
		return -EISDIR;
	return 0;
}

/* Point entry r of dp at ip (replacing its stub); with changed (set
 * when the entry names ip now, also on failure), the entry reaches the
 * disk after everything changed before it. */
static int entry_retarget_ch(struct cfs_fs *fs, struct inode *dp, struct dirent_rec *r,
			     struct inode *ip, int *changed)
{
	cfs_ino_t old_ino = r->ino, old_stub = r->stub, stub;
	int ret = xref_add(fs, dp, ip->ino, ip->d.mode, r->name, r->namelen, &stub);

	if (ret < 0)
		return ret;
	r->ino = ip->ino;
	r->stub = stub;
	r->type = DT_OF(ip->d.mode);
	ret = xref_hold(fs, old_stub);
	if (ret == 0)
		ret = changed ? dir_update_last(fs, dp, r) : dir_update(fs, dp, r);
	if (ret < 0) {
		xref_del(fs, stub, ip->ino);
		return ret;
	}
	if (changed)
		*changed = 1;
	return xref_del(fs, old_stub, old_ino);
}

static int entry_retarget(struct cfs_fs *fs, struct inode *dp, struct dirent_rec *r,
			  struct inode *ip)
{
	return entry_retarget_ch(fs, dp, r, ip, NULL);
}

static void reparent(struct inode *ip, struct inode *from, struct inode *to)
{
	if (!S_ISDIR(ip->d.mode) || from == to)
		return;
	ip->d.back = to->ino;
	from->d.nlink--;
	to->d.nlink++;
}

/* Both new stubs are made before either entry changes, so running out of
 * inodes leaves the two entries as they were. */
static int rename_exchange(struct cfs_fs *fs, struct rn *x)
{
	struct dirent_rec a = x->sr, b = x->dr;
	cfs_ino_t sa, sb;
	int ret;

	ret = xref_add(fs, x->od, x->dst->ino, x->dst->d.mode, a.name, a.namelen, &sa);
	if (ret < 0)
		return ret;
	ret = xref_add(fs, x->nd, x->src->ino, x->src->d.mode, b.name, b.namelen, &sb);
	if (ret < 0) {
		xref_del(fs, sa, x->dst->ino);
		return ret;
	}
	a.ino = x->dst->ino;
	a.stub = sa;
	a.type = DT_OF(x->dst->d.mode);
	b.ino = x->src->ino;
	b.stub = sb;
	b.type = DT_OF(x->src->d.mode);
	ret = xref_hold(fs, x->sr.stub);
	if (ret == 0)
		ret = xref_hold(fs, x->dr.stub);
	if (ret == 0)
		ret = dir_update(fs, x->od, &a);
	if (ret == 0)
		ret = dir_update(fs, x->nd, &b);
	if (ret == 0)
		ret = xref_del(fs, x->sr.stub, x->sr.ino);
	if (ret == 0)
		ret = xref_del(fs, x->dr.stub, x->dr.ino);
	if (ret < 0)
		return ret;
	reparent(x->src, x->od, x->nd);
	reparent(x->dst, x->nd, x->od);
	inode_touch(x->dst, 0, 0, 1);
	return inode_write(fs, x->dst);
}

static void whiteout_drop(struct cfs_fs *fs, struct rn *x)
{
	x->wh->d.nlink = 0;
	inode_release(fs, x->wh);
}

/* The whiteout a CFS_RENAME_WHITEOUT leaves at the source name: a
 * character device 0/0 with no permission bits, overlayfs's mark of a
 * name deleted from the layers below (vfs_whiteout).  It is made whole
 * before any entry changes, so running out of inodes leaves the rename
 * undone. */
static int whiteout_new(struct cfs_fs *fs, struct rn *x)
{
	int ret = new_inode(fs, x->od, S_IFCHR, &x->wh);

	if (ret < 0)
		return ret;
	ret = init_new(fs, x->od, x->wh, 0, x->uid, x->gid, NULL);
	if (ret < 0)
		whiteout_drop(fs, x);
	return ret;
}

static int rename_move(struct cfs_fs *fs, struct rn *x, const char *newname)
{
	int ret;

	if (x->have_dst) {
		if (S_ISDIR(x->dst->d.mode) && (ret = dir_is_empty(fs, x->dst)) <= 0)
			return ret < 0 ? ret : -ENOTEMPTY;
		/* the new entry replaces the old in one block write */
		ret = entry_retarget(fs, x->nd, &x->dr, x->src);
		if (ret < 0)
			return ret;
		if (S_ISDIR(x->dst->d.mode)) {
			x->dst->d.nlink = 0;
			x->nd->d.nlink--;
		} else {
			x->dst->d.nlink--;
		}
		inode_touch(x->dst, 0, 0, 1);
		ret = inode_write(fs, x->dst);
		if (ret == 0)
			ret = inode_release(fs, x->dst);
	} else {
		ret = link_add(fs, x->nd, newname, x->src);
	}
	/* The source name turns into the whiteout in place, one block
	 * write, and that write waits for every other of the rename: the
	 * whiteout's inode, the new name, their stubs.  So no moment, nor
	 * a crash, finds the old name naming nothing (a lower layer's file
	 * would show through), or the file with neither name. */
	if (ret == 0)
		ret = x->wh ? entry_retarget_ch(fs, x->od, &x->sr, x->wh, &x->wh_named) :
			      link_remove(fs, x->od, &x->sr);
	if (ret == 0)
		reparent(x->src, x->od, x->nd);
	return ret;
}

static void lock_dirs(struct cfs_fs *fs, struct inode *od, struct inode *nd)
{
	if (od == nd) {
		pthread_mutex_lock(&od->lock);
	} else if (is_ancestor(fs, nd->ino, od->ino) == 1) {
		pthread_mutex_lock(&nd->lock);
		pthread_mutex_lock(&od->lock);
	} else {
		pthread_mutex_lock(&od->lock);
		pthread_mutex_lock(&nd->lock);
	}
}

static int rename_locked(struct cfs_fs *fs, struct rn *x, const char *oldname,
			 const char *newname)
{
	int ret = dir_lookup(fs, x->od, oldname, &x->sr);

	if (ret == 0)
		ret = dir_lookup(fs, x->nd, newname, &x->dr);
	x->have_dst = ret == 0;
	if (ret == -ENOENT && x->sr.ino)
		ret = 0;
	if (ret < 0)
		return ret;
	if (x->have_dst && (x->flags & CFS_RENAME_NOREPLACE))
		return -EEXIST;
	if (!x->have_dst && (x->flags & CFS_RENAME_EXCHANGE))
		return -ENOENT;
	if (x->have_dst && x->dr.ino == x->sr.ino)
		return 0;   /* two links to one inode: POSIX says do nothing */
	if (dir_gone(x->od) || dir_gone(x->nd))
		return -ENOENT;
	ret = get_head(fs, x->sr.ino, &x->src);
	if (ret == 0 && x->have_dst)
		ret = get_head(fs, x->dr.ino, &x->dst);
	if (ret == 0)
		ret = rename_checks(fs, x);
	if (ret < 0)
		return ret;
	if (x->have_dst && (x->dst == x->od || x->dst == x->nd))
		return -ENOTEMPTY;
	inode_lock2(x->src, x->dst);
	ret = (x->flags & CFS_RENAME_WHITEOUT) ? whiteout_new(fs, x) : 0;
	if (ret == 0)
		ret = (x->flags & CFS_RENAME_EXCHANGE) ? rename_exchange(fs, x) :
							 rename_move(fs, x, newname);
	/* a whiteout that no entry came to name goes again */
	if (ret < 0 && x->wh && x->wh->d.nlink && !x->wh_named)
		whiteout_drop(fs, x);
	inode_touch(x->src, 0, 0, 1);
	inode_touch(x->od, 0, 1, 1);
	inode_touch(x->nd, 0, 1, 1);
	if (ret == 0)
		ret = inode_write(fs, x->src);
	if (ret == 0)
		ret = inode_write(fs, x->od);
	if (ret == 0 && x->nd != x->od)
		ret = inode_write(fs, x->nd);
	if (x->wh)
		pthread_mutex_unlock(&x->wh->lock);   /* from inode_alloc */
	inode_unlock2(x->src, x->dst);
	return ret;
}

static int rename_once(struct cfs_fs *fs, cfs_ino_t olddir, const char *oldname,
		       cfs_ino_t newdir, const char *newname, unsigned flags,
		       uint32_t uid, uint32_t gid)
{
	struct rn x;
	int ret;

	fence_wait(fs, olddir);
	fence_wait(fs, newdir);
	ret = fs_op_begin(fs);
	if (ret < 0)
		return ret;
	memset(&x, 0, sizeof(x));
	x.flags = flags;
	x.uid = uid;
	x.gid = gid;
	pthread_mutex_lock(&fs->rename_lock);
	ret = get_dir(fs, olddir, &x.od);
	if (ret == 0)
		ret = get_dir(fs, newdir, &x.nd);
	if (ret == 0) {
		lock_dirs(fs, x.od, x.nd);
		ret = rename_locked(fs, &x, oldname, newname);
		pthread_mutex_unlock(&x.od->lock);
		if (x.nd != x.od)
			pthread_mutex_unlock(&x.nd->lock);
	}
	pthread_mutex_unlock(&fs->rename_lock);
	inode_put(fs, x.src);
	inode_put(fs, x.dst);
	inode_put(fs, x.wh);
	inode_put(fs, x.od);
	inode_put(fs, x.nd);
	fs_op_end(fs);
	return ret;
}

int cfs_rename_as(struct cfs_fs *fs, cfs_ino_t olddir, const char *oldname,
		  cfs_ino_t newdir, const char *newname, unsigned flags, uint32_t uid,
		  uint32_t gid)
{
	int ret;

	/* an exchange leaves no name behind to white out (renameat2(2)) */
	if ((flags & ~(CFS_RENAME_NOREPLACE | CFS_RENAME_EXCHANGE | CFS_RENAME_WHITEOUT)) ||
	    ((flags & CFS_RENAME_EXCHANGE) &&
	     (flags & (CFS_RENAME_NOREPLACE | CFS_RENAME_WHITEOUT))))
		return -EINVAL;
	if ((ret = name_check(oldname)) < 0 || (ret = name_check(newname)) < 0)
		return ret;
	if (is_dot(oldname) || is_dot(newname))
		return -EBUSY;
	ret = rename_once(fs, olddir, oldname, newdir, newname, flags, uid, gid);
	if (fs_space_back(fs, ret))
		ret = rename_once(fs, olddir, oldname, newdir, newname, flags, uid, gid);
	return ret;
}

int cfs_rename(struct cfs_fs *fs, cfs_ino_t olddir, const char *oldname,
	       cfs_ino_t newdir, const char *newname, unsigned flags)
{
	return cfs_rename_as(fs, olddir, oldname, newdir, newname, flags, 0, 0);
}

/* ---- readdir ---- */

struct rd {
	cfs_filldir_t fill;
	void *ctx;
	int stopped;
};

static int rd_entry(void *vc, const struct dirent_rec *r)
{
	struct rd *d = vc;

	if (d->fill(d->ctx, r->name, r->namelen, r->ino, r->type, r->hash + 1)) {
		d->stopped = 1;
		return 1;
	}
	return 0;
}

int cfs_readdir(struct cfs_fs *fs, cfs_ino_t dir, uint64_t cookie, cfs_filldir_t fill,
		void *ctx)
{
	struct rd d = { fill, ctx, 0 };
	struct inode *dp;
	int ret;

	fence_wait(fs, dir);
	ret = get_dir(fs, dir, &dp);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&dp->lock);
	if (dir_gone(dp)) {
		ret = -ENOENT;
		goto out;
	}
	if (cookie == 0 && fill(ctx, ".", 1, dp->ino, DT_OF(S_IFDIR), 1))
		goto out;
	if (cookie <= 1 && fill(ctx, "..", 2, dp->d.back, DT_OF(S_IFDIR), 2))
		goto out;
	ret = dir_iterate(fs, dp, cookie < 2 ? 2 : cookie, rd_entry, &d);
out:
	pthread_mutex_unlock(&dp->lock);
	inode_put(fs, dp);
	return ret;
}

/* ---- paths ---- */

static int resolve(struct cfs_fs *fs, const char *path, int follow, int depth,
		   cfs_ino_t start, cfs_ino_t *out)
{
	char name[CFS_NAME_MAX + 1], target[4096];
	cfs_ino_t cur = *path == '/' ? fs->sb.root_ino : start, next;
	struct cfs_stat st;
	int ret;

	if (depth > 40)
		return -ELOOP;
	while (*path) {
		size_t n;
		int last;

		while (*path == '/')
			path++;
		if (!*path)
			break;
		n = strcspn(path, "/");
		if (n > CFS_NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, path, n);
		name[n] = 0;
		path += n;
		last = !path[strspn(path, "/")];
		ret = cfs_lookup(fs, cur, name, &next);
		if (ret < 0)
			return ret;
		ret = cfs_getattr(fs, next, &st);
		if (ret < 0)
			return ret;
		if (S_ISLNK(st.mode) && (!last || follow)) {
			ssize_t l = cfs_readlink(fs, next, target, sizeof(target) - 1);

			if (l < 0)
				return (int)l;
			if (l >= (ssize_t)sizeof(target))
				return -ENAMETOOLONG;
			target[l] = 0;
			ret = resolve(fs, target, 1, depth + 1, cur, &next);
			if (ret < 0)
				return ret;
		}
		cur = next;
	}
	*out = cur;
	return 0;
}

int cfs_path_resolve(struct cfs_fs *fs, const char *path, int follow, cfs_ino_t *ino)
{
	return resolve(fs, path, follow, 0, fs->sb.root_ino, ino);
}

int cfs_path_parent(struct cfs_fs *fs, const char *path, cfs_ino_t *dir,
		    char name[CFS_NAME_MAX + 1])
{
	char buf[4096];
	size_t len = strlen(path);
	char *slash;

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = 0;
	slash = strrchr(buf, '/');
	if (!slash) {
		if (strlen(buf) > CFS_NAME_MAX)
			return -ENAMETOOLONG;
		strcpy(name, buf);
		*dir = fs->sb.root_ino;
		return 0;
	}
	if (strlen(slash + 1) > CFS_NAME_MAX)
		return -ENAMETOOLONG;
	strcpy(name, slash + 1);
	if (!*name)
		return -EINVAL;   /* the root has no parent entry */
	*slash = 0;
	return cfs_path_resolve(fs, slash == buf ? "/" : buf, 1, dir);
}

/* ---- for fsck's lost+found and root (src/fsck/lpf.c) ---- */

int namei_get_dir(struct cfs_fs *fs, cfs_ino_t ino, struct inode **out)
{
	return get_dir(fs, ino, out);
}

int namei_link_add(struct cfs_fs *fs, struct inode *dp, const char *name, struct inode *ip)
{
	return link_add(fs, dp, name, ip);
}

int namei_init_dir(struct cfs_fs *fs, struct inode *dp, struct inode *ip)
{
	return init_new(fs, dp, ip, 0, 0, 0, NULL);
}

int namei_drop_new(struct cfs_fs *fs, struct inode *ip)
{
	ip->d.nlink = 0;
	return inode_release(fs, ip);
}

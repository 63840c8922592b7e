/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fsck: the root directory, /lost+found, and the reconnection of the
 * inodes no directory names (orphans) into it.  Runs after every chunk's
 * steps, serially, through the namespace layer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsck.h"

/* Make reserved directory ino (the root or lost+found) again under its own
 * number: FORMAT.md fixes both numbers, so a new inode elsewhere would not
 * do.  Empty, parent back; counted in its chunk's directories. */
static int reserved_dir_make(struct cfs_fs *fs, cfs_ino_t ino, uint16_t mode, cfs_ino_t back,
			     struct inode **out)
{
	struct inode *ip;
	uint32_t gen;
	int ret = chunk_alloc_inode_at(fs, CFS_INO_CHUNK(ino), CFS_INO_LOCAL(ino));

	if (ret < 0)
		return ret;
	ret = inode_get(fs, ino, &ip);
	if (ret == 0 && ip->d.mode && !ip->deleted) {
		inode_put(fs, ip);   /* the bitmap said free but the table says in use */
		ret = -EEXIST;
	}
	if (ret < 0) {
		chunk_free_inode(fs, ino);
		return ret;
	}
	gen = ip->d.generation + 1;
	memset(&ip->d, 0, sizeof(ip->d));
	memset(ip->var, 0, fs->varsz);
	ip->deleted = 0;
	ip->d.generation = gen;
	ip->d.mode = mode;
	ip->d.head = ino;
	ip->d.nlink = 2;
	ip->d.back = back;
	inode_touch(ip, 1, 1, 1);
	ip->d.crtime = ip->d.mtime;
	ip->d.crtime_ns = ip->d.mtime_ns;
	/* counted now, so that the release below on failure balances it */
	chunk_count(fs, CFS_INO_CHUNK(ino), CNT_DIRS, 1);
	ret = dir_init(fs, ip);
	if (ret == 0)
		ret = inode_write(fs, ip);
	if (ret < 0) {
		namei_drop_new(fs, ip);
		inode_put(fs, ip);
		return ret;
	}
	*out = ip;
	return 0;
}

static int root_make(struct cfs_fs *fs)
{
	struct inode *root;
	int ret = fs_op_begin(fs);

	if (ret < 0)
		return ret;
	ret = reserved_dir_make(fs, fs->sb.root_ino, S_IFDIR | 0755, fs->sb.root_ino, &root);
	if (ret == 0)
		inode_put(fs, root);
	fs_op_end(fs);
	return ret;
}

/* Name directory ip "lost+found" in the root.  Both locked by the caller. */
static int lpf_link(struct cfs_fs *fs, struct inode *root, struct inode *ip)
{
	int ret = namei_link_add(fs, root, "lost+found", ip);

	if (ret < 0)
		return ret;
	ip->d.back = root->ino;
	root->d.nlink++;
	inode_touch(root, 0, 1, 1);
	ret = inode_write(fs, ip);
	if (ret == 0)
		ret = inode_write(fs, root);
	return ret;
}

/* lost+found is inode lpf_ino: made again there while that inode is free
 * (a directory that no longer exists), else as a new directory anywhere. */
static int lpf_make(struct cfs_fs *fs, cfs_ino_t *lpf)
{
	struct inode *root = NULL, *ip = NULL;
	int ret = fs_op_begin(fs);

	if (ret < 0)
		return ret;
	ret = namei_get_dir(fs, fs->sb.root_ino, &root);
	if (ret < 0)
		goto out;
	pthread_mutex_lock(&root->lock);
	ret = reserved_dir_make(fs, fs->sb.lpf_ino, S_IFDIR | 0700, root->ino, &ip);
	if (ret == 0) {
		ret = lpf_link(fs, root, ip);
		if (ret < 0) {
			namei_drop_new(fs, ip);
		}
		*lpf = ip->ino;
	}
	pthread_mutex_unlock(&root->lock);
out:
	inode_put(fs, ip);
	inode_put(fs, root);
	fs_op_end(fs);
	if (ret == -EEXIST || ret == -ENOSPC)
		ret = cfs_mkdir(fs, fs->sb.root_ino, "lost+found", 0700, 0, 0, lpf);
	return ret;
}

static int lpf_get(struct cfs_fs *fs, struct inode **out)
{
	cfs_ino_t lpf;
	int ret = cfs_lookup(fs, fs->sb.root_ino, "lost+found", &lpf);

	if (ret == -ENOENT)
		ret = lpf_make(fs, &lpf);
	if (ret < 0)
		return ret;
	return namei_get_dir(fs, lpf, out);
}

static int lpf_ensure(struct cfs_fs *fs)
{
	struct inode *lpf;
	int ret = lpf_get(fs, &lpf);

	if (ret == 0)
		inode_put(fs, lpf);
	return ret;
}

/* The reserved lost+found, named by no directory, goes back into the root
 * under its own name; -EEXIST if the root has a lost+found already. */
static int lpf_relink(struct cfs_fs *fs)
{
	struct inode *root = NULL, *ip = NULL;
	struct dirent_rec r;
	int ret = namei_get_dir(fs, fs->sb.root_ino, &root);

	if (ret < 0)
		return ret;
	ret = namei_get_dir(fs, fs->sb.lpf_ino, &ip);
	if (ret < 0)
		goto out;
	inode_lock2(root, ip);
	ret = dir_lookup(fs, root, "lost+found", &r);
	if (ret == 0)
		ret = -EEXIST;
	else if (ret == -ENOENT)
		ret = lpf_link(fs, root, ip);
	inode_unlock2(root, ip);
out:
	inode_put(fs, ip);
	inode_put(fs, root);
	return ret;
}

/* A directory in lost+found whose head is in chunk c ("#chunk-c"), for the
 * orphans of a chunk with too few free inodes to give each a stub: its
 * entries name inodes of its own chunk, so they need none.  It costs chunk
 * c two inodes once (itself and its own stub). */
static int lpf_holder(struct cfs_fs *fs, struct inode *lpf, uint32_t c, struct inode **out)
{
	struct inode *ip = NULL;
	struct dirent_rec r;
	char name[32];
	int ret;

	snprintf(name, sizeof(name), "#chunk-%u", c);
	pthread_mutex_lock(&lpf->lock);
	ret = dir_lookup(fs, lpf, name, &r);
	if (ret == 0) {
		ret = CFS_INO_CHUNK(r.ino) == c ? namei_get_dir(fs, r.ino, &ip) : -EEXIST;
		goto out;
	}
	if (ret != -ENOENT)
		goto out;
	ret = inode_alloc(fs, c, 1, S_IFDIR | 0700, &ip);
	if (ret < 0)
		goto out;
	/* counted now, so that the release below on failure balances it */
	chunk_count(fs, c, CNT_DIRS, 1);
	ret = namei_init_dir(fs, lpf, ip);
	if (ret == 0)
		ret = namei_link_add(fs, lpf, name, ip);
	if (ret == 0) {
		lpf->d.nlink++;
		ret = inode_write(fs, ip);
		if (ret == 0)
			ret = inode_write(fs, lpf);
	} else {
		namei_drop_new(fs, ip);
	}
	pthread_mutex_unlock(&ip->lock);   /* from inode_alloc */
out:
	pthread_mutex_unlock(&lpf->lock);
	if (ret < 0) {
		inode_put(fs, ip);
		ip = NULL;
	}
	*out = ip;
	return ret;
}

/* Put an unreferenced inode into /lost+found as "#ino"; with hold, into
 * /lost+found/#chunk-N, a directory in the inode's own chunk N, so that it
 * needs no stub there (for a chunk short of free inodes). */
static int reconnect(struct cfs_fs *fs, cfs_ino_t ino, int hold)
{
	struct inode *lpf, *ip = NULL, *h;
	char name[32];
	int ret;

	if (ino == fs->sb.lpf_ino) {
		ret = lpf_relink(fs);
		if (ret != -EEXIST && ret != -ENOTDIR)
			return ret;
	}
	ret = lpf_get(fs, &lpf);
	if (ret < 0)
		return ret;
	if (hold && CFS_INO_CHUNK(ino) != CFS_INO_CHUNK(lpf->ino)) {
		ret = lpf_holder(fs, lpf, CFS_INO_CHUNK(ino), &h);
		inode_put(fs, lpf);
		if (ret < 0)
			return ret;
		lpf = h;
	}
	ret = inode_get_head(fs, ino, 0, &ip);
	if (ret < 0)
		goto out;
	snprintf(name, sizeof(name), "#%u", ino);
	pthread_mutex_lock(&lpf->lock);
	pthread_mutex_lock(&ip->lock);
	ret = namei_link_add(fs, lpf, name, ip);
	if (ret == 0) {
		if (S_ISDIR(ip->d.mode)) {
			ip->d.back = lpf->ino;
			lpf->d.nlink++;
		} else {
			ip->d.nlink = 1;
		}
		ret = inode_write(fs, ip);
		if (ret == 0)
			ret = inode_write(fs, lpf);
	}
	pthread_mutex_unlock(&ip->lock);
	pthread_mutex_unlock(&lpf->lock);
out:
	inode_put(fs, ip);
	inode_put(fs, lpf);
	return ret;
}

static void reconnect_one(struct fs_check *k, const struct orphan *o, int hold)
{
	int ret = reconnect(k->fs, o->ino, hold);

	/* the other way can still have the room: lost+found's stub needs
	 * one inode of the orphan's chunk, a holder two once */
	if (ret == -ENOSPC)
		ret = reconnect(k->fs, o->ino, !hold);
	pr_report(k, CFS_INO_CHUNK(o->ino), o->code, &(struct pctx){ .ino = o->ino }, 1, ret);
}

/* Each orphan's entry in lost+found needs a stub in the orphan's chunk.
 * The orphans of a chunk that cannot give a stub each and still keep its
 * repair reserve go into a directory of their own chunk inside lost+found
 * instead, which needs two inodes there once: the reserve (CFS_REPAIR_
 * INODES, which normal allocation leaves alone) is what makes that always
 * possible, however full the chunk.  The reserved lost+found goes first,
 * so that it goes back into the root under its own name instead of a new
 * one being made. */
void reconnect_orphans(struct fs_check *k)
{
	uint32_t n = k->fs->sb.nchunks, c;
	uint32_t *count = calloc(n, sizeof(*count));
	size_t i;

	for (i = 0; i < k->norphans; i++)
		if (k->orphans[i].ino == k->fs->sb.lpf_ino)
			reconnect_one(k, &k->orphans[i], 0);
	lpf_check(k);
	for (i = 0; count && i < k->norphans; i++)
		if (k->orphans[i].ino != k->fs->sb.lpf_ino)
			count[CFS_INO_CHUNK(k->orphans[i].ino)]++;
	/* decided once per chunk, before any stub or holder takes an inode.
	 * The slots are made now: what a chunk counts as available includes
	 * the inode clusters its free blocks could make, and in a full chunk
	 * those blocks can be too scattered for one (itable_grow), which
	 * would show only after some stubs had taken the last free slots,
	 * the holder's two among them. */
	for (c = 0; count && c < n; c++)
		count[c] = count[c] && !inodes_ensure(k->fs, c, count[c] + CFS_REPAIR_INODES);
	for (i = 0; i < k->norphans; i++)
		if (k->orphans[i].ino != k->fs->sb.lpf_ino)
			reconnect_one(k, &k->orphans[i],
				      count && count[CFS_INO_CHUNK(k->orphans[i].ino)]);
	free(count);
}

/* Every chunkfs has a /lost+found: made again if it is gone. */
void lpf_check(struct fs_check *k)
{
	cfs_ino_t lpf;
	int fix;

	if (cfs_lookup(k->fs, k->fs->sb.root_ino, "lost+found", &lpf) != -ENOENT)
		return;
	fix = pr_decide(k, PR_GLOBAL, PR_LPF_MISSING);
	pr_report(k, PR_GLOBAL, PR_LPF_MISSING, &(struct pctx){ 0 }, fix,
		  fix ? lpf_ensure(k->fs) : 0);
}

static int is_root_dir(struct inode *ip)
{
	return is_head(ip) && S_ISDIR(ip->d.mode);
}

/* A root that step A cleared named top-level directories and files in
 * other chunks, whose stubs and inodes are left there: check them all. */
int root_lost(struct cfs_fs *fs)
{
	struct inode *ip;
	int lost;

	if (inode_get(fs, fs->sb.root_ino, &ip) < 0)
		return 1;
	lost = !is_root_dir(ip);
	inode_put(fs, ip);
	return lost;
}

/* Free whatever an inode in the root's slot is, when it is not a directory
 * head: the root must be made again there. */
static int release_any(struct cfs_fs *fs, struct inode *ip)
{
	uint32_t c = CFS_INO_CHUNK(ip->ino);
	int ret;

	if (ip->d.flags & CFS_IFL_CONT)
		return cont_release(fs, ip);
	ret = file_release_all(fs, ip);
	if (ret == 0)
		ret = xattr_release(fs, ip);
	if (ret == 0)
		ret = inode_free(fs, ip);
	if (ret == 0 && (ip->d.flags & CFS_IFL_STUB))
		chunk_count(fs, c, CNT_STUBS, -1);
	return ret;
}

/* The root directory is made again (empty) when step A cleared it or its
 * slot holds something else; what it named is in the orphans by now.  The
 * finding is the root's chunk's. */
void check_root(struct fs_check *k)
{
	struct cfs_fs *fs = k->fs;
	uint32_t c = CFS_INO_CHUNK(fs->sb.root_ino);
	struct inode *ip = NULL;
	int inuse, fix, code, ret = 0;

	if (inode_get(fs, fs->sb.root_ino, &ip) < 0)
		return;   /* unreadable: step A has reported it */
	inuse = ip->d.mode && !ip->deleted;
	if (is_root_dir(ip)) {
		inode_put(fs, ip);
		return;
	}
	code = inuse ? PR_ROOT_NOT_DIR : PR_ROOT_MISSING;
	fix = pr_decide(k, c, code);
	if (fix && inuse)
		ret = release_any(fs, ip);
	inode_put(fs, ip);
	if (fix && ret == 0)
		ret = root_make(fs);
	pr_report(k, c, code, &(struct pctx){ .num = { fs->sb.root_ino } }, fix, ret);
}

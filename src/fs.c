/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Per-inode operations of the public API: attributes, data, xattrs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bdev.h"
#include "fsint.h"

/* Every entry point here works on the head inode under its lock
 * (lock order: docs/LOCKING.md). */
static int get_head(struct cfs_fs *fs, cfs_ino_t ino, struct inode **out)
{
	return inode_get_head(fs, ino, 1, out);
}

static void put_head(struct cfs_fs *fs, struct inode *ip)
{
	pthread_mutex_unlock(&ip->lock);
	inode_put(fs, ip);
}

/* What an entry point does to the locked head inode; arg carries the
 * entry point's own arguments. */
typedef int64_t (*head_fn)(struct cfs_fs *fs, struct inode *ip, void *arg);

/* Run body on the head inode ino.  A change runs inside an operation, so
 * that it fails with -EROFS on a read-only fs before the inode is looked
 * up, and a chunk cannot be marked clean under it. */
static int64_t head_call_once(struct cfs_fs *fs, cfs_ino_t ino, int change, head_fn body,
			      void *arg)
{
	struct inode *ip;
	int64_t ret;

	fence_wait(fs, ino);
	ret = change ? fs_op_begin(fs) : 0;
	if (ret < 0)
		return ret;
	ret = get_head(fs, ino, &ip);
	if (ret < 0)
		goto out;
	ret = body(fs, ip, arg);
	put_head(fs, ip);
out:
	if (change)
		fs_op_end(fs);
	return ret;
}

static int64_t head_call(struct cfs_fs *fs, cfs_ino_t ino, int change, head_fn body, void *arg)
{
	int64_t ret = head_call_once(fs, ino, change, body, arg);

	if (change && fs_space_back(fs, ret))
		ret = head_call_once(fs, ino, change, body, arg);
	return ret;
}

/* A chain that cannot be loaded (damage) leaves the head's own count. */
static uint64_t chain_blocks(struct cfs_fs *fs, struct inode *ip)
{
	int64_t n = file_blocks(fs, ip);

	return n < 0 ? ip->d.nblocks : (uint64_t)n;
}

static void fill_stat(struct cfs_fs *fs, struct inode *ip, struct cfs_stat *st)
{
	memset(st, 0, sizeof(*st));
	st->ino = ip->ino;
	st->mode = ip->d.mode;
	st->nlink = ip->d.nlink;
	st->uid = ip->d.uid;
	st->gid = ip->d.gid;
	st->rdev = ip->d.rdev;
	st->size = ip->d.size;
	st->blocks = chain_blocks(fs, ip) * (fs->bsize / 512);
	st->blksize = fs->bsize;
	st->generation = ip->d.generation;
	st->atime.tv_sec = ip->d.atime;
	st->atime.tv_nsec = ip->d.atime_ns;
	st->mtime.tv_sec = ip->d.mtime;
	st->mtime.tv_nsec = ip->d.mtime_ns;
	st->ctime.tv_sec = ip->d.ctime;
	st->ctime.tv_nsec = ip->d.ctime_ns;
	st->crtime.tv_sec = ip->d.crtime;
	st->crtime.tv_nsec = ip->d.crtime_ns;
}

static int64_t getattr_body(struct cfs_fs *fs, struct inode *ip, void *st)
{
	fill_stat(fs, ip, st);
	return 0;
}

int cfs_getattr(struct cfs_fs *fs, cfs_ino_t ino, struct cfs_stat *st)
{
	return (int)head_call(fs, ino, 0, getattr_body, st);
}

static void set_time(int64_t *s, uint32_t *ns, const struct timespec *ts)
{
	*s = ts->tv_sec;
	*ns = (uint32_t)ts->tv_nsec;
}

struct setattr_args {
	const struct cfs_setattr *a;
	struct cfs_stat *st;            /* filled after success, unless NULL */
};

static int64_t setattr_body(struct cfs_fs *fs, struct inode *ip, void *arg)
{
	const struct setattr_args *x = arg;
	const struct cfs_setattr *a = x->a;
	uint32_t v = a->valid;
	int ret;

	if (v & CFS_SET_SIZE) {
		if (S_ISDIR(ip->d.mode))
			return -EISDIR;
		if (!S_ISREG(ip->d.mode))
			return -EINVAL;
		ret = file_truncate(fs, ip, a->size);
		if (ret < 0)
			return ret;
		inode_touch(ip, 0, 1, 0);
	}
	if (v & CFS_SET_MODE) {
		ip->d.mode = (uint16_t)((ip->d.mode & S_IFMT) | (a->mode & 07777));
		ret = acl_chmod(fs, ip);
		if (ret < 0)
			return ret;
	}
	if (v & CFS_SET_UID)
		ip->d.uid = a->uid;
	if (v & CFS_SET_GID)
		ip->d.gid = a->gid;
	/* chown drops setuid, and setgid when it means "group executable",
	 * exactly as the VFS does for ext4 */
	if ((v & (CFS_SET_UID | CFS_SET_GID)) && !(v & CFS_SET_MODE) &&
	    !S_ISDIR(ip->d.mode)) {
		ip->d.mode &= (uint16_t)~S_ISUID;
		if (ip->d.mode & S_IXGRP)
			ip->d.mode &= (uint16_t)~S_ISGID;
	}
	if (v & CFS_SET_ATIME_NOW)
		inode_touch(ip, 1, 0, 0);
	else if (v & CFS_SET_ATIME)
		set_time(&ip->d.atime, &ip->d.atime_ns, &a->atime);
	if (v & CFS_SET_MTIME_NOW)
		inode_touch(ip, 0, 1, 0);
	else if (v & CFS_SET_MTIME)
		set_time(&ip->d.mtime, &ip->d.mtime_ns, &a->mtime);
	if (v & CFS_SET_CTIME)
		set_time(&ip->d.ctime, &ip->d.ctime_ns, &a->ctime);
	else if (!(v & CFS_SET_KEEP_CTIME))
		inode_touch(ip, 0, 0, 1);
	ret = inode_write(fs, ip);
	if (ret == 0 && x->st)
		fill_stat(fs, ip, x->st);
	return ret;
}

int cfs_setattr(struct cfs_fs *fs, cfs_ino_t ino, const struct cfs_setattr *a,
		struct cfs_stat *st)
{
	return (int)head_call(fs, ino, 1, setattr_body, &(struct setattr_args){ a, st });
}

/* A buffer an entry point reads into: read, readlink, xattrs. */
struct buf_args {
	void *buf;
	size_t size;
	uint64_t off;
	const char *name;
};

static int64_t readlink_body(struct cfs_fs *fs, struct inode *ip, void *arg)
{
	const struct buf_args *x = arg;
	ssize_t ret;

	if (!S_ISLNK(ip->d.mode))
		return -EINVAL;
	ret = file_read(fs, ip, x->buf, x->size, 0);
	if (ret >= 0 && ip->d.size <= x->size && (size_t)ret != ip->d.size)
		return chunk_corrupt(fs, CFS_INO_CHUNK(ip->ino), ip->ino, 0,
				     "symlink shorter than its size");
	return ret < 0 ? ret : (ssize_t)ip->d.size;
}

ssize_t cfs_readlink(struct cfs_fs *fs, cfs_ino_t ino, char *buf, size_t size)
{
	return (ssize_t)head_call(fs, ino, 0, readlink_body,
				  &(struct buf_args){ .buf = buf, .size = size });
}

int cfs_inode_get(struct cfs_fs *fs, cfs_ino_t ino)
{
	struct inode *ip;
	int ret;

	fence_wait(fs, ino);
	ret = get_head(fs, ino, &ip);
	if (ret < 0)
		return ret;
	ip->open++;
	pthread_mutex_unlock(&ip->lock);
	return 0;   /* the reference is kept until cfs_inode_put */
}

int cfs_inode_put(struct cfs_fs *fs, cfs_ino_t ino)
{
	struct inode *ip;
	int ret = inode_get(fs, ino, &ip), drop = 0, op;

	if (ret < 0)
		return ret;
	/* op_lock before the inode lock (docs/LOCKING.md) */
	op = !fs->rdonly && fs_op_begin(fs) == 0;
	pthread_mutex_lock(&ip->lock);
	if (ip->open > 0) {
		ip->open--;
		drop = 1;
		if (op)
			ret = inode_release(fs, ip);
	}
	pthread_mutex_unlock(&ip->lock);
	if (op)
		fs_op_end(fs);
	if (drop)
		inode_put(fs, ip);
	inode_put(fs, ip);
	return ret;
}

static int64_t read_body(struct cfs_fs *fs, struct inode *ip, void *arg)
{
	const struct buf_args *x = arg;

	if (S_ISDIR(ip->d.mode))
		return -EISDIR;
	if (!S_ISREG(ip->d.mode) && !S_ISLNK(ip->d.mode))
		return -EINVAL;
	return file_read(fs, ip, x->buf, x->size, x->off);
}

ssize_t cfs_read(struct cfs_fs *fs, cfs_ino_t ino, void *buf, size_t size, uint64_t off)
{
	return (ssize_t)head_call(fs, ino, 0, read_body,
				  &(struct buf_args){ .buf = buf, .size = size, .off = off });
}

static ssize_t write_once(struct cfs_fs *fs, cfs_ino_t ino, const void *buf, size_t size,
			  uint64_t off)
{
	struct inode *ip;
	ssize_t ret;

	fence_wait(fs, ino);
	ret = fs_op_begin(fs);
	if (ret < 0)
		return ret;
	ret = get_head(fs, ino, &ip);
	if (ret < 0)
		goto out;
	if (S_ISDIR(ip->d.mode))
		ret = -EISDIR;
	else if (!S_ISREG(ip->d.mode))
		ret = -EINVAL;
	else if (size == 0)
		ret = 0;
	else {
		ret = file_write(fs, ip, buf, size, off);
		if (ret > 0) {
			inode_touch(ip, 0, 1, 1);
			int r = inode_write(fs, ip);

			if (r < 0)
				ret = r;
		}
	}
	put_head(fs, ip);
out:
	fs_op_end(fs);
	return ret;
}

/* A write cut short (file_write keeps what it wrote and drops the error)
 * is taken as -ENOSPC: the rest goes once more after empty inode clusters
 * have given their blocks back. */
ssize_t cfs_write(struct cfs_fs *fs, cfs_ino_t ino, const void *buf, size_t size,
		  uint64_t off)
{
	ssize_t ret = write_once(fs, ino, buf, size, off), more;
	size_t done = ret > 0 ? (size_t)ret : 0;

	if (ret == -ENOSPC || (ret >= 0 && done < size)) {
		if (fs_space_back(fs, -ENOSPC)) {
			more = write_once(fs, ino, (const uint8_t *)buf + done, size - done,
					  off + done);
			ret = more >= 0 ? (ssize_t)(done + (size_t)more) : done ? ret : more;
		}
	}
	return ret;
}

/* The block runs of a file's data, merged where they touch; past
 * SYNC_RUNS_MAX of them, a whole sync is as cheap. */
#define SYNC_RUNS_MAX 1024

struct sync_runs {
	struct cfs_fs *fs;
	struct inode *ip;
	struct cfs_brange *r;
	size_t n;
};

static int sync_run_add(void *ctx, const struct extent *e, int is_node, uint32_t node_rel)
{
	struct sync_runs *s = ctx;
	uint64_t abs;

	(void)node_rel;
	if (is_node || !e || ext_sane(s->fs, e) < 0)
		return 0;
	abs = chunk_base(s->fs, CFS_INO_CHUNK(s->ip->ino)) + e->pblk;
	if (s->n && s->r[s->n - 1].off + s->r[s->n - 1].len == abs) {
		s->r[s->n - 1].len += e->len;
		return 0;
	}
	if (s->n == SYNC_RUNS_MAX)
		return -E2BIG;
	s->r[s->n++] = (struct cfs_brange){ abs, e->len };
	return 0;
}

/* fsync pays for its own file: its data, and the metadata (all of it,
 * few blocks beside the data), not the dirty data of every other file
 * (fs_sync_ranges).  A directory's, or a file of too many runs: a sync. */
int cfs_fsync(struct cfs_fs *fs, cfs_ino_t ino, int datasync)
{
	struct sync_runs s = { .fs = fs };
	struct inode *ip;
	int ret, i;

	fence_wait(fs, ino);
	ret = get_head(fs, ino, &ip);
	(void)datasync;
	if (ret < 0)
		return ret;
	if (fs->rdonly) {
		put_head(fs, ip);
		return 0;
	}
	s.r = S_ISREG(ip->d.mode) ? malloc(SYNC_RUNS_MAX * sizeof(*s.r)) : NULL;
	ret = s.r ? inode_chain_load(fs, ip) : -E2BIG;
	for (i = 0; ret == 0 && i < inode_chain_len(ip); i++) {
		s.ip = inode_chain_at(ip, i);
		ret = ext_walk(fs, s.ip, sync_run_add, &s, NULL);
	}
	put_head(fs, ip);
	ret = ret < 0 ? cfs_sync(fs) : fs_sync_ranges(fs, s.r, s.n);
	free(s.r);
	return ret;
}

/* Allocate blocks for every hole in [off, off+len), written with zeroes
 * before a map names them (file_alloc_zeroed): a crash leaves each block
 * of the range its old bytes or zeroes, never a freed block's former
 * contents (FORMAT.md 13.3). */
static int falloc_range(struct cfs_fs *fs, struct inode *ip, uint64_t off, uint64_t len)
{
	uint64_t lblk = off / fs->bsize, end = (off + len + fs->bsize - 1) / fs->bsize;
	int ret;

	while (lblk < end) {
		uint64_t abs;
		uint32_t run;

		ret = file_map(fs, ip, lblk, &abs, &run);
		if (ret < 0)
			return ret;
		if (ret == 0) {
			/* only the hole: the blocks after it are mapped already */
			uint64_t want = end - lblk < run ? end - lblk : run;

			ret = file_alloc_zeroed(fs, ip, lblk,
						want > 65536 ? 65536 : (uint32_t)want, &abs, &run);
			if (ret < 0)
				return ret;
		}
		lblk += run ? run : 1;
	}
	return 0;
}

/* Zero bytes [from, to) of logical block lblk if it is mapped; a hole
 * already reads as zeroes and must not cost a block (ext4 does the same). */
static int zero_in_block(struct cfs_fs *fs, struct inode *ip, uint64_t lblk, uint32_t from,
			 uint32_t to)
{
	uint64_t abs;
	uint32_t run;
	struct buf *b;
	int ret = file_map(fs, ip, lblk, &abs, &run);

	if (ret <= 0)
		return ret;
	ret = cache_get(&fs->cache, abs, 0, &b);
	if (ret < 0)
		return ret;
	memset(b->data + from, 0, to - from);
	ret = buf_dirty_data(&fs->cache, b);
	buf_put(&fs->cache, b);
	return ret;
}

static int punch_range(struct cfs_fs *fs, struct inode *ip, uint64_t off, uint64_t len)
{
	uint64_t end = off + len, first, last;
	uint32_t bs = fs->bsize;
	int ret = 0;

	if (end > ip->d.size)
		end = ip->d.size;   /* punching never changes the size */
	if (off >= end)
		return 0;
	if (ip->d.flags & CFS_IFL_INLINE) {
		memset(ip->var + off, 0, end - off);
		return inode_write(fs, ip);
	}
	first = (off + bs - 1) / bs;
	last = end / bs;
	/* partial blocks at either edge are zeroed in place */
	if (off / bs == end / bs)
		return zero_in_block(fs, ip, off / bs, (uint32_t)(off % bs), (uint32_t)(end % bs));
	if (off % bs)
		ret = zero_in_block(fs, ip, off / bs, (uint32_t)(off % bs), bs);
	if (ret == 0 && end % bs)
		ret = zero_in_block(fs, ip, last, 0, (uint32_t)(end % bs));
	if (ret == 0 && last > first)
		ret = file_punch(fs, ip, first, last);
	return ret;
}

/* Blocks of zeroes one device write of zero_range writes: 256 KiB. */
#define ZERO_WINDOW(fs) ((256u << 10) / (fs)->bsize ? (256u << 10) / (fs)->bsize : 1)

/* Zeroes (ZERO_RANGE), every block of [from, to) allocated: a mapped
 * block is overwritten in place, a hole gets blocks written with zeroes
 * and flushed before a map names them (file_alloc_zeroed): a crash leaves
 * each block with its old bytes or zeroes, never a block's former
 * contents (FORMAT.md 13.3).  Partial blocks at the edges are zeroed
 * from..to only. */
static int zero_blocks(struct cfs_fs *fs, struct inode *ip, uint64_t from, uint64_t to,
		       uint32_t zb, uint32_t ze, const uint8_t *zero)
{
	uint64_t lblk = from, abs;
	uint32_t run;
	int m, ret = 0;

	while (ret == 0 && lblk < to) {
		m = file_map(fs, ip, lblk, &abs, &run);
		if (m < 0)
			return m;
		if (run > to - lblk)
			run = (uint32_t)(to - lblk);
		if (run > ZERO_WINDOW(fs))
			run = ZERO_WINDOW(fs);
		if (m == 1 && (zb || ze < fs->bsize))
			ret = zero_in_block(fs, ip, lblk, zb, ze);
		else if (m == 1)
			ret = cache_write_direct(&fs->cache, abs, run, zero);
		else
			ret = file_alloc_zeroed(fs, ip, lblk, run, &abs, &run);
		lblk += run;
	}
	return ret;
}

static int zero_range(struct cfs_fs *fs, struct inode *ip, uint64_t off, uint64_t len)
{
	uint64_t bs = fs->bsize, end = off + len, first = off / bs, last = (end - 1) / bs;
	uint8_t *zero = calloc(ZERO_WINDOW(fs), bs);
	int ret;

	if (!zero)
		return -ENOMEM;
	if (first == last) {
		ret = zero_blocks(fs, ip, first, first + 1, (uint32_t)(off % bs),
				  (uint32_t)(end - first * bs), zero);
	} else {
		ret = zero_blocks(fs, ip, first, first + 1, (uint32_t)(off % bs), (uint32_t)bs,
				  zero);
		if (ret == 0)
			ret = zero_blocks(fs, ip, first + 1, last, 0, (uint32_t)bs, zero);
		if (ret == 0)
			ret = zero_blocks(fs, ip, last, last + 1, 0,
					  (uint32_t)(end - last * bs), zero);
	}
	free(zero);
	return ret;
}

struct falloc_args {
	int mode;
	uint64_t off, len;
};

/* Collapse or insert range, with ext4's rules and errnos (ext4_collapse_range,
 * ext4_insert_range): whole blocks only, a collapse ends before the end
 * of the file, an insert starts before it. */
static int shift_range(struct cfs_fs *fs, struct inode *ip, int mode, uint64_t off,
		       uint64_t len)
{
	uint64_t bs = fs->bsize, size = ip->d.size, end;
	int insert = !!(mode & CFS_FALLOC_INSERT_RANGE), ret = 0;

	if ((off | len) % bs)
		return -EINVAL;
	if (!insert && off + len >= size)
		return -EINVAL;
	if (insert && len > (uint64_t)INT64_MAX - size)
		return -EFBIG;
	if (insert && off >= size)
		return -EINVAL;
	if (ip->d.flags & CFS_IFL_INLINE)
		ret = inline_to_extents(fs, ip);
	/* blocks kept past the end (KEEP_SIZE) move too, as in ext4: none
	 * may land past the last block a file can have */
	if (ret == 0 && insert)
		ret = file_end_below(fs, ip, UINT64_MAX, &end);
	if (ret == 0 && insert && end + len / bs > (uint64_t)INT64_MAX / bs + 1)
		ret = -EFBIG;
	if (ret == 0)
		ret = file_shift(fs, ip, off / bs, len / bs, insert);
	if (ret == 0)
		ip->d.size = insert ? size + len : size - len;
	return ret;
}

static int64_t falloc_body(struct cfs_fs *fs, struct inode *ip, void *arg)
{
	const struct falloc_args *x = arg;
	int mode = x->mode, ret = 0;
	uint64_t off = x->off, len = x->len;

	if (S_ISDIR(ip->d.mode))
		ret = -EISDIR;
	else if (!S_ISREG(ip->d.mode))
		ret = -ENODEV;
	else if (mode & (CFS_FALLOC_COLLAPSE_RANGE | CFS_FALLOC_INSERT_RANGE))
		ret = shift_range(fs, ip, mode, off, len);
	else if (mode & CFS_FALLOC_PUNCH_HOLE)
		ret = punch_range(fs, ip, off, len);
	else if ((ip->d.flags & CFS_IFL_INLINE) && off + len <= file_inline_max(fs, ip)) {
		if ((mode & CFS_FALLOC_ZERO_RANGE) && off < ip->d.size)
			memset(ip->var + off, 0,
			       (off + len < ip->d.size ? off + len : ip->d.size) - off);
	} else {
		if (ip->d.flags & CFS_IFL_INLINE)
			ret = inline_to_extents(fs, ip);
		if (ret == 0 && (mode & CFS_FALLOC_ZERO_RANGE))
			ret = zero_range(fs, ip, off, len);
		else if (ret == 0)
			ret = falloc_range(fs, ip, off, len);
	}
	if (ret == 0 && !(mode & (CFS_FALLOC_KEEP_SIZE | CFS_FALLOC_COLLAPSE_RANGE |
				  CFS_FALLOC_INSERT_RANGE)) && off + len > ip->d.size)
		ip->d.size = off + len;
	if (ret == 0) {
		inode_touch(ip, 0, 1, 1);
		ret = inode_write(fs, ip);
	}
	return ret;
}

#define FALLOC_MODES (CFS_FALLOC_KEEP_SIZE | CFS_FALLOC_PUNCH_HOLE | CFS_FALLOC_ZERO_RANGE | \
		      CFS_FALLOC_COLLAPSE_RANGE | CFS_FALLOC_INSERT_RANGE)

/* The checks and their order are vfs_fallocate's, so that the library
 * and the mount answer alike. */
int cfs_fallocate(struct cfs_fs *fs, cfs_ino_t ino, int mode, uint64_t off, uint64_t len)
{
	int shift = mode & (CFS_FALLOC_COLLAPSE_RANGE | CFS_FALLOC_INSERT_RANGE);

	if (len == 0 || off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX)
		return -EINVAL;
	/* a mode this library does not know: the caller can tell "not
	 * supported" from a bad argument */
	if (mode & ~FALLOC_MODES)
		return -EOPNOTSUPP;
	if ((mode & CFS_FALLOC_PUNCH_HOLE) && (mode & CFS_FALLOC_ZERO_RANGE))
		return -EOPNOTSUPP;
	if ((mode & CFS_FALLOC_PUNCH_HOLE) && !(mode & CFS_FALLOC_KEEP_SIZE))
		return -EOPNOTSUPP;
	if (shift && mode != CFS_FALLOC_COLLAPSE_RANGE && mode != CFS_FALLOC_INSERT_RANGE)
		return -EINVAL;
	if (off + len > (uint64_t)INT64_MAX)
		return -EFBIG;
	/* a shift that ran out of space half-way has moved blocks: run again
	 * it would move them twice, so it is not retried (head_call) */
	if (shift)
		return (int)head_call_once(fs, ino, 1, falloc_body,
					   &(struct falloc_args){ mode, off, len });
	return (int)head_call(fs, ino, 1, falloc_body, &(struct falloc_args){ mode, off, len });
}

struct seek_args {
	int64_t off;
	int whence;
};

static int64_t seek_body(struct cfs_fs *fs, struct inode *ip, void *arg)
{
	const struct seek_args *x = arg;
	int64_t off = x->off;
	int whence = x->whence;
	uint64_t lblk, size = ip->d.size;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (off < 0 || (uint64_t)off >= size)
		return -ENXIO;
	if (ip->d.flags & CFS_IFL_INLINE)
		return whence == SEEK_HOLE ? (int64_t)size : off;
	for (lblk = (uint64_t)off / fs->bsize; lblk * fs->bsize < size;) {
		uint64_t abs;
		uint32_t run;
		int m = file_map(fs, ip, lblk, &abs, &run);

		if (m < 0)
			return m;
		if ((m == 1) == (whence == SEEK_DATA)) {
			uint64_t at = lblk * fs->bsize;
			int64_t ret = at < (uint64_t)off ? off : (int64_t)at;

			return (uint64_t)ret > size ? (int64_t)size : ret;
		}
		lblk += run ? run : 1;
	}
	return whence == SEEK_DATA ? -ENXIO : (int64_t)size;
}

int64_t cfs_lseek(struct cfs_fs *fs, cfs_ino_t ino, int64_t off, int whence)
{
	return head_call(fs, ino, 0, seek_body, &(struct seek_args){ off, whence });
}

/* ---- xattrs ---- */

struct xattr_set_args {
	const char *name;
	const void *value;              /* NULL with remove */
	size_t size;
	int flags;
	int remove;
};

/* Setting and removing change the inode alike: ctime, and it is written. */
static int64_t xattr_change_body(struct cfs_fs *fs, struct inode *ip, void *arg)
{
	const struct xattr_set_args *x = arg;
	int acl = acl_type(x->name), ret;

	if (acl)
		ret = acl_set(fs, ip, acl, x->remove ? NULL : x->value, x->size, x->flags);
	else if (x->remove)
		ret = xattr_remove(fs, ip, x->name);
	else
		ret = xattr_set(fs, ip, x->name, x->value, x->size,
				x->flags & ~CFS_XATTR_ACL_KILL_SGID);

	if (ret == 0) {
		inode_touch(ip, 0, 0, 1);
		ret = inode_write(fs, ip);
	}
	return ret;
}

int cfs_setxattr(struct cfs_fs *fs, cfs_ino_t ino, const char *name, const void *value,
		 size_t size, int flags)
{
	return (int)head_call(fs, ino, 1, xattr_change_body,
			      &(struct xattr_set_args){ name, value, size, flags, 0 });
}

int cfs_removexattr(struct cfs_fs *fs, cfs_ino_t ino, const char *name)
{
	return (int)head_call(fs, ino, 1, xattr_change_body,
			      &(struct xattr_set_args){ .name = name, .remove = 1 });
}

static int64_t getxattr_body(struct cfs_fs *fs, struct inode *ip, void *arg)
{
	const struct buf_args *x = arg;
	int acl = acl_type(x->name);

	if (acl)
		return acl_get(fs, ip, acl, x->buf, x->size);
	return xattr_get(fs, ip, x->name, x->buf, x->size);
}

ssize_t cfs_getxattr(struct cfs_fs *fs, cfs_ino_t ino, const char *name, void *buf,
		     size_t size)
{
	return (ssize_t)head_call(fs, ino, 0, getxattr_body,
				  &(struct buf_args){ .buf = buf, .size = size, .name = name });
}

static int64_t listxattr_body(struct cfs_fs *fs, struct inode *ip, void *arg)
{
	const struct buf_args *x = arg;

	return xattr_list(fs, ip, x->buf, x->size);
}

ssize_t cfs_listxattr(struct cfs_fs *fs, cfs_ino_t ino, char *buf, size_t size)
{
	return (ssize_t)head_call(fs, ino, 0, listxattr_body,
				  &(struct buf_args){ .buf = buf, .size = size });
}

struct chunks_args {
	uint32_t *chunks;
	int max;
};

static int64_t file_chunks_body(struct cfs_fs *fs, struct inode *ip, void *arg)
{
	const struct chunks_args *x = arg;

	return file_chunks(fs, ip, x->chunks, x->max);
}

int cfs_file_chunks(struct cfs_fs *fs, cfs_ino_t ino, uint32_t *chunks, int max)
{
	return (int)head_call(fs, ino, 0, file_chunks_body, &(struct chunks_args){ chunks, max });
}

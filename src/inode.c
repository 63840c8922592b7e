/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* In-memory inodes: a reference-counted cache over the inode tables. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsint.h"

/* The block and offset of an inode: a slot of the inode table, or of an
 * inode cluster (FORMAT.md 10.1, 10.4).  UINT64_MAX for a cluster that
 * does not exist; callers ask inode_slot_present first. */
uint64_t inode_location(struct cfs_fs *fs, cfs_ino_t ino, uint32_t *off)
{
	uint32_t l = CFS_INO_LOCAL(ino) - 1, c = CFS_INO_CHUNK(ino);
	uint64_t blk = UINT64_MAX;

	if (l >= fs->sb.inodes_per_chunk) {
		pthread_mutex_lock(&fs->chunks[c].lock);
		if (icl_locate(fs, c, l + 1, &blk, off) <= 0)
			blk = UINT64_MAX;
		pthread_mutex_unlock(&fs->chunks[c].lock);
		return blk;
	}
	*off = (l % fs->ipb) * fs->isz;
	return chunk_base(fs, c) + 1 + fs->sb.bbm_blocks + fs->sb.ibm_blocks + l / fs->ipb;
}

/* 1 if the inode's slot was ever written: below the inode table's
 * watermark, or in a cluster that exists; else it reads as a free inode. */
int inode_slot_present(struct cfs_fs *fs, cfs_ino_t ino)
{
	struct chunk *ch = &fs->chunks[CFS_INO_CHUNK(ino)];
	uint32_t l = CFS_INO_LOCAL(ino), off;
	uint64_t blk;
	int r;

	pthread_mutex_lock(&ch->lock);
	if (l > fs->sb.inodes_per_chunk)
		r = icl_locate(fs, CFS_INO_CHUNK(ino), l, &blk, &off);
	else
		r = (l - 1) / fs->ipb < ch->hdr.itable_init;
	pthread_mutex_unlock(&ch->lock);
	return r;
}

static struct inode *inode_new(struct cfs_fs *fs, cfs_ino_t ino)
{
	/* one allocation: a check loads and drops inodes by the thousand */
	struct inode *ip = calloc(1, sizeof(*ip) + fs->varsz);

	if (!ip)
		return NULL;
	ip->var = (uint8_t *)(ip + 1);
	ip->ino = ino;
	ip->ref = 1;
	pthread_mutex_init(&ip->lock, NULL);
	return ip;
}

void inode_destroy(struct inode *ip)
{
	pthread_mutex_destroy(&ip->lock);
	free(ip->chain);
	free(ip);
}

const char *dinode_size_bad(const struct cfs_fs *fs, const struct cfs_dinode *d)
{
	if (d->xattr_len > fs->varsz || d->size > (uint64_t)INT64_MAX ||
	    ((d->flags & CFS_IFL_INLINE) && d->size > fs->varsz - d->xattr_len))
		return "impossible inode size";
	/* readlink(2) callers, the kernel's and the tools', hold PATH_MAX */
	if (S_ISLNK(d->mode) && d->size > CFS_SYMLINK_MAX)
		return "symlink target longer than PATH_MAX";
	return NULL;
}

/* Read and verify the on-disk inode.  A slot past the table's watermark
 * was never written and reads as a free (zero) inode. */
static int inode_read(struct cfs_fs *fs, struct inode *ip)
{
	const char *why;
	struct buf *b;
	uint32_t off;
	uint64_t blk;
	int ret = inode_slot_present(fs, ip->ino);

	if (ret <= 0)
		return ret;
	blk = inode_location(fs, ip->ino, &off);
	ret = cache_get(&fs->cache, blk, 0, &b);
	if (ret < 0)
		return ret;
	if (!cfs_dinode_csum_ok(b->data + off, fs->isz, fs->seed, ip->ino)) {
		ret = -EBADMSG;
		chunk_error(fs, CFS_INO_CHUNK(ip->ino), ip->ino, blk, ret,
			    "inode checksum mismatch");
		goto out;
	}
	cfs_dinode_decode(b->data + off, &ip->d);
	memcpy(ip->var, b->data + off + CFS_INODE_FIXED, fs->varsz);
	why = dinode_size_bad(fs, &ip->d);
	if (why) {
		ret = -EUCLEAN;
		chunk_error(fs, CFS_INO_CHUNK(ip->ino), ip->ino, blk, ret, why);
	}
out:
	buf_put(&fs->cache, b);
	return ret;
}

int inode_reload(struct cfs_fs *fs, struct inode *ip)
{
	return inode_read(fs, ip);
}

/* Fibonacci hashing: the chunk number in the top bits and the local
 * number below both reach the bucket (ino % buckets left the chunk out:
 * local number l of every chunk shared one list) */
static size_t icache_slot(const struct cfs_fs *fs, cfs_ino_t ino)
{
	return (uint32_t)((uint32_t)ino * 0x9E3779B1u) >> (32 - fs->icache_bits);
}

int icache_init(struct cfs_fs *fs)
{
	fs->icache_bits = ICACHE_BITS;
	fs->icache = calloc((size_t)1 << ICACHE_BITS, sizeof(*fs->icache));
	return fs->icache ? 0 : -ENOMEM;
}

size_t icache_buckets(const struct cfs_fs *fs)
{
	return (size_t)1 << fs->icache_bits;
}

static struct inode *icache_find(struct cfs_fs *fs, cfs_ino_t ino)
{
	struct inode *ip;

	for (ip = fs->icache[icache_slot(fs, ino)]; ip; ip = ip->hnext)
		if (ip->ino == ino)
			return ip;
	return NULL;
}

/* Twice the buckets, every inode moved (under icache_lock).  Without the
 * memory the lists just grow longer. */
static void icache_grow(struct cfs_fs *fs)
{
	size_t i, n = icache_buckets(fs);
	struct inode **old = fs->icache, **t = calloc(2 * n, sizeof(*t)), *ip;

	if (!t)
		return;
	fs->icache = t;
	fs->icache_bits++;
	for (i = 0; i < n; i++)
		while ((ip = old[i])) {
			size_t k = icache_slot(fs, ip->ino);

			old[i] = ip->hnext;
			ip->hnext = t[k];
			t[k] = ip;
		}
	free(old);
}

static void icache_hash(struct cfs_fs *fs, struct inode *ip)
{
	size_t k;

	if (++fs->icache_count > 2 * icache_buckets(fs) && fs->icache_bits < ICACHE_BITS_MAX)
		icache_grow(fs);
	k = icache_slot(fs, ip->ino);
	ip->hnext = fs->icache[k];
	fs->icache[k] = ip;
}

static void icache_unhash(struct cfs_fs *fs, struct inode *ip)
{
	struct inode **p;

	for (p = &fs->icache[icache_slot(fs, ip->ino)]; *p; p = &(*p)->hnext)
		if (*p == ip) {
			*p = ip->hnext;
			fs->icache_count--;
			return;
		}
}

void inode_forget(struct cfs_fs *fs, struct inode *ip)
{
	pthread_mutex_lock(&fs->icache_lock);
	icache_unhash(fs, ip);
	pthread_mutex_unlock(&fs->icache_lock);
}

int inode_live_orphan(struct cfs_fs *view, cfs_ino_t ino)
{
	struct cfs_fs *live = view->live;
	struct inode *ip;
	int open = 0;

	if (!live)
		return 0;
	pthread_mutex_lock(&live->icache_lock);
	ip = icache_find(live, ino);
	open = ip && !ip->loading && ip->open > 0;
	pthread_mutex_unlock(&live->icache_lock);
	return open;
}

/* One thread loads an inode; the others wait for it, so nobody can read
 * the table while another thread's newer copy is already in memory. */
int inode_get(struct cfs_fs *fs, cfs_ino_t ino, struct inode **out)
{
	struct inode *ip;
	int ret;

	if (!ino_valid(fs, ino))
		return -EUCLEAN;
	pthread_mutex_lock(&fs->icache_lock);
	while ((ip = icache_find(fs, ino)) && ip->loading)
		pthread_cond_wait(&fs->icache_cond, &fs->icache_lock);
	if (ip) {
		ip->ref++;
		pthread_mutex_unlock(&fs->icache_lock);
		*out = ip;
		return 0;
	}
	ip = inode_new(fs, ino);
	if (!ip) {
		pthread_mutex_unlock(&fs->icache_lock);
		return -ENOMEM;
	}
	ip->loading = 1;
	icache_hash(fs, ip);
	pthread_mutex_unlock(&fs->icache_lock);
	ret = inode_read(fs, ip);
	pthread_mutex_lock(&fs->icache_lock);
	ip->loading = 0;
	if (ret < 0)
		icache_unhash(fs, ip);
	pthread_cond_broadcast(&fs->icache_cond);
	pthread_mutex_unlock(&fs->icache_lock);
	if (ret < 0) {
		inode_destroy(ip);
		return ret;
	}
	*out = ip;
	return 0;
}

/* A head inode in use; a continuation, a stub or a free slot behind the
 * number is a stale handle (-ENOENT).  With lock set it is returned
 * locked, and the check is made under the lock so that an unlink that
 * freed it meanwhile is seen. */
int inode_get_head(struct cfs_fs *fs, cfs_ino_t ino, int lock, struct inode **out)
{
	struct inode *ip;
	int ret;

	if (!ino_valid(fs, ino))
		return -ENOENT;
	if (__atomic_load_n(&fs->chunks[CFS_INO_CHUNK(ino)].failed, __ATOMIC_RELAXED))
		return -EUCLEAN;
	ret = inode_get(fs, ino, &ip);
	if (ret < 0)
		return ret;
	if (lock)
		pthread_mutex_lock(&ip->lock);
	if (!ip->d.mode || ip->deleted || (ip->d.flags & (CFS_IFL_CONT | CFS_IFL_STUB))) {
		if (lock)
			pthread_mutex_unlock(&ip->lock);
		inode_put(fs, ip);
		return -ENOENT;
	}
	*out = ip;
	return 0;
}

void inode_put(struct cfs_fs *fs, struct inode *ip)
{
	int gone = 0;

	if (!ip)
		return;
	pthread_mutex_lock(&fs->icache_lock);
	if (--ip->ref == 0) {
		icache_unhash(fs, ip);
		gone = 1;
	}
	pthread_mutex_unlock(&fs->icache_lock);
	if (gone) {
		inode_chain_release(fs, ip);
		inode_destroy(ip);
	}
}

/* ---- the continuation chain of a head inode ----
 * Loaded on first use and held (one reference per continuation) until the
 * head leaves memory; head->chain set means loaded, even when empty. */

#define CHAIN_MAX 65536

void inode_chain_release(struct cfs_fs *fs, struct inode *head)
{
	int i;

	for (i = 0; i < head->nchain; i++)
		inode_put(fs, head->chain[i]);
	free(head->chain);
	head->chain = NULL;
	head->nchain = 0;
}

int inode_chain_add(struct inode *head, struct inode *ci)
{
	struct inode **n;

	if (head->nchain >= CHAIN_MAX)
		return -EUCLEAN;
	n = realloc(head->chain, sizeof(*n) * (size_t)(head->nchain + 1));
	if (!n)
		return -ENOMEM;
	head->chain = n;
	head->chain[head->nchain++] = ci;
	return 0;
}

void inode_chain_drop(struct cfs_fs *fs, struct inode *head, int i)
{
	struct inode *ci = head->chain[i - 1];

	memmove(&head->chain[i - 1], &head->chain[i],
		sizeof(*head->chain) * (size_t)(head->nchain - i));
	head->nchain--;
	inode_put(fs, ci);
}

/* Load the continuation tree breadth-first, checking every forward
 * pointer against the continuation's head and back pointers. */
int inode_chain_load(struct cfs_fs *fs, struct inode *head)
{
	int i, s, ret;

	if (head->chain || (!head->d.cont[0] && !head->d.cont[1] &&
			    !head->d.cont[2] && !head->d.cont[3]))
		return 0;
	head->chain = malloc(sizeof(*head->chain));
	if (!head->chain)
		return -ENOMEM;
	for (i = 0; i < inode_chain_len(head); i++) {
		struct inode *p = inode_chain_at(head, i);

		for (s = 0; s < CFS_NCONT; s++) {
			struct inode *ci;

			if (!p->d.cont[s])
				continue;
			ret = inode_get(fs, p->d.cont[s], &ci);
			if (ret < 0)
				goto fail;
			if (!(ci->d.flags & CFS_IFL_CONT) || ci->d.head != head->ino ||
			    ci->d.back != p->ino || ci == head) {
				inode_put(fs, ci);
				ret = -EUCLEAN;
				/* the check of p's chunk verifies both ends */
				chunk_error(fs, CFS_INO_CHUNK(p->ino), p->ino, 0, ret,
					    "continuation pointers disagree");
				goto fail;
			}
			ret = inode_chain_add(head, ci);
			if (ret < 0) {
				inode_put(fs, ci);
				if (ret == -EUCLEAN)
					chunk_error(fs, CFS_INO_CHUNK(head->ino), head->ino, 0,
						    ret, "too many continuations");
				goto fail;
			}
		}
	}
	return 0;
fail:
	inode_chain_release(fs, head);
	return ret;
}

int inode_write(struct cfs_fs *fs, struct inode *ip)
{
	struct buf *b;
	uint32_t off;
	uint64_t blk = inode_location(fs, ip->ino, &off);
	int ret;

	if (fs->rdonly)
		return -EROFS;
	if (blk == UINT64_MAX)
		return -EUCLEAN;   /* no cluster holds it */
	ret = cache_get(&fs->cache, blk, 0, &b);
	if (ret < 0)
		return ret;
	/* contents first, then the dirty bit: a write-back running in
	 * between must not clear the bit of a change it did not write */
	cfs_dinode_encode(&ip->d, b->data + off);
	memcpy(b->data + off + CFS_INODE_FIXED, ip->var, fs->varsz);
	cfs_dinode_csum_set(b->data + off, fs->isz, fs->seed, ip->ino);
	ret = buf_dirty(&fs->cache, b);
	buf_put(&fs->cache, b);
	return ret;
}

void inode_touch(struct inode *ip, int a, int m, int c)
{
	int64_t s;
	uint32_t ns;

	cfs_now(&s, &ns);
	if (a) {
		ip->d.atime = s;
		ip->d.atime_ns = ns;
	}
	if (m) {
		ip->d.mtime = s;
		ip->d.mtime_ns = ns;
	}
	if (c) {
		ip->d.ctime = s;
		ip->d.ctime_ns = ns;
	}
}

int inode_alloc(struct cfs_fs *fs, uint32_t c, int exact, uint16_t mode,
		struct inode **out)
{
	cfs_ino_t ino;
	struct inode *ip;
	uint32_t tries;
	int ret;

	ret = chunk_alloc_inode(fs, c, &ino);
	/* A chunk counted on for an inode cluster may find no free run long
	 * enough: it counts none from then on, and the next one is tried. */
	for (tries = 0; ret == -ENOSPC && !exact && tries < fs->sb.nchunks; tries++) {
		/* elsewhere it will need a back-reference stub beside it */
		ret = chunk_pick(fs, c, 2, 1, &c);
		if (ret == 0)
			ret = chunk_alloc_inode(fs, c, &ino);
	}
	if (ret < 0)
		return ret;
	ret = inode_get(fs, ino, &ip);
	if (ret < 0)
		goto fail;
	/* The number can be looked up by anyone holding it from before it
	 * was freed (a readdir listing, a stale handle): they take the lock
	 * and check the inode under it, so it is held until the caller has
	 * finished the inode, or they would find e.g. a directory without
	 * its root block. */
	pthread_mutex_lock(&ip->lock);
	if (ip->d.mode != 0) {
		uint32_t off;

		/* the bitmap said free but the table says in use */
		pthread_mutex_unlock(&ip->lock);
		inode_put(fs, ip);
		ret = chunk_corrupt(fs, c, ino, inode_location(fs, ino, &off),
				    "free in bitmap, in use in table");
		goto fail;
	}
	{
		uint32_t gen = ip->d.generation + 1;

		memset(&ip->d, 0, sizeof(ip->d));
		memset(ip->var, 0, fs->varsz);
		ip->d.generation = gen;
	}
	ip->deleted = 0;
	ip->d.mode = mode;
	ip->d.head = ino;
	inode_touch(ip, 1, 1, 1);
	ip->d.crtime = ip->d.mtime;
	ip->d.crtime_ns = ip->d.mtime_ns;
	ret = inode_write(fs, ip);
	if (ret < 0) {
		pthread_mutex_unlock(&ip->lock);
		inode_put(fs, ip);
		goto fail;
	}
	*out = ip;
	return 0;
fail:
	chunk_free_inode(fs, ino);
	return ret;
}

int inode_free(struct cfs_fs *fs, struct inode *ip)
{
	uint32_t gen = ip->d.generation;
	int ret;

	memset(&ip->d, 0, sizeof(ip->d));
	memset(ip->var, 0, fs->varsz);
	ip->d.generation = gen;
	ip->deleted = 1;
	ret = inode_write(fs, ip);
	if (ret < 0)
		return ret;
	return chunk_free_inode(fs, ip->ino);
}

void inode_lock2(struct inode *a, struct inode *b)
{
	if (a == b || !b) {
		pthread_mutex_lock(&a->lock);
		return;
	}
	if (a->ino > b->ino) {
		struct inode *t = a;

		a = b;
		b = t;
	}
	pthread_mutex_lock(&a->lock);
	pthread_mutex_lock(&b->lock);
}

void inode_unlock2(struct inode *a, struct inode *b)
{
	pthread_mutex_unlock(&a->lock);
	if (b && b != a)
		pthread_mutex_unlock(&b->lock);
}

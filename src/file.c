/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* File data: inline data, and the logical block map of a file across its
 * chain of continuation inodes.
 *
 * A head inode maps blocks of its own chunk.  When that chunk is full the
 * file continues in a continuation inode in another chunk, which maps the
 * logical blocks it holds onto blocks of its chunk.  Every inode has four
 * forward pointers (cont[]); a continuation records its head and its
 * predecessor (back), and the logical range [lo, hi) it maps, so a block
 * lookup visits only continuations whose range covers the block. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bdev.h"
#include "fsint.h"

uint32_t file_inline_max(struct cfs_fs *fs, struct inode *ip)
{
	return fs->varsz - ip->d.xattr_len;
}

static uint64_t ext_abs(struct cfs_fs *fs, struct inode *ip, const struct extent *e,
			uint64_t lblk, uint32_t *len)
{
	*len = (uint32_t)(e->len - (lblk - e->lblk));
	return chunk_base(fs, CFS_INO_CHUNK(ip->ino)) + e->pblk + (lblk - e->lblk);
}

/* 1 mapped (*abs, *len = contiguous blocks), 0 hole (*len = blocks to the
 * next mapping, capped), <0 error. */
int file_map(struct cfs_fs *fs, struct inode *head, uint64_t lblk, uint64_t *abs,
	     uint32_t *len)
{
	uint64_t next = UINT64_MAX;
	struct extent e;
	int i, ret;

	ret = inode_chain_load(fs, head);
	if (ret < 0)
		return ret;
	for (i = 0; i < inode_chain_len(head); i++) {
		struct inode *ip = inode_chain_at(head, i);

		if (i > 0 && (lblk < ip->d.lo || lblk >= ip->d.hi)) {
			if (ip->d.lo > lblk && ip->d.lo < next)
				next = ip->d.lo;
			continue;
		}
		ret = ext_lookup(fs, ip, lblk, &e);
		if (ret < 0)
			return ret;
		if (ret == 1) {
			*abs = ext_abs(fs, ip, &e, lblk, len);
			return 1;
		}
		if (e.lblk < next)
			next = e.lblk;
	}
	*len = next - lblk > 0x40000000u ? 0x40000000u : (uint32_t)(next - lblk);
	return 0;
}

/* Attach a new continuation to the first inode of the chain with a free
 * forward pointer (breadth-first keeps the tree shallow). */
static int cont_create(struct cfs_fs *fs, struct inode *head, uint32_t c, uint64_t lblk,
		       struct inode **out)
{
	struct inode *ci, *p = NULL;
	int i, s = 0, ret;

	for (i = 0; i < inode_chain_len(head) && !p; i++)
		for (s = 0; s < CFS_NCONT; s++)
			if (!inode_chain_at(head, i)->d.cont[s]) {
				p = inode_chain_at(head, i);
				break;
			}
	if (!p)
		return -ENOSPC;
	ret = inode_alloc(fs, c, 1, (uint16_t)(head->d.mode & S_IFMT), &ci);
	if (ret < 0)
		return ret;
	ci->d.flags = CFS_IFL_CONT | CFS_IFL_EXTENTS;
	ci->d.head = head->ino;
	ci->d.back = p->ino;
	ci->d.lo = ci->d.hi = lblk;
	ci->d.nlink = 1;
	ret = inode_write(fs, ci);
	/* flagged a continuation: head lookups refuse it from now on, and
	 * the head's lock covers the rest */
	pthread_mutex_unlock(&ci->lock);
	if (ret == 0) {
		p->d.cont[s] = ci->ino;
		ret = inode_write(fs, p);
	}
	if (ret == 0)
		ret = inode_chain_add(head, ci);
	if (ret < 0) {
		p->d.cont[s] = 0;
		inode_free(fs, ci);
		inode_put(fs, ci);
		return ret;
	}
	chunk_count(fs, c, CNT_CONTS, 1);
	*out = ci;
	return 0;
}


/* Take back a mapping alloc_in made, or only half made: an insert that
 * failed writing the inode has put its record in place already. */
static void alloc_undo(struct cfs_fs *fs, struct inode *ip, const struct extent *e)
{
	struct extent m;

	if (ext_lookup(fs, ip, e->lblk, &m) == 1 && m.pblk + (e->lblk - m.lblk) == e->pblk) {
		ext_remove(fs, ip, e->lblk, e->lblk + e->len);   /* frees them too */
		return;
	}
	chunk_free_blocks(fs, CFS_INO_CHUNK(ip->ino), e->pblk, e->len);
	ip->d.nblocks -= e->len;
}

/* What the blocks of a new run must hold on the disk before any map names
 * them: src's bytes (as many blocks as asked for), or zeroes when src is
 * NULL.  Without one the caller writes the blocks after mapping them. */
struct fill {
	const uint8_t *src;
};

/* Blocks of zeroes one device write of fill_blocks writes: 256 KiB. */
#define FILL_WINDOW(fs) ((256u << 10) / (fs)->bsize ? (256u << 10) / (fs)->bsize : 1)

/* Write a fill into n blocks from abs, which nothing names yet, and flush
 * the device: the map naming them is made only after this returns, so no
 * write-back of it (an eviction, another thread's flush) can reach the
 * disk before their bytes do, and a crash never shows what a block held
 * before (another file's deleted data). */
static int fill_blocks(struct cfs_fs *fs, uint64_t abs, uint32_t n, const struct fill *f)
{
	uint32_t win = f->src ? n : FILL_WINDOW(fs), done, k;
	uint8_t *zero = NULL;
	int ret = 0;

	if (!f->src && !(zero = calloc(n < win ? n : win, fs->bsize)))
		return -ENOMEM;
	for (done = 0; ret == 0 && done < n; done += k) {
		k = n - done < win ? n - done : win;
		ret = cache_write_direct(&fs->cache, abs + done, k,
					 f->src ? f->src + (size_t)done * fs->bsize : zero);
	}
	free(zero);
	return ret < 0 ? ret : cfs_bdev_flush(fs->bd);
}

/* Allocate up to want blocks in ip's chunk for lblk and map them (filled
 * first when f is given).  On failure nothing stays allocated or mapped,
 * so no caller is left with a block of unknown contents behind the file. */
static int alloc_in(struct cfs_fs *fs, struct inode *ip, uint64_t lblk, uint32_t want,
		    uint32_t goal, const struct fill *f, uint64_t *abs, uint32_t *got)
{
	uint32_t c = CFS_INO_CHUNK(ip->ino), rel;
	struct extent e;
	int n, ret;

	/* a directory's blocks are metadata: packed with the chunk's others */
	if (S_ISDIR(ip->d.mode))
		n = chunk_alloc_meta(fs, c, want, &rel);
	else
		n = chunk_alloc_blocks(fs, c, goal, want, &rel);
	if (n < 0)
		return n;
	if (f) {
		ret = fill_blocks(fs, chunk_base(fs, c) + rel, (uint32_t)n, f);
		if (ret < 0) {
			chunk_free_blocks(fs, c, rel, (uint32_t)n);
			return ret;
		}
	}
	e.lblk = lblk;
	e.pblk = rel;
	e.len = (uint32_t)n;
	ip->d.nblocks += (uint32_t)n;   /* before the insert: it may write the inode */
	ret = ext_insert(fs, ip, &e);
	if (ret == 0 && (ip->d.flags & CFS_IFL_CONT)) {
		if (lblk < ip->d.lo)
			ip->d.lo = lblk;
		if (lblk + (uint32_t)n > ip->d.hi)
			ip->d.hi = lblk + (uint32_t)n;
	}
	if (ret == 0)
		ret = inode_write(fs, ip);
	if (ret < 0) {
		alloc_undo(fs, ip, &e);
		return ret;
	}
	*abs = chunk_base(fs, c) + rel;
	*got = (uint32_t)n;
	return 0;
}

/* A new continuation of head in chunk c, with blocks for lblk. */
static int cont_alloc(struct cfs_fs *fs, struct inode *head, uint32_t c, uint64_t lblk,
		      uint32_t want, const struct fill *f, uint64_t *abs, uint32_t *got)
{
	struct inode *ip;
	int ret = cont_create(fs, head, c, lblk, &ip);

	if (ret == 0) {
		ret = alloc_in(fs, ip, lblk, want, 0, f, abs, got);
		if (ret < 0)
			chain_prune(fs, head);   /* the new continuation maps nothing */
	}
	return ret;
}

/* The inode that maps lblk-1, so the new block can follow it on disk. */
static struct inode *neighbour(struct cfs_fs *fs, struct inode *head, uint64_t lblk,
			       uint32_t *goal)
{
	struct extent e;
	int i;

	if (lblk == 0)
		return NULL;
	for (i = 0; i < inode_chain_len(head); i++) {
		struct inode *ip = inode_chain_at(head, i);

		if (i > 0 && (lblk - 1 < ip->d.lo || lblk - 1 >= ip->d.hi))
			continue;
		if (ext_lookup(fs, ip, lblk - 1, &e) == 1) {
			*goal = e.pblk + (uint32_t)(lblk - e.lblk);
			return ip;
		}
	}
	return NULL;
}

/* Blocks for lblk: from the chunk of the inode mapping lblk-1 (so the file
 * stays contiguous), else from any chunk the file lives in, else in a new
 * continuation, as the placement policy (alloc.c) prefers; when no chunk
 * has room the policy likes, anywhere with a free block. */
static int alloc_fill(struct cfs_fs *fs, struct inode *head, uint64_t lblk, uint32_t want,
		      const struct fill *f, uint64_t *abs, uint32_t *got)
{
	struct inode *ip, *nb;
	uint32_t goal = 0, c;
	int i, pass, ret;

	ret = inode_chain_load(fs, head);
	if (ret < 0)
		return ret;
	want = alloc_data_want(fs, head, lblk, want);
	nb = neighbour(fs, head, lblk, &goal);
	for (pass = 0; pass < 2; pass++) {
		if (nb && (pass ? chunk_avail_blocks(fs, &fs->chunks[CFS_INO_CHUNK(nb->ino)]) > 0 :
			   alloc_data_fits(fs, head, CFS_INO_CHUNK(nb->ino), lblk))) {
			ret = alloc_in(fs, nb, lblk, want, goal, f, abs, got);
			if (ret != -ENOSPC)
				return ret;
		}
		for (i = 0; i < inode_chain_len(head); i++) {
			ip = inode_chain_at(head, i);
			c = CFS_INO_CHUNK(ip->ino);
			if (ip == nb || !(pass ? chunk_avail_blocks(fs, &fs->chunks[c]) > 0 :
					  alloc_data_fits(fs, head, c, lblk)))
				continue;
			ret = alloc_in(fs, ip, lblk, want, 0, f, abs, got);
			if (ret != -ENOSPC)
				return ret;
		}
		if (pass == 0 && alloc_data_chunk(fs, head, lblk, &c) == 0 &&
		    alloc_room_blocks(fs, c) > 0) {
			ret = cont_alloc(fs, head, c, lblk, want, f, abs, got);
			if (ret != -ENOSPC)
				return ret;
		}
	}
	/* Other files allocate meanwhile, so the chunk picked for having
	 * room can be full by the time the continuation is made in it: then
	 * the next. */
	c = CFS_INO_CHUNK(head->ino);
	for (i = 0; i < (int)fs->sb.nchunks; i++) {
		ret = chunk_pick(fs, (c + 1) % fs->sb.nchunks, 1, 2, &c);
		if (ret < 0)
			return ret;
		ret = cont_alloc(fs, head, c, lblk, want, f, abs, got);
		if (ret != -ENOSPC)
			return ret;
	}
	return -ENOSPC;
}

int file_alloc(struct cfs_fs *fs, struct inode *head, uint64_t lblk, uint32_t want,
	       uint64_t *abs, uint32_t *got)
{
	return alloc_fill(fs, head, lblk, want, NULL, abs, got);
}

int file_alloc_zeroed(struct cfs_fs *fs, struct inode *head, uint64_t lblk, uint32_t want,
		      uint64_t *abs, uint32_t *got)
{
	return alloc_fill(fs, head, lblk, want, &(struct fill){ NULL }, abs, got);
}

int chain_prune(struct cfs_fs *fs, struct inode *head)
{
	int i, s, ret;

	for (i = inode_chain_len(head) - 1; i >= 1; i--) {
		struct inode *ci = inode_chain_at(head, i), *p = NULL;
		int j;

		if (ci->d.nblocks || ci->d.cont[0] || ci->d.cont[1] || ci->d.cont[2] ||
		    ci->d.cont[3])
			continue;
		for (j = 0; j < i && !p; j++)
			if (inode_chain_at(head, j)->ino == ci->d.back)
				p = inode_chain_at(head, j);
		if (!p)   /* the check of ci's chunk verifies its back pointer */
			return chunk_corrupt(fs, CFS_INO_CHUNK(ci->ino), ci->ino, 0,
					     "continuation back pointer bad");
		for (s = 0; s < CFS_NCONT; s++)
			if (p->d.cont[s] == ci->ino)
				p->d.cont[s] = 0;
		ret = inode_write(fs, p);
		if (ret == 0)
			ret = inode_free(fs, ci);
		if (ret < 0)
			return ret;
		chunk_count(fs, CFS_INO_CHUNK(ci->ino), CNT_CONTS, -1);
		inode_chain_drop(fs, head, i);
	}
	return 0;
}

int file_punch(struct cfs_fs *fs, struct inode *head, uint64_t from, uint64_t to)
{
	int i, ret;

	ret = inode_chain_load(fs, head);
	if (ret < 0)
		return ret;
	for (i = 0; i < inode_chain_len(head); i++) {
		struct inode *ip = inode_chain_at(head, i);

		/* the whole file goes whatever a continuation's range says:
		 * a range the checker let pass wrong must not leak its blocks */
		if (i > 0 && (from || to != UINT64_MAX) && (to <= ip->d.lo || from >= ip->d.hi))
			continue;
		ret = ext_remove(fs, ip, from, to);
		if (ret < 0)
			return ret;
	}
	return chain_prune(fs, head);
}

int file_end_below(struct cfs_fs *fs, struct inode *head, uint64_t below, uint64_t *end)
{
	uint64_t e;
	int i, ret = inode_chain_load(fs, head);

	*end = 0;
	if (ret < 0)
		return ret;
	for (i = 0; i < inode_chain_len(head); i++) {
		struct inode *ip = inode_chain_at(head, i);

		if (i > 0 && ip->d.lo >= below)
			continue;
		ret = ext_end_below(fs, ip, below, &e);
		if (ret < 0)
			return ret;
		if (e > *end)
			*end = e;
	}
	return 0;
}

/* ---- collapse and insert: blocks moving along the file ----
 *
 * A block cannot change its logical place in one write: its extent may
 * have to leave one node (or one continuation, in another chunk) for
 * another, and a crash between the two writes would leave it mapped
 * twice (fsck drops the whole map: MAP_TWICE) or nowhere (its data
 * lost).  So the blocks are copied, a window at a time, to fresh blocks
 * at their new place, which is a hole, and the old ones are unmapped only
 * once the copy and its map are on the disk (FORMAT.md 13.3). */

/* Most blocks one window copies (and one buffer holds): 1 MiB. */
static uint64_t shift_window_max(struct cfs_fs *fs)
{
	uint64_t n = (1u << 20) / fs->bsize;

	return n ? n : 1;
}

/* Copy what is mapped in [a, b) to [to, to + b - a), a hole apart from
 * [a, b), then unmap [a, b).  Each of the three steps is on the disk
 * before the next begins: a crash leaves every block of the window at its
 * old place, at both, or at its new one, never nowhere, and a block the
 * file maps never holds bytes it was not given. */
static int shift_window(struct cfs_fs *fs, struct inode *head, uint64_t a, uint64_t b,
			uint64_t to, uint8_t *buf)
{
	uint64_t q, abs, dabs;
	uint32_t run, got, done;
	int m, ret = 0, copied = 0;

	for (q = a; q < b; q += run) {
		m = file_map(fs, head, q, &abs, &run);
		if (m < 0) {
			ret = m;
			goto undo;
		}
		if (run > b - q)
			run = (uint32_t)(b - q);
		if (m == 0)
			continue;
		ret = cache_read_direct(&fs->cache, abs, run, buf);
		if (ret < 0)
			goto undo;
		/* each copy written and flushed before its map exists: no
		 * write-back of the map can reach the disk first */
		for (done = 0; done < run; done += got) {
			ret = alloc_fill(fs, head, to + (q - a) + done, run - done,
					 &(struct fill){ buf + (size_t)done * fs->bsize }, &dabs,
					 &got);
			if (ret < 0)
				goto undo;
			copied = 1;
		}
	}
	if (!copied)
		return 0;
	/* the maps of the copies before the old blocks go */
	ret = cache_flush(&fs->cache, 0, UINT64_MAX);
	if (ret < 0)
		return ret;
	ret = file_punch(fs, head, a, b);
	/* the old blocks unmapped on the disk before the next window may
	 * take them for other bytes */
	if (ret == 0)
		ret = cache_flush(&fs->cache, 0, UINT64_MAX);
	return ret;
undo:
	if (copied)
		file_punch(fs, head, to, to + (b - a));   /* best effort: failing */
	return ret;
}

/* A window that runs out of space is tried again smaller, down to one
 * block: a move needs only as many free blocks as its window copies. */
static int shift_window_fit(struct cfs_fs *fs, struct inode *head, uint64_t a, uint64_t b,
			    uint64_t to, uint8_t *buf, int insert)
{
	uint64_t n = b - a;
	int ret = 0;

	while (a < b) {
		if (n > b - a)
			n = b - a;
		/* a collapse moves the window's start first, an insert its end,
		 * so that what moves next always has a hole to go to */
		ret = insert ? shift_window(fs, head, b - n, b, to + (b - n - a), buf)
			     : shift_window(fs, head, a, a + n, to, buf);
		if (ret == -ENOSPC && n > 1) {
			n /= 2;
			continue;
		}
		if (ret < 0)
			break;
		if (insert) {
			b -= n;
		} else {
			a += n;
			to += n;
		}
	}
	return ret;
}

int file_shift(struct cfs_fs *fs, struct inode *head, uint64_t lblk, uint64_t len,
	       int insert)
{
	uint64_t win = shift_window_max(fs), end, a, b, abs;
	uint8_t *buf;
	uint32_t run;
	int m, ret;

	if (win > len)
		win = len;   /* a window must not reach its own new place */
	ret = file_end_below(fs, head, UINT64_MAX, &end);
	if (ret < 0)
		return ret;
	buf = malloc((size_t)win * fs->bsize);
	if (!buf)
		return -ENOMEM;
	if (!insert) {
		ret = file_punch(fs, head, lblk, lblk + len);
		/* the range dropped before blocks move into it */
		if (ret == 0)
			ret = cache_flush(&fs->cache, 0, UINT64_MAX);
		for (a = lblk + len; ret == 0 && a < end; a = b) {
			m = file_map(fs, head, a, &abs, &run);
			if (m < 0) {
				ret = m;
				break;
			}
			if (m == 0) {
				b = a + run;   /* the hole up to the next mapping */
				continue;
			}
			b = end - a > win ? a + win : end;
			ret = shift_window_fit(fs, head, a, b, a - len, buf, 0);
		}
	} else {
		for (b = end; ret == 0 && b > lblk; b = a) {
			ret = file_end_below(fs, head, b, &b);   /* over a hole */
			if (ret < 0 || b <= lblk)
				break;
			a = b - lblk > win ? b - win : lblk;
			ret = shift_window_fit(fs, head, a, b, a + len, buf, 1);
		}
	}
	free(buf);
	return ret;
}

int file_release_all(struct cfs_fs *fs, struct inode *ip)
{
	/* an inline file may still hold continuations from a failed attempt
	 * to move its data out; the punch prunes them too */
	return file_punch(fs, ip, 0, UINT64_MAX);
}

/* Here rather than in inode.c: it releases blocks and xattrs, whose code
 * is built on inode.c, and inode.c stays below them. */
int inode_release(struct cfs_fs *fs, struct inode *ip)
{
	int dir = S_ISDIR(ip->d.mode), ret;

	if (!ip->d.mode || ip->deleted || ip->d.nlink || ip->open ||
	    (ip->d.flags & (CFS_IFL_CONT | CFS_IFL_STUB)))
		return 0;
	ret = file_release_all(fs, ip);
	if (ret == 0)
		ret = xattr_release(fs, ip);
	if (ret == 0)
		ret = inode_free(fs, ip);
	if (ret == 0 && dir)
		chunk_count(fs, CFS_INO_CHUNK(ip->ino), CNT_DIRS, -1);
	return ret;
}

int64_t file_blocks(struct cfs_fs *fs, struct inode *head)
{
	int64_t n = 0;
	int i, ret = inode_chain_load(fs, head);

	if (ret < 0)
		return ret;
	for (i = 0; i < inode_chain_len(head); i++)
		n += inode_chain_at(head, i)->d.nblocks;
	return n;
}

int file_chunks(struct cfs_fs *fs, struct inode *head, uint32_t *chunks, int max)
{
	int i, ret = inode_chain_load(fs, head);

	if (ret < 0)
		return ret;
	for (i = 0; i < inode_chain_len(head) && i < max; i++)
		chunks[i] = CFS_INO_CHUNK(inode_chain_at(head, i)->ino);
	return inode_chain_len(head);
}

/* ---- byte-level I/O ---- */

ssize_t file_read(struct cfs_fs *fs, struct inode *ip, void *buf, size_t n, uint64_t off)
{
	uint8_t *dst = buf;
	size_t done = 0;
	int ret;

	if (off >= ip->d.size)
		return 0;
	if (n > ip->d.size - off)
		n = (size_t)(ip->d.size - off);
	if (ip->d.flags & CFS_IFL_INLINE) {
		if (off + n > fs->varsz)
			return chunk_corrupt(fs, CFS_INO_CHUNK(ip->ino), ip->ino, 0,
					     "inline data past the inode");
		memcpy(dst, ip->var + off, n);
		return (ssize_t)n;
	}
	while (done < n) {
		uint64_t pos = off + done, lblk = pos / fs->bsize, abs;
		uint32_t boff = (uint32_t)(pos % fs->bsize), len;
		size_t chunk = fs->bsize - boff;
		struct buf *b;

		if (chunk > n - done)
			chunk = n - done;
		ret = file_map(fs, ip, lblk, &abs, &len);
		if (ret < 0)
			return done ? (ssize_t)done : ret;
		if (ret == 1 && boff == 0 && n - done >= fs->bsize) {
			/* whole blocks of a mapped run: one device read */
			uint32_t nb = (uint32_t)((n - done) / fs->bsize);

			if (nb > len)
				nb = len;
			ret = cache_read_direct(&fs->cache, abs, nb, dst + done);
			if (ret < 0)
				return done ? (ssize_t)done : ret;
			done += (size_t)nb * fs->bsize;
			continue;
		}
		if (ret == 0) {
			memset(dst + done, 0, chunk);
		} else {
			ret = cache_get(&fs->cache, abs, 0, &b);
			if (ret < 0)
				return done ? (ssize_t)done : ret;
			memcpy(dst + done, b->data + boff, chunk);
			buf_put(&fs->cache, b);
		}
		done += chunk;
	}
	return (ssize_t)done;
}

/* Blocks allocated by the current write: each will be written by it, so
 * they are zero-filled in the cache instead of read (a freed block's old
 * contents must never show through a partial write). */
struct fresh {
	uint64_t lo, hi;
};

/* Map lblk, allocating up to left blocks (never past the hole: the blocks
 * after it are mapped already) when it is a hole.  *run: contiguous
 * blocks from *abs. */
static int map_or_alloc(struct cfs_fs *fs, struct inode *ip, uint64_t lblk, uint64_t left,
			struct fresh *fr, uint64_t *abs, uint32_t *run)
{
	uint64_t want;
	int ret;

	ret = file_map(fs, ip, lblk, abs, run);
	if (ret != 0)
		return ret < 0 ? ret : 0;
	want = left < *run ? left : *run;
	ret = file_alloc(fs, ip, lblk, want > 65536 ? 65536 : (uint32_t)want, abs, run);
	if (ret < 0)
		return ret;
	fr->lo = lblk;
	fr->hi = lblk + *run;
	return 0;
}

/* Part of one block, through the cache. */
static int write_block(struct cfs_fs *fs, struct inode *ip, uint64_t lblk, uint32_t boff,
		       const uint8_t *src, size_t len, uint64_t left, struct fresh *fr)
{
	uint64_t abs;
	uint32_t run;
	struct buf *b;
	int noread, ret;

	ret = map_or_alloc(fs, ip, lblk, left, fr, &abs, &run);
	if (ret < 0)
		return ret;
	noread = (lblk >= fr->lo && lblk < fr->hi) || len == fs->bsize;
	ret = cache_get(&fs->cache, abs, noread ? CG_NOREAD : 0, &b);
	if (ret < 0)
		return ret;
	memcpy(b->data + boff, src, len);
	ret = buf_dirty_data(&fs->cache, b);
	buf_put(&fs->cache, b);
	return ret;
}

/* Whole blocks from lblk, at most nblk: as many as one mapped (or newly
 * allocated) run holds, in one device write straight from src.  Returns
 * the number of blocks written.  Every block it allocates is either
 * written here or left in *fr for the cached path to zero-fill. */
static int write_run(struct cfs_fs *fs, struct inode *ip, uint64_t lblk, const uint8_t *src,
		     uint32_t nblk, uint64_t left, struct fresh *fr)
{
	uint64_t abs;
	uint32_t run;
	int ret;

	ret = map_or_alloc(fs, ip, lblk, left, fr, &abs, &run);
	if (ret < 0)
		return ret;
	if (run > nblk)
		run = nblk;
	ret = cache_write_direct(&fs->cache, abs, run, src);
	return ret < 0 ? ret : (int)run;
}

/* A write that failed at byte end may leave blocks it allocated there and
 * after unwritten: unmap them, or their old contents would show where a
 * hole reads zeroes.  (Everything before end's block was written whole.) */
static void drop_unwritten(struct cfs_fs *fs, struct inode *ip, uint64_t end,
			   const struct fresh *fr)
{
	uint64_t from = end / fs->bsize;

	if (from < fr->lo)
		from = fr->lo;
	if (from < fr->hi)
		file_punch(fs, ip, from, fr->hi);   /* best effort: already failing */
}

/* Move inline data to a block of its own, written like any other part of
 * the file.  On any failure the file stays inline as it was: whatever was
 * allocated meanwhile is unmapped again, so no block the file maps was
 * left unwritten (its old contents readable, the inline bytes lost). */
int inline_to_extents(struct cfs_fs *fs, struct inode *ip)
{
	uint32_t n = (uint32_t)ip->d.size;
	struct fresh fr = { 0, 0 };
	uint8_t *save = NULL;
	int ret;

	if (n) {
		save = malloc(n);
		if (!save)
			return -ENOMEM;
		memcpy(save, ip->var, n);
	}
	memset(ip->var, 0, fs->varsz - ip->d.xattr_len);
	ext_init_root(fs, ip);
	ret = n ? write_block(fs, ip, 0, 0, save, n, 1, &fr) : 0;
	if (ret == 0)
		ret = inode_write(fs, ip);
	if (ret < 0) {
		file_punch(fs, ip, 0, UINT64_MAX);   /* best effort: already failing */
		ip->d.flags = (uint16_t)((ip->d.flags & ~CFS_IFL_EXTENTS) | CFS_IFL_INLINE);
		memset(ip->var, 0, CFS_EXT_ROOT_SIZE);
		if (n)
			memcpy(ip->var, save, n);
		inode_write(fs, ip);
	}
	free(save);
	return ret;
}

ssize_t file_write(struct cfs_fs *fs, struct inode *ip, const void *buf, size_t n,
		   uint64_t off)
{
	const uint8_t *src = buf;
	struct fresh fr = { 0, 0 };
	size_t done = 0;
	int ret = 0;

	if (off + n < off || off + n > (uint64_t)INT64_MAX)
		return -EFBIG;
	if ((ip->d.flags & CFS_IFL_INLINE) && off + n <= file_inline_max(fs, ip)) {
		memcpy(ip->var + off, src, n);
		if (off + n > ip->d.size)
			ip->d.size = off + n;
		return (ret = inode_write(fs, ip)) < 0 ? ret : (ssize_t)n;
	}
	if (ip->d.flags & CFS_IFL_INLINE) {
		ret = inline_to_extents(fs, ip);
		if (ret < 0)
			return ret;
	}
	while (done < n) {
		uint64_t pos = off + done;
		uint32_t boff = (uint32_t)(pos % fs->bsize);
		size_t len = fs->bsize - boff;
		uint64_t left_blocks = (n - done + boff + fs->bsize - 1) / fs->bsize;

		if (boff == 0 && n - done >= fs->bsize) {
			size_t whole = (n - done) / fs->bsize;

			ret = write_run(fs, ip, pos / fs->bsize, src + done,
					whole > 65536 ? 65536 : (uint32_t)whole, left_blocks, &fr);
			if (ret < 0)
				break;
			done += (size_t)ret * fs->bsize;
			continue;
		}
		if (len > n - done)
			len = n - done;
		ret = write_block(fs, ip, pos / fs->bsize, boff, src + done, len, left_blocks,
				  &fr);
		if (ret < 0)
			break;
		done += len;
	}
	if (ret < 0)
		drop_unwritten(fs, ip, off + done, &fr);
	if (done && off + done > ip->d.size)
		ip->d.size = off + done;
	if (done) {
		int r = inode_write(fs, ip);

		if (r < 0)
			return r;
		return (ssize_t)done;
	}
	return ret;
}

/* Zero the bytes past the new end in the last block, so that a later
 * extension reads zeroes there. */
static int zero_tail(struct cfs_fs *fs, struct inode *ip, uint64_t size)
{
	uint32_t boff = (uint32_t)(size % fs->bsize), run;
	uint64_t abs;
	struct buf *b;
	int ret;

	if (!boff)
		return 0;
	ret = file_map(fs, ip, size / fs->bsize, &abs, &run);
	if (ret <= 0)
		return ret;
	ret = cache_get(&fs->cache, abs, 0, &b);
	if (ret < 0)
		return ret;
	memset(b->data + boff, 0, fs->bsize - boff);
	ret = buf_dirty_data(&fs->cache, b);
	buf_put(&fs->cache, b);
	return ret;
}

int file_truncate(struct cfs_fs *fs, struct inode *ip, uint64_t size)
{
	int ret;

	if (size > (uint64_t)INT64_MAX)
		return -EFBIG;
	if (ip->d.flags & CFS_IFL_INLINE) {
		if (size <= file_inline_max(fs, ip)) {
			if (size < ip->d.size)
				memset(ip->var + size, 0, ip->d.size - size);
			ip->d.size = size;
			return inode_write(fs, ip);
		}
		ret = inline_to_extents(fs, ip);
		if (ret < 0)
			return ret;
	}
	if (size < ip->d.size) {
		ret = file_punch(fs, ip, (size + fs->bsize - 1) / fs->bsize, UINT64_MAX);
		if (ret == 0)
			ret = zero_tail(fs, ip, size);
		if (ret < 0)
			return ret;
	}
	ip->d.size = size;
	if (S_ISREG(ip->d.mode) && ip->d.nblocks == 0 && !ip->d.cont[0] &&
	    !ip->d.cont[1] && !ip->d.cont[2] && !ip->d.cont[3] &&
	    size <= file_inline_max(fs, ip)) {
		/* nothing mapped any more: tiny again, so back to inline */
		memset(ip->var, 0, fs->varsz - ip->d.xattr_len);
		ip->d.flags = (uint16_t)((ip->d.flags & ~CFS_IFL_EXTENTS) | CFS_IFL_INLINE);
	}
	return inode_write(fs, ip);
}

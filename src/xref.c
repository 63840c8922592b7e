/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Cross-chunk references.
 *
 * A directory entry in directory D (head in chunk A) naming inode X in
 * chunk B != A carries, besides X, the number of a stub inode in chunk B.
 * The stub is X's back-reference: head = X, back = D, lo = the entry's
 * name hash.  So chunk B can check X's link count from its own inodes
 * (local entries + stubs), chunk A can verify each of its remote entries by
 * reading one inode (the stub), and chunk B verifies a stub by one lookup
 * in D.  Keeping the stub with the target, not the directory, means a
 * directory's chunk needs no free inode to name a file elsewhere. */
#include <errno.h>
#include <sys/stat.h>

#include "fsint.h"

int xref_add(struct cfs_fs *fs, struct inode *dp, cfs_ino_t target, uint16_t mode,
	     const char *name, size_t len, cfs_ino_t *stub)
{
	struct inode *s;
	int ret;

	*stub = 0;
	if (CFS_INO_CHUNK(target) == CFS_INO_CHUNK(dp->ino))
		return 0;
	ret = inode_alloc(fs, CFS_INO_CHUNK(target), 1, (uint16_t)(mode & S_IFMT), &s);
	if (ret < 0)
		return ret;
	s->d.flags = CFS_IFL_STUB;
	s->d.nlink = 1;
	s->d.head = target;
	s->d.back = dp->ino;
	s->d.lo = dir_hash(fs, name, len);
	ret = inode_write(fs, s);
	/* flagged a stub: head lookups refuse it from now on */
	pthread_mutex_unlock(&s->lock);
	if (ret == 0) {
		chunk_count(fs, CFS_INO_CHUNK(target), CNT_STUBS, 1);
		*stub = s->ino;
	} else {
		inode_free(fs, s);
	}
	inode_put(fs, s);
	return ret;
}

int xref_del(struct cfs_fs *fs, cfs_ino_t stub, cfs_ino_t target)
{
	struct inode *s;
	int ret;

	if (!stub)
		return 0;
	ret = inode_get(fs, stub, &s);
	if (ret < 0)
		return ret;
	if (!(s->d.flags & CFS_IFL_STUB) || s->d.head != target) {
		inode_put(fs, s);
		/* the stub's chunk: its check verifies the stub against the entry */
		return chunk_corrupt(fs, CFS_INO_CHUNK(stub), stub, 0,
				     "stub does not match its entry");
	}
	ret = inode_free(fs, s);
	if (ret == 0)
		chunk_count(fs, CFS_INO_CHUNK(stub), CNT_STUBS, -1);
	inode_put(fs, s);
	return ret;
}

/* The entry's block may reach the disk (written back to make room) before
 * xref_del frees the stub and so marks its chunk dirty: a crash in between
 * would leave a stub backing no entry in a chunk marked clean, which a
 * check of the dirty chunks alone cannot see.  Marked first, the stub's
 * chunk is checked after any such crash, and a directory's lost entries
 * never need the chunks marked clean checked (FORMAT.md 18).  With lazy
 * marking a note is enough: the entry's block reaches the disk only by a
 * write-back, and that marks every chunk noted before it. */
int xref_hold(struct cfs_fs *fs, cfs_ino_t stub)
{
	return stub && ino_valid(fs, stub) ? chunk_to_changed_mem(fs, CFS_INO_CHUNK(stub)) : 0;
}

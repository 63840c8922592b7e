/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The problem table, after e2fsck's problem.c: every finding of the checker
 * has a code, a message that describes the finding only, the action a fix
 * takes, whether preen may take it, and the FORMAT.md invariant it
 * protects.  The reporter writes the context before the message and the
 * outcome after it, from the mode: a finding is said to be fixed, or not,
 * in one place. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fsck.h"

/* Subjects: what the context's inode is, as the reporter names it. */
#define S_NONE  0
#define S_INODE 1
#define S_DIR   2
#define S_CONT  3
#define S_STUB  4

/* Flags.  Preen fixes a PF_CRASH finding only where a crash explains it:
 * in a chunk that was dirty (and not left in error by an earlier check),
 * or in a chunk the check escalated to because a dirty chunk's directories
 * lost entries naming it.  The same finding in a chunk that was clean is
 * damage nothing explains, and waits for a person. */
#define PF_PREEN 0x1    /* preen may fix it wherever it is found */
#define PF_CRASH 0x2    /* a crash can leave it (writes lost or reordered) */
#define PF_NOFIX 0x4    /* nothing the checker can do: always for a person */

struct problem {
	const char *id;         /* the code as printed and in --json */
	int subject;
	const char *msg;        /* the finding */
	const char *action;     /* what fixing it does */
	unsigned flags;
	const char *invariant;  /* docs/FORMAT.md section it protects */
};

static const struct problem table[PR_COUNT] = {
	[PR_SB_BACKUP] = { "SB_BACKUP", S_NONE, "primary superblock unusable",
		"restore it from the backup", 0, "4" },
	[PR_ROOT_MISSING] = { "ROOT_MISSING", S_NONE, "root directory (inode %0) is missing",
		"make it again", 0, "17.15" },
	[PR_ROOT_NOT_DIR] = { "ROOT_NOT_DIR", S_NONE, "root inode %0 is not a directory",
		"make it again", 0, "17.15" },
	[PR_LPF_MISSING] = { "LPF_MISSING", S_NONE, "/lost+found is missing",
		"make it again", PF_PREEN, "17.15" },
	/* preen's: the superblock names both inodes, whose names it moves
	 * in the order the move itself follows (docs/MOVE.md) */
	[PR_RENUMBER] = { "RENUMBER", S_NONE, "inode %0 was being renumbered to %1",
		"finish it", PF_PREEN, "4" },

	[PR_CHUNK_HEADER] = { "CHUNK_HEADER", S_NONE, "chunk header destroyed",
		"rebuild it from the chunk's contents", 0, "17.2" },
	[PR_NO_MEMORY] = { "NO_MEMORY", S_NONE, "out of memory, not checked",
		"none", PF_NOFIX, "-" },
	[PR_ICMAP_LOST] = { "ICMAP_LOST", S_NONE,
		"inode-cluster map block %0 (block %1) unreadable or not a map block",
		"forget it: the inodes of its clusters are lost", 0, "10.4" },
	[PR_ICMAP_CSUM] = { "ICMAP_CSUM", S_NONE,
		"inode-cluster map block %0 (block %1): checksum mismatch",
		"rewrite it", 0, "10.4" },
	[PR_ICL_OUTSIDE] = { "ICL_OUTSIDE", S_NONE,
		"inode cluster %0 at block %1 lies outside the data area",
		"drop it from the map", 0, "10.4" },
	[PR_ICL_OVERLAP] = { "ICL_OVERLAP", S_NONE,
		"inode cluster %0 at block %1 overlaps a map block or another cluster",
		"drop it from the map", 0, "10.4" },
	[PR_ICL_GARBAGE] = { "ICL_GARBAGE", S_NONE,
		"inode cluster %0 at block %1 holds no inode, only damaged slots",
		"drop it from the map", 0, "10.4" },
	[PR_ICL_DATA] = { "ICL_DATA", S_NONE,
		"inode cluster %0 at block %1 holds no inode in use and overlaps file data",
		"drop it from the map", 0, "10.4" },
	[PR_INODE_UNREADABLE] = { "INODE_UNREADABLE", S_INODE, "unreadable",
		"none", PF_NOFIX, "17.1" },
	[PR_INODE_CSUM_PLAUSIBLE] = { "INODE_CSUM_PLAUSIBLE", S_INODE,
		"checksum mismatch, contents plausible", "recompute the checksum", 0, "17.4" },
	[PR_INODE_CSUM] = { "INODE_CSUM", S_INODE, "checksum mismatch",
		"clear the inode", 0, "17.4" },
	[PR_INODE_MODE] = { "INODE_MODE", S_INODE, "invalid mode/flags 0%0o/0x%1x",
		"clear the inode", 0, "10.2" },
	/* a valid checksum over fields no crash writes: see dinode_impossible */
	[PR_INODE_IMPOSSIBLE] = { "INODE_IMPOSSIBLE", S_INODE, "impossible: %s",
		"clear the inode", 0, "17.4" },
	/* after INODE_CSUM_PLAUSIBLE only: the entry's node verified, the
	 * inode did not, so the type the entry says is the one written */
	[PR_INODE_TYPE] = { "INODE_TYPE", S_INODE, "type 0%0o, its entry '%n' says 0%1o",
		"take the entry's type", 0, "17.9" },
	[PR_FREE_INODE_STALE] = { "FREE_INODE_STALE", S_INODE, "free inode with stale fields",
		"zero it", PF_PREEN, "10.2" },
	[PR_STUB_FLAG_ON_HEAD] = { "STUB_FLAG_ON_HEAD", S_INODE, "stub flag on a head inode",
		"clear the flag", PF_CRASH, "16.2" },
	[PR_INODE_LOAD] = { "INODE_LOAD", S_INODE, "cannot be loaded",
		"clear the inode", 0, "17.4" },
	[PR_MAP_SHARED] = { "MAP_SHARED", S_INODE, "block map shares blocks with another inode",
		"drop the block map", PF_CRASH, "17.5" },
	[PR_MAP_LEFTOVER] = { "MAP_LEFTOVER", S_INODE,
		"extent node keeps extents its right neighbour took (a split cut short)",
		"drop them from the node (shorten one that reaches into its range)", PF_CRASH, "12" },
	[PR_MAP_TWICE] = { "MAP_TWICE", S_INODE, "block map maps a block twice",
		"drop the block map", PF_CRASH, "17.5" },
	[PR_MAP_OUTSIDE] = { "MAP_OUTSIDE", S_INODE, "block map points outside the chunk",
		"drop the block map", PF_CRASH, "17.5" },
	/* no crash writes one: a node is written whole, checksummed */
	[PR_EXTENT_IMPOSSIBLE] = { "EXTENT_IMPOSSIBLE", S_INODE,
		"extent at logical block %0 (%1 blocks at chunk block %2) is impossible",
		"remove the extent", 0, "12" },
	/* nor one out of its node's key range or over the one before it:
	 * a lookup by key misses it (a split's leftovers are MAP_LEFTOVER) */
	[PR_EXTENT_MISPLACED] = { "EXTENT_MISPLACED", S_INODE,
		"extent at logical block %0 (%1 blocks at chunk block %2) is out of key order",
		"remove the extent", 0, "12" },
	[PR_MAP_UNREADABLE] = { "MAP_UNREADABLE", S_INODE, "block map unreadable",
		"drop the block map", PF_CRASH, "12" },
	/* preen's anywhere, as FREE_INODE_STALE: an index root with no records
	 * names no block, so making it an empty leaf loses nothing, and until
	 * then every read of the file fails (FORMAT.md 11) */
	[PR_MAP_EMPTY_ROOT] = { "MAP_EMPTY_ROOT", S_INODE,
		"extent tree root is an index node with no records",
		"make it an empty leaf", PF_PREEN, "11" },
	[PR_XATTR_BLOCK] = { "XATTR_BLOCK", S_INODE, "extended attribute block corrupt",
		"drop the block", PF_CRASH, "15" },
	[PR_XATTRS] = { "XATTRS", S_INODE, "extended attributes corrupt",
		"drop them", 0, "15" },
	[PR_INODE_NBLOCKS] = { "INODE_NBLOCKS", S_INODE, "owns %0 blocks, records %1",
		"correct the count", PF_CRASH, "17.6" },
	[PR_INLINE_SIZE] = { "INLINE_SIZE", S_INODE, "inline size %0 too large",
		"truncate it", 0, "13.2" },
	[PR_BITMAP_UNREADABLE] = { "BITMAP_UNREADABLE", S_NONE, "%s bitmap unreadable",
		"none", PF_NOFIX, "17.1" },
	[PR_BLOCK_BITMAP] = { "BLOCK_BITMAP", S_NONE, "block bitmap differs in %0 places",
		"rewrite it from the block maps", PF_CRASH, "17.7" },
	/* preen's anywhere, as e2fsck -p fixes inode bitmap differences: the
	 * table it is rewritten from is what step A verified slot by slot, and
	 * the library meets the damage in normal operation (an inode handed
	 * out that is in use), which errors=repair then fixes online */
	[PR_INODE_BITMAP] = { "INODE_BITMAP", S_NONE, "inode bitmap differs in %0 places",
		"rewrite it from the inode table", PF_PREEN, "17.4" },
	[PR_FREE_BLOCKS] = { "FREE_BLOCKS", S_NONE, "free block count %0, should be %1",
		"correct it", PF_CRASH, "17.8" },
	[PR_FREE_INODES] = { "FREE_INODES", S_NONE, "free inode count %0, should be %1",
		"correct it", PF_CRASH, "17.8" },
	[PR_HDR_COUNTS] = { "HDR_COUNTS", S_NONE,
		"header counts continuations/stubs/dirs %0/%1/%2, should be %3/%4/%5",
		"correct them", PF_CRASH, "17.8" },

	[PR_CONT_POINTER] = { "CONT_POINTER", S_INODE, "continuation pointer %0 invalid",
		"clear it", PF_CRASH, "17.14" },
	[PR_CONT_HEAD] = { "CONT_HEAD", S_CONT, "names head %0, its chain belongs to %1",
		"correct the head", PF_CRASH, "17.14" },
	[PR_CONT_BACK] = { "CONT_BACK", S_CONT, "back pointer %0, should be %1",
		"correct it", PF_CRASH, "17.14" },
	[PR_CONT_DETACHED] = { "CONT_DETACHED", S_CONT, "detached from file %0",
		"re-attach it", PF_CRASH, "17.14" },
	[PR_CONT_ORPHAN] = { "CONT_ORPHAN", S_CONT, "of dead or full file %0",
		"free it", PF_CRASH, "17.14" },
	[PR_DIR_INDEX] = { "DIR_INDEX", S_DIR, "index damaged",
		"rebuild it from its leaves", PF_CRASH, "11" },
	[PR_ENTRY_INVALID] = { "ENTRY_INVALID", S_DIR, "entry '%n' -> %0 invalid",
		"remove the entry", PF_CRASH, "17.9" },
	[PR_DIR_COUNTS] = { "DIR_COUNTS", S_DIR, "records %0 entries (%1 remote), has %2 (%3)",
		"correct the counts", PF_CRASH, "17.13" },
	[PR_DIR_PARENT] = { "DIR_PARENT", S_DIR, "parent pointer %0, should be %1",
		"correct it", PF_CRASH, "17.12" },
	[PR_STUB_ORPHAN] = { "STUB_ORPHAN", S_STUB, "backs no directory entry",
		"free it", PF_CRASH, "17.11" },
	[PR_DELETED_OPEN] = { "DELETED_OPEN", S_INODE, "deleted while open",
		"release it", PF_CRASH, "17.15" },
	[PR_LPF_UNLINKED] = { "LPF_UNLINKED", S_INODE, "lost+found, in no directory",
		"name it in / again", PF_CRASH, "17.15" },
	[PR_ORPHAN] = { "ORPHAN", S_INODE, "in no directory",
		"move it to /lost+found", PF_CRASH, "17.15" },
	[PR_DIR_NAMES] = { "DIR_NAMES", S_DIR, "has %0 names",
		"none", PF_NOFIX, "17.15" },
	[PR_LINK_COUNT] = { "LINK_COUNT", S_INODE, "link count %0, should be %1",
		"correct it", PF_CRASH, "16.3" },
};

static const char *const subject_word[] = { "", "inode", "dir", "continuation", "stub" };

/* Preen stops changing a chunk once it holds a problem for a person: later
 * "safe" fixes would act on what that person has to judge. */
int pr_held(struct fs_check *k, uint32_t c)
{
	int held;

	if (k->o->mode != CFS_FSCK_PREEN || c == PR_GLOBAL)
		return 0;
	pthread_mutex_lock(&k->lock);
	held = k->chunk_unfixed[c] != 0;
	pthread_mutex_unlock(&k->lock);
	return held;
}

/* Chunk c as the crash left it: was it being written? */
static int chunk_crashed(struct fs_check *k, uint32_t c)
{
	uint32_t st = k->fs->chunks[c].was_dirty;

	if (k->escalated)
		return 1;
	return (st & CFS_STATE_DIRTY) && !(st & CFS_STATE_ERROR);
}

int pr_decide(struct fs_check *k, uint32_t c, int code)
{
	const struct problem *p = &table[code];

	if (p->flags & PF_NOFIX)
		return 0;
	if (k->o->mode == CFS_FSCK_YES)
		return 1;
	if (k->o->mode != CFS_FSCK_PREEN || pr_held(k, c))
		return 0;
	if (p->flags & PF_PREEN)
		return 1;
	return (p->flags & PF_CRASH) && c != PR_GLOBAL && chunk_crashed(k, c);
}

/* The message with its %-codes filled in from the context. */
static void msg_expand(char *out, size_t size, const char *fmt, const struct pctx *p)
{
	size_t n = 0;

	for (; *fmt && n + 1 < size; fmt++) {
		int w = 0;

		if (*fmt != '%' || !fmt[1]) {
			out[n++] = *fmt;
			continue;
		}
		fmt++;
		if (*fmt >= '0' && *fmt <= '5') {
			uint64_t v = p->num[*fmt - '0'];

			if (fmt[1] == 'o' || fmt[1] == 'x')
				w = snprintf(out + n, size - n, *++fmt == 'o' ? "%llo" : "%llx",
					     (unsigned long long)v);
			else
				w = snprintf(out + n, size - n, "%llu", (unsigned long long)v);
		} else if (*fmt == 'n') {
			w = snprintf(out + n, size - n, "%.*s", (int)p->namelen,
				     p->name ? p->name : "");
		} else if (*fmt == 's') {
			w = snprintf(out + n, size - n, "%s", p->str ? p->str : "");
		}
		if (w > 0)
			n += (size_t)w < size - n ? (size_t)w : size - n - 1;
	}
	out[n] = 0;
}

static const char *outcome_of(struct fs_check *k, int code, int fix, int err, char *buf,
			      size_t size)
{
	if (fix && !err)
		return "fixed";
	if (fix) {
		snprintf(buf, size, "fix failed: %s", strerror(-err));
		return buf;
	}
	if (k->o->mode == CFS_FSCK_NO && !(table[code].flags & PF_NOFIX))
		return "not fixed: -n";
	return "needs a person";
}

void pr_report(struct fs_check *k, uint32_t c, int code, const struct pctx *p, int fix, int err)
{
	const struct problem *e = &table[code];
	char where[64] = "", what[400], line[640], ob[96];
	struct cfs_fsck_problem rep;
	int n = 0;

	if (c != PR_GLOBAL)
		n = snprintf(where, sizeof(where), "chunk %u: ", c);
	if (e->subject != S_NONE)
		snprintf(where + n, sizeof(where) - (size_t)n, "%s %u: ", subject_word[e->subject],
			 p->ino);
	msg_expand(what, sizeof(what), e->msg, p);
	memset(&rep, 0, sizeof(rep));
	rep.code = e->id;
	rep.chunk = c == PR_GLOBAL ? -1 : (int64_t)c;
	rep.ino = e->subject != S_NONE ? p->ino : 0;
	rep.finding = what;
	rep.action = e->action;
	rep.outcome = outcome_of(k, code, fix, err, ob, sizeof(ob));
	rep.invariant = e->invariant;
	snprintf(line, sizeof(line), "%s%s [%s]; %s: %s", where, what, e->id, e->action,
		 rep.outcome);
	rep.text = line;
	if (p->name && e->subject == S_DIR) {
		rep.name = p->name;
		rep.namelen = p->namelen;
	}
	pthread_mutex_lock(&k->lock);
	k->r->problems++;
	if (fix && !err) {
		k->r->fixed++;
	} else {
		k->r->unfixed++;
		if (c != PR_GLOBAL)
			k->chunk_unfixed[c]++;
	}
	if (k->o->report)
		k->o->report(k->o->ctx, line);
	if (k->o->problem)
		k->o->problem(k->o->ctx, &rep);
	pthread_mutex_unlock(&k->lock);
}

int pr_fix(struct chunk_check *x, int code, const struct pctx *p)
{
	int fix = pr_decide(x->k, x->c, code);

	pr_report(x->k, x->c, code, p, fix, 0);
	return fix;
}

void reach_ino(struct fs_check *k, cfs_ino_t ino)
{
	if (!k->reach)
		return;
	if (ino_valid(k->fs, ino))
		__atomic_store_n(&k->reach->chunk[CFS_INO_CHUNK(ino)], 1, __ATOMIC_RELAXED);
	else
		__atomic_store_n(&k->reach->unknown, 1, __ATOMIC_RELAXED);
}

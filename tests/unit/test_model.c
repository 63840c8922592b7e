/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Randomized model test of libchunkfs.
 *
 * Thousands of random operations run against libchunkfs on the in-memory
 * fault bdev and, side by side, against a plain in-memory model of the
 * tree.  After every operation the objects it touched are compared
 * (attributes, lookups, the bytes around a write); every ~200 operations
 * the filesystem is synced, checked with cfs_check(), closed, reopened from
 * the same bytes and compared whole; at the end everything is deleted and
 * the free counts must return to their values right after mkfs.
 *
 * What the model expects is what Linux gives on ext4 (the header promises
 * "the errno a Linux kernel filesystem would give").  Where Linux's answer
 * depends only on the order of its checks (e.g. rename of a file onto an
 * ancestor directory: -ENOTEMPTY from the VFS, -EISDIR by type), any error
 * whose condition holds is accepted; success is never optional.
 *
 * -ENOSPC is accepted from an operation that allocates only when the
 * filesystem as a whole is nearly out of blocks or inodes: a full chunk must
 * never cause it while other chunks have room.  Two exceptions follow from
 * the format, which puts some space in one particular chunk: an xattr
 * overflows to a block in its inode's chunk, and a directory entry naming
 * an inode of another chunk needs a stub inode in the named inode's chunk;
 * -ENOSPC is fair when that chunk is out of it.
 *
 * A failed operation must change nothing, with these ext4-like exceptions:
 * a write may come back short when space runs out (the bytes before the
 * failure are written and the size covers exactly them; the model applies
 * the prefix the library reports); a fallocate that runs out of space may
 * keep what it allocated and the size covering it; a punch or zero range
 * that fails may leave part of its range zeroed (the edges are zeroed
 * first); a collapse or insert range that runs out of space half-way
 * leaves the file partly shifted with its size unchanged (FORMAT.md 13.3).
 *
 * Replay a failure with the environment:
 *   CHUNKFS_MODEL_SEED=N    seed (every configuration; default per config)
 *   CHUNKFS_MODEL_OPS=N     operations per configuration
 *   CHUNKFS_MODEL_CONFIG=s  run only configuration s (tiny, default, full)
 *   CHUNKFS_MODEL_TRACE=1   print every operation before it runs
 *   CHUNKFS_MODEL_FULL=1    compare the whole tree and run cfs_check()
 *                           after every operation, to find the operation
 *                           that broke what a periodic check noticed later
 */
#include "test.h"

#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "bdev.h"
#include "chunkfs.h"

#define MPAGE    4096u          /* model content page */
#define HIST     16             /* operations shown before a mismatch */

enum { T_REG, T_DIR, T_LNK };
#define M_REG (1u << T_REG)
#define M_DIR (1u << T_DIR)
#define M_LNK (1u << T_LNK)
#define M_ANY (M_REG | M_DIR | M_LNK)

/* ---- the model ------------------------------------------------------------ */

struct mnode;

struct mpage {
	uint64_t idx;
	uint8_t *d;
};

struct mxattr {
	char *name;
	uint8_t *val;
	size_t len;
};

struct mdent {
	char *name;
	struct mnode *n;
};

/* One inode.  Hard links are several dents naming the same node. */
struct mnode {
	int type;
	cfs_ino_t ino;                  /* what the library called it */
	uint32_t mode, uid, gid, nlink;
	uint64_t size;                  /* T_REG */
	struct mpage *pg;               /* T_REG: written pages, sorted; */
	size_t npg;                     /*   absent pages read as zeros   */
	char *target;                   /* T_LNK */
	struct mxattr *xa;
	size_t nxa;
	struct mdent *de;               /* T_DIR */
	size_t nde;
	struct mnode *parent;           /* T_DIR; the root is its own */
	int fixed;                      /* made by mkfs: never removed/renamed */
	int ballast;                    /* keeps the fs full: left alone until
					   everything is deleted at the end */
	int visit;
	size_t slot;                    /* index in g.nodes */
};

struct mcfg {
	const char *name;
	int wi;                         /* column in the op weight table */
	uint64_t seed;
	long ops;
	uint64_t size;
	uint32_t bsize, chunks;
	uint64_t inodes;
	uint64_t max_off;               /* furthest file offset used */
	size_t big_write;               /* largest write */
	int fill;                       /* start nearly full */
	int cross;                      /* must see continuations and stubs */
	int clusters;                   /* must see inode clusters made */
};

static struct {
	const struct mcfg *cfg;
	uint64_t seed;
	long nops;
	struct cfs_bdev *dev;           /* the fault bdev, outlives each open */
	struct cfs_fs *fs;
	struct mnode **nodes;
	size_t nnodes;
	struct mnode *root;
	long opno;
	char desc[768];
	char hist[HIST][768];
	long hist_no[HIST];
	unsigned nhist;
	int visit;
	long nospc, shorts, remounts;
	int trace, full;
	struct cfs_statfs sf0;          /* right after mkfs */
	uint64_t root_blocks0;
	int root_chain0;
	uint64_t conts0, xrefs0;
	uint64_t clusters0[CFS_MAX_CHUNKS];     /* inode clusters after mkfs */
	uint32_t clb, map_nrec;         /* cluster blocks, clusters a map holds */
	long nospc_chunk;               /* -ENOSPC from one full chunk */
	uint64_t peak_conts, peak_xrefs, peak_clusters;
	uint32_t inline_max;            /* from cfs_get_info */
	/* Set by an op before judge(): chunks whose own space the format
	 * requires (see chunk_nospc_fair), -1 = none. */
	struct {
		int64_t chunk[2];
		int inode;              /* needs a free inode there */
	} hint;
} g;

/* Two generators: one drives the operations, the other only samples what
 * the checks look at, so checking more or less never changes the ops. */
static uint64_t rng, crng;

static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint64_t rn(uint64_t n)
{
	return n ? mix(&rng) % n : 0;
}

static uint64_t rrange(uint64_t lo, uint64_t hi)
{
	return lo + rn(hi - lo + 1);
}

static int chance(unsigned pct)
{
	return rn(100) < pct;
}

static void rfill(uint8_t *p, size_t n)
{
	while (n) {
		uint64_t v = mix(&rng);
		size_t k = n < 8 ? n : 8;

		memcpy(p, &v, k);
		p += k;
		n -= k;
	}
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		abort();
	return p;
}

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);

	if (!p)
		abort();
	return p;
}

static char *xstrdup(const char *s)
{
	return strcpy(xmalloc(strlen(s) + 1), s);
}

/* Room for element n of an array grown by doubling: the capacity is the
 * next power of two at or above n, so only a power of two needs more. */
static void *vgrow(void *p, size_t n, size_t sz)
{
	if (n && (n & (n - 1)))
		return p;
	p = realloc(p, (n ? 2 * n : 1) * sz);
	if (!p)
		abort();
	return p;
}

/* Temporary buffers are registered, so that a failed check (which longjmps
 * out of everything) leaks nothing: model_reset() frees what is left. */
static void **tmps;
static size_t ntmps;

static void *talloc(size_t n)
{
	void *p = xmalloc(n);

	tmps = vgrow(tmps, ntmps, sizeof(*tmps));
	tmps[ntmps++] = p;
	return p;
}

/* Stop tracking p: it now belongs to the model. */
static void *tkeep(void *p)
{
	for (size_t i = ntmps; i-- > 0;)
		if (tmps[i] == p) {
			tmps[i] = tmps[--ntmps];
			break;
		}
	return p;
}

static void tfree(void *p)
{
	free(tkeep(p));
}

static void tfree_all(void)
{
	while (ntmps)
		free(tmps[--ntmps]);
	free(tmps);
	tmps = NULL;
}

/* ---- messages ---------------------------------------------------------------- */

static const char *ename(long long r)
{
	static char bufs[4][32];
	static unsigned k;
	char *b = bufs[k++ % 4];

	switch (-r) {
#define E(x) case x: return "-" #x;
	E(ENOENT) E(EEXIST) E(ENOTDIR) E(EISDIR) E(EINVAL) E(ENOTEMPTY)
	E(ENAMETOOLONG) E(EPERM) E(ENOSPC) E(ENODATA) E(ERANGE) E(E2BIG)
	E(EIO) E(EFBIG) E(EUCLEAN) E(EBADMSG) E(EOPNOTSUPP) E(ESTALE)
	E(EMLINK) E(EROFS) E(ENOMEM) E(EBUSY) E(EXDEV) E(EBADF) E(ELOOP)
#undef E
	}
	snprintf(b, sizeof(bufs[0]), "%lld", r);
	return b;
}

/* Long names make unreadable messages: show the head and the length. */
static const char *shortname(const char *name, char *buf, size_t sz)
{
	size_t len = strlen(name);

	if (len <= 40)
		snprintf(buf, sz, "%s", name);
	else
		snprintf(buf, sz, "%.24s...(%zu bytes)", name, len);
	return buf;
}

/* shortname() into one of a few rotating buffers, for messages. */
static const char *sname(const char *name)
{
	static char bufs[4][64];
	static unsigned k;

	return shortname(name, bufs[k++ % 4], sizeof(bufs[0]));
}

static const char *dent_name(const struct mnode *n)
{
	const struct mnode *p = n->parent;

	for (size_t i = 0; p && i < p->nde; i++)
		if (p->de[i].n == n)
			return p->de[i].name;
	return "?";
}

static void dir_path(const struct mnode *d, char *out, size_t sz, int depth)
{
	char sb[64];
	size_t l;

	if (d == g.root) {
		out[0] = 0;
		return;
	}
	if (d->type != T_DIR || !d->parent || depth > 64) {
		snprintf(out, sz, "[ino %#x]", d->ino);
		return;
	}
	dir_path(d->parent, out, sz, depth + 1);
	l = strlen(out);
	snprintf(out + l, sz - l, "/%s", shortname(dent_name(d), sb, sizeof(sb)));
}

/* "/a/b/name" for name in d; d may be a file standing in for a directory. */
static const char *path(const struct mnode *d, const char *name)
{
	static char bufs[6][1024];
	static unsigned k;
	char *b = bufs[k++ % 6], sb[64];
	size_t l;

	if (!d)
		return "/";
	dir_path(d, b, sizeof(bufs[0]), 0);
	l = strlen(b);
	snprintf(b + l, sizeof(bufs[0]) - l, "/%s", shortname(name, sb, sizeof(sb)));
	return b;
}

static const char *dpath(const struct mnode *d)
{
	return d == g.root ? "/" : path(d->parent, dent_name(d));
}

static void describe(const char *fmt, ...)
{
	va_list ap;
	unsigned k = g.nhist++ % HIST;

	va_start(ap, fmt);
	vsnprintf(g.desc, sizeof(g.desc), fmt, ap);
	va_end(ap);
	memcpy(g.hist[k], g.desc, sizeof(g.desc));
	g.hist_no[k] = g.opno;
	if (g.trace)
		fprintf(stderr, "#%ld %s\n", g.opno, g.desc);
}

static void report(const char *what)
{
	unsigned n = g.nhist < HIST ? g.nhist : HIST;

	fprintf(stderr, "model: %s, config %s, seed %llu, op #%ld of %ld\n", what,
		g.cfg ? g.cfg->name : "?", (unsigned long long)g.seed, g.opno,
		g.nops);
	fprintf(stderr, "  operations up to it (the last one failed):\n");
	for (unsigned i = g.nhist - n; i < g.nhist; i++)
		fprintf(stderr, "    #%ld %s\n", g.hist_no[i % HIST], g.hist[i % HIST]);
	fprintf(stderr, "  replay: CHUNKFS_MODEL_CONFIG=%s CHUNKFS_MODEL_SEED=%llu "
		"CHUNKFS_MODEL_OPS=%ld CHUNKFS_MODEL_TRACE=1\n",
		g.cfg ? g.cfg->name : "?", (unsigned long long)g.seed, g.opno);
}

#define MFAIL(...)                                                            \
	do {                                                                  \
		report("MISMATCH");                                           \
		TEST_FAIL(__VA_ARGS__);                                       \
	} while (0)

/* A crash (a sanitizer report, a signal) names the op it happened in. */
extern void __sanitizer_set_death_callback(void (*cb)(void)) __attribute__((weak));

static void on_death(void)
{
	if (g.cfg)
		report("CRASH (the report above or below)");
}

static void on_signal(int sig)
{
	on_death();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_crashes(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };

	if (__sanitizer_set_death_callback) {
		__sanitizer_set_death_callback(on_death);
		return;
	}
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], on_signal);
}

/* ---- model nodes ----------------------------------------------------------- */

static struct mnode *mnode_new(int type, uint32_t mode, uint32_t uid, uint32_t gid,
			       cfs_ino_t ino)
{
	struct mnode *n = xcalloc(1, sizeof(*n));

	n->type = type;
	n->mode = mode;
	n->uid = uid;
	n->gid = gid;
	n->ino = ino;
	n->nlink = type == T_DIR ? 2 : 0;
	g.nodes = vgrow(g.nodes, g.nnodes, sizeof(*g.nodes));
	n->slot = g.nnodes;
	g.nodes[g.nnodes++] = n;
	return n;
}

static void mnode_free(struct mnode *n)
{
	g.nodes[n->slot] = g.nodes[--g.nnodes];
	g.nodes[n->slot]->slot = n->slot;
	for (size_t i = 0; i < n->npg; i++)
		free(n->pg[i].d);
	for (size_t i = 0; i < n->nxa; i++) {
		free(n->xa[i].name);
		free(n->xa[i].val);
	}
	for (size_t i = 0; i < n->nde; i++)
		free(n->de[i].name);
	free(n->pg);
	free(n->xa);
	free(n->de);
	free(n->target);
	free(n);
}

/* Operations leave these alone. */
static int frozen(const struct mnode *n)
{
	return n->fixed || n->ballast;
}

static uint32_t type_fmt(int t)
{
	return t == T_DIR ? S_IFDIR : t == T_LNK ? S_IFLNK : S_IFREG;
}

static uint64_t msize(const struct mnode *n)
{
	return n->type == T_LNK ? strlen(n->target) : n->size;
}

/* ---- model file content: sparse pages -------------------------------------- */

/* Index of the first page at or after idx. */
static size_t pg_lower(const struct mnode *n, uint64_t idx)
{
	size_t lo = 0, hi = n->npg;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (n->pg[mid].idx < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint8_t *pg_get(struct mnode *n, uint64_t idx)
{
	size_t i = pg_lower(n, idx);

	if (i < n->npg && n->pg[i].idx == idx)
		return n->pg[i].d;
	n->pg = vgrow(n->pg, n->npg, sizeof(*n->pg));
	memmove(&n->pg[i + 1], &n->pg[i], (n->npg - i) * sizeof(*n->pg));
	n->pg[i].idx = idx;
	n->pg[i].d = xcalloc(1, MPAGE);
	n->npg++;
	return n->pg[i].d;
}

/* Store bytes and grow the size to cover them (a 0-byte write never does). */
static void mc_write(struct mnode *n, uint64_t off, const uint8_t *src, size_t len)
{
	if (len && off + len > n->size)
		n->size = off + len;
	while (len) {
		size_t po = off % MPAGE, k = MPAGE - po < len ? MPAGE - po : len;

		memcpy(pg_get(n, off / MPAGE) + po, src, k);
		off += k;
		src += k;
		len -= k;
	}
}

/* Bytes regardless of the size: beyond it the model always holds zeros. */
static void mc_read(const struct mnode *n, uint64_t off, uint8_t *dst, size_t len)
{
	size_t i = pg_lower(n, off / MPAGE);

	while (len) {
		uint64_t idx = off / MPAGE;
		size_t po = off % MPAGE, k = MPAGE - po < len ? MPAGE - po : len;

		while (i < n->npg && n->pg[i].idx < idx)
			i++;
		if (i < n->npg && n->pg[i].idx == idx)
			memcpy(dst, n->pg[i].d + po, k);
		else
			memset(dst, 0, k);
		off += k;
		dst += k;
		len -= k;
	}
}

/* Shrinking zeroes what falls off, so growing again reads zeros. */
static void mc_truncate(struct mnode *n, uint64_t size)
{
	if (size < n->size) {
		size_t i = pg_lower(n, (size + MPAGE - 1) / MPAGE);

		for (size_t j = i; j < n->npg; j++)
			free(n->pg[j].d);
		n->npg = i;
		if (size % MPAGE && i && n->pg[i - 1].idx == size / MPAGE)
			memset(n->pg[i - 1].d + size % MPAGE, 0, MPAGE - size % MPAGE);
	}
	n->size = size;
}

/* ---- model directories ------------------------------------------------------ */

static struct mdent *dent_find(const struct mnode *d, const char *name)
{
	if (d->type != T_DIR)
		return NULL;
	for (size_t i = 0; i < d->nde; i++)
		if (!strcmp(d->de[i].name, name))
			return &d->de[i];
	return NULL;
}

static struct mnode *dent_node(const struct mnode *d, const char *name)
{
	struct mdent *de = dent_find(d, name);

	return de ? de->n : NULL;
}

static void dent_push(struct mnode *d, const char *name, struct mnode *n)
{
	d->de = vgrow(d->de, d->nde, sizeof(*d->de));
	d->de[d->nde].name = xstrdup(name);
	d->de[d->nde].n = n;
	d->nde++;
}

/* Link counts as on ext4: a directory has 2 + one per subdirectory. */
static void m_attach(struct mnode *d, const char *name, struct mnode *n)
{
	dent_push(d, name, n);
	if (n->type == T_DIR) {
		d->nlink++;
		n->parent = d;
	} else {
		n->nlink++;
	}
}

static struct mnode *m_detach(struct mnode *d, const char *name)
{
	struct mdent *de = dent_find(d, name);
	struct mnode *n = de->n;

	free(de->name);
	*de = d->de[--d->nde];
	if (n->type == T_DIR) {
		d->nlink--;
		n->parent = NULL;
	} else {
		n->nlink--;
	}
	return n;
}

/* Free a node no name refers to any more. */
static void m_release(struct mnode *n)
{
	if (n->type == T_DIR ? !n->parent : !n->nlink)
		mnode_free(n);
}

/* d is a, or lies below a. */
static int is_within(const struct mnode *d, const struct mnode *a)
{
	for (int depth = 0; depth < 100000; depth++) {
		if (d == a)
			return 1;
		if (d == g.root || !d->parent)
			return 0;
		d = d->parent;
	}
	return 0;
}

/* ---- model xattrs ------------------------------------------------------------- */

static struct mxattr *xa_find(const struct mnode *n, const char *name)
{
	for (size_t i = 0; i < n->nxa; i++)
		if (!strcmp(n->xa[i].name, name))
			return &n->xa[i];
	return NULL;
}

static void xa_set(struct mnode *n, const char *name, const uint8_t *v, size_t len)
{
	struct mxattr *x = xa_find(n, name);

	if (!x) {
		n->xa = vgrow(n->xa, n->nxa, sizeof(*n->xa));
		x = &n->xa[n->nxa++];
		x->name = xstrdup(name);
	} else {
		free(x->val);
	}
	x->val = memcpy(xmalloc(len), v, len);
	x->len = len;
}

static void xa_del(struct mnode *n, const char *name)
{
	struct mxattr *x = xa_find(n, name);

	free(x->name);
	free(x->val);
	*x = n->xa[--n->nxa];
}

/* Rough bytes the xattrs take with name replaced by len bytes: up to half a
 * block must always fit (in the inode plus one overflow block). */
static size_t xa_cost_with(const struct mnode *n, const char *name, size_t len)
{
	size_t c = strlen(name) + len + 32;

	for (size_t i = 0; i < n->nxa; i++)
		if (strcmp(n->xa[i].name, name))
			c += strlen(n->xa[i].name) + n->xa[i].len + 32;
	return c;
}

static size_t xa_list_len(const struct mnode *n)
{
	size_t c = 0;

	for (size_t i = 0; i < n->nxa; i++)
		c += strlen(n->xa[i].name) + 1;
	return c;
}

/* ---- expectations ------------------------------------------------------------- */

/* The errors an operation may give: none means it must succeed;
 * may_succeed allows success too (e.g. a big xattr that may not fit). */
struct expect {
	int n;
	int err[8];
	int may_succeed;
};

static void ex(struct expect *e, int err)
{
	for (int i = 0; i < e->n; i++)
		if (e->err[i] == err)
			return;
	if (e->n < 8)
		e->err[e->n++] = err;
}

static const char *ex_str(const struct expect *e)
{
	static char buf[160];
	size_t l = 0;

	buf[0] = 0;
	if (!e->n || e->may_succeed)
		l += snprintf(buf, sizeof(buf), "success");
	for (int i = 0; i < e->n && l < sizeof(buf); i++)
		l += snprintf(buf + l, sizeof(buf) - l, "%s%s", l ? " or " : "",
			      ename(-e->err[i]));
	return buf;
}

static struct cfs_statfs get_statfs(void)
{
	struct cfs_statfs st;
	int r = cfs_statfs(g.fs, &st);

	if (r)
		MFAIL("cfs_statfs: %s", ename(r));
	return st;
}

/* What an op may allocate, to judge whether -ENOSPC is fair.  NULL: the op
 * allocates nothing and must never give it. */
struct need {
	uint64_t blocks;                /* data or directory blocks */
	const struct mnode *grow;       /* whose chain they extend (NULL: none) */
	const struct mnode *parent;     /* a new inode's directory (NULL: none) */
	uint32_t inode_blocks;          /* blocks the new inode needs at home */
};

#define NEED(...) (&(struct need){ __VA_ARGS__ })

/* What a normal allocation may take of a chunk: its free inodes and blocks
 * less the repair reserve only fsck allocates. */
static uint64_t avail_inodes(const struct cfs_chunk_info *ci)
{
	return ci->free_inodes > CFS_REPAIR_INODES ? ci->free_inodes - CFS_REPAIR_INODES : 0;
}

static uint64_t avail_blocks(const struct cfs_chunk_info *ci)
{
	return ci->free_blocks > CFS_REPAIR_BLOCKS ? ci->free_blocks - CFS_REPAIR_BLOCKS : 0;
}

/* Blocks a file or directory can still get: in a chunk it already lives
 * in (head or continuation) any free block; elsewhere a continuation needs
 * a free inode of the same chunk. */
static uint64_t usable_blocks(const struct mnode *n)
{
	uint32_t chain[CFS_MAX_CHUNKS];
	int k = n ? cfs_file_chunks(g.fs, n->ino, chain, CFS_MAX_CHUNKS) : 0;
	struct cfs_chunk_info ci;
	uint64_t sum = 0;

	for (uint32_t c = 0; c < g.cfg->chunks; c++) {
		int in = 0;

		for (int i = 0; i < k && i < CFS_MAX_CHUNKS; i++)
			in |= chain[i] == c;
		if (!cfs_get_chunk_info(g.fs, c, &ci) && (in || avail_inodes(&ci)))
			sum += avail_blocks(&ci);
	}
	return sum;
}

/* Whether some chunk can take a new inode of directory d with `blocks`
 * blocks of its own: d's chunk needs one free inode, another chunk two
 * (the inode and the stub d's entry needs). */
static int inode_home(const struct mnode *d, uint32_t blocks)
{
	struct cfs_chunk_info ci;

	for (uint32_t c = 0; c < g.cfg->chunks; c++)
		if (!cfs_get_chunk_info(g.fs, c, &ci) && avail_blocks(&ci) >= blocks &&
		    avail_inodes(&ci) >= (c == CFS_INO_CHUNK(d->ino) ? 1u : 2u))
			return 1;
	return 0;
}

/* Whether -ENOSPC is a fair answer: the filesystem as a whole is nearly
 * full (chunks fill unevenly, so "nearly" leaves a few blocks and inodes
 * per chunk), or what the op needs cannot be had where the format needs
 * it. */
static int nospc_fair(const struct need *nd)
{
	struct cfs_statfs st = get_statfs();
	uint64_t want = nd->blocks + nd->blocks / 8;

	if (st.bavail < want + g.cfg->chunks * 8ull + 32 ||
	    st.ffree < g.cfg->chunks * (2ull + CFS_REPAIR_INODES) + 8)
		return 1;
	if (nd->blocks && usable_blocks(nd->grow) < want + 8)
		return 1;
	return nd->parent && !inode_home(nd->parent, nd->inode_blocks);
}

static void print_chunks(void);

/* Some space must come from one particular chunk, whatever the rest of the
 * filesystem has: an xattr overflows to a block in its inode's chunk, and
 * a directory entry naming an inode of another chunk needs a stub inode in
 * the named inode's chunk (the back pointer).  -ENOSPC is fair when that
 * chunk is out of what is needed. */
static void hint_chunk(uint32_t chunk, int inode)
{
	g.hint.chunk[g.hint.chunk[0] < 0 ? 0 : 1] = chunk;
	g.hint.inode = inode;
}

static int chunk_nospc_fair(void)
{
	struct cfs_chunk_info ci;

	for (int i = 0; i < 2; i++) {
		/* both hints on one chunk: two stubs there (an exchange) */
		uint64_t need = 1 + (i == 0 && g.hint.chunk[1] == g.hint.chunk[0]);

		if (g.hint.chunk[i] < 0 ||
		    cfs_get_chunk_info(g.fs, (uint32_t)g.hint.chunk[i], &ci))
			continue;
		if (g.hint.inode ? avail_inodes(&ci) < need : avail_blocks(&ci) < 2)
			return 1;
	}
	return 0;
}

static void hint_clear(void)
{
	g.hint.chunk[0] = g.hint.chunk[1] = -1;
}

/* Judge the library's answer: 1 if the op took effect, 0 if it failed in a
 * way the model allows (and then nothing may have changed). */
static int judge(long long r, const struct expect *e, const struct need *nd)
{
	int ok_success = !e->n || e->may_succeed;
	int chunk_fair = r == -ENOSPC && chunk_nospc_fair();

	hint_clear();
	if (r >= 0 && ok_success)
		return 1;
	for (int i = 0; i < e->n; i++)
		if (r == -e->err[i])
			return 0;
	if (r == -ENOSPC && ok_success && nd && !nospc_fair(nd) && chunk_fair) {
		g.nospc_chunk++;
		return 0;
	}
	if (r == -ENOSPC && ok_success && nd) {
		if (!nospc_fair(nd)) {
			struct cfs_statfs st = get_statfs();

			print_chunks();
			MFAIL("-ENOSPC although %llu blocks and %llu inodes are free",
			      (unsigned long long)st.bfree,
			      (unsigned long long)st.ffree);
		}
		g.nospc++;
		return 0;
	}
	MFAIL("library returned %s, model expects %s", ename(r), ex_str(e));
}

/* ---- comparing one object ------------------------------------------------------- */

static void check_attr(const struct mnode *n, const char *what)
{
	struct cfs_stat st;
	int r = cfs_getattr(g.fs, n->ino, &st);

	if (r)
		MFAIL("getattr %s (ino %#x): %s", what, n->ino, ename(r));
	if (st.ino == n->ino && st.mode == n->mode && st.nlink == n->nlink &&
	    st.uid == n->uid && st.gid == n->gid &&
	    (n->type == T_DIR || st.size == msize(n)))
		return;
	MFAIL("getattr %s: library ino %#x mode %o nlink %u uid %u gid %u size %llu;"
	      " model ino %#x mode %o nlink %u uid %u gid %u size %llu%s",
	      what, st.ino, st.mode, st.nlink, st.uid, st.gid,
	      (unsigned long long)st.size, n->ino, n->mode, n->nlink, n->uid,
	      n->gid, (unsigned long long)msize(n),
	      n->type == T_DIR ? " (directory size not compared)" : "");
}

static void check_lookup(const struct mnode *d, const char *name)
{
	struct expect e = {0};
	struct mnode *n = dent_node(d, name);
	cfs_ino_t ino = 0;
	int r = cfs_lookup(g.fs, d->ino, name, &ino);

	if (d->type != T_DIR)
		ex(&e, ENOTDIR);
	if (strlen(name) > CFS_NAME_MAX)
		ex(&e, ENAMETOOLONG);
	if (!e.n && !n)
		ex(&e, ENOENT);
	if (r == 0 && !e.n && ino == n->ino)
		return;
	for (int i = 0; r && i < e.n; i++)
		if (r == -e.err[i])
			return;
	MFAIL("lookup %s: library %s ino %#x, model %s ino %#x", path(d, name),
	      ename(r), r ? 0 : ino, ex_str(&e), n ? n->ino : 0);
}

static void check_range(const struct mnode *n, uint64_t off, size_t len,
			const char *what)
{
	size_t want = off >= n->size ? 0 :
		      n->size - off < len ? (size_t)(n->size - off) : len;
	uint8_t *got = talloc(len), *exp = talloc(want);
	ssize_t r = cfs_read(g.fs, n->ino, got, len, off);
	size_t i, diff = 0;

	if (r != (ssize_t)want)
		MFAIL("read %s off %llu len %zu: library returned %s, model %zu bytes"
		      " (size %llu)", what, (unsigned long long)off, len,
		      ename(r), want, (unsigned long long)n->size);
	mc_read(n, off, exp, want);
	if (memcmp(got, exp, want)) {
		for (i = 0; got[i] == exp[i]; i++)
			;
		for (size_t j = i; j < want; j++)
			diff += got[j] != exp[j];
		MFAIL("read %s off %llu len %zu: first difference at file offset %llu:"
		      " library %02x, model %02x (%zu of %zu bytes differ)", what,
		      (unsigned long long)off, len, (unsigned long long)(off + i),
		      got[i], exp[i], diff, want);
	}
	tfree(got);
	tfree(exp);
}

static void check_span(const struct mnode *n, uint64_t from, uint64_t to,
		       const char *what)
{
	while (from < to) {
		size_t k = to - from < 262144 ? (size_t)(to - from) : 262144;

		check_range(n, from, k, what);
		from += k;
	}
}

/* Holes read as zeros; a huge one is sampled (its ends and a few places). */
static void check_hole(const struct mnode *n, uint64_t from, uint64_t to,
		       const char *what)
{
	if (to - from <= 262144) {
		check_span(n, from, to, what);
		return;
	}
	check_span(n, from, from + 65536, what);
	check_span(n, to - 65536, to, what);
	for (int i = 0; i < 3; i++) {
		uint64_t at = from + mix(&crng) % (to - from - 4096);

		check_range(n, at, 4096, what);
	}
}

/* The whole file: every written page run, the holes between, EOF. */
static void check_content(const struct mnode *n, const char *what)
{
	uint64_t pos = 0;
	size_t i = 0;

	while (pos < n->size) {
		uint64_t ds = i < n->npg ? n->pg[i].idx * MPAGE : n->size;
		size_t j = i;

		if (ds > n->size)
			ds = n->size;
		if (ds > pos) {
			check_hole(n, pos, ds, what);
			pos = ds;
			continue;
		}
		while (j + 1 < n->npg && n->pg[j + 1].idx == n->pg[j].idx + 1)
			j++;
		ds = (n->pg[j].idx + 1) * MPAGE;
		if (ds > n->size)
			ds = n->size;
		check_span(n, pos, ds, what);
		pos = ds;
		i = j + 1;
	}
	check_range(n, n->size, 64, what);
}

static void check_link(const struct mnode *n, const char *what)
{
	size_t len = strlen(n->target);
	char *buf = talloc(len + 16);
	ssize_t r = cfs_readlink(g.fs, n->ino, buf, len + 16);

	if (r != (ssize_t)len || memcmp(buf, n->target, len))
		MFAIL("readlink %s: library %s \"%.*s\", model %zu \"%s\"", what,
		      ename(r), r > 0 ? (int)r : 0, buf, len, n->target);
	tfree(buf);
}

static void check_xattr_one(const struct mnode *n, const char *name,
			    const char *what)
{
	struct mxattr *x = xa_find(n, name);
	ssize_t r = cfs_getxattr(g.fs, n->ino, name, NULL, 0);
	uint8_t *buf;

	if (!x) {
		if (r != -ENODATA)
			MFAIL("getxattr %s %s: library %s, model -ENODATA", what, sname(name),
			      ename(r));
		return;
	}
	if (r != (ssize_t)x->len)
		MFAIL("getxattr %s %s size query: library %s, model %zu", what, sname(name),
		      ename(r), x->len);
	buf = talloc(x->len);
	r = cfs_getxattr(g.fs, n->ino, name, buf, x->len);
	if (r != (ssize_t)x->len || memcmp(buf, x->val, x->len))
		MFAIL("getxattr %s %s: library %s bytes%s, model %zu", what, sname(name),
		      ename(r), r == (ssize_t)x->len ? " (different)" : "", x->len);
	tfree(buf);
}

static void check_xattrs(const struct mnode *n, const char *what)
{
	size_t want = xa_list_len(n), count = 0;
	ssize_t r = cfs_listxattr(g.fs, n->ino, NULL, 0);
	char *buf;

	if (r != (ssize_t)want)
		MFAIL("listxattr %s size query: library %s, model %zu (%zu names)",
		      what, ename(r), want, n->nxa);
	buf = talloc(want + 1);
	r = cfs_listxattr(g.fs, n->ino, buf, want);
	if (r != (ssize_t)want)
		MFAIL("listxattr %s: library %s, model %zu", what, ename(r), want);
	for (size_t p = 0; p < want; p += strlen(buf + p) + 1, count++) {
		buf[want] = 0;
		if (!xa_find(n, buf + p))
			MFAIL("listxattr %s: library lists \"%s\", model has no such"
			      " xattr", what, buf + p);
	}
	if (count != n->nxa)
		MFAIL("listxattr %s: library lists %zu names, model %zu", what, count,
		      n->nxa);
	tfree(buf);
	for (size_t i = 0; i < n->nxa; i++)
		check_xattr_one(n, n->xa[i].name, what);
}

/* ---- readdir ------------------------------------------------------------------ */

struct rdent {
	char *name;
	cfs_ino_t ino;
	uint32_t dtype;
};

struct rdctx {
	struct rdent *e;
	size_t n;
	size_t limit, taken, max;
	int stopped;                    /* 1 = by limit, 2 = runaway */
	uint64_t cookie;
	int used;
};

/* Listings live in a small static pool (the import recurses), so a failed
 * check leaves nothing behind: model_reset() empties it. */
static struct rdctx rd_pool[8];

static struct rdctx *rd_get(size_t limit, size_t max)
{
	for (size_t i = 0; i < sizeof(rd_pool) / sizeof(rd_pool[0]); i++) {
		struct rdctx *c = &rd_pool[i];

		if (!c->used) {
			memset(c, 0, sizeof(*c));
			c->used = 1;
			c->limit = limit;
			c->max = max;
			return c;
		}
	}
	abort();
}

static int rd_fill(void *ctx, const char *name, size_t namelen, cfs_ino_t ino,
		   uint32_t dtype, uint64_t next_cookie)
{
	struct rdctx *c = ctx;
	char *s;

	if (c->limit && c->taken == c->limit) {
		c->stopped = 1;
		return 1;
	}
	if (c->n >= c->max) {
		c->stopped = 2;
		return 1;
	}
	s = xmalloc(namelen + 1);
	memcpy(s, name, namelen);
	s[namelen] = 0;
	c->e = vgrow(c->e, c->n, sizeof(*c->e));
	c->e[c->n++] = (struct rdent){ s, ino, dtype };
	c->taken++;
	c->cookie = next_cookie;
	return 0;
}

static void rd_free(struct rdctx *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->e[i].name);
	free(c->e);
	memset(c, 0, sizeof(*c));
}

static void rd_free_all(void)
{
	for (size_t i = 0; i < sizeof(rd_pool) / sizeof(rd_pool[0]); i++)
		if (rd_pool[i].used)
			rd_free(&rd_pool[i]);
}

/* A whole directory, step entries per cfs_readdir call (0 = all at once),
 * resuming each time from the cookie of the last entry taken. */
static struct rdctx *read_dir(const struct mnode *d, size_t step, size_t max)
{
	struct rdctx *c = rd_get(step, max);
	uint64_t cookie = 0;
	int r;

	for (;;) {
		c->limit = step;
		c->taken = 0;
		c->stopped = 0;
		r = cfs_readdir(g.fs, d->ino, cookie, rd_fill, c);
		if (r < 0)
			MFAIL("readdir %s (cookie %llu): %s", dpath(d),
			      (unsigned long long)cookie, ename(r));
		if (c->stopped == 2)
			MFAIL("readdir %s: more than %zu entries (model has %zu):"
			      " looping?", dpath(d), max, d->nde);
		if (!c->stopped)
			return c;
		cookie = c->cookie;
	}
}

static int rd_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rdent *)a)->name, ((const struct rdent *)b)->name);
}

static uint32_t type_dt(int t)
{
	return t == T_DIR ? DT_DIR : t == T_LNK ? DT_LNK : DT_REG;
}

static void rd_print_diff(const struct mnode *d, struct rdctx *c)
{
	struct rdent key;
	char sb[64];
	int shown = 0;

	for (size_t i = 2; i < c->n && shown < 10; i++)
		if (!dent_find(d, c->e[i].name) && ++shown)
			fprintf(stderr, "  only in library: \"%s\" ino %#x\n",
				shortname(c->e[i].name, sb, sizeof(sb)), c->e[i].ino);
	for (size_t i = 0; i < d->nde && shown < 20; i++) {
		key.name = d->de[i].name;
		if (!bsearch(&key, c->e + 2, c->n - 2, sizeof(key), rd_cmp) && ++shown)
			fprintf(stderr, "  only in model: \"%s\" ino %#x\n",
				shortname(d->de[i].name, sb, sizeof(sb)),
				d->de[i].n->ino);
	}
}

static void check_dots(const struct mnode *d, const struct rdctx *c)
{
	if (c->n < 2 || strcmp(c->e[0].name, ".") || strcmp(c->e[1].name, ".."))
		MFAIL("readdir %s: does not start with \".\" and \"..\" (%zu entries,"
		      " first \"%s\")", dpath(d), c->n, c->n ? c->e[0].name : "");
	if (c->e[0].ino != d->ino || c->e[1].ino != d->parent->ino)
		MFAIL("readdir %s: \".\" is ino %#x and \"..\" ino %#x; model %#x and"
		      " %#x", dpath(d), c->e[0].ino, c->e[1].ino, d->ino,
		      d->parent->ino);
}

/* The set of names, their inodes and types; "." and ".." first. */
static void check_readdir(const struct mnode *d, size_t step)
{
	struct rdctx *c = read_dir(d, step, d->nde + 64);
	struct rdent key, *hit;

	check_dots(d, c);
	qsort(c->e + 2, c->n - 2, sizeof(*c->e), rd_cmp);
	for (size_t i = 3; i < c->n; i++)
		if (!strcmp(c->e[i].name, c->e[i - 1].name))
			MFAIL("readdir %s (step %zu): \"%s\" listed twice", dpath(d),
			      step, c->e[i].name);
	if (c->n - 2 != d->nde) {
		rd_print_diff(d, c);
		MFAIL("readdir %s (step %zu): %zu entries, model has %zu", dpath(d),
		      step, c->n - 2, d->nde);
	}
	for (size_t i = 0; i < d->nde; i++) {
		key.name = d->de[i].name;
		hit = bsearch(&key, c->e + 2, c->n - 2, sizeof(key), rd_cmp);
		if (!hit) {
			rd_print_diff(d, c);
			MFAIL("readdir %s: \"%s\" missing", dpath(d), d->de[i].name);
		}
		if (hit->ino != d->de[i].n->ino || hit->dtype != type_dt(d->de[i].n->type))
			MFAIL("readdir %s: \"%s\" is ino %#x type %u, model ino %#x type"
			      " %u", dpath(d), hit->name, hit->ino, hit->dtype,
			      d->de[i].n->ino, type_dt(d->de[i].n->type));
	}
	rd_free(c);
}

/* Only the first two entries: ".." must name the (new) parent. */
static void check_dotdot(const struct mnode *d)
{
	struct rdctx *c = rd_get(2, 2);
	int r = cfs_readdir(g.fs, d->ino, 0, rd_fill, c);

	if (r < 0)
		MFAIL("readdir %s: %s", dpath(d), ename(r));
	check_dots(d, c);
	rd_free(c);
}

/* ---- comparing everything ------------------------------------------------------ */

static void check_node(const struct mnode *n, const char *what)
{
	check_attr(n, what);
	if (n->type == T_REG)
		check_content(n, what);
	if (n->type == T_LNK)
		check_link(n, what);
	check_xattrs(n, what);
}

static size_t walk(struct mnode *d)
{
	size_t count = 0;

	check_readdir(d, 0);
	for (size_t i = 0; i < d->nde; i++) {
		struct mnode *n = d->de[i].n;

		check_lookup(d, d->de[i].name);
		if (n->visit == g.visit)
			continue;
		n->visit = g.visit;
		count++;
		check_node(n, path(d, d->de[i].name));
		if (n->type == T_DIR)
			count += walk(n);
	}
	return count;
}

static int ino_cmp(const void *a, const void *b)
{
	cfs_ino_t x = *(const cfs_ino_t *)a, y = *(const cfs_ino_t *)b;

	return x < y ? -1 : x > y;
}

static void compare_tree(void)
{
	cfs_ino_t *inos = talloc(g.nnodes * sizeof(*inos));
	size_t count;

	g.visit++;
	g.root->visit = g.visit;
	check_node(g.root, "/");
	count = 1 + walk(g.root);
	if (count != g.nnodes)
		MFAIL("model bug: %zu nodes reachable of %zu", count, g.nnodes);
	for (size_t i = 0; i < g.nnodes; i++)
		inos[i] = g.nodes[i]->ino;
	qsort(inos, g.nnodes, sizeof(*inos), ino_cmp);
	for (size_t i = 1; i < g.nnodes; i++)
		if (inos[i] == inos[i - 1])
			MFAIL("two different files have ino %#x", inos[i]);
	tfree(inos);
}

/* A new inode must not be one the model still knows under another name. */
static void check_new_ino(const struct mnode *n)
{
	for (size_t i = 0; i < g.nnodes; i++)
		if (g.nodes[i] != n && g.nodes[i]->ino == n->ino)
			MFAIL("new inode %#x is already in use", n->ino);
}

static void chunk_totals(uint64_t *conts, uint64_t *xrefs, uint64_t *clusters);

/* Sane, and the sum of the chunks' own counts; notes the peak numbers of
 * continuations and stubs, to show the run exercised them. */
static void check_statfs(void)
{
	struct cfs_statfs st = get_statfs();
	struct cfs_chunk_info ci;
	uint64_t blocks = 0, bfree = 0, files = 0, ffree = 0, conts, xrefs, nclusters = 0;

	for (uint32_t c = 0; c < g.cfg->chunks; c++) {
		int r = cfs_get_chunk_info(g.fs, c, &ci);

		if (r)
			MFAIL("cfs_get_chunk_info %u: %s", c, ename(r));
		if (ci.free_blocks > ci.blocks || ci.free_inodes > ci.inodes)
			MFAIL("chunk %u: %llu of %llu blocks free, %llu of %llu inodes",
			      c, (unsigned long long)ci.free_blocks,
			      (unsigned long long)ci.blocks,
			      (unsigned long long)ci.free_inodes,
			      (unsigned long long)ci.inodes);
		blocks += ci.blocks;
		bfree += ci.free_blocks;
		files += ci.inodes;
		/* statfs leaves out the repair reserve (FORMAT.md 16.4) */
		ffree += ci.free_inodes > CFS_REPAIR_INODES ? ci.free_inodes - CFS_REPAIR_INODES : 0;
		nclusters += ci.clusters;
	}
	if (blocks != st.blocks || bfree != st.bfree || files != st.files ||
	    ffree != st.ffree)
		MFAIL("statfs says %llu/%llu blocks and %llu/%llu inodes free, the"
		      " chunks %llu/%llu and %llu/%llu", (unsigned long long)st.bfree,
		      (unsigned long long)st.blocks, (unsigned long long)st.ffree,
		      (unsigned long long)st.files, (unsigned long long)bfree,
		      (unsigned long long)blocks, (unsigned long long)ffree,
		      (unsigned long long)files);
	chunk_totals(&conts, &xrefs, NULL);
	if (nclusters > g.peak_clusters)
		g.peak_clusters = nclusters;
	if (conts > g.peak_conts)
		g.peak_conts = conts;
	if (xrefs > g.peak_xrefs)
		g.peak_xrefs = xrefs;

	if (st.block_size != g.cfg->bsize || !st.blocks || !st.files ||
	    st.blocks > g.cfg->size / g.cfg->bsize || st.bfree > st.blocks ||
	    st.bavail > st.bfree || st.ffree > st.files ||
	    st.namemax != CFS_NAME_MAX)
		MFAIL("statfs insane: block_size %u blocks %llu bfree %llu bavail %llu"
		      " files %llu ffree %llu namemax %u", st.block_size,
		      (unsigned long long)st.blocks, (unsigned long long)st.bfree,
		      (unsigned long long)st.bavail, (unsigned long long)st.files,
		      (unsigned long long)st.ffree, st.namemax);
}

/* Static, like the readdir contexts: a failed check leaves nothing to free. */
static struct {
	int n;
	size_t len;
	char text[8192];
} reports;

static void report_cb(void *ctx, const char *msg)
{
	(void)ctx;
	if (reports.n++ < 40 && reports.len < sizeof(reports.text))
		reports.len += snprintf(reports.text + reports.len,
					sizeof(reports.text) - reports.len, "    %s\n", msg);
}

static void check_fs(const char *when)
{
	int r;

	reports.n = 0;
	reports.len = 0;
	reports.text[0] = 0;
	r = cfs_check(g.fs, report_cb, NULL);
	if (r != 0) {
		fprintf(stderr, "cfs_check %s reports:\n%s%s", when,
			reports.n ? reports.text : "    (none)\n",
			reports.n > 40 ? "    ...\n" : "");
		MFAIL("cfs_check %s: %s (%d problems reported)", when,
		      r < 0 ? ename(r) : "problems found", reports.n);
	}
}

/* ---- opening: a proxy bdev so cfs_close leaves the bytes behind ----------------- */

struct proxy {
	struct cfs_bdev bd;             /* first: the library sees only this */
	struct cfs_bdev *inner;
};

static struct cfs_bdev *px_inner(struct cfs_bdev *bd)
{
	struct proxy *p = (struct proxy *)bd;

	if (p->inner->block_size != bd->block_size)
		cfs_bdev_set_block_size(p->inner, bd->block_size);
	return p->inner;
}

static int px_read(struct cfs_bdev *bd, uint64_t blk, uint32_t count, void *buf)
{
	return cfs_bdev_read(px_inner(bd), blk, count, buf);
}

static int px_write(struct cfs_bdev *bd, uint64_t blk, uint32_t count,
		    const void *buf)
{
	return cfs_bdev_write(px_inner(bd), blk, count, buf);
}

static int px_flush(struct cfs_bdev *bd)
{
	return cfs_bdev_flush(((struct proxy *)bd)->inner);
}

static void px_destroy(struct cfs_bdev *bd)
{
	free(bd);
}

static const struct cfs_bdev_ops px_ops = {
	.read = px_read, .write = px_write, .flush = px_flush, .destroy = px_destroy,
};

static void fs_open(void)
{
	struct proxy *p = xcalloc(1, sizeof(*p));
	int r;

	p->bd.ops = &px_ops;
	p->bd.block_size = g.dev->block_size;
	p->bd.nblocks = g.dev->nblocks;
	p->inner = g.dev;
	snprintf(p->bd.name, sizeof(p->bd.name), "model-%s", g.cfg->name);
	r = cfs_open_bdev(&p->bd, 0, &g.fs);
	if (r) {
		g.fs = NULL;
		MFAIL("cfs_open_bdev: %s (%s)", ename(r), cfs_last_error());
	}
}

/* cfs_close marks every chunk clean, and opening must not dirty them. */
static void remount(void)
{
	struct cfs_chunk_info ci;
	int r = cfs_close(g.fs);

	g.fs = NULL;
	if (r)
		MFAIL("cfs_close: %s", ename(r));
	fs_open();
	g.remounts++;
	for (uint32_t c = 0; c < g.cfg->chunks; c++) {
		r = cfs_get_chunk_info(g.fs, c, &ci);
		if (r || ci.state != CFS_CHUNK_CLEAN)
			MFAIL("after close and reopen chunk %u: %s, state %d (want"
			      " clean)", c, ename(r), r ? -1 : ci.state);
	}
}

static void checkpoint(const char *why)
{
	int r;

	describe("checkpoint (%s): sync, check, close, reopen, check, compare"
		 " the whole tree", why);
	r = cfs_sync(g.fs);
	if (r)
		MFAIL("cfs_sync: %s", ename(r));
	check_statfs();
	check_fs("on the open filesystem after cfs_sync");
	remount();
	check_fs("after close and reopen");
	compare_tree();
	check_statfs();
}

/* ---- picking things --------------------------------------------------------- */

struct pick {
	struct mnode *dir;              /* NULL: n is the root */
	struct mnode *n;                /* NULL: the name does not exist */
	char name[CFS_NAME_MAX + 2];
};

static const char *label(const struct pick *p)
{
	return p->dir ? path(p->dir, p->name) : "/";
}

static int dir_usable(const struct mnode *d)
{
	return d->type == T_DIR && !frozen(d);
}

/* A random directory the test may change (any but those mkfs made). */
static struct mnode *pick_dir(void)
{
	size_t cnt = 0, k = 0;

	for (size_t i = 0; i < g.nnodes; i++)
		cnt += dir_usable(g.nodes[i]);
	k = rn(cnt);
	for (size_t i = 0; i < g.nnodes; i++)
		if (dir_usable(g.nodes[i]) && k-- == 0)
			return g.nodes[i];
	return g.root;
}

/* The directory with most entries: new names go there now and then, so
 * one directory grows large (index splits, continuations in other chunks). */
static struct mnode *biggest_dir(void)
{
	struct mnode *best = g.root;

	for (size_t i = 0; i < g.nnodes; i++)
		if (dir_usable(g.nodes[i]) && g.nodes[i]->nde > best->nde)
			best = g.nodes[i];
	return best;
}

/* A random existing name whose node has one of the types in mask. */
static int pick_dent(struct pick *p, unsigned mask)
{
	size_t cnt = 0, k = 0;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < g.nnodes; i++) {
			struct mnode *d = g.nodes[i];

			if (!dir_usable(d))
				continue;
			for (size_t j = 0; j < d->nde; j++) {
				struct mnode *n = d->de[j].n;

				if (frozen(n) || !(mask >> n->type & 1))
					continue;
				if (pass == 0) {
					cnt++;
				} else if (k-- == 0) {
					p->dir = d;
					p->n = n;
					strcpy(p->name, d->de[j].name);
					return 1;
				}
			}
		}
		if (!cnt)
			return 0;
		k = rn(cnt);
	}
	return 0;
}

/* Something to hang attributes on: sometimes the root. */
static int pick_node(struct pick *p, unsigned mask)
{
	if (chance(8)) {
		p->dir = NULL;
		p->n = g.root;
		p->name[0] = 0;
		return 1;
	}
	return pick_dent(p, mask);
}

static void gen_chars(char *out, size_t len)
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				  "0123456789 -_.,+=~#@!%";

	for (size_t i = 0; i < len; i++)
		out[i] = set[rn(sizeof(set) - 1)];
	out[len] = 0;
}

/* Names: mostly from a small pool so they collide, some random, some
 * UTF-8, now and then the longest allowed. */
static void gen_name(char *out)
{
	unsigned k = rn(100);

	if (k < 55) {
		sprintf(out, "n%u", (unsigned)rn(24));
	} else if (k < 62) {
		sprintf(out, "\xc3\xa9t\xc3\xa9-%u", (unsigned)rn(1000));
	} else if (k < 64) {
		gen_chars(out, CFS_NAME_MAX);
	} else {
		gen_chars(out, rrange(1, 24));
		if (!strcmp(out, ".") || !strcmp(out, ".."))
			strcpy(out, "dots");
	}
}

/* A name not in d (d a directory). */
static void fresh_name(const struct mnode *d, char *out)
{
	do
		gen_chars(out, rrange(4, 12));
	while (dent_find(d, out));
}

static void fill_target_node(struct pick *t)
{
	t->n = t->dir->type == T_DIR ? dent_node(t->dir, t->name) : NULL;
}

/* Where a new name goes: a directory and a fresh or colliding name;
 * sometimes a regular file in place of the directory (-ENOTDIR) or a name
 * of 255 (fine) or 256 bytes (-ENAMETOOLONG). */
static void pick_target(struct pick *t)
{
	struct pick f;
	unsigned k;

	if (chance(4) && pick_dent(&f, M_REG))
		t->dir = f.n;
	else if (chance(12))
		t->dir = biggest_dir();
	else
		t->dir = pick_dir();
	k = rn(100);
	if (k < 3) {
		gen_chars(t->name, CFS_NAME_MAX + 1);
	} else if (k < 6) {
		gen_chars(t->name, CFS_NAME_MAX);
	} else if (k < 20 && t->dir->type == T_DIR && t->dir->nde) {
		strcpy(t->name, t->dir->de[rn(t->dir->nde)].name);
	} else {
		gen_name(t->name);
	}
	fill_target_node(t);
}

static void new_name_expect(const struct pick *t, struct expect *e)
{
	if (t->dir->type != T_DIR)
		ex(e, ENOTDIR);
	if (strlen(t->name) > CFS_NAME_MAX)
		ex(e, ENAMETOOLONG);
	if (t->n)
		ex(e, EEXIST);
}

static uint32_t rid(void)
{
	static const uint32_t v[] = { 0, 1, 1000, 1001, 65534 };

	return chance(85) ? v[rn(5)] : (uint32_t)rn(1u << 31);
}

/* After an op that may have added t->name: the name and its directory. */
static void after_new(const struct pick *t)
{
	check_lookup(t->dir, t->name);
	if (t->dir->type == T_DIR)
		check_attr(t->dir, dpath(t->dir));
}

/* ---- operations: namespace ----------------------------------------------------- */

/* create (a regular file) or mkdir.  No setgid directories: their
 * inheritance rules are the caller's. */
static void op_make(int type)
{
	int dir = type == T_DIR;
	struct pick t;
	struct expect e = {0};
	uint32_t mode, uid, gid;
	cfs_ino_t ino = 0;
	int r;

	pick_target(&t);
	new_name_expect(&t, &e);
	mode = dir ? S_IFDIR | ((uint32_t)rn(010000) & 01777) : S_IFREG | (uint32_t)rn(010000);
	uid = rid();
	gid = rid();
	describe("%s %s (dir %#x) mode %o uid %u gid %u", dir ? "mkdir" : "create",
		 label(&t), t.dir->ino, mode, uid, gid);
	r = dir ? cfs_mkdir(g.fs, t.dir->ino, t.name, mode, uid, gid, &ino)
		: cfs_mknod(g.fs, t.dir->ino, t.name, mode, 0, uid, gid, &ino);
	if (judge(r, &e, NEED(.blocks = 1, .grow = t.dir, .parent = t.dir,
				 .inode_blocks = dir))) {
		struct mnode *n = mnode_new(type, mode, uid, gid, ino);

		m_attach(t.dir, t.name, n);
		check_new_ino(n);
		check_attr(n, label(&t));
		if (dir)
			check_readdir(n, 0);
	}
	after_new(&t);
}

static void op_create(void)
{
	op_make(T_REG);
}

static void op_mkdir(void)
{
	op_make(T_DIR);
}

/* ext4 takes a target of up to block size - 1 bytes (PATH_MAX - 1 at most). */
static size_t symlink_len(void)
{
	size_t max = g.cfg->bsize - 1 < 4095 ? g.cfg->bsize - 1 : 4095;
	unsigned k = rn(100);

	if (k < 50)
		return rrange(1, 40);
	if (k < 85)
		return rrange(41, 250);
	return rrange(251, max);
}

static void op_symlink(void)
{
	struct pick t;
	struct expect e = {0};
	size_t len = symlink_len();
	char *target = talloc(len + 1);
	uint32_t uid = rid(), gid = rid();
	cfs_ino_t ino = 0;
	int r;

	pick_target(&t);
	new_name_expect(&t, &e);
	gen_chars(target, len);
	if (chance(30))
		target[0] = '/';
	describe("symlink %s (dir %#x) -> (%zu bytes) uid %u gid %u", label(&t),
		 t.dir->ino, len, uid, gid);
	r = cfs_symlink(g.fs, t.dir->ino, t.name, target, uid, gid, &ino);
	if (judge(r, &e, NEED(.blocks = 1, .grow = t.dir, .parent = t.dir,
				 .inode_blocks = len > g.inline_max))) {
		struct mnode *n = mnode_new(T_LNK, S_IFLNK | 0777, uid, gid, ino);

		n->target = tkeep(target);
		target = NULL;
		m_attach(t.dir, t.name, n);
		check_new_ino(n);
		check_attr(n, label(&t));
		check_link(n, label(&t));
	}
	tfree(target);
	after_new(&t);
}

/* The library returns the target's length, copying at most size bytes. */
static void op_readlink(void)
{
	struct pick p;
	size_t len, size;
	char *buf;
	ssize_t r;

	if (chance(5) && pick_dent(&p, M_REG)) {
		char b[8];

		describe("readlink %s (a regular file)", label(&p));
		r = cfs_readlink(g.fs, p.n->ino, b, sizeof(b));
		if (r != -EINVAL)
			MFAIL("readlink of a regular file: library %s, model -EINVAL",
			      ename(r));
		return;
	}
	if (!pick_dent(&p, M_LNK))
		return;
	len = strlen(p.n->target);
	size = chance(60) ? len + 8 : chance(50) ? len : rn(len);
	describe("readlink %s into %zu bytes (target %zu bytes)", label(&p), size, len);
	buf = talloc(size);
	r = cfs_readlink(g.fs, p.n->ino, buf, size);
	if (r != (ssize_t)len ||
	    memcmp(buf, p.n->target, size < len ? size : len))
		MFAIL("readlink %s into %zu bytes: library %s, model %zu (\"%s\")",
		      label(&p), size, ename(r), len, p.n->target);
	tfree(buf);
}

static void op_link(void)
{
	struct pick s, t;
	struct expect e = {0};
	int r;

	if (!pick_dent(&s, chance(92) ? M_REG | M_LNK : M_DIR))
		return;
	pick_target(&t);
	/* Half the time into a directory of another chunk: a cross-chunk link. */
	for (int i = 0; chance(50) && t.dir->type == T_DIR && i < 8; i++) {
		struct mnode *d = pick_dir();

		if (CFS_INO_CHUNK(d->ino) != CFS_INO_CHUNK(s.n->ino)) {
			t.dir = d;
			fill_target_node(&t);
			break;
		}
	}
	new_name_expect(&t, &e);
	if (s.n->type == T_DIR)
		ex(&e, EPERM);
	describe("link %s (ino %#x, nlink %u) as %s (dir %#x)", label(&s), s.n->ino,
		 s.n->nlink, label(&t), t.dir->ino);
	if (CFS_INO_CHUNK(t.dir->ino) != CFS_INO_CHUNK(s.n->ino))
		hint_chunk(CFS_INO_CHUNK(s.n->ino), 1);
	r = cfs_link(g.fs, s.n->ino, t.dir->ino, t.name);
	if (judge(r, &e, NEED(.blocks = 1, .grow = t.dir)))
		m_attach(t.dir, t.name, s.n);
	check_attr(s.n, label(&s));
	after_new(&t);
}

static void pick_missing(struct pick *p)
{
	struct pick f;

	if (chance(30) && pick_dent(&f, M_REG)) {
		p->dir = f.n;
		gen_name(p->name);
	} else {
		p->dir = pick_dir();
		fresh_name(p->dir, p->name);
	}
	p->n = NULL;
}

static void remove_expect(const struct pick *p, int rmdir, struct expect *e)
{
	if (p->dir->type != T_DIR)
		ex(e, ENOTDIR);
	else if (!p->n)
		ex(e, ENOENT);
	else if (!rmdir && p->n->type == T_DIR)
		ex(e, EISDIR);
	else if (rmdir && p->n->type != T_DIR)
		ex(e, ENOTDIR);
	else if (rmdir && p->n->nde)
		ex(e, ENOTEMPTY);
}

static void op_remove(int rmdir)
{
	struct pick p;
	struct expect e = {0};
	int r;

	if (chance(6))
		pick_missing(&p);
	else if (!pick_dent(&p, !rmdir || chance(15) ? M_ANY : M_DIR))
		return;
	remove_expect(&p, rmdir, &e);
	describe("%s %s", rmdir ? "rmdir" : "unlink", label(&p));
	r = rmdir ? cfs_rmdir(g.fs, p.dir->ino, p.name) :
		    cfs_unlink(g.fs, p.dir->ino, p.name);
	if (judge(r, &e, NULL)) {
		struct mnode *n = m_detach(p.dir, p.name);

		if (n->type != T_DIR && n->nlink)
			check_attr(n, "(its remaining links)");
		m_release(n);
	}
	after_new(&p);
}

static void op_unlink(void)
{
	op_remove(0);
}

static void op_rmdir(void)
{
	op_remove(1);
}

/* A directory at or below a. */
static struct mnode *pick_subdir(const struct mnode *a)
{
	size_t cnt = 0, k = 0;

	for (size_t i = 0; i < g.nnodes; i++)
		cnt += g.nodes[i]->type == T_DIR && is_within(g.nodes[i], a);
	k = rn(cnt);
	for (size_t i = 0; i < g.nnodes; i++)
		if (g.nodes[i]->type == T_DIR && is_within(g.nodes[i], a) && k-- == 0)
			return g.nodes[i];
	return NULL;
}

static void rename_source(struct pick *s)
{
	if (chance(5))
		pick_missing(s);
	else if (!pick_dent(s, chance(30) ? M_DIR : M_ANY))
		pick_missing(s);
}

/* Targets that hit each rule: itself, its own subtree, an ancestor, an
 * existing name, or anything. */
static int rename_target(const struct pick *s, struct pick *t)
{
	unsigned k = rn(100);

	if (k < 6 && s->dir->type == T_DIR) {
		t->dir = s->dir;
		strcpy(t->name, s->name);
	} else if (k < 14 && s->n && s->n->type == T_DIR) {
		t->dir = pick_subdir(s->n);
		gen_name(t->name);
	} else if (k < 20 && s->dir->type == T_DIR && s->dir != g.root) {
		struct mnode *a = s->dir;

		for (int up = rn(4); up > 0 && a->parent != g.root; up--)
			a = a->parent;
		t->dir = a->parent;
		strcpy(t->name, dent_name(a));
	} else if (k < 55) {
		t->dir = pick_dir();
		if (t->dir->nde)
			strcpy(t->name, t->dir->de[rn(t->dir->nde)].name);
		else
			gen_name(t->name);
	} else {
		pick_target(t);
	}
	fill_target_node(t);
	return !(t->n && frozen(t->n));
}

/* Linux's rules (do_renameat2, vfs_rename); returns 1 for "succeeds and
 * changes nothing" (old and new are the same file). */
static int rename_expect(const struct pick *s, const struct pick *t, unsigned flags,
			 struct expect *e)
{
	const struct mnode *S = s->n, *T = t->n;

	if (s->dir->type != T_DIR || t->dir->type != T_DIR)
		ex(e, ENOTDIR);
	if (strlen(t->name) > CFS_NAME_MAX)
		ex(e, ENAMETOOLONG);
	if (s->dir->type == T_DIR && !S)
		ex(e, ENOENT);
	if (e->n)
		return 0;
	if ((flags & CFS_RENAME_NOREPLACE) && T)
		ex(e, EEXIST);
	if ((flags & CFS_RENAME_EXCHANGE) && !T)
		ex(e, ENOENT);
	if (S == T)
		return !e->n;
	if (S->type == T_DIR && is_within(t->dir, S))
		ex(e, EINVAL);
	if (T && T->type == T_DIR && is_within(s->dir, T))
		ex(e, (flags & CFS_RENAME_EXCHANGE) ? EINVAL : ENOTEMPTY);
	if (T && !(flags & CFS_RENAME_EXCHANGE)) {
		if (S->type == T_DIR && T->type != T_DIR)
			ex(e, ENOTDIR);
		if (S->type != T_DIR && T->type == T_DIR)
			ex(e, EISDIR);
		if (S->type == T_DIR && T->type == T_DIR && T->nde)
			ex(e, ENOTEMPTY);
	}
	return 0;
}

static void move_links(struct mnode *n, struct mnode *from, struct mnode *to)
{
	if (n->type == T_DIR) {
		from->nlink--;
		to->nlink++;
		n->parent = to;
	}
}

static void rename_apply(const struct pick *s, const struct pick *t, unsigned flags)
{
	if (flags & CFS_RENAME_EXCHANGE) {
		struct mdent *a = dent_find(s->dir, s->name);
		struct mdent *b = dent_find(t->dir, t->name);
		struct mnode *A = a->n, *B = b->n;

		a->n = B;
		b->n = A;
		if (s->dir != t->dir) {
			move_links(A, s->dir, t->dir);
			move_links(B, t->dir, s->dir);
		}
		return;
	}
	if (t->n)
		m_release(m_detach(t->dir, t->name));
	m_attach(t->dir, t->name, m_detach(s->dir, s->name));
}

static const char *rename_flags(unsigned flags)
{
	return flags & CFS_RENAME_EXCHANGE ? " EXCHANGE" :
	       flags & CFS_RENAME_NOREPLACE ? " NOREPLACE" : "";
}

static void op_rename(void)
{
	struct pick s, t;
	struct expect e = {0};
	unsigned flags = 0, k = rn(100);
	struct mnode *S, *T;
	int noop, t_lives, r;

	if (k < 15)
		flags = CFS_RENAME_NOREPLACE;
	else if (k < 30)
		flags = CFS_RENAME_EXCHANGE;
	rename_source(&s);
	if (!rename_target(&s, &t))
		return;
	noop = rename_expect(&s, &t, flags, &e);
	S = s.n;
	T = t.n;
	t_lives = T && ((flags & CFS_RENAME_EXCHANGE) || T == S ||
			(T->type != T_DIR && T->nlink > 1));
	describe("rename %s -> %s%s (%s %#x in dir %#x -> %s %#x in dir %#x)",
		 label(&s), label(&t), rename_flags(flags),
		 S ? (S->type == T_DIR ? "dir" : "file") : "missing", S ? S->ino : 0,
		 s.dir->ino, T ? (T->type == T_DIR ? "dir" : "file") : "new name",
		 T ? T->ino : 0, t.dir->ino);
	if (S && CFS_INO_CHUNK(t.dir->ino) != CFS_INO_CHUNK(S->ino))
		hint_chunk(CFS_INO_CHUNK(S->ino), 1);
	if (T && (flags & CFS_RENAME_EXCHANGE) &&
	    CFS_INO_CHUNK(s.dir->ino) != CFS_INO_CHUNK(T->ino))
		hint_chunk(CFS_INO_CHUNK(T->ino), 1);
	r = cfs_rename(g.fs, s.dir->ino, s.name, t.dir->ino, t.name, flags);
	if (judge(r, &e, NEED(.blocks = 1, .grow = t.dir)) && !noop)
		rename_apply(&s, &t, flags);
	check_lookup(s.dir, s.name);
	check_lookup(t.dir, t.name);
	if (s.dir->type == T_DIR)
		check_attr(s.dir, dpath(s.dir));
	if (t.dir->type == T_DIR)
		check_attr(t.dir, dpath(t.dir));
	if (S)
		check_attr(S, "(the source)");
	if (S && S->type == T_DIR)
		check_dotdot(S);
	if (t_lives) {
		check_attr(T, "(the target)");
		if (T->type == T_DIR)
			check_dotdot(T);
	}
}

/* ---- operations: data ---------------------------------------------------------- */

static uint64_t pick_off(const struct mnode *n)
{
	uint64_t s = n->size, bs = g.cfg->bsize, off;

	switch (rn(8)) {
	case 0:
	case 1: off = rn(s + 1); break;
	case 2: off = s; break;
	case 3: off = s > bs ? s - rn(bs) : rn(s + 1); break;
	case 4: off = rn(4 * bs); break;
	case 5: off = s + rn(16 * bs); break;                   /* small hole */
	case 6: off = rn(s / bs + 2) * bs + (chance(50) ? 0 : rn(bs)); break;
	default: off = chance(25) ? s + rn(g.cfg->max_off) : rn(s + 1); break;
	}
	return off < g.cfg->max_off ? off : rn(g.cfg->max_off);
}

static size_t pick_len(void)
{
	uint32_t bs = g.cfg->bsize;
	unsigned k = rn(100);

	if (k < 5)
		return 0;
	if (k < 30)
		return rrange(1, 64);
	if (k < 60)
		return rrange(1, bs);
	if (k < 85)
		return rrange(1, 3 * bs);
	if (k < 97)
		return rrange(1, 16 * bs);
	return rrange(1, g.cfg->big_write);
}

/* read, write or truncate a directory: -EISDIR. */
static void op_on_dir(const struct pick *p, int which)
{
	static const char *const names[] = { "read", "write", "truncate" };
	struct cfs_setattr a = { .valid = CFS_SET_SIZE, .size = 0 };
	char b[16] = "x";
	long long r;

	describe("%s directory %s", names[which], label(p));
	if (which == 0)
		r = cfs_read(g.fs, p->n->ino, b, sizeof(b), 0);
	else if (which == 1)
		r = cfs_write(g.fs, p->n->ino, b, sizeof(b), 0);
	else
		r = cfs_setattr(g.fs, p->n->ino, &a, NULL);
	if (r != -EISDIR)
		MFAIL("%s of a directory: library %s, model -EISDIR", names[which],
		      ename(r));
	check_attr(p->n, label(p));
}

/* A regular file for a read (which 0), write (1) or truncate (2) in *p:
 * 1.  Now and then the op goes to a directory instead (op_on_dir): -1.
 * 0 when there is no regular file. */
static int pick_file(struct pick *p, int which)
{
	if (chance(2) && pick_dent(p, M_DIR)) {
		op_on_dir(p, which);
		return -1;
	}
	return pick_dent(p, M_REG) ? 1 : 0;
}

/* Apply a write's outcome: all of it, a prefix when space ran out (ext4
 * writes what it can and reports the count), or nothing on an error. */
static void write_outcome(struct mnode *n, uint64_t off, const uint8_t *buf,
			  size_t len, ssize_t r)
{
	struct expect e = {0};

	if (r == (ssize_t)len) {
		mc_write(n, off, buf, len);
	} else if (r > 0 && (size_t)r < len) {
		if (!nospc_fair(NEED(.blocks = len / g.cfg->bsize + 2, .grow = n)))
			MFAIL("short write: %zd of %zu bytes with plenty of space", r,
			      len);
		g.shorts++;
		mc_write(n, off, buf, r);
	} else if (r >= 0) {
		MFAIL("write of %zu bytes returned %zd", len, r);
	} else {
		judge(r, &e, NEED(.blocks = len / g.cfg->bsize + 2, .grow = n));
	}
}

static void op_write(void)
{
	struct pick p;
	struct mnode *n;
	uint64_t off, bs = g.cfg->bsize;
	size_t len;
	uint8_t *buf;
	ssize_t r;
	int got;

	got = pick_file(&p, 1);
	if (got <= 0) {
		if (got == 0)
			op_create();
		return;
	}
	n = p.n;
	len = pick_len();
	off = pick_off(n);
	if (off + len > g.cfg->max_off)
		off = g.cfg->max_off - len;
	buf = talloc(len);
	rfill(buf, len);
	describe("write %s (ino %#x) off %llu len %zu (size %llu)", label(&p), n->ino,
		 (unsigned long long)off, len, (unsigned long long)n->size);
	r = cfs_write(g.fs, n->ino, buf, len, off);
	write_outcome(n, off, buf, len, r);
	tfree(buf);
	check_attr(n, label(&p));
	check_range(n, off > bs ? off - bs : 0, len + 2 * bs, label(&p));
}

static void op_read(void)
{
	struct pick p;
	uint64_t off, s, bs = g.cfg->bsize;
	size_t len;
	unsigned k = rn(10);

	if (pick_file(&p, 0) <= 0)
		return;
	s = p.n->size;
	off = k < 7 ? rn(s + 2 * bs) : k < 8 ? s : k < 9 ? rn(s + 1) :
	      s + rn(g.cfg->max_off);
	k = rn(10);
	len = k < 5 ? rrange(0, 4 * bs) : k < 7 ? rrange(0, 64) : k < 9 ?
	      (s > off ? (s - off < 262144 ? s - off : 262144) : 0) : 0;
	describe("read %s off %llu len %zu (size %llu)", label(&p),
		 (unsigned long long)off, len, (unsigned long long)s);
	check_range(p.n, off, len, label(&p));
}

static uint64_t pick_size(const struct mnode *n)
{
	uint64_t s = n->size, bs = g.cfg->bsize, ns;

	switch (rn(10)) {
	case 0: case 1: case 2: case 3: ns = rn(s + 1); break;
	case 4: case 5: ns = s + rn(4 * bs); break;
	case 6: ns = 0; break;
	case 7: ns = s; break;
	case 8: ns = rn(s / bs + 2) * bs + rn(3); ns = ns ? ns - 1 : 0; break;
	default: ns = s + rn(g.cfg->max_off); break;
	}
	return ns < g.cfg->max_off ? ns : rn(g.cfg->max_off);
}

static void op_truncate(void)
{
	struct pick p;
	struct expect e = {0};
	struct cfs_setattr a = { .valid = CFS_SET_SIZE };
	struct cfs_stat st;
	uint64_t old, lo, bs = g.cfg->bsize;
	int r;

	if (pick_file(&p, 2) <= 0)
		return;
	old = p.n->size;
	a.size = pick_size(p.n);
	describe("truncate %s from %llu to %llu", label(&p), (unsigned long long)old,
		 (unsigned long long)a.size);
	r = cfs_setattr(g.fs, p.n->ino, &a, &st);
	if (judge(r, &e, NEED(.blocks = 2, .grow = p.n))) {
		mc_truncate(p.n, a.size);
		if (st.size != a.size)
			MFAIL("setattr returned size %llu", (unsigned long long)st.size);
	}
	check_attr(p.n, label(&p));
	/* Around both ends: what was cut off must read as zeros if regrown. */
	lo = old < a.size ? old : a.size;
	check_range(p.n, lo > 2 * bs ? lo - 2 * bs : 0, 4 * bs, label(&p));
	check_range(p.n, p.n->size > 2 * bs ? p.n->size - 2 * bs : 0, 4 * bs,
		    label(&p));
}

static void punch_model(struct mnode *n, uint64_t off, uint64_t len);

/* Where the library reads zeros in [from, to), let the model have zeros;
 * anything else must match as it is. */
static void adopt_zeros(struct mnode *n, uint64_t from, uint64_t to)
{
	size_t k = 65536;
	uint8_t *got = talloc(k), *exp = talloc(k);

	for (; from < to; from += k) {
		size_t len = to - from < k ? (size_t)(to - from) : k;
		ssize_t r = cfs_read(g.fs, n->ino, got, len, from);

		if (r != (ssize_t)len)
			MFAIL("read after a failed punch: %s", ename(r));
		mc_read(n, from, exp, len);
		for (size_t i = 0; i < len; i++) {
			if (got[i] == exp[i])
				continue;
			if (got[i])
				MFAIL("after a failed punch, byte %llu is %02x, model %02x",
				      (unsigned long long)(from + i), got[i], exp[i]);
			mc_write(n, from + i, got + i, 1);
		}
	}
	tfree(got);
	tfree(exp);
}

/* The model's file after a collapse (insert 0) or insert of [off, off+len):
 * what follows off (+ len) read out and written back len lower or higher. */
static void shift_model(struct mnode *n, uint64_t off, uint64_t len, int insert)
{
	uint64_t size = n->size, from = insert ? off : off + len;
	size_t k = 0, np = n->npg;
	/* page by page: the model's files are sparse, up to max_off */
	uint64_t *at = xcalloc(np + 1, sizeof(*at));
	uint8_t *b = xmalloc((np + 1) * MPAGE);

	for (size_t i = 0; i < np; i++) {
		uint64_t ps = n->pg[i].idx * MPAGE, s = ps > from ? ps : from;

		if (ps + MPAGE <= from || s >= size)
			continue;
		at[k] = s;
		memcpy(b + k * MPAGE, n->pg[i].d + (s - ps), (size_t)(ps + MPAGE - s));
		k++;
	}
	mc_truncate(n, off);
	for (size_t i = 0; i < k; i++) {
		uint64_t s = at[i], e = (s / MPAGE + 1) * MPAGE;

		if (e > size)
			e = size;
		mc_write(n, insert ? s + len : s - len, b + i * MPAGE, (size_t)(e - s));
	}
	free(at);
	free(b);
	n->size = insert ? size + len : size - len;
}

/* A collapse or insert that ran out of space half-way leaves the file
 * partly shifted, as a crash does (FORMAT.md 13.3): the model takes the
 * library's bytes where it has data, after checking that the size did
 * not change. */
static void adopt_file(struct mnode *n, uint64_t old)
{
	struct cfs_stat st;
	uint8_t *b = xmalloc(MPAGE);
	int64_t d = 0, h;

	if (cfs_getattr(g.fs, n->ino, &st))
		MFAIL("getattr after a failed shift");
	if (st.size != old)
		MFAIL("a failed shift changed the size from %llu to %llu",
		      (unsigned long long)old, (unsigned long long)st.size);
	mc_truncate(n, 0);
	while ((d = cfs_lseek(g.fs, n->ino, d, SEEK_DATA)) >= 0) {
		h = cfs_lseek(g.fs, n->ino, d, SEEK_HOLE);
		if (h < 0)
			MFAIL("SEEK_HOLE after a failed shift");
		for (; d < h; ) {
			size_t l = (size_t)(h - d < MPAGE ? h - d : MPAGE);

			if (cfs_read(g.fs, n->ino, b, l, (uint64_t)d) != (ssize_t)l)
				MFAIL("read after a failed shift");
			mc_write(n, (uint64_t)d, b, l);
			d += (int64_t)l;
		}
	}
	n->size = old;
	free(b);
}

/* Like Linux: allocated ranges read as zeros; PUNCH_HOLE needs KEEP_SIZE;
 * ZERO_RANGE zeroes (and grows the file unless KEEP_SIZE); COLLAPSE_RANGE
 * and INSERT_RANGE take whole blocks and no other flag, a collapse ends
 * before the end of the file and an insert starts before it. */
static void op_fallocate(void)
{
	struct pick p;
	struct expect e = {0};
	uint64_t off, len, old, bs = g.cfg->bsize;
	int mode = (int[]){ 0, CFS_FALLOC_KEEP_SIZE,
			    CFS_FALLOC_PUNCH_HOLE | CFS_FALLOC_KEEP_SIZE,
			    CFS_FALLOC_ZERO_RANGE, CFS_FALLOC_ZERO_RANGE | CFS_FALLOC_KEEP_SIZE,
			    CFS_FALLOC_COLLAPSE_RANGE, CFS_FALLOC_INSERT_RANGE }[rn(7)];
	int shift = mode & (CFS_FALLOC_COLLAPSE_RANGE | CFS_FALLOC_INSERT_RANGE);
	long long r;

	if (!pick_dent(&p, chance(3) ? M_DIR : M_REG))
		return;
	old = p.n->size;
	off = pick_off(p.n);
	len = chance(85) ? rrange(1, 16 * bs) : rrange(1, g.cfg->big_write);
	if (shift && chance(85)) {
		/* mostly what ext4 takes: whole blocks inside the file */
		off = old > bs ? rn(old / bs) * bs : 0;
		len = (len + bs - 1) / bs * bs;
		if (chance(60) && old > off + bs)
			len = rrange(1, (old - off - 1) / bs) * bs;
	}
	if (off + len > g.cfg->max_off)
		off = (g.cfg->max_off - len) / (shift ? bs : 1) * (shift ? bs : 1);
	if (shift && mode == CFS_FALLOC_INSERT_RANGE && old + len > g.cfg->max_off)
		len = 0;   /* keeps the model's files within max_off */
	if (chance(3))
		len = 0;
	else if (chance(3))
		mode = (int[]){ CFS_FALLOC_PUNCH_HOLE,
				CFS_FALLOC_ZERO_RANGE | CFS_FALLOC_PUNCH_HOLE | CFS_FALLOC_KEEP_SIZE,
				CFS_FALLOC_COLLAPSE_RANGE | CFS_FALLOC_KEEP_SIZE,
				CFS_FALLOC_INSERT_RANGE | CFS_FALLOC_ZERO_RANGE }[rn(4)];
	shift = mode & (CFS_FALLOC_COLLAPSE_RANGE | CFS_FALLOC_INSERT_RANGE);
	if (p.n->type == T_DIR)
		ex(&e, EISDIR);
	if (!len)
		ex(&e, EINVAL);
	if (mode == CFS_FALLOC_PUNCH_HOLE || (mode & CFS_FALLOC_ZERO_RANGE &&
					     mode & CFS_FALLOC_PUNCH_HOLE))
		ex(&e, EOPNOTSUPP);
	if (shift && (mode & ~shift))
		ex(&e, EINVAL);
	if (shift && ((off | len) % bs ||
		      (mode == CFS_FALLOC_COLLAPSE_RANGE ? off + len >= old : off >= old)))
		ex(&e, EINVAL);
	describe("fallocate %s%s%s%s%s%s off %llu len %llu (size %llu)", label(&p),
		 mode & CFS_FALLOC_PUNCH_HOLE ? " PUNCH_HOLE" : "",
		 mode & CFS_FALLOC_ZERO_RANGE ? " ZERO_RANGE" : "",
		 mode & CFS_FALLOC_COLLAPSE_RANGE ? " COLLAPSE_RANGE" : "",
		 mode & CFS_FALLOC_INSERT_RANGE ? " INSERT_RANGE" : "",
		 mode & CFS_FALLOC_KEEP_SIZE ? " KEEP_SIZE" : "",
		 (unsigned long long)off, (unsigned long long)len,
		 (unsigned long long)old);
	r = cfs_fallocate(g.fs, p.n->ino, mode, off, len);
	if (judge(r, &e, NEED(.blocks = len / bs + 2, .grow = p.n))) {
		if (mode & CFS_FALLOC_PUNCH_HOLE) {
			punch_model(p.n, off, len);
		} else if (shift) {
			shift_model(p.n, off, len, mode == CFS_FALLOC_INSERT_RANGE);
		} else {
			if (mode & CFS_FALLOC_ZERO_RANGE)
				punch_model(p.n, off, len);
			if (!(mode & CFS_FALLOC_KEEP_SIZE) && off + len > old)
				mc_truncate(p.n, off + len);
		}
	} else if (r == -ENOSPC && shift) {
		adopt_file(p.n, old);
	} else if (r == -ENOSPC && (mode & (CFS_FALLOC_PUNCH_HOLE | CFS_FALLOC_ZERO_RANGE))) {
		/* Like ext4, the edges are zeroed before the blocks go: a punch
		 * that fails may leave part of its range zeroed, nothing more;
		 * so may a zero range */
		adopt_zeros(p.n, off, off + len < old ? off + len : old);
	} else if (r == -ENOSPC && !mode) {
		/* ext4 keeps what it allocated and the size covering it. */
		struct cfs_stat st;

		if (!cfs_getattr(g.fs, p.n->ino, &st) && st.size > old &&
		    st.size <= off + len)
			mc_truncate(p.n, st.size);
	}
	if (p.n->type == T_DIR) {
		check_attr(p.n, label(&p));
		return;
	}
	check_attr(p.n, label(&p));
	check_range(p.n, off > bs ? off - bs : 0,
		    (size_t)(len < 8 * bs ? len : 8 * bs) + 2 * bs, label(&p));
	if (len > 8 * bs)
		check_range(p.n, off + len - 4 * bs, 5 * bs, label(&p));
	if (shift)
		check_range(p.n, 0, (size_t)(p.n->size < (64u << 10) ? p.n->size : 64u << 10),
			    label(&p));
}

static void punch_model(struct mnode *n, uint64_t off, uint64_t len)
{
	uint64_t end = off + len < n->size ? off + len : n->size;
	uint8_t *zero;

	if (off >= end)
		return;
	/* Only pages that exist need zeroing: the rest already reads zero. */
	zero = xcalloc(1, MPAGE);
	for (size_t i = pg_lower(n, off / MPAGE); i < n->npg; i++) {
		uint64_t ps = n->pg[i].idx * MPAGE, from, to;

		if (ps >= end)
			break;
		from = ps > off ? ps : off;
		to = ps + MPAGE < end ? ps + MPAGE : end;
		memcpy(n->pg[i].d + (from - ps), zero, to - from);
	}
	free(zero);
}

/* Whether the model holds a non-zero byte in [from, to). */
static int mc_nonzero(const struct mnode *n, uint64_t from, uint64_t to)
{
	for (size_t i = pg_lower(n, from / MPAGE); i < n->npg; i++) {
		uint64_t ps = n->pg[i].idx * MPAGE;
		uint64_t a = ps > from ? ps : from, b = ps + MPAGE < to ? ps + MPAGE : to;

		if (ps >= to)
			break;
		for (uint64_t j = a; j < b; j++)
			if (n->pg[i].d[j - ps])
				return 1;
	}
	return 0;
}

/* SEEK_DATA must not skip data, SEEK_HOLE must land on zeros (or EOF). */
static void op_seek(void)
{
	struct pick p;
	int whence = chance(50) ? SEEK_DATA : SEEK_HOLE;
	uint64_t off, size;
	int64_t r;

	if (!pick_dent(&p, M_REG))
		return;
	size = p.n->size;
	off = chance(90) ? rn(size + 1) : size + rn(4 * g.cfg->bsize);
	describe("lseek %s %s %llu (size %llu)", label(&p),
		 whence == SEEK_DATA ? "SEEK_DATA" : "SEEK_HOLE",
		 (unsigned long long)off, (unsigned long long)size);
	r = cfs_lseek(g.fs, p.n->ino, (int64_t)off, whence);
	if (off >= size) {
		if (r != -ENXIO)
			MFAIL("lseek at or past EOF: library %s, model -ENXIO", ename(r));
		return;
	}
	if (r == -ENXIO && whence == SEEK_DATA) {
		if (mc_nonzero(p.n, off, size))
			MFAIL("SEEK_DATA: -ENXIO, but the model has data after %llu",
			      (unsigned long long)off);
		return;
	}
	if (r < 0 || (uint64_t)r < off || (uint64_t)r > size ||
	    (whence == SEEK_DATA && (uint64_t)r == size))
		MFAIL("lseek: library %s for offset %llu in a file of %llu bytes",
		      ename(r), (unsigned long long)off, (unsigned long long)size);
	if (whence == SEEK_DATA && mc_nonzero(p.n, off, (uint64_t)r))
		MFAIL("SEEK_DATA from %llu skips data: library says %lld",
		      (unsigned long long)off, (long long)r);
	if (whence == SEEK_HOLE && (uint64_t)r < size) {
		check_range(p.n, (uint64_t)r, 1, "(at the hole SEEK_HOLE found)");
		if (mc_nonzero(p.n, (uint64_t)r, (uint64_t)r + 1))
			MFAIL("SEEK_HOLE from %llu: %lld holds data",
			      (unsigned long long)off, (long long)r);
	}
}

/* Take p's name away from its file by renaming a new file over it; 0 if
 * the new file could not be made (no space). */
static int replace_name(const struct pick *p)
{
	char tmp[CFS_NAME_MAX + 1];
	struct expect e = {0};
	struct mnode *n;
	cfs_ino_t ino;
	int r;

	fresh_name(p->dir, tmp);
	r = cfs_mknod(g.fs, p->dir->ino, tmp, S_IFREG | 0600, 0, 0, 0, &ino);
	if (!judge(r, &e, NEED(.blocks = 1, .grow = p->dir, .parent = p->dir)))
		return 0;
	n = mnode_new(T_REG, S_IFREG | 0600, 0, 0, ino);
	m_attach(p->dir, tmp, n);
	check_new_ino(n);
	if (CFS_INO_CHUNK(p->dir->ino) != CFS_INO_CHUNK(ino))
		hint_chunk(CFS_INO_CHUNK(ino), 1);
	r = cfs_rename(g.fs, p->dir->ino, tmp, p->dir->ino, p->name, 0);
	if (!judge(r, &e, NEED(.blocks = 1, .grow = p->dir))) {
		r = cfs_unlink(g.fs, p->dir->ino, tmp);
		if (r)
			MFAIL("unlink %s: %s", path(p->dir, tmp), ename(r));
		m_release(m_detach(p->dir, tmp));
		return 0;
	}
	m_detach(p->dir, p->name);
	m_attach(p->dir, p->name, m_detach(p->dir, tmp));
	check_attr(n, label(p));
	return 1;
}

/* An open file (cfs_inode_get) outlives its last name until put. */
static void op_orphan(void)
{
	struct pick p;
	struct mnode *n;
	uint64_t off;
	size_t len = rrange(1, g.cfg->bsize);
	uint8_t *buf;
	int r;

	if (!pick_dent(&p, M_REG) || p.n->nlink != 1)
		return;
	n = p.n;
	describe("orphan %s (ino %#x, size %llu): get, unlink, use, put", label(&p),
		 n->ino, (unsigned long long)n->size);
	r = cfs_inode_get(g.fs, n->ino);
	if (r)
		MFAIL("cfs_inode_get: %s", ename(r));
	if (chance(50) && replace_name(&p)) {
		/* the last name now names another file */
	} else {
		r = cfs_unlink(g.fs, p.dir->ino, p.name);
		if (r)
			MFAIL("unlink of the open file: %s", ename(r));
		m_detach(p.dir, p.name);
	}
	after_new(&p);
	check_attr(n, "(the open unlinked file)");
	check_range(n, 0, 3 * g.cfg->bsize, "(the open unlinked file)");
	off = rn(n->size + 1);
	buf = talloc(len);
	rfill(buf, len);
	write_outcome(n, off, buf, len, cfs_write(g.fs, n->ino, buf, len, off));
	tfree(buf);
	check_range(n, off, len, "(the open unlinked file)");
	r = cfs_inode_put(g.fs, n->ino);
	if (r)
		MFAIL("cfs_inode_put: %s", ename(r));
	mnode_free(n);
}

static void op_sync(void)
{
	struct pick p;
	int r;

	if (chance(30) || !pick_dent(&p, M_REG)) {
		describe("sync");
		r = cfs_sync(g.fs);
	} else {
		describe("fsync %s", label(&p));
		r = cfs_fsync(g.fs, p.n->ino, (int)rn(2));
	}
	if (r)
		MFAIL("sync: %s", ename(r));
}

/* ---- operations: attributes and xattrs --------------------------------------- */

static void op_chmod(void)
{
	struct pick p;
	struct expect e = {0};
	struct cfs_setattr a = { .valid = CFS_SET_MODE };
	struct cfs_stat st;
	uint32_t fmt;
	int r;

	if (!pick_node(&p, M_REG | M_DIR))
		return;
	fmt = type_fmt(p.n->type);
	a.mode = fmt | ((uint32_t)rn(010000) & (fmt == S_IFDIR ? 01777 : 07777));
	describe("chmod %s %o", label(&p), a.mode);
	r = cfs_setattr(g.fs, p.n->ino, &a, &st);
	if (judge(r, &e, NULL)) {
		p.n->mode = a.mode;
		if (st.mode != a.mode)
			MFAIL("setattr returned mode %o, model %o", st.mode, a.mode);
	}
	check_attr(p.n, label(&p));
}

/* As chown(2) on Linux, also for root: a non-directory loses S_ISUID, and
 * S_ISGID when group-executable (else it marks mandatory locking).  Linux
 * does so even when the ids do not change; a library may skip that case. */
static void op_chown(void)
{
	struct pick p;
	struct expect e = {0};
	struct cfs_setattr a = {0};
	struct cfs_stat st;
	struct mnode *n;
	uint32_t mode;
	int changes, r;

	if (!pick_node(&p, M_ANY))
		return;
	n = p.n;
	a.valid = (uint32_t[]){ CFS_SET_UID, CFS_SET_GID,
				CFS_SET_UID | CFS_SET_GID }[rn(3)];
	a.uid = chance(15) ? n->uid : rid();
	a.gid = chance(15) ? n->gid : rid();
	describe("chown %s to %lld:%lld (was %u:%u mode %o)", label(&p),
		 a.valid & CFS_SET_UID ? (long long)a.uid : -1LL,
		 a.valid & CFS_SET_GID ? (long long)a.gid : -1LL, n->uid, n->gid,
		 n->mode);
	r = cfs_setattr(g.fs, n->ino, &a, &st);
	if (!judge(r, &e, NULL))
		return;
	changes = ((a.valid & CFS_SET_UID) && a.uid != n->uid) ||
		  ((a.valid & CFS_SET_GID) && a.gid != n->gid);
	if (a.valid & CFS_SET_UID)
		n->uid = a.uid;
	if (a.valid & CFS_SET_GID)
		n->gid = a.gid;
	mode = n->mode;
	if (n->type != T_DIR) {
		mode &= ~(uint32_t)S_ISUID;
		if (mode & S_IXGRP)
			mode &= ~(uint32_t)S_ISGID;
	}
	if (changes || st.mode == mode)
		n->mode = mode;
	check_attr(n, label(&p));
}

static void xa_name(char *buf, const struct mnode *n)
{
	unsigned k = rn(100);

	if (n->nxa && chance(50)) {
		strcpy(buf, n->xa[rn(n->nxa)].name);
	} else if (k < 85) {
		sprintf(buf, "user.x%u", (unsigned)rn(8));
	} else if (k < 95) {
		strcpy(buf, "user.");
		gen_chars(buf + 5, rrange(50, 200));
	} else {
		sprintf(buf, "trusted.t%u", (unsigned)rn(3));
	}
}

static size_t xa_len(void)
{
	unsigned k = rn(100);

	if (k < 60)
		return rrange(0, 40);
	if (k < 90)
		return rrange(41, 300);
	return rrange(301, g.cfg->bsize);
}

static void op_setxattr(void)
{
	struct pick p;
	struct expect e = {0};
	char name[256];
	size_t len = xa_len();
	uint8_t *v = talloc(len);
	int flags = (int[]){ 0, 0, 0, CFS_XATTR_CREATE, CFS_XATTR_REPLACE }[rn(5)];
	struct mxattr *x;
	int r;

	if (!pick_node(&p, M_REG | M_DIR)) {
		tfree(v);
		return;
	}
	xa_name(name, p.n);
	rfill(v, len);
	x = xa_find(p.n, name);
	if ((flags & CFS_XATTR_CREATE) && x)
		ex(&e, EEXIST);
	if ((flags & CFS_XATTR_REPLACE) && !x)
		ex(&e, ENODATA);
	/* Past half a block it may not fit: -ENOSPC when all of them do not,
	 * -E2BIG when this one alone may not (either may come first). */
	if (xa_cost_with(p.n, name, len) > g.cfg->bsize / 2 - 64) {
		e.may_succeed = !e.n;
		ex(&e, ENOSPC);
		if (strlen(name) + len + 32 > g.cfg->bsize / 2 - 64)
			ex(&e, E2BIG);
	}
	describe("setxattr %s %s len %zu%s", label(&p), sname(name), len,
		 flags == CFS_XATTR_CREATE ? " CREATE" :
		 flags == CFS_XATTR_REPLACE ? " REPLACE" : "");
	hint_chunk(CFS_INO_CHUNK(p.n->ino), 0);
	r = cfs_setxattr(g.fs, p.n->ino, name, v, len, flags);
	if (judge(r, &e, NEED(.blocks = 1)))
		xa_set(p.n, name, v, len);
	tfree(v);
	check_xattr_one(p.n, name, label(&p));
}

static void op_getxattr(void)
{
	struct pick p;
	char name[256];
	struct mxattr *x;
	uint8_t *buf;
	ssize_t r;

	if (!pick_node(&p, M_REG | M_DIR))
		return;
	xa_name(name, p.n);
	x = xa_find(p.n, name);
	/* A short buffer, not size 0 (that asks for the size). */
	if (!x || x->len < 2 || chance(60)) {
		describe("getxattr %s %s", label(&p), sname(name));
		check_xattr_one(p.n, name, label(&p));
		return;
	}
	describe("getxattr %s %s into %zu bytes (value %zu): -ERANGE", label(&p), sname(name),
		 x->len - 1, x->len);
	buf = talloc(x->len);
	r = cfs_getxattr(g.fs, p.n->ino, name, buf, x->len - 1);
	tfree(buf);
	if (r != -ERANGE)
		MFAIL("getxattr into a short buffer: library %s, model -ERANGE",
		      ename(r));
}

static void op_listxattr(void)
{
	struct pick p;
	size_t want;
	char *buf;
	ssize_t r;

	if (!pick_node(&p, M_ANY))
		return;
	want = xa_list_len(p.n);
	if (!want || chance(60)) {
		describe("listxattr %s (%zu names)", label(&p), p.n->nxa);
		check_xattrs(p.n, label(&p));
		return;
	}
	describe("listxattr %s into %zu bytes (needs %zu): -ERANGE", label(&p),
		 want - 1, want);
	buf = talloc(want);
	r = cfs_listxattr(g.fs, p.n->ino, buf, want - 1);
	tfree(buf);
	if (r != -ERANGE)
		MFAIL("listxattr into a short buffer: library %s, model -ERANGE",
		      ename(r));
}

static void op_removexattr(void)
{
	struct pick p;
	struct expect e = {0};
	char name[256];
	int r;

	if (!pick_node(&p, M_REG | M_DIR))
		return;
	xa_name(name, p.n);
	if (p.n->nxa && chance(50))
		strcpy(name, p.n->xa[rn(p.n->nxa)].name);
	if (!xa_find(p.n, name))
		ex(&e, ENODATA);
	describe("removexattr %s %s", label(&p), sname(name));
	r = cfs_removexattr(g.fs, p.n->ino, name);
	if (judge(r, &e, NULL))
		xa_del(p.n, name);
	check_xattr_one(p.n, name, label(&p));
}

/* ---- operations: looking ---------------------------------------------------------- */

static void op_readdir(void)
{
	static const size_t steps[] = { 0, 0, 1, 2, 3, 7 };
	struct pick p;
	struct mnode *d;
	size_t step = steps[rn(6)];

	if (chance(4) && pick_dent(&p, M_REG)) {
		struct rdctx *c = rd_get(0, 4);
		int r;

		describe("readdir %s (a regular file)", label(&p));
		r = cfs_readdir(g.fs, p.n->ino, 0, rd_fill, c);
		rd_free(c);
		if (r != -ENOTDIR)
			MFAIL("readdir of a file: library %s, model -ENOTDIR", ename(r));
		return;
	}
	d = pick_dir();
	describe("readdir %s, %zu entries per call (%zu entries)", dpath(d), step,
		 d->nde);
	check_readdir(d, step);
}

/* The whole path of name in d; 0 if it does not fit. */
static int full_path(const struct mnode *d, const char *name, char *out, size_t sz)
{
	size_t l;

	if (d == g.root) {
		l = 0;
	} else {
		if (!d->parent || !full_path(d->parent, dent_name(d), out, sz))
			return 0;
		l = strlen(out);
	}
	return (size_t)snprintf(out + l, sz - l, "/%s", name) < sz - l;
}

/* cfs_path_resolve and cfs_path_parent agree with lookup. */
static void check_resolve(const struct pick *p)
{
	char *buf = talloc(4096), name[CFS_NAME_MAX + 1];
	cfs_ino_t ino = 0, dir = 0;
	int r;

	if (full_path(p->dir, p->name, buf, 4096)) {
		r = cfs_path_resolve(g.fs, buf, 0, &ino);
		if (r || ino != p->n->ino)
			MFAIL("cfs_path_resolve %s: %s ino %#x, model ino %#x",
			      label(p), ename(r), ino, p->n->ino);
		r = cfs_path_parent(g.fs, buf, &dir, name);
		if (r || dir != p->dir->ino || strcmp(name, p->name))
			MFAIL("cfs_path_parent %s: %s dir %#x \"%s\", model dir %#x",
			      label(p), ename(r), dir, r ? "" : sname(name),
			      p->dir->ino);
	}
	tfree(buf);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Between two readdir calls: add a file (a name never used before) or
 * remove a non-directory.  Returns the name removed, or NULL. */
static const char *churn_one(struct mnode *d, int *added)
{
	static char name[CFS_NAME_MAX + 1];
	struct expect e = {0};
	cfs_ino_t ino;
	size_t i;
	int r;

	if (chance(50)) {
		snprintf(name, sizeof(name), "churn-%ld-%d", g.opno, (*added)++);
		r = cfs_mknod(g.fs, d->ino, name, S_IFREG | 0644, 0, 0, 0, &ino);
		if (judge(r, &e, NEED(.blocks = 1, .grow = d, .parent = d))) {
			struct mnode *n = mnode_new(T_REG, S_IFREG | 0644, 0, 0, ino);

			m_attach(d, name, n);
			check_new_ino(n);
		}
		return NULL;
	}
	if (!d->nde)
		return NULL;
	i = rn(d->nde);
	if (d->de[i].n->type == T_DIR || frozen(d->de[i].n))
		return NULL;
	strcpy(name, d->de[i].name);
	r = cfs_unlink(g.fs, d->ino, name);
	if (r)
		MFAIL("unlink %s while listing it: %s", path(d, name), ename(r));
	m_release(m_detach(d, name));
	return name;
}

/* readdir in steps while the directory changes between the calls: each
 * entry there throughout comes exactly once; whether entries added or
 * removed meanwhile come is unspecified (POSIX readdir). */
static void op_readdir_churn(void)
{
	struct mnode *d = chance(50) ? biggest_dir() : pick_dir();
	size_t n0 = d->nde, step = rrange(1, 6), i, len = 0;
	char **names = talloc((n0 + 1) * sizeof(*names)), *pool, *key;
	uint8_t *gone = talloc(n0 + 1), *seen = talloc(n0 + 1);
	struct rdctx *c;
	uint64_t cookie = 0;
	char prefix[48];
	int added = 0, r;

	describe("readdir %s, %zu entries per call, changing it in between (%zu"
		 " entries)", dpath(d), step, n0);
	for (i = 0; i < n0; i++)
		len += strlen(d->de[i].name) + 1;
	pool = talloc(len + 1);
	for (i = 0, len = 0; i < n0; i++) {
		names[i] = strcpy(pool + len, d->de[i].name);
		len += strlen(pool + len) + 1;
	}
	qsort(names, n0, sizeof(*names), cmp_str);
	memset(gone, 0, n0 + 1);
	memset(seen, 0, n0 + 1);
	c = rd_get(step, n0 * 4 + 1000);
	for (;;) {
		const char *rm;
		char **hit;

		c->taken = 0;
		c->stopped = 0;
		r = cfs_readdir(g.fs, d->ino, cookie, rd_fill, c);
		if (r < 0 || c->stopped == 2)
			MFAIL("readdir %s (cookie %llu): %s", dpath(d),
			      (unsigned long long)cookie, r < 0 ? ename(r) : "runaway");
		if (!c->stopped)
			break;
		cookie = c->cookie;
		if (chance(60) && (rm = churn_one(d, &added))) {
			key = (char *)rm;
			hit = bsearch(&key, names, n0, sizeof(*names), cmp_str);
			if (hit)
				gone[hit - names] = 1;
		}
	}
	snprintf(prefix, sizeof(prefix), "churn-%ld-", g.opno);
	for (i = 2; i < c->n; i++) {
		char **hit;

		key = c->e[i].name;
		hit = bsearch(&key, names, n0, sizeof(*names), cmp_str);
		if (hit && seen[hit - names]++)
			MFAIL("readdir %s while it changed: \"%s\" came twice",
			      dpath(d), sname(key));
		if (!hit && strncmp(key, prefix, strlen(prefix)))
			MFAIL("readdir %s while it changed: \"%s\" never existed",
			      dpath(d), sname(key));
	}
	for (i = 0; i < n0; i++)
		if (!gone[i] && !seen[i])
			MFAIL("readdir %s while it changed: \"%s\" (there all along)"
			      " did not come", dpath(d), sname(names[i]));
	rd_free(c);
	tfree(pool);
	tfree(names);
	tfree(gone);
	tfree(seen);
	check_readdir(d, 0);
	check_attr(d, dpath(d));
}

static void op_lookup(void)
{
	struct pick p;
	unsigned k = rn(100);

	if (k < 40 && pick_dent(&p, M_ANY)) {
		describe("lookup %s", label(&p));
		if (chance(40))
			check_resolve(&p);
	} else if (k < 80) {
		pick_missing(&p);
		describe("lookup %s (missing)", label(&p));
	} else {
		p.dir = pick_dir();
		gen_chars(p.name, CFS_NAME_MAX + 1);
		describe("lookup %s (name too long)", label(&p));
	}
	check_lookup(p.dir, p.name);
}

static void op_getattr(void)
{
	struct pick p;

	if (!pick_node(&p, M_ANY))
		return;
	describe("getattr %s", label(&p));
	check_attr(p.n, label(&p));
	if (p.n->type == T_REG && p.n->size <= 65536)
		check_content(p.n, label(&p));
}

/* ---- the op table ---------------------------------------------------------------- */

static const struct op {
	const char *name;
	void (*fn)(void);
	int w[3];                       /* weight: tiny, default, nearly full */
} ops[] = {
	{ "create",      op_create,      { 90, 90, 40 } },
	{ "mkdir",       op_mkdir,       { 40, 40, 15 } },
	{ "write",       op_write,       { 150, 160, 260 } },
	{ "read",        op_read,        { 80, 80, 80 } },
	{ "truncate",    op_truncate,    { 45, 45, 70 } },
	{ "unlink",      op_unlink,      { 60, 60, 60 } },
	{ "rmdir",       op_rmdir,       { 30, 30, 20 } },
	{ "rename",      op_rename,      { 90, 80, 50 } },
	{ "link",        op_link,        { 45, 40, 25 } },
	{ "symlink",     op_symlink,     { 30, 30, 15 } },
	{ "readlink",    op_readlink,    { 12, 12, 8 } },
	{ "setxattr",    op_setxattr,    { 40, 40, 40 } },
	{ "getxattr",    op_getxattr,    { 15, 15, 10 } },
	{ "listxattr",   op_listxattr,   { 10, 10, 8 } },
	{ "removexattr", op_removexattr, { 15, 15, 15 } },
	{ "chmod",       op_chmod,       { 15, 15, 8 } },
	{ "chown",       op_chown,       { 15, 15, 8 } },
	{ "readdir",     op_readdir,     { 30, 30, 20 } },
	{ "readdir+chg", op_readdir_churn, { 8, 8, 4 } },
	{ "fallocate",   op_fallocate,   { 20, 20, 25 } },
	{ "lseek",       op_seek,        { 12, 12, 10 } },
	{ "lookup",      op_lookup,      { 25, 25, 15 } },
	{ "getattr",     op_getattr,     { 20, 20, 15 } },
	{ "orphan",      op_orphan,      { 5, 5, 5 } },
	{ "sync",        op_sync,        { 4, 4, 4 } },
};

static void run_op(void)
{
	int total = 0, k;
	size_t i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		total += ops[i].w[g.cfg->wi];
	k = (int)rn(total);
	hint_clear();
	for (i = 0; k >= ops[i].w[g.cfg->wi]; i++)
		k -= ops[i].w[g.cfg->wi];
	ops[i].fn();
	if (g.full) {
		compare_tree();
		check_fs("after this op (CHUNKFS_MODEL_FULL)");
	}
}

/* ---- setting up and tearing down ----------------------------------------------- */

/* Take what mkfs made (the root, lost+found if any) into the model. */
static void import_node(struct mnode *n)
{
	struct cfs_stat st;
	char *buf;
	ssize_t r;
	int e = cfs_getattr(g.fs, n->ino, &st);

	if (e)
		MFAIL("getattr of ino %#x made by mkfs: %s", n->ino, ename(e));
	n->mode = st.mode;
	n->uid = st.uid;
	n->gid = st.gid;
	n->nlink = st.nlink;
	if (n->type == T_REG && st.size) {
		buf = talloc(st.size);
		r = cfs_read(g.fs, n->ino, buf, st.size, 0);
		if (r != (ssize_t)st.size)
			MFAIL("read of ino %#x made by mkfs: %s", n->ino, ename(r));
		mc_write(n, 0, (uint8_t *)buf, st.size);
		tfree(buf);
	}
	if (n->type == T_LNK) {
		n->target = xcalloc(1, st.size + 1);
		cfs_readlink(g.fs, n->ino, n->target, st.size);
	}
}

static void import_dir(struct mnode *d)
{
	struct rdctx *c = read_dir(d, 0, 100000);
	struct cfs_stat st;

	for (size_t i = 2; i < c->n; i++) {
		struct mnode *n;
		int e = cfs_getattr(g.fs, c->e[i].ino, &st);

		if (e)
			MFAIL("getattr of %s made by mkfs: %s", c->e[i].name, ename(e));
		n = mnode_new(S_ISDIR(st.mode) ? T_DIR : S_ISLNK(st.mode) ? T_LNK : T_REG,
			      0, 0, 0, c->e[i].ino);
		n->fixed = 1;
		dent_push(d, c->e[i].name, n);
		if (n->type == T_DIR)
			n->parent = d;
		import_node(n);
		if (n->type == T_DIR)
			import_dir(n);
	}
	rd_free(c);
}

/* Totals over the chunks; clusters (may be NULL): each chunk's count. */
static void chunk_totals(uint64_t *conts, uint64_t *xrefs, uint64_t *clusters)
{
	struct cfs_chunk_info ci;

	*conts = *xrefs = 0;
	for (uint32_t c = 0; c < g.cfg->chunks; c++) {
		int r = cfs_get_chunk_info(g.fs, c, &ci);

		if (r)
			MFAIL("cfs_get_chunk_info %u: %s", c, ename(r));
		*conts += ci.conts;
		*xrefs += ci.xrefs;
		if (clusters)
			clusters[c] = ci.clusters;
	}
}

/* chunks (may be NULL): the chunk of each inode of the root's chain, the
 * first CFS_MAX_CHUNKS of them. */
static void root_usage(uint64_t *blocks, int *chain, uint32_t *chunks)
{
	struct cfs_stat st;
	uint32_t own[CFS_MAX_CHUNKS];
	int r = cfs_getattr(g.fs, g.root->ino, &st);

	if (r)
		MFAIL("getattr /: %s", ename(r));
	*blocks = st.blocks;
	*chain = cfs_file_chunks(g.fs, g.root->ino, chunks ? chunks : own, CFS_MAX_CHUNKS);
	if (*chain < 1)
		MFAIL("cfs_file_chunks /: %s", ename(*chain));
}

static void setup(void)
{
	const struct mcfg *c = g.cfg;
	uint8_t uuid[16];
	struct cfs_mkfs_opts o = {
		.size = c->size, .block_size = c->bsize, .chunks = c->chunks,
		.inodes = c->inodes, .label = "model", .uuid = uuid,
		.now = 1700000000,
	};
	struct cfs_info info;
	int r;

	/* A fixed uuid: it seeds the checksums and perhaps the name hash, and
	 * a replay must see the same directory order. */
	for (int i = 0; i < 16; i++)
		uuid[i] = (uint8_t)(g.seed >> (i % 8 * 8)) ^ (uint8_t)i;
	describe("mkfs and open");
	r = cfs_bdev_fault_create(c->size, c->bsize, &g.dev);
	if (r)
		MFAIL("cfs_bdev_fault_create: %s", ename(r));
	r = cfs_mkfs_bdev(g.dev, &o);
	if (r)
		MFAIL("cfs_mkfs_bdev: %s (%s)", ename(r), cfs_last_error());
	fs_open();
	r = cfs_get_info(g.fs, &info);
	if (r || info.chunks != c->chunks || info.block_size != c->bsize)
		MFAIL("cfs_get_info: %s, %u chunks of %u-byte blocks (asked %u, %u)",
		      ename(r), info.chunks, info.block_size, c->chunks, c->bsize);
	g.inline_max = info.inline_max;
	g.root = mnode_new(T_DIR, 0, 0, 0, info.root);
	g.root->parent = g.root;
	import_node(g.root);
	import_dir(g.root);
	compare_tree();
	g.sf0 = get_statfs();
	root_usage(&g.root_blocks0, &g.root_chain0, NULL);
	chunk_totals(&g.conts0, &g.xrefs0, g.clusters0);
	/* FORMAT.md 10.4 */
	g.clb = (64 * info.inode_size + c->bsize - 1) / c->bsize;
	if (!g.clb)
		g.clb = 1;
	g.map_nrec = (c->bsize - 32) / 16;
}

static struct mnode *setup_mkdir(struct mnode *d, const char *name)
{
	cfs_ino_t ino;
	int r = cfs_mkdir(g.fs, d->ino, name, S_IFDIR | 0755, 0, 0, &ino);
	struct mnode *n;

	if (r)
		MFAIL("mkdir %s: %s", path(d, name), ename(r));
	n = mnode_new(T_DIR, S_IFDIR | 0755, 0, 0, ino);
	m_attach(d, name, n);
	return n;
}

/* Nearly full: one file written until space runs out (it continues through
 * every chunk), then cut back by about 3% of the filesystem. */
static void fill_up(void)
{
	size_t len = 65536;
	uint8_t *buf = talloc(len);
	struct mnode *d = setup_mkdir(g.root, "fill"), *n;
	cfs_ino_t ino;
	uint64_t cut;
	ssize_t r;
	int e;

	describe("fill: create /fill/data and write until -ENOSPC");
	e = cfs_mknod(g.fs, d->ino, "data", S_IFREG | 0644, 0, 0, 0, &ino);
	if (e)
		MFAIL("create /fill/data: %s", ename(e));
	n = mnode_new(T_REG, S_IFREG | 0644, 0, 0, ino);
	m_attach(d, "data", n);
	d->ballast = n->ballast = 1;
	do {
		uint64_t off = n->size;

		rfill(buf, len);
		r = cfs_write(g.fs, n->ino, buf, len, off);
		write_outcome(n, off, buf, len, r);
	} while (r == (ssize_t)len);
	tfree(buf);
	cut = g.cfg->size / 32;
	cut = n->size > cut ? n->size - cut : 0;
	describe("fill: truncate /fill/data to %llu", (unsigned long long)cut);
	mc_truncate(n, cut);
	e = cfs_setattr(g.fs, n->ino, &(struct cfs_setattr){ .valid = CFS_SET_SIZE,
				.size = cut }, NULL);
	if (e)
		MFAIL("truncate /fill/data: %s", ename(e));
	checkpoint("after filling");
}

static void delete_tree(struct mnode *d)
{
	size_t i = 0;

	while (i < d->nde) {
		struct mnode *n = d->de[i].n;
		char name[CFS_NAME_MAX + 1];
		int r;

		if (n->fixed) {
			i++;
			continue;
		}
		strcpy(name, d->de[i].name);
		if (n->type == T_DIR)
			delete_tree(n);
		describe("%s %s", n->type == T_DIR ? "rmdir" : "unlink", path(d, name));
		r = n->type == T_DIR ? cfs_rmdir(g.fs, d->ino, name) :
				       cfs_unlink(g.fs, d->ino, name);
		if (r)
			MFAIL("removing everything: %s", ename(r));
		m_release(m_detach(d, name));
	}
}

static void print_chunks(void)
{
	struct cfs_chunk_info ci;

	for (uint32_t c = 0; c < g.cfg->chunks; c++)
		if (!cfs_get_chunk_info(g.fs, c, &ci))
			fprintf(stderr, "  chunk %u: %llu/%llu blocks free, %llu/%llu"
				" inodes free, %llu conts, %llu xrefs\n", c,
				(unsigned long long)ci.free_blocks,
				(unsigned long long)ci.blocks,
				(unsigned long long)ci.free_inodes,
				(unsigned long long)ci.inodes,
				(unsigned long long)ci.conts,
				(unsigned long long)ci.xrefs);
}

/* Blocks the inode clusters made since mkfs still hold, with the map
 * blocks they added.  With everything deleted a cluster stays only for an
 * inode of the root's chain: a continuation the root grew when its
 * chunk's table was full lives in a cluster, and a cluster goes back only
 * when all its inodes are free (FORMAT.md 10.4), so the root pins 16
 * blocks and a map block at 1 KiB (tiny, seed 1).  One cluster more than
 * the root's new continuations in a chunk is a leak. */
static uint64_t clusters_pinned(const uint32_t *chunks, int chain)
{
	uint64_t now[CFS_MAX_CHUNKS], conts, xrefs, pinned = 0;
	uint32_t c;
	int i;

	chunk_totals(&conts, &xrefs, now);
	for (c = 0; c < g.cfg->chunks; c++) {
		uint64_t extra = now[c] > g.clusters0[c] ? now[c] - g.clusters0[c] : 0, held = 0;

		if (!extra)
			continue;
		for (i = 0; i < chain && i < CFS_MAX_CHUNKS; i++)
			held += i > 0 && chunks[i] == c;   /* the head was there at mkfs */
		if (extra > held) {
			print_chunks();
			MFAIL("after deleting everything chunk %u keeps %llu inode clusters"
			      " (%llu after mkfs), but only %llu continuations of / are"
			      " there", c, (unsigned long long)now[c],
			      (unsigned long long)g.clusters0[c], (unsigned long long)held);
		}
		pinned += extra * g.clb + (now[c] + g.map_nrec - 1) / g.map_nrec -
			  (g.clusters0[c] + g.map_nrec - 1) / g.map_nrec;
	}
	return pinned;
}

/* With everything deleted the free counts are back where mkfs left them,
 * except for what the root directory itself grew by (ext4 never shrinks a
 * directory either), and the clusters its new inodes live in. */
static void check_no_leak(void)
{
	struct cfs_statfs st = get_statfs();
	uint64_t blocks, conts, xrefs, grew, pinned;
	uint32_t chunks[CFS_MAX_CHUNKS];
	int chain;

	root_usage(&blocks, &chain, chunks);
	chunk_totals(&conts, &xrefs, NULL);
	grew = blocks > g.root_blocks0 ?
	       (blocks - g.root_blocks0) * 512 / g.cfg->bsize : 0;
	pinned = clusters_pinned(chunks, chain);
	/* inodes in use, not free: with inode clusters what a chunk can
	 * still make follows its free blocks, which the root took some of */
	if (st.bfree + grew + pinned != g.sf0.bfree ||
	    st.files - st.ffree != g.sf0.files - g.sf0.ffree + (uint64_t)(chain - g.root_chain0) ||
	    xrefs != g.xrefs0 || conts - g.conts0 != (uint64_t)(chain - g.root_chain0)) {
		print_chunks();
		MFAIL("after deleting everything: %llu blocks and %llu inodes free,"
		      " %llu conts, %llu xrefs; after mkfs %llu, %llu, %llu, %llu"
		      " (root grew by %llu blocks and %d inodes, its clusters hold"
		      " %llu blocks)",
		      (unsigned long long)st.bfree, (unsigned long long)st.ffree,
		      (unsigned long long)conts, (unsigned long long)xrefs,
		      (unsigned long long)g.sf0.bfree, (unsigned long long)g.sf0.ffree,
		      (unsigned long long)g.conts0, (unsigned long long)g.xrefs0,
		      (unsigned long long)grew, chain - g.root_chain0,
		      (unsigned long long)pinned);
	}
}

static void finish(void)
{
	checkpoint("end");
	describe("delete everything");
	delete_tree(g.root);
	describe("after deleting everything: close, reopen, check, compare, statfs");
	remount();
	check_fs("after deleting everything");
	compare_tree();
	check_no_leak();
}

static void model_reset(void)
{
	if (g.fs)
		cfs_close(g.fs);
	g.fs = NULL;
	if (g.dev)
		cfs_bdev_destroy(g.dev);
	g.dev = NULL;
	while (g.nnodes)
		mnode_free(g.nodes[g.nnodes - 1]);
	free(g.nodes);
	g.nodes = NULL;
	tfree_all();
	rd_free_all();
	g.root = NULL;
	g.nospc = g.shorts = g.remounts = g.nospc_chunk = 0;
	g.peak_conts = g.peak_xrefs = g.peak_clusters = 0;
	hint_clear();
	g.nhist = 0;
	g.opno = 0;
}

static long env_long(const char *name, long def)
{
	const char *s = getenv(name);

	return s && *s ? strtol(s, NULL, 0) : def;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void run_config(const struct mcfg *c)
{
	const char *only = getenv("CHUNKFS_MODEL_CONFIG");
	const char *s = getenv("CHUNKFS_MODEL_SEED");
	double t0 = now();
	long next;

	model_reset();
	if (only && *only && strcmp(only, c->name))
		TEST_SKIP("not the configuration CHUNKFS_MODEL_CONFIG names");
	g.cfg = c;
	g.seed = s && *s ? strtoull(s, NULL, 0) : c->seed;
	g.nops = env_long("CHUNKFS_MODEL_OPS", c->ops);
	g.trace = env_long("CHUNKFS_MODEL_TRACE", 0) != 0;
	g.full = env_long("CHUNKFS_MODEL_FULL", 0) != 0;
	rng = g.seed;
	crng = g.seed ^ 0x6A09E667F3BCC908ull;
	printf("model: seed %llu, %ld ops (config %s: %u-byte blocks, %u chunks,"
	       " %llu KiB, %llu inodes%s)\n", (unsigned long long)g.seed, g.nops,
	       c->name, c->bsize, c->chunks, (unsigned long long)(c->size >> 10),
	       (unsigned long long)c->inodes, c->fill ? ", nearly full" : "");
	fflush(stdout);
	setup();
	if (c->fill)
		fill_up();
	next = rrange(150, 250);
	for (g.opno = 1; g.opno <= g.nops; g.opno++) {
		run_op();
		if (g.opno == next) {
			checkpoint("periodic");
			next += rrange(150, 250);
		}
	}
	g.opno = g.nops;
	finish();
	printf("model: config %s done: %ld ops, %ld reopens, %ld -ENOSPC (%ld of"
	       " them from one full chunk), %ld short writes, up to %llu"
	       " continuations and %llu cross-chunk stubs, %.1f s\n", c->name,
	       g.nops, g.remounts, g.nospc + g.nospc_chunk, g.nospc_chunk, g.shorts,
	       (unsigned long long)g.peak_conts, (unsigned long long)g.peak_xrefs,
	       now() - t0);
	if (c->cross && g.nops >= 1000 && (!g.peak_conts || !g.peak_xrefs))
		TEST_FAIL("tiny chunks, yet no continuation or no cross-chunk stub");
	if (c->clusters && !g.peak_clusters)
		TEST_FAIL("16-inode tables, yet no chunk made an inode cluster");
	if (c->fill && !g.nospc && !g.shorts)
		TEST_FAIL("the nearly full configuration never ran out of space");
	model_reset();
}

/* 1 KiB blocks, 16 chunks of 512 KiB, 64 inodes a chunk: continuations
 * and cross-chunk references all the time, chunks out of inodes too. */
static const struct mcfg cfg_tiny = {
	.name = "tiny", .wi = 0, .seed = 12345, .ops = 16000,
	.size = 4 << 20, .bsize = 1024, .chunks = 32, .inodes = 2048,
	.max_off = 1ull << 30, .big_write = 96 << 10, .cross = 1,
};

static const struct mcfg cfg_default = {
	.name = "default", .wi = 1, .seed = 4242, .ops = 10000,
	.size = 64 << 20, .bsize = 4096, .chunks = 4, .inodes = 0,
	.max_off = 1ull << 40, .big_write = 512 << 10,
};

static const struct mcfg cfg_full = {
	.name = "full", .wi = 2, .seed = 777, .ops = 8000,
	.size = 4 << 20, .bsize = 4096, .chunks = 4, .inodes = 0,
	.max_off = 1ull << 26, .big_write = 256 << 10, .fill = 1,
};

/* 16-inode tables: chunks make inode clusters (FORMAT.md 10.4) all the
 * time, and give freed slots again. */
static const struct mcfg cfg_clusters = {
	.name = "clusters", .wi = 0, .seed = 9090, .ops = 8000,
	.size = 8 << 20, .bsize = 1024, .chunks = 4, .inodes = 64,
	.max_off = 1ull << 24, .big_write = 32 << 10, .clusters = 1,
};

static void test_model_tiny_chunks(void)
{
	run_config(&cfg_tiny);
}

static void test_model_default(void)
{
	run_config(&cfg_default);
}

static void test_model_nearly_full(void)
{
	run_config(&cfg_full);
}

static void test_model_clusters(void)
{
	run_config(&cfg_clusters);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	catch_crashes();
	TEST_RUN(test_model_tiny_chunks);
	TEST_RUN(test_model_default);
	TEST_RUN(test_model_nearly_full);
	TEST_RUN(test_model_clusters);
	model_reset();
	return TEST_DONE();
}

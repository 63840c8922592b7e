/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Filesystem lifecycle: mkfs, open, sync, clean marking, close, and the
 * global information calls. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bdev.h"
#include "fsint.h"

#define CACHE_BYTES (64u << 20)

static int fs_open(struct cfs_bdev *bd, int flags, int own, uint64_t cache,
		   struct cfs_fs **out);

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

int fs_op_begin(struct cfs_fs *fs)
{
	if (fs->rdonly || __atomic_load_n(&fs->ro_error, __ATOMIC_RELAXED))
		return -EROFS;
	pthread_rwlock_rdlock(&fs->op_lock);
	return 0;
}

void fs_op_end(struct cfs_fs *fs)
{
	pthread_rwlock_unlock(&fs->op_lock);
}

/* About 1/100 of the filesystem per chunk (the chunkfs paper), but never
 * below 128 MiB: small chunks would make continuations common. */
uint32_t cfs_mkfs_default_chunks(uint64_t nblocks, uint32_t block_size)
{
	uint64_t bytes = nblocks * block_size, target = bytes / 100, n;

	if (target < (128ull << 20))
		target = 128ull << 20;
	n = bytes / target;
	if (n < 1)
		n = 1;
	if (n > CFS_MAX_CHUNKS)
		n = CFS_MAX_CHUNKS;
	return (uint32_t)n;
}

static int geometry(const struct cfs_mkfs_opts *o, uint64_t dev_blocks, uint32_t bs,
		    struct cfs_super *sb)
{
	uint32_t isz = o->inode_size ? o->inode_size : 256, ipb;
	uint64_t bits = (uint64_t)(bs - CFS_BLOCK_HDR) * 8, n, cb, ipc;

	if (isz < CFS_MIN_INODE || isz > bs || (isz & (isz - 1)))
		return cfs_set_error("bad inode size %u", isz), -EINVAL;
	if (dev_blocks < 16)
		return cfs_set_error("device too small"), -ENOSPC;
	n = o->chunks ? o->chunks : cfs_mkfs_default_chunks(dev_blocks, bs);
	if (n < 1 || n > CFS_MAX_CHUNKS)
		return cfs_set_error("bad chunk count %llu (1-256)", (unsigned long long)n),
		       -EINVAL;
	cb = (dev_blocks - 2) / n;
	if (cb > 0xFFFFFFFFull)
		cb = 0xFFFFFFFFull;
	ipb = bs / isz;
	/* mke2fs's ratios: one inode per 4 KiB below 512 MiB, else 16 KiB.
	 * Inode tables are initialised lazily, so unused ones cost nothing
	 * to create or to check. */
	if (o->inodes)
		ipc = div_up(o->inodes, n);
	else
		ipc = cb * bs / (dev_blocks * bs < (512ull << 20) ? 4096 : 16384);
	if (ipc < 16)
		ipc = 16;
	ipc = div_up(ipc, ipb) * ipb;
	if (ipc > CFS_MAX_LOCAL_INO)
		ipc = CFS_MAX_LOCAL_INO;
	memset(sb, 0, sizeof(*sb));
	sb->version = CFS_FORMAT_VERSION;
	sb->feat_compat = CFS_FEAT_COMPAT_ERROR_RECORD;
	if (o->dyninodes >= 0)
		sb->feat_incompat |= CFS_FEAT_INCOMPAT_DYNINODES;
	sb->block_size = bs;
	sb->inode_size = isz;
	sb->nchunks = (uint32_t)n;
	sb->inodes_per_chunk = (uint32_t)ipc;
	sb->chunk_blocks = cb;
	sb->first_chunk_block = 1;
	sb->backup_sb_block = 1 + n * cb;
	sb->total_blocks = sb->backup_sb_block + 1;
	sb->bbm_blocks = (uint32_t)div_up(cb, bits);
	sb->ibm_blocks = (uint32_t)div_up(ipc, bits);
	sb->itable_blocks = (uint32_t)div_up(ipc, ipb);
	sb->data_start = 1 + sb->bbm_blocks + sb->ibm_blocks + sb->itable_blocks;
	if ((uint64_t)sb->data_start + 8 > cb)
		return cfs_set_error("chunks too small for their inode tables "
				     "(%llu blocks per chunk); use fewer chunks or inodes",
				     (unsigned long long)cb), -ENOSPC;
	return 0;
}

int write_super(struct cfs_bdev *bd, const struct cfs_super *sb, uint64_t blk)
{
	uint8_t *buf = calloc(1, sb->block_size);
	int ret;

	if (!buf)
		return -ENOMEM;
	cfs_super_encode(sb, buf);
	ret = cfs_bdev_write(bd, blk, 1, buf);
	free(buf);
	return ret;
}

int super_write_primary(struct cfs_fs *fs)
{
	int ret = write_super(fs->bd, &fs->sb, 0);

	if (ret == 0)
		ret = cfs_bdev_flush(fs->bd);
	if (ret == 0)
		fs->sb_from_backup = 0;
	return ret;
}

static int mkfs_chunks(struct cfs_bdev *bd, const struct cfs_super *sb, int64_t now)
{
	uint8_t *buf = calloc(1, sb->block_size);
	struct cfs_chunk_hdr h;
	uint32_t c;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	memset(&h, 0, sizeof(h));
	memcpy(h.uuid, sb->uuid, 16);
	h.free_blocks = (uint32_t)(sb->chunk_blocks - sb->data_start);
	h.free_inodes = sb->inodes_per_chunk;
	h.last_check = now;
	for (c = 0; c < sb->nchunks && ret == 0; c++) {
		uint64_t blk = sb->first_chunk_block + (uint64_t)c * sb->chunk_blocks;

		h.index = c;
		memset(buf, 0, sb->block_size);
		cfs_meta_init(buf, CFS_MAGIC_CHUNK, blk);
		cfs_chunk_hdr_encode(&h, buf);
		cfs_meta_csum_set(buf, sb->block_size, cfs_fs_seed(sb->uuid));
		ret = cfs_bdev_write(bd, blk, 1, buf);
	}
	free(buf);
	return ret;
}

static int mkfs_root(struct cfs_fs *fs)
{
	struct inode *root = NULL, *lpf = NULL;
	struct dirent_rec r;
	int ret;

	ret = inode_alloc(fs, 0, 1, S_IFDIR | 0755, &root);
	if (ret < 0)
		return ret;
	if (root->ino != CFS_ROOT_INO) {
		ret = -EUCLEAN;
		goto out;
	}
	root->d.nlink = 3;
	root->d.back = root->ino;
	ret = dir_init(fs, root);
	if (ret == 0)
		ret = inode_alloc(fs, 0, 1, S_IFDIR | 0700, &lpf);
	if (ret < 0)
		goto out;
	lpf->d.nlink = 2;
	lpf->d.back = root->ino;
	ret = dir_init(fs, lpf);
	if (ret < 0)
		goto out;
	memset(&r, 0, sizeof(r));
	r.ino = lpf->ino;
	r.type = 4; /* DT_DIR */
	r.namelen = 10;
	memcpy(r.name, "lost+found", 10);
	ret = dir_add(fs, root, &r);
	if (ret == 0)
		ret = inode_write(fs, root);
	chunk_count(fs, 0, CNT_DIRS, 2);
out:
	if (lpf)
		pthread_mutex_unlock(&lpf->lock);
	if (root)
		pthread_mutex_unlock(&root->lock);
	inode_put(fs, lpf);
	inode_put(fs, root);
	return ret;
}

static int mkfs_bdev(struct cfs_bdev *bd, const struct cfs_mkfs_opts *o)
{
	uint32_t bs = o->block_size ? o->block_size : 4096;
	struct cfs_super sb;
	struct cfs_fs *fs;
	int64_t now = o->now ? o->now : time(NULL);
	int ret;

	if (bs < CFS_MIN_BLOCK || bs > CFS_MAX_BLOCK || (bs & (bs - 1))) {
		cfs_set_error("bad block size %u (power of two, 1024-65536)", bs);
		return -EINVAL;
	}
	ret = cfs_bdev_set_block_size(bd, bs);
	if (ret < 0)
		return ret;
	ret = geometry(o, bd->nblocks, bs, &sb);
	if (ret < 0)
		return ret;
	if (o->uuid) {
		memcpy(sb.uuid, o->uuid, 16);
	} else {
		if (getrandom(sb.uuid, 16, 0) != 16)
			return -errno;
		sb.uuid[6] = (uint8_t)((sb.uuid[6] & 0x0F) | 0x40);   /* version 4 */
		sb.uuid[8] = (uint8_t)((sb.uuid[8] & 0x3F) | 0x80);
	}
	if (o->label && strlen(o->label) > 63) {
		cfs_set_error("label too long (at most 63 bytes)");
		return -EINVAL;
	}
	if (o->label)
		strcpy(sb.label, o->label);
	sb.created = now;
	sb.root_ino = CFS_ROOT_INO;
	sb.lpf_ino = CFS_INO_MAKE(0, 2);
	sb.hash_seed = (uint32_t)(sb.uuid[0] | sb.uuid[5] << 8 | sb.uuid[10] << 16 |
				  (uint32_t)sb.uuid[15] << 24);
	/* Invalidate an old superblock first: a crash mid-mkfs must not
	 * leave an old filesystem looking valid over new chunk headers. */
	ret = write_super(bd, &(struct cfs_super){ .block_size = bs }, 0);
	if (ret == 0)
		ret = mkfs_chunks(bd, &sb, now);
	if (ret == 0)
		ret = write_super(bd, &sb, sb.backup_sb_block);
	if (ret == 0)
		ret = cfs_bdev_flush(bd);
	if (ret == 0)
		ret = write_super(bd, &sb, 0);
	if (ret == 0)
		ret = cfs_bdev_flush(bd);
	if (ret < 0)
		return ret;
	ret = fs_open(bd, CFS_OPEN_NOCHECK, 0, 0, &fs);
	if (ret < 0)
		return ret;
	ret = mkfs_root(fs);
	if (ret < 0) {
		cfs_close(fs);
		return ret;
	}
	return cfs_close(fs);
}

int cfs_mkfs(const char *path, const struct cfs_mkfs_opts *o)
{
	struct cfs_bdev *bd;
	struct stat st;
	int fd, ret;

	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		cfs_set_error("%s", strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && o->size &&
	    ftruncate(fd, (off_t)o->size) < 0) {
		ret = -errno;
		cfs_set_error("cannot set size: %s", strerror(errno));
		close(fd);
		return ret;
	}
	close(fd);
	ret = cfs_bdev_file_open(path, O_RDWR, CFS_MIN_BLOCK, &bd);
	if (ret < 0) {
		cfs_set_error("%s", ret == -EBUSY ?
			      "image is in use by another process (mounted?)" :
			      strerror(-ret));
		return ret;
	}
	ret = cfs_mkfs_bdev(bd, o);
	cfs_bdev_destroy(bd);
	return ret;
}

/* o as this library knows it (include/chunkfs.h, "Structs that grow") */
int cfs_mkfs_bdev(struct cfs_bdev *bd, const struct cfs_mkfs_opts *opts)
{
	struct cfs_mkfs_opts o;
	int ret = cfs_struct_in(&o, sizeof(o), CFS_MKFS_OPTS_SIZE0, opts);

	if (ret < 0) {
		cfs_set_error(ret == -E2BIG ? "mkfs options this library does not know "
			      "(a newer chunkfs.h)" : "bad struct_size in the mkfs options");
		return ret;
	}
	return mkfs_bdev(bd, &o);
}

/* ---- open ---- */

static int super_check(struct cfs_fs *fs, const uint8_t *buf, struct cfs_super *sb)
{
	const char *why;
	int ret = cfs_super_decode(buf, sb);

	if (ret == -EUCLEAN) {
		cfs_set_error("not a chunkfs image (bad magic)");
		return ret;
	}
	if (ret < 0) {
		cfs_set_error("superblock checksum mismatch (run chunkfs fsck)");
		return ret;
	}
	if (sb->version != CFS_FORMAT_VERSION) {
		cfs_set_error("unsupported format version %u", sb->version);
		return -EPROTONOSUPPORT;
	}
	if (sb->feat_incompat & ~CFS_FEAT_INCOMPAT_SUPP) {
		cfs_set_error("unsupported incompatible features 0x%x; a newer chunkfs "
			      "is needed", sb->feat_incompat & ~CFS_FEAT_INCOMPAT_SUPP);
		return -EPROTONOSUPPORT;
	}
	/* validate before dividing by anything a hostile image chose */
	ret = cfs_super_validate(sb, UINT64_MAX, &why);
	if (ret == 0)
		ret = cfs_super_validate(sb, (fs->bd->nblocks * CFS_MIN_BLOCK) / sb->block_size,
					 &why);
	if (ret < 0)
		cfs_set_error("bad superblock: %s", why);
	return ret;
}

/* The backup superblock is the block after the last chunk, so it lies in
 * the device's last 256 chunks' worth of leftover blocks plus one: search
 * the tail for a valid copy that names its own position. */
static int find_backup(struct cfs_fs *fs, uint8_t *buf)
{
	uint64_t n = fs->bd->nblocks, span = (17ull << 20) / CFS_MIN_BLOCK, k;
	struct cfs_super sb;

	for (k = n; k-- > 0 && n - k <= span;) {
		if (cfs_bdev_read(fs->bd, k, 1, buf) < 0)
			continue;
		if (cfs_super_decode(buf, &sb) < 0 || !sb.block_size ||
		    sb.backup_sb_block * sb.block_size != k * CFS_MIN_BLOCK)
			continue;
		if (super_check(fs, buf, &fs->sb) == 0) {
			fs->sb_from_backup = 1;
			return 0;
		}
	}
	return -EUCLEAN;
}

/* Without repair a bad primary superblock fails the open; when the
 * backup is good, the message says how to get the filesystem back
 * rather than only what is wrong with the primary.  (fs->sb is left
 * unset: the open fails all the same.) */
static void backup_hint(struct cfs_fs *fs, uint8_t *buf)
{
	char why[256];          /* as long as the message itself */

	snprintf(why, sizeof(why), "%s", cfs_last_error());
	if (find_backup(fs, buf) == 0)
		cfs_set_error("%s; the backup superblock is good: chunkfs fsck -y "
			      "restores the primary from it", why);
	else
		cfs_set_error("%s", why);
	fs->sb_from_backup = 0;
	memset(&fs->sb, 0, sizeof(fs->sb));
}

static int read_super(struct cfs_fs *fs, int repair)
{
	uint8_t *buf = malloc(CFS_MIN_BLOCK);
	int ret;

	if (!buf)
		return -ENOMEM;
	if (fs->bd->nblocks < 1) {
		cfs_set_error("not a chunkfs image (too small)");
		ret = -EUCLEAN;
		goto out;
	}
	ret = cfs_bdev_read(fs->bd, 0, 1, buf);
	if (ret < 0) {
		cfs_set_error("cannot read superblock: %s", strerror(-ret));
		goto out;
	}
	ret = super_check(fs, buf, &fs->sb);
	if (ret < 0 && ret != -EPROTONOSUPPORT && repair && find_backup(fs, buf) == 0)
		ret = 0;
	else if (ret < 0 && ret != -EPROTONOSUPPORT)
		backup_hint(fs, buf);
	/* the file's names are split between two inodes until fsck, which
	 * knows the pair, finishes the move (docs/MOVE.md) */
	if (ret == 0 && !repair && (fs->sb.feat_incompat & CFS_FEAT_INCOMPAT_RENUMBER)) {
		cfs_set_error("an inode renumber (evacuate or shrink) was cut short: "
			      "chunkfs fsck finishes it");
		ret = -EUCLEAN;
	}
out:
	free(buf);
	return ret;
}

/* The block cache's size: the opener's (cfs_open_opts.cache_bytes), else
 * the default.  Only the test build (-DCFS_TEST_HOOKS: build/san, the
 * unit tests) lets CHUNKFS_CACHE_KB change the default, so that crash
 * tests can shrink the cache of every open, the mount's and the
 * command's included, and write-back interleaves with the workload; the
 * installed library reads no environment. */
static size_t cache_bytes(uint64_t asked)
{
#ifdef CFS_TEST_HOOKS
	const char *e = getenv("CHUNKFS_CACHE_KB");
	unsigned long kb = e ? strtoul(e, NULL, 10) : 0;

	if (!asked && kb)
		return (size_t)kb << 10;
#endif
	if (asked)
		return asked > SIZE_MAX ? SIZE_MAX : (size_t)asked;
	return CACHE_BYTES;
}

static int fs_setup(struct cfs_fs *fs, int flags)
{
	int ret;

	fs->bsize = fs->sb.block_size;
	fs->isz = fs->sb.inode_size;
	fs->varsz = fs->isz - CFS_INODE_FIXED - 4;
	fs->ipb = fs->bsize / fs->isz;
	fs->bits_per_bm = (uint64_t)(fs->bsize - CFS_BLOCK_HDR) * 8;
	fs->seed = cfs_fs_seed(fs->sb.uuid);
	if ((fs->sb.feat_ro_compat & ~CFS_FEAT_RO_COMPAT_SUPP) && !fs->rdonly &&
	    !(flags & CFS_OPEN_FORCE)) {
		cfs_set_error("unsupported read-only-compatible features 0x%x; "
			      "open it read-only", fs->sb.feat_ro_compat);
		return -EROFS;
	}
	/* a scrub's view shares the mounted filesystem's device, already set */
	ret = fs->bd->block_size == fs->bsize ? 0 : cfs_bdev_set_block_size(fs->bd, fs->bsize);
	if (ret < 0)
		return ret;
	ret = cache_init(&fs->cache, fs->bd, cache_bytes(fs->cache_asked), fs->seed);
	if (ret < 0)
		return ret;
	fs->cache.before_dirty = chunk_direct_to_dirty_disk;
	fs->cache.on_corrupt = chunk_on_corrupt;
	fs->cache.ctx = fs;
	fs->checking = !!(flags & CFS_OPEN_REPAIR);
	/* fsck and a scrub's view mark each chunk before they change it:
	 * their steps read the states back */
	if (!fs->checking) {
		fs->lazy = 1;
		fs->cache.note_dirty = chunk_blk_to_changed_mem;
		fs->cache.before_write = chunk_changed_to_dirty_disk;
	}
	/* room for every chunk a resize may add while open */
	fs->chunks = calloc(CFS_MAX_CHUNKS, sizeof(*fs->chunks));
	if (!fs->chunks)
		return -ENOMEM;
	return chunk_load_all(fs, !!(flags & CFS_OPEN_REPAIR));
}

static int dirty_refusal(struct cfs_fs *fs)
{
	char list[256] = "";
	size_t used = 0;
	uint32_t c, n = 0;

	for (c = 0; c < fs->sb.nchunks; c++) {
		if (!(fs->chunks[c].hdr.state & (CFS_STATE_DIRTY | CFS_STATE_ERROR)))
			continue;
		if (n++ < 16 && used < sizeof(list) - 16)
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%u",
						 n > 1 ? "," : "", c);
	}
	if (!n)
		return 0;
	cfs_set_error("%u chunk%s need checking (%s%s): run chunkfs fsck", n,
		      n > 1 ? "s" : "", list, n > 16 ? ",..." : "");
	return -EUCLEAN;
}

static void fs_free(struct cfs_fs *fs)
{
	size_t i;

	for (i = 0; i < icache_buckets(fs); i++)
		while (fs->icache[i]) {
			struct inode *ip = fs->icache[i];

			fs->icache[i] = ip->hnext;
			inode_destroy(ip);
		}
	free(fs->icache);
	cache_destroy(&fs->cache);
	if (fs->chunks)
		icl_release(fs);
	for (i = 0; fs->chunks && i < CFS_MAX_CHUNKS; i++) {
		runset_free(&fs->chunks[i].freed_old);
		runset_free(&fs->chunks[i].freed_new);
	}
	free(fs->chunks);
	if (fs->bd && fs->own_bd)
		cfs_bdev_destroy(fs->bd);
	pthread_rwlock_destroy(&fs->op_lock);
	free(fs);
}

static struct cfs_fs *fs_alloc(struct cfs_bdev *bd, int flags, int own)
{
	struct cfs_fs *fs = calloc(1, sizeof(*fs));
	pthread_mutexattr_t ma;

	if (!fs)
		return NULL;
	if (icache_init(fs) < 0) {
		free(fs);
		return NULL;
	}
	fs->bd = bd;
	fs->own_bd = own;
	fs->rdonly = (flags & CFS_OPEN_RDONLY) || bd->read_only;
	fs->noacl = !!(flags & CFS_OPEN_NOACL);
	pthread_mutexattr_init(&ma);
	/* as the cache's lock: taken for every inode lookup */
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&fs->icache_lock, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_cond_init(&fs->icache_cond, NULL);
	pthread_rwlock_init(&fs->op_lock, NULL);
	pthread_mutex_init(&fs->rename_lock, NULL);
	pthread_mutex_init(&fs->spread_lock, NULL);
	fence_init(fs);
	return fs;
}

static int fs_open(struct cfs_bdev *bd, int flags, int own, uint64_t cache,
		   struct cfs_fs **out)
{
	struct cfs_fs *fs = fs_alloc(bd, flags, own);
	int ret;

	if (!fs) {
		if (own)
			cfs_bdev_destroy(bd);
		return -ENOMEM;
	}
	fs->cache_asked = cache;
	ret = cfs_bdev_set_block_size(bd, CFS_MIN_BLOCK);
	if (ret == 0)
		ret = read_super(fs, !!(flags & CFS_OPEN_REPAIR));
	if (ret == 0)
		ret = fs_setup(fs, flags);
	if (ret == 0 && !fs->rdonly && !(flags & CFS_OPEN_NOCHECK))
		ret = dirty_refusal(fs);
	if (ret < 0) {
		fs_free(fs);
		return ret;
	}
	*out = fs;
	return 0;
}

/* The device is the mounted filesystem's, already set to its block size
 * (re-setting it to the CFS_MIN_BLOCK the superblock is read with would
 * move the blocks under the mounted filesystem): the superblock is its. */
int fs_view_open(struct cfs_fs *live, int rdonly, struct cfs_fs **out)
{
	return fs_view_open_bd(live, live->bd, rdonly, out);
}

int fs_view_open_bd(struct cfs_fs *live, struct cfs_bdev *bd, int rdonly, struct cfs_fs **out)
{
	struct cfs_fs *fs = fs_alloc(bd, rdonly ? CFS_OPEN_RDONLY : 0, 0);
	int ret;

	if (!fs)
		return -ENOMEM;
	fs->sb = live->sb;
	fs->live = live;
	fs->cache_asked = live->cache_asked;
	fs->touched = calloc(CFS_MAX_CHUNKS, 1);
	ret = fs->touched ? fs_setup(fs, CFS_OPEN_NOCHECK | CFS_OPEN_REPAIR) : -ENOMEM;
	if (ret < 0) {
		fs_view_close(fs);
		return ret;
	}
	*out = fs;
	return 0;
}

void fs_view_close(struct cfs_fs *fs)
{
	free(fs->touched);
	fs_free(fs);
}

int cfs_open_bdev(struct cfs_bdev *bd, int flags, struct cfs_fs **out)
{
	return fs_open(bd, flags, 1, 0, out);
}

/* opts as this library knows it (include/chunkfs.h, "Structs that grow") */
int cfs_open_ext(const char *path, const struct cfs_open_opts *opts, struct cfs_fs **out)
{
	struct cfs_open_opts o = { .struct_size = sizeof(o) };
	struct cfs_bdev *bd;
	int ret;

	if (opts && (ret = cfs_struct_in(&o, sizeof(o), CFS_OPEN_OPTS_SIZE0, opts)) < 0) {
		cfs_set_error(ret == -E2BIG ? "open options this library does not know "
			      "(a newer chunkfs.h)" : "bad struct_size in the open options");
		return ret;
	}
	ret = cfs_bdev_file_open(path, (o.flags & CFS_OPEN_RDONLY) ? O_RDONLY : O_RDWR,
				 CFS_MIN_BLOCK, &bd);
	if (ret == -EBUSY) {
		cfs_set_error("image is in use by another process (mounted?)");
		return ret;
	}
	if (ret < 0) {
		cfs_set_error("%s", strerror(-ret));
		return ret;
	}
	return fs_open(bd, o.flags, 1, o.cache_bytes, out);
}

int cfs_open(const char *path, int flags, struct cfs_fs **out)
{
	struct cfs_open_opts o = { .struct_size = sizeof(o), .flags = flags };

	return cfs_open_ext(path, &o, out);
}

/* ---- sync, clean, close ---- */

static int write_headers(struct cfs_fs *fs, int clean)
{
	uint32_t c;
	int ret = 0, r;

	for (c = 0; c < fs->sb.nchunks; c++) {
		struct chunk *ch = &fs->chunks[c];
		uint32_t st;

		pthread_mutex_lock(&ch->state_lock);
		st = ch->disk_state;
		/* a chunk that needed checking when opened stays marked until
		 * fsck has checked it */
		if (clean && (st & CFS_STATE_DIRTY) && !ch->was_dirty)
			st &= ~(uint32_t)CFS_STATE_DIRTY;
		if (st != ch->disk_state || ch->hdr_unwritten) {
			r = chunk_hdr_write_disk(fs, c, st);
			if (r < 0 && !ret)
				ret = r;
		}
		pthread_mutex_unlock(&ch->state_lock);
	}
	r = cfs_bdev_flush(fs->bd);
	return ret ? ret : r;
}

int cfs_sync(struct cfs_fs *fs)
{
	int ret;

	if (fs->rdonly)
		return 0;
	fence_wait(fs, 0);   /* nothing is written while a repair is checked */
	/* no operation in flight: every buffer is written whole, never while
	 * a thread is half-way through changing it */
	pthread_rwlock_wrlock(&fs->op_lock);
	ret = chunk_trim_clusters(fs);
	if (ret == 0)
		ret = fs_write_all(fs);
	pthread_rwlock_unlock(&fs->op_lock);
	if (ret < 0)
		fs->error = ret;
	return ret;
}

/* cfs_sync for one file's fsync: every change of the metadata goes out
 * as at a sync, in the same order, but each flush on the way makes
 * durable only the blocks written since the last full flush but for
 * file data, and the data runs given (the file's): the dirty data of
 * the other files stays in the host's cache.  Their metadata goes out
 * as it does whenever the cache makes room; every chunk it changes was
 * marked dirty on disk first (lazy marking), so a crash leaves them to
 * the check as ever.  Empty inode clusters are left to the next sync. */
int fs_sync_ranges(struct cfs_fs *fs, struct cfs_brange *data, size_t n)
{
	int ret;

	if (fs->rdonly)
		return 0;
	fence_wait(fs, 0);
	pthread_rwlock_wrlock(&fs->op_lock);
	cfs_bdev_sync_ranges(fs->bd, data, n);
	ret = fs_write_all(fs);
	cfs_bdev_sync_end(fs->bd);
	pthread_rwlock_unlock(&fs->op_lock);
	if (ret < 0)
		fs->error = ret;
	return ret;
}

int fs_space_back(struct cfs_fs *fs, int64_t err)
{
	uint64_t spare = 0;
	uint32_t c;

	/* a check's open keeps to its own passes' writes */
	if (err != -ENOSPC || fs->checking)
		return 0;
	for (c = 0; c < fs->sb.nchunks && !spare; c++)
		spare = chunk_clusters_spare(fs, c);
	return spare && cfs_sync(fs) == 0;
}

/* Between the two stages of the flush: every unordered block is on the
 * disk, so the headers may say so.  An ordered block may rely on an
 * inode in an inode-table block first used since the header was last
 * written (a whiteout, a stub): fsck reads the table only as far as
 * the header's watermark says (FORMAT.md 18), so the header goes
 * first. */
static int headers_between(void *ctx)
{
	return write_headers(ctx, 0);
}

int fs_write_all(struct cfs_fs *fs)
{
	uint64_t mark[CFS_MAX_CHUNKS] = { 0 };
	int ret;

	chunk_freed_mark(fs, mark);
	ret = cache_flush_between(&fs->cache, 0, UINT64_MAX, headers_between, fs);
	if (ret == 0)
		chunk_freed_forget(fs, mark);
	return ret ? ret : write_headers(fs, 0);
}

/* Every change so far to stable storage (operations are excluded), and
 * every chunk's header after it.  A dirty chunk's header on disk is
 * otherwise the one written when it went dirty: its inode-table watermark,
 * which is how far fsck reads the table, would hide the inodes made since,
 * though they are on disk now and a chunk about to be marked clean may
 * name them. */
static int idle_flush(struct cfs_fs *fs)
{
	int ret = fs_write_all(fs);

	if (ret == 0)
		fs->idle_flushed = cfs_now_mono();
	return ret;
}

/* Set held[c] for each chunk c holding an inode unlinked but still open.
 * Runs with every operation excluded, so link counts hold still; open
 * counts change under each inode's lock, which cannot be taken under the
 * cache lock: the few unlinked inodes are pinned first.  -ENOMEM: all
 * held. */
static int orphan_chunks(struct cfs_fs *fs, uint8_t *held)
{
	struct inode **pin = NULL, **p, *ip;
	size_t i, n = 0;
	int ret = 0;

	pthread_mutex_lock(&fs->icache_lock);
	for (i = 0; i < icache_buckets(fs) && ret == 0; i++)
		for (ip = fs->icache[i]; ip && ret == 0; ip = ip->hnext) {
			if (ip->loading || !ip->d.mode || ip->d.nlink || ip->deleted)
				continue;
			p = realloc(pin, (n + 1) * sizeof(*pin));
			if (!p) {
				ret = -ENOMEM;
				break;
			}
			pin = p;
			ip->ref++;
			pin[n++] = ip;
		}
	pthread_mutex_unlock(&fs->icache_lock);
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&pin[i]->lock);
		if (pin[i]->open || ret < 0)
			held[CFS_INO_CHUNK(pin[i]->ino)] = 1;
		pthread_mutex_unlock(&pin[i]->lock);
		inode_put(fs, pin[i]);
	}
	free(pin);
	if (ret < 0)
		memset(held, 1, CFS_MAX_CHUNKS);
	return ret;
}

/* Whether chunk c has changes since it was last clean, in memory or on
 * disk, that a checkpoint may now write and mark clean: the oldest is idle
 * seconds old, or the chunk has been left alone that long. */
static int checkpoint_due(struct chunk *ch, double now, double idle)
{
	if (ch->was_dirty || !(ch->unmarked || (ch->disk_state & CFS_STATE_DIRTY)))
		return 0;
	return now - ch->last_change >= idle || now - ch->first_change >= idle;
}

/* A checkpoint, every idle seconds while anything changes: every change so
 * far goes to stable storage, then every chunk it marked dirty is marked
 * clean again, however busy the filesystem is (with lazy marking a chunk
 * is dirty on disk only from the first write of its changes to this).
 * A chunk holding an inode unlinked but still open stays dirty: after a
 * crash its check frees the inode ("deleted while open"), where a clean
 * chunk would keep the space for ever.  Its changes still go to disk once
 * idle, the unlink among them, or the crash would bring the file back. */
int cfs_clean_idle(struct cfs_fs *fs, double idle)
{
	double now = cfs_now_mono();
	uint8_t held[CFS_MAX_CHUNKS] = { 0 };
	uint32_t c;
	int n = 0, due = 0, ret = 0;

	if (fs->rdonly || fs->error)
		return 0;
	fence_wait(fs, 0);
	pthread_rwlock_wrlock(&fs->op_lock);
	/* Changes filling half the cache: a checkpoint now.  Else making room
	 * soon writes them back one at a time, the first write marks every
	 * changed chunk dirty on disk, and they stay so until the checkpoint
	 * that idle allows, however far off (the kernel starts write-back at
	 * dirty_background_ratio for the same reason). */
	if (cache_dirty_half(&fs->cache))
		idle = 0;
	orphan_chunks(fs, held);
	for (c = 0; c < fs->sb.nchunks; c++) {
		struct chunk *ch = &fs->chunks[c];

		if (!checkpoint_due(ch, now, idle))
			continue;
		if (!held[c])
			due = 1;
		else if (ch->last_change >= fs->idle_flushed && now - ch->last_change >= idle)
			due |= 2;
	}
	/* empty inode clusters go back first, as at a sync: df counts them
	 * free, and a writer should find them so without making room */
	if (due && !fs->checking)
		ret = chunk_trim_clusters(fs);
	/* every chunk's changes, not just those of the chunks made clean:
	 * then "clean" also means that the other half of each cross-chunk
	 * reference made so far is on disk, which a dirty-only fsck relies on */
	if (due && ret == 0)
		ret = idle_flush(fs);
	for (c = 0; (due & 1) && ret == 0 && c < fs->sb.nchunks; c++) {
		struct chunk *ch = &fs->chunks[c];

		if (held[c] || ch->was_dirty)
			continue;
		pthread_mutex_lock(&ch->state_lock);
		/* written whole by the flush, or its changes forgotten */
		ch->unmarked = 0;
		if (ch->disk_state & CFS_STATE_DIRTY) {
			ret = chunk_hdr_write_disk(fs, c, ch->disk_state & ~(uint32_t)CFS_STATE_DIRTY);
			n += ret == 0;
		}
		pthread_mutex_unlock(&ch->state_lock);
	}
	if (ret == 0 && n)
		ret = cfs_bdev_flush(fs->bd);
	pthread_rwlock_unlock(&fs->op_lock);
	return ret < 0 ? ret : n;
}

/* An unlinked inode still open at close, or NULL. */
static struct inode *orphan_find(struct cfs_fs *fs, size_t slot)
{
	struct inode *ip;

	for (ip = fs->icache[slot]; ip; ip = ip->hnext)
		if (ip->open && !ip->d.nlink && ip->d.mode && !ip->deleted)
			return ip;
	return NULL;
}

/* Unlinked inodes still open at close die now.  Releasing one drops its
 * continuations from the cache, which can unlink the next inode of the
 * bucket's list: each bucket is searched again from its start.  Loading
 * one can grow the table and move inodes to buckets already searched:
 * the search goes round again until a round releases nothing. */
static int release_orphans(struct cfs_fs *fs)
{
	struct inode *ip;
	size_t i;
	int ret = 0, r, again;

	do {
		again = 0;
		for (i = 0; i < icache_buckets(fs); i++)
			while ((ip = orphan_find(fs, i))) {
				ip->open = 0;
				again = 1;
				r = inode_release(fs, ip);
				if (r < 0 && ret == 0)
					ret = r;
			}
	} while (again);
	return ret;
}

int cfs_close(struct cfs_fs *fs)
{
	int ret = 0;

	if (!fs)
		return 0;
	if (!fs->rdonly) {
		/* what could not be released stays for fsck: written, but its
		 * chunk left dirty */
		int r = release_orphans(fs);

		if (!fs->checking)
			r = r ? r : chunk_trim_clusters(fs);
		ret = cache_flush(&fs->cache, 0, UINT64_MAX);
		if (ret == 0)
			ret = r;
		/* set by a repair (scrub_close_check): super.c sits below
		 * scrub.c in the layers and does not call up into it */
		if (ret == 0 && !fs->error && fs->close_check)
			ret = fs->close_check(fs);
		if (ret == 0 && !fs->error)
			ret = write_headers(fs, 1);
		else if (!ret)
			ret = fs->error;
	}
	fs_free(fs);
	return ret;
}

/* ---- information ---- */

/* What a new inode costs in directory space, for the free inodes statfs
 * reports: a leaf record of a 16-byte name (the 1M-file data set's names
 * are 10-16 bytes), in leaves that B+tree splits leave about two thirds
 * full. */
#define STATFS_NAME_BYTES (((uint64_t)CFS_DE_FIXED + 16) * 3 / 2)

/* The free inodes of chunk c as statfs and chunk info report them, the
 * repair reserve in.  Free slots count whole, as ext4 counts its free
 * inodes.  The clusters its free blocks could make are an upper bound
 * (chunk_inodes_avail(), what allocation goes by): each inode made also
 * needs room for its name, so the blocks are shared between the two,
 * after the names of the free slots.  Filling with empty files made
 * 85.7-92.4% of the upper bound at 1, 4 and 64 KiB blocks; this is what
 * such a fill makes, within a few per cent (tests/unit/test_fill.c,
 * test_statfs_inodes). */
static uint64_t inodes_free_estimate(struct cfs_fs *fs, uint32_t c, const struct chunk_inodes *n)
{
	struct chunk *ch = &fs->chunks[c];
	uint64_t slots, makeable, bytes, names, per, m;

	pthread_mutex_lock(&ch->lock);
	slots = ch->hdr.free_inodes;
	bytes = (uint64_t)chunk_avail_blocks(fs, ch) * fs->bsize;
	pthread_mutex_unlock(&ch->lock);
	makeable = n->free > slots ? n->free - slots : 0;
	if (!makeable)
		return n->free;
	names = slots * STATFS_NAME_BYTES;
	per = (uint64_t)fs->icl_blocks * fs->bsize / CFS_ICL_INODES + STATFS_NAME_BYTES;
	m = bytes > names ? (bytes - names) / per : 0;
	return slots + (m < makeable ? m : makeable);
}

/* Available is what a user can still get.  Free blocks of a chunk that
 * cannot give an inode count as free but not available: only files that
 * already live in that chunk can reach them, no new file and no
 * continuation.  Every free inode is available: one in a chunk without
 * free blocks still holds an empty or inline file, or a file whose data
 * continues elsewhere.  The allocator's reserves are not subtracted: they
 * are soft (alloc.c), given out when nothing else is left. */
int cfs_statfs(struct cfs_fs *fs, struct cfs_statfs *st)
{
	struct chunk_inodes n;
	uint32_t c;

	memset(st, 0, sizeof(*st));
	st->block_size = fs->bsize;
	st->namemax = CFS_NAME_MAX;
	for (c = 0; c < fs->sb.nchunks; c++) {
		struct chunk *ch = &fs->chunks[c];

		uint64_t free, spare = chunk_clusters_spare(fs, c);

		chunk_inodes(fs, c, &n);   /* takes the chunk's lock */
		free = inodes_free_estimate(fs, c, &n);
		pthread_mutex_lock(&ch->lock);
		st->blocks += fs->sb.chunk_blocks - fs->sb.data_start;
		/* empty inode clusters are free: a writer gets them
		 * (fs_space_back) */
		st->bfree += ch->hdr.free_blocks + spare;
		/* nor the repair reserve */
		st->bavail += n.avail ? chunk_avail_blocks(fs, ch) + spare : spare;
		pthread_mutex_unlock(&ch->lock);
		/* what a user can make: not the repair reserve */
		if (free > n.free - n.avail)
			st->ffree += free - (n.free - n.avail);
		st->files += free + n.used;
	}
	return 0;
}

int cfs_get_info(struct cfs_fs *fs, struct cfs_info *in)
{
	memset(in, 0, sizeof(*in));
	in->version = fs->sb.version;
	in->block_size = fs->bsize;
	in->inode_size = fs->isz;
	in->chunks = fs->sb.nchunks;
	in->chunk_blocks = fs->sb.chunk_blocks;
	in->inodes_per_chunk = fs->sb.inodes_per_chunk;
	in->total_blocks = fs->sb.total_blocks;
	in->first_chunk_block = fs->sb.first_chunk_block;
	in->backup_sb_block = fs->sb.backup_sb_block;
	in->feature_compat = fs->sb.feat_compat;
	in->feature_ro_compat = fs->sb.feat_ro_compat;
	in->feature_incompat = fs->sb.feat_incompat;
	memcpy(in->uuid, fs->sb.user_uuid, 16);
	memcpy(in->label, fs->sb.label, sizeof(in->label));
	in->created = fs->sb.created;
	in->root = fs->sb.root_ino;
	in->inline_max = fs->varsz;
	return 0;
}

static void error_pub(const struct cfs_err_rec *e, struct cfs_chunk_error *out)
{
	out->time = e->time;
	out->ino = e->ino;
	out->err = (int)e->err;
	out->block = e->block;
	memcpy(out->what, e->what, sizeof(out->what));
}

int cfs_get_chunk_info(struct cfs_fs *fs, uint32_t c, struct cfs_chunk_info *ci)
{
	struct chunk_inodes n;
	struct chunk *ch;

	if (c >= fs->sb.nchunks)
		return -EINVAL;
	ch = &fs->chunks[c];
	memset(ci, 0, sizeof(*ci));
	ci->index = c;
	/* a header a repair open rebuilt in memory: nothing in it is the
	 * chunk's (counts are zero until fsck recomputes them) */
	if (ch->hdr_bad)
		return -EUCLEAN;
	pthread_mutex_lock(&ch->lock);
	ci->index = c;
	ci->state = (ch->disk_state & CFS_STATE_ERROR) ? CFS_CHUNK_ERROR :
		    (ch->disk_state & CFS_STATE_DIRTY) ? CFS_CHUNK_DIRTY : CFS_CHUNK_CLEAN;
	ci->generation = ch->hdr.generation;
	ci->last_check = ch->hdr.last_check;
	ci->last_write = ch->hdr.last_write;
	ci->blocks = fs->sb.chunk_blocks - fs->sb.data_start;
	ci->free_blocks = ch->hdr.free_blocks;
	ci->conts = ch->hdr.nconts;
	ci->xrefs = ch->hdr.nstubs;
	pthread_mutex_unlock(&ch->lock);
	chunk_inodes(fs, c, &n);
	/* the repair reserve in (chunkfs.h) */
	ci->free_inodes = inodes_free_estimate(fs, c, &n);
	ci->inodes = ci->free_inodes + n.used;
	ci->clusters = n.clusters;
	pthread_mutex_lock(&ch->state_lock);
	ci->errors = ch->hdr.error_count;
	error_pub(&ch->hdr.first_error, &ci->first_error);
	error_pub(&ch->hdr.last_error, &ci->last_error);
	pthread_mutex_unlock(&ch->state_lock);
	return 0;
}

void cfs_set_reload_fn(struct cfs_fs *fs, cfs_reload_fn fn, void *ctx)
{
	fs->reload_fn = fn;
	fs->reload_ctx = ctx;
}

void cfs_set_readonly(struct cfs_fs *fs)
{
	__atomic_store_n(&fs->ro_error, 1, __ATOMIC_RELAXED);
}

int cfs_chunk_set_failed(struct cfs_fs *fs, uint32_t c, int failed)
{
	if (c >= fs->sb.nchunks)
		return -EINVAL;
	__atomic_store_n(&fs->chunks[c].failed, !!failed, __ATOMIC_RELAXED);
	return 0;
}

void cfs_set_error_fn(struct cfs_fs *fs, cfs_error_fn fn, void *ctx)
{
	fs->error_ctx = ctx;
	fs->error_fn = fn;
}

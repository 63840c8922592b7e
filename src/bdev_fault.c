/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* In-memory fault-injecting backend for crash tests.
 *
 * The device is one byte array holding the volatile view: what reads see.
 * Every tracking unit (the block size the device was created with) written
 * since the last flush is "pending" and has its pre-image, i.e. its durable
 * contents, saved once, at its first write after the flush.  So:
 *   flush      = forget the pre-images            O(pending)
 *   power cut  = for each pending unit, keep the newest data with
 *                probability keep_prob, else copy the pre-image back
 * A unit that is written several times between flushes survives a cut
 * either with its newest contents or with its durable ones, never with an
 * intermediate version: a disk cache may write back any subset of dirty
 * blocks, but writes back the latest data it holds for a block.
 *
 * Tracking by the creation block size keeps a cut well defined even if the
 * addressing block size is changed later with cfs_bdev_set_block_size().
 */
#include "bdev.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct fault_bdev {
	struct cfs_bdev bd;     /* first, so the two pointers convert */
	pthread_mutex_t lock;
	uint8_t *data;          /* volatile view, size bytes */
	uint64_t size;
	uint32_t unit;          /* tracking granularity in bytes */
	uint32_t *slot;         /* per unit: pending index + 1, 0 = clean */
	uint64_t *pend_unit;    /* pending units, in order of first write */
	uint8_t *pend_pre;      /* their pre-images, unit bytes each */
	size_t npend, cap;
	struct cfs_bdev_fault_cfg cfg;
	struct cfs_bdev_fault_stats st;
	int64_t good_writes;    /* successful write calls, for power_cut_at */
	uint64_t rng;
};

static const struct cfs_bdev_ops fault_ops;

static struct fault_bdev *to_fault(struct cfs_bdev *bd)
{
	if (!bd || bd->ops != &fault_ops)
		return NULL;
	return (struct fault_bdev *)bd;
}

/* splitmix64 turns any seed, 0 included, into a usable xorshift state. */
static uint64_t rng_seed(uint64_t seed)
{
	uint64_t z = seed + 0x9E3779B97F4A7C15ull;

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	z ^= z >> 31;
	return z ? z : 0x9E3779B97F4A7C15ull;
}

/* xorshift64*, mapped to [0, 1). */
static double rng_next(struct fault_bdev *f)
{
	uint64_t x = f->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	f->rng = x;
	return (double)((x * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53;
}

static void forget_pending(struct fault_bdev *f)
{
	for (size_t i = 0; i < f->npend; i++)
		f->slot[f->pend_unit[i]] = 0;
	f->npend = 0;
}

/* Lose power now: one PRNG draw per pending unit, in first-write order, so
 * a fixed seed and workload always give the same survivors. */
static void power_cut(struct fault_bdev *f)
{
	for (size_t i = 0; i < f->npend; i++) {
		if (rng_next(f) < f->cfg.keep_prob)
			continue;
		memcpy(f->data + f->pend_unit[i] * f->unit,
		       f->pend_pre + i * f->unit, f->unit);
	}
	forget_pending(f);
	f->st.powered_off = 1;
}

static int reserve_pending(struct fault_bdev *f, size_t more)
{
	size_t cap = f->cap ? f->cap : 16;
	uint64_t *units;
	uint8_t *pre;

	if (f->npend + more <= f->cap)
		return 0;
	while (cap < f->npend + more)
		cap *= 2;
	units = realloc(f->pend_unit, cap * sizeof(*units));
	if (!units)
		return -ENOMEM;
	f->pend_unit = units;
	pre = realloc(f->pend_pre, cap * f->unit);
	if (!pre)
		return -ENOMEM;
	f->pend_pre = pre;
	f->cap = cap;
	return 0;
}

/* Save the durable contents of every unit in [off, off + len) that is not
 * pending yet.  Fails (changing nothing visible) only on ENOMEM. */
static int track_range(struct fault_bdev *f, uint64_t off, uint64_t len)
{
	uint64_t first = off / f->unit, last = (off + len - 1) / f->unit;
	int ret = reserve_pending(f, (size_t)(last - first + 1));

	if (ret)
		return ret;
	for (uint64_t u = first; u <= last; u++) {
		if (f->slot[u])
			continue;
		memcpy(f->pend_pre + f->npend * f->unit, f->data + u * f->unit,
		       f->unit);
		f->pend_unit[f->npend++] = u;
		f->slot[u] = (uint32_t)f->npend;
	}
	return 0;
}

static int fault_read(struct cfs_bdev *bd, uint64_t blk, uint32_t count,
		      void *buf)
{
	struct fault_bdev *f = to_fault(bd);
	int ret = 0;

	pthread_mutex_lock(&f->lock);
	f->st.reads++;
	if (f->st.powered_off || f->st.reads == f->cfg.fail_read_at) {
		ret = -EIO;
		goto out;
	}
	memcpy(buf, f->data + blk * bd->block_size,
	       (size_t)count * bd->block_size);
out:
	pthread_mutex_unlock(&f->lock);
	return ret;
}

/* A write of buf, or of zeroes when buf is NULL (a discard). */
static int fault_store(struct cfs_bdev *bd, uint64_t blk, uint32_t count,
		       const void *buf)
{
	struct fault_bdev *f = to_fault(bd);
	uint64_t off = blk * bd->block_size;
	uint64_t len = (uint64_t)count * bd->block_size;
	int ret = 0;

	pthread_mutex_lock(&f->lock);
	f->st.writes++;
	if (f->st.powered_off || f->st.writes == f->cfg.fail_write_at) {
		ret = -EIO;
		goto out;
	}
	ret = track_range(f, off, len);
	if (ret)
		goto out;
	if (buf)
		memcpy(f->data + off, buf, len);
	else
		memset(f->data + off, 0, len);
	/* The write itself completes; the power goes right after it. */
	if (++f->good_writes == f->cfg.power_cut_at)
		power_cut(f);
out:
	pthread_mutex_unlock(&f->lock);
	return ret;
}

static int fault_write(struct cfs_bdev *bd, uint64_t blk, uint32_t count,
		       const void *buf)
{
	return fault_store(bd, blk, count, buf);
}

static int fault_discard(struct cfs_bdev *bd, uint64_t blk, uint32_t count)
{
	return fault_store(bd, blk, count, NULL);
}

static int fault_flush(struct cfs_bdev *bd)
{
	struct fault_bdev *f = to_fault(bd);
	int ret = 0;

	pthread_mutex_lock(&f->lock);
	f->st.flushes++;
	if (f->st.powered_off)
		ret = -EIO;
	else
		forget_pending(f);
	pthread_mutex_unlock(&f->lock);
	return ret;
}

/* Only the pending units in r become durable; the others stay pending,
 * in their order. */
static int fault_flush_ranges(struct cfs_bdev *bd, const struct cfs_brange *r, size_t n)
{
	struct fault_bdev *f = to_fault(bd);
	size_t i, k, kept = 0;
	int ret = 0;

	pthread_mutex_lock(&f->lock);
	f->st.flushes++;
	if (f->st.powered_off) {
		ret = -EIO;
		goto out;
	}
	for (i = 0; i < f->npend; i++) {
		uint64_t lo = f->pend_unit[i] * f->unit, hi = lo + f->unit;
		int hit = 0;

		for (k = 0; k < n && !hit; k++)
			hit = r[k].off < hi && lo < r[k].off + r[k].len;
		if (hit) {
			f->slot[f->pend_unit[i]] = 0;
			continue;
		}
		if (kept != i) {
			f->pend_unit[kept] = f->pend_unit[i];
			memcpy(f->pend_pre + kept * f->unit, f->pend_pre + i * f->unit,
			       f->unit);
		}
		f->slot[f->pend_unit[kept]] = (uint32_t)(kept + 1);
		kept++;
	}
	f->npend = kept;
out:
	pthread_mutex_unlock(&f->lock);
	return ret;
}

static void fault_destroy(struct cfs_bdev *bd)
{
	struct fault_bdev *f = to_fault(bd);

	pthread_mutex_destroy(&f->lock);
	free(f->data);
	free(f->slot);
	free(f->pend_unit);
	free(f->pend_pre);
	free(f);
}

static const struct cfs_bdev_ops fault_ops = {
	.read = fault_read,
	.write = fault_write,
	.discard = fault_discard,
	.flush = fault_flush,
	.flush_ranges = fault_flush_ranges,
	.destroy = fault_destroy,
};

int cfs_bdev_fault_create(uint64_t size_bytes, uint32_t block_size,
			  struct cfs_bdev **out)
{
	struct fault_bdev *f;
	uint64_t nunits;

	*out = NULL;
	if (!cfs_bdev_block_size_valid(block_size) || size_bytes == 0 ||
	    size_bytes % block_size || size_bytes > SIZE_MAX)
		return -EINVAL;
	nunits = size_bytes / block_size;
	if (nunits >= UINT32_MAX)
		return -EFBIG;  /* slot[] holds 32-bit indices */
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->data = calloc(1, (size_t)size_bytes);
	f->slot = calloc((size_t)nunits, sizeof(*f->slot));
	if (!f->data || !f->slot) {
		free(f->data);
		free(f->slot);
		free(f);
		return -ENOMEM;
	}
	pthread_mutex_init(&f->lock, NULL);
	f->size = size_bytes;
	f->unit = block_size;
	f->rng = rng_seed(0);
	f->bd.ops = &fault_ops;
	f->bd.block_size = block_size;
	f->bd.nblocks = nunits;
	strcpy(f->bd.name, "mem");
	*out = &f->bd;
	return 0;
}

void cfs_bdev_fault_config(struct cfs_bdev *bd,
			   const struct cfs_bdev_fault_cfg *cfg)
{
	struct fault_bdev *f = to_fault(bd);

	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	f->cfg = *cfg;
	f->rng = rng_seed(cfg->seed);
	f->st.reads = f->st.writes = f->st.flushes = 0;
	f->good_writes = 0;
	pthread_mutex_unlock(&f->lock);
}

void cfs_bdev_fault_stats(struct cfs_bdev *bd, struct cfs_bdev_fault_stats *st)
{
	struct fault_bdev *f = to_fault(bd);

	memset(st, 0, sizeof(*st));
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	*st = f->st;
	pthread_mutex_unlock(&f->lock);
}

void cfs_bdev_fault_restore(struct cfs_bdev *bd)
{
	struct fault_bdev *f = to_fault(bd);

	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	if (!f->st.powered_off)
		power_cut(f);
	memset(&f->cfg, 0, sizeof(f->cfg));
	memset(&f->st, 0, sizeof(f->st));
	f->good_writes = 0;
	f->rng = rng_seed(0);
	pthread_mutex_unlock(&f->lock);
}

static int write_all(int fd, const uint8_t *p, uint64_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (uint64_t)n;
	}
	return 0;
}

static int read_all(int fd, uint8_t *p, uint64_t len)
{
	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EINVAL;  /* file shrank under us */
		p += n;
		len -= (uint64_t)n;
	}
	return 0;
}

int cfs_bdev_fault_save(struct cfs_bdev *bd, const char *path)
{
	struct fault_bdev *f = to_fault(bd);
	int fd, ret;

	if (!f || !path)
		return -EINVAL;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	pthread_mutex_lock(&f->lock);
	ret = write_all(fd, f->data, f->size);
	pthread_mutex_unlock(&f->lock);
	if (close(fd) < 0 && !ret)
		ret = -errno;
	return ret;
}

int cfs_bdev_fault_load(struct cfs_bdev *bd, const char *path)
{
	struct fault_bdev *f = to_fault(bd);
	uint8_t *tmp = NULL;
	struct stat st;
	int fd, ret;

	if (!f || !path)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != f->size) {
		ret = -EINVAL;
		goto out;
	}
	/* Read aside first so a failed load leaves the device untouched. */
	tmp = malloc((size_t)f->size);
	if (!tmp) {
		ret = -ENOMEM;
		goto out;
	}
	ret = read_all(fd, tmp, f->size);
	if (ret)
		goto out;
	pthread_mutex_lock(&f->lock);
	memcpy(f->data, tmp, f->size);
	forget_pending(f);
	pthread_mutex_unlock(&f->lock);
out:
	free(tmp);
	close(fd);
	return ret;
}

uint8_t *cfs_bdev_fault_bytes(struct cfs_bdev *bd, uint64_t *size)
{
	struct fault_bdev *f = to_fault(bd);

	if (size)
		*size = f ? f->size : 0;
	return f ? f->data : NULL;
}

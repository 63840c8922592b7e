/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Block device layer: the only code in chunkfs that touches storage.
 *
 * Everything above this interface reads and writes whole blocks by number.
 * Two backends exist: a file/block-device backend (pread/pwrite, flush =
 * fdatasync) and an in-memory fault-injecting backend used by crash tests.
 * All functions return 0 or a negative errno.
 */
#ifndef CHUNKFS_BDEV_H
#define CHUNKFS_BDEV_H

#include <stddef.h>
#include <stdint.h>

struct cfs_bdev;

/* A run of blocks (by the device's block size), or of bytes (in the
 * device's own record of what it wrote). */
struct cfs_brange {
	uint64_t off, len;
};

struct cfs_bdev_ops {
	int (*read)(struct cfs_bdev *bd, uint64_t blk, uint32_t count, void *buf);
	int (*write)(struct cfs_bdev *bd, uint64_t blk, uint32_t count, const void *buf);
	int (*flush)(struct cfs_bdev *bd);
	void (*destroy)(struct cfs_bdev *bd);
	/* Optional: start reading a run the caller will soon read, without
	 * waiting for it (posix_fadvise WILLNEED).  NULL: nothing to gain. */
	void (*prefetch)(struct cfs_bdev *bd, uint64_t blk, uint32_t count);
	/* Optional: see cfs_bdev_scattered.  NULL: nothing to gain. */
	void (*scattered)(struct cfs_bdev *bd, int on);
	/* Optional: the run's contents are no longer needed; the storage may
	 * give the space back.  NULL: not supported (-EOPNOTSUPP). */
	int (*discard)(struct cfs_bdev *bd, uint64_t blk, uint32_t count);
	/* Optional (resize): see cfs_bdev_grow.  NULL: the size is fixed. */
	int (*grow)(struct cfs_bdev *bd, uint64_t bytes);
	/* Optional: make durable what was written to the byte runs r[0..n)
	 * (and what the storage needs to read them back), not necessarily
	 * anything else; every earlier write of those bytes completed.  NULL:
	 * only the whole device can be flushed (see cfs_bdev_sync_ranges). */
	int (*flush_ranges)(struct cfs_bdev *bd, const struct cfs_brange *r, size_t n);
};

struct cfs_bdev {
	const struct cfs_bdev_ops *ops;
	uint32_t block_size;   /* bytes per block, power of two */
	uint64_t nblocks;      /* device size in blocks */
	int read_only;
	char name[256];        /* for error messages (path or "mem") */
	/* Kept by bdev.c where the backend has flush_ranges (zero from the
	 * backend's calloc): the byte runs written since the last full flush
	 * but for file data (cfs_bdev_write_data), or wr_all when too many;
	 * while ranged (cfs_bdev_sync_ranges), the runs of data every flush
	 * makes durable as well. */
	struct cfs_brange *wr;
	size_t nwr, wrcap;
	int wr_all;
	int ranged;
	const struct cfs_brange *rdata;
	size_t nrdata;
};

/* Accessors: bounds-checked (-EIO past the end, -EROFS writes when
 * read_only), count may be > 1 for contiguous runs.  Errors are checked in
 * this order: -EROFS for any write to a read_only device; -EINVAL for a
 * NULL buffer or count 0; -EIO when the run does not lie wholly inside the
 * device (overflow-safe).  Backends only see requests that passed these
 * checks. */
int cfs_bdev_read(struct cfs_bdev *bd, uint64_t blk, uint32_t count, void *buf);
int cfs_bdev_write(struct cfs_bdev *bd, uint64_t blk, uint32_t count, const void *buf);
int cfs_bdev_flush(struct cfs_bdev *bd);
/* Everything written so far durable, even between cfs_bdev_sync_ranges
 * and cfs_bdev_sync_end: what must reach the disk before maps that may
 * name it (the cache's data barrier, docs/WRITEBACK.md). */
int cfs_bdev_flush_full(struct cfs_bdev *bd);
/* A write of file data: as cfs_bdev_write, but a ranged flush makes it
 * durable only when asked to (cfs_bdev_sync_ranges' data). */
int cfs_bdev_write_data(struct cfs_bdev *bd, uint64_t blk, uint32_t count,
			const void *buf);
/* Until cfs_bdev_sync_end, every cfs_bdev_flush makes durable only what
 * was written since the last full flush but for file data, and the data
 * in the block runs data[0..n) (a file's, for its fsync; byte runs in
 * bdev.c's record), where the backend can (flush_ranges): the dirty
 * data of other files stays where it is.  Elsewhere a flush stays whole.
 * The caller keeps every other writer out meanwhile. */
void cfs_bdev_sync_ranges(struct cfs_bdev *bd, struct cfs_brange *data, size_t n);
void cfs_bdev_sync_end(struct cfs_bdev *bd);
/* A hint: the run will be read soon.  Lets many reads that would be made one
 * after another reach the disk together.  Out-of-range parts are ignored. */
void cfs_bdev_prefetch(struct cfs_bdev *bd, uint64_t blk, uint32_t count);
/* A hint: until called again with on 0, reads are scattered and whatever
 * runs ahead is asked for with cfs_bdev_prefetch, so the storage should
 * read no more than it is asked (no readahead: POSIX_FADV_RANDOM). */
void cfs_bdev_scattered(struct cfs_bdev *bd, int on);
/* Give a run of unused blocks back to the storage: a hole punched in an
 * image file (FALLOC_FL_PUNCH_HOLE), BLKDISCARD on a block device, zeroes on
 * the fault device.  Afterwards the run reads as zeroes from a file and as
 * anything from a disk, so only free blocks may be discarded.  Checked like
 * a write (-EROFS, -EINVAL for count 0, -EIO out of range); -EOPNOTSUPP when
 * the backend or the filesystem under the image cannot do it.  Not durable
 * before the next flush. */
int cfs_bdev_discard(struct cfs_bdev *bd, uint64_t blk, uint32_t count);
/* (Addition, resize:) make the device at least bytes long where it can
 * be made so (an image file is extended, sparse), then take its current
 * size again into nblocks (a disk or loop device may have grown since the
 * open).  bytes 0 only re-reads the size.  -ERANGE when the device stays
 * shorter than bytes (a disk, or a backend without the operation); the
 * backend's own errors as they are (-EFBIG: the host filesystem cannot
 * make the image file that long). */
int cfs_bdev_grow(struct cfs_bdev *bd, uint64_t bytes);
void cfs_bdev_destroy(struct cfs_bdev *bd);
/* Change the block size used for addressing (the device size in bytes is
 * unchanged; nblocks is recomputed).  Used after reading the superblock.
 * The byte size kept is the addressable nblocks * block_size, so a partial
 * block at the end of a device opened with a larger block size is not
 * regained by switching to a smaller one; -EINVAL unless
 * cfs_bdev_block_size_valid(). */
int cfs_bdev_set_block_size(struct cfs_bdev *bd, uint32_t block_size);
/* Nonzero when block_size is a power of two in 512..65536, the sizes
 * every backend and set_block_size accept. */
int cfs_bdev_block_size_valid(uint32_t block_size);

/* File or block device.  flags: O_RDONLY or O_RDWR (O_CREAT not implied).
 * A regular file's size is used as the device size; a block device's size
 * comes from BLKGETSIZE64. */
int cfs_bdev_file_open(const char *path, int flags, uint32_t block_size,
		       struct cfs_bdev **out);

/* In-memory device with fault injection, for tests.
 *
 * Semantics (see bdev_fault.c):
 * - A discard is a write call of zeroes (counted, failed and cut alike).
 * - Reads see the volatile view: durable contents plus every write so far.
 *   flush makes all pending writes durable.
 * - Counters count calls that reach the backend (a multi-block write is one
 *   call; calls rejected by the accessors' checks are not counted), failed
 *   ones included.  cfs_bdev_fault_config() resets them, so "the Nth call"
 *   counts from the config call; it also reseeds the PRNG.
 * - A failed read leaves buf untouched; a failed write changes nothing.
 * - At a cut, each block written since the last flush (block = the
 *   block_size given at creation) survives independently with probability
 *   keep_prob, with its newest contents; otherwise it reverts to its durable
 *   contents.  One xorshift draw per block in first-write order, so a fixed
 *   seed and workload give the same result.  keep_prob 1 keeps everything.
 * - After restore nothing is pending: the survivors count as durable.
 * - size_bytes must be a nonzero multiple of block_size.
 */
struct cfs_bdev_fault_cfg {
	int64_t fail_read_at;     /* the Nth read call (1-based) returns -EIO; 0 = never */
	int64_t fail_write_at;    /* the Nth write call returns -EIO; 0 = never */
	int64_t power_cut_at;     /* after the Nth successful write call, power is lost:
				     every later read/write/flush returns -EIO and the
				     unflushed writes are dropped (see keep_prob) */
	double keep_prob;         /* at the cut, each unflushed block write survives
				     with this probability (0 = drop all) */
	uint64_t seed;            /* PRNG seed for keep_prob */
};

struct cfs_bdev_fault_stats {
	int64_t reads, writes, flushes;   /* calls so far */
	int powered_off;                  /* the cut happened */
};

int cfs_bdev_fault_create(uint64_t size_bytes, uint32_t block_size,
			  struct cfs_bdev **out);
void cfs_bdev_fault_config(struct cfs_bdev *bd, const struct cfs_bdev_fault_cfg *cfg);
void cfs_bdev_fault_stats(struct cfs_bdev *bd, struct cfs_bdev_fault_stats *st);
/* Simulate the power coming back: apply the cut now if it hasn't happened
 * (dropping unflushed writes per keep_prob), clear all faults and counters.
 * The device then holds what a real disk would hold after the crash. */
void cfs_bdev_fault_restore(struct cfs_bdev *bd);
/* Durable contents (what survives a crash right now) and the volatile view.
 * save writes the current volatile view, exactly size_bytes bytes, to a
 * regular file; call cfs_bdev_fault_restore() first to save what a crash
 * would leave.  load requires a regular file of exactly size_bytes bytes and
 * makes its contents the durable and volatile contents (nothing pending); it
 * does not change fault configuration, counters or power state, and on
 * failure leaves the device untouched. */
int cfs_bdev_fault_save(struct cfs_bdev *bd, const char *path);
int cfs_bdev_fault_load(struct cfs_bdev *bd, const char *path);
/* Direct access to the current (volatile) bytes, for corruption tests.  The
 * pointer is valid until destroy.  Edits bypass the pending tracking: they
 * act like media corruption (durable at once), but are undone by a cut if
 * they hit a block with unflushed writes, so make them with nothing pending.
 * Returns NULL (size 0) for a non-fault device. */
uint8_t *cfs_bdev_fault_bytes(struct cfs_bdev *bd, uint64_t *size);

/* A filesystem on a block device of the library's own making (an image
 * file, the fault-injecting device): for the chunkfs command and the
 * tests, not exported (no public call makes a cfs_bdev).  mkfs leaves bd
 * the caller's; open takes ownership (destroyed by cfs_close, or on
 * failure). */
struct cfs_mkfs_opts;
struct cfs_fs;
int cfs_mkfs_bdev(struct cfs_bdev *bd, const struct cfs_mkfs_opts *opts);
int cfs_open_bdev(struct cfs_bdev *bd, int flags, struct cfs_fs **out);

#endif

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

struct cfs_bdev_ops {
	int (*read)(struct cfs_bdev *bd, uint64_t blk, uint32_t count, void *buf);
	int (*write)(struct cfs_bdev *bd, uint64_t blk, uint32_t count, const void *buf);
	int (*flush)(struct cfs_bdev *bd);
	void (*destroy)(struct cfs_bdev *bd);
};

struct cfs_bdev {
	const struct cfs_bdev_ops *ops;
	uint32_t block_size;   /* bytes per block, power of two */
	uint64_t nblocks;      /* device size in blocks */
	int read_only;
	char name[256];        /* for error messages (path or "mem") */
};

/* Accessors: bounds-checked (-EIO past the end, -EROFS writes when
 * read_only), count may be > 1 for contiguous runs. */
int cfs_bdev_read(struct cfs_bdev *bd, uint64_t blk, uint32_t count, void *buf);
int cfs_bdev_write(struct cfs_bdev *bd, uint64_t blk, uint32_t count, const void *buf);
int cfs_bdev_flush(struct cfs_bdev *bd);
void cfs_bdev_destroy(struct cfs_bdev *bd);
/* Change the block size used for addressing (the device size in bytes is
 * unchanged; nblocks is recomputed).  Used after reading the superblock. */
int cfs_bdev_set_block_size(struct cfs_bdev *bd, uint32_t block_size);

/* File or block device.  flags: O_RDONLY or O_RDWR (O_CREAT not implied).
 * A regular file's size is used as the device size; a block device's size
 * comes from BLKGETSIZE64. */
int cfs_bdev_file_open(const char *path, int flags, uint32_t block_size,
		       struct cfs_bdev **out);

/* In-memory device with fault injection, for tests. */
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
/* Durable contents (what survives a crash right now) and the volatile view. */
int cfs_bdev_fault_save(struct cfs_bdev *bd, const char *path);
int cfs_bdev_fault_load(struct cfs_bdev *bd, const char *path);
/* Direct access to the current (volatile) bytes, for corruption tests. */
uint8_t *cfs_bdev_fault_bytes(struct cfs_bdev *bd, uint64_t *size);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* CRC-32C (Castagnoli).
 *
 * Two implementations with identical results: software slicing-by-8 and,
 * on x86-64 CPUs with SSE4.2, the crc32 instruction.  The choice is made
 * once at run time so the build needs no -msse4.2 and the binary still runs
 * on older CPUs.  Both apply the usual ~ conditioning on entry and exit, so
 * the result of one call can be passed as crc to the next to checksum a
 * buffer in pieces.
 *
 * The crc32 instruction takes three cycles but can start one a cycle, so
 * one chain of them leaves the unit two thirds idle: longer buffers are
 * cut into rounds of three equal blocks, checksummed side by side and then
 * joined (after Mark Adler's crc32c.c).  Joining shifts a block's crc over
 * the bytes after it, which is linear, so one table per block size does
 * it in four lookups.
 */
#include "crc32c.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC32C_HAVE_SSE42 1
#include <nmmintrin.h>
#endif

#define CRC32C_POLY 0x82F63B78u

/* tables[k][n]: CRC of byte n followed by k zero bytes.  Filled once by
 * crc32c_init(); read-only afterwards. */
static uint32_t tables[8][256];
static bool use_sse42;  /* the CPU-feature flag */

/* Block sizes of the three-way rounds (multiples of 8): long ones for
 * metadata blocks, short ones so that an inode (252 bytes) gets a round. */
#define CRC_LONG 1024
#define CRC_SHORT 80
/* shift_*[k][n]: the crc of byte n << 8k followed by a block of zeros,
 * without conditioning: what a crc becomes over that many more bytes. */
static uint32_t shift_long[4][256], shift_short[4][256];
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static uint32_t crc32c_sw_raw(uint32_t crc, const uint8_t *p, size_t len);

/* From the 32 single-bit crcs, by linearity. */
static void shift_table(uint32_t t[4][256], size_t len)
{
	static const uint8_t zeros[CRC_LONG];
	uint32_t bit[32];
	int k, i;

	for (i = 0; i < 32; i++)
		bit[i] = crc32c_sw_raw(1u << i, zeros, len);
	for (k = 0; k < 4; k++)
		for (uint32_t n = 0; n < 256; n++) {
			uint32_t v = 0;

			for (i = 0; i < 8; i++)
				if (n & (1u << i))
					v ^= bit[8 * k + i];
			t[k][n] = v;
		}
}

static void crc32c_init(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;

		for (int i = 0; i < 8; i++)
			c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
		tables[0][n] = c;
	}
	for (uint32_t n = 0; n < 256; n++)
		for (int k = 1; k < 8; k++)
			tables[k][n] = (tables[k - 1][n] >> 8) ^
				       tables[0][tables[k - 1][n] & 0xff];
	shift_table(shift_long, CRC_LONG);
	shift_table(shift_short, CRC_SHORT);
#ifdef CRC32C_HAVE_SSE42
	__builtin_cpu_init();
	use_sse42 = __builtin_cpu_supports("sse4.2");
#endif
}

static inline uint32_t load_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

/* Raw (unconditioned) software update. */
static uint32_t crc32c_sw_raw(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len >= 8) {
		uint32_t lo = crc ^ load_le32(p);
		uint32_t hi = load_le32(p + 4);

		crc = tables[7][lo & 0xff] ^ tables[6][(lo >> 8) & 0xff] ^
		      tables[5][(lo >> 16) & 0xff] ^ tables[4][lo >> 24] ^
		      tables[3][hi & 0xff] ^ tables[2][(hi >> 8) & 0xff] ^
		      tables[1][(hi >> 16) & 0xff] ^ tables[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = tables[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#ifdef CRC32C_HAVE_SSE42
static inline uint32_t crc_shift(const uint32_t t[4][256], uint32_t crc)
{
	return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^
	       t[3][crc >> 24];
}

static inline uint64_t load_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* Rounds of three blocks of blk bytes while they fit. */
__attribute__((target("sse4.2")))
static inline const uint8_t *hw_rounds(uint64_t *crc, const uint8_t *p, size_t *len,
				       size_t blk, const uint32_t t[4][256])
{
	while (*len >= 3 * blk) {
		uint64_t c0 = *crc, c1 = 0, c2 = 0;
		const uint8_t *end = p + blk;

		do {
			c0 = _mm_crc32_u64(c0, load_u64(p));
			c1 = _mm_crc32_u64(c1, load_u64(p + blk));
			c2 = _mm_crc32_u64(c2, load_u64(p + 2 * blk));
			p += 8;
		} while (p < end);
		c0 = crc_shift(t, (uint32_t)c0) ^ c1;
		*crc = crc_shift(t, (uint32_t)c0) ^ c2;
		p += 2 * blk;
		*len -= 3 * blk;
	}
	return p;
}

__attribute__((target("sse4.2")))
static uint32_t crc32c_hw_raw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;

	/* Aligned 8-byte loads are cheaper; memcpy keeps them defined. */
	while (len && ((uintptr_t)p & 7)) {
		c = _mm_crc32_u8((uint32_t)c, *p++);
		len--;
	}
	p = hw_rounds(&c, p, &len, CRC_LONG, shift_long);
	p = hw_rounds(&c, p, &len, CRC_SHORT, shift_short);
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return (uint32_t)c;
}
#endif

/* Software path, exported only so the unit test can compare it with the
 * hardware path; not part of crc32c.h on purpose. */
uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len);

uint32_t crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&init_once, crc32c_init);
	return ~crc32c_sw_raw(~crc, buf, len);
}

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&init_once, crc32c_init);
#ifdef CRC32C_HAVE_SSE42
	if (use_sse42)
		return ~crc32c_hw_raw(~crc, buf, len);
#endif
	return ~crc32c_sw_raw(~crc, buf, len);
}

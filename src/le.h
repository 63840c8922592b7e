/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Little-endian field helpers.  The format layer (format.h, format.c,
 * format_node.c) reads and writes every on-disk field through these, at a
 * byte offset named in format.h; no packed structs are cast over buffers. */
#ifndef CHUNKFS_LE_H
#define CHUNKFS_LE_H

#include <stdint.h>

static inline uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}
static inline uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | ((uint64_t)get_le32(p + 4) << 32);
}
static inline void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}
static inline void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}
static inline void put_le64(uint8_t *p, uint64_t v)
{
	put_le32(p, (uint32_t)v);
	put_le32(p + 4, (uint32_t)(v >> 32));
}

/* A field of w bytes (1, 2, 4 or 8). */
static inline uint64_t get_le(const uint8_t *p, unsigned w)
{
	return w == 1 ? p[0] : w == 2 ? get_le16(p) : w == 4 ? get_le32(p) : get_le64(p);
}
static inline void put_le(uint8_t *p, unsigned w, uint64_t v)
{
	if (w == 1)
		p[0] = (uint8_t)v;
	else if (w == 2)
		put_le16(p, (uint16_t)v);
	else if (w == 4)
		put_le32(p, (uint32_t)v);
	else
		put_le64(p, v);
}

#endif

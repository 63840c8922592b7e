/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef CHUNKFS_CRC32C_H
#define CHUNKFS_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C (Castagnoli, reflected poly 0x82F63B78), as used by ext4/btrfs.
 * crc32c(0, "123456789", 9) == 0xE3069283.  Chainable: pass the previous
 * result as crc.  Uses SSE4.2 when the CPU has it. */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

#endif

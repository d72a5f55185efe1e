/* SPDX-License-Identifier: MIT */
/*
 * CRC32C (Castagnoli), reflected, as EROFS uses it for the superblock: the
 * caller passes the seed (~0 for the superblock) and no final inversion is
 * applied. Slicing-by-1 is plenty: it runs over one block per image.
 */
#include <pthread.h>
#include "ondisk.h"

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & -(c & 1u));
		table[i] = c;
	}
}

uint32_t crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&table_once, table_init);
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

/* SPDX-License-Identifier: MIT */
/*
 * Compressed inodes' logical-cluster indexes. An extent is a byte range of
 * the file stored in one pcluster; the index has one record per lcluster
 * saying whether an extent starts in it. Two encodings: full (8 bytes a
 * record, layout 1) and compact (4-byte packs of two records, layout 3).
 */
#ifndef KILN_ZINDEX_H
#define KILN_ZINDEX_H

#include <stdbool.h>
#include <stdint.h>

#define Z_EROFS_LCLUSTER_TYPE_PLAIN	0
#define Z_EROFS_LCLUSTER_TYPE_HEAD1	1
#define Z_EROFS_LCLUSTER_TYPE_NONHEAD	2
#define Z_EROFS_LI_D0_CBLKCNT		0x0800
#define Z_EROFS_ADVISE_COMPACTED_2B	0x0001
#define Z_EROFS_ADVISE_BIG_PCLUSTER_1	0x0002
#define Z_EROFS_ADVISE_BIG_PCLUSTER_2	0x0004
#define Z_EROFS_ADVISE_INLINE_PCLUSTER	0x0008
#define Z_EROFS_MAP_HEADER_SIZE		8

struct kiln_extent {
	uint64_t start;			/* first byte of the file it holds */
	uint32_t blkaddr;		/* first block of its pcluster */
	uint16_t nblocks;		/* pcluster size in blocks; 0 if inline */
	bool plain;			/* stored uncompressed */
	bool inlined;			/* the tail pcluster, after the index */
};

struct kiln_zindex_fmt {
	unsigned int blkszbits;		/* lcluster size = block size */
	uint8_t alg;
	bool big_pcluster;
	bool compact;
	/* where the index starts, mod 32: sets the compact pack regions */
	unsigned int ebase_mod32;
};

/* Bytes from the map header to the end of the index. */
uint64_t kiln_zindex_size(uint64_t isize, const struct kiln_zindex_fmt *f);
/* idata_size: bytes of the inline tail pcluster (ztailpacking), or 0. */
void kiln_zindex_encode(uint8_t *out, const struct kiln_extent *ext,
			uint32_t nr, uint64_t isize, uint16_t idata_size,
			const struct kiln_zindex_fmt *f);

#endif

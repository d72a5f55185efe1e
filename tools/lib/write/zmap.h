/* SPDX-License-Identifier: MIT */
/*
 * Writing compressed inodes' lcluster indexes (the format is described in
 * format/erofs_fs.h): from a file's list of extents to the map header and
 * the full or compact records the kernel reads.
 */
#ifndef KILN_WRITE_ZMAP_H
#define KILN_WRITE_ZMAP_H

#include <stdbool.h>
#include <stdint.h>
#include "format/erofs_fs.h"

struct kiln_extent {
	uint64_t start;			/* first byte of the file it holds */
	uint32_t blkaddr;		/* first block of its pcluster */
	uint16_t nblocks;		/* pcluster size in blocks; 0 if inline */
	bool plain;			/* stored uncompressed */
	bool inlined;			/* the tail pcluster, after the index */
	bool fragment;			/* the tail, in the packed inode */
	bool partial;			/* a prefix of a pcluster (full
					   indexes only: PARTIAL_REF) */
};

struct kiln_zmap_fmt {
	unsigned int blkszbits;		/* lcluster size = block size */
	uint8_t alg;
	bool big_pcluster;
	bool compact;
	/* where the index starts, mod 32: sets the compact pack regions */
	unsigned int ebase_mod32;
};

/* Bytes from the map header to the end of the index. */
uint64_t kiln_zmap_size(uint64_t isize, const struct kiln_zmap_fmt *f);
/*
 * idata_size: bytes of the inline tail pcluster (ztailpacking), or 0;
 * frag_off: where a last extent that is a fragment is in the packed inode
 * (compact indexes: under 4 GiB, kiln_zinode_finish checks).
 * A pcluster has at most 2047 blocks (its count is 11 bits, CBLKCNT);
 * mkfs's -C check keeps them there.
 */
void kiln_zmap_encode(uint8_t *out, const struct kiln_extent *ext,
			uint32_t nr, uint64_t isize, uint16_t idata_size,
			uint64_t frag_off, const struct kiln_zmap_fmt *f);
/* A file that is one fragment: the 8-byte header is all its index. */
void kiln_zmap_encode_fragment_only(uint8_t *out, uint64_t frag_off);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Allocator for the metadata area: records (an inode with its xattrs and
 * inline tail) of up to one block never cross a block boundary, so free
 * runs inside partly used blocks are kept in buckets by their length and
 * each record goes into the shortest run it fits (best fit). Larger
 * records and the shared xattr pool are placed contiguously at the end.
 */
#ifndef KILN_METAALLOC_H
#define KILN_METAALLOC_H

#include <stdbool.h>
#include <stdint.h>

struct meta_bucket {
	uint64_t *starts;		/* byte offsets of free runs */
	uint32_t nr, cap;
};

struct meta_alloc {
	uint32_t blksz;
	uint64_t end;			/* first byte after all metadata */
	uint64_t used;			/* bytes handed out, to report packing */
	struct meta_bucket *buckets;	/* [k]: runs of k free slots */
};

/* Starts allocating at byte start (the end of the superblock). */
void meta_alloc_init(struct meta_alloc *a, uint32_t blksz, uint64_t start);
uint64_t meta_alloc_record(struct meta_alloc *a, uint32_t size);
uint64_t meta_alloc_contiguous(struct meta_alloc *a, uint64_t size);
/*
 * A flat inode whose inline tail does not fit one block with it: only the
 * tail must stay in one block (the kernel reads an inode and its xattrs
 * across blocks), so the inode ends one block and its tail starts the
 * next, (base % 32) bytes in. base: inode and xattrs; needs
 * base < blksz and base % 32 + tail <= blksz.
 */
uint64_t meta_alloc_straddle(struct meta_alloc *a, uint32_t base,
			     uint32_t tail);
void meta_alloc_free(struct meta_alloc *a);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Allocator for the metadata area: records (an inode with its xattrs and
 * inline tail) of up to one block never cross a block boundary, so partly
 * used blocks are kept in buckets by their free space and each record goes
 * into the fullest block it fits (best fit). Larger records and the shared
 * xattr pool are placed contiguously at the end.
 */
#ifndef KILN_METAALLOC_H
#define KILN_METAALLOC_H

#include <stdbool.h>
#include <stdint.h>

struct meta_bucket {
	uint64_t *blocks;
	uint32_t nr, cap;
};

struct meta_alloc {
	uint32_t blksz;
	uint64_t end;			/* first byte after all metadata */
	uint64_t used;			/* bytes handed out, to report packing */
	struct meta_bucket *buckets;	/* [k]: blocks with k slots free */
};

/* Starts allocating at byte start (the end of the superblock). */
void meta_alloc_init(struct meta_alloc *a, uint32_t blksz, uint64_t start);
uint64_t meta_alloc_record(struct meta_alloc *a, uint32_t size);
uint64_t meta_alloc_contiguous(struct meta_alloc *a, uint64_t size);
void meta_alloc_free(struct meta_alloc *a);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The inode records (inode, xattrs, index, inline tail) of every inode, in
 * one metadata area after all data, behind the shared xattr pool. A flat inode's record size
 * is known at layout, a compressed one's only once its data is compressed,
 * so records are staged first, in chunks that never move (workers fill
 * flat files' inline tails while more records are staged), and packed only
 * when all are in: largest first, best fit, in layout order. Packing all
 * of them together lets small records fill what big ones leave; two areas
 * (one laid out before the data, one after) each packed worse alone. Nids
 * count from the area's first block (meta_blkaddr, also xattr_blkaddr); the
 * area is written a window at a time.
 */
#ifndef KILN_WRITE_RECORDS_H
#define KILN_WRITE_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include "inode.h"

struct kiln_records {
	uint32_t blksz;
	uint8_t **chunks;		/* every allocation, to free them */
	uint32_t nr_chunks, cap_chunks;
	uint8_t *cur;			/* the chunk small records go to */
	size_t cur_used;
	uint64_t start;			/* image byte offset, once packed */
	uint64_t size;			/* bytes, whole blocks, once packed */
	uint64_t used;			/* bytes of records, to report packing */
	const uint8_t *pool;		/* the xattr pool, at the area's start */
	uint32_t pool_size;
};

void kiln_records_init(struct kiln_records *r, uint32_t blksz);
/* Zeroed room for in's record of size bytes: sets in->rec and in->rec_size. */
uint8_t *kiln_records_stage(struct kiln_records *r, struct kiln_inode *in,
			    uint32_t size);
/*
 * Makes the area from block blk on: the pool (pool_size bytes, kept until
 * written), then order[0], the root, whose nid must fit 16 bits, then the
 * records of order[1..nr); sets every nid. -1 if the root's does not fit.
 */
int kiln_records_pack(struct kiln_records *r, struct kiln_inode **order,
		      uint32_t nr, uint64_t blk, const uint8_t *pool,
		      uint32_t pool_size);
/* seen (or NULL) sees each window of the area, in order, before it is written. */
typedef void kiln_records_seen(void *ctx, const uint8_t *p, size_t n);
int kiln_records_write(const struct kiln_records *r, struct kiln_inode **order,
		       uint32_t nr, int fd, kiln_records_seen *seen, void *ctx);
void kiln_records_free(struct kiln_records *r);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The second metadata area: compressed inodes, each with its index and,
 * with ztailpacking, its inline tail pcluster (and files that compression
 * did not pay for, stored flat with an inline tail instead). A record's size is known only
 * once its file is compressed, so these inodes are placed in the order
 * their files finish (input order, whatever the worker count) into a buffer
 * that goes after all data. Offsets here are relative to that area until
 * kiln_zmeta_relocate makes the nids absolute.
 */
#ifndef KILN_ZMETA_H
#define KILN_ZMETA_H

#include <stddef.h>
#include <stdint.h>
#include "inode.h"
#include "metaalloc.h"

struct kiln_zmeta {
	struct meta_alloc a;
	uint8_t *buf;
	uint64_t cap;
	uint64_t start;			/* image byte offset, once relocated */
};

void kiln_zmeta_init(struct kiln_zmeta *m, uint32_t blksz);
/* Places size bytes for in (sets in->nid); the pointer lasts until the next call. */
uint8_t *kiln_zmeta_place(struct kiln_zmeta *m, struct kiln_inode *in,
			  uint32_t size);
/* Bytes of the area, whole blocks. */
uint64_t kiln_zmeta_size(const struct kiln_zmeta *m);
/* The area starts at block blk: nids of inodes placed here become absolute. */
void kiln_zmeta_relocate(struct kiln_zmeta *m, uint64_t blk,
			 struct kiln_inode **inodes, uint32_t nr);
/* Where an (absolute) nid of this area points in the buffer. */
uint8_t *kiln_zmeta_ptr(const struct kiln_zmeta *m, uint64_t nid);
void kiln_zmeta_free(struct kiln_zmeta *m);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * --chunksize: chunk-based regular files. A file is cut into chunks of
 * 2^chunkbits bytes; each chunk's blocks are named by one entry of the
 * index after the inode (a 4-byte block map, or 8-byte chunk indexes).
 * That indirection is what makes sharing possible: a chunk equal to one
 * written before gets the earlier blocks, and an all-zero chunk none (a
 * hole). Files are written one after the other on the main thread, in
 * layout order, so the image is the same for any --workers.
 */
#ifndef KILN_WRITE_CHUNKED_H
#define KILN_WRITE_CHUNKED_H

#include <stdbool.h>
#include <stdint.h>
#include "dedupe.h"
#include "inode.h"
#include "kiln.h"
#include "records.h"
#include "writeback.h"

struct kiln_chunked {
	int fd;
	const char *image;
	unsigned int blkszbits, chunkbits;
	bool indexes;			/* 8-byte chunk indexes */
	bool zero_fill;			/* write zeros too (a block device) */
	struct kiln_writeback *wb;
	struct kiln_dedupe dd;		/* chunks written so far */
	uint8_t *buf;
	uint64_t next_blk;		/* where the next new chunk goes */
	/*
	 * Bytes up to here may hold a chunk written and then found equal to
	 * an earlier one: zeros there must be written, not skipped.
	 */
	uint64_t dirty_end;
};

void kiln_chunked_init(struct kiln_chunked *c, int fd, const char *image,
		       const struct kiln_mkfs_opts *o, struct kiln_writeback *wb,
		       uint64_t next_blk);
/*
 * Writes a regular file's chunks from c->next_blk on, then stages its
 * record (inode, xattrs, index) in r: in->rec is filled but for the inode.
 */
int kiln_chunked_write(struct kiln_chunked *c, struct kiln_inode *in,
		       struct kiln_records *r);
void kiln_chunked_free(struct kiln_chunked *c);

#endif

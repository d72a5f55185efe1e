/* SPDX-License-Identifier: MIT */
/*
 * Flat data: uncompressed files, symlinks and directories go to the blocks
 * the layout gave them, with a partial last block inline in the inode's
 * record (in->rec) when it fits. Every position is known before a byte is written, so
 * regular files are copied by the workers, in any order.
 */
#ifndef KILN_WRITE_FLAT_H
#define KILN_WRITE_FLAT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/workqueue.h"
#include "inode.h"

struct kiln_flat {
	int fd;
	const char *image;
	uint32_t blksz;
	/*
	 * A new file reads zeros where nothing was written, so zero blocks
	 * and holes are skipped; a block device holds an older image's
	 * bytes there, so every byte of every data block is written.
	 */
	bool zero_fill;
	atomic_bool failed;		/* a worker's copy failed (and said so) */
};

/* Places bytes [off, off+len) of an inode's data where the layout says. */
int kiln_flat_emit(const struct kiln_flat *f, const struct kiln_inode *in,
		   const uint8_t *p, size_t len, uint64_t off);
/* Queues a regular file's copy; check f->failed after kiln_wq_drain. */
void kiln_flat_queue(struct kiln_flat *f, struct kiln_workqueue *wq,
		     const struct kiln_inode *in);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Starting the image's writeback while it is being built, so the fsync at
 * the end (which a trustworthy image needs) finds little left to write:
 * without it, a fast compressor waited as long for the disk as it took to
 * compress. The kick runs on a worker: it can block on a busy queue.
 */
#ifndef KILN_WRITE_WRITEBACK_H
#define KILN_WRITE_WRITEBACK_H

#include <stdint.h>
#include "common/workqueue.h"

struct kiln_writeback {
	int fd;
	struct kiln_workqueue *wq;
	uint64_t dirty;			/* bytes written since the last kick */
};

/* Counts bytes written; past a threshold, queues a writeback kick. */
void kiln_writeback_add(struct kiln_writeback *wb, uint64_t bytes);

#endif

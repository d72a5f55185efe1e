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
	struct kiln_job sync;		/* kiln_writeback_sync's */
	int sync_errno;
};

/* Counts bytes written; past a threshold, queues a writeback kick. */
void kiln_writeback_add(struct kiln_writeback *wb, uint64_t bytes);
/*
 * Once the data is written, a worker waits for it to reach the disk while
 * the metadata is made, so the fsync at the end has only that left.
 * kiln_writeback_synced waits for it: 0, or -1 with errno (the error is
 * this one's to report: the fd's next fsync may not see it again).
 */
void kiln_writeback_sync(struct kiln_writeback *wb);
int kiln_writeback_synced(struct kiln_writeback *wb);

#endif

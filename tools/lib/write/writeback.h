/* SPDX-License-Identifier: MIT */
/*
 * Writing the image back to the disk while it is being built, so the fsync
 * at the end (which a trustworthy image needs) finds little left to write:
 * without it, a fast compressor waited as long for the disk as it took to
 * compress. A thread of its own waits for the disk, never a worker: every
 * few MiB written it starts the writeback of what is dirty and waits for
 * it (write-behind), so no more than that is ever pending.
 */
#ifndef KILN_WRITE_WRITEBACK_H
#define KILN_WRITE_WRITEBACK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct kiln_writeback {
	int fd;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake, done;
	uint64_t dirty;			/* bytes written since the last pass */
	bool running, stop;
	bool sync_asked, synced;	/* kiln_writeback_sync's fdatasync */
	int sync_errno;
	int pass_errno;			/* the first a pass saw */
};

/* Starts the thread; without one (it could not start) all waits for fsync. */
void kiln_writeback_start(struct kiln_writeback *wb, int fd);
/* Counts bytes written; past a threshold, wakes the thread. */
void kiln_writeback_add(struct kiln_writeback *wb, uint64_t bytes);
/*
 * Once the data is written, the thread fdatasyncs it while the metadata
 * is made, so the fsync at the end has only that left.
 * kiln_writeback_synced waits for it: 0, or -1 with errno, its error or a
 * pass's (these are its to report: the fd's next fsync may not see them).
 */
void kiln_writeback_sync(struct kiln_writeback *wb);
int kiln_writeback_synced(struct kiln_writeback *wb);
void kiln_writeback_stop(struct kiln_writeback *wb);

#endif

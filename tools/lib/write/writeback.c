/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>
#include "common/util.h"
#include "writeback.h"

#define KICK_BYTES (32u << 20)

struct kick {
	struct kiln_job job;
	int fd;
};

/*
 * Asynchronous writeback of the whole file's dirty pages (nbytes 0: to
 * the end). Errors do not matter here: the final fsync reports them.
 */
static void run_kick(struct kiln_job *job, void *ctx)
{
	struct kick *k = (struct kick *)job;

	(void)ctx;
	(void)sync_file_range(k->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	free(k);
}

void kiln_writeback_add(struct kiln_writeback *wb, uint64_t bytes)
{
	wb->dirty += bytes;
	if (wb->dirty >= KICK_BYTES)
		kick(wb);
}

static void kick(struct kiln_writeback *wb)
{
	struct kick *k = xcalloc(1, sizeof(*k));

	wb->dirty = 0;
	k->fd = wb->fd;
	k->job.fn = run_kick;
	k->job.detached = true;
	kiln_wq_submit(wb->wq, &k->job);
}

static void run_sync(struct kiln_job *job, void *ctx)
{
	struct kiln_writeback *wb = (struct kiln_writeback *)
		((char *)job - offsetof(struct kiln_writeback, sync));

	(void)ctx;
	wb->sync_errno = fdatasync(wb->fd) ? errno : 0;
}

void kiln_writeback_sync(struct kiln_writeback *wb)
{
	wb->sync = (struct kiln_job){ .fn = run_sync };
	kiln_wq_submit(wb->wq, &wb->sync);
}

int kiln_writeback_synced(struct kiln_writeback *wb)
{
	if (!wb->sync.fn)
		return 0;
	kiln_wq_wait(wb->wq, &wb->sync);
	wb->sync.fn = NULL;
	errno = wb->sync_errno;
	return errno ? -1 : 0;
}

/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <stdlib.h>
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
	struct kick *k;

	wb->dirty += bytes;
	if (wb->dirty < KICK_BYTES)
		return;
	wb->dirty = 0;
	k = xcalloc(1, sizeof(*k));
	k->fd = wb->fd;
	k->job.fn = run_kick;
	k->job.detached = true;
	kiln_wq_submit(wb->wq, &k->job);
}

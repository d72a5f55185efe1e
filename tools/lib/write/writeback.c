/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "writeback.h"

#define PASS_BYTES (8u << 20)

/*
 * Starts the writeback of every dirty page and waits until none is under
 * writeback: the kernel's pages of this file stay few. The wait takes the
 * file's write error for itself (the fd's next fsync no longer sees it):
 * returns it, for kiln_writeback_synced to report.
 */
static int pass(int fd)
{
	return sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE |
			       SYNC_FILE_RANGE_WRITE |
			       SYNC_FILE_RANGE_WAIT_AFTER) ? errno : 0;
}

static void *run(void *p)
{
	struct kiln_writeback *wb = p;

	pthread_mutex_lock(&wb->lock);
	for (;;) {
		bool sync = wb->sync_asked && !wb->synced;

		if (!wb->stop && !sync && wb->dirty < PASS_BYTES) {
			pthread_cond_wait(&wb->wake, &wb->lock);
			continue;
		}
		if (sync) {
			pthread_mutex_unlock(&wb->lock);
			int err = fdatasync(wb->fd) ? errno : 0;
			pthread_mutex_lock(&wb->lock);
			wb->sync_errno = err;
			wb->synced = true;
			pthread_cond_broadcast(&wb->done);
		}
		if (wb->stop)
			break;
		if (wb->dirty >= PASS_BYTES) {
			wb->dirty = 0;
			pthread_mutex_unlock(&wb->lock);
			int err = pass(wb->fd);
			pthread_mutex_lock(&wb->lock);
			if (!wb->pass_errno)
				wb->pass_errno = err;
		}
	}
	pthread_mutex_unlock(&wb->lock);
	return NULL;
}

void kiln_writeback_start(struct kiln_writeback *wb, int fd)
{
	*wb = (struct kiln_writeback){ .fd = fd };
	pthread_mutex_init(&wb->lock, NULL);
	pthread_cond_init(&wb->wake, NULL);
	pthread_cond_init(&wb->done, NULL);
	wb->running = !pthread_create(&wb->thread, NULL, run, wb);
}

void kiln_writeback_add(struct kiln_writeback *wb, uint64_t bytes)
{
	pthread_mutex_lock(&wb->lock);
	wb->dirty += bytes;
	if (wb->dirty >= PASS_BYTES)
		pthread_cond_signal(&wb->wake);
	pthread_mutex_unlock(&wb->lock);
}

void kiln_writeback_sync(struct kiln_writeback *wb)
{
	pthread_mutex_lock(&wb->lock);
	wb->sync_asked = true;
	pthread_cond_signal(&wb->wake);
	pthread_mutex_unlock(&wb->lock);
}

int kiln_writeback_synced(struct kiln_writeback *wb)
{
	int err = 0;

	pthread_mutex_lock(&wb->lock);
	while (wb->running && wb->sync_asked && !wb->synced)
		pthread_cond_wait(&wb->done, &wb->lock);
	err = wb->pass_errno;
	if (!err && wb->synced)
		err = wb->sync_errno;
	pthread_mutex_unlock(&wb->lock);
	errno = err;
	return err ? -1 : 0;
}

void kiln_writeback_stop(struct kiln_writeback *wb)
{
	pthread_mutex_lock(&wb->lock);
	wb->stop = true;
	pthread_cond_signal(&wb->wake);
	pthread_mutex_unlock(&wb->lock);
	if (wb->running)
		pthread_join(wb->thread, NULL);
	pthread_mutex_destroy(&wb->lock);
	pthread_cond_destroy(&wb->wake);
	pthread_cond_destroy(&wb->done);
}

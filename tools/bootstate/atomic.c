/* SPDX-License-Identifier: MIT */
/*
 * Atomic replacement of a small file: a temporary file in the same
 * directory (a rename cannot cross filesystems), fsync, rename, fsync of
 * the directory. A fixed temporary name, not mkstemp: a crash leaves at
 * most one stale file, which the next write truncates and reuses (callers
 * hold a lock on the directory, so two writers never share it).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "atomic.h"

/*
 * Test hooks, read only here: KILN_BOOTSTATE_FAIL_AFTER=N makes the write
 * fail with ENOSPC after N bytes (a full disk); KILN_BOOTSTATE_CRASH_AFTER=N
 * kills the process with SIGKILL after N bytes (a power cut mid-write).
 */
static ssize_t hooked_write(int fd, const unsigned char *buf, size_t n)
{
	const char *fail = getenv("KILN_BOOTSTATE_FAIL_AFTER");
	const char *crash = getenv("KILN_BOOTSTATE_CRASH_AFTER");
	size_t lim = n;

	if (fail && *fail)
		lim = (size_t)strtoul(fail, NULL, 10);
	if (crash && *crash)
		lim = (size_t)strtoul(crash, NULL, 10);
	ssize_t r = write(fd, buf, lim < n ? lim : n);
	if (r >= 0 && lim < n) {
		if (crash && *crash) {
			fsync(fd);
			raise(SIGKILL);
		}
		errno = ENOSPC;
		return -1;
	}
	return r;
}

int atomic_write(int dirfd, const char *name, const char *tmp,
		 const unsigned char *p, size_t n, char *err, size_t errlen)
{
	const char *what = "create";
	size_t done = 0;
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC |
			O_NOFOLLOW | O_CLOEXEC, 0644);

	if (fd < 0)
		goto fail;
	what = "write";
	while (done < n) {
		ssize_t r = hooked_write(fd, p + done, n - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = EIO;
			goto fail;
		}
		done += (size_t)r;
	}
	what = "fsync";
	if (fsync(fd) != 0)
		goto fail;
	what = "close";
	int rc = close(fd);
	fd = -1;
	if (rc != 0)
		goto fail;
	what = "rename";
	if (renameat(dirfd, tmp, dirfd, name) != 0)
		goto fail;
	/* the rename itself must reach the disk before we report success */
	if (fsync(dirfd) != 0) {
		snprintf(err, errlen, "%s: fsync of the directory: %s",
			 name, strerror(errno));
		return -1;
	}
	return 0;
fail:
	snprintf(err, errlen, "%s: %s: %s", tmp, what, strerror(errno));
	if (fd >= 0)
		close(fd);
	unlinkat(dirfd, tmp, 0);
	return -1;
}


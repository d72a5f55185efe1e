/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <unistd.h>
#include "fullio.h"

/* the one loop of both: pwrite(2) at off when positioned, else write(2) */
static int whole_write(int fd, const char *p, size_t len, int positioned,
		       uint64_t off)
{
	while (len) {
		ssize_t n = positioned ? pwrite(fd, p, len, (off_t)off)
				       : write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* no error and no progress: retrying would never end */
			if (n == 0)
				errno = ENOSPC;
			return -1;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int write_all(int fd, const void *buf, size_t len)
{
	return whole_write(fd, buf, len, 0, 0);
}

int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	return whole_write(fd, buf, len, 1, off);
}

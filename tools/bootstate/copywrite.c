/* SPDX-License-Identifier: MIT */
/*
 * The copy written is never the one in use (state.c), so it need not be
 * replaced atomically: whatever a power cut leaves of it fails its CRC
 * and the other copy is read. What must survive a cut is the FAT itself:
 * a copy that is already a whole file is overwritten in place (its own
 * clusters: no allocation, no directory entry moved, only its time
 * changes). A rename on a FAT allocates clusters and moves directory
 * entries, and a cut after one (in the OTA power-cut test, under QEMU)
 * left a FAT that Linux then mounted read-only: updates could no longer
 * be installed. Only a missing or odd-sized copy is made that way.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "../lib/common/fullio.h"
#include "copywrite.h"

/*
 * p[0..n) to fd from its start; -1 with errno. Test hooks, read only here:
 * KILN_BOOTSTATE_FAIL_AFTER=N makes the write fail with ENOSPC after N
 * bytes (a full disk); KILN_BOOTSTATE_CRASH_AFTER=N kills the process with
 * SIGKILL after N bytes (a power cut mid-write) and wins when both are
 * set. The first N bytes go out through write_all as any others do.
 */
static int hooked_write_all(int fd, const unsigned char *p, size_t n)
{
	const char *crash = getenv("KILN_BOOTSTATE_CRASH_AFTER");
	const char *fail = getenv("KILN_BOOTSTATE_FAIL_AFTER");
	const char *hook = crash && *crash ? crash : fail && *fail ? fail : NULL;
	size_t lim = hook ? (size_t)strtoul(hook, NULL, 10) : n;

	if (lim >= n)
		return write_all(fd, p, n);
	if (write_all(fd, p, lim))
		return -1;
	if (hook == crash) {
		fsync(fd);
		raise(SIGKILL);
	}
	errno = ENOSPC;
	return -1;
}

/* 1 written in place, 0 not a whole copy to overwrite, -1 failed */
static int write_in_place(int dirfd, const char *name, const unsigned char *p,
			  size_t n, char *err, size_t errlen)
{
	struct stat sb;
	const char *what = "write";
	int fd = openat(dirfd, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || (size_t)sb.st_size != n) {
		close(fd);
		return 0;
	}
	if (hooked_write_all(fd, p, n) || (what = "fsync", fsync(fd))) {
		snprintf(err, errlen, "%s: %s: %s", name, what, strerror(errno));
		close(fd);
		return -1;
	}
	if (close(fd)) {
		snprintf(err, errlen, "%s: close: %s", name, strerror(errno));
		return -1;
	}
	return 1;
}

int copy_write(int dirfd, const char *name, const char *tmp,
	       const unsigned char *p, size_t n, char *err, size_t errlen)
{
	int r = write_in_place(dirfd, name, p, n, err, errlen);

	if (r)
		return r < 0 ? -1 : 0;
	const char *what = "create";
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC |
			O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		goto fail;
	what = "write";
	if (hooked_write_all(fd, p, n))
		goto fail;
	what = "fsync";
	if (fsync(fd) != 0)
		goto fail;
	what = "rename";
	if (renameat(dirfd, tmp, dirfd, name) != 0)
		goto fail;
	/* again, renamed: a FAT writes the file's directory entry at its new
	 * place with the file, not with the directory */
	what = "fsync";
	if (fsync(fd) != 0 || fsync(dirfd) != 0) {
		snprintf(err, errlen, "%s: fsync after the rename: %s", name,
			 strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
fail:
	snprintf(err, errlen, "%s: %s: %s", tmp, what, strerror(errno));
	if (fd >= 0)
		close(fd);
	unlinkat(dirfd, tmp, 0);
	return -1;
}

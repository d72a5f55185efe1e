/* SPDX-License-Identifier: MIT */
/*
 * The image's destination. Three cases, told apart before any work:
 *  - a regular file (new or existing): written under IMAGE.tmp.XXXXXX in
 *    the same directory and renamed over IMAGE once complete and synced.
 *    An existing file that we may not write is refused, as erofs-utils
 *    refuses it (root may, and then the file keeps its mode and owner);
 *  - a block device: opened exclusively (so not while mounted), its size
 *    checked, its first block wiped before anything else is written;
 *  - anything else (directory, character device, FIFO, socket): refused.
 * A symlink IMAGE stands for its target, as open(2) would take it.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kiln.h"
#include "target.h"
#include "common/util.h"

/* Follows symlinks by hand, so a dangling one names the file to create. */
static char *follow(const char *image)
{
	char *cur = xstrdup(image);
	char buf[PATH_MAX];

	for (int hops = 0; hops < 40; hops++) {
		ssize_t n = readlink(cur, buf, sizeof(buf) - 1);
		char *next, *copy;

		if (n < 0)
			return cur;	/* not a symlink (or not there) */
		buf[n] = '\0';
		copy = xstrdup(cur);
		next = buf[0] == '/' ? xstrdup(buf) :
				       path_join(dirname(copy), buf);
		free(copy);
		free(cur);
		cur = next;
	}
	free(cur);
	errno = ELOOP;
	return NULL;
}

static const char *kind(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISCHR(m) ? "a character device" :
	       S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" :
	       "not a regular file";
}

static void skip(struct kiln_target *t, const struct stat *st)
{
	t->skip[t->nr_skip++] = (struct kiln_file_id){ st->st_dev, st->st_ino };
}

static int open_blockdev(struct kiln_target *t, const struct stat *st)
{
	off_t end;

	/* O_EXCL on a block device: EBUSY while it is mounted */
	/* read too: -E dedupe and --chunksize compare with what is written */
	t->fd = open(t->path, O_RDWR | O_EXCL | O_CLOEXEC);
	if (t->fd < 0) {
		kiln_err("%s: %s", t->image, errno == EBUSY ?
			 "device is in use (mounted?)" : strerror(errno));
		return -1;
	}
	end = lseek(t->fd, 0, SEEK_END);
	if (end < 0) {
		kiln_err("%s: %s", t->image, strerror(errno));
		return -1;
	}
	t->is_blockdev = true;
	t->dev_size = (uint64_t)end;
	skip(t, st);
	return 0;
}

static int open_file(struct kiln_target *t, const struct stat *old)
{
	mode_t mask = umask(0);
	struct stat st;

	umask(mask);
	if (old && access(t->path, W_OK)) {
		kiln_err("%s: %s", t->image, strerror(errno));
		return -1;
	}
	t->tmp = xmalloc(strlen(t->path) + 16);
	strcpy(t->tmp, t->path);
	strcat(t->tmp, ".tmp.XXXXXX");
	t->fd = mkstemp(t->tmp);
	if (t->fd < 0) {
		kiln_err("%s: %s", t->image, strerror(errno));
		free(t->tmp);
		t->tmp = NULL;
		return -1;
	}
	if (old) {
		skip(t, old);
		fchmod(t->fd, old->st_mode & 07777);
		if (!geteuid() && fchown(t->fd, old->st_uid, old->st_gid))
			kiln_info(1, "%s: cannot keep the old owner: %s",
				  t->image, strerror(errno));
	} else {
		fchmod(t->fd, 0644 & ~mask);
	}
	if (!fstat(t->fd, &st))
		skip(t, &st);
	return 0;
}

int kiln_target_open(struct kiln_target *t, const char *image)
{
	struct stat st;

	memset(t, 0, sizeof(*t));
	t->image = image;
	t->fd = -1;
	t->path = follow(image);
	if (!t->path) {
		kiln_err("%s: %s", image, strerror(errno));
		return -1;
	}
	if (stat(t->path, &st)) {
		if (errno != ENOENT) {
			kiln_err("%s: %s", image, strerror(errno));
			return -1;
		}
		return open_file(t, NULL);
	}
	if (S_ISBLK(st.st_mode))
		return open_blockdev(t, &st);
	if (S_ISREG(st.st_mode))
		return open_file(t, &st);
	kiln_err("%s: is %s: give a file or a block device", image,
		 kind(st.st_mode));
	return -1;
}

int kiln_target_prepare(const struct kiln_target *t, uint64_t bytes,
			bool wipe)
{
	static const uint8_t zero[4096];

	if (!t->is_blockdev)
		return 0;
	if (bytes < sizeof(zero))
		bytes = sizeof(zero);
	if (bytes > t->dev_size) {
		kiln_err("%s: device of %llu bytes is too small: the image "
			 "needs at least %llu", t->image,
			 (unsigned long long)t->dev_size,
			 (unsigned long long)bytes);
		return -1;
	}
	/* no old superblock survives a build that fails half way */
	if (wipe && (pwrite_all(t->fd, zero, sizeof(zero), 0) ||
		     fsync(t->fd))) {
		kiln_err("%s: write failed: %s", t->image, strerror(errno));
		return -1;
	}
	return 0;
}

static int sync_dir_of(const char *path)
{
	char *copy = xstrdup(path);
	int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ret = fd < 0 ? -1 : fsync(fd);

	if (fd >= 0)
		close(fd);
	free(copy);
	return ret;
}

int kiln_target_close(struct kiln_target *t, int ret)
{
	if (t->fd >= 0 && close(t->fd) && !ret) {
		kiln_err("%s: %s", t->image, strerror(errno));
		ret = -1;
	}
	t->fd = -1;
	if (!t->tmp)
		return ret;
	if (!ret && rename(t->tmp, t->path)) {
		kiln_err("%s: %s", t->image, strerror(errno));
		ret = -1;
	}
	if (ret)
		unlink(t->tmp);
	else
		sync_dir_of(t->path);
	return ret;
}

void kiln_target_free(struct kiln_target *t)
{
	if (t->fd >= 0) {		/* never closed: the build did not end */
		close(t->fd);
		if (t->tmp)
			unlink(t->tmp);
	}
	free(t->path);
	free(t->tmp);
	t->path = t->tmp = NULL;
	t->fd = -1;
}

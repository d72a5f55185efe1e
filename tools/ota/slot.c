/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../lib/common/fullio.h"
#include "progress.h"
#include "slot.h"

#define CHUNK (1u << 20)

static int open_slot(const char *dev, uint64_t need, char *err, size_t errlen)
{
	struct stat sb;
	uint64_t size = 0;
	int fd = open(dev, O_WRONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0 || fstat(fd, &sb)) {
		snprintf(err, errlen, "%s: %s", dev, strerror(errno));
		goto fail;
	}
	if (S_ISBLK(sb.st_mode)) {
		/* O_EXCL on a block device: refused while it is mounted */
		close(fd);
		fd = open(dev, O_WRONLY | O_EXCL | O_CLOEXEC | O_NOCTTY);
		off_t end = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);	/* its size */
		if (fd < 0 || end < 0 || lseek(fd, 0, SEEK_SET)) {
			snprintf(err, errlen, "%s: %s", dev, errno == EBUSY
				 ? "in use (mounted? it must be the inactive slot)"
				 : strerror(errno));
			goto fail;
		}
		size = (uint64_t)end;
	} else if (S_ISREG(sb.st_mode)) {
		size = (uint64_t)sb.st_size;
	} else {
		snprintf(err, errlen, "%s: not a block device or file", dev);
		goto fail;
	}
	if (size < need) {
		snprintf(err, errlen, "%s: %llu bytes, the root image needs %llu", dev,
			 (unsigned long long)size, (unsigned long long)need);
		goto fail;
	}
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

int slot_write(struct bundle_in *b, const struct payload *p, const char *dev,
	       char *err, size_t errlen)
{
	crypto_hash_sha256_state st;
	unsigned char sha[32], *buf;
	uint64_t done = 0;
	int rc = -1, fd = open_slot(dev, p->size, err, errlen);

	if (fd < 0)
		return -2;
	if (!(buf = malloc(CHUNK))) {
		close(fd);
		return snprintf(err, errlen, "out of memory"), -1;
	}
	crypto_hash_sha256_init(&st);
	for (;;) {
		/* fill a whole chunk: fewer, larger writes to the flash */
		size_t have = 0;
		ssize_t r = 1;
		while (have < CHUNK && (r = bundle_in_read(b, buf + have, CHUNK - have,
							   err, errlen)) > 0)
			have += (size_t)r;
		if (r < 0)
			goto fail;
		if (!have)
			break;
		crypto_hash_sha256_update(&st, buf, have);
		if (write_all(fd, buf, have)) {
			snprintf(err, errlen, "%s: write: %s", dev, strerror(errno));
			rc = -2;
			goto fail;
		}
		done += have;
		progress_bytes(done, p->size);
	}
	if (fsync(fd)) {
		snprintf(err, errlen, "%s: fsync: %s", dev, strerror(errno));
		rc = -2;
		goto fail;
	}
	crypto_hash_sha256_final(&st, sha);
	if (sodium_memcmp(sha, p->sha256, 32)) {
		snprintf(err, errlen, "%s: SHA-256 differs from the manifest's "
			 "(the bundle was changed)", p->name);
		goto fail;
	}
	free(buf);
	close(fd);
	progress_done(done);
	return 0;
fail:
	free(buf);
	close(fd);
	return rc;
}

int slot_fsck(const char *fsck, const char *dev, char *err, size_t errlen)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		dup2(2, 1);	/* its report goes where ours go */
		execlp(fsck, fsck, dev, (char *)NULL);
		fprintf(stderr, "kiln-update: %s: %s\n", fsck, strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return snprintf(err, errlen, "cannot run %s: %s", fsck, strerror(errno)), -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(err, errlen, "%s %s failed (status %d): the written slot is "
			 "not used", fsck, dev, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return -1;
	}
	return 0;
}

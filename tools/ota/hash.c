/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hash.h"

int hash_file(const char *path, unsigned char sha[32], uint64_t *size,
	      char *err, size_t errlen)
{
	crypto_hash_sha256_state st;
	unsigned char *buf = malloc(1 << 20);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	ssize_t r = 0;

	*size = 0;
	if (fd < 0 || !buf) {
		snprintf(err, errlen, "%s: %s", path, strerror(fd < 0 ? errno : ENOMEM));
		free(buf);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	crypto_hash_sha256_init(&st);
	while ((r = read(fd, buf, 1 << 20)) > 0 || (r < 0 && errno == EINTR)) {
		if (r < 0)
			continue;
		crypto_hash_sha256_update(&st, buf, (unsigned long long)r);
		*size += (uint64_t)r;
	}
	if (r < 0)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	crypto_hash_sha256_final(&st, sha);
	free(buf);
	close(fd);
	return r < 0 ? -1 : 0;
}

void hash_hex(const unsigned char sha[32], char out[65])
{
	sodium_bin2hex(out, 65, sha, 32);
}

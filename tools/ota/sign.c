/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "sign.h"

int sign_init(void)
{
	return sodium_init() < 0 ? -1 : 0;
}

/* one line of exactly 64 hex digits into out[32] */
static int load_hex32(const char *path, unsigned char out[32], char *err,
		      size_t errlen)
{
	char buf[80];
	size_t bin_len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	int e = errno;

	if (fd >= 0)
		close(fd);
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -1;
	}
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	if (n != 64 || sodium_hex2bin(out, 32, buf, 64, NULL, &bin_len, NULL) ||
	    bin_len != 32) {
		snprintf(err, errlen, "%s: not a key (one line of 64 hex digits)", path);
		return -1;
	}
	return 0;
}

int key_load_public(const char *path, unsigned char pk[32], char *err, size_t errlen)
{
	return load_hex32(path, pk, err, errlen);
}

int key_load_secret(const char *path, unsigned char sk[64], char *err, size_t errlen)
{
	unsigned char seed[32], pk[32];

	if (load_hex32(path, seed, err, errlen))
		return -1;
	crypto_sign_seed_keypair(pk, sk, seed);
	sodium_memzero(seed, sizeof(seed));
	return 0;
}

static int write_hex32(const char *path, const unsigned char in[32], mode_t mode,
		       char *err, size_t errlen)
{
	char hex[65 + 1];
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);

	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, errno == EEXIST
			 ? "exists (a key is never replaced)" : strerror(errno));
		return -1;
	}
	sodium_bin2hex(hex, sizeof(hex), in, 32);
	strcat(hex, "\n");
	if (write(fd, hex, 65) != 65 || fsync(fd) || close(fd)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		unlink(path);
		return -1;
	}
	return 0;
}

int key_generate(const char *secret_path, const char *public_path,
		 char *err, size_t errlen)
{
	unsigned char seed[32], pk[32], sk[64];

	randombytes_buf(seed, sizeof(seed));
	crypto_sign_seed_keypair(pk, sk, seed);
	sodium_memzero(sk, sizeof(sk));
	int rc = write_hex32(secret_path, seed, 0600, err, errlen);
	sodium_memzero(seed, sizeof(seed));
	if (rc)
		return -1;
	if (write_hex32(public_path, pk, 0644, err, errlen)) {
		unlink(secret_path);
		return -1;
	}
	return 0;
}

void sign_detached(unsigned char sig[SIG_BYTES], const void *msg, size_t n,
		   const unsigned char sk[64])
{
	crypto_sign_detached(sig, NULL, msg, n, sk);
}

int sign_verify(const unsigned char sig[SIG_BYTES], const void *msg, size_t n,
		const unsigned char pk[32])
{
	return crypto_sign_verify_detached(sig, msg, n, pk) ? -1 : 0;
}

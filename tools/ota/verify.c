/* SPDX-License-Identifier: MIT */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sign.h"
#include "verify.h"

int bundle_open_verified(struct bundle_in *b, int fd, const unsigned char *pk,
			 struct manifest *m, char *text, char *err, size_t errlen)
{
	unsigned char sig[SIG_BYTES];
	char *buf = malloc(MANIFEST_MAX_SIZE + 1);
	uint64_t n = 0;

	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (bundle_in_open(b, fd, err, errlen))
		goto fail_free;
	if (bundle_in_next(b, "manifest", UINT64_MAX, MANIFEST_MAX_SIZE, &n, err, errlen) ||
	    bundle_in_read_all(b, buf, err, errlen) ||
	    bundle_in_next(b, "manifest.sig", SIG_BYTES, 0, NULL, err, errlen) ||
	    bundle_in_read_all(b, sig, err, errlen))
		goto fail;
	buf[n] = '\0';
	/* the signature first: an unsigned manifest is not even parsed */
	if (pk && sign_verify(sig, buf, (size_t)n, pk)) {
		snprintf(err, errlen, "bundle: bad signature (not signed with this "
			 "device's key, or changed since)");
		goto fail;
	}
	if (manifest_parse(m, buf, (size_t)n, err, errlen))
		goto fail;
	if (text)
		memcpy(text, buf, (size_t)n + 1);
	free(buf);
	return 0;
fail:
	bundle_in_close(b);
fail_free:
	free(buf);
	return -1;
}

int bundle_check_payload(struct bundle_in *b, const struct payload *p,
			 char *err, size_t errlen)
{
	crypto_hash_sha256_state st;
	unsigned char sha[32];
	unsigned char *buf = malloc(1 << 16);
	ssize_t r;

	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	crypto_hash_sha256_init(&st);
	while ((r = bundle_in_read(b, buf, 1 << 16, err, errlen)) > 0)
		crypto_hash_sha256_update(&st, buf, (unsigned long long)r);
	free(buf);
	if (r < 0)
		return -1;
	crypto_hash_sha256_final(&st, sha);
	if (sodium_memcmp(sha, p->sha256, 32)) {
		snprintf(err, errlen, "bundle: %s: SHA-256 differs from the manifest's",
			 p->name);
		return -1;
	}
	return 0;
}

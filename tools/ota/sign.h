/* SPDX-License-Identifier: MIT */
/*
 * Bundle keys and signatures: Ed25519 (libsodium). A key file is one line
 * of hex: the public key's 32 bytes, or the secret key's 32-byte seed.
 */
#ifndef KILN_OTA_SIGN_H
#define KILN_OTA_SIGN_H

#include <stddef.h>

#define SIG_BYTES 64

/* sodium_init once; -1 when libsodium cannot start (no entropy source). */
int sign_init(void);
int key_load_public(const char *path, unsigned char pk[32], char *err, size_t errlen);
int key_load_secret(const char *path, unsigned char sk[64], char *err, size_t errlen);
/* A new pair; never replaces an existing file. The secret file is 0600. */
int key_generate(const char *secret_path, const char *public_path,
		 char *err, size_t errlen);
void sign_detached(unsigned char sig[SIG_BYTES], const void *msg, size_t n,
		   const unsigned char sk[64]);
/* 0 when sig is sk's signature over msg. */
int sign_verify(const unsigned char sig[SIG_BYTES], const void *msg, size_t n,
		const unsigned char pk[32]);

#endif

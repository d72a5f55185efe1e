/* SPDX-License-Identifier: MIT */
/* SHA-256 of a file or a stream, and its hex form. */
#ifndef KILN_OTA_HASH_H
#define KILN_OTA_HASH_H

#include <stddef.h>
#include <stdint.h>

/* The SHA-256 and size of the file at path; -1 with err. */
int hash_file(const char *path, unsigned char sha[32], uint64_t *size,
	      char *err, size_t errlen);
/* 64 hex digits and a NUL into out[65]. */
void hash_hex(const unsigned char sha[32], char out[65]);

#endif

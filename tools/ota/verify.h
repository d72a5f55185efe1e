/* SPDX-License-Identifier: MIT */
/* A bundle's head: its manifest, checked against its signature. */
#ifndef KILN_OTA_VERIFY_H
#define KILN_OTA_VERIFY_H

#include "bundle.h"
#include "manifest.h"

/*
 * Opens the bundle on fd and reads its manifest and signature. With pk,
 * the signature must be pk's over the manifest's bytes, or nothing of the
 * manifest is believed; without, it is only read (inspection). The text
 * goes to text (MANIFEST_MAX_SIZE + 1 bytes, NUL-terminated) when given.
 * On success the stream stands before the first payload.
 */
int bundle_open_verified(struct bundle_in *b, int fd, const unsigned char *pk,
			 struct manifest *m, char *text, char *err, size_t errlen);
/*
 * Reads the payload the stream is at to its end, hashing it, and compares
 * with the manifest. For checking a bundle without installing it.
 */
int bundle_check_payload(struct bundle_in *b, const struct payload *p,
			 char *err, size_t errlen);

#endif

/* SPDX-License-Identifier: MIT */
/* Writing one copy of the A/B state to its file. */
#ifndef KILN_BOOTSTATE_COPYWRITE_H
#define KILN_BOOTSTATE_COPYWRITE_H

#include <stddef.h>

/*
 * Writes p[0..n) as NAME in dirfd: over its bytes in place when NAME is
 * already a regular file of n bytes, else to TMP, fsynced and renamed
 * over NAME, the directory fsynced. On failure err says what failed;
 * NAME may then hold part of the new bytes (in place) or be as it was.
 */
int copy_write(int dirfd, const char *name, const char *tmp,
	       const unsigned char *p, size_t n, char *err, size_t errlen);

#endif

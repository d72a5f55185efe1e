/* SPDX-License-Identifier: MIT */
/* Replacing a file so that its name never shows a partial content. */
#ifndef KILN_BOOTSTATE_ATOMIC_H
#define KILN_BOOTSTATE_ATOMIC_H

#include <stddef.h>

/*
 * Writes p[0..n) to TMP in dirfd, fsyncs it, renames it over NAME and
 * fsyncs the directory. On failure TMP is removed, NAME is as it was
 * (unless only the final directory fsync failed), err says what failed.
 */
int atomic_write(int dirfd, const char *name, const char *tmp,
		 const unsigned char *p, size_t n, char *err, size_t errlen);

#endif

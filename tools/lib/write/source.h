/* SPDX-License-Identifier: MIT */
/*
 * Reading the source files the tree scan found. The image must hold what
 * the scan saw: a file whose size or mtime moved, or that grew, while it
 * was read is an error, never a silently mixed image.
 */
#ifndef KILN_WRITE_SOURCE_H
#define KILN_WRITE_SOURCE_H

#include <stdbool.h>
#include "inode.h"

/* Opens the file for reading, never following a symlink; -1 with errno. */
int kiln_src_open(const struct kiln_inode *in);
/* After reading: same type, size and mtime as the scan saw. */
bool kiln_src_unchanged(const struct kiln_inode *in, int fd);

#endif

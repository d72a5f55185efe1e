/* SPDX-License-Identifier: MIT */
/* Text files read a line at a time (hints, fs_config, file_contexts). */
#ifndef KILN_COMMON_LINES_H
#define KILN_COMMON_LINES_H

#include <stddef.h>

/* A line without its newline (nor a '\r' before it); non-0 stops. */
typedef int (*kiln_line_fn)(void *ctx, char *line, size_t len,
			    unsigned int no);

/*
 * Calls fn for each line of path, numbered from 1. A file that cannot be
 * opened or read: one line naming it, -1. Else what fn last returned.
 */
int kiln_each_line(const char *path, kiln_line_fn fn, void *ctx);

#endif

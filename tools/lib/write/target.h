/* SPDX-License-Identifier: MIT */
/*
 * Where mkfs writes: a new or existing regular file (through a temporary
 * file renamed into place) or a block device (in place). Symlinks are
 * followed; a directory or any other special file is refused up front.
 */
#ifndef KILN_TARGET_H
#define KILN_TARGET_H

#include <stdbool.h>
#include <stdint.h>
#include "tree.h"

struct kiln_target {
	const char *image;		/* as the user named it */
	char *path;			/* symlinks followed */
	char *tmp;			/* regular files: written here first */
	int fd;
	bool is_blockdev;
	uint64_t dev_size;		/* block devices: bytes */
	struct kiln_file_id skip[2];	/* never packed: tmp, old image */
	unsigned int nr_skip;
};

/* Opens IMAGE for writing; one line and -1 on failure. */
int kiln_target_open(struct kiln_target *t, const char *image);
/*
 * A block device must hold at least bytes (what is already known); with
 * wipe (before the first write, never after one) its old superblock is
 * zeroed, so a build that fails half way leaves none to trust.
 */
int kiln_target_prepare(const struct kiln_target *t, uint64_t bytes,
			bool wipe);
/* ret 0: puts the image in place (rename, sync); else discards it. */
int kiln_target_close(struct kiln_target *t, int ret);
void kiln_target_free(struct kiln_target *t);

#endif

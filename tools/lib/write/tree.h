/* SPDX-License-Identifier: MIT */
/* Scanning a source directory into the in-memory inode tree. */
#ifndef KILN_TREE_H
#define KILN_TREE_H

#include "common/workqueue.h"
#include "inode.h"
#include "kiln.h"

#include <sys/types.h>

/* A file by identity, whatever its name: the image itself is never packed. */
struct kiln_file_id {
	dev_t dev;
	ino_t ino;
};

/* Scans o->source with a job per directory on wq (drained on return). */
int kiln_tree_scan(const struct kiln_mkfs_opts *o, struct kiln_workqueue *wq,
		   struct kiln_tree *tree, const struct kiln_file_id *skip,
		   unsigned int nr_skip);
void kiln_tree_free(struct kiln_tree *tree);
/* Sorts a directory's entries in EROFS order (bytewise, shorter first). */
void kiln_dentries_sort(struct kiln_dentry *d, uint32_t n);

#endif

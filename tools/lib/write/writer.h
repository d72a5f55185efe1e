/* SPDX-License-Identifier: MIT */
/* Writing an image file from a tree. */
#ifndef KILN_WRITER_H
#define KILN_WRITER_H

#include "common/workqueue.h"
#include "kiln.h"
#include "layout.h"

/*
 * Writing an image while its tree is still being scanned: start, visit
 * (a kiln_visit_fn: regular files go to the zwriter as the walk finds
 * them), then finish once the tree is laid out (l NULL: give up). fd
 * stays open; the tree must outlive the writer.
 */
struct kiln_writer;

struct kiln_writer *kiln_writer_start(int fd, const char *image,
				      const struct kiln_mkfs_opts *o,
				      struct kiln_workqueue *wq);
int kiln_writer_visit(void *w, struct kiln_inode *in);
int kiln_writer_finish(struct kiln_writer *w, const struct kiln_tree *t,
		       const struct kiln_xattr_pool *pool,
		       const struct kiln_layout *l);

#endif

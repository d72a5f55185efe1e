/* SPDX-License-Identifier: MIT */
/* Writing a laid-out tree into an open image file. */
#ifndef KILN_WRITER_H
#define KILN_WRITER_H

#include "common/workqueue.h"
#include "kiln.h"
#include "layout.h"

int kiln_write_image(int fd, const char *image, const struct kiln_tree *t,
		     const struct kiln_xattr_pool *pool,
		     const struct kiln_layout *l,
		     const struct kiln_mkfs_opts *o, struct kiln_workqueue *wq);

#endif

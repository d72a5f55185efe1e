/* SPDX-License-Identifier: MIT */
/* --tar=f: a tar entry's POSIX ACLs as the xattrs Linux keeps them in. */
#ifndef KILN_WRITE_TARACL_H
#define KILN_WRITE_TARACL_H

#include <archive_entry.h>
#include <stdbool.h>
#include "inode.h"

/*
 * Adds them to in if store (not with -x -1); either way the mode's group
 * bits become the mask's. -1 after one line when they cannot be stored.
 */
int kiln_tar_acls(struct archive_entry *e, struct kiln_inode *in, bool store);

#endif

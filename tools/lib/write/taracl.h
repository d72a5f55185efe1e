/* SPDX-License-Identifier: MIT */
/* --tar=f: a tar entry's POSIX ACLs as the xattrs Linux keeps them in. */
#ifndef KILN_WRITE_TARACL_H
#define KILN_WRITE_TARACL_H

#include <archive_entry.h>
#include "inode.h"

/* Adds them to in (not for -x -1); -1 after one line when it cannot. */
int kiln_tar_acls(struct archive_entry *e, struct kiln_inode *in);

#endif

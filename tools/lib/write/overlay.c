/* SPDX-License-Identifier: MIT */
/*
 * --ovlfs-strip=1: an image meant to be used on its own, not as an
 * overlayfs layer. Whiteouts (character devices 0:0) are left out and no
 * directory keeps overlayfs' "opaque" mark, as erofs-utils strips them,
 * nor the "origin" mark that only told of whiteouts (a merged layer's).
 */
#include <stdlib.h>
#include <sys/stat.h>
#include "tree.h"
#include "xattr.h"

static bool is_whiteout(const struct kiln_inode *in)
{
	return S_ISCHR(in->mode) && in->rdev == 0;
}

void kiln_tree_ovlfs_strip(struct kiln_tree *t)
{
	for (uint32_t i = 0; i < t->nr_inodes; i++) {
		struct kiln_inode *in = t->inodes[i];
		uint32_t k = 0;

		kiln_xattr_remove(in, "trusted.overlay.opaque");
		kiln_xattr_remove(in, "trusted.overlay.origin");
		for (uint32_t j = 0; j < in->nr_dentries; j++) {
			struct kiln_dentry *d = &in->dentries[j];

			if (!kiln_is_dot(d) && is_whiteout(d->inode)) {
				d->inode->nlink--;
				free(d->name);
				continue;
			}
			in->dentries[k++] = *d;
		}
		in->nr_dentries = k;
	}
	kiln_tree_drop_unlinked(t);
}

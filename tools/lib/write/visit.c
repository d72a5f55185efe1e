/* SPDX-License-Identifier: MIT */
/*
 * The image's order of a tree: breadth first from the root, each
 * directory's entries in their sorted order. The writer sees files in it
 * while the scan still runs, so a wait hook holds each directory until its
 * entries are final.
 */
#include <stdlib.h>
#include <sys/stat.h>
#include "common/util.h"
#include "tree.h"

/*
 * Breadth first from the root, entries in their sorted order, directories
 * once each: the order layout.c gives the inodes. visit sees every other
 * inode at each of its names (a hard link's first is its place).
 */
int kiln_tree_visit_waiting(struct kiln_inode *root,
			    int (*wait)(void *, struct kiln_inode *),
			    void *wctx, kiln_visit_fn *visit, void *ctx)
{
	struct kiln_inode **q = xmalloc(sizeof(*q));
	size_t head = 0, n = 0;
	int ret = 0;

	q[n++] = root;
	while (head < n && !ret) {
		struct kiln_inode *dir = q[head++];

		if (wait && wait(wctx, dir)) {
			ret = -1;
			break;
		}
		for (uint32_t i = 0; i < dir->nr_dentries && !ret; i++) {
			struct kiln_inode *c = dir->dentries[i].inode;

			if (kiln_is_dot(&dir->dentries[i]))
				continue;
			if (!S_ISDIR(c->mode)) {
				ret = visit(ctx, c);
				continue;
			}
			if (!(n & (n - 1)))
				q = xrealloc(q, 2 * n * sizeof(*q));
			q[n++] = c;
		}
	}
	free(q);
	return ret;
}

int kiln_tree_visit(struct kiln_tree *t, kiln_visit_fn *visit, void *ctx)
{
	return kiln_tree_visit_waiting(t->root, NULL, NULL, visit, ctx);
}

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

/*
 * Called for every inode but directories, at each of its names, in the
 * image's order (breadth first, entries sorted): returns -1 to stop.
 */
typedef int kiln_visit_fn(void *ctx, struct kiln_inode *in);
/*
 * Scans o->source with a job per directory on wq (all of them ended on
 * return), visiting each directory's inodes as soon as it is scanned.
 */
int kiln_tree_scan(const struct kiln_mkfs_opts *o, struct kiln_workqueue *wq,
		   struct kiln_tree *tree, const struct kiln_file_id *skip,
		   unsigned int nr_skip, kiln_visit_fn *visit, void *ctx);
/* The same visit over a complete tree (a tar's). */
int kiln_tree_visit(struct kiln_tree *t, kiln_visit_fn *visit, void *ctx);
/* The visit, with wait (if not NULL) called before each directory's turn. */
int kiln_tree_visit_waiting(struct kiln_inode *root,
			    int (*wait)(void *, struct kiln_inode *),
			    void *wctx, kiln_visit_fn *visit, void *ctx);
/* Builds the tree from the tar o->source (NULL or "-": stdin), --tar=f. */
int kiln_tar_scan(const struct kiln_mkfs_opts *o, struct kiln_tree *tree);
/* Builds the tree of the EROFS images o->layers merged (layers.c). */
int kiln_layers_scan(const struct kiln_mkfs_opts *o, struct kiln_tree *tree);
void kiln_tree_free(struct kiln_tree *tree);
/*
 * Takes the tree over until the process exits, unfreed but reachable (a
 * leak checker stays quiet); one tree at a time, the one before is freed.
 */
void kiln_tree_keep(struct kiln_tree *tree);
/* Appends in to the tree's inodes (callers serialise). */
void kiln_tree_add(struct kiln_tree *t, struct kiln_inode *in);
/* Frees the inodes no name leads to any more (nlink 0), before layout. */
void kiln_tree_drop_unlinked(struct kiln_tree *t);
/*
 * --ovlfs-strip=1: leaves out overlayfs whiteouts (character devices 0:0)
 * and every "trusted.overlay.opaque" mark, for an image used on its own.
 */
void kiln_tree_ovlfs_strip(struct kiln_tree *t);
/*
 * The owner and group the image gives a file: --force-* over --all-root
 * over the file's own, plus the offsets (64-bit: the sum may not fit).
 */
void kiln_image_ids(const struct kiln_mkfs_opts *o, uint64_t src_uid,
		    uint64_t src_gid, uint64_t *uid, uint64_t *gid);
/* --exclude-path / --exclude-regex: relpath (from the source) left out. */
bool kiln_excluded(const struct kiln_mkfs_opts *o, const char *relpath);
/* Its first path, relative to the source, without a leading '/'. */
const char *kiln_inode_relpath(const struct kiln_mkfs_opts *o,
			       const struct kiln_inode *in);
/* Sorts a directory's entries in EROFS order (bytewise, shorter first). */
void kiln_dentries_sort(struct kiln_dentry *d, uint32_t n);

#endif

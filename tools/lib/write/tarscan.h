/* SPDX-License-Identifier: MIT */
/*
 * --tar=f, inside: the tree a tar describes, as `tar -xp` would make it
 * (tarpath.c), filled in entry by entry from libarchive (tartree.c).
 */
#ifndef KILN_WRITE_TARSCAN_H
#define KILN_WRITE_TARSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <archive.h>
#include <archive_entry.h>
#include "inode.h"
#include "kiln.h"

/*
 * One name in the tree: a directory and its dentry. Names are found by
 * (directory, name), so a deep path costs its own length, never one copy
 * of every ancestor's path.
 */
struct tar_node {
	struct kiln_inode *dir;		/* NULL: a free slot */
	uint32_t slot;
};

/* A directory and where its ".." points, for the finish. */
struct tar_dir {
	struct kiln_inode *in, *parent;
};

struct tarscan {
	const struct kiln_mkfs_opts *o;
	const char *name;		/* of the tar, for messages */
	int tar_fd;			/* --tar=i: the tar, if it is a file */
	struct kiln_tree *tree;
	struct tar_node *nodes;		/* open addressing */
	size_t cap, used;
	struct tar_dir *dirs;
	size_t nr_dirs;
};

/* One line naming the tar and path (may be NULL); returns -1. */
int tar_err(const struct tarscan *ts, const char *path, const char *what);
/* "./a//b/" -> "a/b", "" for the root; NULL if it climbs out with "..". */
char *tar_normalize(const char *p);
/* A new inode in the tree; path names it in messages. */
struct kiln_inode *tar_inode_new(struct tarscan *ts, const char *path,
				 uint32_t mode, uint64_t uid, uint64_t gid,
				 int64_t mtime, uint32_t nsec);
/* Puts in at name (len bytes) in dir: new, or in place of a file. */
int tar_place(struct tarscan *ts, struct kiln_inode *dir, const char *name,
	      size_t len, struct kiln_inode *in, const char *path);
/* The root, made at first need. */
struct kiln_inode *tar_root(struct tarscan *ts, int64_t mtime, uint32_t nsec);
/*
 * The directory holding path's last component (*base); with make, the
 * directories on the way that the tar never named are made.
 */
struct kiln_inode *tar_walk(struct tarscan *ts, const char *path, bool make,
			    int64_t mtime, uint32_t nsec, const char **base);
/* The node of an existing path (not the root), or NULL. */
struct tar_node *tar_lookup(struct tarscan *ts, const char *path);
struct tar_node *tar_node_find(struct tarscan *ts,
			       const struct kiln_inode *dir,
			       const char *name, size_t len);
const struct kiln_dentry *tar_node_dentry(const struct tar_node *n);
/* An explicit entry for an existing directory: it takes the metadata. */
void tar_dir_update(struct kiln_inode *dir, struct kiln_inode *in);
/*
 * Whether got, the bytes of data libarchive handed over, is what the
 * entry's sparse map's runs (or else its size) come to: libarchive reads
 * a map naming more than the body holds as holes, with no error. One line
 * and -1 if not.
 */
int tar_check_data_len(const struct tarscan *ts, struct archive_entry *e,
		       const struct kiln_inode *in, uint64_t got);
/* ".", "..", order and overlayfs marks; replaced inodes dropped. */
void tar_finish(struct tarscan *ts);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Extended attributes: read from the source, deduplicated across the tree,
 * split into the shared pool (pairs used by two or more inodes, stored once
 * and referenced by a 4-byte id) and per-inode inline entries.
 */
#ifndef KILN_XATTR_H
#define KILN_XATTR_H

#include "inode.h"

struct kiln_xattr_item {
	uint8_t index;			/* EROFS_XATTR_INDEX_* */
	uint8_t name_len;		/* stored name: full name minus prefix */
	uint16_t value_size;
	char *name;
	uint8_t *value;
	uint32_t refs;			/* inodes using this pair */
	uint32_t shared_id;		/* valid when shared */
	bool shared;
};

struct kiln_xattr_pool {
	struct kiln_xattr_item **items;	/* shared items in id order */
	uint32_t nr_items;
	uint32_t size;			/* bytes of the pool */
};

/*
 * Adds one pair to inode (path names it in messages). A name without an
 * EROFS prefix is skipped with a warning; -1 when it cannot be stored.
 */
int kiln_xattr_add(struct kiln_inode *inode, const char *path,
		   const char *name, const void *value, size_t len);
/* Stores every name that begins with one of the long prefixes by it. */
void kiln_xattrs_long_prefixes(struct kiln_tree *t, const char *const *pfx,
			       unsigned int n);
/* The prefix table (out may be NULL); returns its size in bytes. */
size_t kiln_xattr_prefixes_encode(const char *const *pfx, unsigned int n,
				  uint8_t *out);
/* Moves src's pairs to dst, each replacing any of dst's by that name. */
void kiln_xattrs_move(struct kiln_inode *dst, struct kiln_inode *src);
/* Removes the pair named name (a full name, "trusted.x"), if any. */
void kiln_xattr_remove(struct kiln_inode *inode, const char *name);
/* Reads the xattrs of one source path (not following symlinks). */
int kiln_xattrs_read(const char *path, struct kiln_inode *inode);

/*
 * Merges equal pairs of all inodes, shares those more than tolerance
 * inodes carry, orders each inode's list (shared first, then inline) and
 * sets xattr_isize.
 */
int kiln_xattrs_share(struct kiln_tree *tree, struct kiln_xattr_pool *pool,
		      long tolerance);

/*
 * The xattr body's size if none of its pairs were shared: what sharing,
 * long prefixes and --ovlfs-strip can only shrink.
 */
uint32_t kiln_xattr_ibody_max(const struct kiln_inode *inode);
/* Assigns pool ids once the pool's byte position in the image is known. */
void kiln_xattr_pool_place(struct kiln_xattr_pool *pool, uint64_t pos);
void kiln_xattr_pool_encode(const struct kiln_xattr_pool *pool, uint8_t *out);
void kiln_xattr_ibody_encode(const struct kiln_inode *inode, uint8_t *out);
/* Releases one inode's pairs; an item goes with its last user. */
void kiln_xattrs_drop(struct kiln_inode *inode);
void kiln_xattrs_free(struct kiln_tree *tree, struct kiln_xattr_pool *pool);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The writer's in-memory model of an image: one kiln_inode per EROFS inode
 * (hard links share one), directories holding their entries sorted the way
 * EROFS stores them, "." and ".." included.
 */
#ifndef KILN_INODE_H
#define KILN_INODE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include "format/erofs_fs.h"

struct kiln_xattr_item;
struct kiln_spool;
struct kiln_fragments;
struct kiln_extent;
struct kiln_layerfile;
struct kiln_layerdata;

/* One name/value pair; equal pairs of all inodes share one item. */
struct kiln_xattr {
	struct kiln_xattr_item *item;
};

struct kiln_dentry {
	char *name;
	uint16_t namelen;
	struct kiln_inode *inode;
};

/*
 * A file whose data stays where it is, on another device the image names
 * (--tar=i: the tar; merged layers: each layer's image): runs of the
 * file, in order, and where each lies on the device. A sparse file has
 * several, with holes between.
 */
struct kiln_devrun {
	uint64_t off, len;		/* bytes of the file */
	uint64_t devoff;		/* where they are on the device */
};

struct kiln_devmap {
	uint16_t device;		/* 1.. in the device table */
	uint32_t nr;
	struct kiln_devrun run[];
};

/* A device of the device table: --tar=i's tar, or a merged layer. */
struct kiln_device {
	uint64_t blocks;
	uint8_t tag[64];		/* what names it, or zeros */
};

/*
 * Grouped by size within each part, to waste little on padding: the linux
 * corpus has 83,732 inodes (248 bytes each, 288 before).
 */
struct kiln_inode {
	/* what the source tree says */
	int64_t mtime;
	uint64_t size;
	char *srcpath;			/* first path it was found at */
	const struct kiln_spool *spool;	/* --tar=f: data is in the spool, */
	uint64_t spool_off;		/* from here */
	const struct kiln_fragments *frags;	/* the packed inode's content */
	uint64_t fs_caps;		/* Android fs_config's capabilities */
	struct kiln_devmap *devmap;	/* data left on another device */
	struct kiln_layerfile *lfile;	/* --clean=data: a merged layer's file
					   the data is copied from */
	struct timespec src_mtim;	/* to notice a file changing under us */
	char *symlink;			/* target of a symlink (size bytes) */
	struct kiln_dentry *dentries;	/* directories: sorted, with . and .. */
	struct kiln_xattr *xattrs;	/* sorted by name */
	uint32_t mode;
	uint32_t uid, gid;
	uint32_t mtime_nsec;
	uint32_t nlink;			/* names in the image (dirs: 2 + subdirs) */
	uint32_t nlink_max;		/* the source's, if scanned: no fewer */
	uint32_t rdev;			/* encoded device number */
	uint32_t nr_dentries;
	uint32_t nr_xattrs;
	bool scanned;			/* dir: its entries are final */
	bool whiteouts;			/* dir: holds whiteouts --aufs made */
	bool opaque;			/* dir: --aufs found .wh..wh..opq */

	/* what the layout decides */
	uint64_t nid;
	uint64_t frag_off;		/* its fragment's place in the packed
					   inode (the last extent's, or all) */
	struct kiln_extent *zext;	/* zwriter: extents, for the index */
	uint8_t *rec;			/* where its record is built */
	uint32_t ino;
	uint32_t xattr_isize;		/* bytes of the xattr body */
	uint32_t startblk;		/* flat layouts: first data block */
	uint32_t zblocks;		/* compressed: blocks of its pclusters */
	uint32_t zbase;			/* compressed: inode, xattrs and index
					   (a bound until kiln_zinode_finish) */
	uint32_t base_max;		/* zwriter: inode + xattrs, at most */
	uint32_t ztail_room;		/* zwriter: for an inline tail pcluster */
	uint32_t rec_tail;		/* zwriter: where rec holds the tail */
	uint32_t nr_zext;
	uint32_t zpclustersize;		/* zwriter: its pclusters at most */
	uint32_t inline_size;		/* tail bytes after xattrs or index */
	uint32_t rec_size;		/* of the record; compressed: once done */
	uint16_t chunkformat;		/* chunk-based: i_u, once written */
	uint8_t datalayout;
	uint8_t nr_shared;		/* leading xattrs that are shared */
	uint8_t zcfg;			/* zwriter: algorithm (kiln_zcfg) */
	bool extended;
	bool chunked;			/* --chunksize: written by chunked.c,
					   chunk-based or flat if smaller */
	bool zwritten;			/* data through the zwriter: compressed,
					   or flat if small or if that does
					   not pay (see datalayout) */
	bool no_inline;			/* tail in a block (-E noinline_data) */
	bool packed_inode;		/* -E fragments: the packed inode */
	bool frag_whole;		/* compressed: all of it a fragment */
	bool ordered;			/* layout: already given a place */
};

struct kiln_tree {
	struct kiln_inode *root;
	struct kiln_spool *spool;	/* --tar=f: where file data is */
	struct kiln_device *devices;	/* what devmaps name: 1.. */
	uint16_t nr_devices;
	struct kiln_layerdata *layerdata;	/* --clean=data: the layers */
	struct kiln_inode **inodes;	/* every inode, in scan order */
	uint32_t nr_inodes;
};

static inline bool kiln_is_dot(const struct kiln_dentry *d)
{
	return d->name[0] == '.' && (d->namelen == 1 ||
		(d->namelen == 2 && d->name[1] == '.'));
}

/* Stored compressed, with a map (not flat, even if given to the zwriter). */
static inline bool kiln_inode_zmapped(const struct kiln_inode *in)
{
	return in->datalayout == EROFS_INODE_COMPRESSED_FULL ||
	       in->datalayout == EROFS_INODE_COMPRESSED_COMPACT;
}

#endif

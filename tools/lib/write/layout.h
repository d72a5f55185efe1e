/* SPDX-License-Identifier: MIT */
/*
 * Layout: decides what can be decided before a byte is written. The head
 * of the image holds what the options alone size: the superblock, the
 * compression configurations and the long xattr prefix table. Compressed
 * data follows it, then flat data blocks (placed once the compressed data
 * is written), then the metadata area (records.h): the shared xattr pool,
 * the root's record (its nid is 16-bit) and every other record. Nids count
 * from that area (meta_blkaddr). All decisions depend only on the tree, so
 * the image is reproducible.
 */
#ifndef KILN_LAYOUT_H
#define KILN_LAYOUT_H

#include "inode.h"
#include "kiln.h"
#include "xattr.h"

struct kiln_layout {
	unsigned int blkszbits;
	uint32_t blksz;
	uint64_t epoch;			/* mtime of compact inodes */
	uint32_t fixed_nsec;
	uint64_t head_blocks;		/* blocks [0, head_blocks): the head */
	uint64_t flat_blocks;		/* blocks of flat data, wherever placed */
	struct kiln_inode **order;	/* inodes in nid order, root first */
	uint32_t nr;
	struct kiln_inode *packed;	/* -E fragments: last in order, in no
					   directory; its size comes last */
};

int kiln_layout(struct kiln_tree *tree, struct kiln_xattr_pool *pool,
		const struct kiln_mkfs_opts *o, struct kiln_layout *l);
/*
 * Blocks of the head; where not NULL, *prefix_pos: the prefix table's
 * offset, *devt_pos: the device table's (--tar=i).
 */
uint64_t kiln_head_blocks(const struct kiln_mkfs_opts *o,
			  uint64_t *prefix_pos, uint64_t *devt_pos);
/*
 * The long xattr prefix table is at the start of the packed inode's
 * content when there is one (-E fragments): the kernel reads it there.
 */
static inline bool kiln_prefixes_packed(const struct kiln_mkfs_opts *o)
{
	return o->nr_xattr_prefixes && o->compress && o->compr.fragments;
}
/*
 * Devices in the device table: --tar=i's tar, or what the layers merged
 * bring (each itself, or its own devices), counted by mkfs's option check
 * so the head can be laid out before the scan.
 */
static inline unsigned int kiln_nr_devices(const struct kiln_mkfs_opts *o)
{
	return o->tar_index ? 1 : o->nr_devices;
}
/* Gives flat data its blocks from *blk on; *blk ends after them. */
int kiln_layout_place_flat(const struct kiln_layout *l, uint64_t *blk);
/* Superblock extension: the compression configuration records. */
size_t kiln_compr_cfgs_encode(const struct kiln_mkfs_opts *o, uint8_t *out);
bool kiln_compr_needs_cfgs(const struct kiln_mkfs_opts *o);
uint16_t kiln_compr_algs(const struct kiln_mkfs_opts *o);
void kiln_layout_free(struct kiln_layout *l);
uint32_t kiln_inode_isize(const struct kiln_inode *in);

/* Inode plus its xattr body: where inline data or the map header follow. */
static inline uint32_t kiln_inode_base_size(const struct kiln_inode *in)
{
	return kiln_inode_isize(in) + in->xattr_isize;
}

/*
 * Whether a flat inode's partial last block (tail bytes) goes inline after
 * its inode and xattrs (base bytes): the tail must lie in one block. With
 * the inode in that block too, base + tail <= blksz; a record may also
 * straddle two blocks (meta_alloc_straddle), which needs only
 * base % 32 + tail <= blksz (and base < blksz). The root's record is kept whole.
 */
static inline bool kiln_tail_inlines(uint32_t base, uint32_t tail,
				     uint32_t blksz, bool may_straddle)
{
	return tail && (base + tail <= blksz ||
			(may_straddle && base < blksz &&
			 base % 32 + tail <= blksz));
}

/*
 * Whether a tail inlines whatever the base turns out to be, as long as it
 * is at most base_max: the straddle rule's base % 32 is at most 28 (bases
 * are multiples of 4), and the other test only gets easier.
 */
static inline bool kiln_tail_inlines_max(uint32_t base_max, uint32_t tail,
					 uint32_t blksz)
{
	return tail && (base_max + tail <= blksz ||
			(base_max < blksz && 28 + tail <= blksz));
}

/*
 * A bound on inode + xattr bytes known as soon as the inode is scanned,
 * before the epoch and xattr sharing are: the zwriter decides with it.
 */
uint32_t kiln_inode_base_max(const struct kiln_inode *in,
			     const struct kiln_mkfs_opts *o);
/* And from below: compact unless every inode is extended, no xattrs. */
uint32_t kiln_inode_base_min(const struct kiln_mkfs_opts *o);

/* "image too large" with the limit for this block size; returns -1. */
int kiln_err_too_large(unsigned int blkszbits);

#endif

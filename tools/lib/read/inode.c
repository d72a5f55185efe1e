/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include "format/ondisk.h"
#include "reader.h"
#include "common/util.h"

static bool valid_type(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR:
	case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		return true;
	}
	return false;
}

static void decode(const struct kiln_image *img, const uint8_t *raw,
		   struct kiln_rinode *ri)
{
	if (ri->extended) {
		struct erofs_inode_extended e;

		erofs_inode_extended_decode(&e, raw);
		ri->mode = e.i_mode;
		ri->nlink = e.i_nlink;
		ri->uid = e.i_uid;
		ri->gid = e.i_gid;
		ri->size = e.i_size;
		ri->mtime = (int64_t)e.i_mtime;
		ri->mtime_nsec = e.i_mtime_nsec;
		ri->iu = e.i_u;
		ri->startblk_hi = e.i_nb;
		ri->xattr_icount = e.i_xattr_icount;
	} else {
		struct erofs_inode_compact c;

		erofs_inode_compact_decode(&c, raw);
		ri->mode = c.i_mode;
		ri->nlink = c.i_nlink;
		ri->uid = c.i_uid;
		ri->gid = c.i_gid;
		ri->size = c.i_size;
		/* the image's time, plus i_mtime since Linux 6.15 (older
		 * kernels ignore it: Kiln's mkfs writes 0) */
		ri->mtime = (int64_t)(img->sb.epoch + c.i_mtime);
		ri->mtime_nsec = img->sb.fixed_nsec;
		ri->iu = c.i_u;
		ri->xattr_icount = c.i_xattr_icount;
	}
}

/* Flat data must lie inside the image; inline tails inside one block. */
static int check_flat(const struct kiln_image *img, struct kiln_rinode *ri,
		      struct kiln_diag *d)
{
	uint64_t nblocks = (ri->size + img->blksz - 1) >> img->blkszbits;
	uint64_t blocks = nblocks, tail;

	/* the kernel takes i_nb as the start block's high 16 bits */
	if (ri->startblk_hi) {
		kiln_diag_set(d, "start block has high bits 0x%x (48-bit "
			      "addresses, beyond the image)", ri->startblk_hi);
		return -1;
	}

	if (ri->layout == EROFS_INODE_FLAT_INLINE && nblocks) {
		blocks--;
		tail = ri->size - (blocks << img->blkszbits);
		if ((ri->tail & (img->blksz - 1)) + tail > img->blksz) {
			kiln_diag_set(d, "inline data (%llu bytes at offset "
				      "%llu) crosses a block boundary",
				      (unsigned long long)tail,
				      (unsigned long long)ri->tail);
			return -1;
		}
		if (ri->tail + tail > img->size) {
			kiln_diag_set(d, "inline data at offset %llu is beyond "
				      "the end of the image",
				      (unsigned long long)ri->tail);
			return -1;
		}
	}
	/* in blocks, so that nothing overflows whatever the inode says */
	if (blocks && ri->iu != EROFS_NULL_ADDR &&
	    (blocks > img->size >> img->blkszbits ||
	     ri->iu > (img->size >> img->blkszbits) - blocks)) {
		kiln_diag_set(d, "data blocks %u..%llu are beyond the end of "
			      "the image", ri->iu,
			      (unsigned long long)(ri->iu + blocks - 1));
		return -1;
	}
	return 0;
}

static int check_layout(const struct kiln_image *img, struct kiln_rinode *ri,
			struct kiln_diag *d)
{
	bool dev = S_ISCHR(ri->mode) || S_ISBLK(ri->mode) ||
		   S_ISFIFO(ri->mode) || S_ISSOCK(ri->mode);

	if (dev) {
		if (ri->size) {
			kiln_diag_set(d, "special file has size %llu",
				      (unsigned long long)ri->size);
			return -1;
		}
		return 0;
	}
	if (S_ISLNK(ri->mode) && (ri->size == 0 || ri->size > 4095)) {
		kiln_diag_set(d, "symlink target of %llu bytes",
			      (unsigned long long)ri->size);
		return -1;
	}
	switch (ri->layout) {
	case EROFS_INODE_FLAT_PLAIN:
	case EROFS_INODE_FLAT_INLINE:
		return check_flat(img, ri, d);
	case EROFS_INODE_COMPRESSED_FULL:
	case EROFS_INODE_COMPRESSED_COMPACT:
		if (!img->algs) {
			kiln_diag_set(d, "compressed inode in an image "
				      "without compression");
			return -1;
		}
		return 0;
	case EROFS_INODE_CHUNK_BASED:
		/*
		 * Without the chunked-file feature bit too: the kernel reads
		 * them (it checks no bit), and erofs-utils' --tar=i writes
		 * them so.
		 */
		return 0;
	}
	kiln_diag_set(d, "unknown data layout %u", ri->layout);
	return -1;
}

int kiln_inode_load(const struct kiln_image *img, uint64_t nid,
		    struct kiln_rinode *ri, struct kiln_diag *d)
{
	uint8_t raw[EROFS_INODE_EXTENDED_SIZE];
	uint16_t format;
	uint32_t isize;

	memset(ri, 0, sizeof(*ri));
	ri->nid = nid;
	if (nid > (img->size >> EROFS_ISLOT_BITS)) {
		kiln_diag_set(d, "nid %llu is beyond the end of the image",
			      (unsigned long long)nid);
		return -1;
	}
	ri->pos = img->meta_base + (nid << EROFS_ISLOT_BITS);
	if (kiln_image_read(img, raw, ri->pos, EROFS_INODE_COMPACT_SIZE, d))
		return -1;
	format = (uint16_t)(raw[0] | raw[1] << 8);
	if (format & ~0xfu) {
		kiln_diag_set(d, "inode format 0x%x has unknown bits", format);
		return -1;
	}
	ri->extended = format & 1;
	ri->layout = (uint8_t)(format >> EROFS_I_DATALAYOUT_BIT);
	isize = ri->extended ? EROFS_INODE_EXTENDED_SIZE :
			       EROFS_INODE_COMPACT_SIZE;
	if (ri->extended &&
	    kiln_image_read(img, raw, ri->pos, EROFS_INODE_EXTENDED_SIZE, d))
		return -1;
	decode(img, raw, ri);
	if (ri->size > INT64_MAX) {	/* off_t is signed */
		kiln_diag_set(d, "size %llu is not a file size",
			      (unsigned long long)ri->size);
		return -1;
	}
	if (!valid_type(ri->mode)) {
		kiln_diag_set(d, "invalid file type in mode 0%o", ri->mode);
		return -1;
	}
	ri->xattr_size = erofs_xattr_ibody_size(ri->xattr_icount);
	ri->tail = ri->pos + isize + ri->xattr_size;
	if (ri->tail > img->size) {
		kiln_diag_set(d, "extended attributes (%u bytes) run past the "
			      "end of the image", ri->xattr_size);
		return -1;
	}
	return check_layout(img, ri, d);
}

/* SPDX-License-Identifier: MIT */
/*
 * The reader: inodes, extended attributes, directories and file data of an
 * opened image (image.h). Every function checks what it reads and fails
 * with a one-line diagnosis instead of trusting the image.
 */
#ifndef KILN_READER_H
#define KILN_READER_H

#include <stddef.h>
#include <stdint.h>
#include "image.h"

/* Limits that keep a hostile image from costing unbounded memory. */
#define KILN_MAX_DIR_SIZE	(64u << 20)
#define KILN_MAX_XATTR_BODY	65536u
#define KILN_MAX_EXTENT_LEN	Z_EROFS_PCLUSTER_MAX_DSIZE

struct kiln_rinode {
	uint64_t nid;
	uint64_t pos;			/* byte offset of the inode */
	uint8_t layout;			/* enum erofs_datalayout */
	bool extended;
	uint32_t mode, nlink, uid, gid;
	uint64_t size;
	int64_t mtime;
	uint32_t mtime_nsec;
	uint32_t iu;			/* start block, block count, rdev... */
	uint16_t startblk_hi;		/* extended inodes' i_nb */
	uint16_t xattr_icount;
	uint32_t xattr_size;		/* bytes of the xattr body */
	uint64_t tail;			/* after inode and xattrs */
};

int kiln_inode_load(const struct kiln_image *img, uint64_t nid,
		    struct kiln_rinode *ri, struct kiln_diag *d);

/* Calls fn for each xattr with its full name ("user.foo"). */
typedef int (*kiln_xattr_fn)(void *arg, const char *name, const void *value,
			     size_t len);
int kiln_xattr_each(const struct kiln_image *img, const struct kiln_rinode *ri,
		    kiln_xattr_fn fn, void *arg, struct kiln_diag *d);

/* A piece of a file: where its bytes come from. */
enum kiln_ext_kind {
	KILN_EXT_HOLE,			/* zeros, nothing stored */
	KILN_EXT_RAW,			/* bytes as they are at pa */
	KILN_EXT_PLAIN,			/* an uncompressed pcluster */
	KILN_EXT_ZIP,			/* a compressed pcluster */
	KILN_EXT_FRAG,			/* packed inode content from pa */
};

struct kiln_fext {
	uint64_t la, llen;		/* logical range */
	uint64_t pa;			/* physical byte offset */
	uint32_t plen;			/* bytes stored there */
	uint8_t kind, alg;
	bool interlaced;		/* PLAIN: rotated by la % blksz */
	bool partial;			/* ZIP: the first llen bytes of more */
	bool meta;			/* the inline tail, in the inode's
					   block: no pcluster of its own */
};

/* A growable list of extents, reused from file to file. */
struct kiln_extents {
	struct kiln_fext *e;
	size_t nr, cap;
};

/* Room for one more extent at the end of l, or NULL. */
struct kiln_fext *kiln_extents_add(struct kiln_extents *l, struct kiln_diag *d);

/*
 * A file is mapped a window of extents at a time, never whole: an index
 * can name far more extents than the image has bytes (chunks or lclusters
 * all in one block, holes of any size), so a list of a whole file would
 * cost memory the image does not bound. This is where the next window
 * starts; zeroed, the file's start.
 */
struct kiln_fpos {
	uint64_t la;			/* the next byte to map */
	uint64_t lcn;			/* compressed: the head lcluster there */
	uint64_t next;			/* compressed, inside a fragment: the
					   record after its extent (0: none) */
};

/* The most extents in one window (callers may ask for fewer). */
#define KILN_WINDOW_EXTENTS	512u

/*
 * Replaces l's contents with the file's next extents from *pos, in order:
 * at most max_nr of them, fewer once their data (holes not counted)
 * reaches max_bytes; every physical range is inside the image. *pos moves
 * past them; the windows together cover [0, size) exactly, and the file is
 * done when pos->la == size. On error *pos stays where the window started.
 * A call with pos->la == size still checks the file's map header.
 */
int kiln_file_map(const struct kiln_image *img, const struct kiln_rinode *ri,
		  struct kiln_fpos *pos, struct kiln_extents *l, size_t max_nr,
		  uint64_t max_bytes, struct kiln_diag *d);
/* Compressed inodes (zmap.c); called by kiln_file_map, same contract. */
int kiln_zmap(const struct kiln_image *img, const struct kiln_rinode *ri,
	      struct kiln_fpos *pos, struct kiln_extents *l, size_t max_nr,
	      uint64_t max_bytes, struct kiln_diag *d);

/* Per-thread decompression state (extent.c). */
struct kiln_dctx;
struct kiln_dctx *kiln_dctx_new(const struct kiln_image *img);
void kiln_dctx_free(struct kiln_dctx *x);
/* "lz4", "lzma", "deflate" or "zstd": an EROFS_ALG_* by name */
const char *kiln_alg_name(unsigned int alg);
/*
 * Produces the extent's llen bytes in out (which must hold llen), reading
 * its stored bytes through x's buffer: -1 if they do not decode to exactly
 * that length.
 */
int kiln_fext_read(const struct kiln_image *img, struct kiln_dctx *x,
		   const struct kiln_fext *e, uint8_t *out,
		   struct kiln_diag *d);

/*
 * Fragments (fragment.c): the packed inode, loaded at open when the image
 * has one; len bytes of its content from off, through x's cache.
 */
int kiln_packed_load(struct kiln_image *img, struct kiln_diag *d);
int kiln_fragment_read(const struct kiln_image *img, struct kiln_dctx *x,
		       uint64_t off, uint64_t len, uint8_t *out,
		       struct kiln_diag *d);
/*
 * Where the window holding byte la starts (zmap.c): the head of its
 * extent, or la itself in a file that is all one fragment.
 */
int kiln_zmap_seek(const struct kiln_image *img, const struct kiln_rinode *ri,
		   uint64_t la, struct kiln_fpos *pos, struct kiln_diag *d);

/* Whole content of a small inode (directory, symlink), malloc'd. */
int kiln_read_all(const struct kiln_image *img, const struct kiln_rinode *ri,
		  struct kiln_dctx *x, uint64_t max, uint8_t **out,
		  struct kiln_diag *d);

/* A directory's entries, checked; fn stops the walk by returning non-0. */
typedef int (*kiln_dirent_fn)(void *arg, const char *name, size_t len,
			      uint64_t nid, uint8_t ftype);
int kiln_dir_each(const struct kiln_image *img, const struct kiln_rinode *ri,
		  const uint8_t *data, kiln_dirent_fn fn, void *arg,
		  struct kiln_diag *d);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Reading the source files the tree scan found: a file of the source
 * directory, or a range of the spool that --tar=f copied a tar's files to.
 * The image must hold what the scan saw: a file whose size or mtime moved,
 * or that grew, while it was read is an error, never a silently mixed image.
 */
#ifndef KILN_WRITE_SOURCE_H
#define KILN_WRITE_SOURCE_H

#include <stdbool.h>
#include <sys/types.h>
#include "inode.h"

/*
 * An unlinked temporary file in $TMPDIR: --tar=f's copy of every file's
 * data, or -E fragments' packed inode content before it is compressed.
 */
struct kiln_spool {
	int fd;
	uint64_t end;			/* the next file goes here */
};

/* Opens an empty spool; on failure prints one line and returns -1. */
int kiln_spool_open(struct kiln_spool *sp);

/*
 * A file's data, opened: offsets are the file's, whatever holds it (a
 * file, the tar spool, a file of a merged layer (layerdata.h), or for the
 * packed inode the pieces of other files it is made of: fragments.h).
 */
struct kiln_src {
	int fd;				/* -1 for the packed inode */
	uint64_t base;			/* where the file starts in fd */
	uint64_t size;
	const struct kiln_fragments *frags;
	struct kiln_lread *layer;	/* --clean=data: a merged layer's file */
	const char *failed;		/* a piece's file that failed a read,
					   or what a layer's read found */
};

/* Opens the file for reading, never following a symlink; -1 with errno. */
int kiln_src_open(const struct kiln_inode *in, struct kiln_src *src);
ssize_t kiln_src_pread(struct kiln_src *src, void *buf, size_t n,
		       uint64_t off);
/* The file to name in an error about src: in's, or a failed piece's. */
const char *kiln_src_name(const struct kiln_src *src,
			  const struct kiln_inode *in);
/*
 * lseek's SEEK_DATA / SEEK_HOLE within the file: -1 with ENXIO when no
 * data is left, and a hole at most at the end.
 */
off_t kiln_src_seek(const struct kiln_src *src, uint64_t off, int whence);
/* After reading: same type, size and mtime as the scan saw. */
bool kiln_src_unchanged(const struct kiln_inode *in, struct kiln_src *src);
void kiln_src_close(struct kiln_src *src);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * --clean=data: a merge that copies the layers' file data into the merged
 * image instead of pointing at it. The layers stay open until the image is
 * written; the workers read a file of a layer as they read a source file
 * (source.h), decoding it with the reader, so a layer may be compressed,
 * have fragments or inline tails, and the merged image is compressed (or
 * deduplicated, or chunk-based) as any other.
 */
#ifndef KILN_WRITE_LAYERDATA_H
#define KILN_WRITE_LAYERDATA_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "read/reader.h"

struct kiln_layerdata;

/* A regular file of a layer: what a merged inode's data is read from. */
struct kiln_layerfile {
	struct kiln_layerdata *ld;
	const struct kiln_image *img;
	unsigned int layer;		/* index in ld, for names */
	struct kiln_rinode ri;
};

/*
 * Takes the nr opened layer images (and the array), named by names, for
 * reading until kiln_layerdata_free. Each image's size and mtime now are
 * what every later read is checked against.
 */
struct kiln_layerdata *kiln_layerdata_new(struct kiln_image *imgs,
					  char *const *names, unsigned int nr);
void kiln_layerdata_free(struct kiln_layerdata *ld);

/* One file being read; offsets are the file's. */
struct kiln_lread;

/* path: the file's, for errors; NULL with errno on failure. */
struct kiln_lread *kiln_lread_open(const struct kiln_layerfile *lf,
				   const char *path);
/*
 * Reads n bytes from off (fewer only at the end of the file): -1 with
 * errno EIO when the layer does not decode, and *failed then names the
 * layer, the file and what is wrong, in one line that lives as long as
 * the layers.
 */
ssize_t kiln_lread_pread(struct kiln_lread *r, void *buf, size_t n,
			 uint64_t off, const char **failed);
/* SEEK_DATA / SEEK_HOLE over the file's holes, as lseek does. */
off_t kiln_lread_seek(struct kiln_lread *r, uint64_t off, int whence);
/*
 * The layer image still has the size and mtime it had when opened; if
 * not, *failed names it (the layer, not the file in it).
 */
bool kiln_lread_unchanged(const struct kiln_lread *r, const char **failed);
void kiln_lread_close(struct kiln_lread *r);

#endif

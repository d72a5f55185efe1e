/* SPDX-License-Identifier: MIT */
/*
 * --tar=i: an index of a tar. Each regular file's data is left where it
 * is, on device 1, the tar itself (512-byte blocks, as a tar's records
 * are): devchunks.c makes its chunk indexes. The kernel reads the
 * tar through -o device=TAR, or, mounted without it, from the image's own
 * blocks after mapped_blkaddr: the tar appended to the image.
 */
#ifndef KILN_WRITE_TARINDEX_H
#define KILN_WRITE_TARINDEX_H

#include <archive.h>
#include <archive_entry.h>
#include "inode.h"
#include "tarscan.h"

/*
 * Right after the entry's header: records where in->size bytes of data
 * (runs, if sparse) lie in the tar, checked against the tar's bytes when
 * it can be read again (ts->tar_fd).
 */
int kiln_tarindex_entry(struct tarscan *ts, struct archive *a,
			struct archive_entry *e, struct kiln_inode *in);

#endif

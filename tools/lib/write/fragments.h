/* SPDX-License-Identifier: MIT */
/*
 * -E fragments: the packed inode's content before it is compressed. The
 * zwriter appends each file's fragment (its last part, or the whole of a
 * small file) in the order files are written, so the content is the same
 * for any --workers; a fragment equal to an earlier one is stored once.
 * The content lives in a spool (page cache, not the heap), with a small
 * buffer in front so tens of thousands of tails are not one write each.
 */
#ifndef KILN_WRITE_FRAGMENTS_H
#define KILN_WRITE_FRAGMENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "source.h"

struct kiln_fragments {
	struct kiln_spool spool;	/* spool.end: the content's size */
	uint8_t *buf;			/* bytes from buf_off on, not written */
	size_t buf_len;
	uint64_t buf_off;
	struct frag_slot *slots;	/* fragments by content hash */
	size_t nr_slots, used;
	uint8_t *cmp;			/* an earlier fragment, read back */
	size_t cmp_cap;
};

int kiln_fragments_open(struct kiln_fragments *fr);
/*
 * Adds n bytes (n > 0); *off: where they are in the content, an earlier
 * equal fragment's place if there is one and share is set (a piece of a
 * longer fragment must follow the piece before: not shared, nor offered
 * to share). -1 with errno on a write error.
 */
int kiln_fragments_add(struct kiln_fragments *fr, const uint8_t *p, size_t n,
		       bool share, uint64_t *off);
/* Writes out the buffer: the spool then holds all the content. */
int kiln_fragments_flush(struct kiln_fragments *fr);
void kiln_fragments_close(struct kiln_fragments *fr);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * -E fragments: the packed inode's content before it is compressed. The
 * zwriter appends each file's fragment (its last part, or the whole of a
 * small file) in the order files are written, so the content is the same
 * for any --workers; a fragment equal to an earlier one, or to the end of
 * one (a file that is another's tail), is stored once.
 *
 * The content is kept as a list of pieces of the source files, not as a
 * copy: the workers read each piece again when they compress the packed
 * inode, as they read any file. Copying nearly all of a tree of small
 * files to a spool was the main thread's largest cost, and it ran while
 * the workers had little else to do.
 */
#ifndef KILN_WRITE_FRAGMENTS_H
#define KILN_WRITE_FRAGMENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "inode.h"

struct frag_piece;
struct frag_slot;

struct kiln_fragments {
	struct frag_piece *pieces;	/* in content order */
	size_t nr, cap;
	uint64_t end;			/* the content's size */
	struct frag_slot *slots;	/* whole fragments by content hash */
	size_t nr_slots, used;
	struct frag_slot *tails;	/* and by the hash of their last
					   FRAG_TAIL bytes */
	size_t nr_tails, tails_used;
	uint8_t *cmp;			/* an earlier fragment, read back */
	size_t cmp_cap;
};

void kiln_fragments_open(struct kiln_fragments *fr);
/*
 * Adds bytes [src_off, src_off + n) of in's data (n > 0), which p holds
 * now. *off: where they are in the content; with share, an earlier equal
 * fragment's place if there is one (hash: kiln_hash64(p, n, 0)), or the
 * place of the same bytes at the end of an earlier one. A piece
 * of a longer fragment must follow the piece before: not shared, nor
 * offered to share. -1 with errno if an earlier fragment cannot be read
 * back to compare (EAGAIN: its file changed); *failed names that file.
 */
int kiln_fragments_add(struct kiln_fragments *fr, const struct kiln_inode *in,
		       uint64_t src_off, const uint8_t *p, size_t n,
		       uint64_t hash, bool share, uint64_t *off,
		       const char **failed);
/* Adds n bytes Kiln made (the xattr prefix table); fr takes mem. */
void kiln_fragments_add_mem(struct kiln_fragments *fr, uint8_t *mem,
			    size_t n);
/*
 * Reads n bytes of the content from off, from the source files, each
 * checked unchanged since the scan. Safe from any thread once adding is
 * over. -1 with errno (EAGAIN: a file changed); *failed names the file.
 */
int kiln_fragments_read(const struct kiln_fragments *fr, uint8_t *buf,
			size_t n, uint64_t off, const char **failed);
void kiln_fragments_close(struct kiln_fragments *fr);

#endif

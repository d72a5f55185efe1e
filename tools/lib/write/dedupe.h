/* SPDX-License-Identifier: MIT */
/*
 * -E dedupe: the pclusters written so far, by content. A pcluster equal to
 * an earlier one (the same stored bytes, decoding to the same length) is
 * not written again: its extent points at the earlier blocks. Equal input
 * at the same place in a pcluster compresses to equal bytes, so this finds
 * copied files and copied runs of pclusters, all on the main thread as
 * segments are written, in file order: the image is the same for any
 * --workers. (erofs-utils also finds shifted matches with a rolling hash,
 * at the cost of its parallel compression.)
 */
#ifndef KILN_WRITE_DEDUPE_H
#define KILN_WRITE_DEDUPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One pcluster, as the table knows it. */
struct kiln_pcl {
	uint64_t hash;
	uint32_t blkaddr;
	uint32_t nblocks;
	uint64_t llen;			/* bytes it decodes to */
	bool plain;
};

struct kiln_dedupe {
	int fd;				/* the image: earlier pclusters are read
					   back from it to compare */
	unsigned int blkszbits;
	struct kiln_pcl *slots;		/* nblocks 0: empty */
	size_t nr_slots, used;
	uint8_t *cmp;
	size_t cmp_cap;
};

void kiln_dedupe_init(struct kiln_dedupe *dd, int fd, unsigned int blkszbits);
/*
 * Looks p (c->nblocks blocks) up: fills c->hash, and returns true with
 * c->blkaddr set if an equal pcluster was written before.
 */
bool kiln_dedupe_find(struct kiln_dedupe *dd, const uint8_t *p,
		      struct kiln_pcl *c);
/*
 * The same for bytes already in the image at block at (c->hash filled by
 * the caller, over what they hold): both are read back to compare; only
 * entries wholly before at count (later ones were taken back). For
 * --chunksize, whose chunks may be larger than memory should hold.
 */
bool kiln_dedupe_find_written(struct kiln_dedupe *dd, struct kiln_pcl *c,
			      uint32_t at);
/* Offers a written pcluster (c from kiln_dedupe_find, blkaddr set). */
void kiln_dedupe_add(struct kiln_dedupe *dd, const struct kiln_pcl *c);
/* Offers a block of flat data p as the plain pcluster it could be. */
void kiln_dedupe_offer(struct kiln_dedupe *dd, const uint8_t *p,
		       struct kiln_pcl *c);
void kiln_dedupe_free(struct kiln_dedupe *dd);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * -E dedupe, shifted: an earlier pcluster's whole content found anywhere in
 * a segment's input (a catalog's message block at another offset in each
 * language's file, a file copied with a header in front) is not compressed
 * again: an extent there points at the earlier pcluster.
 *
 * Each pcluster written is indexed by an anchor: the first place in it, at
 * least 64 bytes in, where a gear hash of the 64 bytes before has its top
 * byte zero. The anchor depends only on those bytes, so the same content
 * has it at the same offset wherever it lies. A worker looks up the anchors
 * of its input; a hit puts the candidate's start at the anchor's place less
 * its offset, and the candidate is decoded from the image and compared.
 *
 * As erofs-utils does, a match may also be a prefix of the earlier
 * pcluster's content, as long as kiln_shift_prefix_min: its extent then
 * decodes only that much (PARTIAL_REF). Uncompressed pclusters match whole.
 *
 * The workers look the index up while the writer adds to it, so that the
 * image is the same for any --workers, a segment only sees pclusters of
 * segments at least KILN_SHIFT_LAG before it, which the writer has always
 * written by the time it queues the segment (zdata.c caps the segments in
 * flight at that). One writer; entries are never moved nor removed.
 */
#ifndef KILN_WRITE_SHIFTED_H
#define KILN_WRITE_SHIFTED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Segments. Smaller finds more (a catalog in the next locale's directory),
 * but caps the segments in flight with -E dedupe: 48 holds three batches
 * of small files, enough for two workers; more workers would want to wait
 * for the writer instead.
 */
#define KILN_SHIFT_LAG 48u
#define KILN_SHIFT_WIN 64u	/* bytes an anchor depends on */

struct kiln_shift_ent {
	uint64_t key;		/* the gear hash at the anchor */
	uint64_t sample;	/* of a few pieces of its first prefix_min */
	uint64_t seq;		/* segment that wrote it */
	uint32_t next;		/* the next with the same bucket, +1 */
	uint32_t anchor;	/* its offset in the content */
	uint32_t blkaddr, llen;
	uint16_t nblocks;
	uint8_t zcfg, alg;	/* kiln_zcfg's index, EROFS_ALG_* */
	bool plain;
};

struct kiln_shift_index {
	uint32_t *heads;	/* entry + 1 per bucket, atomic */
	uint64_t *present;	/* a bit per bucket with an entry, atomic */
	struct kiln_shift_ent **chunks;
	uint32_t nr;		/* entries, atomic */
	/* where the workers decode candidates from */
	int fd;
	unsigned int blkszbits;
	uint32_t lzma_dict;
};

void kiln_shift_init(struct kiln_shift_index *x, int fd,
		     unsigned int blkszbits, uint32_t lzma_dict);
void kiln_shift_free(struct kiln_shift_index *x);
/* The writer: a pcluster written for segment e->seq. */
void kiln_shift_add(struct kiln_shift_index *x, const struct kiln_shift_ent *e);

/*
 * The shortest prefix worth a reference: 4 KiB (erofs-utils' window), and
 * two blocks at least, so that a big pcluster's block count has a second
 * lcluster to go in.
 */
size_t kiln_shift_prefix_min(unsigned int blkszbits);
/*
 * The anchor of content p[0..n) (n: as far as a prefix match would reach,
 * so at most prefix_min): true with its offset and key, false when it has
 * none.
 */
bool kiln_shift_anchor(const uint8_t *p, size_t n, uint32_t *at, uint64_t *key);
uint64_t kiln_shift_sample(const uint8_t *p, size_t n);

/* An earlier pcluster found at in + pos: its first len bytes, or all. */
struct kiln_shift_match {
	size_t pos, len;
	const struct kiln_shift_ent *e;
};

struct kiln_shift_finder;	/* a worker's decoding state */
struct kiln_shift_finder *kiln_shift_finder_new(const struct kiln_shift_index *x);
void kiln_shift_finder_free(struct kiln_shift_finder *f);
/*
 * The matches in in[0..len), at most max, in order and apart, for a
 * segment seq of algorithm zcfg (whole: no prefixes): their number.
 */
size_t kiln_shift_find(struct kiln_shift_finder *f, const uint8_t *in,
		       size_t len, uint64_t seq, uint8_t zcfg, bool whole,
		       struct kiln_shift_match *m, size_t max);

#endif

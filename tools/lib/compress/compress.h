/* SPDX-License-Identifier: MIT */
/*
 * Compressors behind one interface. EROFS needs "fixed-output" compression:
 * fill a pcluster of a given size with as much input as fits. lz4, lz4hc and
 * MicroLZMA do that natively; zstd does it in one pass by flushing chunks
 * (zstd.c); deflate gets it from a short guided search
 * (compress.c) that converges in a few tries instead of a bisection.
 */
#ifndef KILN_COMPRESS_H
#define KILN_COMPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "format/erofs_fs.h"

/* EROFS algorithm ids (bits of available_compr_algs). */

struct kiln_compr_cfg {
	const struct kiln_compressor *c;
	int level;
	uint32_t pclustersize;		/* bytes, a multiple of the block size */
	uint32_t dict_size;		/* lzma dictionary / zstd window */
	bool full_index;		/* -E legacy-compress: layout 1 */
	bool tailpacking;		/* -E ztailpacking: inline tails */
	bool fragments;			/* -E fragments: tails to the packed
					   inode (files under a pcluster whole) */
	bool all_fragments;		/* -E all-fragments: every file whole */
	bool dedupe;			/* -E dedupe: equal pclusters once */
};

struct kiln_compressor {
	const char *name;
	uint8_t alg;			/* EROFS_ALG_* */
	int min_level, max_level, default_level;
	/* lzma: min..max + extra are the same levels with another search */
	int extra_levels;
	/* Per-thread state; NULL on failure. */
	void *(*create)(const struct kiln_compr_cfg *cfg);
	void (*destroy)(void *ctx);
	/*
	 * Compresses a prefix of src[0..*srclen) into at most dstcap bytes;
	 * sets *srclen to the prefix length and returns the compressed size,
	 * or 0 when not even a useful prefix fits, or -1 on an error. *ratio
	 * (input/output of the segment's last pcluster) may guide it.
	 */
	long (*compress_destsize)(void *ctx, const uint8_t *src, size_t *srclen,
				  uint8_t *dst, size_t dstcap, double *ratio);
	/* One-shot compression (for search-based fitting); -1 if over dstcap. */
	long (*compress)(void *ctx, const uint8_t *src, size_t srclen,
			 uint8_t *dst, size_t dstcap);
	/* Writes the superblock configuration record payload; returns size. */
	size_t (*cfg_record)(const struct kiln_compr_cfg *cfg, uint8_t *out);
};

/* Parses "ALG", "ALG,N" or "ALG,level=N"; prints an error on failure. */
int kiln_compr_parse(const char *spec, struct kiln_compr_cfg *cfg);
void kiln_compr_finish_cfg(struct kiln_compr_cfg *cfg, uint32_t blksz);

/*
 * Fixed-output compression on top of a one-shot compressor: the largest
 * prefix whose compressed size fits dstcap, found by guided search. scratch
 * must hold compressBound(*srclen) bytes.
 */
long kiln_fit_by_search(const struct kiln_compressor *c, void *ctx,
			const uint8_t *src, size_t *srclen, uint8_t *dst,
			size_t dstcap, uint8_t *scratch, size_t scratchcap,
			double *ratio_hint);

/*
 * Whether n bytes surely compress into less than cap with any algorithm
 * here: fast LZ4 does it (every other one packs tighter, in practice).
 * dst: cap bytes of scratch. A tenth of lz4hc's cost, a fraction of the
 * others', where only the answer is wanted.
 */
bool kiln_compr_quick_fits(const uint8_t *src, size_t n, size_t cap,
			   uint8_t *dst);

extern const struct kiln_compressor kiln_lz4, kiln_lz4hc, kiln_zstd,
	kiln_lzma, kiln_deflate;

#endif

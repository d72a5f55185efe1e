/* SPDX-License-Identifier: MIT */
/* The reader's per-thread decoding state (extent.c, fragment.c). */
#ifndef KILN_READ_DCTX_H
#define KILN_READ_DCTX_H

#include <lzma.h>
#include <stdbool.h>
#include <stdint.h>
#include <zstd.h>

struct libdeflate_decompressor;

struct kiln_dctx {
	uint8_t *in;			/* one pcluster, at most 1 MiB */
	size_t cap;
	struct libdeflate_decompressor *inflate;
	ZSTD_DCtx *zstd;
	lzma_stream lzma;
	bool lzma_used;
	/*
	 * The packed inode's extent decoded last: files written one after
	 * another have their fragments next to each other in it.
	 */
	uint8_t *whole;			/* a partial DEFLATE pcluster, all */
	uint8_t *packed;
	size_t packed_cap;
	uint64_t packed_la, packed_len, packed_gen;	/* gen 0: empty */
};

#endif

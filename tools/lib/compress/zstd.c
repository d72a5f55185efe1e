/* SPDX-License-Identifier: MIT */
/*
 * Zstandard: one frame per pcluster. The window is capped so the kernel
 * (at most 1 MiB, from the configuration record) can always decode it.
 *
 * zstd has no "fill this many bytes" mode, and finding the fitting input by
 * re-compressing costs two to three passes. Instead the input goes in as a
 * stream, in chunks sized from the ratio seen so far and flushed one by one,
 * so the output size is known at every chunk boundary: one pass, plus the
 * one chunk that overflowed. The frame then ends with an empty last block.
 */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include "compress.h"

struct zstd_ctx {
	ZSTD_CCtx *cctx;
	uint8_t *buf;			/* the frame being built */
	size_t bufcap;
};

/* an empty raw block with Last_Block set: ends a frame left open by flushes */
static const uint8_t last_block[3] = { 0x01, 0x00, 0x00 };

static unsigned int log2u(uint32_t v)
{
	unsigned int n = 0;

	while (v > 1) {
		v >>= 1;
		n++;
	}
	return n;
}

static void *zstd_create(const struct kiln_compr_cfg *cfg)
{
	struct zstd_ctx *x = calloc(1, sizeof(*x));

	if (!x || !(x->cctx = ZSTD_createCCtx())) {
		free(x);
		return NULL;
	}
	/* room for a full pcluster and one more chunk's worth of blocks */
	x->bufcap = cfg->pclustersize + ZSTD_compressBound(cfg->pclustersize);
	x->buf = malloc(x->bufcap);
	if (ZSTD_isError(ZSTD_CCtx_setParameter(x->cctx,
			 ZSTD_c_compressionLevel, cfg->level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(x->cctx, ZSTD_c_windowLog,
			 (int)log2u(cfg->dict_size))) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(x->cctx,
			 ZSTD_c_contentSizeFlag, 1)) || !x->buf) {
		ZSTD_freeCCtx(x->cctx);
		free(x->buf);
		free(x);
		return NULL;
	}
	return x;
}

static void zstd_destroy(void *ctx)
{
	struct zstd_ctx *x = ctx;

	ZSTD_freeCCtx(x->cctx);
	free(x->buf);
	free(x);
}

/* Input for the next chunk: most of the room left, less as it fills. */
static size_t next_chunk(size_t room, size_t dstcap, double ratio)
{
	double share = room > dstcap / 4 ? 0.9 : 0.6;
	size_t n = (size_t)((double)room * ratio * share);

	if (n > 4 * dstcap)	/* zeros: keep every flush within buf */
		n = 4 * dstcap;
	return n < 256 ? 256 : n;
}

/* Feeds src[in..in+n) and flushes; the frame's new size, or 0 if over cap. */
static size_t feed(struct zstd_ctx *x, const uint8_t *src, size_t in,
		   size_t n, size_t out, size_t cap, int *err)
{
	ZSTD_inBuffer ib = { src, in + n, in };
	ZSTD_outBuffer ob = { x->buf, x->bufcap, out };
	size_t left = ZSTD_compressStream2(x->cctx, &ob, &ib, ZSTD_e_flush);

	if (ZSTD_isError(left)) {
		*err = 1;
		return 0;
	}
	/* data still pending means the frame outgrew buf, so cap too */
	return left || ob.pos > cap ? 0 : ob.pos;
}

static long zstd_destsize(void *ctx, const uint8_t *src, size_t *srclen,
			  uint8_t *dst, size_t dstcap, double *ratio)
{
	struct zstd_ctx *x = ctx;
	size_t avail = *srclen, in = 0, out = 0, cap = dstcap - sizeof(last_block);
	int err = 0, restarts = 0;

	ZSTD_CCtx_reset(x->cctx, ZSTD_reset_session_only);
	/* stop at 98% full: the next chunk would be a few hundred bytes */
	while (in < avail && cap - out > dstcap / 50) {
		size_t n = next_chunk(cap - out, dstcap, *ratio), pos;

		if (n > avail - in)
			n = avail - in;
		pos = feed(x, src, in, n, out, cap, &err);
		if (err)
			return -1;
		if (pos) {
			in += n;
			out = pos;
			*ratio = (double)in / (double)out;
			continue;
		}
		if (in || ++restarts > 4)
			break;
		/*
		 * The very first chunk overflowed: start again, smaller. A
		 * ratio carried over from a run of zeros can be 40 or more;
		 * halving it four times would still overflow on noise, so a
		 * high one drops to 4 first: 4, 2, 1, 0.5 (noise fits by 1).
		 */
		*ratio = *ratio > 8.0 ? 4.0 : *ratio * 0.5;
		ZSTD_CCtx_reset(x->cctx, ZSTD_reset_session_only);
	}
	if (!in)
		return 0;
	memcpy(dst, x->buf, out);
	memcpy(dst + out, last_block, sizeof(last_block));
	*srclen = in;
	return (long)(out + sizeof(last_block));
}

/* format 0, windowlog = log2(window) - 10 */
static size_t zstd_cfg_record(const struct kiln_compr_cfg *cfg, uint8_t *out)
{
	memset(out, 0, 6);
	out[1] = (uint8_t)(log2u(cfg->dict_size) - 10);
	return 6;
}

const struct kiln_compressor kiln_zstd = {
	.name = "zstd", .alg = EROFS_ALG_ZSTD,
	.min_level = 1, .max_level = 22, .default_level = 3,
	.create = zstd_create, .destroy = zstd_destroy,
	.compress_destsize = zstd_destsize,
	.cfg_record = zstd_cfg_record,
};

/* SPDX-License-Identifier: MIT */
/*
 * MicroLZMA: raw LZMA1 without end marker whose first byte carries the
 * inverted properties; liblzma's encoder fills the output buffer exactly.
 */
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include "compress.h"
#include "format/le.h"

struct lzma_ctx {
	lzma_options_lzma opt;
	lzma_stream strm;
};

static void *lzma_create(const struct kiln_compr_cfg *cfg)
{
	struct lzma_ctx *x = calloc(1, sizeof(*x));
	/* 100..109: preset 0..9 with the slower "extreme" search */
	uint32_t preset = cfg->level >= 100 ?
			  (uint32_t)(cfg->level - 100) | LZMA_PRESET_EXTREME :
			  (uint32_t)cfg->level;

	if (!x)
		return NULL;
	if (lzma_lzma_preset(&x->opt, preset)) {
		free(x);
		return NULL;
	}
	x->opt.dict_size = cfg->dict_size;
	x->strm = (lzma_stream)LZMA_STREAM_INIT;
	return x;
}

static void lzma_destroy(void *ctx)
{
	struct lzma_ctx *x = ctx;

	lzma_end(&x->strm);
	free(x);
}

static long lzma_destsize(void *ctx, const uint8_t *src, size_t *srclen,
			  uint8_t *dst, size_t dstcap, double *ratio)
{
	struct lzma_ctx *x = ctx;
	lzma_ret r;

	(void)ratio;
	/* the encoder is set up anew per pcluster: each is its own stream */
	if (lzma_microlzma_encoder(&x->strm, &x->opt) != LZMA_OK)
		return -1;
	x->strm.next_in = src;
	x->strm.avail_in = *srclen;
	x->strm.next_out = dst;
	x->strm.avail_out = dstcap;
	r = lzma_code(&x->strm, LZMA_FINISH);
	if (r != LZMA_STREAM_END)
		return -1;
	*srclen = (size_t)x->strm.total_in;
	return (long)x->strm.total_out;
}

/* dict_size, format 0 */
static size_t lzma_cfg_record(const struct kiln_compr_cfg *cfg, uint8_t *out)
{
	memset(out, 0, 14);
	put_le32(out, cfg->dict_size);
	return 14;
}

const struct kiln_compressor kiln_lzma = {
	.name = "lzma", .alg = EROFS_ALG_LZMA,
	.min_level = 0, .max_level = 9, .default_level = 6,
	.extra_levels = 100,	/* erofs-utils' 100..109: extreme presets */
	.create = lzma_create, .destroy = lzma_destroy,
	.compress_destsize = lzma_destsize, .cfg_record = lzma_cfg_record,
};

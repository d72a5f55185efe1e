/* SPDX-License-Identifier: MIT */
/*
 * Zstandard: one frame per pcluster. The window is capped so the kernel
 * (at most 1 MiB, from the configuration record) can always decode it.
 */
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>
#include "compress.h"

struct zstd_ctx {
	ZSTD_CCtx *cctx;
};

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
	if (ZSTD_isError(ZSTD_CCtx_setParameter(x->cctx,
			 ZSTD_c_compressionLevel, cfg->level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(x->cctx, ZSTD_c_windowLog,
			 (int)log2u(cfg->dict_size))) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(x->cctx,
			 ZSTD_c_contentSizeFlag, 1))) {
		ZSTD_freeCCtx(x->cctx);
		free(x);
		return NULL;
	}
	return x;
}

static void zstd_destroy(void *ctx)
{
	struct zstd_ctx *x = ctx;

	ZSTD_freeCCtx(x->cctx);
	free(x);
}

static long zstd_compress(void *ctx, const uint8_t *src, size_t srclen,
			  uint8_t *dst, size_t dstcap)
{
	struct zstd_ctx *x = ctx;
	size_t n = ZSTD_compress2(x->cctx, dst, dstcap, src, srclen);

	if (ZSTD_isError(n))
		return ZSTD_getErrorCode(n) == ZSTD_error_dstSize_tooSmall ?
		       (long)dstcap + 1 : -1;
	return (long)n;
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
	.compress = zstd_compress, .cfg_record = zstd_cfg_record,
};

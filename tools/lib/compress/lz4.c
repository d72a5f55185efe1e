/* SPDX-License-Identifier: MIT */
/* LZ4 and LZ4HC: raw LZ4 blocks, fixed-output via the destSize APIs. */
#include <lz4.h>
#include <lz4hc.h>
#include <stdlib.h>
#include "compress.h"
#include "format/le.h"

struct lz4_ctx {
	int level;			/* 0: fast LZ4 */
	void *state;
};

static void *lz4_create(const struct kiln_compr_cfg *cfg)
{
	struct lz4_ctx *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->level = cfg->c == &kiln_lz4hc ? cfg->level : 0;
	x->state = x->level ? malloc((size_t)LZ4_sizeofStateHC()) : NULL;
	if (x->level && !x->state) {
		free(x);
		return NULL;
	}
	return x;
}

static void lz4_destroy(void *ctx)
{
	struct lz4_ctx *x = ctx;

	free(x->state);
	free(x);
}

static long lz4_destsize(void *ctx, const uint8_t *src, size_t *srclen,
			 uint8_t *dst, size_t dstcap, double *ratio)
{
	struct lz4_ctx *x = ctx;
	int in = *srclen > LZ4_MAX_INPUT_SIZE ? LZ4_MAX_INPUT_SIZE : (int)*srclen;
	int n;

	(void)ratio;
	if (x->level)
		n = LZ4_compress_HC_destSize(x->state, (const char *)src,
					     (char *)dst, &in, (int)dstcap,
					     x->level);
	else
		n = LZ4_compress_destSize((const char *)src, (char *)dst, &in,
					  (int)dstcap);
	*srclen = (size_t)in;
	return n;
}

bool kiln_compr_quick_fits(const uint8_t *src, size_t n, size_t cap,
			   uint8_t *dst)
{
	int in = (int)n;

	if (n > LZ4_MAX_INPUT_SIZE || cap < 2)
		return false;
	return LZ4_compress_destSize((const char *)src, (char *)dst, &in,
				     (int)cap - 1) > 0 && (size_t)in == n;
}

/* max_distance 65535 (LZ4's own limit), then the largest pcluster. */
static size_t lz4_cfg_record(const struct kiln_compr_cfg *cfg, uint8_t *out)
{
	(void)cfg;
	put_le16(out, 65535);
	/* max_pclusterblks is filled in by the caller, who knows blksz */
	return 14;
}

const struct kiln_compressor kiln_lz4 = {
	.name = "lz4", .alg = EROFS_ALG_LZ4,
	.min_level = 0, .max_level = 0, .default_level = 0,
	.create = lz4_create, .destroy = lz4_destroy,
	.compress_destsize = lz4_destsize, .cfg_record = lz4_cfg_record,
};

const struct kiln_compressor kiln_lz4hc = {
	.name = "lz4hc", .alg = EROFS_ALG_LZ4,
	.min_level = 1, .max_level = LZ4HC_CLEVEL_MAX,
	.default_level = LZ4HC_CLEVEL_DEFAULT,
	.create = lz4_create, .destroy = lz4_destroy,
	.compress_destsize = lz4_destsize, .cfg_record = lz4_cfg_record,
};

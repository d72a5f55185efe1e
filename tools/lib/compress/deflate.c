/* SPDX-License-Identifier: MIT */
/* Raw DEFLATE (RFC 1951) with libdeflate, the fastest encoder we have. */
#include <libdeflate.h>
#include <string.h>
#include "compress.h"

static void *deflate_create(const struct kiln_compr_cfg *cfg)
{
	return libdeflate_alloc_compressor(cfg->level);
}

static void deflate_destroy(void *ctx)
{
	libdeflate_free_compressor(ctx);
}

static long deflate_compress(void *ctx, const uint8_t *src, size_t srclen,
			     uint8_t *dst, size_t dstcap)
{
	size_t n = libdeflate_deflate_compress(ctx, src, srclen, dst, dstcap);

	if (!n)
		return (long)dstcap + 1;	/* did not fit */
	/*
	 * A leading non-final stored block starts with a zero byte, which the
	 * reader would skip as 0PADDING. Bits 3..7 of that byte are padding
	 * DEFLATE ignores: set one.
	 */
	if ((dst[0] & 7) == 0)
		dst[0] |= 0x08;
	return (long)n;
}

/* windowbits 15: the kernel inflates with a 32 KiB window */
static size_t deflate_cfg_record(const struct kiln_compr_cfg *cfg,
				 uint8_t *out)
{
	(void)cfg;
	memset(out, 0, 6);
	out[0] = 15;
	return 6;
}

const struct kiln_compressor kiln_deflate = {
	.name = "deflate", .alg = EROFS_ALG_DEFLATE,
	/* erofs-utils' range and default for libdeflate */
	.min_level = 0, .max_level = 12, .default_level = 1,
	.create = deflate_create, .destroy = deflate_destroy,
	.compress = deflate_compress, .cfg_record = deflate_cfg_record,
};

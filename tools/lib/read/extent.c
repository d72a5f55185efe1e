/* SPDX-License-Identifier: MIT */
/*
 * Reading one extent: raw bytes, an uncompressed pcluster, or a compressed
 * one decoded by lz4, MicroLZMA, DEFLATE or Zstandard. A compressed stream
 * must decode to exactly the extent's length, as the kernel requires.
 */
#include <libdeflate.h>
#include <lz4.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include "compress/compress.h"
#include "reader.h"
#include "dctx.h"


struct kiln_dctx *kiln_dctx_new(const struct kiln_image *img)
{
	struct kiln_dctx *x = calloc(1, sizeof(*x));

	(void)img;
	if (!x)
		return NULL;
	x->inflate = libdeflate_alloc_decompressor();
	x->zstd = ZSTD_createDCtx();
	/* the kernel accepts windows up to 1 MiB: so do we, bounding memory */
	if (!x->inflate || !x->zstd ||
	    ZSTD_isError(ZSTD_DCtx_setParameter(x->zstd, ZSTD_d_windowLogMax,
						20))) {
		kiln_dctx_free(x);
		return NULL;
	}
	return x;
}

void kiln_dctx_free(struct kiln_dctx *x)
{
	if (!x)
		return;
	free(x->in);
	free(x->packed);
	free(x->whole);
	if (x->inflate)
		libdeflate_free_decompressor(x->inflate);
	ZSTD_freeDCtx(x->zstd);
	if (x->lzma_used)
		lzma_end(&x->lzma);
	free(x);
}

/*
 * Each decoder fills out with exactly outlen bytes, the whole stream; with
 * partial (PARTIAL_REF), the first outlen bytes of a stream that may hold
 * more.
 */
static long lz4(struct kiln_dctx *x, const struct kiln_image *img,
		const uint8_t *in, size_t inlen, uint8_t *out, size_t outlen,
		bool partial)
{
	(void)x;
	if (img->zero_padding && !partial)
		return LZ4_decompress_safe((const char *)in, (char *)out,
					   (int)inlen, (int)outlen);
	/* legacy images (the stream starts at 0, junk may follow) and
	 * partial references (it holds more than outlen bytes) */
	return LZ4_decompress_safe_partial((const char *)in, (char *)out,
					   (int)inlen, (int)outlen, (int)outlen);
}

static long lzma(struct kiln_dctx *x, const struct kiln_image *img,
		 const uint8_t *in, size_t inlen, uint8_t *out, size_t outlen,
		 bool partial)
{
	lzma_ret r;

	if (!x->lzma_used) {
		x->lzma = (lzma_stream)LZMA_STREAM_INIT;
		x->lzma_used = true;
	}
	/* re-initialising keeps the dictionary allocation of the last one */
	if (lzma_microlzma_decoder(&x->lzma, inlen, outlen, !partial,
				   img->lzma_dict) != LZMA_OK)
		return -1;
	x->lzma.next_in = in;
	x->lzma.avail_in = inlen;
	x->lzma.next_out = out;
	x->lzma.avail_out = outlen;
	r = lzma_code(&x->lzma, LZMA_FINISH);
	if (r != LZMA_STREAM_END && r != LZMA_OK)
		return -1;
	return (long)(outlen - x->lzma.avail_out);
}

static long deflate(struct kiln_dctx *x, const struct kiln_image *img,
		    const uint8_t *in, size_t inlen, uint8_t *out,
		    size_t outlen, bool partial)
{
	size_t n;

	(void)img;
	/* no actual-size pointer: libdeflate then insists on outlen exactly */
	if (!partial)
		return libdeflate_deflate_decompress(x->inflate, in, inlen, out,
				outlen, NULL) == LIBDEFLATE_SUCCESS ?
		       (long)outlen : -1;
	/* libdeflate decodes whole streams only: all of it, then a prefix */
	if (!x->whole) {
		x->whole = malloc(KILN_MAX_EXTENT_LEN);
		if (!x->whole)
			return -1;
	}
	if (libdeflate_deflate_decompress(x->inflate, in, inlen, x->whole,
					  KILN_MAX_EXTENT_LEN, &n) !=
	    LIBDEFLATE_SUCCESS || n < outlen)
		return -1;
	memcpy(out, x->whole, outlen);
	return (long)outlen;
}

static long zstd(struct kiln_dctx *x, const struct kiln_image *img,
		 const uint8_t *in, size_t inlen, uint8_t *out, size_t outlen,
		 bool partial)
{
	ZSTD_inBuffer ib = { in, inlen, 0 };
	ZSTD_outBuffer ob = { out, outlen, 0 };

	(void)img;
	(void)partial;		/* it stops where out is full, either way */
	ZSTD_DCtx_reset(x->zstd, ZSTD_reset_session_only);
	/* frames may lack a content size: decode as a stream */
	while (ob.pos < outlen) {
		size_t before = ib.pos + ob.pos;
		size_t r = ZSTD_decompressStream(x->zstd, &ob, &ib);

		if (ZSTD_isError(r))
			return -1;
		if (!r || ib.pos + ob.pos == before)
			break;
	}
	return (long)ob.pos;
}

typedef long (*decoder_fn)(struct kiln_dctx *x, const struct kiln_image *img,
			   const uint8_t *in, size_t inlen, uint8_t *out,
			   size_t outlen, bool partial);
static const decoder_fn decoders[4] = {
	[EROFS_ALG_LZ4] = lz4, [EROFS_ALG_LZMA] = lzma,
	[EROFS_ALG_DEFLATE] = deflate, [EROFS_ALG_ZSTD] = zstd,
};
static const char *const alg_names[4] = {
	[EROFS_ALG_LZ4] = "lz4", [EROFS_ALG_LZMA] = "lzma",
	[EROFS_ALG_DEFLATE] = "deflate", [EROFS_ALG_ZSTD] = "zstd",
};

const char *kiln_alg_name(unsigned int alg)
{
	return alg < 4 ? alg_names[alg] : "unknown";
}

/* 0PADDING: the stream ends at the pcluster's end; skip the zeros before. */
static size_t stream_start(const struct kiln_image *img, const uint8_t *in,
			   size_t len, uint8_t alg)
{
	size_t n = 0, lim = len < img->blksz ? len : img->blksz;

	if (alg == EROFS_ALG_LZ4 && !img->zero_padding)
		return 0;
	while (n < lim && !in[n])
		n++;
	return n;
}

/* Reads a pcluster into x->in, grown on demand (pclusters are <= 1 MiB). */
static int read_in(const struct kiln_image *img, struct kiln_dctx *x,
		   const struct kiln_fext *e, struct kiln_diag *d)
{
	if (x->cap < e->plen) {
		free(x->in);
		x->cap = 0;
		x->in = malloc(e->plen);
		if (!x->in) {
			kiln_diag_set(d, "out of memory");
			return -1;
		}
		x->cap = e->plen;
	}
	return kiln_image_read(img, x->in, e->pa, e->plen, d);
}

static int read_zip(const struct kiln_image *img, struct kiln_dctx *x,
		    const struct kiln_fext *e, uint8_t *out,
		    struct kiln_diag *d)
{
	size_t start;
	long n;

	if (read_in(img, x, e, d))
		return -1;
	start = stream_start(img, x->in, e->plen, e->alg);
	if (start == e->plen || start == img->blksz) {
		kiln_diag_set(d, "pcluster at offset %llu holds only zeros",
			      (unsigned long long)e->pa);
		return -1;
	}
	n = decoders[e->alg](x, img, x->in + start, e->plen - start, out,
			     e->llen, e->partial);
	if (n != (long)e->llen) {
		kiln_diag_set(d, "%s pcluster at offset %llu does not decode "
			      "to the %llu bytes of its extent at %llu",
			      kiln_alg_name(e->alg), (unsigned long long)e->pa,
			      (unsigned long long)e->llen,
			      (unsigned long long)e->la);
		return -1;
	}
	return 0;
}

/*
 * Uncompressed pcluster. An interlaced one, as the kernel reads it: the
 * extent's first bytes, up to the end of la's block, are the pcluster's
 * last ones; the rest follows from its start.
 */
static int read_plain(const struct kiln_image *img, struct kiln_dctx *x,
		      const struct kiln_fext *e, uint8_t *out,
		      struct kiln_diag *d)
{
	size_t lead = img->blksz - (size_t)(e->la & (img->blksz - 1));
	size_t first = lead < e->llen ? lead : (size_t)e->llen;

	if (read_in(img, x, e, d))
		return -1;
	if (!e->interlaced) {
		memcpy(out, x->in, e->llen);
		return 0;
	}
	/* (an inline tail shorter than that: the kernel reads bytes before
	 * it, which are not the file's) */
	if (lead > e->plen) {
		kiln_diag_set(d, "interlaced tail at %llu: %u bytes, under the "
			      "%zu its first block needs",
			      (unsigned long long)e->la, e->plen, lead);
		return -1;
	}
	memcpy(out, x->in + e->plen - lead, first);
	memcpy(out + first, x->in, e->llen - first);
	return 0;
}

int kiln_fext_read(const struct kiln_image *img, struct kiln_dctx *x,
		   const struct kiln_fext *e, uint8_t *out,
		   struct kiln_diag *d)
{
	switch (e->kind) {
	case KILN_EXT_HOLE:
		memset(out, 0, e->llen);
		return 0;
	case KILN_EXT_RAW:
		return kiln_image_read(img, out, e->pa, e->llen, d);
	case KILN_EXT_PLAIN:
		return read_plain(img, x, e, out, d);
	case KILN_EXT_FRAG:
		return kiln_fragment_read(img, x, e->pa, e->llen, out, d);
	}
	return read_zip(img, x, e, out, d);
}

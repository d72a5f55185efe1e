/* SPDX-License-Identifier: MIT */
/*
 * rawspeed FILE [NAME]: single-core speed of each compressor (or only the
 * one NAME begins) on FILE cut into independent 64 KiB blocks, at the
 * default levels Kiln uses. This is the physical limit a parallel mkfs is
 * measured against; two copies run at once show what two cores give.
 */
#include <libdeflate.h>
#include <lz4.h>
#include <lz4hc.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#define BLK 65536

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static ZSTD_CCtx *zc;
static lzma_options_lzma lo;

/* Contexts are made once, as a real encoder loop would. */
static size_t one(int alg, const char *in, size_t n, char *out, size_t cap,
		  void *state)
{
	lzma_filter fl[2] = { { LZMA_FILTER_LZMA1, &lo },
			      { LZMA_VLI_UNKNOWN, NULL } };
	size_t pos = 0;

	switch (alg) {
	case 0: return (size_t)LZ4_compress_default(in, out, (int)n, (int)cap);
	case 1: return (size_t)LZ4_compress_HC(in, out, (int)n, (int)cap, 9);
	case 2: return ZSTD_compressCCtx(zc, out, cap, in, n, 3);
	case 3: return libdeflate_deflate_compress(state, in, n, out, cap);
	case 4:
		lzma_raw_buffer_encode(fl, NULL, (const uint8_t *)in, n,
				       (uint8_t *)out, &pos, cap);
		return pos;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const char *names[] = { "lz4", "lz4hc,9", "zstd,3",
				       "deflate,1", "lzma,6" };
	FILE *f = argc == 2 || argc == 3 ? fopen(argv[1], "rb") : NULL;
	size_t n = 0, cap = 1 << 20;
	char *in = NULL, *out = malloc(2 * BLK);
	struct libdeflate_compressor *d = libdeflate_alloc_compressor(1);

	zc = ZSTD_createCCtx();
	lzma_lzma_preset(&lo, 6);
	lo.dict_size = BLK;	/* a block is all it can see */
	if (!f) {
		fprintf(stderr, "usage: rawspeed FILE [NAME]\n");
		return 1;
	}
	for (size_t r;; n += r) {
		if (n == cap || !in)
			in = realloc(in, cap *= 2);
		r = fread(in + n, 1, cap - n, f);
		if (!r)
			break;
	}
	for (int alg = 0; alg < 5; alg++) {
		size_t total = 0;
		double t = now();

		/* NAME is the part before the level: lz4 is not lz4hc */
		if (argc == 3 && (strcspn(names[alg], ",") != strlen(argv[2]) ||
				  strncmp(names[alg], argv[2], strlen(argv[2]))))
			continue;
		for (size_t off = 0; off < n; off += BLK)
			total += one(alg, in + off, n - off < BLK ? n - off : BLK,
				     out, 2 * BLK, d);
		t = now() - t;
		printf("%s %.1f %.3f\n", names[alg], n / t / 1e6,
		       (double)total / n);
	}
	return 0;
}

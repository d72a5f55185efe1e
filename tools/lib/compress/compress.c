/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "compress.h"
#include "common/util.h"
#include "kiln.h"

static const struct kiln_compressor *const all[] = {
	&kiln_lz4, &kiln_lz4hc, &kiln_zstd, &kiln_lzma, &kiln_deflate,
};

static int parse_level(const char *s, const struct kiln_compressor *c)
{
	uint64_t v;

	if (!strncmp(s, "level=", 6))
		s += 6;
	if (!kiln_parse_u64(s, (uint64_t)c->min_level, (uint64_t)c->max_level,
			    &v))
		return (int)v;
	if (c->extra_levels &&
	    !kiln_parse_u64(s, (uint64_t)(c->extra_levels + c->min_level),
			    (uint64_t)(c->extra_levels + c->max_level), &v))
		return (int)v;
	return -1;
}

int kiln_compr_parse(const char *spec, struct kiln_compr_cfg *cfg)
{
	const char *comma = strchr(spec, ',');
	size_t n = comma ? (size_t)(comma - spec) : strlen(spec);

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		const struct kiln_compressor *c = all[i];

		if (strlen(c->name) != n || strncmp(c->name, spec, n))
			continue;
		cfg->c = c;
		cfg->level = comma ? parse_level(comma + 1, c) : c->default_level;
		if (cfg->level < 0) {
			if (c->extra_levels)
				kiln_err("invalid %s level '%s' (%d..%d or "
					 "%d..%d)", c->name, comma + 1,
					 c->min_level, c->max_level,
					 c->extra_levels + c->min_level,
					 c->extra_levels + c->max_level);
			else
				kiln_err("invalid %s level '%s' (%d..%d)",
					 c->name, comma + 1, c->min_level,
					 c->max_level);
			return -1;
		}
		return 0;
	}
	kiln_err("unknown compressor '%.*s' (lz4, lz4hc, zstd, lzma, deflate)",
		 (int)n, spec);
	return -1;
}

static uint32_t pow2_at_least(uint64_t v)
{
	uint32_t p = 1;

	while (p < v && p < (1u << 30))
		p <<= 1;
	return p;
}

/*
 * LZMA dictionary and zstd window: four pclusters' worth, within what the
 * kernel accepts (lzma 32 KiB..8 MiB; zstd at most 1 MiB). The kernel keeps
 * one such buffer per CPU, so bigger is not free on the device.
 */
void kiln_compr_finish_cfg(struct kiln_compr_cfg *cfg, uint32_t blksz)
{
	uint32_t d = pow2_at_least(4ull * cfg->pclustersize);
	uint32_t max = cfg->c->alg == EROFS_ALG_ZSTD ? 1u << 20 : 8u << 20;

	(void)blksz;
	cfg->dict_size = d < 32768 ? 32768 : d > max ? max : d;
}

static void keep(uint8_t *dst, const uint8_t *src, long n, long *best,
		 size_t *bestlen, size_t len)
{
	memcpy(dst, src, (size_t)n);
	*best = n;
	*bestlen = len;
}

long kiln_fit_by_search(const struct kiln_compressor *c, void *ctx,
			const uint8_t *src, size_t *srclen, uint8_t *dst,
			size_t dstcap, uint8_t *scratch, size_t scratchcap,
			double *ratio)
{
	size_t avail = *srclen, lo = 0, hi = avail + 1, len, bestlen = 0;
	size_t width = hi;
	long best = 0, nlo = 0, nhi = 0;
	double target = (double)dstcap * 0.99;
	bool bisect = false;

	/* first guess: what fitted last time, by the last ratio seen */
	len = (size_t)(target * *ratio);
	/* past 16 tries only while nothing fits: halving finds a prefix */
	for (int tries = 0; tries < 16 || (!best && hi > 1); tries++) {
		long n;

		if (len > avail)
			len = avail;
		/* outside what we know, or the guesses crawl: bisect */
		if (len >= hi || len <= lo || bisect)
			len = lo + (hi - lo) / 2;
		n = c->compress(ctx, src, len, scratch, scratchcap);
		if (n < 0)
			return -1;
		if (n > 0 && (size_t)n <= dstcap) {
			lo = len;
			nlo = n;
			keep(dst, scratch, n, &best, &bestlen, len);
			*ratio = (double)len / (double)n;
			/* all input taken, or the pcluster is 98% full */
			if (len == avail || (size_t)n >= dstcap - dstcap / 50)
				break;
		} else {
			hi = len;
			nhi = n;
		}
		/* the search window itself is down to under 1% */
		if (hi - lo <= lo / 128 + 64)
			break;
		/*
		 * Guesses from the ratio assume output grows with input in
		 * proportion; on noise followed by zeros it does not, and
		 * they shrink the window by a percent a try. A try that did
		 * not halve the window makes the next one a bisection (once
		 * bisecting is cheap: nothing fits yet, or both ends known).
		 */
		bisect = hi - lo > width / 2 && (!lo || hi <= avail);
		width = hi - lo;
		/*
		 * Aim at 99% full: between the two closest tries when both
		 * sides are known, else at the ratio this try showed.
		 */
		if (nhi > nlo && lo && hi <= avail)
			len = lo + (size_t)((double)(hi - lo) *
				(target - (double)nlo) / (double)(nhi - nlo));
		else
			len = (size_t)((double)len * target / (double)(n ? n : 1));
	}
	*srclen = bestlen;
	return best;
}

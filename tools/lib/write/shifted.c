/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include "common/fullio.h"
#include "common/util.h"
#include "read/dctx.h"
#include "read/reader.h"
#include "shifted.h"

#define BUCKET_BITS 18
#define CHUNK_BITS 14
#define MAX_CHUNKS 4096u	/* 64 M pclusters; more are not indexed */
#define MAX_MISSES 16u		/* candidates that fail, per segment */

/* Gear hash: one random word per byte value, from a fixed seed. */
static uint64_t gear[256];

static void gear_init(void)
{
	uint64_t s = 0x4b494c4e53484654ull;	/* "KILNSHFT" */

	for (int i = 0; i < 256; i++) {
		uint64_t z = (s += 0x9e3779b97f4a7c15ull);

		z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ z >> 27) * 0x94d049bb133111ebull;
		gear[i] = z ^ z >> 31;
	}
}

/* Shifted left one bit a byte, the hash forgets bytes 64 back. */
#define GEAR(h, b) ((h) = ((h) << 1) + gear[(b)])
#define IS_ANCHOR(h) ((h) >> 56 == 0)

void kiln_shift_init(struct kiln_shift_index *x, int fd,
		     unsigned int blkszbits, uint32_t lzma_dict)
{
	memset(x, 0, sizeof(*x));
	if (!gear[0])
		gear_init();
	x->heads = xcalloc(1u << BUCKET_BITS, sizeof(*x->heads));
	x->present = xcalloc(1u << BUCKET_BITS >> 6, sizeof(*x->present));
	x->chunks = xcalloc(MAX_CHUNKS, sizeof(*x->chunks));
	x->fd = fd;
	x->blkszbits = blkszbits;
	x->lzma_dict = lzma_dict;
}

void kiln_shift_free(struct kiln_shift_index *x)
{
	for (uint32_t i = 0; i < MAX_CHUNKS && x->chunks[i]; i++)
		free(x->chunks[i]);
	free(x->chunks);
	free(x->heads);
	free(x->present);
}

static uint32_t bucket(uint64_t key)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - BUCKET_BITS));
}

static const struct kiln_shift_ent *entry(const struct kiln_shift_index *x,
					  uint32_t i)
{
	return &x->chunks[i >> CHUNK_BITS][i & ((1u << CHUNK_BITS) - 1)];
}

void kiln_shift_add(struct kiln_shift_index *x, const struct kiln_shift_ent *e)
{
	uint32_t i = x->nr, c = i >> CHUNK_BITS, b = bucket(e->key);
	struct kiln_shift_ent *to;

	if (c >= MAX_CHUNKS)
		return;
	if (!x->chunks[c])
		x->chunks[c] = xmalloc(sizeof(**x->chunks) << CHUNK_BITS);
	to = &x->chunks[c][i & ((1u << CHUNK_BITS) - 1)];
	*to = *e;
	to->next = x->heads[b];
	__atomic_fetch_or(&x->present[b >> 6], 1ull << (b & 63),
			  __ATOMIC_RELAXED);
	/* the entry whole before a reader can reach it */
	__atomic_store_n(&x->heads[b], i + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&x->nr, i + 1, __ATOMIC_RELEASE);
}

bool kiln_shift_anchor(const uint8_t *p, size_t n, uint32_t *at, uint64_t *key)
{
	uint64_t h = 0;

	for (size_t i = 0; i < n; i++) {
		GEAR(h, p[i]);
		if (i + 1 >= KILN_SHIFT_WIN && IS_ANCHOR(h)) {
			*at = (uint32_t)(i + 1);
			*key = h;
			return true;
		}
	}
	return false;
}

size_t kiln_shift_prefix_min(unsigned int blkszbits)
{
	size_t two = (size_t)2 << blkszbits;

	return two > 4096 ? two : 4096;
}

/* Eight pieces of 16 bytes, evenly spaced, and the length. */
uint64_t kiln_shift_sample(const uint8_t *p, size_t n)
{
	uint64_t h = n;

	for (size_t k = 0; k < 8 && n >= 16; k++)
		h = kiln_hash64(p + (n - 16) / 7 * k, 16, h);
	return h;
}

struct kiln_shift_finder {
	const struct kiln_shift_index *x;
	struct kiln_image img;		/* the image being written, to decode */
	struct kiln_dctx *dctx;
	uint8_t *buf;
	size_t cap;
	bool whole;			/* this search: whole pclusters only */
};

struct kiln_shift_finder *kiln_shift_finder_new(const struct kiln_shift_index *x)
{
	struct kiln_shift_finder *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->x = x;
	f->img.fd = x->fd;
	f->img.blkszbits = x->blkszbits;
	f->img.blksz = 1u << x->blkszbits;
	f->img.size = UINT64_MAX >> 8;
	f->img.zero_padding = true;
	f->img.lzma_dict = x->lzma_dict;
	if (!(f->dctx = kiln_dctx_new(&f->img))) {
		free(f);
		return NULL;
	}
	return f;
}

void kiln_shift_finder_free(struct kiln_shift_finder *f)
{
	if (!f)
		return;
	kiln_dctx_free(f->dctx);
	free(f->buf);
	free(f);
}

/*
 * How much of the earlier pcluster, decoded from the image, p[0..n)
 * starts with: all of it, at least prefix_min of a compressed one (unless
 * f->whole), or 0.
 */
static size_t same_content(struct kiln_shift_finder *f,
			   const struct kiln_shift_ent *e, const uint8_t *p,
			   size_t n)
{
	static uint64_t gen;
	struct kiln_diag d;
	struct kiln_fext x = {
		.llen = e->llen, .pa = (uint64_t)e->blkaddr << f->x->blkszbits,
		.plen = (uint32_t)e->nblocks << f->x->blkszbits,
		.kind = e->plain ? KILN_EXT_PLAIN : KILN_EXT_ZIP, .alg = e->alg,
	};

	size_t m = 0, min = kiln_shift_prefix_min(f->x->blkszbits);

	if (f->cap < e->llen) {
		free(f->buf);
		f->cap = 0;
		if (!(f->buf = malloc(e->llen)))
			return 0;
		f->cap = e->llen;
	}
	/* a fresh generation: the reader's small-read cache never serves
	   blocks read before they were written */
	f->img.gen = __atomic_add_fetch(&gen, 1, __ATOMIC_RELAXED) | 1ull << 62;
	if (kiln_fext_read(&f->img, f->dctx, &x, f->buf, &d))
		return 0;
	n = n < e->llen ? n : e->llen;
	for (size_t step; m < n; m += step) {	/* word by word, then byte */
		step = n - m < 64 ? n - m : 64;
		if (memcmp(f->buf + m, p + m, step))
			break;
	}
	while (m < n && f->buf[m] == p[m])
		m++;
	if (m == e->llen || (!e->plain && !f->whole && m >= min))
		return m;
	return 0;
}

/*
 * The candidates for an anchor at in + i: the first whose content (or a
 * long enough prefix of it, *mlen) is there, at or after from; NULL if
 * none. *misses counts the ones decoded in vain.
 */
static const struct kiln_shift_ent *
candidate(struct kiln_shift_finder *f, const uint8_t *in, size_t len,
	  size_t i, uint64_t key, size_t from, uint64_t seq, uint8_t zcfg,
	  unsigned *misses, bool *known, size_t *mlen)
{
	size_t min = kiln_shift_prefix_min(f->x->blkszbits);

	const struct kiln_shift_index *x = f->x;
	uint32_t b = bucket(key), k;

	*known = false;
	/*
	 * Most anchors find nothing: a bit (32 KiB, cached) says so, where a
	 * bucket head would be a cache miss. Entries the segment may use
	 * were added before it was queued, so their bits are seen.
	 */
	if (!(__atomic_load_n(&x->present[b >> 6], __ATOMIC_RELAXED) &
	      1ull << (b & 63)))
		return NULL;
	k = __atomic_load_n(&x->heads[b], __ATOMIC_ACQUIRE);
	for (; k; k = entry(x, k - 1)->next) {
		const struct kiln_shift_ent *e = entry(x, k - 1);
		size_t p = i - e->anchor;

		if (e->key != key || e->seq + KILN_SHIFT_LAG > seq ||
		    e->zcfg != zcfg)
			continue;
		*known = true;
		size_t head = e->llen < min ? e->llen : min;

		if (e->anchor > i || p < from || head > len - p ||
		    kiln_shift_sample(in + p, head) != e->sample)
			continue;
		if ((*mlen = same_content(f, e, in + p, len - p)))
			return e;
		if (++*misses >= MAX_MISSES)
			return NULL;
	}
	return NULL;
}

size_t kiln_shift_find(struct kiln_shift_finder *f, const uint8_t *in,
		       size_t len, uint64_t seq, uint8_t zcfg, bool whole,
		       struct kiln_shift_match *m, size_t max)
{
	uint64_t h = 0, unknown = 0;
	size_t nr = 0, from = 0, mlen = 0;
	unsigned misses = 0;
	bool known;

	size_t i = 0, pre = len < KILN_SHIFT_WIN - 1 ? len : KILN_SHIFT_WIN - 1;

	if (!__atomic_load_n(&f->x->nr, __ATOMIC_ACQUIRE) || seq < KILN_SHIFT_LAG)
		return 0;
	f->whole = whole;
	while (i < pre)		/* no anchor before 64 bytes */
		GEAR(h, in[i++]);
	while (nr < max && misses < MAX_MISSES) {
		const struct kiln_shift_ent *e;
		bool hit = false;

		/*
		 * The hot loop, two bytes a turn: the hash's chain from one
		 * turn to the next is one shift and one add, the odd byte's
		 * hash comes off it
		 */
		while (len - i >= 2) {
			uint64_t odd = (h << 1) + gear[in[i]];

			h = (h << 2) + ((uint64_t)gear[in[i]] << 1) + gear[in[i + 1]];
			i += 2;
			if (__builtin_expect(IS_ANCHOR(odd), 0)) {
				h = odd;
				i--;
				hit = true;
				break;
			}
			if (__builtin_expect(IS_ANCHOR(h), 0)) {
				hit = true;
				break;
			}
		}
		if (!hit && i < len) {
			GEAR(h, in[i++]);
			hit = IS_ANCHOR(h);
		}
		/* a run of equal anchors (zeros) looked up once if in vain */
		if (!hit)
			break;
		if (h == unknown)
			continue;
		e = candidate(f, in, len, i, h, from, seq, zcfg, &misses,
			      &known, &mlen);
		if (!known)
			unknown = h;
		if (!e)
			continue;
		m[nr].pos = i - e->anchor;
		m[nr].len = mlen;
		m[nr++].e = e;
		from = m[nr - 1].pos + mlen;
	}
	return nr;
}

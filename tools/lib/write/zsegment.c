/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/profile.h"
#include "common/util.h"
#include "kiln.h"
#include "shifted.h"
#include "source.h"
#include "zdata.h"
#include "zseg.h"

struct zworker {
	const struct kiln_mkfs_opts *o;
	void *cctx[KILN_MAX_ZCFGS];	/* made when first needed */
	const struct kiln_compr_cfg *cfg;	/* the segment's, and */
	void *ctx;				/* its context */
	uint8_t *scratch;		/* for search-based fitting */
	size_t scratchcap;
	double ratio;			/* input/output of the last fit */
	size_t extmax;			/* input of one extent, at most */
	struct kiln_shift_finder *sf;	/* -E dedupe: made when first needed */
	struct kiln_shift_match *m;	/* the segment's matches */
	size_t mcap;
};
/*
 * The ratio guides the search for zstd/deflate and so shapes the extents:
 * it restarts with every segment, or output would depend on which worker
 * compressed what before.
 */

void *kiln_zw_worker_init(void *arg)
{
	const struct kiln_mkfs_opts *o = arg;
	struct zworker *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->o = o;
	w->extmax = (size_t)kiln_zw_extent_max(&o->compr);
	w->scratchcap = kiln_zw_segment_max() * 2 + 65536;
	return w;
}

void kiln_zw_worker_exit(void *p)
{
	struct zworker *w = p;

	for (unsigned int i = 0; i < KILN_MAX_ZCFGS; i++)
		if (w->cctx[i])
			kiln_zcfg(w->o, i)->c->destroy(w->cctx[i]);
	kiln_shift_finder_free(w->sf);
	free(w->m);
	free(w->scratch);
	free(w);
}

/* Selects the segment's algorithm: -1 if its context cannot be made. */
static int use_cfg(struct zworker *w, unsigned int i)
{
	const struct kiln_compr_cfg *cfg = kiln_zcfg(w->o, i);

	if (!w->cctx[i] && !(w->cctx[i] = cfg->c->create(cfg)))
		return -1;
	if (cfg->c->compress && !w->scratch &&
	    !(w->scratch = malloc(w->scratchcap)))
		return -1;
	w->cfg = cfg;
	w->ctx = w->cctx[i];
	return 0;
}

static void push_ext(struct zseg *s, uint32_t len, uint16_t nblocks,
		     bool plain, bool inlined)
{
	s->ext[s->nr_ext].len = len;
	s->ext[s->nr_ext].nblocks = nblocks;
	s->ext[s->nr_ext].inlined = inlined;
	s->ext[s->nr_ext].fragment = false;
	s->ext[s->nr_ext].ref = false;
	s->ext[s->nr_ext].partial = false;
	s->ext[s->nr_ext].anchor = 0;
	s->ext[s->nr_ext++].plain = plain;
}

static void add_ext(struct zseg *s, uint32_t len, uint16_t nblocks, bool plain)
{
	push_ext(s, len, nblocks, plain, false);
	s->outlen += (size_t)nblocks * s->blksz;
}

static long fit(struct zworker *w, const uint8_t *src, size_t *len,
		uint8_t *dst, size_t cap)
{
	const struct kiln_compressor *c = w->cfg->c;

	if (c->compress_destsize)
		return c->compress_destsize(w->ctx, src, len, dst, cap,
					    &w->ratio);
	return kiln_fit_by_search(c, w->ctx, src, len, dst, cap, w->scratch,
				  w->scratchcap, &w->ratio);
}

/* The file's last extent, n bytes already at out + outlen, goes inline. */
static void add_inline(struct zseg *s, uint32_t len, size_t n, bool plain)
{
	push_ext(s, len, 0, plain, true);
	s->tail_len = (uint16_t)n;
}

/*
 * ztailpacking: the rest of the file, rem bytes from src, becomes the
 * inline tail if it compresses (or, under a block, simply fits) into what
 * is left of the block after the inode's index (tmax). Returns whether it
 * did; dst then holds the tail.
 */
static bool try_inline(struct zseg *s, struct zworker *w, const uint8_t *src,
		       size_t rem, uint8_t *dst)
{
	uint32_t blksz = s->blksz;
	uint32_t tmax = s->inode->ztail_room;	/* zdata.c: zbase_range */
	size_t take = rem;
	long n;

	if (!tmax)
		return false;
	n = fit(w, src, &take, dst, tmax);

	if (n > 0 && take == rem && (size_t)n < rem) {
		add_inline(s, (uint32_t)rem, (size_t)n, false);
		return true;
	}
	if (rem > blksz || rem > tmax)
		return false;
	memcpy(dst, src, rem);
	add_inline(s, (uint32_t)rem, rem, true);
	return true;
}

/*
 * -E fragments: the file's last extent goes to the packed inode, to be
 * compressed with the other files' (erofs-utils' rule, so images compare):
 * what is left once it is one pcluster of input or less, taken raw (all
 * of a small file), or once it compresses whole into less than a
 * pcluster. Whether it does, a fast LZ4 pass says first (dst: its
 * scratch); if not, the real fit does (is_fragment: n bytes for its take
 * of the rem left).
 */
static bool fragment_fits(const struct zseg *s, const struct zworker *w,
			  const uint8_t *src, size_t rem, uint8_t *dst)
{
	uint32_t pc = s->pclustersize;

	return rem <= pc ||
	       (rem <= w->extmax && kiln_compr_quick_fits(src, rem, pc, dst));
}

static bool is_fragment(const struct zseg *s, size_t rem, size_t take,
			long n)
{
	return n > 0 && take == rem && (size_t)n < s->pclustersize &&
	       round_up((uint64_t)n, s->blksz) < take;
}

/*
 * The fragment is the last rem bytes of the segment. A whole file's is
 * hashed here, in the worker, for the writer's search for an equal one.
 */
static void add_fragment(struct zseg *s, size_t rem)
{
	push_ext(s, (uint32_t)rem, 0, false, false);
	s->ext[s->nr_ext - 1].fragment = true;
	if (s->start == 0 && s->inlen == s->inode->size)
		s->frag_hash = kiln_hash64(s->in + s->inlen - rem, rem, 0);
}

/*
 * Stores up to nblocks blocks of input as plain (uncompressed) extents, up
 * to lim (an earlier pcluster found there) if the last one can end there.
 */
static size_t store_plain(struct zseg *s, size_t pos, size_t nblocks,
			  size_t lim)
{
	uint32_t blksz = s->blksz;
	size_t start = pos;

	while (nblocks-- && pos < s->inlen && pos != lim) {
		uint8_t *dst = s->out + s->outlen;
		size_t take = s->inlen - pos < blksz ? s->inlen - pos : blksz;

		if (pos < lim && lim - pos < take &&
		    (s->start + pos) / blksz < (s->start + lim) / blksz)
			take = lim - pos;

		memcpy(dst, s->in + pos, take);
		memset(dst + take, 0, blksz - take);
		add_ext(s, (uint32_t)take, 1, true);
		pos += take;
	}
	return pos - start;
}

/*
 * Cuts one segment into extents. An extent is compressed only if that saves
 * at least a block; otherwise its input is stored as plain blocks. An extent
 * starting in the file's last lcluster is always plain (the kernel wants
 * every compressed extent to reach into a following lcluster), unless it is
 * the inline tail.
 */
/*
 * Workers read their own input: the copy from the page cache is the main
 * thread's biggest cost otherwise, and it would cap the speed-up.
 */
static int read_segment(struct zseg *s)
{
	struct kiln_src src;
	ssize_t n;

	s->read_failed = true;
	if (kiln_src_open(s->inode, &src)) {
		s->error = errno;
		return -1;
	}
	n = kiln_src_pread(&src, s->in, s->inlen, s->start);
	s->error = n < 0 ? errno : (size_t)n != s->inlen ||
		   !kiln_src_unchanged(s->inode, &src) ? EAGAIN : 0;
	s->failed = src.failed;
	kiln_src_close(&src);
	s->read_failed = s->error != 0;
	return s->error ? -1 : 0;
}

/*
 * -E dedupe: the earlier pclusters in the segment's input, in w->m.
 *
 * Not searched: input that goes to the packed inode whole (one pcluster
 * of input or less at the file's end), as erofs-utils' rule says; it is
 * compressed there with its neighbours. In the packed inode only whole
 * pclusters are taken, no prefixes: its stream already has the files
 * before in its window, so a prefix there (a license header, a catalog's
 * first messages) saved less than cutting the stream cost. Measured on
 * the linux corpus: lz4 fragments 1.2 MB, lz4hc 1.4 MB smaller; rootfs 0
 * and 8 KB larger; searching small files found nothing on either.
 */
static size_t find_shifted(struct zseg *s, struct zworker *w, bool fragseg)
{
	size_t max = s->inlen / s->blksz + 1;

	if (!s->shift || (fragseg && s->inlen <= s->pclustersize) ||
	    (!w->sf && !(w->sf = kiln_shift_finder_new(s->shift))))
		return 0;
	if (w->mcap < max) {
		void *m = realloc(w->m, max * sizeof(*w->m));

		if (!m)
			return 0;
		w->m = m;
		w->mcap = max;
	}
	return kiln_shift_find(w->sf, s->in, s->inlen, s->seq, s->zcfg,
			       s->inode->packed_inode, w->m, max);
}

/*
 * Whether an earlier pcluster at m->pos can still get its own extent when
 * the next one starts at pos: there, or one lcluster on at least, as two
 * extents may not begin in one lcluster. Its own length always reaches
 * the next lcluster: plain ones are a block, compressed ones saved one.
 */
static bool placeable(const struct zseg *s, const struct kiln_shift_match *m,
		      size_t pos)
{
	return m->pos == pos || (m->pos > pos && (s->start + pos) / s->blksz <
				 (s->start + m->pos) / s->blksz);
}

static void add_ref(struct zseg *s, const struct kiln_shift_match *m)
{
	push_ext(s, (uint32_t)m->len, m->e->nblocks, m->e->plain, false);
	s->ext[s->nr_ext - 1].ref = true;
	s->ext[s->nr_ext - 1].partial = m->len < m->e->llen;
	s->ext[s->nr_ext - 1].blkaddr = m->e->blkaddr;
}

/*
 * Each new extent's anchor, for the writer to index (shifted.c): in its
 * first prefix_min bytes, where a match of a prefix of it must have it.
 */
static void anchor_extents(struct zseg *s)
{
	size_t pos = 0, min = kiln_shift_prefix_min((unsigned int)
						    __builtin_ctz(s->blksz));

	for (uint32_t i = 0; i < s->nr_ext; i++) {
		struct zseg_ext *x = &s->ext[i];
		size_t head = x->len < min ? x->len : min;

		if (!x->ref && !x->inlined && !x->fragment && x->len >= s->blksz &&
		    kiln_shift_anchor(s->in + pos, head, &x->anchor, &x->akey))
			x->sample = kiln_shift_sample(s->in + pos, head);
		pos += x->len;
	}
}

/*
 * An extent from pos that ends short of the match at lim, but in its
 * lcluster, would leave the match no head of its own; and a copy shifted
 * alike compresses alike, so every match after it would be lost too. Such
 * an extent is cut back to the lcluster before: the next then runs from
 * there to lim, over a block, and may end at lim. Returns n for *take.
 */
static long short_of_match(struct zseg *s, struct zworker *w, size_t pos,
			   size_t lim, size_t *take, uint8_t *dst, long n)
{
	size_t end = pos + *take, cut = (lim / s->blksz - 1) * s->blksz;

	if (end >= lim || end / s->blksz != lim / s->blksz ||
	    lim < 2 * (size_t)s->blksz || cut <= pos + s->blksz)
		return n;
	*take = cut - pos;
	return fit(w, s->in + pos, take, dst, s->pclustersize);
}

static void compress_segment(struct zseg *s, struct zworker *w)
{
	uint32_t blksz = s->blksz;
	uint64_t isize = s->inode->size, lastlc = (isize - 1) / blksz;
	bool lastseg = s->start + s->inlen == isize;
	bool fragseg = s->frag && lastseg;
	bool tailseg = w && w->o->compr.tailpacking && !s->frag && lastseg;
	size_t pos = 0;
	uint64_t t0;

	if (!w || (!s->flat && use_cfg(w, s->zcfg))) {
		s->error = ENOMEM;
		return;
	}
	t0 = kiln_prof_start();
	if (read_segment(s))
		return;
	t0 = kiln_prof_add(KILN_PROF_READ, t0);
	if (s->flat)	/* stored flat: zdata.c takes it from s->in */
		return;
	if (s->frag && w->o->compr.all_fragments) {	/* all of it, as it is */
		add_fragment(s, s->inlen);
		return;
	}
	w->ratio = 3.0;
	size_t nm = find_shifted(s, w, fragseg), mi = 0;
	while (pos < s->inlen) {
		while (mi < nm && !placeable(s, &w->m[mi], pos))
			mi++;
		if (mi < nm && w->m[mi].pos == pos) {
			add_ref(s, &w->m[mi]);
			pos += w->m[mi++].len;
			continue;
		}
		/* up to the next earlier pcluster found, if any */
		size_t lim = mi < nm ? w->m[mi].pos : s->inlen;
		size_t rem = lim - pos;
		size_t take = rem < w->extmax ? rem : w->extmax;
		uint8_t *dst = s->out + s->outlen;
		long n = 0;
		bool last = (s->start + pos) / blksz == lastlc;

		if (lim < s->inlen) {
			/* the file's end is not here: no tail or fragment */
		} else if (fragseg && fragment_fits(s, w, s->in + pos, rem, dst)) {
			add_fragment(s, rem);
			break;
		}
		/*
		 * A tail that may compress into the rest of a block: only
		 * near the end, so few pclusters pay for a try.
		 */
		if (tailseg && lim == s->inlen && rem <= 8 * (size_t)blksz &&
		    try_inline(s, w, s->in + pos, rem, dst))
			break;
		if (rem > blksz && !last) {
			n = fit(w, s->in + pos, &take, dst, s->pclustersize);
			if (n > 0 && lim < s->inlen)
				n = short_of_match(s, w, pos, lim, &take, dst, n);
			if (n < 0) {
				s->error = EIO;
				return;
			}
			if (fragseg && lim == s->inlen && is_fragment(s, rem, take, n)) {
				add_fragment(s, rem);
				break;
			}
		}
		if (n > 0 && round_up((uint64_t)n, blksz) < take) {
			uint32_t nb = (uint32_t)(round_up((uint64_t)n, blksz) / blksz);
			size_t pad = (size_t)nb * blksz - (size_t)n;

			/* 0PADDING: the stream ends where its pcluster ends */
			memmove(dst + pad, dst, (size_t)n);
			memset(dst, 0, pad);
			add_ext(s, (uint32_t)take, (uint16_t)nb, false);
			pos += take;
		} else {
			/*
			 * The whole window tried did not save a block: store it
			 * plain rather than retry from the next block, which
			 * costs a compression per block on incompressible data
			 * (3x the time for lz4hc, same image size).
			 */
			pos += store_plain(s, pos, n > 0 && take > blksz ?
						 take / blksz : 1, lim);
		}
	}
	if (s->shift)
		anchor_extents(s);
	kiln_prof_add(KILN_PROF_COMPRESS, t0);
}

void kiln_zseg_run(struct kiln_job *job, void *ctx)
{
	for (struct zseg *s = (struct zseg *)job; s; s = s->batch_next)
		compress_segment(s, ctx);
}

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "format/erofs_fs.h"
#include "kiln.h"
#include "layout.h"
#include "common/profile.h"
#include "common/util.h"
#include "common/workqueue.h"
#include "source.h"
#include "writeback.h"
#include "fragments.h"
#include "dedupe.h"
#include "zmap.h"
#include "records.h"
#include "zdata.h"
#include "zseg.h"
#include "zwriter.h"
#include "xattr.h"


/*
 * A batch: up to 16 small files' segments, or 1 MiB of input, in one job.
 * Retiring frees a batch's worth of ring slots at a time, or the next
 * batches would be one segment each.
 */
#define BATCH_SEGS 16u
#define BATCH_BYTES (1u << 20)
/* a full ring retires down to ring_size - BATCH_SEGS (kiln_zw_add) */
_Static_assert(KILN_SHIFT_LAG > 2 * BATCH_SEGS, "ring capped below a batch");

/*
 * Every segment ends in a partly filled pcluster, half a block lost on
 * average: 4 MiB segments cost a 4 GiB file 2 MiB more than 16 MiB ones.
 * So a big file gets bigger segments, up to SEG_MAX, while it still makes
 * at least 16 of them for the workers to share; a smaller one keeps several
 * pclusters per segment, and memory stays low when no big file comes.
 */
#define SEG_MIN (4u << 20)
#define SEG_MAX (16u << 20)

uint64_t kiln_zw_segment_max(void)
{
	return SEG_MAX;
}

/*
 * Extents decode to at most several pclusters, 4..8 MiB, whatever the
 * segment: the kernel decodes an extent from its start for every read in
 * it, so a 12 MiB extent of zeros reads 1.6x slower than 4 MiB ones.
 */
uint64_t kiln_zw_extent_max(const struct kiln_compr_cfg *cfg)
{
	uint64_t s = 8ull * cfg->pclustersize;

	return s < SEG_MIN ? SEG_MIN : s > (8u << 20) ? 8u << 20 : s;
}
_Static_assert((8u << 20) <= Z_EROFS_PCLUSTER_MAX_DSIZE, "extent too long");

static uint64_t seg_size(const struct kiln_compr_cfg *cfg, uint64_t isize)
{
	uint64_t s = kiln_zw_extent_max(cfg);

	while (s < SEG_MAX && s * 16 < isize)
		s *= 2;
	return s < SEG_MAX ? s : SEG_MAX;
}

/* Input, output (with room for one pcluster of fit output) and extents. */
static size_t seg_bytes(const struct kiln_zwriter *zw, size_t len)
{
	return round_up(len, 64) + round_up(len, zw->blksz) + zw->blksz +
	       (len > zw->blksz ? zw->cfg->pclustersize : 0) +
	       (len / zw->blksz + 2) * sizeof(struct zseg_ext);
}

/*
 * Segments are retired in the order they were queued, so their buffers come
 * from one arena used as a ring: no malloc/free (and no page faults, munmap
 * and TLB shootdowns) per segment. Returns the offset of n free bytes, or
 * -1 if the oldest segments must be retired first.
 */
static long arena_take(struct kiln_zwriter *zw, size_t n)
{
	struct zseg *old, *young;
	size_t lo, hi;

	if (!zw->count)
		return 0;
	old = &zw->ring[zw->head];
	young = &zw->ring[(zw->head + zw->count - 1) % zw->ring_size];
	lo = old->arena_off;
	hi = young->arena_off + young->arena_len;
	if (young->arena_off < lo)		/* wrapped: free is [hi, lo) */
		return hi + n <= lo ? (long)hi : -1;
	if (hi + n <= zw->arena_end)
		return (long)hi;
	return n <= lo ? 0 : -1;
}

/* The dictionary the reader decodes MicroLZMA with (shifted.c) */
static uint32_t lzma_dict(const struct kiln_mkfs_opts *o)
{
	for (unsigned int i = 0; i < o->nr_zcfgs; i++)
		if (kiln_zcfg(o, i)->c->alg == EROFS_ALG_LZMA)
			return kiln_zcfg(o, i)->dict_size;
	return 8u << 20;
}

struct kiln_zwriter *kiln_zw_start(const struct kiln_mkfs_opts *o,
				   struct kiln_workqueue *wq,
				   struct kiln_writeback *wb, int fd,
				   const char *image, unsigned int blkszbits,
				   uint64_t first_blk, struct kiln_records *recs)
{
	struct kiln_zwriter *zw = xcalloc(1, sizeof(*zw));
	const struct kiln_compr_cfg *cfg = &o->compr;
	unsigned int workers = wq->nr_threads;

	zw->o = o;
	zw->cfg = cfg;
	zw->wq = wq;
	zw->wb = wb;
	zw->fd = fd;
	zw->image = image;
	zw->blkszbits = blkszbits;
	zw->blksz = 1u << blkszbits;
	zw->next_blk = first_blk;
	zw->recs = recs;
	zw->workers = workers;
	/*
	 * Many small files may be in flight at once (so one big segment at
	 * the head does not idle the other workers), but never more than two
	 * full segments' buffers per worker. The arena is reserved for the
	 * biggest segments and touched only as far as the segments seen need.
	 */
	zw->ring_size = 64 * workers;
	/* -E dedupe: what a segment may find must be written when it is
	   queued (shifted.h) */
	if (cfg->dedupe && zw->ring_size > KILN_SHIFT_LAG)
		zw->ring_size = KILN_SHIFT_LAG;
	zw->arena_size = 2 * workers * seg_bytes(zw, SEG_MAX);
	zw->arena_end = 2 * workers * seg_bytes(zw, seg_size(cfg, 0));
	zw->ring = xcalloc(zw->ring_size, sizeof(*zw->ring));
	zw->arena = xmalloc(zw->arena_size);
	if (cfg->dedupe) {
		kiln_dedupe_init(&zw->dd, fd, blkszbits);
		kiln_shift_init(&zw->shift, fd, blkszbits, lzma_dict(o));
	}
	return zw;
}

static void queue_batch(struct kiln_zwriter *zw)
{
	if (!zw->batch)
		return;
	zw->batch->job.fn = kiln_zseg_run;
	kiln_wq_submit(zw->wq, &zw->batch->job);
	zw->batch = zw->batch_tail = NULL;
	zw->batch_len = 0;
	zw->batch_bytes = 0;
}

static void batch_add(struct kiln_zwriter *zw, struct zseg *s)
{
	if (s->inlen >= BATCH_BYTES)	/* alone, after what came before */
		queue_batch(zw);
	s->batch_next = NULL;
	s->leader = !zw->batch;
	if (zw->batch)
		zw->batch_tail->batch_next = s;
	else
		zw->batch = s;
	zw->batch_tail = s;
	zw->batch_bytes += s->inlen;
	if (++zw->batch_len == BATCH_SEGS || zw->batch_bytes >= BATCH_BYTES)
		queue_batch(zw);
}

/*
 * The packed inode's content, at the first fragment: with long xattr
 * prefixes, their table first (the kernel reads it from there).
 */
static void open_fragments(struct kiln_zwriter *zw)
{
	uint8_t *table;
	size_t n;

	if (zw->frags_open)
		return;
	kiln_fragments_open(&zw->frags);
	zw->frags_open = true;
	if (!kiln_prefixes_packed(zw->o))
		return;
	n = kiln_xattr_prefixes_encode(zw->o->xattr_prefixes,
				       zw->o->nr_xattr_prefixes, NULL);
	table = xcalloc(1, n);
	kiln_xattr_prefixes_encode(zw->o->xattr_prefixes,
				   zw->o->nr_xattr_prefixes, table);
	kiln_fragments_add_mem(&zw->frags, table, n);
}

/*
 * The file's fragment, the n bytes at pos (p holds them), to the packed
 * inode's content (in file order).
 */
static int add_fragment(struct kiln_zwriter *zw, struct zfile *f,
			const struct zseg *s, uint64_t pos, size_t n)
{
	/* a fragment in pieces (-E all-fragments) must stay in one piece */
	bool whole = f->segsize >= f->in->size;
	const char *failed = NULL;
	uint64_t off;

	open_fragments(zw);
	if (kiln_fragments_add(&zw->frags, f->in, pos,
			       s->in + (pos - s->start), n, s->frag_hash,
			       whole, &off, &failed)) {
		kiln_err("%s: %s", failed, errno == EAGAIN ?
			 "file changed while being read" : strerror(errno));
		return -1;
	}
	if (!f->has_frag)
		f->frag_off = off;
	f->has_frag = true;
	return 0;
}

static void add_pending(struct zfile *f, const struct kiln_pcl *c)
{
	if (f->nr_pend == f->cap_pend) {
		f->cap_pend = f->cap_pend ? 2 * f->cap_pend : 8;
		f->pend = xrealloc(f->pend, f->cap_pend * sizeof(*f->pend));
	}
	f->pend[f->nr_pend++] = *c;
}

/*
 * The segment's new pclusters, written, for later segments to find at any
 * offset once the file keeps them (kiln_zfile_done: a file stored flat or
 * chunk-based gives its blocks back); a pcluster found equal was indexed
 * where it was written.
 */
static void index_shifted(struct kiln_zwriter *zw, const struct zseg *s,
			  struct zfile *f)
{
	for (uint32_t i = 0; i < s->nr_ext; i++) {
		const struct zseg_ext *x = &s->ext[i];

		if (!x->anchor || x->ref || !x->nblocks)
			continue;
		if (f->nr_spend == f->cap_spend) {
			f->cap_spend = f->cap_spend ? 2 * f->cap_spend : 8;
			f->spend = xrealloc(f->spend, f->cap_spend *
					    sizeof(*f->spend));
		}
		f->spend[f->nr_spend++] = (struct kiln_shift_ent){
			.key = x->akey, .sample = x->sample,
			.anchor = x->anchor, .blkaddr = x->blkaddr,
			.llen = x->len, .nblocks = x->nblocks, .zcfg = s->zcfg,
			.alg = kiln_zcfg(zw->o, s->zcfg)->c->alg,
			.plain = x->plain,
		};
	}
}

/*
 * Writes the segment's pclusters after the data so far and gives each
 * extent its block, but for pclusters -E dedupe finds written before:
 * those point there, and the rest close up in s->out (its inline tail,
 * after them, stays where it is).
 */
static int write_segment(struct kiln_zwriter *zw, struct zseg *s,
			 struct zfile *f)
{
	size_t at = 0, kept = 0;

	for (uint32_t i = 0; i < s->nr_ext; i++) {
		struct zseg_ext *x = &s->ext[i];
		size_t n = (size_t)x->nblocks << zw->blkszbits;
		struct kiln_pcl c = { .nblocks = x->nblocks, .llen = x->len,
				      .plain = x->plain };

		if (x->ref) {		/* an earlier pcluster at a shift */
			f->shared = true;
			continue;
		}
		if (!n) {		/* inline or a fragment: where the
					   next block goes, as ever */
			x->blkaddr = (uint32_t)(zw->next_blk +
						(kept >> zw->blkszbits));
			continue;
		}
		if (zw->cfg->dedupe && kiln_dedupe_find(&zw->dd, s->out + at, &c)) {
			x->blkaddr = c.blkaddr;
			x->anchor = 0;		/* indexed as that one */
			f->shared = true;
		} else {
			if (kept != at)
				memmove(s->out + kept, s->out + at, n);
			x->blkaddr = (uint32_t)(zw->next_blk +
						(kept >> zw->blkszbits));
			c.blkaddr = x->blkaddr;
			if (zw->cfg->dedupe)
				add_pending(f, &c);
			kept += n;
		}
		at += n;
	}
	if (zw->wb)
		kiln_writeback_add(zw->wb, kept);
	if (kept && pwrite_all(zw->fd, s->out, kept,
			       (uint64_t)zw->next_blk << zw->blkszbits))
		return -1;
	zw->next_blk += kept >> zw->blkszbits;
	f->wblocks += kept >> zw->blkszbits;
	f->last_seq = s->seq;
	if (zw->cfg->dedupe)
		index_shifted(zw, s, f);
	return 0;
}

/* Writes the oldest in-flight segment and records its extents. */
static int retire_one(struct kiln_zwriter *zw)
{
	struct zseg *s = &zw->ring[zw->head];
	struct zfile *f = s->f;
	uint64_t pos = s->start;
	int ret = 0;
	uint64_t t0 = kiln_prof_start();

	/* the workers must have everything before we wait for any of it */
	queue_batch(zw);
	/* a batch is done when its first segment's job is */
	if (s->leader)
		kiln_wq_wait(zw->wq, &s->job);
	t0 = kiln_prof_add(KILN_PROF_WAIT, t0);
	zw->head = (zw->head + 1) % zw->ring_size;
	zw->count--;
	if (f->failed) {
		ret = -1;
	} else if (s->error) {
		kiln_err("%s: %s%s", s->failed ? s->failed : f->in->srcpath,
			 s->read_failed ? "" : "compression failed: ",
			 s->error == EAGAIN ?
			 "file changed while being read" : strerror(s->error));
		ret = -1;
	} else if (zw->next_blk + s->outlen / zw->blksz > EROFS_MAX_BLOCKS) {
		ret = kiln_err_too_large(zw->blkszbits);
	} else if (write_segment(zw, s, f)) {
		kiln_err("%s: write failed: %s", zw->image, strerror(errno));
		ret = -1;
	}
	/*
	 * Room for this segment's extents: a small file's few, exactly (the
	 * list stays with its inode to the end: at 16 to start with, the
	 * linux corpus's lists took 14 MB, most of it empty).
	 */
	if (!ret && f->nr_ext + s->nr_ext > f->cap_ext) {
		uint32_t need = f->nr_ext + s->nr_ext;

		f->cap_ext = f->cap_ext ? f->cap_ext * 2 : need;
		if (f->cap_ext < need)
			f->cap_ext = need;
		f->ext = xrealloc(f->ext, f->cap_ext * sizeof(*f->ext));
	}
	for (uint32_t i = 0; i < s->nr_ext && !ret; i++) {
		f->ext[f->nr_ext++] = (struct kiln_extent){
			.start = pos, .blkaddr = s->ext[i].blkaddr,
			.nblocks = s->ext[i].nblocks, .plain = s->ext[i].plain,
			.inlined = s->ext[i].inlined,
			.fragment = s->ext[i].fragment,
			.partial = s->ext[i].partial,
		};
		if (s->ext[i].fragment &&
		    add_fragment(zw, f, s, pos, s->ext[i].len))
			ret = -1;
		pos += s->ext[i].len;
		f->blocks += s->ext[i].nblocks;
	}
	f->failed |= ret != 0;
	/* the tail stays valid in the arena until the next segment is queued */
	f->tail = s->out + s->outlen;
	f->tail_len = s->tail_len;
	f->raw = s->start == 0 && s->inlen == f->in->size ? s->in : NULL;
	if (--f->segs_left == 0 && kiln_zfile_done(zw, f))
		ret = -1;
	kiln_prof_add(KILN_PROF_PLACE, t0);
	return ret;
}

/* Gives up on a file from segment offset off on; in-flight ones drain. */
static int abandon(struct kiln_zwriter *zw, struct zfile *f, uint64_t off)
{
	uint32_t unsent = (uint32_t)((f->in->size - off + f->segsize - 1) /
				     f->segsize);

	f->failed = true;
	f->segs_left -= unsent;
	if (!f->segs_left)
		kiln_zfile_done(zw, f);
	return -1;
}

/* Room for two of this file's segments per worker, from now on. */
static void grow_arena(struct kiln_zwriter *zw, uint64_t segsize)
{
	size_t need = 2 * zw->workers * seg_bytes(zw, (size_t)segsize);

	if (need > zw->arena_end)
		zw->arena_end = need;
}

/*
 * Where the index ends, at most (in->zbase, the record's bound) and at
 * least, whatever the inode's base turns out to be: the compact index's
 * packs depend on where it starts, mod 32. An inline tail's room is what
 * the block the index ends in has left at most; a record over a block
 * starts one, so only the end's offset in its block counts. If the index
 * may end in either of two blocks, there is no room.
 */
static void zbase_range(const struct kiln_zwriter *zw, struct kiln_inode *in,
			uint32_t base_min)
{
	struct kiln_zmap_fmt fmt = kiln_zfmt(kiln_zcfg(zw->o, in->zcfg),
					     zw->blkszbits, 0);
	uint64_t most = 0, least = UINT64_MAX, lo, hi;

	for (fmt.ebase_mod32 = 0; fmt.ebase_mod32 < 32; fmt.ebase_mod32 += 8) {
		uint64_t n = kiln_zmap_size(in->size, &fmt);

		most = n > most ? n : most;
		least = n < least ? n : least;
	}
	/* -E dedupe: a file sharing a pcluster gets a full index instead */
	if (zw->cfg->dedupe && fmt.compact) {
		uint64_t n;

		fmt.compact = false;
		n = kiln_zmap_size(in->size, &fmt);
		most = n > most ? n : most;
	}
	lo = round_up(base_min, 8) + least;
	hi = round_up(in->base_max, 8) + most;
	in->zbase = (uint32_t)hi;
	in->ztail_room = lo / zw->blksz == hi / zw->blksz ?
			 zw->blksz - (uint32_t)(hi % zw->blksz) : 0;
}

int kiln_zw_add(struct kiln_zwriter *zw, struct kiln_inode *in,
		uint32_t base_min, uint32_t base_max)
{
	uint64_t t0 = kiln_prof_start();
	struct zfile *f = xcalloc(1, sizeof(*f));

	in->base_max = base_max;
	zbase_range(zw, in, base_min);
	f->in = in;
	/* the packed inode is the first algorithm's: a file given another
	   by a hint keeps it for all of its data */
	f->frag = zw->cfg->fragments && !in->packed_inode && !in->zcfg;
	/*
	 * A file of one block or less cannot save a block by compression,
	 * but as a fragment it is compressed with the others.
	 */
	f->flat = in->size <= zw->blksz && !f->frag;
	f->segsize = seg_size(zw->cfg, in->size);
	f->segs_left = (uint32_t)((in->size + f->segsize - 1) / f->segsize);
	grow_arena(zw, f->segsize);
	for (uint64_t off = 0; off < in->size; off += f->segsize) {
		struct zseg *s;
		size_t len = in->size - off < f->segsize ?
			     (size_t)(in->size - off) : (size_t)f->segsize;

		size_t need = seg_bytes(zw, len);
		long at;

		kiln_prof_add(KILN_PROF_QUEUE, t0);
		if (zw->count == zw->ring_size)
			while (zw->count > zw->ring_size - BATCH_SEGS)
				if (retire_one(zw))
					return abandon(zw, f, off);
		while ((at = arena_take(zw, need)) < 0)
			if (retire_one(zw))
				return abandon(zw, f, off);
		t0 = kiln_prof_start();
		s = &zw->ring[(zw->head + zw->count) % zw->ring_size];
		s->f = f;
		s->inode = in;
		s->shift = zw->cfg->dedupe ? &zw->shift : NULL;
		s->seq = zw->nr_segs++;
		s->blksz = zw->blksz;
		s->zcfg = in->zcfg;
		s->pclustersize = in->zpclustersize;
		s->start = off;
		s->arena_off = (size_t)at;
		s->arena_len = need;
		s->inlen = len;
		s->in = zw->arena + at;
		s->out = s->in + round_up(len, 64);
		s->ext = (void *)(s->in + need - (len / zw->blksz + 2) *
				  sizeof(*s->ext));
		s->outlen = 0;
		s->tail_len = 0;
		s->nr_ext = 0;
		s->error = 0;
		s->failed = NULL;
		s->frag_hash = 0;
		s->read_failed = false;
		s->flat = f->flat;
		s->frag = f->frag;
		batch_add(zw, s);
		zw->count++;
	}
	kiln_prof_add(KILN_PROF_QUEUE, t0);
	return 0;
}

int kiln_zw_fragments_done(struct kiln_zwriter *zw, struct kiln_inode *packed)
{
	int ret = 0;

	while (zw->count)
		if (retire_one(zw))
			ret = -1;
	if (kiln_prefixes_packed(zw->o))
		open_fragments(zw);
	if (!zw->frags_open)
		return ret;
	packed->frags = &zw->frags;
	packed->size = zw->frags.end;
	return ret;
}

int kiln_zw_finish(struct kiln_zwriter *zw, uint64_t *end_blk)
{
	int ret = 0;

	while (zw->count)
		if (retire_one(zw))
			ret = -1;
	if (zw->frags_open)
		kiln_fragments_close(&zw->frags);
	if (zw->cfg->dedupe) {
		kiln_dedupe_free(&zw->dd);
		kiln_shift_free(&zw->shift);
	}
	*end_blk = zw->next_blk;
	free(zw->ring);
	free(zw->arena);
	free(zw);
	return ret;
}

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
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
#include "zmap.h"
#include "zmeta.h"
#include "zdata.h"

/* Per-file state, alive until its last segment is written. */
struct zfile {
	struct kiln_inode *in;
	struct kiln_extent *ext;
	uint32_t nr_ext, cap_ext;
	uint32_t segs_left;
	uint64_t blocks;
	const uint8_t *tail;		/* inline tail, from the last segment */
	const uint8_t *raw;		/* the whole file, if one segment */
	uint16_t tail_len;
	bool failed;
};

struct zseg {
	struct kiln_job job;
	struct kiln_zwriter *zw;
	struct zfile *f;
	uint64_t start;			/* segment offset in the file */
	size_t arena_off, arena_len;	/* where in, out and ext live */
	uint8_t *in, *out;
	size_t inlen, outlen;		/* out: blocks, then any inline tail */
	struct {
		uint32_t len;
		uint16_t nblocks;
		bool plain, inlined;
	} *ext;
	uint32_t nr_ext;
	uint16_t tail_len;		/* bytes of the inline tail pcluster */
	int error;			/* errno; EAGAIN: the file changed */
	bool read_failed;
};

struct kiln_zwriter {
	const struct kiln_compr_cfg *cfg;
	struct kiln_workqueue *wq;
	int fd;
	const char *image;
	unsigned int blkszbits;
	uint32_t blksz;
	uint64_t next_blk;		/* 64-bit: checked, never wrapped */
	uint64_t segsize;
	struct kiln_zmeta *zmeta;
	struct zseg *ring;		/* in-flight segments, FIFO */
	unsigned int ring_size, head, count;
	uint8_t *arena;			/* their buffers, also FIFO */
	size_t arena_size;
	struct kiln_writeback wb;
};

struct zworker {
	const struct kiln_compr_cfg *cfg;
	void *cctx;
	uint8_t *scratch;
	size_t scratchcap;
	double ratio;			/* input/output of the last fit */
};
/*
 * The ratio guides the search for zstd/deflate and so shapes the extents:
 * it restarts with every segment, or output would depend on which worker
 * compressed what before.
 */

uint64_t kiln_zw_segment_size(const struct kiln_compr_cfg *cfg)
{
	/* several pclusters per segment; at most 8 MiB (kernel: 12 MiB) */
	uint64_t s = 8ull * cfg->pclustersize;

	return s < (4u << 20) ? 4u << 20 : s > (8u << 20) ? 8u << 20 : s;
}

/* Input, output (with room for one pcluster of fit output) and extents. */
static size_t seg_bytes(const struct kiln_zwriter *zw, size_t len)
{
	return round_up(len, 64) + round_up(len, zw->blksz) + zw->blksz +
	       (len > zw->blksz ? zw->cfg->pclustersize : 0) +
	       (len / zw->blksz + 2) * sizeof(*((struct zseg *)0)->ext);
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
	if (hi + n <= zw->arena_size)
		return (long)hi;
	return n <= lo ? 0 : -1;
}

void *kiln_zw_worker_init(void *arg)
{
	const struct kiln_compr_cfg *cfg = arg;
	struct zworker *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->cfg = cfg;
	w->cctx = cfg->c->create(cfg);
	w->scratchcap = kiln_zw_segment_size(cfg) * 2 + 65536;
	w->scratch = cfg->c->compress ? malloc(w->scratchcap) : NULL;
	if (!w->cctx || (cfg->c->compress && !w->scratch)) {
		if (w->cctx)
			cfg->c->destroy(w->cctx);
		free(w->scratch);
		free(w);
		return NULL;
	}
	return w;
}

void kiln_zw_worker_exit(void *p)
{
	struct zworker *w = p;

	w->cfg->c->destroy(w->cctx);
	free(w->scratch);
	free(w);
}

static void push_ext(struct zseg *s, uint32_t len, uint16_t nblocks,
		     bool plain, bool inlined)
{
	s->ext[s->nr_ext].len = len;
	s->ext[s->nr_ext].nblocks = nblocks;
	s->ext[s->nr_ext].inlined = inlined;
	s->ext[s->nr_ext++].plain = plain;
}

static void add_ext(struct zseg *s, uint32_t len, uint16_t nblocks, bool plain)
{
	push_ext(s, len, nblocks, plain, false);
	s->outlen += (size_t)nblocks * s->zw->blksz;
}

static long fit(struct zworker *w, const uint8_t *src, size_t *len,
		uint8_t *dst, size_t cap)
{
	const struct kiln_compressor *c = w->cfg->c;

	if (c->compress_destsize)
		return c->compress_destsize(w->cctx, src, len, dst, cap,
					    &w->ratio);
	return kiln_fit_by_search(c, w->cctx, src, len, dst, cap, w->scratch,
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
	uint32_t blksz = s->zw->blksz;
	uint32_t tmax = blksz - s->f->in->zbase % blksz;
	size_t take = rem;
	long n = fit(w, src, &take, dst, tmax);

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

/* Stores up to nblocks blocks of input as plain (uncompressed) extents. */
static size_t store_plain(struct zseg *s, size_t pos, size_t nblocks)
{
	uint32_t blksz = s->zw->blksz;
	size_t start = pos;

	while (nblocks-- && pos < s->inlen) {
		uint8_t *dst = s->out + s->outlen;
		size_t take = s->inlen - pos < blksz ? s->inlen - pos : blksz;

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
	int fd = kiln_src_open(s->f->in);
	ssize_t n;

	s->read_failed = true;
	if (fd < 0) {
		s->error = errno;
		return -1;
	}
	n = pread_all(fd, s->in, s->inlen, s->start);
	s->error = n < 0 ? errno : (size_t)n != s->inlen ||
		   !kiln_src_unchanged(s->f->in, fd) ? EAGAIN : 0;
	close(fd);
	s->read_failed = s->error != 0;
	return s->error ? -1 : 0;
}

static void compress_segment(struct kiln_job *job, void *ctx)
{
	struct zseg *s = (struct zseg *)job;
	struct zworker *w = ctx;
	uint32_t blksz = s->zw->blksz;
	uint64_t isize = s->f->in->size, lastlc = (isize - 1) / blksz;
	bool tailseg = w && w->cfg->tailpacking && s->start + s->inlen == isize;
	size_t pos = 0;
	uint64_t t0;

	if (!w) {
		s->error = ENOMEM;
		return;
	}
	t0 = kiln_prof_start();
	if (read_segment(s))
		return;
	t0 = kiln_prof_add(KILN_PROF_READ, t0);
	w->ratio = 3.0;
	while (pos < s->inlen) {
		size_t rem = s->inlen - pos, take = rem;
		uint8_t *dst = s->out + s->outlen;
		long n = 0;
		bool last = (s->start + pos) / blksz == lastlc;

		/*
		 * A tail that may compress into the rest of a block: only
		 * near the end, so few pclusters pay for a try.
		 */
		if (tailseg && rem <= 8 * (size_t)blksz &&
		    try_inline(s, w, s->in + pos, rem, dst))
			break;
		if (rem > blksz && !last) {
			n = fit(w, s->in + pos, &take, dst, w->cfg->pclustersize);
			if (n < 0) {
				s->error = EIO;
				return;
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
						 take / blksz : 1);
		}
	}
	kiln_prof_add(KILN_PROF_COMPRESS, t0);
}

struct kiln_zwriter *kiln_zw_start(const struct kiln_compr_cfg *cfg,
				   struct kiln_workqueue *wq, int fd,
				   const char *image, unsigned int blkszbits,
				   uint64_t first_blk, struct kiln_zmeta *zmeta)
{
	struct kiln_zwriter *zw = xcalloc(1, sizeof(*zw));
	unsigned int workers = wq->nr_threads;

	zw->cfg = cfg;
	zw->wq = wq;
	zw->wb = (struct kiln_writeback){ .fd = fd, .wq = wq };
	zw->fd = fd;
	zw->image = image;
	zw->blkszbits = blkszbits;
	zw->blksz = 1u << blkszbits;
	zw->next_blk = first_blk;
	zw->zmeta = zmeta;
	zw->segsize = kiln_zw_segment_size(cfg);
	/*
	 * Many small files may be in flight at once (so one big segment at
	 * the head does not idle the other workers), but never more than two
	 * full segments' buffers per worker.
	 */
	zw->ring_size = 64 * workers;
	zw->arena_size = 2 * workers * seg_bytes(zw, zw->segsize);
	zw->ring = xcalloc(zw->ring_size, sizeof(*zw->ring));
	zw->arena = xmalloc(zw->arena_size);
	return zw;
}

/* Places the inode with its index and inline tail in the second area. */
static void place_zinode(struct kiln_zwriter *zw, struct zfile *f)
{
	struct kiln_inode *in = f->in;
	struct kiln_zmap_fmt fmt = kiln_zfmt(zw->cfg, zw->blkszbits,
					       kiln_inode_base_size(in));
	uint8_t *p = kiln_zmeta_place(zw->zmeta, in, in->zbase + f->tail_len);

	kiln_zmap_encode(p + round_up(kiln_inode_base_size(in), 8), f->ext,
			   f->nr_ext, in->size, f->tail_len, &fmt);
	memcpy(p + in->zbase, f->tail, f->tail_len);
	in->inline_size = f->tail_len;
	in->zblocks = f->blocks;
}

/*
 * Blocks the file would take stored flat, with its partial last block
 * inline in the inode's record when that fits a block.
 */
static uint64_t flat_blocks(const struct kiln_inode *in, uint32_t blksz,
			    uint32_t *inline_tail)
{
	uint32_t tail = (uint32_t)(in->size % blksz);

	*inline_tail = tail && kiln_inode_base_size(in) + tail <= blksz ?
		       tail : 0;
	return in->size / blksz + (tail && !*inline_tail);
}

/*
 * Compression did not pay (incompressible data: every block plain, and the
 * partial last one a whole block): take the file's blocks back, they are
 * the last ones written, and store it flat from the input still at hand.
 */
static int store_flat(struct kiln_zwriter *zw, struct zfile *f,
		      uint64_t nblocks, uint32_t tail)
{
	struct kiln_inode *in = f->in;
	uint64_t body = in->size - tail;
	uint32_t part = (uint32_t)(body % zw->blksz);
	uint64_t at = (uint64_t)(zw->next_blk - f->blocks) << zw->blkszbits;
	uint8_t *p, *pad = NULL;
	int ret = 0;

	zw->next_blk -= f->blocks;
	if (pwrite_all(zw->fd, f->raw, body - part, at))
		ret = -1;
	if (part && !ret) {	/* the last block, zero-padded */
		pad = xcalloc(1, zw->blksz);
		memcpy(pad, f->raw + body - part, part);
		ret = pwrite_all(zw->fd, pad, zw->blksz, at + body - part);
		free(pad);
	}
	if (ret)
		return kiln_err("%s: write failed: %s", zw->image,
				strerror(errno)), -1;
	in->compressed = false;
	in->datalayout = tail ? EROFS_INODE_FLAT_INLINE : EROFS_INODE_FLAT_PLAIN;
	in->startblk = (uint32_t)zw->next_blk;	/* no higher than before */
	in->inline_size = tail;
	zw->next_blk += nblocks;
	p = kiln_zmeta_place(zw->zmeta, in, kiln_inode_base_size(in) + tail);
	memcpy(p + kiln_inode_base_size(in), f->raw + body, tail);
	return 0;
}

static int file_done(struct kiln_zwriter *zw, struct zfile *f)
{
	struct kiln_inode *in = f->in;
	int ret = 0;

	if (f->failed) {
		ret = -1;
	} else {
		uint32_t tail;
		uint64_t flat = flat_blocks(in, zw->blksz, &tail);

		if (f->raw && flat < f->blocks)
			ret = store_flat(zw, f, flat, tail);
		else
			place_zinode(zw, f);
	}
	free(f->ext);
	free(f);
	return ret;
}

/* Writes the oldest in-flight segment and records its extents. */
static int retire_one(struct kiln_zwriter *zw)
{
	struct zseg *s = &zw->ring[zw->head];
	struct zfile *f = s->f;
	uint64_t pos = s->start;
	int ret = 0;
	uint64_t t0 = kiln_prof_start();

	kiln_wq_wait(zw->wq, &s->job);
	t0 = kiln_prof_add(KILN_PROF_WAIT, t0);
	zw->head = (zw->head + 1) % zw->ring_size;
	zw->count--;
	if (f->failed) {
		ret = -1;
	} else if (s->error) {
		kiln_err("%s: %s%s", f->in->srcpath, s->read_failed ?
			 "" : "compression failed: ", s->error == EAGAIN ?
			 "file changed while being read" : strerror(s->error));
		ret = -1;
	} else if (zw->next_blk + s->outlen / zw->blksz > EROFS_MAX_BLOCKS) {
		ret = kiln_err_too_large(zw->blkszbits);
	} else if (pwrite_all(zw->fd, s->out, s->outlen,
			      (uint64_t)zw->next_blk << zw->blkszbits)) {
		kiln_err("%s: write failed: %s", zw->image, strerror(errno));
		ret = -1;
	}
	kiln_writeback_add(&zw->wb, s->outlen);
	for (uint32_t i = 0; i < s->nr_ext && !ret; i++) {
		if (f->nr_ext == f->cap_ext) {
			f->cap_ext = f->cap_ext ? f->cap_ext * 2 : 16;
			f->ext = xrealloc(f->ext, f->cap_ext * sizeof(*f->ext));
		}
		f->ext[f->nr_ext++] = (struct kiln_extent){
			.start = pos, .blkaddr = (uint32_t)zw->next_blk,
			.nblocks = s->ext[i].nblocks, .plain = s->ext[i].plain,
			.inlined = s->ext[i].inlined,
		};
		pos += s->ext[i].len;
		zw->next_blk += s->ext[i].nblocks;
		f->blocks += s->ext[i].nblocks;
	}
	f->failed |= ret != 0;
	/* the tail stays valid in the arena until the next segment is queued */
	f->tail = s->out + s->outlen;
	f->tail_len = s->tail_len;
	f->raw = s->start == 0 && s->inlen == f->in->size ? s->in : NULL;
	if (--f->segs_left == 0 && file_done(zw, f))
		ret = -1;
	kiln_prof_add(KILN_PROF_PLACE, t0);
	return ret;
}

/* Gives up on a file from segment offset off on; in-flight ones drain. */
static int abandon(struct kiln_zwriter *zw, struct zfile *f, uint64_t off)
{
	uint32_t unsent = (uint32_t)((f->in->size - off + zw->segsize - 1) /
				     zw->segsize);

	f->failed = true;
	f->segs_left -= unsent;
	if (!f->segs_left)
		file_done(zw, f);
	return -1;
}

int kiln_zw_add(struct kiln_zwriter *zw, struct kiln_inode *in)
{
	uint64_t t0 = kiln_prof_start();
	struct zfile *f = xcalloc(1, sizeof(*f));

	f->in = in;
	f->segs_left = (uint32_t)((in->size + zw->segsize - 1) / zw->segsize);
	for (uint64_t off = 0; off < in->size; off += zw->segsize) {
		struct zseg *s;
		size_t len = in->size - off < zw->segsize ?
			     (size_t)(in->size - off) : (size_t)zw->segsize;

		size_t need = seg_bytes(zw, len);
		long at;

		kiln_prof_add(KILN_PROF_QUEUE, t0);
		while (zw->count == zw->ring_size ||
		       (at = arena_take(zw, need)) < 0)
			if (retire_one(zw))
				return abandon(zw, f, off);
		t0 = kiln_prof_start();
		s = &zw->ring[(zw->head + zw->count) % zw->ring_size];
		s->zw = zw;
		s->f = f;
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
		s->read_failed = false;
		s->job.fn = compress_segment;
		kiln_wq_submit(zw->wq, &s->job);
		zw->count++;
	}
	kiln_prof_add(KILN_PROF_QUEUE, t0);
	return 0;
}

int kiln_zw_finish(struct kiln_zwriter *zw, uint64_t *end_blk)
{
	int ret = 0;

	while (zw->count)
		if (retire_one(zw))
			ret = -1;
	*end_blk = zw->next_blk;
	free(zw->ring);
	free(zw->arena);
	free(zw);
	return ret;
}

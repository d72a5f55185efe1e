/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "common/fullio.h"
#include "common/util.h"
#include "format/erofs_fs.h"
#include "kiln.h"
#include "layout.h"
#include "zdata.h"
#include "zmap.h"
#include "zwriter.h"

/*
 * Stages the inode's record at its largest, the inline tail after the
 * bound on its index; the extents wait with it for kiln_zinode_finish.
 */
static void place_zinode(struct kiln_zwriter *zw, struct zfile *f)
{
	struct kiln_inode *in = f->in;
	uint8_t *p = kiln_records_stage(zw->recs, in, in->zbase + f->tail_len);

	memcpy(p + in->zbase, f->tail, f->tail_len);
	in->rec_tail = in->zbase;
	in->frag_off = f->frag_off;
	in->frag_whole = f->has_frag && f->nr_ext && f->ext[0].fragment;
	/* a whole-file fragment has no index to be compact: erofs-utils' too */
	/* a compact index finds a head's block from the heads before it */
	in->datalayout = zw->cfg->full_index || in->frag_whole || f->shared ?
			 EROFS_INODE_COMPRESSED_FULL :
			 EROFS_INODE_COMPRESSED_COMPACT;
	in->inline_size = f->tail_len;
	in->zblocks = f->blocks;
	in->zext = f->ext;
	in->nr_zext = f->nr_ext;
	f->ext = NULL;
}

int kiln_zinode_finish(struct kiln_inode *in, const struct kiln_compr_cfg *cfg,
		       unsigned int blkszbits)
{
	uint32_t base = kiln_inode_base_size(in);
	uint32_t at = base;

	if (base > in->base_max) {
		kiln_err("%s: internal error: record base %u over its bound %u",
			 in->srcpath, base, in->base_max);
		return -1;
	}
	if (in->frag_whole) {
		at = in->zbase = (uint32_t)round_up(base, 8) +
				 Z_EROFS_MAP_HEADER_SIZE;
		kiln_zmap_encode_fragment_only(in->rec + round_up(base, 8),
					       in->frag_off);
	} else if (kiln_inode_zmapped(in)) {
		struct kiln_zmap_fmt fmt = kiln_zfmt(cfg, blkszbits, base);

		fmt.compact = in->datalayout == EROFS_INODE_COMPRESSED_COMPACT;
		if (in->nr_zext && in->zext[in->nr_zext - 1].fragment &&
		    fmt.compact && in->frag_off >> 32) {
			kiln_err("%s: over 4 GiB of fragments before its own: "
				 "compact indexes cannot say where it is (use "
				 "-E legacy-compress)", in->srcpath);
			return -1;
		}
		in->zbase = (uint32_t)round_up(base, 8) +
			    (uint32_t)kiln_zmap_size(in->size, &fmt);
		at = in->zbase;
		kiln_zmap_encode(in->rec + round_up(base, 8), in->zext,
				 in->nr_zext, in->size,
				 (uint16_t)in->inline_size, in->frag_off, &fmt);
		/* freed with the tree, once the workers are gone: freed
		   here, one by one, musl hands their pages back while the
		   workers run, an munmap and a TLB shootdown every few */
	}
	if (at > in->rec_tail) {
		kiln_err("%s: internal error: index ends at %u, after its "
			 "bound %u", in->srcpath, at, in->rec_tail);
		return -1;
	}
	memmove(in->rec + at, in->rec + in->rec_tail, in->inline_size);
	in->rec_size = at + in->inline_size;
	return 0;
}

/*
 * Blocks the file would take stored flat, with its partial last block
 * inline in the inode's record when it can be whatever its base turns
 * out to be.
 */
static uint64_t flat_blocks(const struct kiln_inode *in, uint32_t blksz,
			    uint32_t *inline_tail)
{
	uint32_t tail = (uint32_t)(in->size % blksz);

	*inline_tail = !in->no_inline &&
		       kiln_tail_inlines_max(in->base_max, tail, blksz) ?
		       tail : 0;
	return in->size / blksz + (tail && !*inline_tail);
}

/*
 * -E dedupe: the blocks of a file just stored flat, as the plain pclusters
 * a later copy of it would be made of (the last one zero-padded).
 */
static void offer_flat(struct kiln_zwriter *zw, const uint8_t *p,
		       uint64_t len, uint32_t blk)
{
	uint8_t *pad = xcalloc(1, zw->blksz);

	for (uint64_t at = 0; at < len; at += zw->blksz, blk++) {
		struct kiln_pcl c = { .nblocks = 1, .blkaddr = blk,
				      .plain = true, .llen = zw->blksz };

		if (len - at < zw->blksz) {
			c.llen = (uint32_t)(len - at);
			memcpy(pad, p + at, c.llen);
		}
		kiln_dedupe_offer(&zw->dd, c.llen < zw->blksz ? pad : p + at,
				  &c);
	}
	free(pad);
}

/*
 * A file of a block or less, or one compression did not pay for
 * (incompressible data: every block plain, and the partial last one a
 * whole block): take the file's blocks back, they are the last ones
 * written, and store it flat from the input still at hand.
 */
static int store_flat(struct kiln_zwriter *zw, struct zfile *f,
		      uint64_t nblocks, uint32_t tail)
{
	struct kiln_inode *in = f->in;
	uint64_t body = in->size - tail;
	uint32_t part = (uint32_t)(body % zw->blksz);
	uint64_t at = (uint64_t)(zw->next_blk - f->wblocks) << zw->blkszbits;
	uint8_t *p, *pad = NULL;
	int ret = 0;

	zw->next_blk -= f->wblocks;
	if (zw->next_blk + nblocks > EROFS_MAX_BLOCKS)
		return kiln_err_too_large(zw->blkszbits);
	if (f->flat && zw->wb)
		kiln_writeback_add(zw->wb, nblocks << zw->blkszbits);
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
	if (zw->cfg->dedupe && nblocks)
		offer_flat(zw, f->raw, body, (uint32_t)zw->next_blk);
	in->datalayout = tail ? EROFS_INODE_FLAT_INLINE : EROFS_INODE_FLAT_PLAIN;
	in->startblk = nblocks ? (uint32_t)zw->next_blk : /* no higher */
		       tail ? EROFS_NULL_ADDR : 0;
	in->inline_size = tail;
	zw->next_blk += nblocks;
	p = kiln_records_stage(zw->recs, in, in->base_max + tail);
	memcpy(p + in->base_max, f->raw + body, tail);
	in->rec_tail = in->base_max;
	return 0;
}

/*
 * Flat unless compression saves bytes: data blocks plus the record (flat:
 * inode and inline tail; compressed: inode, index and inline pcluster).
 * A tie goes flat, which reads without decompressing.
 */
static bool flat_pays(const struct kiln_zwriter *zw, const struct zfile *f,
		      uint64_t flat, uint32_t tail)
{
	uint64_t fbytes = (flat << zw->blkszbits) + f->in->base_max + tail;
	uint64_t zbytes = (f->wblocks << zw->blkszbits) + f->in->zbase +
			  f->tail_len;

	return fbytes <= zbytes;
}

/*
 * --chunksize: a file of a block or more that compression does not pay
 * for is chunk-based instead of flat, so its chunks can be shared (as
 * erofs-utils does); chunked.c writes it after all compressed data.
 */
static bool to_chunks(const struct kiln_zwriter *zw, const struct zfile *f,
		      uint64_t flat, uint32_t tail)
{
	/* the packed inode's pieces list ends with the zwriter, before
	   chunk-based files are written: it stays compressed or flat */
	return zw->o->chunkbits && f->in->size >= zw->blksz && !f->has_frag &&
	       !f->in->packed_inode &&
	       (f->flat || flat_pays(zw, f, flat, tail));
}

int kiln_zfile_done(struct kiln_zwriter *zw, struct zfile *f)
{
	struct kiln_inode *in = f->in;
	int ret = 0;

	if (f->failed) {
		ret = -1;
	} else {
		uint32_t tail;
		uint64_t flat = flat_blocks(in, zw->blksz, &tail);

		if (to_chunks(zw, f, flat, tail)) {
			zw->next_blk -= f->wblocks;	/* the last written */
			in->zwritten = false;
			in->chunked = true;
		} else if (f->raw && !f->has_frag &&
			   (f->flat || flat_pays(zw, f, flat, tail))) {
			ret = store_flat(zw, f, flat, tail);
		} else {
			place_zinode(zw, f);
			/* its blocks stay: later files may share them */
			for (uint32_t i = 0; i < f->nr_pend; i++)
				kiln_dedupe_add(&zw->dd, &f->pend[i]);
			/*
			 * As of its last segment, which the writer retires
			 * before any segment that may see them is queued:
			 * the same entries for any --workers (shifted.h)
			 */
			for (uint32_t i = 0; i < f->nr_spend; i++) {
				f->spend[i].seq = f->last_seq;
				kiln_shift_add(&zw->shift, &f->spend[i]);
			}
		}
	}
	free(f->spend);
	free(f->pend);
	free(f->ext);
	free(f);
	return ret;
}


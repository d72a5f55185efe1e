/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include "common/fullio.h"
#include "common/util.h"
#include "format/erofs_fs.h"
#include "layout.h"
#include "metaalloc.h"
#include "records.h"

#define CHUNK (1u << 20)	/* staging: small records share these */
#define WINDOW (1u << 20)	/* writing: a multiple of any block size */

void kiln_records_init(struct kiln_records *r, uint32_t blksz)
{
	memset(r, 0, sizeof(*r));
	r->blksz = blksz;
}

static uint8_t *new_chunk(struct kiln_records *r, size_t size)
{
	if (r->nr_chunks == r->cap_chunks) {
		r->cap_chunks = r->cap_chunks ? r->cap_chunks * 2 : 64;
		r->chunks = xrealloc(r->chunks,
				     r->cap_chunks * sizeof(*r->chunks));
	}
	/* calloc of this size maps fresh pages: zero and not yet resident */
	return r->chunks[r->nr_chunks++] = xcalloc(1, size);
}

uint8_t *kiln_records_stage(struct kiln_records *r, struct kiln_inode *in,
			    uint32_t size)
{
	size_t n = round_up(size, 8);

	in->rec_size = size;
	if (n > CHUNK / 4)
		return in->rec = new_chunk(r, n);
	if (!r->cur || r->cur_used + n > CHUNK) {
		r->cur = new_chunk(r, CHUNK);
		r->cur_used = 0;
	}
	in->rec = r->cur + r->cur_used;
	r->cur_used += n;
	return in->rec;
}

/* Slots a record takes; anything over a block counts as one more. */
static uint32_t slots(uint32_t size, uint32_t blksz)
{
	uint32_t max = blksz >> EROFS_ISLOT_BITS;
	uint32_t n = (uint32_t)round_up(size, EROFS_ISLOT_SIZE) >>
		     EROFS_ISLOT_BITS;

	return n > max ? max + 1 : n;
}

static uint64_t place(struct meta_alloc *a, const struct kiln_inode *in)
{
	uint32_t base = kiln_inode_base_size(in);

	/* a flat tail too big to share a block with its inode (layout.h) */
	if (in->datalayout == EROFS_INODE_FLAT_INLINE &&
	    base + in->inline_size > a->blksz)
		return meta_alloc_straddle(a, base, in->inline_size);
	return meta_alloc_record(a, in->rec_size);
}

/*
 * Best fit decreasing: the largest records first, each opening a block
 * whose rest the smaller ones then fill, the fullest block first; equal
 * sizes in layout order. Placed in layout order alone, a big record often
 * found no room and left a gap behind.
 */
int kiln_records_pack(struct kiln_records *r, struct kiln_inode **order,
		      uint32_t nr, uint64_t blk, const uint8_t *pool,
		      uint32_t pool_size)
{
	uint32_t nsz = (r->blksz >> EROFS_ISLOT_BITS) + 2;	/* > any slots() */
	uint32_t *at = xcalloc(nsz + 1, sizeof(*at));
	struct kiln_inode **v = xmalloc((nr ? nr : 1) * sizeof(*v));
	struct meta_alloc a;
	uint32_t n = nr ? nr - 1 : 0;

	/* counting sort by slots, largest first */
	for (uint32_t i = 1; i < nr; i++)
		at[nsz - slots(order[i]->rec_size, r->blksz)]++;
	for (uint32_t k = 1; k <= nsz; k++)
		at[k] += at[k - 1];
	for (uint32_t i = nr; i-- > 1;)
		v[--at[nsz - slots(order[i]->rec_size, r->blksz)]] = order[i];
	r->start = blk * r->blksz;
	r->pool = pool;
	r->pool_size = pool_size;
	meta_alloc_init(&a, r->blksz, 0);
	if (pool_size)
		meta_alloc_contiguous(&a, pool_size);
	if (nr)		/* whole, never straddling (layout.c) */
		order[0]->nid = meta_alloc_record(&a, order[0]->rec_size) >>
				EROFS_ISLOT_BITS;
	for (uint32_t i = 0; i < n; i++)
		v[i]->nid = place(&a, v[i]) >> EROFS_ISLOT_BITS;
	free(v);
	free(at);
	r->size = round_up(a.end, r->blksz);
	r->used = a.used;
	meta_alloc_free(&a);
	if (nr && order[0]->nid > UINT16_MAX) {
		kiln_err("root inode nid %llu does not fit 16 bits (a shared "
			 "xattr pool of %u bytes before it)",
			 (unsigned long long)order[0]->nid, pool_size);
		return -1;
	}
	return 0;
}

static uint64_t area_pos(const struct kiln_inode *in)
{
	return in->nid << EROFS_ISLOT_BITS;
}

/* The part of [pos, pos + n) inside the window [wpos, wpos + WINDOW). */
static void copy_part(uint8_t *win, uint64_t wpos, const uint8_t *p,
		      uint64_t pos, uint64_t n)
{
	uint64_t s = pos > wpos ? pos : wpos;
	uint64_t e = pos + n;

	if (e > wpos + WINDOW)
		e = wpos + WINDOW;
	if (s < e)
		memcpy(win + (s - wpos), p + (s - pos), e - s);
}

static void copy_record(uint8_t *win, uint64_t wpos,
			const struct kiln_inode *in)
{
	copy_part(win, wpos, in->rec, area_pos(in), in->rec_size);
}

/* order[0..nr) sorted by the block their record starts in (counting sort). */
static struct kiln_inode **by_block(const struct kiln_records *r,
				    struct kiln_inode **order, uint32_t nr,
				    uint32_t **first)
{
	uint64_t nblk = r->size / r->blksz;
	uint32_t *at = xcalloc(nblk + 1, sizeof(*at));
	struct kiln_inode **v = xmalloc((nr ? nr : 1) * sizeof(*v));

	for (uint32_t i = 0; i < nr; i++)
		at[area_pos(order[i]) / r->blksz + 1]++;
	for (uint64_t b = 1; b <= nblk; b++)
		at[b] += at[b - 1];
	for (uint32_t i = 0; i < nr; i++)	/* at[b] ends as b + 1's start */
		v[at[area_pos(order[i]) / r->blksz]++] = order[i];
	*first = at;
	return v;
}

int kiln_records_write(const struct kiln_records *r, struct kiln_inode **order,
		       uint32_t nr, int fd, kiln_records_seen *seen, void *ctx)
{
	uint32_t *end, i = 0;
	struct kiln_inode **v = by_block(r, order, nr, &end);
	struct kiln_inode *carry = NULL;	/* started in an earlier window */
	uint8_t *win = xmalloc(WINDOW);
	int ret = 0;

	for (uint64_t wpos = 0; wpos < r->size && !ret; wpos += WINDOW) {
		size_t len = r->size - wpos < WINDOW ?
			     (size_t)(r->size - wpos) : WINDOW;
		uint64_t last = (wpos + len) / r->blksz - 1;
		struct kiln_inode *next = NULL;

		memset(win, 0, len);
		copy_part(win, wpos, r->pool, 0, r->pool_size);
		if (carry) {
			copy_record(win, wpos, carry);
			if (area_pos(carry) + carry->rec_size > wpos + len)
				next = carry;
		}
		for (; i < end[last]; i++) {
			copy_record(win, wpos, v[i]);
			if (area_pos(v[i]) + v[i]->rec_size > wpos + len)
				next = v[i];
		}
		carry = next;
		if (seen)
			seen(ctx, win, len);
		ret = pwrite_all(fd, win, len, r->start + wpos);
	}
	free(win);
	free(v);
	free(end);
	return ret;
}

void kiln_records_free(struct kiln_records *r)
{
	for (uint32_t i = 0; i < r->nr_chunks; i++)
		free(r->chunks[i]);
	free(r->chunks);
	r->chunks = NULL;
	r->nr_chunks = 0;
	r->cur = NULL;
}

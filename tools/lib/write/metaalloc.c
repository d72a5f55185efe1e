/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include "format/erofs_fs.h"
#include "metaalloc.h"
#include "common/util.h"

static uint32_t nr_slots(const struct meta_alloc *a)
{
	return a->blksz >> EROFS_ISLOT_BITS;
}

static void bucket_push(struct meta_alloc *a, uint32_t free_slots,
			uint64_t blk)
{
	struct meta_bucket *b = &a->buckets[free_slots];

	if (!free_slots)
		return;
	if (b->nr == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 16;
		b->blocks = xrealloc(b->blocks, b->cap * sizeof(*b->blocks));
	}
	b->blocks[b->nr++] = blk;
}

/* The block holding byte pos is full from pos on: drop it from its bucket. */
static void bucket_forget(struct meta_alloc *a, uint64_t pos)
{
	uint32_t free_slots = (a->blksz - (uint32_t)(pos % a->blksz)) >>
			      EROFS_ISLOT_BITS;
	struct meta_bucket *b = &a->buckets[free_slots];

	if (pos % a->blksz == 0)
		return;
	for (uint32_t i = 0; i < b->nr; i++)
		if (b->blocks[i] == pos / a->blksz) {
			b->blocks[i] = b->blocks[--b->nr];
			return;
		}
}

void meta_alloc_init(struct meta_alloc *a, uint32_t blksz, uint64_t start)
{
	a->blksz = blksz;
	a->used = 0;
	a->buckets = xcalloc(nr_slots(a) + 1, sizeof(*a->buckets));
	a->end = round_up(start, EROFS_ISLOT_SIZE);
	if (a->end % blksz)
		bucket_push(a, (uint32_t)(blksz - a->end % blksz) >>
			    EROFS_ISLOT_BITS, a->end / blksz);
}

uint64_t meta_alloc_contiguous(struct meta_alloc *a, uint64_t size)
{
	uint64_t pos = a->end;

	bucket_forget(a, pos);
	a->end = round_up(pos + size, EROFS_ISLOT_SIZE);
	a->used += a->end - pos;
	if (a->end % a->blksz)
		bucket_push(a, (uint32_t)(a->blksz - a->end % a->blksz) >>
			    EROFS_ISLOT_BITS, a->end / a->blksz);
	return pos;
}

uint64_t meta_alloc_record(struct meta_alloc *a, uint32_t size)
{
	uint32_t need = (uint32_t)round_up(size, EROFS_ISLOT_SIZE) >>
			EROFS_ISLOT_BITS;
	uint64_t pos;

	if (need > nr_slots(a)) {	/* larger than a block: own blocks */
		a->end = round_up(a->end, a->blksz);
		return meta_alloc_contiguous(a, size);
	}
	for (uint32_t k = need; k < nr_slots(a); k++) {
		struct meta_bucket *b = &a->buckets[k];
		uint64_t blk;

		if (!b->nr)
			continue;
		blk = b->blocks[--b->nr];
		pos = blk * a->blksz + a->blksz - ((uint64_t)k << EROFS_ISLOT_BITS);
		bucket_push(a, k - need, blk);
		a->used += (uint64_t)need << EROFS_ISLOT_BITS;
		if (pos + (need << EROFS_ISLOT_BITS) > a->end)
			a->end = pos + (need << EROFS_ISLOT_BITS);
		return pos;
	}
	/* no partly used block has room: open a new one */
	a->end = round_up(a->end, a->blksz);
	return meta_alloc_contiguous(a, (uint64_t)need << EROFS_ISLOT_BITS);
}

void meta_alloc_free(struct meta_alloc *a)
{
	for (uint32_t k = 0; k <= nr_slots(a); k++)
		free(a->buckets[k].blocks);
	free(a->buckets);
	a->buckets = NULL;
}

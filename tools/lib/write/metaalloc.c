/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include "format/erofs_fs.h"
#include "metaalloc.h"
#include "common/util.h"

static uint32_t nr_slots(const struct meta_alloc *a)
{
	return a->blksz >> EROFS_ISLOT_BITS;
}

/* free_slots slots from byte pos on are free (and in pos's block). */
static void bucket_push(struct meta_alloc *a, uint32_t free_slots,
			uint64_t pos)
{
	struct meta_bucket *b = &a->buckets[free_slots];

	if (!free_slots)
		return;
	if (b->nr == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 16;
		b->starts = xrealloc(b->starts, b->cap * sizeof(*b->starts));
	}
	b->starts[b->nr++] = pos;
}

/* The free space from pos (the end) to its block's end is taken. */
static void bucket_forget(struct meta_alloc *a, uint64_t pos)
{
	uint32_t free_slots = (a->blksz - (uint32_t)(pos % a->blksz)) >>
			      EROFS_ISLOT_BITS;
	struct meta_bucket *b = &a->buckets[free_slots];

	if (pos % a->blksz == 0)
		return;
	for (uint32_t i = 0; i < b->nr; i++)
		if (b->starts[i] == pos) {
			b->starts[i] = b->starts[--b->nr];
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
			    EROFS_ISLOT_BITS, a->end);
}

uint64_t meta_alloc_contiguous(struct meta_alloc *a, uint64_t size)
{
	uint64_t pos = a->end;

	bucket_forget(a, pos);
	a->end = round_up(pos + size, EROFS_ISLOT_SIZE);
	a->used += a->end - pos;
	if (a->end % a->blksz)
		bucket_push(a, (uint32_t)(a->blksz - a->end % a->blksz) >>
			    EROFS_ISLOT_BITS, a->end);
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

		if (!b->nr)
			continue;
		pos = b->starts[--b->nr];
		bucket_push(a, k - need, pos + (need << EROFS_ISLOT_BITS));
		a->used += (uint64_t)need << EROFS_ISLOT_BITS;
		if (pos + (need << EROFS_ISLOT_BITS) > a->end)
			a->end = pos + (need << EROFS_ISLOT_BITS);
		return pos;
	}
	/* no partly used block has room: open a new one */
	a->end = round_up(a->end, a->blksz);
	return meta_alloc_contiguous(a, (uint64_t)need << EROFS_ISLOT_BITS);
}

uint64_t meta_alloc_straddle(struct meta_alloc *a, uint32_t base,
			     uint32_t tail)
{
	uint32_t head = base & ~(EROFS_ISLOT_SIZE - 1);
	uint64_t blkend = round_up(a->end, a->blksz);
	uint64_t pos;

	if (blkend - a->end < head) {
		/* a new block, its start left free for smaller records */
		blkend += a->blksz;
		bucket_push(a, (a->blksz - head) >> EROFS_ISLOT_BITS,
			    blkend - a->blksz);
	} else {
		/* the head ends the last block; what it leaves stays free */
		bucket_forget(a, a->end);
		bucket_push(a, (uint32_t)(blkend - head - a->end) >>
			    EROFS_ISLOT_BITS, a->end);
	}
	pos = blkend - head;
	a->end = round_up(blkend + (base - head) + tail, EROFS_ISLOT_SIZE);
	a->used += round_up(base + tail, EROFS_ISLOT_SIZE);
	if (a->end % a->blksz)
		bucket_push(a, (uint32_t)(a->blksz - a->end % a->blksz) >>
			    EROFS_ISLOT_BITS, a->end);
	return pos;
}

void meta_alloc_free(struct meta_alloc *a)
{
	for (uint32_t k = 0; k <= nr_slots(a); k++)
		free(a->buckets[k].starts);
	free(a->buckets);
	a->buckets = NULL;
}

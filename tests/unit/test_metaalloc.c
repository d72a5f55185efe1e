/* SPDX-License-Identifier: MIT */
/*
 * The metadata allocator (write/metaalloc.h) against a brute-force model
 * of what its header promises: a record of up to one block lies in one
 * block, slot-aligned (nids are byte offsets / 32), after `start`, never on
 * another; it goes into the fullest partly used block with room (best
 * fit: the model scans every block), else into a new block at the end;
 * larger records start a block at the end; contiguous ranges start exactly
 * at the end. `end` and `used` are checked after every call. Ties between
 * equally full blocks are the allocator's choice: the model only checks
 * the chosen block was among the fullest that fit.
 */
#include <stdint.h>
#include <stdlib.h>
#include "check.h"
#include "format/erofs_fs.h"
#include "write/metaalloc.h"

#define SLOT EROFS_ISLOT_SIZE

struct model {
	uint32_t blksz, nslots;
	uint64_t start, end, used;
	uint16_t *fill;			/* [block]: slots used from its start */
	uint8_t *taken;			/* [slot]: handed out (overlap check) */
	uint64_t nblocks;		/* capacity of fill, in blocks */
	unsigned int errors;		/* reported once per run, not per call */
};

static uint64_t up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static void model_fail(struct model *m, const char *what, uint64_t pos,
		       uint64_t size)
{
	if (m->errors++ < 5)
		fprintf(stderr, "  blksz %u start %llu: %s (pos %llu size "
			"%llu, model end %llu)\n", m->blksz,
			(unsigned long long)m->start, what,
			(unsigned long long)pos, (unsigned long long)size,
			(unsigned long long)m->end);
}

static void model_init(struct model *m, uint32_t blksz, uint64_t start,
		       uint64_t maxbytes)
{
	*m = (struct model){ .blksz = blksz, .nslots = blksz / SLOT,
			     .start = start, .end = up(start, SLOT) };
	m->nblocks = maxbytes / blksz + 2;
	m->fill = calloc(m->nblocks, sizeof(*m->fill));
	m->taken = calloc(m->nblocks * m->nslots, 1);
	/* the part of start's block before start is in use (superblock) */
	m->fill[m->end / blksz] = (uint16_t)(m->end % blksz / SLOT);
}

/* Marks [pos, pos + bytes) used: slots must be free and after start. */
static void model_take(struct model *m, uint64_t pos, uint64_t bytes)
{
	if (pos % SLOT || pos < m->start || pos + bytes >
	    m->nblocks * m->blksz)
		return model_fail(m, "misplaced", pos, bytes);
	for (uint64_t s = pos / SLOT; s < up(pos + bytes, SLOT) / SLOT; s++) {
		if (m->taken[s])
			return model_fail(m, "overlaps an earlier record", pos,
					  bytes);
		m->taken[s] = 1;
	}
	for (uint64_t b = pos / m->blksz; b * m->blksz < pos + bytes; b++) {
		uint64_t hi = pos + bytes - b * m->blksz;

		hi = hi > m->blksz ? m->blksz : hi;
		m->fill[b] = (uint16_t)(up(hi, SLOT) / SLOT);
	}
	m->used += up(bytes, SLOT);
	if (up(pos + bytes, SLOT) > m->end)
		m->end = up(pos + bytes, SLOT);
}

/* Free slots of the fullest block below the end that holds need more. */
static uint32_t best_free(const struct model *m, uint32_t need)
{
	uint32_t best = UINT32_MAX;

	for (uint64_t b = m->start / m->blksz; b * m->blksz < m->end; b++) {
		uint32_t f = m->nslots - m->fill[b];

		if (f >= need && f < best)
			best = f;
	}
	return best;
}

static void check_record(struct model *m, uint64_t pos, uint32_t size)
{
	uint32_t need = (uint32_t)(up(size, SLOT) / SLOT), best;
	uint64_t blk = pos / m->blksz;

	if (size > m->blksz) {		/* own blocks, from a block start */
		if (pos != up(m->end, m->blksz))
			model_fail(m, "large record not at the next block",
				   pos, size);
		return model_take(m, pos, size);
	}
	if (!size) {		/* nothing to place: any slot in the area */
		if (pos % SLOT || pos < m->start || pos > m->end)
			model_fail(m, "empty record outside the area", pos, 0);
		return;
	}
	if ((pos + size - 1) / m->blksz != blk)
		return model_fail(m, "record crosses a block", pos, size);
	best = best_free(m, need);
	if (best == UINT32_MAX) {
		if (pos != up(m->end, m->blksz))
			model_fail(m, "no room: not a new block", pos, size);
	} else if (m->nslots - m->fill[blk] != best ||
		   pos != blk * m->blksz + (uint64_t)m->fill[blk] * SLOT) {
		model_fail(m, "not the fullest block that fits", pos, size);
	}
	model_take(m, pos, (uint64_t)need * SLOT);
}

/* Mostly inode-sized records; edges (0, 1 block, +-1) and larger ones. */
static uint32_t pick_size(uint32_t blksz)
{
	switch (rnd() % 10) {
	case 0:
		return 0;
	case 1:
		return blksz;
	case 2:
		return blksz - 1 - (uint32_t)(rnd() % 2) * (SLOT - 1);
	case 3:
		return blksz + 1 + (uint32_t)(rnd() % (3 * blksz));
	case 4:
	case 5:
		return 1 + (uint32_t)(rnd() % blksz);
	default:
		return 32 + (uint32_t)(rnd() % 224);
	}
}

/* ops calls on a fresh allocator; the model checks each one. */
static void run(uint32_t blksz, uint64_t start, unsigned int ops)
{
	struct meta_alloc a;
	struct model m;

	model_init(&m, blksz, start, start + (uint64_t)ops * 4 * blksz);
	meta_alloc_init(&a, blksz, start);
	for (unsigned int i = 0; i < ops; i++) {
		uint64_t pos;

		if (rnd() % 64 == 0) {	/* the shared xattr pool */
			uint64_t size = rnd() % (2 * blksz);

			pos = meta_alloc_contiguous(&a, size);
			if (pos != m.end)
				model_fail(&m, "contiguous not at the end",
					   pos, size);
			model_take(&m, pos, size);
		} else {
			uint32_t size = pick_size(blksz);

			pos = meta_alloc_record(&a, size);
			check_record(&m, pos, size);
		}
		if (a.end != m.end || a.used != m.used)
			model_fail(&m, "end or used differ from the model",
				   a.end, a.used);
	}
	CHECK(m.errors == 0);
	meta_alloc_free(&a);
	free(m.fill);
	free(m.taken);
}

/* A known sequence, to pin down best fit without the model. */
static void fixed_sequence(void)
{
	struct meta_alloc a;

	meta_alloc_init(&a, 4096, 1152);
	CHECK(meta_alloc_record(&a, 2000) == 1152);	/* after the sb */
	CHECK(meta_alloc_record(&a, 4096) == 4096);	/* a block of its own */
	CHECK(meta_alloc_record(&a, 3000) == 8192);	/* 1024 left in blk 0 */
	CHECK(meta_alloc_record(&a, 64) == 3168);	/* blk 0: fuller than 2 */
	CHECK(meta_alloc_record(&a, 1000) == 8192 + 3008);
	CHECK(meta_alloc_record(&a, 800) == 3232);	/* 864 left in blk 0 */
	/* 64 bytes left in blocks 0 and 2: 100 opens block 3 */
	CHECK(meta_alloc_record(&a, 100) == 12288);
	CHECK(a.end == 12288 + 128);
	CHECK(a.used == 2016 + 4096 + 3008 + 64 + 1024 + 800 + 128);
	meta_alloc_free(&a);
}

/* Inodes that end one block with their tail in the next. */
static void straddles(void)
{
	struct meta_alloc a;

	meta_alloc_init(&a, 4096, 1152);
	/* room at the end of block 0: the tail opens block 1 */
	CHECK(meta_alloc_straddle(&a, 64, 4035) == 4096 - 64);
	CHECK(a.end == 8160);
	/* 32 bytes left in block 1: a new block 2, its start left free */
	CHECK(meta_alloc_straddle(&a, 76, 4000) == 12288 - 64);
	CHECK(a.end == 12288 + 12 + 4000 + 20);
	/* the free starts: block 2's (4032 bytes), then block 0's (2880) */
	CHECK(meta_alloc_record(&a, 2900) == 8192);
	CHECK(meta_alloc_record(&a, 2880) == 1152);
	CHECK(meta_alloc_record(&a, 40) == 16320);
	CHECK(a.end == 16384);
	meta_alloc_free(&a);
}

int main(void)
{
	static const uint64_t starts[] = { 0, 1152, 1152 + 20, 4096 + 32 };

	rng_state = 42;
	fixed_sequence();
	straddles();
	for (uint32_t blksz = 512; blksz <= 4096; blksz *= 2)
		for (unsigned int s = 0; s < 4; s++)
			for (unsigned int rep = 0; rep < 6; rep++)
				run(blksz, starts[s], 3000);
	return check_report("test_metaalloc");
}

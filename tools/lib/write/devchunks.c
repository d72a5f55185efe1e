/* SPDX-License-Identifier: MIT */
#include "common/util.h"
#include "devchunks.h"
#include "format/erofs_fs.h"
#include "format/le.h"
#include "layout.h"

#define INDEX_UNIT 8u		/* chunk indexes: they name a device */
#define MAX_INDEX (1u << 30)	/* bytes of one file's chunk index */

/*
 * The largest chunk (from one block to 2^31 of them, and no larger than
 * the file needs) that every run starts and ends on, but a run ending
 * where the file does: a chunk is then all data of one run, or a hole.
 */
static int chunk_bits(const struct kiln_inode *in, unsigned int blkszbits)
{
	const struct kiln_devmap *m = in->devmap;
	uint64_t edges = 0;
	unsigned int bits = blkszbits;

	for (uint32_t k = 0; k < m->nr; k++) {
		edges |= m->run[k].off;
		if (m->run[k].off + m->run[k].len != in->size)
			edges |= m->run[k].off + m->run[k].len;
		if (m->run[k].devoff & ((1ull << blkszbits) - 1))
			return -1;
	}
	if (edges & ((1ull << blkszbits) - 1))
		return -1;
	while (bits < blkszbits + EROFS_CHUNK_FORMAT_BLKBITS_MASK &&
	       (1ull << bits) < in->size && !(edges & (1ull << bits)))
		bits++;
	return (int)bits;
}

static void put_index(uint8_t *p, uint16_t device, uint32_t blk)
{
	put_le16(p, 0);			/* startblk_hi: 48-bit images only */
	put_le16(p + 2, device);
	put_le32(p + 4, blk);
}

int kiln_devchunks_stage(struct kiln_inode *in, struct kiln_records *r,
			unsigned int blkszbits)
{
	const struct kiln_devmap *m = in->devmap;
	int bits = chunk_bits(in, blkszbits);
	uint64_t n, csize, base;
	uint32_t k = 0;
	uint8_t *p;

	if (bits < 0) {
		kiln_err("%s: data runs not on %u-byte block boundaries "
			 "cannot be indexed", in->srcpath, 1u << blkszbits);
		return -1;
	}
	csize = 1ull << bits;
	n = (in->size + csize - 1) >> bits;
	if (n > MAX_INDEX / INDEX_UNIT) {
		kiln_err("%s: %llu chunks are too many for one file",
			 in->srcpath, (unsigned long long)n);
		return -1;
	}
	base = round_up(kiln_inode_base_size(in), INDEX_UNIT);
	p = kiln_records_stage(r, in, (uint32_t)(base + n * INDEX_UNIT)) + base;
	for (uint64_t i = 0; i < n; i++, p += INDEX_UNIT) {
		uint64_t f = i << bits, at;

		while (k < m->nr && m->run[k].off + m->run[k].len <= f)
			k++;
		if (k == m->nr || m->run[k].off > f) {
			put_index(p, 0, EROFS_NULL_ADDR);	/* a hole */
			continue;
		}
		at = (m->run[k].devoff + (f - m->run[k].off)) >> blkszbits;
		if (at >= EROFS_NULL_ADDR) {
			kiln_err("%s: data past block 2^32 of device %u cannot "
				 "be indexed", in->srcpath, m->device);
			return -1;
		}
		put_index(p, m->device, (uint32_t)at);
	}
	in->datalayout = EROFS_INODE_CHUNK_BASED;
	in->chunkformat = (uint16_t)((bits - (int)blkszbits) |
				     EROFS_CHUNK_FORMAT_INDEXES);
	return 0;
}

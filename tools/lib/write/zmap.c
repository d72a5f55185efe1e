/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include "format/le.h"
#include "common/util.h"
#include "zmap.h"

/* delta0 as stored: the block count in its place where there is one. */
static uint16_t raw_delta0(const struct z_erofs_lcluster *r)
{
	return r->cblkcnt ? Z_EROFS_LI_D0_CBLKCNT | r->cblkcnt : r->delta0;
}

static uint64_t nr_lclusters(uint64_t isize, unsigned int blkszbits)
{
	return (isize + (1ull << blkszbits) - 1) >> blkszbits;
}

/* 2B packs need 4 KiB lclusters (12 bits of offset in 14-bit entries). */
static bool use_2b(const struct kiln_zmap_fmt *f)
{
	return f->compact && f->blkszbits == 12;
}

/*
 * Compact indexes are packs of vcnt entries of w bits (lo | type << lobits,
 * lobits 12 or the lcluster's, at most 14) and a le32 block base: 4B packs
 * hold 2 entries of 16 bits, 2B packs 16 of 14.
 * The first records up to a 32-byte boundary and the leftovers go in 4B
 * packs, the run between in 2B packs (when lclusters are 4 KiB).
 */
struct regions {
	uint64_t c4i, c2b;		/* records in leading 4B and in 2B packs */
};

static struct regions compact_regions(uint64_t nlc,
				      const struct kiln_zmap_fmt *f)
{
	struct regions g = { .c4i = 0, .c2b = 0 };

	if (!use_2b(f))
		return g;
	/* 4B packs up to the first 32-byte boundary of the stream */
	g.c4i = ((32 - f->ebase_mod32) / 4) & 7;
	if (g.c4i >= nlc) {
		g.c4i = nlc;
		return g;
	}
	g.c2b = (nlc - g.c4i) / 16 * 16;
	return g;
}

uint64_t kiln_zmap_size(uint64_t isize, const struct kiln_zmap_fmt *f)
{
	uint64_t nlc = nr_lclusters(isize, f->blkszbits);

	if (f->compact) {
		struct regions g = compact_regions(nlc, f);

		/* a short index may end in a half-used leading 4B pack */
		return Z_EROFS_MAP_HEADER_SIZE + 4 * round_up(g.c4i, 2) +
		       2 * g.c2b +
		       8 * ((nlc - g.c4i - g.c2b + 1) / 2);
	}
	return Z_EROFS_MAP_HEADER_SIZE + 8 + 8 * nlc;
}

/*
 * Rules the kernel relies on: record 0 is a head at offset 0; every
 * lcluster between two heads is a NONHEAD pointing back (delta0, chained in
 * steps of at most 2047) and forward (delta1); the first NONHEAD after a
 * big pcluster's head carries its block count (CBLKCNT); and if the last
 * extent started before the last lcluster, that lcluster holds a PLAIN
 * "sentinel" whose offset marks the end of the file.
 */
static void build(struct z_erofs_lcluster *r, const struct kiln_extent *ext, uint32_t nr,
		  uint64_t isize, uint64_t frag_off, const struct kiln_zmap_fmt *f)
{
	uint64_t lcmask = (1ull << f->blkszbits) - 1;
	uint64_t nlc = nr_lclusters(isize, f->blkszbits);
	bool sentinel = (isize & lcmask) &&
			ext[nr - 1].start >> f->blkszbits < nlc - 1;

	for (uint32_t i = 0; i < nr; i++) {
		uint64_t h = ext[i].start >> f->blkszbits;
		uint64_t next = i + 1 < nr ? ext[i + 1].start >> f->blkszbits :
				sentinel ? nlc - 1 : nlc;
		/* compact walks back over heads, so every head gets CBLKCNT */
		bool cblk = f->big_pcluster && (f->compact || !ext[i].plain);
		/*
		 * Readers never size an inline pcluster or a fragment from
		 * the index; a count there keeps compact packs well-formed.
		 */
		uint16_t nb = ext[i].inlined || ext[i].fragment ? 1 :
			      ext[i].nblocks;

		r[h] = (struct z_erofs_lcluster){
			.type = ext[i].plain ? Z_EROFS_LCLUSTER_TYPE_PLAIN :
					       Z_EROFS_LCLUSTER_TYPE_HEAD1,
			.clusterofs = (uint16_t)(ext[i].start & lcmask),
			.partial = ext[i].partial,
			/* a full index keeps a fragment's offset's high bits */
			.blkaddr = ext[i].fragment ? (uint32_t)(frag_off >> 32) :
						     ext[i].blkaddr,
		};
		for (uint64_t k = h + 1; k < next; k++) {
			r[k].type = Z_EROFS_LCLUSTER_TYPE_NONHEAD;
			r[k].delta0 = k - h > 2047 ? 2047 : (uint16_t)(k - h);
			if (k == h + 1 && cblk)
				r[k].cblkcnt = nb;
			r[k].delta1 = (int32_t)(next - k);
		}
	}
	if (sentinel)
		r[nlc - 1] = (struct z_erofs_lcluster){ .type = Z_EROFS_LCLUSTER_TYPE_PLAIN,
					    .clusterofs = (uint16_t)(isize & lcmask) };
}

static void encode_full(uint8_t *rec, const struct z_erofs_lcluster *r, uint64_t nlc)
{
	for (uint64_t k = 0; k < nlc; k++, rec += 8) {
		put_le16(rec, (uint16_t)(r[k].type |
					 (r[k].partial ? Z_EROFS_LI_PARTIAL_REF : 0)));
		if (r[k].type == Z_EROFS_LCLUSTER_TYPE_NONHEAD) {
			put_le16(rec + 4, raw_delta0(&r[k]));
			put_le16(rec + 6, (uint16_t)r[k].delta1);
		} else {
			put_le16(rec + 2, r[k].clusterofs);
			put_le32(rec + 4, r[k].blkaddr);
		}
	}
}

/*
 * A NONHEAD's lo is delta0, except in a pack's last entry, where it is
 * delta1 unless it carries CBLKCNT. Readers find a head's block from the
 * pack base plus the pclusters before it in the pack, so the base is the
 * block of the first pcluster not yet accounted for by an earlier pack.
 */
struct packer {
	bool big;
	unsigned int lobits;		/* the kernel's: 12, or the lcluster's */
	uint32_t cur;			/* next pcluster's block */
	bool pending;			/* last head's size not yet counted */
};

static uint8_t *encode_pack(struct packer *pk, uint8_t *p, const struct z_erofs_lcluster *r,
			    uint64_t n, unsigned int vcnt, unsigned int w)
{
	uint32_t base = pk->big ? pk->cur : pk->cur - 1;
	bool first_head = true;
	unsigned int bytes = vcnt * w / 8;

	for (unsigned int j = 0; j < vcnt && j < n; j++) {
		const struct z_erofs_lcluster *e = &r[j];
		uint32_t lo = e->clusterofs, v, bit = j * w;

		if (e->type == Z_EROFS_LCLUSTER_TYPE_NONHEAD) {
			lo = raw_delta0(e);
			if (j == vcnt - 1 && !e->cblkcnt)
				lo = e->delta1 > 2047 ? 2047 : (uint32_t)e->delta1;
			if (e->cblkcnt) {
				pk->cur += e->cblkcnt;
				pk->pending = false;
			}
		} else if (pk->big) {
			/*
			 * A head is counted by the reader through the CBLKCNT
			 * after it; one without (a 1-block pcluster followed by
			 * another head) only here, by moving the base past it.
			 */
			if (pk->pending) {
				pk->cur++;
				if (first_head)
					base = pk->cur;
			}
			pk->pending = true;
			first_head = false;
		} else {		/* 1-block pclusters in a row */
			if (first_head)
				base = pk->cur - 1;
			pk->cur++;
			first_head = false;
		}
		v = lo | (uint32_t)e->type << pk->lobits;
		for (unsigned int k = 0; k < w; k++, bit++)
			if (v >> k & 1)
				p[bit / 8] |= (uint8_t)(1u << (bit % 8));
	}
	put_le32(p + bytes, base);
	return p + bytes + 4;
}

static void encode_compact(uint8_t *p, const struct z_erofs_lcluster *r, uint64_t nlc,
			   const struct kiln_zmap_fmt *f, uint32_t first_blk)
{
	struct packer pk = { .big = f->big_pcluster, .cur = first_blk,
			     .lobits = f->blkszbits > 12 ? f->blkszbits : 12 };
	struct regions g = compact_regions(nlc, f);
	uint64_t k = 0;

	for (; k < g.c4i; k += 2)
		p = encode_pack(&pk, p, r + k, g.c4i - k, 2, 16);
	for (; k < g.c4i + g.c2b; k += 16)
		p = encode_pack(&pk, p, r + k, 16, 16, 14);
	for (; k < nlc; k += 2)
		p = encode_pack(&pk, p, r + k, nlc - k, 2, 16);
}

void kiln_zmap_encode(uint8_t *out, const struct kiln_extent *ext,
			uint32_t nr, uint64_t isize, uint16_t idata_size,
			uint64_t frag_off, const struct kiln_zmap_fmt *f)
{
	uint64_t nlc = nr_lclusters(isize, f->blkszbits);
	struct z_erofs_lcluster *r = xcalloc(nlc, sizeof(*r));
	uint16_t advise = 0;

	build(r, ext, nr, isize, frag_off, f);
	memset(out, 0, kiln_zmap_size(isize, f));
	if (f->big_pcluster)
		advise = Z_EROFS_ADVISE_BIG_PCLUSTER_1 |
			 (f->compact ? Z_EROFS_ADVISE_BIG_PCLUSTER_2 : 0);
	if (use_2b(f))
		advise |= Z_EROFS_ADVISE_COMPACTED_2B;
	if (idata_size) {
		advise |= Z_EROFS_ADVISE_INLINE_PCLUSTER;
		put_le16(out + 2, idata_size);
	}
	if (ext[nr - 1].fragment) {
		advise |= Z_EROFS_ADVISE_FRAGMENT_PCLUSTER;
		put_le32(out, (uint32_t)frag_off);
	}
	put_le16(out + 4, advise);
	out[6] = f->alg & 0x0f;
	if (f->compact)
		encode_compact(out + Z_EROFS_MAP_HEADER_SIZE, r, nlc, f,
			       ext[0].blkaddr);
	else
		encode_full(out + Z_EROFS_MAP_HEADER_SIZE + 8, r, nlc);
	free(r);
}

/* Bit 63 of the header read as le64 says so; the rest is the offset. */
void kiln_zmap_encode_fragment_only(uint8_t *out, uint64_t frag_off)
{
	put_le64(out, frag_off | 1ull << 63);
}

/* SPDX-License-Identifier: MIT */
#include <string.h>
#include "le.h"
#include "zindex.h"

uint64_t kiln_zindex_size(uint64_t isize, unsigned int blkszbits)
{
	uint64_t nlc = (isize + (1ull << blkszbits) - 1) >> blkszbits;

	return Z_EROFS_MAP_HEADER_SIZE + 8 + 8 * nlc;
}

static void put_head(uint8_t *r, unsigned int type, uint32_t clusterofs,
		     uint32_t blkaddr)
{
	put_le16(r, (uint16_t)type);
	put_le16(r + 2, (uint16_t)clusterofs);
	put_le32(r + 4, blkaddr);
}

static void put_nonhead(uint8_t *r, uint32_t delta0, uint32_t delta1)
{
	put_le16(r, Z_EROFS_LCLUSTER_TYPE_NONHEAD);
	put_le16(r + 2, 0);
	put_le16(r + 4, (uint16_t)delta0);
	put_le16(r + 6, (uint16_t)delta1);
}

/*
 * The lcluster size equals the block size (h_clusterbits 0). Rules the
 * kernel relies on: record 0 is a head at offset 0; every lcluster between
 * two heads is a NONHEAD pointing back (delta0) and forward (delta1); the
 * first NONHEAD after a big pcluster's head carries its block count; and if
 * the last extent started before the last lcluster, that lcluster holds a
 * PLAIN "sentinel" whose offset marks the end of the file.
 */
void kiln_zindex_encode(uint8_t *out, const struct kiln_extent *ext,
			uint32_t nr, uint64_t isize, unsigned int blkszbits,
			uint8_t alg, bool big_pcluster)
{
	uint64_t lcsize = 1ull << blkszbits;
	uint64_t nlc = (isize + lcsize - 1) >> blkszbits;
	uint8_t *rec = out + Z_EROFS_MAP_HEADER_SIZE + 8;
	bool sentinel = isize % lcsize &&
			ext[nr - 1].start >> blkszbits < nlc - 1;

	memset(out, 0, kiln_zindex_size(isize, blkszbits));
	put_le16(out + 4, big_pcluster ? Z_EROFS_ADVISE_BIG_PCLUSTER_1 : 0);
	out[6] = alg & 0x0f;
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t h = ext[i].start >> blkszbits;
		uint64_t next = i + 1 < nr ? ext[i + 1].start >> blkszbits :
				sentinel ? nlc - 1 : nlc;

		put_head(rec + 8 * h, ext[i].plain ? Z_EROFS_LCLUSTER_TYPE_PLAIN :
			 Z_EROFS_LCLUSTER_TYPE_HEAD1,
			 (uint32_t)(ext[i].start & (lcsize - 1)), ext[i].blkaddr);
		for (uint64_t k = h + 1; k < next; k++) {
			uint32_t d0 = k - h > 2047 ? 2047 : (uint32_t)(k - h);

			if (k == h + 1 && big_pcluster && !ext[i].plain)
				d0 = Z_EROFS_LI_D0_CBLKCNT | ext[i].nblocks;
			put_nonhead(rec + 8 * k, d0, (uint32_t)(next - k));
		}
	}
	if (sentinel)
		put_head(rec + 8 * (nlc - 1), Z_EROFS_LCLUSTER_TYPE_PLAIN,
			 (uint32_t)(isize & (lcsize - 1)), 0);
}

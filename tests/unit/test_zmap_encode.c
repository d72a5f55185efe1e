/* SPDX-License-Identifier: MIT */
/*
 * The index size must end exactly where the kernel looks for the inline
 * tail pcluster: the end of the pack that holds the last lcluster
 * (fs/erofs/zmap.c: nextpackoff = round_down(pos, pack) + pack). This
 * restates the kernel's arithmetic independently of write/zmap.c.
 */
#include <stdint.h>
#include "check.h"
#include "write/zmap.h"

/* Offset (from the map header) just past the pack holding lcluster lcn. */
static uint64_t kernel_nextpackoff(uint64_t nlc, unsigned int ebase_mod32,
				   int blkszbits, uint64_t lcn)
{
	uint64_t ebase = 8, init = (32 - ebase_mod32) / 4, c2b = 0, pos;
	unsigned int pack;

	if (init == 8)
		init = 0;
	if (blkszbits == 12 && init < nlc)
		c2b = (nlc - init) / 16 * 16;
	pos = ebase;
	if (lcn < init) {
		pos += lcn * 4;
		pack = 8;
	} else if (lcn - init < c2b) {
		pos += init * 4 + (lcn - init) * 2;
		pack = 32;
	} else {
		pos += init * 4 + c2b * 2 + (lcn - init - c2b) * 4;
		pack = 8;
	}
	/*
	 * Packs are aligned in the image, where the index starts at
	 * ebase_mod32 (mod 32), not at 8: shift by that (plus 32, to stay
	 * positive; packs divide 32), align, shift back.
	 */
	pos += ebase_mod32 + 24;
	return pos / pack * pack + pack - (ebase_mod32 + 24);
}

int main(void)
{
	for (int bits = 10; bits <= 12; bits += 2)
		for (unsigned int m = 0; m < 32; m += 8)
			for (uint64_t nlc = 1; nlc < 200; nlc++) {
				struct kiln_zmap_fmt f = {
					.blkszbits = (unsigned int)bits,
					.compact = true, .ebase_mod32 = m,
				};
				uint64_t isize = nlc << bits;

				CHECK(kiln_zmap_size(isize, &f) ==
				      kernel_nextpackoff(nlc, m, bits, nlc - 1));
			}
	return check_report("test_zmap_encode");
}

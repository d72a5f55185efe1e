/* SPDX-License-Identifier: MIT */
/*
 * File data of any layout as a list of extents (reader.h): flat files and
 * chunk-based ones here, compressed ones in zmap.c. Raw runs are cut into
 * pieces of at most KILN_RAW_PIECE bytes, so every extent can be read into
 * a bounded buffer and handed to a worker as one unit; holes are one extent
 * each, never read.
 */
#include <stdlib.h>
#include <string.h>
#include "format/le.h"
#include "reader.h"
#include "common/util.h"

#define KILN_RAW_PIECE		(1u << 20)

struct kiln_fext *kiln_extents_add(struct kiln_extents *l, struct kiln_diag *d)
{
	if (l->nr == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		void *p = realloc(l->e, cap * sizeof(*l->e));

		if (!p) {
			kiln_diag_set(d, "out of memory for %zu extents", cap);
			return NULL;
		}
		l->e = p;
		l->cap = cap;
	}
	return &l->e[l->nr++];
}

static int push(struct kiln_extents *l, uint64_t la, uint64_t len, uint64_t pa,
		uint8_t kind, struct kiln_diag *d)
{
	while (len) {
		/* a hole stays one extent, whatever its size: nothing to read */
		uint64_t n = kind == KILN_EXT_HOLE || len < KILN_RAW_PIECE ?
			     len : KILN_RAW_PIECE;
		struct kiln_fext *e = kiln_extents_add(l, d);

		if (!e)
			return -1;
		*e = (struct kiln_fext){ .la = la, .llen = n,
			.pa = pa, .plen = (uint32_t)n, .kind = kind };
		la += n;
		if (kind != KILN_EXT_HOLE)
			pa += n;
		len -= n;
	}
	return 0;
}

static int map_flat(const struct kiln_image *img, const struct kiln_rinode *ri,
		    struct kiln_extents *l, struct kiln_diag *d)
{
	uint64_t head = ri->size;

	if (ri->layout == EROFS_INODE_FLAT_INLINE && ri->size)
		head = ((ri->size - 1) >> img->blkszbits) << img->blkszbits;
	if (head && push(l, 0, head, (uint64_t)ri->iu << img->blkszbits,
			 KILN_EXT_RAW, d))
		return -1;
	if (head < ri->size)
		return push(l, head, ri->size - head, ri->tail, KILN_EXT_RAW, d);
	return 0;
}

static int map_chunks(const struct kiln_image *img,
		      const struct kiln_rinode *ri, struct kiln_extents *l,
		      struct kiln_diag *d)
{
	unsigned int bits = (ri->iu & EROFS_CHUNK_FORMAT_BLKBITS_MASK) +
			    img->blkszbits;
	unsigned int unit = ri->iu & EROFS_CHUNK_FORMAT_INDEXES ? 8 : 4;
	uint64_t csize = 1ull << bits, n = (ri->size + csize - 1) >> bits;
	uint64_t pos = round_up(ri->tail, unit);
	uint8_t *idx;
	int ret = -1;

	if (ri->iu & ~0x3fu || bits > 40) {
		kiln_diag_set(d, "bad chunk format 0x%x", ri->iu);
		return -1;
	}
	if (n > img->size / unit) {
		kiln_diag_set(d, "chunk index of %llu entries is larger than "
			      "the image", (unsigned long long)n);
		return -1;
	}
	idx = malloc(n * unit + 1);
	if (!idx || kiln_image_read(img, idx, pos, n * unit, d))
		goto out;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t blk = get_le32(idx + i * unit + (unit == 8 ? 4 : 0));
		uint64_t la = i << bits;
		uint64_t len = ri->size - la < csize ? ri->size - la : csize;
		uint64_t pa = (uint64_t)blk << img->blkszbits;

		if (unit == 8 && get_le16(idx + i * 8 + 2)) {
			kiln_diag_set(d, "chunk %llu is on device %u of a "
				      "single-device image",
				      (unsigned long long)i, get_le16(idx + i * 8 + 2));
			goto out;
		}
		if (blk != EROFS_NULL_ADDR &&
		    (pa > img->size || len > img->size - pa)) {
			kiln_diag_set(d, "chunk %llu (block %u) is beyond the "
				      "end of the image", (unsigned long long)i,
				      blk);
			goto out;
		}
		if (push(l, la, len, pa, blk == EROFS_NULL_ADDR ?
			 KILN_EXT_HOLE : KILN_EXT_RAW, d))
			goto out;
	}
	ret = 0;
out:
	if (!idx)
		kiln_diag_set(d, "out of memory");
	free(idx);
	return ret;
}

int kiln_file_map(const struct kiln_image *img, const struct kiln_rinode *ri,
		  struct kiln_extents *l, struct kiln_diag *d)
{
	int ret;

	l->nr = 0;
	switch (ri->layout) {
	case EROFS_INODE_COMPRESSED_FULL:
	case EROFS_INODE_COMPRESSED_COMPACT:
		ret = kiln_zmap(img, ri, l, d);
		break;
	case EROFS_INODE_CHUNK_BASED:
		ret = map_chunks(img, ri, l, d);
		break;
	default:
		ret = map_flat(img, ri, l, d);
	}
	if (ret)
		l->nr = 0;
	return ret;
}

int kiln_read_all(const struct kiln_image *img, const struct kiln_rinode *ri,
		  struct kiln_dctx *x, uint64_t max, uint8_t **out,
		  struct kiln_diag *d)
{
	struct kiln_extents l = { 0 };
	uint8_t *buf;

	*out = NULL;
	if (ri->size > max) {
		kiln_diag_set(d, "size %llu is over the %llu bytes allowed",
			      (unsigned long long)ri->size,
			      (unsigned long long)max);
		return -1;
	}
	if (kiln_file_map(img, ri, &l, d)) {
		free(l.e);
		return -1;
	}
	buf = malloc(ri->size + 1);
	if (!buf) {
		kiln_diag_set(d, "out of memory");
		free(l.e);
		return -1;
	}
	for (size_t i = 0; i < l.nr; i++)
		if (kiln_fext_read(img, x, &l.e[i], buf + l.e[i].la, d)) {
			free(buf);
			free(l.e);
			return -1;
		}
	buf[ri->size] = 0;
	free(l.e);
	*out = buf;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * File data of any layout as extents, a window at a time (reader.h): flat
 * files and chunk-based ones here, compressed ones in zmap.c. Raw runs are
 * cut into pieces of at most KILN_RAW_PIECE bytes, so every extent can be
 * read into a bounded buffer and handed to a worker as one unit; holes are
 * never read, and a run of them is one extent.
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

/* The window being filled: room left, and where the file is mapped to. */
struct window {
	struct kiln_extents *l;
	struct kiln_fpos *pos;
	size_t max_nr;
	uint64_t max_bytes, bytes;
};

static bool full(const struct window *w)
{
	return w->l->nr >= w->max_nr || w->bytes >= w->max_bytes;
}

/*
 * Adds [la, la + len) stored at pa (or a hole) while the window has room,
 * moving w->pos along. Raw runs go in pieces of at most KILN_RAW_PIECE; a
 * hole, which is never read, is one extent whatever its size, and grows
 * the hole just before it: a run of hole chunks costs one extent.
 */
static int push(struct window *w, uint64_t la, uint64_t len, uint64_t pa,
		uint8_t kind, struct kiln_diag *d)
{
	struct kiln_extents *l = w->l;

	if (kind == KILN_EXT_HOLE && len && l->nr &&
	    l->e[l->nr - 1].kind == KILN_EXT_HOLE &&
	    l->e[l->nr - 1].la + l->e[l->nr - 1].llen == la) {
		l->e[l->nr - 1].llen += len;
		w->pos->la = la + len;
		return 0;
	}
	while (len && !full(w)) {
		uint64_t n = kind == KILN_EXT_HOLE || len < KILN_RAW_PIECE ?
			     len : KILN_RAW_PIECE;
		struct kiln_fext *e = kiln_extents_add(l, d);

		if (!e)
			return -1;
		*e = (struct kiln_fext){ .la = la, .llen = n, .pa = pa,
			.plen = kind == KILN_EXT_HOLE ? 0 : (uint32_t)n,
			.kind = kind };
		la += n;
		if (kind != KILN_EXT_HOLE) {
			pa += n;
			w->bytes += n;
		}
		len -= n;
		w->pos->la = la;
	}
	return 0;
}

static int map_flat(const struct kiln_image *img, const struct kiln_rinode *ri,
		    struct window *w, struct kiln_diag *d)
{
	uint64_t head = ri->size, la = w->pos->la;

	if (ri->layout == EROFS_INODE_FLAT_INLINE && ri->size)
		head = ((ri->size - 1) >> img->blkszbits) << img->blkszbits;
	if (la < head && push(w, la, head - la,
			      ((uint64_t)ri->iu << img->blkszbits) + la,
			      KILN_EXT_RAW, d))
		return -1;
	la = w->pos->la;
	if (la >= head && la < ri->size)
		return push(w, la, ri->size - la, ri->tail + (la - head),
			    KILN_EXT_RAW, d);
	return 0;
}

/* Chunk index entries are read this many bytes at a time. */
#define CHUNK_READ	4096u

static int map_chunks(const struct kiln_image *img,
		      const struct kiln_rinode *ri, struct window *w,
		      struct kiln_diag *d)
{
	unsigned int bits = (ri->iu & EROFS_CHUNK_FORMAT_BLKBITS_MASK) +
			    img->blkszbits;
	unsigned int unit = ri->iu & EROFS_CHUNK_FORMAT_INDEXES ? 8 : 4;
	uint64_t csize = 1ull << bits, n = (ri->size + csize - 1) >> bits;
	uint64_t pos = round_up(ri->tail, unit), first = 0, have = 0;
	uint8_t idx[CHUNK_READ];

	if (ri->iu & ~0x3fu || bits > 40) {
		kiln_diag_set(d, "bad chunk format 0x%x", ri->iu);
		return -1;
	}
	if (n > img->size / unit) {
		kiln_diag_set(d, "chunk index of %llu entries is larger than "
			      "the image", (unsigned long long)n);
		return -1;
	}
	for (uint64_t i = w->pos->la >> bits; i < n && !full(w); i++) {
		uint64_t la = i << bits, off = w->pos->la - la;
		uint64_t len = ri->size - la < csize ? ri->size - la : csize;
		const uint8_t *p;
		uint32_t blk;
		uint64_t pa;

		if (i - first >= have) {	/* the next piece of the index */
			first = i;
			have = n - i < CHUNK_READ / unit ? n - i : CHUNK_READ / unit;
			if (kiln_image_read(img, idx, pos + first * unit,
					    have * unit, d))
				return -1;
		}
		p = idx + (i - first) * unit;
		blk = get_le32(p + (unit == 8 ? 4 : 0));
		pa = 0;
		if (blk != EROFS_NULL_ADDR &&
		    kiln_device_map(img, unit == 8 ? get_le16(p + 2) : 0, blk,
				    len, &pa, d)) {
			char why[sizeof(d->msg)];

			memcpy(why, d->msg, sizeof(why));
			kiln_diag_set(d, "chunk %llu: %s",
				      (unsigned long long)i, why);
			return -1;
		}
		/* off: the last window stopped inside this chunk */
		if (push(w, la + off, len - off, pa + off,
			 blk == EROFS_NULL_ADDR ? KILN_EXT_HOLE : KILN_EXT_RAW,
			 d))
			return -1;
	}
	return 0;
}

int kiln_file_map(const struct kiln_image *img, const struct kiln_rinode *ri,
		  struct kiln_fpos *pos, struct kiln_extents *l, size_t max_nr,
		  uint64_t max_bytes, struct kiln_diag *d)
{
	struct kiln_fpos at = *pos;
	struct window w = { .l = l, .pos = pos, .max_nr = max_nr,
			    .max_bytes = max_bytes };
	int ret;

	l->nr = 0;
	switch (ri->layout) {
	case EROFS_INODE_COMPRESSED_FULL:
	case EROFS_INODE_COMPRESSED_COMPACT:
		ret = kiln_zmap(img, ri, pos, l, max_nr, max_bytes, d);
		break;
	case EROFS_INODE_CHUNK_BASED:
		ret = map_chunks(img, ri, &w, d);
		break;
	default:
		ret = map_flat(img, ri, &w, d);
	}
	/* callers loop until the end: a window that maps nothing would
	 * never end (it cannot happen; the check costs nothing) */
	if (!ret && pos->la == at.la && at.la < ri->size) {
		kiln_diag_set(d, "no extent maps offset %llu",
			      (unsigned long long)at.la);
		ret = -1;
	}
	if (ret) {
		l->nr = 0;
		*pos = at;
	}
	return ret;
}

int kiln_read_all(const struct kiln_image *img, const struct kiln_rinode *ri,
		  struct kiln_dctx *x, uint64_t max, uint8_t **out,
		  struct kiln_diag *d)
{
	struct kiln_extents l = { 0 };
	struct kiln_fpos pos = { 0 };
	uint8_t *buf;

	*out = NULL;
	if (ri->size > max) {
		kiln_diag_set(d, "size %llu is over the %llu bytes allowed",
			      (unsigned long long)ri->size,
			      (unsigned long long)max);
		return -1;
	}
	buf = malloc(ri->size + 1);
	if (!buf) {
		kiln_diag_set(d, "out of memory");
		return -1;
	}
	do {
		if (kiln_file_map(img, ri, &pos, &l, KILN_WINDOW_EXTENTS,
				  UINT64_MAX, d))
			goto fail;
		for (size_t i = 0; i < l.nr; i++)
			if (kiln_fext_read(img, x, &l.e[i], buf + l.e[i].la, d))
				goto fail;
	} while (pos.la < ri->size);
	buf[ri->size] = 0;
	free(l.e);
	*out = buf;
	return 0;
fail:
	free(buf);
	free(l.e);
	return -1;
}

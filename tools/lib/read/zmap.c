/* SPDX-License-Identifier: MIT */
/*
 * Compressed inodes: from the map header and the lcluster index (full or
 * compact, see format/erofs_fs.h) to extents, a window at a time, checking
 * every rule the kernel relies on while it maps (format reference
 * §5.2-5.6). Records are read from the image as they are needed (through
 * the reader's block cache), never the whole index at once: a window costs
 * the same memory whatever the index's size.
 */
#include <string.h>
#include "compress/compress.h"
#include "format/le.h"
#include "reader.h"
#include "common/util.h"


struct zmap {
	const struct kiln_image *img;
	const struct kiln_rinode *ri;
	uint64_t hpos;			/* map header */
	uint16_t advise, idata_size;
	uint8_t alg[2];
	unsigned int lcbits, lobits;
	uint64_t nlc, c4i, c2b;
	uint64_t index_len;		/* bytes of records, after the header */
	bool compact, big1, big2;
	bool whole;			/* all of the file is a fragment */
	bool fragment;			/* its last extent is one */
	uint64_t frag_off;		/* where, in the packed inode */
};

/* Fragments are read a piece at a time: a worker holds at most this. */
#define FRAG_PIECE (1u << 20)

static void full_rec(const uint8_t *p, struct z_erofs_lcluster *r)
{
	memset(r, 0, sizeof(*r));
	r->type = get_le16(p) & 3;
	r->delta1 = -1;
	if (r->type != Z_EROFS_LCLUSTER_TYPE_NONHEAD) {
		r->partial = get_le16(p) & Z_EROFS_LI_PARTIAL_REF;
		r->clusterofs = get_le16(p + 2);
		r->blkaddr = get_le32(p + 4);
		return;
	}
	r->delta0 = get_le16(p + 4);
	if (r->delta0 & Z_EROFS_LI_D0_CBLKCNT) {
		r->cblkcnt = r->delta0 & ~Z_EROFS_LI_D0_CBLKCNT;
		r->delta0 = 1;
	}
	r->delta1 = get_le16(p + 6);
}

static unsigned int entry(const uint8_t *pack, unsigned int j, unsigned int w,
			  unsigned int lobits, uint8_t *type)
{
	unsigned int bit = j * w;
	uint32_t v = get_le32(pack + bit / 8) >> (bit % 8);

	*type = (uint8_t)((v >> lobits) & 3);
	return v & ((1u << lobits) - 1);
}

/* Pack holding record lcn: offset in the index, entry number, geometry. */
static void pack_of(const struct zmap *z, uint64_t lcn, uint64_t *off,
		    unsigned int *i, unsigned int *vcnt)
{
	uint64_t base = 0;

	*vcnt = 2;
	if (lcn >= z->c4i) {
		base = z->c4i * 4;
		lcn -= z->c4i;
		if (lcn < z->c2b) {
			*vcnt = 16;
			*off = base + lcn / 16 * 32;
			*i = (unsigned int)(lcn % 16);
			return;
		}
		base += z->c2b * 2;
		lcn -= z->c2b;
	}
	*off = base + lcn / 2 * 8;
	*i = (unsigned int)(lcn % 2);
}

/*
 * The kernel's unpacking of one compact record (z_erofs_load_compact_lcluster):
 * entry i of pack, a pack of vcnt entries.
 */
static int compact_rec(const struct zmap *z, uint64_t lcn, const uint8_t *pack,
		       unsigned int i, unsigned int vcnt,
		       struct z_erofs_lcluster *r, struct kiln_diag *d)
{
	unsigned int w = vcnt == 2 ? 16 : 14, lo, nblk;
	uint8_t type;
	int j;

	memset(r, 0, sizeof(*r));
	r->delta1 = -1;
	lo = entry(pack, i, w, z->lobits, &type);
	r->type = type;
	if (type == Z_EROFS_LCLUSTER_TYPE_NONHEAD) {
		if (lo & Z_EROFS_LI_D0_CBLKCNT) {
			if (!z->big1) {
				kiln_diag_set(d, "lcluster %llu: block count "
					      "without big pclusters",
					      (unsigned long long)lcn);
				return -1;
			}
			r->cblkcnt = lo & ~Z_EROFS_LI_D0_CBLKCNT;
			r->delta0 = 1;
		} else if (i + 1 != vcnt) {
			r->delta0 = (uint16_t)lo;
		} else {
			/* a pack's last entry holds delta1 instead */
			r->delta1 = (int32_t)lo;
			lo = entry(pack, i - 1, w, z->lobits, &type);
			r->delta0 = type != Z_EROFS_LCLUSTER_TYPE_NONHEAD ? 1 :
				(lo & Z_EROFS_LI_D0_CBLKCNT) ? 2 :
				(uint16_t)(lo + 1);
		}
		return 0;
	}
	r->clusterofs = (uint16_t)lo;
	/* heads: pack base plus the pclusters of earlier heads in the pack */
	nblk = z->big1 ? 0 : 1;
	for (j = (int)i - 1; j >= 0; j--) {
		lo = entry(pack, (unsigned int)j, w, z->lobits, &type);
		if (type != Z_EROFS_LCLUSTER_TYPE_NONHEAD) {
			nblk++;
		} else if (!z->big1) {
			j -= (int)lo;
			if (j >= 0)
				nblk++;
		} else if (lo & Z_EROFS_LI_D0_CBLKCNT) {
			j--;
			nblk += lo & ~Z_EROFS_LI_D0_CBLKCNT;
		} else if (lo <= 1) {
			kiln_diag_set(d, "lcluster %llu: delta0 %u in a big "
				      "pcluster index", (unsigned long long)lcn,
				      lo);
			return -1;
		} else {
			j -= (int)lo - 2;
		}
	}
	r->blkaddr = get_le32(pack + vcnt * w / 8) + nblk;
	return 0;
}

/* Record lcn, read from the image: a full record, or its compact pack. */
static int rec(const struct zmap *z, uint64_t lcn, struct z_erofs_lcluster *r,
	       struct kiln_diag *d)
{
	uint8_t pack[32];
	unsigned int i, vcnt;
	uint64_t off;

	if (!z->compact) {	/* 8 reserved bytes, then 8 per lcluster */
		if (kiln_image_read(z->img, pack, z->hpos + 16 + 8 * lcn, 8, d))
			return -1;
		full_rec(pack, r);
		/* as the kernel: a block count only with big pclusters */
		if (r->type == Z_EROFS_LCLUSTER_TYPE_NONHEAD &&
		    (get_le16(pack + 4) & Z_EROFS_LI_D0_CBLKCNT) &&
		    !z->big1 && !z->big2) {
			kiln_diag_set(d, "lcluster %llu: block count without "
				      "big pclusters", (unsigned long long)lcn);
			return -1;
		}
		return 0;
	}
	pack_of(z, lcn, &off, &i, &vcnt);
	if (kiln_image_read(z->img, pack, z->hpos + 8 + off,
			    vcnt == 2 ? 8 : 32, d))
		return -1;
	return compact_rec(z, lcn, pack, i, vcnt, r, d);
}

static int read_header(struct zmap *z, struct kiln_diag *d)
{
	const struct kiln_image *img = z->img;
	uint8_t h[Z_EROFS_MAP_HEADER_SIZE];

	z->hpos = round_up(z->ri->tail, 8);
	if (kiln_image_read(img, h, z->hpos, sizeof(h), d))
		return -1;
	/* the whole file in the packed inode: the rest is its offset */
	if (h[7] & 0x80) {
		z->whole = true;
		z->frag_off = get_le64(h) & ~(1ull << 63);
		return 0;
	}
	z->idata_size = get_le16(h + 2);
	z->advise = get_le16(h + 4);
	z->alg[0] = h[6] & 15;
	z->alg[1] = h[6] >> 4;
	z->lcbits = img->blkszbits + (h[7] & 15);
	z->compact = z->ri->layout == EROFS_INODE_COMPRESSED_COMPACT;
	z->big1 = z->advise & Z_EROFS_ADVISE_BIG_PCLUSTER_1;
	z->big2 = z->advise & Z_EROFS_ADVISE_BIG_PCLUSTER_2;
	if (!z->compact && (z->advise & Z_EROFS_ADVISE_EXTENTS)) {
		kiln_diag_set(d, "map header: encoded extents (Linux 6.15) "
			      "are not supported yet");
		return -1;
	}
	/* the kernel's rule: a fragment tail, and then no inline one */
	if (z->advise & Z_EROFS_ADVISE_FRAGMENT_PCLUSTER)
		z->advise &= (uint16_t)~Z_EROFS_ADVISE_INLINE_PCLUSTER;
	if (z->advise & Z_EROFS_ADVISE_FRAGMENT_PCLUSTER) {
		z->fragment = true;
		z->frag_off = get_le32(h);	/* a full index: + high bits */
	}
	if (z->alg[0] > 3 || z->alg[1] > 3) {
		kiln_diag_set(d, "map header: unknown algorithm types 0x%02x",
			      h[6]);
		return -1;
	}
	if ((z->big1 || z->big2) && !img->big_pcluster) {
		kiln_diag_set(d, "map header: big pclusters in an image "
			      "without them");
		return -1;
	}
	if (z->compact && z->big1 != z->big2) {
		kiln_diag_set(d, "map header: compact index with only one of "
			      "the big pcluster flags");
		return -1;
	}
	if ((z->advise & Z_EROFS_ADVISE_INLINE_PCLUSTER) && !img->ztailpacking) {
		kiln_diag_set(d, "map header: inline tail without ztailpacking");
		return -1;
	}
	if (z->lcbits > (z->compact ? 14u : 16u) ||
	    ((z->advise & Z_EROFS_ADVISE_COMPACTED_2B) && z->compact &&
	     z->lcbits > 12)) {
		kiln_diag_set(d, "map header: lcluster size 2^%u not usable "
			      "with this index", z->lcbits);
		return -1;
	}
	z->lobits = z->lcbits > 12 ? z->lcbits : 12;
	z->nlc = (z->ri->size + (1ull << z->lcbits) - 1) >> z->lcbits;
	if (z->nlc > img->size) {
		kiln_diag_set(d, "file size %llu needs an index larger than "
			      "the image", (unsigned long long)z->ri->size);
		return -1;
	}
	if (!z->compact) {
		z->index_len = 8 + 8 * z->nlc;	/* 8 reserved bytes first */
		return 0;
	}
	if (z->advise & Z_EROFS_ADVISE_COMPACTED_2B) {
		/* 4B packs up to a 32-byte boundary, then 2B packs */
		z->c4i = ((32 - (z->hpos + 8) % 32) / 4) & 7;
		if (z->c4i < z->nlc)
			z->c2b = (z->nlc - z->c4i) / 16 * 16;
		else
			z->c4i = z->nlc;
	}
	z->index_len = 4 * round_up(z->c4i, 2) + 2 * z->c2b +
		       8 * ((z->nlc - z->c4i - z->c2b + 1) / 2);
	return 0;
}

static int check_nonhead(uint64_t h, uint64_t k, const struct z_erofs_lcluster *r,
			 struct kiln_diag *d)
{
	if (r->cblkcnt && k != h + 1) {
		kiln_diag_set(d, "lcluster %llu: block count away from its "
			      "head", (unsigned long long)k);
		return -1;
	}
	if (!r->delta0 || r->delta0 > k - h || !r->delta1) {
		kiln_diag_set(d, "lcluster %llu: deltas %u/%d disagree with "
			      "the head at lcluster %llu",
			      (unsigned long long)k, r->delta0, r->delta1,
			      (unsigned long long)h);
		return -1;
	}
	return 0;
}

/* Blocks of the pcluster whose head is h; first: record h + 1, if any. */
static int pcluster_blocks(const struct zmap *z, const struct z_erofs_lcluster *hr,
			   const struct z_erofs_lcluster *first, uint32_t *nblocks,
			   struct kiln_diag *d)
{
	bool big = hr->type == Z_EROFS_LCLUSTER_TYPE_HEAD1 ? z->big1 : z->big2;

	*nblocks = 1;
	if (!first || first->type != Z_EROFS_LCLUSTER_TYPE_NONHEAD)
		return 0;
	/*
	 * As the kernel reads it: without the big pcluster flag for this
	 * head type, a block count after the head means nothing (erofs-utils
	 * writes one after plain heads in full indexes).
	 */
	if (!big)
		return 0;
	if (!first->cblkcnt || first->delta0 != 1) {
		kiln_diag_set(d, "big pcluster without its block count");
		return -1;
	}
	*nblocks = first->cblkcnt;
	if (((uint64_t)*nblocks << z->img->blkszbits) > (1u << 20)) {
		kiln_diag_set(d, "pcluster of %u blocks is over 1 MiB",
			      *nblocks);
		return -1;
	}
	return 0;
}

static int add_extent(const struct zmap *z, struct kiln_fext *e,
		      const struct z_erofs_lcluster *hr, const struct z_erofs_lcluster *first,
		      struct kiln_diag *d)
{
	const struct kiln_image *img = z->img;
	uint32_t nblocks;

	if (pcluster_blocks(z, hr, first, &nblocks, d))
		return -1;
	e->pa = (uint64_t)hr->blkaddr << img->blkszbits;
	e->plen = nblocks << img->blkszbits;
	e->kind = KILN_EXT_PLAIN;
	e->interlaced = z->advise & Z_EROFS_ADVISE_INTERLACED_PCLUSTER;
	if (hr->type != Z_EROFS_LCLUSTER_TYPE_PLAIN) {
		e->kind = KILN_EXT_ZIP;
		/* -E dedupe: a prefix of a pcluster another extent owns */
		e->partial = hr->partial;
		e->alg = z->alg[hr->type == Z_EROFS_LCLUSTER_TYPE_HEAD2];
		if (!(img->algs & 1u << e->alg)) {
			kiln_diag_set(d, "extent at %llu uses algorithm %u, "
				      "not available in this image",
				      (unsigned long long)e->la, e->alg);
			return -1;
		}
		if (e->llen > KILN_MAX_EXTENT_LEN) {
			kiln_diag_set(d, "extent at %llu decodes to %llu bytes "
				      "(over 12 MiB)", (unsigned long long)e->la,
				      (unsigned long long)e->llen);
			return -1;
		}
	}
	return 0;
}

/* Physical checks, once the tail extent is known to be inline or not. */
static int check_extent(const struct zmap *z, const struct kiln_fext *e,
			struct kiln_diag *d)
{
	if (e->pa > z->img->size || e->plen > z->img->size - e->pa) {
		kiln_diag_set(d, "pcluster of extent at %llu (%u bytes at "
			      "offset %llu) is beyond the end of the image",
			      (unsigned long long)e->la, e->plen,
			      (unsigned long long)e->pa);
		return -1;
	}
	if (e->kind == KILN_EXT_PLAIN && e->llen > e->plen) {
		kiln_diag_set(d, "uncompressed extent at %llu holds %llu bytes "
			      "in a %u-byte pcluster", (unsigned long long)e->la,
			      (unsigned long long)e->llen, e->plen);
		return -1;
	}
	return 0;
}

static int set_inline_tail(const struct zmap *z, struct kiln_fext *e,
			   struct kiln_diag *d)
{
	uint64_t pos = z->hpos + 8 + z->index_len;
	uint32_t blksz = z->img->blksz;

	if (!z->idata_size || (pos & (blksz - 1)) + z->idata_size > blksz) {
		kiln_diag_set(d, "inline tail of %u bytes at offset %llu is "
			      "empty or crosses a block boundary", z->idata_size,
			      (unsigned long long)pos);
		return -1;
	}
	e->pa = pos;
	e->plen = z->idata_size;
	e->meta = true;
	return 0;
}

/*
 * Extents for the fragment that holds the file from la0 to its end, at
 * off in the packed inode, from pos->la on (a window may have stopped
 * inside it), in pieces, while the window has room (at least one).
 */
static int push_fragment(const struct zmap *z, uint64_t la0, uint64_t off,
			 struct kiln_fpos *pos, struct kiln_extents *l,
			 size_t max_nr, uint64_t max_bytes, uint64_t *bytes,
			 struct kiln_diag *d)
{
	const struct kiln_rinode *p = z->img->packed;
	uint64_t isize = z->ri->size, la = pos->la > la0 ? pos->la : la0;

	if (!p) {
		kiln_diag_set(d, "fragment in an image without a packed inode");
		return -1;
	}
	if (off > p->size || isize - la0 > p->size - off) {
		kiln_diag_set(d, "fragment of %llu bytes at %llu is beyond the "
			      "packed inode's %llu",
			      (unsigned long long)(isize - la0),
			      (unsigned long long)off,
			      (unsigned long long)p->size);
		return -1;
	}
	do {
		uint64_t n = isize - la < FRAG_PIECE ? isize - la : FRAG_PIECE;
		struct kiln_fext *e = kiln_extents_add(l, d);

		if (!e)
			return -1;
		*e = (struct kiln_fext){ .la = la, .llen = n,
					 .pa = off + (la - la0),
					 .kind = KILN_EXT_FRAG };
		la += n;
		*bytes += n;
	} while (la < isize && l->nr < max_nr && *bytes < max_bytes);
	pos->la = la;
	return 0;
}

/*
 * Walks the heads from pos->lcn; each extent runs to the next head or to
 * EOF. A window ends after max_nr extents or max_bytes of data, at a head;
 * past the last extent the walk goes on to check the end-of-file sentinel.
 */
static int walk(struct zmap *z, struct kiln_fpos *pos, struct kiln_extents *l,
		size_t max_nr, uint64_t max_bytes, struct kiln_diag *d)
{
	struct kiln_fext *e;
	uint64_t isize = z->ri->size, lcsz = 1ull << z->lcbits, h = pos->lcn;
	uint64_t bytes = 0;
	struct z_erofs_lcluster hr, r, first = { 0 };

	if (rec(z, h, &hr, d))
		return -1;
	if (!h && (hr.type == Z_EROFS_LCLUSTER_TYPE_NONHEAD || hr.clusterofs)) {
		kiln_diag_set(d, "lcluster 0 does not start an extent at 0");
		return -1;
	}
	for (;;) {
		uint64_t la = h * lcsz + hr.clusterofs, k, end, reach = 0;
		bool has_first = false;

		if (hr.clusterofs >= lcsz) {
			kiln_diag_set(d, "lcluster %llu: offset %u beyond the "
				      "lcluster", (unsigned long long)h,
				      hr.clusterofs);
			return -1;
		}
		/*
		 * Resuming inside a fragment (only a fragment is left mid-way):
		 * its records were checked by the window before, which kept
		 * where they end; scanning them again for every window would
		 * cost windows x lclusters.
		 */
		if (pos->next > h && la < pos->la) {
			k = pos->next;
			if (k < z->nlc && rec(z, k, &r, d))
				return -1;
		} else {
			for (k = h + 1; k < z->nlc; k++) {
				if (rec(z, k, &r, d))
					return -1;
				if (r.type != Z_EROFS_LCLUSTER_TYPE_NONHEAD)
					break;
				if (check_nonhead(h, k, &r, d))
					return -1;
				if (k == h + 1) {
					first = r;
					has_first = true;
				}
				if (r.delta1 > 0 &&
				    k + (uint64_t)r.delta1 > reach)
					reach = k + (uint64_t)r.delta1;
			}
		}
		pos->next = 0;
		if (k < z->nlc && reach > k) {
			kiln_diag_set(d, "lcluster %llu: delta1 jumps over the "
				      "head at lcluster %llu",
				      (unsigned long long)h, (unsigned long long)k);
			return -1;
		}
		if (la >= isize) {	/* the end-of-file sentinel */
			if (k < z->nlc || hr.type != Z_EROFS_LCLUSTER_TYPE_PLAIN) {
				kiln_diag_set(d, "lcluster %llu: extent starts "
					      "past the end of the file",
					      (unsigned long long)h);
				return -1;
			}
			return 0;
		}
		end = k < z->nlc ? k * lcsz + r.clusterofs : isize;
		end = end < isize ? end : isize;
		/* the last extent may be a fragment (never with an inline
		 * tail: read_header) */
		if (end == isize && z->fragment) {
			uint64_t off = z->frag_off | (z->compact ? 0 :
					(uint64_t)hr.blkaddr << 32);

			if (push_fragment(z, la, off, pos, l, max_nr,
					  max_bytes, &bytes, d))
				return -1;
			if (pos->la < isize) {	/* the window is full */
				pos->lcn = h;
				pos->next = k;
				return 0;
			}
		} else {
			e = kiln_extents_add(l, d);
			if (!e)
				return -1;
			*e = (struct kiln_fext){ .la = la, .llen = end - la };
			if (add_extent(z, e, &hr, has_first ? &first : NULL, d))
				return -1;
			/* the last extent may be the inline tail */
			if (end == isize &&
			    (z->advise & Z_EROFS_ADVISE_INLINE_PCLUSTER) &&
			    set_inline_tail(z, e, d))
				return -1;
			if (check_extent(z, e, d))
				return -1;
			bytes += e->llen;
			pos->la = end;
		}
		pos->lcn = k;
		if (k >= z->nlc || (end < isize &&
		    (l->nr >= max_nr || bytes >= max_bytes)))
			return 0;
		h = k;
		hr = r;
	}
}

int kiln_zmap(const struct kiln_image *img, const struct kiln_rinode *ri,
	      struct kiln_fpos *pos, struct kiln_extents *l, size_t max_nr,
	      uint64_t max_bytes, struct kiln_diag *d)
{
	struct zmap z = { .img = img, .ri = ri };

	uint64_t bytes = 0;

	/* the header again for every window: 8 bytes, from the cache */
	if (read_header(&z, d))
		return -1;
	if (z.whole)
		return pos->la >= ri->size ? 0 :
		       push_fragment(&z, 0, z.frag_off, pos, l, max_nr,
				     max_bytes, &bytes, d);
	if (!z.nlc || pos->la >= ri->size)
		return 0;
	if (z.hpos + 8 > img->size || z.index_len > img->size - z.hpos - 8) {
		kiln_diag_set(d, "index of %llu lclusters runs past the end of "
			      "the image", (unsigned long long)z.nlc);
		return -1;
	}
	return walk(&z, pos, l, max_nr, max_bytes, d);
}

int kiln_zmap_seek(const struct kiln_image *img, const struct kiln_rinode *ri,
		   uint64_t la, struct kiln_fpos *pos, struct kiln_diag *d)
{
	struct zmap z = { .img = img, .ri = ri };
	struct z_erofs_lcluster r;
	uint64_t lcn;

	if (read_header(&z, d))
		return -1;
	*pos = (struct kiln_fpos){ 0 };
	if (z.whole) {		/* all a fragment: pieces map from any la */
		pos->la = la;
		return 0;
	}
	lcn = la >> z.lcbits;
	if (lcn >= z.nlc) {
		kiln_diag_set(d, "offset %llu is past the index",
			      (unsigned long long)la);
		return -1;
	}
	if (rec(&z, lcn, &r, d))
		return -1;
	/* an extent starts in lcn after la: la is in the one before */
	if (r.type != Z_EROFS_LCLUSTER_TYPE_NONHEAD &&
	    (la & ((1ull << z.lcbits) - 1)) < r.clusterofs)
		r = (struct z_erofs_lcluster){
			.type = Z_EROFS_LCLUSTER_TYPE_NONHEAD, .delta0 = 1 };
	while (r.type == Z_EROFS_LCLUSTER_TYPE_NONHEAD) {
		if (!r.delta0 || r.delta0 > lcn) {
			kiln_diag_set(d, "lcluster %llu: lookback %u leads "
				      "before the file", (unsigned long long)lcn,
				      r.delta0);
			return -1;
		}
		lcn -= r.delta0;
		if (rec(&z, lcn, &r, d))
			return -1;
	}
	pos->lcn = lcn;
	pos->la = (lcn << z.lcbits) + r.clusterofs;
	return 0;
}

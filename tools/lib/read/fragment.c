/* SPDX-License-Identifier: MIT */
/*
 * Fragments: in an image with the fragments feature, a file's last extent,
 * or all of it, may be a range of the packed inode's content instead of
 * pclusters of its own (format reference §5.12). The packed inode is a
 * regular file in no directory, compressed like any other; its extents are
 * found by seeking its index (never by mapping it from the start for each
 * file) and the last one decoded is kept per thread, since files written
 * one after another sit next to each other in it.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "dctx.h"
#include "reader.h"

int kiln_packed_load(struct kiln_image *img, struct kiln_diag *d)
{
	struct kiln_rinode ri;

	/* as the kernel: nid 0 means there is none */
	if (!(img->sb.feature_incompat & EROFS_FEATURE_INCOMPAT_FRAGMENTS) ||
	    !img->sb.packed_nid)
		return 0;
	if (kiln_inode_load(img, img->sb.packed_nid, &ri, d))
		return -1;
	if (!S_ISREG(ri.mode)) {
		kiln_diag_set(d, "packed inode (nid %llu) is not a regular "
			      "file", (unsigned long long)ri.nid);
		return -1;
	}
	img->packed = malloc(sizeof(ri));
	if (!img->packed) {
		kiln_diag_set(d, "out of memory");
		return -1;
	}
	*img->packed = ri;
	return 0;
}

/* The packed inode's extent holding byte off, decoded into x's cache. */
static int load_extent(const struct kiln_image *img, struct kiln_dctx *x,
		       uint64_t off, struct kiln_diag *d)
{
	const struct kiln_rinode *p = img->packed;
	struct kiln_extents l = { 0 };
	struct kiln_fpos pos = { .la = off };
	struct kiln_fext e;
	int ret = -1;

	if ((p->layout == EROFS_INODE_COMPRESSED_FULL ||
	     p->layout == EROFS_INODE_COMPRESSED_COMPACT) &&
	    kiln_zmap_seek(img, p, off, &pos, d))
		return -1;
	if (kiln_file_map(img, p, &pos, &l, 1, 1, d))
		goto out;
	if (!l.nr || l.e[0].la > off || off - l.e[0].la >= l.e[0].llen) {
		kiln_diag_set(d, "packed inode: no extent holds offset %llu",
			      (unsigned long long)off);
		goto out;
	}
	e = l.e[0];
	if (e.kind == KILN_EXT_FRAG) {
		kiln_diag_set(d, "packed inode: has a fragment of its own");
		goto out;
	}
	/*
	 * A hole could stand for any size (a chunk index of holes claims
	 * petabytes): reading fragments from one would cost that much time.
	 * Packed inodes are compressed and hold what they hold.
	 */
	if (e.kind == KILN_EXT_HOLE) {
		kiln_diag_set(d, "packed inode: offset %llu is in a hole",
			      (unsigned long long)off);
		goto out;
	}
	if (e.llen > x->packed_cap) {
		free(x->packed);
		x->packed_gen = 0;
		x->packed_cap = 0;
		x->packed = malloc(e.llen);
		if (!x->packed) {
			kiln_diag_set(d, "out of memory");
			goto out;
		}
		x->packed_cap = e.llen;
	}
	x->packed_gen = 0;
	if (kiln_fext_read(img, x, &e, x->packed, d))
		goto out;
	x->packed_la = e.la;
	x->packed_len = e.llen;
	x->packed_gen = img->gen;
	ret = 0;
out:
	free(l.e);
	return ret;
}

int kiln_fragment_read(const struct kiln_image *img, struct kiln_dctx *x,
		       uint64_t off, uint64_t len, uint8_t *out,
		       struct kiln_diag *d)
{
	const struct kiln_rinode *p = img->packed;

	if (!p) {
		kiln_diag_set(d, "fragment in an image without a packed inode");
		return -1;
	}
	if (off > p->size || len > p->size - off) {
		kiln_diag_set(d, "fragment of %llu bytes at %llu is beyond the "
			      "packed inode's %llu", (unsigned long long)len,
			      (unsigned long long)off,
			      (unsigned long long)p->size);
		return -1;
	}
	while (len) {
		uint64_t n;

		if (x->packed_gen != img->gen || off < x->packed_la ||
		    off - x->packed_la >= x->packed_len) {
			if (load_extent(img, x, off, d))
				return -1;
		}
		n = x->packed_la + x->packed_len - off;
		n = n < len ? n : len;
		memcpy(out, x->packed + (off - x->packed_la), n);
		out += n;
		off += n;
		len -= n;
	}
	return 0;
}

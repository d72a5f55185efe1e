/* SPDX-License-Identifier: MIT */
/*
 * Directory blocks: an array of 12-byte entries, then their names, packed
 * towards the block's end. The kernel finds names by binary search, first
 * over blocks, then within one, so names must be strictly ascending across
 * the whole directory; nameoffs must grow and stay inside the block.
 */
#include <string.h>
#include "format/ondisk.h"
#include "reader.h"

struct name {
	const char *s;
	size_t len;
};

static int cmp(struct name a, struct name b)
{
	int c = memcmp(a.s, b.s, a.len < b.len ? a.len : b.len);

	return c ? c : (a.len > b.len) - (a.len < b.len);
}

static int block(const uint8_t *blk, uint32_t len, uint64_t bno,
		 struct name *prev, kiln_dirent_fn fn, void *arg,
		 struct kiln_diag *d)
{
	struct erofs_dirent de;
	uint32_t n;

	erofs_dirent_decode(&de, blk);
	if (de.nameoff < EROFS_DIRENT_SIZE || de.nameoff % EROFS_DIRENT_SIZE ||
	    de.nameoff >= len) {
		kiln_diag_set(d, "directory block %llu: bad first name offset "
			      "%u", (unsigned long long)bno, de.nameoff);
		return -1;
	}
	n = de.nameoff / EROFS_DIRENT_SIZE;
	for (uint32_t i = 0; i < n; i++) {
		struct erofs_dirent next;
		uint32_t end = len;
		struct name nm;
		int ret;

		erofs_dirent_decode(&de, blk + i * EROFS_DIRENT_SIZE);
		if (i + 1 < n) {
			erofs_dirent_decode(&next, blk + (i + 1) * EROFS_DIRENT_SIZE);
			end = next.nameoff;
		}
		if (de.nameoff < n * EROFS_DIRENT_SIZE || end > len ||
		    end <= de.nameoff) {
			kiln_diag_set(d, "directory block %llu, entry %u: name "
				      "offsets %u..%u out of order or range",
				      (unsigned long long)bno, i, de.nameoff, end);
			return -1;
		}
		nm.s = (const char *)blk + de.nameoff;
		/* the last name ends at the block's end or at a NUL */
		nm.len = i + 1 < n ? end - de.nameoff :
			 strnlen(nm.s, end - de.nameoff);
		if (!nm.len || nm.len > EROFS_NAME_LEN ||
		    memchr(nm.s, 0, nm.len)) {
			kiln_diag_set(d, "directory block %llu, entry %u: bad "
				      "name of %zu bytes", (unsigned long long)bno,
				      i, nm.len);
			return -1;
		}
		if (de.file_type > EROFS_FT_SYMLINK) {
			kiln_diag_set(d, "entry '%.*s': unknown file type %u",
				      (int)nm.len, nm.s, de.file_type);
			return -1;
		}
		if (prev->s && cmp(*prev, nm) >= 0) {
			kiln_diag_set(d, "entry '%.*s' is not in sorted order "
				      "after '%.*s'", (int)nm.len, nm.s,
				      (int)prev->len, prev->s);
			return -1;
		}
		*prev = nm;
		ret = fn(arg, nm.s, nm.len, de.nid, de.file_type);
		if (ret)
			return ret;
	}
	return 0;
}

int kiln_dir_each(const struct kiln_image *img, const struct kiln_rinode *ri,
		  const uint8_t *data, kiln_dirent_fn fn, void *arg,
		  struct kiln_diag *d)
{
	struct name prev = { NULL, 0 };

	if (!ri->size) {
		kiln_diag_set(d, "empty directory (no '.' and '..')");
		return -1;
	}
	for (uint64_t off = 0; off < ri->size; off += img->blksz) {
		uint64_t left = ri->size - off;
		uint32_t len = left < img->blksz ? (uint32_t)left : img->blksz;
		int ret;

		if (len < EROFS_DIRENT_SIZE) {
			kiln_diag_set(d, "directory ends with a %u-byte block",
				      len);
			return -1;
		}
		ret = block(data + off, len, off >> img->blkszbits, &prev, fn,
			    arg, d);
		if (ret)
			return ret;
	}
	return 0;
}

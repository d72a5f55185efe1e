/* SPDX-License-Identifier: MIT */
/*
 * Extended attributes of an inode: shared entries (by id, from the shared
 * area at xattr_blkaddr) first, then the inline ones, as the kernel lists
 * them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/xxh32.h"
#include "format/le.h"
#include "reader.h"

static const char *const prefixes[] = {
	[EROFS_XATTR_INDEX_USER] = "user.",
	[EROFS_XATTR_INDEX_POSIX_ACL_ACCESS] = "system.posix_acl_access",
	[EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT] = "system.posix_acl_default",
	[EROFS_XATTR_INDEX_TRUSTED] = "trusted.",
	[EROFS_XATTR_INDEX_LUSTRE] = "lustre.",
	[EROFS_XATTR_INDEX_SECURITY] = "security.",
};

#define NR_PREFIXES (sizeof(prefixes) / sizeof(prefixes[0]))

/*
 * The table's bytes: from the packed inode's content when the image has
 * one (as the kernel reads them), else from the metadata.
 */
static int table_read(const struct kiln_image *img, struct kiln_dctx *x,
		      void *buf, uint64_t pos, uint64_t len,
		      struct kiln_diag *d)
{
	/* the kernel's rule: in the packed inode if there is one, unless
	 * the superblock says the table is plain */
	if (img->packed && !(img->sb.feature_compat &
			     EROFS_FEATURE_COMPAT_PLAIN_XATTR_PFX))
		return kiln_fragment_read(img, x, pos, len, buf, d);
	return kiln_image_read(img, buf, pos, len, d);
}

static int load_prefixes(struct kiln_image *img, struct kiln_dctx *x,
			 struct kiln_diag *d)
{
	uint64_t pos = (uint64_t)img->sb.xattr_prefix_start * 4;
	unsigned int n = img->sb.xattr_prefix_count;

	img->xprefix = calloc(n ? n : 1, sizeof(*img->xprefix));
	if (!img->xprefix) {
		kiln_diag_set(d, "out of memory");
		return -1;
	}
	for (unsigned int i = 0; i < n; i++) {
		uint8_t rec[2 + 256];
		uint16_t len;

		if (table_read(img, x, rec, pos, 3, d))
			return -1;
		len = get_le16(rec);
		if (len < 1 || len > 256 || rec[2] == 0 ||
		    rec[2] >= NR_PREFIXES) {
			kiln_diag_set(d, "long xattr prefix %u: %u bytes, base "
				      "index %u", i, len, rec[2]);
			return -1;
		}
		if (table_read(img, x, rec, pos, 2u + len, d))
			return -1;
		if (memchr(rec + 3, 0, len - 1u)) {
			kiln_diag_set(d, "long xattr prefix %u has a NUL byte", i);
			return -1;
		}
		img->xprefix[i] = malloc(strlen(prefixes[rec[2]]) + len);
		if (!img->xprefix[i]) {
			kiln_diag_set(d, "out of memory");
			return -1;
		}
		sprintf(img->xprefix[i], "%s%.*s", prefixes[rec[2]],
			(int)len - 1, (const char *)rec + 3);
		img->nr_xprefix = i + 1;
		pos = (pos + 2 + len + 3) & ~(uint64_t)3;
	}
	return 0;
}

int kiln_xattr_prefixes_load(struct kiln_image *img, struct kiln_diag *d)
{
	struct kiln_dctx *x;
	int ret;

	if (!(img->sb.feature_incompat & EROFS_FEATURE_INCOMPAT_XATTR_PREFIXES)) {
		if (!img->sb.xattr_prefix_count)
			return 0;
		/* the kernel loads the table by its count and fails */
		kiln_diag_set(d, "%u long xattr prefixes without the "
			      "xattr_prefixes feature", img->sb.xattr_prefix_count);
		return -1;
	}
	x = img->packed ? kiln_dctx_new(img) : NULL;
	if (img->packed && !x) {
		kiln_diag_set(d, "out of memory");
		return -1;
	}
	ret = load_prefixes(img, x, d);
	if (x)
		kiln_dctx_free(x);
	return ret;
}

void kiln_xattr_prefixes_free(struct kiln_image *img)
{
	for (unsigned int i = 0; i < img->nr_xprefix; i++)
		free(img->xprefix[i]);
	free(img->xprefix);
	img->xprefix = NULL;
	img->nr_xprefix = 0;
}

/*
 * Whether the inode's name filter (a bit set: no such name) hides name
 * from the kernel, which looks it up by the rest after its base prefix,
 * hashed with XXH32 seeded by the base's index.
 */
static bool filtered(uint32_t filter, const char *name)
{
	for (unsigned int i = 1; i < NR_PREFIXES && filter; i++) {
		size_t n = strlen(prefixes[i]);

		if (i == EROFS_XATTR_INDEX_LUSTRE || strncmp(name, prefixes[i], n))
			continue;
		if (prefixes[i][n - 1] != '.' && name[n])
			continue;	/* an ACL's is the whole name */
		return filter >> (kiln_xxh32(name + n, strlen(name + n),
					     EROFS_XATTR_FILTER_SEED + i) & 31) & 1;
	}
	return false;
}

/*
 * A POSIX ACL value as the kernel takes it (posix_acl_from_xattr): version
 * 2, then 8-byte entries of a known tag and rwx bits; anything else makes
 * it refuse the ACL (EOPNOTSUPP, EINVAL) where tar would restore one.
 */
static bool acl_valid(const uint8_t *v, uint32_t len)
{
	if (len < 4 || (len - 4) % 8 || get_le32(v) != 2)
		return false;
	for (uint32_t i = 4; i < len; i += 8) {
		uint16_t tag = get_le16(v + i), perm = get_le16(v + i + 2);

		if ((tag != 1 && tag != 2 && tag != 4 && tag != 8 &&
		     tag != 0x10 && tag != 0x20) || perm & ~7u)
			return false;
	}
	return true;
}

/*
 * One entry at p (avail bytes); returns its size or 0 on a bad entry.
 * filter: the inode's name filter, 0 when the image has none.
 */
static uint32_t entry(const struct kiln_image *img, const uint8_t *p,
		      uint32_t avail, uint32_t filter, kiln_xattr_fn fn,
		      void *arg, int *ret, struct kiln_diag *d)
{
	uint8_t nlen = p[0], idx = p[1];
	uint16_t vlen = get_le16(p + 2);
	uint32_t size = erofs_xattr_entry_size(nlen, vlen);
	bool lng = idx & EROFS_XATTR_LONG_PREFIX;
	const char *prefix;
	char name[24 + 2 * 256];

	if (size > avail) {
		kiln_diag_set(d, "xattr entry of %u bytes overruns its area "
			      "(%u bytes left)", size, avail);
		return 0;
	}
	idx &= (uint8_t)~EROFS_XATTR_LONG_PREFIX;
	if (lng ? idx >= img->nr_xprefix : idx == 0 || idx >= NR_PREFIXES) {
		kiln_diag_set(d, "xattr entry with unknown name index %s%u",
			      lng ? "0x80|" : "", idx);
		return 0;
	}
	prefix = lng ? img->xprefix[idx] : prefixes[idx];
	if (!lng && idx != EROFS_XATTR_INDEX_POSIX_ACL_ACCESS &&
	    idx != EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT && !nlen) {
		kiln_diag_set(d, "xattr entry with an empty name");
		return 0;
	}
	if (memchr(p + 4, 0, nlen)) {
		kiln_diag_set(d, "xattr name contains a NUL byte");
		return 0;
	}
	snprintf(name, sizeof(name), "%s%.*s", prefix, (int)nlen,
		 (const char *)p + 4);
	if (!lng && (idx == EROFS_XATTR_INDEX_POSIX_ACL_ACCESS ||
		     idx == EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT) && !nlen &&
	    !acl_valid(p + 4 + nlen, vlen)) {
		kiln_diag_set(d, "xattr %s: not a POSIX ACL the kernel reads "
			      "(%u bytes)", name, vlen);
		return 0;
	}
	if (filtered(filter, name)) {
		kiln_diag_set(d, "xattr %s is hidden by the inode's name filter "
			      "(the kernel reads it as absent)", name);
		return 0;
	}
	*ret = fn ? fn(arg, name, p + 4 + nlen, vlen) : 0;
	return size;
}

static int shared(const struct kiln_image *img, uint32_t id, uint32_t filter,
		  kiln_xattr_fn fn, void *arg, struct kiln_diag *d)
{
	uint64_t pos = img->xattr_base + (uint64_t)id * 4;
	uint8_t head[4], *buf;
	uint32_t size;
	int ret = 0;

	if (kiln_image_read(img, head, pos, 4, d))
		return -1;
	size = erofs_xattr_entry_size(head[0], get_le16(head + 2));
	buf = malloc(size);	/* up to 64 KiB: not on a thread's stack */
	if (!buf || kiln_image_read(img, buf, pos, size, d) ||
	    !entry(img, buf, size, filter, fn, arg, &ret, d))
		ret = -1;
	free(buf);
	return ret;
}

int kiln_xattr_each(const struct kiln_image *img, const struct kiln_rinode *ri,
		    kiln_xattr_fn fn, void *arg, struct kiln_diag *d)
{
	uint32_t n = ri->xattr_size, pos, nshared, filter;
	uint8_t *body;
	int ret = -1;

	if (!n)
		return 0;
	/* a header and no entry: the kernel refuses any xattr access (its
	 * data, after the 12 bytes, it still reads) */
	if (n == EROFS_XATTR_IBODY_HEADER_SIZE) {
		kiln_diag_set(d, "xattr_icount 1: an xattr header with no room "
			      "for entries");
		return -1;
	}
	body = malloc(n);
	if (!body) {
		kiln_diag_set(d, "out of memory");
		return -1;
	}
	if (kiln_image_read(img, body, ri->tail - n, n, d))
		goto out;
	nshared = body[4];
	filter = img->sb.feature_compat & EROFS_FEATURE_COMPAT_XATTR_FILTER ?
		 get_le32(body) : 0;
	pos = EROFS_XATTR_IBODY_HEADER_SIZE + 4 * nshared;
	if (pos > n) {
		kiln_diag_set(d, "%u shared xattrs do not fit a %u-byte xattr "
			      "body", nshared, n);
		goto out;
	}
	for (uint32_t i = 0; i < nshared; i++) {
		uint32_t id = get_le32(body + EROFS_XATTR_IBODY_HEADER_SIZE + 4 * i);

		ret = shared(img, id, filter, fn, arg, d);
		if (ret)
			goto out;
	}
	while (pos < n) {
		uint32_t sz;

		ret = 0;
		if (n - pos < EROFS_XATTR_ENTRY_SIZE) {
			kiln_diag_set(d, "%u stray bytes at the end of the xattr "
				      "body", n - pos);
			ret = -1;
			goto out;
		}
		sz = entry(img, body + pos, n - pos, filter, fn, arg, &ret, d);
		if (!sz) {
			ret = -1;
			goto out;
		}
		if (ret)
			goto out;
		pos += sz;
	}
	ret = 0;
out:
	free(body);
	return ret;
}

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include "format/erofs_fs.h"
#include "kiln.h"
#include "format/le.h"
#include "format/ondisk.h"
#include "common/util.h"
#include "xattr.h"

static const struct {
	const char *prefix;
	uint8_t index;
	bool whole;			/* the prefix is the full name */
} prefixes[] = {
	{ "user.", EROFS_XATTR_INDEX_USER, false },
	{ "trusted.", EROFS_XATTR_INDEX_TRUSTED, false },
	{ "security.", EROFS_XATTR_INDEX_SECURITY, false },
	{ "system.posix_acl_access", EROFS_XATTR_INDEX_POSIX_ACL_ACCESS, true },
	{ "system.posix_acl_default", EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT, true },
};

static int match_prefix(const char *name, const char **rest);

int kiln_xattr_prefix_check(const char *prefix)
{
	const char *rest;
	int index = match_prefix(prefix, &rest);

	if (index < 0 || index == EROFS_XATTR_INDEX_POSIX_ACL_ACCESS ||
	    index == EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT ||
	    strlen(rest) > EROFS_NAME_LEN)
		return -1;
	return index;
}

static int match_prefix(const char *name, const char **rest)
{
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t n = strlen(prefixes[i].prefix);

		if (strncmp(name, prefixes[i].prefix, n))
			continue;
		if (prefixes[i].whole && name[n])
			continue;
		*rest = name + n;
		return prefixes[i].index;
	}
	return -1;
}

static void item_free(struct kiln_xattr_item *it)
{
	free(it->name);
	free(it->value);
	free(it);
}

int kiln_xattr_add(struct kiln_inode *inode, const char *path,
		   const char *name, const void *value, size_t len)
{
	const char *rest;
	int index = match_prefix(name, &rest);
	struct kiln_xattr_item *it;

	if (index < 0) {
		kiln_info(1, "%s: warning: xattr %s has no EROFS prefix, skipped",
			  path, name);
		return 0;
	}
	if (strlen(rest) > EROFS_NAME_LEN) {
		kiln_err("%s: xattr name too long: %s", path, name);
		return -1;
	}
	/* the kernel lists "user." but reads it as EINVAL (an ACL's prefix
	   is its whole name: it has none after it) */
	if (!*rest && rest[-1] == '.') {
		kiln_err("%s: xattr %s: no name after the prefix", path, name);
		return -1;
	}
	if (len > UINT16_MAX) {
		kiln_err("%s: xattr %s: value too large", path, name);
		return -1;
	}
	it = xcalloc(1, sizeof(*it));
	it->index = (uint8_t)index;
	it->name_len = (uint8_t)strlen(rest);
	it->name = xstrdup(rest);
	it->refs = 1;
	it->value = xmalloc(len ? len : 1);
	if (len)
		memcpy(it->value, value, len);
	it->value_size = (uint16_t)len;
	inode->xattrs = xrealloc(inode->xattrs, (inode->nr_xattrs + 1) *
				 sizeof(*inode->xattrs));
	inode->xattrs[inode->nr_xattrs++].item = it;
	return 0;
}

void kiln_xattr_remove(struct kiln_inode *inode, const char *name)
{
	const char *rest;
	int index = match_prefix(name, &rest);
	uint32_t k = 0;

	for (uint32_t i = 0; i < inode->nr_xattrs; i++) {
		struct kiln_xattr_item *it = inode->xattrs[i].item;

		if (it->index == index && !strcmp(it->name, rest)) {
			if (--it->refs == 0)
				item_free(it);
			continue;
		}
		inode->xattrs[k++] = inode->xattrs[i];
	}
	inode->nr_xattrs = k;
}

void kiln_xattrs_move(struct kiln_inode *dst, struct kiln_inode *src)
{
	for (uint32_t i = 0; i < src->nr_xattrs; i++) {
		struct kiln_xattr_item *it = src->xattrs[i].item;
		uint32_t k = 0;

		for (uint32_t j = 0; j < dst->nr_xattrs; j++) {
			struct kiln_xattr_item *old = dst->xattrs[j].item;

			if (old->index == it->index && !strcmp(old->name, it->name)) {
				if (--old->refs == 0)
					item_free(old);
				continue;
			}
			dst->xattrs[k++] = dst->xattrs[j];
		}
		dst->nr_xattrs = k;
		dst->xattrs = xrealloc(dst->xattrs, (dst->nr_xattrs + 1) *
				       sizeof(*dst->xattrs));
		dst->xattrs[dst->nr_xattrs++].item = it;
	}
	free(src->xattrs);
	src->xattrs = NULL;
	src->nr_xattrs = 0;
}

/* One attribute of a source file, read and added to inode. */
static int read_one(const char *path, const char *name,
		    struct kiln_inode *inode)
{
	ssize_t len = lgetxattr(path, name, NULL, 0);
	uint8_t *value;
	int ret;

	if (len >= 0 && len <= UINT16_MAX) {
		value = xmalloc(len ? (size_t)len : 1);
		len = lgetxattr(path, name, value, (size_t)len);
		ret = len >= 0 ? kiln_xattr_add(inode, path, name, value,
						(size_t)len) : -1;
		free(value);
		if (len >= 0)
			return ret;
	}
	kiln_err("%s: cannot read xattr %s: %s", path, name,
		 len < 0 ? strerror(errno) : "value too large");
	return -1;
}

static int list_names(const char *path, char **out, ssize_t *outlen)
{
	ssize_t len = llistxattr(path, NULL, 0);

	*out = NULL;
	*outlen = 0;
	if (len < 0 && (errno == ENOTSUP || errno == ENODATA))
		return 0;
	if (len <= 0)
		return len < 0 ? (kiln_err("%s: cannot list xattrs: %s", path,
					   strerror(errno)), -1) : 0;
	*out = xmalloc((size_t)len);
	*outlen = llistxattr(path, *out, (size_t)len);
	if (*outlen < 0) {
		kiln_err("%s: cannot list xattrs: %s", path, strerror(errno));
		free(*out);
		return -1;
	}
	return 0;
}

int kiln_xattrs_read(const char *path, struct kiln_inode *inode)
{
	char *names;
	ssize_t len;
	int ret = 0;

	if (list_names(path, &names, &len))
		return -1;
	for (char *n = names; n && n < names + len && !ret; n += strlen(n) + 1) {
		const char *rest;

		if (match_prefix(n, &rest) < 0)	/* warned about there */
			ret = kiln_xattr_add(inode, path, n, NULL, 0);
		else
			ret = read_one(path, n, inode);
	}
	free(names);
	return ret;
}

static int item_cmp(const struct kiln_xattr_item *a,
		    const struct kiln_xattr_item *b)
{
	int r;

	if (a->index != b->index)
		return a->index < b->index ? -1 : 1;
	r = strcmp(a->name, b->name);
	if (r)
		return r;
	if (a->value_size != b->value_size)
		return a->value_size < b->value_size ? -1 : 1;
	return memcmp(a->value, b->value, a->value_size);
}

static int slot_cmp(const void *pa, const void *pb)
{
	const struct kiln_xattr *a = *(struct kiln_xattr * const *)pa;
	const struct kiln_xattr *b = *(struct kiln_xattr * const *)pb;

	return item_cmp(a->item, b->item);
}

/* Shared first (they are referenced by id), then by name: deterministic. */
static int inode_order_cmp(const void *pa, const void *pb)
{
	const struct kiln_xattr *a = pa, *b = pb;

	if (a->item->shared != b->item->shared)
		return a->item->shared ? -1 : 1;
	return item_cmp(a->item, b->item);
}


/* Points every slot holding an equal pair at one item and counts users. */
static void merge_equal(struct kiln_xattr **slots, size_t n)
{
	size_t i = 0;

	qsort(slots, n, sizeof(*slots), slot_cmp);
	while (i < n) {
		struct kiln_xattr_item *canon = slots[i]->item;
		size_t j = i + 1;

		canon->refs = 1;
		for (; j < n && !item_cmp(slots[j]->item, canon); j++) {
			item_free(slots[j]->item);
			slots[j]->item = canon;
			canon->refs++;
		}
		i = j;
	}
}

static void inode_finish(struct kiln_inode *inode)
{
	uint32_t size = EROFS_XATTR_IBODY_HEADER_SIZE;

	if (inode->nr_xattrs > 1)
		qsort(inode->xattrs, inode->nr_xattrs,
		      sizeof(*inode->xattrs), inode_order_cmp);
	inode->nr_shared = 0;
	for (uint32_t i = 0; i < inode->nr_xattrs; i++) {
		struct kiln_xattr_item *it = inode->xattrs[i].item;

		if (it->shared && inode->nr_shared < EROFS_XATTR_MAX_SHARED &&
		    i == inode->nr_shared) {
			inode->nr_shared++;
			size += 4;
		} else {
			size += erofs_xattr_entry_size(it->name_len,
						       it->value_size);
		}
	}
	inode->xattr_isize = inode->nr_xattrs ? size : 0;
}

uint32_t kiln_xattr_ibody_max(const struct kiln_inode *inode)
{
	uint32_t size = EROFS_XATTR_IBODY_HEADER_SIZE;

	for (uint32_t i = 0; i < inode->nr_xattrs; i++)
		size += erofs_xattr_entry_size(inode->xattrs[i].item->name_len,
					       inode->xattrs[i].item->value_size);
	return inode->nr_xattrs ? size : 0;
}

int kiln_xattrs_share(struct kiln_tree *tree, struct kiln_xattr_pool *pool,
		      long tolerance)
{
	struct kiln_xattr **slots;
	size_t n = 0;

	memset(pool, 0, sizeof(*pool));
	for (uint32_t i = 0; i < tree->nr_inodes; i++)
		n += tree->inodes[i]->nr_xattrs;
	slots = xmalloc(n * sizeof(*slots));
	n = 0;
	for (uint32_t i = 0; i < tree->nr_inodes; i++)
		for (uint32_t k = 0; k < tree->inodes[i]->nr_xattrs; k++)
			slots[n++] = &tree->inodes[i]->xattrs[k];
	merge_equal(slots, n);

	/* slots are sorted, so the pool comes out in a stable order */
	pool->items = xmalloc(n * sizeof(*pool->items));
	for (size_t i = 0; i < n; i++) {
		struct kiln_xattr_item *it = slots[i]->item;

		if ((long)it->refs <= tolerance || it->shared)
			continue;
		it->shared = true;
		pool->items[pool->nr_items++] = it;
		pool->size += erofs_xattr_entry_size(it->name_len,
						     it->value_size);
	}
	free(slots);
	for (uint32_t i = 0; i < tree->nr_inodes; i++) {
		struct kiln_inode *inode = tree->inodes[i];

		inode_finish(inode);
		if (inode->xattr_isize > erofs_xattr_ibody_size(UINT16_MAX)) {
			kiln_err("%s: extended attributes too large for EROFS",
				 inode->srcpath);
			return -1;
		}
	}
	return 0;
}

void kiln_xattr_pool_place(struct kiln_xattr_pool *pool, uint64_t pos)
{
	for (uint32_t i = 0; i < pool->nr_items; i++) {
		struct kiln_xattr_item *it = pool->items[i];

		it->shared_id = (uint32_t)(pos / 4);
		pos += erofs_xattr_entry_size(it->name_len, it->value_size);
	}
}

void kiln_xattr_pool_encode(const struct kiln_xattr_pool *pool, uint8_t *out)
{
	for (uint32_t i = 0; i < pool->nr_items; i++) {
		const struct kiln_xattr_item *it = pool->items[i];

		out += erofs_xattr_entry_encode(out, it->index, it->name,
						it->name_len, it->value,
						it->value_size);
	}
}

void kiln_xattr_ibody_encode(const struct kiln_inode *inode, uint8_t *out)
{
	uint8_t *p = out + EROFS_XATTR_IBODY_HEADER_SIZE;

	memset(out, 0, EROFS_XATTR_IBODY_HEADER_SIZE);
	out[4] = inode->nr_shared;
	for (uint32_t i = 0; i < inode->nr_xattrs; i++) {
		const struct kiln_xattr_item *it = inode->xattrs[i].item;

		if (i < inode->nr_shared) {
			put_le32(p, it->shared_id);
			p += 4;
		} else {
			p += erofs_xattr_entry_encode(p, it->index, it->name,
						      it->name_len, it->value,
						      it->value_size);
		}
	}
}

void kiln_xattrs_drop(struct kiln_inode *inode)
{
	for (uint32_t k = 0; k < inode->nr_xattrs; k++) {
		struct kiln_xattr_item *it = inode->xattrs[k].item;

		if (--it->refs == 0)
			item_free(it);
	}
	free(inode->xattrs);
	inode->xattrs = NULL;
	inode->nr_xattrs = 0;
}

void kiln_xattrs_free(struct kiln_tree *tree, struct kiln_xattr_pool *pool)
{
	/* after merging, every item is owned by the first slot pointing at it */
	for (uint32_t i = 0; i < tree->nr_inodes; i++)
		kiln_xattrs_drop(tree->inodes[i]);
	free(pool->items);
	pool->items = NULL;
}

/* The stored name part of an item, with its short prefix in front. */
static char *full_name(const struct kiln_xattr_item *it)
{
	const char *pre = "";

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (prefixes[i].index == it->index)
			pre = prefixes[i].prefix;
	char *full = xmalloc(strlen(pre) + it->name_len + 1);

	strcpy(full, pre);
	strcat(full, it->name);
	return full;
}

void kiln_xattrs_long_prefixes(struct kiln_tree *t, const char *const *pfx,
			       unsigned int n)
{
	for (uint32_t i = 0; i < t->nr_inodes; i++) {
		struct kiln_inode *in = t->inodes[i];

		for (uint32_t k = 0; k < in->nr_xattrs; k++) {
			struct kiln_xattr_item *it = in->xattrs[k].item;
			char *full = full_name(it);
			size_t best = 0;
			int at = -1;

			/* the longest prefix that fits stores the least */
			for (unsigned int p = 0; p < n; p++) {
				size_t len = strlen(pfx[p]);

				if (len > best && !strncmp(full, pfx[p], len)) {
					best = len;
					at = (int)p;
				}
			}
			if (at >= 0) {
				free(it->name);
				it->name = xstrdup(full + best);
				it->name_len = (uint8_t)strlen(it->name);
				it->index = (uint8_t)(EROFS_XATTR_LONG_PREFIX | at);
			}
			free(full);
		}
	}
}

/* Each: le16 length, base index, infix; padded to 4 bytes. */
size_t kiln_xattr_prefixes_encode(const char *const *pfx, unsigned int n,
				  uint8_t *out)
{
	size_t pos = 0;

	for (unsigned int i = 0; i < n; i++) {
		const char *infix;
		int index = match_prefix(pfx[i], &infix);
		size_t len = 1 + strlen(infix);

		if (out) {
			put_le16(out + pos, (uint16_t)len);
			out[pos + 2] = (uint8_t)index;
			memcpy(out + pos + 3, infix, len - 1);
		}
		pos = round_up(pos + 2 + len, 4);
	}
	return pos;
}

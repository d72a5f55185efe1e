/* SPDX-License-Identifier: MIT */
/*
 * POSIX ACLs from a tar entry (pax's SCHILY.acl.access and .default, as
 * GNU tar and bsdtar write them, parsed by libarchive) turned into the
 * xattrs Linux keeps them in, system.posix_acl_access and _default:
 * version 2, then one 8-byte entry (tag, permissions, id) per line, in the
 * kernel's order. Names are looked up in this machine's user and group
 * database, as `tar -xp` looks them up; a numeric name is its id.
 */
#include <archive.h>
#include <archive_entry.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include "common/util.h"
#include "kiln.h"
#include "format/le.h"
#include "taracl.h"
#include "xattr.h"

/* The kernel's tags (include/uapi/linux/posix_acl.h); sorted by them. */
enum { A_USER_OBJ = 1, A_USER = 2, A_GROUP_OBJ = 4, A_GROUP = 8,
       A_MASK = 0x10, A_OTHER = 0x20 };
#define A_UNDEFINED_ID 0xFFFFFFFFu
#define A_VERSION 2u

struct acl_entry {
	uint16_t tag, perm;
	uint32_t id;
};

static int kernel_tag(int tag)
{
	switch (tag) {
	case ARCHIVE_ENTRY_ACL_USER_OBJ:	return A_USER_OBJ;
	case ARCHIVE_ENTRY_ACL_USER:		return A_USER;
	case ARCHIVE_ENTRY_ACL_GROUP_OBJ:	return A_GROUP_OBJ;
	case ARCHIVE_ENTRY_ACL_GROUP:		return A_GROUP;
	case ARCHIVE_ENTRY_ACL_MASK:		return A_MASK;
	case ARCHIVE_ENTRY_ACL_OTHER:		return A_OTHER;
	}
	return -1;
}

static int entry_cmp(const void *pa, const void *pb)
{
	const struct acl_entry *a = pa, *b = pb;

	if (a->tag != b->tag)
		return a->tag < b->tag ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* A named user or group's id: the local database's, else a numeric name. */
static int64_t named_id(int tag, int id, const char *name)
{
	if (name && tag == A_USER) {
		struct passwd *pw = getpwnam(name);

		if (pw)
			return pw->pw_uid;
	} else if (name) {
		struct group *gr = getgrnam(name);

		if (gr)
			return gr->gr_gid;
	}
	return id;
}

/* One ACL type of the entry as an xattr value; 0 bytes when it has none. */
static int encode(struct archive_entry *e, int type, struct kiln_inode *in,
		  bool store, uint8_t **out, size_t *len)
{
	const char *path = in->srcpath;
	int n = archive_entry_acl_reset(e, type), t, perm, tag, id, k = 0;
	struct acl_entry *v;
	const char *name;

	*out = NULL;
	*len = 0;
	/* access: the three base entries alone are the mode, no ACL */
	if (n <= (type == ARCHIVE_ENTRY_ACL_TYPE_ACCESS ? 3 : 0))
		return 0;
	v = xcalloc((size_t)n, sizeof(*v));
	while (k < n && archive_entry_acl_next(e, type, &t, &perm, &tag, &id,
					       &name) == ARCHIVE_OK) {
		int kt = kernel_tag(tag);
		int64_t uid = kt == A_USER || kt == A_GROUP ?
			      named_id(kt, id, name) : (int64_t)A_UNDEFINED_ID;

		if (!store && kt != A_MASK)
			continue;	/* only the mask matters to the mode */
		if (kt < 0 || uid < 0 || uid > UINT32_MAX || (perm & ~7)) {
			kiln_err("%s: ACL entry %s%s cannot be stored", path,
				 name ? "for " : "", name ? name : "of a kind");
			free(v);
			return -1;
		}
		v[k++] = (struct acl_entry){ (uint16_t)kt, (uint16_t)perm,
					     (uint32_t)uid };
		/*
		 * With a mask, the mode's group bits are the mask's (libarchive
		 * gave them group::'s when it read the text), as on Linux.
		 */
		if (kt == A_MASK && type == ARCHIVE_ENTRY_ACL_TYPE_ACCESS)
			in->mode = (in->mode & ~070u) | (uint32_t)perm << 3;
	}
	qsort(v, (size_t)k, sizeof(*v), entry_cmp);
	*len = 4 + 8 * (size_t)k;
	*out = xmalloc(*len);
	put_le32(*out, A_VERSION);
	for (int i = 0; i < k; i++) {
		put_le16(*out + 4 + 8 * i, v[i].tag);
		put_le16(*out + 6 + 8 * i, v[i].perm);
		put_le32(*out + 8 + 8 * i, v[i].id);
	}
	free(v);
	return 0;
}

int kiln_tar_acls(struct archive_entry *e, struct kiln_inode *in, bool store)
{
	static const struct {
		int type;
		const char *xattr;
	} kinds[] = {
		{ ARCHIVE_ENTRY_ACL_TYPE_ACCESS, "system.posix_acl_access" },
		{ ARCHIVE_ENTRY_ACL_TYPE_DEFAULT, "system.posix_acl_default" },
	};

	if (store && archive_entry_acl_count(e, ARCHIVE_ENTRY_ACL_TYPE_NFS4)) {
		kiln_err("%s: NFSv4 ACLs have no place in EROFS", in->srcpath);
		return -1;
	}
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		uint8_t *v;
		size_t len;
		int ret = 0;

		if (encode(e, kinds[i].type, in, store, &v, &len))
			return -1;
		if (len && store) {
			/* the same ACL may come as an xattr too: one copy */
			kiln_xattr_remove(in, kinds[i].xattr);
			ret = kiln_xattr_add(in, in->srcpath, kinds[i].xattr,
					     v, len);
		}
		free(v);
		if (ret)
			return -1;
	}
	return 0;
}

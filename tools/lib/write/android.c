/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "android.h"
#include "common/util.h"
#include "fcontexts.h"
#include "fsconfig.h"
#include "inode.h"
#include "kiln.h"
#include "xattr.h"

/*
 * The path file_contexts is matched against: "/MOUNT/PATH" or "/PATH";
 * the root "/MOUNT" (erofs-utils asks libselinux for "/MOUNT/", which
 * drops a trailing slash).
 */
static int label(const struct kiln_mkfs_opts *o, struct kiln_inode *in,
		 const char *relpath)
{
	const char *mp = o->mount_point;
	size_t n = (mp ? strlen(mp) + 1 : 0) + strlen(relpath) + 2;
	char *key = xmalloc(n);
	const char *ctx;
	int ret = 0;

	snprintf(key, n, "/%s%s%s", mp ? mp : "", mp && *relpath ? "/" : "",
		 relpath);
	ctx = kiln_fcontexts_lookup(o->fcontexts, key, in->mode);
	kiln_xattr_remove(in, "security.selinux");
	if (ctx)
		ret = kiln_xattr_add(in, in->srcpath, "security.selinux", ctx,
				     strlen(ctx));
	free(key);
	return ret;
}

int kiln_android_xattrs(const struct kiln_mkfs_opts *o, struct kiln_inode *in,
			const char *relpath)
{
	if (o->xattr_tolerance < 0)
		return 0;
	if (o->fsconfig && kiln_fsconfig_caps_xattr(in, in->fs_caps))
		return -1;
	return o->fcontexts ? label(o, in, relpath) : 0;
}

bool kiln_android_same(const struct kiln_inode *a, const struct kiln_inode *b)
{
	if (a->uid != b->uid || a->gid != b->gid || a->mode != b->mode ||
	    a->nr_xattrs != b->nr_xattrs)
		return false;
	for (uint32_t i = 0; i < a->nr_xattrs; i++) {
		const struct kiln_xattr_item *x = a->xattrs[i].item;
		const struct kiln_xattr_item *y = b->xattrs[i].item;

		if (x->index != y->index || strcmp(x->name, y->name) ||
		    x->value_size != y->value_size ||
		    memcmp(x->value, y->value, x->value_size))
			return false;
	}
	return true;
}

/* SPDX-License-Identifier: MIT */
/*
 * The tree a tar describes, as `tar -xp` makes it: a later entry for a
 * path replaces an earlier one (a directory and a file by one name is an
 * error), and a directory the stream never names is made 0755, root's,
 * with the time of the entry that needed it. Names are found by
 * (directory, name) in one hash table, so a deep path costs its own
 * length, never a copy of every ancestor's path.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "common/util.h"
#include "format/erofs_fs.h"
#include "tarscan.h"
#include "tree.h"
#include "xattr.h"
#include "android.h"
#include "fsconfig.h"

#define OVL_OPAQUE "trusted.overlay.opaque"
#define OVL_ORIGIN "trusted.overlay.origin"

static char *dupn(const char *p, size_t n)
{
	char *s = xmalloc(n + 1);

	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

const struct kiln_dentry *tar_node_dentry(const struct tar_node *n)
{
	return &n->dir->dentries[n->slot];
}

static size_t name_hash(const struct kiln_inode *dir, const char *name,
			size_t len, size_t cap)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)(uintptr_t)dir;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 0x100000001b3ull;
	return (size_t)(h ^ (h >> 32)) & (cap - 1);
}

/* name's node in dir, or the free slot where it would go. */
struct tar_node *tar_node_find(struct tarscan *ts,
			       const struct kiln_inode *dir,
			       const char *name, size_t len)
{
	size_t i = name_hash(dir, name, len, ts->cap);

	for (;; i = (i + 1) & (ts->cap - 1)) {
		struct tar_node *n = &ts->nodes[i];
		const struct kiln_dentry *d;

		if (!n->dir)
			return n;
		d = tar_node_dentry(n);
		if (n->dir == dir && d->namelen == len &&
		    !memcmp(d->name, name, len))
			return n;
	}
}

static void nodes_grow(struct tarscan *ts)
{
	struct tar_node *old = ts->nodes;
	size_t oldcap = ts->cap;

	ts->cap = oldcap * 2;
	ts->nodes = xcalloc(ts->cap, sizeof(*ts->nodes));
	for (size_t i = 0; i < oldcap; i++) {
		const struct kiln_dentry *d;

		if (!old[i].dir)
			continue;
		d = tar_node_dentry(&old[i]);
		*tar_node_find(ts, old[i].dir, d->name, d->namelen) = old[i];
	}
	free(old);
}

static void dir_add(struct tarscan *ts, struct kiln_inode *in,
		    struct kiln_inode *parent)
{
	if (!(ts->nr_dirs & (ts->nr_dirs - 1)))
		ts->dirs = xrealloc(ts->dirs, (ts->nr_dirs ? ts->nr_dirs * 2 :
				    1) * sizeof(*ts->dirs));
	ts->dirs[ts->nr_dirs++] = (struct tar_dir){ in, parent };
}

int tar_err(const struct tarscan *ts, const char *path,
	    const char *what)
{
	kiln_err("%s: %s%s%s", ts->name, path ? path : "", path ? ": " : "",
		 what);
	return -1;
}

int tar_check_data_len(const struct tarscan *ts, struct archive_entry *e,
		       const struct kiln_inode *in, uint64_t got)
{
	la_int64_t off, len;
	uint64_t want = 0;

	if (archive_entry_sparse_reset(e) <= 0)
		want = in->size;
	while (archive_entry_sparse_next(e, &off, &len) == ARCHIVE_OK)
		want += len > 0 ? (uint64_t)len : 0;
	if (got == want)
		return 0;
	return tar_err(ts, in->srcpath, "the tar holds less data than its "
		       "size or sparse map names");
}

/* "./a//b/" -> "a/b", "" for the root; NULL if it climbs out with "..". */
char *tar_normalize(const char *p)
{
	char *out = xmalloc(strlen(p) + 1), *o = out;

	for (;;) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (!n)
			break;
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			free(out);
			return NULL;
		}
		if (!(n == 1 && p[0] == '.')) {
			if (o != out)
				*o++ = '/';
			memcpy(o, p, n);
			o += n;
		}
		p += n;
	}
	*o = '\0';
	return out;
}

struct kiln_inode *tar_inode_new(struct tarscan *ts, const char *path,
				 uint32_t mode, uint64_t uid, uint64_t gid,
				 int64_t mtime, uint32_t nsec)
{
	const struct kiln_mkfs_opts *o = ts->o;
	struct kiln_inode *in;
	uint64_t caps = 0;

	if (o->fsconfig && kiln_fsconfig_apply(o->fsconfig, path, &mode, &uid,
					       &gid, &caps))
		return NULL;
	kiln_image_ids(o, uid, gid, &uid, &gid);
	if (uid > KILN_ID_MAX || gid > KILN_ID_MAX) {
		tar_err(ts, path, "uid or gid (plus any offset) is over 4294967294");
		return NULL;
	}
	in = xcalloc(1, sizeof(*in));
	in->mode = mode;
	in->uid = (uint32_t)uid;
	in->gid = (uint32_t)gid;
	in->mtime = o->fixed_time ? o->timestamp : mtime;
	in->mtime_nsec = o->fixed_time ? 0 : nsec;
	in->nlink = 1;
	in->srcpath = xstrdup(*path ? path : "/");
	kiln_tree_add(ts->tree, in);
	in->fs_caps = caps;
	if (kiln_android_xattrs(o, in, path))
		return NULL;
	return in;
}

/* Puts in at name (len bytes) in dir: new, or in place of a file. */
int tar_place(struct tarscan *ts, struct kiln_inode *dir, const char *name,
	      size_t len, struct kiln_inode *in, const char *path)
{
	struct tar_node *n;

	if (len > EROFS_NAME_LEN)
		return tar_err(ts, path, "name longer than 255 bytes");
	if (ts->used * 2 >= ts->cap)
		nodes_grow(ts);
	n = tar_node_find(ts, dir, name, len);
	if (n->dir) {
		struct kiln_dentry *d = &dir->dentries[n->slot];

		if (S_ISDIR(d->inode->mode) || S_ISDIR(in->mode))
			return tar_err(ts, path, "a directory and a file by "
				       "the same name");
		d->inode->nlink--;	/* replaced, as tar -x does */
		d->inode = in;
		return 0;
	}
	if (!(dir->nr_dentries & (dir->nr_dentries - 1)))
		dir->dentries = xrealloc(dir->dentries, (dir->nr_dentries ?
					 dir->nr_dentries * 2 : 1) *
					 sizeof(*dir->dentries));
	dir->dentries[dir->nr_dentries] = (struct kiln_dentry){
		.name = dupn(name, len), .namelen = (uint16_t)len,
		.inode = in,
	};
	*n = (struct tar_node){ dir, dir->nr_dentries++ };
	ts->used++;
	if (S_ISDIR(in->mode))
		dir_add(ts, in, dir);
	return 0;
}

struct kiln_inode *tar_root(struct tarscan *ts, int64_t mtime,
			    uint32_t nsec)
{
	struct kiln_inode *r = ts->tree->root;

	if (!r) {
		r = tar_inode_new(ts, "", S_IFDIR | 0755, 0, 0, mtime, nsec);
		if (r) {
			ts->tree->root = r;
			dir_add(ts, r, r);
		}
	}
	return r;
}

/*
 * The directory holding path's last component (*base), walking down from
 * the root. With make, directories the tar never named are made (0755,
 * root's, with the entry's time; named by their path in messages);
 * without, a missing one gives NULL and no message.
 */
struct kiln_inode *tar_walk(struct tarscan *ts, const char *path,
			    bool make, int64_t mtime, uint32_t nsec,
			    const char **base)
{
	struct kiln_inode *dir = make ? tar_root(ts, mtime, nsec) : ts->tree->root;

	for (const char *p = path, *slash; dir; p = slash + 1) {
		struct tar_node *n;
		struct kiln_inode *sub;
		size_t len;

		slash = strchr(p, '/');
		if (!slash) {
			*base = p;
			return dir;
		}
		len = (size_t)(slash - p);
		n = tar_node_find(ts, dir, p, len);
		if (n->dir) {
			sub = tar_node_dentry(n)->inode;
			if (!S_ISDIR(sub->mode))
				return make ? tar_err(ts, path, "a file where "
					"it needs a directory"), NULL : NULL;
		} else if (!make) {
			return NULL;
		} else {
			char *name = dupn(path, (size_t)(slash - path));

			sub = tar_inode_new(ts, name, S_IFDIR | 0755, 0, 0, mtime,
					nsec);
			free(name);
			if (!sub || tar_place(ts, dir, p, len, sub, path))
				return NULL;
		}
		dir = sub;
	}
	return NULL;
}

/* The node of an existing path ("" is the root: NULL), or NULL. */
struct tar_node *tar_lookup(struct tarscan *ts, const char *path)
{
	const char *base;
	struct kiln_inode *dir = tar_walk(ts, path, false, 0, 0, &base);
	struct tar_node *n;

	if (!dir || !*path)
		return NULL;
	n = tar_node_find(ts, dir, base, strlen(base));
	return n->dir ? n : NULL;
}

/*
 * An explicit entry for a directory that exists takes its metadata; its
 * xattrs join the directory's, replacing those of the same name, as
 * `tar -xp` sets them one by one.
 */
void tar_dir_update(struct kiln_inode *dir, struct kiln_inode *in)
{
	dir->mode = in->mode;
	dir->uid = in->uid;
	dir->gid = in->gid;
	dir->mtime = in->mtime;
	dir->mtime_nsec = in->mtime_nsec;
	kiln_xattrs_move(dir, in);
	in->nlink = 0;			/* dropped at the end */
}

/* Sets or clears one overlayfs mark on a directory (not with -x -1). */
static void ovl_mark(const struct tarscan *ts, struct kiln_inode *d,
		     const char *name, const char *value, bool on)
{
	if (!on || ts->o->ovlfs_strip || ts->o->xattr_tolerance < 0)
		return;
	kiln_xattr_remove(d, name);
	kiln_xattr_add(d, d->srcpath, name, value, strlen(value));
}

/*
 * Gives directories "." and "..", their order and their overlayfs marks:
 * opaque ones, and "origin" on those holding whiteouts --aufs made (so
 * overlayfs never lists such a lower directory straight, whiteouts and
 * all); drops replaced inodes.
 */
void tar_finish(struct tarscan *ts)
{
	for (size_t i = 0; i < ts->nr_dirs; i++) {
		struct kiln_inode *d = ts->dirs[i].in;

		if (!d->nlink)
			continue;	/* an explicit entry merged into it */
		d->nlink = 2;
		for (uint32_t j = 0; j < d->nr_dentries; j++)
			d->nlink += S_ISDIR(d->dentries[j].inode->mode);
		d->dentries = xrealloc(d->dentries, (d->nr_dentries + 2) *
				       sizeof(*d->dentries));
		d->dentries[d->nr_dentries++] = (struct kiln_dentry){
			.name = xstrdup("."), .namelen = 1, .inode = d };
		d->dentries[d->nr_dentries++] = (struct kiln_dentry){
			.name = xstrdup(".."), .namelen = 2,
			.inode = ts->dirs[i].parent };
		kiln_dentries_sort(d->dentries, d->nr_dentries);
		ovl_mark(ts, d, OVL_OPAQUE, "y", d->opaque);
		ovl_mark(ts, d, OVL_ORIGIN, "", d->whiteouts);
	}
	kiln_tree_drop_unlinked(ts->tree);
}


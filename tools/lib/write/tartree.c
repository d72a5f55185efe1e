/* SPDX-License-Identifier: MIT */
/*
 * --tar=f: the tree from a tar stream (a file, or stdin) instead of a
 * directory, without unpacking it. libarchive reads ustar, pax (long
 * names, xattrs, sparse files) and GNU tar (long names, sparse files).
 * Each file's data is copied once, to the spool: an unlinked file in
 * $TMPDIR that the workers then read as they would a source file, holes
 * left as holes. The tree is the one `tar -xp` would make: a later entry
 * for a path replaces an earlier one, and a directory the stream never
 * names is made 0755, root's, with the time of the entry that needed it.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/util.h"
#include "format/erofs_fs.h"
#include "format/ondisk.h"
#include "source.h"
#include "taracl.h"
#include "tree.h"
#include "xattr.h"

#define AUFS_WH ".wh."			/* aufs: ".wh.NAME" whites out NAME */
#define AUFS_OPQ ".wh..wh..opq"		/* and this makes its directory opaque */
#define OVL_OPAQUE "trusted.overlay.opaque"
#define OVL_ORIGIN "trusted.overlay.origin"

/* One name in the tree, found by its whole path ("" is the root). */
struct tar_node {
	char *path;
	struct kiln_inode *in;
	struct kiln_inode *dir;		/* the directory holding it */
	uint32_t slot;			/* its dentry there */
};

struct tarscan {
	const struct kiln_mkfs_opts *o;
	const char *name;		/* of the tar, for messages */
	struct kiln_tree *tree;
	struct tar_node *nodes;		/* open addressing by path */
	size_t cap, used;
};

static size_t path_hash(const char *p, size_t cap)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*p)
		h = (h ^ (uint8_t)*p++) * 0x100000001b3ull;
	return (size_t)(h ^ (h >> 32)) & (cap - 1);
}

static struct tar_node *node_find(struct tarscan *ts, const char *path)
{
	size_t i = path_hash(path, ts->cap);

	while (ts->nodes[i].path && strcmp(ts->nodes[i].path, path))
		i = (i + 1) & (ts->cap - 1);
	return &ts->nodes[i];
}

static struct tar_node *node_add(struct tarscan *ts, const char *path)
{
	struct tar_node *n;

	if (ts->used * 2 >= ts->cap) {
		struct tar_node *old = ts->nodes;
		size_t oldcap = ts->cap;

		ts->cap = oldcap * 2;
		ts->nodes = xcalloc(ts->cap, sizeof(*ts->nodes));
		for (size_t i = 0; i < oldcap; i++)
			if (old[i].path)
				*node_find(ts, old[i].path) = old[i];
		free(old);
	}
	n = node_find(ts, path);
	n->path = xstrdup(path);
	ts->used++;
	return n;
}

static int tar_err(const struct tarscan *ts, const char *path,
		   const char *what)
{
	kiln_err("%s: %s%s%s", ts->name, path ? path : "", path ? ": " : "",
		 what);
	return -1;
}

/* "./a//b/" -> "a/b", "" for the root; NULL if it climbs out with "..". */
static char *normalize(const char *p)
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

static struct kiln_inode *inode_new(struct tarscan *ts, const char *path,
				    uint32_t mode, uint64_t uid, uint64_t gid,
				    int64_t mtime, uint32_t nsec)
{
	const struct kiln_mkfs_opts *o = ts->o;
	struct kiln_inode *in;

	kiln_image_ids(o, uid, gid, &uid, &gid);
	if (uid > UINT32_MAX || gid > UINT32_MAX) {
		tar_err(ts, path, "uid or gid (plus any offset) is over 32 bits");
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
	return in;
}

/* Puts in at path, whose directory exists: new, or in place of a file. */
static int place(struct tarscan *ts, const char *path, struct kiln_inode *dir,
		 struct kiln_inode *in)
{
	struct tar_node *n = node_find(ts, path);
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (strlen(base) > EROFS_NAME_LEN)
		return tar_err(ts, path, "name longer than 255 bytes");
	if (n->path) {
		if (S_ISDIR(n->in->mode) || S_ISDIR(in->mode))
			return tar_err(ts, path, "a directory and a file by "
				       "the same name");
		n->in->nlink--;		/* replaced, as tar -x does */
		n->in = in;
		dir->dentries[n->slot].inode = in;
		return 0;
	}
	n = node_add(ts, path);
	n->in = in;
	n->dir = dir;
	n->slot = dir->nr_dentries;
	if (!(dir->nr_dentries & (dir->nr_dentries - 1)))
		dir->dentries = xrealloc(dir->dentries, (dir->nr_dentries ?
					 dir->nr_dentries * 2 : 1) *
					 sizeof(*dir->dentries));
	dir->dentries[dir->nr_dentries++] = (struct kiln_dentry){
		.name = xstrdup(base), .namelen = (uint16_t)strlen(base),
		.inode = in,
	};
	return 0;
}

/* The directory at path, made (with its parents) if the tar never was. */
static struct kiln_inode *get_dir(struct tarscan *ts, char *path,
				  int64_t mtime, uint32_t nsec)
{
	struct tar_node *n = node_find(ts, path);
	struct kiln_inode *parent, *in;
	char *slash;

	if (n->path) {
		if (!S_ISDIR(n->in->mode))
			return tar_err(ts, path, "not a directory"), NULL;
		return n->in;
	}
	in = inode_new(ts, path, S_IFDIR | 0755, 0, 0, mtime, nsec);
	if (!in)
		return NULL;
	if (!*path) {			/* the root */
		n = node_add(ts, path);
		n->in = n->dir = ts->tree->root = in;
		return in;
	}
	slash = strrchr(path, '/');
	if (slash)
		*slash = '\0';
	parent = get_dir(ts, slash ? path : "", mtime, nsec);
	if (slash)
		*slash = '/';
	return parent && !place(ts, path, parent, in) ? in : NULL;
}

static int read_xattrs(struct tarscan *ts, struct archive_entry *e,
		       struct kiln_inode *in)
{
	const char *name;
	const void *value;
	size_t len;

	if (ts->o->xattr_tolerance < 0 || !archive_entry_xattr_reset(e))
		return 0;
	while (archive_entry_xattr_next(e, &name, &value, &len) == ARCHIVE_OK)
		if (kiln_xattr_add(in, in->srcpath, name, value, len))
			return -1;
	return 0;
}

/* Copies a regular file's data to the spool; holes stay unwritten. */
static int spool_data(struct tarscan *ts, struct archive *a,
		      struct kiln_inode *in)
{
	struct kiln_spool *sp = ts->tree->spool;
	const void *buf;
	size_t len;
	la_int64_t off;
	int r;

	in->spool = sp;
	in->spool_off = sp->end;
	while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
		if (off < 0 || (uint64_t)off + len > in->size)
			return tar_err(ts, in->srcpath, "data past its size");
		if (len && pwrite_all(sp->fd, buf, len, in->spool_off +
				      (uint64_t)off))
			return tar_err(ts, in->srcpath, strerror(errno));
	}
	if (r != ARCHIVE_EOF)
		return tar_err(ts, in->srcpath, archive_error_string(a));
	sp->end = round_up(in->spool_off + in->size, 4096);
	return 0;
}

/* An explicit entry for a directory that exists: it takes its metadata. */
static void dir_update(struct kiln_inode *dir, struct kiln_inode *in)
{
	kiln_xattrs_drop(dir);
	dir->mode = in->mode;
	dir->uid = in->uid;
	dir->gid = in->gid;
	dir->mtime = in->mtime;
	dir->mtime_nsec = in->mtime_nsec;
	dir->xattrs = in->xattrs;
	dir->nr_xattrs = in->nr_xattrs;
	in->xattrs = NULL;
	in->nr_xattrs = 0;
	in->nlink = 0;			/* dropped at the end */
}

static int add_hardlink(struct tarscan *ts, const char *path,
			const char *target, struct kiln_inode *dir)
{
	char *to = normalize(target);
	struct tar_node *n = to ? node_find(ts, to) : NULL;

	free(to);
	if (!n || !n->path || S_ISDIR(n->in->mode))
		return tar_err(ts, path, "hard link to nothing the tar had "
			       "before it (or to a directory)");
	if (n->in == node_find(ts, path)->in)
		return 0;		/* a link to itself: nothing changes */
	n->in->nlink++;
	return place(ts, path, dir, n->in);
}

static bool excluded_one(const struct kiln_mkfs_opts *o, const char *path)
{
	for (unsigned int i = 0; i < o->nr_exclude_paths; i++)
		if (!strcmp(path, o->exclude_paths[i]))
			return true;
	for (unsigned int i = 0; i < o->nr_exclude_regexes; i++)
		if (!regexec(&o->exclude_regexes[i], path, 0, NULL, 0))
			return true;
	return false;
}

/* Left out, or inside a directory left out (a scan never goes in). */
static bool excluded(const struct kiln_mkfs_opts *o, char *path)
{
	bool out = false;

	if (!*path)
		return false;
	for (char *p = path; !out; p++) {
		if (*p && *p != '/')
			continue;
		if (!*p)
			return excluded_one(o, path);
		*p = '\0';
		out = excluded_one(o, path);
		*p = '/';
	}
	return out;
}

/*
 * libarchive before 3.8 reads pax's "-1000000000.5" as -1000000000 s plus
 * 0.5 s: the fraction lost its sign (GNU tar, which wrote it, means 0.5 s
 * earlier). Ustar and GNU headers hold whole seconds, so a negative time
 * with a fraction always came that way.
 */
static void entry_mtime(struct archive_entry *e, int64_t *sec, uint32_t *nsec)
{
	*sec = archive_entry_mtime(e);
	*nsec = (uint32_t)archive_entry_mtime_nsec(e);
	if (*sec < 0 && *nsec && archive_version_number() < 3008000) {
		*sec -= 1;
		*nsec = 1000000000u - *nsec;
	}
}

static struct kiln_inode *entry_inode(struct tarscan *ts,
				      struct archive_entry *e, const char *path)
{
	int64_t sec;
	uint32_t nsec;
	mode_t mode = archive_entry_mode(e);
	struct kiln_inode *in;

	if (archive_entry_uid(e) < 0 || archive_entry_gid(e) < 0)
		return tar_err(ts, path, "negative uid or gid"), NULL;
	if (!S_ISREG(mode) && !S_ISDIR(mode) && !S_ISLNK(mode) &&
	    !S_ISCHR(mode) && !S_ISBLK(mode) && !S_ISFIFO(mode) &&
	    !S_ISSOCK(mode))
		return tar_err(ts, path, "unknown file type"), NULL;
	entry_mtime(e, &sec, &nsec);
	in = inode_new(ts, path, (uint32_t)mode,
		       (uint64_t)archive_entry_uid(e),
		       (uint64_t)archive_entry_gid(e), sec, nsec);
	/* tar keeps ACLs apart from xattrs, as text */
	if (!in || read_xattrs(ts, e, in) ||
	    (ts->o->xattr_tolerance >= 0 && kiln_tar_acls(e, in)))
		return NULL;
	if (S_ISCHR(mode) || S_ISBLK(mode))
		in->rdev = erofs_encode_dev(archive_entry_rdevmajor(e),
					    archive_entry_rdevminor(e));
	if (S_ISLNK(mode)) {
		const char *t = archive_entry_symlink(e);

		in->symlink = xstrdup(t ? t : "");
		in->size = strlen(in->symlink);
	}
	if (S_ISREG(mode))
		in->size = archive_entry_size(e) > 0 ?
			   (uint64_t)archive_entry_size(e) : 0;
	return in;
}

/*
 * --aufs, as containerd's layers come: ".wh..wh..opq" marks its directory
 * opaque, ".wh.NAME" becomes NAME as an overlayfs whiteout (a character
 * device 0:0). Returns 1 for any other entry, else 0 or -1.
 */
static int aufs_entry(struct tarscan *ts, struct archive_entry *e,
		      char *path, struct kiln_inode *dir)
{
	char *base = strrchr(path, '/');
	struct kiln_inode *in;

	base = base ? base + 1 : path;
	if (!strcmp(base, AUFS_OPQ)) {
		if (ts->o->xattr_tolerance < 0)
			return 0;
		kiln_xattr_remove(dir, OVL_OPAQUE);
		return kiln_xattr_add(dir, dir->srcpath, OVL_OPAQUE, "y", 1);
	}
	if (strncmp(base, AUFS_WH, strlen(AUFS_WH)) || !base[strlen(AUFS_WH)])
		return 1;
	memmove(base, base + strlen(AUFS_WH), strlen(base + strlen(AUFS_WH)) + 1);
	in = entry_inode(ts, e, path);
	if (!in)
		return -1;
	free(in->symlink);
	in->symlink = NULL;
	in->mode = S_IFCHR | (in->mode & 07777);
	in->rdev = 0;			/* 0:0, overlayfs' whiteout */
	in->size = 0;
	dir->whiteouts = true;
	return place(ts, path, dir, in);
}

static int add_entry(struct tarscan *ts, struct archive *a,
		     struct archive_entry *e)
{
	const char *name = archive_entry_pathname(e);
	char *path = name ? normalize(name) : NULL;
	const char *link = archive_entry_hardlink(e);
	struct kiln_inode *dir = NULL, *in;
	struct tar_node *n;
	char *slash;
	int ret = -1;

	if (!path)
		return tar_err(ts, name, name ? "path climbs out with '..'" :
			       "path not readable in this locale");
	if (excluded(ts->o, path)) {
		free(path);
		return 0;		/* its data is skipped by the next read */
	}
	slash = strrchr(path, '/');
	if (*path) {
		int64_t sec;
		uint32_t nsec;

		entry_mtime(e, &sec, &nsec);
		if (slash)
			*slash = '\0';
		dir = get_dir(ts, slash ? path : "", sec, nsec);
		if (slash)
			*slash = '/';
		if (!dir)
			goto out;
	}
	if (ts->o->aufs && *path) {
		int r = aufs_entry(ts, e, path, dir);

		if (r <= 0) {
			ret = r;
			goto out;
		}
	}
	if (link && *path) {
		ret = add_hardlink(ts, path, link, dir);
		goto out;
	}
	in = entry_inode(ts, e, path);
	if (!in)
		goto out;
	n = node_find(ts, path);
	if (S_ISDIR(in->mode) && (n->path || !*path)) {
		struct kiln_inode *old = n->path ? n->in :
			get_dir(ts, path, in->mtime, in->mtime_nsec);

		if (!old || !S_ISDIR(old->mode)) {
			tar_err(ts, path, "a directory and a file by the same "
				"name");
			goto out;
		}
		dir_update(old, in);
		ret = 0;
		goto out;
	}
	if (!*path) {
		tar_err(ts, "/", "the root is not a directory");
		goto out;
	}
	ret = place(ts, path, dir, in);
	if (!ret && S_ISREG(in->mode) && in->size)
		ret = spool_data(ts, a, in);
out:
	free(path);
	return ret;
}

/*
 * Gives directories "." and ".." and their order, and those holding
 * whiteouts --aufs made overlayfs' "origin" mark (so overlayfs never lists
 * such a lower directory straight, whiteouts and all); drops replaced
 * inodes.
 */
static void finish_tree(struct tarscan *ts)
{
	for (size_t i = 0; i < ts->cap; i++) {
		struct tar_node *n = &ts->nodes[i];
		struct kiln_inode *d = n->in;

		if (!n->path || !S_ISDIR(d->mode))
			continue;
		d->nlink = 2;
		for (uint32_t j = 0; j < d->nr_dentries; j++)
			d->nlink += S_ISDIR(d->dentries[j].inode->mode);
		d->dentries = xrealloc(d->dentries, (d->nr_dentries + 2) *
				       sizeof(*d->dentries));
		d->dentries[d->nr_dentries++] = (struct kiln_dentry){
			.name = xstrdup("."), .namelen = 1, .inode = d };
		d->dentries[d->nr_dentries++] = (struct kiln_dentry){
			.name = xstrdup(".."), .namelen = 2, .inode = n->dir };
		kiln_dentries_sort(d->dentries, d->nr_dentries);
		if (d->whiteouts && !ts->o->ovlfs_strip &&
		    ts->o->xattr_tolerance >= 0) {
			kiln_xattr_remove(d, OVL_ORIGIN);
			kiln_xattr_add(d, d->srcpath, OVL_ORIGIN, "", 0);
		}
	}
	kiln_tree_drop_unlinked(ts->tree);
}

/* An unlinked file for the data, where temporary files go. */
static int spool_open(struct kiln_spool *sp)
{
	const char *dir = getenv("TMPDIR");
	char *tmpl;

	if (!dir || !*dir)
		dir = "/tmp";
	sp->end = 0;
	sp->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (sp->fd >= 0)
		return 0;
	tmpl = path_join(dir, "kiln-tar.XXXXXX");
	sp->fd = mkostemp(tmpl, O_CLOEXEC);
	if (sp->fd >= 0)
		unlink(tmpl);
	else
		kiln_err("%s: cannot make a temporary file: %s", dir,
			 strerror(errno));
	free(tmpl);
	return sp->fd < 0 ? -1 : 0;
}

static int read_tar(struct tarscan *ts, struct archive *a)
{
	struct archive_entry *e;
	int r;

	while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK ||
	       r == ARCHIVE_WARN) {
		if (r == ARCHIVE_WARN)
			kiln_info(1, "%s: warning: %s", ts->name,
				  archive_error_string(a));
		if (add_entry(ts, a, e))
			return -1;
	}
	if (r != ARCHIVE_EOF)
		return tar_err(ts, NULL, archive_error_string(a));
	/* an empty tar is an empty root */
	return get_dir(ts, "", 0, 0) ? 0 : -1;
}

int kiln_tar_scan(const struct kiln_mkfs_opts *o, struct kiln_tree *tree)
{
	bool in_stdin = !o->source || !strcmp(o->source, "-");
	struct tarscan ts = { .o = o, .tree = tree,
			      .name = in_stdin ? "stdin" : o->source };
	struct archive *a = archive_read_new();
	int ret = -1;

	memset(tree, 0, sizeof(*tree));
	ts.cap = 1024;			/* a power of two, never empty */
	ts.nodes = xcalloc(ts.cap, sizeof(*ts.nodes));
	tree->spool = xcalloc(1, sizeof(*tree->spool));
	tree->spool->fd = -1;
	if (!a || spool_open(tree->spool))
		goto out;
	archive_read_support_format_tar(a);
	archive_read_support_format_empty(a);
	archive_read_support_filter_all(a);
	if ((in_stdin ? archive_read_open_fd(a, 0, 1 << 16) :
	     archive_read_open_filename(a, o->source, 1 << 16)) != ARCHIVE_OK)
		tar_err(&ts, NULL, archive_error_string(a));
	else if (!read_tar(&ts, a))
		ret = 0;
	finish_tree(&ts);
	/* a hole at the very end must read as zeros too */
	if (!ret && ftruncate(tree->spool->fd, (off_t)tree->spool->end)) {
		kiln_err("%s: cannot grow the spool: %s", ts.name,
			 strerror(errno));
		ret = -1;
	}
out:
	for (size_t i = 0; i < ts.cap; i++)
		free(ts.nodes[i].path);
	free(ts.nodes);
	if (a)
		archive_read_free(a);
	return ret;
}

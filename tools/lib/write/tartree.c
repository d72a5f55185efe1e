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

/*
 * One name in the tree: a directory and its dentry. Names are found by
 * (directory, name), so a deep path costs its own length, never one copy
 * of every ancestor's path.
 */
struct tar_node {
	struct kiln_inode *dir;		/* NULL: a free slot */
	uint32_t slot;
};

/* A directory and where its ".." points, for the finish. */
struct tar_dir {
	struct kiln_inode *in, *parent;
};

struct tarscan {
	const struct kiln_mkfs_opts *o;
	const char *name;		/* of the tar, for messages */
	struct kiln_tree *tree;
	struct tar_node *nodes;		/* open addressing */
	size_t cap, used;
	struct tar_dir *dirs;
	size_t nr_dirs;
};

static char *dupn(const char *p, size_t n)
{
	char *s = xmalloc(n + 1);

	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

static const struct kiln_dentry *node_dentry(const struct tar_node *n)
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
static struct tar_node *node_find(struct tarscan *ts,
				  const struct kiln_inode *dir,
				  const char *name, size_t len)
{
	size_t i = name_hash(dir, name, len, ts->cap);

	for (;; i = (i + 1) & (ts->cap - 1)) {
		struct tar_node *n = &ts->nodes[i];
		const struct kiln_dentry *d;

		if (!n->dir)
			return n;
		d = node_dentry(n);
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
		d = node_dentry(&old[i]);
		*node_find(ts, old[i].dir, d->name, d->namelen) = old[i];
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

/* Puts in at name (len bytes) in dir: new, or in place of a file. */
static int place(struct tarscan *ts, struct kiln_inode *dir, const char *name,
		 size_t len, struct kiln_inode *in, const char *path)
{
	struct tar_node *n;

	if (len > EROFS_NAME_LEN)
		return tar_err(ts, path, "name longer than 255 bytes");
	if (ts->used * 2 >= ts->cap)
		nodes_grow(ts);
	n = node_find(ts, dir, name, len);
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

static struct kiln_inode *root(struct tarscan *ts, int64_t mtime,
			       uint32_t nsec)
{
	struct kiln_inode *r = ts->tree->root;

	if (!r) {
		r = inode_new(ts, "", S_IFDIR | 0755, 0, 0, mtime, nsec);
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
 * root's, with the entry's time; named by their own name in messages);
 * without, a missing one gives NULL and no message.
 */
static struct kiln_inode *walk(struct tarscan *ts, const char *path,
			       bool make, int64_t mtime, uint32_t nsec,
			       const char **base)
{
	struct kiln_inode *dir = make ? root(ts, mtime, nsec) : ts->tree->root;

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
		n = node_find(ts, dir, p, len);
		if (n->dir) {
			sub = node_dentry(n)->inode;
			if (!S_ISDIR(sub->mode))
				return make ? tar_err(ts, path, "a file where "
					"it needs a directory"), NULL : NULL;
		} else if (!make) {
			return NULL;
		} else {
			char *name = dupn(p, len);

			sub = inode_new(ts, name, S_IFDIR | 0755, 0, 0, mtime,
					nsec);
			free(name);
			if (!sub || place(ts, dir, p, len, sub, path))
				return NULL;
		}
		dir = sub;
	}
	return NULL;
}

/* The node of an existing path ("" is the root: NULL), or NULL. */
static struct tar_node *lookup(struct tarscan *ts, const char *path)
{
	const char *base;
	struct kiln_inode *dir = walk(ts, path, false, 0, 0, &base);
	struct tar_node *n;

	if (!dir || !*path)
		return NULL;
	n = node_find(ts, dir, base, strlen(base));
	return n->dir ? n : NULL;
}

static int read_xattrs(struct tarscan *ts, struct archive_entry *e,
		       struct kiln_inode *in)
{
	const char *name;
	const void *value;
	size_t len;

	if (ts->o->xattr_tolerance < 0 || !archive_entry_xattr_reset(e))
		return 0;
	/* bsdtar writes each twice (LIBARCHIVE. and SCHILY.): one copy */
	while (archive_entry_xattr_next(e, &name, &value, &len) == ARCHIVE_OK) {
		kiln_xattr_remove(in, name);
		if (kiln_xattr_add(in, in->srcpath, name, value, len))
			return -1;
	}
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
	if (in->size > (uint64_t)INT64_MAX - 4096 - sp->end)
		return tar_err(ts, in->srcpath, "size beyond what a file holds");
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

/*
 * An explicit entry for a directory that exists takes its metadata; its
 * xattrs join the directory's, replacing those of the same name, as
 * `tar -xp` sets them one by one.
 */
static void dir_update(struct kiln_inode *dir, struct kiln_inode *in)
{
	dir->mode = in->mode;
	dir->uid = in->uid;
	dir->gid = in->gid;
	dir->mtime = in->mtime;
	dir->mtime_nsec = in->mtime_nsec;
	kiln_xattrs_move(dir, in);
	in->nlink = 0;			/* dropped at the end */
}

static int add_hardlink(struct tarscan *ts, const char *path,
			const char *target, struct kiln_inode *dir,
			const char *base)
{
	char *to = normalize(target);
	struct tar_node *n = to ? lookup(ts, to) : NULL;
	struct tar_node *self = lookup(ts, path);
	struct kiln_inode *in = n ? node_dentry(n)->inode : NULL;

	free(to);
	if (!in || S_ISDIR(in->mode))
		return tar_err(ts, path, "hard link to nothing the tar had "
			       "before it (or to a directory)");
	if (self && node_dentry(self)->inode == in)
		return 0;		/* a link to itself: nothing changes */
	in->nlink++;
	return place(ts, dir, base, strlen(base), in, path);
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
	    kiln_tar_acls(e, in, ts->o->xattr_tolerance >= 0))
		return NULL;
	if (S_ISCHR(mode) || S_ISBLK(mode)) {
		/* what Linux's 32-bit device numbers (and EROFS) hold */
		if (archive_entry_rdevmajor(e) > 0xfff ||
		    archive_entry_rdevminor(e) > 0xfffff)
			return tar_err(ts, path, "device number out of range"),
			       NULL;
		in->rdev = erofs_encode_dev(archive_entry_rdevmajor(e),
					    archive_entry_rdevminor(e));
	}
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
		      char *path, struct kiln_inode *dir, char *base)
{
	struct kiln_inode *in;

	if (!strcmp(base, AUFS_OPQ)) {
		dir->opaque = true;	/* the mark goes on at the finish */
		return 0;
	}
	if (strncmp(base, AUFS_WH, strlen(AUFS_WH)))
		return 1;
	memmove(base, base + strlen(AUFS_WH), strlen(base + strlen(AUFS_WH)) + 1);
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return tar_err(ts, path, "whiteout of no name");
	in = entry_inode(ts, e, path);
	if (!in)
		return -1;
	free(in->symlink);
	in->symlink = NULL;
	in->mode = S_IFCHR | (in->mode & 07777);
	in->rdev = 0;			/* 0:0, overlayfs' whiteout */
	in->size = 0;
	dir->whiteouts = true;
	return place(ts, dir, base, strlen(base), in, path);
}

static int add_entry(struct tarscan *ts, struct archive *a,
		     struct archive_entry *e)
{
	const char *name = archive_entry_pathname(e);
	char *path = name ? normalize(name) : NULL;
	const char *link = archive_entry_hardlink(e), *cbase = "";
	struct kiln_inode *dir, *in;
	struct tar_node *n;
	int64_t sec;
	uint32_t nsec;
	int ret = -1;

	if (!path)
		return tar_err(ts, name, name ? "path climbs out with '..'" :
			       "path not readable in this locale");
	/* what a directory source can hold, and tar -x make */
	if (strlen(path) >= 4096) {
		free(path);
		return tar_err(ts, name, "path longer than 4095 bytes");
	}
	if (excluded(ts->o, path)) {
		free(path);
		return 0;		/* its data is skipped by the next read */
	}
	entry_mtime(e, &sec, &nsec);
	dir = walk(ts, path, true, sec, nsec, &cbase);
	if (!dir)
		goto out;
	if (ts->o->aufs && *path) {
		int r = aufs_entry(ts, e, path, dir, path + (cbase - path));

		if (r <= 0) {
			ret = r;
			goto out;
		}
	}
	if (link && *path) {
		ret = add_hardlink(ts, path, link, dir, cbase);
		goto out;
	}
	in = entry_inode(ts, e, path);
	if (!in)
		goto out;
	n = *path ? node_find(ts, dir, cbase, strlen(cbase)) : NULL;
	if (S_ISDIR(in->mode) && (!*path || n->dir)) {
		struct kiln_inode *old = *path ? node_dentry(n)->inode : dir;

		if (!S_ISDIR(old->mode)) {
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
	ret = place(ts, dir, cbase, strlen(cbase), in, path);
	if (!ret && S_ISREG(in->mode) && in->size)
		ret = spool_data(ts, a, in);
out:
	free(path);
	return ret;
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
static void finish_tree(struct tarscan *ts)
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
	return root(ts, 0, 0) ? 0 : -1;
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
	/* names as the bytes they are: no locale conversion (or warning) */
	archive_read_set_options(a, "hdrcharset=BINARY");
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
	free(ts.nodes);
	free(ts.dirs);
	if (a)
		archive_read_free(a);
	return ret;
}

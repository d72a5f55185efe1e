/* SPDX-License-Identifier: MIT */
/*
 * --tar: the tree from a tar stream (a file, or stdin) instead of a
 * directory, without unpacking it. libarchive reads ustar, pax (long
 * names, xattrs, ACLs, sparse files) and GNU tar (long names, sparse
 * files), fed by tarfeed.c, which also checks the pax global headers
 * libarchive drops; each entry becomes an inode of the tree tarpath.c
 * keeps. Each file's data is copied once, to the spool: an unlinked file
 * in $TMPDIR that the workers then read as they would a source file,
 * holes left as holes; with --tar=i, where it lies in the tar
 * (tarindex.c) instead.
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
#include "tarfeed.h"
#include "tarindex.h"
#include "tarscan.h"
#include "tree.h"
#include "xattr.h"
#include "android.h"

#define AUFS_WH ".wh."			/* aufs: ".wh.NAME" whites out NAME */
#define AUFS_OPQ ".wh..wh..opq"		/* and this makes its directory opaque */

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
		      struct archive_entry *e, struct kiln_inode *in)
{
	struct kiln_spool *sp = ts->tree->spool;
	uint64_t got = 0;
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
		got += len;
	}
	if (r != ARCHIVE_EOF)
		return tar_err(ts, in->srcpath, archive_error_string(a));
	if (tar_check_data_len(ts, e, in, got))
		return -1;
	sp->end = round_up(in->spool_off + in->size, 4096);
	return 0;
}

static int add_hardlink(struct tarscan *ts, const char *path,
			const char *target, struct kiln_inode *dir,
			const char *base)
{
	char *to = tar_normalize(target);
	struct tar_node *n = to ? tar_lookup(ts, to) : NULL;
	struct tar_node *self = tar_lookup(ts, path);
	struct kiln_inode *in = n ? tar_node_dentry(n)->inode : NULL;

	free(to);
	if (!in || S_ISDIR(in->mode))
		return tar_err(ts, path, "hard link to nothing the tar had "
			       "before it (or to a directory)");
	if (self && tar_node_dentry(self)->inode == in)
		return 0;		/* a link to itself: nothing changes */
	in->nlink++;
	return tar_place(ts, dir, base, strlen(base), in, path);
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
			return kiln_excluded(o, path);
		*p = '\0';
		out = kiln_excluded(o, path);
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
	in = tar_inode_new(ts, path, (uint32_t)mode,
		       (uint64_t)archive_entry_uid(e),
		       (uint64_t)archive_entry_gid(e), sec, nsec);
	/* tar keeps ACLs apart from xattrs, as text */
	if (!in || read_xattrs(ts, e, in) ||
	    kiln_tar_acls(e, in, ts->o->xattr_tolerance >= 0) ||
	    kiln_android_xattrs(ts->o, in, path))
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

		/* as symlink(2) takes them: the kernel reads 4095 bytes */
		if (!t || !*t || strlen(t) >= 4096)
			return tar_err(ts, path, "symlink target empty or over "
				       "4095 bytes"), NULL;
		in->symlink = xstrdup(t);
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
	return tar_place(ts, dir, base, strlen(base), in, path);
}

static int add_entry(struct tarscan *ts, struct archive *a,
		     struct archive_entry *e)
{
	const char *name = archive_entry_pathname(e);
	char *path = name ? tar_normalize(name) : NULL;
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
	dir = tar_walk(ts, path, true, sec, nsec, &cbase);
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
	n = *path ? tar_node_find(ts, dir, cbase, strlen(cbase)) : NULL;
	if (S_ISDIR(in->mode) && (!*path || n->dir)) {
		struct kiln_inode *old = *path ? tar_node_dentry(n)->inode : dir;

		if (!S_ISDIR(old->mode)) {
			tar_err(ts, path, "a directory and a file by the same "
				"name");
			goto out;
		}
		tar_dir_update(old, in);
		ret = 0;
		goto out;
	}
	if (!*path) {
		tar_err(ts, "/", "the root is not a directory");
		goto out;
	}
	ret = tar_place(ts, dir, cbase, strlen(cbase), in, path);
	if (!ret && S_ISREG(in->mode) && in->size)
		ret = ts->o->tar_index ? kiln_tarindex_entry(ts, a, e, in) :
		      spool_data(ts, a, e, in);
out:
	free(path);
	return ret;
}

static int read_tar(struct tarscan *ts, struct tarfeed *f)
{
	struct archive *a = f->tar;
	struct archive_entry *e;
	int r;

	/*
	 * A warning is mostly an entry libarchive read in part: a pax record
	 * it could not parse (the path or an xattr in it lost), a header it
	 * dropped (a Solaris ACL). GNU tar and erofs-utils fail then; so do
	 * we, rather than build what the tar did not say. The one kept is a
	 * name not in the locale's charset (UTF-8 under "C"): the name's bytes
	 * are still there, as names are bytes to EROFS. libarchive gives no
	 * code for it, only its words.
	 */
	while ((r = tarfeed_next(f, &e)) == ARCHIVE_OK ||
	       (r == ARCHIVE_WARN && archive_error_string(a) &&
		strstr(archive_error_string(a), "can't be converted"))) {
		if (add_entry(ts, a, e))
			return -1;
	}
	if (r != ARCHIVE_EOF)
		return tar_err(ts, NULL, archive_error_string(a));
	/* an empty tar is an empty root */
	return tar_root(ts, 0, 0) ? 0 : -1;
}

/*
 * --tar=i: the tar must not be compressed (the kernel reads file data
 * from it as it is). When it is a file, the feed reads it directly, and
 * its descriptor serves to check what is indexed against its bytes.
 */
static int index_open(struct tarscan *ts, struct tarfeed *f)
{
	if (tarfeed_filtered(f))
		return tar_err(ts, NULL, "--tar=i needs an uncompressed tar "
			       "(the image points into it)");
	ts->tar_fd = f->fd >= 0 ? fcntl(f->fd, F_DUPFD_CLOEXEC, 0) : -1;
	return 0;
}

/*
 * The tar's length in the device table: what was read of it, through its
 * end marker, so a file, a redirect and a pipe give the same image.
 */
static void index_close(struct tarscan *ts, struct archive *a)
{
	la_int64_t n = archive_filter_bytes(a, 0);

	ts->tree->devices = xcalloc(1, sizeof(*ts->tree->devices));
	ts->tree->nr_devices = 1;
	ts->tree->devices[0].blocks = n > 0 ? ((uint64_t)n + 511) / 512 : 0;
	if (ts->tar_fd >= 0)
		close(ts->tar_fd);
}

static int open_spool(struct kiln_tree *tree)
{
	tree->spool = xcalloc(1, sizeof(*tree->spool));
	tree->spool->fd = -1;
	return kiln_spool_open(tree->spool);
}

/* A hole at the very end must read as zeros too. */
static int close_spool(struct tarscan *ts)
{
	if (!ts->tree->spool ||
	    !ftruncate(ts->tree->spool->fd, (off_t)ts->tree->spool->end))
		return 0;
	kiln_err("%s: cannot grow the spool: %s", ts->name, strerror(errno));
	return -1;
}

int kiln_tar_scan(const struct kiln_mkfs_opts *o, struct kiln_tree *tree)
{
	bool in_stdin = !o->source || !strcmp(o->source, "-");
	struct tarscan ts = { .o = o, .tree = tree, .tar_fd = -1,
			      .name = in_stdin ? "stdin" : o->source };
	struct tarfeed f;
	int ret = -1;

	memset(tree, 0, sizeof(*tree));
	ts.cap = 1024;			/* a power of two, never empty */
	ts.nodes = xcalloc(ts.cap, sizeof(*ts.nodes));
	if (!o->tar_index && open_spool(tree))
		goto out;
	if (tarfeed_open(&f, in_stdin ? NULL : o->source)) {
		const char *why = f.tar ? archive_error_string(f.tar) : NULL;

		tar_err(&ts, NULL, why ? why : strerror(errno));
	} else if ((!o->tar_index || !index_open(&ts, &f)) &&
		 !read_tar(&ts, &f))
		ret = 0;
	if (o->tar_index && f.tar)
		index_close(&ts, f.tar);
	tar_finish(&ts);
	if (!ret)
		ret = close_spool(&ts);
	tarfeed_close(&f);
out:
	free(ts.nodes);
	free(ts.dirs);
	return ret;
}

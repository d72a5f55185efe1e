/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "common/util.h"
#include "dump.h"

bool dump_seen_add(struct dump_seen *s, uint64_t nid)
{
	uint64_t i;

	if (2 * (s->nr + 1) > s->cap) {		/* grow: at most half full */
		struct dump_seen old = *s;

		s->cap = s->cap ? 2 * s->cap : 1024;
		s->slot = xcalloc(s->cap, sizeof(*s->slot));
		s->nr = 0;
		for (i = 0; i < old.cap; i++)
			if (old.slot[i])
				dump_seen_add(s, old.slot[i] - 1);
		free(old.slot);
	}
	for (i = (nid * 0x9e3779b97f4a7c15ull) % s->cap; s->slot[i];
	     i = (i + 1) % s->cap)
		if (s->slot[i] == nid + 1)
			return false;
	s->slot[i] = nid + 1;
	s->nr++;
	return true;
}

void dump_seen_free(struct dump_seen *s)
{
	free(s->slot);
	memset(s, 0, sizeof(*s));
}

const char *const dump_type_name[8] = {
	[EROFS_FT_UNKNOWN] = "unknown type", [EROFS_FT_REG_FILE] = "regular file",
	[EROFS_FT_DIR] = "directory", [EROFS_FT_CHRDEV] = "char dev",
	[EROFS_FT_BLKDEV] = "block dev", [EROFS_FT_FIFO] = "FIFO file",
	[EROFS_FT_SOCK] = "SOCK file", [EROFS_FT_SYMLINK] = "symlink file",
};

struct each {
	struct dump *dp;
	dump_entry_fn fn;
	void *arg;
};

static int each_entry(void *arg, const char *name, size_t len, uint64_t nid,
		      uint8_t ftype)
{
	struct each *e = arg;
	char buf[EROFS_NAME_LEN + 1];

	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	memcpy(buf, name, len);		/* the reader checked len */
	buf[len] = 0;
	return e->fn(e->dp, e->arg, buf, nid, ftype);
}

int dump_dir_raw(struct dump *dp, const struct kiln_rinode *ri,
		 kiln_dirent_fn fn, void *arg)
{
	uint8_t *data;
	int ret;

	if (!S_ISDIR(ri->mode)) {
		kiln_diag_set(&dp->d, "nid %llu is not a directory",
			      (unsigned long long)ri->nid);
		return -1;
	}
	if (kiln_read_all(&dp->img, ri, dp->x, KILN_MAX_DIR_SIZE, &data,
			  &dp->d))
		return -1;
	ret = kiln_dir_each(&dp->img, ri, data, fn, arg, &dp->d);
	free(data);
	return ret;
}

int dump_dir_each(struct dump *dp, const struct kiln_rinode *ri,
		  dump_entry_fn fn, void *arg)
{
	struct each e = { .dp = dp, .fn = fn, .arg = arg };

	return dump_dir_raw(dp, ri, each_entry, &e);
}

struct find {
	const char *name;
	uint64_t nid;
	bool found;
};

static int match(struct dump *dp, void *arg, const char *name, uint64_t nid,
		 uint8_t ftype)
{
	struct find *f = arg;

	(void)dp;
	(void)ftype;
	if (strcmp(name, f->name))
		return 0;
	f->nid = nid;
	f->found = true;
	return 1;			/* stop */
}

/*
 * "." and ".." are taken by name, as a shell would: ".." drops the last
 * component (the root's is the root), "." nothing. The directory
 * listings skip them, so they are never looked up.
 */
int dump_lookup(struct dump *dp, const char *path, uint64_t *nid,
		char **plain)
{
	char *copy = xstrdup(path), *save = NULL;
	char *out = xcalloc(1, strlen(path) + 2);	/* "/a/b", no "//" */
	size_t max = strlen(path) / 2 + 2, depth = 0;
	uint64_t *up = xcalloc(max, sizeof(*up));	/* nids on the way */
	const char **names = xcalloc(max, sizeof(*names));
	uint64_t cur = dp->img.sb.root_nid;
	int ret = 0;

	for (char *c = strtok_r(copy, "/", &save); c && !ret;
	     c = strtok_r(NULL, "/", &save)) {
		struct find f = { .name = c };
		struct kiln_rinode ri;

		if (kiln_inode_load(&dp->img, cur, &ri, &dp->d)) {
			ret = -1;
		} else if (!S_ISDIR(ri.mode)) {
			kiln_diag_set(&dp->d, "%s: not a directory on the way",
				      path);
			ret = -1;
		} else if (!strcmp(c, ".")) {
			continue;
		} else if (!strcmp(c, "..")) {
			if (depth)
				cur = up[--depth];
			continue;
		} else if (dump_dir_each(dp, &ri, match, &f) < 0) {
			ret = -1;
		} else if (!f.found) {
			kiln_diag_set(&dp->d, "%s: no such file or directory",
				      path);
			ret = -1;
		} else {
			up[depth] = cur;
			names[depth++] = c;
			cur = f.nid;
		}
	}
	for (size_t k = 0; k < depth; k++)
		strcat(strcat(out, "/"), names[k]);
	free(copy);
	free(up);
	free(names);
	*nid = cur;
	*plain = out[0] ? out : strcpy(out, "/");
	return ret;
}

/* Depth-first search for a name of nid; each directory is read once. */
struct search {
	uint64_t want;
	unsigned int depth;		/* PATH_MAX allows no deeper tree */
	struct dump_seen seen;
	char *path;			/* of the directory being read */
	char *found;
};

static int visit(struct dump *dp, void *arg, const char *name, uint64_t nid,
		 uint8_t ftype)
{
	struct search *s = arg;
	char *parent = s->path, *path;
	struct kiln_rinode ri;
	int ret = 0;

	path = xmalloc(strlen(parent) + strlen(name) + 2);
	sprintf(path, "%s%s%s", parent, strcmp(parent, "/") ? "/" : "", name);
	if (nid == s->want) {
		s->found = path;
		return 1;
	}
	if (ftype == EROFS_FT_DIR && s->depth < 2048 &&
	    dump_seen_add(&s->seen, nid) &&
	    !kiln_inode_load(&dp->img, nid, &ri, &dp->d) && S_ISDIR(ri.mode)) {
		s->path = path;
		s->depth++;
		ret = dump_dir_each(dp, &ri, visit, s);
		s->depth--;
		s->path = parent;
	}
	if (path != s->found)
		free(path);
	/* a damaged corner of the tree does not hide the rest of it */
	return s->found ? 1 : ret > 0 ? ret : 0;
}

char *dump_path_of(struct dump *dp, uint64_t nid)
{
	struct search s = { .want = nid, .path = "/" };
	struct kiln_rinode root;
	uint64_t rnid = dp->img.sb.root_nid;

	if (nid == rnid)
		return xstrdup("/");
	dump_seen_add(&s.seen, rnid);
	if (!kiln_inode_load(&dp->img, rnid, &root, &dp->d))
		dump_dir_each(dp, &root, visit, &s);
	dump_seen_free(&s.seen);
	return s.found;
}

uint64_t dump_ondisk_size(const struct dump *dp, const struct kiln_rinode *ri)
{
	if (ri->layout == EROFS_INODE_COMPRESSED_FULL ||
	    ri->layout == EROFS_INODE_COMPRESSED_COMPACT)
		return (uint64_t)ri->iu << dp->img.blkszbits;
	return ri->size;
}

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "blocklist.h"
#include "kiln.h"
#include "common/util.h"
#include "read/reader.h"

struct walk {
	struct kiln_image img;
	struct kiln_dctx *x;
	struct kiln_diag d;
	FILE *out;
	const char *mount_point;
	uint64_t *seen;			/* nids of hard links listed */
	size_t nr_seen;
	struct kiln_extents l;
	char path[8192];
	size_t len;
};

/* A hard link is listed once, at the first path the walk finds. */
static bool seen_before(struct walk *w, uint64_t nid)
{
	for (size_t i = 0; i < w->nr_seen; i++)
		if (w->seen[i] == nid)
			return true;
	w->seen = xrealloc(w->seen, (w->nr_seen + 1) * sizeof(*w->seen));
	w->seen[w->nr_seen++] = nid;
	return false;
}

static void put_range(struct walk *w, uint64_t first, uint64_t last,
		      bool *named)
{
	if (!*named)
		fprintf(w->out, "/%s%s%s", w->mount_point ? w->mount_point : "",
			w->mount_point ? "/" : "", w->path);
	*named = true;
	if (first == last)
		fprintf(w->out, " %llu", (unsigned long long)first);
	else
		fprintf(w->out, " %llu-%llu", (unsigned long long)first,
			(unsigned long long)last);
}

/* The blocks holding a file's data; holes, fragments, inline tails: none. */
static int list_file(struct walk *w, const struct kiln_rinode *ri)
{
	struct kiln_fpos pos = { 0 };
	uint64_t first = 0, last = 0;
	uint64_t meta = (uint64_t)w->img.sb.meta_blkaddr << w->img.blkszbits;
	bool have = false, named = false;

	while (pos.la < ri->size) {
		if (kiln_file_map(&w->img, ri, &pos, &w->l, KILN_WINDOW_EXTENTS,
				  UINT64_MAX, &w->d))
			return -1;
		for (size_t i = 0; i < w->l.nr; i++) {
			const struct kiln_fext *e = &w->l.e[i];
			uint64_t a, b;

			/* inline tails live in the metadata, shared */
			if (e->kind == KILN_EXT_HOLE || e->kind == KILN_EXT_FRAG ||
			    !e->plen || e->pa >= meta)
				continue;
			a = e->pa >> w->img.blkszbits;
			b = (e->pa + e->plen - 1) >> w->img.blkszbits;
			/* adjacent to the run, or in it: the run grows */
			if (have && a >= first && a <= last + 1) {
				last = b > last ? b : last;
				continue;
			}
			if (have)
				put_range(w, first, last, &named);
			first = a;
			last = b;
			have = true;
		}
	}
	if (have)
		put_range(w, first, last, &named);
	if (named)
		fputc('\n', w->out);
	return 0;
}

static int walk_dir(struct walk *w, const struct kiln_rinode *dir);

static int entry(void *arg, const char *name, size_t len, uint64_t nid,
		 uint8_t ftype)
{
	struct walk *w = arg;
	struct kiln_rinode ri;
	size_t at = w->len;
	int ret = 0;

	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	if (ftype != EROFS_FT_REG_FILE && ftype != EROFS_FT_DIR)
		return 0;
	if (at + len + 2 > sizeof(w->path)) {
		kiln_diag_set(&w->d, "path too long for the block list");
		return -1;
	}
	if (at)
		w->path[w->len++] = '/';
	memcpy(w->path + w->len, name, len);
	w->len += len;
	w->path[w->len] = '\0';
	if (kiln_inode_load(&w->img, nid, &ri, &w->d))
		ret = -1;
	else if (S_ISDIR(ri.mode))
		ret = walk_dir(w, &ri);
	else if (S_ISREG(ri.mode) && !(ri.nlink > 1 && seen_before(w, nid)))
		ret = list_file(w, &ri);
	w->len = at;
	w->path[at] = '\0';
	return ret;
}

static int walk_dir(struct walk *w, const struct kiln_rinode *dir)
{
	uint8_t *data;
	int ret;

	if (kiln_read_all(&w->img, dir, w->x, KILN_MAX_DIR_SIZE, &data, &w->d))
		return -1;
	ret = kiln_dir_each(&w->img, dir, data, entry, w, &w->d);
	free(data);
	return ret;
}

static int write_list(struct walk *w, const char *image)
{
	struct kiln_rinode root;

	if (kiln_image_open(&w->img, image, &w->d))
		return -1;
	w->x = kiln_dctx_new(&w->img);
	int ret = !w->x || kiln_inode_load(&w->img, w->img.sb.root_nid, &root,
					  &w->d) ? -1 : walk_dir(w, &root);
	if (w->x)
		kiln_dctx_free(w->x);
	kiln_image_close(&w->img);
	return ret;
}

int mkfs_block_list_open(struct mkfs_blist *b, const char *list)
{
	int fd;

	b->list = list;
	b->tmp = xmalloc(strlen(list) + sizeof(".tmpXXXXXX"));
	sprintf(b->tmp, "%s.tmpXXXXXX", list);
	fd = mkstemp(b->tmp);
	if (fd < 0 || !(b->out = fdopen(fd, "w"))) {
		kiln_err("%s: %s", list, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(b->tmp);
		}
		free(b->tmp);
		return -1;
	}
	return 0;
}

int mkfs_block_list_close(struct mkfs_blist *b, bool ok, const char *image,
			  const char *mount_point)
{
	struct walk w = { .mount_point = mount_point, .out = b->out };
	int ret = ok ? write_list(&w, image) : -1;

	if (ok && ret)
		kiln_err("%s: cannot list its blocks: %s", image, w.d.msg);
	if (ok && !ret && (fflush(b->out) || fsync(fileno(b->out)) ||
			   ferror(b->out))) {
		kiln_err("%s: %s", b->list, strerror(errno));
		ret = -1;
	}
	fclose(b->out);
	if (!ret && rename(b->tmp, b->list)) {
		kiln_err("%s: %s", b->list, strerror(errno));
		ret = -1;
	}
	if (ret)
		unlink(b->tmp);
	free(b->tmp);
	free(w.seen);
	free(w.l.e);
	return ret;
}

/* SPDX-License-Identifier: MIT */
/*
 * Reading the files of merged layers for --clean=data (layerdata.h). A
 * worker reads a range of a file: the reader maps a window of the file's
 * extents from there and each one is decoded (or, raw and fragment data,
 * read straight into the caller's buffer). Decoding states are costly to
 * make (a zstd context, a deflate one, the packed inode's cache), so they
 * are pooled and handed from file to file rather than made for each.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/util.h"
#include "layerdata.h"

struct kiln_layerdata {
	struct kiln_image *img;
	char *const *names;
	struct stat *st;		/* each image as opened */
	unsigned int nr;
	pthread_mutex_t lock;		/* guards what follows */
	struct kiln_dctx **idle;	/* decoding states not in use */
	size_t nr_idle, cap_idle;
	char **why;			/* error lines given out */
	size_t nr_why;
};

struct kiln_lread {
	const struct kiln_layerfile *lf;
	const char *path;
	struct kiln_dctx *x;
	struct kiln_extents l;		/* a window of the file's extents */
	struct kiln_fpos next;		/* where the window after l starts */
	uint8_t *buf;			/* a decoded pcluster ... */
	size_t cap;
	uint64_t buf_la, buf_len;	/* ... of these bytes (0: none) */
	struct kiln_diag d;
};

struct kiln_layerdata *kiln_layerdata_new(struct kiln_image *imgs,
					  char *const *names, unsigned int nr)
{
	struct kiln_layerdata *ld = xcalloc(1, sizeof(*ld));

	ld->img = imgs;
	ld->names = names;
	ld->nr = nr;
	ld->st = xcalloc(nr, sizeof(*ld->st));
	for (unsigned int i = 0; i < nr; i++)
		if (fstat(imgs[i].fd, &ld->st[i]))
			memset(&ld->st[i], 0, sizeof(ld->st[i]));
	pthread_mutex_init(&ld->lock, NULL);
	return ld;
}

void kiln_layerdata_free(struct kiln_layerdata *ld)
{
	if (!ld)
		return;
	for (unsigned int i = 0; i < ld->nr; i++)
		kiln_image_close(&ld->img[i]);
	for (size_t i = 0; i < ld->nr_idle; i++)
		kiln_dctx_free(ld->idle[i]);
	for (size_t i = 0; i < ld->nr_why; i++)
		free(ld->why[i]);
	pthread_mutex_destroy(&ld->lock);
	free(ld->idle);
	free(ld->why);
	free(ld->st);
	free(ld->img);
	free(ld);
}

struct kiln_lread *kiln_lread_open(const struct kiln_layerfile *lf,
				   const char *path)
{
	struct kiln_layerdata *ld = lf->ld;
	struct kiln_lread *r = xcalloc(1, sizeof(*r));

	r->lf = lf;
	r->path = path;
	pthread_mutex_lock(&ld->lock);
	if (ld->nr_idle)
		r->x = ld->idle[--ld->nr_idle];
	pthread_mutex_unlock(&ld->lock);
	if (!r->x && !(r->x = kiln_dctx_new(lf->img))) {
		free(r);
		errno = ENOMEM;
		return NULL;
	}
	return r;
}

void kiln_lread_close(struct kiln_lread *r)
{
	struct kiln_layerdata *ld;

	if (!r)
		return;
	ld = r->lf->ld;
	pthread_mutex_lock(&ld->lock);
	if (ld->nr_idle == ld->cap_idle) {
		ld->cap_idle = ld->cap_idle ? 2 * ld->cap_idle : 8;
		ld->idle = xrealloc(ld->idle, ld->cap_idle * sizeof(*ld->idle));
	}
	ld->idle[ld->nr_idle++] = r->x;
	pthread_mutex_unlock(&ld->lock);
	free(r->l.e);
	free(r->buf);
	free(r);
}

/* r->d as one line naming the layer and file, kept until the end. */
static const char *why(struct kiln_lread *r)
{
	struct kiln_layerdata *ld = r->lf->ld;
	int len = snprintf(NULL, 0, "%s: %s: %s", ld->names[r->lf->layer],
			   r->path, r->d.msg);
	char *s = xmalloc((size_t)len + 1);

	snprintf(s, (size_t)len + 1, "%s: %s: %s", ld->names[r->lf->layer],
		 r->path, r->d.msg);
	pthread_mutex_lock(&ld->lock);
	ld->why = xrealloc(ld->why, (ld->nr_why + 1) * sizeof(*ld->why));
	ld->why[ld->nr_why++] = s;
	pthread_mutex_unlock(&ld->lock);
	return s;
}

/* The extent of the window holding off, or NULL (binary search). */
static const struct kiln_fext *in_window(const struct kiln_lread *r,
					 uint64_t off)
{
	size_t lo = 0, hi = r->l.nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct kiln_fext *e = &r->l.e[mid];

		if (off < e->la)
			hi = mid;
		else if (off - e->la >= e->llen)
			lo = mid + 1;
		else
			return e;
	}
	return NULL;
}

/*
 * The extent holding off: from the window, else the window that follows
 * it when reading on, else a window mapped afresh from off.
 */
static const struct kiln_fext *extent_at(struct kiln_lread *r, uint64_t off)
{
	const struct kiln_image *img = r->lf->img;
	const struct kiln_rinode *ri = &r->lf->ri;
	const struct kiln_fext *e = in_window(r, off);
	struct kiln_fpos pos = { .la = off };

	if (e)
		return e;
	if (r->l.nr && r->next.la == off)
		pos = r->next;
	else if ((ri->layout == EROFS_INODE_COMPRESSED_FULL ||
		  ri->layout == EROFS_INODE_COMPRESSED_COMPACT) &&
		 kiln_zmap_seek(img, ri, off, &pos, &r->d))
		return NULL;
	/* a window may end before off: seeks land on an extent's head */
	do {
		if (kiln_file_map(img, ri, &pos, &r->l, KILN_WINDOW_EXTENTS,
				  16u << 20, &r->d))
			return NULL;
		r->next = pos;
		e = in_window(r, off);
	} while (!e && r->l.nr && pos.la <= off && pos.la < ri->size);
	if (!e)
		kiln_diag_set(&r->d, "no extent holds offset %llu",
			      (unsigned long long)off);
	return e;
}

/* len bytes of extent e from skip into out. */
static int extent_read(struct kiln_lread *r, const struct kiln_fext *e,
		       uint64_t skip, uint64_t len, uint8_t *out)
{
	struct kiln_fext part = *e;

	if (e->kind == KILN_EXT_HOLE) {
		memset(out, 0, len);
		return 0;
	}
	/* raw bytes and fragments can be read from any offset */
	if (e->kind == KILN_EXT_RAW || e->kind == KILN_EXT_FRAG) {
		part.la += skip;
		part.pa += skip;
		part.llen = len;
		part.plen = (uint32_t)len;
		return kiln_fext_read(r->lf->img, r->x, &part, out, &r->d);
	}
	/* a pcluster decodes whole: keep it for the next read */
	if (r->buf_len != e->llen || r->buf_la != e->la) {
		if (r->cap < e->llen) {
			free(r->buf);
			r->cap = e->llen;
			r->buf = xmalloc(r->cap);
		}
		r->buf_len = 0;
		if (kiln_fext_read(r->lf->img, r->x, e, r->buf, &r->d))
			return -1;
		r->buf_la = e->la;
		r->buf_len = e->llen;
	}
	memcpy(out, r->buf + skip, len);
	return 0;
}

ssize_t kiln_lread_pread(struct kiln_lread *r, void *buf, size_t n,
			 uint64_t off, const char **failed)
{
	uint64_t size = r->lf->ri.size;
	size_t done = 0;

	if (off >= size)
		return 0;
	if (n > size - off)
		n = (size_t)(size - off);
	while (done < n) {
		uint64_t at = off + done, skip, len;
		const struct kiln_fext *e = extent_at(r, at);

		if (!e)
			goto fail;
		skip = at - e->la;
		len = e->llen - skip < n - done ? e->llen - skip : n - done;
		if (extent_read(r, e, skip, len, (uint8_t *)buf + done))
			goto fail;
		done += (size_t)len;
	}
	return (ssize_t)n;
fail:
	*failed = why(r);
	errno = EIO;
	return -1;
}

off_t kiln_lread_seek(struct kiln_lread *r, uint64_t off, int whence)
{
	uint64_t size = r->lf->ri.size;

	while (off < size) {
		const struct kiln_fext *e = extent_at(r, off);

		if (!e) {
			errno = EIO;
			return -1;
		}
		if ((e->kind == KILN_EXT_HOLE) == (whence == SEEK_HOLE))
			return (off_t)off;
		off = e->la + e->llen;
	}
	if (whence == SEEK_HOLE)
		return (off_t)size;
	errno = ENXIO;
	return -1;
}

bool kiln_lread_unchanged(const struct kiln_lread *r, const char **failed)
{
	const struct kiln_layerdata *ld = r->lf->ld;
	const struct stat *was = &ld->st[r->lf->layer];
	struct stat st;

	if (!fstat(r->lf->img->fd, &st) && st.st_size == was->st_size &&
	    st.st_mtim.tv_sec == was->st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == was->st_mtim.tv_nsec)
		return true;
	*failed = ld->names[r->lf->layer];	/* the layer changed */
	return false;
}

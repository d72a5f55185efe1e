/* SPDX-License-Identifier: MIT */
/*
 * The walk: directory jobs read a directory and queue a job per
 * subdirectory and one per group of other entries; file jobs check those
 * inodes (a regular file's data in filedata.c). Inodes reached twice are
 * checked once; link counts and loops are settled at the end (nodes.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fsck.h"
#include "kiln.h"
#include "common/util.h"

void fsck_msg(struct fsck *f, enum fsck_kind kind, const char *path,
	      const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&f->lock);
	if (f->nmsgs == f->msgs_cap) {
		f->msgs_cap = f->msgs_cap ? 2 * f->msgs_cap : 64;
		f->msgs = xrealloc(f->msgs, f->msgs_cap * sizeof(*f->msgs));
	}
	f->msgs[f->nmsgs] = (struct fsck_msg){ .path = xstrdup(path),
		.text = xstrdup(text), .kind = (uint8_t)kind };
	f->nmsgs++;
	pthread_mutex_unlock(&f->lock);
}

struct dir_job {
	struct kiln_job job;
	struct fsck *f;
	uint64_t nid, parent;
	char *path;
};

/* Files are checked in groups: one job per file would cost more in
 * hand-offs between threads than most small files cost to check. */
#define GROUP_FILES	32

enum { NOT_MADE, MADE, MAKE_FAILED };

struct file_ref {
	uint64_t nid;
	uint8_t ftype;
	uint8_t made;			/* fsck_precreate's outcome */
	struct fsck_made id;		/* what it made, when MADE */
	char *path;
};

struct file_job {
	struct kiln_job job;
	struct fsck *f;
	unsigned int n;
	struct file_ref file[GROUP_FILES];
};

static void dir_fn(struct kiln_job *job, void *ctx);
static void file_fn(struct kiln_job *job, void *ctx);

static void submit_dir(struct fsck *f, uint64_t nid, uint64_t parent,
		       char *path)
{
	struct dir_job *j = xcalloc(1, sizeof(*j));

	*j = (struct dir_job){ .job = { .fn = dir_fn, .detached = true },
			       .f = f, .nid = nid, .parent = parent,
			       .path = path };
	kiln_wq_submit(&f->wq, &j->job);
}

static void flush_files(struct fsck *f, struct file_job **group)
{
	if (*group)
		kiln_wq_submit(&f->wq, &(*group)->job);
	*group = NULL;
}

static void add_file(struct fsck *f, struct file_job **group,
		     const struct file_ref *r)
{
	struct file_job *j = *group;

	if (!j) {
		j = *group = xcalloc(1, sizeof(*j));
		j->job = (struct kiln_job){ .fn = file_fn, .detached = true };
		j->f = f;
	}
	j->file[j->n++] = *r;
	if (j->n == GROUP_FILES)
		flush_files(f, group);
}

/* Loads and checks an inode: the same for files and directories. */
static int load(struct fsck *f, struct fsck_worker *wk, uint64_t nid,
		uint8_t ftype, const char *path, struct kiln_rinode *ri)
{
	struct kiln_diag d;

	if (kiln_inode_load(&f->img, nid, ri, &d)) {
		fsck_error(f, path, "nid %llu: %s", (unsigned long long)nid,
			   d.msg);
		return -1;
	}
	if (erofs_ftype(ri->mode) != ftype) {
		fsck_error(f, path, "nid %llu: directory entry says file type "
			   "%u, the inode mode 0%o", (unsigned long long)nid,
			   ftype, ri->mode);
		return -1;
	}
	if (kiln_xattr_each(&f->img, ri, NULL, NULL, &d)) {
		fsck_error(f, path, "nid %llu: %s", (unsigned long long)nid,
			   d.msg);
		return -1;
	}
	/* link counts are compared once all is read: note it, lock-free */
	if (wk->nnl == wk->nl_cap) {
		wk->nl_cap = wk->nl_cap ? 2 * wk->nl_cap : 1024;
		wk->nl = xrealloc(wk->nl, wk->nl_cap * sizeof(*wk->nl));
	}
	wk->nl[wk->nnl].nid = nid;
	wk->nl[wk->nnl++].nlink = ri->nlink;
	return 0;
}

struct dir_walk {
	struct fsck *f;
	const char *path;
	uint64_t nid, parent;
	bool dot, dotdot;
	uint32_t subdirs;
	struct file_job *group;		/* files not queued yet */
	int dfd;			/* for fsck_precreate, or -1 */
};

static char *child_path(const char *dir, const char *name, size_t len)
{
	size_t dl = strlen(dir);
	char *p = xmalloc(dl + len + 2);

	memcpy(p, dir, dl);
	p[dl == 1 ? 0 : dl] = '/';
	memcpy(p + (dl == 1 ? 1 : dl + 1), name, len);
	p[(dl == 1 ? 1 : dl + 1) + len] = 0;
	return p;
}

/* With several workers, a regular file is created by its directory's job
 * (fsck_open_dir says why); the file job reopens it. */
static void precreate(struct dir_walk *w, const char *name, size_t len,
		      struct file_ref *r)
{
	char base[EROFS_NAME_LEN + 1];

	r->made = NOT_MADE;
	if (w->dfd < 0 || r->ftype != EROFS_FT_REG_FILE)
		return;
	memcpy(base, name, len);
	base[len] = 0;
	r->made = fsck_precreate(w->f, w->dfd, base, fsck_rel(r->path),
				 &r->id) ? MAKE_FAILED : MADE;
}

static int dirent_cb(void *arg, const char *name, size_t len, uint64_t nid,
		     uint8_t ftype)
{
	struct dir_walk *w = arg;
	struct fsck *f = w->f;
	struct fsck_node *n;
	char *path;
	bool first;

	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.')) {
		bool dot = len == 1;
		uint64_t want = dot ? w->nid : w->parent;

		if (nid != want || ftype != EROFS_FT_DIR)
			fsck_error(f, w->path, "'%s' names nid %llu, not %llu",
				   dot ? "." : "..", (unsigned long long)nid,
				   (unsigned long long)want);
		*(dot ? &w->dot : &w->dotdot) = true;
		return 0;
	}
	if (memchr(name, '/', len)) {
		fsck_error(f, w->path, "entry '%.*s' contains '/': refused",
			   (int)len, name);
		return 0;
	}
	path = child_path(w->path, name, len);
	/*
	 * Paths are kept whole (messages, extraction below DIR), so one over
	 * PATH_MAX less its leading '/' is where fsck stops: not damage (the
	 * kernel walks any depth), but not checked either, so not clean.
	 */
	if (strlen(path) > 4096) {
		fsck_error(f, path, "path over 4095 bytes: not checked "
			   "(fsck.erofs's limit)");
		free(path);
		if (ftype == EROFS_FT_DIR)
			w->subdirs++;	/* its link count is not at fault */
		return 0;
	}
	pthread_mutex_lock(&f->lock);
	n = fsck_node(f, nid);
	n->refs++;
	first = !n->path;
	if (ftype == EROFS_FT_DIR)
		n->is_dir = true;
	if (first) {
		n->path = path;		/* the node owns it, jobs borrow it */
	} else {
		/* messages about the node name its least path: the first
		 * one found depends on the order threads ran in */
		if (!n->alt || strcmp(path, n->alt) < 0) {
			free(n->alt);
			n->alt = xstrdup(path);
		}
	}
	if (!first && ftype != EROFS_FT_DIR && f->o->dir) {
		if (f->nlinks == f->links_cap) {
			f->links_cap = f->links_cap ? 2 * f->links_cap : 64;
			f->links = xrealloc(f->links,
					    f->links_cap * sizeof(*f->links));
		}
		f->links[f->nlinks++] = (struct fsck_link){
			.target = xstrdup(n->path), .path = path };
		path = NULL;
	}
	pthread_mutex_unlock(&f->lock);
	if (ftype == EROFS_FT_DIR)
		w->subdirs++;
	if (first && ftype == EROFS_FT_DIR) {
		submit_dir(f, nid, w->nid, path);
	} else if (first) {
		struct file_ref r = { .nid = nid, .ftype = ftype, .path = path };

		precreate(w, name, len, &r);
		add_file(f, &w->group, &r);
	}
	if (!first)
		free(path);		/* a hardlink: checked once */
	return 0;
}

static void check_dir(struct fsck *f, struct fsck_worker *wk,
		      struct dir_job *j)
{
	struct dir_walk w = { .f = f, .path = j->path, .nid = j->nid,
			      .parent = j->parent, .dfd = -1 };
	struct kiln_rinode ri;
	struct kiln_diag d;
	uint8_t *data;
	bool made;

	if (load(f, wk, j->nid, EROFS_FT_DIR, j->path, &ri))
		return;
	if (kiln_read_all(&f->img, &ri, wk->x, KILN_MAX_DIR_SIZE, &data, &d)) {
		fsck_error(f, j->path, "nid %llu: %s",
			   (unsigned long long)j->nid, d.msg);
		return;
	}
	/* the directory's own fd, opened without following a symlink */
	if (fsck_extracting(f) && fsck_make_dir(f, fsck_rel(j->path)) == 0) {
		w.dfd = fsck_open_dir(f, fsck_rel(j->path));
		if (w.dfd < 0)
			fsck_out_fail(f, fsck_rel(j->path), "open the directory");
	}
	made = w.dfd >= 0;
	if (f->o->workers < 2 && w.dfd >= 0) {
		close(w.dfd);	/* one worker: files are created in order */
		w.dfd = -1;
	}
	if (kiln_dir_each(&f->img, &ri, data, dirent_cb, &w, &d))
		fsck_error(f, j->path, "nid %llu: %s",
			   (unsigned long long)j->nid, d.msg);
	else if (!w.dot || !w.dotdot)
		fsck_error(f, j->path, "directory without '.' or '..'");
	flush_files(f, &w.group);
	if (w.dfd >= 0)
		close(w.dfd);
	free(data);
	pthread_mutex_lock(&f->lock);
	fsck_node(f, j->nid)->subdirs = w.subdirs;
	f->dirs_seen++;
	f->logical += ri.size;
	if (made) {	/* its metadata goes on after its children */
		if (f->ndirs == f->dirs_cap) {
			f->dirs_cap = f->dirs_cap ? 2 * f->dirs_cap : 64;
			f->dirs = xrealloc(f->dirs, f->dirs_cap * sizeof(*f->dirs));
		}
		f->dirs[f->ndirs++] = (struct fsck_dirmeta){
			.path = xstrdup(fsck_rel(j->path)), .ri = ri };
	}
	pthread_mutex_unlock(&f->lock);
}

static void dir_fn(struct kiln_job *job, void *ctx)
{
	struct dir_job *j = (struct dir_job *)job;

	if (ctx)
		check_dir(j->f, ctx, j);
	else
		fsck_msg(j->f, FSCK_ENV, j->path, "not checked: a worker "
			 "could not start (out of memory)");
	free(j);
}

static void check_special(struct fsck *f, struct fsck_worker *wk,
			  struct file_ref *r, const struct kiln_rinode *ri)
{
	struct kiln_diag d;
	uint8_t *target = NULL;

	if (S_ISLNK(ri->mode)) {
		if (kiln_read_all(&f->img, ri, wk->x, 4095, &target, &d)) {
			fsck_error(f, r->path, "nid %llu: %s",
				   (unsigned long long)r->nid, d.msg);
			return;
		}
		if (strlen((char *)target) != ri->size) {
			fsck_error(f, r->path, "symlink target contains a NUL");
			free(target);
			return;
		}
	}
	if (fsck_extracting(f) && !fsck_make_special(f, fsck_rel(r->path), ri,
					    (char *)target)) {
		fsck_set_meta(f, fsck_rel(r->path), ri, -1);
		fsck_set_xattrs(f, fsck_rel(r->path), ri, -1);
	}
	free(target);
	wk->others++;
	wk->logical += ri->size;
}

static void check_file(struct fsck *f, struct fsck_worker *wk,
		       struct file_ref *r, int dfd)
{
	struct kiln_rinode ri;
	int out = -1;

	/* what the directory's job made goes, unless it gets its data:
	 * the tree must not depend on whether it was made early */
	if (load(f, wk, r->nid, r->ftype, r->path, &ri)) {
		if (r->made == MADE)
			fsck_remove(f, fsck_rel(r->path));
		return;
	}
	if (!S_ISREG(ri.mode)) {
		check_special(f, wk, r, &ri);
		return;
	}
	if (fsck_extracting(f) && r->made != MAKE_FAILED)
		out = fsck_open_file(f, dfd, fsck_rel(r->path),
				     r->made == MADE ? &r->id : NULL);
	else if (r->made == MADE)	/* extraction stopped since */
		fsck_remove(f, fsck_rel(r->path));
	fsck_file_data(f, wk, &ri, r->path, out);
}

static void file_fn(struct kiln_job *job, void *ctx)
{
	struct file_job *j = (struct file_job *)job;
	/* a group's files share a directory: open it once */
	int dfd = fsck_extracting(j->f) ?
		  fsck_open_parent(j->f, fsck_rel(j->file[0].path)) : -1;

	for (unsigned int i = 0; i < j->n; i++) {
		if (ctx) {
			check_file(j->f, ctx, &j->file[i], dfd);
			continue;
		}
		fsck_msg(j->f, FSCK_ENV, j->file[i].path, "not checked: a "
			 "worker could not start (out of memory)");
		if (j->file[i].made == MADE)
			fsck_remove(j->f, fsck_rel(j->file[i].path));
	}
	if (dfd >= 0)
		close(dfd);
	free(j);
}

static void *worker_init(void *arg)
{
	struct fsck *f = arg;
	struct fsck_worker *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->f = f;
	w->x = kiln_dctx_new(&f->img);
	if (!w->x) {
		free(w);
		return NULL;
	}
	return w;
}

static void worker_exit(void *ctx)
{
	struct fsck_worker *w = ctx;
	struct fsck *f = w->f;

	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < w->nnl; i++) {
		struct fsck_node *n = fsck_node(f, w->nl[i].nid);

		n->nlink = w->nl[i].nlink;
		n->loaded = true;
	}
	f->files += w->files;
	f->others += w->others;
	f->logical += w->logical;
	f->physical += w->physical;
	pthread_mutex_unlock(&f->lock);
	free(w->nl);
	free(w->ext.e);
	kiln_dctx_free(w->x);
	free(w->buf);
	free(w);
}

/*
 * The packed inode whole, not only where files' fragments point: the
 * kernel maps it as one file, so an index past the image fails every
 * file with a fragment, however little of it fsck would have read.
 */
struct packed_job {
	struct kiln_job job;
	struct fsck *f;
};

static void packed_fn(struct kiln_job *job, void *ctx)
{
	struct packed_job *j = (struct packed_job *)job;

	if (ctx)
		fsck_file_data(j->f, ctx, j->f->img.packed, FSCK_PACKED_PATH, -1);
	else
		fsck_msg(j->f, FSCK_ENV, FSCK_PACKED_PATH, "not checked: a "
			 "worker could not start (out of memory)");
	free(j);
}

int fsck_walk(struct fsck *f)
{
	uint64_t root = f->img.sb.root_nid;
	struct fsck_node *n;

	pthread_mutex_init(&f->lock, NULL);
	fsck_size_nodes(f);
	fsck_pclusters_init(f);
	if (kiln_wq_start(&f->wq, f->o->workers, worker_init, worker_exit, f))
		return -1;
	pthread_mutex_lock(&f->lock);
	n = fsck_node(f, root);
	n->is_dir = true;
	n->refs = 1;		/* the mount reaches it: an entry is a loop */
	n->path = xstrdup("/");
	submit_dir(f, root, root, n->path);
	pthread_mutex_unlock(&f->lock);
	if (f->img.packed) {
		struct packed_job *j = xcalloc(1, sizeof(*j));

		*j = (struct packed_job){
			.job = { .fn = packed_fn, .detached = true }, .f = f };
		kiln_wq_submit(&f->wq, &j->job);
	}
	kiln_wq_drain(&f->wq);
	kiln_wq_stop(&f->wq);
	fsck_check_links(f);
	fsck_pclusters_check(f);
	return 0;
}

void fsck_free(struct fsck *f)
{
	for (size_t i = 0; i < f->nodes_cap; i++) {
		free(f->nodes[i].path);
		free(f->nodes[i].alt);
	}
	for (size_t i = 0; i < f->nmsgs; i++) {
		free(f->msgs[i].path);
		free(f->msgs[i].text);
	}
	for (size_t i = 0; i < f->nlinks; i++) {
		free(f->links[i].target);
		free(f->links[i].path);
	}
	for (size_t i = 0; i < f->ndirs; i++)
		free(f->dirs[i].path);
	free(f->nodes);
	free(f->msgs);
	free(f->links);
	free(f->dirs);
	fsck_pclusters_free(f);
	pthread_mutex_destroy(&f->lock);
}

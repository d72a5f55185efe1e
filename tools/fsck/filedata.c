/* SPDX-License-Identifier: MIT */
/*
 * A regular file's data. The reader maps it a window of extents at a time;
 * each window is decoded (and, with --extract=DIR, written) by the thread
 * that mapped it or, when the file has more windows and workers are free,
 * queued as a batch for any worker. Memory is bounded by the workers, not
 * by the image: an index may name far more extents than the image has
 * bytes, so no list of a whole file is ever kept. What is alive at once:
 * one window per mapping thread, at most QUEUED_PER_WORKER windows per
 * worker queued, one extent buffer per worker.
 *
 * The file's verdict does not depend on --workers: every extent below the
 * lowest one found bad is decoded, so the one reported is that lowest one
 * (a window the reader cannot map counts as bad at its start).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fsck.h"
#include "kiln.h"
#include "common/util.h"

/* A window: enough data to keep a worker busy for a while. */
#define BATCH_BYTES	(4u << 20)
/*
 * Files with queued windows keep their output fd until the last one is
 * done; past this many, a file's windows are all decoded by the thread
 * that maps them, so a directory of large files cannot exhaust the fds.
 */
#define MAX_BIG_FILES	64
/*
 * Queued windows, per worker: enough that every worker has one while a
 * file is being mapped. Past it, the mapping thread decodes the window
 * itself instead of queuing it, so the queue cannot grow with the file.
 */
#define QUEUED_PER_WORKER 4

/* One file's data, shared by its batches; the last one finishes the file. */
struct file_data {
	struct fsck *f;
	struct kiln_rinode ri;
	const char *path;		/* the node's, alive until fsck_free */
	int out;			/* --extract: the file being written */
	unsigned int left;		/* references: batches and the mapper */
	uint64_t written;		/* end of the last data written */
	uint64_t physical;		/* bytes stored, holes not counted */
	uint64_t bad_la;		/* the lowest extent that failed */
	char *bad_msg;			/* and why */
	bool drop;			/* the output is not right: removed */
	bool on_heap;			/* batches outlive the mapping call */
};

struct batch_job {
	struct kiln_job job;
	struct file_data *fd;
	struct kiln_extents ext;	/* its own window */
};

static void finish_file(struct file_data *fd, struct fsck_worker *wk)
{
	struct fsck *f = fd->f;
	const char *rel = fsck_rel(fd->path);

	if (fd->bad_msg) {
		fsck_error(f, fd->path, "nid %llu: %s",
			   (unsigned long long)fd->ri.nid, fd->bad_msg);
		free(fd->bad_msg);
		fd->drop = true;
	}
	if (fd->out >= 0 && fd->drop) {
		close(fd->out);		/* a file that is not right goes */
		fsck_remove(f, rel);
		fd->out = -1;
	}
	if (fd->out >= 0) {
		/* the size, when a hole ends the file */
		if (fd->written < fd->ri.size &&
		    ftruncate(fd->out, (off_t)fd->ri.size))
			fsck_out_fail(f, rel, "set the size");
		/* chown drops security.capability: xattrs last */
		fsck_set_meta(f, rel, &fd->ri, fd->out);
		fsck_set_xattrs(f, rel, &fd->ri, fd->out);
		close(fd->out);
	}
	if (wk) {		/* NULL: a worker that could not start */
		/* the packed inode is no file, but its blocks are stored */
		if (!f->img.packed || fd->ri.nid != f->img.packed->nid) {
			wk->files++;
			wk->logical += fd->ri.size;
		}
		wk->physical += fd->physical;
	}
	if (fd->on_heap) {
		__atomic_sub_fetch(&f->big_files, 1, __ATOMIC_RELAXED);
		free(fd);
	}
}

static void put_file(struct file_data *fd, struct fsck_worker *wk)
{
	if (!__atomic_sub_fetch(&fd->left, 1, __ATOMIC_ACQ_REL))
		finish_file(fd, wk);
}

static bool zero_block(const uint8_t *p, size_t n)
{
	return !n || (!p[0] && !memcmp(p, p + 1, n - 1));
}

/*
 * Writes data at off, leaving out the 4 KiB blocks that are all zeros:
 * holes stay holes (the file gets its size at the end).
 */
static int write_sparse(int out, const uint8_t *p, uint64_t len, uint64_t off,
			uint64_t *written)
{
	uint64_t pos = 0, run = 0, end;

	while (pos < len) {
		uint64_t n = 4096 - ((off + pos) & 4095);

		n = n < len - pos ? n : len - pos;
		if (zero_block(p + pos, n)) {
			if (pos > run && pwrite_all(out, p + run, pos - run, off + run))
				return -1;
			run = pos + n;
		}
		pos += n;
	}
	if (pos == run)
		return 0;
	end = off + pos;	/* batches run in parallel: keep the largest */
	for (uint64_t w = __atomic_load_n(written, __ATOMIC_RELAXED); w < end &&
	     !__atomic_compare_exchange_n(written, &w, end, false,
					  __ATOMIC_RELAXED, __ATOMIC_RELAXED);)
		;
	return pwrite_all(out, p + run, pos - run, off + run);
}

static void bad_extent(struct file_data *fd, uint64_t la, const char *msg)
{
	pthread_mutex_lock(&fd->f->lock);
	if (la < fd->bad_la) {
		free(fd->bad_msg);
		fd->bad_msg = xstrdup(msg);
		__atomic_store_n(&fd->bad_la, la, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&fd->f->lock);
}

/* Decodes (and writes) one window. */
static void run_extents(struct file_data *fd, struct fsck_worker *wk,
			const struct kiln_extents *ext)
{
	struct kiln_diag d;

	for (size_t i = 0; i < ext->nr; i++) {
		const struct kiln_fext *e = &ext->e[i];

		/* every extent below a bad one is decoded, so the one
		 * reported is the lowest, whatever the batches' timing */
		if (e->la > __atomic_load_n(&fd->bad_la, __ATOMIC_RELAXED))
			break;
		if (e->kind == KILN_EXT_HOLE)
			continue;	/* left a hole; ftruncate sets the size */
		if (wk->cap < e->llen) {
			/* grown on demand: most extents are small */
			free(wk->buf);
			wk->cap = e->llen;
			wk->buf = xmalloc(wk->cap);
		}
		if (kiln_fext_read(&fd->f->img, wk->x, e, wk->buf, &d)) {
			bad_extent(fd, e->la, d.msg);
			break;
		}
		/* after a failed write the check goes on, the output not */
		if (fd->out >= 0 && !__atomic_load_n(&fd->drop, __ATOMIC_RELAXED) &&
		    write_sparse(fd->out, wk->buf, e->llen, e->la, &fd->written)) {
			fsck_out_fail(fd->f, fsck_rel(fd->path), "write");
			__atomic_store_n(&fd->drop, true, __ATOMIC_RELAXED);
		}
	}
}

static void batch_fn(struct kiln_job *job, void *ctx)
{
	struct batch_job *b = (struct batch_job *)job;
	struct fsck *f = b->fd->f;

	if (ctx) {
		run_extents(b->fd, ctx, &b->ext);
	} else if (b->ext.nr) {
		fsck_msg(f, FSCK_ENV, b->fd->path, "not checked from %llu: a "
			 "worker could not start (out of memory)",
			 (unsigned long long)b->ext.e[0].la);
		__atomic_store_n(&b->fd->drop, true, __ATOMIC_RELAXED);
	}
	put_file(b->fd, ctx);
	free(b->ext.e);
	free(b);
	__atomic_sub_fetch(&f->queued, 1, __ATOMIC_RELAXED);
}

/* Queues the window in wk->ext, which the batch takes over; or -1. */
static int queue_window(struct file_data *fd, struct fsck_worker *wk)
{
	struct fsck *f = fd->f;
	struct batch_job *b;

	if (__atomic_add_fetch(&f->queued, 1, __ATOMIC_RELAXED) >
	    QUEUED_PER_WORKER * f->o->workers) {
		__atomic_sub_fetch(&f->queued, 1, __ATOMIC_RELAXED);
		return -1;
	}
	b = xcalloc(1, sizeof(*b));
	*b = (struct batch_job){ .job = { .fn = batch_fn, .detached = true },
				 .fd = fd, .ext = wk->ext };
	wk->ext = (struct kiln_extents){ 0 };
	__atomic_add_fetch(&fd->left, 1, __ATOMIC_ACQ_REL);
	kiln_wq_submit(&f->wq, &b->job);
	return 0;
}

/* A file of more than one window may share them out: onto the heap. */
static struct file_data *share(struct file_data *local)
{
	struct fsck *f = local->f;
	struct file_data *fd;

	if (f->o->workers < 2 ||
	    __atomic_load_n(&f->big_files, __ATOMIC_RELAXED) >= MAX_BIG_FILES)
		return local;
	fd = xmalloc(sizeof(*fd));
	*fd = *local;
	fd->on_heap = true;
	__atomic_add_fetch(&f->big_files, 1, __ATOMIC_RELAXED);
	return fd;
}

/*
 * Maps the file window by window. The mapping holds a reference on the
 * file, as does each queued batch: whoever drops the last one finishes it.
 */
void fsck_file_data(struct fsck *f, struct fsck_worker *wk,
		    const struct kiln_rinode *ri, const char *path, int out)
{
	struct file_data local = { .f = f, .ri = *ri, .path = path,
				   .out = out, .left = 1,
				   .bad_la = UINT64_MAX };
	struct file_data *fd = &local;
	struct kiln_fpos pos = { 0 };
	struct kiln_diag d;

	do {
		/* nothing past a bad extent can change the verdict */
		if (__atomic_load_n(&fd->bad_la, __ATOMIC_RELAXED) < pos.la)
			break;
		if (kiln_file_map(&f->img, ri, &pos, &wk->ext,
				  KILN_WINDOW_EXTENTS, BATCH_BYTES, &d)) {
			bad_extent(fd, pos.la, d.msg);
			break;
		}
		for (size_t i = 0; i < wk->ext.nr; i++) {
			if (wk->ext.e[i].kind != KILN_EXT_HOLE)
				fd->physical += wk->ext.e[i].plen;
			fsck_pcluster_seen(f, &wk->ext.e[i]);
		}
		if (!fd->on_heap && pos.la < ri->size)
			fd = share(fd);
		if (!fd->on_heap || queue_window(fd, wk))
			run_extents(fd, wk, &wk->ext);
	} while (pos.la < ri->size);
	put_file(fd, wk);
}

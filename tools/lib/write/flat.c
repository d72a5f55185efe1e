/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/profile.h"
#include "common/util.h"
#include "format/erofs_fs.h"
#include "kiln.h"
#include "layout.h"
#include "flat.h"
#include "source.h"

#define CHUNK (1u << 20)
#define MAX_BLKSZ 65536u	/* EROFS: a block is at most a 64 KiB page */

struct flat_job {
	struct kiln_job job;
	struct kiln_flat *f;
	const struct kiln_inode *in;
};

static bool all_zero(const uint8_t *p, size_t n)
{
	return !n || (!p[0] && !memcmp(p, p + 1, n - 1));
}

static int write_failed(const struct kiln_flat *f)
{
	kiln_err("%s: write failed: %s", f->image, strerror(errno));
	return -1;
}

/* Zeros from byte at to the end of its block. */
static int pad_block(const struct kiln_flat *f, uint64_t at)
{
	static const uint8_t zero[MAX_BLKSZ];

	return pwrite_all(f->fd, zero, f->blksz - at % f->blksz, at) ?
	       write_failed(f) : 0;
}

int kiln_flat_emit(const struct kiln_flat *f, const struct kiln_inode *in,
		   const uint8_t *p, size_t len, uint64_t off)
{
	uint64_t blkbytes = in->datalayout == EROFS_INODE_FLAT_INLINE ?
			    in->size - in->inline_size : in->size;
	uint64_t base = (uint64_t)in->startblk * f->blksz;

	while (len) {
		size_t n;

		if (off >= blkbytes) {
			memcpy(in->rec + kiln_inode_base_size(in) +
			       (off - blkbytes), p, len);
			return 0;
		}
		/* one block at a time, so zero blocks can be skipped */
		n = f->blksz - off % f->blksz;
		if (n > len)
			n = len;
		if (off + n > blkbytes)
			n = (size_t)(blkbytes - off);
		if ((f->zero_fill || !all_zero(p, n)) &&
		    pwrite_all(f->fd, p, n, base + off))
			return write_failed(f);
		if (f->zero_fill && off + n == blkbytes && blkbytes % f->blksz &&
		    pad_block(f, base + blkbytes))
			return -1;
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

/* Copies [start, end) of the source file, which SEEK_DATA says has data. */
static int copy_range(const struct kiln_flat *f, const struct kiln_inode *in,
		      struct kiln_src *src, uint8_t *buf, uint64_t start,
		      uint64_t end)
{
	while (start < end) {
		size_t want = end - start < CHUNK ? (size_t)(end - start) : CHUNK;
		ssize_t n = kiln_src_pread(src, buf, want, start);

		if (n < 0) {
			kiln_err("%s: read failed: %s", kiln_src_name(src, in),
				 strerror(errno));
			return -1;
		}
		if ((size_t)n != want) {
			kiln_err("%s: file changed while being read",
				 in->srcpath);
			return -1;
		}
		if (kiln_flat_emit(f, in, buf, want, start))
			return -1;
		start += want;
	}
	return 0;
}

/* Walks the data segments of the source, leaving holes as zeros. */
static int copy_segments(const struct kiln_flat *f,
			 const struct kiln_inode *in, struct kiln_src *src,
			 uint8_t *buf)
{
	uint64_t pos = 0;

	/* holes are written as zeros; one block or less has none */
	if (f->zero_fill || in->size <= f->blksz)
		return copy_range(f, in, src, buf, 0, in->size);
	while (pos < in->size) {
		off_t data = kiln_src_seek(src, pos, SEEK_DATA);
		off_t hole;

		if (data < 0 && errno == ENXIO)
			break;		/* only a hole is left */
		if (data < 0)	/* no SEEK_DATA here: copy it all */
			return copy_range(f, in, src, buf, pos, in->size);
		hole = kiln_src_seek(src, (uint64_t)data, SEEK_HOLE);
		if (hole < 0 || (uint64_t)hole > in->size)
			hole = (off_t)in->size;
		if (copy_range(f, in, src, buf, (uint64_t)data, (uint64_t)hole))
			return -1;
		pos = (uint64_t)hole;
	}
	return 0;
}

static int copy_file(const struct kiln_flat *f, const struct kiln_inode *in)
{
	struct kiln_src src;
	uint8_t *buf;
	int ret = -1;

	if (kiln_src_open(in, &src)) {
		kiln_err("%s: %s", in->srcpath, strerror(errno));
		return -1;
	}
	buf = xmalloc(in->size < CHUNK ? (size_t)in->size : CHUNK);
	if (!copy_segments(f, in, &src, buf)) {
		if (kiln_src_unchanged(in, &src))
			ret = 0;
		else
			kiln_err("%s: file changed while being read",
				 kiln_src_name(&src, in));
	}
	free(buf);
	kiln_src_close(&src);
	return ret;
}

static void run_copy(struct kiln_job *job, void *ctx)
{
	struct flat_job *j = (struct flat_job *)job;
	uint64_t t0 = kiln_prof_start();

	(void)ctx;
	/* after one failure the build is lost: the rest need not be read */
	if (!atomic_load(&j->f->failed) && copy_file(j->f, j->in))
		atomic_store(&j->f->failed, true);
	kiln_prof_add(KILN_PROF_FLAT, t0);
	free(j);
}

void kiln_flat_queue(struct kiln_flat *f, struct kiln_workqueue *wq,
		     const struct kiln_inode *in)
{
	struct flat_job *j = xcalloc(1, sizeof(*j));

	j->f = f;
	j->in = in;
	j->job.fn = run_copy;
	j->job.detached = true;
	kiln_wq_submit(wq, &j->job);
}

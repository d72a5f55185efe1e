/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include "chunked.h"
#include "common/fullio.h"
#include "common/util.h"
#include "format/erofs_fs.h"
#include "format/le.h"
#include "kiln.h"
#include "layout.h"
#include "source.h"

#define PIECE (1u << 20)	/* a chunk is read this much at a time */
#define MAX_INDEX (1u << 30)	/* bytes of one file's chunk index */

void kiln_chunked_init(struct kiln_chunked *c, int fd, const char *image,
		       const struct kiln_mkfs_opts *o, struct kiln_writeback *wb,
		       uint64_t next_blk)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->image = image;
	c->blkszbits = o->blkszbits;
	c->chunkbits = o->chunkbits;
	c->indexes = o->chunk_indexes;
	c->wb = wb;
	c->next_blk = next_blk;
	c->dirty_end = next_blk << o->blkszbits;
	kiln_dedupe_init(&c->dd, fd, o->blkszbits);
	c->buf = xmalloc(PIECE);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	return !n || (!p[0] && !memcmp(p, p + 1, n - 1));
}

/*
 * Bytes p[0..n) to image byte pos. Zeros are left unwritten (a new file
 * reads zeros there) unless a discarded chunk may lie under them.
 */
static int put(struct kiln_chunked *c, const uint8_t *p, size_t n,
	       uint64_t pos)
{
	if (!c->zero_fill && pos >= c->dirty_end && all_zero(p, n))
		return 0;
	if (pwrite_all(c->fd, p, n, pos)) {
		kiln_err("%s: write failed: %s", c->image, strerror(errno));
		return -1;
	}
	if (pos + n > c->dirty_end)
		c->dirty_end = pos + n;
	return 0;
}

/* No data in [off, off + len) by SEEK_DATA: a hole, without reading it. */
static bool sparse(const struct kiln_src *src, uint64_t off, uint64_t len)
{
	off_t data = kiln_src_seek(src, off, SEEK_DATA);

	return data < 0 ? errno == ENXIO : (uint64_t)data >= off + len;
}

/* Copies [off, off + len) to c->next_blk; *zero: it was all zeros. */
static int copy_chunk(struct kiln_chunked *c, const struct kiln_inode *in,
		      struct kiln_src *src, uint64_t off, uint64_t len,
		      struct kiln_pcl *pcl, bool *zero)
{
	uint64_t at = c->next_blk << c->blkszbits;
	uint32_t blksz = 1u << c->blkszbits;
	uint64_t h = len;

	*zero = true;
	for (uint64_t done = 0; done < len;) {
		size_t n = len - done < PIECE ? (size_t)(len - done) : PIECE;
		ssize_t got = kiln_src_pread(src, c->buf, n, off + done);

		if (got != (ssize_t)n) {
			kiln_err("%s: %s", kiln_src_name(src, in), got < 0 &&
				 errno != EAGAIN ? strerror(errno) :
				 "file changed while being read");
			return -1;
		}
		h = kiln_hash64(c->buf, n, h);
		*zero = *zero && all_zero(c->buf, n);
		if (put(c, c->buf, n, at + done))
			return -1;
		done += n;
	}
	if (len % blksz) {	/* the last block's padding */
		memset(c->buf, 0, blksz - len % blksz);
		if (put(c, c->buf, blksz - len % blksz, at + len))
			return -1;
	}
	pcl->hash = h;
	return 0;
}

/* One chunk: *addr its first block, or EROFS_NULL_ADDR for a hole. */
static int write_chunk(struct kiln_chunked *c, const struct kiln_inode *in,
		       struct kiln_src *src, uint64_t off, uint64_t len,
		       uint32_t *addr)
{
	struct kiln_pcl pcl = {
		.llen = len, .plain = true,
		.nblocks = (uint32_t)((len + (1u << c->blkszbits) - 1) >>
				      c->blkszbits),
	};
	bool zero;

	*addr = EROFS_NULL_ADDR;
	if (sparse(src, off, len))
		return 0;
	if (c->next_blk + pcl.nblocks > EROFS_MAX_BLOCKS)
		return kiln_err_too_large(c->blkszbits);
	/* a chunk that failed to read is an error, never a hole */
	if (copy_chunk(c, in, src, off, len, &pcl, &zero))
		return -1;
	if (zero)
		return 0;
	if (kiln_dedupe_find_written(&c->dd, &pcl, (uint32_t)c->next_blk)) {
		*addr = pcl.blkaddr;
		return 0;
	}
	*addr = pcl.blkaddr = (uint32_t)c->next_blk;
	kiln_dedupe_add(&c->dd, &pcl);
	c->next_blk += pcl.nblocks;
	kiln_writeback_add(c->wb, (uint64_t)pcl.nblocks << c->blkszbits);
	return 0;
}

static bool follows(uint32_t prev, uint32_t cur, uint64_t cblks)
{
	if (prev == EROFS_NULL_ADDR || cur == EROFS_NULL_ADDR)
		return prev == cur;
	return (uint64_t)prev + cblks == cur;
}

/*
 * Where runs of chunks lie one after the other (holes after holes), fewer
 * larger chunks say the same with a shorter index: a chunk 2^k times as
 * large fits if every run but the last is a multiple of 2^k chunks long.
 * Returns the new chunkbits; a[] and *n are rewritten.
 */
static unsigned int merge_chunks(uint32_t *a, uint64_t *n, unsigned int bits,
				 unsigned int blkszbits, uint64_t size)
{
	uint64_t cblks = 1ull << (bits - blkszbits), f = 0, run = 1, step;
	unsigned int nb = bits;

	for (uint64_t i = 1; i < *n; i++, run++) {
		if (follows(a[i - 1], a[i], cblks))
			continue;
		if (!f || (run & -run) < f)	/* largest power of two dividing */
			f = run & -run;
		run = 0;
	}
	while (nb < blkszbits + EROFS_CHUNK_FORMAT_BLKBITS_MASK &&
	       (1ull << nb) < size && (!f || (2ull << (nb - bits)) <= f))
		nb++;
	step = 1ull << (nb - bits);
	*n = (size + (1ull << nb) - 1) >> nb;
	for (uint64_t j = 0; j < *n; j++)
		a[j] = a[j * step];
	return nb;
}

static void encode_index(const struct kiln_chunked *c, struct kiln_inode *in,
			 uint8_t *rec, const uint32_t *a, uint64_t n)
{
	uint32_t unit = c->indexes ? 8 : 4;
	uint8_t *p = rec + round_up(kiln_inode_base_size(in), unit);

	for (uint64_t i = 0; i < n; i++, p += unit)	/* device 0, advise 0 */
		put_le32(p + unit - 4, a[i]);
}

static int write_chunks(struct kiln_chunked *c, struct kiln_inode *in,
			struct kiln_src *src, uint32_t *a)
{
	uint64_t csize = 1ull << c->chunkbits;

	for (uint64_t off = 0, i = 0; off < in->size; off += csize, i++)
		if (write_chunk(c, in, src, off, in->size - off < csize ?
				in->size - off : csize, &a[i]))
			return -1;
	if (!kiln_src_unchanged(in, src)) {
		kiln_err("%s: file changed while being read",
			 kiln_src_name(src, in));
		return -1;
	}
	return 0;
}

/*
 * A file whose chunks lie one after another (none a hole) needs no index:
 * it is flat, from its first block, and if its last block is the last one
 * written, and written by it (from first on, where it began), its partial
 * last block goes inline when it fits, as it would have without
 * --chunksize (the blocks before may be an earlier file's: a copy). A
 * chunk-based file has no inline tail, so on a tree of source files that
 * costs most of a block per file (on the linux tree, 6%). A block an
 * earlier file wrote stays, even if it ends where the next goes: that
 * file points at it. Returns whether it did; *ret: its result.
 */
static bool as_flat(struct kiln_chunked *c, struct kiln_inode *in,
		    const uint32_t *a, uint64_t n, uint64_t first,
		    struct kiln_records *r, int *ret)
{
	uint32_t blksz = 1u << c->blkszbits;
	uint64_t cblks = 1ull << (c->chunkbits - c->blkszbits);
	uint64_t nb = (in->size + blksz - 1) >> c->blkszbits;
	uint32_t base = kiln_inode_base_size(in);
	uint32_t tail = (uint32_t)(in->size % blksz);
	uint8_t *rec;
	ssize_t got;

	for (uint64_t i = 0; i < n; i++)
		if (a[i] == EROFS_NULL_ADDR || a[i] != a[0] + i * cblks)
			return false;
	in->startblk = a[0];
	in->datalayout = EROFS_INODE_FLAT_PLAIN;
	in->inline_size = 0;
	if (tail && !in->no_inline && a[0] + nb - 1 >= first &&
	    a[0] + nb == c->next_blk &&
	    kiln_tail_inlines(base, tail, blksz, true)) {
		in->datalayout = EROFS_INODE_FLAT_INLINE;
		in->inline_size = tail;
	}
	rec = kiln_records_stage(r, in, base + in->inline_size);
	if (!tail || in->datalayout != EROFS_INODE_FLAT_INLINE)
		return true;
	/* the last block, taken back: its bytes into the record (zeros
	   past the image's end were skipped, not written) */
	c->next_blk--;
	got = pread_all(c->fd, rec + base, tail,
			(uint64_t)c->next_blk << c->blkszbits);
	if (got < 0) {
		kiln_err("%s: read failed: %s", c->image, strerror(errno));
		*ret = -1;
	}
	return true;
}

int kiln_chunked_write(struct kiln_chunked *c, struct kiln_inode *in,
		       struct kiln_records *r)
{
	uint32_t unit = c->indexes ? 8 : 4;
	uint64_t n = ((in->size - 1) >> c->chunkbits) + 1, first = c->next_blk;
	uint64_t off = round_up(kiln_inode_base_size(in), unit);
	unsigned int bits;
	struct kiln_src src;
	uint32_t *a;
	int ret;

	if (n > MAX_INDEX / unit) {
		kiln_err("%s: %llu chunks are too many for one file: choose a "
			 "larger --chunksize", in->srcpath,
			 (unsigned long long)n);
		return -1;
	}
	if (kiln_src_open(in, &src)) {
		kiln_err("%s: %s", in->srcpath, strerror(errno));
		return -1;
	}
	a = xmalloc(n * sizeof(*a));
	ret = write_chunks(c, in, &src, a);
	kiln_src_close(&src);
	if (!ret && !as_flat(c, in, a, n, first, r, &ret)) {
		bits = merge_chunks(a, &n, c->chunkbits, c->blkszbits, in->size);
		in->datalayout = EROFS_INODE_CHUNK_BASED;
		in->chunkformat = (uint16_t)((bits - c->blkszbits) |
			(c->indexes ? EROFS_CHUNK_FORMAT_INDEXES : 0));
		encode_index(c, in, kiln_records_stage(r, in,
			(uint32_t)(off + n * unit)), a, n);
	}
	free(a);
	return ret;
}

void kiln_chunked_free(struct kiln_chunked *c)
{
	kiln_dedupe_free(&c->dd);
	free(c->buf);
	c->buf = NULL;
}

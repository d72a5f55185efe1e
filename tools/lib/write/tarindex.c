/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/fullio.h"
#include "common/util.h"
#include "format/erofs_fs.h"
#include "format/le.h"
#include "layout.h"
#include "tarindex.h"

#define TAR_RECORD 512u
#define INDEX_UNIT 8u		/* chunk indexes: they name a device */
#define MAX_INDEX (1u << 30)	/* bytes of one file's chunk index */
#define CHECK_LEN 4096u		/* bytes compared with the tar's */

static struct kiln_tarmap *new_map(uint32_t nr)
{
	struct kiln_tarmap *m = xmalloc(sizeof(*m) + nr * sizeof(m->run[0]));

	m->nr = 0;
	return m;
}

/* A sparse entry's runs of data, back to back in the tar from data. */
static int sparse_runs(struct tarscan *ts, struct archive_entry *e,
		       struct kiln_inode *in, uint64_t data, int count)
{
	struct kiln_tarmap *m = new_map((uint32_t)count);
	uint64_t end = 0;
	la_int64_t off, len;

	in->tarmap = m;
	while (archive_entry_sparse_next(e, &off, &len) == ARCHIVE_OK) {
		if (off < 0 || len < 0 || (uint64_t)off < end ||
		    (uint64_t)off + (uint64_t)len > in->size)
			return tar_err(ts, in->srcpath, "bad sparse map");
		if (!len)
			continue;
		m->run[m->nr++] = (struct kiln_tarrun){
			.off = (uint64_t)off, .len = (uint64_t)len,
			.taroff = data,
		};
		data += (uint64_t)len;
		end = (uint64_t)(off + len);
	}
	return 0;
}

/*
 * The index is only as good as libarchive's idea of where data begins:
 * the first bytes it reads must be the tar's bytes there.
 */
static int check_data(struct tarscan *ts, struct archive *a,
		      const struct kiln_inode *in)
{
	const struct kiln_tarmap *m = in->tarmap;
	uint8_t buf[CHECK_LEN];
	const void *p;
	size_t len;
	la_int64_t off;
	uint32_t k = 0;
	uint64_t n;

	if (ts->tar_fd < 0 || !m->nr ||
	    archive_read_data_block(a, &p, &len, &off) != ARCHIVE_OK || !len)
		return 0;
	while (k < m->nr && (uint64_t)off >= m->run[k].off + m->run[k].len)
		k++;
	if (k == m->nr || (uint64_t)off < m->run[k].off)
		return tar_err(ts, in->srcpath, "data outside its sparse map");
	n = m->run[k].off + m->run[k].len - (uint64_t)off;
	n = n < len ? n : len;
	n = n < CHECK_LEN ? n : CHECK_LEN;
	if (pread_all(ts->tar_fd, buf, n, m->run[k].taroff +
		      ((uint64_t)off - m->run[k].off)) != (ssize_t)n ||
	    memcmp(buf, p, n))
		return tar_err(ts, in->srcpath, "cannot find its data in the "
			       "tar's bytes (index it with --tar=f instead)");
	return 0;
}

int kiln_tarindex_entry(struct tarscan *ts, struct archive *a,
			struct archive_entry *e, struct kiln_inode *in)
{
	la_int64_t pos = archive_filter_bytes(a, 0);
	int count = archive_entry_sparse_reset(e);

	if (pos < 0 || pos % TAR_RECORD)
		return tar_err(ts, in->srcpath, "data not on a 512-byte "
			       "record of the tar");
	if (count > 0) {
		if (sparse_runs(ts, e, in, (uint64_t)pos, count))
			return -1;
	} else {
		in->tarmap = new_map(1);
		in->tarmap->run[0] = (struct kiln_tarrun){
			.len = in->size, .taroff = (uint64_t)pos };
		in->tarmap->nr = 1;
	}
	return check_data(ts, a, in);
}

/*
 * The largest chunk (from one block to 2^31 of them, and no larger than
 * the file needs) that every run starts and ends on, but a run ending
 * where the file does: a chunk is then all data of one run, or a hole.
 */
static int chunk_bits(const struct kiln_inode *in, unsigned int blkszbits)
{
	const struct kiln_tarmap *m = in->tarmap;
	uint64_t edges = 0;
	unsigned int bits = blkszbits;

	for (uint32_t k = 0; k < m->nr; k++) {
		edges |= m->run[k].off;
		if (m->run[k].off + m->run[k].len != in->size)
			edges |= m->run[k].off + m->run[k].len;
		if (m->run[k].taroff % TAR_RECORD)
			return -1;
	}
	if (edges & ((1ull << blkszbits) - 1))
		return -1;
	while (bits < blkszbits + EROFS_CHUNK_FORMAT_BLKBITS_MASK &&
	       (1ull << bits) < in->size && !(edges & (1ull << bits)))
		bits++;
	return (int)bits;
}

static void put_index(uint8_t *p, uint16_t device, uint32_t blk)
{
	put_le16(p, 0);			/* startblk_hi: 48-bit images only */
	put_le16(p + 2, device);
	put_le32(p + 4, blk);
}

int kiln_tarindex_stage(struct kiln_inode *in, struct kiln_records *r,
			unsigned int blkszbits)
{
	const struct kiln_tarmap *m = in->tarmap;
	int bits = chunk_bits(in, blkszbits);
	uint64_t n, csize, base;
	uint32_t k = 0;
	uint8_t *p;

	if (bits < 0) {
		kiln_err("%s: sparse data runs not on 512-byte boundaries "
			 "cannot be indexed (use --tar=f)", in->srcpath);
		return -1;
	}
	csize = 1ull << bits;
	n = (in->size + csize - 1) >> bits;
	if (n > MAX_INDEX / INDEX_UNIT) {
		kiln_err("%s: %llu chunks are too many for one file",
			 in->srcpath, (unsigned long long)n);
		return -1;
	}
	base = round_up(kiln_inode_base_size(in), INDEX_UNIT);
	p = kiln_records_stage(r, in, (uint32_t)(base + n * INDEX_UNIT)) + base;
	for (uint64_t i = 0; i < n; i++, p += INDEX_UNIT) {
		uint64_t f = i << bits, at;

		while (k < m->nr && m->run[k].off + m->run[k].len <= f)
			k++;
		if (k == m->nr || m->run[k].off > f) {
			put_index(p, 0, EROFS_NULL_ADDR);	/* a hole */
			continue;
		}
		at = (m->run[k].taroff + (f - m->run[k].off)) / TAR_RECORD;
		if (at >= EROFS_NULL_ADDR) {
			kiln_err("%s: data past 2 TiB of the tar cannot be "
				 "indexed", in->srcpath);
			return -1;
		}
		put_index(p, 1, (uint32_t)at);
	}
	in->datalayout = EROFS_INODE_CHUNK_BASED;
	in->chunkformat = (uint16_t)((bits - (int)blkszbits) |
				     EROFS_CHUNK_FORMAT_INDEXES);
	return 0;
}

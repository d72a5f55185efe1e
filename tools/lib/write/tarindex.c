/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/fullio.h"
#include "common/util.h"
#include "format/erofs_fs.h"
#include "tarindex.h"

#define TAR_RECORD 512u
#define CHECK_LEN 4096u		/* bytes compared with the tar's */

static struct kiln_devmap *new_map(uint32_t nr)
{
	struct kiln_devmap *m = xmalloc(sizeof(*m) + nr * sizeof(m->run[0]));

	m->nr = 0;
	m->device = 1;		/* the device table's only entry */
	return m;
}

/* A sparse entry's runs of data, back to back in the tar from data. */
static int sparse_runs(struct tarscan *ts, struct archive_entry *e,
		       struct kiln_inode *in, uint64_t data, int count)
{
	struct kiln_devmap *m = new_map((uint32_t)count);
	uint64_t end = 0;
	la_int64_t off, len;

	in->devmap = m;
	while (archive_entry_sparse_next(e, &off, &len) == ARCHIVE_OK) {
		if (off < 0 || len < 0 || (uint64_t)off < end ||
		    (uint64_t)off + (uint64_t)len > in->size)
			return tar_err(ts, in->srcpath, "bad sparse map");
		if (!len)
			continue;
		m->run[m->nr++] = (struct kiln_devrun){
			.off = (uint64_t)off, .len = (uint64_t)len,
			.devoff = data,
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
		      const struct kiln_inode *in, uint64_t *got)
{
	const struct kiln_devmap *m = in->devmap;
	uint8_t buf[CHECK_LEN];
	const void *p;
	size_t len;
	la_int64_t off;
	uint32_t k = 0;
	uint64_t n;

	if (ts->tar_fd < 0 || !m->nr ||
	    archive_read_data_block(a, &p, &len, &off) != ARCHIVE_OK || !len)
		return 0;
	*got = len;
	while (k < m->nr && (uint64_t)off >= m->run[k].off + m->run[k].len)
		k++;
	if (k == m->nr || (uint64_t)off < m->run[k].off)
		return tar_err(ts, in->srcpath, "data outside its sparse map");
	n = m->run[k].off + m->run[k].len - (uint64_t)off;
	n = n < len ? n : len;
	n = n < CHECK_LEN ? n : CHECK_LEN;
	if (pread_all(ts->tar_fd, buf, n, m->run[k].devoff +
		      ((uint64_t)off - m->run[k].off)) != (ssize_t)n ||
	    memcmp(buf, p, n))
		return tar_err(ts, in->srcpath, "cannot find its data in the "
			       "tar's bytes (index it with --tar=f instead)");
	return 0;
}

/*
 * A sparse entry's data is read through (after the bytes check_data took,
 * got): its map must name no more than the tar holds, or the index would
 * point the missing runs at the next entry's bytes. Sparse files are few;
 * others are skipped, as --tar=i is meant to.
 */
static int check_sparse_len(struct tarscan *ts, struct archive *a,
			    struct archive_entry *e,
			    const struct kiln_inode *in, uint64_t got)
{
	const void *p;
	size_t len;
	la_int64_t off;
	int r;

	while ((r = archive_read_data_block(a, &p, &len, &off)) == ARCHIVE_OK)
		got += len;
	if (r != ARCHIVE_EOF)
		return tar_err(ts, in->srcpath, archive_error_string(a));
	return tar_check_data_len(ts, e, in, got);
}

int kiln_tarindex_entry(struct tarscan *ts, struct archive *a,
			struct archive_entry *e, struct kiln_inode *in)
{
	la_int64_t pos = archive_filter_bytes(a, 0);
	int count = archive_entry_sparse_reset(e);
	uint64_t got = 0;

	if (pos < 0 || pos % TAR_RECORD)
		return tar_err(ts, in->srcpath, "data not on a 512-byte "
			       "record of the tar");
	if (count > 0) {
		if (sparse_runs(ts, e, in, (uint64_t)pos, count))
			return -1;
	} else {
		in->devmap = new_map(1);
		in->devmap->run[0] = (struct kiln_devrun){
			.len = in->size, .devoff = (uint64_t)pos };
		in->devmap->nr = 1;
	}
	return check_data(ts, a, in, &got) ||
	       (count > 0 && check_sparse_len(ts, a, e, in, got)) ? -1 : 0;
}

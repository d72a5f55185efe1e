/* SPDX-License-Identifier: MIT */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "bundle.h"

static int fail(struct archive *a, const char *what, char *err, size_t errlen)
{
	const char *s = a ? archive_error_string(a) : NULL;

	snprintf(err, errlen, "bundle: %s%s%s", what, s ? ": " : "", s ? s : "");
	return -1;
}

int bundle_in_open(struct bundle_in *b, int fd, char *err, size_t errlen)
{
	memset(b, 0, sizeof(*b));
	if (!(b->a = archive_read_new()))
		return fail(NULL, "out of memory", err, errlen);
	/* tar and nothing else: no filter, no other format is tried */
	if (archive_read_support_format_tar(b->a) != ARCHIVE_OK ||
	    archive_read_open_fd(b->a, fd, 64 * 1024) != ARCHIVE_OK) {
		fail(b->a, "not readable as tar", err, errlen);
		bundle_in_close(b);
		return -1;
	}
	return 0;
}

int bundle_in_next(struct bundle_in *b, const char *name, uint64_t size,
		   uint64_t max, uint64_t *got, char *err, size_t errlen)
{
	struct archive_entry *e;
	char what[160];
	int r = archive_read_next_header(b->a, &e);

	if (r == ARCHIVE_EOF) {
		snprintf(err, errlen, "bundle: ends before %s (cut short?)", name);
		return -1;
	}
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
		snprintf(what, sizeof(what), "cannot read the header of %s", name);
		return fail(b->a, what, err, errlen);
	}
	const char *p = archive_entry_pathname(e);
	if (!p || strcmp(p, name) != 0) {
		snprintf(err, errlen, "bundle: member '%.64s' where %s was expected",
			 p ? p : "", name);
		return -1;
	}
	int64_t sz = archive_entry_size(e);
	if (archive_entry_filetype(e) != AE_IFREG || sz < 0 ||
	    (size != UINT64_MAX && (uint64_t)sz != size) ||
	    (size == UINT64_MAX && (uint64_t)sz > max)) {
		snprintf(err, errlen, "bundle: %s is not a file of %s %llu bytes",
			 name, size == UINT64_MAX ? "at most" : "exactly",
			 (unsigned long long)(size == UINT64_MAX ? max : size));
		return -1;
	}
	b->left = (uint64_t)sz;
	if (got)
		*got = (uint64_t)sz;
	return 0;
}

ssize_t bundle_in_read(struct bundle_in *b, void *buf, size_t n,
		       char *err, size_t errlen)
{
	if (!b->left)
		return 0;
	if (n > b->left)
		n = (size_t)b->left;
	la_ssize_t r = archive_read_data(b->a, buf, n);
	if (r < 0)
		return fail(b->a, "cannot read", err, errlen);
	if (r == 0) {
		snprintf(err, errlen, "bundle: cut short");
		return -1;
	}
	b->left -= (uint64_t)r;
	return r;
}

int bundle_in_read_all(struct bundle_in *b, void *buf, char *err, size_t errlen)
{
	unsigned char *p = buf;

	while (b->left) {
		ssize_t r = bundle_in_read(b, p, b->left, err, errlen);
		if (r < 0)
			return -1;
		p += r;
	}
	return 0;
}

int bundle_in_end(struct bundle_in *b, char *err, size_t errlen)
{
	struct archive_entry *e;
	int r = archive_read_next_header(b->a, &e);

	if (r == ARCHIVE_EOF)
		return 0;
	if (r == ARCHIVE_OK || r == ARCHIVE_WARN) {
		snprintf(err, errlen, "bundle: member '%.64s' after the last payload",
			 archive_entry_pathname(e) ? archive_entry_pathname(e) : "");
		return -1;
	}
	return fail(b->a, "bad end", err, errlen);
}

void bundle_in_close(struct bundle_in *b)
{
	if (b->a)
		archive_read_free(b->a);
	b->a = NULL;
}

struct archive *bundle_out_open(int fd, char *err, size_t errlen)
{
	struct archive *a = archive_write_new();

	if (!a) {
		fail(NULL, "out of memory", err, errlen);
		return NULL;
	}
	/* ustar where it fits (every member here does), pax past that; the
	 * last block padded to 512 bytes, not libarchive's default 10240 */
	if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(a, 512) != ARCHIVE_OK ||
	    archive_write_open_fd(a, fd) != ARCHIVE_OK) {
		fail(a, "cannot start the tar stream", err, errlen);
		archive_write_free(a);
		return NULL;
	}
	return a;
}

int bundle_out_member(struct archive *a, const char *name, uint64_t size,
		      long long mtime, char *err, size_t errlen)
{
	struct archive_entry *e = archive_entry_new();

	if (!e)
		return fail(NULL, "out of memory", err, errlen);
	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, (la_int64_t)size);
	archive_entry_set_mtime(e, (time_t)mtime, 0);
	archive_entry_set_uid(e, 0);
	archive_entry_set_gid(e, 0);
	int r = archive_write_header(a, e);
	archive_entry_free(e);
	return r == ARCHIVE_OK ? 0 : fail(a, name, err, errlen);
}

int bundle_out_write(struct archive *a, const void *buf, size_t n,
		     char *err, size_t errlen)
{
	la_ssize_t r = archive_write_data(a, buf, n);

	return r == (la_ssize_t)n ? 0 : fail(a, "cannot write", err, errlen);
}

int bundle_out_close(struct archive *a, char *err, size_t errlen)
{
	int r = archive_write_close(a);

	if (r != ARCHIVE_OK)
		fail(a, "cannot finish the tar stream", err, errlen);
	archive_write_free(a);
	return r == ARCHIVE_OK ? 0 : -1;
}

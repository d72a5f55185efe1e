/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tarfeed.h"

#define TAR_BLOCK 512u
#define FEED_READ (64u << 10)
/*
 * The most kept while one entry's headers are read: libarchive takes pax
 * headers of a few MiB at most. Past this (a hostile stream) the window
 * is trimmed anyway, and a global header that fell out of it is refused.
 */
#define HEADER_KEEP (64u << 20)

/*
 * Global records that change no entry: a note (git archive's commit id),
 * the charset of names and values (read as bytes anyway), star's archive
 * type and volume records. Any other sets a default for every entry after
 * it (path, uid, mtime, an xattr...), which libarchive would drop.
 */
static bool harmless(const char *key, size_t len)
{
	static const char *const keys[] = {
		"comment", "charset", "hdrcharset", "SCHILY.archtype",
	};
	static const char *const prefixes[] = { "GNU.volume.", "SCHILY.volhdr." };

	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
		if (len == strlen(keys[i]) && !memcmp(key, keys[i], len))
			return true;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(*prefixes); i++)
		if (len >= strlen(prefixes[i]) &&
		    !memcmp(key, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

/* The key for a message: at most 64 bytes, control bytes as '?'. */
static void key_text(char *out, const uint8_t *key, size_t len)
{
	if (len > 64)
		len = 64;
	for (size_t i = 0; i < len; i++)
		out[i] = key[i] < 0x20 || key[i] == 0x7f ? '?' : (char)key[i];
	out[len] = 0;
}

/*
 * Checks a global header's records ("LEN key=value\n" each; NULs after
 * the last are padding). Any key not harmless is refused, even with an
 * empty value: GNU tar then applies the empty value, or fails. Returns
 * 0, or -1 with the reason in msg.
 */
static int check_records(const uint8_t *p, size_t n, char *msg, size_t cap)
{
	char key[65];

	while (n && *p) {
		size_t len = 0, i = 0, klen;
		const uint8_t *k, *eq;

		while (i < n && len <= n && p[i] >= '0' && p[i] <= '9')
			len = len * 10 + (size_t)(p[i++] - '0');
		if (!i || i >= n || p[i] != ' ' || len <= i + 1 || len > n ||
		    p[len - 1] != '\n')
			break;
		k = p + i + 1;
		eq = memchr(k, '=', (size_t)(p + len - 1 - k));
		if (!eq)
			break;
		klen = (size_t)(eq - k);
		if (!harmless((const char *)k, klen)) {
			key_text(key, k, klen);
			snprintf(msg, cap, "a pax global header sets \"%s\" for "
				 "every entry after it: not supported", key);
			return -1;
		}
		p += len;
		n -= len;
	}
	while (n && !*p) {
		p++;
		n--;
	}
	if (!n)
		return 0;
	snprintf(msg, cap, "a pax global header that does not parse");
	return -1;
}

/*
 * A header's size field as libarchive reads it (tar_atol): base-256 if
 * the high bit is set, else octal after any blanks, up to the first
 * character that is not a digit. -1 if negative or over 2^62.
 */
static int64_t header_size(const uint8_t *h)
{
	const uint8_t *f = h + 124;
	uint64_t v = 0;
	int i = 0;

	if (f[0] & 0x80) {
		if (f[0] & 0x40)
			return -1;
		for (i = 1; i < 12; i++) {
			if (v >> 54 || (i == 1 && f[0] & 0x3f))
				return -1;
			v = v << 8 | f[i];
		}
		return v >> 62 ? -1 : (int64_t)v;
	}
	while (i < 12 && (f[i] == ' ' || f[i] == '\t'))
		i++;
	for (; i < 12 && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 58)
			return -1;
		v = v << 3 | (uint64_t)(f[i] - '0');
	}
	return (int64_t)v;
}

static const uint8_t *at(const struct tarfeed *f, uint64_t pos, size_t n)
{
	if (pos < f->win_start || pos - f->win_start > f->win_len ||
	    n > f->win_len - (pos - f->win_start))
		return NULL;
	return f->win + (pos - f->win_start);
}

/*
 * The headers read for one entry, from pos (where the entry's first
 * header began) to end: the pax, GNU long-name and global headers before
 * the entry's own. Every global one is checked.
 */
static int check_headers(struct tarfeed *f, uint64_t pos, uint64_t end)
{
	char msg[160];

	while (pos + TAR_BLOCK <= end) {
		const uint8_t *h = at(f, pos, TAR_BLOCK), *body;
		int64_t size;

		if (!h)
			goto lost;
		if (!strchr("gxXLKAV", h[156]) || !h[156])
			return 0;	/* the entry's own header */
		/* a GNU volume label's size is not a body: libarchive skips it */
		size = h[156] == 'V' ? 0 : header_size(h);
		/* libarchive read it, so it lies within what it took */
		if (size < 0 || (uint64_t)size > end - pos - TAR_BLOCK)
			goto lost;
		if (h[156] == 'g') {
			body = at(f, pos + TAR_BLOCK, (size_t)size);
			if (!body)
				goto lost;
			if (check_records(body, (size_t)size, msg, sizeof(msg)))
				goto fail;
		}
		pos += TAR_BLOCK + ((uint64_t)size + TAR_BLOCK - 1) / TAR_BLOCK *
		       TAR_BLOCK;
	}
	return 0;
lost:
	snprintf(msg, sizeof(msg), "cannot check its pax global headers "
		 "(headers or sparse map over %u MiB, or not read as "
		 "libarchive read them)", HEADER_KEEP >> 20);
fail:
	archive_set_error(f->tar, EINVAL, "%s", msg);
	return -1;
}

/*
 * Drops what the tar reader is past. Only from inside the callback: by
 * then libarchive has copied out what it still wants of the last block.
 */
static void trim(struct tarfeed *f)
{
	la_int64_t used = archive_filter_bytes(f->tar, 0);
	uint64_t drop;

	if (used < 0 || (uint64_t)used <= f->win_start)
		return;
	drop = (uint64_t)used - f->win_start;
	if (drop > f->win_len)
		drop = f->win_len;
	memmove(f->win, f->win + drop, f->win_len - drop);
	f->win_len -= drop;
	f->win_start += drop;
}

/*
 * libarchive's read callback: the next decompressed bytes, kept in the
 * window. The block handed out last is no longer needed by then.
 */
static la_ssize_t feed_read(struct archive *a, void *p, const void **out)
{
	struct tarfeed *f = p;
	la_ssize_t n;

	if (!f->in_header || f->win_len > HEADER_KEEP)
		trim(f);
	if (f->raw_eof)
		return 0;
	if (f->win_cap - f->win_len < FEED_READ) {
		size_t cap = 2 * f->win_cap > f->win_len + FEED_READ ?
			     2 * f->win_cap : f->win_len + FEED_READ;
		uint8_t *w = realloc(f->win, cap);

		if (!w) {
			archive_set_error(a, ENOMEM, "out of memory");
			return -1;
		}
		f->win = w;
		f->win_cap = cap;
	}
	if (f->fd >= 0) {
		n = pread(f->fd, f->win + f->win_len, FEED_READ,
			  f->base + (off_t)(f->win_start + f->win_len));
		if (n < 0) {
			archive_set_error(a, errno, "read error: %s",
					  strerror(errno));
			return -1;
		}
	} else if ((n = archive_read_data(f->raw, f->win + f->win_len,
					  FEED_READ)) < 0) {
		archive_set_error(a, archive_errno(f->raw), "%s",
				  archive_error_string(f->raw));
		return -1;
	}
	*out = f->win + f->win_len;
	f->win_len += (size_t)n;
	f->raw_eof = n == 0;
	return n;
}

/*
 * libarchive's skip callback: data not wanted (--tar=i, or what a header
 * says to pass over) is not read at all from a plain file. By now the
 * reader has used all it was given; 0 (read through instead) if not.
 */
static la_int64_t feed_skip(struct archive *a, void *p, la_int64_t request)
{
	struct tarfeed *f = p;
	uint64_t end = f->win_start + f->win_len;
	la_int64_t n = request;

	(void)a;
	if (f->fd < 0 || f->in_header || request <= 0 ||
	    archive_filter_bytes(f->tar, 0) != (la_int64_t)end)
		return 0;
	if (f->base + (off_t)end >= f->size)
		return 0;
	if (n > f->size - f->base - (off_t)end)
		n = f->size - f->base - (off_t)end;
	f->win_start = end + (uint64_t)n;
	f->win_len = 0;
	return n;
}

/*
 * An uncompressed tar in a file (named, or stdin redirected from one) is
 * read from the file itself: pread where it is, and skips are free.
 */
static void open_direct(struct tarfeed *f, const char *source)
{
	struct stat st;
	/* O_NONBLOCK: a FIFO's open must not wait for a writer again */
	int fd = source ? open(source, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : 0;

	if (fd < 0)
		return;
	if (f->base >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode)) {
		f->fd = fd;
		f->own_fd = source != NULL;
		f->size = st.st_size;
		return;
	}
	if (source)
		close(fd);
}

int tarfeed_open(struct tarfeed *f, const char *source)
{
	struct archive_entry *e;
	int r;

	memset(f, 0, sizeof(*f));
	f->in_header = true;
	f->fd = -1;
	/* the offset now, before the raw reader moves it */
	if (!source)
		f->base = lseek(0, 0, SEEK_CUR);
	f->raw = archive_read_new();
	f->tar = archive_read_new();
	if (!f->raw || !f->tar) {
		tarfeed_close(f);
		errno = ENOMEM;
		return -1;
	}
	archive_read_support_filter_all(f->raw);
	archive_read_support_format_raw(f->raw);
	archive_read_support_format_empty(f->raw);
	archive_read_support_format_tar(f->tar);
	archive_read_support_format_empty(f->tar);
	/* names as the bytes they are: no locale conversion (or warning) */
	archive_read_set_options(f->tar, "hdrcharset=BINARY");
	r = source ? archive_read_open_filename(f->raw, source, 1 << 16) :
		     archive_read_open_fd(f->raw, 0, 1 << 16);
	if (r == ARCHIVE_OK)
		r = archive_read_next_header(f->raw, &e);
	if (r == ARCHIVE_EOF)
		f->raw_eof = true;	/* empty: an empty tar */
	else if (r != ARCHIVE_OK) {
		archive_set_error(f->tar, archive_errno(f->raw), "%s",
				  archive_error_string(f->raw));
		return -1;
	}
	f->filtered = archive_filter_count(f->raw) != 1 ||
		      archive_filter_code(f->raw, 0) != ARCHIVE_FILTER_NONE;
	if (!f->raw_eof && !f->filtered)
		open_direct(f, source);
	archive_read_set_skip_callback(f->tar, feed_skip);
	archive_read_set_read_callback(f->tar, feed_read);
	archive_read_set_callback_data(f->tar, f);
	return archive_read_open1(f->tar) == ARCHIVE_OK ? 0 : -1;
}

bool tarfeed_filtered(const struct tarfeed *f)
{
	return f->filtered;
}

int tarfeed_next(struct tarfeed *f, struct archive_entry **e)
{
	int r;

	/*
	 * The rest of the last entry's data is passed over first, not as
	 * the header is read: the window keeps all a header read gives.
	 * (No trim here: the reader may still point into the window.)
	 */
	if (f->have_entry && archive_read_data_skip(f->tar) != ARCHIVE_OK)
		return ARCHIVE_FATAL;
	f->in_header = true;
	r = archive_read_next_header(f->tar, e);
	f->in_header = false;
	f->have_entry = r == ARCHIVE_OK || r == ARCHIVE_WARN;
	if ((r == ARCHIVE_OK || r == ARCHIVE_WARN) &&
	    check_headers(f, (uint64_t)archive_read_header_position(f->tar),
			  (uint64_t)archive_filter_bytes(f->tar, 0)))
		return ARCHIVE_FATAL;
	return r;
}

void tarfeed_close(struct tarfeed *f)
{
	if (f->tar)
		archive_read_free(f->tar);
	if (f->raw)
		archive_read_free(f->raw);
	if (f->own_fd)
		close(f->fd);
	free(f->win);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

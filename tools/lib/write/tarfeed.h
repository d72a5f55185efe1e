/* SPDX-License-Identifier: MIT */
/*
 * --tar: the tar stream between two libarchive handles. One (raw format,
 * every filter) decompresses the source; the other (tar format only)
 * reads entries from what the first gives, through a callback that keeps
 * the bytes of the headers being read. libarchive 3.6 reads pax global
 * headers and drops them, where GNU tar and erofs-utils apply them to the
 * entries after: kept, they are checked here instead, and one that would
 * change an entry is refused rather than silently left out.
 */
#ifndef KILN_WRITE_TARFEED_H
#define KILN_WRITE_TARFEED_H

#include <archive.h>
#include <archive_entry.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tarfeed {
	struct archive *raw;		/* the source, decompressed */
	struct archive *tar;		/* entries, read from the feed */
	uint8_t *win;			/* stream bytes from win_start */
	size_t win_len, win_cap;
	uint64_t win_start;
	bool in_header;			/* keep all: a header is being read */
	bool have_entry;		/* one was read: skip its data */
	bool raw_eof;
	bool filtered;			/* compressed, say */
	int fd;				/* >= 0: read from this file */
	bool own_fd;
	off_t base, size;		/* where the tar starts in it; its size */
};

/*
 * Opens source (NULL: stdin). On failure returns -1 and, when f->tar was
 * made, leaves the reason in archive_error_string(f->tar); else errno.
 */
int tarfeed_open(struct tarfeed *f, const char *source);
/* Whether the source was compressed (or wrapped in another filter). */
bool tarfeed_filtered(const struct tarfeed *f);
/*
 * archive_read_next_header on f->tar, with the header's pax global
 * records checked: one setting anything gives ARCHIVE_FATAL, the reason
 * in archive_error_string(f->tar).
 */
int tarfeed_next(struct tarfeed *f, struct archive_entry **e);
void tarfeed_close(struct tarfeed *f);

#endif

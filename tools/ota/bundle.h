/* SPDX-License-Identifier: MIT */
/*
 * The bundle container: a POSIX tar stream, read and written in one pass
 * (libarchive), so a bundle can be piped and inspected with tar(1). Its
 * members, in this order and nothing else:
 *
 *   manifest        the manifest (manifest.h)
 *   manifest.sig    the Ed25519 signature over it, 64 bytes
 *   NAME...         each payload the manifest lists, in its order
 *
 * Everything in the stream after the signature is trusted only through
 * the manifest's sizes and SHA-256s.
 */
#ifndef KILN_OTA_BUNDLE_H
#define KILN_OTA_BUNDLE_H

#include <stdint.h>
#include <sys/types.h>

struct archive;

struct bundle_in {
	struct archive *a;
	uint64_t left;		/* of the current member */
};

int bundle_in_open(struct bundle_in *b, int fd, char *err, size_t errlen);
/*
 * The next member must be a regular file called name, of exactly size
 * bytes (or, with size UINT64_MAX, of at most max): its size is returned
 * in *got. -1 with err otherwise (also for a stream cut short).
 */
int bundle_in_next(struct bundle_in *b, const char *name, uint64_t size,
		   uint64_t max, uint64_t *got, char *err, size_t errlen);
/* Up to n bytes of the current member; 0 at its end, -1 with err. */
ssize_t bundle_in_read(struct bundle_in *b, void *buf, size_t n,
		       char *err, size_t errlen);
/* The whole current member into buf (which holds its size). */
int bundle_in_read_all(struct bundle_in *b, void *buf, char *err, size_t errlen);
/* The stream must end here: -1 with err on another member or a bad end. */
int bundle_in_end(struct bundle_in *b, char *err, size_t errlen);
void bundle_in_close(struct bundle_in *b);

/* Writing: members in order, each of a known size, times fixed. */
struct archive *bundle_out_open(int fd, char *err, size_t errlen);
int bundle_out_member(struct archive *a, const char *name, uint64_t size,
		      long long mtime, char *err, size_t errlen);
int bundle_out_write(struct archive *a, const void *buf, size_t n,
		     char *err, size_t errlen);
int bundle_out_close(struct archive *a, char *err, size_t errlen);

#endif

/* SPDX-License-Identifier: MIT */
/* Internal helpers: allocation that cannot fail quietly, I/O loops. */
#ifndef KILN_UTIL_H
#define KILN_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "fullio.h"	/* pwrite_all, which util.h's users had from here */

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *path_join(const char *dir, const char *name);

/* Full pread: the count read, short only at end of file, or -1 (errno). */
ssize_t pread_all(int fd, void *buf, size_t len, uint64_t off);
/* A 64-bit hash of n bytes (multiply-xorshift over words), from seed. */
uint64_t kiln_hash64(const void *p, size_t n, uint64_t seed);

/*
 * The one number parser: plain decimal (no sign, no 0x, no octal for a
 * leading 0: "0100" is one hundred, as SOURCE_DATE_EPOCH and -T mean it),
 * within [min, max]. Returns 0, or -1 for anything else.
 */
int kiln_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* The option getopt_long stopped at, for a one-line error. */
const char *kiln_bad_option(int argc, char **argv);

static inline uint64_t round_up(uint64_t v, uint64_t align)
{
	return (v + align - 1) / align * align;
}

#endif

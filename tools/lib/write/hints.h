/* SPDX-License-Identifier: MIT */
/*
 * --compress-hints=FILE, erofs-utils' format: one hint per line,
 *	PCLUSTERSIZE [ALG] REGEX
 * with '#' comment lines. A regular file whose path (relative to the
 * source, no leading '/') matches REGEX, a POSIX extended regex, gets
 * pclusters of at most PCLUSTERSIZE bytes, compressed with algorithm ALG
 * of -z A:B:... (0, the first, by default); PCLUSTERSIZE 0 leaves it
 * uncompressed. The first matching hint wins.
 */
#ifndef KILN_WRITE_HINTS_H
#define KILN_WRITE_HINTS_H

#include <regex.h>
#include <stdint.h>

struct kiln_mkfs_opts;

struct kiln_hint {
	regex_t re;
	uint32_t pclustersize;		/* 0: not compressed */
	unsigned int zcfg;
};

struct kiln_hints {
	struct kiln_hint *v;
	unsigned int nr;
	uint32_t max_pclustersize;	/* of all hints */
};

/*
 * Loads o->compress_hints, checked against o's block size and -z list:
 * a bad line is a one-line error naming it, and -1.
 */
int kiln_hints_load(struct kiln_hints *h, const struct kiln_mkfs_opts *o);
const struct kiln_hint *kiln_hints_match(const struct kiln_hints *h,
					 const char *relpath);
void kiln_hints_free(struct kiln_hints *h);

#endif

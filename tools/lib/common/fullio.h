/* SPDX-License-Identifier: MIT */
/*
 * Whole writes: write(2) and pwrite(2) until every byte is out. A file of
 * its own that needs nothing else of libkiln, so that kiln-bootstate and
 * kiln-update (which take no libkiln) link it alone.
 */
#ifndef KILN_FULLIO_H
#define KILN_FULLIO_H

#include <stddef.h>
#include <stdint.h>

/*
 * buf[0..len) to fd at its offset (write_all) or at off (pwrite_all),
 * again after EINTR and short writes. Return 0, or -1 with errno set
 * (ENOSPC for a write that makes no progress).
 */
int write_all(int fd, const void *buf, size_t len);
int pwrite_all(int fd, const void *buf, size_t len, uint64_t off);

#endif

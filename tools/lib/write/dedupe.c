/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include "common/util.h"
#include "dedupe.h"

void kiln_dedupe_init(struct kiln_dedupe *dd, int fd, unsigned int blkszbits)
{
	memset(dd, 0, sizeof(*dd));
	dd->fd = fd;
	dd->blkszbits = blkszbits;
	dd->nr_slots = 1024;
	dd->slots = xcalloc(dd->nr_slots, sizeof(*dd->slots));
}

/* The stored bytes, and what they decode to (a plain one: its length). */
static uint64_t pcl_hash(const uint8_t *p, size_t n, const struct kiln_pcl *c)
{
	return kiln_hash64(p, n, c->llen ^ (uint64_t)c->plain << 40);
}

static bool same_kind(const struct kiln_pcl *a, const struct kiln_pcl *b)
{
	return a->hash == b->hash && a->nblocks == b->nblocks &&
	       a->llen == b->llen && a->plain == b->plain;
}

bool kiln_dedupe_find(struct kiln_dedupe *dd, const uint8_t *p,
		      struct kiln_pcl *c)
{
	size_t n = (size_t)c->nblocks << dd->blkszbits;
	size_t mask = dd->nr_slots - 1;

	c->hash = pcl_hash(p, n, c);
	for (size_t k = c->hash & mask; dd->slots[k].nblocks; k = (k + 1) & mask) {
		const struct kiln_pcl *s = &dd->slots[k];

		if (!same_kind(s, c))
			continue;
		if (n > dd->cmp_cap) {
			dd->cmp_cap = n;
			dd->cmp = xrealloc(dd->cmp, n);
		}
		/* written by now (page cache); a failed read finds nothing */
		if (pread_all(dd->fd, dd->cmp, n,
			      (uint64_t)s->blkaddr << dd->blkszbits) ==
		    (ssize_t)n && !memcmp(dd->cmp, p, n)) {
			c->blkaddr = s->blkaddr;
			return true;
		}
	}
	return false;
}

#define PIECE (1u << 20)	/* compared this many bytes at a time */

static bool image_equal(struct kiln_dedupe *dd, uint64_t a, uint64_t b,
			uint64_t n)
{
	if (dd->cmp_cap < 2 * PIECE) {
		dd->cmp_cap = 2 * PIECE;
		dd->cmp = xrealloc(dd->cmp, dd->cmp_cap);
	}
	for (uint64_t off = 0; off < n; off += PIECE) {
		size_t len = n - off < PIECE ? (size_t)(n - off) : PIECE;

		if (pread_all(dd->fd, dd->cmp, len, a + off) != (ssize_t)len ||
		    pread_all(dd->fd, dd->cmp + PIECE, len, b + off) !=
		    (ssize_t)len || memcmp(dd->cmp, dd->cmp + PIECE, len))
			return false;
	}
	return true;
}

bool kiln_dedupe_find_written(struct kiln_dedupe *dd, struct kiln_pcl *c,
			      uint32_t at)
{
	size_t mask = dd->nr_slots - 1;

	for (size_t k = c->hash & mask; dd->slots[k].nblocks; k = (k + 1) & mask) {
		const struct kiln_pcl *s = &dd->slots[k];

		/* blocks from at on are not kept: a block taken back
		   (chunked.c, as_flat) is written again */
		if (same_kind(s, c) &&
		    (uint64_t)s->blkaddr + s->nblocks <= at &&
		    image_equal(dd, (uint64_t)s->blkaddr << dd->blkszbits,
				(uint64_t)at << dd->blkszbits, c->llen)) {
			c->blkaddr = s->blkaddr;
			return true;
		}
	}
	return false;
}

static void grow(struct kiln_dedupe *dd)
{
	size_t n = dd->nr_slots * 2;
	struct kiln_pcl *s = xcalloc(n, sizeof(*s));

	for (size_t i = 0; i < dd->nr_slots; i++) {
		size_t k;

		if (!dd->slots[i].nblocks)
			continue;
		for (k = dd->slots[i].hash & (n - 1); s[k].nblocks;
		     k = (k + 1) & (n - 1))
			;
		s[k] = dd->slots[i];
	}
	free(dd->slots);
	dd->slots = s;
	dd->nr_slots = n;
}

void kiln_dedupe_add(struct kiln_dedupe *dd, const struct kiln_pcl *c)
{
	size_t mask = dd->nr_slots - 1, k;

	for (k = c->hash & mask; dd->slots[k].nblocks; k = (k + 1) & mask)
		if (same_kind(&dd->slots[k], c))
			return;		/* one is enough */
	dd->slots[k] = *c;
	if (++dd->used * 2 > dd->nr_slots)
		grow(dd);
}

void kiln_dedupe_offer(struct kiln_dedupe *dd, const uint8_t *p,
		       struct kiln_pcl *c)
{
	c->hash = pcl_hash(p, (size_t)c->nblocks << dd->blkszbits, c);
	kiln_dedupe_add(dd, c);
}

void kiln_dedupe_free(struct kiln_dedupe *dd)
{
	free(dd->slots);
	free(dd->cmp);
	dd->slots = NULL;
	dd->cmp = NULL;
}

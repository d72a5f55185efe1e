/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/util.h"
#include "fragments.h"

#define FRAG_BUF (1u << 20)

struct frag_slot {
	uint64_t hash;
	uint64_t off;
	size_t len;			/* 0: empty */
};

int kiln_fragments_open(struct kiln_fragments *fr)
{
	memset(fr, 0, sizeof(*fr));
	fr->buf = xmalloc(FRAG_BUF);
	fr->nr_slots = 1024;
	fr->slots = xcalloc(fr->nr_slots, sizeof(*fr->slots));
	return kiln_spool_open(&fr->spool);
}

int kiln_fragments_flush(struct kiln_fragments *fr)
{
	if (fr->buf_len && pwrite_all(fr->spool.fd, fr->buf, fr->buf_len,
				      fr->buf_off))
		return -1;
	fr->buf_off += fr->buf_len;
	fr->buf_len = 0;
	return 0;
}

/* The n bytes at off, from the buffer or read back from the spool. */
static const uint8_t *content_at(struct kiln_fragments *fr, uint64_t off,
				 size_t n)
{
	if (off >= fr->buf_off)
		return fr->buf + (off - fr->buf_off);
	if (fr->buf_off - off < n && kiln_fragments_flush(fr))
		return NULL;		/* straddles the buffer: write it */
	if (n > fr->cmp_cap) {
		fr->cmp_cap = n;
		fr->cmp = xrealloc(fr->cmp, n);
	}
	return pread_all(fr->spool.fd, fr->cmp, n, off) == (ssize_t)n ?
	       fr->cmp : NULL;
}

static void grow(struct kiln_fragments *fr)
{
	size_t n = fr->nr_slots * 2;
	struct frag_slot *s = xcalloc(n, sizeof(*s));

	for (size_t i = 0; i < fr->nr_slots; i++) {
		size_t k;

		if (!fr->slots[i].len)
			continue;
		for (k = fr->slots[i].hash & (n - 1); s[k].len; k = (k + 1) & (n - 1))
			;
		s[k] = fr->slots[i];
	}
	free(fr->slots);
	fr->slots = s;
	fr->nr_slots = n;
}

static int append(struct kiln_fragments *fr, const uint8_t *p, size_t n)
{
	while (n) {
		size_t take = FRAG_BUF - fr->buf_len < n ?
			      FRAG_BUF - fr->buf_len : n;

		memcpy(fr->buf + fr->buf_len, p, take);
		fr->buf_len += take;
		p += take;
		n -= take;
		if (fr->buf_len == FRAG_BUF && kiln_fragments_flush(fr))
			return -1;
	}
	return 0;
}

int kiln_fragments_add(struct kiln_fragments *fr, const uint8_t *p, size_t n,
		       bool share, uint64_t *off)
{
	uint64_t h;
	size_t mask = fr->nr_slots - 1, k;

	if (!share) {
		*off = fr->spool.end;
		fr->spool.end += n;
		return append(fr, p, n);
	}
	h = kiln_hash64(p, n, 0);
	for (k = h & mask; fr->slots[k].len; k = (k + 1) & mask) {
		const struct frag_slot *s = &fr->slots[k];
		const uint8_t *old;

		if (s->hash != h || s->len != n)
			continue;
		old = content_at(fr, s->off, n);
		if (!old)
			return -1;
		if (!memcmp(old, p, n)) {
			*off = s->off;
			return 0;
		}
	}
	fr->slots[k] = (struct frag_slot){ .hash = h, .off = fr->spool.end,
					   .len = n };
	*off = fr->spool.end;
	fr->spool.end += n;
	if (++fr->used * 2 > fr->nr_slots)
		grow(fr);
	return append(fr, p, n);
}

void kiln_fragments_close(struct kiln_fragments *fr)
{
	if (fr->spool.fd >= 0)
		close(fr->spool.fd);
	fr->spool.fd = -1;
	free(fr->buf);
	free(fr->slots);
	free(fr->cmp);
	fr->buf = NULL;
	fr->slots = NULL;
	fr->cmp = NULL;
}

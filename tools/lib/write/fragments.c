/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "common/util.h"
#include "fragments.h"
#include "source.h"

struct frag_piece {
	uint64_t off;			/* where it starts in the content */
	const struct kiln_inode *in;	/* its file, or NULL: */
	uint8_t *mem;			/* bytes of Kiln's own (owned) */
	uint64_t src_off;		/* where it starts in the file */
	size_t len;
	size_t tail_prev;		/* the piece before it with an equal
					   tail hash, or NO_PIECE */
	uint64_t end_hash;		/* of its last FRAG_END bytes (or all) */
};

#define NO_PIECE SIZE_MAX

/*
 * A fragment ending as an earlier one ends is looked up by its last this
 * many bytes (erofs-utils uses the same length), and compared whole.
 */
#define FRAG_TAIL	64u
/*
 * Earlier fragments with an equal tail, newest first: at most this many
 * looked at, and of those at most FRAG_TAIL_READS longer ones read back to
 * compare. Files ending alike (zero padding, a common footer) are many,
 * and each would otherwise look at all before it.
 */
#define FRAG_TAIL_SEEN	256
#define FRAG_TAIL_READS	16
/*
 * A longer check before reading one back: the hash of the last this many
 * bytes. Equal 64-byte tails are common (licence footers, padding), equal
 * kilobytes rare: on linux-source 15,648 fragments were read back to
 * find 380 equal, 127 MB read on the main thread.
 */
#define FRAG_END	1024u

struct frag_slot {
	uint64_t hash;
	size_t piece;			/* pieces[piece]; for a tail hash, the
					   newest, the rest by tail_prev */
	size_t len;			/* 0: empty */
};

void kiln_fragments_open(struct kiln_fragments *fr)
{
	memset(fr, 0, sizeof(*fr));
	fr->nr_slots = 1024;
	fr->slots = xcalloc(fr->nr_slots, sizeof(*fr->slots));
	fr->nr_tails = 1024;
	fr->tails = xcalloc(fr->nr_tails, sizeof(*fr->tails));
}

/* The piece's n bytes from at, from its file (checked unchanged). */
static int read_piece(const struct frag_piece *pc, uint64_t at, uint8_t *buf,
		      size_t n, const char **failed)
{
	struct kiln_src src = { .failed = NULL };
	ssize_t got;
	int err;

	if (!pc->in) {
		memcpy(buf, pc->mem + at, n);
		return 0;
	}
	if (kiln_src_open(pc->in, &src)) {
		err = errno;
		goto fail;
	}
	got = kiln_src_pread(&src, buf, n, pc->src_off + at);
	err = got < 0 ? errno : (size_t)got != n ||
	      !kiln_src_unchanged(pc->in, &src) ? EAGAIN : 0;
	kiln_src_close(&src);
	if (!err)
		return 0;
fail:
	*failed = src.failed ? src.failed : pc->in->srcpath;
	errno = err;
	return -1;
}

/* Doubles an open-addressed table of *nr slots. */
static void grow(struct frag_slot **slots, size_t *nr)
{
	size_t n = *nr * 2;
	struct frag_slot *s = xcalloc(n, sizeof(*s));

	for (size_t i = 0; i < *nr; i++) {
		size_t k;

		if (!(*slots)[i].len)
			continue;
		for (k = (*slots)[i].hash & (n - 1); s[k].len; k = (k + 1) & (n - 1))
			;
		s[k] = (*slots)[i];
	}
	free(*slots);
	*slots = s;
	*nr = n;
}

static void insert(struct frag_slot **slots, size_t *nr, size_t *used,
		   struct frag_slot v)
{
	size_t k = v.hash & (*nr - 1);

	while ((*slots)[k].len)
		k = (k + 1) & (*nr - 1);
	(*slots)[k] = v;
	if (++*used * 2 > *nr)
		grow(slots, nr);
}

/* Is p (n bytes) what old holds from at? Read back to compare. */
static int same(struct kiln_fragments *fr, const struct frag_piece *old,
		uint64_t at, const uint8_t *p, size_t n, const char **failed)
{
	if (n > fr->cmp_cap) {
		fr->cmp_cap = n;
		fr->cmp = xrealloc(fr->cmp, n);
	}
	if (read_piece(old, at, fr->cmp, n, failed))
		return -1;
	return !memcmp(fr->cmp, p, n);
}

/* The tail table's slot for hash: its own, or the empty one it would take. */
static struct frag_slot *tail_slot(struct kiln_fragments *fr, uint64_t hash)
{
	size_t mask = fr->nr_tails - 1, k = hash & mask;

	while (fr->tails[k].len && fr->tails[k].hash != hash)
		k = (k + 1) & mask;
	return &fr->tails[k];
}

/*
 * An earlier fragment that ends with the n bytes at p: 1 and *off their
 * place, 0 if none, -1 if one could not be read back. (One of equal
 * length would have been found whole.)
 */
static int find_tail(struct kiln_fragments *fr, const uint8_t *p, size_t n,
		     uint64_t tail, uint64_t end, uint64_t *off,
		     const char **failed)
{
	const struct frag_slot *s = tail_slot(fr, tail);
	size_t i = s->len ? s->piece : NO_PIECE;
	int seen = FRAG_TAIL_SEEN, reads = FRAG_TAIL_READS, r;

	for (; i != NO_PIECE && seen-- && reads; i = fr->pieces[i].tail_prev) {
		const struct frag_piece *old = &fr->pieces[i];

		/* both hashes cover FRAG_END bytes when n does */
		if (old->len <= n || (n >= FRAG_END && old->end_hash != end))
			continue;
		reads--;
		r = same(fr, old, old->len - n, p, n, failed);
		if (r > 0)
			*off = old->off + old->len - n;
		if (r)
			return r;
	}
	return 0;
}

/* Piece i, a whole fragment, becomes the newest with its tail hash. */
static void add_tail(struct kiln_fragments *fr, size_t i, uint64_t tail)
{
	struct frag_slot *s = tail_slot(fr, tail);

	if (s->len) {
		fr->pieces[i].tail_prev = s->piece;
		s->piece = i;
		return;
	}
	insert(&fr->tails, &fr->nr_tails, &fr->tails_used,
	       (struct frag_slot){ .hash = tail, .piece = i, .len = 1 });
}

static struct frag_piece *append(struct kiln_fragments *fr, size_t n)
{
	struct frag_piece *pc;

	if (fr->nr == fr->cap) {
		fr->cap = fr->cap ? 2 * fr->cap : 1024;
		fr->pieces = xrealloc(fr->pieces, fr->cap * sizeof(*pc));
	}
	pc = &fr->pieces[fr->nr++];
	*pc = (struct frag_piece){ .off = fr->end, .len = n,
				   .tail_prev = NO_PIECE };
	fr->end += n;
	return pc;
}

int kiln_fragments_add(struct kiln_fragments *fr, const struct kiln_inode *in,
		       uint64_t src_off, const uint8_t *p, size_t n,
		       uint64_t hash, bool share, uint64_t *off,
		       const char **failed)
{
	size_t mask = fr->nr_slots - 1, k;
	uint64_t tail = 0, end = 0;
	struct frag_piece *pc;
	int r;

	for (k = hash & mask; share && fr->slots[k].len; k = (k + 1) & mask) {
		const struct frag_slot *s = &fr->slots[k];

		if (s->hash != hash || s->len != n)
			continue;
		r = same(fr, &fr->pieces[s->piece], 0, p, n, failed);
		if (r < 0)
			return -1;
		if (r) {
			*off = fr->pieces[s->piece].off;
			return 0;
		}
	}
	if (share && n > FRAG_TAIL) {
		tail = kiln_hash64(p + n - FRAG_TAIL, FRAG_TAIL, 0);
		end = kiln_hash64(p + n - (n < FRAG_END ? n : FRAG_END),
				  n < FRAG_END ? n : FRAG_END, 0);
		r = find_tail(fr, p, n, tail, end, off, failed);
		if (r)
			return r < 0 ? -1 : 0;
	}
	if (share)
		insert(&fr->slots, &fr->nr_slots, &fr->used, (struct frag_slot){
			.hash = hash, .piece = fr->nr, .len = n });
	pc = append(fr, n);
	pc->in = in;
	pc->src_off = src_off;
	*off = pc->off;
	if (share && n > FRAG_TAIL) {
		pc->end_hash = end;
		add_tail(fr, fr->nr - 1, tail);
	}
	return 0;
}

void kiln_fragments_add_mem(struct kiln_fragments *fr, uint8_t *mem, size_t n)
{
	append(fr, n)->mem = mem;
}

/* The last piece starting at or before off. */
static size_t find_piece(const struct kiln_fragments *fr, uint64_t off)
{
	size_t lo = 0, hi = fr->nr;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (fr->pieces[mid].off <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

int kiln_fragments_read(const struct kiln_fragments *fr, uint8_t *buf,
			size_t n, uint64_t off, const char **failed)
{
	if (off > fr->end || n > fr->end - off) {
		errno = EIO;
		*failed = "(packed inode)";
		return -1;
	}
	for (size_t i = n ? find_piece(fr, off) : 0; n; i++) {
		const struct frag_piece *pc = &fr->pieces[i];
		uint64_t at = off - pc->off;
		size_t take = pc->len - at < n ? (size_t)(pc->len - at) : n;

		if (read_piece(pc, at, buf, take, failed))
			return -1;
		buf += take;
		off += take;
		n -= take;
	}
	return 0;
}

void kiln_fragments_close(struct kiln_fragments *fr)
{
	for (size_t i = 0; i < fr->nr; i++)
		free(fr->pieces[i].mem);
	free(fr->pieces);
	free(fr->slots);
	free(fr->tails);
	free(fr->cmp);
	memset(fr, 0, sizeof(*fr));
}

/* SPDX-License-Identifier: MIT */
/*
 * Every pcluster as the files read it. The kernel keeps one object per
 * pcluster, keyed by its first block, and decodes it with the algorithm
 * and size of whichever file read it first; a later file's own index is
 * not consulted. So when two files' indexes disagree about one pcluster
 * (lz4 here, lzma there; 4 blocks here, 8 there), each decodes fine on its
 * own, as fsck decodes it, while on a mount one of them reads garbage,
 * depending on which was read first. Deduplicated images share pclusters
 * on purpose, always alike.
 *
 * Each reference is noted under one of SHARDS locks; what a pcluster was
 * read as is kept as a set (a bit per form, the least and most blocks), so
 * the report, made once the walk is done, names the same forms in the same
 * order whatever the workers' timing. Memory: a 12-byte slot per pcluster,
 * the tables at most 3/4 full; pclusters start on distinct blocks, so the
 * image's size bounds it.
 */
#include <stdio.h>
#include <stdlib.h>
#include "fsck.h"
#include "common/util.h"

#define SHARDS 64

/* the forms a pcluster is read in: the four algorithms, then stored */
enum { FORM_PLAIN = 4, FORM_INTERLACED = 5, FORMS = 6 };

struct pcl_entry {
	uint32_t blk;			/* its first block */
	uint16_t nmin, nmax;		/* blocks, least and most */
	uint8_t forms;			/* bit per form */
	bool used;
};

struct pcl_shard {
	pthread_mutex_t lock;
	struct pcl_entry *e;
	size_t cap, nr;			/* cap: 0 or a power of two */
};

static size_t slot_of(uint32_t blk, size_t cap)
{
	/* the shard took the low bits: hash the rest */
	return (size_t)(((blk / SHARDS) * 0x9E3779B1u) & (cap - 1));
}

static struct pcl_entry *find(struct pcl_shard *s, uint32_t blk)
{
	size_t i = slot_of(blk, s->cap);

	while (s->e[i].used && s->e[i].blk != blk)
		i = (i + 1) & (s->cap - 1);
	return &s->e[i];
}

static void grow(struct pcl_shard *s)
{
	struct pcl_entry *old = s->e;
	size_t oldcap = s->cap;

	s->cap = oldcap ? oldcap * 2 : 256;
	s->e = xcalloc(s->cap, sizeof(*s->e));
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].used)
			*find(s, old[i].blk) = old[i];
	free(old);
}

void fsck_pclusters_init(struct fsck *f)
{
	f->pcl = xcalloc(SHARDS, sizeof(*f->pcl));
	for (size_t i = 0; i < SHARDS; i++)
		pthread_mutex_init(&f->pcl[i].lock, NULL);
}

/* Notes a pcluster read through e: compressed or stored, not inline. */
void fsck_pcluster_seen(struct fsck *f, const struct kiln_fext *e)
{
	uint32_t blk = (uint32_t)(e->pa >> f->img.blkszbits);
	uint16_t n = (uint16_t)(e->plen >> f->img.blkszbits);
	unsigned int form = e->kind == KILN_EXT_ZIP ? e->alg :
			    e->interlaced ? FORM_INTERLACED : FORM_PLAIN;
	struct pcl_shard *s;
	struct pcl_entry *p;

	if ((e->kind != KILN_EXT_ZIP && e->kind != KILN_EXT_PLAIN) || e->meta)
		return;
	s = &f->pcl[blk % SHARDS];
	pthread_mutex_lock(&s->lock);
	if (4 * (s->nr + 1) > 3 * s->cap)
		grow(s);
	p = find(s, blk);
	if (!p->used) {
		*p = (struct pcl_entry){ .blk = blk, .nmin = n, .nmax = n,
					 .used = true };
		s->nr++;
	}
	p->forms |= (uint8_t)(1u << form);
	p->nmin = n < p->nmin ? n : p->nmin;
	p->nmax = n > p->nmax ? n : p->nmax;
	pthread_mutex_unlock(&s->lock);
}

static const char *form_name(unsigned int form)
{
	return form == FORM_PLAIN ? "stored" :
	       form == FORM_INTERLACED ? "stored interlaced" :
	       kiln_alg_name(form);
}

static void report(struct fsck *f, const struct pcl_entry *p)
{
	char forms[96] = "";
	size_t at = 0;

	for (unsigned int i = 0; i < FORMS; i++)
		if (p->forms & 1u << i)
			at += (size_t)snprintf(forms + at, sizeof(forms) - at,
					       "%s%s", at ? " and " : "",
					       form_name(i));
	if (p->forms & (p->forms - 1))
		fsck_error(f, FSCK_PCLUSTERS_PATH, "pcluster at block %u is "
			   "read as %s by different files", p->blk, forms);
	if (p->nmin != p->nmax)
		fsck_error(f, FSCK_PCLUSTERS_PATH, "pcluster at block %u is "
			   "read as %u and as %u blocks by different files",
			   p->blk, p->nmin, p->nmax);
}

/*
 * Once the walk is done: the pclusters read in more than one way (the
 * messages are sorted before they are printed).
 */
void fsck_pclusters_check(struct fsck *f)
{
	for (size_t i = 0; i < SHARDS; i++)
		for (size_t j = 0; j < f->pcl[i].cap; j++)
			if (f->pcl[i].e[j].used)
				report(f, &f->pcl[i].e[j]);
}

void fsck_pclusters_free(struct fsck *f)
{
	if (!f->pcl)
		return;
	for (size_t i = 0; i < SHARDS; i++) {
		free(f->pcl[i].e);
		pthread_mutex_destroy(&f->pcl[i].lock);
	}
	free(f->pcl);
	f->pcl = NULL;
}

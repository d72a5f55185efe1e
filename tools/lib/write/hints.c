/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/lines.h"
#include "common/util.h"
#include "hints.h"
#include "kiln.h"

static int bad_line(const char *path, unsigned int line, const char *why,
		    const char *what)
{
	kiln_err("%s:%u: %s '%s'", path, line, why, what);
	return -1;
}

static char *skip_space(char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Cuts the next whitespace-delimited word off *p. */
static char *word(char **p)
{
	char *w = skip_space(*p), *e = w;

	while (*e && *e != ' ' && *e != '\t')
		e++;
	*p = *e ? e + 1 : e;
	*e = '\0';
	return w;
}

static int parse_line(struct kiln_hint *hint, char *s, const char *path,
		      unsigned int line, const struct kiln_mkfs_opts *o)
{
	uint32_t blksz = 1u << o->blkszbits;
	uint32_t max = 2047 * blksz < (1u << 20) ? 2047 * blksz : 1u << 20;
	char *size = word(&s), *alg = word(&s), *re = skip_space(s);
	uint64_t v, z = 0;

	if (!*re) {		/* only two words: no algorithm given */
		re = alg;
		alg = "";
	}
	if (!*re)
		return bad_line(path, line, "no regex in", size);
	if (kiln_parse_u64(size, 0, max, &v) || v % blksz)
		return bad_line(path, line, "pcluster size is not 0 or a "
				"multiple of the block size up to the -C limit:",
				size);
	if (*alg && kiln_parse_u64(alg, 0, o->nr_zcfgs - 1, &z))
		return bad_line(path, line, "no such algorithm in -z:", alg);
	if (regcomp(&hint->re, re, REG_EXTENDED | REG_NOSUB))
		return bad_line(path, line, "bad regular expression", re);
	hint->pclustersize = (uint32_t)v;
	hint->zcfg = (unsigned int)z;
	return 0;
}

struct load {
	struct kiln_hints *h;
	const struct kiln_mkfs_opts *o;
};

static int one_line(void *ctx, char *buf, size_t len, unsigned int no)
{
	struct load *l = ctx;
	struct kiln_hints *h = l->h;
	int ret;

	(void)len;
	if (!*skip_space(buf) || buf[0] == '#')
		return 0;
	h->v = xrealloc(h->v, (h->nr + 1) * sizeof(*h->v));
	ret = parse_line(&h->v[h->nr], buf, l->o->compress_hints, no, l->o);
	if (!ret && h->v[h->nr].pclustersize > h->max_pclustersize)
		h->max_pclustersize = h->v[h->nr].pclustersize;
	h->nr += !ret;
	return ret;
}

int kiln_hints_load(struct kiln_hints *h, const struct kiln_mkfs_opts *o)
{
	struct load l = { h, o };
	int ret;

	memset(h, 0, sizeof(*h));
	ret = kiln_each_line(o->compress_hints, one_line, &l);
	if (ret)
		kiln_hints_free(h);
	return ret;
}

const struct kiln_hint *kiln_hints_match(const struct kiln_hints *h,
					 const char *relpath)
{
	for (unsigned int i = 0; i < h->nr; i++)
		if (!regexec(&h->v[i].re, relpath, 0, NULL, 0))
			return &h->v[i];
	return NULL;
}

void kiln_hints_free(struct kiln_hints *h)
{
	for (unsigned int i = 0; i < h->nr; i++)
		regfree(&h->v[i].re);
	free(h->v);
	h->v = NULL;
	h->nr = 0;
}

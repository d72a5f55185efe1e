/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "common/lines.h"
#include "common/util.h"
#include "fcontexts.h"
#include "kiln.h"

#define FC_BIN_MAGIC 0xf97cff8au	/* libselinux's compiled form */

static const char meta[] = ".^$?*+|[]({})\\";

/* libselinux 3.4's test: a backslash hides the character after it. */
static bool has_meta(const char *re)
{
	for (const char *p = re; *p; p++) {
		if (*p == '\\' && p[1])
			p++;
		else if (strchr(".^$?*+|[({", *p))
			return true;
	}
	return false;
}

static int bad_line(const char *file, unsigned int line, const char *why,
		    const char *what)
{
	kiln_err("%s:%u: %s '%s'", file, line, why, what);
	return -1;
}

static uint32_t file_type(const char *t)
{
	static const struct { char c; uint32_t type; } types[] = {
		{ '-', S_IFREG }, { 'd', S_IFDIR }, { 'c', S_IFCHR },
		{ 'b', S_IFBLK }, { 's', S_IFSOCK }, { 'l', S_IFLNK },
		{ 'p', S_IFIFO },
	};

	if (t[0] != '-' || !t[1] || t[2])
		return 0;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].c == t[1])
			return types[i].type;
	return 0;
}

/*
 * The literal start of a regex: up to its first metacharacter, less the
 * character a quantifier there applies to; none if it has alternatives.
 */
static char *literal_prefix(const char *re)
{
	size_t n = strcspn(re, meta);

	if (strchr(re, '|'))
		n = 0;
	else if (re[n] && strchr("?*{", re[n]) && n)
		n--;
	char *p = xmalloc(n + 1);

	memcpy(p, re, n);
	p[n] = '\0';
	return p;
}

/* "^(RE)$" in POSIX extended syntax, from PCRE's; NULL if it cannot be. */
static char *to_posix(const char *re)
{
	size_t n = strlen(re);
	char *out = xmalloc(4 + 12 * n + 1), *o = out;

	o += sprintf(o, "^(");
	for (const char *p = re; *p; p++) {
		const char *cls = NULL;

		if (p[0] == '(' && p[1] == '?')
			break;
		if (p[0] == '\\' && p[1]) {
			switch (p[1]) {
			case 'd': cls = "[0-9]"; break;
			case 'D': cls = "[^0-9]"; break;
			case 'w': cls = "[A-Za-z0-9_]"; break;
			case 'W': cls = "[^A-Za-z0-9_]"; break;
			case 's': cls = "[[:space:]]"; break;
			case 'S': cls = "[^[:space:]]"; break;
			}
		}
		if (cls) {
			o += sprintf(o, "%s", cls);
			p++;
		} else {
			*o++ = *p;
			if (p[0] == '\\' && p[1])
				*o++ = *++p;
		}
	}
	if (strstr(re, "(?")) {
		free(out);
		return NULL;
	}
	strcpy(o, ")$");
	return out;
}

static int parse_line(struct kiln_fcspec *s, char *line, const char *file,
		      unsigned int no)
{
	char *save = NULL, *re = strtok_r(line, " \t", &save);
	char *type = strtok_r(NULL, " \t", &save);
	char *ctx = strtok_r(NULL, " \t", &save);
	char *posix;

	if (!type)
		return bad_line(file, no, "want REGEX [TYPE] CONTEXT in", re);
	if (!ctx) {
		ctx = type;
		type = NULL;
	}
	if (strtok_r(NULL, " \t", &save))
		return bad_line(file, no, "more than REGEX TYPE CONTEXT in", re);
	memset(s, 0, sizeof(*s));
	if (type && !(s->type = file_type(type)))
		return bad_line(file, no, "unknown file type", type);
	s->exact = !has_meta(re);
	s->literal = !re[strcspn(re, meta)];
	if (!s->literal) {
		if (!(posix = to_posix(re)))
			return bad_line(file, no, "PCRE-only syntax in", re);
		if (regcomp(&s->re, posix, REG_EXTENDED | REG_NOSUB)) {
			free(posix);
			return bad_line(file, no, "bad regular expression", re);
		}
		free(posix);
	}
	s->prefix = s->literal ? xstrdup(re) : literal_prefix(re);
	s->context = strcmp(ctx, "<<none>>") ? xstrdup(ctx) : NULL;
	return 0;
}

static void free_spec(struct kiln_fcspec *s)
{
	if (!s->literal)
		regfree(&s->re);
	free(s->prefix);
	free(s->context);
}

struct load {
	struct kiln_fcontexts *fc;
	const char *file;
};

static bool compiled(const char *buf, size_t len)
{
	return len >= 4 && (uint32_t)((uint8_t)buf[0] | (uint8_t)buf[1] << 8 |
		(uint8_t)buf[2] << 16 | (uint32_t)(uint8_t)buf[3] << 24) ==
	       FC_BIN_MAGIC;
}

static int one_line(void *ctx, char *buf, size_t len, unsigned int no)
{
	struct load *l = ctx;
	struct kiln_fcontexts *fc = l->fc;
	char *p = buf + strspn(buf, " \t");
	int ret;

	if (no == 1 && compiled(buf, len)) {
		kiln_err("%s: a compiled file_contexts (.bin): give the text "
			 "one", l->file);
		return -1;
	}
	if (!*p || *p == '#')
		return 0;
	fc->v = xrealloc(fc->v, (fc->nr + 1) * sizeof(*fc->v));
	ret = parse_line(&fc->v[fc->nr], p, l->file, no);
	fc->nr += !ret;
	return ret;
}

/* Regexes first, exact paths after, each kind in file order. */
static void partition(struct kiln_fcontexts *fc)
{
	struct kiln_fcspec *v = xmalloc((fc->nr ? fc->nr : 1) * sizeof(*v));
	uint32_t j = 0;

	for (int exact = 0; exact < 2; exact++)
		for (uint32_t i = 0; i < fc->nr; i++)
			if (fc->v[i].exact == exact)
				v[j++] = fc->v[i];
	free(fc->v);
	fc->v = v;
}

int kiln_fcontexts_load(struct kiln_fcontexts *fc, const char *file)
{
	struct load l = { fc, file };
	int ret;

	memset(fc, 0, sizeof(*fc));
	ret = kiln_each_line(file, one_line, &l);
	if (ret)
		kiln_fcontexts_free(fc);
	else
		partition(fc);
	return ret;
}

const char *kiln_fcontexts_lookup(const struct kiln_fcontexts *fc,
				  const char *path, uint32_t mode)
{
	for (uint32_t i = fc->nr; i-- > 0;) {
		const struct kiln_fcspec *s = &fc->v[i];

		if (s->type && s->type != (mode & S_IFMT))
			continue;
		if (s->literal ? !strcmp(s->prefix, path) :
		    !strncmp(s->prefix, path, strlen(s->prefix)) &&
		    !regexec(&s->re, path, 0, NULL, 0))
			return s->context;
	}
	return NULL;
}

void kiln_fcontexts_free(struct kiln_fcontexts *fc)
{
	for (uint32_t i = 0; i < fc->nr; i++)
		free_spec(&fc->v[i]);
	free(fc->v);
	fc->v = NULL;
	fc->nr = 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * The manifest's parser is strict on purpose: it runs on the device
 * before anything else, on bytes that are only trusted once the signature
 * over them has been checked, and what it accepts must have exactly one
 * meaning (no duplicates, no unknown lines, no leading zeros in numbers).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "manifest.h"

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/*
 * The decimal number at s, up to the first character that is not a digit,
 * into *out when it is at most max: its end, or NULL (no digit, too big).
 * Leading zeros are the caller's to refuse or not.
 */
static const char *parse_decimal(const char *s, uint64_t max, uint64_t *out)
{
	const char *p = s;
	uint64_t v = 0;

	for (; is_digit(*p); p++) {
		if (v > (max - (uint64_t)(*p - '0')) / 10)
			return NULL;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p == s)
		return NULL;
	*out = v;
	return p;
}

/* a decimal without leading zeros (one spelling per number), at most max */
static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v;
	const char *end;

	if (s[0] == '0' && s[1])
		return -1;
	end = parse_decimal(s, max, &v);
	if (!end || *end)
		return -1;
	*out = v;
	return 0;
}

int version_valid(const char *s)
{
	size_t len = strlen(s);
	uint64_t v;

	if (!len || len > MANIFEST_FIELD_MAX)
		return 0;
	for (const char *p = s;; p++) {
		const char *q = parse_decimal(p, 0xffffffffu, &v);
		/* leading zeros are fine (MONTHDAY: 2026.0104), 10 digits at most */
		if (!q || q - p > 10 || (*q && *q != '.'))
			return 0;
		if (!*q)
			return 1;
		p = q;
	}
}

int version_compare(const char *a, const char *b)
{
	while (*a || *b) {
		unsigned long x = strtoul(a, (char **)&a, 10);
		unsigned long y = strtoul(b, (char **)&b, 10);
		if (x != y)
			return x < y ? -1 : 1;
		a += *a == '.';
		b += *b == '.';
	}
	return 0;
}

static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       is_digit(c) || c == '.' || c == '_' || c == '-';
}

int payload_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > MANIFEST_NAME_MAX || s[0] == '.')
		return 0;
	for (; *s; s++)
		if (!name_char(*s))
			return 0;
	/* the bundle's own members */
	return 1;
}

/* a/b/c: each component a name (no ".", "..", empty or hidden ones) */
int payload_target_valid(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > MANIFEST_TARGET_MAX)
		return 0;
	for (const char *c = s; *c; ) {
		if (*c == '.' || *c == '/')
			return 0;
		while (*c && *c != '/')
			if (!name_char(*c++))
				return 0;
		if (*c == '/' && !*++c)
			return 0;
	}
	return 1;
}

static int hex_digit(char c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int parse_sha256(const char *s, unsigned char out[32])
{
	if (strlen(s) != 64)
		return -1;
	for (int i = 0; i < 32; i++) {
		int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

/* splits line at single spaces into at most max fields; -1 otherwise */
static int split(char *line, char **f, int max)
{
	int n = 0;

	for (char *p = line;; p++) {
		if (n == max)
			return -1;
		f[n++] = p;
		p = strchr(p, ' ');
		if (!p)
			break;
		*p = '\0';
	}
	for (int i = 0; i < n; i++)
		if (!*f[i])
			return -1;
	return n;
}

/* Is target a inside target b (b, a slash, then more)? */
static int inside(const char *a, const char *b)
{
	size_t n = strlen(b);

	return *b && !strncmp(a, b, n) && a[n] == '/';
}

static const char *parse_payload(struct manifest *m, char **f, int n)
{
	struct payload *p = &m->payload[m->count];
	int files = strcmp(f[1], "files") == 0;

	if (!files && strcmp(f[1], "rootfs") != 0)
		return "unknown payload type";
	if (n != (files ? 6 : 5))
		return files ? "want: payload files NAME SIZE SHA256 TARGET"
			     : "want: payload rootfs NAME SIZE SHA256";
	if (m->count == MANIFEST_MAX_PAYLOADS)
		return "more than 16 payloads";
	if (!payload_name_valid(f[2]) || !strcmp(f[2], "manifest") ||
	    !strcmp(f[2], "manifest.sig"))
		return "bad payload name";
	if (parse_u64(f[3], UINT64_MAX >> 1, &p->size))
		return "bad payload size";
	if (parse_sha256(f[4], p->sha256))
		return "bad sha256 (64 lower-case hex digits)";
	if (files && !payload_target_valid(f[5]))
		return "bad target (a relative path of plain names)";
	for (unsigned i = 0; i < m->count; i++) {
		if (!strcmp(m->payload[i].name, f[2]))
			return "payload name given twice";
		if (!files && m->payload[i].type == PAYLOAD_ROOTFS)
			return "more than one rootfs payload";
		if (files && !strcmp(m->payload[i].target, f[5]))
			return "payload target given twice";
		if (files && (inside(m->payload[i].target, f[5]) ||
			      inside(f[5], m->payload[i].target)))
			return "payload targets nest (one would replace the "
			       "other's tree)";
	}
	p->type = files ? PAYLOAD_FILES : PAYLOAD_ROOTFS;
	strcpy(p->name, f[2]);
	strcpy(p->target, files ? f[5] : "");
	m->count++;
	return NULL;
}

static const char *parse_line(struct manifest *m, char *line, int lineno)
{
	char *f[8];
	int n = split(line, f, 8);

	if (n < 0)
		return "fields must be separated by one space";
	if (lineno == 1)
		return n == 2 && !strcmp(f[0], "kiln-bundle") && !strcmp(f[1], "1")
			? NULL : "not a kiln-bundle 1 manifest";
	if (!strcmp(f[0], "version") || !strcmp(f[0], "compatible")) {
		int ver = f[0][0] == 'v';
		char *dst = ver ? m->version : m->compatible;
		if (n != 2)
			return "want one value";
		if (*dst)
			return "given twice";
		if (ver ? !version_valid(f[1]) : !payload_name_valid(f[1]))
			return ver ? "bad version (dot-separated numbers)"
				   : "bad board name";
		strcpy(dst, f[1]);
		return NULL;
	}
	if (!strcmp(f[0], "payload") && n >= 2)
		return parse_payload(m, f, n);
	return "unknown line";
}

int manifest_parse(struct manifest *m, const char *text, size_t n,
		   char *err, size_t errlen)
{
	char *buf = NULL, *line, *next;
	const char *why = NULL;
	int lineno = 0;

	memset(m, 0, sizeof(*m));
	if (n > MANIFEST_MAX_SIZE || !n || text[n - 1] != '\n' ||
	    memchr(text, '\0', n)) {
		snprintf(err, errlen, "manifest: not text lines of at most %d bytes",
			 MANIFEST_MAX_SIZE);
		return -1;
	}
	if (!(buf = malloc(n + 1))) {
		snprintf(err, errlen, "manifest: out of memory");
		return -1;
	}
	memcpy(buf, text, n);
	buf[n] = '\0';
	for (line = buf; *line && !why; line = next) {
		next = strchr(line, '\n');
		*next++ = '\0';
		why = parse_line(m, line, ++lineno);
	}
	if (!why && (!*m->version || !*m->compatible || !m->count))
		why = !*m->version ? "no version" : !*m->compatible
			? "no compatible" : "no payload";
	free(buf);
	if (why) {
		snprintf(err, errlen, "manifest line %d: %s", lineno, why);
		return -1;
	}
	return 0;
}

size_t manifest_format(const struct manifest *m, char *out)
{
	size_t o = 0;

	o += (size_t)sprintf(out + o, "kiln-bundle %d\nversion %s\ncompatible %s\n",
			     MANIFEST_FORMAT, m->version, m->compatible);
	for (unsigned i = 0; i < m->count; i++) {
		const struct payload *p = &m->payload[i];
		o += (size_t)sprintf(out + o, "payload %s %s %llu ",
				     p->type == PAYLOAD_FILES ? "files" : "rootfs",
				     p->name, (unsigned long long)p->size);
		for (int k = 0; k < 32; k++)
			o += (size_t)sprintf(out + o, "%02x", p->sha256[k]);
		o += (size_t)sprintf(out + o, "%s%s\n", *p->target ? " " : "",
				     p->target);
	}
	return o;
}

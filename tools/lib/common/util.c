/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kiln.h"
#include "util.h"
#include "format/le.h"

const char *kiln_progname = "kiln";
int kiln_verbosity = 1;

bool kiln_err_first_only;
static atomic_bool err_said;

void kiln_err(const char *fmt, ...)
{
	va_list ap;

	if (kiln_err_first_only && atomic_exchange(&err_said, true))
		return;
	flockfile(stderr);	/* a line, never two threads' mixed */
	fprintf(stderr, "%s: ", kiln_progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

void kiln_info(int level, const char *fmt, ...)
{
	va_list ap;

	if (kiln_verbosity < level)
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int kiln_oom_status = 1;

/* Out of memory is not an input error we can report usefully: stop. */
static void *oom(void *p)
{
	if (!p) {
		kiln_err("out of memory");
		exit(kiln_oom_status);
	}
	return p;
}

void *xmalloc(size_t n) { return oom(malloc(n ? n : 1)); }
void *xcalloc(size_t n, size_t size) { return oom(calloc(n ? n : 1, size ? size : 1)); }
void *xrealloc(void *p, size_t n) { return oom(realloc(p, n ? n : 1)); }
char *xstrdup(const char *s) { return oom(strdup(s)); }

char *path_join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = xmalloc(a + b + 2);

	memcpy(p, dir, a);
	p[a] = '/';
	memcpy(p + a + 1, name, b + 1);
	return p;
}

/* Reads until len bytes or end of file; returns the count read or -1. */
ssize_t pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, p + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int kiln_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		unsigned int digit = (unsigned int)(*s - '0');

		if (digit > 9 || v > (UINT64_MAX - digit) / 10)
			return -1;
		v = v * 10 + digit;
	}
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Names the option getopt stopped at (musl and glibc set optind differently). */
const char *kiln_bad_option(int argc, char **argv)
{
	static char buf[3] = "-?";

	if (optopt > 0 && optopt < 128) {
		buf[1] = (char)optopt;
		return buf;
	}
	return optind - 1 < argc ? argv[optind - 1] : argv[argc - 1];
}

uint64_t kiln_hash64(const void *p, size_t n, uint64_t seed)
{
	const uint8_t *b = p;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ seed ^ n;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		h = (h ^ get_le64(b + i)) * 0xff51afd7ed558ccdull;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ b[i]) * 0xc4ceb9fe1a85ec53ull;
	return h ^ h >> 32;
}

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kiln.h"
#include "lines.h"

int kiln_each_line(const char *path, kiln_line_fn fn, void *ctx)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned int no = 0;
	int ret = 0;

	if (!f) {
		kiln_err("%s: %s", path, strerror(errno));
		return -1;
	}
	while (!ret && (n = getline(&buf, &cap, f)) >= 0) {
		while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			buf[--n] = '\0';
		ret = fn(ctx, buf, (size_t)n, ++no);
	}
	if (!ret && ferror(f)) {
		kiln_err("%s: %s", path, strerror(errno));
		ret = -1;
	}
	free(buf);
	fclose(f);
	return ret;
}

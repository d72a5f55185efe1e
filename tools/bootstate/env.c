/* SPDX-License-Identifier: MIT */
/*
 * U-Boot environment blobs. The files live on a FAT partition anyone with
 * the SD card can write, so parsing trusts nothing: every scan is bounded
 * by the blob's size, and a blob whose CRC matches but whose entries are
 * malformed is refused whole rather than half-used.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "env.h"

/* Bitwise: 4 KiB once per run does not need a table. */
uint32_t env_crc32(const unsigned char *p, size_t n)
{
	uint32_t crc = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
	}
	return ~crc;
}

static int valid_name(const char *name, size_t len)
{
	/* '=' would split differently on the way back in; empty is no name */
	return len > 0 && memchr(name, '=', len) == NULL;
}

int env_parse(struct env *e, const unsigned char *blob, size_t size,
	      const char **why)
{
	if (size < ENV_MIN_SIZE) {
		*why = "shorter than 5 bytes";
		return -1;
	}
	uint32_t stored = (uint32_t)blob[0] | (uint32_t)blob[1] << 8 |
			  (uint32_t)blob[2] << 16 | (uint32_t)blob[3] << 24;
	const unsigned char *data = blob + 4;
	size_t len = size - 4;

	if (env_crc32(data, len) != stored) {
		*why = "CRC mismatch";
		return -1;
	}
	for (size_t pos = 0; pos < len && data[pos] != '\0';) {
		const unsigned char *nul = memchr(data + pos, '\0', len - pos);
		if (!nul) {
			*why = "entry runs past the end";
			goto bad;
		}
		if (e->count >= ENV_MAX_VARS) {
			/* bounds the quadratic duplicate check on hostile blobs */
			*why = "more than 1024 variables";
			goto bad;
		}
		const char *entry = (const char *)data + pos;
		size_t elen = (size_t)(nul - (data + pos));
		const char *eq = memchr(entry, '=', elen);
		if (!eq || eq == entry) {
			*why = "entry without a name=value form";
			goto bad;
		}
		/* entries end in NUL, so the name is copied and cut at '=' */
		char *name = strndup(entry, (size_t)(eq - entry));
		int rc = name ? env_set(e, name, eq + 1) : -1;
		free(name);
		if (rc) {
			*why = "out of memory";
			env_free(e);
			return -2;
		}
		pos += elen + 1;
	}
	return 0;
bad:
	env_free(e);
	return -1;
}

int env_serialize(const struct env *e, unsigned char *out, size_t size,
		  const char **why)
{
	size_t pos = 4;

	if (size < ENV_MIN_SIZE) {
		*why = "environment size below 5 bytes";
		return -1;
	}
	memset(out, 0, size);
	for (size_t i = 0; i < e->count; i++) {
		size_t nl = strlen(e->vars[i].name);
		size_t vl = strlen(e->vars[i].value);
		/* name '=' value NUL, and room left for the final NUL */
		if (nl + vl + 2 >= size - pos) {
			*why = "variables do not fit in the environment";
			return -1;
		}
		memcpy(out + pos, e->vars[i].name, nl);
		out[pos + nl] = '=';
		memcpy(out + pos + nl + 1, e->vars[i].value, vl);
		pos += nl + vl + 2;
	}
	uint32_t crc = env_crc32(out + 4, size - 4);
	for (int k = 0; k < 4; k++)
		out[k] = (unsigned char)(crc >> (8 * k));
	return 0;
}

const char *env_get(const struct env *e, const char *name)
{
	for (size_t i = 0; i < e->count; i++)
		if (strcmp(e->vars[i].name, name) == 0)
			return e->vars[i].value;
	return NULL;
}

int env_set(struct env *e, const char *name, const char *value)
{
	if (!valid_name(name, strlen(name))) {
		errno = EINVAL;
		return -1;
	}
	char *v = strdup(value);
	if (!v)
		return -1;
	/* a later duplicate replaces the earlier one, as `env import` does */
	for (size_t i = 0; i < e->count; i++) {
		if (strcmp(e->vars[i].name, name) == 0) {
			free(e->vars[i].value);
			e->vars[i].value = v;
			return 0;
		}
	}
	char *n = strdup(name);
	struct env_var *nv = realloc(e->vars, (e->count + 1) * sizeof(*nv));
	if (!n || !nv) {
		free(n);
		free(v);
		if (nv)
			e->vars = nv;
		return -1;
	}
	e->vars = nv;
	e->vars[e->count].name = n;
	e->vars[e->count].value = v;
	e->count++;
	return 0;
}

int env_copy(struct env *dst, const struct env *src)
{
	for (size_t i = 0; i < src->count; i++) {
		if (env_set(dst, src->vars[i].name, src->vars[i].value)) {
			env_free(dst);
			return -1;
		}
	}
	return 0;
}

void env_free(struct env *e)
{
	for (size_t i = 0; i < e->count; i++) {
		free(e->vars[i].name);
		free(e->vars[i].value);
	}
	free(e->vars);
	e->vars = NULL;
	e->count = 0;
}

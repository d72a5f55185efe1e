/* SPDX-License-Identifier: MIT */
/*
 * U-Boot's binary environment, non-redundant format, as mkenvimage writes
 * it and `env import -c` / `env export -c` / fw_printenv read and write it:
 * a little-endian CRC32 (zlib polynomial) of every byte after the first 4,
 * then "name=value\0" entries ended by an empty one, the rest padding.
 */
#ifndef KILN_BOOTSTATE_ENV_H
#define KILN_BOOTSTATE_ENV_H

#include <stddef.h>
#include <stdint.h>

#define ENV_SIZE 4096	/* what we write: mkenvimage -s 4096 */
#define ENV_MIN_SIZE 5	/* the CRC and one byte of data, as U-Boot accepts */
#define ENV_MAX_VARS 1024

struct env_var {
	char *name;
	char *value;
};

struct env {
	size_t count;
	struct env_var *vars;	/* in the order read or first set */
};

uint32_t env_crc32(const unsigned char *p, size_t n);

/*
 * Parses a blob of any size into *e (which must be empty). Returns 0, or -1
 * (a bad blob) or -2 (out of memory) with *why set to a static reason;
 * e then holds nothing.
 */
int env_parse(struct env *e, const unsigned char *blob, size_t size,
	      const char **why);

/* Fills out[0..size) with *e; -1 with *why when it does not fit. */
int env_serialize(const struct env *e, unsigned char *out, size_t size,
		  const char **why);

const char *env_get(const struct env *e, const char *name);
/* Sets or replaces a variable; -1 on a bad name or no memory. */
int env_set(struct env *e, const char *name, const char *value);
/* Deep copy; -1 on no memory (dst is then empty). */
int env_copy(struct env *dst, const struct env *src);
void env_free(struct env *e);

#endif

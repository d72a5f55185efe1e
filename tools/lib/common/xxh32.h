/* SPDX-License-Identifier: MIT */
/* XXH32, the hash of EROFS's xattr name filter (format reference §4.4). */
#ifndef KILN_COMMON_XXH32_H
#define KILN_COMMON_XXH32_H

#include <stddef.h>
#include <stdint.h>

uint32_t kiln_xxh32(const void *p, size_t n, uint32_t seed);

#endif

/* SPDX-License-Identifier: MIT */
/* XXH32 as its specification (xxhash.com, "XXH32 algorithm") gives it. */
#include "format/le.h"
#include "xxh32.h"

#define P1 2654435761u
#define P2 2246822519u
#define P3 3266489917u
#define P4 668265263u
#define P5 374761393u

static uint32_t rotl(uint32_t x, int r)
{
	return x << r | x >> (32 - r);
}

static uint32_t round32(uint32_t acc, uint32_t lane)
{
	return rotl(acc + lane * P2, 13) * P1;
}

uint32_t kiln_xxh32(const void *p, size_t n, uint32_t seed)
{
	const uint8_t *b = p, *end = b + n;
	uint32_t h;

	if (n >= 16) {
		uint32_t v[4] = { seed + P1 + P2, seed + P2, seed, seed - P1 };

		for (; end - b >= 16; b += 16)
			for (int i = 0; i < 4; i++)
				v[i] = round32(v[i], get_le32(b + 4 * i));
		h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18);
	} else {
		h = seed + P5;
	}
	h += (uint32_t)n;
	for (; end - b >= 4; b += 4)
		h = rotl(h + get_le32(b) * P3, 17) * P4;
	for (; b < end; b++)
		h = rotl(h + *b * P5, 11) * P1;
	h ^= h >> 15;
	h *= P2;
	h ^= h >> 13;
	h *= P3;
	return h ^ h >> 16;
}

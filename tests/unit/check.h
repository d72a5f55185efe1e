/* SPDX-License-Identifier: MIT */
/* A minimal unit-test harness: each CHECK is one counted assertion. */
#ifndef KILN_CHECK_H
#define KILN_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond) do { \
	if (cond) { check_passed++; } else { check_failed++; \
		fprintf(stderr, "%s:%d: CHECK failed: %s\n", \
			__FILE__, __LINE__, #cond); } \
} while (0)

#define CHECK_BYTES(got, hex) CHECK(check_hex(got, hex))

/* Compares bytes with a hex string such as "e2e1 f5e0" (spaces ignored). */
static inline int check_hex(const unsigned char *got, const char *hex)
{
	size_t i = 0;

	for (; *hex; hex++) {
		unsigned int v;

		if (*hex == ' ')
			continue;
		if (sscanf(hex, "%2x", &v) != 1 || got[i] != v) {
			fprintf(stderr, "  byte %zu: got %02x, want %.2s\n",
				i, got[i], hex);
			return 0;
		}
		hex++;
		i++;
	}
	return 1;
}

/* splitmix64, seeded by the test: every run draws the same cases. */
static uint64_t rng_state;

static inline uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Prints the closing counts; exit status is non-zero on any failure. */
static inline int check_report(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, check_passed, check_failed);
	return check_failed != 0;
}

#endif

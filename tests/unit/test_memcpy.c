/* SPDX-License-Identifier: MIT */
/*
 * tools/musl/memcpy.c, the short-copy memcpy of the release binaries:
 * every length from 0 to past its 256-byte cut-over, at every alignment
 * of source and destination, copies exactly those bytes and touches none
 * around them. Built here (ASan) with a byte loop standing in for musl's.
 */
#include <stdint.h>
#include "check.h"

void *__real_memcpy(void *restrict d, const void *restrict s, size_t n);
void *__wrap_memcpy(void *restrict d, const void *restrict s, size_t n);

static size_t real_calls;

void *__real_memcpy(void *restrict d, const void *restrict s, size_t n)
{
	real_calls++;
	for (size_t i = 0; i < n; i++)
		((unsigned char *)d)[i] = ((const unsigned char *)s)[i];
	return d;
}

#include "../../tools/musl/memcpy.c"

#define MAXN	300
#define GUARD	32

int main(void)
{
	static unsigned char src[MAXN + 2 * GUARD], dst[MAXN + 2 * GUARD];
	int bad = 0;

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i * 131 + 7);
	for (size_t n = 0; n <= MAXN; n++)
		for (size_t so = 0; so < 16; so++)
			for (size_t dof = 0; dof < 16; dof++) {
				unsigned char *d = dst + GUARD + dof;
				const unsigned char *s = src + GUARD + so;

				memset(dst, 0xa5, sizeof(dst));
				if (__wrap_memcpy(d, s, n) != d)
					bad++;
				for (size_t i = 0; i < sizeof(dst); i++) {
					unsigned char *p = dst + i;
					unsigned char want = p >= d && p < d + n ?
						s[p - d] : 0xa5;

					bad += *p != want;
				}
			}
	CHECK(bad == 0);
	/* only copies past the cut-over go to musl's */
	CHECK(real_calls == (MAXN - 256) * 16 * 16);
	return check_report("test_memcpy");
}

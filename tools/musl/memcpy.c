/* SPDX-License-Identifier: MIT */
/*
 * Short copies for the static musl binaries, linked with --wrap=memcpy.
 *
 * liblzma copies every LZMA match with memcpy, most of them a few dozen
 * bytes. musl's x86_64 memcpy is "rep movsq" plus byte loops, whose
 * start-up cost dominates such copies: 14% of a check of an lzma image went
 * there, and it was the whole gap to erofs-utils linked with glibc (lzma
 * check 0.57 -> 0.48 s with this). Copies up to 256 bytes are done here
 * with overlapping unaligned loads and stores; longer ones go to musl's,
 * which is fast at length.
 */
#include <stddef.h>
#include <stdint.h>

void *__real_memcpy(void *restrict d, const void *restrict s, size_t n);
void *__wrap_memcpy(void *restrict d, const void *restrict s, size_t n);

typedef uint64_t v16 __attribute__((vector_size(16), may_alias, aligned(1)));
typedef uint64_t u64u __attribute__((may_alias, aligned(1)));
typedef uint32_t u32u __attribute__((may_alias, aligned(1)));

/* the loops must not be turned back into a call to memcpy */
__attribute__((optimize("no-tree-loop-distribute-patterns")))
void *__wrap_memcpy(void *restrict d, const void *restrict s, size_t n)
{
	unsigned char *dp = d;
	const unsigned char *sp = s;

	if (n > 256)
		return __real_memcpy(d, s, n);
	if (n >= 16) {
		/* 16-byte blocks, the last one overlapping the one before */
		v16 last = *(const v16 *)(sp + n - 16);

		for (size_t i = 0; i + 16 <= n; i += 16)
			*(v16 *)(dp + i) = *(const v16 *)(sp + i);
		*(v16 *)(dp + n - 16) = last;
	} else if (n >= 8) {
		uint64_t a = *(const u64u *)sp, b = *(const u64u *)(sp + n - 8);

		*(u64u *)dp = a;
		*(u64u *)(dp + n - 8) = b;
	} else if (n >= 4) {
		uint32_t a = *(const u32u *)sp, b = *(const u32u *)(sp + n - 4);

		*(u32u *)dp = a;
		*(u32u *)(dp + n - 4) = b;
	} else {
		for (size_t i = 0; i < n; i++)
			dp[i] = sp[i];
	}
	return d;
}

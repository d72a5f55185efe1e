/* SPDX-License-Identifier: MIT */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "profile.h"

static bool enabled;
static _Atomic uint64_t total_ns[KILN_PROF_NR];

static const char *const names[KILN_PROF_NR] = {
	"walk", "layout", "queue", "wait", "place", "copy", "meta",
	"read", "compress", "flat",
};

void kiln_prof_init(void)
{
	const char *e = getenv("KILN_PROFILE");

	enabled = e && *e && *e != '0';
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t kiln_prof_start(void)
{
	return enabled ? now_ns() : 0;
}

uint64_t kiln_prof_add(enum kiln_prof_stage stage, uint64_t start)
{
	uint64_t now;

	if (!enabled)
		return 0;
	now = now_ns();
	atomic_fetch_add_explicit(&total_ns[stage], now - start,
				  memory_order_relaxed);
	return now;
}

void kiln_prof_report(void)
{
	if (!enabled)
		return;
	fprintf(stderr, "profile (s; main thread, then summed over workers):");
	for (int i = 0; i < KILN_PROF_NR; i++)
		fprintf(stderr, "%s %s %.2f", i == KILN_PROF_READ ? " |" : "",
			names[i], (double)atomic_load(&total_ns[i]) / 1e9);
	fputc('\n', stderr);
}

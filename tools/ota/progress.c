/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "progress.h"

static int json;
static char step[32], what[128];
static double t0, last;
static unsigned last_pct;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void progress_json(int on)
{
	json = on;
}

/* s as a JSON string body: quotes, backslashes, control bytes escaped */
static void json_str(const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
}

void progress_step(const char *s, const char *w)
{
	snprintf(step, sizeof(step), "%s", s);
	snprintf(what, sizeof(what), "%s", w);
	t0 = last = now();
	last_pct = 0;
	if (json) {
		printf("{\"event\":\"step\",\"step\":\"%s\",\"what\":\"", step);
		json_str(what);
		printf("\"}\n");
		fflush(stdout);
	} else {
		fprintf(stderr, "kiln-update: %s %s\n", step, what);
	}
}

void progress_bytes(uint64_t done, uint64_t total)
{
	double t = now();
	unsigned pct = total ? (unsigned)(done * 100 / total) : 0;

	/* every second, and at each quarter (a fast step says something) */
	if (t - last < 1.0 && (pct >= 100 || pct / 25 == last_pct / 25))
		return;
	last = t;
	last_pct = pct;
	double rate = (double)done / (t - t0 > 1e-6 ? t - t0 : 1e-6) / 1048576.0;
	if (json) {
		printf("{\"event\":\"progress\",\"step\":\"%s\",\"done\":%llu,"
		       "\"total\":%llu,\"percent\":%u,\"mib_per_s\":%.1f}\n", step,
		       (unsigned long long)done, (unsigned long long)total, pct, rate);
		fflush(stdout);
	} else {
		fprintf(stderr, "kiln-update: %s %3u%% %.1f MiB/s\n", step, pct, rate);
	}
}

void progress_done(uint64_t bytes)
{
	double dt = now() - t0;

	if (json) {
		printf("{\"event\":\"done\",\"step\":\"%s\",\"bytes\":%llu,"
		       "\"seconds\":%.2f}\n", step, (unsigned long long)bytes, dt);
		fflush(stdout);
	} else if (bytes) {
		fprintf(stderr, "kiln-update: %s done, %llu bytes in %.1f s\n", step,
			(unsigned long long)bytes, dt);
	}
}

void progress_note(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (json) {
		printf("{\"event\":\"note\",\"message\":\"");
		json_str(buf);
		printf("\"}\n");
		fflush(stdout);
	} else {
		fprintf(stderr, "kiln-update: %s\n", buf);
	}
}

void progress_result(int ok, const char *msg)
{
	if (json) {
		printf("{\"event\":\"result\",\"ok\":%s,\"message\":\"", ok ? "true" : "false");
		json_str(msg);
		printf("\"}\n");
		fflush(stdout);
	}
	/* the one-line error goes to stderr either way */
	if (!ok || !json)
		fprintf(stderr, "kiln-update: %s%s\n", ok ? "" : "error: ", msg);
}

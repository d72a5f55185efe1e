/* SPDX-License-Identifier: MIT */
/*
 * What kiln-update tells its user: lines on stderr ("kiln-update: ...",
 * and for long steps a percentage and rate at most once a second), or
 * with --json one JSON object per line on stdout for a program to read.
 */
#ifndef KILN_OTA_PROGRESS_H
#define KILN_OTA_PROGRESS_H

#include <stdint.h>

void progress_json(int on);
/* A step begins (its name and what it works on). */
void progress_step(const char *step, const char *what);
/* done of total bytes of the current step; printed when a second passed. */
void progress_bytes(uint64_t done, uint64_t total);
/* A step ended: its bytes and seconds. */
void progress_done(uint64_t bytes);
/* One message (info). */
void progress_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The final word: ok, or the error that stopped the update. */
void progress_result(int ok, const char *msg);

#endif

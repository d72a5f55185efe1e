/* SPDX-License-Identifier: MIT */
/*
 * The A/B boot state as the U-Boot script reads it (RAUC's scheme): two
 * copies, state0.env and state1.env; the valid one with the highest
 * KILN_SEQ wins, and a change is written to the other one, so the copy in
 * use is never touched by a write that may be cut short.
 */
#ifndef KILN_BOOTSTATE_STATE_H
#define KILN_BOOTSTATE_STATE_H

#include "env.h"

#define STATE_TRIES 3		/* BOOT_x_LEFT after mark-good / set-primary */
#define STATE_MAX_FILE 65536	/* larger copies are refused unread */
#define STATE_MAX_SEQ 9999999999999998ull	/* KILN_SEQ: see read_copy */

struct state_copy {
	int valid;
	char why[160];		/* when not valid */
	unsigned long long seq;
};

struct state {
	char order[4];		/* "AB", "BA", "A" or "B": BOOT_ORDER's slots */
	unsigned left[2];	/* BOOT_A_LEFT, BOOT_B_LEFT */
	unsigned long long seq;
	int winner;		/* 0, 1, or -1: no valid copy, defaults */
	struct state_copy copy[2];
	struct env env;		/* the winner's, other variables kept */
};

/* Reads both copies of DIR; -1 with err when DIR itself cannot be used. */
int state_load(int dirfd, struct state *st, char *err, size_t errlen);
/*
 * Writes st to the copy that did not win (state0 when none did) with
 * KILN_SEQ one above the winner's; which copy in *written.
 */
int state_store(int dirfd, struct state *st, int *written,
		char *err, size_t errlen);
/* The image build's start: both copies with the defaults, seq 0 and 1. */
int state_init(int dirfd, char *err, size_t errlen);
void state_defaults(struct state *st);
/* "A" 0, "B" 1, anything else -1 */
int state_parse_slot(const char *s);
/*
 * The running slot from a kernel command line in a file (/proc/cmdline):
 * the last kiln.slot=, as a later one overrides an earlier one and /init
 * boots by it. 0 for A, 1 for B; -1 when there is none or the last is not
 * A or B; -2 when the file cannot be opened (errno says why).
 */
int state_cmdline_slot(const char *path);
/* "AB" -> "A B" */
void state_order_string(const struct state *st, char *out, size_t outlen);
void state_free(struct state *st);

#endif

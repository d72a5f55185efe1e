/* SPDX-License-Identifier: MIT */
/*
 * kiln-bootstate: reads and changes the A/B boot state the U-Boot script
 * uses (state.h). One command per run, under a lock on the directory so
 * that two runs (an updater and the boot's mark-good) never interleave.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>
#include "state.h"

enum { EXIT_OK = 0, EXIT_ERR = 1, EXIT_USAGE = 2 };

static const char usage_text[] =
"Usage: kiln-bootstate [--dir DIR] [--json] show\n"
"       kiln-bootstate [--dir DIR] [--cmdline FILE] mark-good [SLOT]\n"
"       kiln-bootstate [--dir DIR] mark-bad SLOT\n"
"       kiln-bootstate [--dir DIR] set-primary SLOT\n"
"       kiln-bootstate [--dir DIR] init\n"
"The A/B boot state of the U-Boot script: DIR/state0.env and state1.env\n"
"(default DIR /boot), U-Boot environments of 4096 bytes; the valid copy\n"
"with the highest KILN_SEQ is used, a change goes to the other one.\n"
"  show         print order=.. a_left=.. b_left=.. seq=.. copy=.. and why\n"
"               a copy is not valid (--json: as one JSON object)\n"
"  mark-good    the slot's tries back to 3 (default: the running slot,\n"
"               kiln.slot= in /proc/cmdline or --cmdline FILE)\n"
"  mark-bad     the slot's tries to 0\n"
"  set-primary  the slot first in BOOT_ORDER, its tries to 3\n"
"  init         both copies with the defaults (order A B, tries 3, seq 0)\n"
"SLOT is A or B. Exit status: 0 done, 1 error (DIR unusable, write failed,\n"
"no running slot), 2 bad usage.\n";

static int usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "kiln-bootstate: %s%s%s (see --help)\n", msg,
		arg ? ": " : "", arg ? arg : "");
	return EXIT_USAGE;
}

/* the running slot from the command line in path; -1 with why on stderr */
static int running_slot(const char *path)
{
	int slot = state_cmdline_slot(path);

	if (slot == -2)
		fprintf(stderr, "kiln-bootstate: %s: %s\n", path, strerror(errno));
	else if (slot < 0)
		fprintf(stderr, "kiln-bootstate: no kiln.slot=A|B in %s; "
			"name the slot\n", path);
	return slot < 0 ? -1 : slot;
}

static void print_state(const struct state *st)
{
	char order[8];

	state_order_string(st, order, sizeof(order));
	printf("order=%s a_left=%u b_left=%u seq=%llu copy=", order,
	       st->left[0], st->left[1], st->seq);
	if (st->winner < 0)
		printf("none\n");
	else
		printf("%d\n", st->winner);
}

static void show(const struct state *st, int json)
{
	char order[8];

	state_order_string(st, order, sizeof(order));
	if (json) {
		/* every string here is ours or validated: nothing to escape */
		printf("{\"order\":\"%s\",\"a_left\":%u,\"b_left\":%u,"
		       "\"seq\":%llu,\"copy\":", order, st->left[0],
		       st->left[1], st->seq);
		if (st->winner < 0)
			printf("null");
		else
			printf("%d", st->winner);
		printf(",\"copies\":[");
		for (int i = 0; i < 2; i++) {
			const struct state_copy *c = &st->copy[i];
			if (i)
				putchar(',');
			if (c->valid)
				printf("{\"valid\":true,\"seq\":%llu}", c->seq);
			else
				printf("{\"valid\":false,\"error\":\"%s\"}",
				       c->why);
		}
		printf("]}\n");
		return;
	}
	print_state(st);
	for (int i = 0; i < 2; i++) {
		if (st->copy[i].valid)
			printf("state%d.env: valid, seq %llu\n", i,
			       st->copy[i].seq);
		else
			printf("state%d.env: not valid: %s\n", i,
			       st->copy[i].why);
	}
	if (st->winner < 0)
		printf("no valid copy: the defaults are used\n");
}

/* Applies CMD to st; which slot in slot. */
static void apply(const char *cmd, int slot, struct state *st)
{
	char letter = (char)('A' + slot);

	if (strcmp(cmd, "mark-bad") == 0) {
		st->left[slot] = 0;
		return;
	}
	st->left[slot] = STATE_TRIES;
	if (strcmp(cmd, "set-primary") == 0) {
		/* the slot first, the others in their old order (RAUC's way) */
		char order[4] = { letter, 0, 0, 0 };
		size_t n = 1;
		for (const char *p = st->order; *p; p++)
			if (*p != letter)
				order[n++] = *p;
		memcpy(st->order, order, sizeof(order));
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "cmdline", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = "/boot", *cmdline = "/proc/cmdline";
	int json = 0, c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'c': cmdline = optarg; break;
		case 'j': json = 1; break;
		case 'h': fputs(usage_text, stdout); return EXIT_OK;
		default:
			return usage_error("unknown option or missing argument",
					   argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return usage_error("no command", NULL);
	const char *cmd = argv[optind++];
	int nargs = argc - optind, slot = -1;
	const char *slot_arg = nargs > 0 ? argv[optind] : NULL;
	int takes_slot = !strcmp(cmd, "mark-good") || !strcmp(cmd, "mark-bad") ||
			 !strcmp(cmd, "set-primary");

	if (!takes_slot && strcmp(cmd, "show") && strcmp(cmd, "init"))
		return usage_error("unknown command", cmd);
	if (nargs > (takes_slot ? 1 : 0))
		return usage_error("too many arguments", argv[optind + nargs - 1]);
	if (takes_slot && !slot_arg && strcmp(cmd, "mark-good"))
		return usage_error("which slot (A or B)?", cmd);
	if (slot_arg && (slot = state_parse_slot(slot_arg)) < 0)
		return usage_error("a slot is A or B, not", slot_arg);
	if (takes_slot && slot < 0 && (slot = running_slot(cmdline)) < 0)
		return EXIT_ERR;

	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		fprintf(stderr, "kiln-bootstate: %s: %s\n", dir, strerror(errno));
		return EXIT_ERR;
	}
	int readonly = !strcmp(cmd, "show");
	if (flock(dirfd, readonly ? LOCK_SH : LOCK_EX) != 0) {
		fprintf(stderr, "kiln-bootstate: %s: lock: %s\n", dir,
			strerror(errno));
		return EXIT_ERR;
	}
	char err[256];
	int rc = EXIT_OK, written;
	struct state st = { .env = { 0, NULL } };
	if (!strcmp(cmd, "init")) {
		if (state_init(dirfd, err, sizeof(err)))
			rc = EXIT_ERR;
	} else if (state_load(dirfd, &st, err, sizeof(err))) {
		rc = EXIT_ERR;
	} else if (readonly) {
		show(&st, json);
	} else {
		if (st.winner < 0)
			fprintf(stderr, "kiln-bootstate: %s: no valid state "
				"copy, starting from the defaults\n", dir);
		apply(cmd, slot, &st);
		if (state_store(dirfd, &st, &written, err, sizeof(err))) {
			rc = EXIT_ERR;
		} else {
			st.winner = written;
			st.seq++;
			print_state(&st);
		}
	}
	if (rc)
		fprintf(stderr, "kiln-bootstate: %s: %s\n", dir, err);
	state_free(&st);
	close(dirfd);
	return rc;
}

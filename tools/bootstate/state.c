/* SPDX-License-Identifier: MIT */
/*
 * The two-copy A/B state. A write to a FAT is not atomic across a power
 * cut, so atomicity comes from the pair: only the losing copy is ever
 * written (copywrite.c), and whatever a cut leaves of it fails its CRC or
 * its variables, so the untouched winner is read next time.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "copywrite.h"
#include "state.h"

static const char *const copy_name[2] = { "state0.env", "state1.env" };
static const char *const tmp_name[2] = { "state0.env.tmp", "state1.env.tmp" };
static const char *const left_var[2] = { "BOOT_A_LEFT", "BOOT_B_LEFT" };

void state_defaults(struct state *st)
{
	memset(st, 0, sizeof(*st));
	strcpy(st->order, "AB");
	st->left[0] = st->left[1] = STATE_TRIES;
	st->winner = -1;
}

int state_parse_slot(const char *s)
{
	return (s[0] == 'A' || s[0] == 'B') && !s[1] ? s[0] - 'A' : -1;
}

int state_cmdline_slot(const char *path)
{
	char buf[4096];
	int slot = -1;
	FILE *f = fopen(path, "re");

	if (!f)
		return -2;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (char *save, *tok = strtok_r(buf, " \t\n", &save); tok;
	     tok = strtok_r(NULL, " \t\n", &save))
		if (strncmp(tok, "kiln.slot=", 10) == 0)
			slot = state_parse_slot(tok + 10);
	return slot;
}

void state_free(struct state *st)
{
	env_free(&st->env);
}

void state_order_string(const struct state *st, char *out, size_t outlen)
{
	size_t o = 0;

	for (const char *p = st->order; *p && o + 2 < outlen; p++) {
		if (o)
			out[o++] = ' ';
		out[o++] = *p;
	}
	out[o] = '\0';
}

/*
 * Decimal digits only, no sign, no overflow, no leading zero: "0x3" or
 * "-1" is garbage, and U-Boot's test reads "010" as octal 8.
 */
static int parse_dec(const char *s, unsigned long long max,
		     unsigned long long *out)
{
	unsigned long long v = 0;

	if (!*s || (s[0] == '0' && s[1]))
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		unsigned d = (unsigned)(*s - '0');
		if (v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* BOOT_ORDER: slot names split by spaces, each A or B at most once. */
static int parse_order(const char *s, char order[4])
{
	size_t n = 0;

	for (; *s; s++) {
		if (*s == ' ')
			continue;
		/* a repeat is refused, which also keeps n within order[] */
		if ((*s != 'A' && *s != 'B') || (s[1] && s[1] != ' ') ||
		    memchr(order, *s, n))
			return -1;
		order[n++] = *s;
	}
	order[n] = '\0';
	return n ? 0 : -1;
}

/*
 * Reads one copy into *c and, when valid, its variables into *env, order
 * and left. -1 only when out of memory: any fault of the file is c->why.
 */
static int read_copy(int dirfd, int i, struct state_copy *c, struct env *env,
		      char order[4], unsigned left[2])
{
	const char *why = NULL;
	unsigned char *buf = NULL;
	unsigned long long v;
	size_t size = 0;
	struct stat sb;
	int fd = openat(dirfd, copy_name[i], O_RDONLY | O_CLOEXEC | O_NOCTTY |
			O_NONBLOCK);	/* a FIFO must not hang us */

	if (fd < 0 || fstat(fd, &sb) != 0) {
		why = errno == ENOENT ? "missing" : strerror(errno);
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		why = "not a regular file";
		goto out;
	}
	/* read to EOF, not st_size: the size may lie or change under us */
	buf = malloc(STATE_MAX_FILE + 1);
	if (!buf)
		goto oom;
	while (size <= STATE_MAX_FILE) {
		ssize_t r = read(fd, buf + size, STATE_MAX_FILE + 1 - size);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			why = strerror(errno);
			goto out;
		}
		if (r == 0)
			break;
		size += (size_t)r;
	}
	if (size > STATE_MAX_FILE) {
		why = "larger than 65536 bytes";
		goto out;
	}
	int rc = env_parse(env, buf, size, &why);
	if (rc == -2)
		goto oom;
	if (rc)
		goto out;
	/* the boot script takes only whole copies (a cut-short one would be
	 * checked against whatever its buffer held): so do we, or the two
	 * would pick different winners */
	if (size != ENV_SIZE) {
		why = "not 4096 bytes";
		goto out;
	}
	const char *s;
	if (!(s = env_get(env, "BOOT_ORDER")) || parse_order(s, order))
		why = s ? "BOOT_ORDER is not slots A/B" : "no BOOT_ORDER";
	for (int k = 0; k < 2 && !why; k++) {
		/* one digit: the boot script counts down with setexpr, in
		 * hexadecimal, which agrees with decimal only there */
		if (!(s = env_get(env, left_var[k])) || parse_dec(s, 9, &v))
			why = k ? "BOOT_B_LEFT is not 0..9" : "BOOT_A_LEFT is not 0..9";
		else
			left[k] = (unsigned)v;
	}
	/* at most 16 digits, one below the largest: the boot script counts
	 * in BCD in a 64-bit register, so seq + 1 must fit 16 digits */
	if (!why && (!(s = env_get(env, "KILN_SEQ")) ||
		     parse_dec(s, STATE_MAX_SEQ, &c->seq)))
		why = "no decimal KILN_SEQ";
out:
	if (why) {
		snprintf(c->why, sizeof(c->why), "%s", why);
		env_free(env);
	}
	c->valid = !why;
	free(buf);
	if (fd >= 0)
		close(fd);
	return 0;
oom:
	free(buf);
	close(fd);
	return -1;
}

int state_load(int dirfd, struct state *st, char *err, size_t errlen)
{
	struct env env[2] = { { 0, NULL }, { 0, NULL } };
	char order[2][4];
	unsigned left[2][2];

	state_defaults(st);
	for (int i = 0; i < 2; i++) {
		if (read_copy(dirfd, i, &st->copy[i], &env[i], order[i],
			      left[i])) {
			snprintf(err, errlen, "%s: out of memory", copy_name[i]);
			env_free(&env[0]);
			return -1;
		}
	}
	/* highest KILN_SEQ wins; on a tie state0, as the U-Boot script does */
	int w = -1;
	for (int i = 0; i < 2; i++)
		if (st->copy[i].valid &&
		    (w < 0 || st->copy[i].seq > st->copy[w].seq))
			w = i;
	if (w >= 0) {
		st->winner = w;
		memcpy(st->order, order[w], sizeof(st->order));
		st->left[0] = left[w][0];
		st->left[1] = left[w][1];
		st->seq = st->copy[w].seq;
		st->env = env[w];
		env[w].vars = NULL;
		env[w].count = 0;
	}
	env_free(&env[0]);
	env_free(&env[1]);
	return 0;
}

/* The variables of st in a blob, other variables of the winner kept. */
static int build_blob(const struct state *st, unsigned long long seq,
		      unsigned char *blob, char *err, size_t errlen)
{
	struct env e = { 0, NULL };
	char order[8], num[3][24];
	const char *why = "out of memory";

	state_order_string(st, order, sizeof(order));
	snprintf(num[0], sizeof(num[0]), "%u", st->left[0]);
	snprintf(num[1], sizeof(num[1]), "%u", st->left[1]);
	snprintf(num[2], sizeof(num[2]), "%llu", seq);
	int rc = env_copy(&e, &st->env) || env_set(&e, "BOOT_ORDER", order) ||
		 env_set(&e, "BOOT_A_LEFT", num[0]) ||
		 env_set(&e, "BOOT_B_LEFT", num[1]) ||
		 env_set(&e, "KILN_SEQ", num[2]) ||
		 env_serialize(&e, blob, ENV_SIZE, &why);
	env_free(&e);
	if (rc)
		snprintf(err, errlen, "%s", why);
	return rc ? -1 : 0;
}

int state_store(int dirfd, struct state *st, int *written,
		char *err, size_t errlen)
{
	unsigned char blob[ENV_SIZE];
	int target = st->winner == 0 ? 1 : 0;
	unsigned long long seq = st->winner < 0 ? 1 : st->seq + 1;

	/* what we write must be what we (and the script) can read back */
	if (seq > STATE_MAX_SEQ)
		return snprintf(err, errlen, "KILN_SEQ is at its limit (%llu): "
				"re-create the state with init", st->seq), -1;
	if (build_blob(st, seq, blob, err, errlen) ||
	    copy_write(dirfd, copy_name[target], tmp_name[target], blob,
			 ENV_SIZE, err, errlen))
		return -1;
	*written = target;
	return 0;
}

int state_init(int dirfd, char *err, size_t errlen)
{
	unsigned char blob[ENV_SIZE];
	struct state st = { .env = { 0, NULL } };

	state_defaults(&st);
	/* both seq 0, byte for byte the same: state0 wins the tie */
	if (build_blob(&st, 0, blob, err, errlen))
		return -1;
	for (int i = 0; i < 2; i++)
		if (copy_write(dirfd, copy_name[i], tmp_name[i], blob,
				 ENV_SIZE, err, errlen))
			return -1;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * kiln-update: installs a signed bundle on the device, from a file or a
 * stream, in one pass and without room for the bundle:
 *
 *   1. the manifest and its signature, checked against the device's key,
 *      board and version before anything is written;
 *   2. the inactive slot marked bad (a slot half written is never tried);
 *   3. each payload as it arrives: the root image onto the inactive slot,
 *      file trees into staging directories on the data partition, each
 *      hashed on the way and compared with the manifest;
 *   4. the end of the stream, fsck.erofs on the written slot, one syncfs
 *      of the data partition, the staged trees exchanged into place;
 *   5. the boot state: the new slot first, with fresh tries; only then
 *      are the old trees removed.
 *
 * A failure, up to and including 5, leaves the running slot first in the
 * boot order and the data partition as it was (exchanged trees are put
 * back); the next boot of the new slot must mark it good (the rcS's
 * mark-good) or its tries run out and U-Boot goes back.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>
#include "../bootstate/state.h"
#include "files.h"
#include "progress.h"
#include "sign.h"
#include "slot.h"
#include "verify.h"

enum { EXIT_OK = 0, EXIT_REFUSED = 1, EXIT_USAGE = 2, EXIT_DEVICE = 3 };

static const char usage_text[] =
"Usage: kiln-update [OPTION]... BUNDLE|-\n"
"Installs an update bundle (- reads it from stdin, streamed).\n"
"  --pubkey FILE      the key bundles must be signed with\n"
"                     (default /etc/kiln/bundle.pub)\n"
"  --board-file FILE  this device's board name (default /etc/kiln/board)\n"
"  --version-file FILE  the running version (default /etc/kiln/version)\n"
"  --force            install an older or the same version too\n"
"  --slot A|B         the running slot (default: kiln.slot= in --cmdline)\n"
"  --cmdline FILE     default /proc/cmdline\n"
"  --slot-dev DEV     the inactive slot's device (for a root image)\n"
"  --state-dir DIR    the A/B boot state's directory (for a root image)\n"
"  --data DIR         where file trees are unpacked (default /data)\n"
"  --fsck PROG        checks the written slot (default fsck.erofs)\n"
"  --json             progress and result as JSON lines on stdout\n"
"  --fsync-each       fsync every unpacked file (default: one syncfs of\n"
"                     the data partition before the trees go in place)\n"
"Exit status: 0 installed, the new slot boots next; 1 refused (bad\n"
"signature, another board, an older version, a changed, cut-short or\n"
"unsafe bundle); 2 bad usage; 3 failed on this device (I/O, no space,\n"
"the written slot fails fsck, the boot state cannot be written). On 1\n"
"and 3 the running slot stays first and the data partition unchanged.\n";

static struct {
	const char *pubkey, *board_file, *version_file, *cmdline, *slot_dev;
	const char *state_dir, *data, *fsck, *bundle;
	int force, slot;
} opt = {"/etc/kiln/bundle.pub", "/etc/kiln/board", "/etc/kiln/version",
	 "/proc/cmdline", NULL, NULL, "/data", "fsck.erofs", NULL, 0, -1};

static char err[1024];

static int fail(int code)
{
	progress_result(0, err);
	return code;
}

static int usage(const char *msg, const char *arg)
{
	fprintf(stderr, "kiln-update: %s%s%s (see --help)\n", msg, arg ? ": " : "",
		arg ? arg : "");
	return EXIT_USAGE;
}

/* the first line of a small file, trailing newline dropped */
static int read_line(const char *path, char *out, size_t n)
{
	FILE *f = fopen(path, "re");

	if (!f || !fgets(out, (int)n, f)) {
		snprintf(err, sizeof(err), "%s: %s", path, f ? "empty" : strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

/* --slot, else the command line's; -1 with err */
static int running_slot(void)
{
	if (opt.slot >= 0)
		return opt.slot;
	/* a command line that cannot be read names no slot either */
	int slot = state_cmdline_slot(opt.cmdline);
	if (slot < 0) {
		snprintf(err, sizeof(err), "no kiln.slot=A|B in %s: give --slot", opt.cmdline);
		return -1;
	}
	return slot;
}

/* the device's key, board and version against the manifest */
static int check_device(const struct manifest *m)
{
	char board[128], version[128];

	if (read_line(opt.board_file, board, sizeof(board)))
		return EXIT_DEVICE;
	if (strcmp(board, m->compatible)) {
		snprintf(err, sizeof(err), "bundle is for board '%s', this is '%s'",
			 m->compatible, board);
		return EXIT_REFUSED;
	}
	if (read_line(opt.version_file, version, sizeof(version)))
		return EXIT_DEVICE;
	if (!version_valid(version)) {
		snprintf(err, sizeof(err), "%s: '%s' is not a version", opt.version_file,
			 version);
		return EXIT_DEVICE;
	}
	if (version_compare(m->version, version) <= 0 && !opt.force) {
		snprintf(err, sizeof(err), "bundle version %s is not newer than the "
			 "running %s (--force installs it)", m->version, version);
		return EXIT_REFUSED;
	}
	progress_note("bundle %s for %s, running %s", m->version, board, version);
	return EXIT_OK;
}

/* a change to the boot state, under the lock kiln-bootstate takes too */
static int change_state(int slot, int make_primary)
{
	struct state st;
	int written, rc = -1;
	int dfd = open(opt.state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0 || flock(dfd, LOCK_EX)) {
		snprintf(err, sizeof(err), "%s: %s", opt.state_dir, strerror(errno));
		goto out;
	}
	if (state_load(dfd, &st, err, sizeof(err)))
		goto out;
	if (make_primary) {
		st.order[0] = (char)('A' + slot);
		st.order[1] = (char)('A' + !slot);
		st.order[2] = '\0';
		st.left[slot] = STATE_TRIES;
	} else {
		st.left[slot] = 0;
	}
	rc = state_store(dfd, &st, &written, err, sizeof(err));
	state_free(&st);
out:
	if (dfd >= 0)
		close(dfd);
	return rc;
}

/* after a failed switch: is the new slot first all the same? */
static int new_slot_first(int slot)
{
	struct state st;
	char why[256];
	int first = 0, dfd = open(opt.state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd >= 0 && !state_load(dfd, &st, why, sizeof(why))) {
		first = st.order[0] == 'A' + slot && st.left[slot] > 0;
		state_free(&st);
	}
	if (dfd >= 0)
		close(dfd);
	if (first)
		snprintf(err + strlen(err), sizeof(err) - strlen(err), "; the state "
			 "reads slot %c first all the same: it may boot next", 'A' + slot);
	return first;
}

static struct files_placed placed[MANIFEST_MAX_PAYLOADS];

/*
 * Payloads [0, n) put back as they were, newest first (a later target may
 * sit in a parent an earlier one made), and synced; err keeps the reason
 * the update failed. A tree that cannot be put back is named after it.
 */
static int keep_staging;	/* an old tree could not be put back: it is there */

static void undo_files(const struct manifest *m, int datafd, unsigned n)
{
	char why[256];

	while (n--) {
		if (m->payload[n].type != PAYLOAD_FILES ||
		    !files_undo(&m->payload[n], n, datafd, &placed[n], why, sizeof(why)))
			continue;
		keep_staging = 1;
		snprintf(err + strlen(err), sizeof(err) - strlen(err), "; %s (it is in "
			 "%s/%s/%u.new)", why, opt.data, STAGING_DIR, n);
	}
	if (syncfs(datafd))
		snprintf(err + strlen(err), sizeof(err) - strlen(err),
			 "; syncfs: %s", strerror(errno));
}

/* test hook: KILN_UPDATE_FAIL_COMMIT=N fails once payload N is in place */
static int commit_hook(const struct payload *p, unsigned i)
{
	const char *n = getenv("KILN_UPDATE_FAIL_COMMIT");

	if (!n || !*n || strtoul(n, NULL, 10) != i)
		return 0;
	snprintf(err, sizeof(err), "%s: failed after the exchange (test hook)", p->target);
	return -1;
}

/*
 * One sync for every file written, then the exchanges, then a sync for
 * them; a failure anywhere puts back what was exchanged, so a failed
 * update leaves the data partition as it was.
 */
static int commit_files(const struct manifest *m, int datafd)
{
	progress_step("committing", opt.data);
	if (syncfs(datafd))
		return snprintf(err, sizeof(err), "%s: syncfs: %s", opt.data,
				strerror(errno)), -1;
	for (unsigned i = 0; i < m->count; i++) {
		if (m->payload[i].type != PAYLOAD_FILES)
			continue;
		if (files_commit(&m->payload[i], i, datafd, &placed[i], err, sizeof(err)) ||
		    commit_hook(&m->payload[i], i)) {
			undo_files(m, datafd, i + 1);
			return -1;
		}
	}
	if (syncfs(datafd)) {
		snprintf(err, sizeof(err), "%s: syncfs: %s", opt.data, strerror(errno));
		undo_files(m, datafd, m->count);
		return -1;
	}
	return 0;
}

static int install(void)
{
	static struct manifest m;
	unsigned char pk[32];
	struct bundle_in b;
	int rc, slot = -1, datafd = -1, has_root = 0, has_files = 0;

	if (key_load_public(opt.pubkey, pk, err, sizeof(err)))
		return fail(EXIT_DEVICE);
	int fd = strcmp(opt.bundle, "-") ? open(opt.bundle, O_RDONLY | O_CLOEXEC) : 0;
	if (fd < 0)
		return snprintf(err, sizeof(err), "%s: %s", opt.bundle, strerror(errno)),
		       fail(EXIT_REFUSED);
	progress_step("checking", opt.bundle);
	if (bundle_open_verified(&b, fd, pk, &m, NULL, err, sizeof(err)))
		return fail(EXIT_REFUSED);
	if ((rc = check_device(&m)))
		goto out;
	for (unsigned i = 0; i < m.count; i++)
		*(m.payload[i].type == PAYLOAD_ROOTFS ? &has_root : &has_files) = 1;
	rc = EXIT_USAGE;
	if (has_root && (!opt.slot_dev || !opt.state_dir)) {
		snprintf(err, sizeof(err), "the bundle has a root image: give --slot-dev "
			 "and --state-dir");
		goto out;
	}
	rc = EXIT_DEVICE;
	if (has_root && (slot = running_slot()) < 0)
		goto out;
	if (has_files) {
		datafd = open(opt.data, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (datafd < 0 || files_clean(datafd, err, sizeof(err))) {
			if (datafd < 0)
				snprintf(err, sizeof(err), "%s: %s", opt.data, strerror(errno));
			goto out;
		}
	}
	/* from here the inactive slot is not to be booted until it is whole */
	if (has_root) {
		progress_note("running slot %c, writing slot %c (%s)", 'A' + slot,
			      'A' + !slot, opt.slot_dev);
		if (change_state(!slot, 0))
			goto out;
	}
	for (unsigned i = 0; i < m.count; i++) {
		const struct payload *p = &m.payload[i];
		rc = EXIT_REFUSED;
		if (bundle_in_next(&b, p->name, p->size, 0, NULL, err, sizeof(err)))
			goto out;
		progress_step(p->type == PAYLOAD_ROOTFS ? "writing" : "unpacking", p->name);
		int r = p->type == PAYLOAD_ROOTFS
			? slot_write(&b, p, opt.slot_dev, err, sizeof(err))
			: files_unpack(&b, p, i, datafd, opt.data, err, sizeof(err));
		if (r) {
			rc = r == -2 ? EXIT_DEVICE : EXIT_REFUSED;
			goto out;
		}
	}
	rc = EXIT_REFUSED;
	if (bundle_in_end(&b, err, sizeof(err)))
		goto out;
	rc = EXIT_DEVICE;
	if (has_root) {
		progress_step("checking", opt.slot_dev);
		if (slot_fsck(opt.fsck, opt.slot_dev, err, sizeof(err)))
			goto out;
	}
	if (has_files && commit_files(&m, datafd))
		goto out;
	if (has_root) {
		progress_step("switching", "boot state");
		/* test hooks: this write torn after N bytes and the program
		 * killed, as a power cut while switching, or failing there as
		 * on a full disk (copywrite.c) */
		const char *cut = getenv("KILN_UPDATE_CUT_SWITCH");
		const char *full = getenv("KILN_UPDATE_FAIL_SWITCH");
		if (cut && *cut)
			setenv("KILN_BOOTSTATE_CRASH_AFTER", cut, 1);
		if (full && *full)
			setenv("KILN_BOOTSTATE_FAIL_AFTER", full, 1);
		if (change_state(!slot, 1)) {
			/* the old trees go back with the old slot; a write that
			 * failed yet took effect keeps the new trees with it */
			if (has_files && !new_slot_first(!slot))
				undo_files(&m, datafd, m.count);
			else if (has_files)
				keep_staging = 1;
			goto out;
		}
		progress_note("slot %c boots next (version %s)", 'A' + !slot, m.version);
	}
	/* the old trees, kept until now to be put back */
	if (has_files && files_clean(datafd, err, sizeof(err)))
		progress_note("installed, but the old trees stay in %s: %s",
			      STAGING_DIR, err);
	rc = EXIT_OK;
	snprintf(err, sizeof(err), "installed %s", m.version);
out:
	bundle_in_close(&b);
	if (datafd >= 0) {
		if (rc && !keep_staging) {
			char keep[sizeof(err)];
			memcpy(keep, err, sizeof(err));
			files_clean(datafd, err, sizeof(err));
			memcpy(err, keep, sizeof(err));
		}
		close(datafd);
	}
	progress_result(rc == EXIT_OK, err);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"pubkey", 1, 0, 'k'}, {"board-file", 1, 0, 'b'},
		{"version-file", 1, 0, 'v'}, {"force", 0, 0, 'f'}, {"slot", 1, 0, 's'},
		{"cmdline", 1, 0, 'c'}, {"slot-dev", 1, 0, 'd'}, {"state-dir", 1, 0, 'S'},
		{"data", 1, 0, 'D'}, {"fsck", 1, 0, 'F'}, {"json", 0, 0, 'j'},
		{"fsync-each", 0, 0, 'E'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'k': opt.pubkey = optarg; break;
		case 'b': opt.board_file = optarg; break;
		case 'v': opt.version_file = optarg; break;
		case 'f': opt.force = 1; break;
		case 's':
			if ((opt.slot = state_parse_slot(optarg)) < 0)
				return usage("--slot is A or B", optarg);
			break;
		case 'c': opt.cmdline = optarg; break;
		case 'd': opt.slot_dev = optarg; break;
		case 'S': opt.state_dir = optarg; break;
		case 'D': opt.data = optarg; break;
		case 'F': opt.fsck = optarg; break;
		case 'j': progress_json(1); break;
		case 'E': files_fsync_each(1); break;
		case 'h': fputs(usage_text, stdout); return EXIT_OK;
		default: return usage("bad option", NULL);
		}
	}
	if (optind != argc - 1)
		return usage("give one BUNDLE (or - for stdin)", NULL);
	opt.bundle = argv[optind];
	if (sign_init())
		return snprintf(err, sizeof(err), "libsodium cannot start"), fail(EXIT_DEVICE);
	return install();
}

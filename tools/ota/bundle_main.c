/* SPDX-License-Identifier: MIT */
/*
 * kiln-bundle: makes, checks and shows update bundles (bundle.h) on the
 * build host. The output is written to a temporary name beside it,
 * fsynced and renamed: a failed run leaves no bundle behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "hash.h"
#include "manifest.h"
#include "sign.h"
#include "verify.h"

static const char usage_text[] =
"Usage: kiln-bundle keygen SECRET_KEY PUBLIC_KEY\n"
"       kiln-bundle create --key SECRET_KEY --version V --compatible BOARD\n"
"                   [--rootfs IMAGE] [--files TAR_ZST:TARGET]... OUT\n"
"       kiln-bundle verify --pubkey PUBLIC_KEY BUNDLE|-\n"
"       kiln-bundle show BUNDLE|-\n"
"keygen   a new Ed25519 key pair (files of one hex line; never replaced)\n"
"create   a bundle: manifest, its signature, then the payloads: IMAGE for\n"
"         the inactive root slot, each TAR_ZST (a zstd-compressed tar) to\n"
"         unpack into TARGET under the device's data partition\n"
"verify   the signature and every payload's size and SHA-256\n"
"show     the manifest, unchecked\n"
"Exit status: 0 done, 1 a bad bundle or a failure, 2 bad usage.\n";

static char err[512];
static const char *tmp_path;

static int usage(const char *msg, const char *arg)
{
	fprintf(stderr, "kiln-bundle: %s%s%s (see --help)\n", msg, arg ? ": " : "",
		arg ? arg : "");
	return 2;
}

static int die(void)
{
	fprintf(stderr, "kiln-bundle: %s\n", err);
	if (tmp_path)
		unlink(tmp_path);
	return 1;
}

static void on_signal(int sig)
{
	if (tmp_path)
		unlink(tmp_path);
	signal(sig, SIG_DFL);
	raise(sig);
}

static int add_payload(struct manifest *m, enum payload_type type,
		       const char *path, const char *target)
{
	struct payload *p = &m->payload[m->count];
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

	if (m->count == MANIFEST_MAX_PAYLOADS)
		return snprintf(err, sizeof(err), "more than %d payloads",
				MANIFEST_MAX_PAYLOADS), -1;
	if (!payload_name_valid(base) || strlen(base) > MANIFEST_NAME_MAX)
		return snprintf(err, sizeof(err), "%s: a payload's file name must be "
				"letters, digits, '.', '_', '-'", path), -1;
	if (target && !payload_target_valid(target))
		return snprintf(err, sizeof(err), "%s: a relative path of plain names",
				target), -1;
	p->type = type;
	strcpy(p->name, base);
	strcpy(p->target, target ? target : "");
	if (hash_file(path, p->sha256, &p->size, err, sizeof(err)))
		return -1;
	m->count++;
	return 0;
}

/*
 * The payload's bytes into the bundle, hashed again as they are copied:
 * a file rewritten since the manifest was hashed (even at the same size)
 * would make a signed bundle every device refuses.
 */
static int copy_payload(struct archive *a, const char *path, const struct payload *p)
{
	static unsigned char buf[1 << 16];
	crypto_hash_sha256_state st;
	unsigned char sha[32];
	uint64_t done = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), same;
	ssize_t r;

	if (fd < 0)
		return snprintf(err, sizeof(err), "%s: %s", path, strerror(errno)), -1;
	crypto_hash_sha256_init(&st);
	while (done < p->size && (r = read(fd, buf, sizeof(buf))) > 0) {
		if ((uint64_t)r > p->size - done)
			r = (ssize_t)(p->size - done);
		crypto_hash_sha256_update(&st, buf, (unsigned long long)r);
		if (bundle_out_write(a, buf, (size_t)r, err, sizeof(err)))
			break;
		done += (uint64_t)r;
	}
	crypto_hash_sha256_final(&st, sha);
	same = done == p->size && !memcmp(sha, p->sha256, sizeof(sha)) &&
	       read(fd, buf, 1) == 0;	/* nor grown */
	close(fd);
	if (!same && !*err)
		snprintf(err, sizeof(err), "%s: changed while the bundle was made", path);
	return same ? 0 : -1;
}

static int cmd_create(int argc, char **argv)
{
	static const struct option opts[] = {
		{"key", 1, 0, 'k'}, {"version", 1, 0, 'v'}, {"compatible", 1, 0, 'c'},
		{"rootfs", 1, 0, 'r'}, {"files", 1, 0, 'f'}, {0, 0, 0, 0}};
	static struct manifest m;
	static char text[MANIFEST_MAX_SIZE];
	const char *key = NULL, *paths[MANIFEST_MAX_PAYLOADS + 1];
	unsigned char sk[64], sig[SIG_BYTES];
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		char *colon;
		switch (c) {
		case 'k': key = optarg; break;
		case 'v':
			if (!version_valid(optarg))
				return usage("--version: dot-separated numbers", optarg);
			snprintf(m.version, sizeof(m.version), "%s", optarg);
			break;
		case 'c':
			if (!payload_name_valid(optarg))
				return usage("--compatible: a board name", optarg);
			snprintf(m.compatible, sizeof(m.compatible), "%s", optarg);
			break;
		case 'r':
		case 'f':
			colon = c == 'f' ? strrchr(optarg, ':') : NULL;
			if (c == 'f' && !colon)
				return usage("--files wants TAR_ZST:TARGET", optarg);
			if (colon)
				*colon = '\0';
			paths[m.count] = optarg;
			if (add_payload(&m, c == 'f' ? PAYLOAD_FILES : PAYLOAD_ROOTFS,
					optarg, colon ? colon + 1 : NULL))
				return die();
			break;
		default: return usage("bad option", NULL);
		}
	}
	if (optind != argc - 1 || !key || !*m.version || !*m.compatible || !m.count)
		return usage("create wants --key, --version, --compatible, a payload "
			     "and OUT", NULL);
	size_t n = manifest_format(&m, text);
	struct manifest check;
	if (manifest_parse(&check, text, n, err, sizeof(err)))	/* e.g. 2 rootfs */
		return die();
	if (key_load_secret(key, sk, err, sizeof(err)))
		return die();
	sign_detached(sig, text, n, sk);

	const char *out = argv[optind];
	static char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp%ld", out, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return snprintf(err, sizeof(err), "%.400s: %s", tmp, strerror(errno)), die();
	tmp_path = tmp;
	const char *e = getenv("SOURCE_DATE_EPOCH");
	long long mtime = e ? atoll(e) : 0;
	struct archive *a = bundle_out_open(fd, err, sizeof(err));
	if (!a || bundle_out_member(a, "manifest", n, mtime, err, sizeof(err)) ||
	    bundle_out_write(a, text, n, err, sizeof(err)) ||
	    bundle_out_member(a, "manifest.sig", SIG_BYTES, mtime, err, sizeof(err)) ||
	    bundle_out_write(a, sig, SIG_BYTES, err, sizeof(err)))
		return die();
	for (unsigned i = 0; i < m.count; i++)
		if (bundle_out_member(a, m.payload[i].name, m.payload[i].size, mtime,
				      err, sizeof(err)) ||
		    copy_payload(a, paths[i], &m.payload[i]))
			return die();
	if (bundle_out_close(a, err, sizeof(err)))
		return die();
	if (fsync(fd) || close(fd) || rename(tmp, out))
		return snprintf(err, sizeof(err), "%s: %s", out, strerror(errno)), die();
	tmp_path = NULL;
	fputs(text, stdout);
	return 0;
}

static int open_in(const char *path)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;

	if (fd < 0)
		snprintf(err, sizeof(err), "%s: %s", path, strerror(errno));
	return fd;
}

static int cmd_check(int argc, char **argv, int verify)
{
	static char text[MANIFEST_MAX_SIZE + 1];
	static struct manifest m;
	unsigned char pk[32];
	struct bundle_in b;
	int i = 1, fd;

	if (verify) {
		if (argc != 4 || strcmp(argv[1], "--pubkey"))
			return usage("verify wants --pubkey PUBLIC_KEY BUNDLE", NULL);
		if (key_load_public(argv[2], pk, err, sizeof(err)))
			return die();
		i = 3;
	} else if (argc != 2) {
		return usage("show wants BUNDLE", NULL);
	}
	if ((fd = open_in(argv[i])) < 0 ||
	    bundle_open_verified(&b, fd, verify ? pk : NULL, &m, text, err, sizeof(err)))
		return die();
	fputs(text, stdout);
	int rc = 0;
	for (unsigned k = 0; verify && k < m.count && !rc; k++)
		rc = bundle_in_next(&b, m.payload[k].name, m.payload[k].size, 0, NULL,
				    err, sizeof(err)) ||
		     bundle_check_payload(&b, &m.payload[k], err, sizeof(err));
	if (verify && !rc)
		rc = bundle_in_end(&b, err, sizeof(err));
	bundle_in_close(&b);
	if (rc)
		return die();
	if (verify)
		printf("verified: signature and %u payload(s)\n", m.count);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (argc < 2)
		return usage("no command", NULL);
	if (sign_init())
		return snprintf(err, sizeof(err), "libsodium cannot start"), die();
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	const char *cmd = argv[1];
	if (!strcmp(cmd, "keygen")) {
		if (argc != 4)
			return usage("keygen wants SECRET_KEY PUBLIC_KEY", NULL);
		return key_generate(argv[2], argv[3], err, sizeof(err)) ? die() : 0;
	}
	if (!strcmp(cmd, "create"))
		return cmd_create(argc - 1, argv + 1);
	if (!strcmp(cmd, "verify") || !strcmp(cmd, "show"))
		return cmd_check(argc - 1, argv + 1, cmd[0] == 'v');
	return usage("unknown command", cmd);
}

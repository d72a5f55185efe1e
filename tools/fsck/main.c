/* SPDX-License-Identifier: MIT */
/*
 * fsck.erofs: command line front end. Options follow erofs-utils'
 * fsck.erofs; --workers is ours. A plain check decompresses everything.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fsck.h"
#include "kiln.h"
#include "common/util.h"

enum {
	OPT_EXTRACT = 256, OPT_FORCE, OPT_OVERWRITE, OPT_PRESERVE,
	OPT_PRESERVE_OWNER, OPT_PRESERVE_PERMS, OPT_NO_PRESERVE, OPT_WORKERS,
	OPT_HELP, OPT_VERSION,
};

static const struct option long_opts[] = {
	{ "extract", optional_argument, NULL, OPT_EXTRACT },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "overwrite", no_argument, NULL, OPT_OVERWRITE },
	{ "preserve", no_argument, NULL, OPT_PRESERVE },
	{ "preserve-owner", no_argument, NULL, OPT_PRESERVE_OWNER },
	{ "preserve-perms", no_argument, NULL, OPT_PRESERVE_PERMS },
	{ "no-preserve", no_argument, NULL, OPT_NO_PRESERVE },
	{ "print-comp-ratio", no_argument, NULL, 'p' },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ 0 }
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: fsck.erofs [OPTIONS] IMAGE\n"
"Check an EROFS image: superblock, every inode, directory and extended\n"
"attribute, and every byte of data (every pcluster is decompressed).\n\n"
"  --extract[=DIR]      also extract the tree to DIR (without DIR:\n"
"                       decompress and discard, like the plain check)\n"
"  --workers=N, -j N    threads (default: online CPUs)\n"
"  -p, --print-comp-ratio  print the compression ratio of all files\n"
"  -d LEVEL             debug level (0 quiet .. 9)\n"
"  --help               show this help\n"
"  --version            show the version\n\n"
"Extraction (with --extract=DIR):\n"
"  --force              allow extracting to /\n"
"  --overwrite          replace files that already exist\n"
"  --preserve           keep owners and permissions (default for root)\n"
"  --preserve-owner     keep owners\n"
"  --preserve-perms     keep permissions\n"
"  --no-preserve        extract as yourself, with your umask (default for\n"
"                       other users)\n");
}

static int bad(const char *what, const char *arg)
{
	kiln_err("invalid %s '%s' (try --help)", what, arg);
	return -1;
}

static int parse(int argc, char **argv, struct fsck_opts *o)
{
	int c, owner = -1, perms = -1;
	bool extract_opts = false;
	char *end;
	long v;

	while ((c = getopt_long(argc, argv, "pd:j:aAy", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_EXTRACT:
			o->extract = true;
			o->dir = optarg && *optarg ? optarg : NULL;
			break;
		case OPT_FORCE: o->force = extract_opts = true; break;
		case OPT_OVERWRITE: o->overwrite = extract_opts = true; break;
		case OPT_PRESERVE: owner = perms = 1; extract_opts = true; break;
		case OPT_PRESERVE_OWNER: owner = 1; extract_opts = true; break;
		case OPT_PRESERVE_PERMS: perms = 1; extract_opts = true; break;
		case OPT_NO_PRESERVE: owner = perms = 0; extract_opts = true; break;
		case 'p': o->print_ratio = true; break;
		case 'a': case 'A': case 'y': break;	/* fsck(8) habits */
		case 'd':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v < 0 || v > 9)
				return bad("debug level", optarg);
			kiln_verbosity = (int)v;
			break;
		case 'j':
		case OPT_WORKERS:
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v < 1 || v > 1024)
				return bad("worker count", optarg);
			o->workers = (unsigned int)v;
			break;
		case OPT_HELP:
			usage(stdout);
			exit(0);
		case OPT_VERSION:
			printf("fsck.erofs (kiln) %s\n", KILN_VERSION);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind + 1 != argc) {
		kiln_err(optind >= argc ? "missing IMAGE (try --help)" :
			 "too many arguments (try --help)");
		return -1;
	}
	if (extract_opts && !o->dir) {
		kiln_err("--force, --overwrite and --[no-]preserve* need "
			 "--extract=DIR");
		return -1;
	}
	o->image = argv[optind];
	o->preserve_owner = owner < 0 ? geteuid() == 0 : owner;
	o->preserve_perms = perms < 0 ? geteuid() == 0 : perms;
	if (!o->workers)
		o->workers = kiln_online_cpus();
	return 0;
}

static int by_path(const void *a, const void *b)
{
	const struct fsck_msg *x = a, *y = b;
	int c = strcmp(x->path, y->path);

	return c ? c : strcmp(x->text, y->text);
}

static int report(struct fsck *f)
{
	if (f->nmsgs)
		qsort(f->msgs, f->nmsgs, sizeof(*f->msgs), by_path);
	for (size_t i = 0; i < f->nmsgs; i++)
		fprintf(stderr, "%s: %s: %s\n", kiln_progname, f->msgs[i].path,
			f->msgs[i].text);
	if (f->nmsgs) {
		fprintf(stderr, "%s: %s: %zu error%s found\n", kiln_progname,
			f->o->image, f->nmsgs, f->nmsgs == 1 ? "" : "s");
		return 1;
	}
	kiln_info(1, "%s: clean, %llu directories, %llu files, %llu other "
		  "inodes, %llu bytes of data", f->o->image,
		  (unsigned long long)f->dirs_seen,
		  (unsigned long long)f->files, (unsigned long long)f->others,
		  (unsigned long long)f->logical);
	if (f->o->print_ratio)
		printf("Compression ratio: %.2f(%%)\n", f->logical ?
		       100.0 * (double)f->physical / (double)f->logical : 100.0);
	return 0;
}

int main(int argc, char **argv)
{
	struct fsck_opts o = { 0 };
	struct fsck f = { .o = &o };
	struct kiln_diag d;
	int ret;

	kiln_progname = "fsck.erofs";
	if (parse(argc, argv, &o))
		return 2;
	if (kiln_image_open(&f.img, o.image, &d)) {
		kiln_err("%s", d.msg);
		return 1;
	}
	if (fsck_extract_begin(&f) || fsck_walk(&f))
		return 1;
	if (o.dir)
		fsck_extract_end(&f);
	ret = report(&f);
	fsck_free(&f);
	kiln_image_close(&f.img);
	return ret;
}

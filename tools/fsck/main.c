/* SPDX-License-Identifier: MIT */
/*
 * fsck.erofs: command line front end. Options follow erofs-utils'
 * fsck.erofs; --workers is ours. A plain check decompresses everything.
 * Messages are printed once the walk is done, sorted, so the output does
 * not depend on --workers.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fsck.h"
#include "kiln.h"
#include "common/util.h"

enum {
	OPT_EXTRACT = 256, OPT_FORCE, OPT_OVERWRITE, OPT_PRESERVE,
	OPT_PRESERVE_OWNER, OPT_PRESERVE_PERMS, OPT_NO_PRESERVE,
	OPT_NO_PRESERVE_OWNER, OPT_NO_PRESERVE_PERMS, OPT_XATTRS,
	OPT_NO_XATTRS, OPT_WORKERS, OPT_DEVICE,
};

static const struct option long_opts[] = {
	{ "extract", optional_argument, NULL, OPT_EXTRACT },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "overwrite", no_argument, NULL, OPT_OVERWRITE },
	{ "preserve", no_argument, NULL, OPT_PRESERVE },
	{ "preserve-owner", no_argument, NULL, OPT_PRESERVE_OWNER },
	{ "preserve-perms", no_argument, NULL, OPT_PRESERVE_PERMS },
	{ "no-preserve", no_argument, NULL, OPT_NO_PRESERVE },
	{ "no-preserve-owner", no_argument, NULL, OPT_NO_PRESERVE_OWNER },
	{ "no-preserve-perms", no_argument, NULL, OPT_NO_PRESERVE_PERMS },
	{ "xattrs", no_argument, NULL, OPT_XATTRS },
	{ "no-xattrs", no_argument, NULL, OPT_NO_XATTRS },
	{ "print-comp-ratio", no_argument, NULL, 'p' },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ 0 }
};

static void usage(void)
{
	printf(
"Usage: fsck.erofs [OPTIONS] IMAGE\n"
"Check an EROFS image: superblock, every inode, directory and extended\n"
"attribute, and every byte of data (every pcluster is decompressed).\n\n"
"  --extract[=DIR]      also extract the tree to DIR (without DIR:\n"
"                       decompress and discard, like the plain check)\n"
"  --workers=N, -j N    threads (default: online CPUs)\n"
"  -p, --print-comp-ratio  print the compression ratio of all files\n"
"  --device=FILE        read the image's next extra device from FILE\n"
"                       (repeat, in order; without: they are appended)\n"
"  -d LEVEL             debug level (0 quiet .. 9)\n"
"  -h, --help           show this help\n"
"  -V, --version        show the version\n\n"
"Extraction (with --extract=DIR; DIR must be empty or new):\n"
"  --force              allow extracting to /\n"
"  --overwrite          extract into a DIR that is not empty, replacing\n"
"                       what is in the way\n"
"  --preserve           keep owners and permissions (default for root)\n"
"  --preserve-owner     keep owners\n"
"  --preserve-perms     keep permissions\n"
"  --no-preserve        extract as yourself, with your umask (default for\n"
"                       other users)\n"
"  --no-preserve-owner  extract as yourself\n"
"  --no-preserve-perms  apply your umask to permissions\n"
"  --[no-]xattrs        restore extended attributes (default: on)\n\n"
"Exit status: 0 no errors, 4 the image has errors, 8 operational error\n"
"(cannot open the image, cannot extract), 16 usage error; 4 and 8 add up.\n");
}

static int number(const char *what, const char *arg, uint64_t min,
		  uint64_t max, uint64_t *v)
{
	if (!kiln_parse_u64(arg, min, max, v))
		return 0;
	kiln_err("invalid %s '%s' (valid: %llu..%llu)", what, arg,
		 (unsigned long long)min, (unsigned long long)max);
	return -1;
}

/* 0 to go on, -1 after --help or --version, or an exit status. */
static int parse(int argc, char **argv, struct fsck_opts *o)
{
	int c, owner = -1, perms = -1;
	bool extract_opts = false;
	uint64_t v;

	opterr = 0;	/* one line of our own instead of getopt's */
	o->xattrs = true;
	while ((c = getopt_long(argc, argv, ":pd:j:aAyhV", long_opts,
				NULL)) != -1) {
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
		case OPT_NO_PRESERVE_OWNER: owner = 0; extract_opts = true; break;
		case OPT_NO_PRESERVE_PERMS: perms = 0; extract_opts = true; break;
		case OPT_XATTRS: o->xattrs = true; break;
		case OPT_NO_XATTRS: o->xattrs = false; break;
		case 'p': o->print_ratio = true; break;
		case OPT_DEVICE:
			o->devices = xrealloc(o->devices, (o->nr_devices + 1) *
					      sizeof(*o->devices));
			o->devices[o->nr_devices++] = optarg;
			break;
		case 'a': case 'A': case 'y': break;	/* fsck(8) habits */
		case 'd':
			if (number("debug level", optarg, 0, 9, &v))
				return FSCK_EXIT_USAGE;
			kiln_verbosity = (int)v;
			break;
		case 'j':
		case OPT_WORKERS:
			if (number("worker count", optarg, 1, 1024, &v))
				return FSCK_EXIT_USAGE;
			o->workers = (unsigned int)v;
			break;
		case 'h':
			usage();
			return -1;
		case 'V':
			printf("fsck.erofs (kiln) %s\n", KILN_VERSION);
			return -1;
		default:
			kiln_err("%s option '%s' (try --help)", c == ':' ?
				 "missing argument for" : "unknown",
				 kiln_bad_option(argc, argv));
			return FSCK_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		kiln_err(optind >= argc ? "missing IMAGE (try --help)" :
			 "too many arguments (try --help)");
		return FSCK_EXIT_USAGE;
	}
	if (extract_opts && !o->dir) {
		kiln_err("--force, --overwrite and --[no-]preserve* need "
			 "--extract=DIR");
		return FSCK_EXIT_USAGE;
	}
	o->image = argv[optind];
	o->preserve_owner = owner < 0 ? geteuid() == 0 : owner;
	o->preserve_perms = perms < 0 ? geteuid() == 0 : perms;
	if (!o->workers)
		o->workers = kiln_online_cpus();
	return 0;
}

/* Image errors first, then what went wrong in DIR, then warnings. */
static int by_kind_path(const void *a, const void *b)
{
	const struct fsck_msg *x = a, *y = b;
	int c = (x->kind > y->kind) - (x->kind < y->kind);

	if (!c)
		c = strcmp(x->path, y->path);
	return c ? c : strcmp(x->text, y->text);
}

static int report(struct fsck *f)
{
	size_t n[FSCK_KINDS] = { 0 };
	int ret = FSCK_EXIT_CLEAN;

	if (f->nmsgs)
		qsort(f->msgs, f->nmsgs, sizeof(*f->msgs), by_kind_path);
	for (size_t i = 0; i < f->nmsgs; i++) {
		n[f->msgs[i].kind]++;
		fprintf(stderr, "%s: %s%s: %s\n", kiln_progname,
			f->msgs[i].kind == FSCK_WARN ? "warning: " : "",
			f->msgs[i].path, f->msgs[i].text);
	}
	if (n[FSCK_IMAGE]) {
		fprintf(stderr, "%s: %s: %zu error%s found\n", kiln_progname,
			f->o->image, n[FSCK_IMAGE], n[FSCK_IMAGE] == 1 ? "" : "s");
		ret |= FSCK_EXIT_UNCORRECTED;
	}
	if (n[FSCK_ENV]) {
		fprintf(stderr, "%s: %s: extraction incomplete (%zu failure%s)\n",
			kiln_progname, f->o->dir, n[FSCK_ENV],
			n[FSCK_ENV] == 1 ? "" : "s");
		ret |= FSCK_EXIT_OPERATIONAL;
	}
	if (ret)
		return ret;
	kiln_info(1, "%s: clean, %llu directories, %llu files, %llu other "
		  "inodes, %llu bytes of data%s", f->o->image,
		  (unsigned long long)f->dirs_seen,
		  (unsigned long long)f->files, (unsigned long long)f->others,
		  (unsigned long long)f->logical,
		  n[FSCK_WARN] ? " (extracted with warnings)" : "");
	if (f->o->print_ratio)
		printf("Compression ratio: %.2f(%%)\n", f->logical ?
		       100.0 * (double)f->physical / (double)f->logical : 100.0);
	return ret;
}

/* Checks (and extracts) the image o names; the exit status. */
static int check(const struct fsck_opts *o)
{
	struct fsck f = { .o = o };
	struct kiln_diag d;
	struct stat st;
	int fd, ret;

	/* opened here: a missing image is an operational error, a damaged
	 * one an error of the image */
	fd = open(o->image, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && !fstat(fd, &st) && S_ISDIR(st.st_mode)) {
		close(fd);
		fd = -1;
		errno = EISDIR;
	}
	if (fd < 0) {
		kiln_err("cannot open %s: %s", o->image, strerror(errno));
		return FSCK_EXIT_OPERATIONAL;
	}
	if (kiln_image_open_fd(&f.img, fd, o->image, &d)) {
		kiln_err("%s", d.msg);
		return FSCK_EXIT_UNCORRECTED;
	}
	if (o->nr_devices &&
	    kiln_devices_attach(&f.img, o->devices, o->nr_devices, &d)) {
		kiln_err("%s", d.msg);
		kiln_image_close(&f.img);
		return FSCK_EXIT_OPERATIONAL;
	}
	ret = fsck_extract_begin(&f);
	if (ret) {
		kiln_image_close(&f.img);
		return ret;
	}
	if (fsck_walk(&f)) {
		kiln_image_close(&f.img);
		return FSCK_EXIT_OPERATIONAL;
	}
	if (o->dir)
		fsck_extract_end(&f);
	ret = report(&f);
	fsck_free(&f);
	kiln_image_close(&f.img);
	return ret;
}

int main(int argc, char **argv)
{
	struct fsck_opts o = { 0 };
	int ret;

	kiln_progname = "fsck.erofs";
	kiln_oom_status = 8;	/* fsck(8): operational error */
	ret = parse(argc, argv, &o);
	ret = ret < 0 ? FSCK_EXIT_CLEAN : ret ? ret : check(&o);
	free(o.devices);
	return ret;
}

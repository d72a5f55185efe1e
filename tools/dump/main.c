/* SPDX-License-Identifier: MIT */
/*
 * dump.erofs: command line front end. Options follow erofs-utils'
 * dump.erofs; without one, the superblock is shown.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "common/util.h"
#include "dump.h"
#include "kiln.h"

enum { OPT_NID = 256, OPT_PATH, OPT_LS, OPT_CAT, OPT_DEVICE };

static const struct option long_opts[] = {
	{ "nid", required_argument, NULL, OPT_NID },
	{ "path", required_argument, NULL, OPT_PATH },
	{ "ls", no_argument, NULL, OPT_LS },
	{ "cat", no_argument, NULL, OPT_CAT },
	{ "device", required_argument, NULL, OPT_DEVICE },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ 0 }
};

struct opts {
	bool super, stats, extents, ls, cat, have_nid;
	uint64_t nid;
	const char *path, *image;
	char **devices;			/* --device, in order */
	unsigned int nr_devices;
};

static void usage(void)
{
	printf(
"Usage: dump.erofs [OPTIONS] IMAGE\n"
"Show what an EROFS image holds (the superblock when no option is given).\n\n"
"  -s              the superblock\n"
"  -S              statistics: counts by type, sizes, compression rate,\n"
"                  file size and file type distributions\n"
"  --nid=NID       the inode with this nid\n"
"  --path=PATH     the inode at this absolute path\n"
"  -e              with an inode: its extents (logical and physical)\n"
"  --ls            with a directory inode: its entries\n"
"  --cat           with an inode: its content, to standard output\n"
"  --device=FILE   read the image's next extra device from FILE (repeat,\n"
"                  in order; without: they are read appended)\n"
"  -V, --version   show the version\n"
"  -h, --help      show this help\n\n"
"Exit status: 0 done, 1 an error (bad option, unreadable or damaged image,\n"
"no such inode).\n");
}

static int parse(int argc, char **argv, struct opts *o)
{
	int c;

	opterr = 0;		/* one line of our own instead */
	while ((c = getopt_long(argc, argv, "sSeVh", long_opts, NULL)) != -1) {
		switch (c) {
		case 's': o->super = true; break;
		case 'S': o->stats = true; break;
		case 'e': o->extents = true; break;
		case OPT_LS: o->ls = true; break;
		case OPT_CAT: o->cat = true; break;
		case OPT_PATH: o->path = optarg; break;
		case OPT_NID:
			if (kiln_parse_u64(optarg, 0, UINT64_MAX >> 5, &o->nid))
				return kiln_err("invalid nid '%s'", optarg), -1;
			o->have_nid = true;
			break;
		case OPT_DEVICE:
			o->devices = xrealloc(o->devices, (o->nr_devices + 1) *
					      sizeof(*o->devices));
			o->devices[o->nr_devices++] = optarg;
			break;
		case 'h': usage(); exit(0);
		case 'V': printf("dump.erofs (kiln) %s\n", KILN_VERSION); exit(0);
		default:
			return kiln_err("unknown option or missing value: '%s' "
					"(try --help)", argv[optind - 1]), -1;
		}
	}
	if (optind != argc - 1)
		return kiln_err(optind < argc ? "one IMAGE only, not '%s'" :
				"missing IMAGE (try --help)%s",
				optind < argc ? argv[optind + 1] : ""), -1;
	o->image = argv[optind];
	if (o->have_nid && o->path)
		return kiln_err("--nid and --path: one inode at a time"), -1;
	if ((o->extents || o->ls || o->cat) && !o->have_nid && !o->path)
		return kiln_err("-e, --ls and --cat need --nid or --path"), -1;
	if (o->cat && (o->super || o->stats || o->extents || o->ls))
		return kiln_err("--cat goes alone: not with -s, -S, -e or "
				"--ls"), -1;
	if (!o->stats && !o->have_nid && !o->path)
		o->super = true;
	return 0;
}

static int run(struct dump *dp, struct opts *o)
{
	char *path = NULL;
	int ret = 0;

	if (o->super && dump_super(dp))
		return -1;
	if (o->stats && dump_stats(dp))
		return -1;
	if (o->path)
		ret = dump_lookup(dp, o->path, &o->nid, &path);
	if (!ret && o->cat)
		ret = dump_cat(dp, o->nid);
	else if (!ret && (o->have_nid || o->path))
		ret = dump_inode(dp, o->nid, path, o->ls, o->extents);
	free(path);
	return ret;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	struct dump dp = { 0 };
	int fd, ret;

	kiln_progname = "dump.erofs";
	if (parse(argc, argv, &o)) {
		free(o.devices);
		return 1;
	}
	fd = open(o.image, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		kiln_err("%s: %s", o.image, strerror(errno));
		free(o.devices);
		return 1;
	}
	if (kiln_image_open_fd(&dp.img, fd, o.image, &dp.d) ||
	    (o.nr_devices && kiln_devices_attach(&dp.img, o.devices,
						 o.nr_devices, &dp.d))) {
		kiln_err("%s: %s", o.image, dp.d.msg);
		kiln_image_close(&dp.img);
		free(o.devices);
		return 1;
	}
	free(o.devices);
	dp.x = kiln_dctx_new(&dp.img);
	ret = run(&dp, &o);
	if (fflush(stdout) && !ret) {
		kiln_diag_set(&dp.d, "cannot write the output");
		ret = -1;
	}
	if (ret)
		kiln_err("%s: %s", o.image, dp.d.msg);
	kiln_dctx_free(dp.x);
	kiln_image_close(&dp.img);
	return ret ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * mkfs.erofs: command line front end. Option names follow erofs-utils'
 * mkfs.erofs so existing build scripts keep working.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "kiln.h"
#include "blocklist.h"
#include "check.h"
#include "common/util.h"
#include "common/workqueue.h"

enum {
	OPT_ALL_ROOT = 256, OPT_FORCE_UID, OPT_FORCE_GID, OPT_EXCLUDE_PATH,
	OPT_EXCLUDE_REGEX, OPT_QUIET, OPT_HELP, OPT_VERSION, OPT_WORKERS,
	OPT_UID_OFFSET, OPT_GID_OFFSET, OPT_IGNORE_MTIME, OPT_TAR,
	OPT_AUFS, OPT_OVLFS_STRIP, OPT_XATTR_PREFIX, OPT_CHUNKSIZE,
	OPT_COMPRESS_HINTS, OPT_MOUNT_POINT, OPT_FS_CONFIG, OPT_PRODUCT_OUT,
	OPT_FILE_CONTEXTS, OPT_BLOCK_LIST, OPT_CLEAN, OPT_INCREMENTAL,
};

static const struct option long_opts[] = {
	{ "all-root", no_argument, NULL, OPT_ALL_ROOT },
	{ "force-uid", required_argument, NULL, OPT_FORCE_UID },
	{ "force-gid", required_argument, NULL, OPT_FORCE_GID },
	{ "uid-offset", required_argument, NULL, OPT_UID_OFFSET },
	{ "gid-offset", required_argument, NULL, OPT_GID_OFFSET },
	{ "ignore-mtime", no_argument, NULL, OPT_IGNORE_MTIME },
	{ "exclude-path", required_argument, NULL, OPT_EXCLUDE_PATH },
	{ "exclude-regex", required_argument, NULL, OPT_EXCLUDE_REGEX },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "tar", optional_argument, NULL, OPT_TAR },
	{ "aufs", no_argument, NULL, OPT_AUFS },
	{ "ovlfs-strip", optional_argument, NULL, OPT_OVLFS_STRIP },
	{ "xattr-prefix", required_argument, NULL, OPT_XATTR_PREFIX },
	{ "chunksize", required_argument, NULL, OPT_CHUNKSIZE },
	{ "compress-hints", required_argument, NULL, OPT_COMPRESS_HINTS },
	{ "mount-point", required_argument, NULL, OPT_MOUNT_POINT },
	{ "fs-config-file", required_argument, NULL, OPT_FS_CONFIG },
	{ "product-out", required_argument, NULL, OPT_PRODUCT_OUT },
	{ "file-contexts", required_argument, NULL, OPT_FILE_CONTEXTS },
	{ "block-list-file", required_argument, NULL, OPT_BLOCK_LIST },
	{ "clean", optional_argument, NULL, OPT_CLEAN },
	{ "incremental", optional_argument, NULL, OPT_INCREMENTAL },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ 0 }
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: mkfs.erofs [OPTIONS] IMAGE SOURCE_DIR\n"
"       mkfs.erofs [OPTIONS] --tar=f|i IMAGE [TARFILE]\n"
"       mkfs.erofs [OPTIONS] IMAGE LAYER.erofs...\n"
"Make an EROFS image of SOURCE_DIR, or of a tar archive (TARFILE absent\n"
"or '-': standard input).\n\n"
"  -z ALG[,LEVEL]       compress with lz4, lz4hc (1..12), zstd (1..22),\n"
"                       lzma (0..9; 100..109 the same, extreme) or\n"
"                       deflate (0..12); ALG[,LEVEL]:ALG[,LEVEL]...\n"
"                       more algorithms, for --compress-hints to choose\n"
"  --compress-hints=FILE  lines 'PCLUSTERSIZE [ALG#] REGEX': a file\n"
"                       whose path matches REGEX gets pclusters of that\n"
"                       size (0: not compressed), with -z algorithm ALG#\n"
"                       (0: the first); the first match wins\n"
"  -C SIZE              largest physical cluster in bytes (default: one block)\n"
"  --workers=N, -j N    compression threads (default: online CPUs)\n"
"  -E legacy-compress   full (8-byte) indexes instead of compact ones\n"
"  -E ztailpacking      inline each file's tail pcluster in its inode block\n"
"  -E fragments         put each file's last part (under one pcluster of\n"
"                       input, so small files whole) in one packed inode,\n"
"                       compressed together (and shares pclusters,\n"
"                       as -E dedupe)\n"
"  -E all-fragments     every file whole in the packed inode\n"
"  -E dedupe            a pcluster equal to one written before is not\n"
"                       written again (its file gets a full index);\n"
"                       without -z: --chunksize of one block\n"
"  --chunksize=SIZE     uncompressed files are chunk-based: SIZE-byte\n"
"                       chunks (a power of two, at least a block), equal\n"
"                       chunks stored once, zero chunks as holes (with\n"
"                       -z: only where no file is compressed)\n"
"  -E force-chunk-indexes, -E force-inode-blockmap\n"
"                       8-byte chunk indexes, or 4-byte block map entries\n"
"                       (the default)\n"
"  -E noinline_data     no inline tails for regular files (block-aligned\n"
"                       data, for DAX and direct mapping)\n"
"  -E force-inode-compact, -E force-inode-extended\n"
"                       32- or 64-byte inodes for every file\n"
"  -E nosbcrc           no superblock checksum\n"
"  -b SIZE              block size in bytes, 512..65536 (default 4096;\n"
"                       the kernel mounts up to its page size)\n"
"  -d LEVEL             debug level (0 quiet .. 9)\n"
"  -L LABEL             volume label (at most 15 bytes)\n"
"  -T SECONDS           set every timestamp to SECONDS (also from\n"
"                       SOURCE_DATE_EPOCH when -T is not given)\n"
"  -U UUID              volume UUID, or 'random', or 'clear';\n"
"                       default: derived from the image metadata\n"
"  --xattr-prefix=P     store xattr names that begin with P by a long\n"
"                       prefix (P begins user., trusted. or security.)\n"
"  -x N                 share an xattr that more than N files carry\n"
"                       (default 1); below 0: store no xattrs\n"
"  --all-root           make every file owned by root\n"
"  --force-uid=UID      set every file's owner to UID\n"
"  --force-gid=GID      set every file's group to GID\n"
"  --uid-offset=N, --gid-offset=N\n"
"                       add N to every owner / group id\n"
"  --ignore-mtime       let files take the image's time where their own\n"
"                       would need a 64-byte inode\n"
"  --tar=f              the source is a tar archive (ustar, pax, GNU),\n"
"                       the image the same as from its unpacked tree\n"
"  --tar=i              index only: 512-byte blocks, file data left in\n"
"                       the (uncompressed) tar; mount IMAGE with the tar\n"
"                       appended, or with -o device=TARFILE\n"
"  --aufs               with --tar: .wh.NAME entries become overlayfs\n"
"                       whiteouts, .wh..wh..opq an opaque directory\n"
"  --ovlfs-strip[=0|1]  leave out whiteouts and opaque marks\n"
"  --clean[=data]       merging layers: copy their file data into the\n"
"                       image (any layout; -z, -E apply) instead of\n"
"                       pointing at it\n"
"  --mount-point=DIR    Android: where the image is mounted (\"system\"):\n"
"                       the prefix of paths in the files below\n"
"  --fs-config-file=F   Android's canned fs_config: owner, mode and\n"
"                       capabilities of every path\n"
"  --product-out=DIR    Android: without --fs-config-file, the product's\n"
"                       etc/fs_config_{dirs,files} rules come first\n"
"  --file-contexts=F    SELinux labels (text file_contexts) into\n"
"                       security.selinux\n"
"  --block-list-file=F  Android: the blocks of every file, one line each\n"
"  --exclude-path=PATH  leave out PATH (relative to SOURCE_DIR)\n"
"  --exclude-regex=RE   leave out paths matching the extended regex RE\n"
"  --quiet              print errors only\n"
"  --help               show this help\n"
"  --version            show the version\n");
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int parse_uuid(const char *s, struct kiln_mkfs_opts *o)
{
	int n = 0;

	if (!strcmp(s, "random")) {
		o->uuid_mode = KILN_UUID_RANDOM;
		return 0;
	}
	o->uuid_mode = KILN_UUID_GIVEN;
	memset(o->uuid, 0, 16);
	if (!strcmp(s, "clear"))
		return 0;
	for (; *s && n < 32; s++) {
		int v = hexval(*s);

		if (*s == '-' && (n == 8 || n == 12 || n == 16 || n == 20))
			continue;
		if (v < 0)
			return -1;
		o->uuid[n / 2] |= (uint8_t)(v << (n % 2 ? 0 : 4));
		n++;
	}
	return n == 32 && !*s ? 0 : -1;
}

static char *strip_slashes(char *p)
{
	size_t n;

	while (*p == '/')
		p++;
	n = strlen(p);
	while (n && p[n - 1] == '/')
		p[--n] = '\0';
	return p;
}

static const char *fs_config_file;	/* --fs-config-file */
static const char *product_out;		/* --product-out */
static bool blksz_given;		/* -b */

static int bad(const char *what, const char *arg)
{
	kiln_err("invalid %s: '%s' (try --help)", what, arg);
	return -1;
}

/* -E takes a comma-separated list, as in erofs-utils. */
static int parse_extended(char *arg, struct kiln_mkfs_opts *o)
{
	for (char *save = NULL, *opt = strtok_r(arg, ",", &save); opt;
	     opt = strtok_r(NULL, ",", &save)) {
		if (!strcmp(opt, "legacy-compress"))
			o->compr.full_index = true;
		else if (!strcmp(opt, "ztailpacking"))
			o->compr.tailpacking = true;
		else if (!strcmp(opt, "^ztailpacking"))
			o->compr.tailpacking = false;
		else if (!strcmp(opt, "fragments"))
			o->compr.fragments = true;
		else if (!strcmp(opt, "^fragments"))
			o->compr.fragments = o->compr.all_fragments = false;
		else if (!strcmp(opt, "dedupe"))
			o->compr.dedupe = true;
		else if (!strcmp(opt, "^dedupe"))
			o->compr.dedupe = false;
		else if (!strcmp(opt, "all-fragments"))
			o->compr.fragments = o->compr.all_fragments = true;
		else if (!strcmp(opt, "force-inode-compact"))
			o->inode_form = KILN_INODE_COMPACT;
		else if (!strcmp(opt, "force-inode-extended"))
			o->inode_form = KILN_INODE_EXTENDED;
		else if (!strcmp(opt, "noinline_data"))
			o->no_inline_data = true;
		else if (!strcmp(opt, "nosbcrc"))
			o->no_sb_crc = true;
		else if (!strcmp(opt, "force-chunk-indexes"))
			o->chunk_indexes = true;
		else if (!strcmp(opt, "force-inode-blockmap"))
			o->chunk_indexes = false;
		else
			return bad("extended option", opt);
	}
	return 0;
}

/* -x: a decimal integer, negative allowed (erofs-utils' -x -1). */
static int parse_tolerance(const char *arg, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < INT32_MIN || v > INT32_MAX)
		return -1;
	*out = v;
	return 0;
}

/* -z A:B...: each -z adds to the list, as in erofs-utils. */
static int parse_algorithms(char *arg, struct kiln_mkfs_opts *o)
{
	for (char *save = NULL, *a = strtok_r(arg, ":", &save); a;
	     a = strtok_r(NULL, ":", &save)) {
		if (o->nr_zcfgs == KILN_MAX_ZCFGS)
			return bad("-z list (at most 8 algorithms)", a);
		if (kiln_compr_parse(a, o->nr_zcfgs ?
				     &o->compr_alt[o->nr_zcfgs - 1] : &o->compr))
			return -1;
		o->nr_zcfgs++;
	}
	return o->nr_zcfgs ? 0 : bad("-z", arg);
}

static int parse_one(int c, char *arg, struct kiln_mkfs_opts *o)
{
	uint64_t v;

	switch (c) {
	case 'z':
		o->compress = true;
		return parse_algorithms(arg, o);
	case 'C':
		if (kiln_parse_u64(arg, 512, 1u << 20, &v))
			return bad("physical cluster size (a multiple of the "
				   "block size, 512..1048576)", arg);
		o->compr.pclustersize = (uint32_t)v;
		return 0;
	case 'E':
		return parse_extended(arg, o);
	case 'j':
	case OPT_WORKERS:
		if (kiln_parse_u64(arg, 1, 1024, &v))
			return bad("worker count (1..1024)", arg);
		o->workers = (unsigned int)v;
		return 0;
	case 'b':
		if (kiln_parse_u64(arg, 512, 65536, &v) || (v & (v - 1)))
			return bad("block size (a power of two, 512..65536)",
				   arg);
		o->blkszbits = (unsigned int)__builtin_ctzll(v);
		blksz_given = true;
		return 0;
	case 'd':
		if (kiln_parse_u64(arg, 0, 9, &v))
			return bad("debug level (0..9)", arg);
		o->verbosity = (int)v;
		return 0;
	case 'L':
		if (strlen(arg) >= sizeof(o->label))
			return bad("label (at most 15 bytes)", arg);
		strcpy(o->label, arg);
		return 0;
	case 'T':
		if (kiln_parse_u64(arg, 0, INT64_MAX, &v))
			return bad("timestamp (decimal seconds)", arg);
		o->fixed_time = true;
		o->timestamp = (int64_t)v;
		return 0;
	case 'U':
		return parse_uuid(arg, o) ? bad("UUID", arg) : 0;
	case 'x':
		return parse_tolerance(arg, &o->xattr_tolerance) ?
		       bad("xattr tolerance (an integer; below 0: no xattrs)",
			   arg) : 0;
	case OPT_ALL_ROOT:
		o->all_root = true;
		return 0;
	case OPT_FORCE_UID:
	case OPT_FORCE_GID:
		if (kiln_parse_u64(arg, 0, KILN_ID_MAX, &v))
			return bad(c == OPT_FORCE_UID ? "uid" : "gid", arg);
		*(c == OPT_FORCE_UID ? &o->force_uid : &o->force_gid) =
			(int64_t)v;
		return 0;
	case OPT_UID_OFFSET:
	case OPT_GID_OFFSET:
		if (kiln_parse_u64(arg, 0, UINT32_MAX, &v))
			return bad("id offset (0..4294967295)", arg);
		*(c == OPT_UID_OFFSET ? &o->uid_offset : &o->gid_offset) =
			(uint32_t)v;
		return 0;
	case OPT_IGNORE_MTIME:
		o->ignore_mtime = true;
		return 0;
	case OPT_EXCLUDE_PATH:
		o->exclude_paths = realloc(o->exclude_paths,
			(o->nr_exclude_paths + 1) * sizeof(*o->exclude_paths));
		if (!o->exclude_paths)
			return bad("exclude path (out of memory)", arg);
		o->exclude_paths[o->nr_exclude_paths++] = strip_slashes(arg);
		return 0;
	case OPT_EXCLUDE_REGEX:
		o->exclude_regexes = realloc(o->exclude_regexes,
			(o->nr_exclude_regexes + 1) * sizeof(regex_t));
		if (!o->exclude_regexes ||
		    regcomp(&o->exclude_regexes[o->nr_exclude_regexes], arg,
			    REG_EXTENDED | REG_NOSUB))
			return bad("regular expression", arg);
		o->nr_exclude_regexes++;
		return 0;
	case OPT_QUIET:
		o->verbosity = 0;
		return 0;
	case OPT_TAR:
		/*
		 * erofs-utils' ",MAPFILE" (a block list of the tar) and
		 * "headerball" (headers without data) are left out.
		 */
		if (arg && strcmp(arg, "f") && strcmp(arg, "i"))
			return bad("--tar mode ('f', full, or 'i', index)",
				   arg);
		o->tar = true;
		o->tar_index = arg && !strcmp(arg, "i");
		return 0;
	case OPT_XATTR_PREFIX:
		if (kiln_xattr_prefix_check(arg) < 0)
			return bad("xattr prefix (user., trusted. or security. "
				   "and more)", arg);
		if (o->nr_xattr_prefixes == KILN_MAX_XATTR_PREFIXES)
			return bad("xattr prefix (at most 128)", arg);
		o->xattr_prefixes = realloc(o->xattr_prefixes,
			(o->nr_xattr_prefixes + 1) * sizeof(*o->xattr_prefixes));
		if (!o->xattr_prefixes)
			return bad("xattr prefix (out of memory)", arg);
		o->xattr_prefixes[o->nr_xattr_prefixes++] = arg;
		return 0;
	case OPT_AUFS:
		o->aufs = true;
		return 0;
	case OPT_MOUNT_POINT:
		o->mount_point = strip_slashes(arg);
		return 0;
	case OPT_FS_CONFIG:
		fs_config_file = arg;
		return 0;
	case OPT_PRODUCT_OUT:
		product_out = arg;
		return 0;
	case OPT_FILE_CONTEXTS:
		o->file_contexts = arg;
		return 0;
	case OPT_BLOCK_LIST:
		o->block_list_file = arg;
		return 0;
	case OPT_COMPRESS_HINTS:
		o->compress_hints = arg;
		return 0;
	case OPT_CHUNKSIZE:
		/* 31: the chunk format's 5 bits, over 512-byte blocks */
		if (kiln_parse_u64(arg, 512, 1ull << 40, &v) || (v & (v - 1)))
			return bad("chunk size (a power of two, 512..1T)", arg);
		o->chunkbits = (unsigned int)__builtin_ctzll(v);
		return 0;
	case OPT_CLEAN:
		/* a build is always clean; for merged layers, data means
		   copying it in (erofs-utils' rvsp and 0 leave it out) */
		if (arg && strcmp(arg, "data"))
			return bad("--clean value (only data is supported)",
				   arg);
		o->clean_data = true;
		return 0;
	case OPT_INCREMENTAL:
		return kiln_err("--incremental: appending to an image is not "
				"supported; build it afresh"), -1;
	case OPT_OVLFS_STRIP:
		if (arg && strcmp(arg, "0") && strcmp(arg, "1"))
			return bad("--ovlfs-strip value (0 or 1)", arg);
		o->ovlfs_strip = !arg || !strcmp(arg, "1");
		return 0;
	}
	return -1;
}

/* A directory, or what cannot be read at all (the walk then says why). */
static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) || S_ISDIR(st.st_mode);
}

static int parse_args(int argc, char **argv, struct kiln_mkfs_opts *o)
{
	int c;

	opterr = 0;	/* one line of our own instead of getopt's */
	while ((c = getopt_long(argc, argv, ":b:C:d:E:j:L:T:U:x:z:", long_opts,
				NULL)) != -1) {
		if (c == OPT_HELP || c == OPT_VERSION) {
			if (c == OPT_HELP)
				usage(stdout);
			else
				printf("mkfs.erofs (kiln) %s\n", KILN_VERSION);
			return 0;
		}
		if (c == '?' || c == ':') {
			kiln_err("%s option '%s' (try --help)", c == '?' ?
				 "unknown" : "missing argument for",
				 kiln_bad_option(argc, argv));
			return -1;
		}
		if (parse_one(c, optarg, o))
			return -1;
	}
	/* sources that are images, not a directory: layers to merge */
	if (!o->tar && argc - optind >= 2 && !is_dir(argv[optind + 1])) {
		o->layers = argv + optind + 1;
		o->nr_layers = (unsigned int)(argc - optind - 1);
	} else if (argc - optind != 2 && !(o->tar && argc - optind == 1)) {
		kiln_err(o->tar ? "need IMAGE and at most one TARFILE (try "
			 "--help)" : "need IMAGE and SOURCE_DIR (try --help)");
		return -1;
	}
	o->image = argv[optind];
	o->source = argc - optind == 2 ? argv[optind + 1] : NULL;
	return mkfs_check_opts(o, blksz_given, fs_config_file, product_out);
}

int main(int argc, char **argv)
{
	struct kiln_mkfs_opts o;
	int ret;

	kiln_progname = "mkfs.erofs";
	kiln_err_first_only = true;
	kiln_mkfs_opts_init(&o);
	o.workers = kiln_online_cpus();
	ret = parse_args(argc, argv, &o);
	if (!ret && o.image) {
		kiln_verbosity = o.verbosity;
		struct mkfs_blist bl;

		if (o.block_list_file &&
		    mkfs_block_list_open(&bl, o.block_list_file))
			return 1;
		o.exit_after = true;
		ret = kiln_mkfs(&o);
		if (o.block_list_file &&
		    mkfs_block_list_close(&bl, !ret, o.image, o.mount_point))
			ret = -1;
	}
	for (unsigned int i = 0; i < o.nr_exclude_regexes; i++)
		regfree(&o.exclude_regexes[i]);
	free(o.exclude_regexes);
	free(o.exclude_paths);
	free(o.xattr_prefixes);
	mkfs_check_free();
	return ret ? 1 : 0;
}

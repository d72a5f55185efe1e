/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <stdio.h>
#include <time.h>
#include "dump.h"

/*
 * Feature names as erofs-utils prints them, and the first kernel that
 * mounts each (shared/docs/erofs-format.md, 1.4 and 1.5).
 */
static const struct feature {
	bool compat;
	uint32_t bit;
	const char *name;
	unsigned int kver;		/* major * 100 + minor */
} features[] = {
	{ true, EROFS_FEATURE_COMPAT_SB_CHKSUM, "sb_csum", 504 },
	{ true, EROFS_FEATURE_COMPAT_MTIME, "mtime", 0 },
	{ true, EROFS_FEATURE_COMPAT_XATTR_FILTER, "xattr_filter", 606 },
	{ true, EROFS_FEATURE_COMPAT_SHARED_EA_IN_METABOX,
	  "shared_ea_in_metabox", 617 },
	{ true, EROFS_FEATURE_COMPAT_PLAIN_XATTR_PFX, "plain_xattr_pfx", 617 },
	{ false, EROFS_FEATURE_INCOMPAT_ZERO_PADDING, "lz4_0padding", 504 },
	{ false, EROFS_FEATURE_INCOMPAT_COMPR_CFGS, "compr_cfgs", 513 },
	{ false, EROFS_FEATURE_INCOMPAT_BIG_PCLUSTER, "big_pcluster", 513 },
	{ false, EROFS_FEATURE_INCOMPAT_CHUNKED_FILE, "chunked_file", 515 },
	{ false, EROFS_FEATURE_INCOMPAT_DEVICE_TABLE, "device_table", 516 },
	{ false, EROFS_FEATURE_INCOMPAT_ZTAILPACKING, "ztailpacking", 517 },
	{ false, EROFS_FEATURE_INCOMPAT_FRAGMENTS, "fragments", 601 },
	{ false, EROFS_FEATURE_INCOMPAT_FRAGMENTS, "dedupe", 601 },
	{ false, EROFS_FEATURE_INCOMPAT_XATTR_PREFIXES, "xattr_prefixes", 604 },
	{ false, EROFS_FEATURE_INCOMPAT_48BIT, "48bit", 615 },
	{ false, EROFS_FEATURE_INCOMPAT_METABOX, "metabox", 617 },
};

/* Kernels that first decompress each algorithm (lz4 came with EROFS). */
static const unsigned int alg_kver[] = {
	[EROFS_ALG_LZ4] = 0, [EROFS_ALG_LZMA] = 516,
	[EROFS_ALG_DEFLATE] = 606, [EROFS_ALG_ZSTD] = 610,
};

#define ROW "Filesystem %-35s"

static unsigned int print_features(const struct erofs_super_block *sb,
				   bool compat)
{
	uint32_t have = compat ? sb->feature_compat : sb->feature_incompat;
	unsigned int kver = 0;

	printf(ROW, compat ? "compatible features:" :
			     "incompatible features:");
	for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++) {
		const struct feature *f = &features[i];

		if (f->compat != compat || !(have & f->bit))
			continue;
		printf("%s ", f->name);
		/* an older kernel ignores a compatible feature: it mounts */
		if (!compat && f->kver > kver)
			kver = f->kver;
	}
	printf("\n");
	return kver;
}

/*
 * Kiln's own lines, after erofs-utils' (which lists no devices): each
 * extra device's blocks and where it starts when appended (cat IMAGE
 * DEV1 DEV2 ... with each device cut to its blocks: a tar is usually
 * longer, padded past its end marker), and its tag when it has one.
 */
static void print_devices(const struct kiln_image *img)
{
	if (!img->nr_devs)
		return;
	printf(ROW "%u\n", "extra devices:", img->nr_devs);
	for (uint32_t i = 0; i < img->nr_devs; i++) {
		const struct kiln_rdevice *dev = &img->devs[i];
		char tag[65];
		size_t n = 0;

		for (; n < 64 && dev->tag[n] >= 0x20 && dev->tag[n] < 0x7f; n++)
			tag[n] = (char)dev->tag[n];
		tag[n] = 0;
		printf("  device %u: %u blocks, appended from block %u%s%s\n",
		       i + 1, dev->blocks, dev->mapped_blkaddr,
		       n ? ", tag " : "", tag);
	}
}

int dump_super(struct dump *dp)
{
	const struct erofs_super_block *sb = &dp->img.sb;
	bool cfgs = sb->feature_incompat & EROFS_FEATURE_INCOMPAT_COMPR_CFGS;
	time_t t = (time_t)sb->epoch;
	unsigned int kver, k;
	char when[64] = "?\n";
	const uint8_t *u = sb->uuid;
	struct tm tm;

	uint64_t blocks = sb->blocks;

	/* as erofs-utils: the extra devices' blocks count too */
	for (uint32_t i = 0; i < dp->img.nr_devs; i++)
		blocks += dp->img.devs[i].blocks;
	printf(ROW "0x%08X\n", "magic number:", sb->magic);
	printf(ROW "%u\n", "blocksize:", dp->img.blksz);
	printf(ROW "%llu\n", "blocks:", (unsigned long long)blocks);
	printf(ROW "%u\n", "inode metadata start block:", sb->meta_blkaddr);
	printf(ROW "%u\n", "shared xattr metadata start block:",
	       sb->xattr_blkaddr);
	printf(ROW "%u\n", "root nid:", sb->root_nid);
	if ((sb->feature_incompat & EROFS_FEATURE_INCOMPAT_FRAGMENTS) &&
	    sb->packed_nid)
		printf(ROW "%" PRIu64 "\n", "packed nid:", sb->packed_nid);
	if (cfgs) {
		const char *sep = "";

		printf(ROW, "compr_algs:");
		for (unsigned int a = 0; a < 4; a++)
			if (sb->u1 & (1u << a)) {
				printf("%s%s", sep, kiln_alg_name(a));
				sep = ", ";
			}
		printf("\n");
	} else {
		printf(ROW "%u\n", "lz4_max_distance:", sb->u1);
	}
	printf(ROW "%u\n", "sb_size:", EROFS_SUPER_SIZE + 16u * sb->sb_extslots);
	printf(ROW "%" PRIu64 "\n", "inode count:", sb->inos);
	if (localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%a %b %e %H:%M:%S %Y\n", &tm);
	printf(ROW "%s", "created:", when);
	kver = print_features(sb, true);
	k = print_features(sb, false);
	kver = k > kver ? k : kver;
	for (unsigned int a = 0; cfgs && a < 4; a++)
		if ((sb->u1 & (1u << a)) && alg_kver[a] > kver)
			kver = alg_kver[a];
	printf(ROW "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	       "%02x%02x%02x%02x%02x%02x\n", "UUID:", u[0], u[1], u[2], u[3],
	       u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
	       u[14], u[15]);
	if (kver)
		printf("%-46s%u.%u\n", "Required upstream Linux kernel version:",
		       kver / 100, kver % 100);
	print_devices(&dp->img);
	return 0;
}

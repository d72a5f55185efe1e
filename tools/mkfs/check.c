/* SPDX-License-Identifier: MIT */
/*
 * mkfs.erofs: what the options mean together, once all are read: the
 * combinations refused, the defaults one option sets for another, and
 * the files options name (hints, fs_config, file_contexts), loaded.
 */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "common/util.h"
#include "format/erofs_fs.h"
#include "read/image.h"
#include "write/fcontexts.h"
#include "write/fsconfig.h"
#include "write/hints.h"

static int source_date_epoch(struct kiln_mkfs_opts *o)
{
	const char *s = getenv("SOURCE_DATE_EPOCH");
	uint64_t v;

	if (o->fixed_time || !s || !*s)
		return 0;
	if (kiln_parse_u64(s, 0, INT64_MAX, &v))
		return kiln_err("invalid SOURCE_DATE_EPOCH (decimal seconds): "
				"'%s'", s), -1;
	o->fixed_time = true;
	o->timestamp = (int64_t)v;
	return 0;
}

/*
 * The hints may ask for bigger pclusters than -C: every algorithm's
 * configuration (dictionary, the kernel's buffers) is sized for the
 * largest. The others take the first's -E options.
 */
static struct kiln_hints hints;	/* --compress-hints, for kiln_mkfs */
static struct kiln_fsconfig fsconfig;
static struct kiln_fcontexts fcontexts;

/*
 * With a mount point, erofs-utils takes owners, modes and capabilities
 * from the canned file if given, else from Android's rules: the product's
 * files under --product-out, then the built-in table (fsbuiltin.c).
 */
static int load_android(struct kiln_mkfs_opts *o, const char *fs_config_file,
			const char *product_out)
{
	bool mounted = o->mount_point != NULL;

	if (o->mount_point && !*o->mount_point)
		o->mount_point = NULL;	/* "/" */
	if (o->file_contexts) {
		if (kiln_fcontexts_load(&fcontexts, o->file_contexts))
			return -1;
		o->fcontexts = &fcontexts;
	}
	if (fs_config_file) {
		if (kiln_fsconfig_load(&fsconfig, fs_config_file,
				       o->mount_point))
			return -1;
	} else if (!mounted) {
		return 0;
	} else if (kiln_fsconfig_builtin_load(&fsconfig, product_out,
					      o->mount_point)) {
		return -1;
	}
	o->fsconfig = &fsconfig;
	return 0;
}

static int finish_algorithms(struct kiln_mkfs_opts *o, uint32_t blksz)
{
	if (o->compress_hints) {
		if (kiln_hints_load(&hints, o))
			return -1;
		o->hints = &hints;
		if (hints.max_pclustersize > o->compr.pclustersize)
			o->compr.pclustersize = hints.max_pclustersize;
	}
	kiln_compr_finish_cfg(&o->compr, blksz);
	for (unsigned int i = 1; i < o->nr_zcfgs; i++) {
		struct kiln_compr_cfg *a = &o->compr_alt[i - 1];
		struct kiln_compr_cfg own = *a;

		*a = o->compr;
		a->c = own.c;
		a->level = own.level;
		kiln_compr_finish_cfg(a, blksz);
	}
	return 0;
}

/*
 * lz4's pcluster limit is lower than 1 MiB with blocks under 4 KiB
 * (erofs_lz4_max_pclusterblks). The pcluster size here is the image's
 * largest (-C or a hint's), which every algorithm's record carries.
 */
static int check_lz4_pclusters(const struct kiln_mkfs_opts *o)
{
	uint32_t pc = o->compr.pclustersize;
	uint32_t max = erofs_lz4_max_pclusterblks(o->blkszbits) << o->blkszbits;

	for (unsigned int i = 0; i < o->nr_zcfgs; i++)
		if (kiln_zcfg(o, i)->c->alg == EROFS_ALG_LZ4 && pc > max)
			return kiln_err("%u-byte pclusters with lz4 and %u-byte "
					"blocks: the kernel takes at most %u "
					"(-C or a hint)", pc, 1u << o->blkszbits,
					max), -1;
	return 0;
}

static int check_compression(struct kiln_mkfs_opts *o)
{
	uint32_t blksz = 1u << o->blkszbits;
	uint32_t pc = o->compr.pclustersize, max;

	/*
	 * -C without -z means nothing to an uncompressed image: erofs-utils
	 * accepts it, and dracut always passes it, so do we.
	 */
	if (o->chunkbits && (o->chunkbits < o->blkszbits ||
			     o->chunkbits - o->blkszbits > 31)) {
		kiln_err("--chunksize %llu: a power of two from the block size "
			 "(%u) to 2^31 blocks", 1ull << o->chunkbits, blksz);
		return -1;
	}
	if (!o->compress) {
		if (o->compr.fragments || o->compress_hints)
			return kiln_err("-E fragments, all-fragments and "
					"--compress-hints need -z"), -1;
		/* as erofs-utils: dedupe of uncompressed files is by chunk */
		if (o->compr.dedupe && !o->chunkbits)
			o->chunkbits = o->blkszbits;
		return 0;
	}
	/* equal pclusters are shared with fragments too, as erofs-utils does */
	o->compr.dedupe |= o->compr.fragments;
	if (!pc)
		pc = o->compr.pclustersize = blksz;
	/*
	 * A big pcluster's block count is an 11-bit field (CBLKCNT): with
	 * 512-byte blocks 1 MiB would be 2048 of them, one too many.
	 */
	max = 2047 * blksz < (1u << 20) ? 2047 * blksz : 1u << 20;
	if (pc % blksz || pc > max) {
		kiln_err("-C %u: valid sizes with %u-byte blocks are %u..%u in "
			 "steps of %u", pc, blksz, blksz, max, blksz);
		return -1;
	}
	o->pcluster_default = pc;
	/* the kernel reads compact indexes of lclusters up to 16 KiB only */
	if (o->blkszbits > EROFS_MAX_COMPACT_LCBITS)
		o->compr.full_index = true;
	if (finish_algorithms(o, blksz))
		return -1;
	return check_lz4_pclusters(o);
}

/*
 * --tar=i: the image points into the tar, whose data lies in 512-byte
 * records: the blocks are 512 bytes too, and a file's data is the tar's,
 * as it is, so nothing may compress or rearrange it.
 */
static int check_tar_index(struct kiln_mkfs_opts *o, bool blksz_given)
{
	if (!o->tar_index)
		return 0;
	if (blksz_given && o->blkszbits != 9)
		return kiln_err("--tar=i addresses the tar in 512-byte blocks: "
				"-b must be 512 (or left out)"), -1;
	o->blkszbits = 9;
	if (o->compress || o->chunkbits || o->compr.dedupe ||
	    o->compr.fragments || o->compress_hints)
		return kiln_err("--tar=i leaves file data in the tar: -z, "
				"--chunksize, --compress-hints and -E dedupe or "
				"fragments do not apply"), -1;
	return 0;
}

/*
 * Merging layers: the image holds metadata, the layers the data, as it
 * is; blocks are the first layer's (each must have the same). With
 * --clean=data the data is copied: blocks are -b's or the first layer's.
 * Each layer is opened to count the devices it brings (itself, or a merged
 * image's or tar index's own): the head's device table is laid out before
 * the scan opens them again.
 */
static int check_layers(struct kiln_mkfs_opts *o, bool blksz_given)
{
	struct kiln_image img;
	struct kiln_diag d;

	if (!o->nr_layers)
		return 0;
	if (o->nr_layers > 65535)
		return kiln_err("at most 65535 layers"), -1;
	if (!o->clean_data && (o->compress || o->chunkbits ||
	    o->compr.dedupe || o->compr.fragments || o->compress_hints))
		return kiln_err("merged layers keep their data where it is: -z, "
				"--chunksize, --compress-hints and -E dedupe or "
				"fragments do not apply"), -1;
	for (unsigned int i = 0; i < o->nr_layers; i++) {
		if (kiln_image_open(&img, o->layers[i], &d)) {
			if (i)
				return kiln_err("%s", d.msg), -1;
			return kiln_err("%s: not a directory, nor an EROFS "
					"image to merge", o->layers[0]), -1;
		}
		if (!i && blksz_given && !o->clean_data &&
		    o->blkszbits != img.blkszbits) {
			kiln_image_close(&img);
			return kiln_err("-b: the layers' blocks are %u bytes",
					img.blksz), -1;
		}
		if (!i && !blksz_given)
			o->blkszbits = img.blkszbits;
		if (!o->clean_data)
			o->nr_devices += img.nr_devs ? img.nr_devs : 1;
		kiln_image_close(&img);
	}
	return 0;
}

int mkfs_check_opts(struct kiln_mkfs_opts *o, bool blksz_given,
		    const char *fs_config_file, const char *product_out)
{
	if (o->aufs && !o->tar)
		return kiln_err("--aufs reads a tar's .wh. entries: it needs "
				"--tar"), -1;
	return check_tar_index(o, blksz_given) ||
	       check_layers(o, blksz_given) || check_compression(o) ||
	       load_android(o, fs_config_file, product_out) ? -1 : source_date_epoch(o);
}

void mkfs_check_free(void)
{
	kiln_hints_free(&hints);
	kiln_fsconfig_free(&fsconfig);
	kiln_fcontexts_free(&fcontexts);
}

/* SPDX-License-Identifier: MIT */
/*
 * libkiln: the small public API the tools are built on. An image is made in
 * three steps: scan a source tree into inodes (tree.c), lay the inodes out
 * (layout.c) and write them (writer.c); kiln_mkfs() runs all three.
 */
#ifndef KILN_H
#define KILN_H

#include <stdbool.h>
#include <stdint.h>
#include <regex.h>
#include "compress/compress.h"

#define KILN_VERSION "0.1.0"

#define KILN_MAX_ZCFGS 8		/* algorithms of -z A:B:... */

struct kiln_mkfs_opts {
	const char *image;		/* output path */
	const char *source;		/* source directory (tar: NULL, "-": stdin) */
	bool tar;			/* --tar: source is a tar stream */
	bool tar_index;			/* --tar=i: data left in the tar */
	char **layers;			/* EROFS images to merge, bottom first */
	unsigned int nr_layers;
	bool clean_data;		/* --clean=data: the layers' data is
					   copied into the merged image */
	unsigned int nr_devices;	/* the device table's slots: the
					   tar's, or those the layers bring */
	bool aufs;			/* --aufs: .wh. entries to overlayfs */
	bool ovlfs_strip;		/* --ovlfs-strip=1: no overlayfs marks */
	unsigned int blkszbits;
	bool fixed_time;		/* -T / SOURCE_DATE_EPOCH: all mtimes */
	int64_t timestamp;
	int uuid_mode;			/* KILN_UUID_* */
	uint8_t uuid[16];
	char label[16];
	bool all_root;
	int64_t force_uid, force_gid;	/* -1 when unset */
/* the largest id: (uid_t)-1 is none to the kernel (a root open fails) */
#define KILN_ID_MAX 0xfffffffeu
	const char **exclude_paths;
	unsigned int nr_exclude_paths;
	regex_t *exclude_regexes;
	unsigned int nr_exclude_regexes;
	int verbosity;			/* 0 quiet, 1 normal, 2+ debug */
	bool compress;			/* -z given */
	/*
	 * The first -z algorithm; its -E and -C settings hold for all. A
	 * file takes another (-z A:B) only by --compress-hints.
	 */
	struct kiln_compr_cfg compr;
	struct kiln_compr_cfg compr_alt[KILN_MAX_ZCFGS - 1];
	unsigned int nr_zcfgs;		/* compr and the compr_alt used */
	const char *compress_hints;	/* --compress-hints=FILE */
	const struct kiln_hints *hints;	/* its hints, loaded (write/hints.h) */
	/* Android: --mount-point (no '/' around it), --fs-config-file (its
	 * entries loaded: write/fsconfig.h), --file-contexts, --block-list-file */
	const char *mount_point;
	const struct kiln_fsconfig *fsconfig;
	const char *file_contexts;
	const struct kiln_fcontexts *fcontexts;	/* its specs, loaded */
	const char *block_list_file;
	uint32_t pcluster_default;	/* -C: a file's pclusters unless a
					   hint says (compr's: the largest) */
	unsigned int workers;		/* compression threads */
	/*
	 * The process exits once kiln_mkfs returns: the tree is left to the
	 * exit. Freeing a large one (hundreds of thousands of small blocks)
	 * is serial time at the end of every build, and musl hands each
	 * emptied group of blocks back to the kernel, one munmap each.
	 */
	bool exit_after;
	int inode_form;			/* KILN_INODE_*: -E force-inode-... */
	bool ignore_mtime;		/* compact inodes may drop their mtime */
	bool no_inline_data;		/* regular files' tails in blocks */
	bool no_sb_crc;			/* -E nosbcrc */
	/*
	 * --chunksize: uncompressed regular files are chunk-based, equal
	 * chunks stored once, zero chunks as holes; 0: flat files.
	 */
	unsigned int chunkbits;
	bool chunk_indexes;		/* 8-byte chunk indexes, not a block map */
	uint32_t uid_offset, gid_offset;	/* added to every id */
	/*
	 * -x: a name/value pair is shared when more than this many inodes
	 * carry it; below 0, no xattrs at all. Default 1: any pair used twice
	 * (erofs-utils: 2), which never makes an image larger.
	 */
	long xattr_tolerance;
	/* --xattr-prefix: long name prefixes (each begins user., trusted. or
	 * security.), at most KILN_MAX_XATTR_PREFIXES */
	const char **xattr_prefixes;
	unsigned int nr_xattr_prefixes;
};

#define KILN_MAX_XATTR_PREFIXES 128	/* a 7-bit index */

/* Algorithm i of -z (0: the first). */
static inline const struct kiln_compr_cfg *
kiln_zcfg(const struct kiln_mkfs_opts *o, unsigned int i)
{
	return i ? &o->compr_alt[i - 1] : &o->compr;
}

enum { KILN_INODE_AUTO, KILN_INODE_COMPACT, KILN_INODE_EXTENDED };

enum { KILN_UUID_DERIVED, KILN_UUID_GIVEN, KILN_UUID_RANDOM };

void kiln_mkfs_opts_init(struct kiln_mkfs_opts *o);
/* A --xattr-prefix's short prefix index, or -1 if it cannot be one. */
int kiln_xattr_prefix_check(const char *prefix);
/* Builds the image; on failure prints one line and returns -1. */
int kiln_mkfs(const struct kiln_mkfs_opts *o);

/* Error reporting shared by the library and the tools. */
extern const char *kiln_progname;
/* Exit status when an allocation fails (fsck: 8, an operational error). */
extern int kiln_oom_status;
void kiln_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Set by a tool that stops at its first error (mkfs): only that line is
 * printed. Workers that fail after it, on the same full disk or the same
 * damaged layer, would only echo it.
 */
extern bool kiln_err_first_only;
void kiln_info(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
extern int kiln_verbosity;

#endif

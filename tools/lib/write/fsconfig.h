/* SPDX-License-Identifier: MIT */
/*
 * --fs-config-file: Android's "canned" fs_config, the text file AOSP's
 * build writes for an image (META/filesystem_config.txt). One line per
 * path:
 *	PATH UID GID MODE [capabilities=N] [KEY=VALUE...]
 * PATH without a leading '/' (one is dropped), the root as "/" or an
 * empty first field (a line starting with a space); MODE in octal; N in
 * decimal or 0x hex; other KEY=VALUE (selabel=) are ignored, as AOSP
 * does. A path given twice takes its last line. With
 * --mount-point, paths are looked up as MOUNT_POINT/PATH, but the root as
 * itself. Every path in the image must be in the file, as in AOSP.
 * Without the file, Android's built-in rules apply (fsbuiltin.c).
 */
#ifndef KILN_WRITE_FSCONFIG_H
#define KILN_WRITE_FSCONFIG_H

#include <stdbool.h>
#include <stdint.h>

struct kiln_fsconfig_entry {
	char *path;
	uint32_t uid, gid, mode;	/* mode: permission bits only */
	uint64_t caps;			/* 0: no security.capability */
};

struct kiln_fsconfig {
	const char *file;
	const char *mount_point;	/* without '/' around it, or NULL */
	struct kiln_fsconfig_entry *v;
	uint32_t nr;
	uint32_t *slots;		/* hash: entry index + 1, 0 empty */
	uint32_t nr_slots;
	/* no canned file (fsbuiltin.c): the rules, then Android's table */
	bool builtin;
	/* the product's fs_config_files [0] and fs_config_dirs [1]: each
	   entry's path is a prefix, matched with fnmatch(3) */
	struct kiln_fsconfig_entry *rules[2];
	uint32_t nr_rules[2];
};

/* One-line error and -1 on a bad line or an unreadable file. */
int kiln_fsconfig_load(struct kiln_fsconfig *fc, const char *file,
		       const char *mount_point);
/*
 * Without a canned file: --product-out's fs_config_dirs/fs_config_files
 * (if it has them) and the built-in table, as libcutils' fs_config().
 * One-line error and -1 on a damaged rules file.
 */
int kiln_fsconfig_builtin_load(struct kiln_fsconfig *fc,
			       const char *product_out,
			       const char *mount_point);
/* The built-in way (fsbuiltin.c): always an answer. */
void kiln_fsconfig_builtin_lookup(const struct kiln_fsconfig *fc,
				  const char *relpath, bool dir,
				  struct kiln_fsconfig_entry *e);
void kiln_fsconfig_free(struct kiln_fsconfig *fc);

struct kiln_inode;
/*
 * Replaces *uid, *gid and the permission bits of *mode by relpath's entry
 * (before --force-uid and the offsets, as erofs-utils); *caps: its
 * capabilities. A path not in the file: one line naming it, -1.
 */
int kiln_fsconfig_apply(const struct kiln_fsconfig *fc, const char *relpath,
			uint32_t *mode, uint64_t *uid, uint64_t *gid,
			uint64_t *caps);
/* caps as security.capability (revision 2, effective), for the kernel. */
int kiln_fsconfig_caps_xattr(struct kiln_inode *in, uint64_t caps);

#endif

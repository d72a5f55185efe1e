/* SPDX-License-Identifier: MIT */
/*
 * dump.erofs: what is inside an image, for people debugging one. The
 * output follows erofs-utils' dump.erofs line by line where it has the
 * same option, so habits and scripts carry over. Everything is read
 * through libkiln's reader, which checks what it reads: a damaged image
 * gets one line and exit status 1, never a crash.
 */
#ifndef KILN_DUMP_H
#define KILN_DUMP_H

#include <stdbool.h>
#include <stdint.h>
#include "read/reader.h"

struct dump {
	struct kiln_image img;
	struct kiln_dctx *x;
	struct kiln_diag d;
};

/* Each prints to stdout; on error returns -1 with dp->d (or stderr) said. */
int dump_super(struct dump *dp);				/* super.c */
int dump_stats(struct dump *dp);				/* stats.c */
/* path: the inode's, if known; else one is searched for. */
int dump_inode(struct dump *dp, uint64_t nid, const char *path, bool ls,
	       bool extents);
int dump_cat(struct dump *dp, uint64_t nid);			/* inode.c */

/* tree.c: directories, with a guard against loops in a hostile image. */
typedef int (*dump_entry_fn)(struct dump *dp, void *arg, const char *name,
			     uint64_t nid, uint8_t ftype);
/* Calls fn for each entry of directory ri but "." and "..". */
int dump_dir_each(struct dump *dp, const struct kiln_rinode *ri,
		  dump_entry_fn fn, void *arg);
/* The nid at an absolute path, and the path written plainly (malloc'd). */
int dump_lookup(struct dump *dp, const char *path, uint64_t *nid,
		char **plain);
/* A path that names nid (malloc'd), or NULL if none does. */
char *dump_path_of(struct dump *dp, uint64_t nid);
/* The words erofs-utils uses for each EROFS_FT_* type. */
extern const char *const dump_type_name[8];
/* Every entry of directory ri, "." and ".." included (reader.h's fn). */
int dump_dir_raw(struct dump *dp, const struct kiln_rinode *ri,
		 kiln_dirent_fn fn, void *arg);
/* Bytes the inode takes in the image, as erofs-utils counts them. */
uint64_t dump_ondisk_size(const struct dump *dp, const struct kiln_rinode *ri);

/* A set of nids, so no directory is walked twice. */
struct dump_seen {
	uint64_t *slot;			/* nid + 1; 0 is empty */
	uint64_t cap, nr;
};
/* Adds nid; false if it was there already. */
bool dump_seen_add(struct dump_seen *s, uint64_t nid);
void dump_seen_free(struct dump_seen *s);

#endif

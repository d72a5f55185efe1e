/* SPDX-License-Identifier: MIT */
/*
 * File-tree payloads: a zstd-compressed tar unpacked into a staging
 * directory on the data partition, hashed as it is read; moved into place
 * only when every payload of the bundle is in and checked, so a bad one
 * leaves no trace.
 */
#ifndef KILN_OTA_FILES_H
#define KILN_OTA_FILES_H

#include "bundle.h"
#include "manifest.h"

#define STAGING_DIR ".kiln-update"	/* under the data directory */

/*
 * With on, every file is fsynced as it is unpacked (the usual way, and
 * slow on flash); by default nothing is, and the caller syncs the file
 * system once (syncfs) before the trees are moved into place.
 */
void files_fsync_each(int on);
/* Removes what an interrupted update left in datafd's staging directory. */
int files_clean(int datafd, char *err, size_t errlen);
/*
 * Unpacks payload number i (p) from b into the staging directory: -1 with
 * err when the payload is refused (unsafe entries, changed, cut short),
 * -2 when this device fails (no space, I/O).
 */
int files_unpack(struct bundle_in *b, const struct payload *p, unsigned i,
		 int datafd, const char *datapath, char *err, size_t errlen);
/* How files_commit put a payload in place, so files_undo can take it back. */
struct files_placed {
	int how;	/* FILES_NOT, FILES_RENAMED (a new target), FILES_EXCHANGED */
	size_t made;	/* length of the first parent directory it made, 0 none */
};
enum { FILES_NOT, FILES_RENAMED, FILES_EXCHANGED };
/*
 * Puts staged payload i in place of its target: one atomic exchange (or a
 * rename when the target is new). The old tree stays in the staging
 * directory until files_clean, so that files_undo can put it back.
 */
int files_commit(const struct payload *p, unsigned i, int datafd,
		 struct files_placed *placed, char *err, size_t errlen);
/*
 * Takes back what files_commit did for payload i: the old tree in place
 * again, or a new target and the parent directories made for it gone.
 */
int files_undo(const struct payload *p, unsigned i, int datafd,
	       const struct files_placed *placed, char *err, size_t errlen);

#endif

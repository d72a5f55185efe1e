/* SPDX-License-Identifier: MIT */
/* Writing the root image payload to the inactive slot. */
#ifndef KILN_OTA_SLOT_H
#define KILN_OTA_SLOT_H

#include "bundle.h"
#include "manifest.h"

/*
 * Streams payload p from b onto dev (a block device, opened exclusively so
 * a mounted one is refused, or a regular file, written in place), hashing
 * as it goes; fsyncs, then compares the hash with the manifest's. dev must
 * be at least p->size bytes. -1 with err when the bundle is at fault (cut
 * short, changed), -2 when the device is (cannot open, write, fsync).
 */
int slot_write(struct bundle_in *b, const struct payload *p, const char *dev,
	       char *err, size_t errlen);
/* Runs FSCK DEV; its output is passed on. */
int slot_fsck(const char *fsck, const char *dev, char *err, size_t errlen);

#endif

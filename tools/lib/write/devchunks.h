/* SPDX-License-Identifier: MIT */
/*
 * Files whose data stays on another device (in->devmap): --tar=i's tar,
 * merged layers' images. Each is chunk-based, with 8-byte chunk indexes
 * naming the device and its blocks; a chunk is all one run's data or a
 * hole, so the chunk size is the largest that every run's edges allow.
 */
#ifndef KILN_WRITE_DEVCHUNKS_H
#define KILN_WRITE_DEVCHUNKS_H

#include "inode.h"
#include "records.h"

/* Stages in's record: inode, xattrs, then its chunk indexes. */
int kiln_devchunks_stage(struct kiln_inode *in, struct kiln_records *r,
			 unsigned int blkszbits);

#endif

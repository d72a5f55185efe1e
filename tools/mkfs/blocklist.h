/* SPDX-License-Identifier: MIT */
/*
 * --block-list-file: which blocks hold each regular file's data, the list
 * AOSP's build keeps for block-based OTA. One line per file that has
 * blocks of its own:
 *	/MOUNT_POINT/PATH RANGE...
 * each RANGE "N" or "FIRST-LAST" (block numbers, in file order, adjacent
 * blocks joined), as erofs-utils 1.8 wrote it (1.8.7 dropped the option):
 * data blocks only, not the metadata block an inline tail shares with
 * other inodes, so a file all inline has no line. It is read back from the
 * finished image, so it says what the image holds.
 */
#ifndef KILN_MKFS_BLOCKLIST_H
#define KILN_MKFS_BLOCKLIST_H

#include <stdbool.h>
#include <stdio.h>

/* The list being written, under a temporary name until it is whole. */
struct mkfs_blist {
	const char *list;
	char *tmp;
	FILE *out;
};

/* Before the image is made, so a list that cannot be written stops it. */
int mkfs_block_list_open(struct mkfs_blist *b, const char *list);
/*
 * Once the image is made (ok): writes the list and puts it in place; else
 * removes it. One-line error and -1 if it cannot be written (none is left).
 */
int mkfs_block_list_close(struct mkfs_blist *b, bool ok, const char *image,
			  const char *mount_point);

#endif

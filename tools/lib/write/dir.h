/* SPDX-License-Identifier: MIT */
/*
 * Directory blocks: each block holds an array of 12-byte dirents followed
 * by their names; an entry and its name never cross a block. The last block
 * counts only its used bytes in i_size.
 */
#ifndef KILN_DIR_H
#define KILN_DIR_H

#include "inode.h"

uint64_t kiln_dir_size(const struct kiln_inode *dir, uint32_t blksz);
/* Encodes the whole directory into out (round_up(size, blksz) bytes). */
void kiln_dir_encode(const struct kiln_inode *dir, uint32_t blksz,
		     uint8_t *out);

#endif

/* SPDX-License-Identifier: MIT */
#include <string.h>
#include <sys/stat.h>
#include "dir.h"
#include "format/erofs_fs.h"
#include "format/ondisk.h"

/*
 * Calls fn once per directory block with the range of entries it holds;
 * returns the directory's i_size. Both size and encoding use this walk so
 * they cannot disagree.
 */
static uint64_t for_each_block(const struct kiln_inode *dir, uint32_t blksz,
			       void (*fn)(const struct kiln_inode *, uint32_t,
					  uint32_t, uint32_t, uint8_t *),
			       uint8_t *out)
{
	uint64_t blocks = 0;
	uint32_t used = 0, first = 0;

	for (uint32_t i = 0; i < dir->nr_dentries; i++) {
		uint32_t len = EROFS_DIRENT_SIZE + dir->dentries[i].namelen;

		if (used + len > blksz) {
			if (fn)
				fn(dir, first, i, blksz, out + blocks * blksz);
			blocks++;
			used = 0;
			first = i;
		}
		used += len;
	}
	if (fn)
		fn(dir, first, dir->nr_dentries, blksz, out + blocks * blksz);
	return blocks * blksz + used;
}

static void encode_block(const struct kiln_inode *dir, uint32_t first,
			 uint32_t end, uint32_t blksz, uint8_t *out)
{
	uint32_t nameoff = (end - first) * EROFS_DIRENT_SIZE;

	memset(out, 0, blksz);
	for (uint32_t i = first; i < end; i++) {
		const struct kiln_dentry *d = &dir->dentries[i];
		struct erofs_dirent de = {
			.nid = d->inode->nid,
			.nameoff = (uint16_t)nameoff,
			.file_type = erofs_ftype(d->inode->mode),
		};

		erofs_dirent_encode(out + (i - first) * EROFS_DIRENT_SIZE, &de);
		memcpy(out + nameoff, d->name, d->namelen);
		nameoff += d->namelen;
	}
}

uint64_t kiln_dir_size(const struct kiln_inode *dir, uint32_t blksz)
{
	return for_each_block(dir, blksz, NULL, NULL);
}

void kiln_dir_encode(const struct kiln_inode *dir, uint32_t blksz,
		     uint8_t *out)
{
	for_each_block(dir, blksz, encode_block, out);
}

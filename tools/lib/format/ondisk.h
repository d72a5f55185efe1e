/* SPDX-License-Identifier: MIT */
/*
 * Encoders and decoders between the host structs of erofs_fs.h and their
 * little-endian on-disk bytes. They check nothing: validation belongs to
 * the reader, layout decisions to the writer.
 */
#ifndef KILN_ONDISK_H
#define KILN_ONDISK_H

#include <stddef.h>
#include "erofs_fs.h"

uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

void erofs_sb_encode(uint8_t out[EROFS_SUPER_SIZE],
		     const struct erofs_super_block *sb);
void erofs_sb_decode(struct erofs_super_block *sb,
		     const uint8_t in[EROFS_SUPER_SIZE]);
/* crc32c of the superblock's block as the kernel checks it: image[1024..] */
uint32_t erofs_sb_checksum(const uint8_t *sb_block, unsigned int blkszbits);

void erofs_deviceslot_encode(uint8_t out[EROFS_DEVT_SLOT_SIZE],
			     const struct erofs_deviceslot *s);
void erofs_deviceslot_decode(struct erofs_deviceslot *s,
			     const uint8_t in[EROFS_DEVT_SLOT_SIZE]);
/*
 * Kiln's tag for a merged layer: its uuid in 32 lowercase hex digits, the
 * rest of the 64 bytes zero (write/layers.c makes it, read/devices.c
 * checks a --device file against it).
 */
void erofs_uuid_tag(uint8_t tag[64], const uint8_t uuid[16]);

void erofs_inode_compact_encode(uint8_t out[EROFS_INODE_COMPACT_SIZE],
				const struct erofs_inode_compact *i);
void erofs_inode_compact_decode(struct erofs_inode_compact *i,
				const uint8_t in[EROFS_INODE_COMPACT_SIZE]);
void erofs_inode_extended_encode(uint8_t out[EROFS_INODE_EXTENDED_SIZE],
				 const struct erofs_inode_extended *i);
void erofs_inode_extended_decode(struct erofs_inode_extended *i,
				 const uint8_t in[EROFS_INODE_EXTENDED_SIZE]);

void erofs_dirent_encode(uint8_t out[EROFS_DIRENT_SIZE],
			 const struct erofs_dirent *d);
void erofs_dirent_decode(struct erofs_dirent *d,
			 const uint8_t in[EROFS_DIRENT_SIZE]);

/* Writes one xattr entry (header, name, value, zero padding); returns its size. */
size_t erofs_xattr_entry_encode(uint8_t *out, uint8_t name_index,
				const void *name, uint8_t name_len,
				const void *value, uint16_t value_size);

/* Linux's new_encode_dev(), the format of i_u for device inodes. */
static inline uint32_t erofs_encode_dev(uint32_t major, uint32_t minor)
{
	return (minor & 0xffu) | (major << 8) | ((minor & ~0xffu) << 12);
}

static inline void erofs_decode_dev(uint32_t dev, uint32_t *major,
				    uint32_t *minor)
{
	*major = (dev & 0xfff00u) >> 8;
	*minor = (dev & 0xffu) | ((dev >> 12) & 0xfff00u);
}

#endif

/* SPDX-License-Identifier: MIT */
/* Field-by-field (de)serialisation of EROFS on-disk structures. */
#include <string.h>
#include "le.h"
#include "ondisk.h"

void erofs_sb_encode(uint8_t o[EROFS_SUPER_SIZE],
		     const struct erofs_super_block *sb)
{
	memset(o, 0, EROFS_SUPER_SIZE);
	put_le32(o + 0x00, sb->magic);
	put_le32(o + 0x04, sb->checksum);
	put_le32(o + 0x08, sb->feature_compat);
	o[0x0c] = sb->blkszbits;
	o[0x0d] = sb->sb_extslots;
	put_le16(o + 0x0e, sb->root_nid);
	put_le64(o + 0x10, sb->inos);
	put_le64(o + 0x18, sb->epoch);
	put_le32(o + 0x20, sb->fixed_nsec);
	put_le32(o + 0x24, sb->blocks);
	put_le32(o + 0x28, sb->meta_blkaddr);
	put_le32(o + 0x2c, sb->xattr_blkaddr);
	memcpy(o + 0x30, sb->uuid, 16);
	memcpy(o + 0x40, sb->volume_name, 16);
	put_le32(o + 0x50, sb->feature_incompat);
	put_le16(o + 0x54, sb->u1);
	put_le16(o + 0x56, sb->extra_devices);
	put_le16(o + 0x58, sb->devt_slotoff);
	o[0x5a] = sb->dirblkbits;
	o[0x5b] = sb->xattr_prefix_count;
	put_le32(o + 0x5c, sb->xattr_prefix_start);
	put_le64(o + 0x60, sb->packed_nid);
	o[0x68] = sb->xattr_filter_reserved;
}

void erofs_sb_decode(struct erofs_super_block *sb,
		     const uint8_t i[EROFS_SUPER_SIZE])
{
	memset(sb, 0, sizeof(*sb));
	sb->magic = get_le32(i + 0x00);
	sb->checksum = get_le32(i + 0x04);
	sb->feature_compat = get_le32(i + 0x08);
	sb->blkszbits = i[0x0c];
	sb->sb_extslots = i[0x0d];
	sb->root_nid = get_le16(i + 0x0e);
	sb->inos = get_le64(i + 0x10);
	sb->epoch = get_le64(i + 0x18);
	sb->fixed_nsec = get_le32(i + 0x20);
	sb->blocks = get_le32(i + 0x24);
	sb->meta_blkaddr = get_le32(i + 0x28);
	sb->xattr_blkaddr = get_le32(i + 0x2c);
	memcpy(sb->uuid, i + 0x30, 16);
	memcpy(sb->volume_name, i + 0x40, 16);
	sb->feature_incompat = get_le32(i + 0x50);
	sb->u1 = get_le16(i + 0x54);
	sb->extra_devices = get_le16(i + 0x56);
	sb->devt_slotoff = get_le16(i + 0x58);
	sb->dirblkbits = i[0x5a];
	sb->xattr_prefix_count = i[0x5b];
	sb->xattr_prefix_start = get_le32(i + 0x5c);
	sb->packed_nid = get_le64(i + 0x60);
	sb->xattr_filter_reserved = i[0x68];
}

void erofs_deviceslot_encode(uint8_t o[EROFS_DEVT_SLOT_SIZE],
			     const struct erofs_deviceslot *s)
{
	memset(o, 0, EROFS_DEVT_SLOT_SIZE);
	memcpy(o, s->tag, sizeof(s->tag));
	put_le32(o + 0x40, s->blocks);
	put_le32(o + 0x44, s->mapped_blkaddr);
}

void erofs_deviceslot_decode(struct erofs_deviceslot *s,
			     const uint8_t i[EROFS_DEVT_SLOT_SIZE])
{
	memcpy(s->tag, i, sizeof(s->tag));
	s->blocks = get_le32(i + 0x40);
	s->mapped_blkaddr = get_le32(i + 0x44);
}

void erofs_uuid_tag(uint8_t tag[64], const uint8_t uuid[16])
{
	static const char hex[] = "0123456789abcdef";

	memset(tag, 0, 64);
	for (int i = 0; i < 16; i++) {
		tag[2 * i] = (uint8_t)hex[uuid[i] >> 4];
		tag[2 * i + 1] = (uint8_t)hex[uuid[i] & 15];
	}
}

/*
 * The checksummed range starts at the superblock and runs to the end of its
 * block; with blocks of 1 KiB or less it is one block long instead.
 */
uint32_t erofs_sb_checksum(const uint8_t *sb_block, unsigned int blkszbits)
{
	uint32_t blksz = 1u << blkszbits;
	uint32_t len = blksz > EROFS_SUPER_OFFSET ?
		       blksz - EROFS_SUPER_OFFSET : blksz;
	uint8_t zero[4] = { 0 };
	uint32_t crc = crc32c(~0u, sb_block, 4);

	crc = crc32c(crc, zero, 4);
	return crc32c(crc, sb_block + 8, len - 8);
}

void erofs_inode_compact_encode(uint8_t o[EROFS_INODE_COMPACT_SIZE],
				const struct erofs_inode_compact *i)
{
	memset(o, 0, EROFS_INODE_COMPACT_SIZE);
	put_le16(o + 0, i->i_format);
	put_le16(o + 2, i->i_xattr_icount);
	put_le16(o + 4, i->i_mode);
	put_le16(o + 6, i->i_nlink);
	put_le32(o + 8, i->i_size);
	put_le32(o + 12, i->i_mtime);
	put_le32(o + 16, i->i_u);
	put_le32(o + 20, i->i_ino);
	put_le16(o + 24, i->i_uid);
	put_le16(o + 26, i->i_gid);
}

void erofs_inode_compact_decode(struct erofs_inode_compact *i,
				const uint8_t in[EROFS_INODE_COMPACT_SIZE])
{
	memset(i, 0, sizeof(*i));
	i->i_format = get_le16(in + 0);
	i->i_xattr_icount = get_le16(in + 2);
	i->i_mode = get_le16(in + 4);
	i->i_nlink = get_le16(in + 6);
	i->i_size = get_le32(in + 8);
	i->i_mtime = get_le32(in + 12);
	i->i_u = get_le32(in + 16);
	i->i_ino = get_le32(in + 20);
	i->i_uid = get_le16(in + 24);
	i->i_gid = get_le16(in + 26);
	i->i_reserved = get_le32(in + 28);
}

void erofs_inode_extended_encode(uint8_t o[EROFS_INODE_EXTENDED_SIZE],
				 const struct erofs_inode_extended *i)
{
	memset(o, 0, EROFS_INODE_EXTENDED_SIZE);
	put_le16(o + 0, i->i_format);
	put_le16(o + 2, i->i_xattr_icount);
	put_le16(o + 4, i->i_mode);
	put_le16(o + 6, i->i_nb);
	put_le64(o + 8, i->i_size);
	put_le32(o + 16, i->i_u);
	put_le32(o + 20, i->i_ino);
	put_le32(o + 24, i->i_uid);
	put_le32(o + 28, i->i_gid);
	put_le64(o + 32, i->i_mtime);
	put_le32(o + 40, i->i_mtime_nsec);
	put_le32(o + 44, i->i_nlink);
}

void erofs_inode_extended_decode(struct erofs_inode_extended *i,
				 const uint8_t in[EROFS_INODE_EXTENDED_SIZE])
{
	memset(i, 0, sizeof(*i));
	i->i_format = get_le16(in + 0);
	i->i_xattr_icount = get_le16(in + 2);
	i->i_mode = get_le16(in + 4);
	i->i_nb = get_le16(in + 6);
	i->i_size = get_le64(in + 8);
	i->i_u = get_le32(in + 16);
	i->i_ino = get_le32(in + 20);
	i->i_uid = get_le32(in + 24);
	i->i_gid = get_le32(in + 28);
	i->i_mtime = get_le64(in + 32);
	i->i_mtime_nsec = get_le32(in + 40);
	i->i_nlink = get_le32(in + 44);
	memcpy(i->i_reserved2, in + 48, 16);
}

void erofs_dirent_encode(uint8_t o[EROFS_DIRENT_SIZE],
			 const struct erofs_dirent *d)
{
	put_le64(o, d->nid);
	put_le16(o + 8, d->nameoff);
	o[10] = d->file_type;
	o[11] = 0;
}

void erofs_dirent_decode(struct erofs_dirent *d,
			 const uint8_t in[EROFS_DIRENT_SIZE])
{
	d->nid = get_le64(in);
	d->nameoff = get_le16(in + 8);
	d->file_type = in[10];
	d->reserved = in[11];
}

size_t erofs_xattr_entry_encode(uint8_t *o, uint8_t name_index,
				const void *name, uint8_t name_len,
				const void *value, uint16_t value_size)
{
	size_t size = erofs_xattr_entry_size(name_len, value_size);

	memset(o, 0, size);
	o[0] = name_len;
	o[1] = name_index;
	put_le16(o + 2, value_size);
	memcpy(o + 4, name, name_len);
	if (value_size)
		memcpy(o + 4 + name_len, value, value_size);
	return size;
}

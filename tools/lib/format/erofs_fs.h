/* SPDX-License-Identifier: MIT */
/*
 * EROFS on-disk format: the structures and constants Kiln reads and writes.
 * Written from the format reference (shared/docs/erofs-format.md) and the
 * kernel's behaviour. Everything on disk is little-endian; these structs are
 * documentation of the layout and are encoded/decoded field by field with the
 * helpers in le.h, never memcpy'd, so host endianness does not matter.
 */
#ifndef KILN_EROFS_FS_H
#define KILN_EROFS_FS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#define EROFS_SUPER_OFFSET	1024
#define EROFS_SUPER_MAGIC	0xE0F5E1E2u
#define EROFS_SUPER_SIZE	128
#define EROFS_ISLOT_BITS	5		/* nid unit: 32-byte slots */
#define EROFS_ISLOT_SIZE	(1u << EROFS_ISLOT_BITS)
#define EROFS_NULL_ADDR		0xFFFFFFFFu
/* block addresses and the block count are 32-bit (no 48BIT feature) */
#define EROFS_MAX_BLOCKS	0xFFFFFFFFull
#define EROFS_NAME_LEN		255
#define EROFS_MIN_BLKSZBITS	9
#define EROFS_MAX_BLKSZBITS	16		/* 64 KiB, the largest page size */
/* compact indexes hold lclusters up to this (kernel: -EOPNOTSUPP above) */
#define EROFS_MAX_COMPACT_LCBITS	14
/* the kernel refuses to decompress an extent longer than this */
#define Z_EROFS_PCLUSTER_MAX_DSIZE	(12u << 20)
#define Z_EROFS_PCLUSTER_MAX_SIZE	(1u << 20)

/*
 * lz4's max_pclusterblks: the kernel checks it against 1 MiB in blocks of
 * the superblock's size while it reads it, which is still the page's (4
 * KiB at least) for an image of smaller blocks: 256 of them then.
 */
static inline uint32_t erofs_lz4_max_pclusterblks(unsigned int blkszbits)
{
	return Z_EROFS_PCLUSTER_MAX_SIZE >> (blkszbits > 12 ? blkszbits : 12);
}

/* feature_compat */
#define EROFS_FEATURE_COMPAT_SB_CHKSUM		0x00000001
#define EROFS_FEATURE_COMPAT_MTIME		0x00000002
#define EROFS_FEATURE_COMPAT_XATTR_FILTER	0x00000004
#define EROFS_XATTR_FILTER_SEED		0x25bbe08f	/* + base index */
/* Linux 6.17+: shared xattrs in the metabox inode (with INCOMPAT_METABOX) */
#define EROFS_FEATURE_COMPAT_SHARED_EA_IN_METABOX	0x00000008
/* the long xattr prefix table in the metadata, not the packed inode */
#define EROFS_FEATURE_COMPAT_PLAIN_XATTR_PFX	0x00000010

/* feature_incompat */
#define EROFS_FEATURE_INCOMPAT_ZERO_PADDING	0x00000001
#define EROFS_FEATURE_INCOMPAT_COMPR_CFGS	0x00000002
#define EROFS_FEATURE_INCOMPAT_BIG_PCLUSTER	0x00000002
#define EROFS_FEATURE_INCOMPAT_CHUNKED_FILE	0x00000004
#define EROFS_FEATURE_INCOMPAT_DEVICE_TABLE	0x00000008	/* also HEAD2 */
#define EROFS_FEATURE_INCOMPAT_ZTAILPACKING	0x00000010
#define EROFS_FEATURE_INCOMPAT_FRAGMENTS	0x00000020	/* also DEDUPE */
#define EROFS_FEATURE_INCOMPAT_XATTR_PREFIXES	0x00000040
#define EROFS_FEATURE_INCOMPAT_48BIT		0x00000080
#define EROFS_FEATURE_INCOMPAT_METABOX		0x00000100

/* Compression algorithm ids: bits of available_compr_algs, h_algorithmtype. */
enum { EROFS_ALG_LZ4 = 0, EROFS_ALG_LZMA = 1, EROFS_ALG_DEFLATE = 2,
       EROFS_ALG_ZSTD = 3 };

/* Superblock: 128 bytes at byte 1024 of the image. */
struct erofs_super_block {
	uint32_t magic;
	uint32_t checksum;		/* crc32c of [1024, block end), itself zero */
	uint32_t feature_compat;
	uint8_t  blkszbits;
	uint8_t  sb_extslots;
	uint16_t root_nid;
	uint64_t inos;
	uint64_t epoch;			/* mtime of every compact inode */
	uint32_t fixed_nsec;
	uint32_t blocks;
	uint32_t meta_blkaddr;
	uint32_t xattr_blkaddr;
	uint8_t  uuid[16];
	uint8_t  volume_name[16];
	uint32_t feature_incompat;
	uint16_t u1;			/* available_compr_algs or lz4_max_distance */
	uint16_t extra_devices;
	uint16_t devt_slotoff;
	uint8_t  dirblkbits;		/* must be 0 */
	uint8_t  xattr_prefix_count;
	uint32_t xattr_prefix_start;
	uint64_t packed_nid;
	uint8_t  xattr_filter_reserved;
	uint8_t  reserved[23];
};

/*
 * Device table (DEVICE_TABLE): extra_devices slots of 128 bytes at byte
 * devt_slotoff * 128. A chunk index names its device (1..); mounted
 * without device= options, device k's block b is the image's block
 * mapped_blkaddr + b (one file holding all, e.g. an index and its tar).
 */
#define EROFS_DEVT_SLOT_SIZE	128
struct erofs_deviceslot {
	uint8_t  tag[64];		/* what names it (a digest), or empty */
	uint32_t blocks;
	uint32_t mapped_blkaddr;
};

/* i_format: bit 0 version, bits 1-3 data layout; every other bit must be 0. */
#define EROFS_INODE_LAYOUT_COMPACT	0
#define EROFS_INODE_LAYOUT_EXTENDED	1
#define EROFS_I_DATALAYOUT_BIT		1

enum erofs_datalayout {
	EROFS_INODE_FLAT_PLAIN = 0,
	EROFS_INODE_COMPRESSED_FULL = 1,
	EROFS_INODE_FLAT_INLINE = 2,
	EROFS_INODE_COMPRESSED_COMPACT = 3,
	EROFS_INODE_CHUNK_BASED = 4,
};

#define EROFS_INODE_COMPACT_SIZE	32
#define EROFS_INODE_EXTENDED_SIZE	64

/*
 * i_u: start block for flat layouts, block count for compressed ones, the
 * device number (Linux new_encode_dev) for character and block devices.
 */
struct erofs_inode_compact {
	uint16_t i_format;
	uint16_t i_xattr_icount;
	uint16_t i_mode;
	uint16_t i_nlink;
	uint32_t i_size;
	uint32_t i_mtime;		/* >= 6.15 only; we always write 0 */
	uint32_t i_u;
	uint32_t i_ino;
	uint16_t i_uid;
	uint16_t i_gid;
	uint32_t i_reserved;
};

struct erofs_inode_extended {
	uint16_t i_format;
	uint16_t i_xattr_icount;
	uint16_t i_mode;
	uint16_t i_nb;			/* must be 0 without 48BIT */
	uint64_t i_size;
	uint32_t i_u;
	uint32_t i_ino;
	uint32_t i_uid;
	uint32_t i_gid;
	uint64_t i_mtime;
	uint32_t i_mtime_nsec;
	uint32_t i_nlink;
	uint8_t  i_reserved2[16];
};

/* Chunk-based files: i_u is the chunk format. */
#define EROFS_CHUNK_FORMAT_BLKBITS_MASK	0x001f
#define EROFS_CHUNK_FORMAT_INDEXES	0x0020

/*
 * Compressed files: an 8-byte map header after the inode and its xattrs,
 * then the lcluster index, full (8 bytes a record, layout 1) or compact
 * (4-byte packs of two records or 32-byte packs of 16, layout 3). An
 * extent is a byte range of the file stored in one pcluster; each lcluster
 * (one block) has a record saying whether an extent starts in it.
 */
#define Z_EROFS_MAP_HEADER_SIZE			8
#define Z_EROFS_ADVISE_COMPACTED_2B		0x0001	/* compact index */
#define Z_EROFS_ADVISE_EXTENTS			0x0001	/* full: Linux 6.15+ */
#define Z_EROFS_ADVISE_BIG_PCLUSTER_1		0x0002
#define Z_EROFS_ADVISE_BIG_PCLUSTER_2		0x0004
#define Z_EROFS_ADVISE_INLINE_PCLUSTER		0x0008
#define Z_EROFS_ADVISE_INTERLACED_PCLUSTER	0x0010
#define Z_EROFS_ADVISE_FRAGMENT_PCLUSTER	0x0020

#define Z_EROFS_LCLUSTER_TYPE_PLAIN	0
#define Z_EROFS_LCLUSTER_TYPE_HEAD1	1
#define Z_EROFS_LCLUSTER_TYPE_NONHEAD	2
#define Z_EROFS_LCLUSTER_TYPE_HEAD2	3
#define Z_EROFS_LI_D0_CBLKCNT		0x0800	/* delta0 holds a block count */
/* full index heads: the extent is a prefix of what its pcluster decodes to */
#define Z_EROFS_LI_PARTIAL_REF		0x8000

/*
 * One lcluster's record, decoded; the same whichever encoding carries it.
 * A NONHEAD's delta0 counts lclusters back to its head (1 where the record
 * carries its pcluster's block count instead, cblkcnt), delta1 on to the
 * next head (-1 where a compact pack does not store it).
 */
struct z_erofs_lcluster {
	uint8_t  type;			/* Z_EROFS_LCLUSTER_TYPE_* */
	uint16_t clusterofs;		/* heads: where the extent starts */
	uint32_t blkaddr;		/* heads: first block of the pcluster */
	uint16_t delta0;
	int32_t  delta1;
	uint16_t cblkcnt;		/* 0 unless CBLKCNT */
	bool partial;			/* heads: PARTIAL_REF */
};

/* Directory entry: 12 bytes; names follow the entry array of each block. */
#define EROFS_DIRENT_SIZE	12
struct erofs_dirent {
	uint64_t nid;
	uint16_t nameoff;		/* offset of the name within the block */
	uint8_t  file_type;
	uint8_t  reserved;
};

enum erofs_file_type {
	EROFS_FT_UNKNOWN, EROFS_FT_REG_FILE, EROFS_FT_DIR, EROFS_FT_CHRDEV,
	EROFS_FT_BLKDEV, EROFS_FT_FIFO, EROFS_FT_SOCK, EROFS_FT_SYMLINK,
};

/* A directory entry's file_type for an inode's mode. */
static inline uint8_t erofs_ftype(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:  return EROFS_FT_REG_FILE;
	case S_IFDIR:  return EROFS_FT_DIR;
	case S_IFCHR:  return EROFS_FT_CHRDEV;
	case S_IFBLK:  return EROFS_FT_BLKDEV;
	case S_IFIFO:  return EROFS_FT_FIFO;
	case S_IFSOCK: return EROFS_FT_SOCK;
	case S_IFLNK:  return EROFS_FT_SYMLINK;
	}
	return EROFS_FT_UNKNOWN;
}

/*
 * Extended attributes. An inode's xattr body is a 12-byte header, an array
 * of 4-byte shared ids, then inline entries. Body size = 12 + 4*(icount-1).
 */
#define EROFS_XATTR_IBODY_HEADER_SIZE	12
#define EROFS_XATTR_ENTRY_SIZE		4	/* header before name and value */
#define EROFS_XATTR_MAX_SHARED		255

struct erofs_xattr_ibody_header {
	uint32_t h_name_filter;
	uint8_t  h_shared_count;
	uint8_t  h_reserved2[7];
	/* uint32_t h_shared_xattrs[h_shared_count]; */
};

struct erofs_xattr_entry {
	uint8_t  e_name_len;
	uint8_t  e_name_index;
	uint16_t e_value_size;
	/* name, then value; padded to 4 bytes */
};

enum erofs_xattr_index {
	EROFS_XATTR_INDEX_USER = 1,
	EROFS_XATTR_INDEX_POSIX_ACL_ACCESS = 2,
	EROFS_XATTR_INDEX_POSIX_ACL_DEFAULT = 3,
	EROFS_XATTR_INDEX_TRUSTED = 4,
	EROFS_XATTR_INDEX_LUSTRE = 5,
	EROFS_XATTR_INDEX_SECURITY = 6,
	EROFS_XATTR_LONG_PREFIX = 0x80,	/* | k: long prefix k of the table */
};

static inline uint32_t erofs_xattr_ibody_size(uint16_t icount)
{
	return icount ? EROFS_XATTR_IBODY_HEADER_SIZE + 4u * (icount - 1u) : 0;
}

static inline uint32_t erofs_xattr_entry_size(uint32_t name_len,
					      uint32_t value_size)
{
	return (EROFS_XATTR_ENTRY_SIZE + name_len + value_size + 3u) & ~3u;
}

#endif

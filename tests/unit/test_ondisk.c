/* SPDX-License-Identifier: MIT */
/*
 * On-disk encoders against bytes observed in images made by Debian's
 * mkfs.erofs 1.5 (hexdumps in shared/docs/erofs-format.md §1.8, §2.8, §3.4,
 * §4.4) and against the standard CRC32C check value.
 */
#include <stdlib.h>
#include <sys/stat.h>
#include "check.h"
#include "write/dir.h"
#include "format/ondisk.h"

static void test_crc32c(void)
{
	/* the CRC-32C check value: crc("123456789") with final inversion */
	CHECK(~crc32c(~0u, "123456789", 9) == 0xE3069283u);
	CHECK(crc32c(~0u, "", 0) == ~0u);
}

static void test_superblock(void)
{
	struct erofs_super_block sb = {
		.magic = EROFS_SUPER_MAGIC, .checksum = 0x7187085a,
		.feature_compat = 3, .blkszbits = 12, .root_nid = 36,
		.inos = 9, .epoch = 1700000000, .blocks = 3,
	}, back;
	uint8_t b[EROFS_SUPER_SIZE];

	erofs_sb_encode(b, &sb);
	CHECK_BYTES(b, "e2e1 f5e0 5a08 8771 0300 0000 0c00 2400");
	CHECK_BYTES(b + 16, "0900 0000 0000 0000 00f1 5365 0000 0000");
	CHECK_BYTES(b + 32, "0000 0000 0300 0000 0000 0000 0000 0000");
	erofs_sb_decode(&back, b);
	CHECK(back.root_nid == 36 && back.inos == 9 && back.blocks == 3);
	CHECK(back.epoch == 1700000000 && back.magic == EROFS_SUPER_MAGIC);
}

/* The checksum covers the rest of the block and skips its own field. */
static void test_sb_checksum(void)
{
	uint8_t *blk = calloc(1, 4096);
	uint32_t a, b;

	blk[0] = 0xe2;
	a = erofs_sb_checksum(blk, 12);
	blk[4] = 0x55;			/* checksum field: ignored */
	CHECK(erofs_sb_checksum(blk, 12) == a);
	blk[3000] = 1;			/* metadata in block 0: covered */
	b = erofs_sb_checksum(blk, 12);
	CHECK(b != a);
	blk[200] ^= 1;
	a = erofs_sb_checksum(blk, 9);
	blk[600] ^= 1;			/* beyond 512 bytes: not covered */
	CHECK(erofs_sb_checksum(blk, 9) == a);
	free(blk);
}

static void test_inodes(void)
{
	struct erofs_inode_compact root = {
		.i_format = EROFS_INODE_FLAT_INLINE << EROFS_I_DATALAYOUT_BIT,
		.i_mode = 040755, .i_nlink = 3, .i_size = 176,
		.i_u = EROFS_NULL_ADDR,
	}, cdev = {
		.i_mode = 020644, .i_nlink = 1, .i_u = erofs_encode_dev(1, 3),
		.i_ino = 2,
	}, cback;
	struct erofs_inode_extended e = {
		.i_format = 1, .i_mode = 0100644, .i_size = 5ull << 32,
		.i_uid = 4000000000u, .i_gid = 65536, .i_mtime = 1700000001,
		.i_mtime_nsec = 123, .i_nlink = 70000, .i_u = 7, .i_ino = 9,
	}, eback;
	uint8_t b[EROFS_INODE_EXTENDED_SIZE];
	uint32_t maj, min;

	erofs_inode_compact_encode(b, &root);
	CHECK_BYTES(b, "0400 0000 ed41 0300 b000 0000 0000 0000"
		       "ffff ffff 0000 0000 0000 0000 0000 0000");
	erofs_inode_compact_encode(b, &cdev);
	CHECK_BYTES(b, "0000 0000 a421 0100 0000 0000 0000 0000 0301 0000 0200");
	erofs_inode_compact_decode(&cback, b);
	CHECK(cback.i_mode == 020644 && cback.i_u == 0x103);

	erofs_inode_extended_encode(b, &e);
	CHECK_BYTES(b + 6, "0000");		/* i_nb stays zero */
	CHECK_BYTES(b + 8, "0000 0000 0500 0000");
	CHECK_BYTES(b + 44, "7011 0100");	/* nlink 70000 at +44 */
	erofs_inode_extended_decode(&eback, b);
	CHECK(eback.i_size == e.i_size && eback.i_uid == e.i_uid &&
	      eback.i_gid == e.i_gid && eback.i_mtime == e.i_mtime &&
	      eback.i_mtime_nsec == 123 && eback.i_nlink == 70000);

	erofs_decode_dev(erofs_encode_dev(4095, 1048575), &maj, &min);
	CHECK(maj == 4095 && min == 1048575);
	erofs_decode_dev(erofs_encode_dev(259, 65539), &maj, &min);
	CHECK(maj == 259 && min == 65539);
}

static void test_dirent_and_xattr(void)
{
	struct erofs_dirent d = { .nid = 36, .nameoff = 120, .file_type = 2 };
	uint8_t b[64];

	erofs_dirent_encode(b, &d);
	CHECK_BYTES(b, "2400 0000 0000 0000 7800 0200");
	CHECK(erofs_xattr_entry_encode(b, 1, "mime_type", 9,
				       "application/octet-stream", 24) == 40);
	CHECK_BYTES(b, "0901 1800 6d69 6d65 5f74 7970 6561 7070 6c69 6361");
	CHECK(erofs_xattr_entry_encode(b, 4, "foo", 3, "bar", 3) == 12);
	CHECK_BYTES(b, "0304 0300 666f 6f62 6172 0000");
	CHECK(erofs_xattr_ibody_size(0) == 0 && erofs_xattr_ibody_size(5) == 28);
}

/* A directory with entries sized to land exactly on block boundaries. */
static void test_dir_packing(void)
{
	static char names[400][256];
	struct kiln_dentry de[400];
	struct kiln_inode self = { .mode = S_IFDIR | 0755, .nid = 36 };
	struct kiln_inode file = { .mode = S_IFREG | 0644, .nid = 40 };
	struct kiln_inode dir = { .mode = S_IFDIR, .dentries = de };
	uint8_t *out = calloc(1, 8 * 4096);

	/* 16 entries of 12 + 244 bytes = 4096: exactly one full block */
	for (int i = 0; i < 17; i++) {
		memset(names[i], 'a' + i, 244);
		de[i] = (struct kiln_dentry){ names[i], 244, &file };
	}
	de[0].inode = &self;
	dir.nr_dentries = 16;
	CHECK(kiln_dir_size(&dir, 4096) == 4096);
	dir.nr_dentries = 17;			/* one more spills over */
	CHECK(kiln_dir_size(&dir, 4096) == 4096 + 256);
	kiln_dir_encode(&dir, 4096, out);
	CHECK(out[8] == 192 && out[9] == 0);	/* nameoff0 = 16 * 12 */
	CHECK(out[10] == EROFS_FT_DIR && out[22] == EROFS_FT_REG_FILE);
	CHECK(out[4096 + 8] == 12 && out[4096 + 12] == 'q');
	CHECK(out[4096 + 12 + 244] == 0);	/* zero after the last name */
	free(out);
}

int main(void)
{
	test_crc32c();
	test_superblock();
	test_sb_checksum();
	test_inodes();
	test_dirent_and_xattr();
	test_dir_packing();
	return check_report("test_ondisk");
}

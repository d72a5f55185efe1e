/* SPDX-License-Identifier: MIT */
/*
 * The reader's view of an image: the superblock, checked, and reads that
 * never leave the image. Everything the reader learns from the image is
 * treated as hostile: every offset is checked against the image size before
 * it is used, and every error names what was wrong and where.
 */
#ifndef KILN_IMAGE_H
#define KILN_IMAGE_H

#include <stdbool.h>
#include <stdint.h>
#include "format/erofs_fs.h"

/* What went wrong, for one line of output: fsck adds the path. */
struct kiln_diag {
	char msg[240];
};

struct kiln_rinode;

/*
 * An extra device: read where the kernel reads it unmounted (appended to
 * the image), or from a file of its own (--device); see devices.c.
 */
struct kiln_rdevice {
	uint32_t blocks, mapped_blkaddr;
	uint8_t tag[64];
	int fd;				/* -1: appended to the image */
	uint64_t size;			/* of fd, bytes */
};

/*
 * A device read from a file of its own has addresses (id << 48) + offset:
 * no image reaches 2^48 bytes (2^32 blocks of at most 64 KiB).
 */
#define KILN_DEV_SHIFT	48
#define KILN_DEV_OFFSET(pa)	((pa) & ((1ull << KILN_DEV_SHIFT) - 1))

struct kiln_image {
	int fd;
	uint64_t gen;			/* tells images apart in read caches */
	uint64_t size;			/* bytes */
	struct erofs_super_block sb;
	unsigned int blkszbits;
	uint32_t blksz;
	uint64_t meta_base;		/* byte offset of nid 0 */
	uint64_t xattr_base;		/* byte offset of shared xattr id 0 */
	uint16_t algs;			/* available algorithms, bit per id */
	uint32_t max_pclusterblks;	/* from the lz4 record, or 1 */
	uint32_t lzma_dict;
	uint32_t zstd_window;
	bool zero_padding, big_pcluster, ztailpacking, head2, chunked;
	struct kiln_rdevice *devs;	/* the device table */
	uint32_t nr_devs, dev_mask;
	bool devs_unread;		/* kiln_devices_map_only */
	struct kiln_rinode *packed;	/* fragments: the packed inode */
	char **xprefix;			/* long xattr name prefixes, whole */
	unsigned int nr_xprefix;
};

/*
 * Opens and checks the superblock and compression configurations. On
 * failure returns -1 with d filled in; warnings go to stderr.
 */
int kiln_image_open(struct kiln_image *img, const char *path,
		    struct kiln_diag *d);
/* The same on an open descriptor, which the image then owns. */
int kiln_image_open_fd(struct kiln_image *img, int fd, const char *name,
		       struct kiln_diag *d);
void kiln_image_close(struct kiln_image *img);
/* The long xattr name prefix table, read at open (read/xattr.c). */
int kiln_xattr_prefixes_load(struct kiln_image *img, struct kiln_diag *d);
void kiln_xattr_prefixes_free(struct kiln_image *img);

/* The device table, read at open (read/devices.c). */
int kiln_devices_load(struct kiln_image *img, struct kiln_diag *d);
void kiln_devices_free(struct kiln_image *img);
/*
 * Reads devices 1..n from the files at paths (fsck and dump --device), as
 * the kernel does with device= options; without, they are read appended.
 * -1 with a message if n is not the table's count, a file cannot be read
 * or is shorter than its device, or is an EROFS image whose uuid is not
 * the one the table names (merged layers given in the wrong order).
 */
int kiln_devices_attach(struct kiln_image *img, char *const *paths,
			unsigned int n, struct kiln_diag *d);
/*
 * For a merge, which needs where data is, not the data: devices map to
 * addresses as if attached (device k's offset o: (k << 48) + o), and
 * reading them is an error.
 */
void kiln_devices_map_only(struct kiln_image *img);
/*
 * Where len bytes from block blk of device id (0: the image) are: an
 * offset in the image, or an address of an attached device (read with
 * kiln_image_read too); -1 with a message if not all of them are there.
 */
int kiln_device_map(const struct kiln_image *img, uint16_t id, uint32_t blk,
		    uint64_t len, uint64_t *pa, struct kiln_diag *d);

/* Reads len bytes at off; -1 with a message if any part is outside. */
int kiln_image_read(const struct kiln_image *img, void *buf, uint64_t off,
		    uint64_t len, struct kiln_diag *d);

void kiln_diag_set(struct kiln_diag *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif

/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "compress/compress.h"
#include "image.h"
#include "reader.h"
#include "kiln.h"
#include "format/le.h"
#include "format/ondisk.h"
#include "common/util.h"

void kiln_diag_set(struct kiln_diag *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	va_end(ap);
}

/*
 * Metadata is read in small pieces (an inode, a map header, an index), and
 * neighbours share a block: each thread keeps the last 4 KiB block it read
 * for small reads, which saves most system calls on a tree of small files.
 */
#define CACHE_BLK	4096u
#define CACHE_MAX	1024u

static __thread struct {
	uint64_t gen, blk;
	uint8_t data[CACHE_BLK];
} cache;

static uint64_t next_gen;

/* All of it or an error: the file may have shrunk since it was opened. */
static int read_exact(int fd, void *buf, uint64_t len, uint64_t off)
{
	ssize_t n = pread_all(fd, buf, len, off);

	if (n >= 0 && (uint64_t)n != len)
		errno = EIO;
	return n >= 0 && (uint64_t)n == len ? 0 : -1;
}

static bool cached_read(const struct kiln_image *img, void *buf, uint64_t off,
			uint64_t len)
{
	uint64_t blk = off / CACHE_BLK;

	if (len > CACHE_MAX || (off + len - 1) / CACHE_BLK != blk ||
	    (blk + 1) * CACHE_BLK > img->size)
		return false;
	if (cache.gen != img->gen || cache.blk != blk) {
		cache.gen = 0;
		if (read_exact(img->fd, cache.data, CACHE_BLK, blk * CACHE_BLK))
			return false;
		cache.gen = img->gen;
		cache.blk = blk;
	}
	memcpy(buf, cache.data + off % CACHE_BLK, len);
	return true;
}

/* An attached device's bytes: only kiln_device_map makes such addresses. */
static int device_read(const struct kiln_image *img, void *buf, uint64_t off,
		       uint64_t len, struct kiln_diag *d)
{
	uint64_t id = off >> KILN_DEV_SHIFT, at = KILN_DEV_OFFSET(off);
	const struct kiln_rdevice *dev = id <= img->nr_devs ?
					 &img->devs[id - 1] : NULL;

	if (!dev || dev->fd < 0) {
		kiln_diag_set(d, "device %llu is not attached: only where its "
			      "data is can be known", (unsigned long long)id);
		return -1;
	}
	if (at > dev->size || len > dev->size - at) {
		kiln_diag_set(d, "%llu bytes at offset %llu of device %llu are "
			      "beyond its end", (unsigned long long)len,
			      (unsigned long long)at, (unsigned long long)id);
		return -1;
	}
	if (read_exact(dev->fd, buf, len, at)) {
		kiln_diag_set(d, "read error at offset %llu of device %llu: %s",
			      (unsigned long long)at, (unsigned long long)id,
			      strerror(errno));
		return -1;
	}
	return 0;
}

int kiln_image_read(const struct kiln_image *img, void *buf, uint64_t off,
		    uint64_t len, struct kiln_diag *d)
{
	if (off >> KILN_DEV_SHIFT)
		return device_read(img, buf, off, len, d);
	if (off > img->size || len > img->size - off) {
		kiln_diag_set(d, "%llu bytes at offset %llu are beyond the end "
			      "of the image (%llu bytes)",
			      (unsigned long long)len, (unsigned long long)off,
			      (unsigned long long)img->size);
		return -1;
	}
	if (len && cached_read(img, buf, off, len))
		return 0;
	if (read_exact(img->fd, buf, len, off)) {
		kiln_diag_set(d, "read error at offset %llu: %s",
			      (unsigned long long)off, strerror(errno));
		return -1;
	}
	return 0;
}

#define KNOWN_COMPAT (EROFS_FEATURE_COMPAT_SB_CHKSUM | \
		      EROFS_FEATURE_COMPAT_MTIME | \
		      EROFS_FEATURE_COMPAT_XATTR_FILTER | \
		      EROFS_FEATURE_COMPAT_PLAIN_XATTR_PFX)
#define SUPPORTED_INCOMPAT (EROFS_FEATURE_INCOMPAT_ZERO_PADDING | \
			    EROFS_FEATURE_INCOMPAT_COMPR_CFGS | \
			    EROFS_FEATURE_INCOMPAT_CHUNKED_FILE | \
			    EROFS_FEATURE_INCOMPAT_DEVICE_TABLE | \
			    EROFS_FEATURE_INCOMPAT_ZTAILPACKING | \
			    EROFS_FEATURE_INCOMPAT_FRAGMENTS | \
			    EROFS_FEATURE_INCOMPAT_XATTR_PREFIXES)
#define KNOWN_INCOMPAT (SUPPORTED_INCOMPAT | \
			EROFS_FEATURE_INCOMPAT_48BIT | \
			EROFS_FEATURE_INCOMPAT_METABOX)

static int check_features(struct kiln_image *img, struct kiln_diag *d)
{
	const struct erofs_super_block *sb = &img->sb;
	uint32_t in = sb->feature_incompat;

	/* "compatible", but the kernel then looks for shared xattrs
	 * elsewhere: every xattr would read otherwise than here */
	if (sb->feature_compat & EROFS_FEATURE_COMPAT_SHARED_EA_IN_METABOX) {
		kiln_diag_set(d, "superblock: shared xattrs in a metabox "
			      "(compatible feature 0x8) are not supported yet");
		return -1;
	}
	if (sb->feature_compat & ~KNOWN_COMPAT)
		kiln_info(1, "warning: unknown compatible features 0x%x "
			  "(ignored)", sb->feature_compat & ~KNOWN_COMPAT);
	if (in & ~KNOWN_INCOMPAT) {
		kiln_diag_set(d, "superblock: unknown incompatible features "
			      "0x%x", in & ~KNOWN_INCOMPAT);
		return -1;
	}
	if (in & ~SUPPORTED_INCOMPAT) {
		kiln_diag_set(d, "superblock: incompatible features 0x%x "
			      "(48-bit, metabox) are not "
			      "supported yet",
			      in & ~SUPPORTED_INCOMPAT);
		return -1;
	}
	img->zero_padding = in & EROFS_FEATURE_INCOMPAT_ZERO_PADDING;
	img->big_pcluster = in & EROFS_FEATURE_INCOMPAT_BIG_PCLUSTER;
	img->ztailpacking = in & EROFS_FEATURE_INCOMPAT_ZTAILPACKING;
	img->head2 = in & EROFS_FEATURE_INCOMPAT_DEVICE_TABLE;
	img->chunked = in & EROFS_FEATURE_INCOMPAT_CHUNKED_FILE;
	return 0;
}

/* One configuration record per available algorithm, in id order. */
static int parse_cfgs(struct kiln_image *img, struct kiln_diag *d)
{
	uint32_t pos = EROFS_SUPER_OFFSET + EROFS_SUPER_SIZE +
		       img->sb.sb_extslots * 16u;

	img->max_pclusterblks = 1;
	if (!(img->sb.feature_incompat & EROFS_FEATURE_INCOMPAT_COMPR_CFGS)) {
		img->algs = 1;	/* lz4, the only algorithm before cfgs */
		return 0;
	}
	img->algs = img->sb.u1;
	if (img->algs & ~0xfu) {
		kiln_diag_set(d, "superblock: unknown compression algorithms "
			      "0x%x", img->algs);
		return -1;
	}
	for (unsigned int alg = 0; alg < 4; alg++) {
		uint8_t rec[16] = { 0 };
		uint32_t len;

		if (!(img->algs & 1u << alg))
			continue;
		pos = (uint32_t)round_up(pos, 4);
		/* records may spill past block 0: read them from the image */
		if (kiln_image_read(img, rec, pos, 2, d))
			return -1;
		len = get_le16(rec);
		len = len ? len : 65536;
		if (kiln_image_read(img, rec, pos + 2, len < 16 ? len : 16, d))
			return -1;
		pos += 2 + len;
		if (alg == EROFS_ALG_LZ4 && len >= 4) {
			img->max_pclusterblks = get_le16(rec + 2);
			if (!img->max_pclusterblks)
				img->max_pclusterblks = 1;
		} else if (alg == EROFS_ALG_LZMA) {
			img->lzma_dict = len >= 4 ? get_le32(rec) : 0;
			if (len < 14 || get_le16(rec + 4) ||
			    img->lzma_dict < 4096 || img->lzma_dict > 8u << 20) {
				kiln_diag_set(d, "lzma configuration: bad format "
					      "or dictionary size %u", img->lzma_dict);
				return -1;
			}
		} else if (alg == EROFS_ALG_DEFLATE) {
			if (len < 1 || rec[0] > 15) {
				kiln_diag_set(d, "deflate configuration: window "
					      "bits %u over 15", rec[0]);
				return -1;
			}
		} else if (alg == EROFS_ALG_ZSTD) {
			if (len < 2 || rec[0] || rec[1] > 10) {
				kiln_diag_set(d, "zstd configuration: bad format "
					      "or window log %u", rec[1] + 10u);
				return -1;
			}
			img->zstd_window = 1u << (rec[1] + 10);
		}
	}
	if (img->max_pclusterblks > erofs_lz4_max_pclusterblks(img->blkszbits)) {
		kiln_diag_set(d, "lz4 configuration: %u-block pclusters are "
			      "over the kernel's %u", img->max_pclusterblks,
			      erofs_lz4_max_pclusterblks(img->blkszbits));
		return -1;
	}
	return 0;
}

static int check_sb(struct kiln_image *img, const uint8_t *blk,
		    struct kiln_diag *d)
{
	struct erofs_super_block *sb = &img->sb;

	erofs_sb_decode(sb, blk + EROFS_SUPER_OFFSET);
	if (sb->magic != EROFS_SUPER_MAGIC) {
		kiln_diag_set(d, "superblock: bad magic 0x%08x at offset 1024 "
			      "(not an EROFS image)", sb->magic);
		return -1;
	}
	if (sb->blkszbits < EROFS_MIN_BLKSZBITS ||
	    sb->blkszbits > EROFS_MAX_BLKSZBITS) {
		kiln_diag_set(d, "superblock: block size 2^%u is not supported "
			      "(512..65536)", sb->blkszbits);
		return -1;
	}
	img->blkszbits = sb->blkszbits;
	img->blksz = 1u << sb->blkszbits;
	if ((sb->feature_compat & EROFS_FEATURE_COMPAT_SB_CHKSUM) &&
	    erofs_sb_checksum(blk + EROFS_SUPER_OFFSET, img->blkszbits) != sb->checksum) {
		kiln_diag_set(d, "superblock: checksum 0x%08x does not match "
			      "the contents (0x%08x)", sb->checksum,
			      erofs_sb_checksum(blk + EROFS_SUPER_OFFSET, img->blkszbits));
		return -1;
	}
	/*
	 * Checked once here: otherwise every inode past the end would report
	 * it, one message each. A larger image (a partition) is fine.
	 */
	if (sb->blocks && img->size >> img->blkszbits < sb->blocks) {
		kiln_diag_set(d, "image is truncated: %llu bytes, superblock "
			      "says %u blocks", (unsigned long long)img->size,
			      sb->blocks);
		return -1;
	}
	if (sb->dirblkbits) {
		kiln_diag_set(d, "superblock: dirblkbits %u must be 0",
			      sb->dirblkbits);
		return -1;
	}
	if (sb->sb_extslots > 16) {
		kiln_diag_set(d, "superblock: %u extension slots",
			      sb->sb_extslots);
		return -1;
	}
	img->meta_base = (uint64_t)sb->meta_blkaddr << img->blkszbits;
	img->xattr_base = (uint64_t)sb->xattr_blkaddr << img->blkszbits;
	if (img->meta_base >= img->size) {
		kiln_diag_set(d, "superblock: metadata block %u is beyond the "
			      "end of the image", sb->meta_blkaddr);
		return -1;
	}
	if (check_features(img, d))
		return -1;
	return parse_cfgs(img, d);
}

int kiln_image_open_fd(struct kiln_image *img, int fd, const char *name,
		       struct kiln_diag *d)
{
	/* the checksum covers the rest of block 0, up to 64 KiB */
	uint8_t *blk = xcalloc(1, 1u << EROFS_MAX_BLKSZBITS);
	uint32_t max = 1u << EROFS_MAX_BLKSZBITS;
	struct stat st;

	memset(img, 0, sizeof(*img));
	img->fd = fd;
	img->gen = __atomic_add_fetch(&next_gen, 1, __ATOMIC_RELAXED);
	if (fstat(fd, &st)) {
		kiln_diag_set(d, "%s: %s", name, strerror(errno));
		goto fail;
	}
	img->size = S_ISBLK(st.st_mode) ?
		    (uint64_t)lseek(fd, 0, SEEK_END) : (uint64_t)st.st_size;
	if (img->size < EROFS_SUPER_OFFSET + EROFS_SUPER_SIZE) {
		kiln_diag_set(d, "%s: %llu bytes is too small for an EROFS "
			      "image", name, (unsigned long long)img->size);
		goto fail;
	}
	if (pread_all(fd, blk, img->size < max ? img->size : max, 0) < 0) {
		kiln_diag_set(d, "%s: read error: %s", name, strerror(errno));
		goto fail;
	}
	/* the prefix table is in the packed inode when there is one */
	if (check_sb(img, blk, d) || kiln_devices_load(img, d) ||
	    kiln_packed_load(img, d) || kiln_xattr_prefixes_load(img, d))
		goto fail;
	free(blk);
	return 0;
fail:
	free(blk);
	kiln_devices_free(img);
	kiln_xattr_prefixes_free(img);
	free(img->packed);
	img->packed = NULL;
	close(fd);
	img->fd = -1;
	return -1;
}

int kiln_image_open(struct kiln_image *img, const char *path,
		    struct kiln_diag *d)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		memset(img, 0, sizeof(*img));
		img->fd = -1;
		kiln_diag_set(d, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	return kiln_image_open_fd(img, fd, path, d);
}

void kiln_image_close(struct kiln_image *img)
{
	kiln_devices_free(img);
	kiln_xattr_prefixes_free(img);
	free(img->packed);
	img->packed = NULL;
	if (img->fd >= 0)
		close(img->fd);
	img->fd = -1;
}

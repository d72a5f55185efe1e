/* SPDX-License-Identifier: MIT */
/*
 * The device table (DEVICE_TABLE): images whose chunk indexes name other
 * devices, as --tar=i's name its tar and a merge names its layers. The
 * reader sees them as the kernel does: without device= options device k's
 * block b is the image's block mapped_blkaddr + b (the devices appended to
 * the image: cat IMAGE TAR > ONE); with them (--device), block b of the
 * k-th file given.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/util.h"
#include "format/ondisk.h"
#include "image.h"

int kiln_devices_load(struct kiln_image *img, struct kiln_diag *d)
{
	const struct erofs_super_block *sb = &img->sb;
	uint64_t pos = (uint64_t)sb->devt_slotoff * EROFS_DEVT_SLOT_SIZE;
	uint8_t raw[EROFS_DEVT_SLOT_SIZE];

	if (!sb->extra_devices)
		return 0;
	if (!img->head2) {
		kiln_diag_set(d, "superblock: %u extra devices without the "
			      "device table feature", sb->extra_devices);
		return -1;
	}
	img->devs = xcalloc(sb->extra_devices, sizeof(*img->devs));
	img->nr_devs = sb->extra_devices;
	for (uint32_t i = 0; i < img->nr_devs; i++)
		img->devs[i].fd = -1;	/* (freed on a failed read below) */
	/* the kernel's mask: ids beyond it wrap, as they do there */
	img->dev_mask = 1;
	while (img->dev_mask < (uint32_t)sb->extra_devices + 1)
		img->dev_mask <<= 1;
	img->dev_mask--;
	for (uint32_t i = 0; i < img->nr_devs; i++) {
		struct erofs_deviceslot s;

		if (kiln_image_read(img, raw, pos + i * EROFS_DEVT_SLOT_SIZE,
				    sizeof(raw), d))
			return -1;
		erofs_deviceslot_decode(&s, raw);
		img->devs[i].blocks = s.blocks;
		img->devs[i].mapped_blkaddr = s.mapped_blkaddr;
		memcpy(img->devs[i].tag, s.tag, sizeof(s.tag));
	}
	return 0;
}

void kiln_devices_free(struct kiln_image *img)
{
	for (uint32_t i = 0; i < img->nr_devs; i++)
		if (img->devs[i].fd >= 0)
			close(img->devs[i].fd);
	free(img->devs);
	img->devs = NULL;
	img->nr_devs = 0;
}

int kiln_device_map(const struct kiln_image *img, uint16_t id, uint32_t blk,
		    uint64_t len, uint64_t *pa, struct kiln_diag *d)
{
	const struct kiln_rdevice *dev;
	uint64_t nblk = (len + img->blksz - 1) >> img->blkszbits;

	id &= img->dev_mask;
	if (!id) {
		*pa = (uint64_t)blk << img->blkszbits;
		if (*pa <= img->size && len <= img->size - *pa)
			return 0;
		kiln_diag_set(d, "block %u is beyond the end of the image",
			      blk);
		return -1;
	}
	if (id > img->nr_devs) {
		kiln_diag_set(d, "device %u is not in the image's table of %u",
			      id, img->nr_devs);
		return -1;
	}
	dev = &img->devs[id - 1];
	if (blk > dev->blocks || nblk > dev->blocks - blk) {
		kiln_diag_set(d, "block %u is beyond the %u blocks of device "
			      "%u", blk, dev->blocks, id);
		return -1;
	}
	if (dev->fd >= 0 || img->devs_unread) {	/* attached: its size was
						   checked then */
		*pa = ((uint64_t)id << KILN_DEV_SHIFT) +
		      ((uint64_t)blk << img->blkszbits);
		return 0;
	}
	*pa = ((uint64_t)dev->mapped_blkaddr + blk) << img->blkszbits;
	if (*pa > img->size || len > img->size - *pa) {
		kiln_diag_set(d, "device %u's block %u is not in the image: "
			      "append the device (for --tar=i: cat IMAGE TAR) "
			      "or name it with --device", id, blk);
		return -1;
	}
	return 0;
}

/*
 * A merge tags each layer with its uuid in hex (write/layers.c): a layer
 * given for another's place would read the wrong files' data and still
 * look whole, so an EROFS image with another uuid is refused. Other tags
 * (digests, or none) cannot be checked against a file.
 */
static int check_tag(const struct kiln_rdevice *dev, int fd, const char *path,
		     struct kiln_diag *d)
{
	uint8_t raw[EROFS_SUPER_SIZE], tag[64];
	struct erofs_super_block sb;

	for (int i = 0; i < 32; i++)
		if (!strchr("0123456789abcdef", dev->tag[i]) || !dev->tag[i])
			return 0;
	for (int i = 32; i < 64; i++)
		if (dev->tag[i])
			return 0;
	if (pread_all(fd, raw, sizeof(raw), EROFS_SUPER_OFFSET) !=
	    (ssize_t)sizeof(raw))
		return 0;
	erofs_sb_decode(&sb, raw);
	if (sb.magic != EROFS_SUPER_MAGIC)
		return 0;
	erofs_uuid_tag(tag, sb.uuid);
	if (!memcmp(tag, dev->tag, 64))
		return 0;
	kiln_diag_set(d, "%s: an EROFS image with uuid %.32s, but the device "
		      "table names %.32s here", path, (const char *)tag,
		      (const char *)dev->tag);
	return -1;
}

static int attach_one(struct kiln_image *img, struct kiln_rdevice *dev,
		      const char *path, struct kiln_diag *d)
{
	uint64_t need = (uint64_t)dev->blocks << img->blkszbits;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		kiln_diag_set(d, "cannot open %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	dev->fd = fd;
	dev->size = S_ISBLK(st.st_mode) ? (uint64_t)lseek(fd, 0, SEEK_END) :
		    (uint64_t)st.st_size;
	if (check_tag(dev, fd, path, d))
		return -1;
	if (dev->size < need) {
		kiln_diag_set(d, "%s: %llu bytes, but its device is %u blocks "
			      "(%llu bytes)", path,
			      (unsigned long long)dev->size, dev->blocks,
			      (unsigned long long)need);
		return -1;
	}
	return 0;
}

void kiln_devices_map_only(struct kiln_image *img)
{
	img->devs_unread = true;
}

int kiln_devices_attach(struct kiln_image *img, char *const *paths,
			unsigned int n, struct kiln_diag *d)
{
	if (n != img->nr_devs) {
		kiln_diag_set(d, "the image has %u extra device%s; --device "
			      "was given %u time%s", img->nr_devs,
			      img->nr_devs == 1 ? "" : "s", n, n == 1 ? "" : "s");
		return -1;
	}
	for (unsigned int i = 0; i < n; i++)
		if (attach_one(img, &img->devs[i], paths[i], d))
			return -1;
	return 0;
}

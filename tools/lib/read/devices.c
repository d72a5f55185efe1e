/* SPDX-License-Identifier: MIT */
/*
 * The device table (DEVICE_TABLE): images whose chunk indexes name other
 * devices, as --tar=i's name its tar. The reader sees them as the kernel
 * does when mounted without device= options: device k's block b is the
 * image's block mapped_blkaddr + b, so the devices must be appended to
 * the image (cat IMAGE TAR > ONE).
 */
#include <stdlib.h>
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
	}
	return 0;
}

void kiln_devices_free(struct kiln_image *img)
{
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
	*pa = ((uint64_t)dev->mapped_blkaddr + blk) << img->blkszbits;
	if (*pa > img->size || len > img->size - *pa) {
		kiln_diag_set(d, "device %u's block %u is not in the image: "
			      "append the device (for --tar=i: cat IMAGE TAR)",
			      id, blk);
		return -1;
	}
	return 0;
}

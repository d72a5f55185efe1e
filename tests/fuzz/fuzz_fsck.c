/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the whole check of fsck.erofs (superblock, inodes,
 * xattrs, directories, index decoding and decompression) on arbitrary
 * bytes, with one worker so a crash replays exactly.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "fsck.h"
#include "kiln.h"
#include "format/le.h"
#include "format/ondisk.h"
#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fsck_opts o = { .image = "fuzz", .workers = 1 };
	struct fsck f = { .o = &o, .rootfd = -1 };
	struct kiln_diag d;
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	uint8_t *img = malloc(size ? size : 1);

	kiln_verbosity = -1;
	memcpy(img, data, size);
	/*
	 * Re-sign the superblock, or nearly every mutation would stop at the
	 * checksum and nothing behind it would be fuzzed.
	 */
	if (size >= 4096 && img[1036] >= 9 && img[1036] <= 12)
		put_le32(img + 1028, erofs_sb_checksum(img + 1024, img[1036]));
	if (fd < 0 || pwrite_all(fd, img, size, 0))
		__builtin_trap();
	free(img);
	if (kiln_image_open_fd(&f.img, fd, "fuzz", &d))
		return 0;
	fsck_walk(&f);
	fsck_free(&f);
	kiln_image_close(&f.img);
	return 0;
}

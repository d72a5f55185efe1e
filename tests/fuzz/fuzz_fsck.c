/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the whole of fsck.erofs (superblock, inodes, xattrs,
 * directories, index decoding and decompression) on arbitrary bytes, with
 * --extract into a scratch directory and two workers, so the writing side
 * and the hand-offs between threads run under the sanitizers too. The
 * scratch directory is made and removed for every input.
 */
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fsck.h"
#include "kiln.h"
#include "format/le.h"
#include "format/ondisk.h"
#include "common/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Pre-order: a directory the image made 0000 is opened up before its
 * entries are read. */
static int open_up(const char *path, const struct stat *st, int type,
		   struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_D && !S_ISLNK(st->st_mode))
		chmod(path, 0700);
	return 0;
}

static int remove_one(const char *path, const struct stat *st, int type,
		      struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void remove_tree(const char *dir)
{
	nftw(dir, open_up, 16, FTW_PHYS);
	nftw(dir, remove_one, 16, FTW_PHYS | FTW_DEPTH);
}

/*
 * Files written are capped (an index may repeat one pcluster without end):
 * past the cap a write fails with EFBIG, which fsck reports as a failure
 * of DIR, and the check goes on.
 */
static void limit_output(void)
{
	static bool done;
	struct rlimit rl = { 1u << 20, 1u << 20 };

	if (done)
		return;
	done = true;
	signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &rl))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[] = "fuzz-extract.XXXXXX";
	struct fsck_opts o = { .image = "fuzz", .workers = 2, .dir = dir,
			       .extract = true, .preserve_perms = true,
			       .xattrs = true };
	struct fsck f = { .o = &o, .rootfd = -1 };
	struct kiln_diag d;
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	uint8_t *img = malloc(size ? size : 1);

	kiln_verbosity = -1;
	limit_output();
	memcpy(img, data, size);
	if (size >= 4096 && img[1036] >= 9 && img[1036] <= 12) {
		/*
		 * A block count past the end would stop every input at the
		 * truncation check: cap it. Then re-sign the superblock, or
		 * nearly every mutation would stop at the checksum and
		 * nothing behind it would be fuzzed.
		 */
		if (get_le32(img + 1060) > size >> img[1036])
			put_le32(img + 1060, (uint32_t)(size >> img[1036]));
		put_le32(img + 1028, erofs_sb_checksum(img + 1024, img[1036]));
	}
	if (fd < 0 || pwrite_all(fd, img, size, 0))
		__builtin_trap();
	free(img);
	if (kiln_image_open_fd(&f.img, fd, "fuzz", &d))
		return 0;
	if (!mkdtemp(dir))
		__builtin_trap();
	if (!fsck_extract_begin(&f)) {
		fsck_walk(&f);
		fsck_extract_end(&f);
		fsck_free(&f);
	}
	kiln_image_close(&f.img);
	remove_tree(dir);
	return 0;
}

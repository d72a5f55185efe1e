/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: mkfs.erofs --tar=f on arbitrary bytes, the whole
 * build behind it included (tree, layout, records, data), so what the tar
 * reader hands on (paths, links, replacements, whiteouts, sizes, ACLs)
 * meets the writer under the sanitizers. The first byte's bits add
 * --aufs, lz4 compression, and --tar=i (index only, instead of lz4). The image goes to a scratch directory, made and
 * removed for every input.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#include "kiln.h"
#include "common/util.h"
#include "compress/compress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A tar may declare any size: what is written (spool, image) is capped. */
static void limit_output(void)
{
	static bool done;
	struct rlimit rl = { 8u << 20, 8u << 20 };

	if (done)
		return;
	done = true;
	signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &rl))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[] = "fuzz-tar.XXXXXX", src[64], img[64];
	struct kiln_mkfs_opts o;
	int fd = memfd_create("tar", MFD_CLOEXEC);

	kiln_verbosity = -1;
	limit_output();
	if (fd < 0 || pwrite_all(fd, data, size, 0) || !mkdtemp(dir))
		__builtin_trap();
	snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
	snprintf(img, sizeof(img), "%s/img", dir);
	kiln_mkfs_opts_init(&o);
	o.tar = true;
	o.source = src;
	o.image = img;
	o.workers = 2;
	o.verbosity = -1;
	if (size && (data[0] & 1))
		o.aufs = true;
	if (size && (data[0] & 2)) {
		o.compress = true;
		if (kiln_compr_parse("lz4", &o.compr))
			__builtin_trap();
		o.compr.pclustersize = 16384;
		kiln_compr_finish_cfg(&o.compr, 4096);
	}
	if (size && (data[0] & 4)) {	/* as mkfs/check.c sets it up */
		o.tar_index = true;
		o.compress = false;
		o.blkszbits = 9;
	}
	kiln_mkfs(&o);
	unlink(img);
	if (rmdir(dir))
		__builtin_trap();	/* something half-written was left */
	close(fd);
	return 0;
}

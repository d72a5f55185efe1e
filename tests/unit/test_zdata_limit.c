/* SPDX-License-Identifier: MIT */
/*
 * EROFS block addresses are 32-bit: compressed data that would run past
 * block 2^32 - 1 must stop mkfs with an error, not wrap around to block 0
 * and overwrite the image's start. Starts the compressed-data writer just
 * below the limit (512-byte blocks, so the image offset stays ~2 TiB in a
 * sparse scratch file) and gives it more than fits.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "kiln.h"
#include "common/workqueue.h"
#include "write/zdata.h"
#include "write/zseg.h"

static char src[64], img[64];

/* 64 KiB of noise: lz4 cannot shrink it, so it takes 128 blocks. */
static void make_source(struct kiln_inode *in)
{
	int fd;
	static uint8_t buf[65536];
	uint32_t x = 2463534242u;
	struct stat st;

	strcpy(src, "/tmp/kiln-zlimit-src.XXXXXX");
	fd = mkstemp(src);
	CHECK(fd >= 0);
	for (size_t i = 0; i < sizeof(buf); i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		buf[i] = (uint8_t)x;
	}
	CHECK(write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf));
	CHECK(fstat(fd, &st) == 0);
	close(fd);
	in->mode = S_IFREG | 0644;
	in->size = sizeof(buf);
	in->nlink = 1;
	in->srcpath = src;
	in->src_mtim = st.st_mtim;
	in->zwritten = true;
}

/* Queues the file with the writer starting at first_blk; returns its verdict. */
static int write_at(uint64_t first_blk, uint64_t *end)
{
	struct kiln_mkfs_opts o = { .compress = true, .nr_zcfgs = 1 };
	struct kiln_compr_cfg *cfg = &o.compr;
	struct kiln_records recs;
	struct kiln_inode in = { 0 };
	struct kiln_zwriter *zw;
	struct kiln_workqueue wq;
	int fd, ret;

	strcpy(img, "/tmp/kiln-zlimit-img.XXXXXX");
	fd = mkstemp(img);
	CHECK(fd >= 0);
	make_source(&in);
	CHECK(kiln_compr_parse("lz4", cfg) == 0);
	cfg->pclustersize = 512;
	kiln_compr_finish_cfg(cfg, 512);
	in.zpclustersize = cfg->pclustersize;
	kiln_records_init(&recs, 512);
	CHECK(kiln_wq_start(&wq, 2, kiln_zw_worker_init, kiln_zw_worker_exit,
			    &o) == 0);
	zw = kiln_zw_start(&o, &wq, NULL, fd, img, 9, first_blk, &recs);
	CHECK(zw != NULL);
	ret = kiln_zw_add(zw, &in, 32, 32);
	if (kiln_zw_finish(zw, end))
		ret = -1;
	kiln_wq_drain(&wq);
	kiln_wq_stop(&wq);
	kiln_records_free(&recs);
	free(in.zext);
	close(fd);
	unlink(img);
	unlink(src);
	return ret;
}

int main(void)
{
	uint64_t end = 0;

	kiln_verbosity = 0;
	/* room for it: the writer ends past the file's 128 blocks */
	CHECK(write_at(1000, &end) == 0);
	CHECK(end >= 1000 + 128);
	/* 100 blocks short of the limit: refused, and nothing wrapped */
	CHECK(write_at(0xFFFFFFFFull - 100, &end) == -1);
	CHECK(end >= 0xFFFFFFFFull - 100 && end <= 0xFFFFFFFFull);
	return check_report("zdata_limit");
}

/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: what kiln-update does with a bundle's bytes before
 * and after its signature, with the signature check left out so the
 * fuzzer gets past it: the tar stream (libarchive), the manifest parser,
 * every payload hashed, and file trees unpacked into a scratch data
 * directory (zstd, the inner tar, the refusal of unsafe entries). The
 * scratch directory is made and removed for every input.
 */
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "files.h"
#include "progress.h"
#include "sign.h"
#include "verify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st; (void)f;
	if (type == FTW_DP)
		return rmdir(path);
	return unlink(path);
}

static void payloads(struct bundle_in *b, const struct manifest *m, int datafd,
		     const char *dir)
{
	char err[512];

	for (unsigned i = 0; i < m->count; i++) {
		const struct payload *p = &m->payload[i];
		if (bundle_in_next(b, p->name, p->size, 0, NULL, err, sizeof(err)))
			return;
		if (p->type == PAYLOAD_FILES ?
		    files_unpack(b, p, i, datafd, dir, err, sizeof(err)) :
		    bundle_check_payload(b, p, err, sizeof(err)))
			return;
	}
	bundle_in_end(b, err, sizeof(err));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct manifest m;
	char dir[] = "fuzz-data.XXXXXX", err[512];
	struct bundle_in b;
	int fd = memfd_create("bundle", MFD_CLOEXEC);

	if (fd < 0 || write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET)) {
		perror("memfd");
		abort();
	}
	if (!mkdtemp(dir))
		abort();
	int datafd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (datafd < 0 || files_clean(datafd, err, sizeof(err)))
		abort();
	if (!bundle_open_verified(&b, fd, NULL, &m, NULL, err, sizeof(err))) {
		payloads(&b, &m, datafd, dir);
		bundle_in_close(&b);
	}
	close(datafd);
	close(fd);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

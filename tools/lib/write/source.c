/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <sys/stat.h>
#include "source.h"

/* O_NONBLOCK: a FIFO put where a file was must not hang the build */
int kiln_src_open(const struct kiln_inode *in)
{
	return open(in->srcpath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
}

/*
 * Asked after the data was read: a file that grew or shrank meanwhile has
 * another size now (no need to probe past the end), and a rewrite in place
 * moved the mtime. One fstat per file: on a tree of small files, every
 * system call per file shows.
 */
bool kiln_src_unchanged(const struct kiln_inode *in, int fd)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISREG(st.st_mode) &&
	       (uint64_t)st.st_size == in->size &&
	       st.st_mtim.tv_sec == in->src_mtim.tv_sec &&
	       st.st_mtim.tv_nsec == in->src_mtim.tv_nsec;
}

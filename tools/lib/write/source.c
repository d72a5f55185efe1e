/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kiln.h"
#include "common/util.h"
#include "fragments.h"
#include "layerdata.h"
#include "source.h"

/*
 * O_NONBLOCK: a FIFO put where a file was must not hang the build. A
 * spooled file gets its own descriptor too, so closing is the same.
 * openat, not open: musl's open() follows an O_CLOEXEC open with an
 * fcntl (for kernels before 2.6.23), one more system call per file.
 */
int kiln_src_open(const struct kiln_inode *in, struct kiln_src *src)
{
	src->base = in->spool ? in->spool_off : 0;
	src->size = in->size;
	src->frags = in->frags;
	src->layer = NULL;
	src->failed = NULL;
	src->fd = -1;
	if (in->frags)
		return 0;	/* each piece is opened as it is read */
	if (in->lfile)
		return (src->layer = kiln_lread_open(in->lfile, in->srcpath)) ?
		       0 : -1;
	src->fd = in->spool ? fcntl(in->spool->fd, F_DUPFD_CLOEXEC, 0) :
		  openat(AT_FDCWD, in->srcpath, O_RDONLY | O_NOFOLLOW |
			 O_NONBLOCK | O_CLOEXEC);
	return src->fd < 0 ? -1 : 0;
}

ssize_t kiln_src_pread(struct kiln_src *src, void *buf, size_t n,
		       uint64_t off)
{
	if (src->layer)
		return kiln_lread_pread(src->layer, buf, n, off, &src->failed);
	if (!src->frags)
		return pread_all(src->fd, buf, n, src->base + off);
	if (off >= src->size)
		return 0;
	if (n > src->size - off)
		n = (size_t)(src->size - off);
	return kiln_fragments_read(src->frags, buf, n, off, &src->failed) ?
	       -1 : (ssize_t)n;
}

const char *kiln_src_name(const struct kiln_src *src,
			  const struct kiln_inode *in)
{
	return src->failed ? src->failed : in->srcpath;
}

off_t kiln_src_seek(const struct kiln_src *src, uint64_t off, int whence)
{
	off_t r;

	if (src->layer)
		return kiln_lread_seek(src->layer, off, whence);
	if (src->frags) {	/* no holes: all of it is data */
		if (whence == SEEK_DATA && off < src->size)
			return (off_t)off;
		if (whence == SEEK_HOLE)
			return (off_t)src->size;
		errno = ENXIO;
		return -1;
	}
	r = lseek(src->fd, (off_t)(src->base + off), whence);

	if (r < 0)
		return r;
	r -= (off_t)src->base;
	/* in the spool, what follows the file is the next file's */
	if ((uint64_t)r >= src->size) {
		if (whence == SEEK_HOLE)
			return (off_t)src->size;
		errno = ENXIO;
		return -1;
	}
	return r;
}

/*
 * Asked after the data was read: a file that grew or shrank meanwhile has
 * another size now (no need to probe past the end), and a rewrite in place
 * moved the mtime. One fstat per file: on a tree of small files, every
 * system call per file shows. The spool is Kiln's own: it does not move.
 */
bool kiln_src_unchanged(const struct kiln_inode *in, struct kiln_src *src)
{
	struct stat st;

	if (src->layer)
		return kiln_lread_unchanged(src->layer, &src->failed);
	if (in->spool || in->frags)	/* the spool is ours; pieces are
					   checked as they are read */
		return true;
	return !fstat(src->fd, &st) && S_ISREG(st.st_mode) &&
	       (uint64_t)st.st_size == in->size &&
	       st.st_mtim.tv_sec == in->src_mtim.tv_sec &&
	       st.st_mtim.tv_nsec == in->src_mtim.tv_nsec;
}

void kiln_src_close(struct kiln_src *src)
{
	if (src->fd >= 0)
		close(src->fd);
	kiln_lread_close(src->layer);
	src->layer = NULL;
	src->fd = -1;
}

int kiln_spool_open(struct kiln_spool *sp)
{
	const char *dir = getenv("TMPDIR");
	char *tmpl;

	if (!dir || !*dir)
		dir = "/tmp";
	sp->end = 0;
	sp->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (sp->fd >= 0)
		return 0;
	/* filesystems without O_TMPFILE: a name, unlinked at once */
	tmpl = path_join(dir, "kiln-spool.XXXXXX");
	sp->fd = mkostemp(tmpl, O_CLOEXEC);
	if (sp->fd >= 0)
		unlink(tmpl);
	else
		kiln_err("%s: cannot make a temporary file: %s", dir,
			 strerror(errno));
	free(tmpl);
	return sp->fd < 0 ? -1 : 0;
}

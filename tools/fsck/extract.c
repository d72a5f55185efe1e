/* SPDX-License-Identifier: MIT */
/*
 * --extract=DIR: recreating the tree. Nothing is ever written outside DIR:
 * every path is resolved beneath DIR without following a symlink (openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, or one O_NOFOLLOW component at a
 * time on kernels without it), and names come checked from walk.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "fsck.h"
#include "kiln.h"
#include "format/ondisk.h"
#include "common/util.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

struct how {
	uint64_t flags, mode, resolve;
};

static int walk_nofollow(int dirfd, const char *dir)
{
	char buf[PATH_MAX], *save = NULL, *comp;
	int fd = dup(dirfd);

	snprintf(buf, sizeof(buf), "%s", dir);
	for (comp = strtok_r(buf, "/", &save); comp && fd >= 0;
	     comp = strtok_r(NULL, "/", &save)) {
		int next = openat(fd, comp, O_RDONLY | O_DIRECTORY |
				  O_NOFOLLOW | O_CLOEXEC);

		close(fd);
		fd = next;
	}
	return fd;
}

/* The directory holding path, and path's last component in *base. */
static int open_parent(struct fsck *f, const char *path, const char **base)
{
	const char *slash = strrchr(path, '/');
	struct how how = { O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0,
			   0x08 | 0x04 | 0x02 };	/* BENEATH, NO_SYMLINKS,
							   NO_MAGICLINKS */
	char dir[PATH_MAX];
	long fd;

	*base = slash ? slash + 1 : path;
	if (!slash)
		return dup(f->rootfd);
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	fd = syscall(SYS_openat2, f->rootfd, dir, &how, sizeof(how));
	if (fd < 0 && (errno == ENOSYS || errno == EPERM))
		fd = walk_nofollow(f->rootfd, dir);
	return (int)fd;
}

/*
 * Out of space (or a read-only or failing disk): one message, and no more
 * extraction; the check goes on. Other failures are reported one by one.
 */
int fsck_out_fail(struct fsck *f, const char *path, const char *what)
{
	int e = errno;

	if (e == ENOSPC || e == EDQUOT || e == EROFS || e == EIO) {
		if (!__atomic_exchange_n(&f->out_failed, true, __ATOMIC_SEQ_CST))
			fsck_error(f, path[0] ? path : ".", "cannot %s: %s "
				   "(extraction stopped)", what, strerror(e));
		return -1;
	}
	if (!__atomic_load_n(&f->out_failed, __ATOMIC_SEQ_CST))
		fsck_error(f, path[0] ? path : ".", "cannot %s: %s", what,
			   strerror(e));
	return -1;
}

bool fsck_extracting(struct fsck *f)
{
	return f->o->dir && !__atomic_load_n(&f->out_failed, __ATOMIC_SEQ_CST);
}


/* What is in the way of a new node: removed with --overwrite. */
static int clear(struct fsck *f, int pfd, const char *base, const char *path)
{
	if (!f->o->overwrite) {
		errno = EEXIST;
		fsck_error(f, path, "already exists (use --overwrite)");
		return -1;
	}
	if (unlinkat(pfd, base, 0) && (errno != EISDIR ||
	    unlinkat(pfd, base, AT_REMOVEDIR)))
		return fsck_out_fail(f, path, "remove what is in the way");
	return 0;
}

int fsck_make_dir(struct fsck *f, const char *path)
{
	const char *base;
	struct stat st;
	int pfd, ret = 0;

	if (!path[0])
		return 0;
	pfd = open_parent(f, path, &base);
	if (pfd < 0)
		return fsck_out_fail(f, path, "open the parent directory");
	if (mkdirat(pfd, base, 0700)) {
		if (errno != EEXIST ||
		    fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW))
			ret = fsck_out_fail(f, path, "create the directory");
		else if (!S_ISDIR(st.st_mode) &&
			 (clear(f, pfd, base, path) || mkdirat(pfd, base, 0700)))
			ret = -1;
	}
	close(pfd);
	return ret;
}

void fsck_remove(struct fsck *f, const char *path)
{
	const char *base;
	int pfd = open_parent(f, path, &base);

	if (pfd >= 0) {
		unlinkat(pfd, base, 0);
		close(pfd);
	}
}

static int create(struct fsck *f, int pfd, const char *base, const char *path)
{
	int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	int fd = openat(pfd, base, flags, 0600);

	if (fd < 0 && errno == EEXIST && !clear(f, pfd, base, path))
		fd = openat(pfd, base, flags, 0600);
	if (fd < 0 && errno != EEXIST)
		fsck_out_fail(f, path, "create the file");
	return fd;
}

int fsck_open_parent(struct fsck *f, const char *path)
{
	const char *base;

	return open_parent(f, path, &base);
}

int fsck_open_file(struct fsck *f, int dfd, const char *path, bool created)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	int pfd = dfd >= 0 ? dfd : open_parent(f, path, &base), fd;

	if (pfd < 0)
		return fsck_out_fail(f, path, "open the parent directory");
	if (created) {
		fd = openat(pfd, base, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			fsck_out_fail(f, path, "open the file");
	} else {
		fd = create(f, pfd, base, path);
	}
	if (pfd != dfd)
		close(pfd);
	return fd;
}

int fsck_open_dir(struct fsck *f, const char *path)
{
	struct how how = { O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0,
			   0x08 | 0x04 | 0x02 };
	long fd;

	if (!path[0])
		return dup(f->rootfd);
	fd = syscall(SYS_openat2, f->rootfd, path, &how, sizeof(how));
	if (fd < 0 && (errno == ENOSYS || errno == EPERM))
		fd = walk_nofollow(f->rootfd, path);
	return (int)fd;
}

int fsck_precreate(struct fsck *f, int dfd, const char *name,
		   const char *path)
{
	int fd = create(f, dfd, name, path);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int make_node(int pfd, const char *base, const struct kiln_rinode *ri,
		     const char *symlink)
{
	uint32_t maj, min;

	if (symlink)
		return symlinkat(symlink, pfd, base);
	erofs_decode_dev(ri->iu, &maj, &min);
	return mknodat(pfd, base, (ri->mode & S_IFMT) | 0600,
		       S_ISCHR(ri->mode) || S_ISBLK(ri->mode) ?
		       makedev(maj, min) : 0);
}

int fsck_make_special(struct fsck *f, const char *path,
		      const struct kiln_rinode *ri, const char *symlink)
{
	const char *base;
	int pfd, ret;

	pfd = open_parent(f, path, &base);
	if (pfd < 0)
		return fsck_out_fail(f, path, "open the parent directory");
	ret = make_node(pfd, base, ri, symlink);
	if (ret && errno == EEXIST && !clear(f, pfd, base, path))
		ret = make_node(pfd, base, ri, symlink);
	if (ret && errno != EEXIST)
		fsck_out_fail(f, path, symlink ? "create the symlink" :
		     "create the special file");
	close(pfd);
	return ret;
}

int fsck_set_meta(struct fsck *f, const char *path,
		  const struct kiln_rinode *ri, int fd)
{
	struct timespec ts[2] = { { ri->mtime, ri->mtime_nsec },
				  { ri->mtime, ri->mtime_nsec } };
	mode_t mode = f->o->preserve_perms ? ri->mode & 07777 :
		      ri->mode & 0777 & ~f->umask;
	const char *base = path;
	int pfd = -1, ret = 0;

	if (fd < 0 && !path[0])
		fd = f->rootfd;
	if (fd < 0 && (pfd = open_parent(f, path, &base)) < 0)
		return fsck_out_fail(f, path, "open the parent directory");
	/* a new node is ours already, unless DIR's setgid bit gave it a group */
	bool owned = ri->uid == f->euid && ri->gid == f->egid && !f->root_setgid;

	if (f->o->preserve_owner && !owned &&
	    (fd >= 0 ? fchown(fd, ri->uid, ri->gid) :
	     fchownat(pfd, base, ri->uid, ri->gid, AT_SYMLINK_NOFOLLOW)))
		ret = fsck_out_fail(f, path, "set the owner");
	/* after chown, which clears set-id bits */
	if (!S_ISLNK(ri->mode) &&
	    (fd >= 0 ? fchmod(fd, mode) :
	     fchmodat(pfd, base, mode, AT_SYMLINK_NOFOLLOW)))
		ret = fsck_out_fail(f, path, "set the mode");
	if (fd >= 0 ? futimens(fd, ts) :
	    utimensat(pfd, base, ts, AT_SYMLINK_NOFOLLOW))
		ret = fsck_out_fail(f, path, "set the times");
	if (pfd >= 0)
		close(pfd);
	return ret;
}

struct xattr_set {
	struct fsck *f;
	const char *path, *proc;
	int fd;
};

static int set_one(void *arg, const char *name, const void *value, size_t len)
{
	struct xattr_set *s = arg;
	int r = s->fd >= 0 ? fsetxattr(s->fd, name, value, len, 0) :
		lsetxattr(s->proc, name, value, len, 0);

	if (r)
		fsck_error(s->f, s->path, "cannot set xattr %s: %s", name,
			   strerror(errno));
	return 0;
}

int fsck_set_xattrs(struct fsck *f, const char *path,
		    const struct kiln_rinode *ri, int fd)
{
	struct xattr_set s = { .f = f, .path = path, .fd = fd };
	char proc[64 + NAME_MAX];
	struct kiln_diag d;
	const char *base;
	int pfd = -1, ret;

	if (!ri->xattr_size)
		return 0;
	if (fd < 0 && !path[0])
		s.fd = f->rootfd;
	if (s.fd < 0) {
		/* the node itself through its parent's fd: no path walk */
		pfd = open_parent(f, path, &base);
		if (pfd < 0)
			return fsck_out_fail(f, path, "open the parent directory");
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d/%s", pfd, base);
		s.proc = proc;
	}
	ret = kiln_xattr_each(&f->img, ri, set_one, &s, &d);
	if (pfd >= 0)
		close(pfd);
	return ret;
}

int fsck_extract_begin(struct fsck *f)
{
	const char *dir = f->o->dir;
	struct stat st;
	char *real;

	f->rootfd = -1;
	f->umask = umask(0);
	umask(f->umask);
	if (!dir)
		return 0;
	if (mkdir(dir, 0700) && errno != EEXIST) {
		kiln_err("cannot create %s: %s", dir, strerror(errno));
		return -1;
	}
	real = realpath(dir, NULL);
	if (real && !strcmp(real, "/") && !f->o->force) {
		kiln_err("refusing to extract to / without --force");
		free(real);
		return -1;
	}
	free(real);
	f->rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->rootfd < 0 || fstat(f->rootfd, &st)) {
		kiln_err("cannot open %s: %s", dir, strerror(errno));
		return -1;
	}
	f->euid = geteuid();
	f->egid = getegid();
	f->root_setgid = st.st_mode & S_ISGID;
	return 0;
}

static int by_path_desc(const void *a, const void *b)
{
	return -strcmp(((const struct fsck_dirmeta *)a)->path,
		       ((const struct fsck_dirmeta *)b)->path);
}

/* Hardlinks, then directory metadata, children before their parents. */
void fsck_extract_end(struct fsck *f)
{
	if (!fsck_extracting(f)) {
		close(f->rootfd);
		return;
	}
	for (size_t i = 0; i < f->nlinks; i++) {
		const char *tb, *lb, *t = f->links[i].target + 1,
			   *l = f->links[i].path + 1;
		int tfd = open_parent(f, t, &tb), lfd = open_parent(f, l, &lb);

		if (tfd < 0 || lfd < 0)
			fsck_out_fail(f, l, "open the parent directory");
		else if (linkat(tfd, tb, lfd, lb, 0) &&
			 (errno != EEXIST || clear(f, lfd, lb, l) ||
			  linkat(tfd, tb, lfd, lb, 0)))
			fsck_out_fail(f, l, "create the hardlink");
		if (tfd >= 0)
			close(tfd);
		if (lfd >= 0)
			close(lfd);
	}
	qsort(f->dirs, f->ndirs, sizeof(*f->dirs), by_path_desc);
	for (size_t i = 0; i < f->ndirs; i++) {
		const char *path = f->dirs[i].path;
		int fd = fsck_open_dir(f, path);

		if (fd < 0) {
			fsck_out_fail(f, path, "open the directory");
			continue;
		}
		fsck_set_meta(f, path, &f->dirs[i].ri, fd);
		close(fd);
	}
	if (f->rootfd >= 0)
		close(f->rootfd);
}

/* SPDX-License-Identifier: MIT */
/*
 * --extract=DIR: recreating the tree. Nothing is ever written outside DIR:
 * every path is resolved beneath DIR without following a symlink (openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, or one O_NOFOLLOW component at a
 * time on kernels without it), names come checked from walk.c, and a file
 * made early is reopened only if it is still the one made.
 *
 * Failures here are about DIR, not the image: they are reported apart
 * (fsck_kind), and what the environment does not permit an ordinary user
 * (owners, device nodes, some xattrs) is a warning.
 */
#include <dirent.h>
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

/* DIR/path, for messages about what is in DIR ("" is DIR itself). */
static void out_path(const struct fsck *f, const char *path, char *buf,
		     size_t len)
{
	size_t dl = strlen(f->o->dir);

	while (dl > 1 && f->o->dir[dl - 1] == '/')
		dl--;
	snprintf(buf, len, "%.*s%s%s", (int)dl, f->o->dir,
		 path[0] && f->o->dir[dl - 1] != '/' ? "/" : "", path);
}

/*
 * Out of space (or a read-only or failing disk): one message, and no more
 * extraction; the check goes on. Other failures are reported one by one.
 */
int fsck_out_fail(struct fsck *f, const char *path, const char *what)
{
	int e = errno;
	char where[PATH_MAX + 64];

	out_path(f, path, where, sizeof(where));
	if (e == ENOSPC || e == EDQUOT || e == EROFS || e == EIO) {
		if (!__atomic_exchange_n(&f->out_failed, true, __ATOMIC_SEQ_CST))
			fsck_msg(f, FSCK_ENV, where, "cannot %s: %s "
				 "(extraction stopped)", what, strerror(e));
		return -1;
	}
	if (!__atomic_load_n(&f->out_failed, __ATOMIC_SEQ_CST))
		fsck_msg(f, FSCK_ENV, where, "cannot %s: %s", what,
			 strerror(e));
	return -1;
}

/*
 * What an ordinary user may not do (chown, mknod of a device, trusted.*
 * or security.* xattrs), or the filesystem of DIR cannot hold: a warning,
 * the rest of the file is extracted. Anything else is a failure.
 */
static int warn(struct fsck *f, const char *path, const char *what)
{
	int e = errno;
	char where[PATH_MAX + 64];

	out_path(f, path, where, sizeof(where));
	fsck_msg(f, FSCK_WARN, where, "cannot %s: %s", what, strerror(e));
	return -1;
}

static int not_permitted(struct fsck *f, const char *path, const char *what)
{
	int e = errno;

	if (e != EPERM && e != EACCES && e != ENOTSUP && e != EOPNOTSUPP &&
	    e != EINVAL)
		return fsck_out_fail(f, path, what);
	return warn(f, path, what);
}

bool fsck_extracting(struct fsck *f)
{
	return f->o->dir && !__atomic_load_n(&f->out_failed, __ATOMIC_SEQ_CST);
}


/* What is in the way of a new node: removed with --overwrite. */
static int clear(struct fsck *f, int pfd, const char *base, const char *path)
{
	if (!f->o->overwrite) {
		/* DIR was empty (fsck_extract_begin): something else writes there */
		errno = EEXIST;
		return fsck_out_fail(f, path, "create it (use --overwrite)");
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

/*
 * A file made early by its directory's job is reopened without following
 * a symlink and without blocking on a FIFO, and kept only if it is still
 * the one made: a regular file, same inode, no other name. Anything
 * swapped in since is left alone.
 */
static int reopen(struct fsck *f, int pfd, const char *base, const char *path,
		  const struct fsck_made *made)
{
	int fd = openat(pfd, base, O_WRONLY | O_NOFOLLOW | O_NONBLOCK |
			O_NOCTTY | O_CLOEXEC);
	struct stat st;

	/* ELOOP: a symlink; ENXIO: a FIFO without a reader */
	if (fd < 0 && errno != ELOOP && errno != ENXIO && errno != EISDIR)
		return fsck_out_fail(f, path, "open the file");
	if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) &&
	    st.st_dev == made->dev && st.st_ino == made->ino &&
	    st.st_nlink == 1)
		return fd;
	if (fd >= 0) {
		close(fd);
		errno = EEXIST;
	}
	return fsck_out_fail(f, path, "reopen the file (it was replaced "
			     "while extracting)");
}

int fsck_open_file(struct fsck *f, int dfd, const char *path,
		   const struct fsck_made *made)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	int pfd = dfd >= 0 ? dfd : open_parent(f, path, &base), fd;

	if (pfd < 0)
		return fsck_out_fail(f, path, "open the parent directory");
	fd = made ? reopen(f, pfd, base, path, made) : create(f, pfd, base, path);
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
		   const char *path, struct fsck_made *made)
{
	int fd = create(f, dfd, name, path);
	struct stat st;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st)) {
		fsck_out_fail(f, path, "stat the file");
		close(fd);
		unlinkat(dfd, name, 0);
		return -1;
	}
	made->dev = st.st_dev;
	made->ino = st.st_ino;
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
	if (ret && errno == EPERM && !symlink &&
	    (S_ISCHR(ri->mode) || S_ISBLK(ri->mode)))
		not_permitted(f, path, "create the device node");
	else if (ret && errno != EEXIST)
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
	/*
	 * A new node is ours already, unless DIR's setgid bit gave it a
	 * group; with --overwrite a directory already there is kept, with its
	 * owner, and its setgid bit may give new nodes its group.
	 */
	bool owned = ri->uid == f->euid && ri->gid == f->egid &&
		     !f->root_setgid && !f->o->overwrite;

	if (f->o->preserve_owner && !owned &&
	    (fd >= 0 ? fchown(fd, ri->uid, ri->gid) :
	     fchownat(pfd, base, ri->uid, ri->gid, AT_SYMLINK_NOFOLLOW)))
		ret = not_permitted(f, path, "set the owner");
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
	int r;

	/* an ACL is permissions: it would undo --no-preserve-perms' umask */
	if (!s->f->o->preserve_perms && !strncmp(name, "system.posix_acl_", 17))
		return 0;
	r = s->fd >= 0 ? fsetxattr(s->fd, name, value, len, 0) :
	    lsetxattr(s->proc, name, value, len, 0);

	if (r) {
		char what[300];

		snprintf(what, sizeof(what), "set xattr %s", name);
		/* more than DIR's filesystem keeps for one inode (ext4: one
		 * block): not a full disk, which would stop the extraction */
		if (errno == E2BIG || errno == ENOSPC)
			warn(s->f, s->path, what);
		else
			not_permitted(s->f, s->path, what);
	}
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

	if (!ri->xattr_size || !f->o->xattrs)
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

struct conflict {
	int rootfd;
	char name[EROFS_NAME_LEN + 1];
};

static int in_dir(void *arg, const char *name, size_t len, uint64_t nid,
		  uint8_t ftype)
{
	struct conflict *c = arg;
	struct stat st;

	(void)nid;
	(void)ftype;
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	snprintf(c->name, sizeof(c->name), "%.*s", (int)len, name);
	return !fstatat(c->rootfd, c->name, &st, AT_SYMLINK_NOFOLLOW);
}

/*
 * The first of the image's top-level names that DIR has, in the image's
 * order; or, when none is (or the root cannot be read), DIR's least entry.
 * Empty: nothing in DIR.
 */
static void first_conflict(struct fsck *f, struct conflict *c)
{
	struct kiln_dctx *x = kiln_dctx_new(&f->img);
	struct kiln_rinode ri;
	struct kiln_diag d;
	struct dirent *de;
	uint8_t *data = NULL;
	DIR *dir;
	int fd;

	c->rootfd = f->rootfd;
	if (x && !kiln_inode_load(&f->img, f->img.sb.root_nid, &ri, &d) &&
	    S_ISDIR(ri.mode) &&
	    !kiln_read_all(&f->img, &ri, x, KILN_MAX_DIR_SIZE, &data, &d) &&
	    kiln_dir_each(&f->img, &ri, data, in_dir, c, &d) == 1) {
		free(data);
		kiln_dctx_free(x);
		return;
	}
	free(data);
	kiln_dctx_free(x);
	c->name[0] = 0;
	fd = dup(f->rootfd);
	dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    (!c->name[0] || strcmp(de->d_name, c->name) < 0))
			snprintf(c->name, sizeof(c->name), "%s", de->d_name);
	closedir(dir);
}

int fsck_extract_begin(struct fsck *f)
{
	const char *dir = f->o->dir;
	struct conflict c;
	struct stat st;
	char *real;

	f->rootfd = -1;
	f->umask = umask(0);
	umask(f->umask);
	if (!dir)
		return 0;
	if (mkdir(dir, 0700) && errno != EEXIST) {
		kiln_err("cannot create %s: %s", dir, strerror(errno));
		return FSCK_EXIT_OPERATIONAL;
	}
	real = realpath(dir, NULL);
	if (real && !strcmp(real, "/") && !f->o->force) {
		kiln_err("refusing to extract to / without --force");
		free(real);
		return FSCK_EXIT_USAGE;
	}
	free(real);
	f->rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->rootfd < 0 || fstat(f->rootfd, &st)) {
		kiln_err("cannot open %s: %s", dir, strerror(errno));
		return FSCK_EXIT_OPERATIONAL;
	}
	/* nothing is written over without --overwrite: it stops here, not
	 * halfway with part of the tree out */
	if (!f->o->overwrite) {
		first_conflict(f, &c);
		if (c.name[0]) {
			kiln_err("cannot extract to %s: '%s' is in the way (it "
				 "is not empty; use --overwrite)", dir, c.name);
			close(f->rootfd);
			return FSCK_EXIT_OPERATIONAL;
		}
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

/*
 * Hardlinks, then directory metadata, children before their parents. A
 * directory's xattrs wait for its children too: its default ACL would
 * give each new child an ACL the image does not have, and its access ACL
 * could shut out the extraction.
 */
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

		/* ENOENT: the target, or a directory on the way, failed its
		 * check and is not there (that was reported) */
		if (tfd < 0 || lfd < 0) {
			if (errno != ENOENT)
				fsck_out_fail(f, l, "open the parent directory");
		} else if (linkat(tfd, tb, lfd, lb, 0) &&
			 (errno != EEXIST || clear(f, lfd, lb, l) ||
			  linkat(tfd, tb, lfd, lb, 0)) &&
			 errno != ENOENT)	/* the target failed its check */
			fsck_out_fail(f, l, "create the hardlink");
		if (tfd >= 0)
			close(tfd);
		if (lfd >= 0)
			close(lfd);
	}
	if (f->ndirs)		/* qsort wants an array, even of none */
		qsort(f->dirs, f->ndirs, sizeof(*f->dirs), by_path_desc);
	for (size_t i = 0; i < f->ndirs; i++) {
		const char *path = f->dirs[i].path;
		int fd = fsck_open_dir(f, path);

		if (fd < 0) {
			fsck_out_fail(f, path, "open the directory");
			continue;
		}
		fsck_set_meta(f, path, &f->dirs[i].ri, fd);
		fsck_set_xattrs(f, path, &f->dirs[i].ri, fd);
		close(fd);
	}
	if (f->rootfd >= 0)
		close(f->rootfd);
}

/* SPDX-License-Identifier: MIT */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "files.h"
#include "progress.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static int fsync_each;

void files_fsync_each(int on)
{
	fsync_each = on;
}

/* the file just written, synced on its own (the slow way, for comparison) */
static int sync_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	int rc = fd < 0 || fsync(fd) ? -1 : 0;

	if (fd >= 0)
		close(fd);
	return rc;
}

/* the outer stream as the inner archive's input, hashed as it passes */
struct feed {
	struct bundle_in *b;
	crypto_hash_sha256_state st;
	uint64_t done, total;
	unsigned char buf[1 << 16];
	char *err;
	size_t errlen;
};

static la_ssize_t feed_read(struct archive *a, void *data, const void **out)
{
	struct feed *f = data;
	ssize_t r = bundle_in_read(f->b, f->buf, sizeof(f->buf), f->err, f->errlen);

	if (r < 0) {
		archive_set_error(a, EIO, "%s", f->err);	/* what the outer stream said */
		return -1;
	}
	crypto_hash_sha256_update(&f->st, f->buf, (unsigned long long)r);
	f->done += (uint64_t)r;
	progress_bytes(f->done, f->total);
	*out = f->buf;
	return r;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static int rm_tree(const char *path)
{
	if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT)
		return -1;
	return 0;
}

/*
 * A path inside the tree: relative, and no component is "..". Leading
 * "./" is what tar(1) writes for `-C DIR .`.
 */
static int inside(const char *p)
{
	if (*p == '/')
		return 0;
	for (const char *c = p; *c; ) {
		const char *e = strchr(c, '/');
		size_t n = e ? (size_t)(e - c) : strlen(c);
		if (n == 2 && c[0] == '.' && c[1] == '.')
			return 0;
		c += n + (e != NULL);
	}
	return 1;
}

/* a symlink at path pointing to target stays inside the tree */
static int link_inside(const char *path, const char *target)
{
	int depth = 0;

	if (*target == '/' || !*target)
		return 0;
	/* the link's own directory depth, "." components not counted */
	for (const char *c = path; *c; ) {
		const char *e = strchr(c, '/');
		size_t n = e ? (size_t)(e - c) : strlen(c);
		if (!e)
			break;
		if (n && !(n == 1 && c[0] == '.'))
			depth++;
		c = e + 1;
	}
	for (const char *c = target; *c; ) {
		const char *e = strchr(c, '/');
		size_t n = e ? (size_t)(e - c) : strlen(c);
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			if (--depth < 0)
				return 0;
		} else if (n && !(n == 1 && c[0] == '.')) {
			depth++;
		}
		c += n + (e != NULL);
	}
	return 1;
}

/* why entry e may not be unpacked, or NULL */
static const char *refuse(struct archive_entry *e)
{
	const char *p = archive_entry_pathname(e);
	const char *hl = archive_entry_hardlink(e);
	mode_t t = archive_entry_filetype(e);

	if (!p || !inside(p))
		return "an absolute path or '..'";
	if (hl && !inside(hl))
		return "a hard link out of the tree";
	if (t == AE_IFLNK && !link_inside(p, archive_entry_symlink(e) ?
					  archive_entry_symlink(e) : ""))
		return "a symbolic link out of the tree";
	if (!hl && t != AE_IFREG && t != AE_IFDIR && t != AE_IFLNK)
		return "a device node, FIFO or socket";
	return NULL;
}

static int stage_path(char *out, size_t n, unsigned i, const char *datapath)
{
	return snprintf(out, n, "%s/" STAGING_DIR "/%u.new", datapath, i) >= (int)n;
}

/* a's error into err; rc, for the caller to return (as unpack) */
static int archive_fail(struct archive *a, int rc, char *err, size_t errlen)
{
	snprintf(err, errlen, "%.300s", archive_error_string(a));
	return rc;
}

/* the current entry's data from in to out, block by block; as unpack */
static int unpack_data(struct archive *in, struct archive *out,
		       char *err, size_t errlen)
{
	const void *buf;
	size_t len;
	la_int64_t off;
	int r;

	while ((r = archive_read_data_block(in, &buf, &len, &off)) == ARCHIVE_OK)
		if (archive_write_data_block(out, buf, len, off) != ARCHIVE_OK)
			return archive_fail(out, -2, err, errlen);
	return r == ARCHIVE_EOF ? 0 : archive_fail(in, -1, err, errlen);
}

/* entry e, whose header was just read from in, to out; as unpack */
static int unpack_entry(struct archive *in, struct archive *out,
			struct archive_entry *e, char *err, size_t errlen)
{
	const char *p = archive_entry_pathname(e), *why = refuse(e);
	int rc;

	if (why)
		return snprintf(err, errlen, "refused: '%.200s' is %s", p ? p : "",
				why), -1;
	if (archive_write_header(out, e) != ARCHIVE_OK)
		return archive_fail(out, -2, err, errlen);
	if ((rc = unpack_data(in, out, err, errlen)))
		return rc;
	if (archive_write_finish_entry(out) != ARCHIVE_OK)
		return archive_fail(out, -2, err, errlen);
	if (fsync_each && archive_entry_filetype(e) == AE_IFREG &&
	    !archive_entry_hardlink(e) && sync_file(p))
		return snprintf(err, errlen, "%.200s: fsync: %s", p,
				strerror(errno)), -2;
	return 0;
}

/* The tree's top itself ("." or "./"): the staging directory. */
static int is_top(struct archive_entry *e)
{
	const char *p = archive_entry_pathname(e);

	return p && (!strcmp(p, ".") || !strcmp(p, "./")) &&
	       archive_entry_filetype(e) == AE_IFDIR;
}

/*
 * The top's owner, mode and times onto the staging directory, once all
 * else is in (an entry made inside it moves its mtime). libarchive
 * leaves a directory that exists as it is (NO_OVERWRITE), so the tree
 * would otherwise come out 0755 with the time of the update.
 */
static int set_top(struct archive_entry *top, char *err, size_t errlen)
{
	struct timespec t[2] = {
		{ archive_entry_atime(top), archive_entry_atime_nsec(top) },
		{ archive_entry_mtime(top), archive_entry_mtime_nsec(top) },
	};

	if ((geteuid() == 0 && chown(".", archive_entry_uid(top),
				     archive_entry_gid(top))) ||
	    chmod(".", archive_entry_perm(top)) ||
	    utimensat(AT_FDCWD, ".", t, 0))
		return snprintf(err, errlen, "the tree's top: %s",
				strerror(errno)), -2;
	return 0;
}

/* every entry of in to out, then out closed; as unpack */
static int unpack_entries(struct archive *in, struct archive *out,
			  char *err, size_t errlen)
{
	struct archive_entry *e, *top = NULL;
	int r, rc = 0;

	while (!rc && (r = archive_read_next_header(in, &e)) == ARCHIVE_OK) {
		if (!is_top(e))
			rc = unpack_entry(in, out, e, err, errlen);
		else if (!top && !(top = archive_entry_clone(e))) {
			snprintf(err, errlen, "out of memory");
			rc = -2;
		}
	}
	if (!rc && r != ARCHIVE_EOF)
		rc = archive_fail(in, -1, err, errlen);
	if (!rc && archive_write_close(out) != ARCHIVE_OK)
		rc = archive_fail(out, -2, err, errlen);
	if (!rc && top)
		rc = set_top(top, err, errlen);
	archive_entry_free(top);
	return rc;
}

/*
 * Entries of the inner archive into the current directory (the staging
 * directory: the names stay relative, so libarchive's own checks against
 * absolute paths, ".." and symlinks apply too); 0, or with err -1 (the
 * payload is refused or unreadable) or -2 (writing failed: no space, I/O).
 */
static int unpack(struct archive *in, char *err, size_t errlen)
{
	struct archive *out = archive_write_disk_new();
	int rc, flags = ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM |
		ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
		ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS | ARCHIVE_EXTRACT_NO_OVERWRITE;

	if (!out)
		return snprintf(err, errlen, "out of memory"), -1;
	if (geteuid() == 0)
		flags |= ARCHIVE_EXTRACT_OWNER;
	archive_write_disk_set_options(out, flags);
	rc = unpack_entries(in, out, err, errlen);
	archive_write_free(out);
	return rc;
}

int files_clean(int datafd, char *err, size_t errlen)
{
	char path[64];
	int fd = openat(datafd, STAGING_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT)
		return mkdirat(datafd, STAGING_DIR, 0700) && errno != EEXIST
			? snprintf(err, errlen, "%s: %s", STAGING_DIR, strerror(errno)), -1 : 0;
	if (fd >= 0)
		close(fd);
	/* nftw wants a path: the staging directory by /proc/self/fd */
	snprintf(path, sizeof(path), "/proc/self/fd/%d/" STAGING_DIR, datafd);
	char real[4096];
	if (!realpath(path, real) || rm_tree(real) || mkdirat(datafd, STAGING_DIR, 0700))
		return snprintf(err, errlen, "cannot clear %s: %s", STAGING_DIR,
				strerror(errno)), -1;
	return 0;
}

int files_unpack(struct bundle_in *b, const struct payload *p, unsigned i,
		 int datafd, const char *datapath, char *err, size_t errlen)
{
	static struct feed f;
	struct archive *in = archive_read_new();
	unsigned char sha[32];
	char dir[4096];
	int rc = -1;

	(void)datafd;
	if (stage_path(dir, sizeof(dir), i, datapath))
		return snprintf(err, errlen, "data path too long"), -1;
	if (!in || mkdir(dir, 0755))
		return snprintf(err, errlen, "%s: %s", dir, in ? strerror(errno)
				: "out of memory"), -2;
	memset(&f, 0, sizeof(f));
	f.b = b;
	f.total = p->size;
	f.err = err;
	f.errlen = errlen;
	crypto_hash_sha256_init(&f.st);
	archive_read_support_format_tar(in);
	archive_read_support_filter_zstd(in);
	if (archive_read_open(in, &f, NULL, feed_read, NULL) != ARCHIVE_OK) {
		rc = archive_fail(in, -1, err, errlen);
		goto out;
	}
	int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cwd < 0 || chdir(dir)) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		if (cwd >= 0)
			close(cwd);
		rc = -2;
		goto out;
	}
	rc = unpack(in, err, errlen);
	if (fchdir(cwd) && !rc) {
		snprintf(err, errlen, "cannot return to the working directory: %s",
			 strerror(errno));
		rc = -2;
	}
	close(cwd);
	if (rc)
		goto out;
	rc = -1;
	/* the rest of the payload (tar's end blocks, zstd's end) is hashed too */
	ssize_t r;
	while ((r = bundle_in_read(b, f.buf, sizeof(f.buf), err, errlen)) > 0)
		crypto_hash_sha256_update(&f.st, f.buf, (unsigned long long)r);
	if (r < 0)
		goto out;
	crypto_hash_sha256_final(&f.st, sha);
	if (sodium_memcmp(sha, p->sha256, 32)) {
		snprintf(err, errlen, "%s: SHA-256 differs from the manifest's (the "
			 "bundle was changed)", p->name);
		goto out;
	}
	progress_done(p->size);
	rc = 0;
out:
	archive_read_free(in);
	if (rc) {
		/* a payload refused or changed leaves nothing behind */
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", err);
		rm_tree(dir);
		snprintf(err, errlen, "%s: %s", p->name, msg);
	}
	return rc;
}

int files_commit(const struct payload *p, unsigned i, int datafd,
		 struct files_placed *placed, char *err, size_t errlen)
{
	char staged[64];
	struct stat sb;

	placed->how = FILES_NOT;
	placed->made = 0;
	snprintf(staged, sizeof(staged), STAGING_DIR "/%u.new", i);
	/* the target's parent directories, as plain directories */
	char parent[MANIFEST_TARGET_MAX + 1];
	snprintf(parent, sizeof(parent), "%s", p->target);
	for (char *s = strchr(parent, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdirat(datafd, parent, 0755) == 0) {
			if (!placed->made)
				placed->made = (size_t)(s - parent);
		} else if (errno != EEXIST) {
			return snprintf(err, errlen, "%s: %s", parent, strerror(errno)), -1;
		}
		*s = '/';
	}
	if (fstatat(datafd, p->target, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
		/* both names stay valid at every instant: old tree or new */
		if (syscall(SYS_renameat2, datafd, staged, datafd, p->target,
			    RENAME_EXCHANGE))
			return snprintf(err, errlen, "%s: exchange: %s", p->target,
					strerror(errno)), -1;
		placed->how = FILES_EXCHANGED;
	} else if (errno != ENOENT || renameat(datafd, staged, datafd, p->target)) {
		return snprintf(err, errlen, "%s: %s", p->target, strerror(errno)), -1;
	} else {
		placed->how = FILES_RENAMED;
	}
	return 0;
}

int files_undo(const struct payload *p, unsigned i, int datafd,
	       const struct files_placed *placed, char *err, size_t errlen)
{
	char staged[64];
	int rc = 0;

	snprintf(staged, sizeof(staged), STAGING_DIR "/%u.new", i);
	if (placed->how == FILES_EXCHANGED)
		rc = (int)syscall(SYS_renameat2, datafd, staged, datafd, p->target,
				  RENAME_EXCHANGE);
	else if (placed->how == FILES_RENAMED)
		rc = renameat(datafd, p->target, datafd, staged);
	if (rc)
		return snprintf(err, errlen, "%s: cannot put the old tree back: %s",
				p->target, strerror(errno)), -1;
	if (!placed->made)
		return 0;
	/* the parents made for a new target, deepest first */
	char parent[MANIFEST_TARGET_MAX + 1];
	snprintf(parent, sizeof(parent), "%s", p->target);
	for (char *s = strrchr(parent, '/'); s && (size_t)(s - parent) >= placed->made;
	     s = strrchr(parent, '/')) {
		*s = '\0';
		if (unlinkat(datafd, parent, AT_REMOVEDIR) && errno != ENOTEMPTY &&
		    errno != EEXIST)
			return snprintf(err, errlen, "%s: %s", parent, strerror(errno)), -1;
	}
	return 0;
}

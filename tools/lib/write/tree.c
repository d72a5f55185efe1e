/* SPDX-License-Identifier: MIT */
/*
 * Walks the source directory with lstat (never following symlinks) and
 * builds one kiln_inode per file; hard links found inside the tree share
 * one inode, and link counts are those of the image, not of the source.
 *
 * Directories are scanned by the workers, each one a job that queues its
 * subdirectories: on a tree of small files the stat and xattr calls are a
 * large part of a build. The result does not depend on who scanned what:
 * entries are sorted per directory, and what a hard link's inode keeps
 * (its first path) is only where its data is read from. Meanwhile the
 * calling thread visits the inodes in the image's order, each directory
 * as soon as its scan is done, so the writer need not wait for the walk.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "format/erofs_fs.h"
#include "format/ondisk.h"
#include "tree.h"
#include "common/profile.h"
#include "common/util.h"
#include "common/workqueue.h"
#include "source.h"
#include "xattr.h"
#include "android.h"
#include "fsconfig.h"
#include "layerdata.h"

struct link_slot {
	dev_t dev;
	ino_t ino;
	struct kiln_inode *inode;
};

struct scan {
	const struct kiln_mkfs_opts *o;
	struct kiln_tree *tree;
	size_t srclen;			/* strlen(source): relpath offset */
	struct kiln_workqueue *wq;	/* one job per directory */
	pthread_mutex_t lock;		/* tree->inodes, the links table, */
	pthread_cond_t scanned;		/* a directory's scan ended */
	unsigned long dirs_pending;	/* queued or running (under lock) */
	struct link_slot *links;	/* open-addressed (dev, ino) table */
	size_t links_cap, links_used;
	const struct kiln_file_id *skip;	/* files never packed */
	unsigned int nr_skip;
	struct kiln_inode skipped;	/* scan_one's answer for those */
	atomic_bool failed;		/* an error was reported: stop */
};

struct dir_job {
	struct kiln_job job;
	struct scan *s;
	struct kiln_inode *dir, *parent;
};

static size_t link_hash(dev_t dev, ino_t ino, size_t cap)
{
	uint64_t h = (uint64_t)ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)dev;

	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static struct link_slot *link_find(struct scan *s, dev_t dev, ino_t ino)
{
	size_t i = link_hash(dev, ino, s->links_cap);

	while (s->links[i].inode &&
	       (s->links[i].dev != dev || s->links[i].ino != ino))
		i = (i + 1) & (s->links_cap - 1);
	return &s->links[i];
}

static void link_grow(struct scan *s)
{
	struct link_slot *old = s->links;
	size_t oldcap = s->links_cap;

	s->links_cap = oldcap ? oldcap * 2 : 256;
	s->links = xcalloc(s->links_cap, sizeof(*s->links));
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].inode)
			*link_find(s, old[i].dev, old[i].ino) = old[i];
	free(old);
}

void kiln_tree_add(struct kiln_tree *t, struct kiln_inode *in)
{
	if (!(t->nr_inodes & (t->nr_inodes - 1)))
		t->inodes = xrealloc(t->inodes, (t->nr_inodes ? t->nr_inodes * 2
					: 1) * sizeof(*t->inodes));
	t->inodes[t->nr_inodes++] = in;
}

void kiln_image_ids(const struct kiln_mkfs_opts *o, uint64_t src_uid,
		    uint64_t src_gid, uint64_t *uid, uint64_t *gid)
{
	*uid = (o->force_uid >= 0 ? (uint64_t)o->force_uid :
		o->all_root ? 0 : src_uid) + o->uid_offset;
	*gid = (o->force_gid >= 0 ? (uint64_t)o->force_gid :
		o->all_root ? 0 : src_gid) + o->gid_offset;
}

/* The inode takes path (malloc'ed) as its srcpath. */
static struct kiln_inode *new_inode(struct scan *s, char *path,
				    const struct stat *st, uint64_t uid,
				    uint64_t gid)
{
	const struct kiln_mkfs_opts *o = s->o;
	struct kiln_inode *in = xcalloc(1, sizeof(*in));

	in->mode = st->st_mode;
	in->uid = (uint32_t)uid;
	in->gid = (uint32_t)gid;
	in->mtime = o->fixed_time ? o->timestamp : st->st_mtim.tv_sec;
	in->mtime_nsec = o->fixed_time ? 0 : (uint32_t)st->st_mtim.tv_nsec;
	in->src_mtim = st->st_mtim;
	in->nlink = 1;
	in->nlink_max = (uint32_t)st->st_nlink;
	in->srcpath = path;
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		in->rdev = erofs_encode_dev(major(st->st_rdev),
					    minor(st->st_rdev));
	return in;
}

static int read_symlink(struct kiln_inode *in, int dfd, const char *name,
			const struct stat *st)
{
	size_t cap = (size_t)st->st_size + 1;
	ssize_t n;

	in->symlink = xmalloc(cap);
	n = readlinkat(dfd, name, in->symlink, cap);
	if (n < 0 || (size_t)n >= cap) {
		kiln_err("%s: cannot read symlink: %s", in->srcpath,
			 n < 0 ? strerror(errno) : "changed while reading");
		return -1;
	}
	in->size = (uint64_t)n;
	return 0;
}

bool kiln_excluded(const struct kiln_mkfs_opts *o, const char *relpath)
{
	for (unsigned int i = 0; i < o->nr_exclude_paths; i++)
		if (!strcmp(relpath, o->exclude_paths[i]))
			return true;
	for (unsigned int i = 0; i < o->nr_exclude_regexes; i++)
		if (!regexec(&o->exclude_regexes[i], relpath, 0, NULL, 0))
			return true;
	return false;
}

const char *kiln_inode_relpath(const struct kiln_mkfs_opts *o,
			       const struct kiln_inode *in)
{
	const char *p = in->srcpath;
	size_t len;

	if (!o->tar) {	/* the scan's paths: the source, '/', the rest */
		len = strlen(o->source);
		while (len > 1 && o->source[len - 1] == '/')
			len--;
		p = strlen(p) > len ? p + len + 1 : "";
	}
	while (*p == '/')
		p++;
	return p;
}

static bool excluded(const struct scan *s, const char *path)
{
	return kiln_excluded(s->o, path + s->srclen + 1);
}

static void queue_dir(struct scan *s, struct kiln_inode *dir,
		      struct kiln_inode *parent);
static void inode_free(struct kiln_inode *in);

static bool skipped(const struct scan *s, const struct stat *st)
{
	for (unsigned int i = 0; i < s->nr_skip; i++)
		if (s->skip[i].dev == st->st_dev && s->skip[i].ino == st->st_ino)
			return true;
	return false;
}

/* What lstat does not give: xattrs, and a symlink's target. */
static int read_inode(struct scan *s, struct kiln_inode *in, int dfd,
		      const char *name, const struct stat *st)
{
	if (s->o->xattr_tolerance >= 0 && kiln_xattrs_read(in->srcpath, in))
		return -1;
	if (S_ISREG(st->st_mode))
		in->size = (uint64_t)st->st_size;
	else if (S_ISLNK(st->st_mode) && read_symlink(in, dfd, name, st))
		return -1;
	return 0;
}

/* How many directories deep a path is: its slashes. */
static size_t depth(const char *p)
{
	size_t n = 0;

	for (; *p; p++)
		n += *p == '/';
	return n;
}

/*
 * Whether the visit (breadth first, each directory's entries in name
 * order) meets path a before path b: shallower first, then name by name.
 */
static bool visited_before(const char *a, const char *b)
{
	size_t da = depth(a), db = depth(b);

	if (da != db)
		return da < db;
	for (;;) {
		size_t la = strcspn(a, "/"), lb = strcspn(b, "/");
		int c = memcmp(a, b, la < lb ? la : lb);

		if (c || la != lb)
			return c ? c < 0 : la < lb;
		if (!a[la])
			return false;	/* the same path */
		a += la + 1;
		b += lb + 1;
	}
}

/*
 * Adds a complete inode to the tree, or, if it is a hard link already
 * seen, frees it and returns the first one (complete too: an inode is
 * only shared once it is read, as the visit may look at it at once).
 *
 * A hard link's srcpath is its path the visit meets first, whichever
 * scan found it first: what matches it against --compress-hints must not
 * depend on --workers. The visit meets it there only once that path's
 * directory is scanned, so the path never changes after the visit (and
 * the workers) have it.
 */
static struct kiln_inode *add_inode(struct scan *s, struct kiln_inode *in,
				    const struct stat *st)
{
	struct link_slot *slot;

	pthread_mutex_lock(&s->lock);
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1) {
		if (s->links_used * 2 >= s->links_cap)
			link_grow(s);
		slot = link_find(s, st->st_dev, st->st_ino);
		if (slot->inode) {	/* seen: this one is not needed */
			struct kiln_inode *first = slot->inode;
			bool same = (!s->o->fsconfig && !s->o->fcontexts) ||
				    kiln_android_same(first, in);

			first->nlink += same;
			if (!same)	/* under the lock: srcpath may move */
				kiln_err("%s and %s: hard links get different "
					 "owners, modes or labels from the "
					 "fs_config or file_contexts", in->srcpath,
					 first->srcpath);
			if (same && visited_before(in->srcpath, first->srcpath)) {
				char *p = first->srcpath;

				first->srcpath = in->srcpath;
				in->srcpath = p;	/* freed with in */
			}
			pthread_mutex_unlock(&s->lock);
			kiln_xattrs_drop(in);
			inode_free(in);
			return same ? first : NULL;	/* the table's: stable */
		}
		*slot = (struct link_slot){ st->st_dev, st->st_ino, in };
		s->links_used++;
	}
	kiln_tree_add(s->tree, in);	/* under s->lock */
	pthread_mutex_unlock(&s->lock);
	return in;
}

/*
 * Returns the inode for name in directory dfd (at path, which it takes
 * over), new or (for a hard link) already seen, or &s->skipped. Only the
 * root is followed if it is a symlink: the source named on the command
 * line is the directory it points to. Calls relative to the directory's
 * fd spare the kernel a walk down the whole path.
 */
static struct kiln_inode *scan_one(struct scan *s, int dfd, const char *name,
				   char *path, struct kiln_inode *parent)
{
	struct kiln_inode *in;
	const char *relpath = parent ? path + s->srclen + 1 : "";
	uint64_t uid, gid, caps = 0;
	uint32_t mode;
	struct stat st;

	if (fstatat(dfd, name, &st, parent ? AT_SYMLINK_NOFOLLOW : 0)) {
		kiln_err("%s: %s", path, strerror(errno));
		free(path);
		return NULL;
	}
	if (skipped(s, &st)) {
		kiln_info(1, "%s: left out (the image being written)", path);
		free(path);
		return &s->skipped;
	}
	uid = st.st_uid;
	gid = st.st_gid;
	mode = st.st_mode;
	if (s->o->fsconfig && kiln_fsconfig_apply(s->o->fsconfig, relpath,
						  &mode, &uid, &gid, &caps)) {
		free(path);
		return NULL;
	}
	st.st_mode = mode;
	kiln_image_ids(s->o, uid, gid, &uid, &gid);
	if (uid > KILN_ID_MAX || gid > KILN_ID_MAX) {
		kiln_err("%s: uid or gid plus --uid-offset/--gid-offset is over "
			 "%u", path, KILN_ID_MAX);
		free(path);
		return NULL;
	}
	in = new_inode(s, path, &st, uid, gid);
	in->fs_caps = caps;
	if (read_inode(s, in, dfd, name, &st) ||
	    kiln_android_xattrs(s->o, in, relpath)) {
		kiln_xattrs_drop(in);
		inode_free(in);
		return NULL;
	}
	in = add_inode(s, in, &st);
	if (S_ISDIR(st.st_mode))
		queue_dir(s, in, parent);
	return in;
}

static int dentry_cmp(const void *pa, const void *pb)
{
	const struct kiln_dentry *a = pa, *b = pb;
	int r = memcmp(a->name, b->name, a->namelen < b->namelen ?
		       a->namelen : b->namelen);

	return r ? r : (int)a->namelen - (int)b->namelen;
}

void kiln_dentries_sort(struct kiln_dentry *d, uint32_t n)
{
	qsort(d, n, sizeof(*d), dentry_cmp);
}

/* Takes over name; the directory has room (scan_dir sized it). */
static void add_dentry(struct kiln_inode *dir, char *name,
		       struct kiln_inode *in)
{
	struct kiln_dentry *d = &dir->dentries[dir->nr_dentries++];

	d->name = name;
	d->namelen = (uint16_t)strlen(name);
	d->inode = in;
}

/* All names first: the loop then makes calls between readdir's. */
static char **read_names(DIR *d, const char *path, size_t *count)
{
	struct dirent *de;
	char **names = NULL;
	size_t n = 0;

	errno = 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!(n & (n - 1)))
			names = xrealloc(names, (n ? 2 * n : 1) * sizeof(*names));
		names[n++] = xstrdup(de->d_name);
	}
	if (errno) {
		kiln_err("%s: %s", path, strerror(errno));
		while (n)
			free(names[--n]);
		free(names);
		return NULL;
	}
	*count = n;
	return names ? names : xcalloc(1, sizeof(*names));
}

/* One entry of dir: into its dentries unless left out; -1 on an error. */
static int scan_entry(struct scan *s, struct kiln_inode *dir, int dfd,
		      char *name)
{
	char *path = path_join(dir->srcpath, name);
	struct kiln_inode *in;

	if (strlen(name) > EROFS_NAME_LEN) {
		kiln_err("%s: name longer than %d bytes", path, EROFS_NAME_LEN);
		free(path);
		return -1;
	}
	if (excluded(s, path)) {
		free(path);
		return 1;
	}
	in = scan_one(s, dfd, name, path, dir);
	if (!in)
		return -1;
	if (in == &s->skipped)
		return 1;
	add_dentry(dir, name, in);
	if (S_ISDIR(in->mode))
		dir->nlink++;
	return 0;
}

static int scan_dir(struct scan *s, struct kiln_inode *dir,
		    struct kiln_inode *parent)
{
	DIR *d = opendir(dir->srcpath);
	size_t n = 0, i;
	char **names;
	int ret = 0;

	if (!d) {
		kiln_err("%s: %s", dir->srcpath, strerror(errno));
		return -1;
	}
	names = read_names(d, dir->srcpath, &n);
	if (!names) {
		closedir(d);
		return -1;
	}
	dir->nlink = 2;
	dir->dentries = xmalloc((n + 2) * sizeof(*dir->dentries));
	for (i = 0; i < n && !ret && !atomic_load(&s->failed); i++) {
		int r = scan_entry(s, dir, dirfd(d), names[i]);

		if (!r)
			names[i] = NULL;	/* a dentry's now */
		ret = r < 0 ? -1 : 0;
	}
	closedir(d);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	add_dentry(dir, xstrdup("."), dir);
	add_dentry(dir, xstrdup(".."), parent ? parent : dir);
	kiln_dentries_sort(dir->dentries, dir->nr_dentries);
	return ret;
}

static void run_dir(struct kiln_job *job, void *ctx)
{
	struct dir_job *j = (struct dir_job *)job;
	struct scan *s = j->s;

	(void)ctx;
	if (!atomic_load(&s->failed) && scan_dir(s, j->dir, j->parent))
		atomic_store(&s->failed, true);
	pthread_mutex_lock(&s->lock);
	j->dir->scanned = true;
	s->dirs_pending--;
	pthread_cond_broadcast(&s->scanned);
	pthread_mutex_unlock(&s->lock);
	free(j);
}

static void queue_dir(struct scan *s, struct kiln_inode *dir,
		      struct kiln_inode *parent)
{
	struct dir_job *j = xcalloc(1, sizeof(*j));

	j->s = s;
	j->dir = dir;
	j->parent = parent;
	j->job.fn = run_dir;
	j->job.detached = true;
	pthread_mutex_lock(&s->lock);
	s->dirs_pending++;
	pthread_mutex_unlock(&s->lock);
	/* ahead of the writer's jobs: it waits for directories in order */
	kiln_wq_submit_urgent(s->wq, &j->job);
}

/* Until dir's entries are final; -1 once the scan failed anywhere. */
static int wait_scanned(void *p, struct kiln_inode *dir)
{
	struct scan *s = p;
	uint64_t t0 = kiln_prof_start();

	pthread_mutex_lock(&s->lock);
	while (!dir->scanned && !atomic_load(&s->failed))
		pthread_cond_wait(&s->scanned, &s->lock);
	pthread_mutex_unlock(&s->lock);
	kiln_prof_add(KILN_PROF_WALK, t0);
	return atomic_load(&s->failed) ? -1 : 0;
}

int kiln_tree_scan(const struct kiln_mkfs_opts *o, struct kiln_workqueue *wq,
		   struct kiln_tree *tree, const struct kiln_file_id *skip,
		   unsigned int nr_skip, kiln_visit_fn *visit, void *ctx)
{
	struct scan s = { .o = o, .tree = tree, .wq = wq, .skip = skip,
			  .nr_skip = nr_skip };
	struct stat st;
	char *src = xstrdup(o->source);
	size_t len = strlen(src);

	memset(tree, 0, sizeof(*tree));
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.scanned, NULL);
	while (len > 1 && src[len - 1] == '/')
		src[--len] = '\0';
	s.srclen = len;
	if (stat(src, &st)) {
		kiln_err("%s: %s", src, strerror(errno));
	} else if (!S_ISDIR(st.st_mode)) {
		kiln_err("%s: not a directory", src);
	} else {
		tree->root = scan_one(&s, AT_FDCWD, src, xstrdup(src), NULL);
	}
	if (tree->root &&
	    kiln_tree_visit_waiting(tree->root, wait_scanned, &s, visit,
				    ctx))
		atomic_store(&s.failed, true);
	/* the jobs use s: wait for every one (they stop early on failure) */
	pthread_mutex_lock(&s.lock);
	while (s.dirs_pending)
		pthread_cond_wait(&s.scanned, &s.lock);
	pthread_mutex_unlock(&s.lock);
	pthread_cond_destroy(&s.scanned);
	pthread_mutex_destroy(&s.lock);
	free(src);
	free(s.links);
	return tree->root && !atomic_load(&s.failed) ? 0 : -1;
}

/* An inode and what it owns but its xattrs (kiln_xattrs_free's). */
static void inode_free(struct kiln_inode *in)
{
	for (uint32_t k = 0; k < in->nr_dentries; k++)
		free(in->dentries[k].name);
	free(in->dentries);
	free(in->srcpath);
	free(in->symlink);
	free(in->zext);
	free(in->devmap);
	free(in->lfile);
	free(in);
}

void kiln_tree_drop_unlinked(struct kiln_tree *t)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < t->nr_inodes; i++) {
		struct kiln_inode *in = t->inodes[i];

		if (in->nlink) {
			t->inodes[k++] = in;
			continue;
		}
		kiln_xattrs_drop(in);
		inode_free(in);
	}
	t->nr_inodes = k;
}

void kiln_tree_free(struct kiln_tree *tree)
{
	free(tree->devices);
	for (uint32_t i = 0; i < tree->nr_inodes; i++)
		inode_free(tree->inodes[i]);
	free(tree->inodes);
	if (tree->spool && tree->spool->fd >= 0)
		close(tree->spool->fd);
	free(tree->spool);
	kiln_layerdata_free(tree->layerdata);
	memset(tree, 0, sizeof(*tree));
}

void kiln_tree_keep(struct kiln_tree *tree)
{
	static struct kiln_tree kept;

	kiln_tree_free(&kept);
	kept = *tree;
	memset(tree, 0, sizeof(*tree));
}

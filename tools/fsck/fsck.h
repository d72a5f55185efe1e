/* SPDX-License-Identifier: MIT */
/*
 * fsck.erofs internals. walk.c checks the tree with a pool of workers:
 * a directory job checks one directory and queues a job per child; a file
 * job checks a group of inodes. filedata.c checks a file's data a window
 * of extents at a time, each decompressed (and, with --extract=DIR,
 * written) by whichever worker is free. extract.c does the writing;
 * nodes.c keeps the table of inodes seen. Messages are collected and
 * printed sorted, so output never depends on --workers.
 */
#ifndef KILN_FSCK_H
#define KILN_FSCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "read/reader.h"
#include "common/workqueue.h"

/* Exit status, as fsck(8) has it; image and operational errors add up. */
enum {
	FSCK_EXIT_CLEAN = 0,
	FSCK_EXIT_UNCORRECTED = 4,	/* the image has errors */
	FSCK_EXIT_OPERATIONAL = 8,	/* cannot open, cannot extract */
	FSCK_EXIT_USAGE = 16,
};

struct fsck_opts {
	const char *image;
	bool extract;			/* --extract, with or without DIR */
	const char *dir;		/* --extract=DIR */
	bool force, overwrite, preserve_owner, preserve_perms;
	bool xattrs;			/* --[no-]xattrs */
	bool print_ratio;
	unsigned int workers;
	char **devices;			/* --device, in order */
	unsigned int nr_devices;
};

/* What the walk learns about one inode, keyed by nid. */
struct fsck_node {
	uint64_t nid;
	uint32_t refs;			/* directory entries naming it */
	uint32_t nlink;			/* what the inode says */
	uint32_t subdirs;		/* directories: entries that are dirs */
	bool used, is_dir, loaded;
	char *path;			/* where it was first found (owned) */
	char *alt;			/* the least of its other paths */
};

/*
 * What a message is about, which decides the exit status (fsck(8)): the
 * image is damaged (4), the extraction could not be done as asked (8), or
 * something the environment does not permit was left out (a warning:
 * owners, device nodes, xattrs as an ordinary user).
 */
enum fsck_kind { FSCK_IMAGE, FSCK_ENV, FSCK_WARN, FSCK_KINDS };
/* what messages about the packed inode (in no directory) name */
#define FSCK_PACKED_PATH "(packed inode)"
/* and what messages about a pcluster shared by several files name */
#define FSCK_PCLUSTERS_PATH "(pclusters)"

struct fsck_msg {
	char *path, *text;
	uint8_t kind;
};

struct fsck_link {
	char *target, *path;		/* hardlinks, made after the walk */
};

struct fsck_dirmeta {
	char *path;
	struct kiln_rinode ri;
};

struct fsck {
	const struct fsck_opts *o;
	struct kiln_image img;
	struct kiln_workqueue wq;
	pthread_mutex_t lock;		/* everything below */
	struct fsck_node *nodes;
	size_t nodes_cap, nodes_nr;
	struct fsck_msg *msgs;
	size_t nmsgs, msgs_cap;
	struct fsck_link *links;
	size_t nlinks, links_cap;
	struct fsck_dirmeta *dirs;
	size_t ndirs, dirs_cap;
	uint64_t files, dirs_seen, others, logical, physical;
	struct pcl_shard *pcl;		/* pclusters.c, its own locks */
	unsigned int big_files;		/* files whose batches are queued */
	unsigned int queued;		/* batches queued, not yet done */
	int rootfd;			/* --extract=DIR */
	bool out_failed;		/* out of space: extraction stopped */
	uid_t euid;
	gid_t egid;
	bool root_setgid;		/* DIR gives new nodes its group */
	mode_t umask;
	bool is_root;
};

/* Per thread: kept apart so the hot path takes no lock, merged at exit. */
struct fsck_worker {
	struct fsck *f;
	struct kiln_dctx *x;
	uint8_t *buf;			/* one extent, decoded */
	size_t cap;
	struct kiln_extents ext;	/* the window being mapped */
	uint64_t files, others, logical, physical;
	struct { uint64_t nid; uint32_t nlink; } *nl;	/* inodes loaded */
	size_t nnl, nl_cap;
};

/* nodes.c: the node for nid, added if new (f->lock held); the table sized
 * from the superblock; link counts and loops once the walk is done */
struct fsck_node *fsck_node(struct fsck *f, uint64_t nid);
void fsck_size_nodes(struct fsck *f);
void fsck_check_links(struct fsck *f);

/*
 * pclusters.c: each pcluster as the files read it; after the walk, those
 * that files read as different algorithms or sizes are reported
 */
void fsck_pclusters_init(struct fsck *f);
void fsck_pcluster_seen(struct fsck *f, const struct kiln_fext *e);
void fsck_pclusters_check(struct fsck *f);
void fsck_pclusters_free(struct fsck *f);

/* walk.c; messages: path is the image's ("/a/b") or DIR's */
int fsck_walk(struct fsck *f);
void fsck_free(struct fsck *f);
void fsck_msg(struct fsck *f, enum fsck_kind kind, const char *path,
	      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define fsck_error(f, path, ...) fsck_msg(f, FSCK_IMAGE, path, __VA_ARGS__)

/* "/a/b" -> "a/b", "/" -> "": paths in DIR are relative to it */
static inline const char *fsck_rel(const char *path)
{
	return path[1] ? path + 1 : "";
}

/* filedata.c: checks (and writes to out, or -1) a regular file's data */
void fsck_file_data(struct fsck *f, struct fsck_worker *wk,
		    const struct kiln_rinode *ri, const char *path, int out);

/* extract.c: all paths are relative to DIR, "" for DIR itself */
/* Reports a failed output step (errno set); a full disk stops extracting. */
int fsck_out_fail(struct fsck *f, const char *path, const char *what);
bool fsck_extracting(struct fsck *f);
/* 0, or the exit status (8 or 16) after one line saying why */
int fsck_extract_begin(struct fsck *f);
int fsck_make_dir(struct fsck *f, const char *path);
/* Removes a file of ours that did not come out right. */
void fsck_remove(struct fsck *f, const char *path);

/* A file fsck_precreate made: reopened only if it is still that one. */
struct fsck_made {
	dev_t dev;
	ino_t ino;
};
/* made: what fsck_precreate made, or NULL to create the file now */
int fsck_open_file(struct fsck *f, int dfd, const char *path,
		   const struct fsck_made *made);
/* The directory holding path (dfd for fsck_open_file), or -1. */
int fsck_open_parent(struct fsck *f, const char *path);
/*
 * With several workers, a directory's files are created by its own job, one
 * after the other: creating them from several threads at once makes them
 * queue on the directory's lock in the kernel.
 */
int fsck_open_dir(struct fsck *f, const char *path);
int fsck_precreate(struct fsck *f, int dfd, const char *name,
		   const char *path, struct fsck_made *made);
int fsck_make_special(struct fsck *f, const char *path,
		      const struct kiln_rinode *ri, const char *symlink);
int fsck_set_meta(struct fsck *f, const char *path,
		  const struct kiln_rinode *ri, int fd);
int fsck_set_xattrs(struct fsck *f, const char *path,
		    const struct kiln_rinode *ri, int fd);
void fsck_extract_end(struct fsck *f);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * fsck.erofs internals. walk.c checks the tree with a pool of workers:
 * a directory job checks one directory and queues a job per child; a file
 * job checks one inode and queues its data in batches of extents, each
 * decompressed (and, with --extract=DIR, written) by whichever worker is
 * free. extract.c does the writing. Messages are collected and printed
 * sorted by path, so output never depends on --workers.
 */
#ifndef KILN_FSCK_H
#define KILN_FSCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "read/reader.h"
#include "common/workqueue.h"

struct fsck_opts {
	const char *image;
	bool extract;			/* --extract, with or without DIR */
	const char *dir;		/* --extract=DIR */
	bool force, overwrite, preserve_owner, preserve_perms;
	bool print_ratio;
	unsigned int workers;
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

struct fsck_msg {
	char *path, *text;
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
	unsigned int big_files;		/* files whose batches are queued */
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
	struct kiln_extents ext;	/* the current file's, reused */
	uint64_t files, others, logical, physical;
	struct { uint64_t nid; uint32_t nlink; } *nl;	/* inodes loaded */
	size_t nnl, nl_cap;
};

/* nodes.c: the node for nid, added if new (f->lock held); the table sized
 * from the superblock; link counts and loops once the walk is done */
struct fsck_node *fsck_node(struct fsck *f, uint64_t nid);
void fsck_size_nodes(struct fsck *f);
void fsck_check_links(struct fsck *f);

/* walk.c */
int fsck_walk(struct fsck *f);
void fsck_free(struct fsck *f);
void fsck_error(struct fsck *f, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* extract.c: all paths are relative to DIR, "" for DIR itself */
/* Reports a failed output step (errno set); a full disk stops extracting. */
int fsck_out_fail(struct fsck *f, const char *path, const char *what);
bool fsck_extracting(struct fsck *f);
int fsck_extract_begin(struct fsck *f);
int fsck_make_dir(struct fsck *f, const char *path);
/* Removes a file of ours that did not come out right. */
void fsck_remove(struct fsck *f, const char *path);
/* created: made empty already by fsck_precreate */
int fsck_open_file(struct fsck *f, int dfd, const char *path, bool created);
/* The directory holding path (dfd for fsck_open_file), or -1. */
int fsck_open_parent(struct fsck *f, const char *path);
/*
 * With several workers, a directory's files are created by its own job, one
 * after the other: creating them from several threads at once makes them
 * queue on the directory's lock in the kernel.
 */
int fsck_open_dir(struct fsck *f, const char *path);
int fsck_precreate(struct fsck *f, int dfd, const char *name,
		   const char *path);
int fsck_make_special(struct fsck *f, const char *path,
		      const struct kiln_rinode *ri, const char *symlink);
int fsck_set_meta(struct fsck *f, const char *path,
		  const struct kiln_rinode *ri, int fd);
int fsck_set_xattrs(struct fsck *f, const char *path,
		    const struct kiln_rinode *ri, int fd);
void fsck_extract_end(struct fsck *f);

#endif

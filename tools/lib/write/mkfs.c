/* SPDX-License-Identifier: MIT */
/*
 * kiln_mkfs(): scan, lay out, write. A file image is written under a
 * temporary name next to the target, synced and renamed into place only
 * when complete, so a failure (or SIGINT/SIGTERM/SIGHUP) never leaves
 * something that looks like an image. A block device is written in place,
 * as `mkfs.erofs /dev/mmcblk0p2 dir` means: its old superblock is wiped
 * first, so a failed build leaves no image that looks valid there either.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include "kiln.h"
#include "layout.h"
#include "target.h"
#include "tree.h"
#include "common/profile.h"
#include "common/util.h"
#include "writer.h"
#include "zseg.h"
#include "xattr.h"

void kiln_mkfs_opts_init(struct kiln_mkfs_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->blkszbits = 12;
	o->force_uid = -1;
	o->force_gid = -1;
	o->verbosity = 1;
	o->workers = 1;
	o->xattr_tolerance = 1;
}

/* The temporary file a signal must remove; set while it exists. */
static char *volatile signal_tmp;

static void on_signal(int sig)
{
	char *tmp = signal_tmp;

	if (tmp)
		unlink(tmp);		/* async-signal-safe */
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_signals(bool on)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa = { .sa_handler = on ? on_signal : SIG_DFL };

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

/* The tree, with the writer given its files as the walk finds them. */
static int scan(const struct kiln_mkfs_opts *o, struct kiln_target *t,
		struct kiln_workqueue *wq, struct kiln_writer *w,
		struct kiln_tree *tree)
{
	uint64_t t0 = kiln_prof_start();
	int ret;

	if (!o->tar && !o->nr_layers)	/* profiles its waits as the walk */
		return kiln_tree_scan(o, wq, tree, t->skip, t->nr_skip,
				      kiln_writer_visit, w);
	ret = o->tar ? kiln_tar_scan(o, tree) : kiln_layers_scan(o, tree);
	kiln_prof_add(KILN_PROF_WALK, t0);
	return ret ? ret : kiln_tree_visit(tree, kiln_writer_visit, w);
}

/*
 * One pool of workers for the whole build: the scan's directory jobs,
 * compression from the first file scanned on, file copies and writeback
 * (each worker keeps its compressor's context from start to end). What
 * needs the whole tree (the epoch, xattr sharing, the inodes' order and
 * records) is decided once the walk is done, while data is still written.
 */
static int build(const struct kiln_mkfs_opts *o, struct kiln_target *t)
{
	struct kiln_workqueue wq;
	struct kiln_writer *w;
	struct kiln_tree tree = { 0 };
	struct kiln_xattr_pool pool = { 0 };
	struct kiln_layout l = { 0 };
	uint64_t t0;
	int ret;

	if (kiln_wq_start(&wq, o->workers,
			  o->compress ? kiln_zw_worker_init : NULL,
			  o->compress ? kiln_zw_worker_exit : NULL,
			  (void *)o))
		return -1;
	/* no old superblock may survive: wiped before the first write */
	ret = kiln_target_prepare(t, kiln_head_blocks(o, NULL, NULL) <<
				     o->blkszbits, true);
	w = kiln_writer_start(t->fd, o->image, o, &wq);
	if (!ret)
		ret = scan(o, t, &wq, w, &tree);
	t0 = kiln_prof_start();
	if (!ret && o->ovlfs_strip)
		kiln_tree_ovlfs_strip(&tree);
	if (!ret && o->nr_xattr_prefixes)
		kiln_xattrs_long_prefixes(&tree, o->xattr_prefixes,
					  o->nr_xattr_prefixes);
	if (!ret)
		ret = kiln_xattrs_share(&tree, &pool, o->xattr_tolerance);
	if (!ret)
		ret = kiln_layout(&tree, &pool, o, &l);
	kiln_prof_add(KILN_PROF_LAYOUT, t0);
	/* a device too small for what is already known fails here; data is
	   written by now (with blocks under 4 KiB, in the wiped 4 KiB too) */
	if (!ret)
		ret = kiln_target_prepare(t, (l.head_blocks + l.flat_blocks) <<
						 l.blkszbits, false);
	ret = kiln_writer_finish(w, &tree, &pool, ret ? NULL : &l);
	kiln_wq_stop(&wq);
	if (!ret)
		kiln_info(1, "%s: %u inodes, blocks of %u bytes", o->image,
			  l.nr, l.blksz);
	kiln_layout_free(&l);
	kiln_xattrs_free(&tree, &pool);
	if (o->exit_after)
		kiln_tree_keep(&tree);
	else
		kiln_tree_free(&tree);
	return ret;
}

int kiln_mkfs(const struct kiln_mkfs_opts *o)
{
	struct kiln_target t;
	int ret;

	kiln_prof_init();
	catch_signals(true);
	if (kiln_target_open(&t, o->image)) {
		kiln_target_free(&t);
		catch_signals(false);
		return -1;
	}
	signal_tmp = t.tmp;
	ret = build(o, &t);
	ret = kiln_target_close(&t, ret);
	catch_signals(false);
	signal_tmp = NULL;
	kiln_target_free(&t);
	kiln_prof_report();
	return ret;
}

/* SPDX-License-Identifier: MIT */
/*
 * One segment of a compressed file: a worker reads it from the source and
 * cuts it into pclusters in memory; the zwriter (zdata.c) writes them out.
 * Small files' segments go to the workers in batches, one job for several,
 * so the queue's locks and wakeups are paid per batch, not per file.
 */
#ifndef KILN_WRITE_ZSEG_H
#define KILN_WRITE_ZSEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/workqueue.h"
#include "compress/compress.h"
#include "inode.h"

struct zfile;
struct kiln_shift_index;

struct zseg {
	struct kiln_job job;		/* queued on a batch's first segment */
	struct zseg *batch_next;	/* the rest of its batch, in order */
	bool leader;			/* first of its batch: owns the job */
	struct zfile *f;		/* the writer's per-file state */
	const struct kiln_inode *inode;
	const struct kiln_shift_index *shift;	/* -E dedupe */
	uint64_t seq;			/* the segment's number, from 0 */
	uint32_t blksz;
	uint32_t pclustersize;		/* the file's (--compress-hints) */
	uint8_t zcfg;			/* and its algorithm (kiln_zcfg) */
	uint64_t start;			/* segment offset in the file */
	size_t arena_off, arena_len;	/* where in, out and ext live */
	uint8_t *in, *out;
	size_t inlen, outlen;		/* out: blocks, then any inline tail */
	struct zseg_ext {
		uint32_t len;
		uint16_t nblocks;
		bool plain, inlined;
		bool fragment;		/* to the packed inode, from s->in */
		bool ref;		/* an earlier pcluster (shifted.c):
					   blkaddr set by the worker */
		bool partial;		/* a ref to a prefix of it */
		uint32_t blkaddr;	/* set when written (zdata.c) */
		uint32_t anchor;	/* -E dedupe: for the index, 0 none */
		uint64_t akey, sample;
	} *ext;
	uint32_t nr_ext;
	uint16_t tail_len;		/* bytes of the inline tail pcluster */
	bool flat;			/* a block or less: only read */
	bool frag;			/* -E fragments: the file's last part
					   (under a pcluster) goes packed */
	uint64_t frag_hash;		/* of a whole file's fragment */
	int error;			/* errno; EAGAIN: the file changed */
	const char *failed;		/* the file that did, if not inode */
	bool read_failed;
};

/*
 * The workers' compressor contexts (the queue's init_worker/exit_worker):
 * arg is the kiln_mkfs_opts; one context per algorithm, made when first
 * needed.
 */
void *kiln_zw_worker_init(void *arg);
void kiln_zw_worker_exit(void *ctx);
/* A job: reads and compresses its segment and the rest of its batch. */
void kiln_zseg_run(struct kiln_job *job, void *worker_ctx);

#endif

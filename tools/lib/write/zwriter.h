/* SPDX-License-Identifier: MIT */
/*
 * The zwriter's state, shared by its two halves: zdata.c runs the ring of
 * segments (queue, compress, write in order); zfile.c decides what a file
 * becomes once its last segment is written (compressed, flat, or left to
 * chunked.c) and finishes its record.
 */
#ifndef KILN_WRITE_ZWRITER_H
#define KILN_WRITE_ZWRITER_H

#include <stdbool.h>
#include <stdint.h>
#include "common/workqueue.h"
#include "dedupe.h"
#include "fragments.h"
#include "inode.h"
#include "records.h"
#include "shifted.h"
#include "writeback.h"
#include "zseg.h"

/* Per-file state, alive until its last segment is written. */
struct zfile {
	struct kiln_inode *in;
	struct kiln_extent *ext;
	uint32_t nr_ext, cap_ext;
	uint32_t segs_left;
	uint64_t blocks;		/* its pclusters' */
	uint64_t wblocks;		/* of those, written for it (dedupe) */
	bool shared;			/* one is an earlier file's (dedupe) */
	struct kiln_pcl *pend;		/* what it wrote, for the dedupe table
					   once it stays compressed */
	uint32_t nr_pend, cap_pend;
	struct kiln_shift_ent *spend;	/* and for the shifted index */
	uint32_t nr_spend, cap_spend;
	uint64_t last_seq;		/* its segment written last */
	const uint8_t *tail;		/* inline tail, from the last segment */
	const uint8_t *raw;		/* the whole file, if one segment */
	uint64_t segsize;
	uint16_t tail_len;
	bool flat;			/* a block or less: never compressed */
	bool frag;			/* -E fragments: its last part packed */
	bool has_frag;			/* and that part is in the packed inode */
	uint64_t frag_off;
	bool failed;
};

struct kiln_zwriter {
	const struct kiln_mkfs_opts *o;
	const struct kiln_compr_cfg *cfg;	/* the first: for all options */
	struct kiln_workqueue *wq;
	int fd;
	const char *image;
	unsigned int blkszbits;
	uint32_t blksz;
	uint64_t next_blk;		/* 64-bit: checked, never wrapped */
	struct kiln_records *recs;
	struct zseg *ring;		/* in-flight segments, FIFO */
	unsigned int ring_size, head, count;
	uint8_t *arena;			/* their buffers, also FIFO */
	size_t arena_size;		/* reserved, for the biggest segments */
	size_t arena_end;		/* used: grows with the segments seen */
	unsigned int workers;
	struct zseg *batch, *batch_tail; /* segments not yet queued */
	unsigned int batch_len;
	size_t batch_bytes;
	struct kiln_writeback *wb;	/* the image's, shared with flat data */
	struct kiln_fragments frags;	/* -E fragments, from the first one */
	bool frags_open;
	struct kiln_dedupe dd;		/* -E dedupe */
	struct kiln_shift_index shift;	/* -E dedupe, at any offset */
	uint64_t nr_segs;		/* segments queued so far */
};

/* The file's last segment is written: place it; frees f. */
int kiln_zfile_done(struct kiln_zwriter *zw, struct zfile *f);

#endif

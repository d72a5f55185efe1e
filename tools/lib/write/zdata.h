/* SPDX-License-Identifier: MIT */
/*
 * Writing a compressed image's regular files, in the order they are given
 * (files of a block or less, and those compression does not shrink, are
 * stored flat in the same stream). Each file is cut into segments whose size
 * depends on the file's size alone (never on the worker count, so images
 * are identical for any --workers); segments are compressed by a pool of workers and written back
 * in submission order, so the data lands in file order. Buffers for at most
 * 2 * workers full segments are in flight, which bounds memory.
 */
#ifndef KILN_WRITE_ZDATA_H
#define KILN_WRITE_ZDATA_H

#include "common/workqueue.h"
#include "compress/compress.h"
#include "writeback.h"
#include "inode.h"
#include "zmap.h"
#include "records.h"

struct kiln_zwriter;

/*
 * o: the compression settings (o->compr and the other -z algorithms).
 * wb (may be NULL) counts the compressed data written, for writeback.
 */
struct kiln_mkfs_opts;
struct kiln_zwriter *kiln_zw_start(const struct kiln_mkfs_opts *o,
				   struct kiln_workqueue *wq,
				   struct kiln_writeback *wb, int fd,
				   const char *image, unsigned int blkszbits,
				   uint64_t first_blk, struct kiln_records *recs);
/*
 * Queues a file, to be compressed with kiln_zcfg(o, in->zcfg) in
 * pclusters of at most in->zpclustersize; its record is staged in recs once all of it is done, at
 * its largest. Decisions (inline tails, flat or not) hold for any inode
 * and xattr size from base_min to base_max, so they can be made before the
 * epoch and xattr sharing are known.
 */
int kiln_zw_add(struct kiln_zwriter *zw, struct kiln_inode *in,
		uint32_t base_min, uint32_t base_max);
/*
 * Once the inode's base (form, xattrs) is final: encodes its index and
 * moves its inline tail to where they belong; sets rec_size.
 */
int kiln_zinode_finish(struct kiln_inode *in, const struct kiln_compr_cfg *cfg,
		       unsigned int blkszbits);
/*
 * -E fragments: once every other file is added, writes what is in flight
 * and gives the packed inode its content (spool, size; 0 if no fragment).
 * It is then added like any file, and never gets fragments of its own.
 */
int kiln_zw_fragments_done(struct kiln_zwriter *zw, struct kiln_inode *packed);
/* Waits for its jobs (not the queue's others); returns the first block after all compressed data. */
int kiln_zw_finish(struct kiln_zwriter *zw, uint64_t *end_blk);
/* The longest a segment can be: the workers' scratch is sized by it. */
uint64_t kiln_zw_segment_max(void);
/* The most input one extent takes. */
uint64_t kiln_zw_extent_max(const struct kiln_compr_cfg *cfg);

/* Index format of one compressed inode; base = inode + xattr bytes. */
static inline struct kiln_zmap_fmt kiln_zfmt(const struct kiln_compr_cfg *c,
					       unsigned int blkszbits,
					       uint32_t base)
{
	return (struct kiln_zmap_fmt){
		.blkszbits = blkszbits, .alg = c->c->alg,
		.big_pcluster = c->pclustersize > 1u << blkszbits,
		.compact = !c->full_index,
		/* inodes are 32-aligned; the stream follows the 8-byte header */
		.ebase_mod32 = (((base + 7) & ~7u) + 8) % 32,
	};
}

#endif

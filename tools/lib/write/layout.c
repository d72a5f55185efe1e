/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "dir.h"
#include "format/erofs_fs.h"
#include "kiln.h"
#include "layout.h"
#include "metaalloc.h"
#include "zdata.h"
#include "format/le.h"
#include "common/util.h"

uint32_t kiln_inode_isize(const struct kiln_inode *in)
{
	return in->extended ? EROFS_INODE_EXTENDED_SIZE :
			      EROFS_INODE_COMPACT_SIZE;
}

static bool has_blocks(const struct kiln_inode *in)
{
	return S_ISREG(in->mode) || S_ISDIR(in->mode) || S_ISLNK(in->mode);
}

static int mtime_cmp(const void *pa, const void *pb)
{
	const struct kiln_inode *a = *(struct kiln_inode * const *)pa;
	const struct kiln_inode *b = *(struct kiln_inode * const *)pb;

	if (a->mtime != b->mtime)
		return a->mtime < b->mtime ? -1 : 1;
	return a->mtime_nsec < b->mtime_nsec ? -1 : a->mtime_nsec > b->mtime_nsec;
}

/*
 * Compact inodes carry no mtime of their own: they all show the superblock
 * epoch. Picking the most common mtime as epoch makes the most of them.
 */
static void choose_epoch(struct kiln_tree *t, struct kiln_layout *l)
{
	struct kiln_inode **v = xmalloc(t->nr_inodes * sizeof(*v));
	uint32_t best = 0, run = 0;

	memcpy(v, t->inodes, t->nr_inodes * sizeof(*v));
	qsort(v, t->nr_inodes, sizeof(*v), mtime_cmp);
	l->epoch = 0;
	l->fixed_nsec = 0;
	for (uint32_t i = 0; i < t->nr_inodes; i++) {
		run = i && !mtime_cmp(&v[i], &v[i - 1]) ? run + 1 : 1;
		if (run > best && v[i]->mtime >= 0) {
			best = run;
			l->epoch = (uint64_t)v[i]->mtime;
			l->fixed_nsec = v[i]->mtime_nsec;
		}
	}
	free(v);
}

/*
 * Compact inodes have no uid, gid or link count over 16 bits, no size over
 * 32 bits, and show the superblock's epoch as their mtime: --ignore-mtime
 * lets an inode drop its own for that, as erofs-utils does.
 */
static int choose_form(struct kiln_inode *in, const struct kiln_layout *l,
		       const struct kiln_mkfs_opts *o)
{
	bool wide = in->uid > UINT16_MAX || in->gid > UINT16_MAX ||
		    in->nlink > UINT16_MAX || in->size > UINT32_MAX;
	bool own_time = in->mtime < 0 || (uint64_t)in->mtime != l->epoch ||
			in->mtime_nsec != l->fixed_nsec;

	if (own_time && o->ignore_mtime && !wide &&
	    o->inode_form != KILN_INODE_EXTENDED) {
		in->mtime = (int64_t)l->epoch;
		in->mtime_nsec = l->fixed_nsec;
		own_time = false;
	}
	in->extended = wide || own_time ||
		       o->inode_form == KILN_INODE_EXTENDED;
	if (in->extended && o->inode_form == KILN_INODE_COMPACT) {
		kiln_err("%s: cannot be a compact inode (%s)", in->srcpath,
			 wide ? "an id or the link count over 65535, or a "
				"size over 4 GiB" : "its mtime is not the "
				"image's: add --ignore-mtime or -T");
		return -1;
	}
	return 0;
}

/* Compact only if the options make every inode that can be compact. */
uint32_t kiln_inode_base_max(const struct kiln_inode *in,
			     const struct kiln_mkfs_opts *o)
{
	/* a scanned hard link's count still grows: the source's bounds it */
	uint32_t nlink = in->nlink_max ? in->nlink_max : in->nlink;
	bool wide = in->uid > UINT16_MAX || in->gid > UINT16_MAX ||
		    nlink > UINT16_MAX || in->size > UINT32_MAX;
	bool compact = o->inode_form == KILN_INODE_COMPACT ||
		       (o->ignore_mtime && o->inode_form != KILN_INODE_EXTENDED);

	return (compact && !wide ? EROFS_INODE_COMPACT_SIZE :
		EROFS_INODE_EXTENDED_SIZE) + kiln_xattr_ibody_max(in);
}

uint32_t kiln_inode_base_min(const struct kiln_mkfs_opts *o)
{
	return o->inode_form == KILN_INODE_EXTENDED ?
	       EROFS_INODE_EXTENDED_SIZE : EROFS_INODE_COMPACT_SIZE;
}

static int prepare_inode(struct kiln_inode *in, const struct kiln_layout *l,
			 const struct kiln_mkfs_opts *o)
{
	if (S_ISDIR(in->mode))
		in->size = kiln_dir_size(in, l->blksz);
	in->no_inline = o->no_inline_data && S_ISREG(in->mode);
	/*
	 * What the zwriter does not compress, if it fills a block: a file
	 * under one has no block to share and costs none inline.
	 */
	if (o->chunkbits && !in->zwritten && S_ISREG(in->mode) &&
	    in->size >= l->blksz)
		in->chunked = true;
	if (in->devmap)		/* data on another device: chunk indexes */
		in->chunked = true;
	return choose_form(in, l, o);
}

/* Directory by directory, each one's children together (locality). */
static void order_inodes(struct kiln_tree *t, struct kiln_layout *l)
{
	uint32_t head = 0;

	l->order = xmalloc((t->nr_inodes + 1) * sizeof(*l->order));
	l->order[l->nr++] = t->root;
	t->root->ordered = true;
	while (head < l->nr) {
		struct kiln_inode *dir = l->order[head++];

		for (uint32_t i = 0; i < dir->nr_dentries; i++) {
			struct kiln_inode *c = dir->dentries[i].inode;

			if (kiln_is_dot(&dir->dentries[i]) || c->ordered)
				continue;
			c->ordered = true;
			l->order[l->nr++] = c;
		}
	}
}

/*
 * Decides a flat inode's layout and its record's size; the zwriter's
 * (in->zwritten) are decided by it and kiln_zinode_finish.
 */
static void prepare_inode_record(struct kiln_inode *in, uint32_t blksz,
				 bool may_straddle)
{
	uint32_t base = kiln_inode_isize(in) + in->xattr_isize;
	uint32_t tail = has_blocks(in) ? (uint32_t)(in->size % blksz) : 0;

	if (in->zwritten)
		return;
	if (in->chunked) {
		in->rec_size = base;	/* and its index, once written */
		return;
	}
	in->datalayout = EROFS_INODE_FLAT_PLAIN;
	in->inline_size = 0;
	if (!in->no_inline &&
	    kiln_tail_inlines(base, tail, blksz, may_straddle)) {
		in->datalayout = EROFS_INODE_FLAT_INLINE;
		in->inline_size = tail;
	}
	in->rec_size = base + in->inline_size;
}

int kiln_err_too_large(unsigned int blkszbits)
{
	kiln_err("image too large: more than %llu blocks of %u bytes "
		 "(EROFS block addresses are 32-bit)",
		 (unsigned long long)EROFS_MAX_BLOCKS, 1u << blkszbits);
	return -1;
}

/* Flat data blocks of an inode: its partial last block may be inline. */
static uint64_t flat_nblocks(const struct kiln_inode *in, uint32_t blksz)
{
	if (!has_blocks(in) || in->zwritten || in->chunked)
		return 0;
	return in->datalayout == EROFS_INODE_FLAT_INLINE ?
	       in->size / blksz : (in->size + blksz - 1) / blksz;
}

int kiln_layout_place_flat(const struct kiln_layout *l, uint64_t *blk)
{
	uint64_t next = *blk;

	for (uint32_t i = 0; i < l->nr; i++) {
		struct kiln_inode *in = l->order[i];
		uint64_t n = flat_nblocks(in, l->blksz);

		if (!has_blocks(in) || in->zwritten || in->chunked)
			continue;
		in->startblk = n ? (uint32_t)next :
			       in->inline_size ? EROFS_NULL_ADDR : 0;
		next += n;
		if (next > EROFS_MAX_BLOCKS)
			return kiln_err_too_large(l->blkszbits);
	}
	*blk = next;
	return 0;
}

/* Bit n: algorithm n (EROFS_ALG_*) is used: sb.available_compr_algs. */
uint16_t kiln_compr_algs(const struct kiln_mkfs_opts *o)
{
	uint16_t algs = 0;

	for (unsigned int i = 0; o->compress && i < o->nr_zcfgs; i++)
		algs |= (uint16_t)(1u << kiln_zcfg(o, i)->c->alg);
	return algs;
}

bool kiln_compr_needs_cfgs(const struct kiln_mkfs_opts *o)
{
	return o->compress && (kiln_compr_algs(o) != 1u << EROFS_ALG_LZ4 ||
			       o->compr.pclustersize > 1u << o->blkszbits);
}

/*
 * One record (le16 size + payload, 4-byte aligned) per algorithm used, in
 * the order of their ids. Configurations of one algorithm (-z lz4:lz4hc)
 * differ only by level, which is no part of the record.
 */
size_t kiln_compr_cfgs_encode(const struct kiln_mkfs_opts *o, uint8_t *out)
{
	uint16_t algs = kiln_compr_algs(o);
	size_t size = 0;

	if (!kiln_compr_needs_cfgs(o))
		return 0;
	for (unsigned int alg = 0; algs >> alg; alg++) {
		const struct kiln_compr_cfg *cfg = NULL;
		uint8_t rec[64] = { 0 };
		size_t n;

		for (unsigned int i = 0; i < o->nr_zcfgs && !cfg; i++)
			if (kiln_zcfg(o, i)->c->alg == alg)
				cfg = kiln_zcfg(o, i);
		if (!cfg)
			continue;
		n = cfg->c->cfg_record(cfg, rec);
		if (alg == EROFS_ALG_LZ4)	/* max_pclusterblks */
			put_le16(rec + 2, (uint16_t)(cfg->pclustersize >>
						     o->blkszbits));
		if (out) {
			put_le16(out + size, (uint16_t)n);
			memcpy(out + size + 2, rec, n);
		}
		size += round_up(2 + n, 4);
	}
	return size;
}

/*
 * -E fragments: the inode whose content is every file's fragment, in no
 * directory (sb.packed_nid names it). Compact, with the image's epoch,
 * unless its size turns out too big for that (kiln_writer_finish).
 */
static void add_packed(struct kiln_layout *l, const struct kiln_mkfs_opts *o)
{
	struct kiln_inode *p = xcalloc(1, sizeof(*p));

	p->mode = S_IFREG | 0600;
	p->nlink = 1;
	p->mtime = (int64_t)l->epoch;
	p->mtime_nsec = l->fixed_nsec;
	p->extended = o->inode_form == KILN_INODE_EXTENDED;
	p->srcpath = xstrdup("(packed inode)");
	p->packed_inode = true;
	p->ordered = true;
	l->order[l->nr++] = p;
	l->packed = p;
}

int kiln_layout(struct kiln_tree *t, struct kiln_xattr_pool *pool,
		const struct kiln_mkfs_opts *o, struct kiln_layout *l)
{
	unsigned int blkszbits = o->blkszbits;

	memset(l, 0, sizeof(*l));
	l->blkszbits = blkszbits;
	l->blksz = 1u << blkszbits;
	choose_epoch(t, l);
	for (uint32_t i = 0; i < t->nr_inodes; i++)
		if (prepare_inode(t->inodes[i], l, o))
			return -1;
	order_inodes(t, l);
	if (o->compress && o->compr.fragments)
		add_packed(l, o);

	for (uint32_t i = 0; i < l->nr; i++) {
		prepare_inode_record(l->order[i], l->blksz, i > 0);
		l->order[i]->ino = i + 1;
		l->flat_blocks += flat_nblocks(l->order[i], l->blksz);
	}
	if (pool->size)		/* ids count from the pool's start */
		kiln_xattr_pool_place(pool, 0);
	l->head_blocks = kiln_head_blocks(o, NULL, NULL);
	return 0;
}

uint64_t kiln_head_blocks(const struct kiln_mkfs_opts *o,
			  uint64_t *prefix_pos, uint64_t *devt_pos)
{
	uint32_t blksz = 1u << o->blkszbits;
	uint64_t end = EROFS_SUPER_OFFSET + EROFS_SUPER_SIZE +
		       kiln_compr_cfgs_encode(o, NULL);
	struct meta_alloc a;
	uint64_t n;

	if (kiln_nr_devices(o)) {	/* the tar, or each layer */
		end = round_up(end, EROFS_DEVT_SLOT_SIZE);
		if (devt_pos)
			*devt_pos = end;
		end += (uint64_t)kiln_nr_devices(o) * EROFS_DEVT_SLOT_SIZE;
	}
	meta_alloc_init(&a, blksz, end);
	if (o->nr_xattr_prefixes && !kiln_prefixes_packed(o)) {
		/* 32-byte aligned: a 4-byte unit */
		uint64_t pos = meta_alloc_contiguous(&a,
			kiln_xattr_prefixes_encode(o->xattr_prefixes,
						   o->nr_xattr_prefixes, NULL));
		if (prefix_pos)
			*prefix_pos = pos;
	}
	n = (a.end + blksz - 1) / blksz;
	meta_alloc_free(&a);
	return n;
}

void kiln_layout_free(struct kiln_layout *l)
{
	free(l->order);
	l->order = NULL;
	if (l->packed) {
		free(l->packed->srcpath);
		free(l->packed->zext);
		free(l->packed);
		l->packed = NULL;
	}
}

/* SPDX-License-Identifier: MIT */
/*
 * Writes compressed data in order right after the head, then flat data
 * (files by the workers, symlinks) after it, while inode records are staged
 * in memory; then packs the xattr pool and the records after the data,
 * which gives every inode its nid, and writes directories (their entries
 * need those nids), the records, and last the head: superblock, checksum,
 * long prefix table. All-zero data blocks are not written, so sparse
 * sources give sparse images (the blocks still read as zeros).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "chunked.h"
#include "dir.h"
#include "hints.h"
#include "tree.h"
#include "flat.h"
#include "records.h"
#include "devchunks.h"
#include "writeback.h"
#include "format/erofs_fs.h"
#include "format/le.h"
#include "format/ondisk.h"
#include "common/profile.h"
#include "common/util.h"
#include "writer.h"
#include "zdata.h"
#include "zseg.h"

struct kiln_writer {
	int fd;
	const char *image;
	const struct kiln_mkfs_opts *o;
	const struct kiln_layout *l;	/* once the walk is done */
	struct kiln_zwriter *zw;	/* compressed images: regular files */
	uint64_t head_blocks, prefix_pos;	/* from the options alone */
	uint64_t devt_pos;		/* --tar=i: the device table */
	const struct kiln_xattr_pool *pool;
	uint8_t *head;			/* head_blocks * blksz, at the end */
	uint8_t *pool_bytes;		/* encoded, until the area is written */
	struct kiln_records recs;	/* every record, after the data */
	struct kiln_flat flat;		/* uncompressed data, by the workers */
	struct kiln_workqueue *wq;	/* reads, compresses, copies */
	struct kiln_writeback wb;	/* of all data, flat and compressed */
	uint64_t end_blk;		/* first block after all data */
	bool chunked;			/* a file is chunk-based */
};

/* Symlinks and directories: in memory already, written in place. */
static int write_node(struct kiln_writer *w, const struct kiln_inode *in)
{
	uint8_t *dir;
	int ret;

	if (S_ISLNK(in->mode))
		return kiln_flat_emit(&w->flat, in, (const uint8_t *)in->symlink,
				      in->size, 0);
	dir = xcalloc(1, round_up(in->size, w->l->blksz));
	kiln_dir_encode(in, w->l->blksz, dir);
	ret = kiln_flat_emit(&w->flat, in, dir, in->size, 0);
	free(dir);
	return ret;
}

static void encode_inode(const struct kiln_inode *in)
{
	uint8_t *p = in->rec;
	uint16_t icount = in->xattr_isize ?
			  (uint16_t)((in->xattr_isize - 12) / 4 + 1) : 0;
	uint16_t format = (uint16_t)(in->extended |
				     in->datalayout << EROFS_I_DATALAYOUT_BIT);
	uint32_t iu = S_ISCHR(in->mode) || S_ISBLK(in->mode) ? in->rdev :
		      S_ISFIFO(in->mode) || S_ISSOCK(in->mode) ? 0 :
		      kiln_inode_zmapped(in) ? in->zblocks :
		      in->datalayout == EROFS_INODE_CHUNK_BASED ?
		      in->chunkformat : in->startblk;

	if (in->extended) {
		struct erofs_inode_extended e = {
			.i_format = format, .i_xattr_icount = icount,
			.i_mode = (uint16_t)in->mode, .i_size = in->size,
			.i_u = iu, .i_ino = in->ino, .i_uid = in->uid,
			.i_gid = in->gid, .i_mtime = (uint64_t)in->mtime,
			.i_mtime_nsec = in->mtime_nsec, .i_nlink = in->nlink,
		};
		erofs_inode_extended_encode(p, &e);
	} else {
		struct erofs_inode_compact c = {
			.i_format = format, .i_xattr_icount = icount,
			.i_mode = (uint16_t)in->mode,
			.i_nlink = (uint16_t)in->nlink,
			.i_size = (uint32_t)in->size, .i_u = iu,
			.i_ino = in->ino, .i_uid = (uint16_t)in->uid,
			.i_gid = (uint16_t)in->gid,
		};
		erofs_inode_compact_encode(p, &c);
	}
	if (in->xattr_isize)
		kiln_xattr_ibody_encode(in, p + kiln_inode_isize(in));
}

/* FNV-1a over 64-bit little-endian words (a byte at a time took 0.1 s). */
static void fnv(uint64_t h[2], const uint8_t *p, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		for (int k = 0; k < 2; k++)
			h[k] = (h[k] ^ get_le64(p + i)) * 0x100000001b3ull;
	for (; i < n; i++)
		for (int k = 0; k < 2; k++)
			h[k] = (h[k] ^ p[i]) * 0x100000001b3ull;
}

static void hash_seen(void *h, const uint8_t *p, size_t n)
{
	fnv(h, p, n);
}

/* 128 bits of FNV-1a over the metadata: a stable id for a stable tree. */
static void derive_uuid(const uint64_t h[2], uint8_t uuid[16])
{
	for (int i = 0; i < 16; i++)
		uuid[i] = (uint8_t)(h[i / 8] >> (8 * (i % 8)));
	uuid[6] = (uuid[6] & 0x0f) | 0x80;	/* RFC 9562 version 8 */
	uuid[8] = (uuid[8] & 0x3f) | 0x80;
}

static void set_compression(struct erofs_super_block *sb, uint8_t *meta,
			    const struct kiln_mkfs_opts *o)
{
	if (!o->compress)
		return;
	sb->feature_incompat |= EROFS_FEATURE_INCOMPAT_ZERO_PADDING;
	if (o->compr.tailpacking)
		sb->feature_incompat |= EROFS_FEATURE_INCOMPAT_ZTAILPACKING;
	if (kiln_compr_needs_cfgs(o)) {
		sb->feature_incompat |= EROFS_FEATURE_INCOMPAT_COMPR_CFGS;
		sb->u1 = kiln_compr_algs(o);
		kiln_compr_cfgs_encode(o, meta + EROFS_SUPER_OFFSET +
					  EROFS_SUPER_SIZE);
	} else {
		sb->u1 = 65535;		/* lz4_max_distance */
	}
}

/*
 * The devices data was left on (--tar=i's tar, merged layers). Mounted
 * without device=, device k's blocks are the image's from mapped_blkaddr
 * on: the devices appended to this image in order. Both fields are 32
 * bits; an image whose devices end past that is refused, not clamped,
 * as a clamped address would mount with the wrong data.
 */
static int add_devices(struct kiln_writer *w, const struct kiln_tree *t,
		       struct erofs_super_block *sb)
{
	uint64_t at = w->end_blk;

	/* the head has room for the slots counted before the scan */
	if (t->nr_devices != kiln_nr_devices(w->o))
		return kiln_err("internal error: %u devices, room for %u",
				t->nr_devices, kiln_nr_devices(w->o)), -1;
	sb->feature_incompat |= EROFS_FEATURE_INCOMPAT_DEVICE_TABLE;
	sb->extra_devices = t->nr_devices;
	sb->devt_slotoff = (uint16_t)(w->devt_pos / EROFS_DEVT_SLOT_SIZE);
	for (uint16_t i = 0; i < t->nr_devices; i++) {
		const struct kiln_device *dev = &t->devices[i];
		struct erofs_deviceslot slot;

		/* its last block, at + blocks - 1, must be a 32-bit address */
		if (dev->blocks > UINT32_MAX || at > UINT32_MAX ||
		    at + dev->blocks > (uint64_t)UINT32_MAX + 1)
			return kiln_err("device %u ends past 2^32 blocks of %u "
					"bytes: too large for one image",
					i + 1, 1u << w->l->blkszbits), -1;
		slot = (struct erofs_deviceslot){
			.blocks = (uint32_t)dev->blocks,
			.mapped_blkaddr = (uint32_t)at,
		};
		memcpy(slot.tag, dev->tag, sizeof(slot.tag));
		erofs_deviceslot_encode(w->head + w->devt_pos +
					i * EROFS_DEVT_SLOT_SIZE, &slot);
		at += dev->blocks;
	}
	return 0;
}

/* The superblock, but for its checksum and a derived uuid. */
static int fill_superblock(struct kiln_writer *w, const struct kiln_tree *t,
			   const struct kiln_mkfs_opts *o,
			   struct erofs_super_block *sb)
{
	const struct kiln_layout *l = w->l;

	*sb = (struct erofs_super_block){
		.magic = EROFS_SUPER_MAGIC,
		.feature_compat = (o->no_sb_crc ? 0 :
				   EROFS_FEATURE_COMPAT_SB_CHKSUM) |
				  EROFS_FEATURE_COMPAT_MTIME,
		.blkszbits = (uint8_t)l->blkszbits,
		.root_nid = (uint16_t)t->root->nid,	/* checked: records.c */
		.meta_blkaddr = (uint32_t)(w->recs.start >> l->blkszbits),
		.xattr_blkaddr = (uint32_t)(w->recs.start >> l->blkszbits),
		.inos = l->nr,
		.epoch = l->epoch,
		.fixed_nsec = l->fixed_nsec,
		.blocks = (uint32_t)w->end_blk,	/* checked: <= EROFS_MAX_BLOCKS */
	};
	memcpy(sb->volume_name, o->label, sizeof(sb->volume_name));
	if (l->packed) {
		sb->feature_incompat |= EROFS_FEATURE_INCOMPAT_FRAGMENTS;
		sb->packed_nid = l->packed->nid;
	}
	if (o->compress && o->compr.dedupe)	/* the same bit: "dedupe" */
		sb->feature_incompat |= EROFS_FEATURE_INCOMPAT_FRAGMENTS;
	if (w->chunked)
		sb->feature_incompat |= EROFS_FEATURE_INCOMPAT_CHUNKED_FILE;
	if (t->nr_devices && add_devices(w, t, sb))
		return -1;
	if (o->nr_xattr_prefixes) {
		sb->feature_incompat |= EROFS_FEATURE_INCOMPAT_XATTR_PREFIXES;
		sb->xattr_prefix_count = (uint8_t)o->nr_xattr_prefixes;
		sb->xattr_prefix_start = kiln_prefixes_packed(o) ? 0 :
					 (uint32_t)(w->prefix_pos / 4);
	}
	set_compression(sb, w->head, o);
	if (o->uuid_mode == KILN_UUID_GIVEN)
		memcpy(sb->uuid, o->uuid, 16);
	else if (o->uuid_mode == KILN_UUID_RANDOM &&
		 getrandom(sb->uuid, 16, 0) != 16)
		return kiln_err("cannot get random bytes: %s", strerror(errno)), -1;
	if (o->uuid_mode == KILN_UUID_RANDOM) {
		sb->uuid[6] = (sb->uuid[6] & 0x0f) | 0x40;
		sb->uuid[8] = (sb->uuid[8] & 0x3f) | 0x80;
	}
	return 0;
}

/*
 * Inodes, then the records after the data, then the head. A derived uuid
 * hashes the head (superblock without uuid) and then the records as they
 * go out, so the area is never held twice.
 */
static int write_metadata(struct kiln_writer *w, const struct kiln_tree *t,
			  const struct kiln_mkfs_opts *o)
{
	const struct kiln_layout *l = w->l;
	size_t headsize = (size_t)w->head_blocks * l->blksz;
	uint8_t *sbp = w->head + EROFS_SUPER_OFFSET;
	uint64_t h[2] = { 0xcbf29ce484222325ull, 0x84222325cbf29ce4ull };
	bool derive = o->uuid_mode == KILN_UUID_DERIVED;
	struct erofs_super_block sb;

	for (uint32_t i = 0; i < l->nr; i++)
		encode_inode(l->order[i]);
	if (fill_superblock(w, t, o, &sb))
		return -1;
	erofs_sb_encode(sbp, &sb);
	if (derive)
		fnv(h, w->head, headsize);
	if (kiln_records_write(&w->recs, l->order, l->nr, w->fd,
			       derive ? hash_seen : NULL, h))
		goto fail;
	if (derive)
		derive_uuid(h, sb.uuid);
	erofs_sb_encode(sbp, &sb);
	if (!o->no_sb_crc) {
		sb.checksum = erofs_sb_checksum(sbp, l->blkszbits);
		erofs_sb_encode(sbp, &sb);
	}
	if (kiln_writeback_synced(&w->wb) ||
	    pwrite_all(w->fd, w->head, headsize, 0) ||
	    /* a file ends where the image does; a device keeps its size */
	    (!w->flat.zero_fill &&
	     ftruncate(w->fd, (off_t)(w->end_blk * l->blksz))) ||
	    fsync(w->fd))
		goto fail;
	return 0;
fail:
	kiln_err("%s: write failed: %s", w->image, strerror(errno));
	return -1;
}

/*
 * Stages every flat record; compressed and chunk-based ones are staged
 * once their data is written.
 */
static void stage_records(struct kiln_writer *w)
{
	const struct kiln_layout *l = w->l;

	for (uint32_t i = 0; i < l->nr; i++)
		if (!l->order[i]->zwritten && !l->order[i]->chunked)
			kiln_records_stage(&w->recs, l->order[i],
					   l->order[i]->rec_size);
}

/*
 * --chunksize: chunk-based files go after the flat data, in order.
 * Data left on another device (--tar=i, layers): only indexes are made.
 */
static int write_chunked(struct kiln_writer *w)
{
	const struct kiln_layout *l = w->l;
	struct kiln_chunked c;
	int ret = 0;

	if (!w->o->chunkbits && !kiln_nr_devices(w->o))
		return 0;
	kiln_chunked_init(&c, w->fd, w->image, w->o, &w->wb, w->end_blk);
	c.zero_fill = w->flat.zero_fill;
	for (uint32_t i = 0; i < l->nr && !ret; i++) {
		struct kiln_inode *in = l->order[i];

		if (!in->chunked)
			continue;
		ret = in->devmap ? kiln_devchunks_stage(in, &w->recs,
						       l->blkszbits) :
		      kiln_chunked_write(&c, in, &w->recs);
		w->chunked |= in->datalayout == EROFS_INODE_CHUNK_BASED;
	}
	w->end_blk = c.next_blk;
	kiln_chunked_free(&c);
	return ret;
}

/* After the data: the pool, then every record gets its place (and nid). */
static int pack_records(struct kiln_writer *w)
{
	const struct kiln_layout *l = w->l;

	if (w->pool->size) {
		w->pool_bytes = xcalloc(1, w->pool->size);
		kiln_xattr_pool_encode(w->pool, w->pool_bytes);
	}
	if (kiln_records_pack(&w->recs, l->order, l->nr, w->end_blk,
			      w->pool_bytes, w->pool->size))
		return -1;
	w->end_blk += w->recs.size >> l->blkszbits;
	if (w->end_blk > EROFS_MAX_BLOCKS)
		return kiln_err_too_large(l->blkszbits);
	kiln_info(2, "metadata: %llu bytes of records in %llu blocks",
		  (unsigned long long)w->recs.used,
		  (unsigned long long)(w->recs.size >> l->blkszbits));
	return 0;
}

/* Queues or writes every flat inode's data but directories'. */
static int write_flat_data(struct kiln_writer *w)
{
	const struct kiln_layout *l = w->l;
	uint64_t t0 = kiln_prof_start();
	int ret = kiln_layout_place_flat(l, &w->end_blk);

	if (!ret)
		ret = write_chunked(w);
	stage_records(w);
	for (uint32_t i = 0; i < l->nr && !ret; i++) {
		struct kiln_inode *in = l->order[i];

		if (in->zwritten || in->chunked)
			continue;
		if (S_ISREG(in->mode) && in->size) {
			kiln_flat_queue(&w->flat, w->wq, in);
			kiln_writeback_add(&w->wb, in->size);
		} else if (S_ISLNK(in->mode)) {
			ret = write_node(w, in);
		}
		if (atomic_load(&w->flat.failed))
			ret = -1;
	}
	kiln_prof_add(KILN_PROF_QUEUE, t0);
	return ret;
}

struct kiln_writer *kiln_writer_start(int fd, const char *image,
				      const struct kiln_mkfs_opts *o,
				      struct kiln_workqueue *wq)
{
	struct kiln_writer *w = xcalloc(1, sizeof(*w));
	struct stat st;

	w->fd = fd;
	w->image = image;
	w->o = o;
	w->wq = wq;
	w->head_blocks = kiln_head_blocks(o, &w->prefix_pos, &w->devt_pos);
	w->end_blk = w->head_blocks;
	w->flat = (struct kiln_flat){
		.fd = fd, .image = image, .blksz = 1u << o->blkszbits,
		.zero_fill = fstat(fd, &st) || !S_ISREG(st.st_mode),
	};
	kiln_writeback_start(&w->wb, fd);
	kiln_records_init(&w->recs, 1u << o->blkszbits);
	if (o->compress)
		w->zw = kiln_zw_start(o, wq, &w->wb, fd, image,
				      o->blkszbits, w->head_blocks, &w->recs);
	return w;
}

int kiln_writer_visit(void *ctx, struct kiln_inode *in)
{
	struct kiln_writer *w = ctx;

	const struct kiln_hint *h;

	if (!w->zw || !S_ISREG(in->mode) || !in->size || in->zwritten)
		return 0;
	in->zcfg = 0;
	in->zpclustersize = w->o->pcluster_default;
	if (w->o->hints && (h = kiln_hints_match(w->o->hints,
					kiln_inode_relpath(w->o, in)))) {
		if (!h->pclustersize)	/* flat, or chunk-based */
			return 0;
		in->zcfg = (uint8_t)h->zcfg;
		in->zpclustersize = h->pclustersize;
	}
	in->zwritten = true;
	/* the zwriter decides tails now, before the layout would set it */
	in->no_inline = w->o->no_inline_data;
	return kiln_zw_add(w->zw, in, kiln_inode_base_min(w->o),
			   kiln_inode_base_max(in, w->o));
}

/*
 * -E fragments: every file is in, so the packed inode's content is
 * complete; it is compressed like a file (no fragments of its own).
 */
static int add_packed(struct kiln_writer *w, struct kiln_inode *p)
{
	int ret = kiln_zw_fragments_done(w->zw, p);

	if (ret || !p->size)
		return ret;
	p->extended |= p->size > UINT32_MAX;
	p->zpclustersize = w->o->pcluster_default;
	p->zwritten = true;
	p->no_inline = w->o->no_inline_data;
	return kiln_zw_add(w->zw, p, kiln_inode_base_min(w->o),
			   kiln_inode_base_max(p, w->o));
}

/*
 * What the zwriter has in flight is written; its files' records are
 * finished now that their bases are final. The zwriter ends below blocks
 * it wrote when its last file went flat in fewer blocks or chunk-based:
 * a file image is cut there, as flat and chunked data skip zeros and
 * holes on the ground that a new file reads zeros (a device gets every
 * byte written anyway).
 */
static int finish_zdata(struct kiln_writer *w)
{
	const struct kiln_layout *l = w->l;
	int ret = l->packed ? add_packed(w, l->packed) : 0;

	if (kiln_zw_finish(w->zw, &w->end_blk))
		ret = -1;
	w->zw = NULL;
	if (!ret && !w->flat.zero_fill &&
	    ftruncate(w->fd, (off_t)(w->end_blk << l->blkszbits))) {
		kiln_err("%s: write failed: %s", w->image, strerror(errno));
		ret = -1;
	}
	for (uint32_t i = 0; i < l->nr && !ret; i++)
		if (l->order[i]->zwritten)
			ret = kiln_zinode_finish(l->order[i],
						 kiln_zcfg(w->o, l->order[i]->zcfg),
						 l->blkszbits);
	return ret;
}

/*
 * The zwriter's data is written from the end of the head on, in the
 * order the walk visits files; flat data goes after it, regular files
 * copied by the workers in any order (their blocks are known by then).
 * Then the records are packed after the data, then directories, which
 * can now name every nid.
 */
static int write_all_data(struct kiln_writer *w)
{
	const struct kiln_layout *l = w->l;
	uint64_t t0;
	int ret = 0;

	if (w->zw)
		ret = finish_zdata(w);
	if (!ret)
		ret = write_flat_data(w);
	if (ret)	/* queued copies need not run */
		atomic_store(&w->flat.failed, true);
	t0 = kiln_prof_start();
	kiln_wq_drain(w->wq);
	kiln_prof_add(KILN_PROF_WAIT, t0);
	if (ret || atomic_load(&w->flat.failed))
		return -1;
	kiln_writeback_sync(&w->wb);
	t0 = kiln_prof_start();
	ret = pack_records(w);
	for (uint32_t i = 0; i < l->nr && !ret; i++)
		if (S_ISDIR(l->order[i]->mode))
			ret = write_node(w, l->order[i]);
	kiln_prof_add(KILN_PROF_META, t0);
	return ret;
}

int kiln_writer_finish(struct kiln_writer *w, const struct kiln_tree *t,
		       const struct kiln_xattr_pool *pool,
		       const struct kiln_layout *l)
{
	uint64_t t0, end;
	int ret = -1;

	w->l = l;
	w->pool = pool;
	if (l) {
		w->head = xcalloc(1, (size_t)w->head_blocks * l->blksz);
		if (w->o->nr_xattr_prefixes && !kiln_prefixes_packed(w->o))
			kiln_xattr_prefixes_encode(w->o->xattr_prefixes,
						   w->o->nr_xattr_prefixes,
						   w->head + w->prefix_pos);
		ret = write_all_data(w);
	}
	if (!ret) {
		t0 = kiln_prof_start();
		ret = write_metadata(w, t, w->o);
		kiln_prof_add(KILN_PROF_META, t0);
	}
	if (w->zw)	/* given up: what is in flight still ends */
		kiln_zw_finish(w->zw, &end);
	kiln_wq_drain(w->wq);
	kiln_writeback_stop(&w->wb);
	free(w->head);
	free(w->pool_bytes);
	kiln_records_free(&w->recs);
	free(w);
	return ret;
}

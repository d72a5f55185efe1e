/* SPDX-License-Identifier: MIT */
/*
 * Writes metadata into in-memory copies of the two metadata areas and file
 * data straight to its blocks: flat files first, then compressed ones, then
 * directories (whose entries need the nids of compressed inodes, known only
 * once those are placed); the metadata goes out last, superblock and
 * checksum included. All-zero data blocks are not written, so sparse
 * sources give sparse images (the blocks still read as zeros).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dir.h"
#include "format/erofs_fs.h"
#include "format/ondisk.h"
#include "common/profile.h"
#include "common/util.h"
#include "writer.h"
#include "zdata.h"

#define CHUNK (1u << 20)

struct writer {
	int fd;
	const char *image;
	const struct kiln_layout *l;
	uint8_t *meta;			/* meta_blocks * blksz bytes */
	struct kiln_zmeta zmeta;	/* compressed inodes, after the data */
	uint8_t *buf;			/* CHUNK bytes for file data */
	uint64_t end_blk;		/* first block after all data */
	/*
	 * A new file reads zeros where nothing was written, so zero blocks
	 * and holes are skipped; a block device holds an older image's
	 * bytes there, so every byte of every data block is written.
	 */
	bool zero_fill;
};

static uint8_t *inode_ptr(const struct writer *w, const struct kiln_inode *in)
{
	if (in->in_zmeta)
		return kiln_zmeta_ptr(&w->zmeta, in->nid);
	return w->meta + (in->nid << EROFS_ISLOT_BITS);
}

static uint8_t *inline_ptr(const struct writer *w, const struct kiln_inode *in)
{
	return inode_ptr(w, in) + kiln_inode_base_size(in);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	return !n || (!p[0] && !memcmp(p, p + 1, n - 1));
}

/* Zeros from byte at to the end of its block. */
static int pad_block(struct writer *w, uint64_t at)
{
	static const uint8_t zero[4096];
	uint32_t n = w->l->blksz - (uint32_t)(at % w->l->blksz);

	if (!pwrite_all(w->fd, zero, n, at))
		return 0;
	kiln_err("%s: write failed: %s", w->image, strerror(errno));
	return -1;
}

/* Places bytes [off, off+len) of an inode's data where the layout says. */
static int emit(struct writer *w, const struct kiln_inode *in,
		const uint8_t *p, size_t len, uint64_t off)
{
	uint64_t blkbytes = in->datalayout == EROFS_INODE_FLAT_INLINE ?
			    in->size - in->inline_size : in->size;
	uint32_t blksz = w->l->blksz;

	while (len) {
		size_t n;

		if (off >= blkbytes) {
			memcpy(inline_ptr(w, in) + (off - blkbytes), p, len);
			return 0;
		}
		/* one block at a time, so zero blocks can be skipped */
		n = blksz - off % blksz;
		if (n > len)
			n = len;
		if (off + n > blkbytes)
			n = (size_t)(blkbytes - off);
		if ((w->zero_fill || !all_zero(p, n)) &&
		    pwrite_all(w->fd, p, n, (uint64_t)in->startblk * blksz + off)) {
			kiln_err("%s: write failed: %s", w->image,
				 strerror(errno));
			return -1;
		}
		if (w->zero_fill && off + n == blkbytes && blkbytes % blksz &&
		    pad_block(w, (uint64_t)in->startblk * blksz + blkbytes))
			return -1;
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

static bool changed(const struct kiln_inode *in, const struct stat *st)
{
	return !S_ISREG(st->st_mode) || (uint64_t)st->st_size != in->size ||
	       st->st_mtim.tv_sec != in->src_mtim.tv_sec ||
	       st->st_mtim.tv_nsec != in->src_mtim.tv_nsec;
}

/* Copies [start, end) of the source file, which SEEK_DATA says has data. */
static int copy_range(struct writer *w, const struct kiln_inode *in, int fd,
		      uint64_t start, uint64_t end)
{
	while (start < end) {
		size_t want = end - start < CHUNK ? (size_t)(end - start) : CHUNK;
		ssize_t n = pread_all(fd, w->buf, want, start);

		if (n < 0) {
			kiln_err("%s: read failed: %s", in->srcpath,
				 strerror(errno));
			return -1;
		}
		if ((size_t)n != want) {
			kiln_err("%s: file changed while being read",
				 in->srcpath);
			return -1;
		}
		if (emit(w, in, w->buf, want, start))
			return -1;
		start += want;
	}
	return 0;
}

/* Walks the data segments of the source, leaving holes as zeros. */
static int copy_segments(struct writer *w, const struct kiln_inode *in, int fd)
{
	uint64_t pos = 0;

	if (w->zero_fill)	/* holes are written as zeros */
		return copy_range(w, in, fd, 0, in->size);
	while (pos < in->size) {
		off_t data = lseek(fd, (off_t)pos, SEEK_DATA);
		off_t hole;

		if (data < 0 && errno == ENXIO)
			break;		/* only a hole is left */
		if (data < 0)	/* no SEEK_DATA here: copy it all */
			return copy_range(w, in, fd, pos, in->size);
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0 || (uint64_t)hole > in->size)
			hole = (off_t)in->size;
		if (copy_range(w, in, fd, (uint64_t)data, (uint64_t)hole))
			return -1;
		pos = (uint64_t)hole;
	}
	return 0;
}

static int write_regular(struct writer *w, const struct kiln_inode *in)
{
	int fd = open(in->srcpath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	char probe;
	int ret = -1;

	if (fd < 0) {
		kiln_err("%s: %s", in->srcpath, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || changed(in, &st)) {
		kiln_err("%s: file changed while being read", in->srcpath);
	} else if (!copy_segments(w, in, fd)) {
		/* grown, shrunk or touched while we read it? */
		if (pread(fd, &probe, 1, (off_t)in->size) != 0 ||
		    fstat(fd, &st) || changed(in, &st))
			kiln_err("%s: file changed while being read",
				 in->srcpath);
		else
			ret = 0;
	}
	close(fd);
	return ret;
}

static int write_data(struct writer *w, const struct kiln_inode *in)
{
	uint8_t *dir;
	int ret;

	switch (in->mode & S_IFMT) {
	case S_IFREG:
		return in->size ? write_regular(w, in) : 0;
	case S_IFLNK:
		return emit(w, in, (const uint8_t *)in->symlink, in->size, 0);
	case S_IFDIR:
		dir = xcalloc(1, round_up(in->size, w->l->blksz));
		kiln_dir_encode(in, w->l->blksz, dir);
		ret = emit(w, in, dir, in->size, 0);
		free(dir);
		return ret;
	}
	return 0;
}

static void encode_inode(struct writer *w, const struct kiln_inode *in)
{
	uint8_t *p = inode_ptr(w, in);
	uint16_t icount = in->xattr_isize ?
			  (uint16_t)((in->xattr_isize - 12) / 4 + 1) : 0;
	uint16_t format = (uint16_t)(in->extended |
				     in->datalayout << EROFS_I_DATALAYOUT_BIT);
	uint32_t iu = S_ISCHR(in->mode) || S_ISBLK(in->mode) ? in->rdev :
		      S_ISFIFO(in->mode) || S_ISSOCK(in->mode) ? 0 :
		      in->compressed ? in->zblocks : in->startblk;

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

static void fnv(uint64_t h[2], const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < 2; k++)
			h[k] = (h[k] ^ p[i]) * 0x100000001b3ull;
}

/* 128 bits of FNV-1a over the metadata: a stable id for a stable tree. */
static void derive_uuid(const struct writer *w, uint8_t uuid[16])
{
	uint64_t h[2] = { 0xcbf29ce484222325ull, 0x84222325cbf29ce4ull };

	fnv(h, w->meta, (size_t)w->l->meta_blocks * w->l->blksz);
	fnv(h, w->zmeta.buf, (size_t)kiln_zmeta_size(&w->zmeta));
	for (int i = 0; i < 16; i++)
		uuid[i] = (uint8_t)(h[i / 8] >> (8 * (i % 8)));
	uuid[6] = (uuid[6] & 0x0f) | 0x80;	/* RFC 9562 version 8 */
	uuid[8] = (uuid[8] & 0x3f) | 0x80;
}

static void set_compression(struct erofs_super_block *sb, uint8_t *meta,
			    const struct kiln_mkfs_opts *o, unsigned int blkszbits)
{
	if (!o->compress)
		return;
	sb->feature_incompat |= EROFS_FEATURE_INCOMPAT_ZERO_PADDING;
	if (o->compr.tailpacking)
		sb->feature_incompat |= EROFS_FEATURE_INCOMPAT_ZTAILPACKING;
	if (kiln_compr_needs_cfgs(&o->compr, 1u << blkszbits)) {
		sb->feature_incompat |= EROFS_FEATURE_INCOMPAT_COMPR_CFGS;
		sb->u1 = (uint16_t)(1u << o->compr.c->alg);
		kiln_compr_cfgs_encode(&o->compr, blkszbits,
				       meta + EROFS_SUPER_OFFSET + EROFS_SUPER_SIZE);
	} else {
		sb->u1 = 65535;		/* lz4_max_distance */
	}
}

static int write_superblock(struct writer *w, const struct kiln_tree *t,
			    const struct kiln_mkfs_opts *o)
{
	const struct kiln_layout *l = w->l;
	struct erofs_super_block sb = {
		.magic = EROFS_SUPER_MAGIC,
		.feature_compat = EROFS_FEATURE_COMPAT_SB_CHKSUM |
				  EROFS_FEATURE_COMPAT_MTIME,
		.blkszbits = (uint8_t)l->blkszbits,
		.root_nid = (uint16_t)t->root->nid,
		.inos = l->nr,
		.epoch = l->epoch,
		.fixed_nsec = l->fixed_nsec,
		.blocks = (uint32_t)w->end_blk,	/* checked: <= EROFS_MAX_BLOCKS */
	};
	uint8_t *sbp = w->meta + EROFS_SUPER_OFFSET;

	memcpy(sb.volume_name, o->label, sizeof(sb.volume_name));
	set_compression(&sb, w->meta, o, l->blkszbits);
	if (o->uuid_mode == KILN_UUID_GIVEN)
		memcpy(sb.uuid, o->uuid, 16);
	else if (o->uuid_mode == KILN_UUID_RANDOM &&
		 getrandom(sb.uuid, 16, 0) != 16)
		return kiln_err("cannot get random bytes: %s", strerror(errno)), -1;
	if (o->uuid_mode == KILN_UUID_RANDOM) {
		sb.uuid[6] = (sb.uuid[6] & 0x0f) | 0x40;
		sb.uuid[8] = (sb.uuid[8] & 0x3f) | 0x80;
	}
	erofs_sb_encode(sbp, &sb);
	if (o->uuid_mode == KILN_UUID_DERIVED) {
		derive_uuid(w, sb.uuid);
		erofs_sb_encode(sbp, &sb);
	}
	sb.checksum = erofs_sb_checksum(sbp, l->blkszbits);
	erofs_sb_encode(sbp, &sb);
	return 0;
}

/*
 * Data first (compressed files through the worker pool), then the second
 * metadata area after it, then directories, which can now name every nid.
 */
static int write_all_data(struct writer *w, const struct kiln_mkfs_opts *o)
{
	const struct kiln_layout *l = w->l;
	struct kiln_zwriter *zw = NULL;
	uint64_t t0;
	int ret = 0;

	w->end_blk = l->total_blocks;
	if (o->compress) {
		zw = kiln_zw_start(&o->compr, o->workers, w->fd, w->image,
				   l->blkszbits, l->total_blocks, &w->zmeta);
		if (!zw)
			return -1;
	}
	for (uint32_t i = 0; i < l->nr && !ret; i++) {
		struct kiln_inode *in = l->order[i];

		if (in->compressed) {
			ret = kiln_zw_add(zw, in);
		} else if (!S_ISDIR(in->mode)) {
			t0 = kiln_prof_start();
			ret = write_data(w, in);
			kiln_prof_add(KILN_PROF_COPY, t0);
		}
	}
	if (zw && kiln_zw_finish(zw, &w->end_blk))
		ret = -1;
	if (ret)
		return ret;
	t0 = kiln_prof_start();
	kiln_zmeta_relocate(&w->zmeta, w->end_blk, l->order, l->nr);
	w->end_blk += kiln_zmeta_size(&w->zmeta) >> l->blkszbits;
	if (w->end_blk > EROFS_MAX_BLOCKS)
		return kiln_err_too_large(l->blkszbits);
	for (uint32_t i = 0; i < l->nr && !ret; i++)
		if (S_ISDIR(l->order[i]->mode))
			ret = write_data(w, l->order[i]);
	kiln_prof_add(KILN_PROF_META, t0);
	return ret;
}

int kiln_write_image(int fd, const char *image, const struct kiln_tree *t,
		     const struct kiln_xattr_pool *pool,
		     const struct kiln_layout *l,
		     const struct kiln_mkfs_opts *o)
{
	size_t metasize = (size_t)l->meta_blocks * l->blksz;
	struct writer w = { .fd = fd, .image = image, .l = l };
	struct stat st;
	uint64_t t0;
	int ret = -1;

	w.zero_fill = fstat(fd, &st) || !S_ISREG(st.st_mode);
	w.meta = xcalloc(1, metasize);
	w.buf = xmalloc(CHUNK);
	kiln_zmeta_init(&w.zmeta, l->blksz);
	if (pool->size)
		kiln_xattr_pool_encode(pool, w.meta + l->pool_pos);
	if (write_all_data(&w, o))
		goto out;
	t0 = kiln_prof_start();
	for (uint32_t i = 0; i < l->nr; i++)
		encode_inode(&w, l->order[i]);
	if (write_superblock(&w, t, o))
		goto out;
	if (pwrite_all(fd, w.meta, metasize, 0) ||
	    pwrite_all(fd, w.zmeta.buf, kiln_zmeta_size(&w.zmeta),
		       w.zmeta.start) ||
	    /* a file ends where the image does; a device keeps its size */
	    (!w.zero_fill && ftruncate(fd, (off_t)(w.end_blk * l->blksz))) ||
	    fsync(fd)) {
		kiln_err("%s: write failed: %s", image, strerror(errno));
		goto out;
	}
	ret = 0;
	kiln_prof_add(KILN_PROF_META, t0);
out:
	free(w.meta);
	free(w.buf);
	kiln_zmeta_free(&w.zmeta);
	return ret;
}

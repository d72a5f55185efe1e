/* SPDX-License-Identifier: MIT */
/*
 * Round trip of compressed inodes' lcluster indexes: random extent lists
 * shaped as zdata.c makes them (compressed extents longer than a block and
 * saving one, plain one-block extents at any offset, plain in the last
 * lcluster, consecutive blocks, an inline tail) are encoded by the writer
 * (kiln_zmap_encode, in the format kiln_zfmt picks) into a real image in
 * a memfd (superblock, compression records, inode with xattr slots, index,
 * inline tail, sparse data), then read back through the reader's public
 * path (kiln_image_open_fd, kiln_inode_load, kiln_file_map, in windows of
 * random size); the extents it reports must be exactly the ones encoded. Covered: full and compact
 * (2B and 4B packs, every start of the index mod 32) indexes, 512..65536
 * byte lclusters, big pclusters (CBLKCNT) and 1-block ones, sizes that are
 * or are not a multiple of the lcluster, heads packed densely (pack
 * boundaries) or far apart (delta chains over 2047), ztailpacking.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "common/util.h"
#include "format/ondisk.h"
#include "read/reader.h"
#include "write/layout.h"
#include "write/zdata.h"
#include "write/zmap.h"

static uint64_t upto(uint64_t n)	/* 0..n */
{
	return rnd() % (n + 1);
}

/* One test file: how it is laid out and what it holds. */
struct zcase {
	struct kiln_compr_cfg cfg;
	unsigned int bits;
	uint32_t blksz;
	uint64_t isize;
	uint64_t ipos;			/* inode byte offset (nid * 32) */
	uint32_t base;			/* inode + xattr body */
	uint16_t icount;
	struct kiln_zmap_fmt fmt;
	struct kiln_extent *ext;
	uint32_t nr;
	uint16_t idata;			/* inline tail bytes */
	uint64_t tailpos;		/* where the reader must find them */
};

static const struct kiln_compressor *const comps[] = {
	&kiln_lz4, &kiln_lzma, &kiln_deflate, &kiln_zstd,
};

static void push(struct zcase *z, uint64_t start, uint32_t blk,
		 uint16_t nb, bool plain, bool inlined)
{
	z->ext[z->nr++] = (struct kiln_extent){ .start = start, .blkaddr = blk,
		.nblocks = nb, .plain = plain, .inlined = inlined };
}

/*
 * Bytes the next compressed extent takes (more than a block): short ones
 * put heads in every lcluster (pack boundaries), long ones stretch delta
 * chains; some end on an lcluster boundary.
 */
static uint64_t compressed_len(const struct zcase *z, uint64_t pos,
			       uint64_t rem)
{
	uint64_t len, max = rem < (8u << 20) ? rem : 8u << 20;

	switch (rnd() % 4) {
	case 0:
		len = z->blksz + 1 + upto(z->blksz);
		break;
	case 1:
		len = z->blksz + 1 + upto(max);
		break;
	case 2:			/* the next extent starts an lcluster */
		len = (pos / z->blksz + 2 + upto(40)) * z->blksz - pos;
		break;
	default:
		len = z->blksz + 1 + upto(16 * z->blksz);
	}
	return len > max ? max : len;
}

/* The tail goes inline if it compresses (or, if short, fits) into tmax. */
static bool try_inline(struct zcase *z, uint64_t pos, uint32_t blk)
{
	uint64_t rem = z->isize - pos;
	uint64_t tmax = z->blksz - (z->tailpos % z->blksz);

	if (!z->cfg.tailpacking || rem > 8 * (uint64_t)z->blksz || upto(2))
		return false;
	if (rem <= z->blksz && rem <= tmax && upto(1)) {
		z->idata = (uint16_t)rem;
		push(z, pos, blk, 0, true, true);
		return true;
	}
	if (rem < 2)
		return false;
	z->idata = (uint16_t)(1 + upto((rem - 2 < tmax - 1 ? rem - 2 :
					tmax - 1)));
	push(z, pos, blk, 0, false, true);
	return true;
}

/* A compressed extent: longer than its pcluster by over a block. */
static uint64_t add_compressed(struct zcase *z, uint64_t pos, uint32_t *blk)
{
	uint64_t len = compressed_len(z, pos, z->isize - pos);
	uint64_t nbmax = (len - 1) / z->blksz, pcl = z->cfg.pclustersize /
						     z->blksz;
	uint16_t nb = (uint16_t)(1 + upto((nbmax < pcl ? nbmax : pcl) - 1));

	push(z, pos, *blk, nb, false, false);
	*blk += nb;
	return len;
}

/*
 * Plain extents: one block (zdata), or, which the encoder also takes, a
 * pcluster of several full blocks in a compact big index (plain heads get
 * a CBLKCNT there). A pcluster of 2+ blocks must reach 2 lclusters on,
 * where a NONHEAD can carry the count.
 */
static uint64_t add_plain(struct zcase *z, uint64_t pos, uint32_t *blk)
{
	uint64_t rem = z->isize - pos, len = rem < z->blksz ? rem : z->blksz;
	uint32_t pcl = z->cfg.pclustersize / z->blksz;
	uint16_t nb = 1;

	if (z->fmt.compact && pcl > 1 && rem > z->blksz && !upto(7)) {
		nb = (uint16_t)(2 + upto((pcl < 8 ? pcl : 8) - 2));
		len = (uint64_t)nb * z->blksz;
		if (len > rem) {
			len = rem;
			nb = (uint16_t)((len + z->blksz - 1) / z->blksz);
		}
		if (pos % z->blksz + len <= 2 * (uint64_t)z->blksz)
			nb = 1, len = z->blksz;
	}
	push(z, pos, *blk, nb, true, false);
	*blk += nb;
	return len;
}

/* The extents zdata.c could have cut this file into. */
static void gen_extents(struct zcase *z, uint32_t blk)
{
	uint64_t pos = 0, lastlc = (z->isize - 1) / z->blksz;

	z->ext = calloc(z->isize / z->blksz + 2, sizeof(*z->ext));
	while (pos < z->isize && !try_inline(z, pos, blk)) {
		/* none starts in the last lcluster (the kernel's rule) */
		if (z->isize - pos > z->blksz && pos / z->blksz != lastlc &&
		    upto(3))
			pos += add_compressed(z, pos, &blk);
		else
			pos += add_plain(z, pos, &blk);
	}
}

static uint64_t pick_isize(uint32_t blksz)
{
	uint64_t lcs;

	switch (rnd() % 4) {
	case 0:
		lcs = 1 + upto(3);
		break;
	case 1:
		lcs = 1 + upto(64);
		break;
	case 2:
		lcs = 1 + upto(600);
		break;
	default:		/* long files: deltas chained past 2047 */
		lcs = 2048 + upto(4 * 2048);
	}
	/* a multiple of the lcluster, or not */
	return upto(1) ? lcs * blksz : (lcs - 1) * blksz + 1 + upto(blksz - 1);
}

/*
 * Pclusters up to 1 MiB, but under 2048 blocks (see the case below), and
 * for lz4 what the kernel takes (erofs_lz4_max_pclusterblks: 256 blocks
 * under 4 KiB), as mkfs/check.c refuses more.
 */
static void pick_case(struct zcase *z)
{
	uint32_t pcls[] = { 1, 2, 4, 16, 0 };

	memset(z, 0, sizeof(*z));
	z->bits = 9 + (unsigned int)upto(5);
	if (!upto(7))	/* 32 and 64 KiB: full indexes only (mkfs/check.c) */
		z->bits = 15 + (unsigned int)upto(1);
	z->blksz = 1u << z->bits;
	pcls[4] = (1u << 20 >> z->bits) > 2047 ? 2047 : 1u << 20 >> z->bits;
	z->cfg.c = comps[rnd() % 4];
	if (z->cfg.c->alg == EROFS_ALG_LZ4 &&
	    pcls[4] > erofs_lz4_max_pclusterblks(z->bits))
		pcls[4] = erofs_lz4_max_pclusterblks(z->bits);
	z->cfg.pclustersize = pcls[rnd() % 5] * z->blksz;
	z->cfg.full_index = !upto(3) || z->bits > EROFS_MAX_COMPACT_LCBITS;
	z->cfg.tailpacking = upto(1);
	kiln_compr_finish_cfg(&z->cfg, z->blksz);
	z->isize = pick_isize(z->blksz);
	z->icount = upto(2) ? 0 : (uint16_t)(1 + upto(20));
	z->base = EROFS_INODE_COMPACT_SIZE + erofs_xattr_ibody_size(z->icount);
	z->ipos = 4096 + 32 * upto(255);
	z->fmt = kiln_zfmt(&z->cfg, z->bits, z->base);
	z->tailpos = z->ipos + round_up(z->base, 8) +
		     kiln_zmap_size(z->isize, &z->fmt);
}

/* A compact inode: the index's alignment comes from the xattr slots. */
static void put_inode(const struct zcase *z, uint8_t *p, uint32_t blocks)
{
	struct erofs_inode_compact i = {
		.i_format = (z->cfg.full_index ? EROFS_INODE_COMPRESSED_FULL :
			     EROFS_INODE_COMPRESSED_COMPACT) << 1,
		.i_xattr_icount = z->icount, .i_mode = S_IFREG | 0644,
		.i_nlink = 1, .i_size = (uint32_t)z->isize, .i_u = blocks,
	};

	erofs_inode_compact_encode(p, &i);
}

/* Superblock and compression records, as the writer makes them. */
static void put_super(const struct zcase *z, uint8_t *img)
{
	struct kiln_mkfs_opts o = { .compress = true, .nr_zcfgs = 1,
				    .compr = z->cfg, .blkszbits = z->bits };
	bool cfgs = kiln_compr_needs_cfgs(&o);
	struct erofs_super_block sb = {
		.magic = EROFS_SUPER_MAGIC, .blkszbits = (uint8_t)z->bits,
		.feature_incompat = EROFS_FEATURE_INCOMPAT_ZERO_PADDING |
			(cfgs ? EROFS_FEATURE_INCOMPAT_COMPR_CFGS : 0) |
			(z->cfg.tailpacking ?
			 EROFS_FEATURE_INCOMPAT_ZTAILPACKING : 0),
		.u1 = cfgs ? (uint16_t)(1u << z->cfg.c->alg) : 0,
	};

	erofs_sb_encode(img + EROFS_SUPER_OFFSET, &sb);
	kiln_compr_cfgs_encode(&o, img + EROFS_SUPER_OFFSET + EROFS_SUPER_SIZE);
}

/* The image in a memfd: metadata written, data blocks a sparse hole. */
static int build_image(struct zcase *z, uint32_t first_blk)
{
	uint32_t end_blk = first_blk;
	uint64_t meta = z->tailpos + z->idata;
	uint8_t *img = calloc(1, meta);
	int fd = memfd_create("zmap", MFD_CLOEXEC);

	for (uint32_t i = 0; i < z->nr; i++)
		end_blk += z->ext[i].nblocks;
	put_super(z, img);
	put_inode(z, img + z->ipos, end_blk - first_blk);
	kiln_zmap_encode(img + z->ipos + round_up(z->base, 8), z->ext, z->nr,
			   z->isize, z->idata, 0, &z->fmt);
	memset(img + z->tailpos, 0x5a, z->idata);
	if (pwrite(fd, img, meta, 0) != (ssize_t)meta ||
	    ftruncate(fd, ((off_t)end_blk + 1) << z->bits)) {
		close(fd);
		fd = -1;
	}
	free(img);
	return fd;
}

/* What the reader must report for encoded extent i. */
static struct kiln_fext expected(const struct zcase *z, uint32_t i)
{
	const struct kiln_extent *e = &z->ext[i];
	uint64_t end = i + 1 < z->nr ? z->ext[i + 1].start : z->isize;

	return (struct kiln_fext){
		.la = e->start, .llen = end - e->start,
		.pa = e->inlined ? z->tailpos : (uint64_t)e->blkaddr << z->bits,
		.plen = e->inlined ? z->idata : (uint32_t)e->nblocks << z->bits,
		.kind = e->plain ? KILN_EXT_PLAIN : KILN_EXT_ZIP,
		.alg = e->plain ? 0 : z->cfg.c->alg,
	};
}

static bool same(const struct kiln_fext *a, const struct kiln_fext *b)
{
	return a->la == b->la && a->llen == b->llen && a->pa == b->pa &&
	       a->plen == b->plen && a->kind == b->kind &&
	       (a->kind != KILN_EXT_ZIP || a->alg == b->alg);
}

static void describe(const struct zcase *z, const char *what)
{
	fprintf(stderr, "  %s: %u-byte blocks, %s index, %u-block pclusters, "
		"%s, size %llu, %u extents, inline %u, inode at %llu + %u\n",
		what, z->blksz, z->cfg.full_index ? "full" : "compact",
		z->cfg.pclustersize / z->blksz, z->cfg.c->name,
		(unsigned long long)z->isize, z->nr, z->idata,
		(unsigned long long)z->ipos, z->base);
}

/*
 * The whole map, window after window: small windows (as few as one
 * extent, or a few bytes of data) make the reader resume mid-index.
 */
static int map_all(const struct kiln_image *img, const struct kiln_rinode *ri,
		   struct kiln_extents *all, struct kiln_diag *d)
{
	struct kiln_fpos pos = { 0 };
	struct kiln_extents l = { 0 };
	size_t max_nr = upto(1) ? KILN_WINDOW_EXTENTS : 1 + upto(6);
	uint64_t max_bytes = upto(3) ? UINT64_MAX : 1 + upto(1u << 20);
	int ret = 0;

	while (!ret && pos.la < ri->size && all->nr <= 2 * (ri->size + 1)) {
		ret = kiln_file_map(img, ri, &pos, &l, max_nr, max_bytes, d);
		for (size_t i = 0; !ret && i < l.nr; i++) {
			struct kiln_fext *e = kiln_extents_add(all, d);

			if (!e || !l.nr)
				ret = -1;
			else
				*e = l.e[i];
		}
		if (!ret && !l.nr)
			ret = -1, kiln_diag_set(d, "empty window");
	}
	free(l.e);
	return ret;
}

static void print_mismatch(uint32_t i, const struct kiln_fext *got,
			   const struct kiln_fext *want)
{
	fprintf(stderr, "  extent %u: got la %llu+%llu pa %llu plen %u kind "
		"%u; want la %llu+%llu pa %llu plen %u kind %u\n", i,
		(unsigned long long)got->la, (unsigned long long)got->llen,
		(unsigned long long)got->pa, got->plen, got->kind,
		(unsigned long long)want->la, (unsigned long long)want->llen,
		(unsigned long long)want->pa, want->plen, want->kind);
}

/* Reads the file's extents back and compares; true if all match. */
static bool decode_matches(struct zcase *z, int fd)
{
	struct kiln_image img;
	struct kiln_rinode ri;
	struct kiln_extents l = { 0 };
	struct kiln_diag d = { "" };
	bool ok = !kiln_image_open_fd(&img, fd, "memfd", &d) &&
		  !kiln_inode_load(&img, z->ipos / 32, &ri, &d) &&
		  !map_all(&img, &ri, &l, &d) && l.nr == z->nr;

	for (uint32_t i = 0; ok && i < z->nr; i++) {
		struct kiln_fext want = expected(z, i);

		if (!same(&l.e[i], &want)) {
			print_mismatch(i, &l.e[i], &want);
			ok = false;
		}
	}
	if (!ok)
		fprintf(stderr, "  reader: %s (%zu extents)\n", d.msg, l.nr);
	if (img.fd >= 0)
		kiln_image_close(&img);
	free(l.e);
	return ok;
}

static bool round_trip(struct zcase *z, uint32_t first_blk)
{
	int fd = build_image(z, first_blk);
	bool ok = fd >= 0 && decode_matches(z, fd);

	if (!ok)
		describe(z, "round trip failed");
	free(z->ext);
	return ok;
}

/* How many cases had each feature: proof the mix reaches them all. */
struct coverage {
	unsigned int full, c2b, c4b, large, big, tail, aligned, chains, n;
};

static void count(struct coverage *c, const struct zcase *z)
{
	c->n++;
	c->full += z->cfg.full_index;
	c->c2b += z->fmt.compact && z->bits == 12;
	c->c4b += z->fmt.compact && z->bits < 12;
	c->large += z->fmt.compact && z->bits > 12;
	c->big += z->fmt.big_pcluster;
	c->tail += z->idata != 0;
	c->aligned += z->isize % z->blksz == 0;
	c->chains += z->isize / z->blksz > 2047;
}

static void random_cases(unsigned int n)
{
	struct coverage c = { 0 };
	unsigned int bad = 0;

	for (unsigned int i = 0; i < n && bad < 5; i++) {
		struct zcase z;
		uint32_t first;

		pick_case(&z);
		first = (uint32_t)(z.tailpos / z.blksz + 8 + upto(1000));
		gen_extents(&z, first);
		count(&c, &z);
		bad += !round_trip(&z, first);
	}
	CHECK(bad == 0);
	printf("  %u files: %u full, %u compact 2B, %u compact 4B only (%u of "
	       "8/16 KiB lclusters), %u big pclusters, %u inline tails, %u "
	       "lcluster-aligned sizes, %u over 2047 lclusters\n", c.n, c.full,
	       c.c2b, c.c4b + c.large, c.large, c.big, c.tail, c.aligned,
	       c.chains);
}

/*
 * Pclusters of 2048 blocks (-b 512 -C 1048576) do not fit the 11-bit block
 * count at all: this test found mkfs accepting them, and mkfs now refuses
 * that -C (tests/integration/mkfs.sh, test_cli). The encoder's inputs stop
 * at 2047 blocks, as random_cases() draws them.
 */
int main(void)
{
	rng_state = 1234;
	random_cases(3000);
	return check_report("test_zmap");
}

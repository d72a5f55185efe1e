/* SPDX-License-Identifier: MIT */
/*
 * Merging layers: the tree overlayfs would show of EROFS images stacked
 * in order (the last on top), as containerd's erofs snapshotter asks of
 * `mkfs.erofs MERGED LAYER...`. The image holds metadata only: each
 * file's data stays in its layer, device k of the device table (the k-th
 * image named), through chunk indexes (devchunks.c). Layers are read from
 * the top down, as erofs-utils does: a name an upper layer has hides the
 * lower ones', but for directories, which merge unless the upper one is
 * opaque; a whiteout hides what is below it. With --clean=data the data
 * is copied instead (layerdata.h): the image stands alone, any layer
 * layout will do, and the data is written as -z and -E say.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "common/util.h"
#include "format/erofs_fs.h"
#include "format/ondisk.h"
#include "read/reader.h"
#include "layerdata.h"
#include "tarscan.h"
#include "tree.h"
#include "xattr.h"

#define OVL_OPAQUE "trusted.overlay.opaque"

/* One layer being read: its image, and its inodes seen (hard links). */
struct layer {
	struct tarscan *ts;
	struct kiln_image *img;
	struct kiln_dctx *x;
	const char *name;
	unsigned int index;		/* 0: the bottom layer */
	struct kiln_layerdata *ld;	/* --clean=data: data read from here */
	uint16_t device;		/* the merged image's for the layer's
					   data: itself, or its device 1 */
	struct kiln_diag d;
	struct { uint64_t nid; struct kiln_inode *in; } *seen;
	size_t cap, used;
};

/* The slot of nid in the seen table (open addressing). */
static size_t seen_slot(const struct layer *ly, uint64_t nid)
{
	size_t i = (size_t)((nid * 0x9e3779b97f4a7c15ull) >> 20) & (ly->cap - 1);

	while (ly->seen[i].in && ly->seen[i].nid != nid)
		i = (i + 1) & (ly->cap - 1);
	return i;
}

static void seen_add(struct layer *ly, uint64_t nid, struct kiln_inode *in)
{
	size_t i;

	if (ly->used * 2 >= ly->cap) {
		__typeof__(ly->seen) old = ly->seen;
		size_t oldcap = ly->cap;

		ly->cap = oldcap ? oldcap * 2 : 256;
		ly->seen = xcalloc(ly->cap, sizeof(*ly->seen));
		for (size_t k = 0; k < oldcap; k++)
			if (old[k].in)
				ly->seen[seen_slot(ly, old[k].nid)] = old[k];
		free(old);
	}
	i = seen_slot(ly, nid);
	ly->seen[i].nid = nid;
	ly->seen[i].in = in;
	ly->used++;
}

static int layer_err(struct layer *ly, const char *path, const char *what)
{
	kiln_err("%s: %s: %s", ly->name, *path ? path : "/", what);
	return -1;
}

static int add_xattr(void *arg, const char *name, const void *value,
		     size_t len)
{
	struct kiln_inode *in = arg;

	if (!strcmp(name, OVL_OPAQUE) && len == 1 && *(const char *)value == 'y')
		in->opaque = true;
	return kiln_xattr_add(in, in->srcpath, name, value, len);
}

/*
 * The merged image's device for an extent of the layer: the layer, or
 * for a layer with devices of its own (a --tar=i index, a merged image),
 * the one of those it is on. A file's runs are on one device, and such a
 * layer's data is on its devices only (--tar=i and merges put it there).
 */
static int device_of(struct layer *ly, const struct kiln_inode *in,
		     struct kiln_devmap *m, const struct kiln_fext *e)
{
	uint64_t id = e->pa >> KILN_DEV_SHIFT;
	uint16_t dev = (uint16_t)(ly->device + (id ? id - 1 : 0));

	if (!ly->img->nr_devs != !id)
		return layer_err(ly, in->srcpath, "data in the layer's own "
				 "blocks, but the layer has devices");
	if (m->nr && m->device != dev)
		return layer_err(ly, in->srcpath, "data on two devices");
	m->device = dev;
	return 0;
}

/* Where a regular file's bytes are in its layer: runs, holes left out. */
static int data_runs(struct layer *ly, const struct kiln_rinode *ri,
		     struct kiln_inode *in)
{
	struct kiln_extents l = { 0 };
	struct kiln_fpos pos = { 0 };
	struct kiln_devmap *m = xcalloc(1, sizeof(*m));
	uint32_t cap = 0;

	in->devmap = m;
	m->device = ly->device;
	if (ri->layout != EROFS_INODE_FLAT_PLAIN &&
	    ri->layout != EROFS_INODE_CHUNK_BASED &&
	    (ri->layout != EROFS_INODE_FLAT_INLINE || ri->size % ly->img->blksz))
		return layer_err(ly, in->srcpath, "data compressed or inline: "
				 "a merged image points at a layer's blocks "
				 "(make layers with -E noinline_data, "
				 "uncompressed)");
	while (pos.la < ri->size) {
		if (kiln_file_map(ly->img, ri, &pos, &l, KILN_WINDOW_EXTENTS,
				  UINT64_MAX, &ly->d)) {
			free(l.e);
			return layer_err(ly, in->srcpath, ly->d.msg);
		}
		for (size_t i = 0; i < l.nr; i++) {
			const struct kiln_fext *e = &l.e[i];
			struct kiln_devrun *r = m->nr ? &m->run[m->nr - 1] : NULL;

			if (e->kind == KILN_EXT_HOLE)
				continue;
			if (device_of(ly, in, m, e)) {
				free(l.e);
				return -1;
			}
			if (r && r->off + r->len == e->la &&
			    r->devoff + r->len == KILN_DEV_OFFSET(e->pa)) {
				r->len += e->llen;
				continue;
			}
			if (m->nr == cap) {
				cap = cap ? cap * 2 : 4;
				m = in->devmap = xrealloc(m, sizeof(*m) +
						cap * sizeof(m->run[0]));
			}
			m->run[m->nr++] = (struct kiln_devrun){
				.off = e->la, .len = e->llen,
				.devoff = KILN_DEV_OFFSET(e->pa) };
		}
	}
	free(l.e);
	return 0;
}

/* A new inode in the merged tree, of the layer's inode ri at path. */
static struct kiln_inode *layer_inode(struct layer *ly,
				      const struct kiln_rinode *ri,
				      const char *path)
{
	struct kiln_inode *in = tar_inode_new(ly->ts, path, ri->mode, ri->uid,
					      ri->gid, ri->mtime,
					      ri->mtime_nsec);
	uint8_t *buf = NULL;

	if (!in)
		return NULL;
	if (ly->ts->o->xattr_tolerance >= 0 &&
	    kiln_xattr_each(ly->img, ri, add_xattr, in, &ly->d))
		return layer_err(ly, path, ly->d.msg), NULL;
	if (S_ISCHR(ri->mode) || S_ISBLK(ri->mode))
		in->rdev = ri->iu;
	if (S_ISLNK(ri->mode)) {
		if (kiln_read_all(ly->img, ri, ly->x, 4095, &buf, &ly->d))
			return layer_err(ly, path, ly->d.msg), NULL;
		in->symlink = xmalloc(ri->size + 1);
		memcpy(in->symlink, buf, ri->size);
		in->symlink[ri->size] = '\0';
		in->size = ri->size;
		free(buf);
	}
	if (S_ISREG(ri->mode) && ri->size) {
		in->size = ri->size;
		if (ly->ld) {
			in->lfile = xmalloc(sizeof(*in->lfile));
			*in->lfile = (struct kiln_layerfile){ .ld = ly->ld,
				.img = ly->img, .layer = ly->index, .ri = *ri };
		} else if (data_runs(ly, ri, in)) {
			return NULL;
		}
	}
	return in;
}

static int walk_dir(struct layer *ly, const struct kiln_rinode *dri,
		    struct kiln_inode *mdir, const char *dpath);

struct dir_walk {
	struct layer *ly;
	struct kiln_inode *mdir;	/* the merged directory */
	const char *dpath;
};

/* A name the merged tree has already, from a layer above. */
static int under(struct layer *ly, struct kiln_inode *upper, uint64_t nid,
		 const char *path)
{
	struct kiln_rinode ri;

	if (!S_ISDIR(upper->mode) || upper->opaque)
		return 0;		/* hidden */
	if (kiln_inode_load(ly->img, nid, &ri, &ly->d))
		return layer_err(ly, path, ly->d.msg);
	if (S_ISCHR(ri.mode) && !ri.iu)
		upper->opaque = true;	/* below, this name was whited out */
	return S_ISDIR(ri.mode) ? walk_dir(ly, &ri, upper, path) : 0;
}

/* "DIR/NAME", or "NAME" in the root (""). */
static char *join(const char *dir, const char *name, size_t len)
{
	size_t dl = strlen(dir);
	char *p = xmalloc(dl + len + 2);

	memcpy(p, dir, dl);
	if (dl)
		p[dl++] = '/';
	memcpy(p + dl, name, len);
	p[dl + len] = '\0';
	return p;
}

static int dir_entry(void *arg, const char *name, size_t len, uint64_t nid,
		     uint8_t ftype)
{
	struct dir_walk *w = arg;
	struct layer *ly = w->ly;
	struct tar_node *n = tar_node_find(ly->ts, w->mdir, name, len);
	char *path = join(w->dpath, name, len);
	struct kiln_rinode ri;
	struct kiln_inode *in;
	size_t slot;
	int ret = -1;

	(void)ftype;
	if ((len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.')) {
		ret = 0;
	} else if (n->dir) {
		ret = under(ly, tar_node_dentry(n)->inode, nid, path);
	} else if (kiln_inode_load(ly->img, nid, &ri, &ly->d)) {
		layer_err(ly, path, ly->d.msg);
	} else if (!S_ISDIR(ri.mode) && ly->cap &&
		   ly->seen[slot = seen_slot(ly, nid)].in) {
		in = ly->seen[slot].in;		/* a hard link */
		in->nlink++;
		ret = tar_place(ly->ts, w->mdir, name, len, in, path);
	} else if ((in = layer_inode(ly, &ri, path))) {
		if (!S_ISDIR(ri.mode))
			seen_add(ly, nid, in);
		if (S_ISCHR(in->mode) && !in->rdev)
			w->mdir->whiteouts = true;
		ret = tar_place(ly->ts, w->mdir, name, len, in, path);
		if (!ret && S_ISDIR(ri.mode))
			ret = walk_dir(ly, &ri, in, path);
	}
	free(path);
	return ret;
}

static int walk_dir(struct layer *ly, const struct kiln_rinode *dri,
		    struct kiln_inode *mdir, const char *dpath)
{
	struct dir_walk w = { ly, mdir, dpath };
	uint8_t *data = NULL;
	int ret;

	if (kiln_read_all(ly->img, dri, ly->x, KILN_MAX_DIR_SIZE, &data,
			  &ly->d))
		return layer_err(ly, dpath, ly->d.msg);
	ret = kiln_dir_each(ly->img, dri, data, dir_entry, &w, &ly->d);
	if (ret < 0 && ly->d.msg[0])
		layer_err(ly, dpath, ly->d.msg);
	free(data);
	return ret ? -1 : 0;
}

/* The merged root takes the top layer's root's metadata and xattrs. */
static int top_root(struct layer *ly, const struct kiln_rinode *ri)
{
	struct kiln_inode *r = tar_root(ly->ts, ri->mtime, ri->mtime_nsec);
	struct kiln_inode *in = r ? layer_inode(ly, ri, "") : NULL;

	if (!in)
		return -1;
	tar_dir_update(r, in);
	r->opaque = in->opaque;
	return 0;
}

/* Layer k (1..), read into the tree under what the layers above made. */
static int merge_layer(struct tarscan *ts, unsigned int k,
		       struct kiln_image *img, uint16_t device)
{
	struct layer ly = { .ts = ts, .name = ts->o->layers[k - 1],
			    .index = k - 1, .ld = ts->tree->layerdata,
			    .img = img, .device = device };
	struct kiln_rinode root;
	int ret = -1;

	ly.x = kiln_dctx_new(ly.img);
	if (!ly.ld)		/* data is pointed at, never read */
		kiln_devices_map_only(ly.img);
	if (!ly.ld && ly.img->blkszbits != ts->o->blkszbits)
		layer_err(&ly, "", "block size differs from the first layer's");
	else if (kiln_inode_load(ly.img, ly.img->sb.root_nid, &root, &ly.d))
		layer_err(&ly, "", ly.d.msg);
	else if (!ts->tree->root && top_root(&ly, &root))
		;
	else
		ret = walk_dir(&ly, &root, ts->tree->root, "");
	kiln_dctx_free(ly.x);
	free(ly.seen);
	return ret;
}

/*
 * --clean=data reads a layer's devices where they are appended to it (a
 * tar index and its tar, a merge and its layers): said at once, not as a
 * read of the first file that is not there.
 */
static int check_appended(const struct kiln_image *img, const char *name)
{
	for (uint32_t i = 0; i < img->nr_devs; i++) {
		const struct kiln_rdevice *dev = &img->devs[i];

		if (((uint64_t)dev->mapped_blkaddr + dev->blocks) <<
		    img->blkszbits > img->size)
			return kiln_err("%s: device %u is not appended to it "
					"(cat LAYER DEVICE... > FILE): "
					"--clean=data copies its data", name,
					i + 1), -1;
	}
	return 0;
}

static void add_device(struct kiln_tree *tree, uint64_t blocks,
		       const uint8_t tag[64])
{
	tree->devices = xrealloc(tree->devices, (tree->nr_devices + 1u) *
				 sizeof(*tree->devices));
	tree->devices[tree->nr_devices].blocks = blocks;
	memcpy(tree->devices[tree->nr_devices++].tag, tag, 64);
}

/*
 * The merged image's devices, in the order the layers are named: a layer
 * that holds its own data is one device, tagged with its uuid in hex; a
 * layer whose data is on devices of its own (a --tar=i index and its
 * tar, a merged image and its layers) brings those, with their tags, so
 * a merge of merges still points straight at the data. Returns layer
 * img's first device.
 */
static int plan_devices(struct kiln_tree *tree, const struct kiln_image *img,
			const char *name)
{
	uint8_t tag[64];
	int first = tree->nr_devices + 1;

	if (tree->nr_devices + (img->nr_devs ? img->nr_devs : 1) >
	    UINT16_MAX - 1)
		return kiln_err("%s: more than 65534 devices in all", name), -1;
	for (uint32_t i = 0; i < img->nr_devs; i++)
		add_device(tree, img->devs[i].blocks, img->devs[i].tag);
	if (!img->nr_devs) {
		erofs_uuid_tag(tag, img->sb.uuid);
		add_device(tree, img->sb.blocks, tag);
	}
	return first;
}

int kiln_layers_scan(const struct kiln_mkfs_opts *o, struct kiln_tree *tree)
{
	struct tarscan ts = { .o = o, .tree = tree, .tar_fd = -1,
			      .name = "layers" };
	struct kiln_image *img = xcalloc(o->nr_layers, sizeof(*img));
	int *first = xcalloc(o->nr_layers, sizeof(*first));
	unsigned int opened = 0;
	struct kiln_diag d;
	int ret = 0;

	memset(tree, 0, sizeof(*tree));
	ts.cap = 1024;
	ts.nodes = xcalloc(ts.cap, sizeof(*ts.nodes));
	/* each layer opened once: its devices first, in order, then its tree
	   from the top layer down */
	for (; opened < o->nr_layers && !ret; opened++) {
		if (kiln_image_open(&img[opened], o->layers[opened], &d)) {
			kiln_err("%s", d.msg);
			ret = -1;
			break;
		}
		if (o->clean_data) {	/* no devices: the data comes along */
			ret = check_appended(&img[opened], o->layers[opened]);
			continue;
		}
		first[opened] = plan_devices(tree, &img[opened],
					     o->layers[opened]);
		ret = first[opened] < 0 ? -1 : 0;
	}
	/* the tree owns the layers from here: kiln_tree_free closes them */
	if (o->clean_data)
		tree->layerdata = kiln_layerdata_new(img, o->layers, opened);
	for (unsigned int k = o->nr_layers; k && !ret; k--)
		ret = merge_layer(&ts, k, &img[k - 1], (uint16_t)first[k - 1]);
	for (unsigned int k = 0; !o->clean_data && k < opened; k++)
		kiln_image_close(&img[k]);
	tar_finish(&ts);
	free(ts.nodes);
	free(ts.dirs);
	free(first);
	if (!o->clean_data)
		free(img);
	return ret;
}

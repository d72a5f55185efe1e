/* SPDX-License-Identifier: MIT */
/*
 * kiln_mkfs(): scan, lay out, write. The image is written under a temporary
 * name next to the target, synced and renamed into place only when complete,
 * so a failure never leaves something that looks like an image.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kiln.h"
#include "layout.h"
#include "tree.h"
#include "common/util.h"
#include "writer.h"
#include "xattr.h"

void kiln_mkfs_opts_init(struct kiln_mkfs_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->blkszbits = 12;
	o->force_uid = -1;
	o->force_gid = -1;
	o->verbosity = 1;
	o->workers = 1;
}

static int sync_parent(const char *path)
{
	char *copy = xstrdup(path);
	int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ret = fd < 0 ? -1 : fsync(fd);

	if (fd >= 0)
		close(fd);
	free(copy);
	return ret;
}

static int create_temp(const char *image, char **tmp)
{
	mode_t mask = umask(0);
	int fd;

	umask(mask);
	*tmp = xmalloc(strlen(image) + 16);
	strcpy(*tmp, image);
	strcat(*tmp, ".tmp.XXXXXX");
	fd = mkstemp(*tmp);
	if (fd < 0) {
		kiln_err("%s: %s", image, strerror(errno));
		free(*tmp);
		*tmp = NULL;
		return -1;
	}
	fchmod(fd, 0644 & ~mask);
	return fd;
}

static int build(const struct kiln_mkfs_opts *o, int fd)
{
	struct kiln_tree tree;
	struct kiln_xattr_pool pool = { 0 };
	struct kiln_layout l = { 0 };
	int ret = kiln_tree_scan(o, &tree);

	if (!ret)
		ret = kiln_xattrs_share(&tree, &pool);
	if (!ret)
		ret = kiln_layout(&tree, &pool, o->blkszbits,
				  o->compress ? &o->compr : NULL, &l);
	if (!ret)
		ret = kiln_write_image(fd, o->image, &tree, &pool, &l, o);
	if (!ret)
		kiln_info(1, "%s: %u inodes, %llu metadata blocks of %u bytes",
			  o->image, l.nr, (unsigned long long)l.meta_blocks,
			  l.blksz);
	kiln_layout_free(&l);
	kiln_xattrs_free(&tree, &pool);
	kiln_tree_free(&tree);
	return ret;
}

int kiln_mkfs(const struct kiln_mkfs_opts *o)
{
	char *tmp;
	int fd = create_temp(o->image, &tmp);
	int ret;

	if (fd < 0)
		return -1;
	ret = build(o, fd);
	if (close(fd) && !ret) {
		kiln_err("%s: %s", o->image, strerror(errno));
		ret = -1;
	}
	if (!ret && rename(tmp, o->image)) {
		kiln_err("%s: %s", o->image, strerror(errno));
		ret = -1;
	}
	if (ret)
		unlink(tmp);
	else
		sync_parent(o->image);
	free(tmp);
	return ret;
}

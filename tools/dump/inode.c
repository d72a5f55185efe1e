/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "common/util.h"
#include "dump.h"

static void print_header(const struct dump *dp, const struct kiln_rinode *ri,
			 const char *path)
{
	uint64_t ondisk = dump_ondisk_size(dp, ri);
	char when[64] = "", perms[10];
	time_t t = (time_t)ri->mtime;
	struct tm tm;

	if (localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	else
		snprintf(when, sizeof(when), "%" PRId64, ri->mtime);
	for (int i = 0; i < 9; i++)
		perms[i] = ri->mode & (0400u >> i) ? "rwxrwxrwx"[i] : '-';
	perms[9] = 0;
	printf("Path : %s\n", path);
	printf("Size: %" PRIu64 "  On-disk size: %" PRIu64 "  %s\n", ri->size,
	       ondisk, dump_type_name[erofs_ftype(ri->mode)]);
	printf("NID: %" PRIu64 "   Links: %u   Layout: %u   "
	       "Compression ratio: %.2f%%\n", ri->nid, ri->nlink, ri->layout,
	       ri->size ? 100.0 * (double)ondisk / (double)ri->size : 0.0);
	printf("Inode size: %u   Xattr size: %u\n",
	       ri->extended ? EROFS_INODE_EXTENDED_SIZE :
			      EROFS_INODE_COMPACT_SIZE, ri->xattr_size);
	printf("Uid: %u   Gid: %u  Access: %04o/%s\n", ri->uid, ri->gid,
	       ri->mode & 0777, perms);
	printf("Timestamp: %s.%09u\n", when, ri->mtime_nsec);
}

/* --ls lists every entry, "." and ".." included, as erofs-utils does. */
static int ls_entry(void *arg, const char *name, size_t len, uint64_t nid,
		    uint8_t ftype)
{
	(void)arg;
	printf("%10" PRIu64 "    %u  %.*s\n", nid, ftype, (int)len, name);
	return 0;
}

static int list_dir(struct dump *dp, const struct kiln_rinode *ri)
{
	printf("\n       NID TYPE  FILENAME\n");
	return dump_dir_raw(dp, ri, ls_entry, NULL);
}

static void print_extent(unsigned int n, const struct kiln_fext *e)
{
	/* a fragment is in the packed inode: no place of its own (0..0);
	 * a chunk on a device given by --device: its offset there */
	uint64_t pa = e->kind == KILN_EXT_FRAG ? 0 : KILN_DEV_OFFSET(e->pa);

	printf("%4u: %8" PRIu64 "..%8" PRIu64 " | %7" PRIu64 " : %10" PRIu64
	       "..%10" PRIu64 " | %7u", n, e->la, e->la + e->llen, e->llen,
	       pa, pa + e->plen, e->plen);
	/* as erofs-utils marks an extent read from a device of its own */
	if (e->kind != KILN_EXT_FRAG && e->pa >> KILN_DEV_SHIFT)
		printf("  # device %u", (unsigned int)(e->pa >> KILN_DEV_SHIFT));
	printf("\n");
}

/*
 * The reader cuts raw runs into 1 MiB pieces; they are shown joined, one
 * line per run, as the image stores them.
 */
static int list_extents(struct dump *dp, const struct kiln_rinode *ri,
			const char *path)
{
	struct kiln_extents l = { 0 };
	struct kiln_fpos pos = { 0 };
	struct kiln_fext run = { 0 };
	unsigned int n = 0;
	bool have = false;

	printf("\n Ext:   logical offset   |  length :     physical offset    "
	       "|  length\n");
	while (pos.la < ri->size) {
		if (kiln_file_map(&dp->img, ri, &pos, &l, KILN_WINDOW_EXTENTS,
				  UINT64_MAX, &dp->d)) {
			free(l.e);
			return -1;
		}
		for (size_t i = 0; i < l.nr; i++) {
			const struct kiln_fext *e = &l.e[i];

			/* raw runs and fragments come in pieces: join them */
			if (have && (e->kind == KILN_EXT_RAW ||
				     e->kind == KILN_EXT_FRAG) &&
			    run.kind == e->kind &&
			    e->la == run.la + run.llen &&
			    e->pa == run.pa + (e->kind == KILN_EXT_FRAG ?
					       run.llen : run.plen)) {
				run.llen += e->llen;
				run.plen += e->plen;
				continue;
			}
			if (have)
				print_extent(n++, &run);
			run = *e;
			have = true;
		}
	}
	if (have)
		print_extent(n++, &run);
	printf("%s: %u extents found\n", path, n);
	free(l.e);
	return 0;
}

int dump_inode(struct dump *dp, uint64_t nid, const char *known, bool ls,
	       bool extents)
{
	struct kiln_rinode ri;
	char *path;
	int ret = 0;

	if (kiln_inode_load(&dp->img, nid, &ri, &dp->d))
		return -1;
	/* a search of the whole tree, only when --nid leaves no choice */
	path = known ? xstrdup(known) : dump_path_of(dp, nid);
	print_header(dp, &ri, path ? path : "(not found)");
	if (ls)
		ret = list_dir(dp, &ri);
	if (!ret && extents)
		ret = list_extents(dp, &ri, path ? path : "(not found)");
	free(path);
	return ret;
}

static int put(struct dump *dp, const void *p, size_t n)
{
	if (fwrite(p, 1, n, stdout) == n)
		return 0;
	kiln_diag_set(&dp->d, "cannot write the output");
	return -1;
}

static int write_zeros(struct dump *dp, uint64_t n)
{
	static const uint8_t zero[65536];

	for (; n; n -= n < sizeof(zero) ? n : sizeof(zero))
		if (put(dp, zero, n < sizeof(zero) ? (size_t)n : sizeof(zero)))
			return -1;
	return 0;
}

int dump_cat(struct dump *dp, uint64_t nid)
{
	struct kiln_extents l = { 0 };
	struct kiln_fpos pos = { 0 };
	struct kiln_rinode ri;
	uint8_t *buf = NULL;
	size_t cap = 0;
	int ret = 0;

	if (kiln_inode_load(&dp->img, nid, &ri, &dp->d))
		return -1;
	if (!S_ISREG(ri.mode) && !S_ISLNK(ri.mode)) {
		kiln_diag_set(&dp->d, "nid %" PRIu64 " is not a regular file",
			      nid);
		return -1;
	}
	while (!ret && pos.la < ri.size) {
		ret = kiln_file_map(&dp->img, &ri, &pos, &l,
				    KILN_WINDOW_EXTENTS, 16u << 20, &dp->d);
		for (size_t i = 0; i < l.nr && !ret; i++) {
			const struct kiln_fext *e = &l.e[i];

			if (e->kind == KILN_EXT_HOLE) {	/* of any size */
				ret = write_zeros(dp, e->llen);
				continue;
			}
			if (cap < e->llen) {	/* at most 12 MiB (reader.h) */
				free(buf);
				cap = e->llen;
				buf = xmalloc(cap);
			}
			if (kiln_fext_read(&dp->img, dp->x, e, buf, &dp->d))
				ret = -1;
			else
				ret = put(dp, buf, e->llen);
		}
	}
	free(buf);
	free(l.e);
	return ret;
}

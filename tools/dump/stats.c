/* SPDX-License-Identifier: MIT */
/*
 * -S: counts by type, sizes, and two histograms, over every name in the
 * tree (a file with two hard links counts twice, as erofs-utils counts).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "dump.h"

#define SIZE_ROWS 17		/* [0,1) KiB, [1,2), [2,4) ... [32 MiB, inf) */
#define MAX_DEPTH 2048		/* PATH_MAX allows no deeper tree */

static const char *const exts[] = {
	".txt", ".so", ".xml", ".apk", ".odex", ".vdex", ".oat", ".rc", ".otf",
};
#define NR_EXTS (sizeof(exts) / sizeof(exts[0]))

struct stats {
	uint64_t files, by_type[8], compressed, uncompressed;
	uint64_t orig_bytes, disk_bytes;
	uint64_t orig_size[SIZE_ROWS], disk_size[SIZE_ROWS];
	uint64_t by_ext[NR_EXTS + 1];	/* the last: others */
	struct dump_seen seen;		/* directories walked */
	unsigned int depth;
	uint64_t damaged;		/* entries that could not be read */
	char first[300];		/* the first of them, said */
};

static unsigned int size_row(uint64_t bytes)
{
	unsigned int row = 0;

	for (bytes >>= 10; bytes && row < SIZE_ROWS - 1; bytes >>= 1)
		row++;
	return row;
}

static unsigned int ext_row(const char *name)
{
	const char *dot = strrchr(name, '.');

	for (unsigned int i = 0; dot && i < NR_EXTS; i++)
		if (!strcmp(dot, exts[i]))
			return i;
	return NR_EXTS;
}

static void count(struct dump *dp, struct stats *s,
		  const struct kiln_rinode *ri, const char *name)
{
	uint64_t disk = dump_ondisk_size(dp, ri);

	s->files++;
	s->by_type[erofs_ftype(ri->mode)]++;
	if (ri->layout == EROFS_INODE_COMPRESSED_FULL ||
	    ri->layout == EROFS_INODE_COMPRESSED_COMPACT)
		s->compressed++;
	else
		s->uncompressed++;
	if (!S_ISREG(ri->mode))
		return;
	s->orig_bytes += ri->size;
	s->disk_bytes += disk;
	s->orig_size[size_row(ri->size)]++;
	s->disk_size[size_row(disk)]++;
	s->by_ext[ext_row(name)]++;
}

static int visit(struct dump *dp, void *arg, const char *name, uint64_t nid,
		 uint8_t ftype)
{
	struct stats *s = arg;
	struct kiln_rinode ri;

	(void)ftype;
	if (kiln_inode_load(&dp->img, nid, &ri, &dp->d))
		goto bad;
	count(dp, s, &ri, name);
	if (!S_ISDIR(ri.mode) || !dump_seen_add(&s->seen, nid))
		return 0;
	if (s->depth == MAX_DEPTH) {
		kiln_diag_set(&dp->d, "directories nested over %u deep",
			      MAX_DEPTH);
		goto bad;
	}
	s->depth++;
	dump_dir_each(dp, &ri, visit, s);	/* fails: said below */
	s->depth--;
	if (!dp->d.msg[0])
		return 0;
bad:
	if (!s->damaged++)
		snprintf(s->first, sizeof(s->first), "%s: %s", name, dp->d.msg);
	dp->d.msg[0] = 0;
	return 0;			/* the rest of the tree still counts */
}

static void bar_row(const char *label, uint64_t n, uint64_t total)
{
	double pct = total ? 100.0 * (double)n / (double)total : 0.0;
	char bar[51];
	int len = (int)(pct / 2);

	memset(bar, '#', (size_t)len);
	bar[len] = 0;
	printf("%-16s\t%-11" PRIu64 " %8.2f%% |%-50s|\n", label, n, pct, bar);
}

static void size_chart(const char *title, const uint64_t *rows,
		       uint64_t total)
{
	char label[32];

	printf("\n%s file size distribution:\n", title);
	printf("%-16s %11s %16s |%-50s|\n", ">=(KB) .. <(KB) ", "count",
	       "ratio", "distribution");
	for (unsigned int i = 0; i < SIZE_ROWS; i++) {
		unsigned int lo = i ? 1u << (i - 1) : 0;

		if (i == SIZE_ROWS - 1)
			snprintf(label, sizeof(label), "%6u ..", lo);
		else
			snprintf(label, sizeof(label), "%6u .. %-6u", lo,
				 1u << i);
		bar_row(label, rows[i], total);
	}
}

static void report(const struct stats *s)
{
	uint64_t regular = s->by_type[EROFS_FT_REG_FILE];
	char label[32];

	printf("Filesystem total file count:\t\t%" PRIu64 "\n", s->files);
	for (unsigned int t = 0; t < 8; t++)
		printf("Filesystem %s count:\t\t%" PRIu64 "\n", dump_type_name[t],
		       s->by_type[t]);
	printf("Filesystem compressed files:            %" PRIu64 "\n",
	       s->compressed);
	printf("Filesystem uncompressed files:          %" PRIu64 "\n",
	       s->uncompressed);
	printf("Filesystem total original file size:    %" PRIu64 " Bytes\n",
	       s->orig_bytes);
	printf("Filesystem total file size:             %" PRIu64 " Bytes\n",
	       s->disk_bytes);
	printf("Filesystem compress rate:               %.2f%%\n",
	       s->orig_bytes ? 100.0 * (double)s->disk_bytes /
			       (double)s->orig_bytes : 0.0);
	size_chart("Original", s->orig_size, regular);
	size_chart("On-disk", s->disk_size, regular);
	printf("\nFile type distribution:\n");
	printf("%-16s %11s %16s |%-50s|\n", "type", "count", "ratio",
	       "distribution");
	for (unsigned int i = 0; i <= NR_EXTS; i++) {
		snprintf(label, sizeof(label), "%-17s",
			 i < NR_EXTS ? exts[i] : "others");
		bar_row(label, s->by_ext[i], regular);
	}
}

int dump_stats(struct dump *dp)
{
	struct stats s = { 0 };

	dp->d.msg[0] = 0;
	visit(dp, &s, "/", dp->img.sb.root_nid, EROFS_FT_DIR);
	if (dp->img.packed) {
		/* fragments are the files' data: erofs-utils counts it so */
		const struct kiln_rinode *p = dp->img.packed;

		s.disk_bytes += dump_ondisk_size(dp, p);
		if (p->layout == EROFS_INODE_COMPRESSED_FULL ||
		    p->layout == EROFS_INODE_COMPRESSED_COMPACT)
			s.compressed++;
	}
	report(&s);
	dump_seen_free(&s.seen);
	if (!s.damaged)
		return 0;
	kiln_diag_set(&dp->d, "%" PRIu64 " entries could not be read "
		      "(the counts leave them out); the first: %s", s.damaged,
		      s.first);
	return -1;
}

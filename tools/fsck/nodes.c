/* SPDX-License-Identifier: MIT */
/*
 * The walk's table of inodes, by nid: how many entries name each one, what
 * its inode says, and where it was found, for link counts and loops once
 * every directory has been read. An open-addressing hash table.
 */
#include <stdlib.h>
#include <string.h>
#include "fsck.h"
#include "common/util.h"

/* The node for nid, added if new; call with the lock held. */
struct fsck_node *fsck_node(struct fsck *f, uint64_t nid)
{
	size_t i;

	if (2 * (f->nodes_nr + 1) > f->nodes_cap) {
		struct fsck_node *old = f->nodes;
		size_t oldcap = f->nodes_cap;

		f->nodes_cap = oldcap ? 2 * oldcap : 1024;
		f->nodes = xcalloc(f->nodes_cap, sizeof(*f->nodes));
		f->nodes_nr = 0;
		for (i = 0; i < oldcap; i++)
			if (old[i].used)
				*fsck_node(f, old[i].nid) = old[i];
		free(old);
	}
	/* Fibonacci hashing: the high bits of the product are well mixed */
	i = (size_t)((nid * 0x9E3779B97F4A7C15ull) >> 32) & (f->nodes_cap - 1);
	while (f->nodes[i].used && f->nodes[i].nid != nid)
		i = (i + 1) & (f->nodes_cap - 1);
	if (!f->nodes[i].used) {
		f->nodes[i] = (struct fsck_node){ .nid = nid, .used = true };
		f->nodes_nr++;
	}
	return &f->nodes[i];
}

static const char *name_of(const struct fsck_node *n)
{
	if (!n->path)
		return "?";
	return n->alt && strcmp(n->alt, n->path) < 0 ? n->alt : n->path;
}

/*
 * Link counts, once every entry has been seen. A directory's nlink of 1
 * means "not counted", as some filesystems and tools write it.
 */
void fsck_check_links(struct fsck *f)
{
	for (size_t i = 0; i < f->nodes_cap; i++) {
		struct fsck_node *n = &f->nodes[i];
		uint32_t want;

		if (!n->used || !n->loaded)
			continue;
		if (n->is_dir && n->refs > 1)
			fsck_error(f, name_of(n), "directory nid %llu is "
				   "reached %u times (a loop or a hard-linked "
				   "directory)", (unsigned long long)n->nid,
				   n->refs);
		want = n->is_dir ? n->subdirs + 2 : n->refs;
		if (n->nlink != want && !(n->is_dir && n->nlink == 1))
			fsck_error(f, name_of(n), "nid %llu: link "
				   "count %u, but %u found",
				   (unsigned long long)n->nid, n->nlink, want);
	}
}

/*
 * The node table sized once for the inode count the superblock gives:
 * growing it by doubling rehashed every node several times and touched
 * twice the memory. The count is only a hint (an image may lie): it is
 * bounded by the most inodes the image could hold, and the table still
 * grows if the walk finds more.
 */
void fsck_size_nodes(struct fsck *f)
{
	uint64_t want = f->img.sb.inos, most = f->img.size / EROFS_INODE_COMPACT_SIZE;
	size_t cap = 1024;

	if (want > most)
		want = most;
	while (cap < (1u << 20) && cap < 2 * want + 2)
		cap *= 2;
	f->nodes_cap = cap;
	f->nodes = xcalloc(cap, sizeof(*f->nodes));
}

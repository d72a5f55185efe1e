/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "common/lines.h"
#include "common/util.h"
#include "fsconfig.h"
#include "kiln.h"
#include "format/le.h"
#include "xattr.h"

static uint64_t hash(const char *s, size_t n)
{
	return kiln_hash64(s, n, 0x9e3779b97f4a7c15ull);
}

/* Later entries of a path replace earlier ones: the last line wins. */
static void index_entries(struct kiln_fsconfig *fc)
{
	uint32_t n = 16;

	while (n < 2 * fc->nr)
		n *= 2;
	fc->nr_slots = n;
	fc->slots = xcalloc(n, sizeof(*fc->slots));
	for (uint32_t i = 0; i < fc->nr; i++) {
		const char *p = fc->v[i].path;
		uint64_t k = hash(p, strlen(p)) & (n - 1);

		while (fc->slots[k] && strcmp(fc->v[fc->slots[k] - 1].path, p))
			k = (k + 1) & (n - 1);
		fc->slots[k] = i + 1;
	}
}

static int bad_line(const struct kiln_fsconfig *fc, unsigned int line,
		    const char *why)
{
	kiln_err("%s:%u: %s", fc->file, line, why);
	return -1;
}

static int parse_num(const char *s, int base, uint64_t max, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, base);
	return errno || end == s || *end || *v > max || *s == '-' ? -1 : 0;
}

static int parse_line(struct kiln_fsconfig *fc, char *s, unsigned int line)
{
	struct kiln_fsconfig_entry e = { 0 };
	char *tok[4], *save = NULL, *opt;
	uint64_t v[3];
	bool root = *s == ' ';	/* AOSP's old way to write the root */
	int caps_seen = 0;

	for (int i = root; i < 4; i++)
		if (!(tok[i] = strtok_r(i == root ? s : NULL, " \t", &save)))
			return bad_line(fc, line, "want PATH UID GID MODE");
	if (root)
		tok[0] = "";
	if (parse_num(tok[1], 10, KILN_ID_MAX, &v[0]) ||
	    parse_num(tok[2], 10, KILN_ID_MAX, &v[1]) ||
	    parse_num(tok[3], 8, 07777, &v[2]))
		return bad_line(fc, line, "bad uid, gid or octal mode");
	/* the first capabilities= counts; others (selabel=...) are not ours */
	while ((opt = strtok_r(NULL, " \t", &save))) {
		if (!strchr(opt, '='))
			return bad_line(fc, line, "want KEY=VALUE after MODE");
		if (!strncmp(opt, "capabilities=", 13) && !caps_seen++ &&
		    parse_num(opt + 13, 0, UINT64_MAX, &e.caps))
			return bad_line(fc, line, "bad capabilities=N");
	}
	e.path = xstrdup(tok[0] + (tok[0][0] == '/'));
	e.uid = (uint32_t)v[0];
	e.gid = (uint32_t)v[1];
	e.mode = (uint32_t)v[2];
	fc->v = xrealloc(fc->v, (fc->nr + 1) * sizeof(*fc->v));
	fc->v[fc->nr++] = e;
	return 0;
}

static int one_line(void *ctx, char *buf, size_t len, unsigned int no)
{
	return len && buf[strspn(buf, " \t")] ? parse_line(ctx, buf, no) : 0;
}

int kiln_fsconfig_load(struct kiln_fsconfig *fc, const char *file,
		       const char *mount_point)
{
	int ret;

	memset(fc, 0, sizeof(*fc));
	fc->file = file;
	fc->mount_point = mount_point;
	ret = kiln_each_line(file, one_line, fc);
	if (!ret)
		index_entries(fc);
	else
		kiln_fsconfig_free(fc);
	return ret;
}

static const struct kiln_fsconfig_entry *
find(const struct kiln_fsconfig *fc, const char *relpath)
{
	const char *mp = fc->mount_point;
	size_t mlen = mp && *relpath ? strlen(mp) : 0;
	size_t rlen = strlen(relpath), n = mlen ? mlen + 1 + rlen : rlen;
	char *key = xmalloc(n + 1);
	uint64_t k;

	if (mlen) {
		memcpy(key, mp, mlen);
		key[mlen] = '/';
	}
	memcpy(key + (mlen ? mlen + 1 : 0), relpath, rlen + 1);
	k = hash(key, n) & (fc->nr_slots - 1);
	while (fc->slots[k] && strcmp(fc->v[fc->slots[k] - 1].path, key))
		k = (k + 1) & (fc->nr_slots - 1);
	free(key);
	return fc->slots[k] ? &fc->v[fc->slots[k] - 1] : NULL;
}

/*
 * relpath: from the source root, no leading '/' ("" the root); dir: it is
 * a directory. -1 if a canned file has no entry for it.
 */
static int lookup(const struct kiln_fsconfig *fc, const char *relpath,
		  bool dir, struct kiln_fsconfig_entry *e)
{
	const struct kiln_fsconfig_entry *found;

	if (fc->builtin) {
		kiln_fsconfig_builtin_lookup(fc, relpath, dir, e);
		return 0;
	}
	found = find(fc, relpath);
	if (!found)
		return -1;
	*e = *found;
	return 0;
}

void kiln_fsconfig_free(struct kiln_fsconfig *fc)
{
	for (uint32_t i = 0; i < fc->nr; i++)
		free(fc->v[i].path);
	for (int d = 0; d < 2; d++) {
		for (uint32_t i = 0; i < fc->nr_rules[d]; i++)
			free(fc->rules[d][i].path);
		free(fc->rules[d]);
		fc->rules[d] = NULL;
		fc->nr_rules[d] = 0;
	}
	free(fc->v);
	free(fc->slots);
	fc->v = NULL;
	fc->slots = NULL;
	fc->nr = 0;
}

int kiln_fsconfig_apply(const struct kiln_fsconfig *fc, const char *relpath,
			uint32_t *mode, uint64_t *uid, uint64_t *gid,
			uint64_t *caps)
{
	struct kiln_fsconfig_entry e;

	if (lookup(fc, relpath, S_ISDIR(*mode), &e)) {
		kiln_err("%s%s%s: not in the fs_config file %s", *relpath &&
			 fc->mount_point ? fc->mount_point : "",
			 *relpath && fc->mount_point ? "/" : "",
			 *relpath ? relpath : "/ (the root)", fc->file);
		return -1;
	}
	*uid = e.uid;
	*gid = e.gid;
	*mode = (*mode & ~07777u) | e.mode;
	*caps = e.caps;
	return 0;
}

/* struct vfs_cap_data: magic_etc, then permitted/inheritable lo and hi. */
#define VFS_CAP_REVISION_2 0x02000000u
#define VFS_CAP_FLAGS_EFFECTIVE 0x000001u

int kiln_fsconfig_caps_xattr(struct kiln_inode *in, uint64_t caps)
{
	uint8_t v[20] = { 0 };

	if (!caps)
		return 0;
	put_le32(v, VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE);
	put_le32(v + 4, (uint32_t)caps);
	put_le32(v + 12, (uint32_t)(caps >> 32));
	kiln_xattr_remove(in, "security.capability");
	return kiln_xattr_add(in, in->srcpath, "security.capability", v,
			      sizeof(v));
}

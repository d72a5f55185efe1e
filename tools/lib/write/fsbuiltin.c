/* SPDX-License-Identifier: MIT */
/*
 * Android's fs_config without a canned file: what libcutils' fs_config()
 * answers when erofs-utils runs with --mount-point and no
 * --fs-config-file, as AOSP's own build does. First the product's rules,
 * the fs_config_files and fs_config_dirs its build generated from the
 * config.fs files, under --product-out (system, vendor, oem, odm, product,
 * system_ext, in that order); then the built-in table.
 *
 * The table is Android 10's (libcutils 29.0.6), the one Debian packages:
 * the tests ask that library for every path. Later releases add a few
 * entries to the table; a product that relies on them gets them from its
 * rules files. Unlike libcutils, Kiln never falls back to the build
 * host's own /system/etc: a host is not the device.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/util.h"
#include "format/le.h"
#include "fsconfig.h"
#include "kiln.h"

/* Android IDs (android_filesystem_config.h) and capability bits. */
enum {
	AID_ROOT = 0, AID_SYSTEM = 1000, AID_DHCP = 1014, AID_MEDIA_RW = 1023,
	AID_SDCARD_R = 1028, AID_LOGD = 1036, AID_SHARED_RELRO = 1037,
	AID_SHELL = 2000, AID_CACHE = 2001, AID_MISC = 9998, AID_APP = 10000,
};
#define CAP(n)	(1ull << (n))
#define CAP_SETGID		6
#define CAP_SETUID		7
#define CAP_BLOCK_SUSPEND	36

struct builtin {
	uint16_t mode, uid, gid;
	uint64_t caps;
	const char *prefix;		/* NULL: the default, last */
};

/* The first matching entry wins: the order is the table's. */
static const struct builtin dirs[] = {
	{ 00770, AID_SYSTEM, AID_CACHE, 0, "cache" },
	{ 00555, AID_ROOT, AID_ROOT, 0, "config" },
	{ 00771, AID_SYSTEM, AID_SYSTEM, 0, "data/app" },
	{ 00771, AID_SYSTEM, AID_SYSTEM, 0, "data/app-private" },
	{ 00771, AID_SYSTEM, AID_SYSTEM, 0, "data/app-ephemeral" },
	{ 00771, AID_ROOT, AID_ROOT, 0, "data/dalvik-cache" },
	{ 00771, AID_SYSTEM, AID_SYSTEM, 0, "data/data" },
	{ 00771, AID_SHELL, AID_SHELL, 0, "data/local/tmp" },
	{ 00771, AID_SHELL, AID_SHELL, 0, "data/local" },
	{ 00770, AID_DHCP, AID_DHCP, 0, "data/misc/dhcp" },
	{ 00771, AID_SHARED_RELRO, AID_SHARED_RELRO, 0, "data/misc/shared_relro" },
	{ 01771, AID_SYSTEM, AID_MISC, 0, "data/misc" },
	{ 00775, AID_MEDIA_RW, AID_MEDIA_RW, 0, "data/media/Music" },
	{ 00775, AID_MEDIA_RW, AID_MEDIA_RW, 0, "data/media" },
	{ 00750, AID_ROOT, AID_SHELL, 0, "data/nativetest" },
	{ 00750, AID_ROOT, AID_SHELL, 0, "data/nativetest64" },
	{ 00750, AID_ROOT, AID_SHELL, 0, "data/benchmarktest" },
	{ 00750, AID_ROOT, AID_SHELL, 0, "data/benchmarktest64" },
	{ 00775, AID_ROOT, AID_ROOT, 0, "data/preloads" },
	{ 00771, AID_SYSTEM, AID_SYSTEM, 0, "data" },
	{ 00755, AID_ROOT, AID_SYSTEM, 0, "mnt" },
	{ 00751, AID_ROOT, AID_SHELL, 0, "product/bin" },
	{ 00777, AID_ROOT, AID_ROOT, 0, "sdcard" },
	{ 00751, AID_ROOT, AID_SDCARD_R, 0, "storage" },
	{ 00751, AID_ROOT, AID_SHELL, 0, "system/bin" },
	{ 00755, AID_ROOT, AID_ROOT, 0, "system/etc/ppp" },
	{ 00755, AID_ROOT, AID_SHELL, 0, "system/vendor" },
	{ 00751, AID_ROOT, AID_SHELL, 0, "system/xbin" },
	{ 00751, AID_ROOT, AID_SHELL, 0, "system/apex/*/bin" },
	{ 00751, AID_ROOT, AID_SHELL, 0, "system_ext/bin" },
	{ 00751, AID_ROOT, AID_SHELL, 0, "system_ext/apex/*/bin" },
	{ 00751, AID_ROOT, AID_SHELL, 0, "vendor/bin" },
	{ 00755, AID_ROOT, AID_SHELL, 0, "vendor" },
	{ 00755, AID_ROOT, AID_ROOT, 0, NULL },
};

static const struct builtin files[] = {
	{ 00644, AID_SYSTEM, AID_SYSTEM, 0, "data/app/*" },
	{ 00644, AID_SYSTEM, AID_SYSTEM, 0, "data/app-ephemeral/*" },
	{ 00644, AID_SYSTEM, AID_SYSTEM, 0, "data/app-private/*" },
	{ 00644, AID_APP, AID_APP, 0, "data/data/*" },
	{ 00644, AID_MEDIA_RW, AID_MEDIA_RW, 0, "data/media/*" },
	{ 00640, AID_ROOT, AID_SHELL, 0, "data/nativetest/tests.txt" },
	{ 00640, AID_ROOT, AID_SHELL, 0, "data/nativetest64/tests.txt" },
	{ 00750, AID_ROOT, AID_SHELL, 0, "data/nativetest/*" },
	{ 00750, AID_ROOT, AID_SHELL, 0, "data/nativetest64/*" },
	{ 00750, AID_ROOT, AID_SHELL, 0, "data/benchmarktest/*" },
	{ 00750, AID_ROOT, AID_SHELL, 0, "data/benchmarktest64/*" },
	{ 00600, AID_ROOT, AID_ROOT, 0, "default.prop" },
	{ 00600, AID_ROOT, AID_ROOT, 0, "system/etc/prop.default" },
	{ 00600, AID_ROOT, AID_ROOT, 0, "odm/build.prop" },
	{ 00600, AID_ROOT, AID_ROOT, 0, "odm/default.prop" },
	{ 00600, AID_ROOT, AID_ROOT, 0, "odm/etc/build.prop" },
	{ 00444, AID_ROOT, AID_ROOT, 0, "odm/etc/fs_config_dirs" },
	{ 00444, AID_ROOT, AID_ROOT, 0, "odm/etc/fs_config_files" },
	{ 00444, AID_ROOT, AID_ROOT, 0, "oem/etc/fs_config_dirs" },
	{ 00444, AID_ROOT, AID_ROOT, 0, "oem/etc/fs_config_files" },
	{ 00600, AID_ROOT, AID_ROOT, 0, "product/build.prop" },
	{ 00444, AID_ROOT, AID_ROOT, 0, "product/etc/fs_config_dirs" },
	{ 00444, AID_ROOT, AID_ROOT, 0, "product/etc/fs_config_files" },
	{ 00600, AID_ROOT, AID_ROOT, 0, "system_ext/build.prop" },
	{ 00444, AID_ROOT, AID_ROOT, 0, "system_ext/etc/fs_config_dirs" },
	{ 00444, AID_ROOT, AID_ROOT, 0, "system_ext/etc/fs_config_files" },
	{ 00755, AID_ROOT, AID_SHELL, 0, "system/bin/crash_dump32" },
	{ 00755, AID_ROOT, AID_SHELL, 0, "system/bin/crash_dump64" },
	{ 00755, AID_ROOT, AID_SHELL, 0, "system/bin/debuggerd" },
	{ 00550, AID_LOGD, AID_LOGD, 0, "system/bin/logd" },
	{ 00700, AID_ROOT, AID_ROOT, 0, "system/bin/secilc" },
	{ 00750, AID_ROOT, AID_ROOT, 0, "system/bin/uncrypt" },
	{ 00600, AID_ROOT, AID_ROOT, 0, "system/build.prop" },
	{ 00444, AID_ROOT, AID_ROOT, 0, "system/etc/fs_config_dirs" },
	{ 00444, AID_ROOT, AID_ROOT, 0, "system/etc/fs_config_files" },
	{ 00440, AID_ROOT, AID_SHELL, 0, "system/etc/init.goldfish.rc" },
	{ 00550, AID_ROOT, AID_SHELL, 0, "system/etc/init.goldfish.sh" },
	{ 00550, AID_ROOT, AID_SHELL, 0, "system/etc/init.ril" },
	{ 00555, AID_ROOT, AID_ROOT, 0, "system/etc/ppp/*" },
	{ 00555, AID_ROOT, AID_ROOT, 0, "system/etc/rc.*" },
	{ 00750, AID_ROOT, AID_ROOT, 0, "vendor/bin/install-recovery.sh" },
	{ 00600, AID_ROOT, AID_ROOT, 0, "vendor/build.prop" },
	{ 00600, AID_ROOT, AID_ROOT, 0, "vendor/default.prop" },
	{ 00440, AID_ROOT, AID_ROOT, 0, "vendor/etc/recovery.img" },
	{ 00444, AID_ROOT, AID_ROOT, 0, "vendor/etc/fs_config_dirs" },
	{ 00444, AID_ROOT, AID_ROOT, 0, "vendor/etc/fs_config_files" },
	{ 06755, AID_ROOT, AID_ROOT, 0, "system/xbin/procmem" },
	{ 04750, AID_ROOT, AID_SHELL, 0, "system/xbin/su" },
	{ 00700, AID_SYSTEM, AID_SHELL, CAP(CAP_BLOCK_SUSPEND),
	  "system/bin/inputflinger" },
	{ 00750, AID_ROOT, AID_SHELL, CAP(CAP_SETUID) | CAP(CAP_SETGID),
	  "system/bin/run-as" },
	{ 00750, AID_ROOT, AID_SHELL, CAP(CAP_SETUID) | CAP(CAP_SETGID),
	  "system/bin/simpleperf_app_runner" },
	{ 00755, AID_ROOT, AID_ROOT, 0, "first_stage_ramdisk/system/bin/e2fsck" },
	{ 00755, AID_ROOT, AID_ROOT, 0, "bin/*" },
	{ 00640, AID_ROOT, AID_SHELL, 0, "fstab.*" },
	{ 00750, AID_ROOT, AID_SHELL, 0, "init*" },
	{ 00755, AID_ROOT, AID_SHELL, 0, "odm/bin/*" },
	{ 00755, AID_ROOT, AID_SHELL, 0, "product/bin/*" },
	{ 00755, AID_ROOT, AID_SHELL, 0, "system/bin/*" },
	{ 00755, AID_ROOT, AID_SHELL, 0, "system/xbin/*" },
	{ 00755, AID_ROOT, AID_SHELL, 0, "system/apex/*/bin/*" },
	{ 00755, AID_ROOT, AID_SHELL, 0, "system_ext/bin/*" },
	{ 00755, AID_ROOT, AID_SHELL, 0, "system_ext/apex/*/bin/*" },
	{ 00755, AID_ROOT, AID_SHELL, 0, "vendor/bin/*" },
	{ 00755, AID_ROOT, AID_SHELL, 0, "vendor/xbin/*" },
	{ 00644, AID_ROOT, AID_ROOT, 0, NULL },
};

/* The rules files, [0] files' and [1] directories', in the order read. */
static const char *const rule_files[][2] = {
	{ "/system/etc/fs_config_files", "/system/etc/fs_config_dirs" },
	{ "/vendor/etc/fs_config_files", "/vendor/etc/fs_config_dirs" },
	{ "/oem/etc/fs_config_files", "/oem/etc/fs_config_dirs" },
	{ "/odm/etc/fs_config_files", "/odm/etc/fs_config_dirs" },
	{ "/product/etc/fs_config_files", "/product/etc/fs_config_dirs" },
	{ "/system_ext/etc/fs_config_files", "/system_ext/etc/fs_config_dirs" },
};

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static bool ends(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/*
 * libcutils' match: fnmatch without FNM_PATHNAME ('*' crosses '/'); a
 * directory is matched as "PATH/" against "PREFIX/" and a star. Paths in
 * a logical partition inside another (system/vendor/..., vendor/odm/...)
 * also match the partition's own rules.
 */
static bool rule_matches(bool dir, const char *prefix, const char *path)
{
	static const char *const nested[] = { "system/product/",
		"system/system_ext/", "system/vendor/", "vendor/odm/" };
	static const char *const parts[] = { "odm/", "oem/", "product/",
		"system_ext/", "vendor/" };
	size_t pn = strlen(prefix), n = strlen(path);
	char *pat = xmalloc(pn + 3), *in = xmalloc(n + 2);
	bool hit;

	memcpy(pat, prefix, pn + 1);
	memcpy(in, path, n + 1);
	if (dir) {
		if (!ends(in, "/"))
			strcat(in, "/");
		if (!ends(pat, "/*"))
			strcat(pat, ends(pat, "/") ? "*" : "/*");
	}
	hit = !fnmatch(pat, in, FNM_NOESCAPE);
	for (size_t i = 0; !hit && i < sizeof(nested) / sizeof(*nested); i++) {
		const char *rest = strchr(in, '/') + 1;

		if (!starts(in, nested[i]))
			continue;
		for (size_t k = 0; k < sizeof(parts) / sizeof(*parts); k++)
			if (starts(rest, parts[k]))
				hit = !fnmatch(pat, rest, FNM_NOESCAPE);
	}
	free(pat);
	free(in);
	return hit;
}

/* fs_config()'s path: "MOUNT/PATH", the root "MOUNT/" (as erofs-utils). */
void kiln_fsconfig_builtin_lookup(const struct kiln_fsconfig *fc,
				  const char *relpath, bool dir,
				  struct kiln_fsconfig_entry *e)
{
	const char *mp = fc->mount_point;
	size_t n = (mp ? strlen(mp) + 1 : 0) + strlen(relpath) + 1;
	char *path = xmalloc(n);
	const struct builtin *b;

	snprintf(path, n, "%s%s%s", mp ? mp : "", mp ? "/" : "", relpath);
	for (uint32_t i = 0; i < fc->nr_rules[dir]; i++) {
		const struct kiln_fsconfig_entry *r = &fc->rules[dir][i];

		if (rule_matches(dir, r->path, path)) {
			*e = *r;
			free(path);
			return;
		}
	}
	for (b = dir ? dirs : files; b->prefix; b++)
		if (rule_matches(dir, b->prefix, path))
			break;
	free(path);
	*e = (struct kiln_fsconfig_entry){ .uid = b->uid, .gid = b->gid,
					   .mode = b->mode, .caps = b->caps };
}

/* Rules files are small (AOSP's are a few KiB): read whole, at most 1 MiB. */
static int read_whole(const char *file, uint8_t **buf, size_t *len)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	struct stat st;
	ssize_t n;
	int err;

	if (fd < 0)
		return -1;
	err = fstat(fd, &st) ? errno : !S_ISREG(st.st_mode) ? EINVAL :
	      st.st_size > (1 << 20) ? EFBIG : 0;

	if (err) {
		close(fd);
		errno = err;
		return -1;
	}
	*buf = xmalloc((size_t)st.st_size + 1);
	n = pread_all(fd, *buf, (size_t)st.st_size, 0);
	close(fd);
	if (n != st.st_size) {
		free(*buf);
		errno = n < 0 ? errno : EIO;
		return -1;
	}
	*len = (size_t)n;
	return 0;
}

/*
 * One rules file: entries of a 16-byte header (length of the entry, mode,
 * uid, gid: 16 bits each, little-endian; capabilities: 64 bits) and the
 * NUL-terminated prefix, padded to 8 bytes. libcutils stops reading a
 * damaged file silently; an image built from half of one would be wrong,
 * so here it is an error.
 */
static int load_rules(struct kiln_fsconfig *fc, const char *file, int dir)
{
	size_t len, at = 0;
	uint8_t *buf;
	int ret = 0;

	if (read_whole(file, &buf, &len)) {
		if (errno == ENOENT)
			return 0;
		kiln_err("%s: %s", file, strerror(errno));
		return -1;
	}
	while (at < len && !ret) {
		const uint8_t *h = buf + at;
		size_t elen = len - at >= 16 ? get_le16(h) : 0;
		struct kiln_fsconfig_entry r;

		if (elen <= 16 || elen > len - at ||
		    !memchr(h + 16, 0, elen - 16) || get_le16(h + 2) > 07777) {
			kiln_err("%s: damaged entry at byte %zu", file, at);
			ret = -1;
			break;
		}
		r = (struct kiln_fsconfig_entry){
			.path = xstrdup((const char *)h + 16),
			.mode = get_le16(h + 2), .uid = get_le16(h + 4),
			.gid = get_le16(h + 6), .caps = get_le64(h + 8),
		};
		fc->rules[dir] = xrealloc(fc->rules[dir], (fc->nr_rules[dir] + 1) *
					  sizeof(r));
		fc->rules[dir][fc->nr_rules[dir]++] = r;
		at += elen;
	}
	free(buf);
	return ret;
}

int kiln_fsconfig_builtin_load(struct kiln_fsconfig *fc,
			       const char *product_out,
			       const char *mount_point)
{
	size_t n;

	memset(fc, 0, sizeof(*fc));
	fc->builtin = true;
	fc->file = "(Android's built-in table)";
	fc->mount_point = mount_point;
	if (!product_out)
		return 0;
	/* as libcutils: the directory may be given as .../system(/) */
	n = strlen(product_out);
	while (n && product_out[n - 1] == '/')
		n--;
	if (n >= 7 && !strncmp(product_out + n - 7, "/system", 7))
		n -= 7;
	for (size_t i = 0; i < sizeof(rule_files) / sizeof(*rule_files); i++) {
		for (int dir = 0; dir < 2; dir++) {
			size_t m = n + strlen(rule_files[i][dir]) + 1;
			char *path = xmalloc(m);
			int ret;

			snprintf(path, m, "%.*s%s", (int)n, product_out,
				 rule_files[i][dir]);
			ret = load_rules(fc, path, dir);
			free(path);
			if (ret) {
				kiln_fsconfig_free(fc);
				return -1;
			}
		}
	}
	return 0;
}

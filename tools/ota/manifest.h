/* SPDX-License-Identifier: MIT */
/*
 * A bundle's manifest: what the signature covers. Text, one item per line,
 * fields separated by one space, nothing else allowed (format 1):
 *
 *   kiln-bundle 1
 *   version 2026.1204.201200
 *   compatible rpi4
 *   payload rootfs rootfs.erofs 1245184 <sha256, 64 hex digits>
 *   payload files app.tar.zst 20480 <sha256> app
 *
 * A version is dot-separated decimal numbers, compared number by number.
 * A payload is "rootfs" (the root image, written to the inactive slot;
 * at most one) or "files" (a zstd-compressed tar unpacked into TARGET, a
 * relative path under the data partition). Payload NAMEs are the names of
 * the bundle's tar members, in the same order.
 */
#ifndef KILN_OTA_MANIFEST_H
#define KILN_OTA_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#define MANIFEST_FORMAT 1
#define MANIFEST_MAX_SIZE 65536
#define MANIFEST_MAX_PAYLOADS 16
#define MANIFEST_NAME_MAX 64
#define MANIFEST_TARGET_MAX 128
#define MANIFEST_FIELD_MAX 64	/* version, compatible */

enum payload_type { PAYLOAD_ROOTFS, PAYLOAD_FILES };

struct payload {
	enum payload_type type;
	char name[MANIFEST_NAME_MAX + 1];
	uint64_t size;
	unsigned char sha256[32];
	char target[MANIFEST_TARGET_MAX + 1];	/* files only */
};

struct manifest {
	char version[MANIFEST_FIELD_MAX + 1];
	char compatible[MANIFEST_FIELD_MAX + 1];
	unsigned count;
	struct payload payload[MANIFEST_MAX_PAYLOADS];
};

/* Parses text[0..n); -1 with err (line number and why) on anything else. */
int manifest_parse(struct manifest *m, const char *text, size_t n,
		   char *err, size_t errlen);
/* The text of m into out (which must hold MANIFEST_MAX_SIZE); its length. */
size_t manifest_format(const struct manifest *m, char *out);

/* 1 when s is a version (dot-separated decimals, each < 2^32). */
int version_valid(const char *s);
/* <0, 0, >0 as a is older than, the same as, newer than b (both valid). */
int version_compare(const char *a, const char *b);
/* 1 when s may be a payload name / a files target. */
int payload_name_valid(const char *s);
int payload_target_valid(const char *s);

#endif

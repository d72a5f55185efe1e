/* SPDX-License-Identifier: MIT */
/*
 * What Android's build adds to every inode, from --fs-config-file
 * (fsconfig.h) and --file-contexts (fcontexts.h), under --mount-point.
 */
#ifndef KILN_WRITE_ANDROID_H
#define KILN_WRITE_ANDROID_H

#include <stdbool.h>

struct kiln_mkfs_opts;
struct kiln_inode;

/*
 * Once an inode's own xattrs are read (relpath: from the source root, ""
 * for it): the fs_config capabilities (in->fs_caps, as kiln_fsconfig_apply
 * gave them) and the SELinux label replace its own security.capability
 * (if the file gives any) and security.selinux. Nothing when xattrs are
 * off (-x below 0). -1 if one cannot be stored.
 */
int kiln_android_xattrs(const struct kiln_mkfs_opts *o, struct kiln_inode *in,
			const char *relpath);

/*
 * Hard links are one inode: its owner, mode and xattrs must not depend on
 * which of its paths the (parallel) scan found first.
 */
bool kiln_android_same(const struct kiln_inode *a, const struct kiln_inode *b);

#endif

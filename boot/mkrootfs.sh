#!/bin/sh
# mkrootfs.sh BOARD_CONF BUSYBOX TOOLS_BIN MKFS OUT.erofs -- the root slot's
# EROFS image. The tree is busybox and its applet links, boot/skel (inittab,
# rcS, the self-test), Kiln's own tools, the board's overlay and then
# $ROOTFS_OVERLAY; or, when $ROOTFS_DIR is set, that whole prepared tree
# (e.g. from debootstrap) with Kiln's tools and mount points added.
# Every file is owned by root and stamped with $SOURCE_DATE_EPOCH.
set -eu
CONF=$1 BUSYBOX=$2 TOOLS=$3 MKFS=$4 OUT=$5
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BOARD_DIR=$(dirname "$CONF")
. "$CONF"
: "${SOURCE_DATE_EPOCH:?SOURCE_DATE_EPOCH must be set}"

die() {
	echo "mkrootfs: $*" >&2
	exit 1
}

T=$OUT.tree
rm -rf "$T"
mkdir -p "$T"
if [ -n "${ROOTFS_DIR:-}" ]; then
	[ -d "$ROOTFS_DIR" ] || die "ROOTFS_DIR=$ROOTFS_DIR: not a directory"
	cp -a "$ROOTFS_DIR/." "$T/"
else
	mkdir -p "$T/bin" "$T/sbin" "$T/usr/bin" "$T/usr/sbin" "$T/etc" \
		"$T/root" "$T/lib"
	cp "$BUSYBOX" "$T/bin/busybox"
	while read -r link; do
		# relative links: the tree is correct wherever it is mounted
		up=$(echo "${link#/}" | sed 's|[^/]*/|../|g; s|[^/]*$||')
		ln -sf "${up}bin/busybox" "$T$link"
	done <"$BUSYBOX.links"
	ln -sf ../data/var "$T/var"
	cp -R "$ROOT/boot/skel/." "$T/"
fi
mkdir -p "$T/proc" "$T/sys" "$T/dev" "$T/run" "$T/tmp" "$T/data" "$T/usr/bin"
cp "$TOOLS/fsck.erofs" "$TOOLS/mkfs.erofs" "$T/usr/bin/"
[ ! -d "$BOARD_DIR/overlay" ] || cp -R "$BOARD_DIR/overlay/." "$T/"
if [ -n "${ROOTFS_OVERLAY:-}" ]; then
	[ -d "$ROOTFS_OVERLAY" ] || die "ROOTFS_OVERLAY=$ROOTFS_OVERLAY: not a directory"
	cp -R "$ROOTFS_OVERLAY/." "$T/"
fi
# shellcheck disable=SC2086 # options are words
"$MKFS" --quiet $ROOT_MKFS_OPTS --all-root -T "$SOURCE_DATE_EPOCH" \
	"$OUT.tmp" "$T" || die "mkfs.erofs failed"
mv "$OUT.tmp" "$OUT"
rm -rf "$T"

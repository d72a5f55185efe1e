#!/bin/sh
# mkrootfs.sh BOARD_CONF BUSYBOX TOOLS_BIN MKFS OUT.erofs -- the root slot's
# EROFS image. The tree is busybox and its applet links, boot/skel (inittab,
# rcS, the self-test), Kiln's own tools, the board's overlay and then
# $ROOTFS_OVERLAY; or, when $ROOTFS_DIR is set, that whole prepared tree
# (e.g. from debootstrap) with Kiln's tools and mount points added.
# Every file is owned by root and stamped with $SOURCE_DATE_EPOCH.
#
# The same inputs give the same image whoever builds it: what the script
# creates gets its mode from umask 022, Kiln's own files (boot/skel, the
# board's overlay) the modes git records (directories and executables 0755,
# other files 0644) whatever umask they were checked out with, and no
# extended attribute of the build host gets in: Kiln's files are copied
# without any, $ROOTFS_OVERLAY too (cp -R), and $ROOTFS_DIR keeps only its
# file capabilities (security.capability, as packages set them: ping's
# cap_net_raw) and POSIX ACLs, not the host's SELinux labels (other
# security.*), trusted.* or user.* attributes.
set -eu
umask 022
CONF=$1 BUSYBOX=$2 TOOLS=$3 MKFS=$4 OUT=$5
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BOARD_DIR=$(dirname "$CONF")
. "$CONF"
: "${SOURCE_DATE_EPOCH:?SOURCE_DATE_EPOCH must be set}"

die() {
	echo "mkrootfs: $*" >&2
	exit 1
}

# put SRC: Kiln's own files from SRC into the tree, with git's modes.
put() {
	cp -R "$1/." "$T/" || die "cannot copy $1"
	# shellcheck disable=SC2016 # $0 and $f are sh -c's
	(cd "$1" &&
		find . -mindepth 1 \( -type d -o -type f -perm -u+x \) \
			-exec sh -c 'for f; do chmod 0755 "$0/$f"; done' "$T" {} + &&
		find . -type f ! -perm -u+x \
			-exec sh -c 'for f; do chmod 0644 "$0/$f"; done' "$T" {} +) ||
		die "cannot set the modes of $1's files"
}

T=$OUT.tree
trap 'rm -rf "$T" "$T.caps" "$OUT.tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
rm -rf "$T"
mkdir -p "$T"
T=$(cd "$T" && pwd)	# absolute: put() works from its source directory
if [ -n "${ROOTFS_DIR:-}" ]; then
	[ -d "$ROOTFS_DIR" ] || die "ROOTFS_DIR=$ROOTFS_DIR: not a directory"
	cp -a --no-preserve=xattr,context "$ROOTFS_DIR/." "$T/" ||
		die "cannot copy ROOTFS_DIR=$ROOTFS_DIR"
	(cd "$ROOTFS_DIR" && getfattr -R -P -h -d -m '^security\.capability$' -e hex .) \
		>"$T.caps" || die "cannot read the file capabilities in $ROOTFS_DIR"
	[ ! -s "$T.caps" ] || (cd "$T" && setfattr -h --restore="$T.caps") ||
		die "cannot set the file capabilities of $ROOTFS_DIR's files (needs root)"
else
	mkdir -p "$T/bin" "$T/sbin" "$T/usr/bin" "$T/usr/sbin" "$T/etc" \
		"$T/root" "$T/lib"
	cp "$BUSYBOX" "$T/bin/busybox"
	chmod 0755 "$T/bin/busybox"
	while read -r link; do
		# relative links: the tree is correct wherever it is mounted
		up=$(echo "${link#/}" | sed 's|[^/]*/|../|g; s|[^/]*$||')
		ln -sf "${up}bin/busybox" "$T$link"
	done <"$BUSYBOX.links"
	ln -sf ../data/var "$T/var"
	put "$ROOT/boot/skel"
fi
mkdir -p "$T/proc" "$T/sys" "$T/dev" "$T/run" "$T/tmp" "$T/data" "$T/usr/bin"
for p in fsck.erofs mkfs.erofs dump.erofs kiln-bootstate; do
	cp "$TOOLS/$p" "$T/usr/bin/"
	chmod 0755 "$T/usr/bin/$p"
done
# A/B boards whose boot loader keeps a state on a FAT: rcS marks the slot
# good once up (usr/libexec/kiln/mark-good), and kiln-install takes signed
# updates (kiln-update): the board's name, this image's version and the
# key bundles must be signed with ($KILN_VERSION, $KILN_PUBKEY)
if [ -n "${BOOTSTATE_PART:-}" ]; then
	: "${KILN_VERSION:?KILN_VERSION must be set} ${KILN_PUBKEY:?KILN_PUBKEY must be set}"
	mkdir -p "$T/etc/kiln"
	echo "BOOTSTATE_PART=$BOOTSTATE_PART" >"$T/etc/kiln/bootstate"
	basename "$BOARD_DIR" >"$T/etc/kiln/board"
	echo "$KILN_VERSION" >"$T/etc/kiln/version"
	cp "$KILN_PUBKEY" "$T/etc/kiln/bundle.pub" || die "no public key $KILN_PUBKEY"
	chmod 0644 "$T/etc/kiln/bundle.pub"
	cp "$TOOLS/kiln-update" "$T/usr/bin/"
	chmod 0755 "$T/usr/bin/kiln-update"
fi
[ ! -d "$BOARD_DIR/overlay" ] || put "$BOARD_DIR/overlay"
if [ -n "${ROOTFS_OVERLAY:-}" ]; then
	[ -d "$ROOTFS_OVERLAY" ] || die "ROOTFS_OVERLAY=$ROOTFS_OVERLAY: not a directory"
	cp -R "$ROOTFS_OVERLAY/." "$T/"
fi
# shellcheck disable=SC2086 # options are words
"$MKFS" --quiet $ROOT_MKFS_OPTS --all-root -T "$SOURCE_DATE_EPOCH" \
	"$OUT.tmp" "$T" || die "mkfs.erofs failed"
mv "$OUT.tmp" "$OUT"

#!/bin/sh
# pick-modules.sh KVER SRCROOT DESTROOT MODULE... [--optional MODULE...]
# -- copy kernel modules for an initramfs.
#
# Modules after --optional may be missing from the kernel: a warning then.
# SRCROOT holds a kernel's modules (SRCROOT/lib/modules/KVER, e.g. a kernel
# .deb unpacked). Each MODULE is copied to DESTROOT with everything it needs:
# its hard dependencies and its soft ones (Debian's erofs.ko asks for crc32c
# through "softdep pre:"), as kmod's own modprobe resolves them. Modules
# come out uncompressed (.ko.xz and .ko.zst are unpacked: the initramfs is
# compressed as a whole, and busybox's insmod then needs no decompressor).
# DESTROOT gets a modules.dep made by depmod for what was copied, and
# lib/modules/KVER/kiln.load: the modules in the order to insmod them.
# Debian's kernel packages ship no modules.dep, so depmod first runs on
# SRCROOT itself when it has none.
set -eu
umask 022

die() {
	echo "pick-modules: $*" >&2
	exit 1
}
[ $# -ge 3 ] || die "usage: pick-modules.sh KVER SRCROOT DESTROOT MODULE..."
KVER=$1 SRC=$2 DEST=$3
shift 3
MODS=$SRC/lib/modules/$KVER
[ -d "$MODS" ] || die "no modules for $KVER in $SRC"
# absolute, as modprobe prints the paths it finds
SRC=$(cd "$SRC" && pwd)
MODS=$SRC/lib/modules/$KVER
command -v depmod >/dev/null || die "depmod not found (Debian package kmod)"
[ -s "$MODS/modules.dep" ] || depmod -b "$SRC" "$KVER" ||
	die "depmod failed on $MODS"

OUT=$DEST/lib/modules/$KVER
mkdir -p "$OUT"
LIST=$(mktemp)
trap 'rm -f "$LIST"' EXIT
optional=false
for m in "$@"; do
	[ "$m" != --optional ] || { optional=true; continue; }
	# "insmod PATH" per module to load, "builtin NAME" for built-in ones
	# -C /dev/null: only the kernel tree's modules.{dep,softdep,alias}
	# count, not this build host's modprobe.d (a blacklist there made a
	# module vanish with no error, its softdeps and aliases leaked in)
	if ! modprobe -C /dev/null -d "$SRC" -S "$KVER" --show-depends "$m" \
		>"$LIST" 2>/dev/null || ! grep -qE '^(insmod|builtin) ' "$LIST"; then
		$optional || die "module $m does not exist in $KVER"
		echo "pick-modules: warning: $KVER has no module $m (skipped)" >&2
		continue
	fi
	while read -r what path _; do
		[ "$what" = insmod ] || continue
		rel=${path#"$MODS"/}
		[ "$rel" != "$path" ] || die "$path: not under $MODS"
		ko=${rel%.xz}
		ko=${ko%.zst}
		mkdir -p "$OUT/$(dirname "$rel")"
		case $rel in
		*.ko.xz) xz -dc "$path" >"$OUT/$ko" ;;
		*.ko.zst) zstd -qdc "$path" >"$OUT/$ko" ;;
		*.ko) cp "$path" "$OUT/$ko" ;;
		*) die "$path: not a kernel module" ;;
		esac
		grep -qxF "$ko" "$OUT/kiln.load" 2>/dev/null ||
			echo "$ko" >>"$OUT/kiln.load"
	done <"$LIST"
done
touch "$OUT/kiln.load"
for f in modules.builtin modules.builtin.modinfo modules.order; do
	[ ! -f "$MODS/$f" ] || cp "$MODS/$f" "$OUT/"
done
depmod -b "$DEST" "$KVER" || die "depmod failed on $OUT"

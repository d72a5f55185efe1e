#!/bin/sh
# mkinitramfs.sh BOARD_CONF BUSYBOX KERNEL_DIR FIRMWARE_DIR OUT -- the
# initramfs: busybox, boot/init, the board's modules (kmod/pick-modules.sh)
# and their firmware (kmod/pick-firmware.sh; what it found and missed goes
# to OUT.firmware, for the manifest), as a reproducible newc cpio (sorted,
# owned by 0:0, mtimes $SOURCE_DATE_EPOCH), compressed with
# $INITRAMFS_COMPRESS (zstd, the default, or lz4).
set -eu
CONF=$1 BUSYBOX=$2 KDIR=$3 FWDIR=$4 OUT=$5
ROOT=$(cd "$(dirname "$0")/.." && pwd)
INITRAMFS_COMPRESS=zstd FIRMWARE_PKGS= MODULES_OPTIONAL=
. "$CONF"
: "${SOURCE_DATE_EPOCH:?SOURCE_DATE_EPOCH must be set}"

T=$OUT.tree
rm -rf "$T"
mkdir -p "$T/bin" "$T/dev" "$T/proc" "$T/sys" "$T/newroot"
cp "$BUSYBOX" "$T/bin/busybox"
# Every applet, all in /bin: /init and the rescue shell use what they need.
while read -r path; do
	ln -sf busybox "$T/bin/${path##*/}"
done <"$BUSYBOX.links"
cp "$ROOT/boot/init" "$T/init"
chmod 0755 "$T/init"
# shellcheck disable=SC2086 # a list of module names
"$ROOT/kmod/pick-modules.sh" "$(cat "$KDIR/kver")" "$KDIR/tree" "$T" $MODULES \
	--optional $MODULES_OPTIONAL
"$ROOT/kmod/pick-firmware.sh" "$(cat "$KDIR/kver")" "$FWDIR/tree" "$T" \
	>"$OUT.firmware.tmp"
LC_ALL=C sort -o "$OUT.firmware.tmp" "$OUT.firmware.tmp"
if grep -q '^firmware-missing' "$OUT.firmware.tmp"; then
	echo "mkinitramfs: warning: firmware not in ${FIRMWARE_PKGS:-any package}:" \
		"$(awk '$1 == "firmware-missing" { print $2 }' "$OUT.firmware.tmp" | tr "\n" " ")" >&2
fi

case $INITRAMFS_COMPRESS in
zstd) compress="zstd -q -19 -T1 -c" ;;
lz4) compress="lz4 -q -l -9 -c" ;;	# -l: the legacy frame the kernel reads
*) echo "mkinitramfs: INITRAMFS_COMPRESS=$INITRAMFS_COMPRESS: zstd or lz4" >&2; exit 1 ;;
esac
find "$T" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
(cd "$T" && find . -mindepth 1 | LC_ALL=C sort |
	cpio --quiet -o -H newc -R 0:0 --reproducible) | $compress >"$OUT.tmp"
mv "$OUT.firmware.tmp" "$OUT.firmware"
mv "$OUT.tmp" "$OUT"
rm -rf "$T"

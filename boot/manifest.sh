#!/bin/sh
# manifest.sh BOARD DIR KERNEL_DIR -- what went into a board's image:
# versions and the SHA-256 of each artifact, one "key value" line each.
set -eu
BOARD=$1 DIR=$2 KDIR=$3
ROOT=$(cd "$(dirname "$0")/.." && pwd)
echo "board $BOARD"
echo "kiln $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)"
echo "source-date-epoch $SOURCE_DATE_EPOCH"
echo "kernel-package $(cut -d' ' -f1,2 "$KDIR/package")"
echo "kernel-deb-sha256 $(cut -d' ' -f3 "$KDIR/package")"
echo "kernel-release $(cat "$KDIR/kver")"
while read -r name ver sum; do
	echo "firmware-package $name $ver $sum"
done <"$DIR/firmware/package"
cat "$DIR/initramfs.img.firmware"
echo "busybox $(grep -a -o 'BusyBox v[0-9.]*' "$DIR/busybox" | head -n 1)"
for f in vmlinuz initramfs.img rootfs.erofs disk.img; do
	echo "sha256 $(sha256sum "$DIR/$f" | cut -d' ' -f1) $f $(stat -c %s "$DIR/$f")"
done

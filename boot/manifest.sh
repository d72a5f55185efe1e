#!/bin/sh
# manifest.sh BOARD DIR KERNEL_DIR -- what went into a board's image:
# versions and the SHA-256 of each artifact, one "key value" line each.
# Every value is read before it is printed (a failure in a command
# substitution inside echo's arguments, or in a pipe, would go unseen and
# leave an empty field): any failure exits non-zero.
set -eu
BOARD=$1 DIR=$2 KDIR=$3
ROOT=$(cd "$(dirname "$0")/.." && pwd)
kiln=$(git -C "$ROOT" describe --always --dirty 2>/dev/null) || kiln=unknown
read -r kpkg kpkgver kdebsum <"$KDIR/package"
kver=$(cat "$KDIR/kver")
bb=$(grep -a -o -m 1 'BusyBox v[0-9.]*' "$DIR/busybox")
set -f
# shellcheck disable=SC2086 # words: "BusyBox vX.Y.Z", maybe twice
set -- $bb
set +f
echo "board $BOARD"
echo "kiln $kiln"
echo "source-date-epoch $SOURCE_DATE_EPOCH"
echo "kernel-package $kpkg $kpkgver"
echo "kernel-deb-sha256 $kdebsum"
echo "kernel-release $kver"
while read -r name ver sum; do
	echo "firmware-package $name $ver $sum"
done <"$DIR/firmware/package"
cat "$DIR/initramfs.img.firmware"
# U-Boot and a Raspberry Pi's GPU firmware (boot/fetch-uboot.sh)
if [ -n "${BOOT_CHAIN:-}" ]; then
	while read -r name ver sum; do
		echo "boot-package $name $ver $sum"
	done <"$DIR/uboot/package"
fi
echo "busybox $1 $2"
for f in vmlinuz initramfs.img rootfs.erofs "${DISK_IMAGE:-disk.img}"; do
	sum=$(sha256sum "$DIR/$f")
	size=$(stat -c %s "$DIR/$f")
	echo "sha256 ${sum%% *} $f $size"
done

#!/bin/sh
# mkinitramfs.sh BOARD_CONF BUSYBOX KERNEL_DIR FIRMWARE_DIR OUT -- the
# initramfs: busybox, boot/init, the board's modules (kmod/pick-modules.sh)
# and their firmware (kmod/pick-firmware.sh; what it found and missed goes
# to OUT.firmware, for the manifest), as a reproducible newc cpio (sorted,
# owned by 0:0, mtimes $SOURCE_DATE_EPOCH), compressed with
# $INITRAMFS_COMPRESS (zstd, the default, or lz4). Every mode is set here
# (directories and executables 0755, other files 0644), whatever the umask
# and the modes of the inputs. OUT (and OUT.firmware) appear only once all
# of it worked: every step is checked on its own (no pipe hides a failure).
set -eu
umask 022
CONF=$1 BUSYBOX=$2 KDIR=$3 FWDIR=$4 OUT=$5
ROOT=$(cd "$(dirname "$0")/.." && pwd)
INITRAMFS_COMPRESS=zstd FIRMWARE_PKGS= MODULES_OPTIONAL= DATA_MOUNT_OPTS=noatime
. "$CONF"
: "${SOURCE_DATE_EPOCH:?SOURCE_DATE_EPOCH must be set}"

die() {
	echo "mkinitramfs: $*" >&2
	exit 1
}

T=$OUT.tree
trap 'rm -rf "$T" "$OUT.list" "$OUT.cpio" "$OUT.tmp" "$OUT.firmware.tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
rm -rf "$T"
mkdir -p "$T/bin" "$T/dev" "$T/proc" "$T/sys" "$T/newroot"
cp "$BUSYBOX" "$T/bin/busybox"
# Every applet, all in /bin: /init and the rescue shell use what they need.
while read -r path; do
	ln -sf busybox "$T/bin/${path##*/}"
done <"$BUSYBOX.links"
cp "$ROOT/boot/init" "$T/init"
chmod 0755 "$T/init"
# the data partition's ext4 mount options, for /init
case $DATA_MOUNT_OPTS in
*[!a-z0-9_=,]* | "") die "DATA_MOUNT_OPTS=$DATA_MOUNT_OPTS: mount options (a-z 0-9 _ = ,)" ;;
esac
mkdir -p "$T/etc/kiln"
echo "$DATA_MOUNT_OPTS" >"$T/etc/kiln/data-mount-opts"
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
find "$T" -type d -exec chmod 0755 {} +
find "$T" -type f -perm /111 -exec chmod 0755 {} +
find "$T" -type f ! -perm /111 -exec chmod 0644 {} +
find "$T" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
(cd "$T" && find . -mindepth 1) >"$OUT.list" || die "cannot list $T"
LC_ALL=C sort -o "$OUT.list" "$OUT.list" || die "sort failed"
(cd "$T" && cpio --quiet -o -H newc -R 0:0 --reproducible) \
	<"$OUT.list" >"$OUT.cpio" || die "cpio failed"
$compress <"$OUT.cpio" >"$OUT.tmp" || die "$INITRAMFS_COMPRESS failed"
mv "$OUT.firmware.tmp" "$OUT.firmware"
mv "$OUT.tmp" "$OUT"

#!/bin/sh
# mkabdisk.sh BOARD_CONF ROOTFS.erofs KERNEL_DIR UBOOT_DIR INITRAMFS OUT.img --
# the disk of a U-Boot A/B board (BOOT_CHAIN=rpi: a Raspberry Pi's SD card;
# BOOT_CHAIN=uboot: U-Boot comes from elsewhere, e.g. QEMU's -bios): an
# MBR (sfdisk) with
#   1  FAT32 (0x0c, bootable), BOOT_SIZE_MIB: boot.scr (boot/uboot/boot.cmd
#      with the board's CMDLINE and UBOOT_RAM), the A/B state (state0.env,
#      state1.env), the kernel (vmlinuz: the arm64 Image, gzip-compressed),
#      initramfs.img, the board's DTBS; on a Pi also the GPU firmware
#      (UBOOT_DIR/firmware, boot/fetch-uboot.sh), config.txt and U-Boot
#   2, 3  root slots A and B (the same EROFS image), ROOT_SIZE_MIB each
#   4  data: ext4, the rest of DISK_SIZE_MIB (on a Pi a power of two:
#      QEMU's SD card model wants one)
# made with mkfs.vfat and mtools (no loop mounts), dd and mke2fs. Every
# time is SOURCE_DATE_EPOCH, the FAT's volume id and the MBR's disk id
# derive from the board's name: the same inputs give the same bytes.
# OUT.boot/ keeps the FAT's files (for inspection, and QEMU's raspi3b
# takes U-Boot and the device tree from there), OUT only when all worked.
set -eu
umask 022
CONF=$1 ROOTFS=$2 KDIR=$3 UBOOT=$4 INITRAMFS=$5 OUT=$6
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BOARD=$(basename "$(dirname "$CONF")")
DTBS= UBOOT_RAM=0x0
. "$CONF"
: "${SOURCE_DATE_EPOCH:?SOURCE_DATE_EPOCH must be set}"

die() {
	echo "mkabdisk: $*" >&2
	exit 1
}
for t in mkfs.vfat mcopy mmd mkimage mkenvimage sfdisk mke2fs; do
	command -v "$t" >/dev/null || die "$t not found (scripts/install-host-deps.sh)"
done

# hexid NAME: 8 hex digits from the board and NAME
hexid() {
	h=$(echo "kiln:$BOARD:$1" | sha256sum) || die "sha256sum failed"
	echo "$h" | cut -c1-8
}
# uuid NAME: a stable UUID (version 4 layout), as boot/mkdisk.sh makes them
uuid() {
	h=$(echo "kiln:$BOARD:$1" | sha256sum) || die "sha256sum failed"
	echo "$h" | sed -E 's/^(.{8})(.{4}).(.{3}).(.{3})(.{12}).*/\1-\2-4\3-8\4-\5/'
}

MIB=1048576
total=$DISK_SIZE_MIB
case $total in *[!0-9]* | "" | 0) die "DISK_SIZE_MIB=$total: not a number" ;; esac
[ "$BOOT_CHAIN" != rpi ] || [ $((total & (total - 1))) = 0 ] ||
	die "DISK_SIZE_MIB=$total: not a power of two (QEMU's SD card needs one)"
DATA_SIZE_MIB=$((total - 1 - BOOT_SIZE_MIB - 2 * ROOT_SIZE_MIB))
[ "$DATA_SIZE_MIB" -ge 16 ] || die "DISK_SIZE_MIB=$total leaves $DATA_SIZE_MIB MiB for data"
case $UBOOT_RAM in 0x[0-9a-fA-F]*) ;; *) die "UBOOT_RAM=$UBOOT_RAM: not a hex address" ;; esac
root_bytes=$(stat -c %s "$ROOTFS")
[ "$root_bytes" -le $((ROOT_SIZE_MIB * MIB)) ] ||
	die "root image is $((root_bytes / MIB + 1)) MiB, over ROOT_SIZE_MIB=$ROOT_SIZE_MIB"
disk_id=$(hexid disk) vol_id=$(hexid boot-fs)
u_fs=$(uuid data-fs) u_hash=$(uuid data-hash)

F=$OUT.boot.new
trap 'rm -rf "$OUT.tmp" "$OUT.vfat" "$F" "$OUT.w"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
rm -rf "$OUT.tmp" "$OUT.vfat" "$F" "$OUT.w"
mkdir -p "$F" "$OUT.w"

# the FAT's files
# the kernel Image gzip-compressed (no name, no time: reproducible): a
# third of the size, so U-Boot reads it from the card three times as fast
# (booti decompresses it)
gzip -6 -n -c "$KDIR/vmlinuz" >"$F/vmlinuz" || die "gzip failed"
cp "$INITRAMFS" "$F/initramfs.img"
for d in $DTBS; do
	[ -f "$KDIR/dtbs/$d" ] || die "no $d in the kernel's device trees ($KDIR/dtbs)"
	mkdir -p "$F/$(dirname "$d")"
	cp "$KDIR/dtbs/$d" "$F/$d"
done
if [ "$BOOT_CHAIN" = rpi ]; then
	cp "$UBOOT"/firmware/* "$F/"
	cp "$UBOOT/u-boot.bin" "$F/u-boot.bin"
	cat >"$F/config.txt" <<EOF
# Kiln: the GPU firmware starts U-Boot (64-bit), which runs boot.scr.
arm_64bit=1
kernel=u-boot.bin
enable_uart=1
EOF
fi
# boot.scr: the board's command line and RAM base, then boot/uboot/boot.cmd
case $CMDLINE in *\"* | *\$*) die "CMDLINE must not hold \" or \$ (it goes into boot.scr)" ;; esac
{
	echo "setenv kiln_cmdline \"$CMDLINE\""
	echo "setenv kiln_ram $UBOOT_RAM"
	cat "$ROOT/boot/uboot/boot.cmd"
} >"$OUT.w/boot.cmd"
mkimage -q -A arm64 -O linux -T script -C none -n "Kiln boot script" \
	-d "$OUT.w/boot.cmd" "$F/boot.scr" || die "mkimage failed"
# A/B state: both copies valid, state0 newer (tries: 3 each)
for n in 0 1; do
	printf 'BOOT_ORDER=A B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nKILN_SEQ=%s\n' $((1 - n)) \
		>"$OUT.w/state$n.txt"
	mkenvimage -s 4096 -p 0 -o "$F/state$n.env" "$OUT.w/state$n.txt" ||
		die "mkenvimage failed"
done
find "$F" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

# FAT32, filled in a fixed order with fixed times (mtools reads
# SOURCE_DATE_EPOCH for what it creates, -m keeps the files' mtimes)
truncate -s "${BOOT_SIZE_MIB}M" "$OUT.vfat"
mkfs.vfat -F 32 -n KILN-BOOT -i "$vol_id" --invariant "$OUT.vfat" >/dev/null ||
	die "mkfs.vfat failed"
(cd "$F" && find . -mindepth 1 -type d | sed 's|^\./||' | LC_ALL=C sort) >"$OUT.w/dirs"
(cd "$F" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) >"$OUT.w/files"
while read -r d; do
	MTOOLS_SKIP_CHECK=1 mmd -i "$OUT.vfat" "::$d" || die "mmd $d failed"
done <"$OUT.w/dirs"
while read -r f; do
	MTOOLS_SKIP_CHECK=1 mcopy -m -i "$OUT.vfat" "$F/$f" "::$f" || die "mcopy $f failed"
done <"$OUT.w/files"

truncate -s "${total}M" "$OUT.tmp"
sfdisk -q "$OUT.tmp" <<SFDISK || die "sfdisk failed"
label: dos
label-id: 0x$disk_id
start=1MiB, size=${BOOT_SIZE_MIB}MiB, type=c, bootable
size=${ROOT_SIZE_MIB}MiB, type=83
size=${ROOT_SIZE_MIB}MiB, type=83
size=${DATA_SIZE_MIB}MiB, type=83
SFDISK
dd if="$OUT.vfat" of="$OUT.tmp" bs=1M seek=1 conv=notrunc status=none ||
	die "cannot write the FAT"
for slot in 0 1; do
	dd if="$ROOTFS" of="$OUT.tmp" bs=1M seek=$((1 + BOOT_SIZE_MIB + slot * ROOT_SIZE_MIB)) \
		conv=notrunc status=none || die "cannot write root slot $slot"
done
# ext4 as boot/mkdisk.sh makes it (fixed UUID, hash seed, owner, time;
# tables written now)
E2FSPROGS_FAKE_TIME=$SOURCE_DATE_EPOCH mke2fs -q -F -t ext4 -L data \
	-U "$u_fs" \
	-E "hash_seed=$u_hash,offset=$(((1 + BOOT_SIZE_MIB + 2 * ROOT_SIZE_MIB) * MIB)),nodiscard,lazy_itable_init=0,lazy_journal_init=0,root_owner=0:0" \
	"$OUT.tmp" "$((DATA_SIZE_MIB * 1024))k" || die "mke2fs failed"
rm -rf "$OUT.boot"
mv "$F" "$OUT.boot"
mv "$OUT.tmp" "$OUT"

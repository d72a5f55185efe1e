#!/bin/sh
# mkdisk.sh BOARD_CONF ROOTFS.erofs OUT.img -- the board's disk: a GPT with
# rootA and rootB (both the same EROFS image, so either slot boots) and data
# (an empty ext4), laid out by sfdisk and filled with dd and mke2fs.
# Partition and filesystem UUIDs derive from the board's name, so the disk
# is the same byte for byte from the same inputs.
set -eu
umask 022
CONF=$1 ROOTFS=$2 OUT=$3
BOARD=$(basename "$(dirname "$CONF")")
. "$CONF"
: "${SOURCE_DATE_EPOCH:?SOURCE_DATE_EPOCH must be set}"

die() {
	echo "mkdisk: $*" >&2
	exit 1
}

# uuid NAME: a stable UUID (version 4 layout) from the board and NAME.
# (sha256sum's status is checked, and each UUID made before it is used.)
uuid() {
	h=$(echo "kiln:$BOARD:$1" | sha256sum) || die "sha256sum failed"
	echo "$h" | sed -E 's/^(.{8})(.{4}).(.{3}).(.{3})(.{12}).*/\1-\2-4\3-8\4-\5/'
}

MIB=1048576
root_bytes=$(stat -c %s "$ROOTFS")
[ "$root_bytes" -le $((ROOT_SIZE_MIB * MIB)) ] ||
	die "root image is $((root_bytes / MIB + 1)) MiB, over ROOT_SIZE_MIB=$ROOT_SIZE_MIB"
# 1 MiB for the GPT and alignment at each end
total=$((1 + 2 * ROOT_SIZE_MIB + DATA_SIZE_MIB + 1))
u_disk=$(uuid disk) u_rootA=$(uuid rootA) u_rootB=$(uuid rootB) u_data=$(uuid data)
u_fs=$(uuid data-fs) u_hash=$(uuid data-hash)
trap 'rm -f "$OUT.tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
rm -f "$OUT.tmp"
truncate -s "${total}M" "$OUT.tmp"
ROOT_TYPE=4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709	# Linux root (x86-64)
[ "$ARCH" = aarch64 ] && ROOT_TYPE=B921B045-1DF0-41C3-AF44-4C6F280D3FAE
sfdisk -q "$OUT.tmp" <<SFDISK || die "sfdisk failed"
label: gpt
label-id: $u_disk
start=1MiB, size=${ROOT_SIZE_MIB}MiB, type=$ROOT_TYPE, name=rootA, uuid=$u_rootA
size=${ROOT_SIZE_MIB}MiB, type=$ROOT_TYPE, name=rootB, uuid=$u_rootB
size=${DATA_SIZE_MIB}MiB, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, name=data, uuid=$u_data
SFDISK
for slot in 0 1; do
	dd if="$ROOTFS" of="$OUT.tmp" bs=1M seek=$((1 + slot * ROOT_SIZE_MIB)) \
		conv=notrunc status=none
done
# ext4 with fixed UUID, hash seed, owner and time: reproducible. mke2fs
# would otherwise choose lazy inode-table and journal init and discarding
# by what the host offers; fixed here, and the tables written now, so the
# device's first mount has nothing left to zero.
E2FSPROGS_FAKE_TIME=$SOURCE_DATE_EPOCH mke2fs -q -F -t ext4 -L data \
	-U "$u_fs" \
	-E "hash_seed=$u_hash,offset=$(((1 + 2 * ROOT_SIZE_MIB) * MIB)),nodiscard,lazy_itable_init=0,lazy_journal_init=0,root_owner=0:0" \
	"$OUT.tmp" "$((DATA_SIZE_MIB * 1024))k" || die "mke2fs failed"
mv "$OUT.tmp" "$OUT"

# shellcheck shell=sh
# Sourced (busybox ash, POSIX sh) by kiln-install and mark-good, after
# /etc/kiln/bootstate: the boot partition that holds the A/B state, on the
# running root's disk, and its mount point. Not run on its own (mode 0644).

BOOTFS_DIR=/run/kiln/bootfs

# bootfs_find: BOOT_SLOT and BOOT_ROOT as /init recorded them in
# /run/kiln/boot (empty when it did not), BOOT_DISK the root's disk and
# BOOTFS_DEV partition BOOTSTATE_PART on it. The disk is the root
# partition's name without its number (/dev/vda2 -> /dev/vda,
# /dev/mmcblk0p2 -> /dev/mmcblk0p): the slots are partitions 2 (A) and 3
# (B) of the disk that holds the state too (boot/mkabdisk.sh).
# shellcheck disable=SC2034 # BOOT_SLOT: for the scripts that source this
bootfs_find() {
	BOOT_SLOT='' BOOT_ROOT=''
	for kv in $(cat /run/kiln/boot 2>/dev/null); do
		case $kv in
		slot=*) BOOT_SLOT=${kv#slot=} ;;
		root=*) BOOT_ROOT=${kv#root=} ;;
		esac
	done
	BOOT_DISK=$(echo "$BOOT_ROOT" | sed 's/[0-9]*$//')
	BOOTFS_DEV=$BOOT_DISK$BOOTSTATE_PART
}

# bootfs_mount: BOOTFS_DEV's FAT on BOOTFS_DIR; mount's error, if any,
# goes to stderr (mark-good drops it, kiln-install shows it)
bootfs_mount() {
	mkdir -p "$BOOTFS_DIR"
	mount -t vfat -o noatime "$BOOTFS_DEV" "$BOOTFS_DIR"
}

# Boot tests: the default board's image, built by `make image`, booted in
# QEMU (KVM when usable, TCG otherwise). The checks run on the device
# (boot/skel/usr/libexec/kiln/selftest) and report over the serial console.

BOARD_OUT=out/qemu-x86_64

# boot_log LOG [DISK] [CMDLINE...]: boot headless; the log is kept under
# out/test-logs and its last lines shown on failure.
boot_qemu() {
	local log=$1 disk=$2
	shift 2
	# -snapshot: a boot mounts /data and would change the disk as built
	DISK=$disk SERIAL_LOG=$log TIMEOUT=${BOOT_TIMEOUT:-300} QEMU_OPTS=-snapshot \
		qemu/run.sh "$BOARD_OUT" "$@" || {
		echo "qemu exited with $?; last lines of $log:"
		tail -n 25 "$log"
		return 1
	}
}

build_image() {
	make --no-print-directory image >"$T/make.log" 2>&1 ||
		{ tail -n 30 "$T/make.log"; fail "make image failed"; }
}

once_boot_qemu_x86_64() {
	build_image
	local log=$LOGDIR/boot_qemu_x86_64.serial
	boot_qemu "$log" "$BOARD_OUT/disk.img" kiln.selftest
	tr -d '\r' <"$log" >"$T/log"
	grep -x 'KILN-CHECK root=erofs ok' "$T/log" || fail "/ is not EROFS"
	grep -x 'KILN-CHECK slot=A ok' "$T/log" || fail "not slot A"
	grep -x 'KILN-CHECK data=ext4 ok' "$T/log" || fail "no data partition"
	grep -E '^KILN-CHECK fsck.erofs=/dev/vda1 ok$' "$T/log" ||
		fail "fsck.erofs on the device failed"
	grep -x 'KILN-SELFTEST PASS' "$T/log" || fail "self-test did not pass"
}

# root= by PARTUUID picks slot B: the device reports what it runs from.
once_boot_partuuid_slot_b() {
	build_image
	local uuid
	uuid=$(sfdisk --part-uuid "$BOARD_OUT/disk.img" 2)
	boot_qemu "$T/serial" "$BOARD_OUT/disk.img" kiln.selftest \
		kiln.slot=B "root=PARTUUID=$uuid"
	tr -d '\r' <"$T/serial" >"$T/log"
	grep -x 'KILN-CHECK slot=B ok' "$T/log" || { tail "$T/log"; fail "not slot B"; }
	grep -x 'KILN-SELFTEST PASS' "$T/log"
}

# A corrupt root slot stops the boot with a clear message, not a hang:
# with panic=1, /init reboots and QEMU (-no-reboot) exits.
once_boot_corrupt_root() {
	build_image
	cp "$BOARD_OUT/disk.img" "$T/disk.img"
	# rootA's superblock (1 MiB into the disk, 1 KiB into the partition)
	dd if=/dev/zero of="$T/disk.img" bs=1024 seek=1025 count=1 \
		conv=notrunc status=none
	BOOT_TIMEOUT=120 boot_qemu "$T/serial" "$T/disk.img" panic=1 kiln.selftest
	tr -d '\r' <"$T/serial" >"$T/log"
	grep 'kiln-init: FATAL: cannot mount /dev/vda1 (slot A) as EROFS' "$T/log" ||
		{ tail "$T/log"; fail "no clear message"; }
	grep -q 'KILN-SELFTEST' "$T/log" && fail "booted a corrupt root"
	grep 'kiln-init: rebooting' "$T/log"
}

# Nothing changed: nothing rebuilt. Rebuilt from clean with the same inputs:
# the same bytes (busybox and the kernel's .deb come from the cache, as in
# any warm build).
once_image_reproducible() {
	build_image
	local arts="rootfs.erofs initramfs.img disk.img vmlinuz manifest.txt busybox"
	(cd "$BOARD_OUT" && stat -c '%n %Y.%y' $arts) >"$T/mtimes1"
	sleep 1
	build_image
	(cd "$BOARD_OUT" && stat -c '%n %Y.%y' $arts) >"$T/mtimes2"
	diff "$T/mtimes1" "$T/mtimes2" || fail "a second make image did work"
	grep '^sha256' "$BOARD_OUT/manifest.txt" >"$T/before"
	cp "$BOARD_OUT/disk.img" "$T/disk.before"
	# a clean build: the kernel unpacked again, busybox copied from the cache
	rm -rf "$BOARD_OUT"
	build_image
	grep '^sha256' "$BOARD_OUT/manifest.txt" >"$T/after"
	diff "$T/before" "$T/after" || {
		# where the disks differ, to tell which part is not reproducible
		cmp -l "$T/disk.before" "$BOARD_OUT/disk.img" | head -n 20
		fail "artifacts differ"
	}
}

# ROOTFS_OVERLAY adds to the board's root; ROOTFS_DIR replaces it; a build
# without them drops what they brought. The kernel reads each root slot.
once_image_rootfs_trees() {
	need_root
	mkdir -p "$T/ov/etc" "$T/dir/etc" "$T/dir/sbin"
	echo overlay >"$T/ov/etc/kiln-overlay"
	echo prepared >"$T/dir/etc/kiln-prepared"
	cp "$BOARD_OUT/busybox" "$T/dir/sbin/init" 2>/dev/null || true
	make --no-print-directory image ROOTFS_OVERLAY="$T/ov" >"$T/make.log" 2>&1 ||
		{ tail "$T/make.log"; fail "make image with ROOTFS_OVERLAY failed"; }
	mount_erofs "$BOARD_OUT/rootfs.erofs" "$T/m1"
	[ "$(cat "$T/m1/etc/kiln-overlay")" = overlay ] || fail "overlay not in the root"
	[ -e "$T/m1/bin/busybox" ] || fail "the board's root lost busybox"
	make --no-print-directory image ROOTFS_DIR="$T/dir" >"$T/make.log" 2>&1 ||
		{ tail "$T/make.log"; fail "make image with ROOTFS_DIR failed"; }
	mount_erofs "$BOARD_OUT/rootfs.erofs" "$T/m2"
	[ "$(cat "$T/m2/etc/kiln-prepared")" = prepared ] || fail "ROOTFS_DIR not packed"
	[ ! -e "$T/m2/bin/busybox" ] || fail "ROOTFS_DIR got the board's busybox"
	[ -x "$T/m2/usr/bin/fsck.erofs" ] || fail "no fsck.erofs in the packed tree"
	for d in proc sys dev run tmp data; do
		[ -d "$T/m2/$d" ] || fail "no /$d mount point"
	done
	build_image
	mount_erofs "$BOARD_OUT/rootfs.erofs" "$T/m3"
	[ ! -e "$T/m3/etc/kiln-prepared" ] && [ ! -e "$T/m3/etc/kiln-overlay" ] ||
		fail "a plain make image kept an earlier tree"
	[ -e "$T/m3/bin/busybox" ] || fail "the board's root is not back"
}

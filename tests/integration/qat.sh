# Board x86-qat: QAT drivers and firmware in the initramfs, a deflate root
# in big pclusters, and /init's choice of decompression. QEMU has no QAT
# device and Debian's 6.12 kernel no EROFS accelerator switch, so the boot
# must say it falls back to software, and the deflate root must work.

# (boots through tests/lib/qemu.sh; the image in the tests' own directory,
# never the user's out/x86-qat)
. tests/lib/qemu.sh
QAT_OUT=out/test-images/x86-qat

build_qat_image() {
	(umask 022 && make --no-print-directory image board=x86-qat IMAGE_OUT="$QAT_OUT") \
		>"$T/make.log" 2>&1 ||
		{ tail -n 30 "$T/make.log"; fail "make image board=x86-qat failed"; }
}

# boot_qat LOG [CMDLINE...]: a boot that does not end by itself fails the
# test, saying why; LOG.txt is LOG without carriage returns.
boot_qat() {
	local log=$1
	shift
	qemu_boot "$QAT_OUT" "$log" "$@" || fail "boot: $QEMU_WHY"
	tr -d '\r' <"$log" >"$log.txt"
}

# superblock u16 at byte OFF of IMAGE (little-endian)
sb_u16() { od -An -tu2 -j $((1024 + $2)) -N2 "$1" | tr -d ' '; }
sb_u32() { od -An -tu4 -j $((1024 + $2)) -N4 "$1" | tr -d ' '; }

once_qat_image_contents() {
	build_qat_image
	local img=$QAT_OUT/rootfs.erofs algs incompat
	# available_compr_algs (byte 84): deflate (bit 2) alone; incompat
	# (byte 80) has BIG_PCLUSTER (0x2) for the 128 KiB pclusters
	algs=$(sb_u16 "$img" 84)
	[ "$algs" = 4 ] || fail "root image algorithms 0x$(printf %x "$algs"), not deflate alone"
	incompat=$(sb_u32 "$img" 80)
	[ $((incompat & 2)) = 2 ] || fail "root image has no big pclusters (incompat $incompat)"
	mkdir "$T/mnt"
	mount -t erofs -o ro "$img" "$T/mnt" || fail "kernel cannot mount the deflate root"
	[ "$(cat "$T/mnt/etc/hostname")" = kiln-x86-qat ] || { umount "$T/mnt"; fail "not the board's overlay"; }
	umount "$T/mnt"

	# the initramfs: GEN2 drivers, their firmware byte for byte
	mkdir "$T/i"
	zstd -qdc "$QAT_OUT/initramfs.img" | (cd "$T/i" && cpio --quiet -id) ||
		fail "initramfs does not unpack"
	local kver fw
	kver=$(cat "$QAT_OUT/kernel/kver")
	for m in qat_c62x qat_c3xxx qat_dh895xcc intel_qat; do
		grep -q "/$m.ko\$" "$T/i/lib/modules/$kver/kiln.load" || fail "$m not in kiln.load"
	done
	for fw in qat_c62x.bin qat_c62x_mmp.bin qat_c3xxx.bin qat_c3xxx_mmp.bin \
		qat_895xcc.bin qat_895xcc_mmp.bin; do
		cmp "$T/i/lib/firmware/$fw" "$QAT_OUT/firmware/tree/lib/firmware/$fw" ||
			fail "$fw not in the initramfs as packaged"
		grep -q "^firmware $fw " "$QAT_OUT/manifest.txt" || fail "manifest does not list $fw"
	done
	grep -q '^firmware-package firmware-intel-misc ' "$QAT_OUT/manifest.txt" ||
		fail "manifest does not name the firmware package"
	# the firmware each driver asks for, per modinfo, is all there
	for m in qat_c62x qat_c3xxx qat_dh895xcc; do
		for fw in $(modinfo -F firmware "$(find "$T/i/lib/modules" -name "$m.ko")"); do
			[ -f "$T/i/lib/firmware/$fw" ] || fail "$m asks for $fw, missing"
		done
	done
}

# firmware a module names but the board's packages lack is reported, not
# silently dropped (bnx2's is in firmware-bnx2, not in firmware-intel-misc)
once_qat_firmware_missing_reported() {
	build_qat_image
	local kver
	kver=$(cat "$QAT_OUT/kernel/kver")
	kmod/pick-modules.sh "$kver" "$QAT_OUT/kernel/tree" "$T/d" qat_c62x bnx2 \
		--optional no_such_module 2>"$T/err" || fail "pick-modules failed"
	grep -q 'no module no_such_module (skipped)' "$T/err" || fail "optional module not reported"
	kmod/pick-firmware.sh "$kver" "$QAT_OUT/firmware/tree" "$T/d" >"$T/fw" ||
		fail "pick-firmware failed"
	grep -q '^firmware qat_c62x.bin qat_c62x$' "$T/fw" || fail "qat_c62x.bin not picked"
	grep -q '^firmware-missing bnx2/.* bnx2$' "$T/fw" || fail "bnx2 firmware not reported missing"
	[ ! -e "$T/d/lib/firmware/bnx2" ] || fail "missing firmware left a directory"
	if kmod/pick-modules.sh "$kver" "$QAT_OUT/kernel/tree" "$T/e" no_such_module 2>"$T/err2"; then
		fail "a missing required module was accepted"
	fi
}

once_boot_x86_qat_fallback() {
	build_qat_image
	boot_qat "$LOGDIR/boot_x86_qat.serial" kiln.selftest
	local log=$LOGDIR/boot_x86_qat.serial.txt
	grep -x 'kiln-init: decompression: software, not qat_deflate: kernel .* has no /sys/fs/erofs/accel (EROFS_FS_ZIP_ACCEL, Linux 6.16+)' "$log" ||
		fail "no fallback message"
	if grep -q 'module qat_c62x.ko not loaded' "$log"; then fail "qat_c62x did not load"; fi
	grep -x 'KILN-CHECK root=erofs ok' "$log" || fail "/ is not EROFS"
	grep -E '^KILN-CHECK fsck.erofs=/dev/vda1 ok$' "$log" || fail "fsck of the deflate root failed"
	grep -x 'KILN-SELFTEST PASS' "$log" || fail "self-test did not pass"
	# kiln.accel=off: no attempt, no message
	boot_qat "$T/serial" kiln.selftest kiln.accel=off
	if grep -q 'decompression:' "$T/serial.txt"; then fail "kiln.accel=off still tried"; fi
	grep -x 'KILN-SELFTEST PASS' "$T/serial.txt" || fail "self-test did not pass with accel off"
}

# a firmware package the archive does not have: one clear line, exit 1,
# nothing left where the firmware tree would be
once_qat_firmware_unknown_package() {
	cp board/x86-qat/board.conf "$T/board.conf"
	echo 'FIRMWARE_PKGS="firmware-no-such-thing/bookworm"' >>"$T/board.conf"
	local rc=0
	KILN_CACHE=$T/cache kmod/fetch-firmware.sh "$T/board.conf" "$T/fw" 2>"$T/err" || rc=$?
	cat "$T/err"
	[ "$rc" = 1 ] || fail "exit $rc, not 1"
	[ "$(wc -l <"$T/err")" = 1 ] || fail "not one line"
	grep -qx "fetch-firmware: firmware-no-such-thing: not in Debian's bookworm non-free-firmware" "$T/err" ||
		fail "unclear message"
	if [ -e "$T/fw" ] || [ -e "$T/fw.new" ]; then fail "a firmware tree was left"; fi
}

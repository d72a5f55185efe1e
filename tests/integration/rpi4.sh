# Raspberry Pi 4 board (board/rpi4): the SD card image built by
# `make image board=rpi4` into the tests' own directory
# (out/test-images/rpi4), looked at from the outside, and booted through
# its real boot chain (U-Boot, boot.scr, the A/B state on the FAT, Linux,
# /init, the EROFS root) under QEMU's raspi3b, which the same card boots
# (the GPU firmware is not emulated: QEMU starts U-Boot itself).

. tests/lib/abboot.sh

RPI_OUT=out/test-images/rpi4
RPI_DTB=broadcom/bcm2837-rpi-3-b.dtb

rpi_build() {
	ab_build rpi4
	[ -f "$RPI_OUT/sdcard.img" ] || fail "no sdcard.img"
}

# The partition table, the FAT's files, the root slots, the binaries in
# them, the boot script, the A/B state and the manifest.
once_rpi4_image_inspect() {
	rpi_build
	local img=$RPI_OUT/sdcard.img size f n
	size=$(stat -c %s "$img")
	[ $((size & (size - 1))) = 0 ] || fail "sdcard.img is $size bytes, not a power of two"
	sfdisk -J "$img" >"$T/pt.json" || fail "sfdisk -J failed"
	python3 - "$T/pt.json" "$size" <<'PY' || fail "partition table: $(cat "$T/pt.json")"
import json, sys
t = json.load(open(sys.argv[1]))["partitiontable"]
size = int(sys.argv[2]) // 512
assert t["label"] == "dos", t["label"]
p = t["partitions"]
assert [x["type"] for x in p] == ["c", "83", "83", "83"], p
assert p[0].get("bootable") is True and not any(x.get("bootable") for x in p[1:]), p
assert p[0]["start"] == 2048, p
for a, b in zip(p, p[1:]):
    assert a["start"] + a["size"] <= b["start"], (a, b)
assert p[1]["size"] == p[2]["size"], p
assert p[3]["start"] + p[3]["size"] <= size, p
PY
	MTOOLS_SKIP_CHECK=1 mdir -/ -b -i "$img@@1M" :: >"$T/fat" || fail "mdir failed: no FAT"
	cat "$T/fat"
	for f in config.txt u-boot.bin start4.elf fixup4.dat bootcode.bin start.elf fixup.dat \
		boot.scr state0.env state1.env vmlinuz initramfs.img \
		broadcom/bcm2711-rpi-4-b.dtb broadcom/bcm2711-rpi-400.dtb \
		broadcom/bcm2711-rpi-cm4-io.dtb broadcom/bcm2837-rpi-3-b-plus.dtb $RPI_DTB; do
		grep -qx "::/$f" "$T/fat" || fail "$f is not on the FAT"
	done
	MTOOLS_SKIP_CHECK=1 mtype -i "$img@@1M" ::config.txt >"$T/config.txt"
	for f in arm_64bit=1 kernel=u-boot.bin enable_uart=1; do
		grep -qx "$f" "$T/config.txt" || fail "config.txt has no $f"
	done
	MTOOLS_SKIP_CHECK=1 mcopy -n -i "$img@@1M" ::vmlinuz "$T/vmlinuz.gz"
	gzip -dc "$T/vmlinuz.gz" >"$T/vmlinuz" || fail "vmlinuz is not gzip-compressed"
	file "$T/vmlinuz" | grep -q 'Linux kernel ARM64 boot executable Image' ||
		fail "vmlinuz is not an arm64 Image: $(file "$T/vmlinuz")"
	cmp "$T/vmlinuz" "$RPI_OUT/vmlinuz" || fail "vmlinuz is not the kernel's Image"
	# the A/B state: both copies valid, state0 the newer, 3 tries each
	ab_state "$img" 0 >"$T/s0"
	ab_state "$img" 1 >"$T/s1"
	cat "$T/s0" "$T/s1"
	printf 'BOOT_ORDER=A B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nKILN_SEQ=1\n' | diff - "$T/s0" ||
		fail "state0.env"
	printf 'BOOT_ORDER=A B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nKILN_SEQ=0\n' | diff - "$T/s1" ||
		fail "state1.env"
	# the boot script: a U-Boot script image; the files it loads are there
	MTOOLS_SKIP_CHECK=1 mcopy -n -i "$img@@1M" ::boot.scr "$T/boot.scr"
	mkimage -l "$T/boot.scr" >"$T/scr.info" || fail "boot.scr is no U-Boot image"
	grep -q 'Script' "$T/scr.info" || fail "boot.scr is not a script: $(cat "$T/scr.info")"
	grep -q 'ARM64\|AArch64' "$T/scr.info" || fail "boot.scr is not for arm64: $(cat "$T/scr.info")"
	# (64-byte header, a table of lengths ended by 0, then the script)
	tail -c +73 "$T/boot.scr" | tr -d '\0' >"$T/boot.cmd"
	head -n 1 "$T/boot.cmd" | grep -q '^setenv kiln_cmdline "console=ttyS1,115200' ||
		fail "the script does not start with the board's command line"
	sed -n 2p "$T/boot.cmd" | grep -qx 'setenv kiln_ram 0x0' || fail "the script's second line is not kiln_ram"
	tail -n +3 "$T/boot.cmd" | cmp - boot/uboot/boot.cmd || fail "boot.scr is not boot/uboot/boot.cmd"
	sed -n 's/^.*load \${devtype} \${kiln_fat} \${[a-z_]*} \([^ ;]*\).*/\1/p' "$T/boot.cmd" |
		sort -u >"$T/loads"
	cat "$T/loads"
	grep -qx 'vmlinuz' "$T/loads" || fail "the script loads no vmlinuz"
	# shellcheck disable=SC2016 # the script's own ${...}, as written
	while read -r f; do
		case $f in
		'${fdtfile}') f=$RPI_DTB ;;	# what U-Boot sets on a Pi 3 (and QEMU's raspi3b)
		'state${kiln_n}.env') f=state0.env ;;
		cmdline.env) continue ;;	# the device's own, optional
		esac
		grep -qx "::/$f" "$T/fat" || fail "the script loads $f, not on the FAT"
	done <"$T/loads"
	# shellcheck disable=SC2016
	grep -q 'fatwrite ${devtype} ${kiln_fat} ${kiln_out} state${kiln_next}.env 0x1000' "$T/boot.cmd" ||
		fail "the script does not write the state"
	# the root slots: the same EROFS image, which passes fsck (Kiln's, and
	# erofs-utils 1.5)
	sfdisk -d "$img" | sed -n 's/.*start= *\([0-9]*\), size= *\([0-9]*\).*/\1 \2/p' >"$T/parts"
	n=0
	while read -r start sz; do
		n=$((n + 1))
		[ $n = 2 ] || [ $n = 3 ] || continue
		dd if="$img" of="$T/root$n" bs=512 skip="$start" count="$sz" status=none
		"$BIN/fsck.erofs" "$T/root$n" || fail "slot in partition $n fails fsck.erofs"
		oracle_fsck "$T/root$n" || fail "slot in partition $n fails erofs-utils' fsck.erofs"
		cmp -n "$(stat -c %s "$RPI_OUT/rootfs.erofs")" "$T/root$n" "$RPI_OUT/rootfs.erofs" ||
			fail "partition $n is not rootfs.erofs"
	done <"$T/parts"
	# the device's binaries: static aarch64
	"$BIN/fsck.erofs" --extract="$T/root" "$T/root2" >/dev/null || fail "extract failed"
	grep -qx 'BOOTSTATE_PART=1' "$T/root/etc/kiln/bootstate" ||
		fail "no /etc/kiln/bootstate: the slot would never be marked good"
	for f in bin/busybox usr/bin/fsck.erofs usr/bin/mkfs.erofs usr/bin/kiln-bootstate; do
		file -L "$T/root/$f" >"$T/file"
		grep -q 'ELF 64-bit LSB .*ARM aarch64' "$T/file" || fail "$f: $(cat "$T/file")"
		grep -q 'statically linked' "$T/file" || fail "$f is not static: $(cat "$T/file")"
	done
	# the data partition: ext4
	dd if="$img" of="$T/data" bs=512 skip="$(sed -n 4p "$T/parts" | cut -d' ' -f1)" \
		count=4096 status=none
	file "$T/data" | grep -q 'ext4 filesystem data' || fail "no ext4 in partition 4"
	for f in "sha256 .* sdcard.img $size" "boot-package raspi-firmware " "boot-package u-boot-rpi " \
		"kernel-package linux-image-.*-arm64 "; do
		assert_grep "^$f" "$RPI_OUT/manifest.txt"
	done
}

# The card boots slot A through U-Boot and boot.scr, /init finds the root
# and data by the MBR's PARTUUIDs, the root's rcS runs and the self-test
# passes; U-Boot counted the try in the other copy of the state
# (state1.env, KILN_SEQ 2), and the booted system, once up, gave slot A its
# tries back with kiln-bootstate mark-good (state0.env, KILN_SEQ 3).
once_rpi4_boot_qemu() {
	rpi_build
	cp "$RPI_OUT/sdcard.img" "$T/sd.img"
	local t0=$SECONDS
	ab_boot rpi4 "$T/sd.img" "$LOGDIR/rpi4_boot_qemu.serial"
	echo "power-on to the self-test's verdict: $((SECONDS - t0)) s (with up to 10 s of qemu_boot's wait for a power-off)"
	local log=$LOGDIR/rpi4_boot_qemu.serial.txt
	ab_expect_lines "$log" \
		'Found U-Boot script /boot.scr' \
		'kiln: state0.env: BOOT_ORDER=A B BOOT_A_LEFT=3 BOOT_B_LEFT=3 KILN_SEQ=1' \
		'kiln: booting slot A (tries left 2)' 'kiln: state1.env written (KILN_SEQ=2)' \
		'kiln-init: root: /dev/mmcblk0p2 (slot A)' 'kiln-init: data: /dev/mmcblk0p4'
	grep -q 'kiln: fdtfile=broadcom/bcm2837-rpi-3-b.dtb bootargs=.*kiln.slot=A root=PARTUUID=[0-9a-f]\{8\}-02 kiln.data=PARTUUID=[0-9a-f]\{8\}-04' "$log" ||
		fail "U-Boot's fdtfile or bootargs"
	grep -q 'erofs: (device mmcblk0p2): mounted' "$log" || fail "slot A not mounted as EROFS"
	grep -q '^kiln: slot=A root=/dev/mmcblk0p2, up in' "$log" || fail "no rcS line from slot A"
	grep -q '^kiln: slot marked good (/dev/mmcblk0p1): order=A B a_left=3 b_left=3 seq=3' "$log" ||
		fail "slot A not marked good"
	ab_selftest_passed "$LOGDIR/rpi4_boot_qemu.serial" A
	ab_expect_state "$T/sd.img" 0 'BOOT_A_LEFT=3' 'BOOT_B_LEFT=3' 'BOOT_ORDER=A B' 'KILN_SEQ=3'
	ab_expect_state "$T/sd.img" 1 'BOOT_A_LEFT=2' 'BOOT_B_LEFT=3' 'BOOT_ORDER=A B' 'KILN_SEQ=2'
}

# Slot A broken (its root zeroed) and out of tries in the newer copy
# (state1.env, KILN_SEQ 99): U-Boot takes that copy over state0.env
# (KILN_SEQ 5, tries left), says why it falls back, boots B, and writes
# state0.env with KILN_SEQ 100.
once_rpi4_boot_fallback_b() {
	rpi_build
	cp "$RPI_OUT/sdcard.img" "$T/sd.img"
	ab_break_slot "$T/sd.img" 2
	ab_put_state "$T/sd.img" 0 "$(printf 'BOOT_ORDER=A B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nKILN_SEQ=5')"
	ab_put_state "$T/sd.img" 1 "$(printf 'BOOT_ORDER=A B\nBOOT_A_LEFT=0\nBOOT_B_LEFT=3\nKILN_SEQ=99')"
	ab_boot rpi4 "$T/sd.img" "$T/serial"
	ab_expect_lines "$T/serial.txt" \
		'kiln: state1.env: BOOT_ORDER=A B BOOT_A_LEFT=0 BOOT_B_LEFT=3 KILN_SEQ=99' \
		'kiln: slot A has no tries left, falling back to B' \
		'kiln: booting slot B (tries left 2)' 'kiln: state0.env written (KILN_SEQ=100)' \
		'kiln-init: root: /dev/mmcblk0p3 (slot B)'
	grep -q '^kiln: slot=B root=/dev/mmcblk0p3, up in' "$T/serial.txt" || fail "no rcS line from slot B"
	ab_selftest_passed "$T/serial" B
	ab_expect_state "$T/sd.img" 0 'BOOT_A_LEFT=0' 'BOOT_B_LEFT=2' 'BOOT_ORDER=A B' 'KILN_SEQ=100'
	# B, up, marked good: its tries back, A's still spent
	ab_expect_state "$T/sd.img" 1 'BOOT_A_LEFT=0' 'BOOT_B_LEFT=3' 'BOOT_ORDER=A B' 'KILN_SEQ=101'
}

# Nothing changed: nothing rebuilt. From clean in another directory, under
# umask 077, at the same epoch: the same bytes (the FAT, the MBR, the
# state copies, boot.scr and the slots). The test's own builds at a fixed
# epoch (a commit made meanwhile would move the default one).
once_rpi4_image_reproducible() {
	local arts="rootfs.erofs initramfs.img sdcard.img vmlinuz manifest.txt busybox" e=1700000000
	mk() {
		make --no-print-directory image board=rpi4 IMAGE_OUT="$1" SOURCE_DATE_EPOCH=$e \
			KILN_KEYS=out/test-images/keys \
			>"$T/make.log" 2>&1 || { tail -n 30 "$T/make.log"; fail "make image failed"; }
	}
	mk "$T/a"
	# shellcheck disable=SC2086 # a list of files
	(cd "$T/a" && stat -c '%n %Y.%y' $arts) >"$T/mtimes1"
	sleep 1
	mk "$T/a"
	# shellcheck disable=SC2086
	(cd "$T/a" && stat -c '%n %Y.%y' $arts) >"$T/mtimes2"
	diff "$T/mtimes1" "$T/mtimes2" || fail "a second make image did work"
	(umask 077 && mk "$T/b")
	grep -E '^(sha256|boot-package|kernel-)' "$T/a/manifest.txt" >"$T/before"
	grep -E '^(sha256|boot-package|kernel-)' "$T/b/manifest.txt" >"$T/after"
	cat "$T/before"
	diff "$T/before" "$T/after" || {
		cmp -l "$T/a/sdcard.img" "$T/b/sdcard.img" | head -n 20
		fail "a clean build under umask 077 differs"
	}
}

# A damaged copy (state0.env, its CRC wrong, KILN_SEQ 50 inside) is not
# used; the valid one (state1.env, BOOT_ORDER "B A") has no slot with tries
# left: U-Boot says so, resets both to 3, boots the first in BOOT_ORDER (B)
# and writes state0.env anew (KILN_SEQ 8).
once_rpi4_boot_reset() {
	rpi_build
	cp "$RPI_OUT/sdcard.img" "$T/sd.img"
	printf 'BOOT_ORDER=A B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nKILN_SEQ=50\n' >"$T/bad.txt"
	mkenvimage -s 4096 -p 0 -o "$T/bad.env" "$T/bad.txt"
	printf 'X' | dd of="$T/bad.env" bs=1 seek=10 conv=notrunc status=none
	MTOOLS_SKIP_CHECK=1 mcopy -o -i "$T/sd.img@@1M" "$T/bad.env" ::state0.env
	ab_put_state "$T/sd.img" 1 "$(printf 'BOOT_ORDER=B A\nBOOT_A_LEFT=0\nBOOT_B_LEFT=0\nKILN_SEQ=7')"
	ab_boot rpi4 "$T/sd.img" "$T/serial"
	ab_expect_lines "$T/serial.txt" \
		'kiln: state0.env is missing or invalid' \
		'kiln: state1.env: BOOT_ORDER=B A BOOT_A_LEFT=0 BOOT_B_LEFT=0 KILN_SEQ=7' \
		'kiln: no slot has tries left (BOOT_ORDER B A): both reset to 3, booting B' \
		'kiln: booting slot B (tries left 2)' 'kiln: state0.env written (KILN_SEQ=8)' \
		'kiln-init: root: /dev/mmcblk0p3 (slot B)'
	grep -q '^kiln: slot=B root=/dev/mmcblk0p3, up in' "$T/serial.txt" || fail "no rcS line from slot B"
	ab_selftest_passed "$T/serial" B
	ab_expect_state "$T/sd.img" 0 'BOOT_A_LEFT=3' 'BOOT_B_LEFT=2' 'BOOT_ORDER=B A' 'KILN_SEQ=8'
	ab_expect_state "$T/sd.img" 1 'BOOT_A_LEFT=3' 'BOOT_B_LEFT=3' 'BOOT_ORDER=B A' 'KILN_SEQ=9'
}

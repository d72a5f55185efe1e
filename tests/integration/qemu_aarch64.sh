# qemu-aarch64 board (board/qemu-aarch64): the generic arm64 board, QEMU's
# virt machine with a virtio disk, booted through Debian's U-Boot
# (qemu_arm64) and the same boot.scr and A/B state as the Raspberry Pi;
# about ten seconds from power-on to userland under TCG, so the tests that
# need many boots (rollback, damaged state) run here.

. tests/lib/abboot.sh

QA_OUT=out/test-images/qemu-aarch64

qa_build() {
	ab_build qemu-aarch64
	[ -f "$QA_OUT/disk.img" ] || fail "no disk.img"
	cp "$QA_OUT/disk.img" "$T/disk.img"
}

# The disk: an MBR with the FAT (bootable), two slots and data; on the FAT
# the script, the state, the kernel and initramfs, and no U-Boot (QEMU
# starts it); the slots pass fsck; the initramfs loads virtio_blk.
once_qemu_aarch64_image() {
	qa_build
	local img=$T/disk.img
	sfdisk -J "$img" >"$T/pt.json" || fail "sfdisk -J failed"
	python3 - "$T/pt.json" <<'PY' || fail "partition table: $(cat "$T/pt.json")"
import json, sys
t = json.load(open(sys.argv[1]))["partitiontable"]
p = t["partitions"]
assert t["label"] == "dos", t["label"]
assert [x["type"] for x in p] == ["c", "83", "83", "83"], p
assert p[0].get("bootable") is True, p
assert p[1]["size"] == p[2]["size"], p
PY
	MTOOLS_SKIP_CHECK=1 mdir -/ -b -i "$img@@1M" :: >"$T/fat" || fail "mdir failed: no FAT"
	cat "$T/fat"
	for f in boot.scr state0.env state1.env vmlinuz initramfs.img; do
		grep -qx "::/$f" "$T/fat" || fail "$f is not on the FAT"
	done
	! grep -qx -e '::/u-boot.bin' -e '::/config.txt' "$T/fat" || fail "a Pi's files on the FAT"
	ab_expect_state "$img" 0 'BOOT_A_LEFT=3' 'BOOT_B_LEFT=3' 'BOOT_ORDER=A B' 'KILN_SEQ=1'
	MTOOLS_SKIP_CHECK=1 mcopy -n -i "$img@@1M" ::boot.scr "$T/boot.scr"
	tail -c +73 "$T/boot.scr" | tr -d '\0' | sed -n 2p | grep -qx 'setenv kiln_ram 0x40000000' ||
		fail "boot.scr does not place the kernel in virt's RAM (1 GiB up)"
	for n in 2 3; do
		start=$(sfdisk -d "$img" | sed -n "s|^$img$n : start= *\([0-9]*\), size= *\([0-9]*\).*|\1 \2|p")
		set -- $start
		dd if="$img" of="$T/root$n" bs=512 skip="$1" count="$2" status=none
		"$BIN/fsck.erofs" "$T/root$n" || fail "slot in partition $n fails fsck.erofs"
	done
	zstd -dc "$QA_OUT/initramfs.img" | cpio -it --quiet >"$T/initramfs.list" ||
		fail "cannot list the initramfs"
	grep -q '/virtio_blk\.ko' "$T/initramfs.list" || fail "no virtio_blk in the initramfs"
	assert_grep '^boot-package u-boot-qemu ' "$QA_OUT/manifest.txt"
	assert_grep '^sha256 [0-9a-f]* disk.img ' "$QA_OUT/manifest.txt"
}

# Power-on to the self-test: U-Boot finds boot.scr on the virtio disk,
# counts slot A's try in state1.env, Linux comes up from slot A, the
# self-test passes, and the booted system gives A its tries back in
# state0.env.
once_qemu_aarch64_boot() {
	qa_build
	local t0=$SECONDS log=$LOGDIR/qemu_aarch64_boot.serial
	ab_boot qemu-aarch64 "$T/disk.img" "$log"
	echo "power-on to the self-test's verdict: $((SECONDS - t0)) s"
	ab_expect_lines "$log.txt" 'Found U-Boot script /boot.scr' \
		'kiln: state0.env: BOOT_ORDER=A B BOOT_A_LEFT=3 BOOT_B_LEFT=3 KILN_SEQ=1' \
		'kiln: booting slot A (tries left 2)' 'kiln: state1.env written (KILN_SEQ=2)' \
		'kiln-init: root: /dev/vda2 (slot A)' 'kiln-init: data: /dev/vda4'
	grep -q '^kiln: fdtfile= bootargs=console=ttyAMA0 .* kiln.slot=A root=PARTUUID=[0-9a-f]\{8\}-02 kiln.data=PARTUUID=[0-9a-f]\{8\}-04 kiln.selftest$' "$log.txt" ||
		fail "bootargs"
	grep -q '^kiln: slot marked good (/dev/vda1): order=A B a_left=3 b_left=3 seq=3' "$log.txt" ||
		fail "slot A not marked good"
	ab_selftest_passed "$log" A
	ab_expect_state "$T/disk.img" 0 'BOOT_A_LEFT=3' 'BOOT_B_LEFT=3' 'BOOT_ORDER=A B' 'KILN_SEQ=3'
	ab_expect_state "$T/disk.img" 1 'BOOT_A_LEFT=2' 'BOOT_B_LEFT=3' 'BOOT_ORDER=A B' 'KILN_SEQ=2'
}

# A slot that cannot boot rolls back by itself: slot A's root is broken
# and it has one try left. Power on once: U-Boot spends A's last try,
# /init cannot mount A's root and reboots (panic=5), U-Boot finds A out
# of tries and falls back to B, which comes up, passes its self-test and
# is marked good.
once_qemu_aarch64_rollback() {
	qa_build
	ab_break_slot "$T/disk.img" 2
	ab_put_state "$T/disk.img" 0 "$(printf 'BOOT_ORDER=A B\nBOOT_A_LEFT=1\nBOOT_B_LEFT=3\nKILN_SEQ=41')"
	ab_put_state "$T/disk.img" 1 "$(printf 'BOOT_ORDER=A B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nKILN_SEQ=40')"
	AB_REBOOT=1 ab_boot qemu-aarch64 "$T/disk.img" "$T/serial"
	ab_expect_lines "$T/serial.txt" \
		'kiln: state0.env: BOOT_ORDER=A B BOOT_A_LEFT=1 BOOT_B_LEFT=3 KILN_SEQ=41' \
		'kiln: booting slot A (tries left 0)' 'kiln: state1.env written (KILN_SEQ=42)' \
		'kiln-init: rebooting in 5 s (panic=5)' \
		'kiln: state1.env: BOOT_ORDER=A B BOOT_A_LEFT=0 BOOT_B_LEFT=3 KILN_SEQ=42' \
		'kiln: slot A has no tries left, falling back to B' \
		'kiln: booting slot B (tries left 2)' 'kiln: state0.env written (KILN_SEQ=43)' \
		'kiln-init: root: /dev/vda3 (slot B)'
	grep -q '^kiln-init: FATAL: cannot mount /dev/vda2 (slot A)' "$T/serial.txt" ||
		fail "slot A's failure not reported"
	ab_selftest_passed "$T/serial" B
	ab_expect_state "$T/disk.img" 0 'BOOT_A_LEFT=0' 'BOOT_B_LEFT=2' 'BOOT_ORDER=A B' 'KILN_SEQ=43'
	ab_expect_state "$T/disk.img" 1 'BOOT_A_LEFT=0' 'BOOT_B_LEFT=3' 'BOOT_ORDER=A B' 'KILN_SEQ=44'
}

# A state copy cut short, as a power cut during U-Boot's fatwrite or
# kiln-bootstate's write can leave the newer one: its first 1000 bytes are
# whole (the CRC and every variable), the rest is gone. U-Boot does not
# trust it (it is not 4096 bytes), takes the other copy, boots slot A from
# it and writes the damaged copy anew.
once_qemu_aarch64_state_cut_short() {
	qa_build
	ab_put_state "$T/disk.img" 0 "$(printf 'BOOT_ORDER=A B\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nKILN_SEQ=8')"
	ab_put_state "$T/disk.img" 1 "$(printf 'BOOT_ORDER=B A\nBOOT_A_LEFT=3\nBOOT_B_LEFT=3\nKILN_SEQ=9')"
	MTOOLS_SKIP_CHECK=1 mcopy -n -i "$T/disk.img@@1M" ::state1.env "$T/s1.env"
	head -c 1000 "$T/s1.env" >"$T/s1.cut"
	ab_put_file "$T/disk.img" state1.env "$T/s1.cut"
	ab_boot qemu-aarch64 "$T/disk.img" "$T/serial"
	ab_expect_lines "$T/serial.txt" 'kiln: state1.env is missing or invalid' \
		'kiln: state0.env: BOOT_ORDER=A B BOOT_A_LEFT=3 BOOT_B_LEFT=3 KILN_SEQ=8' \
		'kiln: booting slot A (tries left 2)' 'kiln: state1.env written (KILN_SEQ=9)' \
		'kiln-init: root: /dev/vda2 (slot A)'
	ab_selftest_passed "$T/serial" A
	ab_expect_state "$T/disk.img" 1 'BOOT_A_LEFT=2' 'BOOT_B_LEFT=3' 'BOOT_ORDER=A B' 'KILN_SEQ=9'
	ab_expect_state "$T/disk.img" 0 'BOOT_A_LEFT=3' 'BOOT_B_LEFT=3' 'BOOT_ORDER=A B' 'KILN_SEQ=10'
}

# Neither copy is usable (one gone, one garbage): U-Boot starts over (A B,
# 3 tries each), boots A and writes state0.env; the booted system writes
# state1.env.
once_qemu_aarch64_state_lost() {
	qa_build
	MTOOLS_SKIP_CHECK=1 mdel -i "$T/disk.img@@1M" ::state0.env || fail "mdel failed"
	head -c 4096 /dev/urandom >"$T/junk.env"
	ab_put_file "$T/disk.img" state1.env "$T/junk.env"
	ab_boot qemu-aarch64 "$T/disk.img" "$T/serial"
	ab_expect_lines "$T/serial.txt" 'kiln: state0.env is missing or invalid' \
		'kiln: state1.env is missing or invalid' \
		'kiln: no valid A/B state: starting over (BOOT_ORDER A B, 3 tries each)' \
		'kiln: booting slot A (tries left 2)' 'kiln: state0.env written (KILN_SEQ=1)'
	ab_selftest_passed "$T/serial" A
	ab_expect_state "$T/disk.img" 0 'BOOT_A_LEFT=2' 'BOOT_B_LEFT=3' 'BOOT_ORDER=A B' 'KILN_SEQ=1'
	ab_expect_state "$T/disk.img" 1 'BOOT_A_LEFT=3' 'BOOT_B_LEFT=3' 'BOOT_ORDER=A B' 'KILN_SEQ=2'
}

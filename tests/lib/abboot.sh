# The U-Boot A/B boards (rpi4 under QEMU's raspi3b, qemu-aarch64 under
# QEMU's virt), sourced by their test files: building the board's image
# for the tests, booting a copy of its disk through U-Boot and reading the
# A/B state U-Boot and the booted system left on the FAT (partition 1, at
# 1 MiB: mtools reads it in place).

. tests/lib/qemu.sh

# ab_build BOARD: `make image board=BOARD` into out/test-images/BOARD.
ab_build() {
	make --no-print-directory image board="$1" IMAGE_OUT="out/test-images/$1" \
		KILN_KEYS=out/test-images/keys \
		>"$T/make-$1.log" 2>&1 ||
		{ tail -n 30 "$T/make-$1.log"; fail "make image board=$1 failed"; }
}

# ab_state IMG N: state N's variables from IMG's FAT, one per line, after
# checking the U-Boot env format (4096 bytes, LE CRC32 of bytes 4..4095).
ab_state() {
	rm -f "$T/state$2.env"
	MTOOLS_SKIP_CHECK=1 mcopy -n -i "$1@@1M" "::state$2.env" "$T/state$2.env" ||
		fail "no state$2.env on the FAT"
	python3 - "$T/state$2.env" <<'PY' || fail "state$2.env is not a valid U-Boot env"
import struct, sys, zlib
b = open(sys.argv[1], "rb").read()
assert len(b) == 4096, len(b)
assert struct.unpack("<I", b[:4])[0] == zlib.crc32(b[4:]), "bad CRC"
for e in b[4:].split(b"\0"):
    if not e:
        break
    print(e.decode())
PY
}

# ab_put_state IMG N TEXT: write state N ("NAME=VALUE" lines) into IMG's FAT.
ab_put_state() {
	printf '%s\n' "$3" >"$T/put.txt"
	mkenvimage -s 4096 -p 0 -o "$T/put.env" "$T/put.txt" || fail "mkenvimage failed"
	MTOOLS_SKIP_CHECK=1 mcopy -o -i "$1@@1M" "$T/put.env" "::state$2.env" ||
		fail "cannot write state$2.env"
}

# ab_put_file IMG NAME FILE: FILE as NAME on IMG's FAT.
ab_put_file() {
	MTOOLS_SKIP_CHECK=1 mcopy -o -i "$1@@1M" "$3" "::$2" || fail "cannot write $2"
}

# ab_expect_state IMG N VAR=VALUE...: stateN.env on IMG holds exactly those.
ab_expect_state() {
	local img=$1 n=$2
	shift 2
	ab_state "$img" "$n" | sort >"$T/state$n.txt"
	printf '%s\n' "$@" | sort | diff - "$T/state$n.txt" ||
		fail "state$n.env: $(tr '\n' ' ' <"$T/state$n.txt")"
}

# ab_expect_lines FILE LINE...: each LINE is a whole line of FILE.
ab_expect_lines() {
	local f=$1 l
	shift
	for l; do
		grep -qxF "$l" "$f" || fail "no '$l'"
	done
}

# ab_boot BOARD DISK LOG: power on DISK (the test's copy of BOARD's,
# written to in place) under TCG: U-Boot, boot.scr, Linux; the device is
# asked for its self-test (kiln.selftest in cmdline.env, the device's own
# kernel arguments, on the FAT) and the boot ends with its verdict, or
# with the rcS line when AB_MARKER says so. AB_REBOOT=1: the guest may
# reboot (QEMU_REBOOT), as a board whose boot failed does. LOG.txt: the
# console without carriage returns; the boot's story (U-Boot's and
# Kiln's lines) printed.
ab_boot() {
	printf 'kiln_args=kiln.selftest\n' >"$T/cmdline.env"
	ab_put_file "$2" cmdline.env "$T/cmdline.env"
	KILN_QEMU_ACCEL=tcg BOOT_TIMEOUT=${BOOT_TIMEOUT:-240} QEMU_SNAPSHOT= \
		QEMU_REBOOT=${AB_REBOOT:-0} \
		BOOT_MARKER=${AB_MARKER:-'^KILN-SELFTEST (PASS|FAIL)'} DISK=$2 \
		qemu_boot "out/test-images/$1" "$3" || fail "boot: $QEMU_WHY"
	tr -d '\r' <"$3" >"$3.txt"
	grep -v '^\[' "$3.txt" | grep -E '^(kiln|U-Boot|Found|Starting|KILN)' || true
}

# ab_selftest_passed LOG SLOT: LOG.txt shows the self-test passing in SLOT.
ab_selftest_passed() {
	ab_expect_lines "$1.txt" "KILN-CHECK slot=$2 ok" 'KILN-SELFTEST PASS'
}

# ab_break_slot IMG N: partition N of IMG no longer holds a file system
# (its first MiB zeroed): a slot that cannot boot.
ab_break_slot() {
	local start
	start=$(sfdisk -d "$1" | sed -n "s|^$1$2 : start= *\([0-9]*\),.*|\1|p")
	[ -n "$start" ] || fail "no partition $2 in $1"
	dd if=/dev/zero of="$1" bs=512 seek="$start" count=2048 conv=notrunc status=none ||
		fail "cannot break partition $2"
}

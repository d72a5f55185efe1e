# Updates on the booted device: qemu-aarch64 (U-Boot, the A/B state on the
# FAT) built with tests/ota/overlay, whose init script runs the step named
# by kiln.test= and reports KILN-TEST lines. The bundles come to the
# device as extra virtio disks (/dev/vdb...), read as files or piped.

. tests/lib/abboot.sh

OTA_DIR=out/test-images/qemu-aarch64-ota
OTA_KEYS=out/test-images/keys

# ota_make ARGS...: make in the OTA image's directory with the tests' keys
ota_make() {
	make --no-print-directory board=qemu-aarch64 IMAGE_OUT="$OTA_DIR" \
		KILN_KEYS="$OTA_KEYS" "$@" >>"$T/make.log" 2>&1 ||
		{ tail -n 30 "$T/make.log"; fail "make $* failed"; }
}

# ota_artifacts: once per test run, in $OTA_DIR/art: the device's disk
# (version 1.0) and the bundles, each padded to whole sectors as a disk:
#   v2.img    2.0: a root with 40 MB more (slow enough to cut power in
#             its write) and a data tree of 2000 files and 30 MB
#   v3.img    3.0: the plain root and a one-file data tree
#   board.img another board's, older.img version 0.9, tampered.img v3
#             with a byte of its manifest changed, noinit.img 4.0 whose
#             root has no /sbin/init (it cannot boot)
ota_artifacts() {
	local A=$OTA_DIR/art ov=$OTA_DIR/ov
	[ ! -f "$A/.built-$$" ] || return 0
	rm -rf "$A" "$ov"
	mkdir -p "$A" "$ov/plain" "$ov/big/opt" "$ov/d2/many" "$ov/d3"
	# a copy of the plain board's build: its busybox, kernel and U-Boot
	[ -d "$OTA_DIR/kernel" ] || [ ! -d out/test-images/qemu-aarch64/kernel ] ||
		cp -a out/test-images/qemu-aarch64/. "$OTA_DIR/"
	cp -R tests/ota/overlay/. "$ov/plain/"
	cp -R tests/ota/overlay/. "$ov/big/"
	head -c 40000000 /dev/urandom >"$ov/big/opt/blob"
	for i in $(seq 1 2000); do echo "file $i" >"$ov/d2/many/f$i"; done
	head -c 30000000 /dev/urandom >"$ov/d2/blob"
	echo two >"$ov/d2/hello"
	echo three >"$ov/d3/hello"
	ota_make bundle KILN_VERSION=2.0 ROOTFS_OVERLAY="$PWD/$ov/big" \
		BUNDLE_DATA="$ov/d2:apps/demo"
	mv "$OTA_DIR/bundle.kiln" "$A/v2.kiln"
	ota_make bundle KILN_VERSION=3.0 ROOTFS_OVERLAY="$PWD/$ov/plain" \
		BUNDLE_DATA="$ov/d3:apps/demo"
	mv "$OTA_DIR/bundle.kiln" "$A/v3.kiln"
	local kb=out/x86_64/bin/kiln-bundle key=$OTA_KEYS/bundle.key
	cp "$OTA_DIR/rootfs.erofs" "$A/root3.erofs"
	"$kb" create --key "$key" --version 3.0 --compatible rpi4 \
		--rootfs "$A/root3.erofs" "$A/board.kiln" >/dev/null || fail "create"
	"$kb" create --key "$key" --version 0.9 --compatible qemu-aarch64 \
		--rootfs "$A/root3.erofs" "$A/older.kiln" >/dev/null || fail "create"
	cp "$A/v3.kiln" "$A/tampered.kiln"
	printf '8' | dd of="$A/tampered.kiln" bs=1 seek=$((512 + 20)) conv=notrunc status=none
	mkdir -p "$ov/noinit/etc"
	echo 4.0 >"$ov/noinit/etc/version"
	out/x86_64/bin/mkfs.erofs -zlz4 "$A/noinit.erofs" "$ov/noinit" >/dev/null
	"$kb" create --key "$key" --version 4.0 --compatible qemu-aarch64 \
		--rootfs "$A/noinit.erofs" "$A/noinit.kiln" >/dev/null || fail "create"
	ota_make image KILN_VERSION=1.0 ROOTFS_OVERLAY="$PWD/$ov/plain"
	cp "$OTA_DIR/disk.img" "$A/disk.img"
	local b
	for b in v2 v3 board older tampered noinit; do
		cp "$A/$b.kiln" "$A/$b.img"
		truncate -s %512 "$A/$b.img"
	done
	touch "$A/.built-$$"
}

# ota_boot LOG STEP [BUNDLE...]: power on $T/disk.img with kiln.test=STEP
# and the bundles as /dev/vdb...; the boot ends with the self-test.
ota_boot() {
	local log=$1 step=$2 extra='' b
	shift 2
	for b; do
		extra="$extra -drive if=virtio,format=raw,readonly=on,file=$OTA_DIR/art/$b.img"
	done
	printf 'kiln_args=kiln.test=%s %s\n' "$step" "${OTA_SELFTEST-kiln.selftest}" >"$T/cmdline.env"
	ab_put_file "$T/disk.img" cmdline.env "$T/cmdline.env"
	KILN_QEMU_ACCEL=tcg BOOT_TIMEOUT=${BOOT_TIMEOUT:-240} QEMU_SNAPSHOT= \
		QEMU_REBOOT=${AB_REBOOT:-0} QEMU_EXTRA_OPTS="$extra" \
		BOOT_MARKER=${AB_MARKER:-'^KILN-SELFTEST (PASS|FAIL)'} DISK=$T/disk.img \
		qemu_boot "$OTA_DIR" "$log" || fail "boot: $QEMU_WHY"
	tr -d '\r' <"$log" >"$log.txt"
	grep -E '^(kiln|KILN)' "$log.txt" | grep -v '^KILN-FSCK\|^KILN-CHECK' || true
}

# ota_running LOG VERSION SLOT DATA: the boot in LOG ran VERSION from SLOT
# with DATA in /data/apps/demo/hello, and passed its self-test
ota_running() {
	grep -q "^KILN-TEST version=$2 slot=$3 root=/dev/vda[23] data=$4\$" "$1.txt" ||
		fail "not version $2 in slot $3 with data '$4': $(grep '^KILN-TEST version' "$1.txt")"
	ab_selftest_passed "$1" "$3"
}

ota_setup() {
	ota_artifacts
	cp "$OTA_DIR/art/disk.img" "$T/disk.img"
}

# A bundle from a file (slot A, 1.0 -> slot B, 2.0: root and data), then
# from slot B one through a pipe with kiln-install --reboot (3.0, back to
# slot A, in the same power-on: where the same bundle, offered again, is
# not newer); each new slot boots, has the new version and data, and is
# marked good.
once_ota_device_update() {
	ota_setup
	ota_boot "$T/s1" install-file v2
	ota_running "$T/s1" 1.0 A ''
	ab_expect_lines "$T/s1.txt" 'KILN-TEST install rc=0' 'kiln-update: installed 2.0'
	ab_expect_lines "$T/s1.txt" 'kiln-update: slot B boots next (version 2.0)' \
		'kiln-init: data: ext4 -o rw,noatime,mb_optimize_scan=0'
	grep -q '^kiln-install: data: /dev/vda4 ext4 rw,noatime.*; mb_stream_req=256 mb_group_prealloc=2048$' "$T/s1.txt" ||
		fail "kiln-install did not say how /data is mounted"
	grep -q '^kiln-update: writing +[0-9]+% ' "$T/s1.txt" || true
	AB_REBOOT=1 OTA_SELFTEST= AB_MARKER='^KILN-TEST install rc=[1-9]' \
		ota_boot "$T/s2" install-pipe-reboot v3
	grep -q '^KILN-TEST version=2.0 slot=B root=/dev/vda3 data=two$' "$T/s2.txt" ||
		fail "2.0 did not run from slot B"
	grep -q '^kiln: slot marked good (/dev/vda1): order=B A ' "$T/s2.txt" ||
		fail "slot B not marked good"
	ab_expect_lines "$T/s2.txt" 'kiln-update: installed 3.0' \
		'KILN-TEST install rc=0' 'kiln-install: rebooting into slot A' \
		'kiln-update: error: bundle version 3.0 is not newer than the running 3.0 (--force installs it)'
	grep -q '^KILN-TEST version=3.0 slot=A root=/dev/vda2 data=three$' "$T/s2.txt" ||
		fail "3.0 did not run from slot A"
	grep -q '^kiln: slot marked good (/dev/vda1): order=A B a_left=3 b_left=3' "$T/s2.txt" ||
		fail "slot A not marked good"
}

# Refused on the device, each with exit 1: a tampered bundle, another
# board's, an older version, a stream cut short; slot A (1.0) then still
# boots, unchanged, and first in the boot order.
once_ota_device_refusals() {
	ota_setup
	ota_boot "$T/s1" refusals tampered board older v3
	ab_expect_lines "$T/s1.txt" 'KILN-TEST refuse /dev/vdb rc=1' \
		'KILN-TEST refuse /dev/vdc rc=1' 'KILN-TEST refuse /dev/vdd rc=1' \
		'KILN-TEST refuse cut-short rc=1'
	grep -q "^kiln-update: error: bundle: bad signature" "$T/s1.txt" || fail "tampered"
	grep -q "^kiln-update: error: bundle is for board 'rpi4'" "$T/s1.txt" || fail "board"
	grep -q "^kiln-update: error: bundle version 0.9 is not newer" "$T/s1.txt" || fail "older"
	grep -q "^kiln-update: error: .*\(Truncated\|cut short\)" "$T/s1.txt" || fail "cut short"
	ota_boot "$T/s2" none
	ota_running "$T/s2" 1.0 A ''
	grep -q '^kiln: slot marked good (/dev/vda1): order=A B a_left=3 ' "$T/s2.txt" ||
		fail "slot A is not first"
}

# ota_torn_copy LOG: which state copy the switch in LOG's boot wrote: the
# one mark-good wrote (its "copy=", the winner after it), as mark-bad then
# wrote the other one and each write goes to the copy that did not win
ota_torn_copy() {
	sed -n 's/^kiln: slot marked good .* copy=\([01]\)$/\1/p' "$1" | tail -n 1
}

# Power cut (QEMU killed) during the install of v2 from slot A: while the
# root image is written, while the data tree is unpacked, and in the
# middle of the boot state's write that switches to slot B. Each time the
# next power-on boots a good slot and passes its self-test: slot A (1.0),
# its data unchanged after the first two; and after the cut in the unpack
# the same bundle installs.
once_ota_device_power_cuts() {
	ota_setup
	local where marker n=0
	local step
	for where in writing unpacking switching; do
		n=$((n + 1))
		step=install-file
		case $where in
		writing | unpacking) marker="^kiln-update: $where +[0-9]+% " ;;
		# (the switch takes milliseconds: kiln-update's test hook tears
		# its state write after 10 bytes and kills it; the cut follows)
		switching) marker='^KILN-TEST install rc=' step=install-cut-switch ;;
		esac
		cp "$OTA_DIR/art/disk.img" "$T/disk.img"
		echo "-- power cut while $where"
		QEMU_CUT_AT_MARKER=1 AB_MARKER=$marker ota_boot "$T/c$n" $step v2
		if [ $where = switching ]; then
			ab_expect_lines "$T/c$n.txt" 'kiln-update: switching boot state'
			grep -q '^KILN-TEST install rc=137' "$T/c$n.txt" || fail "the switch was not cut"
		else
			! grep -q '^KILN-TEST install rc=' "$T/c$n.txt" || fail "the install ended before the cut"
		fi
		ota_boot "$T/r$n" none
		if [ $where = switching ]; then
			# the torn copy is not read: the state as before, A first;
			# the data trees went in just before the switch
			ota_running "$T/r$n" 1.0 A two
			ab_expect_lines "$T/r$n.txt" "kiln: state$(ota_torn_copy "$T/c$n.txt").env is missing or invalid"
		else
			ota_running "$T/r$n" 1.0 A ''
		fi
	done
	# after the cut in the unpack (disk of round 2 is gone: redo it)
	cp "$OTA_DIR/art/disk.img" "$T/disk.img"
	QEMU_CUT_AT_MARKER=1 AB_MARKER='^kiln-update: unpacking +[0-9]+% ' \
		ota_boot "$T/c4" install-file v2
	ota_boot "$T/r4" install-file v2
	ab_expect_lines "$T/r4.txt" 'KILN-TEST install rc=0'
	ota_boot "$T/r5" none
	ota_running "$T/r5" 2.0 B two
}

# A new slot that cannot boot (its root has no /sbin/init) is installed
# and tried: /init fails and reboots (panic=5) until U-Boot has spent its
# tries, then falls back to the old slot, which boots and is marked good.
once_ota_device_rollback() {
	ota_setup
	ota_boot "$T/s1" install-file noinit
	ab_expect_lines "$T/s1.txt" 'KILN-TEST install rc=0' 'kiln-update: slot B boots next (version 4.0)'
	AB_REBOOT=1 ota_boot "$T/s2" none
	ab_expect_lines "$T/s2.txt" 'kiln: booting slot B (tries left 2)' \
		'kiln: booting slot B (tries left 0)' \
		'kiln: slot B has no tries left, falling back to A'
	# (the root has no /run, no /sbin/init: /init gives up on the first)
	[ "$(grep -c '^kiln-init: root: /dev/vda3 (slot B)' "$T/s2.txt")" = 3 ] ||
		fail "slot B not tried three times"
	[ "$(grep -c '^kiln-init: FATAL: ' "$T/s2.txt")" = 3 ] || fail "B's failures not reported"
	ab_expect_lines "$T/s2.txt" 'kiln-init: rebooting in 5 s (panic=5)'
	ota_running "$T/s2" 1.0 A ''
	grep -q '^kiln: slot marked good (/dev/vda1): order=B A a_left=3 b_left=0' "$T/s2.txt" ||
		fail "A not marked good"
}

# (the first of these tests builds the images and bundles, about a minute)
limit ota_device_update 600
limit ota_device_refusals 600
limit ota_device_power_cuts 900
limit ota_device_rollback 600

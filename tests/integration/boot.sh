# Boot tests: the default board's image, built by `make image` into the
# tests' own directory (out/test-images/<board>: a test never builds into,
# nor removes, the user's out/<board>), booted in QEMU (KVM where a guest
# runs under it, TCG otherwise: one probe per run) through tests/lib/qemu.sh,
# whose wait ends as soon as the boot does. The checks run on the device
# (boot/skel/usr/libexec/kiln/selftest) and report over the serial console.

. tests/lib/qemu.sh

TEST_IMAGES=out/test-images
BOARD_OUT=$TEST_IMAGES/qemu-x86_64

# boot_qemu LOG DISK [CMDLINE...]: boot the test image from DISK; a boot
# that does not end by itself (the guest powering off or rebooting) fails
# the test, saying why.
boot_qemu() {
	local log=$1 disk=$2
	shift 2
	DISK=$disk qemu_boot "$BOARD_OUT" "$log" "$@" || fail "boot: $QEMU_WHY"
}

# build_image: the test image, incrementally (umask 022: the reference the
# reproducibility test compares a umask 077 build with).
build_image() {
	(umask 022 && make --no-print-directory image IMAGE_OUT="$BOARD_OUT") \
		>"$T/make.log" 2>&1 ||
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
	grep -E '^KILN-CHECK dump.erofs=/dev/vda1 ok$' "$T/log" ||
		fail "dump.erofs on the device failed"
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
	grep -x 'KILN-SELFTEST PASS' "$T/log" || fail "self-test did not pass"
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
	if grep -q 'KILN-SELFTEST' "$T/log"; then fail "booted a corrupt root"; fi
	grep 'kiln-init: rebooting' "$T/log" || fail "/init did not reboot"
}

# fake_board DIR: a board directory (the default board's board.conf) whose
# QEMU is a stand-in that plays the guest: it appends its arguments to
# DIR/calls and its PID to DIR/pids, answers the old "can QEMU start with
# KVM" probe (-M none) with success, writes FAKE_<accel>_SERIAL to the
# serial log and FAKE_<accel>_STDERR to stderr (printf %b), then exits with
# FAKE_<accel>_EXIT (default 0), or sleeps until killed if that is "hang".
fake_board() {
	local d=$1
	mkdir -p "$d"
	grep -v '^QEMU=' board/qemu-x86_64/board.conf >"$d/board.conf"
	echo "QEMU=$d/qemu" >>"$d/board.conf"
	cat >"$d/qemu" <<'FAKE'
#!/bin/sh
d=${0%/*}
echo "$*" >>"$d/calls"
echo $$ >>"$d/pids"
accel=tcg serial= prev=
for a; do
	[ "$prev" != -accel ] || accel=$a
	case $a in file:*) serial=${a#file:} ;; esac
	prev=$a
done
case " $* " in *" -M none "*) exit 0 ;; esac
eval "out=\${FAKE_${accel}_SERIAL:-} err=\${FAKE_${accel}_STDERR:-} st=\${FAKE_${accel}_EXIT:-0}"
[ -z "$serial" ] || printf '%b' "$out" >"$serial"
printf '%b' "$err" >&2
[ "$st" != hang ] || exec sleep 600
exit "$st"
FAKE
	chmod +x "$d/qemu"
}

# The accelerator is chosen by what runs a guest, not by QEMU starting:
# KVM that starts QEMU and then fails the kernel (as on the build
# machines: "KVM internal error ... emulation failure") gives TCG; KVM
# that boots the kernel to its root-mount panic gives KVM. The answer is
# kept in KILN_QEMU_ACCEL_CACHE (one probe per test run) and
# KILN_QEMU_ACCEL forces either without probing.
once_boot_accel_probe() {
	local d=$T/b a kvm=kvm
	[ -e /dev/kvm ] || kvm=tcg	# no /dev/kvm: no probe, TCG
	fake_board "$d"
	export FAKE_kvm_EXIT=hang
	export FAKE_kvm_STDERR='KVM internal error. Suberror: 1\nextra data[0]: 0x1\nemulation failure\n'
	unset KILN_QEMU_ACCEL KILN_QEMU_ACCEL_CACHE
	a=$(qemu/run.sh --print-accel "$d" 2>"$T/err") || fail "run.sh --print-accel failed"
	cat "$T/err"
	[ "$a" = tcg ] || fail "KVM that fails the guest chosen ($a)"
	if [ "$kvm" = kvm ]; then
		grep -q 'KVM cannot run the guest here (KVM internal error. Suberror: 1: emulation failure)' "$T/err" ||
			fail "the probe does not say why not KVM"
	fi
	# the boot itself runs with what the probe chose
	FAKE_tcg_SERIAL='Linux version\n' SERIAL_LOG=$T/serial qemu/run.sh "$d" 2>/dev/null ||
		fail "fake boot failed"
	tail -n 1 "$d/calls" | grep -q -- '-accel tcg ' || fail "the boot did not use TCG"

	export FAKE_kvm_STDERR='' FAKE_kvm_EXIT=0
	export FAKE_kvm_SERIAL='[    0.000000] Linux version 6.12\n[    0.512345] Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)\n'
	a=$(qemu/run.sh --print-accel "$d" 2>"$T/err") || fail "run.sh --print-accel failed"
	cat "$T/err"
	[ "$a" = "$kvm" ] || fail "KVM that boots the kernel not chosen ($a, not $kvm)"

	# forced: no probe at all
	: >"$d/calls"
	[ "$(KILN_QEMU_ACCEL=tcg qemu/run.sh --print-accel "$d")" = tcg ] || fail "KILN_QEMU_ACCEL=tcg"
	[ "$(KILN_QEMU_ACCEL=kvm qemu/run.sh --print-accel "$d")" = kvm ] || fail "KILN_QEMU_ACCEL=kvm"
	[ ! -s "$d/calls" ] || fail "a forced accelerator still probed"
	if KILN_QEMU_ACCEL=xen qemu/run.sh --print-accel "$d" 2>/dev/null; then
		fail "KILN_QEMU_ACCEL=xen accepted"
	fi

	# cached: one probe, then the answer from the file
	export KILN_QEMU_ACCEL_CACHE=$T/accel
	a=$(qemu/run.sh --print-accel "$d" 2>/dev/null)
	[ "$(cat "$T/accel")" = "$a" ] || fail "the answer was not cached"
	export FAKE_kvm_SERIAL='' FAKE_kvm_EXIT=hang FAKE_kvm_STDERR='KVM internal error. Suberror: 1\n'
	: >"$d/calls"
	[ "$(qemu/run.sh --print-accel "$d" 2>/dev/null)" = "$a" ] || fail "the cached answer was not used"
	[ ! -s "$d/calls" ] || fail "probed again despite the cache"
}

# KILN_QEMU_ACCEL=kvm forces KVM. Where the probe found it working, the
# self-test passes under it; where not (on the build machines /dev/kvm
# opens, QEMU starts, and the kernel dies in KVM's emulator), the boot fails
# in seconds, not at BOOT_TIMEOUT, saying that KVM was forced, and leaves
# no QEMU behind.
once_boot_kvm_forced() {
	build_image
	local accel t0 rc=0 qpid
	accel=$(qemu/run.sh --print-accel "$BOARD_OUT") || fail "run.sh --print-accel failed"
	echo "probe: $accel"
	t0=$SECONDS
	KILN_QEMU_ACCEL=kvm QEMU_EXTRA_OPTS="-pidfile $T/qemu.pid" \
		qemu_boot "$BOARD_OUT" "$T/serial" kiln.selftest || rc=$?
	echo "KVM forced: status $rc after $((SECONDS - t0)) s: $QEMU_WHY"
	if [ "$accel" = kvm ]; then
		[ "$rc" = 0 ] || fail "KVM, which the probe found working, failed: $QEMU_WHY"
		grep -q 'KILN-SELFTEST PASS' "$T/serial" || fail "self-test did not pass under KVM"
		return 0
	fi
	[ "$rc" != 0 ] || fail "the guest booted under KVM, which the probe turned down"
	[ $((SECONDS - t0)) -le 30 ] || fail "the failure took $((SECONDS - t0)) s to report"
	case $QEMU_WHY in
	*"KILN_QEMU_ACCEL=kvm forced KVM"*) ;;
	*) fail "the message does not say KVM was forced: $QEMU_WHY" ;;
	esac
	if [ -f "$T/qemu.pid" ] && kill -0 "$(cat "$T/qemu.pid")" 2>/dev/null; then
		fail "QEMU still runs"
	fi
}

# dies_fast WHY [CMDLINE...]: boot the fake board $T/b; the wait must end
# within 5 s with status 125, QEMU_WHY starting with WHY, the fake QEMU gone.
dies_fast() {
	local why=$1 rc=0 t0=$SECONDS p
	shift
	: >"$T/b/pids"
	BOOT_TIMEOUT=30 qemu_boot "$T/b" "$T/fake.serial" "$@" || rc=$?
	[ "$rc" = 125 ] || fail "status $rc, not 125, for '$why'"
	[ $((SECONDS - t0)) -le 5 ] || fail "'$why' took $((SECONDS - t0)) s"
	case $QEMU_WHY in "$why"*) ;; *) fail "said '$QEMU_WHY', not '$why'" ;; esac
	while read -r p; do
		if kill -0 "$p" 2>/dev/null; then fail "the fake QEMU ($p) still runs"; fi
	done <"$T/b/pids"
}

# A guest that cannot go on ends the wait at once, not at BOOT_TIMEOUT:
# a kernel panic, /init's rescue shell, a KVM internal error (the guest
# sits paused), QEMU itself failing (a broken kernel) or killed. And a test
# that stops while a guest runs stops its QEMU.
once_boot_guest_dies_fast() {
	build_image
	fake_board "$T/b"
	export KILN_QEMU_ACCEL=tcg FAKE_tcg_EXIT=hang FAKE_tcg_STDERR='' FAKE_tcg_SERIAL
	FAKE_tcg_SERIAL='[    0.0] Linux version\n[    4.4] Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)\n'
	dies_fast "kernel panic: not syncing: VFS: Unable to mount root fs"
	# (with panic=N the kernel reboots and QEMU exits: a failed boot still)
	FAKE_tcg_EXIT=0 dies_fast "kernel panic: not syncing: VFS: Unable to mount root fs"
	FAKE_tcg_SERIAL='kiln-init: FATAL: cannot mount /dev/vda1 (slot A) as EROFS\nkiln-init: starting a rescue shell\n'
	dies_fast "/init gave up: kiln-init: FATAL: cannot mount /dev/vda1 (slot A) as EROFS"
	FAKE_tcg_SERIAL=
	FAKE_tcg_STDERR='KVM internal error. Suberror: 1\nextra data[0]: 0x1\nemulation failure\n'
	dies_fast "KVM internal error. Suberror: 1: emulation failure"
	unset FAKE_tcg_EXIT FAKE_tcg_STDERR FAKE_tcg_SERIAL

	# a real QEMU, a kernel that is not one: QEMU's own error
	local d=$T/broken rc=0 t0 qpid pid n
	mkdir "$d"
	cp "$BOARD_OUT/board.conf" "$d/"
	head -c 65536 /dev/urandom >"$d/vmlinuz"
	ln -s "$PWD/$BOARD_OUT/initramfs.img" "$PWD/$BOARD_OUT/disk.img" "$d/"
	t0=$SECONDS
	BOOT_TIMEOUT=60 qemu_boot "$d" "$T/broken.serial" || rc=$?
	[ "$rc" != 0 ] || fail "a random kernel booted"
	[ $((SECONDS - t0)) -le 5 ] || fail "QEMU's failure took $((SECONDS - t0)) s to report"
	case $QEMU_WHY in "QEMU exited with $rc: qemu"*) ;; *) fail "unclear: $QEMU_WHY" ;; esac

	# a real guest whose QEMU is killed while it boots
	(
		n=0
		until [ -s "$T/q1.pid" ] || [ $n = 300 ]; do sleep 0.1; n=$((n + 1)); done
		sleep 1
		kill -KILL "$(cat "$T/q1.pid")"
		echo $SECONDS >"$T/killed"
	) &
	local killer=$!
	rc=0
	QEMU_EXTRA_OPTS="-pidfile $T/q1.pid" BOOT_TIMEOUT=120 \
		qemu_boot "$BOARD_OUT" "$T/q1.serial" kiln.selftest || rc=$?
	t0=$SECONDS
	wait "$killer"
	[ "$rc" = 137 ] || fail "status $rc, not 137 (SIGKILL), for a killed QEMU: $QEMU_WHY"
	[ $((t0 - $(cat "$T/killed"))) -le 3 ] || fail "QEMU's death took $((t0 - $(cat "$T/killed"))) s to notice"

	# the test stops (here a subshell, TERM) while the guest boots: QEMU
	# goes with it
	(QEMU_EXTRA_OPTS="-pidfile $T/q2.pid" BOOT_TIMEOUT=120 \
		qemu_boot "$BOARD_OUT" "$T/q2.serial" kiln.selftest) &
	pid=$!
	n=0
	until [ -s "$T/q2.pid" ] || [ $n = 300 ]; do sleep 0.1; n=$((n + 1)); done
	qpid=$(cat "$T/q2.pid")
	kill -0 "$qpid" || fail "QEMU did not start"
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" = 143 ] || fail "the stopped test ended with $rc, not 143"
	n=0
	while kill -0 "$qpid" 2>/dev/null; do
		[ $n -lt 50 ] || fail "QEMU ($qpid) still runs 5 s after its test stopped"
		sleep 0.1
		n=$((n + 1))
	done
}

# /init reads the kernel's command line with globbing off: an argument
# that would match files in its working directory stays as written (run
# on the host with the image's busybox, in a directory holding such files).
once_boot_init_cmdline_no_glob() {
	build_image
	local init=$PWD/boot/init bb=$PWD/$BOARD_OUT/busybox out
	mkdir "$T/cwd"
	touch "$T/cwd/kiln.slot=B" "$T/cwd/root=PARTLABEL=rootB" "$T/cwd/kiln.accel=qat_deflate"
	out=$(cd "$T/cwd" && "$bb" sh "$init" --parse-cmdline \
		'console=ttyS0 kiln.slot=* root=PARTLABEL=root? kiln.accel=* kiln.rootwait=3')
	echo "$out"
	[ "$out" = 'slot=* root=PARTLABEL=root? data=PARTLABEL=data rootwait=3 panic=0 accel=*' ] ||
		fail "/init globbed its command line: $out"
}

# Nothing changed: nothing rebuilt. Built from clean in another directory,
# under umask 077, at the same epoch: the same bytes (busybox and the
# kernel's .deb come from the cache, as in any warm build).
once_image_reproducible() {
	build_image
	local arts="rootfs.erofs initramfs.img disk.img vmlinuz manifest.txt busybox"
	# shellcheck disable=SC2086 # a list of files
	(cd "$BOARD_OUT" && stat -c '%n %Y.%y' $arts) >"$T/mtimes1"
	sleep 1
	build_image
	# shellcheck disable=SC2086
	(cd "$BOARD_OUT" && stat -c '%n %Y.%y' $arts) >"$T/mtimes2"
	diff "$T/mtimes1" "$T/mtimes2" || fail "a second make image did work"
	grep '^sha256' "$BOARD_OUT/manifest.txt" >"$T/before"
	(umask 077 && make --no-print-directory image IMAGE_OUT="$T/img" \
		SOURCE_DATE_EPOCH="$(cat "$BOARD_OUT/epoch")") >"$T/make2.log" 2>&1 ||
		{ tail -n 30 "$T/make2.log"; fail "make image under umask 077 failed"; }
	grep '^sha256' "$T/img/manifest.txt" >"$T/after"
	diff "$T/before" "$T/after" || {
		# where the disks differ, to tell which part is not reproducible
		cmp -l "$BOARD_OUT/disk.img" "$T/img/disk.img" | head -n 20
		fail "a clean build under umask 077 differs"
	}
}

# ROOTFS_OVERLAY adds to the board's root; ROOTFS_DIR replaces it; a build
# without them drops what they brought. The kernel reads each root slot.
# No extended attribute of the build host gets in (SELinux labels, user.*,
# trusted.*), while ROOTFS_DIR's file capabilities and ACLs stay. Built in
# the test's own directory, the root slot alone.
once_image_rootfs_trees() {
	need_root
	local img=$T/img cap=0x0100000200200000000000000000000000000000 f
	mkdir -p "$T/ov/etc" "$T/dir/etc" "$T/dir/sbin" "$T/dir/bin"
	echo overlay >"$T/ov/etc/kiln-overlay"
	echo prepared >"$T/dir/etc/kiln-prepared"
	cp "$BOARD_OUT/busybox" "$T/dir/sbin/init" 2>/dev/null || true
	echo '#!/bin/sh' >"$T/dir/bin/kiln-ping"
	chmod 0755 "$T/dir/bin/kiln-ping"
	# what a build host leaves on files, and what a package sets
	for f in "$T/ov/etc/kiln-overlay" "$T/dir/etc/kiln-prepared"; do
		setfattr -n user.xdg.origin.url -v https://host.example "$f"
		setfattr -n trusted.host -v junk "$f"
		# (only where no LSM checks the label)
		setfattr -n security.selinux -v system_u:object_r:user_home_t:s0 "$f" 2>/dev/null || true
	done
	setfattr -n security.capability -v "$cap" "$T/dir/bin/kiln-ping"	# cap_net_raw+ep
	setfacl -m u:1234:r "$T/dir/etc/kiln-prepared"
	make --no-print-directory IMAGE_OUT="$img" "$img/rootfs.erofs" \
		ROOTFS_OVERLAY="$T/ov" >"$T/make.log" 2>&1 ||
		{ tail "$T/make.log"; fail "make with ROOTFS_OVERLAY failed"; }
	mount_erofs "$img/rootfs.erofs" "$T/m1"
	[ "$(cat "$T/m1/etc/kiln-overlay")" = overlay ] || fail "overlay not in the root"
	[ -e "$T/m1/bin/busybox" ] || fail "the board's root lost busybox"
	getfattr -h -d -m - "$T/m1/etc/kiln-overlay" >"$T/xa1"
	[ ! -s "$T/xa1" ] || { cat "$T/xa1"; fail "host xattrs from ROOTFS_OVERLAY in the image"; }
	make --no-print-directory IMAGE_OUT="$img" "$img/rootfs.erofs" \
		ROOTFS_DIR="$T/dir" >"$T/make.log" 2>&1 ||
		{ tail "$T/make.log"; fail "make with ROOTFS_DIR failed"; }
	mount_erofs "$img/rootfs.erofs" "$T/m2"
	[ "$(cat "$T/m2/etc/kiln-prepared")" = prepared ] || fail "ROOTFS_DIR not packed"
	[ ! -e "$T/m2/bin/busybox" ] || fail "ROOTFS_DIR got the board's busybox"
	[ -x "$T/m2/usr/bin/fsck.erofs" ] || fail "no fsck.erofs in the packed tree"
	for d in proc sys dev run tmp data; do
		[ -d "$T/m2/$d" ] || fail "no /$d mount point"
	done
	getfattr -h -d -m - -e hex "$T/m2/etc/kiln-prepared" >"$T/xa2"
	cat "$T/xa2"
	if grep -E '^(user|trusted|security)\.' "$T/xa2"; then
		fail "host xattrs from ROOTFS_DIR in the image"
	fi
	getfacl -p "$T/m2/etc/kiln-prepared" | grep -qx 'user:1234:r--' ||
		fail "ROOTFS_DIR's ACL lost"
	getfattr -h -n security.capability -e hex "$T/m2/bin/kiln-ping" 2>/dev/null |
		grep -qx "security.capability=$cap" || fail "ROOTFS_DIR's file capability lost"
	make --no-print-directory IMAGE_OUT="$img" "$img/rootfs.erofs" >"$T/make.log" 2>&1 ||
		{ tail "$T/make.log"; fail "make without trees failed"; }
	mount_erofs "$img/rootfs.erofs" "$T/m3"
	if [ -e "$T/m3/etc/kiln-prepared" ] || [ -e "$T/m3/etc/kiln-overlay" ]; then
		fail "a plain build kept an earlier tree"
	fi
	[ -e "$T/m3/bin/busybox" ] || fail "the board's root is not back"
}

# A failing cpio, or compressor, stops mkinitramfs (no pipe hides it): a
# non-zero exit naming it, no initramfs installed, nothing left behind.
once_image_initramfs_step_fails() {
	build_image
	local tool
	mkdir "$T/bin" "$T/out"
	for tool in cpio zstd; do
		printf '#!/bin/sh\ncat >/dev/null\necho partial\nexit 1\n' >"$T/bin/$tool"
		chmod +x "$T/bin/$tool"
		if PATH=$T/bin:$PATH SOURCE_DATE_EPOCH=1 boot/mkinitramfs.sh \
			board/qemu-x86_64/board.conf "$BOARD_OUT/busybox" "$BOARD_OUT/kernel" \
			"$BOARD_OUT/firmware" "$T/out/initramfs.img" 2>"$T/err"; then
			fail "mkinitramfs succeeded with a failing $tool"
		fi
		cat "$T/err"
		grep -qx "mkinitramfs: $tool failed" "$T/err" || fail "no message naming $tool"
		[ ! -e "$T/out/initramfs.img" ] || fail "an initramfs was installed despite $tool failing"
		[ -z "$(ls -A "$T/out")" ] || { ls -A "$T/out"; fail "mkinitramfs left files behind"; }
		rm "$T/bin/$tool"
	done
}

#!/bin/sh
# run.sh DIR [CMDLINE_ARG...] -- boot out/<board>/ (DIR) in QEMU.
# run.sh --print-accel DIR -- only say which accelerator a boot would use.
#
# A board with a boot loader (BOOT_CHAIN=rpi or uboot in board.conf) boots
# through it: QEMU starts U-Boot (@UBOOT@ or @BOOTFS@ in QEMU_ARGS: the
# fetched u-boot.bin, the FAT's files as built), which reads the disk;
# the command line is then boot.scr's, and CMDLINE_ARGs are refused.
# Other boards: QEMU starts the kernel and initramfs itself.
# QEMU_CONSOLE=2 in board.conf: the console is QEMU's second serial port.
#
# Interactive by default: the serial console is this terminal (Ctrl-A X
# quits). With SERIAL_LOG=FILE it runs headless, the console goes to FILE,
# and it stops after TIMEOUT seconds (default 300); the exit status is
# QEMU's, or 124 on a timeout. DISK=FILE boots another disk image than
# DIR/disk.img. Extra arguments are added to the board's kernel command line;
# QEMU_OPTS adds options to QEMU's (e.g. -snapshot: the disk stays as built).
# QEMU exits when the guest reboots, unless QEMU_REBOOT=1 (an A/B board
# that falls back to its other slot after a failed boot does so by
# rebooting).
#
# The accelerator: KILN_QEMU_ACCEL=kvm or tcg forces one. Otherwise KVM when
# a guest really runs under it here, TCG if not: /dev/kvm may exist, open
# and let QEMU start, and KVM still fail the guest's first instruction it
# cannot handle ("KVM internal error ... emulation failure"), after which
# QEMU sits paused forever. So the board's kernel is booted under KVM for a
# few seconds, without initramfs or root, and must get as far as its
# "cannot mount root" panic. KILN_QEMU_ACCEL_CACHE=FILE keeps the answer in
# FILE and reuses it (the tests set it once per run: one probe, not one per
# boot).
set -eu
print_accel=false
if [ "${1:-}" = --print-accel ]; then
	print_accel=true
	shift
fi
DIR=${1:?usage: run.sh [--print-accel] DIR [CMDLINE_ARG...]}
shift
. "$DIR/board.conf"
BOOT_CHAIN=${BOOT_CHAIN:-} QEMU_CONSOLE=${QEMU_CONSOLE:-1}
disk=disk.img
[ "$BOOT_CHAIN" != rpi ] || disk=sdcard.img
DISK=${DISK:-$DIR/$disk}
if [ -n "$BOOT_CHAIN" ] && [ $# -gt 0 ]; then
	echo "qemu: $DIR boots through U-Boot: its boot.scr makes the command line ($* not added)" >&2
	exit 2
fi
set -f	# QEMU_ARGS and QEMU_OPTS are split into words, never globbed

# alive PID: the process runs (not gone, not a zombie nobody waited for)
alive() {
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ]
}

# qemu_args: the board's QEMU arguments with its disk (split into words
# where used: globbing is off, set -f below)
qemu_args() {
	echo "$QEMU_ARGS" | sed -e "s|@DISK@|$DISK|g" -e "s|@UBOOT@|$DIR/uboot/u-boot.bin|g" \
		-e "s|@BOOTFS@|$DIR/$disk.boot|g"
}

# probe_kvm: 0 when the board's kernel boots under KVM here, to its panic
# for want of a root (panic=-1 reboots at once, and -no-reboot exits QEMU),
# printing within PROBE_FIRST seconds and done within PROBE_SECONDS: KVM
# runs a kernel in about a second, and one that is slower than that is not
# worth using over TCG (on a host where KVM emulates what it should run,
# the kernel printed nothing in 30 s, then hit the internal error). Says
# why not on stderr.
PROBE_FIRST=5 PROBE_SECONDS=20
probe_kvm() {
	if [ "$(uname -m)" != "$ARCH" ]; then
		echo "qemu: an $ARCH guest on an $(uname -m) host, TCG" >&2
		return 1
	elif [ -n "$BOOT_CHAIN" ]; then
		# (the probe boots the kernel straight; a machine such as raspi3b
		# has no KVM at all)
		echo "qemu: boards that boot through U-Boot run under TCG" >&2
		return 1
	elif [ ! -e /dev/kvm ]; then
		echo "qemu: no /dev/kvm, TCG" >&2
		return 1
	fi
	P=$(mktemp -d "${TMPDIR:-/tmp}/kiln-kvm-probe.XXXXXX")
	: >"$P/serial"
	: >"$P/err"
	# shellcheck disable=SC2046 # QEMU_ARGS are words
	$QEMU -accel kvm -kernel "$DIR/vmlinuz" -append "$CMDLINE panic=-1" \
		$(qemu_args) -snapshot -no-reboot -display none -monitor none \
		-serial "file:$P/serial" </dev/null >"$P/err" 2>&1 &
	qpid=$!
	trap 'kill -9 $qpid 2>/dev/null; rm -rf "$P"' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	# (whether QEMU runs is asked first: once it has exited, what it wrote
	# is all there for the checks that follow)
	n=0 why=
	while :; do
		running=false
		! alive $qpid || running=true
		if grep -q 'KVM internal error' "$P/err"; then
			why="$(grep -m1 'KVM internal error' "$P/err")$(grep -m1 'emulation failure' "$P/err" | sed 's/^/: /')"
			break
		elif grep -q 'Kernel panic' "$P/serial"; then
			break
		elif ! $running; then
			why="QEMU stopped: $(grep -v '^qemu-system[^:]*: warning:' "$P/err" | head -n 1)"
			break
		elif [ $n -ge $((PROBE_FIRST * 5)) ] && [ ! -s "$P/serial" ]; then
			why="no kernel output in ${PROBE_FIRST}s"
			break
		elif [ $n -ge $((PROBE_SECONDS * 5)) ]; then
			why="the kernel did not boot in ${PROBE_SECONDS}s"
			break
		fi
		sleep 0.2
		n=$((n + 1))
	done
	kill -9 $qpid 2>/dev/null || true
	wait $qpid 2>/dev/null || true
	rm -rf "$P"
	trap - EXIT INT TERM
	if [ -n "$why" ]; then
		echo "qemu: KVM cannot run the guest here ($why), TCG" >&2
		return 1
	fi
	echo "qemu: KVM booted the kernel in $((n / 5)).$((n % 5 * 2))s" >&2
}

accel=${KILN_QEMU_ACCEL:-}
case $accel in
kvm | tcg) ;;
"")
	cache=${KILN_QEMU_ACCEL_CACHE:-}
	if [ -n "$cache" ] && [ -f "$cache" ]; then
		accel=$(cat "$cache")
	fi
	case $accel in
	kvm | tcg) ;;
	*)
		if probe_kvm; then accel=kvm; else accel=tcg; fi
		if [ -n "$cache" ]; then
			echo "$accel" >"$cache.$$"
			mv "$cache.$$" "$cache"
		fi
		;;
	esac
	;;
*)
	echo "qemu: KILN_QEMU_ACCEL=$accel: kvm or tcg" >&2
	exit 2
	;;
esac
if $print_accel; then
	echo "$accel"
	exit 0
fi
echo "qemu: $QEMU with $accel" >&2
noreboot=-no-reboot
[ "${QEMU_REBOOT:-0}" != 1 ] || noreboot=
if [ -n "$BOOT_CHAIN" ]; then
	# shellcheck disable=SC2046,SC2086 # QEMU_ARGS and QEMU_OPTS are words
	set -- $QEMU -accel "$accel" $(qemu_args) $noreboot ${QEMU_OPTS:-}
else
	# shellcheck disable=SC2046,SC2086
	set -- $QEMU -accel "$accel" -kernel "$DIR/vmlinuz" \
		-initrd "$DIR/initramfs.img" -append "$CMDLINE $*" \
		$(qemu_args) $noreboot ${QEMU_OPTS:-}
fi
# the serial ports before the console's
skip=
[ "$QEMU_CONSOLE" = 1 ] || skip="-serial null"
if [ -z "${SERIAL_LOG:-}" ]; then
	# shellcheck disable=SC2086
	exec "$@" $skip -serial mon:stdio -nographic
fi
# exec: whoever started run.sh can stop QEMU by stopping this process
# shellcheck disable=SC2086
exec timeout "${TIMEOUT:-300}" "$@" -display none -monitor none \
	$skip -serial "file:$SERIAL_LOG"

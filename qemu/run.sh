#!/bin/sh
# run.sh DIR [CMDLINE_ARG...] -- boot out/<board>/ (DIR) in QEMU.
#
# Interactive by default: the serial console is this terminal (Ctrl-A X
# quits). With SERIAL_LOG=FILE it runs headless, the console goes to FILE,
# and it stops after TIMEOUT seconds (default 300); the exit status is
# QEMU's, or 124 on a timeout. DISK=FILE boots another disk image than
# DIR/disk.img. Extra arguments are added to the board's kernel command line;
# QEMU_OPTS adds options to QEMU's (e.g. -snapshot: the disk stays as built).
# KVM when /dev/kvm can be used, TCG otherwise.
set -eu
DIR=${1:?usage: run.sh DIR [CMDLINE_ARG...]}
shift
. "$DIR/board.conf"
DISK=${DISK:-$DIR/disk.img}

# KVM only when QEMU can start with it here: /dev/kvm may exist and still
# be unusable (no permission, nested virtualisation off).
accel=tcg
if [ -e /dev/kvm ] && echo quit | timeout 20 $QEMU -accel kvm -M none \
	-display none -monitor stdio -nodefaults >/dev/null 2>&1; then
	accel=kvm
fi
echo "qemu: $QEMU with $accel" >&2
# shellcheck disable=SC2086 # QEMU_ARGS are words
set -- $QEMU -accel "$accel" -kernel "$DIR/vmlinuz" \
	-initrd "$DIR/initramfs.img" -append "$CMDLINE $*" \
	$(echo "$QEMU_ARGS" | sed "s|@DISK@|$DISK|g") -no-reboot ${QEMU_OPTS:-}
if [ -z "${SERIAL_LOG:-}" ]; then
	exec "$@" -nographic
fi
timeout "${TIMEOUT:-300}" "$@" -display none -monitor none \
	-serial "file:$SERIAL_LOG"

#!/bin/sh
# build-kernel.sh BOARD_CONF DEST -- a kernel built from source with Kiln's
# fragments, laid out like fetch-kernel.sh's: DEST/vmlinuz,
# DEST/tree/lib/modules/KVER, DEST/kver, DEST/package. The source is
# $KERNEL_SRC or Debian's linux-source-6.12 (scripts/linux-source.sh); the
# config is the architecture's defconfig with configs/kernel/erofs.config
# and the board's KERNEL_FRAGMENTS merged by the kernel's merge_config.sh.
# Object files stay in DEST.build, so a rebuild only compiles what changed.
set -eu
umask 022
CONF=${1:?usage: build-kernel.sh BOARD_CONF DEST}
DEST=${2:?usage: build-kernel.sh BOARD_CONF DEST}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KERNEL_FRAGMENTS=
. "$CONF"
: "${SOURCE_DATE_EPOCH:?SOURCE_DATE_EPOCH must be set}"

die() {
	echo "build-kernel: $*" >&2
	exit 1
}

KSRC=${KERNEL_SRC:-$("$ROOT/scripts/linux-source.sh")}
KSRC=$(cd "$KSRC" && pwd)
case $ARCH in
x86_64) karch=x86 base=x86_64_defconfig image=arch/x86/boot/bzImage ;;
aarch64) karch=arm64 base=defconfig image=arch/arm64/boot/Image
	export CROSS_COMPILE=aarch64-linux-gnu- ;;
*) die "unknown ARCH $ARCH" ;;
esac
frags=$ROOT/configs/kernel/erofs.config
for f in $KERNEL_FRAGMENTS; do frags="$frags $ROOT/$f"; done

mkdir -p "$DEST.build"
O=$(cd "$DEST.build" && pwd)
# absolute: the kernel's make runs in $O, where a relative DEST would land
DEST=$(cd "$(dirname "$DEST")" && pwd)/$(basename "$DEST")
LOG=$O/build.log
# the build's stamps (uname -v, /proc/version) from the epoch, not the clock
export KBUILD_BUILD_TIMESTAMP="@$SOURCE_DATE_EPOCH" KBUILD_BUILD_USER=kiln \
	KBUILD_BUILD_HOST=kiln
kmake() { make -C "$KSRC" O="$O" ARCH=$karch "$@" >>"$LOG" 2>&1; }
: >"$LOG"
start=$(date +%s)
{
	kmake "$base" &&
	# shellcheck disable=SC2086 # a list of files
	(cd "$O" && "$KSRC/scripts/kconfig/merge_config.sh" -m -O "$O" .config $frags) &&
	kmake olddefconfig &&
	kmake -j"$(nproc)" "${image#arch/*/boot/}" modules
} >>"$LOG" 2>&1 || { tail -n 30 "$LOG" >&2; die "build failed (log: $LOG)"; }

rm -rf "$DEST.new"
mkdir -p "$DEST.new/tree"
kmake modules_install INSTALL_MOD_PATH="$DEST.new/tree" INSTALL_MOD_STRIP=1 ||
	die "modules_install failed (log: $LOG)"
kver=$(make -s -C "$KSRC" O="$O" ARCH=$karch kernelrelease)
kversion=$(make -s -C "$KSRC" kernelversion)	# (checked: not inside echo)
cp "$O/$image" "$DEST.new/vmlinuz"
echo "$kver" >"$DEST.new/kver"
echo "own-build-of-$(basename "$KSRC") $kversion -" >"$DEST.new/package"
rm -rf "$DEST"
mv "$DEST.new" "$DEST"
echo "build-kernel: $kver built in $(($(date +%s) - start)) s"

#!/bin/sh
# fetch-uboot.sh BOARD_CONF DEST -- what a U-Boot board (BOOT_CHAIN=rpi or
# uboot) runs before Linux, unpacked from Debian's .debs (never
# installed): U-Boot from UBOOT_PKG (u-boot-rpi:arm64, u-boot-qemu) as
# DEST/u-boot.bin (UBOOT_BIN inside the package); on a Raspberry Pi also
# the GPU firmware of RPI_FIRMWARE_PKG (raspi-firmware, non-free-firmware)
# as DEST/firmware/ (the files named in RPI_FIRMWARE_FILES); and
# DEST/package, "NAME VERSION SHA256" per .deb, for the manifest.
#
# non-free-firmware is reached through scripts/debs.sh, with apt's own
# source list and lists under $KILN_CACHE/apt-rpi; the host's apt setup is
# not touched. The .debs are kept in $KILN_CACHE/debs.
set -eu
umask 022
CONF=${1:?usage: fetch-uboot.sh BOARD_CONF DEST}
DEST=${2:?usage: fetch-uboot.sh BOARD_CONF DEST}
RPI_FIRMWARE_PKG= RPI_FIRMWARE_FILES=
. "$CONF"
: "${UBOOT_PKG:?} ${UBOOT_BIN:?}"

die() {
	echo "fetch-uboot: $*" >&2
	rm -rf "$DEST.new"
	exit 1
}

. "$(dirname "$0")/../scripts/debs.sh"
debs_init

rm -rf "$DEST.new"
mkdir -p "$DEST.new/deb"
: >"$DEST.new/package"

# get HOW PKG: the .deb of PKG (apt_ for non-free-firmware, apt-get for the
# host's lists), checked, unpacked in DEST.new/deb and listed in
# DEST.new/package.
get() {
	deb_fetch "$1" "$2"
	dpkg-deb -x "$DEB" "$DEST.new/deb" || die "cannot unpack $DEB"
	n=$(dpkg-deb -f "$DEB" Package) || die "$DEB: no package name"
	v=$(dpkg-deb -f "$DEB" Version) || die "$DEB: no version"
	echo "$n $v $DEB_SUM" >>"$DEST.new/package"
}
if [ -n "$RPI_FIRMWARE_PKG" ]; then
	nonfree_apt rpi "${RPI_FIRMWARE_PKG#*/}"
	get apt_ "$RPI_FIRMWARE_PKG"
	mkdir -p "$DEST.new/firmware"
	for f in $RPI_FIRMWARE_FILES; do
		[ -f "$DEST.new/deb/usr/lib/raspi-firmware/$f" ] ||
			die "$RPI_FIRMWARE_PKG has no usr/lib/raspi-firmware/$f"
		cp "$DEST.new/deb/usr/lib/raspi-firmware/$f" "$DEST.new/firmware/"
	done
fi
get apt-get "$UBOOT_PKG"
[ -f "$DEST.new/deb/$UBOOT_BIN" ] || die "$UBOOT_PKG has no $UBOOT_BIN"
cp "$DEST.new/deb/$UBOOT_BIN" "$DEST.new/u-boot.bin"
rm -rf "$DEST.new/deb"
rm -rf "$DEST"
mv "$DEST.new" "$DEST"

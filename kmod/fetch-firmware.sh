#!/bin/sh
# fetch-firmware.sh BOARD_CONF DEST -- the firmware packages a board names
# in FIRMWARE_PKGS ("PACKAGE/SUITE ..."), unpacked (never installed):
# DEST/tree/lib/firmware/... and DEST/package, a line "NAME VERSION SHA256"
# per .deb, for the manifest. No FIRMWARE_PKGS: an empty tree.
#
# Firmware lives in Debian's non-free-firmware component: reached with
# apt's own source list and lists under $KILN_CACHE/apt-firmware
# (scripts/debs.sh). The .debs are kept in $KILN_CACHE/debs.
set -eu
umask 022
CONF=${1:?usage: fetch-firmware.sh BOARD_CONF DEST}
DEST=${2:?usage: fetch-firmware.sh BOARD_CONF DEST}
FIRMWARE_PKGS=
. "$CONF"

die() {
	echo "fetch-firmware: $*" >&2
	rm -rf "$DEST.new"
	exit 1
}

rm -rf "$DEST.new"
mkdir -p "$DEST.new/tree/lib/firmware"
: >"$DEST.new/package"
if [ -n "$FIRMWARE_PKGS" ]; then
	. "$(dirname "$0")/../scripts/debs.sh"
	debs_init
	# shellcheck disable=SC2046 # one suite a word
	nonfree_apt firmware $(for p in $FIRMWARE_PKGS; do echo "${p#*/}"; done | sort -u)
	for p in $FIRMWARE_PKGS; do
		name=${p%/*} suite=${p#*/}
		deb_fetch apt_ "$name/$suite" \
			"$name: not in Debian's $suite non-free-firmware"
		dpkg-deb -x "$DEB" "$DEST.new/tree" || die "cannot unpack $DEB"
		v=$(dpkg-deb -f "$DEB" Version) || die "$DEB: no version"
		echo "$name $v $DEB_SUM" >>"$DEST.new/package"
	done
	# only /lib/firmware is wanted (/usr/lib/firmware on newer packages)
	if [ -d "$DEST.new/tree/usr/lib/firmware" ]; then
		cp -a "$DEST.new/tree/usr/lib/firmware/." "$DEST.new/tree/lib/firmware/"
	fi
	rm -rf "$DEST.new/tree/usr"
fi
rm -rf "$DEST"
mv "$DEST.new" "$DEST"

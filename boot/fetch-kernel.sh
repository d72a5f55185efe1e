#!/bin/sh
# fetch-kernel.sh BOARD_CONF DEST -- Debian's kernel for a board, unpacked
# (never installed): DEST/vmlinuz, DEST/tree/lib/modules/KVER, DEST/kver
# and DEST/package ("NAME VERSION SHA256-of-the-.deb", for the manifest).
# The .deb is kept in $KILN_CACHE/debs.
set -eu
umask 022
CONF=${1:?usage: fetch-kernel.sh BOARD_CONF DEST}
DEST=${2:?usage: fetch-kernel.sh BOARD_CONF DEST}
CACHE=$(mkdir -p "${KILN_CACHE:-$HOME/.cache/kiln}" && cd "${KILN_CACHE:-$HOME/.cache/kiln}" && pwd)	# absolute: the build changes directory
KERNEL_VERSION=
. "$CONF"

die() {
	echo "fetch-kernel: $*" >&2
	exit 1
}

# The meta package names the current image package (and its version).
pkg=$(apt-cache depends "$KERNEL_PKG" 2>/dev/null |
	awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { print $2; exit }')
[ -n "$pkg" ] || die "$KERNEL_PKG: no such package in the apt lists (apt-get update?)"
# a foreign architecture's package is named NAME:ARCH (arm64 on amd64)
pkg=${pkg%:*}
apkg=$pkg
case $ARCH in aarch64) apkg=$pkg:arm64 ;; esac
ver=${KERNEL_VERSION:-$(apt-cache show --no-all-versions "$apkg" |
	sed -n 's/^Version: //p' | head -n 1)}
[ -n "$ver" ] || die "$pkg: no version"
mkdir -p "$CACHE/debs"
deb=$CACHE/debs/${pkg}_$(echo "$ver" | sed 's/:/%3a/')_amd64.deb
case $ARCH in aarch64) deb=${deb%_amd64.deb}_arm64.deb ;; esac
if [ ! -f "$deb" ]; then
	(cd "$CACHE/debs" && apt-get download "$apkg=$ver" >/dev/null 2>&1) ||
		die "cannot download $pkg $ver"
	[ -f "$deb" ] || die "downloaded $pkg $ver, but not as $deb"
fi

rm -rf "$DEST.new"
mkdir -p "$DEST.new/tree"
dpkg-deb -x "$deb" "$DEST.new/tree" || die "cannot unpack $deb"
kver=$(ls "$DEST.new/tree/lib/modules")
[ "$(echo "$kver" | wc -w)" = 1 ] || die "$deb: not one modules tree"
mv "$DEST.new/tree/boot/vmlinuz-$kver" "$DEST.new/vmlinuz"
# device trees (arm64's package has them): DEST/dtbs/VENDOR/NAME.dtb
if [ -d "$DEST.new/tree/usr/lib/linux-image-$kver" ]; then
	mv "$DEST.new/tree/usr/lib/linux-image-$kver" "$DEST.new/dtbs"
fi
rm -rf "$DEST.new/tree/boot" "$DEST.new/tree/usr"
echo "$kver" >"$DEST.new/kver"
sum=$(sha256sum "$deb")
echo "$pkg $ver ${sum%% *}" >"$DEST.new/package"
rm -rf "$DEST"
mv "$DEST.new" "$DEST"

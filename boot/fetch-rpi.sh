#!/bin/sh
# fetch-rpi.sh BOARD_CONF DEST -- what a Raspberry Pi needs before Linux,
# unpacked from Debian's .debs (never installed): the GPU firmware of
# RPI_FIRMWARE_PKG (raspi-firmware, non-free-firmware) as DEST/firmware/
# (the files named in RPI_FIRMWARE_FILES), U-Boot from RPI_UBOOT_PKG
# (u-boot-rpi:arm64) as DEST/u-boot.bin (RPI_UBOOT_BIN inside the package),
# and DEST/package, "NAME VERSION SHA256" per .deb, for the manifest.
#
# non-free-firmware is reached as kmod/fetch-firmware.sh does it: apt with
# its own source list and lists under $KILN_CACHE/apt-rpi, checked with
# Debian's archive key; the host's apt setup is not touched. The .debs are
# kept in $KILN_CACHE/debs.
set -eu
umask 022
CONF=${1:?usage: fetch-rpi.sh BOARD_CONF DEST}
DEST=${2:?usage: fetch-rpi.sh BOARD_CONF DEST}
. "$CONF"
: "${RPI_FIRMWARE_PKG:?} ${RPI_FIRMWARE_FILES:?} ${RPI_UBOOT_PKG:?} ${RPI_UBOOT_BIN:?}"

die() {
	echo "fetch-rpi: $*" >&2
	rm -rf "$DEST.new"
	exit 1
}

CACHE=$(mkdir -p "${KILN_CACHE:-$HOME/.cache/kiln}" &&
	cd "${KILN_CACHE:-$HOME/.cache/kiln}" && pwd)
A=$CACHE/apt-rpi
mkdir -p "$A/lists/partial" "$A/archives/partial" "$A/parts" "$A/empty" "$CACHE/debs"
key=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$key" ] || die "$key missing (Debian package debian-archive-keyring)"
suite=${RPI_FIRMWARE_PKG#*/}
echo "deb [signed-by=$key] http://deb.debian.org/debian $suite non-free-firmware" >"$A/sources.list"
apt_() {
	apt-get -q -o Dir::Etc::SourceList="$A/sources.list" \
		-o Dir::Etc::SourceParts="$A/parts" \
		-o Dir::State::Lists="$A/lists" -o Dir::Cache="$A" \
		-o Dir::Cache::archives="$A/archives" \
		-o APT::Sandbox::User=root "$@"
}
# lists older than a day are refreshed; offline, older ones do
if [ -z "$(find "$A/lists" -name '*_Packages' -mtime -1 2>/dev/null)" ] ||
	! cmp -s "$A/sources.list" "$A/sources.used"; then
	if apt_ update >"$A/update.log" 2>&1; then
		cp "$A/sources.list" "$A/sources.used"
	elif cmp -s "$A/sources.list" "$A/sources.used"; then
		echo "fetch-rpi: warning: apt-get update failed; using the lists of" \
			"$(date -r "$A/sources.used" +%F) (log: $A/update.log)" >&2
	else
		die "apt-get update for non-free-firmware failed (log: $A/update.log)"
	fi
fi

rm -rf "$DEST.new"
mkdir -p "$DEST.new/deb" "$DEST.new/firmware"
: >"$DEST.new/package"

# get HOW PKG: the .deb of PKG (apt_ for non-free-firmware, apt-get for the
# host's lists), checked against the archive's SHA-256, unpacked in
# DEST.new/deb and listed in DEST.new/package.
get() {
	how=$1 p=$2
	# "'URI' FILE SIZE SHA256:SUM", only for a file not in the current
	# directory: asked from an empty one
	# shellcheck disable=SC2046 # four fields, split on purpose
	set -- $(cd "$A/empty" && $how download --print-uris "$p" 2>/dev/null)
	[ $# -ge 4 ] || die "$p: not in Debian's archive"
	deb=$CACHE/debs/$2 sum=${4#SHA256:}
	if [ ! -f "$deb" ] || ! echo "$sum  $deb" | sha256sum -c --status; then
		rm -f "$deb"
		(cd "$CACHE/debs" && $how download "$p" >/dev/null 2>&1) ||
			die "cannot download $p"
		echo "$sum  $deb" | sha256sum -c --status ||
			die "$deb: SHA-256 differs from the archive's"
	fi
	dpkg-deb -x "$deb" "$DEST.new/deb" || die "cannot unpack $deb"
	n=$(dpkg-deb -f "$deb" Package) || die "$deb: no package name"
	v=$(dpkg-deb -f "$deb" Version) || die "$deb: no version"
	echo "$n $v $sum" >>"$DEST.new/package"
}
get apt_ "$RPI_FIRMWARE_PKG"
get apt-get "$RPI_UBOOT_PKG"

for f in $RPI_FIRMWARE_FILES; do
	[ -f "$DEST.new/deb/usr/lib/raspi-firmware/$f" ] ||
		die "$RPI_FIRMWARE_PKG has no usr/lib/raspi-firmware/$f"
	cp "$DEST.new/deb/usr/lib/raspi-firmware/$f" "$DEST.new/firmware/"
done
[ -f "$DEST.new/deb/$RPI_UBOOT_BIN" ] || die "$RPI_UBOOT_PKG has no $RPI_UBOOT_BIN"
cp "$DEST.new/deb/$RPI_UBOOT_BIN" "$DEST.new/u-boot.bin"
rm -rf "$DEST.new/deb"
rm -rf "$DEST"
mv "$DEST.new" "$DEST"

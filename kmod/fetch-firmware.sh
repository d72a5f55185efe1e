#!/bin/sh
# fetch-firmware.sh BOARD_CONF DEST -- the firmware packages a board names
# in FIRMWARE_PKGS ("PACKAGE/SUITE ..."), unpacked (never installed):
# DEST/tree/lib/firmware/... and DEST/package, a line "NAME VERSION SHA256"
# per .deb, for the manifest. No FIRMWARE_PKGS: an empty tree.
#
# Firmware lives in Debian's non-free-firmware component, which a build
# host's sources.list usually lacks; rather than change the host's apt
# setup, apt runs here with its own source list and lists under
# $KILN_CACHE/apt-firmware, checked with Debian's archive key as usual.
# The .debs are kept in $KILN_CACHE/debs.
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
	CACHE=$(mkdir -p "${KILN_CACHE:-$HOME/.cache/kiln}" &&
		cd "${KILN_CACHE:-$HOME/.cache/kiln}" && pwd)
	A=$CACHE/apt-firmware
	mkdir -p "$A/lists/partial" "$A/archives/partial" "$A/parts" "$A/empty" \
		"$CACHE/debs"
	key=/usr/share/keyrings/debian-archive-keyring.gpg
	[ -f "$key" ] || die "$key missing (Debian package debian-archive-keyring)"
	suites=$(for p in $FIRMWARE_PKGS; do echo "${p#*/}"; done | sort -u)
	for s in $suites; do
		echo "deb [signed-by=$key] http://deb.debian.org/debian $s non-free-firmware"
	done >"$A/sources.list"
	apt_() {
		apt-get -q -o Dir::Etc::SourceList="$A/sources.list" \
			-o Dir::Etc::SourceParts="$A/parts" \
			-o Dir::State::Lists="$A/lists" -o Dir::Cache="$A" \
			-o Dir::Cache::archives="$A/archives" \
			-o APT::Sandbox::User=root "$@"
	}
	# lists older than a day are refreshed: a new firmware release
	# is picked up, a warm cache costs nothing
	if [ -z "$(find "$A/lists" -name '*_Packages' -mtime -1 2>/dev/null)" ] ||
		! cmp -s "$A/sources.list" "$A/sources.used"; then
		if apt_ update >"$A/update.log" 2>&1; then
			cp "$A/sources.list" "$A/sources.used"
		elif cmp -s "$A/sources.list" "$A/sources.used"; then
			# offline with lists for these sources: build from them
			echo "fetch-firmware: warning: apt-get update failed; using the lists of" \
				"$(date -r "$A/sources.used" +%F) (log: $A/update.log)" >&2
		else
			die "apt-get update for non-free-firmware failed (log: $A/update.log)"
		fi
	fi
	for p in $FIRMWARE_PKGS; do
		name=${p%/*} suite=${p#*/}
		# "'URI' FILE SIZE SHA256:SUM", printed only for a file not
		# in the current directory: ask from an empty one
		# shellcheck disable=SC2046 # four fields, split on purpose
		set -- $(cd "$A/empty" && apt_ download --print-uris "$name/$suite" 2>/dev/null)
		[ $# -ge 4 ] || die "$name: not in Debian's $suite non-free-firmware"
		deb=$CACHE/debs/$2 sum=${4#SHA256:}
		if [ ! -f "$deb" ] || ! echo "$sum  $deb" | sha256sum -c --status; then
			rm -f "$deb"
			(cd "$CACHE/debs" && apt_ download "$name/$suite" >/dev/null 2>&1) ||
				die "cannot download $name from $suite"
			echo "$sum  $deb" | sha256sum -c --status ||
				die "$deb: SHA-256 differs from the archive's"
		fi
		dpkg-deb -x "$deb" "$DEST.new/tree" || die "cannot unpack $deb"
		v=$(dpkg-deb -f "$deb" Version) || die "$deb: no version"
		sum=$(sha256sum "$deb") || die "cannot read $deb"
		echo "$name $v ${sum%% *}" >>"$DEST.new/package"
	done
	# only /lib/firmware is wanted (/usr/lib/firmware on newer packages)
	if [ -d "$DEST.new/tree/usr/lib/firmware" ]; then
		cp -a "$DEST.new/tree/usr/lib/firmware/." "$DEST.new/tree/lib/firmware/"
	fi
	rm -rf "$DEST.new/tree/usr"
fi
rm -rf "$DEST"
mv "$DEST.new" "$DEST"

#!/bin/sh
# linux-source.sh -- Debian's linux-source-6.12 tree, unpacked once into
# $KILN_CACHE/linux-source-VERSION; prints that directory. The package's
# version is the archive's current one unless LINUX_SOURCE_VERSION pins it.
# The unpacked tree is only read (builds use O= directories elsewhere).
set -eu
CACHE=$(mkdir -p "${KILN_CACHE:-$HOME/.cache/kiln}" && cd "${KILN_CACHE:-$HOME/.cache/kiln}" && pwd)
PKG=linux-source-6.12

die() {
	echo "linux-source: $*" >&2
	exit 1
}

ver=${LINUX_SOURCE_VERSION:-$(apt-cache show --no-all-versions "$PKG" 2>/dev/null |
	sed -n 's/^Version: //p' | head -n 1)}
[ -n "$ver" ] || die "$PKG: not in the apt lists (apt-get update?)"
DEST=$CACHE/$PKG-$ver
if [ ! -f "$DEST/Makefile" ]; then
	mkdir -p "$CACHE/debs"
	deb=$CACHE/debs/${PKG}_${ver}_all.deb
	[ -f "$deb" ] || (cd "$CACHE/debs" && apt-get download "$PKG=$ver" >/dev/null 2>&1) ||
		die "cannot download $PKG $ver"
	[ -f "$deb" ] || die "downloaded $PKG $ver, but not as $deb"
	rm -rf "$DEST.new" "$DEST.deb" && mkdir -p "$DEST.new"
	trap 'rm -rf "$DEST.new" "$DEST.deb"' EXIT
	# in steps, each checked (through pipes, only the last one's failure
	# would show): the package, then the source tarball inside it
	dpkg-deb -x "$deb" "$DEST.deb" || die "cannot unpack $deb"
	set -- "$DEST.deb"/usr/src/linux-source-*.tar.xz
	[ -f "$1" ] || die "$deb: no linux-source-*.tar.xz inside"
	tar -x -C "$DEST.new" --strip-components=1 --use-compress-program='xz -T0' \
		-f "$1" || die "cannot unpack $1"
	[ -f "$DEST.new/Makefile" ] || die "$deb: no kernel tree inside"
	rm -rf "$DEST"
	mv "$DEST.new" "$DEST"
	rm -rf "$DEST.deb"
fi
echo "$DEST"

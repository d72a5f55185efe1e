#!/bin/sh
# build-busybox.sh ARCH OUT -- a static busybox for ARCH, built with musl
# from Debian bookworm's busybox source and configs/busybox.config, copied
# to OUT, with the list of its applets' paths in OUT.links. Cached in $KILN_CACHE/ARCH/busybox-VERSION-CONFIGSUM: a changed
# config is a new build, an unchanged one costs a copy.
set -eu
umask 022

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARCH=${1:?usage: build-busybox.sh ARCH OUT}
OUT=${2:?usage: build-busybox.sh ARCH OUT}
CACHE=$(mkdir -p "${KILN_CACHE:-$HOME/.cache/kiln}" && cd "${KILN_CACHE:-$HOME/.cache/kiln}" && pwd)	# absolute: the build changes directory
SRC=$CACHE/src
# Source package, version and SHA-256 of its .dsc (bookworm's Sources).
PKG=busybox
VER=1:1.35.0-4+deb12u1
DSC=$SRC/busybox_1.35.0-4+deb12u1.dsc
DSC_SUM=9c01fe128b0eeded371c70e37d474fdb5055f71b5d0a778db44c6b0c62d3a7fa
CONFIG=$ROOT/configs/busybox.config
RECIPE=2

die() {
	echo "build-busybox: $*" >&2
	exit 1
}

# STRIP: busybox strips with the host's strip unless told (aarch64's is
# the cross binutils')
STRIP=strip
case $ARCH in
x86_64) KARCH=x86_64-linux-gnu ;;
aarch64) KARCH=aarch64-linux-gnu STRIP=aarch64-linux-gnu-strip ;;
*) die "unknown ARCH $ARCH" ;;
esac
[ -r "$CONFIG" ] || die "cannot read $CONFIG"
SUM=$( (echo "recipe=$RECIPE"; cat "$CONFIG") | sha256sum) || die "sha256sum failed"
SUM=$(echo "$SUM" | cut -c1-12)
DEST=$CACHE/$ARCH/busybox-1.35.0-4+deb12u1-$SUM
if [ ! -x "$DEST/busybox" ]; then
	mkdir -p "$SRC" "$CACHE/$ARCH"
	[ -f "$DSC" ] || (cd "$SRC" && apt-get source --download-only \
		"$PKG=$VER" >/dev/null 2>&1) || die "cannot download $PKG $VER"
	echo "$DSC_SUM  $DSC" | sha256sum -c --status ||
		die "$DSC does not match its pinned SHA-256"
	TMP=$(mktemp -d "$CACHE/$ARCH/.bb.XXXXXX")
	trap 'rm -rf "$TMP"' EXIT
	LOG=$CACHE/$ARCH/busybox.log
	start=$(date +%s)
	(
		dpkg-source -x "$DSC" "$TMP/src"
		# musl has no kernel headers: only linux/, asm/ and friends
		# from Debian's linux-libc-dev, nothing of glibc's
		mkdir "$TMP/kh"
		for d in linux asm-generic mtd; do
			ln -s "/usr/include/$d" "$TMP/kh/$d"
		done
		ln -s "/usr/include/$KARCH/asm" "$TMP/kh/asm"
		cd "$TMP/src"
		# the banner's build date: the package's, so builds match
		SOURCE_DATE_EPOCH=$(dpkg-parsechangelog -STimestamp)
		export SOURCE_DATE_EPOCH
		make allnoconfig
		# the fragment's symbols replace allnoconfig's answers
		grep '^CONFIG_' "$CONFIG" | sed 's/=.*//' | while read -r s; do
			sed -i -e "/^$s=/d" -e "/^# $s is not set/d" .config
		done
		grep '^CONFIG_' "$CONFIG" >>.config
		yes '' | make oldconfig
		grep '^CONFIG_' "$CONFIG" | while read -r line; do
			grep -qxF "$line" .config ||
				{ echo "not kept by kconfig: $line"; exit 1; }
		done
		make -j"$(nproc)" busybox busybox.links CC="$ROOT/scripts/musl-cc $ARCH" \
			HOSTCC=gcc STRIP="$STRIP" EXTRA_CFLAGS="-isystem $TMP/kh" \
			SKIP_STRIP=n V=1
	) >"$LOG" 2>&1 || { tail -n 30 "$LOG" >&2; die "build failed (log: $LOG)"; }
	rm -rf "$DEST.new" && mkdir -p "$DEST.new"
	cp "$TMP/src/busybox" "$TMP/src/busybox.links" "$TMP/src/.config" \
		"$DEST.new/"
	rm -rf "$DEST" && mv "$DEST.new" "$DEST"
	echo "build-busybox: $ARCH busybox built in $(($(date +%s) - start))s"
fi
mkdir -p "$(dirname "$OUT")"
cp "$DEST/busybox" "$OUT"
cp "$DEST/busybox.links" "$OUT.links"	# where its applets go

#!/bin/sh
# build-deps.sh ARCH -- build the libraries Kiln links statically (lz4, zstd,
# xz's liblzma, libdeflate, libsodium, libarchive; mimalloc as one object)
# with musl for ARCH (x86_64 or aarch64) from Debian bookworm's source
# packages, and put them in out/ARCH/sysroot/{include,lib}.
#
# Each package is built once per ARCH into $KILN_CACHE/ARCH/PKG-VERSION; later
# runs only copy from there, so a warm run costs a few file copies. Sources are
# pinned by version and by the SHA-256 of their .dsc, which in turn pins every
# tarball, so a cache can't silently hold something else.
set -eu

usage() {
	echo "usage: build-deps.sh x86_64|aarch64" >&2
	exit 2
}
[ $# -eq 1 ] || usage
case $1 in
x86_64 | aarch64) ARCH=$1 ;;
*) usage ;;
esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=$(mkdir -p "${KILN_CACHE:-$HOME/.cache/kiln}" && cd "${KILN_CACHE:-$HOME/.cache/kiln}" && pwd)	# absolute: the build changes directory
SRC=$CACHE/src
MUSLCC="$ROOT/scripts/musl-cc $ARCH"
# The host's ar may not index foreign objects; the cross binutils' always can.
AR=$ARCH-linux-gnu-ar
# Exported, not passed on make's command line: the upstream Makefiles append
# their own flags with += (e.g. zstd's -Wa,--noexecstack), and a command-line
# CFLAGS would silently drop those. configure reads it from the environment.
CFLAGS=-O2
export CFLAGS
JOBS=$(nproc 2>/dev/null || echo 2)
# Bump RECIPE whenever a build recipe below changes: a cached build whose
# stamp differs from STAMP is redone.
RECIPE=1
STAMP="recipe=$RECIPE cflags=$CFLAGS"

# Source package, version, SHA-256 of its .dsc (as listed in bookworm's
# signed Sources index; none has an epoch, so the .dsc is PKG_VERSION.dsc).
# Built in this order: libarchive links against lz4, zstd and xz built before.
PACKAGES='
lz4        1.9.4-1          e16302bca544d08d106efc216541f4a0403c8f8a5fad5eaac7588223a55af263
libzstd    1.5.4+dfsg2-5    8f602f92b575aa8b5e979196fb6ee82d78f233521dc9636526d3ecba1f63c1b1
xz-utils   5.4.1-1+deb12u1  38f98e356f7e7e89b0920d39c55dd5f3d1a9f2684bff83c8b4890561e1832e94
libdeflate 1.14-1           1f82791c5ac5623ed110e09cc991471deebfe4c419414392d1242e122c6f4c19
libsodium  1.0.18-1+deb12u1 2c23c57b5a9385dab5a1916014c9b5f2cdd7dadeb8a35b28c1bfb603ce7095c4
libarchive 3.6.2-1+deb12u4  ab90e3b9c8b525255d4c33775f5db94ae97044d5e7e9507f1034b2c300182b48
mimalloc   2.0.9+ds-2       fb324e4faaa693d90f5bf0a8e652ea96f41d4c7f6ea432ea819756e8f70ce42d
'

say() { printf 'build-deps: %s\n' "$*"; }
die() {
	printf 'build-deps: %s\n' "$*" >&2
	exit 1
}

# run CMD...: run CMD in $WORK with all output in $LOG, so a build prints one
# line per package. On failure show the log's end: that's where the error is.
run() {
	if ! (cd "$WORK" && "$@") </dev/null >>"$LOG" 2>&1; then
		printf 'build-deps: %s %s: failed: %s\n' "$ARCH" "$PKG" "$*" >&2
		printf -- '--- last lines of %s:\n' "$LOG" >&2
		tail -n 40 "$LOG" >&2
		exit 1
	fi
}

# dsc_sums DSC: the .dsc's Checksums-Sha256 list in sha256sum -c format.
dsc_sums() {
	awk '/^Checksums-Sha256:/ { on = 1; next }
	     /^[^ ]/ { on = 0 }
	     on && NF == 3 { print $1 "  " $3 }' "$1"
}

# have_src DSC: the .dsc and every file it lists are already downloaded.
have_src() {
	[ -f "$1" ] || return 1
	sums=$(dsc_sums "$1") || return 1
	for f in $(printf '%s\n' "$sums" | awk '{ print $2 }'); do
		[ -f "$SRC/$f" ] || return 1
	done
}

# fetch PKG VER SUM: download and check the source package. apt-get verifies
# against the archive too, but files already in the cache are checked only
# here, so both the .dsc and everything it lists are checked each build.
fetch() {
	dsc=$SRC/${1}_$2.dsc
	if ! have_src "$dsc"; then
		WORK=$SRC
		run apt-get source --download-only "$1=$2"
	fi
	echo "$3  $dsc" | sha256sum -c --status ||
		die "$dsc does not match its pinned SHA-256; delete it to re-download"
	# the list first: a failed awk feeding sha256sum -c would check less
	sums=$(dsc_sums "$dsc") || die "cannot read $dsc"
	(cd "$SRC" && printf '%s\n' "$sums" | sha256sum -c --strict --quiet) >&2 ||
		die "$PKG $2: files in $SRC fail the .dsc's SHA-256 (above); delete them to re-download"
}

# Per-package recipes: run in the unpacked tree ($WORK), build only the static
# library and copy headers and .a into $DEST/{include,lib}. V=1 puts the full
# compiler command lines in the log, which is only read when something broke.
build_lz4() {
	run make -C lib liblz4.a V=1 CC="$MUSLCC" AR="$AR"
	run cp -p lib/lz4.h lib/lz4hc.h lib/lz4frame.h lib/lz4frame_static.h \
		"$DEST/include/"
	run cp -p lib/liblz4.a "$DEST/lib/"
}

build_libzstd() {
	# -mt: with ZSTD_MULTITHREAD, so ZSTD_c_nbWorkers works (musl has
	# pthreads in libc). Legacy (pre-v0.8) formats are of no use to us.
	run make -C lib -j"$JOBS" libzstd.a-mt V=1 CC="$MUSLCC" AR="$AR" \
		ZSTD_LEGACY_SUPPORT=0
	run cp -p lib/zstd.h lib/zstd_errors.h lib/zdict.h "$DEST/include/"
	run cp -p lib/libzstd.a "$DEST/lib/"
}

build_xz_utils() {
	# The tarball ships a generated configure and Debian's patches touch no
	# autotools input, so no autoreconf. --build as well as --host makes the
	# aarch64 build a real cross build even when binfmt could run its tests.
	run ./configure --build="$(cc -dumpmachine)" --host="$ARCH-linux-gnu" \
		CC="$MUSLCC" AR="$AR" --disable-dependency-tracking \
		--disable-shared --enable-static --disable-xz --disable-xzdec \
		--disable-lzmadec --disable-lzmainfo --disable-lzma-links \
		--disable-scripts --disable-doc --disable-nls
	run make -C src/liblzma -j"$JOBS"
	run cp -pR src/liblzma/api/lzma.h src/liblzma/api/lzma "$DEST/include/"
	run cp -p src/liblzma/.libs/liblzma.a "$DEST/lib/"
}

build_libdeflate() {
	# 1.14 predates libdeflate's CMake build; its Makefile has a target for
	# just the static library.
	run make -j"$JOBS" libdeflate.a V=1 CC="$MUSLCC" AR="$AR"
	run cp -p libdeflate.h "$DEST/include/"
	run cp -p libdeflate.a "$DEST/lib/"
}

build_libsodium() {
	# Debian's orig tarball is a git export without configure (Debian's
	# build autoreconfs too). Not autogen.sh: it also downloads config.sub.
	run autoreconf -fi
	run ./configure --build="$(cc -dumpmachine)" --host="$ARCH-linux-gnu" \
		CC="$MUSLCC" AR="$AR" --disable-dependency-tracking \
		--disable-shared --enable-static
	run make -C src/libsodium -j"$JOBS" V=1
	# The glob, not the whole directory: that also holds private/ and
	# version.h.in, which aren't part of the installed API.
	run cp -p src/libsodium/include/sodium.h "$DEST/include/"
	run mkdir "$DEST/include/sodium"
	run cp -p "$WORK"/src/libsodium/include/sodium/*.h "$DEST/include/sodium/"
	run cp -p src/libsodium/.libs/libsodium.a "$DEST/lib/"
}

build_libarchive() {
	# Against the cached builds: out/ARCH/sysroot is only put together
	# after every package is built. libarchive's cache isn't keyed by
	# their versions; their APIs are stable, and consumers link the
	# sysroot's current .a anyway.
	zstd=$(cached libzstd)
	lz4=$(cached lz4)
	xz=$(cached xz-utils)
	# Just the library, for tar and the sysroot's compressors: no crypto
	# (zip encryption, mtree/xar digests), no xar (XML), and no zlib or
	# bzip2, which the sysroot lacks (libarchive then runs gzip or bzip2
	# as a program). No iconv: musl's writes '*' for what the locale
	# can't show, without an error, so a pax UTF-8 name read in the C
	# locale comes back as '*'s instead of raw with a warning; its tables
	# also add 150K to every binary. Debian's patches touch Makefile.am
	# and configure.ac, for tests and the .pc only: without maintainer
	# mode make doesn't try to rerun automake over them.
	run ./configure --build="$(cc -dumpmachine)" --host="$ARCH-linux-gnu" \
		CC="$MUSLCC" AR="$AR" \
		CPPFLAGS="-I$zstd/include -I$lz4/include -I$xz/include" \
		LDFLAGS="-L$zstd/lib -L$lz4/lib -L$xz/lib" \
		--disable-dependency-tracking --disable-maintainer-mode \
		--disable-shared --enable-static \
		--disable-bsdtar --disable-bsdcat --disable-bsdcpio \
		--with-zstd --with-lz4 --with-lzma --without-zlib --without-bz2lib \
		--without-libb2 --without-lzo2 --without-openssl --without-nettle \
		--without-mbedtls --without-xml2 --without-expat --without-iconv
	# configure drops a library it can't find without a word.
	for lib in ZSTD LZ4 LZMA; do
		grep -q "^#define HAVE_LIB$lib 1" "$WORK/config.h" ||
			die "$ARCH $PKG: configure found no $lib (see $LOG)"
	done
	run make -j"$JOBS" libarchive.la V=1
	run cp -p libarchive/archive.h libarchive/archive_entry.h "$DEST/include/"
	run cp -p .libs/libarchive.a "$DEST/lib/"
}

build_mimalloc() {
	# The EROFS tools' malloc. musl's takes one lock for every malloc
	# and free; with the workers, the tree scan and the writer all
	# allocating, that lock was a third of the CPU time two workers add
	# over one (lz4, linux tree). One object, not an archive: an archive
	# member is linked only for a symbol still undefined when it is
	# searched, an object always, so its malloc wins over libc.a's.
	# static.c is upstream's one file of all sources; MI_MALLOC_OVERRIDE
	# makes it define malloc, free and the rest.
	run $MUSLCC -O2 -DNDEBUG -DMI_MALLOC_OVERRIDE -Iinclude \
		-c src/static.c -o "$DEST/lib/mimalloc.o"
}

# cached PKG: the cache directory of PKG's build for this ARCH.
cached() {
	ver=$(printf '%s\n' "$PACKAGES" | awk -v p="$1" '$1 == p { print $2 }')
	[ -n "$ver" ] || die "$1 is not in PACKAGES"
	echo "$CACHE/$ARCH/$1-$ver"
}

# build PKG VER SUM: build into the cache unless a complete build is there.
build() {
	PKG=$1
	DEST=$CACHE/$ARCH/$1-$2
	# cached: say nothing, so a warm build stays quiet
	[ "$(cat "$DEST/.stamp" 2>/dev/null)" != "$STAMP" ] || return 0
	start=$(date +%s)
	LOG=$CACHE/$ARCH/$1-$2.log
	: >"$LOG"
	fetch "$@"
	# A half-finished earlier build has no stamp; start it over from scratch.
	rm -rf "$DEST" "${TMP:?}/$1"
	mkdir -p "$DEST/include" "$DEST/lib"
	WORK=$TMP
	run dpkg-source -x "$SRC/${1}_$2.dsc" "$1"
	WORK=$TMP/$1
	"build_$(echo "$1" | tr - _)"
	# Written last: its presence means everything above completed.
	echo "$STAMP" >"$DEST/.stamp"
	rm -rf "${TMP:?}/$1"
	say "$ARCH $1 $2: built in $(($(date +%s) - start))s (log: $LOG)"
}

# each FUNC: call FUNC PKG VER SUM for every package in PACKAGES, in order.
# (sh has no locals, hence the unusual name: FUNC must not clobber it.)
each() {
	each_fn=$1
	# shellcheck disable=SC2086 # splitting the table into words is the point
	set -- $PACKAGES
	while [ $# -ge 3 ]; do
		"$each_fn" "$1" "$2" "$3"
		shift 3
	done
}

# sysroot_add PKG VER: copy one cached build into the new sysroot. cp -p
# keeps the cache's mtimes, so a warm run doesn't make consumers relink.
sysroot_add() {
	cp -pR "$CACHE/$ARCH/$1-$2/include/." "$SYSROOT.new/include/"
	cp -pR "$CACHE/$ARCH/$1-$2/lib/." "$SYSROOT.new/lib/"
}

# Rebuild the sysroot from the cache on every run (it is cheap), so nothing
# stale survives, and swap it in whole.
populate_sysroot() {
	SYSROOT=$ROOT/out/$ARCH/sysroot
	rm -rf "$SYSROOT.new"
	mkdir -p "$SYSROOT.new/include" "$SYSROOT.new/lib"
	each sysroot_add
	rm -rf "$SYSROOT"
	mv "$SYSROOT.new" "$SYSROOT"
}

main() {
	mkdir -p "$SRC" "$CACHE/$ARCH"
	# One run at a time per cache: parallel runs would race on downloads and
	# on the same build directories.
	exec 9>"$CACHE/.lock"
	flock 9
	TMP=$(mktemp -d "$CACHE/$ARCH/.tmp.XXXXXX")
	trap 'rm -rf "$TMP"' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM

	each build
	populate_sysroot
}

main

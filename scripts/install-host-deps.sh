#!/bin/sh
# Install the Debian packages Kiln's build and tests need. Idempotent: it only
# calls apt-get when something is missing, so a warm machine pays nothing.
set -eu

PKGS="build-essential musl-tools musl-dev:arm64 gcc-aarch64-linux-gnu
qemu-user-static erofs-utils attr acl python3 dpkg-dev cmake file xxd
autoconf automake libtool
e2fsprogs util-linux liblz4-dev libzstd-dev liblzma-dev libdeflate-dev
libsodium-dev libarchive-dev
clang libclang-rt-14-dev
kmod fdisk cpio zstd xz-utils lz4 qemu-system-x86
qemu-system-arm mtools dosfstools linux-libc-dev:arm64
flex bison bc libelf-dev libssl-dev u-boot-tools libubootenv-tool
android-libcutils"

# `install-host-deps.sh bench` adds what the benchmarks compare against.
[ "${1:-}" != bench ] || PKGS="$PKGS squashfs-tools debootstrap gnuplot-nox bc"

[ "$(id -u)" = 0 ] || SUDO=sudo
SUDO=${SUDO:-}

need_update=0
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	$SUDO dpkg --add-architecture arm64
	need_update=1
fi
# apt-get source needs deb-src entries for bookworm.
src=/etc/apt/sources.list.d/kiln-deb-src.sources
if [ ! -f "$src" ]; then
	$SUDO tee "$src" >/dev/null <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
	need_update=1
fi

missing=
for p in $PKGS; do
	dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing="$missing $p"
done
[ -n "$missing" ] || [ "$need_update" = 1 ] || exit 0
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
[ -z "$missing" ] || $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null

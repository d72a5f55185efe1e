#!/bin/sh
# mkbundle.sh BOARD ROOTFS.erofs SECRET_KEY KILN_BUNDLE OUT [DIR:TARGET] --
# an update bundle (kiln-bundle create) of BOARD's root image, version
# $KILN_VERSION, and with DIR:TARGET DIR's files as a zstd tar to unpack
# into TARGET under the device's data partition. The tar is reproducible:
# names sorted, owner 0:0, every time $SOURCE_DATE_EPOCH.
set -eu
umask 022
BOARD=$1 ROOTFS=$2 KEY=$3 KB=$4 OUT=$5 DATA=${6:-}
: "${KILN_VERSION:?} ${SOURCE_DATE_EPOCH:?}"

die() {
	echo "mkbundle: $*" >&2
	exit 1
}
[ -f "$KEY" ] || die "no secret key $KEY (make keys)"
set -- --rootfs "$ROOTFS"
W=$OUT.work
trap 'rm -rf "$W"' EXIT
rm -rf "$W"
mkdir -p "$W"
if [ -n "$DATA" ]; then
	dir=${DATA%:*} target=${DATA##*:}
	[ "$dir" != "$DATA" ] || die "BUNDLE_DATA=$DATA: want DIR:TARGET"
	[ -d "$dir" ] || die "BUNDLE_DATA: $dir is not a directory"
	tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 \
		--numeric-owner --format=pax --pax-option=delete=atime,delete=ctime \
		-C "$dir" -cf "$W/data.tar" . || die "tar failed"
	zstd -q -19 -T1 "$W/data.tar" -o "$W/data.tar.zst" || die "zstd failed"
	set -- "$@" --files "$W/data.tar.zst:$target"
fi
"$KB" create --key "$KEY" --version "$KILN_VERSION" --compatible "$BOARD" "$@" "$OUT"

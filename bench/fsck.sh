#!/bin/bash
# make bench (second part): fsck.erofs check and --extract times on the
# bench corpora, next to Debian's fsck.erofs 1.5, unsquashfs, cp -a and any
# ANCHOR_FSCK=PATH (e.g. a hand-built erofs-utils 1.9.3). Writes
# $RESULTS/fsck.md (default bench/results; e.g. RESULTS=/tmp/r for a run over
# some CORPORA and FSCK_ALGS only). A benchmark, never a test.
#
# Like with like: Kiln's plain check decompresses every pcluster; erofs-utils
# decompresses nothing without --extract, and with --extract and no DIR it
# decompresses and discards: that is the row to compare Kiln's check with.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=out/bench
RESULTS=${RESULTS:-bench/results}
MKFS=$PWD/out/x86_64/bin/mkfs.erofs
FSCK=$PWD/out/x86_64/bin/fsck.erofs
REPEAT=${REPEAT:-3}
CORPORA=${CORPORA:-rootfs linux}
ALGS=${FSCK_ALGS:-lz4 lz4hc zstd lzma deflate}
ANCHOR_NAME=${ANCHOR_NAME:-anchor}
. bench/corpora.sh

# Extraction goes to a tmpfs when we can mount one: on a disk filesystem
# the times follow the filesystem's state (inode allocation after many
# deletions) more than the tool.
XT=$BENCH/xt
mkdir -p "$XT"
if [ "$(id -u)" = 0 ] && ! mountpoint -q "$XT"; then
	mount -t tmpfs -o size=12g tmpfs "$XT" 2>/dev/null || true
fi
TARGET=$(mountpoint -q "$XT" && echo tmpfs || echo "$(df --output=fstype "$XT" | tail -1)")

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }

# measure COLD CMD...: median of REPEAT runs, "wall cpu maxrss_kb"; the
# extraction directory is emptied before each run. COLD=1 drops caches.
measure() {
	local cold=$1; shift
	local runs=()
	for _ in $(seq "$REPEAT"); do
		rm -rf "$XT/out"
		[ "$cold" = 1 ] && drop_caches
		/usr/bin/time -f '%e %U %S %M' -o "$BENCH/time" "$@" >/dev/null 2>&1 ||
			{ echo "failed: $*" >&2; return 1; }
		runs+=("$(awk '{printf "%s %.2f %s", $1, $2 + $3, $4}' "$BENCH/time")")
	done
	rm -rf "$XT/out"
	printf '%s\n' "${runs[@]}" | sort -n | sed -n "$(( (REPEAT + 1) / 2 ))p"
}

row() {	# row NAME WHAT MEASUREMENT BYTES
	read -r wall cpu rss <<<"$3"
	awk -v n="$1" -v what="$2" -v wall="$wall" -v cpu="$cpu" -v rss="$rss" \
	    -v b="$4" 'BEGIN { printf "| %s | %s | %.2f | %.2f | %.0f | %.0f |\n",
		n, what, wall, cpu, rss / 1024, b / wall / 1e6 }'
}

squash_comp() {
	case $1 in
	lz4) echo "-comp lz4" ;; lz4hc) echo "-comp lz4 -Xhc" ;;
	zstd) echo "-comp zstd -Xcompression-level 3" ;;
	lzma) echo "-comp xz" ;; deflate) echo "-comp gzip -Xcompression-level 1" ;;
	esac
}

bench_alg() {	# bench_alg CORPUS ALG
	local c=$1 alg=$2 src=$BENCH/$1 img=$BENCH/fsck.img sq=$BENCH/fsck.sqfs
	local bytes out=$XT/out w
	bytes=$(du -sb --apparent-size "$src" | cut -f1)
	"$MKFS" --quiet -z "$alg" -C 65536 "$img" "$src"
	echo
	echo "### $c, $alg -C64K ($((bytes / 1048576)) MiB of files)"
	echo
	echo "| tool | what | wall s | cpu s | max RSS MiB | MB/s of files |"
	echo "|---|---|---|---|---|---|"
	for w in 1 2; do
		row "kiln w$w" "check (decompresses all)" "$(measure 0 "$FSCK" --workers=$w "$img")" "$bytes"
	done
	if [ -n "${ANCHOR_FSCK:-}" ]; then
		row "$ANCHOR_NAME" "--extract, no DIR (decompress, discard)" "$(measure 0 "$ANCHOR_FSCK" --extract "$img")" "$bytes"
		row "$ANCHOR_NAME" "plain check (decompresses nothing)" "$(measure 0 "$ANCHOR_FSCK" "$img")" "$bytes"
	fi
	case $alg in lz4|lz4hc)
		row "erofs-utils 1.5" "--extract, no DIR" "$(measure 0 fsck.erofs --extract "$img")" "$bytes"
	esac
	for w in 1 2; do
		row "kiln w$w" "--extract=DIR" "$(measure 0 "$FSCK" --workers=$w --extract="$out" "$img")" "$bytes"
	done
	[ -n "${ANCHOR_FSCK:-}" ] &&
		row "$ANCHOR_NAME" "--extract=DIR" "$(measure 0 "$ANCHOR_FSCK" --extract="$out" "$img")" "$bytes"
	case $alg in lz4|lz4hc)
		row "erofs-utils 1.5" "--extract=DIR" "$(measure 0 fsck.erofs --extract="$out" "$img")" "$bytes"
	esac
	# shellcheck disable=SC2046
	mksquashfs "$src" "$sq" -noappend -quiet -no-progress -b 65536 $(squash_comp "$alg") >/dev/null
	for w in 1 2; do
		row "unsquashfs p$w" "extract" "$(measure 0 unsquashfs -q -n -processors $w -d "$out" "$sq")" "$bytes"
	done
	if [ "$alg" = lz4 ]; then
		row "cp -a" "copy of the tree" "$(measure 0 cp -a "$src" "$out")" "$bytes"
		if [ -w /proc/sys/vm/drop_caches ]; then
			row "kiln w2, cold cache" "check" "$(measure 1 "$FSCK" --workers=2 "$img")" "$bytes"
			[ -n "${ANCHOR_FSCK:-}" ] &&
				row "$ANCHOR_NAME, cold cache" "--extract, no DIR" "$(measure 1 "$ANCHOR_FSCK" --extract "$img")" "$bytes"
		fi
	fi
	rm -f "$img" "$sq"
}

{
	echo "# fsck.erofs benchmark"
	echo
	echo "$(date -u +%F), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs."
	echo "Median of $REPEAT runs, page cache warm unless the row says cold."
	echo "Extraction target: $TARGET. Images by Kiln's mkfs.erofs; squashfs"
	echo "images by mksquashfs with the same compressor, -b 64K."
	echo "Kiln's check decompresses everything: compare it with the"
	echo "'--extract, no DIR' rows of erofs-utils, not with their plain check."
	for c in $CORPORA; do
		"corpus_$c"
		for alg in $ALGS; do
			echo "bench fsck: $c $alg" >&2
			bench_alg "$c" "$alg"
		done
	done
} > "$RESULTS/fsck.md.tmp"
mv "$RESULTS/fsck.md.tmp" "$RESULTS/fsck.md"
mountpoint -q "$XT" && umount "$XT"
echo "bench: results in $RESULTS/fsck.md" >&2

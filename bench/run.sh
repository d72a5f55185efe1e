#!/bin/bash
# make bench: mkfs.erofs speed, memory and image size on two corpora made
# from Debian's archive, next to Debian's mkfs.erofs 1.5, mksquashfs and any
# ANCHOR_MKFS=PATH (e.g. a hand-built erofs-utils 1.9.3). Writes markdown
# tables to bench/results/. Slow by nature: a benchmark, never a test.
# Every Kiln run also reports where its time went (KILN_PROFILE=1);
# BEFORE_MKFS=PATH adds an older Kiln build's rows and profile, for
# BEFORE_ALGS (default: all but lzma).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=out/bench
RESULTS=bench/results
KILN=${KILN_MKFS:-$PWD/out/x86_64/bin/mkfs.erofs}	# KILN_MKFS: a copy, to build on
REPEAT=${REPEAT:-1}
CORPORA=${CORPORA:-rootfs linux smallfiles}
BEFORE_ALGS=${BEFORE_ALGS:-lz4 lz4hc zstd deflate}
ALGS=${ALGS:-lz4 lz4hc zstd lzma deflate}
ANCHOR_NAME=${ANCHOR_NAME:-anchor}
mkdir -p "$BENCH" "$RESULTS"
. bench/corpora.sh

# --- measuring ----------------------------------------------------------
# measure OUT CMD...: runs CMD REPEAT times (cache warm), keeps the median
# wall time; prints "wall cpu maxrss_kb size_bytes".
measure() {
	local out=$1; shift
	local runs=()
	for _ in $(seq "$REPEAT"); do
		rm -f "$out"
		/usr/bin/time -f '%e %U %S %M' -o "$BENCH/time" "$@" >/dev/null 2>"$BENCH/stderr" ||
			{ echo "failed: $*" >&2; return 1; }
		runs+=("$(awk '{printf "%s %.2f %s", $1, $2 + $3, $4}' "$BENCH/time")")
	done
	printf '%s\n' "${runs[@]}" | sort -n | sed -n "$(( (REPEAT + 1) / 2 ))p" |
		tr '\n' ' '
	stat -c %s "$out"
}

squash_comp() {	# mksquashfs options for the same algorithm, if it has it
	case $1 in
	lz4) echo "-comp lz4" ;; lz4hc) echo "-comp lz4 -Xhc" ;;
	zstd) echo "-comp zstd -Xcompression-level 3" ;;
	lzma) echo "-comp xz" ;; deflate) echo "-comp gzip -Xcompression-level 1" ;;
	esac
}

squash_name() {	# the compressor as mksquashfs calls it
	case $1 in lz4hc) echo "lz4 -Xhc" ;; lzma) echo xz ;; deflate) echo gzip ;;
	*) echo "$1" ;; esac
}

row() {	# row NAME ALG RAW_MBS WORKERS MEASUREMENT SRC_BYTES
	local name=$1 alg=$2 raw=$3 w=$4 src=$6
	read -r wall cpu rss size <<<"$5"
	awk -v n="$name" -v wall="$wall" -v cpu="$cpu" -v rss="$rss" \
	    -v size="$size" -v src="$src" -v raw="$raw" -v w="$w" 'BEGIN {
		mbs = src / wall / 1e6
		frac = raw > 0 && w > 0 ? sprintf("%.0f%%", 100 * mbs / (raw * w)) : "-"
		printf "| %s | %.2f | %.2f | %.0f | %.1f | %.1f | %s |\n",
			n, wall, cpu, rss / 1024, size / 1048576, mbs, frac }'
}

# prof_row NAME: the stage times of the last run (KILN_PROFILE=1's line).
prof_row() {
	awk -v n="$1" '/^profile/ {
		sub(/^[^:]*: /, ""); gsub(/\|/, "")
		row = "| " n
		for (i = 2; i <= NF; i += 2) row = row " | " $i
		print row " |" }' "$BENCH/stderr"
}

# kiln_rows LABEL BIN ALG RAW SRC BYTES CORPUS: w1 and w2 rows plus profiles.
kiln_rows() {
	local label=$1 bin=$2 alg=$3 raw=$4 src=$5 bytes=$6 c=$7 img=$BENCH/img
	for w in 1 2; do
		row "$label $alg -C64K w$w" "$alg" "$raw" "$w" \
		    "$(KILN_PROFILE=1 measure "$img" "$bin" --quiet -z "$alg" -C 65536 --workers=$w "$img" "$src")" "$bytes" >> "$RESULTS/$c.md"
		prof_row "$label $alg w$w" >> "$BENCH/$c.prof"
	done
}

# raw_pairs TAR: each compressor alone, then two copies at once, on a
# sample of about 4 s of work: two busy cores share caches and memory, so
# 2 x (each of the pair / alone) is the most any w1 -> w2 scaling can be.
raw_pairs() {
	local tarf=$1 sample=$BENCH/sample mbs n a b
	for alg in $ALGS; do
		mbs=$(awk -v a="$alg" '{ split($1, p, ","); if (p[1] == a) print $2 }' "$BENCH/$(basename "$tarf" .tar).raw")
		n=$(awk -v m="$mbs" 'BEGIN { printf "%d", m * 4e6 }')
		head -c "$n" "$tarf" > "$sample"
		a=$("$BENCH/rawspeed" "$sample" "$alg" | awk '{ print $2 }')
		"$BENCH/rawspeed" "$sample" "$alg" > "$sample.1" &
		b=$("$BENCH/rawspeed" "$sample" "$alg" | awk '{ print $2 }')
		wait
		b=$(awk -v b="$b" '{ print ($2 + b) / 2 }' "$sample.1")
		awk -v n="$alg" -v a="$a" -v b="$b" 'BEGIN {
			printf "| %s | %.1f | %.1f | %.2f |\n", n, a, b, 2 * b / a }'
	done
	rm -f "$sample" "$sample.1"
}

# options_rows CORPUS SRC BYTES: what build systems pass beyond -z/-C
# (dracut: -E fragments; containerd and AOSP: --chunksize; AOSP:
# --compress-hints), at 2 workers, beside the plain rows: -E fragments,
# dedupe and both with every algorithm of OPTION_ALGS, then the sets
# below once; the same for erofs-utils with ANCHOR_MKFS.
OPTION_ALGS=${OPTION_ALGS:-$ALGS}
E_SETS=("-E fragments" "-E dedupe" "-E fragments,dedupe")
OPTION_SETS=(	# raw speed's algorithm | row label | options
	"lz4hc|lz4hc:zstd -C64K --compress-hints|-z lz4hc:zstd -C 65536 --compress-hints=bench/hints.txt"
	"-|--chunksize=4096|--chunksize=4096"
	"-|--chunksize=4096 -E dedupe|--chunksize=4096 -E dedupe"
)

# option_row CORPUS SRC BYTES ALG LABEL OPTS...: one set, Kiln and anchor.
option_row() {
	local c=$1 src=$2 bytes=$3 alg=$4 label=$5 img=$BENCH/img raw=0 tool m
	shift 5
	[ "$alg" = - ] || raw=$(awk -v a="$alg" 'index($1, a) == 1 && (a != "lz4" || $1 == "lz4") {print $2}' "$BENCH/$c.raw")
	for tool in kiln anchor; do
		local bin=$KILN name="kiln $label w2"
		if [ $tool = anchor ]; then
			[ -n "${ANCHOR_MKFS:-}" ] || continue
			bin=$ANCHOR_MKFS name="$ANCHOR_NAME $label w2"
		fi
		if m=$(KILN_PROFILE=1 measure "$img" "$bin" --quiet "$@" --workers=2 "$img" "$src"); then
			row "$name" "$alg" "${raw:-0}" 2 "$m" "$bytes" >> "$RESULTS/$c.md"
		else	# (1.9.3 crashes on hints that name an algorithm)
			echo "| $name | failed: $(cat "$BENCH/stderr" "$BENCH/time" | head -1 | tr '|' ' ') | | | | | |" >> "$RESULTS/$c.md"
		fi
		[ $tool = anchor ] || prof_row "kiln $label w2" >> "$BENCH/$c.prof"
	done
}

options_rows() {
	local c=$1 src=$2 bytes=$3 alg e set label opts
	for alg in $OPTION_ALGS; do
		for e in "${E_SETS[@]}"; do
			# shellcheck disable=SC2086
			option_row "$c" "$src" "$bytes" "$alg" "$alg -C64K $e" \
				-z "$alg" -C 65536 $e
		done
	done
	echo " $ALGS " | grep -q " lz4hc " || return 0
	for set in "${OPTION_SETS[@]}"; do
		IFS='|' read -r alg label opts <<<"$set"
		# shellcheck disable=SC2086
		option_row "$c" "$src" "$bytes" "$alg" "$label" $opts
	done
}

bench_corpus() {
	local c=$1 src=$BENCH/$1 tarf=$BENCH/$1.tar img=$BENCH/img
	local bytes raw out=$RESULTS/$c.md
	bytes=$(du -sb --apparent-size "$src" | cut -f1)
	[ -f "$tarf" ] || tar cf "$tarf" -C "$src" .
	# the first row reads the tree warm too (through cat: GNU tar reads
	# no file it would write to /dev/null)
	tar cf - -C "$src" . | cat > /dev/null
	"$BENCH/rawspeed" "$tarf" > "$BENCH/$c.raw"
	# and one untimed build: the first timed row, read after rawspeed's
	# 1.3 GB tar, ran 1.7x slow on linux-source (7.61 s, 4.2-4.5 after)
	"$KILN" --quiet -zlz4 -C65536 "$img" "$src" >/dev/null 2>&1 || true
	rm -f "$img"
	{
		echo "## $c ($((bytes / 1048576)) MiB, $(find "$src" | wc -l) entries; median of $REPEAT run(s))"
		echo
		echo "Raw single-core compressor speed on the corpus as one tar in 64 KiB blocks:"
		echo
		echo "| compressor | MB/s | ratio |"; echo "|---|---|---|"
		awk '{printf "| %s | %.1f | %.3f |\n", $1, $2, $3}' "$BENCH/$c.raw"
		echo
		echo "The same, alone and two at once (MB/s each); the last column is the"
		echo "ceiling of any w1 -> w2 scaling on this machine:"
		echo
		echo "| compressor | alone | each of two | ceiling |"; echo "|---|---|---|---|"
		raw_pairs "$tarf"
		echo
		echo "| tool | wall s | cpu s | max RSS MiB | image MiB | MB/s | of raw x workers |"
		echo "|---|---|---|---|---|---|---|"
	} > "$out"
	: > "$BENCH/$c.prof"
	for alg in $ALGS; do
		raw=$(awk -v a="$alg" 'index($1, a) == 1 && (a != "lz4" || $1 == "lz4") {print $2}' "$BENCH/$c.raw")
		kiln_rows kiln "$KILN" "$alg" "$raw" "$src" "$bytes" "$c"
		if [ -n "${BEFORE_MKFS:-}" ] && echo " $BEFORE_ALGS " | grep -q " $alg "; then
			kiln_rows "kiln before" "$BEFORE_MKFS" "$alg" "$raw" "$src" "$bytes" "$c"
		fi
		if [ "$alg" = lz4hc ]; then
			row "kiln lz4hc -C4K w2" "$alg" "$raw" 2 \
			    "$(measure "$img" "$KILN" --quiet -z lz4hc -C 4096 --workers=2 "$img" "$src")" "$bytes" >> "$out"
		fi
		case $alg in lz4|lz4hc)
			row "erofs-utils 1.5 $alg -C64K" "$alg" "$raw" 1 \
			    "$(measure "$img" mkfs.erofs --quiet -z"$alg" -C65536 "$img" "$src")" "$bytes" >> "$out"
		esac
		if [ -n "${ANCHOR_MKFS:-}" ]; then
			for w in 1 2; do
				row "$ANCHOR_NAME $alg -C64K w$w" "$alg" "$raw" "$w" \
				    "$(measure "$img" "$ANCHOR_MKFS" --quiet -z"$alg" -C65536 --workers=$w "$img" "$src")" "$bytes" >> "$out"
			done
		fi
		for p in 1 2; do
			# shellcheck disable=SC2046
			row "mksquashfs $(squash_name "$alg") -b64K p$p" "$alg" "$raw" "$p" \
			    "$(measure "$img" mksquashfs "$src" "$img" -noappend -quiet -no-progress -b 65536 -processors $p $(squash_comp "$alg"))" "$bytes" >> "$out"
		done
	done
	options_rows "$c" "$src" "$bytes"
	{
		echo
		echo "Where Kiln's time goes (KILN_PROFILE=1), in seconds. Main thread (wall):"
		echo "walk the tree, layout, queue jobs, wait for the oldest, place (write"
		echo "compressed data, index inodes), copy (flat files, when the main thread"
		echo "did it), meta (directories, inodes, superblock, fsync). Workers (summed):"
		echo "read sources, compress, flat (copy uncompressed files)."
		echo
		echo "| run | walk | layout | queue | wait | place | copy | meta | read | compress | flat |"
		echo "|---|---|---|---|---|---|---|---|---|---|---|"
		cat "$BENCH/$c.prof"
	} >> "$out"
	rm -f "$img"
}

# Memory for one big file: max RSS must not grow with the input.
bench_bigfile() {
	local f=$BENCH/big.bin img=$BENCH/img out=$RESULTS/bigfile.md
	if [ ! -f "$f" ]; then	# 4 GiB of real data: the rootfs tar, repeated
		[ -f "$BENCH/rootfs.tar" ] || tar cf "$BENCH/rootfs.tar" -C "$BENCH/rootfs" .
		rm -f "$f.tmp"
		while [ "$(stat -c %s "$f.tmp" 2>/dev/null || echo 0)" -lt $((4 << 30)) ]; do
			cat "$BENCH/rootfs.tar" >> "$f.tmp"
		done
		truncate -s $((4 << 30)) "$f.tmp" && mv "$f.tmp" "$f"
	fi
	mkdir -p "$BENCH/bigdir" && ln -f "$f" "$BENCH/bigdir/big.bin"
	{
		echo "## one 4 GiB file (the rootfs tar, repeated)"
		echo
		echo "| tool | wall s | cpu s | max RSS MiB | image MiB | MB/s | of raw x workers |"
		echo "|---|---|---|---|---|---|---|"
	} > "$out"
	for w in 1 2; do
		row "kiln lz4hc -C64K w$w" lz4hc 0 0 \
		    "$(measure "$img" "$KILN" --quiet -z lz4hc -C 65536 --workers=$w "$img" "$BENCH/bigdir")" $((4 << 30)) >> "$out"
	done
	if [ -n "${ANCHOR_MKFS:-}" ]; then
		row "$ANCHOR_NAME lz4hc -C64K w2" lz4hc 0 0 \
		    "$(measure "$img" "$ANCHOR_MKFS" --quiet -zlz4hc -C65536 --workers=2 "$img" "$BENCH/bigdir")" $((4 << 30)) >> "$out"
	fi
	rm -f "$img"
}

# One chart per corpus: throughput of every row, from the markdown table.
chart() {
	command -v gnuplot >/dev/null || return 0
	for c in $CORPORA; do
		awk -F'|' '/^\| (kiln|erofs|mksquashfs|'"$ANCHOR_NAME"')/ {
			gsub(/^ +| +$/, "", $2); gsub(/ /, "_", $2); print $2, $7 }' \
			"$RESULTS/$c.md" > "$BENCH/$c.dat"
		gnuplot <<-EOF
			set terminal pngcairo size 1200,700
			set output "$RESULTS/$c.png"
			set title "mkfs throughput, $c corpus (MB/s of source, higher is better)"
			set style data histograms
			set style fill solid
			set boxwidth 0.8
			set xtics rotate by -60 font ",8" noenhanced
			set key off
			set grid ytics
			plot "$BENCH/$c.dat" using 2:xtic(1)
		EOF
	done
	bench/chart.sh $CORPORA	# size against time
}

scripts/musl-cc x86_64 -O2 -static -Iout/x86_64/sysroot/include bench/rawspeed.c \
	-Lout/x86_64/sysroot/lib -lzstd -llz4 -llzma -ldeflate -lpthread -o "$BENCH/rawspeed"
for c in $CORPORA; do
	"corpus_$c"
	echo "bench: $c" >&2
	bench_corpus "$c"
done
if [ "${BIGFILE:-1}" != 0 ]; then
	corpus_rootfs
	echo "bench: 4 GiB file" >&2
	bench_bigfile
fi
{
	echo "# mkfs.erofs benchmark"
	echo
	echo "$(date -u +%F), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs."
	echo "Page cache warm; each table gives its number of runs (median). MB/s = source"
	echo "bytes / wall time. Kiln's time includes fsync of the image; others do not sync."
	echo
	# corpora measured by earlier runs (CORPORA=...) stay in the summary
	for c in rootfs linux smallfiles bigfile; do
		[ -f "$RESULTS/$c.md" ] && { cat "$RESULTS/$c.md"; echo; }
	done
} > "$RESULTS/mkfs.md"
chart
echo "bench: results in $RESULTS/mkfs.md" >&2

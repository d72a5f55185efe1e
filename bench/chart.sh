#!/bin/bash
# chart.sh [CORPUS...]: one PNG per corpus from its table in bench/results/:
# image size against build time for every tool, algorithm and option set
# measured (2 workers where a row has a worker count), the picture to choose
# settings by: down is smaller, left is faster. Run by bench/run.sh; alone,
# it redraws the charts from the tables already there.
set -euo pipefail
cd "$(dirname "$0")/.."
RESULTS=bench/results
DAT=${TMPDIR:-/tmp}/kiln-chart.$$
command -v gnuplot >/dev/null || { echo "chart.sh: no gnuplot" >&2; exit 0; }
trap 'rm -f "$DAT".*' EXIT
for c in "${@:-rootfs linux smallfiles}"; do
	for c1 in $c; do
		[ -f "$RESULTS/$c1.md" ] || continue
		# family, wall s, image MiB, label; w1/p1 rows left out
		# the main table only: 7 columns (the profile's and raw's differ)
		awk -F'|' 'NF == 9 && $3 ~ /[0-9]/ && $2 !~ / (w|p)1 *$/ {
			n = $2; gsub(/^ +| +$/, "", n)
			f = n; sub(/ .*/, "", f)
			if (n ~ /^erofs-utils /) { split(n, w, " "); f = f "_" w[2] }
			if (n ~ /^kiln/ && n !~ /w2/) next
			l = n; sub(/^(kiln|erofs-utils [0-9.]+|mksquashfs) /, "", l)
			gsub(/ -C64K| -b64K| w2| p2/, "", l); gsub(/ /, "_", l)
			printf "%s %s %s %s\n", f, $3 + 0, $6 + 0, l
		}' "$RESULTS/$c1.md" > "$DAT.$c1"
		[ -s "$DAT.$c1" ] || continue
		fams=$(cut -d' ' -f1 "$DAT.$c1" | awk '!seen[$0]++' | tr '\n' ' ')
		gnuplot <<-GP
			set terminal pngcairo size 1200,800
			set output "$RESULTS/$c1-size-time.png"
			set title "$c1: image size against build time (2 workers; lower left is better)" noenhanced
			set xlabel "wall seconds (log)"
			set ylabel "image MiB"
			set logscale x
			set grid
			set key top right noenhanced
			plot for [f in "$fams"] \
				"$DAT.$c1" using (strcol(1) eq f ? \$2 : 1/0):3 \
				with points pointsize 1.5 title f, \
			     "$DAT.$c1" using 2:3:4 with labels font ",7" \
				offset 0.6,0.4 left noenhanced notitle
		GP
	done
done

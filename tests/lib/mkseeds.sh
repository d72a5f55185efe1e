#!/bin/bash
# mkseeds.sh MKFS OUTDIR: small images, one per layout and algorithm, as the
# fuzzer's seed corpus and as the base of the damaged-image tests.
set -eu
MKFS=$1 OUT=$2
SRC=$(mktemp -d)
trap 'rm -rf "$SRC" "$SRC.tar" "$SRC.idx"' EXIT
mkdir -p "$OUT" "$SRC/d/sub"
# text that compresses, bytes that do not, and every small-size boundary
seq 1 3000 > "$SRC/d/text"
head -c 5000 /dev/urandom > "$SRC/random"
for n in 0 1 4095 4096 4097; do head -c "$n" "$SRC/d/text" > "$SRC/d/sub/f$n"; done
ln -s d/text "$SRC/link"
ln "$SRC/d/text" "$SRC/hard"
mkfifo "$SRC/fifo"
setfattr -n user.k -v value "$SRC/d" 2>/dev/null || true
touch -d @1700000000 "$SRC" "$SRC"/* "$SRC"/d/* "$SRC"/d/sub/*
n=0
while read -r opts; do
	# shellcheck disable=SC2086
	"$MKFS" --quiet -T 1700000000 $opts "$OUT/seed$n.img" "$SRC"
	n=$((n + 1))
done <<'OPTS'

-zlz4
-zlz4hc -C16384
-zlz4hc -C16384 -Elegacy-compress
-zlz4 -Eztailpacking
-zzstd -C8192 -Eztailpacking
-zlzma -C8192
-zdeflate -C8192 -Elegacy-compress
-b1024 -zlz4hc -Eztailpacking
-zlz4hc -C16384 -Efragments
-zzstd -C8192 -Efragments -Elegacy-compress
--chunksize=4096
--chunksize=8192 -Eforce-chunk-indexes
OPTS
# --tar=i: an index with the tar appended (the device table, device 1)
tar --format=pax -b1 -C "$SRC" -cf "$SRC.tar" link fifo hard d/sub/f1 d/sub/f4097
"$MKFS" --quiet -T 1700000000 --tar=i "$SRC.idx" "$SRC.tar"
cat "$SRC.idx" "$SRC.tar" > "$OUT/seed$n.img"

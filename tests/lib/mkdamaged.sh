#!/bin/bash
# mkdamaged.sh MKFS OUTDIR: regenerates tests/damaged/ (committed; rerun only
# when adding a case): a small lz4 image with full indexes, then one broken
# copy per rule (tests/lib/mkdamaged.py).
set -eu
MKFS=$1 OUT=$2
SRC=$(mktemp -d) IMG=$(mktemp -d)
trap 'rm -rf "$SRC" "$IMG"' EXIT
mkdir -p "$OUT" "$SRC/d/sub"
seq 1 3000 > "$SRC/d/text"
python3 -c 'import random, sys; random.seed(1); sys.stdout.buffer.write(bytes(random.getrandbits(8) for _ in range(8192)))' > "$SRC/plain"
touch -d @1700000000 "$SRC" "$SRC"/* "$SRC"/d/* "$SRC"/d/sub
"$MKFS" --quiet -T 1700000000 -U 11111111-2222-3333-4444-555555555555 \
	-zlz4hc -Elegacy-compress "$IMG/base.img" "$SRC"
"$MKFS" --quiet -T 1700000000 -U 11111111-2222-3333-4444-555555555555 \
	"$IMG/flat.img" "$SRC"
python3 "$(dirname "$0")/mkdamaged.py" "$IMG/base.img" "$IMG/flat.img" "$OUT"

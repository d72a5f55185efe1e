#!/bin/bash
# Kiln test suite. Run through `make test`, which builds what it needs first.
set -u
cd "$(dirname "$0")/.."
. tests/lib/harness.sh
# Our mkfs stamps every inode with it, as erofs-utils does: tests that want
# it set it themselves.
unset SOURCE_DATE_EPOCH
mkdir -p "$LOGDIR"

for u in out/asan/tests/test_*; do
	run_test "unit/${u##*/}" "$u"
done

# One source tree for all image tests (read-only from here on).
if [ "$(id -u)" = 0 ]; then
	TREE=$(mktemp -d "$SCRATCH/kiln-tree.XXXXXX")/tree
	tests/lib/mktree.sh "$TREE" || { echo "mktree failed"; exit 1; }
fi
export TREE=${TREE:-/nonexistent}
ZTREE=$(mktemp -u "$SCRATCH/kiln-ztree.XXXXXX")
export ZTREE
trap 'rm -rf "${TREE%/tree}" "$ZTREE"' EXIT

for f in tests/integration/*.sh; do
	. "$f"
done

# Every mkfs test runs against each build of the tool.
declare -A BUILDS=(
	[musl]="out/x86_64/bin"
	[asan]="out/asan/bin"
)
for build in musl asan; do
	export BIN=$PWD/${BUILDS[$build]} BUILD=$build
	for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
		run_test "$build/${t#test_}" "$t"
	done
done
for t in $(declare -F | awk '$3 ~ /^once_/ {print $3}'); do
	BIN=$PWD/out/x86_64/bin run_test "${t#once_}" "$t"
done
summary

#!/bin/bash
# Kiln test suite. Run through `make test`, which builds what it needs first.
set -u
cd "$(dirname "$0")/.."
. tests/lib/harness.sh
# Our mkfs stamps every inode with it, as erofs-utils does: tests that want
# it set it themselves.
unset SOURCE_DATE_EPOCH
mkdir -p "$LOGDIR"
oracle_check || { echo "the erofs-utils 1.5 oracle is missing (scripts/install-host-deps.sh)"; exit 1; }

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

# The test files share one shell: a helper defined twice would silently
# replace the other file's (it happened: two expect_state).
dups=$(grep -ho '^[A-Za-z_][A-Za-z0-9_]*()' tests/integration/*.sh tests/lib/*.sh |
	sort | uniq -d)
[ -z "$dups" ] || { echo "functions defined twice in tests/: $dups"; exit 1; }
for f in tests/integration/*.sh; do
	. "$f"
done

# Every test_ function runs against the static musl build and the sanitizer
# build; the static aarch64 build (the device's) runs under qemu-user
# through wrappers in out/aarch64/qemu-bin, for the tests in AARCH64_TESTS:
# emulation makes them several times slower (the compressed round trips
# took ~280 s each there). Compressed images of the aarch64 build are
# compared byte for byte with the x86_64 build's in once_aarch64_same_image.
AARCH64_TESTS="roundtrip_default roundtrip_small_blocks deterministic cli
	bad_input image_targets timestamps_decimal fsck_damaged fsck_cli
	bootstate_uboot_interop bootstate_newest_wins bootstate_atomic_write
	bootstate_full_disk bootstate_commands bootstate_hostile_copies
	ota_install ota_refusals ota_unsafe_files"
QBIN=$PWD/out/aarch64/qemu-bin
mkdir -p "$QBIN"
for tool in mkfs.erofs fsck.erofs dump.erofs kiln-bootstate kiln-update kiln-bundle; do
	printf '#!/bin/sh\nexec qemu-aarch64-static %s "$@"\n' \
		"$PWD/out/aarch64/bin/$tool" > "$QBIN/$tool"
	chmod 755 "$QBIN/$tool"
done
declare -A BUILDS=(
	[musl]="out/x86_64/bin"
	[asan]="out/asan/bin"
	[aarch64]="out/aarch64/qemu-bin"
)
for build in musl asan aarch64; do
	export BIN=$PWD/${BUILDS[$build]} BUILD=$build
	for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
		if [ "$build" = aarch64 ] &&
		   ! echo " $AARCH64_TESTS " | tr -s ' \n\t' ' ' | grep -q " ${t#test_} "; then
			continue
		fi
		run_test "$build/${t#test_}" "$t"
	done
done
for t in $(declare -F | awk '$3 ~ /^once_/ {print $3}'); do
	BIN=$PWD/out/x86_64/bin run_test "${t#once_}" "$t"
done
summary

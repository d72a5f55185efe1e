#!/bin/sh
# kconfig-check.sh ARCH FRAGMENT... -- do Kiln's kernel config fragments
# survive in a real kernel tree? Starts from ARCH's defconfig (x86_64:
# x86_64_defconfig, arm64: defconfig) in $KERNEL_SRC (default: Debian's
# linux-source-6.12, scripts/linux-source.sh), merges the fragments with the
# kernel's own scripts/kconfig/merge_config.sh, runs olddefconfig, and
# compares every symbol the fragments set with the result.
#
# A symbol the tree does not define is reported (with the version a
# "# needs Linux X.Y" comment line above it gives) and does not fail the
# check; a symbol the tree defines but drops or changes (an unmet
# dependency, a conflict) fails it. Exit 0 when every defined symbol held.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARCH=${1:?usage: kconfig-check.sh ARCH FRAGMENT...}
shift
[ $# -ge 1 ] || { echo "usage: kconfig-check.sh ARCH FRAGMENT..." >&2; exit 2; }
KSRC=${KERNEL_SRC:-$("$ROOT/scripts/linux-source.sh")}
KSRC=$(cd "$KSRC" && pwd)
[ -f "$KSRC/scripts/kconfig/merge_config.sh" ] ||
	{ echo "kconfig-check: $KSRC: not a kernel tree" >&2; exit 2; }
case $ARCH in
x86_64) karch=x86 base=x86_64_defconfig ;;
arm64 | aarch64)
	karch=arm64 base=defconfig
	# Kconfig asks the compiler what it supports: ask the right one
	! command -v aarch64-linux-gnu-gcc >/dev/null ||
		export CROSS_COMPILE=aarch64-linux-gnu-
	;;
*) echo "kconfig-check: ARCH $ARCH: x86_64 or arm64" >&2; exit 2 ;;
esac
for f in "$@"; do
	[ -r "$f" ] || { echo "kconfig-check: $f: cannot read" >&2; exit 2; }
	f=$(cd "$(dirname "$f")" && pwd)/${f##*/}	# merging runs elsewhere
	set -- "$@" "$f"
	shift
done

W=$(mktemp -d "${TMPDIR:-/tmp}/kiln-kconfig.XXXXXX")
trap 'rm -rf "$W"' EXIT
kmake() { make -s -C "$KSRC" O="$W/o" ARCH=$karch "$@" >>"$W/log" 2>&1; }

kmake "$base" || { tail "$W/log" >&2; echo "kconfig-check: $base failed" >&2; exit 2; }
# merge_config.sh -m: merge only; olddefconfig then resolves dependencies
(cd "$W/o" && "$KSRC/scripts/kconfig/merge_config.sh" -m -O "$W/o" \
	.config "$@") >>"$W/log" 2>&1 ||
	{ tail "$W/log" >&2; echo "kconfig-check: merge_config.sh failed" >&2; exit 2; }
kmake olddefconfig || { tail "$W/log" >&2; exit 2; }

# every symbol this tree defines, for any architecture (no pipe: a failed
# find would leave symbols out, reported as missing from the tree)
find "$KSRC" -name 'Kconfig*' -exec sed -n \
	's/^[[:space:]]*\(menu\)\{0,1\}config[[:space:]]\{1,\}\([A-Za-z0-9_]*\).*/\2/p' {} + \
	>"$W/defined.all" || { echo "kconfig-check: cannot read $KSRC's Kconfig files" >&2; exit 2; }
sort -u "$W/defined.all" >"$W/defined"

bad=0
for f in "$@"; do
	# "SYMBOL WANTED NEEDS" for each setting, NEEDS from the comment above
	awk '
		/^# needs / { needs = substr($0, 9); next }
		/^CONFIG_[A-Za-z0-9_]*=/ { i = index($0, "="); print substr($0, 8, i - 8), substr($0, i + 1), (needs == "" ? "-" : needs); needs = ""; next }
		/^# CONFIG_[A-Za-z0-9_]* is not set/ { print substr($2, 8), "n", (needs == "" ? "-" : needs); needs = ""; next }
		{ if ($0 !~ /^#/) needs = "" }
	' "$f" >"$W/wanted"
	while read -r sym want needs; do
		got=$(sed -n "s/^CONFIG_$sym=//p" "$W/o/.config")
		[ -n "$got" ] || got=n
		[ "$got" = "$want" ] && continue
		if ! grep -qx "$sym" "$W/defined"; then
			echo "$ARCH: ${f##*/}: CONFIG_$sym is not in this tree ($(make -s -C "$KSRC" kernelversion 2>/dev/null)); needs $needs"
		else
			echo "$ARCH: ${f##*/}: FAIL CONFIG_$sym=$want did not survive: it is $got"
			bad=1
		fi
	done <"$W/wanted"
done
if [ $bad = 0 ]; then
	echo "$ARCH: $(echo "$@" | xargs -n1 basename | tr '\n' ' ')held in $(make -s -C "$KSRC" kernelversion 2>/dev/null)"
fi
exit $bad

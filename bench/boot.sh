#!/bin/bash
# make bench-boot: what a board's image costs to build, stage by stage, and
# how fast it boots in QEMU, for root slots compressed with lz4, lz4hc and
# zstd and initramfs compressed with zstd and lz4. Writes
# bench/results/boot.md. A benchmark, never a test.
#
# Each variant is the default board's image with one setting changed, built
# by the same scripts as `make image` into out/bench/boot/<variant>/. Two
# roots: the board's own (busybox and Kiln's tools, about 1 MiB) and
# "+modules", which adds the kernel's fs/, net/ and sound/ modules
# uncompressed (about 90 MiB), so reading the root costs something.
# Boot times are medians of REPEAT boots (default 3) under the accelerator
# qemu/run.sh picks: from QEMU's start to the userland marker (rcS's
# "kiln: slot=..." line), and to the end of the self-test, which runs
# fsck.erofs over the whole root device. The kernel's log of the last boot
# gives how long unpacking the initramfs took (it runs alongside other
# initcalls) and when /init started.
set -euo pipefail
cd "$(dirname "$0")/.."
BOARD=${board:-qemu-x86_64}
SRC=out/$BOARD
W=out/bench/boot
REPEAT=${REPEAT:-3}
RESULTS=bench/results
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(cat "$SRC/epoch")}
[ -f "$SRC/manifest.txt" ] || { echo "bench-boot: run make image first" >&2; exit 1; }
mkdir -p "$W" "$RESULTS"
# the accelerator is probed once (qemu/run.sh), not inside every timed boot
export KILN_QEMU_ACCEL_CACHE=$W/accel
rm -f "$KILN_QEMU_ACCEL_CACHE"
qemu/run.sh --print-accel "$SRC" >/dev/null

now() { date +%s.%N; }
elapsed() { echo "$(now) - $1" | bc | xargs printf '%.2f'; }
mib() { echo "scale=2; $(stat -c %s "$1") / 1048576" | bc | xargs printf '%.2f'; }

# The payload for the "+modules" roots: Debian's own modules, unpacked.
payload() {
	local p=$W/payload kdir
	[ -d "$p" ] && { echo "$p"; return; }
	kdir=$(echo "$SRC"/kernel/tree/lib/modules/*/kernel)
	mkdir -p "$p.tmp/lib/modules/bench"
	(cd "$kdir" && find fs net sound -name '*.ko*' -print0 |
		cpio -0 -pdm --quiet "$OLDPWD/$p.tmp/lib/modules/bench")
	find "$p.tmp" -name '*.ko.xz' -exec xz -d {} +
	find "$p.tmp" -name '*.ko.zst' -exec zstd -q -d --rm {} +
	mv "$p.tmp" "$p"
	echo "$p"
}

# variant NAME ROOT_OPTS INITRAMFS_COMPRESS OVERLAY: build it, one table row
# of stage times and sizes to $W/build.md.
variant() {
	local name=$1 opts=$2 icomp=$3 overlay=$4 d=$W/$1 t
	rm -rf "$d" && mkdir -p "$d"
	cp -R "board/$BOARD/overlay" "$d/" 2>/dev/null || true
	{ cat "board/$BOARD/board.conf"
	  echo "ROOT_MKFS_OPTS=\"$opts\""
	  echo "INITRAMFS_COMPRESS=$icomp"
	  echo "ROOT_SIZE_MIB=160"; } >"$d/board.conf"
	cp "$SRC/vmlinuz" "$d/"
	t=$(now)
	ROOTFS_OVERLAY=$overlay boot/mkrootfs.sh "$d/board.conf" "$SRC/busybox" \
		out/x86_64/bin out/x86_64/bin/mkfs.erofs "$d/rootfs.erofs"
	local t_root; t_root=$(elapsed "$t")
	t=$(now)
	boot/mkinitramfs.sh "$d/board.conf" "$SRC/busybox" "$SRC/kernel" \
		"$SRC/firmware" "$d/initramfs.img" >/dev/null
	local t_init; t_init=$(elapsed "$t")
	t=$(now)
	boot/mkdisk.sh "$d/board.conf" "$d/rootfs.erofs" "$d/disk.img"
	local t_disk; t_disk=$(elapsed "$t")
	echo "| $name | $opts | $t_root s, $(mib "$d/rootfs.erofs") MiB |" \
		"$icomp | $t_init s, $(mib "$d/initramfs.img") MiB |" \
		"$t_disk s |" >>"$W/build.md"
}

# boot_once DIR: "marker_s selftest_s guest_uptime_at_marker"
boot_once() {
	local d=$1 log=$1/serial.log t0 tm= ts= pid
	rm -f "$log"
	t0=$(now)
	SERIAL_LOG=$log TIMEOUT=300 QEMU_OPTS=-snapshot qemu/run.sh "$d" kiln.selftest 2>"$d/qemu.err" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		[ -z "$tm" ] && grep -q '^kiln: slot=' "$log" 2>/dev/null && tm=$(elapsed "$t0")
		[ -z "$ts" ] && grep -q 'KILN-SELFTEST PASS' "$log" 2>/dev/null && ts=$(elapsed "$t0")
		sleep 0.02
	done
	wait "$pid" || true
	[ -n "$ts" ] || { echo "bench-boot: $d did not pass its self-test" >&2; tail "$log" >&2; exit 1; }
	echo "$tm $ts $(tr -d '\r' <"$log" | sed -n 's/^kiln: .*up in \([0-9.]*\)s$/\1/p')"
}

median() { sort -n | sed -n "$(( (REPEAT + 1) / 2 ))p"; }

boot_row() {
	local name=$1 runs=() i
	for i in $(seq "$REPEAT"); do runs+=("$(boot_once "$W/$name")"); done
	local m s u
	m=$(printf '%s\n' "${runs[@]}" | cut -d' ' -f1 | median)
	s=$(printf '%s\n' "${runs[@]}" | cut -d' ' -f2 | median)
	u=$(printf '%s\n' "${runs[@]}" | cut -d' ' -f3 | median)
	# from the last boot's kernel log: initramfs unpacking and /init's start
	local k
	k=$(tr -d '\r' <"$W/$name/serial.log" | awk -F'[][]' '
		/Trying to unpack rootfs image/ { a = $2 }
		/Freeing initrd memory/ { b = $2 }
		/Run \/init as init process/ { c = $2 }
		END { printf "%.0f ms | %.2f s", (b - a) * 1000, c }')
	echo "| $name | $k | $m s | $u s | $s s |" >>"$W/boot.md"
}

# Cold stages of `make image`: busybox built from source into an empty
# cache (the source package copied, not downloaded), the kernel unpacked
# from its cached .deb.
cold_stages() {
	local c=$W/cache t
	rm -rf "$c" && mkdir -p "$c/src"
	cp "${KILN_CACHE:-$HOME/.cache/kiln}"/src/busybox_* "$c/src/"
	t=$(now)
	KILN_CACHE=$c boot/build-busybox.sh x86_64 "$c/busybox" >/dev/null
	echo "| busybox, built from Debian's source (musl, static) | $(elapsed "$t") s | $(mib "$c/busybox") MiB |" >>"$W/stages.md"
	t=$(now)
	boot/fetch-kernel.sh "board/$BOARD/board.conf" "$c/kernel" >/dev/null
	echo "| kernel: cached .deb unpacked, depmod | $(elapsed "$t") s | $(mib "$c/kernel/vmlinuz") MiB vmlinuz |" >>"$W/stages.md"
	rm -rf "$c"
}

: >"$W/build.md"; : >"$W/boot.md"; : >"$W/stages.md"
cold_stages
P=$(payload)
variant lz4 "-zlz4 -C65536" zstd ""
variant lz4hc "-zlz4hc -C65536" zstd ""
variant zstd "-zzstd -C65536" zstd ""
variant lz4hc-lz4initrd "-zlz4hc -C65536" lz4 ""
variant lz4+modules "-zlz4 -C65536" zstd "$P"
variant lz4hc+modules "-zlz4hc -C65536" zstd "$P"
variant zstd+modules "-zzstd -C65536" zstd "$P"
for v in lz4 lz4hc zstd lz4hc-lz4initrd lz4+modules lz4hc+modules zstd+modules; do
	boot_row "$v"
done

accel=$(sed -n 's/^qemu: .* with //p' "$W/lz4/qemu.err")
{
	echo "# Boot image: build stages and QEMU boot times"
	echo
	echo "$(date -u +%Y-%m-%d), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)," \
		"$(nproc) cores; board $BOARD; QEMU with $accel; median of $REPEAT boots."
	echo
	echo "## Stages built from scratch"
	echo
	echo "| stage | time | size |"
	echo "|---|---|---|"
	cat "$W/stages.md"
	echo
	echo "## Image stages per variant (warm caches)"
	echo
	echo "| variant | root options | root slot: time, size | initramfs | initramfs: time, size | disk (sfdisk, dd, mke2fs) |"
	echo "|---|---|---|---|---|---|"
	cat "$W/build.md"
	echo
	echo "## Boot (QEMU start to the userland marker, and to the end of the self-test)"
	echo
	echo "| variant | initramfs unpacked in (kernel log) | /init starts (uptime) | to userland marker | guest uptime at the marker | to self-test PASS (includes fsck.erofs of the root) |"
	echo "|---|---|---|---|---|---|"
	cat "$W/boot.md"
} >"$RESULTS/boot.md"
cat "$RESULTS/boot.md"

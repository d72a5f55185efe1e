#!/bin/bash
# make bench-ota: how kiln-update's unpack of a payload of many small files
# (Debian's linux-source tree) lands on ext4, for choosing the data
# partition's mount and mballoc options. For each of a fresh and an aged
# file system, mb_optimize_scan=0, =1 and the kernel's default, and one
# syncfs vs an fsync per file, it times the update and counts the block
# groups and 4 MiB erase blocks that the new files' data went to (FIEMAP).
# Why: with mb_optimize_scan=1 (Linux 5.19/6.0) an update's unpack on an SD
# card went from about 1 to about 7 minutes: new files were spread over many
# groups, so over many more flash erase blocks. A loop device has no erase
# blocks, so the counts, not the loop device's wall time, are the result.
#
# A benchmark, not a test: root, loop devices, 20-40 minutes (the first
# time ~20 more: zstd -19 of the payload, cached). Writes
# bench/results/ota.md. Knobs: OTA_AGES, OTA_MOUNTS, OTA_SYNCS (subsets of
# the defaults below), OTA_EXTRA (extra rows "AGE:MOUNT:SYNC:TUNABLE=V,..."),
# OTA_FS_MIB, OTA_WORK (where the loop backing files go), OTA_TIMEOUT.
set -euo pipefail
# shellcheck disable=SC2154	# CORPUS_*: set by sourcing the payload's corpus file
cd "$(dirname "$0")/.."

BIN=$PWD/out/x86_64/bin
RESULTS=bench/results
CACHE=${KILN_CACHE:-$HOME/.cache/kiln}/bench
WORK=${OTA_WORK:-$PWD/out/bench/ota}	# not /tmp: it may be tmpfs (RAM)
FS_MIB=${OTA_FS_MIB:-6144}	# 48 groups: above 16, mb_optimize_scan's default is on
ERASE=$((4 << 20))		# a typical SD card erase block (allocation unit)
AGE_FILL=0.75 AGE_SEED=1	# aged: filled to 75%, then half the files deleted
AGES=${OTA_AGES-fresh aged}	# set but empty: none (only OTA_EXTRA)
MOUNTS=${OTA_MOUNTS-mb_optimize_scan=0 mb_optimize_scan=1 default}
SYNCS=${OTA_SYNCS-syncfs fsync-each}
# Extra rows, tunables tried: files under mb_stream_req blocks (default 16,
# 64 KiB) are packed into a per-CPU preallocation of mb_group_prealloc
# blocks (default 512, 2 MiB); bigger files go near their inode's group.
EXTRA=${OTA_EXTRA-aged:mb_optimize_scan=1:syncfs:mb_stream_req=256
aged:mb_optimize_scan=1:syncfs:mb_group_prealloc=2048
aged:mb_optimize_scan=1:syncfs:mb_stream_req=256,mb_group_prealloc=2048
aged:mb_optimize_scan=0:syncfs:mb_stream_req=256,mb_group_prealloc=2048
aged:mb_optimize_scan=0:fsync-each:mb_stream_req=256,mb_group_prealloc=2048
fresh:mb_optimize_scan=0:syncfs:mb_stream_req=256,mb_group_prealloc=2048}
RUN_TIMEOUT=${OTA_TIMEOUT:-1800}	# seconds for one kiln-update run
TARGET=linux BOARD=bench-ota	# the payload's TARGET, the bundle's board
MNT=$WORK/mnt TEMPLATE=$WORK/aged.img IMG=$WORK/fs.img ROWS=$WORK/rows
LOOP='' CHILD=''		# what cleanup() must undo

die() {
	echo "bench-ota: $*" >&2
	exit 1
}
note() { echo "bench-ota: $*" >&2; }

# bounded SECONDS WHAT CMD...: CMD, killed after SECONDS; dies saying WHAT.
# In the background and waited for, so that a signal reaches cleanup() at
# once (bash runs traps only between foreground commands).
bounded() {
	local secs=$1 what=$2 rc=0
	shift 2
	timeout --kill-after=30 "$secs" "$@" &
	CHILD=$!
	wait "$CHILD" || rc=$?
	CHILD=
	case $rc in 124|137) die "$what: timed out after ${secs}s" ;; esac
	[ "$rc" = 0 ] || die "$what: failed (exit $rc)"
}

# --- always leave the host as it was: no mount, no loop device, no image --
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	[ -z "$CHILD" ] || { kill "$CHILD" 2>/dev/null; wait "$CHILD" 2>/dev/null || :; }
	if mountpoint -q "$MNT" 2>/dev/null; then
		timeout 120 umount "$MNT" 2>/dev/null || umount -l "$MNT" ||
			echo "bench-ota: cannot unmount $MNT" >&2
	fi
	[ -z "$LOOP" ] || timeout 60 losetup -d "$LOOP" ||
		echo "bench-ota: cannot detach $LOOP" >&2
	rm -f "$IMG" "$TEMPLATE" "$TEMPLATE.new"
	[ -z "$PAY" ] || rm -rf "$PAY.new"	# a payload cut short
	case $rc in 130|143) echo "bench-ota: interrupted (loop device and images cleaned up)" >&2 ;; esac
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

check_host() {
	[ "$(id -u)" = 0 ] || die "needs root (loop devices, mount, drop_caches)"
	for t in kiln-update kiln-bundle; do
		[ -x "$BIN/$t" ] || die "no $BIN/$t (make tools)"
	done
	"$BIN/kiln-update" --help | grep -q -- --fsync-each ||
		die "$BIN/kiln-update has no --fsync-each (make tools)"
	for c in python3 mkfs.ext4 dumpe2fs e2freefrag losetup fstrim findmnt zstd timeout; do
		command -v "$c" >/dev/null || die "no $c (scripts/install-host-deps.sh)"
	done
	[ -e /dev/loop-control ] || die "no /dev/loop-control (loop driver)"
	mkdir -p "$WORK" "$MNT" "$RESULTS"
	mountpoint -q "$MNT" && die "$MNT is mounted: an earlier run left it, umount it"
	[ "$(stat -f -c %T "$WORK")" != tmpfs ] ||
		die "$WORK is on tmpfs: give OTA_WORK=DIR on a disk"
	# the aged template and one working image, each up to FS_MIB
	local need=$(((2 * FS_MIB + 1024) << 20)) avail
	avail=$(df -B1 --output=avail "$WORK" | tail -n 1)
	[ "$avail" -ge "$need" ] ||
		die "$WORK: $((avail >> 20)) MiB free, needs $((need >> 20)) MiB"
}

# --- the payload: made once per linux-source version ---------------------
# The tree as a reproducible tar (names sorted, one owner, one mtime, no
# atime/ctime), zstd -19 as boot/mkbundle.sh makes real bundles. -19 costs
# ~20 minutes once (2 busy cores; -3: seconds), but the payload is 146 MiB
# instead of 212 MiB, which is what a device downloads, and zstd decodes
# both at the same speed (~1 GB/s here, 1.5 s of the update's ~10 s CPU).
PAY='' SRC=''
make_payload() {
	SRC=$(scripts/linux-source.sh) || die "no linux-source tree (scripts/linux-source.sh)"
	local ver=${SRC##*/linux-source-6.12-}
	PAY=$CACHE/ota-linux-$ver
	[ -f "$PAY/corpus" ] && [ -f "$PAY/bundle.kiln" ] && return
	note "making the payload from $SRC (zstd -19: several minutes, once)"
	local w=$PAY.new
	rm -rf "$w" && mkdir -p "$w"
	bounded 1800 "tar of $SRC" tar --sort=name --mtime=@1700000000 --owner=0 \
		--group=0 --numeric-owner --mode=u+rw,go-w --format=pax \
		--pax-option=delete=atime,delete=ctime -C "$SRC" -cf "$w/$TARGET.tar" .
	bounded 3600 "zstd -19" zstd -q -19 -T0 "$w/$TARGET.tar" -o "$w/$TARGET.tar.zst"
	"$BIN/kiln-bundle" keygen "$w/bundle.key" "$w/bundle.pub" >/dev/null ||
		die "kiln-bundle keygen failed"
	bounded 600 "kiln-bundle create" "$BIN/kiln-bundle" create --key "$w/bundle.key" \
		--version 2.0 --compatible "$BOARD" --files "$w/$TARGET.tar.zst:$TARGET" \
		"$w/bundle.kiln" >/dev/null
	{	# sourced by the main part
		echo "CORPUS_FILES=$(find "$SRC" -type f | wc -l)"
		echo "CORPUS_DIRS=$(find "$SRC" -type d | wc -l)"
		echo "CORPUS_LINKS=$(find "$SRC" -type l | wc -l)"
		echo "CORPUS_BYTES=$(du -sb --apparent-size "$SRC" | cut -f1)"
		echo "CORPUS_TAR=$(stat -c %s "$w/$TARGET.tar")"
		echo "CORPUS_ZST=$(stat -c %s "$w/$TARGET.tar.zst")"
		echo "CORPUS_BUNDLE=$(stat -c %s "$w/bundle.kiln")"
	} > "$w/corpus"
	rm -f "$w/$TARGET.tar" "$w/$TARGET.tar.zst"	# the bundle holds it
	rm -rf "$PAY" && mv "$w" "$PAY"
}

# --- the file systems ----------------------------------------------------
# lazy init off: ext4lazyinit would zero inode tables in the background,
# writing while the update is timed
make_fs() {
	rm -f "$1" && truncate -s "${FS_MIB}M" "$1"
	bounded 300 "mkfs.ext4" mkfs.ext4 -q -F -b 4096 -L kiln-data \
		-E lazy_itable_init=0,lazy_journal_init=0 "$1"
}

# direct I/O: the loop device writes straight to its file (not into a
# second page cache), so it flushes and waits more like a real device
attach() {
	LOOP=$(losetup --find --show --direct-io=on "$1") ||
		die "losetup: no free loop device for $1"
	[ -b "$LOOP" ] || die "losetup gave $LOOP, not a block device"
}

detach() {
	bounded 120 "umount $MNT" umount "$MNT"
	bounded 60 "losetup -d $LOOP" losetup -d "$LOOP"
	LOOP=
}

mount_fs() {	# mount_fs MOUNT: noatime, and MOUNT unless it is "default"
	local o=noatime
	[ "$1" = default ] || o=$o,$1
	bounded 120 "mount -o $o" mount -t ext4 -o "$o" "$LOOP" "$MNT"
}

# The aged file system, made once per run and copied for each aged row: all
# of them start from the same layout, so only the options differ. Aged with
# the kernel's default options; fstrim punches the free space out of the
# file, so that the copies are quick.
make_aged_template() {
	[ -f "$TEMPLATE" ] && return
	note "aging a ${FS_MIB} MiB ext4 (fill to ${AGE_FILL}, delete half, seed $AGE_SEED)"
	make_fs "$TEMPLATE.new"
	attach "$TEMPLATE.new"
	mount_fs default
	bounded 1800 "aging" python3 bench/ota_fs.py age "$MNT" "$AGE_FILL" "$AGE_SEED" \
		> "$WORK/aged.txt"
	bounded 600 "fstrim" fstrim "$MNT"
	detach
	free_space "$TEMPLATE.new" >> "$WORK/aged.txt"
	mv "$TEMPLATE.new" "$TEMPLATE"
}

# free_space IMAGE: one line on how fragmented its free space is (e2freefrag)
free_space() {
	bounded 300 "e2freefrag" e2freefrag "$1" > "$WORK/freefrag"
	awk '
	function bytes(s,  n, u) {	# "8K-", "128M..." in bytes
		n = s + 0; u = s; gsub(/[0-9.]/, "", u); sub(/[-.]+$/, "", u)
		return n * (u == "K" ? 1024 : u == "M" ? 1048576 : u == "G" ? 1073741824 : 1)
	}
	/^Num. free extent/ { n = $4 }
	/^Avg. free extent/ { avg = $4 }
	/^ *[0-9]+[KMG]\.\.\./ {	# histogram: "lo... hi- : extents blocks percent"
		lo = bytes($1); hi = bytes($2); p = $NF + 0
		if (hi <= 4194304) small += p
		if (hi <= 16777216) mid += p
		if (lo >= 134217728) big += p
	}
	END { printf "%d free extents, average %d KiB; of the free space %.0f%% in extents under 4 MiB, %.0f%% under 16 MiB, %.0f%% in extents of 128 MiB or more\n", n, avg, small, mid, big }' "$WORK/freefrag"
}

fs_image() {	# fs_image fresh|aged: the working image at $IMG
	rm -f "$IMG"
	case $1 in
	fresh) make_fs "$IMG" ;;
	aged) make_aged_template
	      bounded 600 "copy of the aged image" cp --sparse=always "$TEMPLATE" "$IMG" ;;
	*) die "unknown file system age '$1' (fresh or aged)" ;;
	esac
}

# --- one measured run ----------------------------------------------------
# user+sys seconds of every child waited for so far; `times` must run in
# this shell (a subshell's count of children starts at zero), so via a file
children_cpu() {
	times > "$WORK/times"
	awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%.3f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$WORK/times"
}

sectors_written() { awk '{ print $7 }' "/sys/block/${LOOP#/dev/}/stat"; }

# the mballoc tunables as the kernel set them, before any row changes one
save_tunables() {
	[ -f "$WORK/tunables" ] && return
	local f
	for f in /sys/fs/ext4/"${LOOP#/dev/}"/mb_*; do
		if [ -r "$f" ]; then echo "${f##*/} $(cat "$f")"; fi
	done > "$WORK/tunables"
}

# set_tunables SYSDIR NAME=V[,NAME=V]...: mballoc tunables for this mount
set_tunables() {
	local t
	for t in ${2//,/ }; do
		[ -w "$1/${t%%=*}" ] || die "no ext4 tunable ${t%%=*} in $1"
		echo "${t#*=}" > "$1/${t%%=*}" || die "cannot set $t in $1"
	done
}

# run_one AGE MOUNT SYNC [TUNABLE=V[,TUNABLE=V]...]: appends one line to $ROWS
run_one() {
	local age=$1 mnt=$2 sync=$3 tune=${4:-} sys=/sys/fs/ext4 t0 t1 c0 c1 s0 s1
	local name="$age, $mnt, $sync${tune:+, $tune}" flag=()
	note "run: $name"
	fs_image "$age"
	attach "$IMG"
	mount_fs "$mnt"
	sys=$sys/${LOOP#/dev/}
	save_tunables
	set_tunables "$sys" "$tune"
	local scan
	scan=$(sed -n 's/^optimize_scan: //p' "/proc/fs/ext4/${LOOP#/dev/}/mb_structs_summary")
	# the bundle and the file system's metadata are read from disk, as on a
	# device just booted
	bounded 600 "sync" sync
	echo 3 > /proc/sys/vm/drop_caches || die "cannot drop caches"
	[ "$sync" = syncfs ] || flag=(--"$sync")
	children_cpu > "$WORK/cpu0"
	s0=$(sectors_written) t0=$EPOCHREALTIME
	bounded "$RUN_TIMEOUT" "kiln-update ($name); see $WORK/update.log" \
		"$BIN/kiln-update" --pubkey "$PAY/bundle.pub" --board-file "$WORK/board" \
		--version-file "$WORK/version" --data "$MNT" "${flag[@]}" "$PAY/bundle.kiln" \
		> "$WORK/update.log" 2>&1
	t1=$EPOCHREALTIME s1=$(sectors_written)
	children_cpu > "$WORK/cpu1"
	c0=$(cat "$WORK/cpu0") c1=$(cat "$WORK/cpu1")
	local lay files bytes alloc extents groups erase_blocks
	lay=$(bounded 600 "layout of $MNT/$TARGET" python3 bench/ota_fs.py layout \
		"$MNT/$TARGET" "$BLOCK" "$PER_GROUP" "$ERASE")
	# "files=N dirs=N bytes=N alloc=N extents=N groups=N erase_blocks=N"
	read -r files _ bytes alloc extents groups erase_blocks <<< "$(sed 's/[a-z_]*=//g' <<< "$lay")"
	[ "$files" = "$CORPUS_FILES" ] ||
		die "$name: $files files under $MNT/$TARGET, the payload has $CORPUS_FILES"
	echo "$age|$mnt|$scan|$sync|${tune:--}|$t0|$t1|$c0|$c1|$files|$bytes|$alloc|$extents|$groups|$erase_blocks|$(((s1 - s0) * 512))" >> "$ROWS"
	detach
	rm -f "$IMG"
}

# --- the report ----------------------------------------------------------
table() {	# table AGE: the rows of $ROWS on that file system
	echo "| mount | scan | sync | tunable | wall s | cpu s | files/s | MiB/s | groups | erase blocks | extents | written MiB |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
	awk -F'|' -v age="$1" '$1 == age {
		wall = $7 - $6; cpu = $9 - $8
		printf "| %s | %s | %s | %s | %.1f | %.1f | %.0f | %.1f | %d | %d | %d | %.0f |\n",
			$2, $3, $4, $5, wall, cpu, $10 / wall, $11 / wall / 1048576,
			$14, $15, $13, $16 / 1048576 }' "$ROWS"
}

report() {
	local alloc
	alloc=$(awk -F'|' 'NR == 1 { print $12 }' "$ROWS")
	echo "# OTA unpack benchmark: kiln-update onto ext4"
	echo
	echo "$(date -u +%F), host kernel $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs."
	echo
	echo "Payload: Debian's ${SRC##*/} tree, $CORPUS_FILES files, $CORPUS_DIRS directories,"
	echo "$CORPUS_LINKS symlinks, $((CORPUS_BYTES >> 20)) MiB; tar $((CORPUS_TAR >> 20)) MiB, zstd -19"
	echo "$((CORPUS_ZST >> 20)) MiB (the bundle $((CORPUS_BUNDLE >> 20)) MiB). Its files and directories"
	echo "take $((alloc >> 20)) MiB of blocks: at best $(((alloc + ERASE - 1) / ERASE)) erase blocks, $(((alloc + BLOCK * PER_GROUP - 1) / (BLOCK * PER_GROUP))) groups."
	echo
	echo "Device: a ${FS_MIB} MiB file on $(findmnt -no FSTYPE -T "$WORK") as a loop device (direct I/O);"
	echo "mkfs.ext4 defaults, $BLOCK-byte blocks, $NGROUPS groups of $PER_GROUP blocks (flex_bg $FLEX),"
	echo "lazy init off; mounted noatime plus the mount column (default: none)."
	echo "Aged (once, kernel default options, then copied for each row): filled to"
	echo "${AGE_FILL} with files of 4 KiB-16 MiB (bench/ota_fs.py, seed $AGE_SEED), half of"
	echo "them deleted at random. $(cat "$WORK/aged.txt" 2>/dev/null || echo "-")"
	echo
	echo "Each row: a new file system (aged: the same aged copy), caches dropped,"
	echo "then \`kiln-update --data MNT [--fsync-each] bundle\`. wall/cpu s: the"
	echo "update to its exit (its syncfs included); files/s, MiB/s: of the payload"
	echo "over wall; groups, erase blocks (4 MiB), extents: of the new tree's files"
	echo "and directories (FIEMAP); written: what the loop device was sent (data,"
	echo "journal, metadata). scan: optimize_scan in effect (mb_structs_summary)."
	echo "Wall times are of a loop device on a shared VM disk: compare the counts."
	local age
	for age in fresh aged; do	# extra rows may name an age not in AGES
		grep -q "^$age|" "$ROWS" || continue
		echo
		echo "## $age ext4"
		echo
		table "$age"
	done
	echo
	echo "mballoc tunables as mounted (/sys/fs/ext4/loopN/):"
	echo
	echo "| tunable | value |"
	echo "|---|---|"
	awk '{ printf "| %s | %s |\n", $1, $2 }' "$WORK/tunables"
}

# --- main ----------------------------------------------------------------
check_host
make_payload
# shellcheck source=/dev/null
. "$PAY/corpus"	# CORPUS_FILES, _DIRS, _LINKS, _BYTES, _TAR, _ZST, _BUNDLE
echo "$BOARD" > "$WORK/board"
echo 1.0 > "$WORK/version"

# the geometry that FIEMAP's offsets are read against
make_fs "$IMG"
geo() { dumpe2fs -h "$IMG" 2>/dev/null | sed -n "s/^$1: *//p"; }
BLOCK=$(geo 'Block size') PER_GROUP=$(geo 'Blocks per group')
FLEX=$(geo 'Flex block group size') NGROUPS=$(( ($(geo 'Block count') + PER_GROUP - 1) / PER_GROUP ))
if [ -z "$BLOCK" ] || [ -z "$PER_GROUP" ]; then
	die "dumpe2fs: no block size or blocks per group in $IMG"
fi
rm -f "$IMG" "$ROWS" "$WORK/tunables" "$WORK/aged.txt"

for age in $AGES; do
	for mnt in $MOUNTS; do
		for sync in $SYNCS; do
			run_one "$age" "$mnt" "$sync"
		done
	done
done
for x in $EXTRA; do
	IFS=: read -r age mnt sync tune <<< "$x"
	run_one "$age" "$mnt" "$sync" "$tune"
done
report | tee "$RESULTS/ota.md"
note "results in $RESULTS/ota.md"

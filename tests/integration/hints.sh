# -z A:B and --compress-hints: a file whose path matches a hint gets that
# hint's pcluster size and algorithm, or is left uncompressed. Each image
# is mounted by the running kernel and compared with its source, extracted
# by fsck.erofs, and must not depend on --workers; which algorithm a file
# got is read from its map header, its pcluster sizes by Debian's dump.

hinttree() {
	mkdir -p "$1/a"
	seq 1 200000 > "$1/a/x.txt"
	seq 5 300000 > "$1/y.log"
	cp "$1/y.log" "$1/a/z.dat"
	seq 7 100000 > "$1/r.bin"	# compresses well: only the hint keeps it flat
	seq 1 1000 > "$1/small.txt"
	printf '# text goes to the second algorithm\n65536 1 \\.txt$\n' > "$2"
	printf '0 \\.bin$\n\n16384\t^a/z\\.dat$\n' >> "$2"
}

# hint_alg IMG PATH: the algorithm id in PATH's map header (lz4 0, lzma 1,
# deflate 2, zstd 3), found by the nid our dump gives.
hint_alg() {
	local nid
	nid=$(dump --path="$2" "$1" | sed -n 's/^NID: \([0-9]*\).*/\1/p')
	python3 - "$1" "$nid" <<-'EOF'
	import sys
	sys.path.insert(0, "tests/lib")
	from erofsimg import Image
	im = Image(open(sys.argv[1], "rb").read())
	ino = im.inode(int(sys.argv[2]))
	assert ino["layout"] in (1, 3), "not compressed: %d" % ino["layout"]
	print(im.b[((ino["tail"] + 7) & ~7) + 6] & 15)
	EOF
}

test_hints_roundtrip() {
	need_root
	hinttree "$T/src" "$T/hints"
	local opts alg
	while read -r alg opts; do
		# shellcheck disable=SC2086
		mkfs $opts --compress-hints="$T/hints" --workers=1 "$T/w1" "$T/src"
		# shellcheck disable=SC2086
		mkfs $opts --compress-hints="$T/hints" --workers=3 "$T/w3" "$T/src"
		cmp "$T/w1" "$T/w3" || fail "$opts: differs by workers"
		mount_erofs "$T/w1" "$T/m"
		$TREECMP "$T/src" "$T/m" || fail "$opts: mount differs"
		umount "$T/m"
		extract_cmp "$T/w1" "$T/src"
		[ "$(hint_alg "$T/w1" /a/x.txt)" = "$alg" ] ||
			fail "$opts: x.txt not in algorithm $alg"
		[ "$(hint_alg "$T/w1" /y.log)" = 0 ] ||
			fail "$opts: y.log not in the first algorithm"
		dump --path=/r.bin "$T/w1" > "$T/r"
		assert_grep "Layout: [024] " "$T/r"
	done <<-'OPTS'
	1 -zlz4hc,9:lzma,6 -C32768
	1 -zlz4hc:lzma -C32768 -Eztailpacking
	1 -zlz4hc:lzma -C32768 -Efragments
	1 -zlz4hc:lzma -C32768 -Elegacy-compress
	3 -zlz4:zstd,5 -C16384 --chunksize=4096
	2 -b 1024 -zlz4hc -zdeflate -C4096
	OPTS
	# the last compressed try goes flat in fewer blocks than it wrote;
	# a file left uncompressed next, all zeros, is not written over
	# them: it must read zeros, not the last file's bytes
	mkdir -p "$T/z"
	head -c 8292 /dev/urandom > "$T/z/a"
	head -c 4096 /dev/zero > "$T/z/b.raw"
	printf '0 \\.raw$\n' > "$T/zhints"
	mkfs -zlz4hc --compress-hints="$T/zhints" "$T/zimg" "$T/z"
	mount_erofs "$T/zimg" "$T/zm"
	$TREECMP "$T/z" "$T/zm" || fail "zeros after a file gone flat read wrong"
}

# The pclusters each file got, as Debian's dump.erofs 1.5 lists them: z.dat
# at most 16 KiB (its hint), y.log up to 32 KiB (-C), and a hint larger
# than -C raises the image's limit.
test_hints_pclusters() {
	need_root
	hinttree "$T/src" "$T/hints"
	printf '65536 \\.txt$\n16384 ^a/z\\.dat$\n0 \\.bin$\n' > "$T/lz4hints"
	mkfs -zlz4hc -C32768 --compress-hints="$T/lz4hints" "$T/img" "$T/src"
	maxplen() { oracle_dump --path="$1" -e "$T/img" |
		awk -F'|' '/^ *[0-9]+:/ { if ($3 + 0 > m) m = $3 + 0 } END { print m }'; }
	[ "$(maxplen /a/z.dat)" = 16384 ] || fail "z.dat: $(maxplen /a/z.dat)"
	[ "$(maxplen /y.log)" = 32768 ] || fail "y.log: $(maxplen /y.log)"
	[ "$(maxplen /a/x.txt)" = 65536 ] || fail "x.txt: $(maxplen /a/x.txt)"
	oracle_fsck --extract="$T/x" "$T/img" > /dev/null 2>&1 ||
		fail "1.5 fsck --extract"
	$TREECMP "$T/src" "$T/x" || fail "1.5 extraction differs"
}

# A hard link whose paths match different hints takes the hint of the
# path the visit meets first (shallower, then by name), not of the path a
# parallel scan happened to reach first: the image must not depend on
# --workers. /top is met before /f1/f2/deep, which says "not compressed".
test_hints_hardlink() {
	need_root
	local i
	mkdir -p "$T/src/f1/f2" "$T/src/f0" "$T/src/f3"
	yes kiln0123456789 | head -c 127901 > "$T/src/top"
	ln "$T/src/top" "$T/src/f1/f2/deep"
	for i in $(seq 1 40); do	# directories for the scan to race over
		mkdir -p "$T/src/f0/d$i" "$T/src/f3/d$i"
		echo $i > "$T/src/f0/d$i/x"
	done
	echo '0 ^f[0-4]' > "$T/hints"
	mkfs --workers=1 -zdeflate -C131072 --compress-hints="$T/hints" \
		"$T/one.img" "$T/src"
	"$BIN/dump.erofs" --path=/top "$T/one.img" | grep -q 'Layout: 3' ||
		fail "top (met first, no hint) is not compressed"
	for i in $(seq 1 20); do
		mkfs --workers=3 -zdeflate -C131072 --compress-hints="$T/hints" \
			"$T/three.img" "$T/src"
		cmp "$T/one.img" "$T/three.img" || fail "differs by workers (run $i)"
	done
	mount_erofs "$T/one.img" "$T/m"
	$TREECMP "$T/src" "$T/m" || fail "mount differs"
}

test_hints_bad() {
	mkdir -p "$T/src"
	bad_hints() {
		printf '%s\n' "$1" > "$T/h"
		expect_error "$2" "$T/img" "$BIN/mkfs.erofs" -zlz4hc:lzma \
			--compress-hints="$T/h" "$T/img" "$T/src"
	}
	bad_hints "5000 x" "h:1: pcluster size is not 0 or a multiple"
	bad_hints "4096 2 x" "h:1: no such algorithm in -z: '2'"
	bad_hints "4096 (" "h:1: bad regular expression '('"
	bad_hints "8192" "h:1: no regex in '8192'"
	expect_error "nothere: No such file" "$T/img" "$BIN/mkfs.erofs" -zlz4 \
		--compress-hints="$T/nothere" "$T/img" "$T/src"
	expect_error "--compress-hints need -z" "$T/img" "$BIN/mkfs.erofs" \
		--compress-hints="$T/h" "$T/img" "$T/src"
}

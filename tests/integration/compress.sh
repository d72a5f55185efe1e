# Compressed images: every algorithm and physical cluster size is mounted
# by the running kernel and compared with its source; images must not
# depend on the number of workers.

ALGS="lz4 lz4hc zstd lzma deflate"

# One tree of boundary sizes, made once per run.
ztree() {
	if [ ! -d "$ZTREE" ]; then
		tests/lib/mkztree.sh "$ZTREE" >/dev/null
	fi
}

test_compress_roundtrip() {
	need_root
	ztree
	for alg in $ALGS; do
		for c in 4096 16384 65536 262144; do
			mkfs -z "$alg" -C "$c" "$T/$alg-$c" "$ZTREE"
			mount_erofs "$T/$alg-$c" "$T/m-$alg-$c"
			$TREECMP "$ZTREE" "$T/m-$alg-$c" || fail "$alg -C $c"
			umount "$T/m-$alg-$c"
		done
		# 1 KiB blocks: compact indexes without 2-byte packs
		mkfs -b 1024 -z "$alg" -C 16384 "$T/b1k" "$ZTREE"
		mount_erofs "$T/b1k" "$T/mb-$alg"
		$TREECMP "$ZTREE" "$T/mb-$alg" || fail "$alg -b 1024"
		umount "$T/mb-$alg"
		# full (8-byte) indexes too, small and big pclusters
		for c in 4096 65536; do
			mkfs -z "$alg" -C "$c" -E legacy-compress "$T/full" "$ZTREE"
			mount_erofs "$T/full" "$T/mf-$alg-$c"
			$TREECMP "$ZTREE" "$T/mf-$alg-$c" || fail "$alg -C $c full index"
			umount "$T/mf-$alg-$c"
		done
	done
}

# lz4 with blocks under 4 KiB: the kernel takes 256-block pclusters at
# most (it counts 1 MiB in page-sized blocks when it reads the record),
# other algorithms more; mkfs refuses what would not mount (by -C or a
# hint) and fsck an image that says more.
test_compress_lz4_small_blocks() {
	need_root
	mkdir -p "$T/src"
	seq 1 300000 > "$T/src/text"
	local b
	for b in 512 1024 2048; do
		mkfs -b $b -zlz4hc -C $((256 * b)) "$T/ok" "$T/src"
		mount_erofs "$T/ok" "$T/m"
		$TREECMP "$T/src" "$T/m" || fail "-b $b: 256 blocks"
		umount "$T/m"
		expect_error "the kernel takes at most $((256 * b))" "$T/bad" \
			"$BIN/mkfs.erofs" -b $b -zlz4 -C $((257 * b)) "$T/bad" "$T/src"
		# the limit is lz4's: lzma's record has none
		mkfs -b $b -zlzma -C $((257 * b)) "$T/lzma" "$T/src"
		mount_erofs "$T/lzma" "$T/m"
		$TREECMP "$T/src" "$T/m" || fail "-b $b: lzma at 257 blocks"
		umount "$T/m"
	done
	echo "$((257 * 1024)) 1 text" > "$T/hints"
	expect_error "the kernel takes at most 262144" "$T/bad" \
		"$BIN/mkfs.erofs" -b 1024 -zlz4:lzma -C 16384 \
		--compress-hints="$T/hints" "$T/bad" "$T/src"
	# an image that says 257 (the record after the superblock at 1 KiB)
	mkfs -b 1024 -zlz4 -C 262144 -Enosbcrc "$T/patched" "$T/src"
	printf '\001\001' | dd of="$T/patched" bs=1 seek=1156 conv=notrunc status=none
	if mount -t erofs -o ro,loop "$T/patched" "$T/m" 2>/dev/null; then
		umount "$T/m"
		fail "the kernel mounts 257-block lz4 pclusters: the test's oracle moved"
	fi
	if "$BIN/fsck.erofs" "$T/patched" 2>"$T/err"; then
		fail "fsck passes 257-block lz4 pclusters"
	fi
	assert_grep "pclusters are over the kernel's 256" "$T/err"
}

# lzma 100..109: liblzma's extreme presets, as erofs-utils takes them; a
# different search, so a different image from the same preset without it.
test_compress_lzma_extreme() {
	need_root
	ztree
	mkfs -z lzma,109 -C 65536 "$T/x" "$ZTREE"
	mount_erofs "$T/x" "$T/mx"
	$TREECMP "$ZTREE" "$T/mx" || fail "lzma,109"
	umount "$T/mx"
	mkfs -z lzma,9 -C 65536 "$T/n" "$ZTREE"
	! cmp -s "$T/x" "$T/n" || fail "lzma,109 made the same image as lzma,9"
	mkfs -z lzma,100 -C 16384 "$T/x0" "$ZTREE"
	mount_erofs "$T/x0" "$T/m0"
	$TREECMP "$ZTREE" "$T/m0" || fail "lzma,100"
	umount "$T/m0"
}

# -E ztailpacking: each file's tail pcluster inline after its index, with
# compact and full indexes, 4 KiB and 1 KiB blocks; and it must save space.
test_compress_tailpacking() {
	need_root
	ztree
	for alg in $ALGS; do
		for opt in "-C 4096" "-C 65536" "-C 16384 -E legacy-compress" \
			   "-b 1024 -C 16384"; do
			# shellcheck disable=SC2086  # opt is several words
			mkfs -z "$alg" $opt -E ztailpacking "$T/img" "$ZTREE"
			mount_erofs "$T/img" "$T/m"
			$TREECMP "$ZTREE" "$T/m" || fail "$alg $opt ztailpacking"
			umount "$T/m"
		done
		mkfs -z "$alg" -C 65536 "$T/plain" "$ZTREE"
		mkfs -z "$alg" -C 65536 -E ztailpacking "$T/packed" "$ZTREE"
		[ "$(stat -c %s "$T/packed")" -lt "$(stat -c %s "$T/plain")" ] ||
			fail "$alg: ztailpacking saved nothing"
	done
	mkfs -z lz4hc -C 65536 -E ztailpacking "$T/full" "$TREE"
	mount_erofs "$T/full" "$T/mf"
	$TREECMP "$TREE" "$T/mf" || fail "full tree ztailpacking"
}

# A file that does not compress is stored flat, its last partial block
# inline: fewer blocks than as plain pclusters, and still read back right.
test_compress_incompressible_flat() {
	need_root
	mkdir "$T/src"
	head -c $((3 * 4096 + 100)) /dev/urandom > "$T/src/noise"
	head -c 20000 /dev/zero > "$T/src/zeros"
	for alg in $ALGS; do
		mkfs -z "$alg" -C 65536 "$T/img" "$T/src"
		oracle_dump --path=/noise "$T/img" | grep -q 'Layout: 2' ||
			fail "$alg: noise not stored flat inline"
		oracle_dump --path=/zeros "$T/img" | grep -q 'Layout: 3' ||
			fail "$alg: zeros not compressed"
		mount_erofs "$T/img" "$T/m-$alg"
		$TREECMP "$T/src" "$T/m-$alg" || fail "$alg"
		umount "$T/m-$alg"
	done
}

# The full test tree (xattrs, hard links, every file type) compressed.
test_compress_full_tree() {
	need_root
	for alg in $ALGS; do
		mkfs -z "$alg" -C 65536 "$T/$alg" "$TREE"
		mount_erofs "$T/$alg" "$T/m-$alg"
		$TREECMP "$TREE" "$T/m-$alg" || fail "$alg"
	done
}

# Debian's erofs-utils 1.5 knows LZ4 only: it must accept those images and
# decompress every byte of them.
test_compress_fsck_lz4() {
	ztree
	for alg in lz4 lz4hc; do
		for c in 4096 65536; do
			mkfs -z "$alg" -C "$c" "$T/img" "$ZTREE"
			oracle_fsck --extract "$T/img" || fail "$alg -C $c"
			mkfs -z "$alg" -C "$c" -E ztailpacking "$T/img" "$ZTREE"
			oracle_fsck --extract "$T/img" || fail "$alg -C $c ztailpacking"
		done
	done
}

test_compress_deterministic() {
	ztree
	for alg in $ALGS; do
		mkfs -z "$alg" -C 16384 --workers=1 "$T/w1" "$ZTREE"
		mkfs -z "$alg" -C 16384 --workers=2 "$T/w2" "$ZTREE"
		mkfs -z "$alg" -C 16384 -j 8 "$T/w8" "$ZTREE"
		cmp "$T/w1" "$T/w2" && cmp "$T/w1" "$T/w8" || fail "$alg differs by workers"
		mkfs -z "$alg" -E ztailpacking --workers=1 "$T/t1" "$ZTREE"
		mkfs -z "$alg" -E ztailpacking --workers=2 "$T/t2" "$ZTREE"
		cmp "$T/t1" "$T/t2" || fail "$alg ztailpacking differs by workers"
	done
	# and it does compress: text shrinks, noise is stored as it is
	assert [ "$(stat -c %s "$T/w1")" -lt "$(du -sb --apparent-size "$ZTREE" | cut -f1)" ]
}

# A 5 GiB file, past 32-bit sizes, in a compressed image.
test_compress_large_file() {
	need_root
	mkdir "$T/src"
	sparse_5g "$T/src/big"	# from mkfs.sh
	mkfs -z lz4 -C 65536 "$T/img" "$T/src"
	mount_erofs "$T/img" "$T/m"
	assert cmp "$T/src/big" "$T/m/big"
}

# A big file is cut into bigger segments (16 MiB here), and each segment
# ends in the only partly filled pcluster: Debian's dump.erofs must see at
# most one short pcluster per 16 MiB. The same image for any worker count;
# the kernel reads it back.
test_compress_big_segments() {
	need_root
	mkdir "$T/src"
	seq 1 25000000 > "$T/src/seq"	# 214 MB of text
	mkfs -z lz4 -C 65536 --workers=1 "$T/w1" "$T/src"
	mkfs -z lz4 -C 65536 --workers=2 "$T/w2" "$T/src"
	cmp "$T/w1" "$T/w2" || fail "differs by workers"
	oracle_dump --path=/seq -e "$T/w1" > "$T/ext"
	short=$(awk -F'|' 'NF == 3 && $1 ~ /:/ && $3 + 0 < 65536 { n++ }
			   END { print n + 0 }' "$T/ext")
	segs=$(( ($(stat -c %s "$T/src/seq") + (16 << 20) - 1) / (16 << 20) ))
	[ "$short" -gt 0 ] && [ "$short" -le "$segs" ] ||
		fail "$short short pclusters for $segs segments"
	mount_erofs "$T/w1" "$T/m"
	cmp "$T/src/seq" "$T/m/seq" || fail "kernel read differs"
}

# Compression starts while the tree is still walked, so what it decides
# (a tail inline or in a block, flat or compressed) holds for any record up
# to a bound (an extended inode, no xattr shared); records are finished once
# the epoch and the sharing are known. Here bound and record differ most:
# every file carries a long shared xattr, tails just fit or just miss, a
# hard link, and indexes longer than a block (ztailpacking then has no room
# in the index's block). Each image: the same at any worker count, the
# kernel's mount equal to the source, and Kiln's fsck and Debian's (lz4) clean.
test_compress_stream_bounds() {
	need_root
	mkdir -p "$T/src/d"
	for n in 4060 4064 4068 4069 4080 4095 4096 4097 8191; do
		head -c "$n" /dev/urandom > "$T/src/r$n"	# stays flat
		yes "line $n" | head -c "$n" > "$T/src/t$n"	# compresses
	done
	for f in "$T"/src/[rt]*; do
		setfattr -n user.shared -v "$(printf '%0200d' 0)" "$f"
		setfattr -n user.own -v "${f##*/}" "$f"
	done
	# 20 MiB and 300 bytes: 5121 lclusters of 4 KiB, an index over a
	# block, and a tail pcluster of just the last 300 bytes
	seq 1 4000000 | head -c $((20 << 20 | 300)) > "$T/src/d/big"
	ln "$T/src/t4097" "$T/src/d/link"
	find "$T/src" -exec touch -h -d @1000000000 {} +	# one mtime: compact
	for opts in "-zlz4 -C4096" "-zlz4hc -C4096 -Eztailpacking" \
		    "-zzstd -Eztailpacking -Elegacy-compress" \
		    "-zlz4 --ignore-mtime -Eztailpacking" "-zdeflate -x 3" \
		    "-zlz4hc -Enoinline_data"; do
		# shellcheck disable=SC2086
		mkfs $opts --workers=1 "$T/w1" "$T/src"
		# shellcheck disable=SC2086
		mkfs $opts --workers=3 "$T/w3" "$T/src"
		cmp "$T/w1" "$T/w3" || fail "$opts: differs by workers"
		mount_erofs "$T/w1" "$T/m"
		$TREECMP "$T/src" "$T/m" || fail "$opts: mount differs"
		umount "$T/m"
		"$BIN/fsck.erofs" "$T/w1" >/dev/null || fail "$opts: fsck"
		case $opts in -zlz4*)
			oracle_fsck "$T/w1" >/dev/null || fail "$opts: Debian fsck"
		esac
		case $opts in "-zlz4hc -C4096 -Eztailpacking")
			# its 300-byte tail inline, though the index ends past
			# a block: "... |  300 : A..B | LEN" with LEN under 4096
			oracle_dump --path=/d/big -e "$T/w1" | tail -2 | head -1 |
				awk -F'|' '{ exit !($3 + 0 < 4096) }' ||
				fail "$opts: big file's tail not inline"
		esac
	done
}

test_compress_bad_options() {
	mkdir "$T/src"
	for args in "-z gzip" "-z lz4hc,13" "-z zstd,0" "-z lzma,level=10" \
		    "-z lzma,99" "-z lzma,110" \
		    "-z deflate,13" "-z lz4 -C 5000" "-z lz4 -C 2097152" \
		    "-b 512 -z lz4 -C 1048576" "--workers=0" "-z lz4 -E nonsense"; do
		expect_rejected "$args"
	done
}

# The compressed path fails as cleanly as the plain one.
test_compress_bad_input() {
	need_root
	mkdir "$T/src"
	seq 1 2000000 > "$T/src/text"
	head -c 3M /dev/urandom > "$T/src/noise"
	mkdir "$T/small"
	mount -t tmpfs -o size=1m tmpfs "$T/small"
	echo "$T/small" >> "$T/.mounts"
	expect_error "No space left on device" "$T/small/img" \
		"$BIN/mkfs.erofs" -z lz4hc -C 65536 "$T/small/img" "$T/src"
	head -c 64M /dev/zero | tr '\0' x > "$T/src/growing"
	( while :; do echo more >> "$T/src/growing"; done ) &
	pid=$!
	sleep 0.2
	# the harness kills the writer whatever happens
	expect_error "growing: file changed while being read" "$T/img" \
		"$BIN/mkfs.erofs" -z zstd "$T/img" "$T/src"
	kill $pid
}

# --chunksize: uncompressed files are chunk-based; equal chunks are stored
# once and zero chunks are holes. Each image is mounted by the running
# kernel and compared with its source, extracted by our fsck, checked by
# Debian's fsck.erofs 1.5 (which reads chunk-based files; its --extract
# drops holes, so it only checks), and must not depend on --workers.

# Copies at and off chunk boundaries, holes at the start, middle and end,
# a file of zeros, a partial last chunk, and equal short files.
chunktree() {
	mkdir -p "$1/d"
	head -c 3000000 /dev/urandom > "$1/a"
	cp "$1/a" "$1/d/copy"
	cat "$1/a" "$1/a" > "$1/twice"
	{ head -c 4096 /dev/zero; cat "$1/a"; } > "$1/shifted"
	truncate -s 20M "$1/lead"
	echo end >> "$1/lead"
	{ head -c 70000 /dev/urandom; } > "$1/mid"
	truncate -s 9M "$1/mid"
	head -c 5000 /dev/urandom >> "$1/mid"
	head -c 100000 /dev/urandom > "$1/trail"
	truncate -s 6M "$1/trail"
	head -c 3M /dev/zero > "$1/zeros"
	seq 1 300000 > "$1/d/text"
	cp "$1/d/text" "$1/d/text2"
	echo small > "$1/d/s1"
	echo small > "$1/d/s2"
	: > "$1/empty"
	ln "$1/a" "$1/d/link"
}

test_chunks_roundtrip() {
	need_root
	chunktree "$T/src"
	cp -a "$TREE" "$T/src/tree"
	local opts
	while read -r opts; do
		# shellcheck disable=SC2086
		mkfs $opts --workers=1 "$T/w1" "$T/src"
		# shellcheck disable=SC2086
		mkfs $opts --workers=3 "$T/w3" "$T/src"
		cmp "$T/w1" "$T/w3" || fail "$opts: differs by workers"
		mount_erofs "$T/w1" "$T/m"
		$TREECMP "$T/src" "$T/m" || fail "$opts: mount differs"
		umount "$T/m"
		extract_cmp "$T/w1" "$T/src"
		case $opts in	# 1.5 reads only blocks of the page size
		-b*) ;;
		*) oracle_fsck "$T/w1" > "$T/o" 2>&1 ||
			fail "$opts: 1.5 fsck: $(cat "$T/o")" ;;
		esac
		cmp <(dump --cat --path=/twice "$T/w1") "$T/src/twice" ||
			fail "$opts: dump --cat"
	done <<-'OPTS'
	--chunksize=4096
	--chunksize=65536 -Eforce-chunk-indexes
	--chunksize=1048576 -Enoinline_data
	-b 1024 --chunksize=2048 -Eforce-inode-extended
	-Ededupe
	OPTS
}

# What chunks save, measured on the image's size: a copy costs no block, a
# run of zeros none, a hole none. A file whose chunks lie one after another
# needs no index: it is flat (a copy too, pointing at the original's
# blocks, its tail inline);
# runs of shared chunks become larger chunks (Debian's dump lists them).
test_chunks_dedupe() {
	need_root
	mkdir -p "$T/one" "$T/two"
	head -c 1000000 /dev/urandom > "$T/one/noise"
	cp "$T/one/noise" "$T/two/noise"
	cp "$T/one/noise" "$T/two/copy"
	head -c 2M /dev/zero > "$T/two/zeros"
	truncate -s 30M "$T/two/hole"
	mkfs --chunksize=4096 "$T/one.img" "$T/one"
	mkfs --chunksize=4096 "$T/two.img" "$T/two"
	[ "$(stat -c %s "$T/one.img")" = "$(stat -c %s "$T/two.img")" ] ||
		fail "copies, zeros or holes took blocks: $(stat -c %s "$T/one.img" "$T/two.img")"
	mkfs "$T/flat.img" "$T/two"
	[ "$(stat -c %s "$T/flat.img")" -gt 2000000 ] ||
		fail "flat image unexpectedly small: the test shows nothing"
	dump --path=/noise "$T/two.img" > "$T/d"
	assert_grep "Layout: 2 " "$T/d"
	dump --path=/copy "$T/two.img" > "$T/d"
	assert_grep "Layout: 2 " "$T/d"
	oracle_dump --path=/noise -e "$T/two.img" > "$T/ext"
	oracle_dump --path=/copy -e "$T/two.img" > "$T/ext2"
	[ "$(grep ' 0: ' "$T/ext" | sed 's/.*: *//; s/\.\..*//')" = \
	  "$(grep ' 0: ' "$T/ext2" | sed 's/.*: *//; s/\.\..*//')" ] ||
		fail "the copy's blocks are not the original's"
	# 8 KiB new, then the noise: runs of 2 and 244 chunks, 8 KiB ones
	{ head -c 8192 /dev/urandom; cat "$T/one/noise"; } > "$T/two/mix"
	mkfs --chunksize=4096 "$T/three.img" "$T/two"
	oracle_dump --path=/mix -e "$T/three.img" > "$T/ext3"
	assert_grep "^ +0: +0\.\. +8192 \| +8192 :" "$T/ext3"
	assert_grep "^ +1: +8192\.\. +16384 \| +8192 :" "$T/ext3"
	oracle_dump --path=/zeros -e "$T/three.img" > "$T/ext4"
	assert_grep "1 extents found" "$T/ext4"
	mount_erofs "$T/three.img" "$T/m"
	$TREECMP "$T/two" "$T/m" || fail "mount differs"
	# a file all of whose chunks are an earlier file's last ones, which
	# end where the next block goes: flat over them, and the earlier
	# file's last block is not taken back for its inline tail
	mkdir -p "$T/four"
	head -c 4196 /dev/urandom > "$T/four/b"
	{ head -c 4096 /dev/zero; cat "$T/four/b"; } > "$T/four/a"
	mkfs -Ededupe "$T/four.img" "$T/four"
	mount_erofs "$T/four.img" "$T/m4"
	$TREECMP "$T/four" "$T/m4" || fail "a block an earlier file uses was taken back"
}

# A chunk is written before it is found equal to an earlier one; the next
# chunk then goes to the same blocks, and its zeros (skipped in a new file)
# must still overwrite what the discarded one left there.
test_chunks_discarded() {
	need_root
	mkdir -p "$T/src"
	head -c 3M /dev/urandom > "$T/src/a"
	cp "$T/src/a" "$T/src/b"
	{ head -c 1M /dev/urandom; head -c 1M /dev/zero
	  head -c 1M /dev/urandom; } > "$T/src/c"
	mkfs --chunksize=4194304 "$T/img" "$T/src"
	mount_erofs "$T/img" "$T/m"
	$TREECMP "$T/src" "$T/m" || fail "mount differs"
	extract_cmp "$T/img" "$T/src"
	# a tail block taken back (inline in f1's record) is not an earlier
	# chunk for the copy f2's tail, written to that same block
	mkdir -p "$T/src2"
	head -c 8292 /dev/urandom > "$T/src2/f1"
	cp "$T/src2/f1" "$T/src2/f2"
	head -c 9000 /dev/urandom > "$T/src2/f3"
	mkfs --chunksize=4096 "$T/img2" "$T/src2"
	mount_erofs "$T/img2" "$T/m2"
	$TREECMP "$T/src2" "$T/m2" || fail "tails mixed up"
}

# A block device keeps an older image's bytes: a chunk written and then
# found equal to an earlier one must not leave them where a later chunk's
# zeros are read.
test_chunks_block_device() {
	need_root
	local dev
	mkdir -p "$T/src"
	head -c 300000 /dev/urandom > "$T/src/a"
	cp "$T/src/a" "$T/src/b"
	{ head -c 5000 /dev/urandom; head -c 200000 /dev/zero
	  head -c 5000 /dev/urandom; } > "$T/src/c"
	dev=$(loopdev "$T/dev.img" 8M)
	tr '\0' '\377' < /dev/zero | head -c 8M > "$dev"
	mkfs --chunksize=65536 "$dev" "$T/src"
	mount_erofs "$dev" "$T/m"
	$TREECMP "$T/src" "$T/m" || fail "image on a device differs"
}

test_chunks_bad_options() {
	mkdir -p "$T/src"
	expect_error "invalid chunk size" "$T/img" "$BIN/mkfs.erofs" \
		--chunksize=5000 "$T/img" "$T/src"
	expect_error "--chunksize 2048: a power of two from the block size" \
		"$T/img" "$BIN/mkfs.erofs" --chunksize=2048 "$T/img" "$T/src"
	expect_error "invalid chunk size" "$T/img" "$BIN/mkfs.erofs" \
		--chunksize=x "$T/img" "$T/src"
}

# With -z, a file compression does not pay for is chunk-based (as
# erofs-utils makes it): a copy of incompressible data, in one segment or
# several, costs no block; text is still compressed.
test_chunks_compressed() {
	need_root
	mkdir -p "$T/one" "$T/two"
	head -c 300000 /dev/urandom > "$T/one/r"
	head -c 20000000 /dev/urandom > "$T/one/big"
	seq 1 100000 > "$T/one/t"
	cp "$T/one/"* "$T/two/"
	cp "$T/one/r" "$T/two/r2"
	cp "$T/one/big" "$T/two/big2"
	mkfs -zlz4hc --chunksize=4096 "$T/one.img" "$T/one"
	mkfs -zlz4hc --chunksize=4096 --workers=1 "$T/two.img" "$T/two"
	mkfs -zlz4hc --chunksize=4096 --workers=3 "$T/two3.img" "$T/two"
	cmp "$T/two.img" "$T/two3.img" || fail "differs by workers"
	[ $(($(stat -c %s "$T/two.img") - $(stat -c %s "$T/one.img"))) -le 4096 ] ||
		fail "copies took blocks: $(stat -c %s "$T/one.img" "$T/two.img")"
	dump --path=/big2 "$T/two.img" > "$T/d"
	assert_grep "Layout: [024] " "$T/d"
	dump --path=/t "$T/two.img" > "$T/d"
	assert_grep "Layout: 3 " "$T/d"
	mount_erofs "$T/two.img" "$T/m"
	$TREECMP "$T/two" "$T/m" || fail "mount differs"
	extract_cmp "$T/two.img" "$T/two"
}

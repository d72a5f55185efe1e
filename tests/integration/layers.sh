# mkfs.erofs MERGED LAYER... : layers merged as containerd's erofs
# snapshotter asks (erofs-utils' rebuild mode): metadata only, file data
# left in each layer, device k of the table. The oracle is overlayfs over
# the same layers, each mounted by the kernel: the merged image (layers
# appended, or given as device= loop devices) must show the same tree.

# Three layers, the last on top: a plain tree; containerd's --tar=f
# --aufs layer (an opaque d, e/x whited out); a chunk-based layer that
# replaces a file, adds a directory and a file into a lower one.
layers_make() {
	local l1=$T/l1 l3=$T/l3
	mkdir -p "$l1/d" "$l1/e" "$l1/keep/deep" "$l3/keep" "$l3/new"
	echo old > "$l1/d/old"
	echo x > "$l1/e/x"
	echo y > "$l1/e/y"
	seq 1 100000 > "$l1/keep/text"
	head -c 300000 /dev/urandom > "$l1/keep/deep/noise"
	ln "$l1/keep/deep/noise" "$l1/keep/noise-link"
	ln -s keep/text "$l1/link"
	truncate -s 2M "$l1/sparse"
	echo mid | dd of="$l1/sparse" bs=1 seek=1000000 conv=notrunc status=none
	mkfifo "$l1/fifo"
	mknod "$l1/null" c 1 3
	: > "$l1/empty"
	setfattr -n user.layer -v one "$l1/keep/text"
	chown 123:456 "$l1/keep/deep"
	mkfs -Enoinline_data "$T/L1" "$l1"
	aufs_layer
	mkfs --tar=f --aufs -Enoinline_data "$T/L2" "$T/layer.tar"
	head -c 200000 /dev/urandom > "$l3/new/a"
	cp "$l3/new/a" "$l3/new/b"
	seq 5 5000 > "$l3/keep/text"
	echo added > "$l3/keep/added"
	mkfs --chunksize=8192 -Enoinline_data "$T/L3" "$l3"
	for n in 1 2 3; do
		mount_erofs "$T/L$n" "$T/m$n"
	done
	mkdir -p "$T/ov"
	mount -t overlay overlay -o "lowerdir=$T/m3:$T/m2:$T/m1" "$T/ov" ||
		fail "overlayfs refused the layers"
	echo "$T/ov" >> "$T/.mounts"
}

test_layers_merge() {
	need_root
	local n
	layers_make
	mkfs --ovlfs-strip=1 --workers=1 "$T/merged" "$T/L1" "$T/L2" "$T/L3"
	mkfs --ovlfs-strip=1 --workers=3 "$T/merged3" "$T/L1" "$T/L2" "$T/L3"
	cmp "$T/merged" "$T/merged3" || fail "differs by workers"
	[ "$(stat -c %s "$T/merged")" -le 16384 ] || fail "merged image holds data?"
	cat "$T/merged" "$T/L1" "$T/L2" "$T/L3" > "$T/one"
	mount_erofs "$T/one" "$T/mm"
	$TREECMP "$T/ov" "$T/mm" || fail "merged image differs from overlayfs"
	umount "$T/mm"
	extract_cmp "$T/one" "$T/ov"
	# the layers as devices, the merged image alone
	mount_devices "$T/merged" "$T/md" "$T/L1" "$T/L2" "$T/L3"
	$TREECMP "$T/ov" "$T/md" || fail "merged image (devices) differs"
	umount "$T/md"
	# and our fsck so, with --device; layers out of order are refused
	# (each is tagged with its uuid), not read as each other's data
	extract_cmp "$T/merged" "$T/ov" --device="$T/L1" --device="$T/L2" \
		--device="$T/L3"
	assert_rc 8 "$T/err" "$BIN/fsck.erofs" --device="$T/L2" \
		--device="$T/L1" --device="$T/L3" "$T/merged"
	assert_lines 1 "$T/err"
	assert_grep "uuid" "$T/err"
	# a merge of merges points at the first layers, not at the merge
	mkfs --ovlfs-strip=1 "$T/m12" "$T/L1" "$T/L2"
	mkfs --ovlfs-strip=1 "$T/m123" "$T/m12" "$T/L3"
	mount_devices "$T/m123" "$T/md" "$T/L1" "$T/L2" "$T/L3"
	$TREECMP "$T/ov" "$T/md" || fail "merge of a merge differs"
	umount "$T/md"
	# its device table has a slot for each layer brought, not for each
	# layer given: the long prefixes after it stay whole
	mkfs --ovlfs-strip=1 --xattr-prefix=user.lay "$T/m123" "$T/m12" "$T/L3"
	mount_devices "$T/m123" "$T/md" "$T/L1" "$T/L2" "$T/L3"
	$TREECMP "$T/ov" "$T/md" || fail "merge of a merge, prefixes, differs"
	umount "$T/md"
	# and a table longer than the first block: a merge of 40 layers
	# merged again (it overran the head's block)
	local wide=() k
	for k in $(seq 40); do
		mkdir -p "$T/w$k/d$k"
		echo "$k" > "$T/w$k/d$k/f"
		mkfs -Enoinline_data "$T/W$k" "$T/w$k"
		wide+=("$T/W$k")
	done
	mkfs "$T/wide" "${wide[@]}"
	mkfs "$T/ww" "$T/wide"
	cat "$T/ww" "${wide[@]}" > "$T/one"
	mount_erofs "$T/one" "$T/mw"
	[ "$(cat "$T/mw/d1/f" "$T/mw/d40/f" | tr '\n' ' ')" = "1 40 " ] ||
		fail "a merge of 40 merged layers reads wrong"
	umount "$T/mw"
	# unstripped, the marks stay: overlayfs reads it as the same tree
	mkfs "$T/merged" "$T/L1" "$T/L2" "$T/L3"
	cat "$T/merged" "$T/L1" "$T/L2" "$T/L3" > "$T/one"
	mount_erofs "$T/one" "$T/mm"
	[ "$(stat -c '%F %t:%T' "$T/mm/e/x")" = "character special file 0:0" ] ||
		fail "e/x is not a whiteout"
	mkdir -p "$T/empty" "$T/ov2"
	mount -t overlay overlay -o "lowerdir=$T/mm:$T/empty" "$T/ov2" ||
		fail "overlayfs refused the merged image"
	echo "$T/ov2" >> "$T/.mounts"
	$TREECMP "$T/ov" "$T/ov2" || fail "merged image as a layer differs"
}

# --clean=data: the layers' data copied in, so the merged image stands
# alone. Layers of any layout: compressed with fragments and inline
# tails; --aufs, compressed and deduplicated; chunk-based with holes and
# 1 KiB blocks; a tar index with its tar appended (512-byte blocks); a big
# file all in the packed inode (-E all-fragments). The
# merge is written plain, compressed, or chunk-based, each compared with
# overlayfs over the layers. A layer that does not decode fails the build
# with one line naming it and the file, also through --chunksize (where
# such a chunk was once taken for a hole, and the build passed).
test_layers_clean_data() {
	need_root
	local opts n l1=$T/l1 l3=$T/l3
	mkdir -p "$l1/d" "$l1/keep/deep" "$l3/keep" "$l3/new"
	for n in $(seq 1 40); do seq "$n" 3000 > "$l1/d/s$n"; done
	seq 1 100000 > "$l1/keep/text"
	head -c 300000 /dev/urandom > "$l1/keep/deep/noise"
	ln "$l1/keep/deep/noise" "$l1/keep/noise-link"
	ln -s keep/text "$l1/link"
	truncate -s 2M "$l1/sparse"
	echo mid | dd of="$l1/sparse" bs=1 seek=1000000 conv=notrunc status=none
	mkfifo "$l1/fifo"
	setfattr -n user.layer -v one "$l1/keep/text"
	mkfs -zlz4hc -Efragments "$T/L1" "$l1"
	aufs_layer
	mkfs --tar=f --aufs -zzstd -Ededupe "$T/L2" "$T/layer.tar"
	head -c 200000 /dev/urandom > "$l3/new/a"
	cp "$l3/new/a" "$l3/new/b"
	seq 5 50000 > "$l3/keep/text"
	truncate -s 1M "$l3/new/hole"
	mkfs -b 1024 --chunksize=8192 "$T/L3" "$l3"
	tar -C "$l3" -cf "$T/l4.tar" new
	mkfs --tar=i "$T/i4" "$T/l4.tar"
	cat "$T/i4" "$T/l4.tar" > "$T/L4"
	# a file of 20 MiB all in the packed inode: the workers' segments
	# and fragment pieces read it from the middle, past 16 MiB
	mkdir -p "$T/l5/big"
	seq 1 2800000 > "$T/l5/big/seq"
	mkfs -zlz4 -Eall-fragments "$T/L5" "$T/l5"
	for n in 1 2 3 4 5; do
		mount_erofs "$T/L$n" "$T/m$n"
	done
	mkdir -p "$T/ov"
	mount -t overlay overlay -o "lowerdir=$T/m5:$T/m4:$T/m3:$T/m2:$T/m1" "$T/ov" ||
		fail "overlayfs refused the layers"
	echo "$T/ov" >> "$T/.mounts"
	for opts in "" "-zlz4hc -Efragments,dedupe" "-zlzma -b 1024" \
		    "--chunksize=4096 -Ededupe"; do
		# shellcheck disable=SC2086
		mkfs --clean=data --ovlfs-strip=1 --workers=1 $opts \
			"$T/merged" "$T/L1" "$T/L2" "$T/L3" "$T/L4" "$T/L5"
		# shellcheck disable=SC2086
		mkfs --clean=data --ovlfs-strip=1 --workers=3 $opts \
			"$T/merged3" "$T/L1" "$T/L2" "$T/L3" "$T/L4" "$T/L5"
		cmp "$T/merged" "$T/merged3" || fail "$opts: differs by workers"
		"$BIN/dump.erofs" -s "$T/merged" > "$T/sb"
		if grep -q "extra devices" "$T/sb"; then
			fail "$opts: the merge still points at its layers"
		fi
		mount_erofs "$T/merged" "$T/mm"
		$TREECMP "$T/ov" "$T/mm" || fail "$opts: differs from overlayfs"
		umount "$T/mm"
	done
	extract_cmp "$T/merged" "$T/ov"
	# keep/text's fourth pcluster in L1, made undecodable
	cp "$T/L1" "$T/bad"
	"$BIN/dump.erofs" --path=/keep/text -e "$T/bad" > "$T/ext"
	n=$(awk '$1 == "3:" {sub(/\.\./, "", $7); print $7}' "$T/ext")
	[ -n "$n" ] || fail "no fourth extent: $(cat "$T/ext")"
	python3 -c "import sys; f = open(sys.argv[1], 'r+b'); f.seek(int(sys.argv[2])); f.write(b'\xff' * 4096)" "$T/bad" "$n"
	for opts in "" "-zlz4" "--chunksize=4096"; do
		# shellcheck disable=SC2086
		expect_error "bad: keep/text: lz4 pcluster" "$T/img" \
			"$BIN/mkfs.erofs" --quiet --clean=data $opts "$T/img" \
			"$T/bad" "$T/L2"
	done
	# without its tar, a tar index has no data to copy
	expect_error "i4: device 1 is not appended" "$T/img" \
		"$BIN/mkfs.erofs" --quiet --clean=data "$T/img" "$T/L1" "$T/i4"
}

# Refused, one line, no image: layers whose data is not where a chunk
# index can point (compressed, inline tails), mixed block sizes, a tar
# index as a layer, options that would rewrite data, a missing layer.
test_layers_bad() {
	local a t
	mkdir -p "$T/src"
	seq 1 3000 > "$T/src/f"
	mkfs -Enoinline_data "$T/ok" "$T/src"
	mkfs -zlz4 "$T/zip" "$T/src"
	mkfs "$T/inline" "$T/src"
	mkfs -b 1024 -Enoinline_data "$T/b1k" "$T/src"
	tar -C "$T/src" -cf "$T/s.tar" .
	for t in "ok zip" "ok inline" "ok b1k" "ok missing"; do
		# shellcheck disable=SC2046
		if "$BIN/mkfs.erofs" --quiet "$T/img" $(printf "$T/%s " $t) 2> "$T/err"; then
			fail "$t: accepted"
		fi
		[ "$(wc -l < "$T/err")" = 1 ] || fail "$t: $(cat "$T/err")"
		[ ! -e "$T/img" ] || fail "$t: left an image"
	done
	for a in -zlz4 --chunksize=4096 -Ededupe "-b 512" --clean=rvsp \
		 --incremental=data; do
		# shellcheck disable=SC2086
		if "$BIN/mkfs.erofs" --quiet $a "$T/img" "$T/ok" "$T/ok" 2> "$T/err"; then
			fail "$a: accepted"
		fi
		[ "$(wc -l < "$T/err")" = 1 ] || fail "$a: $(cat "$T/err")"
	done
}

# Device addresses are 32 bits of blocks: two layers of nearly 2^32 blocks
# each (sparse files of 2 TiB, 512-byte blocks) cannot both be appended,
# and the merge must say so rather than write an address that wrapped.
test_layers_past_2p32_blocks() {
	mkdir -p "$T/src"
	seq 1 3000 > "$T/src/f"
	mkfs -b 512 -Enoinline_data -Enosbcrc "$T/l1" "$T/src"
	python3 - "$T/l1" <<-'PY'
	import struct, sys
	blocks = 0xFFFFFFF0
	with open(sys.argv[1], "r+b") as f:
	    f.seek(1024 + 0x24)
	    f.write(struct.pack("<I", blocks))
	    f.truncate(blocks * 512)
	PY
	cp --sparse=always "$T/l1" "$T/l2"
	"$BIN/mkfs.erofs" --quiet "$T/one" "$T/l1" ||
		fail "one layer of 2^32 - 16 blocks refused"
	expect_error "device 2 ends past 2^32 blocks" "$T/img" \
		"$BIN/mkfs.erofs" --quiet "$T/img" "$T/l1" "$T/l2"
}

# containerd's tar index layers (--tar=i, 512-byte blocks): the merge
# points at each layer's tar, not at the index, so it mounts over the
# tars alone; compared with overlayfs over the two indexes, each mounted
# with its tar appended.
test_layers_tar_index() {
	need_root
	aufs_layer
	tar -C "$T/base" -cf "$T/base.tar" .
	mkfs --tar=i "$T/i1" "$T/base.tar"
	mkfs --tar=i --aufs "$T/i2" "$T/layer.tar"
	cat "$T/i1" "$T/base.tar" > "$T/one1"
	cat "$T/i2" "$T/layer.tar" > "$T/one2"
	mount_erofs "$T/one1" "$T/m1"
	mount_erofs "$T/one2" "$T/m2"
	mkdir -p "$T/ov"
	mount -t overlay overlay -o "lowerdir=$T/m2:$T/m1" "$T/ov" ||
		fail "overlayfs refused the tar index layers"
	echo "$T/ov" >> "$T/.mounts"
	mkfs --ovlfs-strip=1 --workers=1 "$T/merged" "$T/i1" "$T/i2"
	mkfs --ovlfs-strip=1 --workers=3 "$T/merged3" "$T/i1" "$T/i2"
	cmp "$T/merged" "$T/merged3" || fail "differs by workers"
	mount_devices "$T/merged" "$T/md" "$T/base.tar" "$T/layer.tar"
	$TREECMP "$T/ov" "$T/md" || fail "merged tar indexes differ"
	umount "$T/md"
	# appended, each tar cut to its device's blocks (a tar is padded
	# past its end marker), as dump.erofs -s lists them
	"$BIN/dump.erofs" -s "$T/merged" > "$T/sb"
	assert_grep "extra devices: *2" "$T/sb"
	local n1 n2
	n1=$(awk '/device 1:/ {print $3}' "$T/sb")
	n2=$(awk '/device 2:/ {print $3}' "$T/sb")
	{ cat "$T/merged"; head -c $((n1 * 512)) "$T/base.tar"
	  head -c $((n2 * 512)) "$T/layer.tar"; } > "$T/one"
	mount_erofs "$T/one" "$T/mm"
	$TREECMP "$T/ov" "$T/mm" || fail "merged tar indexes (appended) differ"
	umount "$T/mm"
	extract_cmp "$T/merged" "$T/ov" --device="$T/base.tar" \
		--device="$T/layer.tar"
	# a tar index and a 4 KiB layer do not share a block size
	mkfs -Enoinline_data "$T/plain" "$T/base"
	if "$BIN/mkfs.erofs" --quiet "$T/img" "$T/i1" "$T/plain" 2> "$T/err"; then
		fail "mixed block sizes accepted"
	fi
	assert_lines 1 "$T/err"
}

# --clean=data: a layer image touched while its data is copied fails the
# build with one line naming the layer (not the file inside it).
test_layers_clean_data_changing() {
	mkdir -p "$T/l"
	head -c 16M /dev/zero | tr '\0' x > "$T/l/big"
	mkfs -Enoinline_data "$T/L" "$T/l"
	( while :; do touch "$T/L"; done ) &
	pid=$!
	sleep 0.2
	expect_error "/L: file changed while being read" "$T/img" \
		"$BIN/mkfs.erofs" --quiet --clean=data "$T/img" "$T/L"
	kill $pid
}

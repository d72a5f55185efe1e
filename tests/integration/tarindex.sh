# mkfs.erofs --tar=i, as containerd's erofs snapshotter runs it: an index
# of the tar (512-byte blocks), whose files point into the tar. The
# kernel is the oracle both ways it is used: the tar appended to the
# index and mounted as one file, and the index mounted with -o device=
# naming the tar. What it shows must be what --tar=f of the same tar
# shows (itself compared with `tar -xp`), and our fsck must extract it.

# tarindex_same TARFILE: --tar=i of TARFILE, from the file, a redirect
# and a pipe alike, gives what --tar=f of it gives; sets $T/one (index
# and tar) and $T/idx (the index).
tarindex_same() {
	mkfs --tar=i --workers=1 "$T/idx" "$1"
	mkfs --tar=i --workers=3 "$T/idx2" < "$1"
	cmp "$T/idx" "$T/idx2" || fail "differs on stdin or by workers"
	cat "$1" | mkfs --tar=i "$T/idx2"
	cmp "$T/idx" "$T/idx2" || fail "differs from a pipe"
	cat "$T/idx" "$1" > "$T/one"
	mkfs --tar=f "$T/full" "$1"
	mount_erofs "$T/full" "$T/mf"
	mount_erofs "$T/one" "$T/mi"
	$TREECMP "$T/mf" "$T/mi" || fail "--tar=i differs from --tar=f"
	umount "$T/mi"
	extract_cmp "$T/one" "$T/mf"
	umount "$T/mf"
}

test_tarindex_roundtrip() {
	need_root
	local fmt a
	tar_tree
	# what the kernel shows is the source (pax keeps xattrs too)
	tar_of "$T/src" pax > "$T/t.tar"
	tarindex_same "$T/t.tar"
	mount_erofs "$T/one" "$T/m"
	$TREECMP "$T/src" "$T/m" || fail "mounted index differs from the source"
	umount "$T/m"
	# the sparse file: its holes are holes, its data is the tar's
	"$BIN/dump.erofs" -e --path=/sparse "$T/one" > "$T/ext" ||
		fail "dump: $(cat "$T/ext")"
	grep -q '0\.\. *0 |' "$T/ext" || fail "no hole in /sparse: $(cat "$T/ext")"
	# the other way: the tar as the device, the index alone
	mount_devices "$T/idx" "$T/md" "$T/t.tar"
	$TREECMP "$T/src" "$T/md" || fail "index with device= differs"
	# and our tools the same way: --device names the tar
	extract_cmp "$T/idx" "$T/md" --device="$T/t.tar"
	"$BIN/dump.erofs" --device="$T/t.tar" --cat --path=/sparse "$T/idx" |
		cmp - "$T/md/sparse" || fail "dump --device --cat differs"
	umount "$T/md"
	# too many devices, or a tar cut short: one line, exit 8
	head -c 4096 "$T/t.tar" > "$T/short.tar"
	for a in "$T/t.tar $T/t.tar" "$T/short.tar"; do
		# shellcheck disable=SC2046
		assert_rc 8 "$T/err" "$BIN/fsck.erofs" \
			$(printf -- "--device=%s " $a) "$T/idx"
		assert_lines 1 "$T/err"
	done
	# the tar is the extra device, as in 1.9.3: its length through the
	# end marker (two zero records after Python's last member)
	[ "$("$BIN/dump.erofs" -s "$T/idx" | awk '/blocks:/ {print $3}')" = \
	  $(( $(stat -c %s "$T/idx") / 512 + $(python3 -c 'import sys, tarfile
t = tarfile.open(sys.argv[1]); t.getmembers(); print(t.offset // 512 + 2)' "$T/t.tar") )) ] ||
		fail "device blocks: $("$BIN/dump.erofs" -s "$T/idx" | grep blocks:)"
	# the index alone holds no file data: fsck says what is missing
	if "$BIN/fsck.erofs" "$T/idx" > "$T/err" 2>&1; then
		fail "fsck passed an index without its tar"
	fi
	grep -q 'append the device' "$T/err" || fail "fsck: $(cat "$T/err")"
	# the shared tree, in both formats: what --tar=f makes of them (tar
	# leaves out the socket, and fifos' hard links)
	cp -a "$TREE" "$T/src/tree"
	for fmt in gnu pax; do
		tar_of "$T/src" $fmt > "$T/t2.tar"
		tarindex_same "$T/t2.tar"
	done
}

# containerd's layers: --tar=i --aufs, whiteouts and opaque marks as
# overlayfs reads them, over a lower layer.
test_tarindex_aufs() {
	need_root
	aufs_layer
	mkfs --tar=i --aufs --quiet "$T/idx" "$T/layer.tar"
	cat "$T/idx" "$T/layer.tar" > "$T/one"
	aufs_check "$T/one"
}

# Refused, one line, no image: a compressed tar (the image would point
# into gzip's bytes), options that change file data, a block size other
# than the tar's 512, sparse runs off 512-byte boundaries (hand-made pax
# sparse 0.1 map: 5 bytes at 100), and modes of erofs-utils left out.
test_tarindex_bad() {
	local a
	mkdir "$T/src"
	echo data > "$T/src/f"
	tar -C "$T/src" -czf "$T/gz.tar" .
	python3 - "$T/sparse.tar" <<-'EOF'
		import io, sys, tarfile
		with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
		    i = tarfile.TarInfo("GNUSparseFile.0/s"); i.size = 5
		    i.pax_headers = {"GNU.sparse.size": "1000", "GNU.sparse.numblocks": "1",
		                     "GNU.sparse.map": "100,5", "GNU.sparse.name": "s"}
		    t.addfile(i, io.BytesIO(b"hello"))
	EOF
	for t in gz sparse; do
		if "$BIN/mkfs.erofs" --quiet --tar=i "$T/img" "$T/$t.tar" 2> "$T/err"; then
			fail "$t.tar accepted"
		fi
		[ "$(wc -l < "$T/err")" = 1 ] || fail "$t.tar: $(cat "$T/err")"
		[ ! -e "$T/img" ] || fail "$t.tar left an image"
	done
	grep -q '512-byte' "$T/err" || fail "sparse: $(cat "$T/err")"
	# the same tar in full: the sparse map read as meant
	mkfs --tar=f "$T/img" "$T/sparse.tar"
	dump --cat --path=/s "$T/img" |
		cmp - <(head -c 100 /dev/zero; printf hello; head -c 895 /dev/zero) ||
		fail "--tar=f read the sparse map differently"
	for a in "--tar=i -zlz4" "--tar=i -b 4096" "--tar=i --chunksize=4096" \
		 "--tar=i -Ededupe" "--tar=i,map" "--tar=headerball"; do
		expect_rejected "$a"
	done
}

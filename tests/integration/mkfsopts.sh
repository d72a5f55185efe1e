# mkfs.erofs options that build systems pass (issue 16): lzma's extreme
# levels are in compress.sh; here -E nosbcrc, -E noinline_data,
# -E force-inode-compact/-extended, --ignore-mtime, the id offsets,
# -x (xattr sharing) and --xattr-prefix.
# Each image is mounted on the running kernel and compared with its
# source (or with what the option promises); each refusal is one line.

# dump_field IMG PATH FIELD: a field of 1.5's inode dump ("Layout: 2" -> 2).
dump_field() {
	oracle_dump --path="$2" "$1" | grep -o "$3: [0-9]*" | head -n 1 |
		sed 's/.*: //'
}

test_opt_nosbcrc() {
	need_root
	roundtrip -E nosbcrc -z lz4
	oracle_dump -s "$T/img" | grep '^Filesystem features:' > "$T/f"
	! grep -q sb_csum "$T/f" || fail "sb_csum still set: $(cat "$T/f")"
	mkfs -z lz4 "$T/with" "$TREE"
	oracle_dump -s "$T/with" | grep -q 'features:.*sb_csum' ||
		fail "the default has no checksum"
}

# Regular files' tails go to blocks; directories and symlinks stay inline.
test_opt_noinline_data() {
	need_root
	local f
	roundtrip -E noinline_data
	f=$(cd "$TREE" && find . -type f -size -4000c -size +0 | head -n 1)
	[ "$(dump_field "$T/img" "${f#.}" Layout)" = 0 ] ||
		fail "$f is not FLAT_PLAIN: $(oracle_dump --path="${f#.}" "$T/img")"
	[ "$(dump_field "$T/img" / Layout)" = 2 ] || fail "/ is not inline"
	mkfs "$T/plain" "$TREE"
	[ "$(dump_field "$T/plain" "${f#.}" Layout)" = 2 ] ||
		fail "$f is not inline by default"
	# the compressed path's flat fallback too
	umount "$T/m"
	roundtrip -E noinline_data -z lz4hc -C 16384
}

test_opt_force_inode_extended() {
	need_root
	local f
	roundtrip -E force-inode-extended
	for f in / /files/size_1; do
		[ "$(dump_field "$T/img" $f "Inode size")" = 64 ] ||
			fail "$f is not extended"
	done
}

test_opt_force_inode_compact() {
	need_root
	local f
	mkdir "$T/src"
	for f in a b c; do echo "$f" > "$T/src/$f"; done
	touch -d @1600000000.5 "$T/src/a"
	touch -d @1700000000 "$T/src/b"
	# an mtime that is not the image's: refused, naming the file...
	assert_rc 1 "$T/out" "$BIN/mkfs.erofs" --quiet -E force-inode-compact \
		"$T/img" "$T/src"
	assert_lines 1 "$T/out"
	assert_grep 'cannot be a compact inode' "$T/out"
	# ...taken with --ignore-mtime (every file shows the image's time)...
	mkfs -E force-inode-compact --ignore-mtime "$T/img" "$T/src"
	mount_erofs "$T/img" "$T/m"
	$TREECMP --no-mtime "$T/src" "$T/m" || fail "content differs"
	[ "$(stat -c %Y "$T/m/a")" = "$(stat -c %Y "$T/m/b")" ] ||
		fail "mtimes kept"
	for f in / /a /b /c; do
		[ "$(dump_field "$T/img" $f "Inode size")" = 32 ] ||
			fail "$f is not compact"
	done
	umount "$T/m"
	# ...or with -T; an owner over 16 bits is refused whatever the time
	mkfs -E force-inode-compact -T 0 "$T/img" "$T/src"
	chown 70000 "$T/src/c"
	assert_rc 1 "$T/out" "$BIN/mkfs.erofs" --quiet -E force-inode-compact \
		-T 0 "$T/img" "$T/src"
	assert_lines 1 "$T/out"
	assert_grep 'over 65535' "$T/out"
}

# --ignore-mtime alone: compact where only the time kept a file extended.
test_opt_ignore_mtime() {
	need_root
	local f
	CMPOPTS=--no-mtime roundtrip --ignore-mtime
	[ "$(dump_field "$T/img" /files/size_1 "Inode size")" = 32 ] ||
		fail "size_1 is not compact"
	f=$(cd "$TREE" && find . -uid 4000000000 -print -quit)
	[ "$(dump_field "$T/img" "${f#.}" "Inode size")" = 64 ] ||
		fail "$f (a 32-bit uid) is not extended"
}

test_opt_id_offsets() {
	need_root
	local a
	mkdir "$T/src"
	echo x > "$T/src/f"
	chown 1000:0 "$T/src/f"
	mkfs --uid-offset=100000 --gid-offset=5 "$T/img" "$T/src"
	mount_erofs "$T/img" "$T/m"
	[ "$(stat -c %u:%g "$T/m/f")" = 101000:5 ] ||
		fail "f is $(stat -c %u:%g "$T/m/f")"
	[ "$(stat -c %u:%g "$T/m")" = 100000:5 ] ||
		fail "/ is $(stat -c %u:%g "$T/m")"
	umount "$T/m"
	# after --force-uid, and never past 32 bits
	mkfs --force-uid=7 --uid-offset=3 "$T/img" "$T/src"
	[ "$(dump_field "$T/img" /f Uid)" = 10 ] || fail "force-uid then offset"
	chown 4294967290 "$T/src/f"
	assert_rc 1 "$T/out" "$BIN/mkfs.erofs" --quiet --uid-offset=10 \
		"$T/img" "$T/src"
	assert_lines 1 "$T/out"
	assert_grep 'over 4294967294' "$T/out"
	# 4294967295 is (uid_t)-1, no id to the kernel: root could not open
	# a 0600 file it owned
	assert_rc 1 "$T/out" "$BIN/mkfs.erofs" --quiet --uid-offset=5 \
		"$T/img" "$T/src"
	assert_grep 'over 4294967294' "$T/out"
	mkfs --force-uid=4294967294 "$T/img" "$T/src"
	mount_erofs "$T/img" "$T/m"
	[ "$(stat -c %u "$T/m/f")" = 4294967294 ] || fail "4294967294 is an id"
	umount "$T/m"
	for a in --uid-offset=-1 --gid-offset=4294967296 --uid-offset=x \
		 --force-uid=4294967295 --force-gid=4294967295; do
		expect_rejected "$a"
	done
}

# -x N: a name/value pair that more than N files carry is shared (each
# inode keeps a 4-byte id: 16 bytes of xattrs), else each inode has its
# own copy (24 bytes here); -x -1 stores no xattrs at all.
test_opt_xattr_tolerance() {
	need_root
	local f x want
	mkdir "$T/src"
	for f in a b c; do
		echo "$f" > "$T/src/$f"
		setfattr -n user.kiln -v same "$T/src/$f"
	done
	for x in "16:" "16:-x 2" "24:-x 3" "24:-x 2147483647"; do
		want=${x%%:*}
		mkfs ${x#*:} "$T/img" "$T/src"
		mount_erofs "$T/img" "$T/m"
		$TREECMP "$T/src" "$T/m" || fail "${x#*:}: tree differs"
		umount "$T/m"
		[ "$(dump_field "$T/img" /a "Xattr size")" = "$want" ] ||
			fail "${x#*:}: $(oracle_dump --path=/a "$T/img")"
	done
	mkfs -x -1 "$T/img" "$T/src"
	mount_erofs "$T/img" "$T/m"
	[ -z "$(getfattr -d -m - "$T/m/a" 2>&1)" ] || fail "-x -1 kept xattrs"
	$TREECMP --no-xattr "$T/src" "$T/m" || fail "-x -1: tree differs"
	for x in "-x abc" "-x 1.5" "-x 2147483648" "-x -2147483649"; do
		expect_rejected "$x"
	done
}

# --xattr-prefix: names that begin with a long prefix store only the rest
# (a table of prefixes after the superblock, or in the packed inode with
# -E fragments, INCOMPAT_XATTR_PREFIXES). The
# kernel and Kiln's fsck must both give back every name; the longest
# prefix that fits is used.
test_opt_xattr_prefix() {
	need_root
	local i p w
	mkdir -p "$T/src/d"
	for i in 1 2 3; do
		echo "$i" > "$T/src/f$i"
		setfattr -n trusted.overlay.metacopy -v "" "$T/src/f$i"
		setfattr -n trusted.overlay.redirect -v "/x$i" "$T/src/f$i"
		setfattr -n user.kiln.note -v "n$i" "$T/src/f$i"
	done
	setfattr -n trusted.overlay.opaque -v y "$T/src/d"
	mkfs --xattr-prefix=trusted. --xattr-prefix=trusted.overlay. \
		--xattr-prefix=user.kiln. "$T/img" "$T/src"
	mkfs "$T/plain" "$T/src"
	mount_erofs "$T/img" "$T/m"
	$TREECMP "$T/src" "$T/m" || fail "the kernel reads other xattrs"
	"$BIN/fsck.erofs" --extract="$T/x" "$T/img" || fail "fsck refused it"
	$TREECMP "$T/src" "$T/x" || fail "fsck extracts other xattrs"
	"$BIN/dump.erofs" -s "$T/img" | grep -q 'features:.*xattr_prefixes' ||
		fail "no xattr_prefixes feature"
	a=$("$BIN/dump.erofs" --path=/f1 "$T/img" | grep -o 'Xattr size: [0-9]*')
	b=$("$BIN/dump.erofs" --path=/f1 "$T/plain" | grep -o 'Xattr size: [0-9]*')
	[ "${a#*: }" -lt "${b#*: }" ] || fail "names not shorter: $a, plain $b"
	# with fragments the table is the packed inode's first bytes, where
	# the kernel reads it then; still the same for any --workers
	for w in 1 3; do
		mkfs -zlz4hc -Efragments --workers=$w --xattr-prefix=trusted.overlay. \
			--xattr-prefix=user.kiln. "$T/frag$w.img" "$T/src"
	done
	cmp "$T/frag1.img" "$T/frag3.img" || fail "fragments: differs by workers"
	mount_erofs "$T/frag1.img" "$T/mf"
	$TREECMP "$T/src" "$T/mf" || fail "fragments: the kernel reads other xattrs"
	rm -rf "$T/x"
	"$BIN/fsck.erofs" --extract="$T/x" "$T/frag1.img" || fail "fsck refused fragments"
	$TREECMP "$T/src" "$T/x" || fail "fragments: fsck extracts other xattrs"
	# a table record that runs wild: one line from fsck, not a crash
	mkfs -E nosbcrc --xattr-prefix=user.kiln. "$T/bad.img" "$T/src"
	python3 - "$T/bad.img" <<-'EOF'
		import struct, sys
		with open(sys.argv[1], "r+b") as f:
		    f.seek(1024 + 0x5c); start, = struct.unpack("<I", f.read(4))
		    f.seek(start * 4); f.write(struct.pack("<H", 0xffff))
	EOF
	assert_rc 4 "$T/out" "$BIN/fsck.erofs" "$T/bad.img"	# corrupt
	assert_lines 1 "$T/out"
	assert_grep 'long xattr prefix 0' "$T/out"
	p=$(for i in $(seq 0 128); do printf -- '--xattr-prefix=user.%s ' "$i"; done)
	for a in "--xattr-prefix=foo." "--xattr-prefix=system.posix_acl_access" \
		 "--xattr-prefix=" "$p"; do
		expect_rejected "$a"
	done
}

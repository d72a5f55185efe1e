# dump.erofs: the superblock, inodes, extents, directory listings and
# statistics agree with Debian's dump.erofs 1.5 on the same image (its
# field names differ in two places: "File :" for "Path :", and an
# "Extent size" it always shows as 0); --cat gives what the kernel reads;
# bad options, missing paths and damaged images get one line and exit 1,
# never a crash.

dump() { "$BIN/dump.erofs" "$@"; }

# 1.5's inode block, in the words ours uses.
oracle_inode() {
	oracle_dump "$@" | sed 's/^File : /Path : /; s/Extent size: 0   //'
}

# dump_images: $T/img0.. from $TREE, as the boards and tests make them;
# 1.5 reads the first three (it knows no 1 KiB blocks: the last is for
# the kernel only).
dump_images() {
	local n=0 opts
	while read -r opts; do
		# shellcheck disable=SC2086
		mkfs $opts "$T/img$n" "$TREE"
		n=$((n + 1))
	done <<-'OPTS'

	-z lz4hc -C 65536
	-z lzma -C 65536 -E ztailpacking
	-b 1024 -z zstd -C 16384
	OPTS
	NIMG=$n
	NORACLE=3
}

# Paths of every kind in $TREE, non-empty (1.5 prints nan% for 0 bytes),
# one per line (names with a newline left out).
dump_sample_paths() {
	(cd "$TREE" && find . -mindepth 1 -size +0 -print0 | tr '\n\0' '\1\n' |
	 grep -v $'\1' | sort | awk 'NR % 7 == 1' | head -n 60 | sed 's|^\.||')
}

test_dump_super() {
	need_root
	local i key ours theirs bs
	dump_images
	for ((i = 0; i < NIMG; i++)); do
		dump -s "$T/img$i" > "$T/ours" || fail "dump -s img$i"
		[ "$i" = 3 ] && bs=1024 || bs=4096	# the -b 1024 image
		grep -q "^Filesystem blocksize: *$bs$" "$T/ours" ||
			fail "img$i: blocksize: $(grep blocksize "$T/ours")"
		[ "$i" -lt "$NORACLE" ] || continue
		dump "$T/img$i" | cmp -s - "$T/ours" || fail "no option is not -s"
		oracle_dump -s "$T/img$i" > "$T/theirs"
		for key in "magic number" blocks "inode metadata start block" \
			   "shared xattr metadata start block" "root nid" \
			   "inode count" UUID; do
			ours=$(grep "^Filesystem $key:" "$T/ours")
			theirs=$(grep "^Filesystem $key:" "$T/theirs")
			[ -n "$ours" ] && [ "$ours" = "$theirs" ] ||
				fail "img$i $key: '$ours', 1.5: '$theirs'"
		done
	done
	# compatible features (sb_csum, mtime here) need no kernel: an older
	# one ignores them and mounts
	mkdir -p "$T/plainsrc"
	echo x > "$T/plainsrc/f"
	"$BIN/mkfs.erofs" --quiet "$T/plain.img" "$T/plainsrc"
	dump -s "$T/plain.img" > "$T/ours"
	assert_grep "compatible features: *sb_csum" "$T/ours"
	! grep -q "kernel version" "$T/ours" ||
		fail "a plain image wants $(grep 'kernel version' "$T/ours")"
	# "." and ".." in --path, as a shell takes them
	mkdir -p "$T/plainsrc/a/b"
	"$BIN/mkfs.erofs" --quiet "$T/plain.img" "$T/plainsrc"
	dump --path=/f "$T/plain.img" > "$T/want"
	local p
	for p in /a/../f /./f /a/b/../../f /../f /a/./b/../../f; do
		dump --path="$p" "$T/plain.img" | cmp -s - "$T/want" ||
			fail "--path=$p is not /f"
	done
	dump --path=/a/. "$T/plain.img" | grep -q "^Path : /a$" ||
		fail "--path=/a/. is not /a"
	assert_rc 1 "$T/out" dump --path=/f/.. "$T/plain.img"
}

test_dump_inodes_extents() {
	need_root
	local i p
	dump_images
	dump_sample_paths > "$T/paths"
	[ "$(wc -l < "$T/paths")" -ge 40 ] || fail "too few sample paths"
	for ((i = 0; i < NORACLE; i++)); do
		while IFS= read -r p; do
			dump --path="$p" -e "$T/img$i" > "$T/ours" ||
				fail "img$i $p: $(cat "$T/ours")"
			oracle_inode --path="$p" -e "$T/img$i" > "$T/theirs"
			diff "$T/theirs" "$T/ours" > "$T/diff" ||
				fail "img$i $p differs from 1.5: $(head -c 900 "$T/diff")"
		done < "$T/paths"
		# the same inode by nid
		p=$(sed -n 's/^NID: \([0-9]*\) .*/\1/p' "$T/ours")
		dump --nid="$p" -e "$T/img$i" | cmp -s - "$T/ours" ||
			fail "img$i: --nid=$p is not --path"
	done
}

test_dump_ls() {
	need_root
	local i d
	dump_images
	for ((i = 0; i < NORACLE; i++)); do
		for d in / /bigdir /deep /acl; do
			[ -d "$TREE$d" ] || continue
			dump --path="$d" --ls "$T/img$i" > "$T/ours" ||
				fail "img$i --ls $d: $(cat "$T/ours")"
			oracle_inode --path="$d" --ls "$T/img$i" > "$T/theirs"
			diff "$T/theirs" "$T/ours" > "$T/diff" ||
				fail "img$i --ls $d differs from 1.5: $(head -c 900 "$T/diff")"
		done
	done
}

test_dump_stats() {
	need_root
	local i
	dump_images
	for ((i = 0; i < NORACLE; i++)); do
		dump -S "$T/img$i" > "$T/ours" || fail "dump -S img$i"
		oracle_dump -S "$T/img$i" > "$T/theirs"
		# 1.5's type table lists .txt twice; the rest is the same
		sed -n '1,/^File type distribution/p' "$T/theirs" > "$T/t"
		sed -n '1,/^File type distribution/p' "$T/ours" > "$T/o"
		diff "$T/t" "$T/o" > "$T/diff" ||
			fail "img$i -S differs from 1.5: $(head -c 900 "$T/diff")"
		grep -q '^Filesystem regular file count:' "$T/ours" ||
			fail "img$i: no counts"
	done
}

# --cat against the kernel: every regular file of three images.
# Every file but most of bigdir's 3000 alike ones (each a run of the tool:
# all of them took minutes under ASan): its odd names stay, and one in 50.
test_dump_cat() {
	need_root
	local i p n
	dump_images
	for i in 0 2 3; do
		mount_erofs "$T/img$i" "$T/m$i"
		n=0
		while IFS= read -r -d '' p; do
			p=${p#.}
			if [[ $p =~ ^/bigdir/[0-9]+_ ]]; then
				n=$((n + 1))
				[ $((n % 50)) = 1 ] || continue
			fi
			dump --cat --path="$p" "$T/img$i" > "$T/c" ||
				fail "img$i --cat $p: $(head -c 300 "$T/c")"
			cmp -s "$T/c" "$T/m$i$p" || fail "img$i --cat $p differs"
		done < <(cd "$T/m$i" && find . -type f -print0)
	done
}

# One line and exit 1 for what cannot be done; never a sanitizer report.
test_dump_errors() {
	local img opts rc
	assert_rc 1 "$T/out" dump --bogus x
	assert_lines 1 "$T/out"
	assert_rc 1 "$T/out" dump "$T/nonexistent.img"
	assert_lines 1 "$T/out"
	assert_rc 1 "$T/out" dump -e tests/damaged/bad-mode.img
	assert_rc 1 "$T/out" dump --cat -s --nid=36 tests/damaged/bad-mode.img
	assert_rc 1 "$T/out" dump --nid=x tests/damaged/bad-mode.img
	for img in tests/damaged/*.img; do
		for opts in -s -S "--nid=36 -e" "--path=/ --ls" "--path=/a/b -e"; do
			# shellcheck disable=SC2086 # stdout may hold a part
			dump $opts "$img" > /dev/null 2> "$T/out" && rc=0 || rc=$?
			[ "$rc" = 0 ] || [ "$rc" = 1 ] ||
				fail "$img $opts: exit $rc: $(head -c 600 "$T/out")"
			assert_lines "$rc" "$T/out"	# 1: the error, 0: none
			! grep -q Sanitizer "$T/out" ||
				fail "$img $opts: $(head -c 900 "$T/out")"
		done
	done
	assert_rc 1 "$T/out" dump --path=/no/such/file tests/damaged/dir-loop.img
	assert_lines 1 "$T/out"
}

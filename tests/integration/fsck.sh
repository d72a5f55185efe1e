# fsck.erofs: checks and extracts our images and Debian's mkfs.erofs 1.5
# ones (extracted trees compared with the source), finds the damage in
# tests/damaged/ with a clear message, gives the same output whatever
# --workers is, never writes outside DIR, and survives the fuzzer.

fsck() { "$BIN/fsck.erofs" "$@"; }

# extract_cmp IMG SRC: fsck --extract at 1 and 2 workers matches SRC.
extract_cmp() {
	for w in 1 2; do
		rm -rf "$T/x"
		fsck --workers=$w --extract="$T/x" "$1" || fail "fsck $1 w$w"
		$TREECMP "$2" "$T/x" || fail "extracted $1 (w$w) differs"
	done
}

test_fsck_roundtrip() {
	need_root
	local opts n=0
	while read -r opts; do
		# shellcheck disable=SC2086
		mkfs $opts "$T/img$n" "$TREE"
		extract_cmp "$T/img$n" "$TREE"
		n=$((n + 1))
	done <<-'OPTS'

	-z lz4
	-z lz4hc -C 65536 -E ztailpacking
	-z zstd -C 16384
	-z lzma -C 65536
	-z deflate -C 262144 -E legacy-compress
	-z zstd -C 65536 -E ztailpacking -E legacy-compress
	-b 1024 -z lz4hc -C 16384 -E ztailpacking
	OPTS
}

# The part of the test tree Debian's mkfs.erofs 1.5 can pack.
tree15() {
	mkdir "$T/t15"
	cp -a "$TREE"/acl "$TREE"/files "$TREE"/hardlinks "$TREE"/modes \
	      "$TREE"/owners "$TREE"/special "$TREE"/xattrs "$TREE"/emptydirs \
	      "$T/t15/"
}

test_fsck_interop_erofs_utils_1_5() {
	need_root
	tree15
	local opts n=0
	while read -r opts; do
		# shellcheck disable=SC2086
		mkfs.erofs $opts "$T/img$n" "$T/t15" >/dev/null 2>&1 ||
			fail "mkfs.erofs 1.5 $opts"
		extract_cmp "$T/img$n" "$T/t15"
		n=$((n + 1))
	done <<-'OPTS'

	-zlz4
	-zlz4hc -C65536
	-zlz4hc -C16384 -Elegacy-compress
	-zlz4 -Eztailpacking
	-zlz4hc,12 -C131072 -Eztailpacking
	--chunksize=8192
	OPTS
}

test_fsck_damaged() {
	local name expect out rc
	while IFS=$'\t' read -r name expect; do
		out=$(fsck "tests/damaged/$name.img" 2>&1) && rc=0 || rc=$?
		[ "$rc" = 1 ] || fail "$name: exit $rc: $out"
		echo "$out" | grep -qE "$expect" || fail "$name: no '$expect' in: $out"
		! echo "$out" | grep -q Sanitizer || fail "$name: $out"
		# with --extract too: same verdict, and nothing crashes
		rm -rf "$T/x"
		fsck --extract="$T/x" "tests/damaged/$name.img" >/dev/null 2>&1 &&
			fail "$name: --extract passed" || [ $? = 1 ]
	done < tests/damaged/expect
}

test_fsck_deterministic() {
	local img
	for img in tests/damaged/type-mismatch.img tests/damaged/dir-loop.img \
		   tests/damaged/truncated.img; do
		fsck --workers=1 "$img" > "$T/o1" 2>&1 || true
		for w in 2 8; do
			fsck --workers=$w "$img" > "$T/o$w" 2>&1 || true
			cmp "$T/o1" "$T/o$w" || fail "$img: output differs at w$w"
		done
	done
}

test_fsck_extract_safety() {
	need_root
	mkdir -p "$T/src/d" "$T/outside"
	echo data > "$T/src/d/file"
	mkfs -z lz4 "$T/img" "$T/src"
	# DIR/d is a symlink out of DIR: never followed, with or without
	# --overwrite
	mkdir "$T/x"
	ln -s "$T/outside" "$T/x/d"
	chmod 0700 "$T/outside"
	touch -d @1000000000 "$T/outside"
	fsck --extract="$T/x" "$T/img" 2> "$T/err" && fail "extract over a symlink"
	grep -q "already exists" "$T/err"
	[ -z "$(ls -A "$T/outside")" ] || fail "wrote outside DIR"
	# nor its metadata: d's mode and mtime belong to DIR/d only
	[ "$(stat -c '%a %Y' "$T/outside")" = "700 1000000000" ] ||
		fail "changed a directory outside DIR"
	fsck --extract="$T/x" --overwrite "$T/img"
	[ -z "$(ls -A "$T/outside")" ] || fail "wrote outside DIR"
	[ -d "$T/x/d" ] && [ ! -L "$T/x/d" ] && [ -f "$T/x/d/file" ]
	# a name with '/' is refused, not followed
	fsck --extract="$T/y" tests/damaged/name-with-slash.img 2> "$T/err" &&
		fail "name with '/' accepted"
	grep -q "contains '/'" "$T/err"
	[ ! -e "$T/y/d/t" ]
	# / only with --force
	fsck --extract=/ "$T/img" 2> "$T/err" && fail "extracted to /"
	grep -q "without --force" "$T/err"
	# existing files only with --overwrite
	fsck --extract="$T/x" "$T/img" 2> "$T/err" && fail "overwrote"
	grep -q "already exists (use --overwrite)" "$T/err"
}

# Holes of a chunk-based image stay holes when extracted.
test_fsck_holes() {
	need_root
	mkdir "$T/src"
	truncate -s 64M "$T/src/sparse"
	echo tail >> "$T/src/sparse"
	mkfs.erofs --chunksize=4096 "$T/img" "$T/src" >/dev/null 2>&1
	fsck --extract="$T/x" "$T/img"
	cmp "$T/src/sparse" "$T/x/sparse"
	[ "$(du -k "$T/x/sparse" | cut -f1)" -lt 1024 ] || fail "holes filled"
}

# Sizes that would overflow or cost unbounded memory if trusted: a file of
# petabytes of holes is checked in a few extents, a size past 2^63 refused.
test_fsck_hostile_sizes() {
	mkdir "$T/src"
	truncate -s 64M "$T/src/sparse"
	echo tail >> "$T/src/sparse"
	touch -d @1000000000 "$T/src/sparse"	# extended inode: own mtime
	mkfs.erofs --chunksize=4096 "$T/img" "$T/src" >/dev/null 2>&1
	cp "$T/img" "$T/huge"
	python3 tests/lib/patchimg.py "$T/img" sparse giant-holes
	python3 tests/lib/patchimg.py "$T/huge" sparse huge-size
	# bounded: the old reader wanted 2^34 extents here
	( [ "$BUILD" = asan ] || ulimit -v 1048576; fsck "$T/img" ) > "$T/out" \
		2>&1 || { cat "$T/out"; fail "giant holes not checked"; }
	fsck "$T/huge" > "$T/out" 2>&1 && fail "size past 2^63 accepted"
	grep -q "not a file size" "$T/out" || { cat "$T/out"; fail "message"; }
}

test_fsck_cli() {
	mkdir "$T/src"
	mkfs "$T/img" "$T/src"
	fsck --help | grep -q '^Usage: fsck.erofs'
	fsck --version | grep -q kiln
	fsck -p "$T/img" | grep -q 'Compression ratio'
	local args
	for args in "" "--workers=0 $T/img" "--overwrite $T/img" \
		    "--extract $T/img $T/img" "-d 12 $T/img" "--bogus $T/img"; do
		# shellcheck disable=SC2086
		fsck $args > "$T/out" 2>&1 && fail "accepted: $args"
		[ "$(wc -l < "$T/out")" -le 30 ] || fail "noisy: $args"
	done
	fsck "$T/missing" 2> "$T/err" && fail "missing image accepted"
	[ "$(wc -l < "$T/err")" = 1 ] && grep -q "cannot open" "$T/err"
	head -c 100 /dev/zero > "$T/tiny"
	fsck "$T/tiny" 2> "$T/err" && fail "tiny image accepted"
	[ "$(wc -l < "$T/err")" = 1 ]
}

# libFuzzer over the whole check, seeded with small images of every kind.
once_fuzz_fsck() {
	tests/lib/mkseeds.sh "$BIN/mkfs.erofs" "$T/corpus"
	cp tests/damaged/*.img "$T/corpus/"
	cd "$T"
	"$OLDPWD/out/fuzz/fuzz_fsck" -max_total_time="${FUZZ_TIME:-60}" \
		-max_len=40000 -timeout=20 -rss_limit_mb=2048 \
		-print_final_stats=1 corpus
}

# The static aarch64 fsck.erofs (the device's) under qemu-user: same verdict
# and same extracted tree.
once_fsck_aarch64() {
	need_root
	file out/aarch64/bin/fsck.erofs | grep -q 'ARM aarch64.*statically linked'
	out/x86_64/bin/mkfs.erofs --quiet -z lz4hc -C 65536 -E ztailpacking \
		"$T/img" "$TREE"
	qemu-aarch64-static out/aarch64/bin/fsck.erofs --extract="$T/x" "$T/img"
	$TREECMP "$TREE" "$T/x"
	qemu-aarch64-static out/aarch64/bin/fsck.erofs \
		tests/damaged/pcluster-garbage.img 2>&1 | grep -q "does not decode"
}

# A full disk stops the extraction with one message; the check goes on.
test_fsck_full_disk() {
	need_root
	mkfs -z lz4 "$T/img" "$TREE"
	mkdir "$T/small"
	mount -t tmpfs -o size=1m tmpfs "$T/small"
	echo "$T/small" >> "$T/.mounts"
	fsck --extract="$T/small/x" "$T/img" 2> "$T/err" && fail "no error"
	grep -q "No space left on device (extraction stopped)" "$T/err"
	[ "$(wc -l < "$T/err")" = 2 ] || { cat "$T/err"; fail "not one message"; }
}

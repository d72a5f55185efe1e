# mkfs.erofs integration tests: images are checked by the running kernel
# (mount + treecmp against the source), by Debian's erofs-utils 1.5
# (fsck.erofs, dump.erofs) and byte-for-byte against each other.
# $BIN is the build under test, $TREE a tree made by tests/lib/mktree.sh.

MKTREE=tests/lib/mktree.sh
TREECMP="python3 tests/lib/treecmp.py"

mkfs() { "$BIN/mkfs.erofs" --quiet "$@"; }

# Builds $TREE with OPTIONS, mounts it and compares it with the source.
roundtrip() {
	mkfs "$@" "$T/img" "$TREE"
	mount_erofs "$T/img" "$T/m"
	$TREECMP ${CMPOPTS:-} "$TREE" "$T/m"
	fsck.erofs "$T/img"
	fsck.erofs --extract "$T/img"	# reads every byte of data
}

test_roundtrip_default() {
	need_root
	roundtrip
}

test_roundtrip_fixed_time() {
	need_root
	CMPOPTS=--no-mtime roundtrip -T 1700000000
	# every inode now has one mtime: they all fit compact inodes...
	[ -z "$(find "$T/m" ! -newermt @1699999999 -print -quit)" ]
	[ -z "$(find "$T/m" -newermt @1700000000 -print -quit)" ]
	[ "$(stat -c %Y "$T/m/files/size_1")" = 1700000000 ]
	dump.erofs --path=/files/size_1 "$T/img" | grep -q 'Inode size: 32'
	# ...except where owner or size do not fit 16/32 bits
	f=$(cd "$TREE" && find . -uid 4000000000 -print -quit)
	[ -n "$f" ] && dump.erofs --path="${f#.}" "$T/img" | grep -q 'Inode size: 64'
}

# Debian's fsck.erofs 1.5 reads 4 KiB blocks only ("blksize 1024 isn't
# supported on this platform"), so the kernel alone judges these images.
test_roundtrip_small_blocks() {
	need_root
	for b in 512 1024 2048; do
		mkfs -b "$b" "$T/img$b" "$TREE"
		mount_erofs "$T/img$b" "$T/m$b"
		$TREECMP "$TREE" "$T/m$b"
	done
}

# sparse_5g FILE: 5 GiB + 123 bytes, mostly holes, with data at the start,
# across the 4 GiB line and at the very end.
sparse_5g() {
	local g=$((1024 * 1024 * 1024))
	truncate -s $((5 * g + 123)) "$1"
	printf 'start' | dd of="$1" conv=notrunc status=none
	printf 'across4G' | dd of="$1" bs=1 seek=$((4 * g - 3)) conv=notrunc status=none
	printf 'end' | dd of="$1" bs=1 seek=$((5 * g + 120)) conv=notrunc status=none
}

# 5 GiB sparse file: extended inode, 64-bit size, holes read as zeros.
test_large_sparse_file() {
	need_root
	mkdir "$T/src"
	sparse_5g "$T/src/sparse"
	mkfs "$T/img" "$T/src"
	# the image stays sparse too: far less than 5 GiB on disk
	[ "$(du -k "$T/img" | cut -f1)" -lt 1024 ]
	mount_erofs "$T/img" "$T/m"
	$TREECMP "$T/src" "$T/m"
	fsck.erofs "$T/img"
	dump.erofs --path=/sparse "$T/img" | grep -q 'Inode size: 64'
}

test_deterministic() {
	need_root
	mkfs "$T/a" "$TREE"
	mkfs "$T/b" "$TREE"
	cmp "$T/a" "$T/b"
	# a copy has other inode numbers and readdir order: same image
	cp -a "$TREE" "$T/copy"
	mkfs "$T/c" "$T/copy"
	cmp "$T/a" "$T/c"
	SOURCE_DATE_EPOCH=1600000000 mkfs "$T/d" "$TREE"
	mkfs -T 1600000000 "$T/e" "$TREE"
	cmp "$T/d" "$T/e"
	! cmp -s "$T/a" "$T/d"
}

sb_field() {	# sb_field IMG OFFSET LEN: hex bytes of the superblock
	od -An -tx1 -j $((1024 + $2)) -N "$3" "$1" | tr -d ' \n'
}

test_options() {
	need_root
	mkfs -U 01234567-89ab-cdef-0123-456789abcdef -L kiln-root "$T/img" "$TREE"
	[ "$(sb_field "$T/img" 48 16)" = 0123456789abcdef0123456789abcdef ]
	[ "$(sb_field "$T/img" 64 10)" = "$(printf kiln-root | od -An -tx1 | tr -d ' \n')00" ]
	dump.erofs -s "$T/img" | grep -q 'UUID: *01234567-89ab-cdef-0123-456789abcdef'
	mkfs -U clear "$T/img2" "$TREE"
	[ "$(sb_field "$T/img2" 48 16)" = 00000000000000000000000000000000 ]
	mkfs -U random "$T/r1" "$TREE"
	mkfs -U random "$T/r2" "$TREE"
	[ "$(sb_field "$T/r1" 48 16)" != "$(sb_field "$T/r2" 48 16)" ]

	mkfs --all-root "$T/root" "$TREE"
	mount_erofs "$T/root" "$T/mr"
	[ -z "$(find "$T/mr" ! -uid 0 -print -quit)" ]
	[ -z "$(find "$T/mr" ! -gid 0 -print -quit)" ]
	mkfs --force-uid=1234 --force-gid=99999 "$T/own" "$TREE"
	mount_erofs "$T/own" "$T/mo"
	[ -z "$(find "$T/mo" ! -uid 1234 -print -quit)" ]
	[ -z "$(find "$T/mo" ! -gid 99999 -print -quit)" ]
	$TREECMP --no-owner "$TREE" "$T/mo"

	mkfs --exclude-path=files/size_1 --exclude-path=/links/ \
	     --exclude-regex='^bigdir/.*7$' "$T/ex" "$TREE"
	mount_erofs "$T/ex" "$T/me"
	[ -e "$T/me/files/size_100" ] && [ ! -e "$T/me/files/size_1" ]
	[ -e "$TREE/links" ] && [ ! -e "$T/me/links" ]
	[ -z "$(find "$T/me/bigdir" -name '*7' -print -quit)" ]
	[ -n "$(find "$T/me/bigdir" -name '*8' -print -quit)" ]
	for img in "$T"/img* "$T"/r? "$T/root" "$T/own" "$T/ex"; do
		fsck.erofs "$img"
	done
}

test_cli() {
	"$BIN/mkfs.erofs" --help | grep -q '^Usage: mkfs.erofs'
	"$BIN/mkfs.erofs" --version | grep -q 'kiln'
	"$BIN/mkfs.erofs" -b 2>&1 | grep -q "missing argument for option '-b'"
	mkdir "$T/src"
	out=$("$BIN/mkfs.erofs" --quiet "$T/img" "$T/src" 2>&1)
	[ -z "$out" ] && [ -f "$T/img" ]
	for args in "--no-such-option" "-b 3000" "-b 8192" "-T yesterday" \
		    "-U not-a-uuid" "-L 0123456789abcdef" "--force-uid=-1" \
		    "--exclude-regex=(" "$T/extra-operand"; do
		expect_rejected "$args"
	done
}

# expect_rejected "OPTIONS": mkfs refuses them with one line, writes nothing.
expect_rejected() {
	# shellcheck disable=SC2086
	if "$BIN/mkfs.erofs" $1 "$T/bad" "$T/src" 2>"$T/err"; then
		fail "accepted: $1"
	fi
	[ "$(wc -l < "$T/err")" = 1 ] || fail "not one line for '$1': $(cat "$T/err")"
	[ ! -e "$T/bad" ]
}

# expect_error PATTERN IMG ARGS...: mkfs fails with one line matching
# PATTERN and leaves nothing at IMG (not even its temporary file).
expect_error() {
	local pat=$1 img=$2; shift 2
	if "$@" 2>"$T/err"; then fail "succeeded: $*"; fi
	cat "$T/err"
	[ "$(wc -l < "$T/err")" = 1 ] || fail "want one line, got: $(cat "$T/err")"
	grep -q -- "$pat" "$T/err" || fail "error does not say '$pat'"
	[ ! -e "$img" ] || fail "$img left behind"
	[ -z "$(ls "$(dirname "$img")" | grep -F "$(basename "$img").tmp")" ] ||
		fail "temporary file left behind"
}

test_bad_input() {
	need_root
	mkdir -p "$T/out" "$T/src"
	echo data > "$T/src/file"
	expect_error "$T/missing: No such file" "$T/out/img" \
		"$BIN/mkfs.erofs" "$T/out/img" "$T/missing"
	expect_error "not a directory" "$T/out/img" \
		"$BIN/mkfs.erofs" "$T/out/img" "$T/src/file"
	expect_error "$T/nodir/img: No such file" "$T/nodir/img" \
		"$BIN/mkfs.erofs" "$T/nodir/img" "$T/src"

	# unreadable file and directory, for an unprivileged user
	mkdir -p "$T/priv/src/closed" && chmod 755 "$T" "$T/priv" "$T/priv/src"
	echo secret > "$T/priv/src/secret" && chmod 000 "$T/priv/src/secret"
	chown nobody "$T/priv"
	expect_error "secret: Permission denied" "$T/priv/img" \
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$BIN/mkfs.erofs" "$T/priv/img" "$T/priv/src"
	rm "$T/priv/src/secret"; chmod 000 "$T/priv/src/closed"
	expect_error "closed: Permission denied" "$T/priv/img" \
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$BIN/mkfs.erofs" "$T/priv/img" "$T/priv/src"

	# a full disk: a 1 MiB tmpfs and 3 MiB of data
	mkdir "$T/small" && mount -t tmpfs -o size=1m tmpfs "$T/small"
	echo "$T/small" >> "$T/.mounts"
	head -c 3M /dev/urandom > "$T/src/big"
	expect_error "No space left on device" "$T/small/img" \
		"$BIN/mkfs.erofs" "$T/small/img" "$T/src"
}

test_file_changing_while_read() {
	mkdir "$T/src"
	head -c 64M /dev/zero | tr '\0' x > "$T/src/growing"
	( while :; do echo more >> "$T/src/growing"; done ) &
	pid=$!
	sleep 0.2
	expect_error "growing: file changed while being read" "$T/img" \
		"$BIN/mkfs.erofs" "$T/img" "$T/src" || { kill $pid; exit 1; }
	kill $pid
}

# The aarch64 build, run under qemu-user, writes the very same bytes.
once_aarch64_same_image() {
	file out/x86_64/bin/mkfs.erofs | grep -q 'statically linked'
	file out/aarch64/bin/mkfs.erofs | grep -q 'ARM aarch64.*statically linked'
	qemu-aarch64-static out/aarch64/bin/mkfs.erofs --quiet -T 1 "$T/arm" "$TREE"
	out/x86_64/bin/mkfs.erofs --quiet -T 1 "$T/x86" "$TREE"
	cmp "$T/arm" "$T/x86"
}

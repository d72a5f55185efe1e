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
	oracle_fsck "$T/img"
	oracle_fsck --extract "$T/img"	# reads every byte of data
}

test_roundtrip_default() {
	need_root
	roundtrip
}

test_roundtrip_fixed_time() {
	need_root
	CMPOPTS=--no-mtime roundtrip -T 1700000000
	# every inode now has one mtime: they all fit compact inodes...
	assert [ -z "$(find "$T/m" ! -newermt @1699999999 -print -quit)" ]
	assert [ -z "$(find "$T/m" -newermt @1700000000 -print -quit)" ]
	assert [ "$(stat -c %Y "$T/m/files/size_1")" = 1700000000 ]
	oracle_dump --path=/files/size_1 "$T/img" > "$T/dump"
	assert_grep 'Inode size: 32' "$T/dump"
	# ...except where owner or size do not fit 16/32 bits
	f=$(cd "$TREE" && find . -uid 4000000000 -print -quit)
	assert [ -n "$f" ]
	oracle_dump --path="${f#.}" "$T/img" > "$T/dump"
	assert_grep 'Inode size: 64' "$T/dump"
}

# -T and SOURCE_DATE_EPOCH are decimal: a leading zero is no octal.
test_timestamps_decimal() {
	need_root
	mkdir "$T/src"
	echo x > "$T/src/f"
	mkfs -T 0100 "$T/a" "$T/src"
	SOURCE_DATE_EPOCH=0100 mkfs "$T/b" "$T/src"
	mount_erofs "$T/a" "$T/ma"
	mount_erofs "$T/b" "$T/mb"
	assert [ "$(stat -c %Y "$T/ma/f")" = 100 ]
	assert [ "$(stat -c %Y "$T/mb/f")" = 100 ]
	expect_error "invalid timestamp" "$T/c" "$BIN/mkfs.erofs" -T 0x10 "$T/c" "$T/src"
	SOURCE_DATE_EPOCH=1e9 expect_error "SOURCE_DATE_EPOCH" "$T/c" \
		"$BIN/mkfs.erofs" "$T/c" "$T/src"
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
	assert [ "$(du -k "$T/img" | cut -f1)" -lt 1024 ]
	mount_erofs "$T/img" "$T/m"
	$TREECMP "$T/src" "$T/m"
	oracle_fsck "$T/img"
	oracle_dump --path=/sparse "$T/img" > "$T/dump"
	assert_grep 'Inode size: 64' "$T/dump"
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
	assert_fails cmp -s "$T/a" "$T/d"
}

sb_field() {	# sb_field IMG OFFSET LEN: hex bytes of the superblock
	od -An -tx1 -j $((1024 + $2)) -N "$3" "$1" | tr -d ' \n'
}

test_options() {
	need_root
	mkfs -U 01234567-89ab-cdef-0123-456789abcdef -L kiln-root "$T/img" "$TREE"
	assert [ "$(sb_field "$T/img" 48 16)" = 0123456789abcdef0123456789abcdef ]
	assert [ "$(sb_field "$T/img" 64 10)" = "$(printf kiln-root | od -An -tx1 | tr -d ' \n')00" ]
	oracle_dump -s "$T/img" > "$T/dump"
	assert_grep 'UUID: *01234567-89ab-cdef-0123-456789abcdef' "$T/dump"
	mkfs -U clear "$T/img2" "$TREE"
	assert [ "$(sb_field "$T/img2" 48 16)" = 00000000000000000000000000000000 ]
	mkfs -U random "$T/r1" "$TREE"
	mkfs -U random "$T/r2" "$TREE"
	assert [ "$(sb_field "$T/r1" 48 16)" != "$(sb_field "$T/r2" 48 16)" ]

	mkfs --all-root "$T/root" "$TREE"
	mount_erofs "$T/root" "$T/mr"
	assert [ -z "$(find "$T/mr" ! -uid 0 -print -quit)" ]
	assert [ -z "$(find "$T/mr" ! -gid 0 -print -quit)" ]
	mkfs --force-uid=1234 --force-gid=99999 "$T/own" "$TREE"
	mount_erofs "$T/own" "$T/mo"
	assert [ -z "$(find "$T/mo" ! -uid 1234 -print -quit)" ]
	assert [ -z "$(find "$T/mo" ! -gid 99999 -print -quit)" ]
	$TREECMP --no-owner "$TREE" "$T/mo"

	mkfs --exclude-path=files/size_1 --exclude-path=/hardlinks/ \
	     --exclude-regex='^bigdir/.*7$' "$T/ex" "$TREE"
	mount_erofs "$T/ex" "$T/me"
	assert [ -e "$T/me/files/size_100" ]
	assert [ ! -e "$T/me/files/size_1" ]
	assert [ -e "$TREE/hardlinks" ]
	assert [ ! -e "$T/me/hardlinks" ]
	assert [ -z "$(find "$T/me/bigdir" -name '*7' -print -quit)" ]
	assert [ -n "$(find "$T/me/bigdir" -name '*8' -print -quit)" ]
	for img in "$T"/img* "$T"/r? "$T/root" "$T/own" "$T/ex"; do
		oracle_fsck "$img"
	done
}

test_cli() {
	"$BIN/mkfs.erofs" --help > "$T/out"
	assert_grep '^Usage: mkfs.erofs' "$T/out"
	"$BIN/mkfs.erofs" --version > "$T/out"
	assert_grep 'kiln' "$T/out"
	assert_fails "$BIN/mkfs.erofs" -b 2> "$T/out"
	assert_grep "missing argument for option '-b'" "$T/out"
	mkdir "$T/src"
	out=$("$BIN/mkfs.erofs" --quiet "$T/img" "$T/src" 2>&1)
	assert [ -z "$out" ]
	assert [ -f "$T/img" ]
	for args in "--no-such-option" "-b 3000" "-b 131072" "-T yesterday" \
		    "-T 0x10" "-j 0" "-U not-a-uuid" "-L 0123456789abcdef" \
		    "--force-uid=-1" "--exclude-regex=(" "$T/extra-operand"; do
		expect_rejected "$args"
	done
	# the messages say what is valid
	expect_rejected "-b 3000"
	assert_grep 'a power of two, 512..65536' "$T/err"
	expect_rejected "-C 100 -zlz4"
	assert_grep '512\.\.1048576' "$T/err"
	expect_rejected "-C 6144 -zlz4"
	assert_grep '4096\.\.1048576 in steps of 4096' "$T/err"
	# 2048 blocks do not fit the 11-bit block count of a big pcluster
	expect_rejected "-b 512 -C 1048576 -zlz4"
	assert_grep '512\.\.1048064 in steps of 512' "$T/err"
	# -C without -z means nothing, and dracut always passes it
	"$BIN/mkfs.erofs" --quiet -T 1 "$T/plain" "$T/src"
	"$BIN/mkfs.erofs" --quiet -T 1 -C 65536 "$T/plainc" "$T/src"
	assert cmp "$T/plain" "$T/plainc"
}

# expect_rejected "OPTIONS": mkfs refuses them with one line, writes nothing.
expect_rejected() {
	# shellcheck disable=SC2086
	if "$BIN/mkfs.erofs" $1 "$T/bad" "$T/src" 2>"$T/err"; then
		fail "accepted: $1"
	fi
	[ "$(wc -l < "$T/err")" = 1 ] || fail "not one line for '$1': $(cat "$T/err")"
	[ ! -e "$T/bad" ] || fail "$T/bad written for '$1'"
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
	mkdir -p "$T/priv/src/closed"
	chmod 755 "$T" "$T/priv" "$T/priv/src"
	echo secret > "$T/priv/src/secret"
	chmod 000 "$T/priv/src/secret"
	chown nobody "$T/priv"
	expect_error "secret: Permission denied" "$T/priv/img" \
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$BIN/mkfs.erofs" "$T/priv/img" "$T/priv/src"
	rm "$T/priv/src/secret"; chmod 000 "$T/priv/src/closed"
	expect_error "closed: Permission denied" "$T/priv/img" \
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$BIN/mkfs.erofs" "$T/priv/img" "$T/priv/src"

	# a full disk: a 1 MiB tmpfs and 3 MiB of data
	mkdir "$T/small"
	mount -t tmpfs -o size=1m tmpfs "$T/small"
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
	# the harness kills the writer whatever happens
	expect_error "growing: file changed while being read" "$T/img" \
		"$BIN/mkfs.erofs" "$T/img" "$T/src"
	kill $pid
}

# loopdev FILE SIZE: a loop device over a new FILE, detached when the test ends.
loopdev() {
	truncate -s "$2" "$1"
	local dev
	dev=$(losetup -f --show "$1")
	echo "losetup -d $dev" >> "$T/.cleanup"
	echo "$dev"
}

# A block device (or a symlink to one) is written in place, never replaced
# by a regular file; too small or mounted, it is refused with one line.
test_image_block_device() {
	need_root
	local dev small
	dev=$(loopdev "$T/dev.img" 64M)
	mkfs -zlz4 "$dev" "$TREE"
	assert [ -b "$dev" ]
	mount_erofs "$dev" "$T/m"
	$TREECMP "$TREE" "$T/m"
	expect_error "in use" "$T/none" "$BIN/mkfs.erofs" "$dev" "$TREE"
	umount "$T/m"
	ln -s "$dev" "$T/link"
	mkfs "$T/link" "$TREE"
	assert [ -L "$T/link" ]
	assert [ -b "$dev" ]
	mount_erofs "$T/link" "$T/m2"
	$TREECMP "$TREE" "$T/m2"
	umount "$T/m2"
	# blocks under 4 KiB: compressed data is written from block 1, inside
	# the 4 KiB wiped before the first write, and never wiped again
	mkdir -p "$T/srcb/d"
	seq 1 20000 > "$T/srcb/a"	# its first pcluster at byte 2048,
	for i in $(seq 200); do		# written while these are still walked
		seq "$i" 1000 > "$T/srcb/d/$i"
	done
	mkfs -b 1024 -zlz4 --workers=1 "$dev" "$T/srcb"
	"$BIN/fsck.erofs" "$dev" >/dev/null || fail "-b 1024 on a device"
	mount_erofs "$dev" "$T/m4"
	cmp "$T/srcb/a" "$T/m4/a" || fail "-b 1024 on a device: data differs"
	umount "$T/m4"

	mkdir "$T/src"
	head -c 3M /dev/urandom > "$T/src/noise"
	small=$(loopdev "$T/small.img" 1M)
	expect_error "device of 1048576 bytes is too small" "$T/none" \
		"$BIN/mkfs.erofs" "$small" "$T/src"
	# found too small only while writing (compressed data): no old
	# superblock is left for anyone to trust
	echo tiny > "$T/tiny"
	mkdir "$T/src2"
	cp "$T/tiny" "$T/src2/"
	mkfs "$small" "$T/src2"
	mkdir "$T/m3"
	assert mount -t erofs -o ro "$small" "$T/m3"
	umount "$T/m3"
	expect_error "No space left on device" "$T/none" \
		"$BIN/mkfs.erofs" -zlz4 "$small" "$T/src"
	assert_fails mount -t erofs -o ro "$small" "$T/m3"
}

# Directories and special files other than block devices are refused
# before any work; a symlink IMAGE writes its target.
test_image_targets() {
	need_root
	mkdir "$T/src" "$T/dir"
	echo data > "$T/src/file"
	expect_error "is a directory" "$T/none" "$BIN/mkfs.erofs" "$T/dir" "$T/missing"
	mknod "$T/chr" c 1 3
	expect_error "is a character device" "$T/none" "$BIN/mkfs.erofs" "$T/chr" "$T/src"
	assert [ -c "$T/chr" ]
	mkfifo "$T/fifo"
	expect_error "is a FIFO" "$T/none" "$BIN/mkfs.erofs" "$T/fifo" "$T/src"
	assert [ -p "$T/fifo" ]
	# a symlink to a file, and a dangling one: the target is written
	mkfs -T 1 "$T/ref" "$T/src"
	touch "$T/target"
	ln -s target "$T/link"
	ln -s "$T/new-target" "$T/dangling"
	mkfs -T 1 "$T/link" "$T/src"
	mkfs -T 1 "$T/dangling" "$T/src"
	assert [ -L "$T/link" ]
	assert [ -L "$T/dangling" ]
	assert cmp "$T/ref" "$T/target"
	assert cmp "$T/ref" "$T/new-target"
}

# SOURCE given as a symlink to a directory: the root is that directory.
test_source_symlink() {
	need_root
	ln -s "$TREE" "$T/tree-link"
	mkfs -T 5 "$T/a" "$T/tree-link"
	mkfs -T 5 "$T/b" "$TREE"
	assert cmp "$T/a" "$T/b"
	mount_erofs "$T/a" "$T/m"
	assert [ -d "$T/m/files" ]
}

# IMAGE inside SOURCE: neither the temporary file nor the old image is
# packed, whichever build it is.
test_image_inside_source() {
	need_root
	mkdir "$T/src"
	echo data > "$T/src/file"
	mkfs -T 1 "$T/ref" "$T/src"
	mkfs -T 1 "$T/src/self.img" "$T/src"
	mkfs -T 1 "$T/src/self.img" "$T/src"
	rm "$T/src/self.img"
	mkfs -T 1 "$T/src/self.img" "$T/src"
	assert cmp "$T/ref" "$T/src/self.img"
	mount_erofs "$T/src/self.img" "$T/m"
	assert [ "$(ls -A "$T/m")" = file ]
}

# An existing read-only IMAGE: root overwrites it (its mode stays), as
# erofs-utils does; anyone else gets "Permission denied" and it is untouched.
test_image_read_only() {
	need_root
	mkdir "$T/src"
	echo data > "$T/src/file"
	echo old > "$T/ro"
	chmod 444 "$T/ro"
	mkfs "$T/ro" "$T/src"
	assert [ "$(stat -c %a "$T/ro")" = 444 ]
	mount_erofs "$T/ro" "$T/m"
	chmod 777 "$T"
	echo old > "$T/ro2"
	chmod 444 "$T/ro2"
	chown nobody "$T/ro2"
	chmod 755 "$T/src"
	expect_error "ro2: Permission denied" "$T/none" setpriv --reuid=nobody \
		--regid=nogroup --clear-groups "$BIN/mkfs.erofs" "$T/ro2" "$T/src"
	assert [ "$(cat "$T/ro2")" = old ]
}

# SIGINT, SIGTERM, SIGHUP during a build: no temporary file, no image.
test_signals_remove_temp() {
	mkdir "$T/src"
	head -c 48M /dev/urandom > "$T/src/noise"
	for sig in INT TERM HUP; do
		"$BIN/mkfs.erofs" --quiet -zlzma,9 -j1 "$T/img" "$T/src" &
		pid=$!
		for _ in $(seq 100); do
			ls "$T" | grep -q '^img\.tmp\.' && break
			sleep 0.1
		done
		ls "$T" | grep -q '^img\.tmp\.' || fail "no temporary file seen"
		sleep 0.3
		kill -s "$sig" "$pid"
		rc=0; wait "$pid" || rc=$?
		assert [ "$rc" -gt 128 ]
		assert [ -z "$(ls "$T" | grep '^img')" ]
	done
}

# The aarch64 build, run under qemu-user, writes the very same bytes.
once_aarch64_same_image() {
	file out/x86_64/bin/mkfs.erofs > "$T/f"
	assert_grep 'statically linked' "$T/f"
	file out/aarch64/bin/mkfs.erofs > "$T/f"
	assert_grep 'ARM aarch64.*statically linked' "$T/f"
	qemu-aarch64-static out/aarch64/bin/mkfs.erofs --quiet -T 1 "$T/arm" "$TREE"
	out/x86_64/bin/mkfs.erofs --quiet -T 1 "$T/x86" "$TREE"
	assert cmp "$T/arm" "$T/x86"
	# every compressor, big pclusters, both index formats, 2 workers
	for z in "lz4hc -E ztailpacking" "zstd -E legacy-compress" "lzma" \
		 "deflate"; do
		# shellcheck disable=SC2086 # z is words
		qemu-aarch64-static out/aarch64/bin/mkfs.erofs --quiet -T 1 -j2 \
			-C 65536 -z$z "$T/arm" "$TREE/files"
		# shellcheck disable=SC2086
		out/x86_64/bin/mkfs.erofs --quiet -T 1 -C 65536 -z$z "$T/x86" \
			"$TREE/files"
		cmp "$T/arm" "$T/x86" || fail "aarch64 and x86_64 differ: -z$z"
	done
}

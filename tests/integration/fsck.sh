# fsck.erofs: checks and extracts our images and Debian's mkfs.erofs 1.5
# ones (extracted trees compared with the source), finds the damage in
# tests/damaged/ with a clear message, gives the same output and the same
# extracted tree whatever --workers is, never writes outside DIR, keeps its
# memory bounded whatever an index says, exits as fsck(8) says, and
# survives the fuzzer.

fsck() { "$BIN/fsck.erofs" "$@"; }

# run_rc OUT CMD...: runs CMD with stdout and stderr in OUT; prints its
# exit status (under set -e a failing command would end the test).
run_rc() {
	local out=$1; shift
	"$@" > "$out" 2>&1 && echo 0 || echo $?
}

# assert_rc WANT OUT CMD...: CMD exits with WANT, its output in OUT.
assert_rc() {
	local want=$1 out=$2 rc; shift 2
	rc=$(run_rc "$out" "$@")
	[ "$rc" = "$want" ] || fail "exit $rc, not $want: $* : $(head -c 600 "$out")"
}

# assert_lines N FILE: FILE has exactly N lines.
assert_lines() {
	[ "$(wc -l < "$2")" = "$1" ] || fail "not $1 line(s) in $2: $(head -c 600 "$2")"
}

# extract_cmp IMG SRC: fsck --extract at 1 and 2 workers matches SRC.
extract_cmp() {
	local w img=$1 src=$2
	shift 2
	for w in 1 2; do
		rm -rf "$T/x"
		fsck --workers=$w "$@" --extract="$T/x" "$img" ||
			fail "fsck $img w$w"
		$TREECMP "$src" "$T/x" || fail "extracted $img (w$w) differs"
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
		oracle_mkfs $opts "$T/img$n" "$T/t15" >/dev/null 2>&1 ||
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

# Each damaged image: exit 4 (errors left uncorrected) with the expected
# message, checked or extracted.
test_fsck_damaged() {
	local name expect
	while IFS=$'\t' read -r name expect; do
		assert_rc 4 "$T/out" fsck "tests/damaged/$name.img"
		assert_grep "$expect" "$T/out"
		! grep -q Sanitizer "$T/out" || fail "$name: $(cat "$T/out")"
		rm -rf "$T/x"
		assert_rc 4 "$T/out" fsck --extract="$T/x" "tests/damaged/$name.img"
		assert_grep "$expect" "$T/out"
	done < tests/damaged/expect
}

# The extracted tree does not depend on --workers, damaged images included:
# what fails its check is not left behind, whoever made it.
test_fsck_damaged_extract_workers() {
	local img w
	for img in tests/damaged/*.img; do
		for w in 1 2 8; do
			rm -rf "$T/x$w"
			fsck -j $w --extract="$T/x$w" "$img" > "$T/out" 2>&1 || true
			! grep -q Sanitizer "$T/out" || fail "$img: $(cat "$T/out")"
			mkdir -p "$T/x$w"
			(cd "$T/x$w" && find . -printf '%p %y %s %m %n\n' | sort) \
				> "$T/ls$w"
		done
		for w in 2 8; do
			cmp -s "$T/ls1" "$T/ls$w" ||
				fail "$img: -j1 and -j$w trees differ: $(diff "$T/ls1" "$T/ls$w")"
		done
	done
}

test_fsck_deterministic() {
	local img w
	for img in tests/damaged/type-mismatch.img tests/damaged/dir-loop.img \
		   tests/damaged/truncated.img tests/damaged/pcluster-garbage.img; do
		fsck --workers=1 "$img" > "$T/o1" 2>&1 || true
		for w in 2 8; do
			fsck --workers=$w "$img" > "$T/o$w" 2>&1 || true
			cmp -s "$T/o1" "$T/o$w" || fail "$img: output differs at w$w"
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
	assert_rc 8 "$T/err" fsck --extract="$T/x" "$T/img"
	assert_grep "'d' is in the way" "$T/err"
	[ -z "$(ls -A "$T/outside")" ] || fail "wrote outside DIR"
	fsck --extract="$T/x" --overwrite "$T/img" || fail "--overwrite"
	[ -z "$(ls -A "$T/outside")" ] || fail "wrote outside DIR"
	# nor its metadata: d's mode and mtime belong to DIR/d only
	[ "$(stat -c '%a %Y' "$T/outside")" = "700 1000000000" ] ||
		fail "changed a directory outside DIR"
	[ -d "$T/x/d" ] && [ ! -L "$T/x/d" ] && [ -f "$T/x/d/file" ] ||
		fail "DIR/d not replaced by the image's directory"
	# --overwrite into a directory already there, another group's and
	# setgid: the image's owners all the same, not the group it hands on
	mkdir -p "$T/z/d"
	chown 0:12345 "$T/z/d"
	chmod 2775 "$T/z/d"
	fsck --extract="$T/z" --overwrite "$T/img" || fail "--overwrite"
	[ "$(stat -c '%u:%g' "$T/z/d" "$T/z/d/file" | tr '\n' ' ')" = "0:0 0:0 " ] ||
		fail "owners: $(stat -c '%n %u:%g' "$T/z/d" "$T/z/d/file")"
	# a name with '/' is refused, not followed
	assert_rc 4 "$T/err" fsck --extract="$T/y" tests/damaged/name-with-slash.img
	assert_grep "contains '/'" "$T/err"
	[ ! -e "$T/y/d/t" ] || fail "followed a name with '/'"
	# / only with --force
	assert_rc 16 "$T/err" fsck --extract=/ "$T/img"
	assert_grep "without --force" "$T/err"
}

# A non-empty DIR without --overwrite: one line naming what is in the way,
# exit 8, nothing written.
test_fsck_extract_nonempty() {
	mkdir -p "$T/src/b" "$T/x/b"
	echo new > "$T/src/a"
	echo new > "$T/src/b/f"
	echo old > "$T/x/b/f"
	echo old > "$T/x/zz"
	mkfs "$T/img" "$T/src"
	(cd "$T/x" && find . -printf '%p %s %T@\n' | sort) > "$T/before"
	# b is both in the image and in DIR: the first conflict
	assert_rc 8 "$T/err" fsck --extract="$T/x" "$T/img"
	assert_lines 1 "$T/err"
	assert_grep "^fsck.erofs: cannot extract to .*: 'b' is in the way .*--overwrite" "$T/err"
	(cd "$T/x" && find . -printf '%p %s %T@\n' | sort) > "$T/after"
	cmp -s "$T/before" "$T/after" || fail "wrote into DIR: $(diff "$T/before" "$T/after")"
	# nothing the image has, but not empty either: the same
	rm -r "$T/x/b"
	assert_rc 8 "$T/err" fsck -j 2 --extract="$T/x" "$T/img"
	assert_lines 1 "$T/err"
	assert_grep "'zz' is in the way" "$T/err"
	[ ! -e "$T/x/a" ] || fail "wrote into DIR"
	# --overwrite: goes ahead, keeps what the image does not have
	mkdir "$T/x/b" && echo old > "$T/x/b/f"
	fsck --extract="$T/x" --overwrite "$T/img" || fail "--overwrite"
	assert grep -qx new "$T/x/b/f"
	assert grep -qx old "$T/x/zz"
}

# A file made early by its directory's job (2 workers) and swapped before
# it is reopened (FIFO, symlink, hard link to a file outside DIR) is left
# alone: not followed, not blocked on, not written. The swap is made by an
# LD_PRELOAD shim right before the reopening openat(): dynamic build only.
test_fsck_extract_swapped() {
	[ "$BUILD" = asan ] || skip "needs the dynamic (asan) build for LD_PRELOAD"
	mkdir -p "$T/src"
	head -c 100000 /dev/urandom > "$T/src/victim"
	mkfs "$T/img" "$T/src"
	cat > "$T/shim.c" <<-'EOF'
	#define _GNU_SOURCE
	#include <dlfcn.h>
	#include <fcntl.h>
	#include <stdarg.h>
	#include <stdlib.h>
	#include <string.h>
	#include <sys/stat.h>
	#include <unistd.h>
	static int swap(const char *sym, int dfd, const char *name, int flags,
			mode_t mode)
	{
		int (*real)(int, const char *, int, ...) =
			(int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, sym);
		const char *kind = getenv("SWAP_KIND");

		if (kind && !strcmp(name, "victim") && !(flags & O_CREAT) &&
		    (flags & O_ACCMODE) == O_WRONLY) {
			unlinkat(dfd, name, 0);
			if (!strcmp(kind, "fifo"))
				mkfifoat(dfd, name, 0600);
			else if (!strcmp(kind, "symlink"))
				symlinkat(getenv("SWAP_TARGET"), dfd, name);
			else
				linkat(AT_FDCWD, getenv("SWAP_TARGET"), dfd, name, 0);
		}
		return real(dfd, name, flags, mode);
	}
	#define SHIM(sym) int sym(int dfd, const char *name, int flags, ...) \
	{ \
		va_list ap; \
		mode_t mode; \
		va_start(ap, flags); \
		mode = va_arg(ap, mode_t); \
		va_end(ap); \
		return swap(#sym, dfd, name, flags, mode); \
	}
	SHIM(openat)
	SHIM(openat64)
	EOF
	gcc -shared -fPIC -o "$T/shim.so" "$T/shim.c" -ldl
	local kind
	for kind in fifo symlink hardlink; do
		echo secret > "$T/target"
		rm -rf "$T/x"
		assert_rc 8 "$T/err" env LD_PRELOAD="$T/shim.so" \
			ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
			SWAP_KIND=$kind SWAP_TARGET="$T/target" \
			timeout 20 "$BIN/fsck.erofs" -j 2 --extract="$T/x" "$T/img"
		assert_grep "victim: cannot reopen the file \(it was replaced" "$T/err"
		assert grep -qx secret "$T/target"
		case $kind in
		fifo) [ -p "$T/x/victim" ] || fail "the FIFO was removed" ;;
		symlink) [ -L "$T/x/victim" ] || fail "the symlink was removed" ;;
		esac
	done
}

# ACLs extract as the image has them: a directory's default ACL is set
# after its children are made, so they inherit nothing the image does not
# hold; --no-preserve-perms restores no ACL over the umask's mode.
test_fsck_extract_acls() {
	need_root
	mkdir -p "$T/src/d/sub" "$T/src/shut/in"
	echo f > "$T/src/d/f"
	echo a > "$T/src/acl"
	chmod 0674 "$T/src/acl"
	setfacl -m u:1234:rw- "$T/src/acl"
	setfacl -d -m u:1000:rwx "$T/src/d"	# after its children
	echo g > "$T/src/shut/in/g"
	setfacl -m u:1234:r-x "$T/src/shut"
	chmod 0555 "$T/src/shut"
	mkfs -zlz4 "$T/img" "$T/src"
	mount_erofs "$T/img" "$T/m"
	$TREECMP "$T/src" "$T/m" || fail "the mount differs"
	umount "$T/m"
	extract_cmp "$T/img" "$T/src"
	getfacl -cp "$T/x/d/f" 2>/dev/null | grep -q 'user:1000' &&
		fail "d/f inherited d's default ACL"
	rm -rf "$T/x"
	(umask 077 && fsck --extract="$T/x" --no-preserve-perms "$T/img") ||
		fail "fsck --no-preserve-perms"
	[ "$(stat -c %a "$T/x/acl")" = 600 ] ||
		fail "acl is $(stat -c %a "$T/x/acl") with --no-preserve-perms under umask 077"
	getfacl -cp "$T/x/acl" 2>/dev/null | grep -q 'user:1234' &&
		fail "acl's ACL restored with --no-preserve-perms"
	true
}

# Paths up to 4095 bytes (what mkfs takes from a tar, and the kernel
# reads) check clean and extract; fsck once called 4000 "too long".
test_fsck_long_paths() {
	python3 - "$T/t.tar" <<-'EOF'
		import io, sys, tarfile
		with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
		    d = "/".join(["d%03d" % k + "x" * 195 for k in range(20)])
		    name = d + "/" + "f" * (4094 - len(d) - 1)
		    assert len(name) == 4094
		    i = tarfile.TarInfo(name); i.size = 5
		    t.addfile(i, io.BytesIO(b"deep\n"))
	EOF
	"$BIN/mkfs.erofs" --quiet --tar=f "$T/img" "$T/t.tar"
	fsck "$T/img" || fail "a 4094-byte path is not clean"
	mkdir "$T/x"
	fsck --extract="$T/x" "$T/img" || fail "a 4094-byte path does not extract"
	[ "$(cd "$T/x" && find . -type f -execdir cat {} \;)" = deep ] ||
		fail "the deep file reads otherwise"
}

# Holes of a chunk-based image stay holes when extracted.
test_fsck_holes() {
	need_root
	mkdir "$T/src"
	truncate -s 64M "$T/src/sparse"
	echo tail >> "$T/src/sparse"
	oracle_mkfs --chunksize=4096 "$T/img" "$T/src" >/dev/null 2>&1 ||
		fail "mkfs.erofs 1.5 --chunksize"
	fsck --extract="$T/x" "$T/img" || fail "fsck --extract"
	cmp "$T/src/sparse" "$T/x/sparse" || fail "extracted data differs"
	[ "$(du -k "$T/x/sparse" | cut -f1)" -lt 1024 ] || fail "holes filled"
}

# kernel_fails IMG DIR: true if the kernel refuses IMG, or reading it at
# DIR (a read error, an xattr error, content not the source's at $T/src).
# Some records are only read for an offset inside their lcluster, so last
# each block is read alone from a fresh mount, with nothing cached.
kernel_fails() {
	mount -t erofs -o ro "$1" "$2" 2>/dev/null || return 0
	echo "$2" >>"$T/.mounts"
	if ! $TREECMP "$T/src" "$2" >/dev/null 2>&1; then
		umount "$2"
		return 0
	fi
	local f off size
	for f in "$T"/src/*; do
		size=$(stat -c %s "$f")
		for ((off = 0; off < size; off += 4096)); do
			umount "$2"
			mount -t erofs -o ro "$1" "$2" || return 0
			if ! dd if="$2/${f##*/}" of=/dev/null bs=1 count=1 skip=$off status=none 2>/dev/null; then
				umount "$2"
				return 0
			fi
		done
	done
	umount "$2"
	return 1
}

# Fields fsck once read otherwise than the kernel (a helper's review, each
# reproduced): for each change (tests/lib/kernelcases.py) either the kernel
# fails on the image (its mount, a read or an xattr: treecmp against the
# source fails) and fsck must say so, exit 4; or the kernel reads it and
# fsck --extract must give exactly what the mount shows.
test_fsck_agrees_with_kernel() {
	need_root
	mkdir -p "$T/src"
	echo hello >"$T/src/small"
	setfattr -n user.foo -v bar "$T/src/small"
	setfattr -n user.foo.long -v lv "$T/src/small"
	head -c 10000 /dev/urandom >"$T/src/flat"
	seq 1 3000 | sed 's/$/ abcabcabc/' >"$T/src/text"
	{ head -c 40000 /dev/urandom; seq 1 20000; } >"$T/src/noise"
	echo acl >"$T/src/acl"
	setfacl -m u:1234:rw- "$T/src/acl"
	local img=$T/img case want opts
	while read -r case want opts; do
		# shellcheck disable=SC2086
		"$BIN/mkfs.erofs" --quiet $opts "$img" "$T/src" || fail "$case: mkfs $opts"
		python3 tests/lib/kernelcases.py "$case" "$img" "$T/$case.img" ||
			fail "$case: cannot make the image"
		rm -rf "$T/x"
		local rc=0
		fsck --extract="$T/x" "$T/$case.img" >"$T/out" 2>&1 || rc=$?
		mkdir -p "$T/m"
		if [ "$want" = same ]; then
			[ "$rc" = 0 ] || { cat "$T/out"; fail "$case: fsck exit $rc"; }
			mount_erofs "$T/$case.img" "$T/m"
			$TREECMP "$T/m" "$T/x" || fail "$case: fsck reads it otherwise"
			umount "$T/m"
			continue
		fi
		[ "$rc" = 4 ] || { cat "$T/out"; fail "$case: fsck exit $rc, not 4"; }
		assert_grep "$want" "$T/out"
		# the oracle: the kernel does fail on it
		kernel_fails "$T/$case.img" "$T/m" || fail "$case: the kernel reads it as the source"
	done <<-'CASES'
	compact-mtime same -T 1000000000
	interlaced same -zlz4 -C16384 -Elegacy-compress
	startblk-hi high.bits -Eforce-inode-extended
	xattr-header xattr_icount.1 -T 1000000000
	name-filter hidden.by -T 1000000000
	name-filter-exact same -T 1000000000
	metabox-xattrs metabox -T 1000000000
	acl-version POSIX.ACL -T 1000000000
	cblkcnt-small block.count.without -zlz4 -Elegacy-compress
	extents encoded.extents -zlz4 -Elegacy-compress
	frag-and-inline fragment -zlz4 -Eztailpacking
	plain-pfx prefix -zlz4 -Efragments --xattr-prefix=user.foo.
	prefix-count without.the.xattr_prefixes -T 1000000000
	chunks-nobit same --chunksize=4096 -T 1000000000
	CASES
}

# Sizes that would overflow or cost unbounded memory if trusted: a file of
# petabytes of holes is checked in a few extents, a size past 2^63 refused.
test_fsck_hostile_sizes() {
	mkdir "$T/src"
	truncate -s 64M "$T/src/sparse"
	echo tail >> "$T/src/sparse"
	touch -d @1000000000 "$T/src/sparse"	# extended inode: own mtime
	oracle_mkfs --chunksize=4096 "$T/img" "$T/src" >/dev/null 2>&1 ||
		fail "mkfs.erofs 1.5 --chunksize"
	cp "$T/img" "$T/huge"
	python3 tests/lib/patchimg.py "$T/img" sparse giant-holes
	python3 tests/lib/patchimg.py "$T/huge" sparse huge-size
	# bounded: the old reader wanted 2^34 extents here
	assert_rc 0 "$T/out" limited "$BIN/fsck.erofs" "$T/img"
	assert_rc 4 "$T/out" fsck "$T/huge"
	assert_grep "not a file size" "$T/out"
}

# limited CMD...: CMD with its memory capped at 256 MiB: address space for
# the static build, resident memory for the sanitizer one (whose shadow
# memory takes terabytes of address space).
limited() {
	if [ "$BUILD" = asan ]; then
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=256" "$@"
	else
		prlimit --as=$((256 << 20)) "$@"
	fi
}

# Indexes that map 2^25 extents from a few bytes each: a 128 MiB chunk
# index of holes, a 64 MiB compact index of one-block lz4 heads whose first
# does not decode. A list of the whole file took over a gigabyte (and the
# error was only found once it was built); windows keep fsck within 256 MiB,
# with 2 workers, checking and extracting: the holes are a valid file of
# 128 GiB of zeros, the other a clear error at its start.
test_fsck_hostile_index() {
	python3 tests/lib/mkdamaged_hostile.py holes $((1 << 25)) "$T/holes.img"
	python3 tests/lib/mkdamaged_hostile.py zindex $((1 << 25)) "$T/zindex.img"
	assert_rc 0 "$T/out" limited "$BIN/fsck.erofs" -j 2 "$T/holes.img"
	assert_rc 0 "$T/out" limited "$BIN/fsck.erofs" -j 2 --extract="$T/x" "$T/holes.img"
	[ "$(stat -c %s "$T/x/f")" = $((1 << 37)) ] || fail "size of the extracted holes"
	[ "$(du -k "$T/x/f" | cut -f1)" -lt 1024 ] || fail "holes filled"
	assert_rc 4 "$T/out" limited "$BIN/fsck.erofs" -j 2 "$T/zindex.img"
	assert_lines 2 "$T/out"
	assert_grep "^fsck.erofs: /f: nid 4: lz4 pcluster at offset 4096 does not decode to the 4096 bytes of its extent at 0$" "$T/out"
	assert_rc 4 "$T/out" limited "$BIN/fsck.erofs" -j 2 --extract="$T/y" "$T/zindex.img"
	assert_grep "does not decode to the 4096 bytes of its extent at 0$" "$T/out"
	[ ! -e "$T/y/f" ] || fail "a file that failed its check was left"
}

# Two files that read one pcluster differently: a compressed, b's first
# extent patched to a stored reference to a's block. Each decodes alone (so
# erofs-utils 1.5's fsck passes it), but the kernel keeps one object per
# pcluster and decodes it as the first file read it: b read first, a no
# longer reads right. fsck.erofs reports the pcluster, once.
test_fsck_shared_pcluster() {
	need_root
	mkdir -p "$T/src"
	seq 1 20000 | sed 's/$/ lorem ipsum dolor sit amet/' > "$T/src/a"
	python3 -c 'import random, sys; sys.stdout.buffer.write(random.Random(7).randbytes(4096))' > "$T/src/b"
	seq 5000 9000 >> "$T/src/b"
	mkfs -zlz4 -Elegacy-compress "$T/img" "$T/src"
	fsck "$T/img" > /dev/null || fail "fsck before the change"
	python3 tests/lib/patchimg.py "$T/img" b shared-plain a
	mount_erofs "$T/img" "$T/m"
	cat "$T/m/b" > /dev/null 2>&1 || true
	! cmp -s "$T/m/a" "$T/src/a" 2>/dev/null ||
		fail "the kernel read a right after b: no hazard shown"
	assert_rc 4 "$T/out" fsck --workers=2 "$T/img"
	assert_lines 2 "$T/out"
	assert_grep "^fsck.erofs: \(pclusters\): pcluster at block 1 is read as lz4 and stored by different files$" "$T/out"
}

# A truncated image says so once: not once per inode past the end.
test_fsck_truncated() {
	assert_rc 4 "$T/out" fsck tests/damaged/truncated.img
	assert_lines 1 "$T/out"
	assert_grep "^fsck.erofs: image is truncated: 16384 bytes, superblock says 7 blocks$" "$T/out"
	mkdir -p "$T/src/d"
	seq 1 200000 > "$T/src/d/text"
	for i in $(seq 1 50); do echo "$i" > "$T/src/f$i"; done
	mkfs "$T/img" "$T/src"
	truncate -s -8192 "$T/img"
	assert_rc 4 "$T/out" fsck --extract="$T/x" "$T/img"
	assert_lines 1 "$T/out"
	assert_grep "^fsck.erofs: image is truncated: [0-9]+ bytes, superblock says [0-9]+ blocks$" "$T/out"
}

test_fsck_cli() {
	mkdir "$T/src"
	mkfs "$T/img" "$T/src"
	assert_rc 0 "$T/out" fsck --help
	assert_grep '^Usage: fsck.erofs' "$T/out"
	assert_rc 0 "$T/out" fsck -h
	assert_grep '^Usage: fsck.erofs' "$T/out"
	local v
	for v in -V --version; do
		assert_rc 0 "$T/out" fsck $v
		assert_lines 1 "$T/out"
		assert_grep '^fsck.erofs \(kiln\) ' "$T/out"
	done
	fsck -p "$T/img" > "$T/out" || fail "-p"
	assert_grep 'Compression ratio' "$T/out"
	# usage errors: one line each, exit 16, the program named plainly
	local args
	while read -r args; do
		# shellcheck disable=SC2086
		assert_rc 16 "$T/out" fsck $args
		assert_lines 1 "$T/out"
		assert_grep "^fsck.erofs: " "$T/out"
		! grep -q "$BIN" "$T/out" || fail "program path in: $(cat "$T/out")"
	done <<-EOF

	--workers=0 $T/img
	-j 1025 $T/img
	-j x $T/img
	-d 12 $T/img
	--overwrite $T/img
	--no-preserve-owner $T/img
	--extract $T/img $T/img
	-j
	--bogus $T/img
	-Q $T/img
	EOF
	assert_rc 16 "$T/out" fsck --foo "$T/img"
	assert_grep "^fsck.erofs: unknown option '--foo' \(try --help\)$" "$T/out"
	assert_rc 16 "$T/out" fsck -Q "$T/img"
	assert_grep "^fsck.erofs: unknown option '-Q' \(try --help\)$" "$T/out"
	# decimal numbers, as everywhere: 010 is ten workers
	fsck -j 010 -d 0 "$T/img" || fail "-j 010"
	# extraction options parse (erofs-utils' names)
	fsck --extract="$T/x" --no-preserve-owner --no-preserve-perms \
		--no-xattrs --xattrs "$T/img" || fail "extraction options"
	# cannot open: operational error (8); not an image: image error (4)
	assert_rc 8 "$T/err" fsck "$T/missing"
	assert_lines 1 "$T/err"
	assert_grep "cannot open" "$T/err"
	assert_rc 8 "$T/err" fsck "$T/src"
	assert_lines 1 "$T/err"
	head -c 100 /dev/zero > "$T/tiny"
	assert_rc 4 "$T/err" fsck "$T/tiny"
	assert_lines 1 "$T/err"
}

# Extracting as an ordinary user: what it may not do (device nodes, owners,
# trusted.* xattrs) is a warning and the exit status stays 0; what it
# cannot write at all is an operational error (8), not an image one.
test_fsck_extract_nonroot() {
	need_root
	mkdir -p "$T/src/d"
	echo data > "$T/src/d/file"
	mknod "$T/src/d/null" c 1 3
	chown 1234:1234 "$T/src/d/file"
	setfattr -n trusted.k -v v "$T/src/d/file"
	setfattr -n user.k -v v "$T/src/d/file"
	mkfs "$T/img" "$T/src"
	chmod 0755 "$T"
	mkdir "$T/nb"
	chown 65534:65534 "$T/nb"
	nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	assert_rc 0 "$T/err" nobody "$BIN/fsck.erofs" --extract="$T/nb/x" "$T/img"
	assert_grep "^fsck.erofs: warning: $T/nb/x/d/null: cannot create the device node: Operation not permitted$" "$T/err"
	assert_grep "^fsck.erofs: warning: $T/nb/x/d/file: cannot set xattr trusted.k: " "$T/err"
	! grep -Eq "errors? found|incomplete" "$T/err" || fail "$(cat "$T/err")"
	assert grep -qx data "$T/nb/x/d/file"
	[ "$(getfattr --only-values -n user.k "$T/nb/x/d/file" 2>/dev/null)" = v ] ||
		fail "user.k not restored"
	# the owner, asked for: a warning too; --no-xattrs: no xattr at all
	assert_rc 0 "$T/err" nobody "$BIN/fsck.erofs" --extract="$T/nb/y" \
		--preserve-owner --no-xattrs "$T/img"
	assert_grep "warning: $T/nb/y/d/file: cannot set the owner: Operation not permitted" "$T/err"
	! grep -q xattr "$T/err" || fail "--no-xattrs: $(cat "$T/err")"
	[ -z "$(getfattr -d "$T/nb/y/d/file" 2>/dev/null)" ] || fail "--no-xattrs set xattrs"
	# nowhere to write: exit 8, no image error
	assert_rc 8 "$T/err" nobody "$BIN/fsck.erofs" --extract="$T/z/x" "$T/img"
	assert_lines 1 "$T/err"
	assert_grep "cannot create $T/z/x: (Permission denied|No such file)" "$T/err"
	mkdir "$T/ro"
	assert_rc 8 "$T/err" nobody "$BIN/fsck.erofs" --extract="$T/ro" "$T/img"
	assert_grep "^fsck.erofs: $T/ro/d: cannot create the directory: Permission denied$" "$T/err"
	assert_grep "extraction incomplete" "$T/err"
	! grep -q "errors\? found" "$T/err" || fail "$(cat "$T/err")"
	# a damaged image is an image error (4); both at once add up (12)
	assert_rc 4 "$T/err" nobody "$BIN/fsck.erofs" --extract="$T/nb/w" \
		tests/damaged/pcluster-garbage.img
	assert_rc 12 "$T/err" nobody "$BIN/fsck.erofs" --extract="$T/ro" \
		tests/damaged/pcluster-garbage.img
}

# libFuzzer over the whole check and extraction (2 workers), seeded with
# small images of every kind. A fixed number of runs from a fixed seed: the
# same work on every machine (about 60 s here, more on a busy one: hence
# the longer limit); FUZZ_TIME=S (make fuzz) runs for S seconds instead.
limit fuzz_fsck 600
once_fuzz_fsck() {
	tests/lib/mkseeds.sh "$BIN/mkfs.erofs" "$T/corpus"
	cp tests/damaged/*.img "$T/corpus/"
	run_fuzzer fuzz_fsck 45056 15000 fuzz-extract
}

# The static aarch64 fsck.erofs (the device's) under qemu-user: same verdict
# and same extracted tree.
once_fsck_aarch64() {
	need_root
	file out/aarch64/bin/fsck.erofs | grep -q 'ARM aarch64.*statically linked' ||
		fail "no static aarch64 fsck.erofs"
	out/x86_64/bin/mkfs.erofs --quiet -z lz4hc -C 65536 -E ztailpacking \
		"$T/img" "$TREE"
	qemu-aarch64-static out/aarch64/bin/fsck.erofs --extract="$T/x" "$T/img" ||
		fail "aarch64 fsck --extract"
	$TREECMP "$TREE" "$T/x" || fail "aarch64 extraction differs"
	assert_rc 4 "$T/out" qemu-aarch64-static out/aarch64/bin/fsck.erofs \
		tests/damaged/pcluster-garbage.img
	assert_grep "does not decode" "$T/out"
}

# A full disk stops the extraction with one message (exit 8: the
# environment, not the image); the check goes on.
test_fsck_full_disk() {
	need_root
	mkfs -z lz4 "$T/img" "$TREE"
	mkdir "$T/small"
	mount -t tmpfs -o size=1m tmpfs "$T/small"
	echo "$T/small" >> "$T/.mounts"
	assert_rc 8 "$T/err" fsck --extract="$T/small/x" "$T/img"
	assert_grep "No space left on device \(extraction stopped\)" "$T/err"
	assert_grep "extraction incomplete \(1 failure\)" "$T/err"
	assert_lines 2 "$T/err"
}

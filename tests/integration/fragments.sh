# -E fragments: files' last extents (small files whole) in one packed
# inode; -E dedupe: a pcluster equal to an earlier one is shared. Each image is mounted by the running kernel and compared with its
# source, extracted by fsck.erofs, and must not depend on --workers.
# Debian's erofs-utils 1.5 predates fragments, so the kernel is the oracle.

# A tree for fragments: small files, tails after compressed and after
# plain (incompressible) extents, a file of three segments, equal files
# (stored once), a file that is another's end, a hard link and an empty
# file.
fragtree() {
	mkdir -p "$1/d/e"
	for n in 1 100 4095 4096 4097 30000 65535 65536 65537 200000; do
		seq 1 100000 | head -c "$n" > "$1/d/s$n"
	done
	seq 1 2000000 | head -c $((9 << 20 | 777)) > "$1/big"
	head -c 150000 /dev/urandom > "$1/noise"
	# noise, then 5 MiB that compress whole into one pcluster: a tail
	# fragment longer than a reader's window
	{ head -c 100000 /dev/urandom; head -c $((5 << 20)) /dev/zero; } > "$1/mixed"
	cp "$1/d/s30000" "$1/d/e/copy"
	tail -c 3000 "$1/d/s30000" > "$1/d/e/tail"	# s30000's fragment's end
	cp "$1/noise" "$1/d/e/noise2"
	ln "$1/d/s4097" "$1/d/e/link"
	: > "$1/empty"
}

test_fragments_roundtrip() {
	need_root
	fragtree "$T/src"
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
		dump -s "$T/w1" > "$T/sb"
		assert_grep "fragments" "$T/sb"
		cmp <(dump --cat --path=/big "$T/w1") "$T/src/big" ||
			fail "$opts: dump --cat"
	done <<-'OPTS'
	-zlz4hc -C65536 -Efragments
	-zlz4 -Efragments -Elegacy-compress
	-zzstd -C16384 -Efragments -Eztailpacking
	-zlzma -C65536 -Efragments -Eforce-inode-extended
	-b 1024 -zdeflate -C8192 -Efragments
	-zlz4hc -C65536 -Eall-fragments
	OPTS
}

# Small files become fragments whole; files over a pcluster keep their
# compressed extents and only the last goes packed; an equal fragment is
# stored once, and so is one that is the end of an earlier one: two more
# copies of 60 KB of noise (all of it one fragment, which does not
# compress) and its last 20 KB cost no data block.
test_fragments_layout() {
	need_root
	mkdir -p "$T/one" "$T/two"
	head -c 60000 /dev/urandom > "$T/one/noise"
	cp "$T/one/noise" "$T/two/noise"
	cp "$T/one/noise" "$T/two/again"
	tail -c 20000 "$T/one/noise" > "$T/two/tail"
	mkfs -zlz4hc -C65536 -Efragments "$T/one.img" "$T/one"
	mkfs -zlz4hc -C65536 -Efragments "$T/two.img" "$T/two"
	[ "$(stat -c %s "$T/one.img")" = "$(stat -c %s "$T/two.img")" ] ||
		fail "an equal fragment, or its end, was stored twice"
	mount_erofs "$T/two.img" "$T/m2"
	$TREECMP "$T/two" "$T/m2" || fail "shared fragments read wrong"
	# many files ending alike, newer than the one whose end a last file
	# is: still found (the packed inode does not grow by it)
	mkdir -p "$T/alike"
	{ head -c 936 /dev/urandom; head -c 64 /dev/zero; } > "$T/alike/a"
	for n in $(seq 20); do
		{ head -c 136 /dev/urandom; head -c 64 /dev/zero; } > "$T/alike/b$n"
	done
	tail -c 300 "$T/alike/a" > "$T/alike/z"
	mkfs -zlz4hc -Efragments "$T/alike.img" "$T/alike"
	local packed
	packed=$(dump -s "$T/alike.img" | awk '/packed nid/ {print $NF}')
	dump --nid="$packed" "$T/alike.img" > "$T/out"
	assert_grep "^Size: $((1000 + 20 * 200)) " "$T/out"
	mount_erofs "$T/alike.img" "$T/m3"
	$TREECMP "$T/alike" "$T/m3" || fail "alike fragments read wrong"
	fragtree "$T/src"
	mkfs -zlz4hc -C65536 -Efragments "$T/img" "$T/src"
	# a small file: one extent, with no blocks of its own
	dump --path=/d/s4097 -e "$T/img" > "$T/out"
	assert_grep "^ +0: +0\.\. +4097 \| +4097 : +0\.\. +0 \| +0$" "$T/out"
	assert_grep "1 extents found" "$T/out"
	# the big file: compressed extents, then the fragment, to its end
	dump --path=/big -e "$T/img" > "$T/out"
	assert_grep "\.\. *$((9 << 20 | 777)) \| +[0-9]+ : +0\.\. +0 \| +0$" "$T/out"
	[ "$(grep -c ': *[1-9][0-9]*\.\.' "$T/out")" -gt 10 ] ||
		fail "big file has no compressed extents of its own"
	mount_erofs "$T/img" "$T/m"
	$TREECMP "$T/src" "$T/m" || fail "mount differs"
}

# dedupe_costs OPTS ONE TWO MAX: TWO, ONE's tree with copies of its
# data, built with OPTS at --workers 1 and 3 gives the same image, read
# right by the kernel and fsck.erofs, at most MAX bytes over ONE's.
dedupe_costs() {
	local opts=$1 one=$2 two=$3 max=$4 a b
	# shellcheck disable=SC2086
	mkfs $opts "$T/one.img" "$one"
	# shellcheck disable=SC2086
	mkfs $opts --workers=1 "$T/two.img" "$two"
	# shellcheck disable=SC2086
	mkfs $opts --workers=3 "$T/two3.img" "$two"
	cmp "$T/two.img" "$T/two3.img" || fail "$opts: differs by workers"
	a=$(stat -c %s "$T/one.img")
	b=$(stat -c %s "$T/two.img")
	echo "$opts: ${two##*/} costs $((b - a)) bytes over ${one##*/}"
	[ "$b" -le $((a + max)) ] || fail "$opts: ${two##*/} costs $((b - a)) bytes"
	mount_erofs "$T/two.img" "$T/m"
	$TREECMP "$two" "$T/m" || fail "$opts: mount differs"
	umount "$T/m"
	extract_cmp "$T/two.img" "$two"
}

# copies_cost OPTS ONE TWO MIN: without -E dedupe the copies cost over
# MIN bytes, so the bounds above measure dedupe and can fail.
copies_cost() {
	local a b
	# shellcheck disable=SC2086
	mkfs $1 "$T/one.img" "$2"
	# shellcheck disable=SC2086
	mkfs $1 "$T/two.img" "$3"
	a=$(stat -c %s "$T/one.img")
	b=$(stat -c %s "$T/two.img")
	[ "$b" -gt $((a + $4)) ] ||
		fail "the copies cost nothing without -E dedupe: a test that cannot fail"
}

# Equal pclusters (copied files, compressed or not) are written once: the
# copy's extents point at the original's blocks, and the image does not
# grow by its data.
test_fragments_dedupe() {
	need_root
	mkdir -p "$T/one" "$T/two/d"
	seq 1 300000 > "$T/one/text"		# 2 MB: many pclusters
	head -c 300000 /dev/urandom > "$T/one/noise"	# plain ones
	cp "$T/one/text" "$T/one/noise" "$T/two/"
	cp "$T/one/text" "$T/one/noise" "$T/two/d/"
	local opts
	while read -r opts; do
		# their records (full indexes) but no data: 300 KB of noise
		dedupe_costs "$opts" "$T/one" "$T/two" 65536
		# (the first noise is stored flat, its copy as plain pclusters
		# on the same blocks: the size says they are shared)
		dump --path=/text -e "$T/two.img" | grep '^ *[0-9]*:' > "$T/x1"
		dump --path=/d/text -e "$T/two.img" | grep '^ *[0-9]*:' > "$T/x2"
		cmp "$T/x1" "$T/x2" || fail "$opts: /d/text has blocks of its own"
	done <<-'OPTS'
	-zlz4hc -C65536 -Ededupe
	-zzstd -C16384 -Ededupe -Efragments
	-b 1024 -zlz4 -Ededupe
	OPTS
	# without it, the copies cost their data
	copies_cost "-zlz4hc -C65536" "$T/one" "$T/two" 600000
}

# -E dedupe at a shift: a's content inside b and c at offsets no pcluster
# of theirs starts at (behind a header; cut in two around other text) is
# found and shared, 300 files (segments) after a, past the lag it needs
# (shifted.h); the same image for any --workers, read right by the kernel
# and fsck.erofs, for each algorithm and a block size under the page's.
test_fragments_dedupe_shifted() {
	need_root
	python3 - "$T" <<'PY'
import os, random, sys
r = random.Random(7)
words = ["".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(2, 9)))
         for _ in range(3000)]
def text(n):
    out, k = [], 0
    while k < n:
        w = r.choice(words) + (" " if r.random() < 0.9 else "\n")
        out.append(w)
        k += len(w)
    return "".join(out).encode()[:n]
a = text(600000)
for t in ("one", "two"):
    os.makedirs(f"{sys.argv[1]}/{t}/d")
    os.makedirs(f"{sys.argv[1]}/{t}/z")
    open(f"{sys.argv[1]}/{t}/d/a", "wb").write(a)
    for i in range(300):	# over a block each: a segment each
        open(f"{sys.argv[1]}/{t}/d/f{i:03d}", "wb").write(text(5000))
h1, h2, mid = text(1234), text(7777), text(3000)
open(f"{sys.argv[1]}/two/z/b", "wb").write(h1 + a)
open(f"{sys.argv[1]}/two/z/c", "wb").write(h2 + a[:400000] + mid + a[400000:])
open(f"{sys.argv[1]}/one/z/b", "wb").write(h1)
open(f"{sys.argv[1]}/one/z/c", "wb").write(h2 + mid)
PY
	# a prefix of a ends inside one of a's pclusters: a partial reference
	cp -a "$T/one" "$T/three"
	head -c 300000 "$T/one/d/a" >"$T/three/z/e"
	local opts
	while read -r opts; do
		# the pclusters around each cut, and full indexes
		dedupe_costs "$opts" "$T/one" "$T/two" 400000
	done <<-'OPTS'
	-zlz4hc -C16384 -Ededupe
	-zlz4 -Ededupe -Efragments
	-zlzma -C32768 -Ededupe
	-zdeflate -Ededupe
	-zzstd -C16384 -Ededupe -Efragments
	-b 1024 -zlz4hc -C8192 -Ededupe
	OPTS
	for opts in "-zlz4hc -C16384" "-zlzma -C32768" "-zzstd -C16384"; do
		dedupe_costs "$opts -Ededupe" "$T/one" "$T/three" 4096
	done
	# --chunksize: an incompressible file goes chunk-based and gives its
	# blocks back, which later files then use: a match found against
	# them before they were given back read as another file's data
	python3 - "$T/four" <<'PY'
import os, random, sys
r = random.Random(1)
os.makedirs(f"{sys.argv[1]}/d")
os.makedirs(f"{sys.argv[1]}/z")
F = r.randbytes(1 << 20)
open(f"{sys.argv[1]}/d/a", "wb").write(F)
for i in range(300):
    open(f"{sys.argv[1]}/d/f{i:03d}", "wb").write(r.randbytes(5000))
open(f"{sys.argv[1]}/z/g", "wb").write(bytes(10000) + F[256 << 10:])
open(f"{sys.argv[1]}/z/h", "wb").write(b"".join(b"%08d " % i for i in range(400000)))
PY
	mkfs -zlz4hc -Ededupe --chunksize=4096 "$T/four.img" "$T/four"
	mount_erofs "$T/four.img" "$T/m"
	$TREECMP "$T/four" "$T/m" || fail "--chunksize: mount differs"
	umount "$T/m"
	# without it, the copies cost their data
	copies_cost "-zlz4hc -C16384" "$T/one" "$T/two" 400000
}

# Partial references (erofs-utils' -E dedupe: an extent that is a prefix
# of another extent's pcluster) for every algorithm: the kernel and
# fsck.erofs read b as a's first 6000 bytes.
test_fragments_partial_ref() {
	need_root
	mkdir -p "$T/src"
	# a's first pcluster decodes to more than 6000 bytes in every one
	seq 1 20000 | sed 's/$/ lorem ipsum dolor sit amet/' > "$T/src/a"
	seq 500000 502000 | head -c 6000 > "$T/src/b"
	head -c 6000 "$T/src/a" > "$T/want"
	local alg
	for alg in lz4 lzma deflate zstd; do
		mkfs -z$alg -Elegacy-compress "$T/$alg.img" "$T/src"
		python3 tests/lib/patchimg.py "$T/$alg.img" b partial-ref a
		mount_erofs "$T/$alg.img" "$T/m"
		cmp "$T/m/b" "$T/want" || fail "$alg: the kernel reads b otherwise"
		umount "$T/m"
		rm -rf "$T/x"
		fsck --extract="$T/x" "$T/$alg.img" || fail "$alg: fsck"
		cmp "$T/x/b" "$T/want" || fail "$alg: fsck extracts b otherwise"
		cmp "$T/x/a" "$T/src/a" || fail "$alg: a"
	done
}

# Damaged fragments: one line each, exit 4, never a read outside.
test_fragments_damaged() {
	mkdir -p "$T/src"
	seq 1 1000 > "$T/src/f"
	mkfs -zlz4 -Efragments "$T/img" "$T/src"
	cp "$T/img" "$T/far.img"
	python3 tests/lib/patchimg.py "$T/far.img" f frag-far
	assert_rc 4 "$T/err" fsck --extract="$T/x1" "$T/far.img"
	assert_grep "beyond the packed inode" "$T/err"
	cp "$T/img" "$T/orphan.img"
	python3 tests/lib/patchimg.py "$T/orphan.img" f frag-orphan
	assert_rc 4 "$T/err" fsck --extract="$T/x2" "$T/orphan.img"
	assert_grep "without a packed inode" "$T/err"
	# the packed inode is checked whole, as erofs-utils' fsck does, not
	# only where fragments point: 40 KiB more of it than its index maps
	python3 tests/lib/kernelcases.py packed-size "$T/img" "$T/long.img"
	assert_rc 4 "$T/err" fsck "$T/long.img"
	assert_grep "(packed inode)" "$T/err"
	# and its blocks count as stored: -p's ratio is not 0
	mkfs -zlz4 -Eall-fragments "$T/all.img" "$T/src"
	fsck -p "$T/all.img" > "$T/out"
	grep -q 'Compression ratio: [1-9]' "$T/out" ||
		fail "ratio with all fragments: $(grep ratio "$T/out")"
}

test_fragments_bad_options() {
	mkdir "$T/src"
	# (-E dedupe without -z is chunk dedupe: chunks.sh)
	for args in "-E fragments" "-E all-fragments"; do
		expect_rejected "$args"
	done
}

# The packed inode's content is read again from the source files when it
# is compressed, after the files themselves: a file touched in between
# (or while it is first read: the same message) fails the build.
test_fragments_changed_source() {
	mkdir "$T/src"
	echo "small, so all of it a fragment" > "$T/src/a"
	# slow to compress, so the build is still on it when 'a' is touched
	seq 1 1000000 > "$T/src/b"
	( sleep 0.3; touch "$T/src/a" ) &
	expect_error "a: file changed while being read" "$T/img" \
		"$BIN/mkfs.erofs" -zlz4hc,12 -Efragments --workers=1 \
		"$T/img" "$T/src"
	wait
}

# Small files that do not compress, with --chunksize: the packed inode
# does not pay to compress, and must then be stored flat, never as
# chunks (its content is read from the files' pieces, not a file).
test_fragments_incompressible_chunksize() {
	need_root
	mkdir "$T/src"
	for n in $(seq 1 60); do
		head -c 3000 /dev/urandom > "$T/src/r$n"
	done
	mkfs -zlz4 -Efragments --chunksize=4096 "$T/img" "$T/src"
	mount_erofs "$T/img" "$T/m"
	$TREECMP "$T/src" "$T/m" || fail "mount differs"
	umount "$T/m"
	extract_cmp "$T/img" "$T/src"
}

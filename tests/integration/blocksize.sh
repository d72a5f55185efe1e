# Blocks larger than 4 KiB (-b 8192..65536), for boards whose kernel has
# 16 or 64 KiB pages. This machine's kernel mounts blocks up to its 4 KiB
# page only, so the oracle is Debian's arm64-16k kernel in the mount VM
# (tests/lib/mountvm.sh), booted once for every image: what it shows of
# each must be what busybox shows of the source. Our fsck extracts each,
# and each is the same for any --workers.

. tests/lib/mountvm.sh

# Files at 16 KiB boundaries, one larger than a few pclusters, a hole, a
# directory spanning several 16 KiB blocks, and every other file type.
bigblock_tree() {
	local d=$1 n
	mkdir -p "$d/dir" "$d/many"
	seq 1 400000 > "$d/text"
	head -c 300000 /dev/urandom > "$d/noise"
	for n in 1 16383 16384 16385 65537; do head -c $n "$d/text" > "$d/dir/f$n"; done
	cat "$d/noise" "$d/noise" > "$d/dir/twice"
	truncate -s 1M "$d/sparse"
	echo middle | dd of="$d/sparse" bs=1 seek=500000 conv=notrunc status=none
	: > "$d/empty"
	ln -s dir/f1 "$d/link"
	ln "$d/text" "$d/dir/hard"
	mkfifo "$d/fifo"
	mknod "$d/null" c 1 3
	chown 1000:1000 "$d/dir/f1"
	for n in $(seq 1 250); do
		: > "$d/many/entry-with-a-long-name-so-that-the-directory-spans-blocks-$n"
	done
}

once_blocksize_16k_pages() {
	need_root
	local opts imgs= n=0 k
	bigblock_tree "$T/src"
	mountvm_build
	while read -r opts; do
		# shellcheck disable=SC2086
		mkfs $opts --workers=1 "$T/$n.img" "$T/src"
		# shellcheck disable=SC2086
		mkfs $opts --workers=3 "$T/w3.img" "$T/src"
		cmp "$T/$n.img" "$T/w3.img" || fail "$opts: differs by workers"
		extract_cmp "$T/$n.img" "$T/src"
		echo "$opts" > "$T/$n.opts"
		imgs="$imgs $T/$n.img"
		n=$((n + 1))
	done <<-'OPTS'
	-b 16384
	-b 16384 -zlz4hc -C65536
	-b 16384 -zlz4 -C16384 -Eztailpacking
	-b 16384 -zzstd -C131072 -Efragments
	-b 16384 -zlzma -C65536 -Eall-fragments
	-b 16384 -zdeflate -Elegacy-compress
	-b 16384 -zlz4hc -Ededupe
	-b 16384 --chunksize=65536
	-b 8192 -zlz4hc -C65536 -Eztailpacking
	-b 65536 -zlz4hc -C65536
	OPTS
	# shellcheck disable=SC2086
	mountvm_run "$T/vm" $imgs
	mountvm_manifest "$T/src" > "$T/want"
	grep -q 'KILN-KERNEL .*-16k' "$T/vm" || fail "not the 16k kernel: $(grep KILN-KERNEL "$T/vm")"
	for k in $(seq 0 $((n - 2))); do
		diff "$T/want" "$T/vm.$k" > "$T/diff" ||
			fail "$(cat "$T/$k.opts"): the kernel shows: $(head -5 "$T/diff")"
	done
	# 64 KiB blocks are over this kernel's page: refused, as it says
	grep -q '^MOUNTFAIL' "$T/vm.$((n - 1))" || fail "64 KiB blocks mounted on 16 KiB pages?"
	grep -q 'blkszbits 16 isn.t supported' "$T/vm" || fail "no reason given for 64 KiB"
}

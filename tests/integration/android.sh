# AOSP's mkfs.erofs options: --mount-point, --fs-config-file (a canned
# fs_config: owners, modes, capabilities), --file-contexts (SELinux
# labels), --block-list-file. What the running kernel shows of the mounted
# image is the oracle.

# An Android-like tree and its canned fs_config (as AOSP's build writes
# META/filesystem_config.txt: the root as a leading space, paths under the
# mount point, the last line of a path winning).
droidtree() {
	mkdir -p "$1/bin" "$1/etc"
	echo sh > "$1/bin/sh"
	seq 1 5000 > "$1/bin/toybox"
	echo hosts > "$1/etc/hosts"
	ln -s toybox "$1/bin/ls"
	cat > "$2" <<-'EOF'
	 0 0 0755
	system/bin 0 2000 0751
	system/bin/sh 0 2000 0755 capabilities=0x1000000000001
	/system/bin/toybox 0 2000 4750
	system/bin/ls 0 2000 0777
	system/etc 0 0 0755
	system/etc/hosts 1000 1000 0644
	system/etc/hosts 0 1007 0640 selabel=u:object_r:x:s0
	EOF
}

# stat of every path in the mount, as "path uid gid mode".
droid_stat() {
	(cd "$1" && find . | sort | xargs stat -c '%n %u %g %a')
}

test_android_fs_config() {
	need_root
	droidtree "$T/src" "$T/fsc"
	tar -C "$T/src" -cf "$T/src.tar" .
	cat > "$T/want" <<-'EOF'
	. 0 0 755
	./bin 0 2000 751
	./bin/ls 0 2000 777
	./bin/sh 0 2000 755
	./bin/toybox 0 2000 4750
	./etc 0 0 755
	./etc/hosts 0 1007 640
	EOF
	mkfs --mount-point=/system --fs-config-file="$T/fsc" "$T/img" "$T/src"
	mkfs --mount-point=system --fs-config-file="$T/fsc" -zlz4hc \
		--tar=f "$T/timg" "$T/src.tar"
	local img
	for img in img timg; do
		mount_erofs "$T/$img" "$T/m$img"
		droid_stat "$T/m$img" > "$T/got"
		diff "$T/want" "$T/got" || fail "$img: owners and modes differ"
		getfattr -n security.capability -e hex "$T/m$img/bin/sh" \
			> "$T/cap" 2>/dev/null
		# revision 2, effective; permitted bit 0 low, bit 48 high
		assert_grep "=0x0100000201000000000000000000010000000000$" "$T/cap"
		cmp "$T/src/bin/toybox" "$T/m$img/bin/toybox" || fail "$img: data"
	done
	# --force-uid and the offsets still apply, after the file
	mkfs --mount-point=system --fs-config-file="$T/fsc" --gid-offset=5 \
		"$T/img2" "$T/src"
	mount_erofs "$T/img2" "$T/m2"
	[ "$(stat -c %g "$T/m2/etc/hosts")" = 1012 ] || fail "gid offset"
}

test_android_bad() {
	mkdir -p "$T/src/d"
	printf ' 0 0 0755\n' > "$T/fsc"
	expect_error "system/d: not in the fs_config file" "$T/img" \
		"$BIN/mkfs.erofs" --mount-point=system --fs-config-file="$T/fsc" \
		"$T/img" "$T/src"
	printf 'd 0 0\n' > "$T/fsc2"
	expect_error "fsc2:1: want PATH UID GID MODE" "$T/img" \
		"$BIN/mkfs.erofs" --fs-config-file="$T/fsc2" "$T/img" "$T/src"
	printf 'd 0 0 0999\n' > "$T/fsc3"
	expect_error "fsc3:1: bad uid, gid or octal mode" "$T/img" \
		"$BIN/mkfs.erofs" --fs-config-file="$T/fsc3" "$T/img" "$T/src"
	expect_error "nothere: No such file" "$T/img" "$BIN/mkfs.erofs" \
		--fs-config-file="$T/nothere" "$T/img" "$T/src"
}

# The block list against Debian's dump.erofs 1.5: for every file, the
# blocks its extents occupy (physical offset and length), joined into
# ranges, in file order, less inline tails (metadata); every regular file
# with data blocks once, a hard link at one of its paths.
test_android_block_list() {
	need_root
	droidtree "$T/src" "$T/fsc"
	seq 1 100000 > "$T/src/bin/big"
	ln "$T/src/bin/sh" "$T/src/bin/sh2"
	printf 'system/bin/big 0 0 0644\nsystem/bin/sh2 0 2000 0755 capabilities=0x1000000000001\n' >> "$T/fsc"
	local opts
	while read -r opts; do
		# shellcheck disable=SC2086
		mkfs $opts --mount-point=system --fs-config-file="$T/fsc" \
			--block-list-file="$T/bl" "$T/img" "$T/src"
		[ ! -e "$T/bl".tmp* ] || fail "temporary list left"
		cut -d' ' -f1 "$T/bl" | sort > "$T/paths"
		# sh and hosts are all inline, or fragments: no line
		printf '%s\n' /system/bin/big /system/bin/toybox |
			diff - "$T/paths" ||
			fail "$opts: files listed"
		while read -r path ranges; do
			oracle_dump --path="${path#/system}" -e "$T/img" > "$T/ext"
			python3 - "$T/ext" "$ranges" "$T/img" <<-'PY' || fail "$opts: $path: $ranges"
			import re, struct, sys
			img = open(sys.argv[3], "rb").read(4096)
			meta = struct.unpack_from("<I", img, 1024 + 0x28)[0] * 4096
			runs = []
			for m in re.finditer(r"^ *\d+: .*: *(\d+)\.\. *\d+ \| *(\d+)$",
			                     open(sys.argv[1]).read(), re.M):
			    pa, plen = int(m.group(1)), int(m.group(2))
			    if pa >= meta:	# an inline tail: metadata
			        continue
			    a, b = pa // 4096, (pa + plen - 1) // 4096
			    if runs and runs[-1][0] <= a <= runs[-1][1] + 1:
			        runs[-1][1] = max(runs[-1][1], b)
			    else:
			        runs.append([a, b])
			want = " ".join(str(a) if a == b else "%d-%d" % (a, b)
			                for a, b in runs)
			if want != sys.argv[2]:
			    sys.exit("want '%s'" % want)
			PY
		done < "$T/bl"
	done <<-'OPTS'
	-T 0
	-zlz4hc -C16384
	-zlz4 -Eztailpacking
	--chunksize=4096
	OPTS
	expect_error "none/x: No such file" "$T/img3" "$BIN/mkfs.erofs" \
		--block-list-file="$T/none/x" "$T/img3" "$T/src"
	# a failed build leaves no list
	expect_error "sh: not a directory" "$T/bl2" "$BIN/mkfs.erofs" \
		--block-list-file="$T/bl2" "$T/img3" "$T/src/bin/sh"
}

# file_contexts as libselinux reads it: the last matching spec wins, an
# exact path wins over any regex, a type narrows a spec, <<none>> leaves a
# file unlabeled (and drops the label its source carried); the root is
# looked up as /MOUNT (libselinux drops erofs-utils' trailing slash). What the
# kernel shows of security.selinux in the mounted image is compared.
test_android_file_contexts() {
	need_root
	droidtree "$T/src" "$T/fsc"
	ln "$T/src/bin/sh" "$T/src/bin/sh2"
	echo "system/bin/sh2 0 2000 0755 capabilities=0x1000000000001" >> "$T/fsc"
	cat > "$T/fc" <<-'EOF'
	# comment
	/system(/.*)?		u:object_r:system_file:s0
	/system		u:object_r:system_root:s0
	/system/bin/sh	--	u:object_r:shell_exec:s0
	/system/bin/sh2		u:object_r:shell_exec:s0
	/system/bin(/.*)?	u:object_r:system_bin:s0
	/system/bin		-d	u:object_r:bin_dir:s0
	/system/bin/t\w+	u:object_r:toybox_exec:s0
	/system/bin/l.	--	u:object_r:not_a_link:s0
	/system/etc/hosts	<<none>>
	EOF
	cat > "$T/want" <<-'EOF'
	. u:object_r:system_root:s0
	./bin u:object_r:bin_dir:s0
	./bin/ls u:object_r:system_bin:s0
	./bin/sh u:object_r:shell_exec:s0
	./bin/sh2 u:object_r:shell_exec:s0
	./bin/toybox u:object_r:toybox_exec:s0
	./etc u:object_r:system_file:s0
	./etc/hosts
	EOF
	# the tar gives hosts a label of its own: <<none>> drops it
	python3 - "$T/src" "$T/src.tar" <<-'PY'
	import os, sys, tarfile
	src, out = sys.argv[1], sys.argv[2]
	with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
	    for root, dirs, files in os.walk(src):
	        for n in sorted(dirs) + sorted(files):
	            p = os.path.join(root, n)
	            ti = t.gettarinfo(p, os.path.relpath(p, src))
	            if n == "hosts":
	                ti.pax_headers["SCHILY.xattr.security.selinux"] = "u:object_r:own:s0"
	            if ti.isreg():
	                with open(p, "rb") as f:
	                    t.addfile(ti, f)
	            else:
	                t.addfile(ti)
	PY
	mkfs --mount-point=system --fs-config-file="$T/fsc" \
		--file-contexts="$T/fc" "$T/img" "$T/src"
	mkfs --mount-point=system --fs-config-file="$T/fsc" \
		--file-contexts="$T/fc" -zlz4 --tar=f "$T/timg" "$T/src.tar"
	local img
	for img in img timg; do
		mount_erofs "$T/$img" "$T/m$img"
		(cd "$T/m$img" && find . | sort | while read -r f; do
			echo "$f $(getfattr -h --only-values -n security.selinux \
				"$f" 2>/dev/null || true)" | sed 's/ $//'
		done) > "$T/got"
		diff "$T/want" "$T/got" || fail "$img: labels differ"
	done
	# hard links whose paths get different labels cannot be one inode
	echo "/system/bin/sh2 u:object_r:other:s0" >> "$T/fc"
	expect_error "hard links get different owners, modes or labels" \
		"$T/img2" "$BIN/mkfs.erofs" --mount-point=system \
		--fs-config-file="$T/fsc" --file-contexts="$T/fc" "$T/img2" "$T/src"
}

test_android_file_contexts_bad() {
	mkdir -p "$T/src"
	bad_fc() {
		printf '%s\n' "$1" > "$T/fc"
		expect_error "$2" "$T/img" "$BIN/mkfs.erofs" \
			--file-contexts="$T/fc" "$T/img" "$T/src"
	}
	bad_fc "/a -x u:r:x:s0" "fc:1: unknown file type '-x'"
	bad_fc "/a(?!b) u:r:x:s0" "fc:1: PCRE-only syntax in '/a(?!b)'"
	bad_fc "/a[ u:r:x:s0" "fc:1: bad regular expression '/a\\['"
	bad_fc "/a" "fc:1: want REGEX \\[TYPE\\] CONTEXT in '/a'"
	printf '\x8a\xff\x7c\xf9rest' > "$T/fc"
	expect_error "a compiled file_contexts (.bin): give the text one" \
		"$T/img" "$BIN/mkfs.erofs" --file-contexts="$T/fc" "$T/img" "$T/src"
}

# A product tree: what the built-in table names (bin, xbin, etc/ppp, the
# fs_config files themselves, setuid and capability entries, a logical
# partition inside system) and what it does not.
builtin_tree() {
	mkdir -p "$1"/bin "$1"/xbin "$1"/etc/ppp "$1"/vendor/bin "$1"/apex/x/bin \
		"$1"/lib "$1"/product/bin "$1"/odm/bin
	for f in bin/sh bin/logd bin/run-as bin/inputflinger bin/secilc \
		bin/own bin/owndir-not xbin/su xbin/procmem etc/ppp/ip-up \
		etc/rc.local etc/hosts etc/fs_config_dirs.txt build.prop \
		vendor/bin/vd apex/x/bin/t lib/libc.so product/bin/p \
		odm/bin/o init.rc; do
		echo "$f" > "$1/$f"
	done
	mkdir -p "$1"/own/sub
	ln -s sh "$1/bin/ln"
}

# rules FILE PREFIX MODE UID GID CAPS ...: an fs_config_dirs/_files file
# as AOSP's fs_config_generator writes it.
rules() {
	python3 - "$@" <<-'PY'
	import struct, sys
	out, args = sys.argv[1], sys.argv[2:]
	data = b""
	for i in range(0, len(args), 5):
	    p = args[i].encode() + b"\0"
	    p += b"\0" * (-(16 + len(p)) % 8)
	    data += struct.pack("<4HQ", 16 + len(p), int(args[i + 1], 8),
	                        int(args[i + 2]), int(args[i + 3]),
	                        int(args[i + 4], 0)) + p
	open(out, "wb").write(data)
	PY
}

# Without a canned file, owners, modes and capabilities come from the
# product's rules under --product-out, then Android's built-in table:
# every path of the mounted image as Debian's libcutils (Android 10's
# fs_config) says, with the mount point "system" and "/".
test_android_builtin_fs_config() {
	need_root
	[ -e /usr/lib/x86_64-linux-gnu/android/libcutils.so.0 ] ||
		fail "android-libcutils is not installed (scripts/install-host-deps.sh)"
	builtin_tree "$T/src"
	mkdir -p "$T/out/system/etc" "$T/out/vendor/etc"
	rules "$T/out/system/etc/fs_config_files" \
		"system/bin/own" 0700 1000 1001 0x400 \
		"system/vendor/bin/*" 0750 0 2000 0
	rules "$T/out/system/etc/fs_config_dirs" \
		"system/own" 0710 1000 1000 0
	rules "$T/out/vendor/etc/fs_config_files" \
		"vendor/bin/vd" 0555 1 2 0
	local mp po
	for mp in system /; do
		for po in "$T/out" "$T/out/system/" -; do
			local args=(--mount-point="$mp")
			[ "$po" = - ] || args+=(--product-out="$po")
			mkfs "${args[@]}" "$T/img" "$T/src"
			mount_erofs "$T/img" "$T/m"
			python3 tests/lib/fsconfig_lines.py seen "$T/m" > "$T/seen"
			umount "$T/m"
			python3 tests/lib/fsconfig_lines.py want "$mp" "$po" "$T/src" > "$T/want"
			diff -u "$T/want" "$T/seen" > "$T/diff" ||
				fail "mount point $mp, product out $po: $(head -40 "$T/diff")"
		done
	done
	# the rules applied, not only the table; capabilities too
	mkfs --mount-point=system --product-out="$T/out" "$T/img" "$T/src"
	mount_erofs "$T/img" "$T/m"
	[ "$(stat -c '%u %g %a' "$T/m/bin/own")" = "1000 1001 700" ] ||
		fail "the product's rule for system/bin/own: $(stat -c '%u %g %a' "$T/m/bin/own")"
	[ "$(stat -c '%u %g %a' "$T/m/xbin/su")" = "0 2000 4750" ] ||
		fail "the built-in rule for system/xbin/su"
	grep -q '^/bin/run-as 0 2000 0750 c0$' <(python3 tests/lib/fsconfig_lines.py seen "$T/m") ||
		fail "run-as: $(python3 tests/lib/fsconfig_lines.py seen "$T/m" | grep run-as)"
	umount "$T/m"
	# a damaged rules file is an error, not half a table
	rm "$T/img"
	printf '\040\000\000\000' > "$T/out/system/etc/fs_config_files"
	expect_error "fs_config_files: damaged entry at byte 0" "$T/img" \
		"$BIN/mkfs.erofs" --mount-point=system --product-out="$T/out" \
		"$T/img" "$T/src"
}

#!/bin/bash
# mktree.sh DIR [PROFILE] - build a deterministic source tree for image tests.
#
# The tree exercises what an EROFS writer has to get right: file sizes around
# block boundaries, inline vs. block data, large multi-block directories,
# awkward names, every file type, large device numbers, hardlinks, special
# modes, large uids/gids, odd mtimes, xattrs in all namespaces, ACLs and
# file capabilities.  Two runs give identical trees (as seen by treecmp.py):
# all data comes from fixed seeds, and mtimes are set last.
#
# PROFILE is "default" (the default) or "big" (adds a 5 GiB sparse file).
# Needs root (chown, mknod, trusted.* xattrs), python3, attr and acl.
set -euo pipefail
export LC_ALL=C
umask 022

die() { echo "mktree.sh: $*" >&2; exit 1; }

# gen SEED SIZE: SIZE pseudo-random bytes, a pure function of SEED.
gen() {
	python3 -c 'import hashlib, sys
sys.stdout.buffer.write(hashlib.shake_128(sys.argv[1].encode()).digest(int(sys.argv[2])))' "$1" "$2"
}

# repeat STR LEN: STR repeated and cut to exactly LEN bytes.
repeat() {
	local s=$1 out=$1
	while [ ${#out} -lt "$2" ]; do out+=$s; done
	printf '%s' "${out:0:$2}"
}

# A 255-byte filler for building names.
PAD=$(repeat abcdefghijklmnopqrstuvwxyz0123456789 255)

# at OFFSET SEED LEN FILE: write LEN seeded bytes at OFFSET, keep the rest.
at() {
	gen "$2" "$3" | dd of="$4" bs=1M seek="$1" oflag=seek_bytes \
		conv=notrunc status=none
}

# Regular files: sizes around 4 KiB block boundaries, inline-sized tails.
mk_files() {
	mkdir files
	local s
	for s in 0 1 100 300 700 2000 4000 4095 4096 4097 8191 8192 8193 \
		12289 65543 1048576 1048583; do
		gen "size-$s" "$s" >"files/size_$s"
	done
	seq -w 1 40000 >files/text_counter          # compressible, 240000 bytes
	head -c 12288 /dev/zero >files/zeros_12288   # written zeros, not a hole
	truncate -s 1M files/hole_1m                 # all hole
	truncate -s 12300 files/sparse_middle        # data, hole, data
	at 0 sparse-a 4096 files/sparse_middle
	at 8192 sparse-b 4108 files/sparse_middle
}

# A directory of exactly 3000 entries spanning many blocks.
mk_bigdir() {
	mkdir bigdir
	local d=bigdir n i name len
	local -a shared=()
	# shellcheck disable=SC2016 # '$var' is a literal name
	local -a special=(
		"$(repeat A 255)" "$(repeat z 255)" "x255_${PAD:5}" "#${PAD:1}"
		"$(repeat $'\xff\x80' 255)" "-$(repeat ' -' 254)"
		"with space" " leading space" "trailing space " "  "
		$'new\nline' $'\n' $'\nleading newline' $'tab\there' $'\x01ctl'
		$'\x80' $'\xff' $'\xfe\xfd high' $'caf\xc3\xa9' $'\xe6\x97\xa5\xe6\x9c\xac'
		"-" "--" "-dash" "--long-option" "!" "!bang" "#" "#hash" "#!shebang"
		"+plus" "," "0" ".hidden" "..dots" "..." ".-" "a" "A" "ab" "abc" "abcd"
		"abcde" "*" "?" "[x]" '\backslash' "'quote" '"dq' '$var' "~tilde"
	)
	for name in "${special[@]}"; do
		printf '%s' "$name" >"$d/$name"
	done
	n=${#special[@]}
	for ((i = 0; n < 3000; i++, n++)); do
		len=$((1 + (i * 97) % 254))
		name="${i}_$PAD"
		[ "$len" -ge $((${#i} + 1)) ] || len=$((${#i} + 1))
		name=${name:0:$len}
		if ((i % 50 == 7)); then
			mkdir "$d/$name"
		elif ((i % 37 == 5)); then
			ln -s "target-$i" "$d/$name"
		elif ((i % 3 == 0)); then
			: >"$d/$name"
		else
			printf 'entry %d\n' "$i" >"$d/$name"
			((i % 50 != 1 || ${#shared[@]} >= 30)) || shared+=("$d/$name")
		fi
	done
	# The same xattr as on xattrs/shared/*, on 30 more files.
	setfattr -n user.shared -v shared-value-for-many-files "${shared[@]}"
}

# A chain of 60 nested directories with a file at the bottom.
mk_deep() {
	local p=deep i
	for ((i = 1; i <= 60; i++)); do p+=$(printf '/d%02d' "$i"); done
	mkdir -p "$p"
	echo bottom >"$p/bottom"
	echo top >deep/top
}

mk_empty_dirs() {
	mkdir -p empty emptydirs/e1 emptydirs/e2 emptydirs/nested/e3
}

# Symlinks: every way a target can look, lengths up to PATH_MAX - 1.
mk_symlinks() {
	mkdir symlinks
	local n
	ln -s a symlinks/short
	ln -s ../files/size_100 symlinks/relative
	ln -s /etc/hostname symlinks/absolute
	ln -s does/not/exist symlinks/dangling
	ln -s ../deep symlinks/to_dir
	ln -s . symlinks/dot
	ln -s loop symlinks/loop
	ln -s $'odd \n\xff target' symlinks/odd_target
	for n in 1 60 200 4000 4095; do
		ln -s "$(repeat 'component/' "$n")" "symlinks/len_$n"
	done
}

# Devices (large major/minor), a fifo and a unix socket.
mk_special() {
	mkdir special
	mknod special/chr_1_3 c 1 3
	mknod special/blk_8_0 b 8 0
	mknod special/chr_259_65539 c 259 65539
	mknod special/blk_4095_1048575 b 4095 1048575
	mknod special/chr_0_0 c 0 0
	mknod -m 0600 special/chr_4_64 c 4 64
	chown 1000:1000 special/chr_4_64
	mkfifo special/fifo
	mkfifo -m 0620 special/fifo_0620
	python3 -c 'import socket, sys
socket.socket(socket.AF_UNIX).bind(sys.argv[1])' special/socket
}

# Hardlinks: one inode under three directories, plus odd cases.
mk_hardlinks() {
	mkdir -p hardlinks/a hardlinks/b hardlinks/c/d
	gen hardlink 5000 >hardlinks/a/file
	ln hardlinks/a/file hardlinks/b/file_again
	ln hardlinks/a/file hardlinks/c/d/third_name
	: >hardlinks/a/empty
	ln hardlinks/a/empty hardlinks/a/empty_too
	ln -s ../a/file hardlinks/b/symlink
	ln -P hardlinks/b/symlink hardlinks/c/symlink_hardlink
	mkfifo hardlinks/a/fifo
	ln hardlinks/a/fifo hardlinks/b/fifo_link
	echo 'linked from bigdir too' >hardlinks/a/shared_with_bigdir
	# Replaces the empty bigdir/0_, so bigdir keeps its 3000 entries.
	ln -f hardlinks/a/shared_with_bigdir bigdir/0_
}

# mkmode MODE NAME: a small file with MODE (chmod after chown: chown clears
# setuid/setgid).
mkmode() {
	printf 'mode %s\n' "$1" >"modes/$2"
	chmod "$1" "modes/$2"
}

mk_modes() {
	mkdir modes
	mkmode 4755 setuid
	mkmode 2755 setgid
	mkmode 6711 setuid_setgid
	mkmode 7777 all_bits
	mkmode 0000 none
	mkmode 0777 rwx_all
	mkmode 0640 rw_r
	mkmode 0400 read_only
	mkmode 1644 sticky_file
	mkdir -m 1777 modes/sticky_dir
	mkdir -m 2775 modes/setgid_dir
	mkdir -m 0000 modes/dir_0000
	echo inside >modes/dir_0000/inside
	mkdir -m 0555 modes/dir_0555
	mkdir -m 0700 modes/dir_0700
}

# Owners: small and large uids/gids; large ones need extended inodes.
mk_owners() {
	mkdir owners
	local o
	for o in 0:0 1000:1000 65535:65535 65536:65536 4000000000:4000000000 \
		1000:65536 65536:0 4294967294:1; do
		echo "$o" >"owners/file_${o/:/_}"
		chown "$o" "owners/file_${o/:/_}"
	done
	mkdir owners/dir_65536
	chown 65536:65536 owners/dir_65536
	ln -s file_0_0 owners/symlink_4000000000
	chown -h 4000000000:4000000000 owners/symlink_4000000000
	mkdir -m 4750 owners/setuid_after_chown
	chown 1000:1000 owners/setuid_after_chown
	chmod 4750 owners/setuid_after_chown
}

# xattrs in every namespace, long and empty values, a shared pair.
mk_xattrs() {
	mkdir -p xattrs/shared
	local f i long name
	long=$(repeat 'long-value-0123456789-' 1000)
	for f in plain empty_value long_value binary many long_name trusted \
		security capability; do
		echo "$f" >"xattrs/$f"
	done
	setfattr -n user.plain -v hello xattrs/plain
	setfattr -n user.empty xattrs/empty_value
	setfattr -n user.long -v "$long" xattrs/long_value
	setfattr -n user.bin -v 0x00ff00fe0d0a00 xattrs/binary
	for ((i = 0; i < 40; i++)); do
		setfattr -n "user.attr_$i" -v "value $i $(repeat x "$i")" xattrs/many
	done
	name="user.$(repeat n 250)"                  # XATTR_NAME_MAX is 255
	setfattr -n "$name" -v long-name xattrs/long_name
	setfattr -n trusted.kiln -v trusted-value xattrs/trusted
	setfattr -n trusted.overlay.kiln -v 0x01 xattrs/trusted
	setfattr -n security.kiln -v security-value xattrs/security
	if command -v setcap >/dev/null; then
		setcap cap_net_raw+ep xattrs/capability
	else  # VFS_CAP_REVISION_2 | EFFECTIVE, permitted = CAP_NET_RAW (13)
		setfattr -n security.capability \
			-v 0x0100000200200000000000000000000000000000 xattrs/capability
	fi
	# The same name/value on 24 files here (and 30 in bigdir): shareable.
	for ((i = 0; i < 24; i++)); do echo "shared $i" >"xattrs/shared/f$i"; done
	setfattr -n user.shared -v shared-value-for-many-files xattrs/shared/*
	setfattr -n trusted.shared -v "$(repeat shared 300)" xattrs/shared/*
	# On a directory, a symlink, a device and a fifo (trusted.* only there).
	setfattr -n user.dir -v on-a-directory xattrs
	ln -s plain xattrs/symlink
	setfattr -h -n trusted.link -v on-a-symlink xattrs/symlink
	setfattr -n trusted.dev -v on-a-device special/chr_259_65539
	setfattr -n trusted.fifo -v on-a-fifo special/fifo
	setfattr -n user.hardlinked -v on-all-names hardlinks/a/file
}

# POSIX ACLs: an access ACL, a default ACL and a file that inherited it.
mk_acls() {
	mkdir -p acl/default_dir
	echo acl >acl/access
	setfacl -m u:1000:rw-,g:65536:r--,m::rw-,o::--- acl/access
	setfacl -d -m u::rwx,g::r-x,o::---,u:1000:rwx,m::rwx acl/default_dir
	echo inherited >acl/default_dir/inherited
	mkdir acl/default_dir/subdir_inherited
}

# A 5 GiB + 123 byte sparse file with data at 0, across 4 GiB and at the end.
mk_big() {
	mkdir big
	truncate -s $((5 * 1024 ** 3 + 123)) big/sparse_5g
	at 0 big-0 4096 big/sparse_5g
	at $((4 * 1024 ** 3 - 3)) big-4g 16 big/sparse_5g
	at $((5 * 1024 ** 3 + 100)) big-5g 23 big/sparse_5g
}

# mtimes last: nothing is created afterwards, so directories keep theirs.
set_mtimes() {
	find . -depth -exec touch -h -d @1700000000 -- {} +
	touch -h -d @0 files/size_0 symlinks/short
	touch -h -d @1 files/size_1
	touch -h -d @1234567890.123456789 files/size_4096 special/chr_1_3 deep
	touch -h -d @1700000000.999999999 files/size_100 symlinks/len_4095
	touch -h -d @1700000000.000000001 hardlinks/a/file bigdir
	touch -h -d @-1000000000.5 files/size_8192            # 1938
	touch -h -d @4102444800 files/size_65543 modes/sticky_dir   # 2100
	touch -h -d @4294967296.25 files/size_1048576         # 2106, > 2^32
	touch -h -d @1600000000.123 special/socket special/fifo xattrs/many .
}

main() {
	if [ $# -lt 1 ] || [ $# -gt 2 ]; then
		die "usage: mktree.sh DIR [default|big]"
	fi
	local dir=$1 profile=${2:-default}
	case $profile in default | big) ;; *) die "unknown profile: $profile" ;; esac
	if [ -e "$dir" ]; then
		[ -d "$dir" ] || die "$dir exists and is not a directory"
		[ -z "$(ls -A "$dir")" ] || die "$dir is not empty"
	fi
	mkdir -p "$dir"
	cd "$dir"
	mk_files
	mk_bigdir
	mk_deep
	mk_empty_dirs
	mk_symlinks
	mk_special
	mk_hardlinks
	mk_modes
	mk_owners
	mk_xattrs
	mk_acls
	[ "$profile" != big ] || mk_big
	set_mtimes
}

main "$@"

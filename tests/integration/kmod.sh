# kmod/pick-modules.sh against Debian's own kernel (the test image's, from
# boot.sh's build_image) and kmod's tools as the oracle: modinfo for what
# each module needs, modprobe on the picked tree for what it resolves there.

kver_of_board() { cat "$BOARD_OUT/kernel/kver"; }

# load_order_ok DIR KVER: every module in kiln.load comes after all the
# modules it depends on (modinfo's "depends", a hard requirement of insmod).
load_order_ok() {
	local mods=$1/lib/modules/$2 seen=" " ko name dep
	while read -r ko; do
		case $ko in kernel/*.ko) ;; *) fail "kiln.load: '$ko' is not a relative .ko path" ;; esac
		head -c 4 "$mods/$ko" | grep -q "ELF" || fail "$ko: not an uncompressed ELF module"
		for dep in $(modinfo -F depends "$mods/$ko" | tr ',' ' '); do
			case $seen in *" $dep "*) ;; *) fail "$ko loads before its dependency $dep" ;; esac
		done
		name=$(modinfo -F name "$mods/$ko")
		seen="$seen$name "
	done <"$mods/kiln.load"
	echo "$seen"
}

# The board's modules: erofs pulls libcrc32c, whose softdep pulls crc32c;
# ext4 pulls jbd2, mbcache, crc16. Contents equal the package's modules.
once_kmod_debian_modules() {
	build_image
	local kver src seen ko
	kver=$(kver_of_board)
	src=$BOARD_OUT/kernel/tree
	kmod/pick-modules.sh "$kver" "$src" "$T/d" erofs ext4 virtio_blk
	seen=$(load_order_ok "$T/d" "$kver")
	for m in erofs libcrc32c crc32c_generic ext4 jbd2 mbcache crc16 virtio_blk; do
		case $seen in *" $m "*) ;; *) fail "$m not picked (got:$seen)" ;; esac
	done
	while read -r ko; do
		orig=$(ls "$src/lib/modules/$kver/$ko"* | head -n 1)
		case $orig in
		*.xz) xz -dc "$orig" ;; *.zst) zstd -qdc "$orig" ;; *) cat "$orig" ;;
		esac | cmp - "$T/d/lib/modules/$kver/$ko" || fail "$ko differs from the package's"
	done <"$T/d/lib/modules/$kver/kiln.load"
	# kmod itself resolves erofs on the picked tree, softdep included
	modprobe -d "$T/d" -S "$kver" --show-depends erofs >"$T/dep"
	grep -q 'crc32c_generic.ko' "$T/dep" || fail "modules.dep/softdep of the picked tree lost crc32c"
	# the picked tree does not depend on where the source was
	cp -a "$src" "$T/elsewhere"
	kmod/pick-modules.sh "$kver" "$T/elsewhere" "$T/d2" erofs ext4 virtio_blk
	diff -r "$T/d" "$T/d2" || fail "output depends on the source's path"
	# nor on this host's modprobe.d (a blacklist there made crc32c vanish
	# with exit 0; a softdep there leaked into the initramfs)
	local conf=/etc/modprobe.d/zz-kiln-test-$$.conf rc=0
	mkdir -p /etc/modprobe.d
	printf 'blacklist crc32c_generic\nsoftdep erofs pre: crc16\n' >"$conf"
	kmod/pick-modules.sh "$kver" "$src" "$T/d3" erofs ext4 virtio_blk || rc=$?
	rm -f "$conf"
	[ "$rc" = 0 ] || fail "pick-modules failed with a host blacklist"
	diff -r "$T/d" "$T/d3" || fail "output depends on the host's modprobe.d"
}

# Firmware a module names by a pattern (brcmfmac's
# brcm/brcmfmac*-sdio.*.txt) or ships packed (.xz, .zst): every file the
# pattern matches in the firmware tree (not in the current directory),
# unpacked; a name with no file is reported. modinfo reads the names from
# a module made here with a .modinfo section, as the kernel's have.
test_kmod_firmware_patterns() {
	local kver=6.0-test d=$T/d/lib/modules/6.0-test fw=$T/fw/lib/firmware
	mkdir -p "$d/kernel/drivers" "$fw/brcm" "$fw/intel" "$fw/vendor" "$T/cwd/brcm"
	local i=0 l
	for l in "firmware=brcm/brcmfmac*-sdio.*.txt" "firmware=intel/qat_4xxx.bin" \
		 "firmware=vendor/z.bin" "firmware=none/absent.bin" "name=wlan"; do
		i=$((i + 1))
		echo "__attribute__((section(\".modinfo\"),used,aligned(1))) static const char m$i[] = \"$l\";"
	done >"$T/wlan.c"
	gcc -c "$T/wlan.c" -o "$d/kernel/drivers/wlan.ko" || fail "cannot build the test module"
	[ "$(modinfo -F firmware "$d/kernel/drivers/wlan.ko" | wc -l)" = 4 ] ||
		fail "modinfo does not read the test module"
	echo kernel/drivers/wlan.ko >"$d/kiln.load"
	echo pi4 >"$fw/brcm/brcmfmac43455-sdio.raspberrypi,4-model-b.txt"
	echo ap >"$fw/brcm/brcmfmac43430-sdio.AP6212.txt"
	echo pcie >"$fw/brcm/brcmfmac43455-pcie.bin"
	echo here >"$T/cwd/brcm/brcmfmac0-sdio.x.txt"	# must not be taken
	head -c 5000 /dev/urandom >"$T/qat.bin"
	xz -c --check=crc32 "$T/qat.bin" >"$fw/intel/qat_4xxx.bin.xz"
	echo z | zstd -q -c >"$fw/vendor/z.bin.zst"
	(cd "$T/cwd" && "$OLDPWD/kmod/pick-firmware.sh" "$kver" "$T/fw" "$T/d") >"$T/out" ||
		fail "pick-firmware failed"
	cat "$T/out"
	cat >"$T/want" <<-'EOF'
	firmware brcm/brcmfmac43430-sdio.AP6212.txt wlan
	firmware brcm/brcmfmac43455-sdio.raspberrypi,4-model-b.txt wlan
	firmware intel/qat_4xxx.bin wlan
	firmware vendor/z.bin wlan
	firmware-missing none/absent.bin wlan
	EOF
	diff "$T/want" "$T/out" || fail "not the firmware wanted"
	local out=$T/d/lib/firmware
	cmp "$T/qat.bin" "$out/intel/qat_4xxx.bin" || fail "qat_4xxx.bin not unpacked"
	[ "$(cat "$out/vendor/z.bin")" = z ] || fail "z.bin not unpacked"
	[ "$(cat "$out/brcm/brcmfmac43455-sdio.raspberrypi,4-model-b.txt")" = pi4 ] || fail "pi4"
	[ ! -e "$out/brcm/brcmfmac43455-pcie.bin" ] || fail "a file the pattern does not match"
	[ ! -e "$out/brcm/brcmfmac0-sdio.x.txt" ] || fail "the pattern was expanded in the cwd"
}

# .ko, .ko.xz and .ko.zst in one source tree that has no modules.dep (as
# Debian's packages ship none): each comes out uncompressed, identical.
once_kmod_compressions() {
	build_image
	local kver m f src=$T/src
	kver=$(kver_of_board)
	local from=$BOARD_OUT/kernel/tree/lib/modules/$kver/kernel
	mkdir -p "$src/lib/modules/$kver/kernel"
	for f in fs/erofs/erofs lib/libcrc32c crypto/crc32c_generic; do
		mkdir -p "$src/lib/modules/$kver/kernel/$(dirname $f)"
		m=$(ls "$from/$f.ko"* | head -n 1)
		case $m in *.xz) xz -dc "$m" ;; *.zst) zstd -qdc "$m" ;; *) cat "$m" ;; esac \
			>"$T/$(basename $f).ko"
	done
	cp "$T/erofs.ko" "$src/lib/modules/$kver/kernel/fs/erofs/erofs.ko"
	xz -c --check=crc32 "$T/libcrc32c.ko" >"$src/lib/modules/$kver/kernel/lib/libcrc32c.ko.xz"
	zstd -q -c "$T/crc32c_generic.ko" >"$src/lib/modules/$kver/kernel/crypto/crc32c_generic.ko.zst"
	kmod/pick-modules.sh "$kver" "$src" "$T/d" erofs
	[ -s "$src/lib/modules/$kver/modules.dep" ] || fail "no modules.dep made for the source"
	load_order_ok "$T/d" "$kver" >/dev/null
	local d=$T/d/lib/modules/$kver/kernel
	cmp "$T/erofs.ko" "$d/fs/erofs/erofs.ko"
	cmp "$T/libcrc32c.ko" "$d/lib/libcrc32c.ko"
	cmp "$T/crc32c_generic.ko" "$d/crypto/crc32c_generic.ko"
}

# A module that does not exist: one line naming it, non-zero exit.
once_kmod_missing_module() {
	build_image
	local kver rc=0
	kver=$(kver_of_board)
	kmod/pick-modules.sh "$kver" "$BOARD_OUT/kernel/tree" "$T/d" erofs no_such_mod \
		2>"$T/err" || rc=$?
	[ "$rc" != 0 ] || fail "exit 0 for a missing module"
	cat "$T/err"
	[ "$(wc -l <"$T/err")" = 1 ] || fail "not one line"
	grep -q "no_such_mod" "$T/err" || fail "message does not name the module"
}

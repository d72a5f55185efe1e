# The mount VM: Debian's arm64 kernel with 16 KiB pages, booted straight
# from QEMU (-cpu max: the Cortex-A57 has no 16 KiB granule) into a small
# initramfs that mounts each disk it is given as EROFS and prints what it
# holds (tests/lib/mountvm-init). It is the kernel oracle for what this
# machine's 4 KiB-page kernel cannot mount: blocks of 8 and 16 KiB.

MV_OUT=out/test-images/mountvm-16k
MV_KPKG=linux-image-6.12-arm64-16k

# mountvm_build: kernel, busybox (both arches) and initramfs, once.
mountvm_build() {
	local t=$MV_OUT/initramfs.tree kver
	if [ -f "$MV_OUT/initramfs.cpio" ] && [ -f "$MV_OUT/busybox-x86_64" ]; then
		return 0	# built by an earlier run
	fi
	mkdir -p "$MV_OUT"
	printf 'ARCH=aarch64\nKERNEL_PKG=%s\n' "$MV_KPKG" > "$MV_OUT/kernel.conf"
	boot/fetch-kernel.sh "$(pwd)/$MV_OUT/kernel.conf" "$MV_OUT/kernel" ||
		fail "cannot fetch $MV_KPKG"
	boot/build-busybox.sh aarch64 "$MV_OUT/busybox-aarch64" > "$MV_OUT/busybox.log" 2>&1 ||
		fail "busybox (aarch64): $(tail -3 "$MV_OUT/busybox.log")"
	kver=$(cat "$MV_OUT/kernel/kver")
	rm -rf "$t"
	mkdir -p "$t/bin"
	cp "$MV_OUT/busybox-aarch64" "$t/bin/busybox"
	while read -r path; do
		ln -sf busybox "$t/bin/${path##*/}"
	done < "$MV_OUT/busybox-aarch64.links"
	cp tests/lib/mountvm-init "$t/init"
	cp tests/lib/manifest.sh "$t/manifest.sh"
	kmod/pick-modules.sh "$kver" "$MV_OUT/kernel/tree" "$t" virtio_blk erofs \
		> "$MV_OUT/modules.log" 2>&1 || fail "modules: $(cat "$MV_OUT/modules.log")"
	(cd "$t" && find . | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) \
		> "$MV_OUT/initramfs.cpio.tmp" || fail "cpio failed"
	mv "$MV_OUT/initramfs.cpio.tmp" "$MV_OUT/initramfs.cpio"
	boot/build-busybox.sh x86_64 "$MV_OUT/busybox-x86_64" > "$MV_OUT/busybox.log" 2>&1 ||
		fail "busybox (x86_64): $(tail -3 "$MV_OUT/busybox.log")"
}

# mountvm_manifest DIR: DIR's manifest as the guest prints a mount's.
mountvm_manifest() {
	"$MV_OUT/busybox-x86_64" sh tests/lib/manifest.sh "$1"
}

# mountvm_run OUT IMAGE...: boots once with each IMAGE as a disk, in
# order; OUT.N gets disk N's manifest (or its mount error), OUT the
# console. Bounded: QEMU is killed after 600 s, and a guest that stops
# early ends the wait at once.
mountvm_run() {
	local out=$1 img args= n=0
	shift
	for img in "$@"; do
		args="$args -drive if=none,id=d$n,format=raw,readonly=on,file=$img"
		args="$args -device virtio-blk-pci,drive=d$n"
		n=$((n + 1))
	done
	# shellcheck disable=SC2086
	timeout 600 qemu-system-aarch64 -M virt -cpu max -smp 2 -m 1G \
		-nographic -no-reboot -nic none -kernel "$MV_OUT/kernel/vmlinuz" \
		-initrd "$MV_OUT/initramfs.cpio" \
		-append "console=ttyAMA0 panic=-1 quiet" $args > "$out" 2>&1 < /dev/null ||
		fail "mount VM failed: $(tail -5 "$out")"
	grep -q "^KILN-DONE $n" "$out" || fail "mount VM did not finish: $(tail -5 "$out")"
	for n in $(seq 0 $(($# - 1))); do
		tr -d '\r' < "$out" | sed -n "s/^KILN-M $n //p; s/^KILN-MOUNTFAIL $n /MOUNTFAIL /p" \
			> "$out.$n"
	done
}

# Kernel config fragments against Debian's linux-source-6.12 (make
# kconfig-check), and proof that the check fails when a fragment asks for
# something the kernel cannot give.

once_kconfig_fragments() {
	make --no-print-directory kconfig-check >"$T/out" 2>&1 ||
		{ cat "$T/out"; fail "make kconfig-check failed"; }
	cat "$T/out"
	grep -q '^x86_64: erofs.config qat.config held in 6\.12' "$T/out"
	grep -q '^arm64: erofs.config held in 6\.12' "$T/out"
	# and each board's own fragments
	grep -q '^x86_64: erofs.config qat.config kernel.config held in 6\.12' "$T/out"
	# 6.16's symbol is reported, not failed
	grep -q 'CONFIG_EROFS_FS_ZIP_ACCEL is not in this tree.*needs Linux 6.16' "$T/out"
}

once_kconfig_catches_impossible() {
	local rc=0
	scripts/kconfig-check.sh x86_64 tests/kconfig/impossible.config >"$T/out" 2>&1 || rc=$?
	cat "$T/out"
	[ "$rc" = 1 ] || fail "exit $rc, not 1"
	grep -q 'FAIL CONFIG_EROFS_FS_ZIP_LZMA=y did not survive: it is n' "$T/out" ||
		fail "the dropped symbol is not named"
}

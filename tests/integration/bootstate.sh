# kiln-bootstate: the A/B boot state the U-Boot script reads (two U-Boot
# environment copies on the boot partition). Sourced by tests/run.sh; each
# test_ runs against the musl, asan and aarch64 builds via $BIN.
# U-Boot's own tools are the oracle for the format: mkenvimage
# (u-boot-tools) and fw_printenv/fw_setenv (libubootenv-tool).

# bs ARGS...: the tool on the test's boot directory $T/boot.
bs() { "$BIN/kiln-bootstate" --dir "$T/boot" "$@"; }
# bs_state: the first line of `show` (order=.. a_left=.. b_left=.. seq=.. copy=..).
bs_state() { bs show | head -n 1; }
# expect_state LINE: show's first line must be exactly LINE.
expect_state() {
	local got
	got=$(bs_state) || fail "show failed"
	[ "$got" = "$1" ] || fail "state is '$got', expected '$1'"
}
# mkenv FILE VAR=VALUE...: a copy made by U-Boot's mkenvimage.
mkenv() {
	local f=$1; shift
	printf '%s\n' "$@" | mkenvimage -s 4096 -o "$f" - ||
		fail "mkenvimage failed"
}
# vars FILE: a copy's entries, one a line (through the first empty one).
vars() { tail -c +5 "$1" | tr '\0' '\n' | sed '/^$/q' | sed '/^$/d'; }
need_uboot_tools() {
	command -v mkenvimage >/dev/null && command -v fw_printenv >/dev/null ||
		skip "needs u-boot-tools and libubootenv-tool (scripts/install-host-deps.sh)"
}
# fwconf N: a libubootenv config for copy N (file, offset, env size).
fwconf() { echo "$T/boot/state$1.env 0x0 0x1000" > "$T/fw$1.conf"; echo "$T/fw$1.conf"; }

test_bootstate_uboot_interop() {
	need_uboot_tools
	mkdir "$T/boot"
	# mkenvimage -> tool: its 0xff padding and our variables
	mkenv "$T/boot/state0.env" "BOOT_ORDER=B A" BOOT_A_LEFT=1 BOOT_B_LEFT=2 \
		KILN_SEQ=7 "OTHER=keep me"
	expect_state "order=B A a_left=1 b_left=2 seq=7 copy=0"
	bs show > "$T/show"
	assert_grep '^state1.env: not valid: missing$' "$T/show"

	# tool -> fw_printenv: the copy it writes is the other one, seq + 1
	bs mark-bad A > /dev/null
	fw_printenv -c "$(fwconf 1)" > "$T/fw" || fail "fw_printenv refused our copy"
	for v in "BOOT_ORDER=B A" BOOT_A_LEFT=0 BOOT_B_LEFT=2 KILN_SEQ=8 "OTHER=keep me"; do
		grep -qx "$v" "$T/fw" || fail "fw_printenv lacks '$v': $(cat "$T/fw")"
	done
	# byte for byte what mkenvimage makes of the same entries, zero padded
	printf '%s\n' "BOOT_ORDER=B A" BOOT_A_LEFT=0 BOOT_B_LEFT=2 KILN_SEQ=8 \
		"OTHER=keep me" | mkenvimage -p 0 -s 4096 -o "$T/want" -
	cmp "$T/want" "$T/boot/state1.env" || fail "our copy differs from mkenvimage's"

	# fw_setenv -> tool: a value set in the winner, then a newer seq in state0
	fw_setenv -c "$(fwconf 1)" BOOT_B_LEFT 1 || fail "fw_setenv failed"
	expect_state "order=B A a_left=0 b_left=1 seq=8 copy=1"
	fw_setenv -c "$(fwconf 0)" KILN_SEQ 20 || fail "fw_setenv failed"
	expect_state "order=B A a_left=1 b_left=2 seq=20 copy=0"
	bs mark-good B > /dev/null
	fw_printenv -c "$(fwconf 1)" KILN_SEQ > "$T/fw"
	assert_grep '^KILN_SEQ=21$' "$T/fw"
}

# two_copies: state0 seq 2 (order B A, a_left 0) wins over state1 seq 1.
two_copies() {
	rm -rf "$T/boot"; mkdir "$T/boot"
	bs init
	bs set-primary B > /dev/null	# state1, seq 1
	bs mark-bad A > /dev/null	# state0, seq 2
	expect_state "order=B A a_left=0 b_left=3 seq=2 copy=0"
}

# A write after state0 went bad must go to state0, never to state1.
write_spares_state1() {
	cp "$T/boot/state1.env" "$T/good1"
	bs mark-good A > /dev/null || fail "write after damage failed"
	cmp "$T/good1" "$T/boot/state1.env" || fail "the good copy was written"
	expect_state "order=B A a_left=3 b_left=3 seq=2 copy=0"
}

test_bootstate_newest_wins() {
	mkdir -p "$T/boot"
	two_copies
	# the newer copy damaged: one flipped byte in its variables
	printf '\x01' | dd of="$T/boot/state0.env" bs=1 seek=10 conv=notrunc 2>/dev/null
	expect_state "order=B A a_left=3 b_left=3 seq=1 copy=1"
	bs show > "$T/show"
	assert_grep '^state0.env: not valid: CRC mismatch$' "$T/show"
	write_spares_state1
	# a flipped byte in the padding, which the CRC covers too
	two_copies
	printf '\x01' | dd of="$T/boot/state0.env" bs=1 seek=4000 conv=notrunc 2>/dev/null
	expect_state "order=B A a_left=3 b_left=3 seq=1 copy=1"
	# cut short at several lengths
	for len in 0 1 4 5 60 4095; do
		two_copies
		truncate -s "$len" "$T/boot/state0.env"
		expect_state "order=B A a_left=3 b_left=3 seq=1 copy=1"
		write_spares_state1
	done
	# missing
	two_copies
	rm "$T/boot/state0.env"
	expect_state "order=B A a_left=3 b_left=3 seq=1 copy=1"
	write_spares_state1
	# the older copy damaged: the newer one still wins
	two_copies
	truncate -s 100 "$T/boot/state1.env"
	expect_state "order=B A a_left=0 b_left=3 seq=2 copy=0"
	# a tie goes to state0; the CRC is right but a variable is missing
	two_copies
	cp "$T/boot/state0.env" "$T/boot/state1.env"
	expect_state "order=B A a_left=0 b_left=3 seq=2 copy=0"
	if command -v mkenvimage >/dev/null; then
		mkenv "$T/boot/state0.env" "BOOT_ORDER=A B" BOOT_A_LEFT=3 BOOT_B_LEFT=3
		bs show > "$T/show"
		assert_grep '^state0.env: not valid: no decimal KILN_SEQ$' "$T/show"
		assert_grep 'copy=1$' "$T/show"
	fi
	# neither valid: the defaults, said so; the write goes to state0
	head -c 4096 /dev/zero > "$T/boot/state0.env"
	head -c 4096 /dev/zero > "$T/boot/state1.env"
	bs show > "$T/show"
	assert_grep '^order=A B a_left=3 b_left=3 seq=0 copy=none$' "$T/show"
	assert_grep '^no valid copy' "$T/show"
	bs mark-bad B > /dev/null 2> "$T/err"
	assert_grep 'no valid state copy' "$T/err"
	expect_state "order=A B a_left=3 b_left=0 seq=1 copy=0"
}

# Writes cut short. The copy written is never the one in use, so a write
# that fails or is killed half way may leave it torn (it fails its CRC),
# and the other copy is read: the state as it was. A whole copy is
# overwritten in place (on a FAT: no cluster allocated, no directory entry
# moved, which a power cut during a rename was seen to break); a missing
# one is made as a temporary file, synced and renamed.
test_bootstate_atomic_write() {
	mkdir "$T/boot"
	bs init
	bs mark-good A > /dev/null	# state1 seq 1 wins; the next write is state0
	cp "$T/boot/state1.env" "$T/old1"
	# the write fails after N bytes: an error, the winner as it was (the
	# variables take the first ~60 bytes; a write cut after them leaves the
	# whole new copy, the rest is padding as before)
	for n in 0 1 4 30; do
		# (fail's own message must not go to $T/err: no assert_fails here)
		! KILN_BOOTSTATE_FAIL_AFTER=$n "$BIN/kiln-bootstate" \
			--dir "$T/boot" mark-bad A 2> "$T/err" ||
			fail "a write that failed after $n bytes succeeded"
		assert_grep 'No space left on device' "$T/err"
		cmp "$T/old1" "$T/boot/state1.env" || fail "state1 changed by a failed write ($n)"
		expect_state "order=A B a_left=3 b_left=3 seq=1 copy=1"
	done
	# killed in the middle of the write (a power cut): state0 torn, state1
	# read; the next write makes state0 whole again
	local rc=0
	KILN_BOOTSTATE_CRASH_AFTER=10 "$BIN/kiln-bootstate" --dir "$T/boot" \
		mark-bad A > /dev/null 2>&1 || rc=$?
	[ "$rc" = 137 ] || fail "the crash hook did not kill the tool (exit $rc)"
	[ "$(stat -c %s "$T/boot/state0.env")" = 4096 ] || fail "state0 not written in place"
	bs show > "$T/show"
	assert_grep '^state0.env: not valid: ' "$T/show"
	expect_state "order=A B a_left=3 b_left=3 seq=1 copy=1"
	bs mark-bad A > /dev/null
	expect_state "order=A B a_left=0 b_left=3 seq=2 copy=0"
	cmp "$T/old1" "$T/boot/state1.env" || fail "state1 written"
	# a copy missing: made under a temporary name; a crash there leaves
	# only the temporary file, ignored and replaced by the next write
	rm "$T/boot/state1.env"
	rc=0
	KILN_BOOTSTATE_CRASH_AFTER=100 "$BIN/kiln-bootstate" --dir "$T/boot" \
		mark-good A > /dev/null 2>&1 || rc=$?
	[ "$rc" = 137 ] || fail "the crash hook did not kill the tool (exit $rc)"
	[ ! -e "$T/boot/state1.env" ] || fail "a partial state1.env"
	[ "$(stat -c %s "$T/boot/state1.env.tmp")" = 100 ] || fail "no partial temporary file"
	bs mark-good A > /dev/null
	[ ! -e "$T/boot/state1.env.tmp" ] || fail "stale temporary file not replaced"
	expect_state "order=A B a_left=3 b_left=3 seq=3 copy=1"
	# the system calls: a whole copy is opened for writing without
	# truncation and synced; a missing one is created, synced, renamed
	[ "$BUILD" != aarch64 ] || return 0	# strace would trace qemu-user
	command -v strace > /dev/null || return 0
	bs_trace() {
		ASAN_OPTIONS=detect_leaks=0 strace -o "$T/trace" -e trace=open,openat,creat,truncate,ftruncate,fsync,fdatasync,rename,renameat,renameat2 \
			"$BIN/kiln-bootstate" --dir "$T/boot" "$@" > /dev/null ||
			fail "$* under strace failed"
		grep -v '= -1 ' "$T/trace" |
			grep -E 'state[01]\.env(\.tmp)?", O_WRONLY|^fsync|^rename|truncate' |
			sed -E 's/^(openat|fsync|rename|[a-z]*truncate)[a-z0-9]*\(.*/\1/' | tr '\n' ' '
	}
	[ "$(bs_trace mark-good A)" = "openat fsync " ] ||
		fail "in place: not open, fsync: $(cat "$T/trace")"
	! grep -q 'O_TRUNC' "$T/trace" || fail "a copy truncated: $(cat "$T/trace")"
	rm "$T/boot/state0.env"
	[ "$(bs_trace mark-good A)" = "openat fsync rename fsync fsync " ] ||
		fail "a new copy: not create, fsync, rename, fsync, fsync of the directory: $(cat "$T/trace")"
}

# A filesystem really full: FAT as on the device when this kernel has vfat
# (and dosfstools is installed), else a small tmpfs.
test_bootstate_full_disk() {
	need_root
	mkdir "$T/boot"
	if grep -qw vfat /proc/filesystems && command -v mkfs.vfat >/dev/null; then
		truncate -s 1M "$T/fat.img"
		mkfs.vfat "$T/fat.img" > /dev/null
		mount -o loop "$T/fat.img" "$T/boot" || fail "cannot loop-mount FAT"
	else
		mount -t tmpfs -o size=64k tmpfs "$T/boot" || fail "cannot mount tmpfs"
	fi
	echo "$T/boot" >> "$T/.mounts"
	bs init
	bs set-primary B > /dev/null
	expect_state "order=B A a_left=3 b_left=3 seq=1 copy=1"
	cp "$T/boot/state0.env" "$T/old0"; cp "$T/boot/state1.env" "$T/old1"
	dd if=/dev/zero of="$T/boot/fill" bs=4k 2>/dev/null || true
	sync
	# a whole copy is overwritten in place: no space needed
	bs mark-bad A > /dev/null || fail "an in-place write failed on a full disk"
	expect_state "order=B A a_left=0 b_left=3 seq=2 copy=0"
	cp "$T/boot/state0.env" "$T/old0"
	# a missing copy needs a new file: refused, the state as it was
	rm "$T/boot/state1.env"
	dd if=/dev/zero of="$T/boot/fill2" bs=4k 2>/dev/null || true
	sync
	! bs mark-good A 2> "$T/err" || fail "a new copy was made on a full disk"
	assert_grep 'No space left on device' "$T/err"
	cmp "$T/old0" "$T/boot/state0.env" || fail "state0 changed on a full disk"
	[ ! -e "$T/boot/state1.env" ] || fail "a state1.env on a full disk"
	rm "$T/boot/fill" "$T/boot/fill2"
	bs mark-good A > /dev/null
	expect_state "order=B A a_left=3 b_left=3 seq=3 copy=1"
	ls -a "$T/boot" > "$T/ls"
	assert_fails grep -q tmp "$T/ls"
}

test_bootstate_commands() {
	mkdir "$T/boot"
	bs init
	cmp "$T/boot/state0.env" "$T/boot/state1.env" || fail "init: copies differ"
	expect_state "order=A B a_left=3 b_left=3 seq=0 copy=0"
	bs set-primary B > "$T/out"
	assert_grep '^order=B A a_left=3 b_left=3 seq=1 copy=1$' "$T/out"
	bs mark-bad B > /dev/null
	expect_state "order=B A a_left=3 b_left=0 seq=2 copy=0"
	bs mark-bad A > /dev/null
	expect_state "order=B A a_left=0 b_left=0 seq=3 copy=1"
	# mark-good: the running slot from the command line, the last kiln.slot=
	echo "console=ttyS0 kiln.slot=A kiln.slot=B quiet" > "$T/cmdline"
	bs --cmdline "$T/cmdline" mark-good > /dev/null
	expect_state "order=B A a_left=0 b_left=3 seq=4 copy=0"
	bs mark-good A > /dev/null
	expect_state "order=B A a_left=3 b_left=3 seq=5 copy=1"
	# set-primary resets the tries and keeps the other slots' order
	bs mark-bad A > /dev/null
	bs set-primary A > /dev/null
	expect_state "order=A B a_left=3 b_left=3 seq=7 copy=1"
	bs --json show > "$T/json"
	assert_grep '^\{"order":"A B","a_left":3,"b_left":3,"seq":7,"copy":1,"copies":\[\{"valid":true,"seq":6\},\{"valid":true,"seq":7\}\]\}$' "$T/json"
	python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/json"

	# nothing written on any error below
	cp -a "$T/boot" "$T/before"
	echo "console=ttyS0 root=/dev/sda2" > "$T/nocmd"
	! bs --cmdline "$T/nocmd" mark-good 2> "$T/err" ||
		fail "mark-good without kiln.slot= succeeded"
	assert_grep 'no kiln.slot=A\|B in' "$T/err"
	local rc
	for args in "" "bogus" "mark-bad" "set-primary" "mark-bad C" "mark-bad a" \
		"mark-bad AB" "mark-good A B" "show extra" "init x" "--bogus show" \
		"--dir"; do
		rc=0; bs $args > "$T/out" 2> "$T/err" || rc=$?
		[ "$rc" = 2 ] || fail "'$args': exit $rc, not 2 (usage)"
		[ "$(wc -l < "$T/err")" = 1 ] || fail "'$args': not one line: $(cat "$T/err")"
		assert_grep '^kiln-bootstate: ' "$T/err"
	done
	rc=0; bs --cmdline "$T/nonexistent" mark-good 2> "$T/err" || rc=$?
	[ "$rc" = 1 ] || fail "missing cmdline file: exit $rc, not 1"
	diff -r "$T/before" "$T/boot" || fail "a refused command wrote"
	# an unusable directory: exit 1, one line naming it
	for d in "$T/nonexistent" "$T/before/state0.env"; do
		rc=0; "$BIN/kiln-bootstate" --dir "$d" show 2> "$T/err" || rc=$?
		[ "$rc" = 1 ] || fail "--dir $d: exit $rc, not 1"
		assert_grep "^kiln-bootstate: $d: " "$T/err"
	done
	"$BIN/kiln-bootstate" --help > "$T/help"
	assert_grep 'Exit status' "$T/help"

	# variables other than ours survive a write; BOOT_ORDER of one slot
	if command -v mkenvimage >/dev/null; then
		mkenv "$T/boot/state0.env" BOOT_ORDER=A BOOT_A_LEFT=2 BOOT_B_LEFT=0 \
			KILN_SEQ=50 bootargs_extra=quiet "dtb=bcm2711 rpi.dtb"
		bs set-primary B > /dev/null
		expect_state "order=B A a_left=2 b_left=3 seq=51 copy=1"
		vars "$T/boot/state1.env" > "$T/vars"
		assert_grep '^bootargs_extra=quiet$' "$T/vars"
		assert_grep '^dtb=bcm2711 rpi.dtb$' "$T/vars"
		mkenv "$T/boot/state0.env" BOOT_ORDER=B BOOT_A_LEFT=2 BOOT_B_LEFT=0 KILN_SEQ=60
		bs set-primary A > /dev/null
		expect_state "order=A B a_left=3 b_left=0 seq=61 copy=1"
	fi
}

# Garbage copies: refused with a reason, no crash (the asan build checks
# every read), and the good copy used. Python (slow to start) makes every
# crafted copy in one run: DIR/N.env, the reason expected in DIR/N.why.
craft_copies() {
	python3 - "$1" <<'PY'
import os, sys, zlib, struct
d = sys.argv[1]
def copy(name, data, why, pad=True):
    if pad and len(data) < 4092:
        data = data.ljust(4092, b"\0")
    open(f"{d}/{name}.env", "wb").write(struct.pack("<I", zlib.crc32(data)) + data)
    open(f"{d}/{name}.why", "w").write(why)
def vars(order=b"A B", a=b"3", b=b"3", seq=b"5"):
    return b"BOOT_ORDER=%s\0BOOT_A_LEFT=%s\0BOOT_B_LEFT=%s\0KILN_SEQ=%s\0" % (order, a, b, seq)
cases = [
    (b"noequals\0", "entry without a name=value form"),
    (b"=value\0", "entry without a name=value form"),
    (vars(order=b"A C"), "BOOT_ORDER is not slots A/B"),
    (vars(order=b"A A"), "BOOT_ORDER is not slots A/B"),
    (vars(order=b"A B B"), "BOOT_ORDER is not slots A/B"),
    (vars(order=b"A B B B B"), "BOOT_ORDER is not slots A/B"),
    (vars(order=b"AB"), "BOOT_ORDER is not slots A/B"),
    (vars(order=b" "), "BOOT_ORDER is not slots A/B"),
    (vars(a=b"-1"), "BOOT_A_LEFT is not 0..9"),
    (vars(b=b"0x3"), "BOOT_B_LEFT is not 0..9"),
    (vars(b=b""), "BOOT_B_LEFT is not 0..9"),
    # the script counts tries down in hex: 10 - 1 is f
    (vars(a=b"10"), "BOOT_A_LEFT is not 0..9"),
    (vars(b=b"03"), "BOOT_B_LEFT is not 0..9"),
    (vars(seq=b"18446744073709551615"), "no decimal KILN_SEQ"),
    (vars(seq=b"99999999999999999999999"), "no decimal KILN_SEQ"),
    # U-Boot's test reads 010 as octal 8
    (vars(seq=b"010"), "no decimal KILN_SEQ"),
    # the script's BCD count overflows past 16 digits
    (vars(seq=b"9999999999999999"), "no decimal KILN_SEQ"),
    (b"BOOT_ORDER=" + b"A" * 4081, "entry runs past the end"),
    (b"".join(b"v%d=\0" % i for i in range(2000)) + b"\0", "more than 1024 variables"),
]
for i, (data, why) in enumerate(cases):
    copy(f"case{i}", data, why)
# a right CRC over random bytes gets past the CRC into the parser
for i in range(40):
    copy(f"random{i}", os.urandom(1 + int.from_bytes(os.urandom(2), "little") % 5000), "", pad=False)
# a right CRC and every variable, but not the 4096 bytes U-Boot loads
copy("case_short", vars(seq=b"7"), "not 4096 bytes", pad=False)
copy("maxseq", vars(seq=b"9999999999999998"), "")
# duplicates: the last one counts, as with `env import`
copy("dup", vars(seq=b"1") + b"KILN_SEQ=9\0BOOT_A_LEFT=1\0", "")
PY
}

test_bootstate_hostile_copies() {
	mkdir "$T/boot" "$T/c"
	bs init
	bs mark-bad B > /dev/null	# state1 seq 1 is the good copy
	craft_copies "$T/c"
	local f
	for f in "$T"/c/case*.env; do
		cp "$f" "$T/boot/state0.env"
		bs show > "$T/show" || fail "show failed on $f"
		assert_grep "^state0.env: not valid: $(cat "${f%.env}.why")\$" "$T/show"
		assert_grep 'seq=1 copy=1$' "$T/show"
	done
	for f in "$T"/c/random*.env; do
		cp "$f" "$T/boot/state0.env"
		bs show > "$T/show" || fail "show failed on $f"
	done
	cp "$T/c/dup.env" "$T/boot/state0.env"
	expect_state "order=A B a_left=1 b_left=3 seq=9 copy=0"
	# the largest seq is read; one more is not written (it could not be
	# read back), and nothing changes
	cp "$T/c/maxseq.env" "$T/boot/state0.env"
	expect_state "order=A B a_left=3 b_left=3 seq=9999999999999998 copy=0"
	local rc=0
	bs mark-bad A > /dev/null 2> "$T/err" || rc=$?
	[ "$rc" != 0 ] || fail "a seq past the limit was written"
	assert_grep 'KILN_SEQ is at its limit' "$T/err"
	expect_state "order=A B a_left=3 b_left=3 seq=9999999999999998 copy=0"
	# random bytes of random sizes
	for i in $(seq 1 40); do
		head -c $((RANDOM % 5000)) /dev/urandom > "$T/boot/state0.env"
		bs show > "$T/show" || fail "show failed on random bytes"
		assert_grep 'seq=1 copy=1$' "$T/show"
	done
	# a huge file, a FIFO (must not hang the tool), a directory
	truncate -s 65537 "$T/boot/state0.env"
	bs show > "$T/show"
	assert_grep '^state0.env: not valid: larger than 65536 bytes$' "$T/show"
	rm "$T/boot/state0.env"; mkfifo "$T/boot/state0.env"
	bs show > "$T/show"
	assert_grep '^state0.env: not valid: not a regular file$' "$T/show"
	rm "$T/boot/state0.env"; mkdir "$T/boot/state0.env"
	bs show > "$T/show"
	assert_grep '^state0.env: not valid: not a regular file$' "$T/show"
}

# Update bundles on the build host: kiln-bundle makes and checks them,
# kiln-update installs them onto a device made of files (a slot image,
# the A/B state directory, a data directory) and refuses what it must,
# leaving the device as it was. The booted device's tests: qemu_aarch64.sh.

# ota_keys: a key pair in $T/k.sec, $T/k.pub
ota_keys() {
	"$BIN/kiln-bundle" keygen "$T/k.sec" "$T/k.pub" || fail "keygen failed"
}

# ota_device VERSION: a device running slot A of VERSION for board
# qemu-aarch64: $T/dev/{etc,state,data,slotB}; the A/B state fresh.
ota_device() {
	rm -rf "$T/dev"
	mkdir -p "$T/dev/etc" "$T/dev/state" "$T/dev/data/apps/app"
	echo qemu-aarch64 >"$T/dev/etc/board"
	echo "$1" >"$T/dev/etc/version"
	cp "$T/k.pub" "$T/dev/etc/bundle.pub"
	echo old >"$T/dev/data/apps/app/old-file"
	truncate -s 16M "$T/dev/slotB"
	"$BIN/kiln-bootstate" --dir "$T/dev/state" init || fail "bootstate init failed"
}

# ota_update ARGS...: kiln-update on the device; its stderr in $T/err
ota_update() {
	"$BIN/kiln-update" --pubkey "$T/dev/etc/bundle.pub" \
		--board-file "$T/dev/etc/board" --version-file "$T/dev/etc/version" \
		--slot A --slot-dev "$T/dev/slotB" --state-dir "$T/dev/state" \
		--data "$T/dev/data" --fsck "$BIN/fsck.erofs" "$@" 2>"$T/err"
}

# ota_payloads: $T/root.erofs (an EROFS of tools/) and $T/app.tar.zst (a
# tree with a subdirectory and a relative symlink, from $T/app)
ota_payloads() {
	"$BIN/mkfs.erofs" -zlz4hc "$T/root.erofs" tools >/dev/null || fail "mkfs failed"
	mkdir -p "$T/app/sub"
	echo hello >"$T/app/sub/f"
	head -c 300000 /dev/urandom >"$T/app/big"
	ln -s sub/f "$T/app/link"
	chmod 0750 "$T/app"	# the tree's top keeps its mode and time
	touch -d @1600000000 "$T/app"
	tar --sort=name -C "$T/app" -cf - . | zstd -q -c >"$T/app.tar.zst" ||
		fail "cannot make app.tar.zst"
}

# ota_bundle OUT VERSION [BOARD]: a bundle of both payloads
ota_bundle() {
	"$BIN/kiln-bundle" create --key "$T/k.sec" --version "$2" \
		--compatible "${3:-qemu-aarch64}" --rootfs "$T/root.erofs" \
		--files "$T/app.tar.zst:apps/app" "$1" >/dev/null || fail "create failed"
}

# ota_untouched: the device is as ota_device left it (slot A first, its
# data, no staging left), except for slot B's tries.
ota_untouched() {
	"$BIN/kiln-bootstate" --dir "$T/dev/state" show >"$T/show"
	assert_grep '^order=A B a_left=3 ' "$T/show"
	[ "$(cat "$T/dev/data/apps/app/old-file")" = old ] || fail "the data changed"
	[ -z "$(ls -A "$T/dev/data/.kiln-update" 2>/dev/null)" ] ||
		fail "staging left behind: $(ls -A "$T/dev/data/.kiln-update")"
}

# ota_refused WHY ARGS...: kiln-update exits 1 with one error line
# matching WHY, and the device is untouched.
ota_refused() {
	local why=$1 rc=0
	shift
	ota_update "$@" >/dev/null || rc=$?
	cat "$T/err"
	[ "$rc" = 1 ] || fail "exit $rc, not 1 (refused)"
	[ "$(grep -c '^kiln-update: error: ' "$T/err")" = 1 ] || fail "not one error line"
	assert_grep "^kiln-update: error: .*$why" "$T/err"
	ota_untouched
}

# A bundle is a tar stream: manifest, signature, payloads in order;
# verify checks it all, with the right key only; show needs no key.
test_ota_bundle_format() {
	ota_keys
	ota_payloads
	SOURCE_DATE_EPOCH=1700000000 ota_bundle "$T/b.kiln" 1.2
	tar -tf "$T/b.kiln" >"$T/members" || fail "not a tar"
	printf 'manifest\nmanifest.sig\nroot.erofs\napp.tar.zst\n' | diff - "$T/members" ||
		fail "members"
	tar -xOf "$T/b.kiln" manifest >"$T/manifest"
	cat "$T/manifest"
	assert_grep '^kiln-bundle 1$' "$T/manifest"
	assert_grep '^compatible qemu-aarch64$' "$T/manifest"
	assert_grep "^payload rootfs root.erofs $(stat -c %s "$T/root.erofs") $(sha256sum <"$T/root.erofs" | cut -d' ' -f1)\$" "$T/manifest"
	assert_grep "^payload files app.tar.zst [0-9]+ $(sha256sum <"$T/app.tar.zst" | cut -d' ' -f1) apps/app\$" "$T/manifest"
	[ "$(tar -xOf "$T/b.kiln" manifest.sig | wc -c)" = 64 ] || fail "signature size"
	"$BIN/kiln-bundle" verify --pubkey "$T/k.pub" "$T/b.kiln" >"$T/out" || fail "verify failed"
	assert_grep '^verified: signature and 2 payload' "$T/out"
	"$BIN/kiln-bundle" verify --pubkey "$T/k.pub" - <"$T/b.kiln" >/dev/null ||
		fail "verify from a pipe failed"
	"$BIN/kiln-bundle" show "$T/b.kiln" | cmp - "$T/manifest" || fail "show"
	# the same inputs and time: the same bytes
	SOURCE_DATE_EPOCH=1700000000 ota_bundle "$T/b2.kiln" 1.2
	cmp "$T/b.kiln" "$T/b2.kiln" || fail "not reproducible"
	# another key
	"$BIN/kiln-bundle" keygen "$T/o.sec" "$T/o.pub"
	assert_fails "$BIN/kiln-bundle" verify --pubkey "$T/o.pub" "$T/b.kiln"
	# a key is never replaced; bad usage is 2
	assert_fails "$BIN/kiln-bundle" keygen "$T/k.sec" "$T/x.pub"
	local rc=0
	"$BIN/kiln-bundle" create --key "$T/k.sec" "$T/x" 2>/dev/null || rc=$?
	[ "$rc" = 2 ] || fail "usage: exit $rc"
	rc=0
	"$BIN/kiln-bundle" create --key "$T/k.sec" --version 1.x --compatible b \
		--rootfs "$T/root.erofs" "$T/x" 2>/dev/null || rc=$?
	[ "$rc" = 2 ] || fail "bad version: exit $rc"
	[ ! -e "$T/x" ] || fail "a bundle was left after a failure"
	# a files target inside another's: the outer tree's exchange would
	# take the inner payload away with the old tree
	cp "$T/app.tar.zst" "$T/app2.tar.zst"
	expect_error "targets nest" "$T/x" "$BIN/kiln-bundle" create \
		--key "$T/k.sec" --version 1.3 --compatible b \
		--files "$T/app.tar.zst:apps/app/conf" \
		--files "$T/app2.tar.zst:apps/app" "$T/x"
	# at most 16 payloads, said in one line
	local many=() k
	for k in $(seq 17); do
		cp "$T/app.tar.zst" "$T/p$k.tar.zst"
		many+=(--files "$T/p$k.tar.zst:t$k")
	done
	expect_error "more than 16 payloads" "$T/x" "$BIN/kiln-bundle" create \
		--key "$T/k.sec" --version 1.3 --compatible b "${many[@]}" "$T/x"
}

# From a file, then (a newer one) from a pipe: the slot holds the image,
# the data tree is the source's, the new slot boots next with 3 tries.
test_ota_install() {
	ota_keys
	ota_payloads
	ota_device 1.0
	ota_bundle "$T/b.kiln" 1.1
	ota_update "$T/b.kiln" >"$T/out" || { cat "$T/err"; fail "install failed"; }
	cat "$T/err"
	assert_grep '^kiln-update: installed 1.1$' "$T/err"
	cmp -n "$(stat -c %s "$T/root.erofs")" "$T/root.erofs" "$T/dev/slotB" ||
		fail "slot B is not the image"
	diff -r "$T/app" "$T/dev/data/apps/app" || fail "the data tree differs"
	[ "$(readlink "$T/dev/data/apps/app/link")" = sub/f ] || fail "symlink"
	[ "$(stat -c '%a %Y' "$T/dev/data/apps/app")" = "750 1600000000" ] ||
		fail "the tree's top: $(stat -c '%a %Y' "$T/dev/data/apps/app")"
	"$BIN/kiln-bootstate" --dir "$T/dev/state" show >"$T/show"
	assert_grep '^order=B A a_left=3 b_left=3 ' "$T/show"
	[ -z "$(ls -A "$T/dev/data/.kiln-update")" ] || fail "staging left behind"
	# streamed, with --json
	ota_device 1.0
	ota_bundle "$T/b2.kiln" 2.0
	cat "$T/b2.kiln" | ota_update --json - >"$T/json" || { cat "$T/err"; fail "pipe failed"; }
	python3 - "$T/json" <<'PY' || fail "--json: $(cat "$T/json")"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert ev[-1] == {"event": "result", "ok": True, "message": "installed 2.0"}, ev[-1]
steps = [e["step"] for e in ev if e["event"] == "step"]
assert steps == ["checking", "writing", "unpacking", "checking", "committing", "switching"], steps
PY
	diff -r "$T/app" "$T/dev/data/apps/app" || fail "the data tree differs"
	# every file synced on its own (the slow way, for comparison): the same
	ota_device 1.0
	ota_update --fsync-each "$T/b2.kiln" >/dev/null || { cat "$T/err"; fail "--fsync-each failed"; }
	diff -r "$T/app" "$T/dev/data/apps/app" || fail "the data tree differs (--fsync-each)"
}

# Refused with one line, the device untouched: a changed manifest (bad
# signature), another key, another board, an older or the same version,
# a stream cut short, a payload changed after signing, a member added.
test_ota_refusals() {
	ota_keys
	ota_payloads
	ota_device 1.5
	ota_bundle "$T/b.kiln" 1.6
	# a byte of the manifest
	cp "$T/b.kiln" "$T/bad.kiln"
	printf '7' | dd of="$T/bad.kiln" bs=1 seek=$((512 + 22)) conv=notrunc status=none
	ota_refused 'bad signature' "$T/bad.kiln"
	"$BIN/kiln-bundle" keygen "$T/o.sec" "$T/o.pub"
	"$BIN/kiln-bundle" create --key "$T/o.sec" --version 1.6 --compatible qemu-aarch64 \
		--rootfs "$T/root.erofs" "$T/other.kiln" >/dev/null
	ota_refused 'bad signature' "$T/other.kiln"
	ota_bundle "$T/board.kiln" 1.6 rpi4
	ota_refused "for board 'rpi4', this is 'qemu-aarch64'" "$T/board.kiln"
	ota_bundle "$T/old.kiln" 1.4
	ota_refused 'not newer than the running 1.5' "$T/old.kiln"
	ota_bundle "$T/same.kiln" 1.5
	ota_refused 'not newer' - <"$T/same.kiln"
	# cut short: in the root image, and in the file tree
	head -c 100000 "$T/b.kiln" >"$T/cut.kiln"
	ota_refused 'Truncated|cut short' - <"$T/cut.kiln"
	head -c $(($(stat -c %s "$T/b.kiln") - 2000)) "$T/b.kiln" >"$T/cut2.kiln"
	ota_refused 'Truncated|cut short|app.tar.zst' "$T/cut2.kiln"
	# a byte of each payload (the signature holds, the SHA-256 does not)
	cp "$T/b.kiln" "$T/p1.kiln"
	printf 'X' | dd of="$T/p1.kiln" bs=1 seek=$((3 * 512 + 5000)) conv=notrunc status=none
	ota_refused 'root.erofs: SHA-256 differs' "$T/p1.kiln"
	cp "$T/b.kiln" "$T/p2.kiln"
	local off
	off=$(python3 -c "import tarfile,sys; t=tarfile.open(sys.argv[1]); print([m.offset_data for m in t if m.name=='app.tar.zst'][0] + 20)" "$T/b.kiln")
	printf 'X' | dd of="$T/p2.kiln" bs=1 seek="$off" conv=notrunc status=none
	ota_refused 'app.tar.zst' "$T/p2.kiln"
	# a member after the last payload
	cp "$T/b.kiln" "$T/extra.kiln"
	python3 - "$T/extra.kiln" <<'PY'
import io, sys, tarfile
t = tarfile.open(sys.argv[1], "a", format=tarfile.USTAR_FORMAT)
i = tarfile.TarInfo("evil.sh"); data = b"echo hi\n"; i.size = len(data)
t.addfile(i, io.BytesIO(data)); t.close()
PY
	ota_refused "member 'evil.sh' after the last payload" "$T/extra.kiln"
	# not a bundle at all
	head -c 5000 /dev/urandom >"$T/junk"
	ota_refused 'bundle' "$T/junk"
}

# File trees that would write outside their target, or make devices, are
# refused whole: nothing of them stays on the data partition.
test_ota_unsafe_files() {
	ota_keys
	ota_payloads
	ota_device 1.0
	local kind
	for kind in abs dotdot dev fifo symabs symout hardout; do
		python3 - "$T/u.tar" "$kind" <<'PY'
import io, sys, tarfile
t = tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT)
def add(name, type=tarfile.REGTYPE, data=b"x", link=""):
    i = tarfile.TarInfo(name); i.type = type; i.linkname = link
    i.size = len(data) if type == tarfile.REGTYPE else 0
    t.addfile(i, io.BytesIO(data) if type == tarfile.REGTYPE else None)
add("./ok")			# fine, and must not stay either
k = sys.argv[2]
if k == "abs": add("/etc/evil")
if k == "dotdot": add("./a/../../evil")
if k == "dev": add("./null", tarfile.CHRTYPE)
if k == "fifo": add("./fifo", tarfile.FIFOTYPE)
if k == "symabs": add("./l", tarfile.SYMTYPE, link="/etc/passwd")
if k == "symout": add("./d/l", tarfile.SYMTYPE, link="../../x")
if k == "hardout": add("./h", tarfile.LNKTYPE, link="../x")
t.close()
PY
		zstd -q -f "$T/u.tar" -o "$T/u.tar.zst"
		"$BIN/kiln-bundle" create --key "$T/k.sec" --version 1.1 --compatible qemu-aarch64 \
			--files "$T/u.tar.zst:apps/app" "$T/u.kiln" >/dev/null || fail "create"
		echo "-- $kind"
		ota_refused 'refused' "$T/u.kiln"
		[ "$(ls "$T/dev/data/apps/app")" = old-file ] || fail "$kind: something stayed"
	done
}

# Usage (2) and what fails on the device (3): a slot too small, the
# state directory missing; the running slot stays first.
test_ota_usage_and_device() {
	ota_keys
	ota_payloads
	ota_device 1.0
	ota_bundle "$T/b.kiln" 1.1
	local rc=0
	"$BIN/kiln-update" 2>/dev/null || rc=$?
	[ "$rc" = 2 ] || fail "no bundle: exit $rc"
	rc=0
	"$BIN/kiln-update" --slot C "$T/b.kiln" 2>/dev/null || rc=$?
	[ "$rc" = 2 ] || fail "--slot C: exit $rc"
	rc=0
	"$BIN/kiln-update" --pubkey "$T/dev/etc/bundle.pub" --board-file "$T/dev/etc/board" \
		--version-file "$T/dev/etc/version" "$T/b.kiln" 2>"$T/err" || rc=$?
	[ "$rc" = 2 ] || fail "a root image without --slot-dev: exit $rc"
	truncate -s 4096 "$T/dev/slotB"
	rc=0
	ota_update "$T/b.kiln" || rc=$?
	cat "$T/err"
	[ "$rc" = 3 ] || fail "slot too small: exit $rc"
	assert_grep 'the root image needs' "$T/err"
	ota_untouched
}

# A failure after the trees are exchanged (another exchange, the sync, the
# boot state's write on a full disk) puts the old trees back: exit 3, the
# data as it was, a new target and the parents made for it gone; then the
# same bundle installs.
test_ota_commit_undone() {
	ota_keys
	ota_payloads
	ota_device 1.0
	cp "$T/app.tar.zst" "$T/app2.tar.zst"	# one file per payload name
	"$BIN/kiln-bundle" create --key "$T/k.sec" --version 1.1 \
		--compatible qemu-aarch64 --rootfs "$T/root.erofs" \
		--files "$T/app.tar.zst:apps/app" --files "$T/app2.tar.zst:apps/new/deep/x" \
		"$T/b.kiln" >/dev/null || fail "create failed"
	local how rc
	for how in KILN_UPDATE_FAIL_COMMIT=1 KILN_UPDATE_FAIL_COMMIT=2 \
		   KILN_UPDATE_FAIL_SWITCH=10; do
		echo "-- $how"
		rc=0
		env "$how" "$BIN/kiln-update" --pubkey "$T/dev/etc/bundle.pub" \
			--board-file "$T/dev/etc/board" --version-file "$T/dev/etc/version" \
			--slot A --slot-dev "$T/dev/slotB" --state-dir "$T/dev/state" \
			--data "$T/dev/data" --fsck "$BIN/fsck.erofs" "$T/b.kiln" \
			>/dev/null 2>"$T/err" || rc=$?
		cat "$T/err"
		[ "$rc" = 3 ] || fail "$how: exit $rc, not 3"
		[ "$(grep -c '^kiln-update: error: ' "$T/err")" = 1 ] || fail "not one error line"
		ota_untouched
		[ "$(ls "$T/dev/data/apps/app")" = old-file ] || fail "$how: apps/app changed"
		[ ! -e "$T/dev/data/apps/new" ] || fail "$how: apps/new stayed"
	done
	assert_grep 'No space left' "$T/err"
	# torn after its variables, the state is whole all the same (its
	# zero padding did not change): the new slot is first, and keeps
	# the new trees
	rc=0
	KILN_UPDATE_FAIL_SWITCH=100 ota_update "$T/b.kiln" >/dev/null || rc=$?
	cat "$T/err"
	[ "$rc" = 3 ] || fail "torn but whole: exit $rc, not 3"
	assert_grep 'reads slot B first all the same' "$T/err"
	"$BIN/kiln-bootstate" --dir "$T/dev/state" show >"$T/show"
	assert_grep '^order=B A a_left=3 b_left=3 ' "$T/show"
	diff -r "$T/app" "$T/dev/data/apps/app" || fail "apps/app differs"
	ota_device 1.0
	ota_update "$T/b.kiln" >/dev/null || { cat "$T/err"; fail "install failed"; }
	diff -r "$T/app" "$T/dev/data/apps/app" || fail "apps/app differs"
	diff -r "$T/app" "$T/dev/data/apps/new/deep/x" || fail "apps/new/deep/x differs"
	[ -z "$(ls -A "$T/dev/data/.kiln-update")" ] || fail "staging left behind"
}

# libFuzzer over kiln-update's reading of a bundle (tests/fuzz/fuzz_bundle.c:
# the tar stream, the manifest, the payloads' hashes, file trees unpacked),
# seeded with small bundles; a fixed number of runs from a fixed seed.
limit fuzz_bundle 600
once_fuzz_bundle() {
	ota_keys
	mkdir -p "$T/corpus" "$T/t/d" "$T/r"
	echo x >"$T/r/f"
	"$BIN/mkfs.erofs" -b 4096 "$T/r.erofs" "$T/r" >/dev/null || fail "mkfs failed"
	echo hi >"$T/t/d/a"
	ln -s a "$T/t/d/l"
	ln "$T/t/d/a" "$T/t/h"
	tar -C "$T/t" -cf - . | zstd -q -c >"$T/t.tar.zst"
	"$BIN/kiln-bundle" create --key "$T/k.sec" --version 1 --compatible b \
		--files "$T/t.tar.zst:x" "$T/corpus/files" >/dev/null || fail "create"
	"$BIN/kiln-bundle" create --key "$T/k.sec" --version 1.2 --compatible b \
		--rootfs "$T/r.erofs" --files "$T/t.tar.zst:x/y" "$T/corpus/both" >/dev/null ||
		fail "create"
	run_fuzzer fuzz_bundle 65536 20000 fuzz-data
}

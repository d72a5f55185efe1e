# Test harness for the shell-level tests, sourced by tests/run.sh.
# A test is a function; it runs in a subshell with its own scratch dir $T,
# fails on the first failing command (set -e) or on `fail MSG`, and may
# `skip REASON`. Output goes to a log that is printed only on failure.

PASSED=0 FAILED=0 SKIPPED=0
LOGDIR=${LOGDIR:-out/test-logs}
SCRATCH=${SCRATCH:-/tmp}

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "$*" > "$T/.skip"; exit 77; }
need_root() { [ "$(id -u)" = 0 ] || skip "needs root (mount)"; }

# Mounts an image read-only; the mount is undone when the test ends.
mount_erofs() {
	mkdir -p "$2"
	mount -t erofs -o ro "$1" "$2" || fail "kernel refused to mount $1"
	echo "$2" >> "$T/.mounts"
}

cleanup_test() {
	if [ -f "$T/.mounts" ]; then
		tac "$T/.mounts" | while read -r m; do umount "$m" 2>/dev/null; done
	fi
	rm -rf "$T"
}

# run_test NAME FUNCTION [ARGS...]
run_test() {
	local name=$1 log rc; shift
	case $name in ${ONLY:-*}) ;; *) return 0 ;; esac
	log="$LOGDIR/$(echo "$name" | tr '/' '_').log"
	T=$(mktemp -d "$SCRATCH/kiln-test.XXXXXX")
	local t0=$SECONDS
	( set -eE; trap 'echo "FAIL: line $LINENO: $BASH_COMMAND" >&2' ERR
	  "$@" ) > "$log" 2>&1
	rc=$?
	if [ $rc = 0 ]; then
		PASSED=$((PASSED + 1)); echo "ok      $name ($((SECONDS - t0)) s)"
	elif [ $rc = 77 ]; then
		SKIPPED=$((SKIPPED + 1)); echo "skip    $name: $(cat "$T/.skip")"
	else
		FAILED=$((FAILED + 1)); echo "FAIL    $name (log: $log)"
		tail -n 15 "$log" | sed 's/^/        /'
	fi
	cleanup_test
}

summary() {
	echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
	[ "$FAILED" = 0 ]
}

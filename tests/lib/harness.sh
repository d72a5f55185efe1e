# Test harness for the shell-level tests, sourced by tests/run.sh.
# A test is a function; it runs in a subshell with its own scratch dir $T,
# fails on the first failing command (set -e) or on `fail MSG`, and may
# `skip REASON`. Output goes to a log that is printed only on failure.
# Each test runs in its own process group under a time limit (TEST_LIMIT
# seconds, default 300; `limit NAME SECONDS` before run_test for slow ones);
# whatever it leaves running is killed when it ends, pass or fail.
#
# Under set -e, `A && B` in the middle of a function never fails the test
# when A is false: checks are written `assert CMD...` or `CMD || fail MSG`.

PASSED=0 FAILED=0 SKIPPED=0
LOGDIR=${LOGDIR:-out/test-logs}
SCRATCH=${SCRATCH:-/tmp}

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "$*" > "$T/.skip"; exit 77; }
# assert CMD [ARGS...]: the test fails, naming CMD, unless CMD succeeds.
# assert_fails CMD...: the test fails unless CMD exits non-zero.
assert() { "$@" || fail "assert: $*"; }
assert_fails() { ! "$@" || fail "expected to fail: $*"; }
# assert_grep PATTERN FILE: an extended regular expression FILE must match.
assert_grep() { grep -Eq -- "$1" "$2" || fail "no '$1' in $2: $(head -c 300 "$2")"; }

# Debian's erofs-utils 1.5 is the oracle, by path and version: never a
# mkfs.erofs/fsck.erofs that happens to be first in PATH (ours, or another).
ORACLE_DIR=/usr/bin
oracle_check() {
	local v
	v=$(dpkg-query -W -f '${Version}' erofs-utils 2>/dev/null) || true
	case $v in
	1.5-*) [ -x "$ORACLE_DIR/fsck.erofs" ] && [ -x "$ORACLE_DIR/dump.erofs" ] ;;
	*) echo "oracle: Debian's erofs-utils is '$v', not 1.5" >&2; return 1 ;;
	esac
}
oracle_mkfs() { "$ORACLE_DIR/mkfs.erofs" "$@"; }
oracle_fsck() { "$ORACLE_DIR/fsck.erofs" "$@"; }
oracle_dump() { "$ORACLE_DIR/dump.erofs" "$@"; }

need_root() { [ "$(id -u)" = 0 ] || skip "needs root (mount)"; }

# run_fuzzer TARGET MAXLEN RUNS SCRATCH: the libFuzzer target
# out/fuzz/TARGET over the seeds in $T/corpus, inputs of at most MAXLEN
# bytes; RUNS runs from seed 1, the same work on every machine (FUZZ_RUNS
# overrides RUNS; FUZZ_TIME=S, as make fuzz sets it, runs for S seconds
# instead). It runs in $T, where crash files land and where the target
# makes its SCRATCH.XXXXXX directories: one left behind fails the test.
run_fuzzer() {
	local target=$PWD/out/fuzz/$1 maxlen=$2 runs=$3 scratch=$4
	local budget="-runs=${FUZZ_RUNS:-$runs} -seed=1"
	[ -z "${FUZZ_TIME:-}" ] || budget="-max_total_time=$FUZZ_TIME"
	# shellcheck disable=SC2086 # budget is options
	(cd "$T" && "$target" $budget -max_len="$maxlen" -timeout=20 \
		-rss_limit_mb=2048 -print_final_stats=1 corpus) ||
		fail "the fuzzer found a crash"
	[ -z "$(ls -d "$T/$scratch".* 2>/dev/null)" ] || fail "scratch dirs left"
}

# Mounts an image read-only; the mount is undone when the test ends.
mount_erofs() {
	mkdir -p "$2"
	mount -t erofs -o ro "$1" "$2" || fail "kernel refused to mount $1"
	echo "$2" >> "$T/.mounts"
}

# mount_devices IMG DIR DEVFILE...: IMG mounted at DIR with each DEVFILE,
# through a read-only loop device, as its extra devices (-o device=).
mount_devices() {
	local img=$1 dir=$2 opts=ro f d
	shift 2
	for f in "$@"; do
		d=$(losetup -f --show -r "$f") || fail "no loop device for $f"
		echo "losetup -d $d" >> "$T/.cleanup"
		opts="$opts,device=$d"
	done
	mkdir -p "$dir"
	mount -t erofs -o "$opts" "$img" "$dir" ||
		fail "kernel refused $img with -o $opts"
	echo "$dir" >> "$T/.mounts"
}

cleanup_test() {
	# undone in reverse: loop devices after the mounts over them
	if [ -f "$T/.mounts" ]; then
		tac "$T/.mounts" | while read -r m; do umount "$m" 2>/dev/null; done
	fi
	if [ -f "$T/.cleanup" ]; then
		tac "$T/.cleanup" | while read -r c; do eval "$c" 2>/dev/null; done
	fi
	rm -rf "$T"
}

declare -A LIMITS=()
# limit NAME SECONDS: a longer (or shorter) time limit for one test.
limit() { LIMITS[$1]=$2; }

# run_test NAME FUNCTION [ARGS...]
run_test() {
	local name=$1 log rc pid dog secs; shift
	case $name in ${ONLY:-*}) ;; *) return 0 ;; esac
	log="$LOGDIR/$(echo "$name" | tr '/' '_').log"
	T=$(mktemp -d "$SCRATCH/kiln-test.XXXXXX")
	secs=${LIMITS[$name]:-${TEST_LIMIT:-300}}
	local t0=$SECONDS
	# job control on: the test and its watchdog each lead a process group
	set -m
	( set -eE; trap 'echo "FAIL: line $LINENO: $BASH_COMMAND" >&2' ERR
	  "$@" ) > "$log" 2>&1 < /dev/null &
	pid=$!
	( sleep "$secs"; echo "FAIL: time limit of $secs s" >> "$log"
	  kill -TERM -- -"$pid"; sleep 5; kill -KILL -- -"$pid" ) \
		> /dev/null 2>&1 &
	dog=$!
	set +m
	wait "$pid"
	rc=$?
	kill -KILL -- -"$pid" 2>/dev/null	# what the test left behind
	kill -KILL -- -"$dog" 2>/dev/null
	wait "$dog" 2>/dev/null
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

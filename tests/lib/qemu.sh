# Booting images in QEMU for the tests, sourced by tests/integration/boot.sh
# and qat.sh: one KVM probe per test run, and one bounded wait for every
# boot that ends as soon as the boot is over, however it ends.

# qemu/run.sh probes KVM once and keeps its answer here; a new run of the
# tests probes again (the host may have changed).
if [ -z "${KILN_QEMU_ACCEL_CACHE:-}" ]; then
	KILN_QEMU_ACCEL_CACHE=$(mkdir -p "$LOGDIR" && cd "$LOGDIR" && pwd)/qemu-accel
	rm -f "$KILN_QEMU_ACCEL_CACHE"
	export KILN_QEMU_ACCEL_CACHE
fi
KILN_QEMU_RUN=$PWD/qemu/run.sh

# _qemu_alive PID: the process runs (neither gone nor a zombie).
_qemu_alive() {
	local st
	st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ]
}

# _qemu_kill PID: stop qemu/run.sh started as PID in its own session, and
# all it started (the KVM probe's QEMU, timeout and the guest's QEMU):
# TERM, 5 s to go, then KILL.
_qemu_kill() {
	local pid=$1
	kill -TERM -- "-$pid" 2>/dev/null || true
	for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25; do
		_qemu_alive "$pid" || break
		sleep 0.2
	done
	kill -KILL -- "-$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# qemu_boot DIR LOG [CMDLINE_ARG...]: boot DIR's image headless (qemu/run.sh,
# QEMU's -snapshot: the disk stays as built), the serial console in LOG,
# qemu/run.sh's and QEMU's messages in LOG.qemu. Returns as soon as the
# boot is over, and after BOOT_TIMEOUT seconds (default 300) at the latest:
#   0    QEMU exited by itself (the guest powered off or, with -no-reboot,
#        rebooted), or the guest printed BOOT_MARKER (an ERE; default the
#        self-test's verdict) and did not power off within 10 s;
#   125  the guest cannot go on: QEMU reported a KVM internal error, the
#        kernel panicked, /init started a rescue shell (nobody will type
#        in it), or under KVM the kernel printed nothing in 10 s;
#   124  BOOT_TIMEOUT passed;
#   N    QEMU failed with status N.
# QEMU and everything qemu/run.sh started are stopped before it returns,
# and when the test ends on the way (fail, set -e, a signal). When it
# returns non-zero, QEMU_WHY says why in one line (also printed, with the
# logs' last lines). DISK=FILE boots another disk; QEMU_EXTRA_OPTS adds
# options to QEMU's; QEMU_SNAPSHOT= (empty) lets the guest write to DISK;
# QEMU_CUT_AT_MARKER=1 kills QEMU the moment the marker shows (returns 0).
qemu_boot() {
	local dir=$1 log=$2
	shift 2
	local limit=${BOOT_TIMEOUT:-300} marker=${BOOT_MARKER-^KILN-SELFTEST (PASS|FAIL)}
	local pid rc=0 why='' t0=$SECONDS started='' seen='' accel='' traps running
	QEMU_WHY=
	: >"$log"
	: >"$log.qemu"
	# setsid: run.sh and all it starts in a process group of their own,
	# stopped together. run.sh's own timeout is only a backstop.
	SERIAL_LOG=$log TIMEOUT=$((limit + 60)) \
		QEMU_OPTS="${QEMU_SNAPSHOT--snapshot} ${QEMU_EXTRA_OPTS:-}" \
		setsid "$KILN_QEMU_RUN" "$dir" "$@" </dev/null >"$log.qemu" 2>&1 &
	pid=$!
	traps=$(trap -p EXIT INT TERM)
	# shellcheck disable=SC2064 # $pid now
	trap "_qemu_kill $pid" EXIT
	# shellcheck disable=SC2064
	trap "_qemu_kill $pid; exit 130" INT
	# shellcheck disable=SC2064
	trap "_qemu_kill $pid; exit 143" TERM
	while :; do
		# whether QEMU runs first: once it has exited, what it wrote is
		# all there for the checks that follow
		running=false
		! _qemu_alive "$pid" || running=true
		[ -n "$accel" ] || {
			accel=$(sed -n 's/^qemu: .* with \([a-z]*\)$/\1/p' "$log.qemu")
			started=$SECONDS
		}
		# signs that the guest is past saving come first: a QEMU that
		# exited after a kernel panic (panic=N) did not boot either
		# (qemu/run.sh's probe reports a KVM that failed it, then
		# boots with TCG: that line is no sign of this guest's state)
		if grep -v '^qemu: KVM cannot run the guest here' "$log.qemu" |
		   grep -q 'KVM internal error'; then
			why="$(grep -v '^qemu: KVM cannot run' "$log.qemu" | grep -m1 'KVM internal error')$(grep -v '^qemu: KVM cannot run' "$log.qemu" | grep -m1 'emulation failure' | sed 's/^/: /')"
			rc=125
		elif grep -q 'Kernel panic - not syncing' "$log"; then
			why="kernel panic: $(grep -m1 -o 'not syncing.*' "$log" | tr -d '\r')"
			rc=125
		elif grep -q 'kiln-init: starting a rescue shell' "$log"; then
			why="/init gave up: $(grep -m1 -o 'kiln-init: FATAL.*' "$log" | tr -d '\r')"
			rc=125
		elif [ "$accel" = kvm ] && [ ! -s "$log" ] && [ $((SECONDS - started)) -ge 10 ]; then
			# KVM starts a kernel in about a second
			why="no kernel output in 10 s"
			rc=125
		elif ! $running; then
			wait "$pid" || rc=$?
			case $rc in
			0) ;;
			124) why="QEMU still running after $((limit + 60)) s (run.sh's timeout)" ;;
			129 | 13? | 14? | 15? | 16?) why="QEMU killed by signal $((rc - 128))" ;;
			*) why="QEMU exited with $rc: $(grep -v -e '^qemu: .* with [a-z]*$' -e 'warning:' "$log.qemu" | tail -n 1)" ;;
			esac
		elif [ $((SECONDS - t0)) -ge "$limit" ]; then
			why="no end after $limit s"
			rc=124
		elif [ -n "$seen" ] && [ $((SECONDS - seen)) -ge 10 ]; then
			echo "qemu_boot: the guest did not power off 10 s after its marker; stopped"
		else
			if [ -n "$marker" ] && [ -z "$seen" ] && grep -Eq "$marker" "$log"; then
				seen=$SECONDS
				if [ -n "${QEMU_CUT_AT_MARKER:-}" ]; then
					# a power cut: nothing of the guest's is flushed
					kill -KILL -- "-$pid" 2>/dev/null || true
					echo "qemu_boot: power cut at the marker"
					break
				fi
			fi
			sleep 0.2
			continue
		fi
		break
	done
	_qemu_kill "$pid"
	trap - EXIT INT TERM
	eval "$traps"
	[ "$rc" != 0 ] || return 0
	if [ "$accel" = kvm ] && [ "${KILN_QEMU_ACCEL:-}" = kvm ]; then
		why="$why (KILN_QEMU_ACCEL=kvm forced KVM; without it qemu/run.sh uses KVM only where a guest runs under it)"
	elif [ "$accel" = kvm ]; then
		why="$why (under KVM, which qemu/run.sh's probe found working; KILN_QEMU_ACCEL=tcg forces TCG)"
	fi
	QEMU_WHY="$why, after $((SECONDS - t0)) s"
	echo "qemu_boot: $QEMU_WHY"
	echo "--- last lines of $log:"
	tr -d '\r' <"$log" | tail -n 20
	echo "--- $log.qemu:"
	tail -n 20 "$log.qemu"
	return "$rc"
}

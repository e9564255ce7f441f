# SPDX-License-Identifier: Apache-2.0
# Sourced by the service tests that run their own xsprofd on private socket paths
# (sessions.sh, modes.sh): checks that print "ok"/"FAIL", a private directory removed at exit
# with the daemon's log shown on failure, and helpers to start and ask the daemon.
# The caller sets `name` (the ctest name) and `build` before sourcing, and may define
# on_failure() to print more when a check failed; pids it adds to `pids` are stopped at exit.
xsprofd=$build/daemon/xsprofd
ctl=$build/daemon/ctl/xsprofctl
py=/usr/bin/python3
failures=0

pass() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }
step() { printf '\n== %s\n' "$*"; }

# need FILE...: every one must exist (and the tests run as root).
need() {
	[[ $(id -u) == 0 ]] || { echo "FAIL needs root"; exit 1; }
	for f in "$xsprofd" "$ctl" "$py" "$@"; do
		[[ -e $f ]] || { echo "FAIL missing $f"; exit 1; }
	done
}

dir=$(mktemp -d "/tmp/xsprof-$name-XXXXXX")
chmod 0755 "$dir"
sock=$dir/api.sock
cupti=$dir/cupti.sock
daemon=
pids=()
cleanup() {
	local rc=$? p
	set +e
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	if [[ -n $daemon ]]; then kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; fi
	if ((failures)); then
		echo "--- daemon log (last 30 lines)"; tail -n 30 "$dir/xsprofd.log"
		declare -F on_failure >/dev/null && on_failure
	fi
	rm -rf "$dir"
	if ((rc == 0 && failures == 0)); then echo; echo "$name: all checks passed"; else
		echo; echo "$name: $failures check(s) failed"; exit 1; fi
}
trap cleanup EXIT

# start_daemon ARGS...: xsprofd on the private sockets, ready when its socket is there.
start_daemon() {
	"$xsprofd" --socket "$sock" --cupti-socket "$cupti" --socket-group nogroup \
		--dump-dir "$dir/dumps" "$@" \
		>"$dir/xsprofd.log" 2>&1 &
	daemon=$!
	for _ in $(seq 150); do [[ -S $sock ]] && break; sleep 0.1; done
	[[ -S $sock ]] || { fail "xsprofd did not create $sock"; exit 1; }
	export XSPROF_CUPTI_SOCKET=$cupti
}

ctl() { "$ctl" --timeout 20 -s "$sock" "$@"; }
# status_get EXPR: a Python expression over the status JSON `j`.
status_get() { ctl --json status | $py -c "import json,sys; j=json.load(sys.stdin); print($1)"; }
# weight FILE REGEX: the summed weights of the folded lines matching REGEX.
weight() { { grep -E "$2" "$1" || true; } | awk '{s += $NF} END {print s + 0}'; }

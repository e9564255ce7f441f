#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Soak: the always-on service under CPU load and process churn for a long time, with its memory
# printed over time next to the configured cap. See bench/README.md.
set -euo pipefail

prog=${0##*/}
orig_args=("$@")
repo=$(cd "$(dirname "$0")/.." && pwd)

usage() {
	cat <<EOF
Usage: $prog [OPTIONS]

Runs xsprofd as the always-on service (directly, not through systemd) with a small rolling
window and memory cap, under a CPU workload on every CPU and a stream of short-lived processes,
asks it for a flamegraph of its window every interval, and prints its resident memory (RSS),
the rolling store's size and cap, and its counters. Unless --no-hostile, every interval also
brings: 70 connections that trickle a header and hang, malformed and oversized requests, a
CUPTI sender that sends junk, a 1 s recording, an attachment of the workload, and, as a
group member, 300 idle processes (alive 30 s) and three attach/detach cycles; each
interval's status query as root must answer within a second (slow or failed ones are counted
in the table and fail the run). At the end: peak RSS, RSS growth over the
second half of the run, and the store's peak against its cap. Must run as root.

Options:
  -b, --build DIR        CMake build folder holding daemon/xsprofd, tests/xs_split
                         (default: $repo/build)
      --xsprofd PATH     xsprofd binary (default: BUILD/daemon/xsprofd)
  -m, --minutes N        how long to run (default: 10)
  -i, --interval S       seconds between samples of memory (default: 10)
      --store-mb N       the service's --store-mb, the cap under test (default: 1)
      --window S         the service's --window in seconds (default: 120: more than fits in
                         the default cap, so the cap is what bounds the store)
  -F, --freq HZ          the service's --freq (default: 99, above the service's 19 to age
                         the store faster)
  -t, --threads N        workload threads (default: number of CPUs, $(nproc))
      --no-churn         no stream of short-lived processes
      --no-hostile       no hostile clients, recordings, attachments or CUPTI senders
  -h, --help             show this help

Exit status: 0 when the store stayed within its cap and the daemon survived, 1 otherwise.

Examples:
  sudo bench/soak.sh --build build
  sudo bench/soak.sh --build build --minutes 60 --interval 30 --store-mb 8 --window 600
  sudo bench/soak.sh --build build --minutes 1 --interval 5      # a quick check
EOF
}

die() {
	echo "$prog: $*" >&2
	exit 1
}
bad_usage() {
	echo "$prog: $*; see --help" >&2
	exit 2
}
need_arg() {
	[[ $# -ge 2 && -n $2 ]] || bad_usage "option $1 needs a value"
}

build=$repo/build
xsprofd=
minutes=10
interval=10
store_mb=1
window=120
freq=99
threads=$(nproc)
churn=1
hostile=1

while [[ $# -gt 0 ]]; do
	case $1 in
	-b | --build) need_arg "$@"; build=$2; shift 2 ;;
	--xsprofd) need_arg "$@"; xsprofd=$2; shift 2 ;;
	-m | --minutes) need_arg "$@"; minutes=$2; shift 2 ;;
	-i | --interval) need_arg "$@"; interval=$2; shift 2 ;;
	--store-mb) need_arg "$@"; store_mb=$2; shift 2 ;;
	--window) need_arg "$@"; window=$2; shift 2 ;;
	-F | --freq) need_arg "$@"; freq=$2; shift 2 ;;
	-t | --threads) need_arg "$@"; threads=$2; shift 2 ;;
	--no-churn) churn=0; shift ;;
	--no-hostile) hostile=0; shift ;;
	-h | --help) usage; exit 0 ;;
	*) bad_usage "unknown option '$1'" ;;
	esac
done

is_uint() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
for v in minutes interval store_mb window freq threads; do
	is_uint "${!v}" || bad_usage "--${v//_/-} wants a positive integer, not '${!v}'"
done
((window >= 10)) || bad_usage "--window must be at least 10 (xsprofd's minimum)"
xsprofd=${xsprofd:-$build/daemon/xsprofd}
workload=$build/tests/xs_split
xsprofctl=$build/daemon/ctl/xsprofctl

[[ $EUID -eq 0 ]] || die "must run as root (BPF needs it): sudo $0 ${orig_args[*]}"
[[ -x $xsprofd ]] ||
	die "no xsprofd at $xsprofd: build it with 'cmake --build $build --target xsprofd' or pass --xsprofd"
[[ -x $workload ]] ||
	die "no workload at $workload: build it with 'cmake --build $build --target xs_split'"
command -v curl >/dev/null || die "missing curl (apt-get install curl)"
((hostile == 0)) || command -v python3 >/dev/null || die "missing python3 (for the hostile clients)"
((hostile == 0)) || [[ -x $xsprofctl ]] || die "no xsprofctl at $xsprofctl"

# Everything started here is stopped and removed on exit, error or Ctrl-C.
tmp=$(mktemp -d /tmp/xsprof-soak.XXXXXX)
chmod 755 "$tmp" # the hostile clients run as nobody
daemon_pid=
work_pid=
churn_pid=

cleanup() {
	local rc=$?

	trap - EXIT INT TERM
	for p in $churn_pid $work_pid; do
		kill "$p" 2>/dev/null || true
	done
	if [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; then
		kill -TERM "$daemon_pid"
		wait "$daemon_pid" 2>/dev/null || true
	fi
	wait 2>/dev/null || true
	if ((rc != 0)) && [[ -s $tmp/xsprofd.log ]]; then
		echo "--- xsprofd's log (last 20 lines)" >&2
		tail -n 20 "$tmp/xsprofd.log" >&2
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

sock=$tmp/xsprofd.sock
api() {
	curl -sS --max-time 60 --unix-socket "$sock" "http://xsprofd$1"
}
# json_num KEY < JSON: the first number under "KEY".
json_num() {
	{ grep -Eo "\"$1\" *: *[0-9]+" | head -1 | grep -Eo '[0-9]+$'; } || echo 0
}
kib_of() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

# -c /dev/null: none of /etc/xsprof/xsprofd.conf, only the settings under test.
"$xsprofd" -c /dev/null --socket "$sock" --cupti-socket "$tmp/cupti.sock" --freq "$freq" \
	--socket-group "$(getent group 65534 | cut -d: -f1)" \
	--window "$window" --store-mb "$store_mb" >"$tmp/xsprofd.log" 2>&1 &
daemon_pid=$!
for ((i = 0; i < 150; i++)); do
	api /v1/status >/dev/null 2>&1 && break
	kill -0 "$daemon_pid" 2>/dev/null || die "xsprofd exited at start"
	sleep 0.2
done
api /v1/status >/dev/null || die "xsprofd does not answer on $sock"

seconds=$((minutes * 60))
# Niced: on a shared machine the load yields to other work; every CPU is sampled all the same.
nice -n 19 "$workload" 700 300 $((seconds + 30)) "$threads" >/dev/null &
work_pid=$!
if ((churn)); then
	# A new process every 0.2 s: the process table and symbolizer must not grow with them.
	(while :; do nice -n 19 "$workload" 20 20 0.05 1 >/dev/null; sleep 0.2; done) &
	churn_pid=$!
fi

# One round of abuse, in the background: connections that trickle and hang, junk requests,
# junk on the CUPTI socket. Bounded: 70 connections for 4 s.
abuse() {
	# As another user (nobody, let in through --socket-group nogroup), as an attacker would
	# be: root's own share of connections is not theirs to take.
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		python3 - "$sock" "$tmp/cupti.sock" <<'PY' >/dev/null 2>&1 &
import socket, sys, time
api, cupti = sys.argv[1], sys.argv[2]
held = []
for i in range(70):
    try:
        c = socket.socket(socket.AF_UNIX); c.settimeout(2); c.connect(api)
        c.send(b"GET /v1/status HTTP/1.1\r\nHost: x\r\n")
        held.append(c)
    except OSError:
        pass
for junk in (b"\x00\xff garbage\r\n\r\n", b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\n\r\n",
             b"POST /v1/record HTTP/1.1\r\nContent-Length: 9999999999\r\n\r\n{"):
    try:
        c = socket.socket(socket.AF_UNIX); c.settimeout(2); c.connect(api); c.send(junk)
        c.recv(100); c.close()
    except OSError:
        pass
try:
    c = socket.socket(socket.AF_UNIX); c.settimeout(2); c.connect(cupti)
    c.send(b"XSP1" + b"\xff" * 4096); c.close()
except OSError:
    pass
for t in range(4):
    for c in held:
        try: c.send(b"X")
        except OSError: pass
    time.sleep(1)
for c in held:
    c.close()
PY
	"$xsprofctl" -s "$sock" -q record --duration 1 -o "$tmp/rec.folded" >/dev/null 2>&1 &
	# This round's attackers, as the same member: idle processes by the hundred (the unwind
	# process table, the symbolizer), an attach and detach loop of its own process (the
	# loop's BPF loads), both bounded.
	setpriv --reuid=65534 --regid=65534 --clear-groups -- bash -c \
		'for i in $(seq 300); do setsid sleep 30 & done' >/dev/null 2>&1
	setpriv --reuid=65534 --regid=65534 --clear-groups -- bash -c '
		sleep 20 & p=$!
		for i in 1 2 3; do
			"$0" -s "$1" -q attach $p; "$0" -s "$1" -q detach $p
		done' "$xsprofctl" "$sock" >/dev/null 2>&1 &
}
answered=0
slow=0
if ((hostile)); then
	"$xsprofctl" -s "$sock" -q attach "$work_pid" >/dev/null 2>&1 ||
		echo "warning: attaching the workload failed" >&2
fi

cap_kib=$((store_mb * 1024))
echo "xsprofd $("$xsprofd" --version | awk '{ print $2 }') as a service: $freq Hz, window $window s," \
	"store cap $store_mb MiB ($cap_kib KiB); $threads workload threads$( ((churn)) &&
		echo ', a short-lived process every 0.2 s'); $minutes min, every $interval s"
printf '%8s %9s %9s %10s %10s %7s %12s %10s %8s %5s %8s %5s\n' elapsed_s rss_kib hwm_kib \
	store_kib cap_kib slices samples lost dropped fds answered slow
start=$SECONDS
max_store=0
rss_mid=
rss_log=()
over_cap=0
while :; do
	elapsed=$((SECONDS - start))
	kill -0 "$daemon_pid" 2>/dev/null || die "xsprofd died after $elapsed s"
	# A query of the whole window, as a user's flamegraph would.
	api "/v1/profile?since_s=$window&format=folded" >/dev/null ||
		echo "warning: the profile query failed at $elapsed s" >&2
	((hostile)) && abuse
	# Root's status, in the middle of the abuse: it must answer within a second.
	t0=$(date +%s%N)
	status=$(api /v1/status) || die "xsprofd stopped answering after $elapsed s"
	if (($(date +%s%N) - t0 > 1000000000)); then slow=$((slow + 1)); else answered=$((answered + 1)); fi
	rss=$(kib_of "$daemon_pid" VmRSS)
	hwm=$(kib_of "$daemon_pid" VmHWM)
	store_b=$(json_num bytes <<<"$status")
	store_kib=$((store_b / 1024))
	((store_b > max_store)) && max_store=$store_b
	((store_kib > cap_kib)) && over_cap=1
	printf '%8d %9d %9d %10d %10d %7d %12d %10d %8d %5d %8d %5d\n' "$elapsed" "$rss" "$hwm" \
		"$store_kib" "$cap_kib" "$(json_num slices <<<"$status")" \
		"$(json_num samples <<<"$status")" \
		"$(($(json_num lost_ring_buffer_full <<<"$status") + $(json_num malformed_records <<<"$status")))" \
		"$(json_num dropped_slices <<<"$status")" "$(ls "/proc/$daemon_pid/fd" | wc -l)" \
		"$answered" "$slow"
	rss_log+=("$rss")
	[[ -z $rss_mid ]] && ((elapsed >= seconds / 2)) && rss_mid=$rss
	((elapsed >= seconds)) && break
	sleep "$interval"
done

hwm=$(kib_of "$daemon_pid" VmHWM)
rss_end=${rss_log[-1]}
rss_mid=${rss_mid:-${rss_log[0]}}
echo
echo "peak RSS (VmHWM):          $hwm KiB ($((hwm / 1024)) MiB)"
echo "RSS at half time -> end:   $rss_mid -> $rss_end KiB ($(awk -v a="$rss_mid" -v b="$rss_end" \
	'BEGIN { printf "%+.1f%%", a ? (b - a) * 100 / a : 0 }'))"
echo "rolling store peak:        $((max_store / 1024)) KiB of a $cap_kib KiB cap" \
	"($(awk -v a="$max_store" -v c="$((cap_kib * 1024))" 'BEGIN { printf "%.0f%%", a * 100 / c }'))"
echo "RSS against the cap:       peak RSS is $(awk -v h="$hwm" -v c="$cap_kib" \
	'BEGIN { printf "%.1f", h / c }') x the store cap (the cap bounds the rolling window;" \
	"RSS adds code, BPF ring buffers, symbol caches)"
echo "root's status queries:     $answered answered within a second, $slow slower"
if ((over_cap)); then
	echo "FAIL: the rolling store went over its cap"
	exit 1
fi
if ((slow)); then
	echo "FAIL: $slow status queries took over a second"
	exit 1
fi
# The service's memory budget: 64 MiB for the whole process, attackers or not.
if ((hwm > 64 * 1024)); then
	echo "FAIL: peak RSS $((hwm / 1024)) MiB, over the service's 64 MiB budget"
	exit 1
fi
echo "ok: the rolling store stayed within its cap"

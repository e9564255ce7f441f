#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# GPU records in bulk: what the idle service (xsprofd, on private sockets) pays per GPU record
# received over the CUPTI pipe, until the slice that holds them has closed and joined them.
# A sender (xs_gpu_flood) sends N kernel records on one connection as bursts (a CUPTI buffer
# flush each) PERIOD_MS apart, while root asks for /v1/status every 50 ms on the API socket.
# Each round is a flood window (from before the first record until the store holds none: the
# window took them) and an idle window of the same length with the same status requests,
# interleaved, the order alternating; the CPU per record is (flood - idle) / N, from
# /proc/PID/stat utime+stime. Printed per round and as medians:
#   cpu_ns_per_record  the daemon's CPU per record, ns
#   lost               records sent but not joined into the window: sender drops, store
#                      evictions and refusals, and records the window's report lacks
#   status_max_ms      the slowest status answer during the flood window
#   rss_mib            the daemon's peak RSS (VmHWM) after the round, and its RSS before
#
# Usage: sudo bench/gpu_records.sh [--build DIR] [--records N] [--burst B] [--period-ms P]
#                                  [--reps R] [--graph K] [--short] [--json FILE]
#   defaults: 1,000,000 records as bursts of 100,000 a second apart (1 M in 10 s), 3 rounds
#   --graph K   the kernels are nodes of CUDA graphs of K kernels each (graph ids set)
#   --short     CI's form (bench/budget.sh --short): 300,000 records, bursts of 100,000 at
#               0.5 s, 1 round
#   --json F    also write the medians as JSON to F (bench/budget.sh reads it)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

prog=${0##*/}
build=build
records=1000000 burst=100000 period=1000 reps=3 graph=0 json=
while [[ $# -gt 0 ]]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	--records) records=$2; shift 2 ;;
	--burst) burst=$2; shift 2 ;;
	--period-ms) period=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--graph) graph=$2; shift 2 ;;
	--short) records=300000 burst=100000 period=500 reps=1; shift ;;
	--json) json=$2; shift 2 ;;
	-h | --help) sed -n '3,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "$prog: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
die() { echo "$prog: $*" >&2; exit 2; }

xsprofd=$build/daemon/xsprofd
flood=$build/tests/xs_gpu_flood
[[ $EUID -eq 0 ]] || die "needs root (the service loads BPF)"
for f in "$xsprofd" "$flood"; do
	[[ -x $f ]] || die "$f missing: cmake --build $build first"
done
tmp=$(mktemp -d /tmp/xsprof-gpu-records.XXXXXX)
chmod 0755 "$tmp"
sock=$tmp/api.sock
daemon=
cleanup() {
	trap - EXIT INT TERM
	[[ -z $daemon ]] || { kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; } || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The status prober: asks /v1/status every 50 ms, times each answer. "watch N": until the
# daemon has received N kernels more than at the start and holds no GPU record (the slice
# closed), at most 60 s; "idle S": for S seconds. Prints "max_ms requests secs kernels evicted".
cat >"$tmp/probe.py" <<'PY'
import json, socket, sys, time
sock, mode, arg = sys.argv[1], sys.argv[2], float(sys.argv[3])
def status():
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    t0 = time.monotonic()
    s.connect(sock)
    s.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    dt = time.monotonic() - t0
    s.close()
    return dt, json.loads(data.split(b"\r\n\r\n", 1)[1])["gpu"]
_, g0 = status()
start, worst, n = time.monotonic(), 0.0, 0
while True:
    dt, g = status()
    worst, n = max(worst, dt), n + 1
    el = time.monotonic() - start
    if mode == "idle" and el >= arg:
        break
    if mode == "watch" and ((g["kernels"] - g0["kernels"] >= arg and g["records_held"] == 0)
                            or el > 60):
        break
    time.sleep(0.05)
print("%.1f %d %.2f %d %d" % (worst * 1e3, n, el, g["kernels"] - g0["kernels"],
                              g["records_evicted"] - g0["records_evicted"]))
PY

cpu_ticks() { awk '{ print $14 + $15 }' /proc/"$1"/stat; }
kib() { awk -v k="$2" '$1 == k":" { print $2 }' /proc/"$1"/status; }
med() { printf "%s\n" "$@" | median_of; }
calc() { python3 -c "print($1)"; }
hz=$(getconf CLK_TCK)

"$xsprofd" --socket "$sock" --cupti-socket "$tmp/cupti.sock" >"$tmp/xsprofd.log" 2>&1 &
daemon=$!
for _ in $(seq 300); do [[ -S $sock ]] && break; sleep 0.1; done
[[ -S $sock ]] || die "xsprofd did not start: $(tail -3 "$tmp/xsprofd.log")"
export XSPROF_CUPTI_SOCKET=$tmp/cupti.sock
sleep 2 # past start-up
rss0=$(calc "round($(kib "$daemon" VmRSS) / 1024, 1)")

drops() {
	curl -s -m 30 --unix-socket "$sock" http://x/v1/status |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["gpu"]["sender_dropped"])'
}
flood_window() { # prints "ticks max_ms secs kernels evicted drops"
	local c0 c1 out fp d0 d1
	d0=$(drops)
	c0=$(cpu_ticks "$daemon")
	"$flood" "$records" xs_bulk_kernel 1 "$burst" "$period" "$graph" >"$tmp/flood.out" 2>&1 &
	fp=$!
	out=$(python3 "$tmp/probe.py" "$sock" watch "$records")
	c1=$(cpu_ticks "$daemon")
	wait "$fp" || die "the sender failed: $(cat "$tmp/flood.out")"
	d1=$(drops)
	echo "$((c1 - c0)) $out $((d1 - d0))"
}
idle_window() { # SECS: prints "ticks"
	local c0 c1
	c0=$(cpu_ticks "$daemon")
	python3 "$tmp/probe.py" "$sock" idle "$1" >/dev/null
	c1=$(cpu_ticks "$daemon")
	echo "$((c1 - c0))"
}

per=() lost=() lat=() hwm=()
printf 'GPU records in bulk: %s records, bursts of %s every %s ms%s, %s round(s), %s CPUs, %s\n' \
	"$records" "$burst" "$period" "$([[ $graph == 0 ]] || echo ", graphs of $graph kernels")" \
	"$reps" "$(nproc)" "$(uname -r)"
for ((r = 0; r < reps; r++)); do
	if ((r % 2)); then
		idle=$(idle_window 12)
		read -r ft max_ms nreq secs got evicted drops < <(flood_window)
	else
		read -r ft max_ms nreq secs got evicted drops < <(flood_window)
		idle=$(idle_window "$secs")
	fi
	# The idle window's ticks scaled to the flood window's length.
	idle_secs=$( ((r % 2)) && echo 12 || echo "$secs")
	ns=$(calc "round(max($ft - $idle * $secs / $idle_secs, 0) * 1e9 / $hz / $records)")
	l=$(calc "$records - $got + $evicted + $drops")
	h=$(calc "round($(kib "$daemon" VmHWM) / 1024, 1)")
	per+=("$ns") lost+=("$l") lat+=("$max_ms") hwm+=("$h")
	printf '  round %d: %s ns/record (flood %s ticks over %s s, idle %s ticks over %s s), lost %s (evicted %s, sender drops %s), status max %s ms of %s, peak RSS %s MiB\n' \
		"$r" "$ns" "$ft" "$secs" "$idle" "$idle_secs" "$l" "$evicted" "$drops" "$max_ms" \
		"$nreq" "$h"
done
m_ns=$(med "${per[@]}") m_lost=$(med "${lost[@]}") m_lat=$(med "${lat[@]}")
m_rss=$(med "${hwm[@]}")
printf 'median: cpu_ns_per_record %s  lost %s  status_max_ms %s  rss_mib %s (before %s)\n' \
	"$m_ns" "$m_lost" "$m_lat" "$m_rss" "$rss0"
[[ -z $json ]] || printf '{"cpu_ns_per_record": %s, "lost": %s, "status_max_ms": %s, "rss_mib": %s, "rss_before_mib": %s}\n' \
	"$m_ns" "$m_lost" "$m_lat" "$m_rss" "$rss0" >"$json"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# GPU records in bulk: what the idle service (xsprofd, on private sockets) pays per GPU record
# received over the CUPTI pipe, until the slice that holds them has closed and joined them.
# A sender (xs_gpu_flood) sends N kernel records on one connection as bursts (a CUPTI buffer
# flush each) PERIOD_MS apart, while root asks for /v1/status every 200 ms on the API socket.
# Each round is a flood window (from before the first record until the store holds none: the
# window took them) between two idle windows with the same status requests (12 s before, as
# long as the flood window after); the CPU per record is (flood - idle) / N from /proc/PID/stat
# utime+stime, idle at the quieter idle window's rate (the service samples the whole machine:
# others' work in the flood window counts against the records, so the figure errs high; the
# service's reading of this script's own new processes falls before the windows, the
# sender's in the flood window). Printed per round and as medians:
#   cpu_ns_per_record  the daemon's CPU per record, ns
#   lost               records sent that root's window report (xsprofctl report) lacks:
#                      sender drops, store evictions or refusals, a join that lost them
#   status_max_ms      the slowest status answer during the flood window
#   rss_mib            the daemon's peak RSS (VmHWM) after the round, and its RSS before
#   samples_lost       CPU samples the service lost meanwhile (its ring buffer full: the
#                      records held its loop up)
#
# Usage: sudo bench/gpu_records.sh [--build DIR] [--records N] [--burst B] [--period-ms P]
#                                  [--reps R] [--graph K] [--store-mb M] [--short] [--json FILE]
#   defaults: 1,000,000 records as bursts of 100,000 a second apart (1 M in 10 s), 3 rounds
#   --graph K   the kernels are nodes of CUDA graphs of K kernels each (graph ids set)
#   --store-mb M  xsprofd --gpu-store-mb (default 64, the service's own: 262,144 records; the
#               burst's 1 M pass through it, as slices close early every 65,536)
#   --freq HZ   the service's sampling rate (default 9: its whole-machine sampling of everyone
#               else's work is the noise this figure subtracts; the GPU records cost the same)
#   --xsprofd P   another build's xsprofd (before/after a change; the sender stays DIR's)
#   --short     CI's form (bench/budget.sh --short): 300,000 records, bursts of 100,000 at
#               0.5 s, 1 round
#   --json F    also write the medians as JSON to F (bench/budget.sh reads it)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

prog=${0##*/}
build=build
records=1000000 burst=100000 period=1000 reps=3 graph=0 json= store_mb=64 xsprofd= freq=9
while [[ $# -gt 0 ]]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	--records) records=$2; shift 2 ;;
	--burst) burst=$2; shift 2 ;;
	--period-ms) period=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--graph) graph=$2; shift 2 ;;
	--store-mb) store_mb=$2; shift 2 ;;
	--freq) freq=$2; shift 2 ;;
	--xsprofd) xsprofd=$2; shift 2 ;;
	--short) records=300000 burst=100000 period=500 reps=1; shift ;;
	--json) json=$2; shift 2 ;;
	-h | --help) sed -n '3,34p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "$prog: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
die() { echo "$prog: $*" >&2; exit 2; }

xsprofd=${xsprofd:-$build/daemon/xsprofd}
flood=$build/tests/xs_gpu_flood
ctl=$build/daemon/ctl/xsprofctl
[[ $EUID -eq 0 ]] || die "needs root (the service loads BPF)"
for f in "$xsprofd" "$flood" "$ctl"; do
	[[ -x $f ]] || die "$f missing: cmake --build $build first"
done
tmp=$(mktemp -d /tmp/xsprof-gpu-records.XXXXXX)
chmod 0755 "$tmp"
sock=$tmp/api.sock
daemon= probe=
cleanup() {
	trap - EXIT INT TERM
	[[ -z $probe ]] || kill "$probe" 2>/dev/null || true
	[[ -z $daemon ]] || { kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; } || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The status prober: asks /v1/status every 200 ms, times each answer. "watch N": until the
# daemon has received N kernels more than at the start and holds no GPU record (the slice
# closed), at most 60 s, counted from the gpu status BASE (JSON) when given; "idle S": for S
# seconds. It starts when the file GO appears. Prints "max_ms median_ms requests secs
# kernels evicted lost_samples".
cat >"$tmp/probe.py" <<'PY'
import json, socket, sys, time
import os
sock, mode, arg, go = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
base = json.loads(sys.argv[5]) if len(sys.argv) > 5 else None
deadline = time.monotonic() + 60
while not os.path.exists(go):  # started early: the service has read this process by then
    if time.monotonic() > deadline:
        sys.exit("probe: no go within 60 s")
    time.sleep(0.01)
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
    j = json.loads(data.split(b"\r\n\r\n", 1)[1])
    j["gpu"]["lost_samples"] = j["counters"]["lost_ring_buffer_full"]
    return dt, j["gpu"]
_, g0 = status()
g0 = base or g0
start, lat = time.monotonic(), []
while True:
    dt, g = status()
    lat.append(dt)
    el = time.monotonic() - start
    if mode == "idle" and el >= arg:
        break
    if mode == "watch" and ((g["kernels"] - g0["kernels"] >= arg and g["records_held"] == 0)
                            or el > 60):
        break
    time.sleep(0.2)
lat.sort()
print("%.1f %.1f %d %.2f %d %d %d" % (lat[-1] * 1e3, lat[len(lat) // 2] * 1e3, len(lat), el,
                                     g["kernels"] - g0["kernels"],
                                     g["records_evicted"] - g0["records_evicted"],
                                     g["lost_samples"] - g0["lost_samples"]))
PY

cpu_ticks() { awk '{ print $14 + $15 }' /proc/"$1"/stat; }
kib() { awk -v k="$2" '$1 == k":" { print $2 }' /proc/"$1"/status; }
med() { printf "%s\n" "$@" | median_of; }
calc() { python3 -c "print($1)"; }
hz=$(getconf CLK_TCK)

"$xsprofd" --socket "$sock" --cupti-socket "$tmp/cupti.sock" --gpu-store-mb "$store_mb" --freq "$freq" >"$tmp/xsprofd.log" 2>&1 &
daemon=$!
for _ in $(seq 300); do [[ -S $sock ]] && break; sleep 0.1; done
[[ -S $sock ]] || die "xsprofd did not start: $(tail -3 "$tmp/xsprofd.log")"
export XSPROF_CUPTI_SOCKET=$tmp/cupti.sock
sleep 2 # past start-up
# Warm-up: kernel stacks sampled, then named by a query. The first kernel frame the service
# names loads the kernel's symbols (about 50 ms, once per daemon): not a GPU record's cost,
# but it would fall in the first flood on a machine too quiet to have sampled one before.
timeout 1.5 dd if=/dev/zero of=/dev/null bs=64k 2>/dev/null || true
warm=$("$ctl" --timeout 60 -s "$sock" flamegraph --since 30 -o "$tmp/warm.folded" 2>&1) ||
	die "the warm-up query failed: $(tail -1 <<<"$warm")"
rss0=$(calc "round($(kib "$daemon" VmRSS) / 1024, 1)")

gpu_status() {
	curl -s -m 30 --unix-socket "$sock" http://x/v1/status |
		python3 -c 'import json, sys
j = json.load(sys.stdin)
j["gpu"]["lost_samples"] = j["counters"]["lost_ring_buffer_full"]
print(json.dumps(j["gpu"]))'
}
drops() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])["sender_dropped"])' "$1"; }
# The prober started ahead of a window, waiting for its go: the service reads every new
# process (its maps, its binaries' unwind tables: tens of ms for a python3), and this script's
# own helpers (the prober, curl, the python3 one-liners) must not count against the records.
# Their reading falls in the 2 s before the window; the sender's, in the window, does count.
probe_start() { # ARGS...: the prober's mode and arguments
	rm -f "$tmp/go"
	python3 "$tmp/probe.py" "$sock" "$1" "$2" "$tmp/go" "${@:3}" >"$tmp/probe.out" &
	probe=$!
	sleep 2
}
flood_window() { # ROUND: "ticks max_ms median_ms requests secs kernels evicted lost_samples drops joined"
	local c0 c1 out fp g0 d0 d1
	g0=$(gpu_status)
	d0=$(drops "$g0")
	probe_start watch "$records" "$g0"
	c0=$(cpu_ticks "$daemon")
	touch "$tmp/go"
	"$flood" "$records" "xs_bulk_kernel_$1" 1 "$burst" "$period" "$graph" >"$tmp/flood.out" 2>&1 &
	fp=$!
	wait "$probe" || die "the status prober failed"
	out=$(cat "$tmp/probe.out")
	c1=$(cpu_ticks "$daemon")
	wait "$fp" || die "the sender failed: $(cat "$tmp/flood.out")"
	d1=$(drops "$(gpu_status)")
	echo "$((c1 - c0)) $out $((d1 - d0)) $(joined "xs_bulk_kernel_$1")"
}
joined() { # NAME: how many kernels named NAME root's window report holds
	"$ctl" --timeout 60 -s "$sock" report --since 120 -o "$tmp/r.gpu.json" >/dev/null 2>&1 || true
	python3 -c '
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print(0); sys.exit()
print(sum(k.get("count", 0) for k in r.get("kernels", []) if k.get("name") == sys.argv[2]))' \
		"$tmp/r.gpu.json" "$1"
}
idle_window() { # SECS: prints "ticks"
	local c0 c1
	probe_start idle "$1"
	c0=$(cpu_ticks "$daemon")
	touch "$tmp/go"
	wait "$probe" || die "the status prober failed"
	c1=$(cpu_ticks "$daemon")
	echo "$((c1 - c0))"
}

per=() lost=() lat=() hwm=() sl=()
printf 'GPU records in bulk: %s records, bursts of %s every %s ms%s, %s round(s), %s CPUs, %s\n' \
	"$records" "$burst" "$period" "$([[ $graph == 0 ]] || echo ", graphs of $graph kernels")" \
	"$reps" "$(nproc)" "$(uname -r)"
for ((r = 0; r < reps; r++)); do
	idle_a=$(idle_window 12)
	read -r ft max_ms med_ms nreq secs got evicted slost drops joins < <(flood_window "$r")
	idle_b=$(idle_window "$secs")
	# The quieter idle window's rate over the flood window's length: another process's
	# activity (the service samples the whole machine) then counts against the records.
	idle=$(calc "round(min($idle_a / 12, $idle_b / $secs) * $secs, 1)")
	ns=$(calc "round(max($ft - $idle, 0) * 1e9 / $hz / $records)")
	l=$((records - joins))
	h=$(calc "round($(kib "$daemon" VmHWM) / 1024, 1)")
	per+=("$ns") lost+=("$l") lat+=("$max_ms") hwm+=("$h") sl+=("$slost")
	printf '  round %d: %s ns/record (flood %s ticks over %s s, idle %s and %s ticks over 12 and %s s), lost %s (received %s, evicted %s, sender drops %s), status max %s ms (median %s) of %s, peak RSS %s MiB, CPU samples lost meanwhile %s\n' \
		"$r" "$ns" "$ft" "$secs" "$idle_a" "$idle_b" "$secs" "$l" "$got" "$evicted" \
		"$drops" "$max_ms" "$med_ms" "$nreq" "$h" "$slost"
done
m_ns=$(med "${per[@]}") m_lost=$(med "${lost[@]}") m_lat=$(med "${lat[@]}")
m_rss=$(med "${hwm[@]}") m_sl=$(med "${sl[@]}")
printf 'median: cpu_ns_per_record %s  lost %s  status_max_ms %s  rss_mib %s (before %s)  samples_lost %s\n' \
	"$m_ns" "$m_lost" "$m_lat" "$m_rss" "$rss0" "$m_sl"
[[ -z $json ]] || printf '{"cpu_ns_per_record": %s, "lost": %s, "status_max_ms": %s, "rss_mib": %s, "rss_before_mib": %s, "samples_lost": %s}\n' \
	"$m_ns" "$m_lost" "$m_lat" "$m_rss" "$rss0" "$m_sl" >"$json"

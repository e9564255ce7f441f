#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Scale curves: how xsprofd's cost grows with the work (issue 40). Each dimension is measured at
# several points from small to far past a busy GPU host; at each point xsprofd's CPU (user +
# system from /proc/PID/stat, plus the run time of its BPF programs: kernel.bpf_stats_enabled,
# restored after) and RSS (VmRSS, VmHWM), the cost per unit, and the growth: the log-log slope
# of cost against size (1 linear, < 1 sub-linear) and the ratio of the per-unit cost at the
# largest point to the smallest (with the step where it bends most).
#
#   procs     processes alive (forked without exec from one parent, each spinning 1 ms once so
#             the sampler meets it, then asleep through a slice close): the service at 999 Hz,
#             a fresh one per point; CPU over and above its idle rate, RSS gained, per process
#   stacks    distinct stacks (xs_scale_work stacks: a recursion of 2^24 paths): a one-shot
#             profile at 10,000 Hz long enough for the point's distinct stacks at the rate the
#             last point made them (at most 150 s; work and daemon at nice -10), against the
#             same run over 8 paths (the same samples); the extra CPU and peak RSS per stack;
#             the largest point once more under --max-stacks (a tenth of it)
#   gpu       GPU records a second (xs_gpu_flood, bursts every 100 ms for a few seconds) into
#             the idle service, until its window took them; CPU per record over its idle rate
#   launches  CUDA launches a second (xs_cuda_bench both: the injection library's USDT and
#             libcudart's uprobe, paced) under the service; CPU per launch, BPF included
#   graphs    the gpu dimension at 100,000 records a second, as nodes of CUDA graphs of up to
#             5,000 kernels each; CPU and peak RSS per record against graph size
#   window    the rolling window over a day in simulated time (xs_scale_window: the window store
#             itself fed 8,640 synthetic 10-s slices): xsprofd's default --store-mb 64 with 2,000
#             stacks a slice, and a store big enough to hold the day at 200 stacks a slice; time
#             per slice added and per query, memory against the window's length
#   fleet     hosts asked by `xsprofctl fleet --since 30` (simulated: one server on loopback
#             ports 127.0.0.1:21000.. answering every host with a canned folded profile of 600
#             stacks, 100 of them the host's own); wall time and the client's peak RSS per host
#
# Usage: sudo bench/scale.sh [--short] [--only DIM[,DIM]] [--build DIR] [--json FILE]
#   --short   CI's form (bench/budget.sh --short): fewer, smaller points, ~2 minutes
#   --only    just these dimensions (procs,stacks,gpu,launches,graphs,window,fleet)
#   --json F  also write the per-unit figures and growth as JSON (bench/budget.sh reads it)
# Every process it starts is stopped on exit and on Ctrl-C. See bench/README.md ("Scale curves").
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

prog=${0##*/}
build=build short=no only='' json=''
all_dims=procs,stacks,gpu,launches,graphs,window,fleet
while [[ $# -gt 0 ]]; do
	case $1 in
	--short) short=yes; shift ;;
	--only) only=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	--json) json=$2; shift 2 ;;
	-h | --help) sed -n '3,37p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "$prog: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
die() { echo "$prog: $*" >&2; exit 2; }
only=${only:-$all_dims}
for d in ${only//,/ }; do
	[[ ,$all_dims, == *,$d,* ]] || die "--only: no dimension '$d' (one of $all_dims)"
done
want() { [[ ,$only, == *,$1,* ]]; }

xsprofd=$build/daemon/xsprofd
ctl=$build/daemon/ctl/xsprofctl
work=$build/bench/xs_scale_work
winbench=$build/bench/xs_scale_window
flood=$build/tests/xs_gpu_flood
cudabench=$build/tests/xs_cuda_bench
[[ $EUID -eq 0 ]] || die "needs root (BPF, kernel.bpf_stats_enabled)"
for f in "$xsprofd" "$ctl" "$work" "$winbench" "$flood" "$cudabench" /usr/bin/time; do
	[[ -x $f ]] || die "$f missing: cmake --build $build first"
done
command -v bpftool >/dev/null || die "missing bpftool (scripts/deps.sh installs it)"

if [[ $short == yes ]]; then
	p_procs="300 3000" p_stacks="10000 50000" p_gpu="10000 100000 300000" gpu_secs=2
	p_launch="2000 20000 100000" launch_secs=2 p_graph="0 5000" p_fleet="10 100 300"
	win_slices=1080 win_every=360 fleet_reps=1 hold=11
else
	p_procs="100 1000 3000 10000" p_stacks="10000 100000 300000 1000000"
	p_gpu="10000 100000 300000 1000000" gpu_secs=5
	p_launch="1000 10000 50000 100000 200000" launch_secs=5 p_graph="0 50 500 5000"
	p_fleet="10 100 300 1000" win_slices=8640 win_every=1080 fleet_reps=3 hold=12
fi

tmp=$(mktemp -d /tmp/xsprof-scale.XXXXXX)
chmod 0755 "$tmp"
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
bg=()
cleanup() {
	trap - EXIT INT TERM
	local p
	# Started in a subshell (bg+= is lost there): their pids are in $tmp/pids.
	[[ ! -r $tmp/pids ]] || mapfile -t -O "${#bg[@]}" bg <"$tmp/pids"
	for p in "${bg[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${bg[@]}"; do wait "$p" 2>/dev/null || true; done
	sysctl -q -w kernel.bpf_stats_enabled="$old_stats" >/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
sysctl -q -w kernel.bpf_stats_enabled=1

# A sleep that a signal ends at once (bash runs a trap only after the foreground command).
nap() {
	sleep "$1" &
	wait $! || true
}
hz=$(getconf CLK_TCK)
calc() { python3 -c "print($1)"; }
now() { date +%s.%N; }
kib() { awk -v k="$2" '$1 == k":" { print $2 }' /proc/"$1"/status; }
# cost PID: seconds of CPU PID has used so far, its own (user + system) plus its BPF programs'.
cost() {
	local ticks owned
	ticks=$(awk '{ print $14 + $15 }' /proc/"$1"/stat)
	owned=$(cat /proc/"$1"/fdinfo/* 2>/dev/null | sed -nE 's/^prog_id:\s*([0-9]+)/\1/p' || true)
	bpftool prog show --json | python3 -c '
import json, sys
owned = set(int(x) for x in sys.argv[1].split())
ns = sum(p.get("run_time_ns", 0) for p in json.load(sys.stdin) if p["id"] in owned)
print("%.4f %.4f" % (int(sys.argv[2]) / int(sys.argv[3]), ns / 1e9))' "$owned" "$ticks" "$hz"
}
# The rows every dimension adds: DIM POINT UNIT CPU_S RSS_MIB PER_UNIT_CPU PER_UNIT_RSS NOTE
rows=$tmp/rows
: >"$rows"
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$rows"; }

daemon=
start_service() { # ARGS...: a service on private sockets, past its start-up
	rm -f "$tmp/api.sock"
	"$xsprofd" --socket "$tmp/api.sock" --cupti-socket "$tmp/cupti.sock" "$@" \
		>"$tmp/xsprofd.log" 2>&1 &
	daemon=$!
	bg+=("$daemon")
	for _ in $(seq 300); do [[ -S $tmp/api.sock ]] && break; sleep 0.1; done
	[[ -S $tmp/api.sock ]] || die "xsprofd did not start: $(tail -3 "$tmp/xsprofd.log")"
	nap 2
}
stop_service() {
	kill "$daemon" 2>/dev/null || true
	wait "$daemon" 2>/dev/null || true
	daemon=
}
# idle_rate SECS: the service's cost a second (CPU + BPF) over SECS of no work of ours.
idle_rate() {
	local u0 b0 u1 b1
	read -r u0 b0 < <(cost "$daemon")
	nap "$1"
	read -r u1 b1 < <(cost "$daemon")
	calc "($u1 + $b1 - $u0 - $b0) / $1"
}
gpu_status() {
	curl -s -m 30 --unix-socket "$tmp/api.sock" http://x/v1/status |
		python3 -c 'import json, sys; g = json.load(sys.stdin)["gpu"]; print(g["kernels"], g["records_held"], g["sender_dropped"])'
}
say() { printf '%s\n' "$*" >&2; }

# ---- processes alive ----
dim_procs() {
	local n idle idle2 u0 b0 u1 b1 t0 t1 rss0 rss1 hwm extra
	say "procs: processes alive (forked, 1 ms of CPU each, then asleep; the service at 999 Hz)"
	for n in $p_procs; do
		start_service --freq 999
		idle=$(idle_rate 4)
		rss0=$(kib "$daemon" VmRSS)
		read -r u0 b0 < <(cost "$daemon")
		t0=$(now)
		"$work" procs "$n" 3600 1 >"$tmp/procs.out" 2>&1 &
		bg+=($!)
		local wp=$!
		for _ in $(seq 1200); do grep -q '^ready' "$tmp/procs.out" && break; sleep 0.1; done
		grep -q "^ready $n" "$tmp/procs.out" || die "xs_scale_work procs $n: $(cat "$tmp/procs.out")"
		nap "$hold" # past a slice close: the slice named them
		read -r u1 b1 < <(cost "$daemon")
		t1=$(now)
		rss1=$(kib "$daemon" VmRSS) hwm=$(kib "$daemon" VmHWM)
		kill "$wp"
		wait "$wp" 2>/dev/null || true
		nap 2
		# The quieter of the idle rates before and after (others' work on the machine is
		# sampled too: it counts against the processes, so the figure errs high).
		idle2=$(idle_rate 3)
		idle=$(calc "min($idle, $idle2)")
		extra=$(calc "max($u1 + $b1 - $u0 - $b0 - $idle * ($t1 - $t0), 0)")
		row procs "$n" process "$extra" "$(calc "round($hwm / 1024, 1)")" \
			"$(calc "round($extra * 1e6 / $n, 1)")" "$(calc "round(max($rss1 - $rss0, 0) / $n, 2)")" \
			"us/proc KiB/proc (idle $(calc "round($idle * 100, 2)")% CPU, BPF $(calc "round($b1 - $b0, 3)") s, RSS $(calc "round($rss0 / 1024, 1)") -> $(calc "round($rss1 / 1024, 1)") MiB)"
		say "  $n: $(tail -1 "$rows" | cut -f4-)"
		stop_service
	done
}

# ---- distinct stacks ----
stacks_run() { # BITS SECS [XSPROFD ARGS...]: "cpu_s bpf_s distinct peak_mib overflowed"
	local bits=$1 secs=$2 wp xp
	shift 2
	# Both ahead of other work on the machine (nice -10): the samples, hence the distinct
	# stacks, are the CPU time the work gets, and the daemon must keep up with them.
	nice -n -10 "$work" stacks "$bits" "$((secs + 30))" >/dev/null &
	wp=$!
	echo "$wp" >>"$tmp/pids"
	sleep 0.3
	nice -n -10 /usr/bin/time -f '%U %S' -o "$tmp/st.time" "$xsprofd" -f -v -F 10000 -p "$wp" -d "$secs" \
		-o "$tmp/st.folded" "$@" 2>"$tmp/st.log" &
	xp=$!
	echo "$xp" >>"$tmp/pids"
	wait "$xp" || die "xsprofd -p failed: $(tail -3 "$tmp/st.log")"
	kill "$wp" 2>/dev/null || true
	wait "$wp" 2>/dev/null || true
	python3 - "$tmp/st.time" "$tmp/st.log" <<'PY'
import re, sys
u, s = open(sys.argv[1]).read().split()[-2:]
log = open(sys.argv[2]).read()
bpf = sum(int(r) * float(n) for r, n in re.findall(r"BPF cost: \S+: (\d+) runs, ([\d.]+) ns each", log))
d = re.search(r"(\d+) distinct stacks from", log)
rss = re.search(r"own peak RSS ([\d.]+) MiB", log)
kept = re.search(r"(\d+) kept", log)
lost = re.search(r"lost: (\d+)", log)
print(float(u) + float(s), bpf / 1e9, d.group(1) if d else 0, rss.group(1) if rss else 0,
      "%s/%s" % (kept.group(1) if kept else "?", lost.group(1) if lost else "?"))
PY
}
dim_stacks() {
	local d secs c0 b0 n0 r0 c1 b1 n1 r1 k1 per
	say "stacks: distinct stacks (one-shot, 10,000 Hz on every CPU; against 8 paths, same samples)"
	local per_s=$((10000 * $(nproc)))
	for d in $p_stacks; do
		# Long enough for d distinct stacks at the rate the last point made them (the CPU
		# the work gets on a shared machine), at most 150 s.
		secs=$(calc "min(150, max(2, round($d / $per_s * 1.15 + 0.5)))")
		read -r c0 b0 n0 r0 _ < <(stacks_run 3 "$secs")
		read -r c1 b1 n1 r1 k1 < <(stacks_run 24 "$secs")
		per_s=$(calc "max(1000, round($n1 / $secs))")
		per=$(calc "round(max($c1 + $b1 - $c0 - $b0, 0) * 1e6 / max($n1 - $n0, 1), 2)")
		row stacks "$n1" stack "$(calc "round($c1 + $b1, 3)")" "$r1" "$per" \
			"$(calc "round(max($r1 - $r0, 0) * 1024 / max($n1 - $n0, 1), 3)")" \
			"us/stack KiB/stack (${secs} s, samples kept/lost ${k1}; 8 paths: $(calc "round($c0 + $b0, 3)") s, $r0 MiB, $n0 stacks)"
		say "  $d: $(tail -1 "$rows" | cut -f2-)"
	done
	# The cap: the largest point under --max-stacks a tenth of it.
	read -r c1 b1 n1 r1 _ < <(stacks_run 24 "$secs" --max-stacks "$((d / 10))")
	cap_note="--max-stacks $((d / 10)): $n1 distinct kept, peak RSS $r1 MiB, CPU $(calc "round($c1 + $b1, 3)") s; $(grep -m1 -- '--max-stacks' "$tmp/st.log" | sed 's/^xsprofd: //' || echo 'no overflow line')"
	say "  cap: $cap_note"
	printf '%s\n' "$cap_note" >"$tmp/cap_note"
}

# ---- GPU records a second, and graphs ----
gpu_point() { # RATE SECS GRAPH IDLE NAME: one flood; appends a row
	local rate=$1 secs=$2 graph=$3 idle=$4 name=$5 n burst k0 d0 k h d u0 b0 u1 b1 t0 t1 ts extra
	# At most 1.5 M records a point: the store (--gpu-store-mb 1024) holds them all.
	n=$((rate * secs > 1500000 ? 1500000 : rate * secs)) burst=$((rate / 10))
	read -r k0 _ d0 < <(gpu_status)
	read -r u0 b0 < <(cost "$daemon")
	t0=$(now)
	XSPROF_CUPTI_SOCKET=$tmp/cupti.sock "$flood" "$n" "xs_scale_$name" 1 "$burst" 100 "$graph" \
		>"$tmp/flood.out" 2>&1 || die "xs_gpu_flood failed: $(cat "$tmp/flood.out")"
	ts=$(now)
	for _ in $(seq 240); do # the window took them (at most 60 s)
		read -r k h d < <(gpu_status)
		((k - k0 >= n && h == 0)) && break
		sleep 0.25
	done
	read -r u1 b1 < <(cost "$daemon")
	t1=$(now)
	extra=$(calc "max($u1 + $b1 - $u0 - $b0 - $idle * ($t1 - $t0), 0)")
	row "$name" "$([[ $name == graphs ]] && echo "$graph" || echo "$rate")" record "$extra" \
		"$(calc "round($(kib "$daemon" VmHWM) / 1024, 1)")" "$(calc "round($extra * 1e9 / $n)")" \
		"$(calc "round(($(kib "$daemon" VmHWM) - $rss_base) * 1024 / $n, 1)")" \
		"ns/rec B/rec(peak) ($n records at $(calc "round($n / ($ts - $t0))")/s achieved, received $((k - k0)), sender drops $((d - d0)), BPF $(calc "round($b1 - $b0, 3)") s)"
	say "  $([[ $name == graphs ]] && echo "graph $graph" || echo "$rate/s"): $(tail -1 "$rows" | cut -f4-)"
}
dim_gpu() {
	local r idle
	say "gpu: GPU records a second into the idle service (bursts every 100 ms, $gpu_secs s)"
	start_service --gpu-store-mb 1024
	idle=$(idle_rate 4)
	rss_base=$(kib "$daemon" VmRSS)
	for r in $p_gpu; do gpu_point "$r" "$gpu_secs" 0 "$idle" gpu; done
	stop_service
}
dim_graphs() {
	local g idle
	say "graphs: 100,000 records a second as nodes of graphs of G kernels ($gpu_secs s each)"
	for g in $p_graph; do
		# A fresh service each: the peak RSS is this graph size's.
		start_service --gpu-store-mb 1024
		idle=$(idle_rate 3)
		rss_base=$(kib "$daemon" VmRSS)
		gpu_point 100000 "$gpu_secs" "$g" "$idle" graphs
		stop_service
	done
}

# ---- launches a second ----
dim_launches() {
	local r idle cudart fake n u0 b0 u1 b1 t0 t1 extra rate flags
	flags=$build/tests/CMakeFiles/xs_cuda_bench.dir/flags.make
	cudart=$(sed -n 's/.*XS_CUDART_PATH="\([^"]*\)".*/\1/p' "$flags" 2>/dev/null || true)
	cudart=$(readlink -f "${cudart:-/usr/local/cuda/lib64/libcudart.so}")
	fake=$(sed -nE 's/.*XS_CUPTI_FAKE_PATH=\\?"([^"\\]*).*/\1/p' "$flags" 2>/dev/null || true)
	[[ -r $fake ]] || die "no fake injection library (XS_CUPTI_FAKE_PATH in $flags)"
	say "launches: CUDA launches a second under the service (USDT + uprobe, paced, $launch_secs s)"
	start_service --cuda-lib "$cudart" --cuda-lib "$fake"
	idle=$(idle_rate 4)
	rss_base=$(kib "$daemon" VmRSS)
	for r in $p_launch; do
		n=$((r * launch_secs))
		read -r u0 b0 < <(cost "$daemon")
		t0=$(now)
		"$cudabench" both "$n" "$cudart" "$r" >"$tmp/launch.out" 2>&1 ||
			die "xs_cuda_bench failed: $(cat "$tmp/launch.out")"
		sleep 1 # the ring buffer read
		read -r u1 b1 < <(cost "$daemon")
		t1=$(now)
		rate=$(sed -n 's/^rate //p' "$tmp/launch.out")
		extra=$(calc "max($u1 + $b1 - $u0 - $b0 - $idle * ($t1 - $t0), 0)")
		row launches "$r" launch "$extra" "$(calc "round($(kib "$daemon" VmHWM) / 1024, 1)")" \
			"$(calc "round($extra * 1e9 / $n)")" "$(calc "round(($(kib "$daemon" VmHWM) - $rss_base) * 1024 / $n, 1)")" \
			"ns/launch B/launch(peak) ($n launches at ${rate}/s achieved, BPF $(calc "round($b1 - $b0, 3)") s, $(sed -n 's/.*ns_per_call //p' "$tmp/launch.out") ns a call in the launcher)"
		say "  $r/s: $(tail -1 "$rows" | cut -f4-)"
	done
	stop_service
}

# ---- the window over a day ----
dim_window() {
	local cfg
	say "window: $win_slices slices of 10 s into the window store (simulated time)"
	for cfg in "--stacks 2000 --store-mb 64" "--stacks 200 --store-mb 4096"; do
		# shellcheck disable=SC2086
		"$winbench" --slices "$win_slices" --every "$win_every" $cfg >"$tmp/win.out" ||
			die "xs_scale_window failed"
		sed 's/^/  /' "$tmp/win.out" >&2
		python3 - "$tmp/win.out" "$cfg" >>"$rows" <<'PY'
import sys
cfg = sys.argv[2].split()
for line in open(sys.argv[1]):
    if not line.startswith("slices "):
        continue
    f = line.split()
    v = dict(zip(f[::2], f[1::2]))
    held = int(v["held"])
    # DIM POINT UNIT CPU(add+all query, s) RSS PER_UNIT(query ms per slice held) PER_UNIT_RSS(KiB per slice held) NOTE
    name = "window" if cfg[3] == "4096" else "window_cap"
    print("\t".join([name, v["hours"], "hour", "%.4f" % ((float(v["add_us"]) / 1e6) + float(v["qall_ms"]) / 1e3),
                     v["rss_mib"], "%.3f" % (float(v["qall_ms"]) / held),
                     "%.1f" % (float(v["rss_mib"]) * 1024 / held),
                     "ms-query/slice KiB/slice (%d slices held, store %s MiB, add %s us, query 5 min %s ms, 1 h %s ms, all %s ms, %s dropped; %s stacks a slice, --store-mb %s)"
                     % (held, v["store_mib"], v["add_us"], v["q5m_ms"], v["q1h_ms"], v["qall_ms"],
                        v["dropped"], cfg[1], cfg[3])]))
PY
	done
}

# ---- fleet hosts ----
dim_fleet() {
	local h r srv s k
	say "fleet: xsprofctl fleet --since 30 over simulated hosts (canned replies on 127.0.0.1)"
	cat >"$tmp/hosts.py" <<'PY'
import asyncio, resource, sys
n, base = int(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_NOFILE, (n + 4096, n + 4096))
common = "".join("python3;main;train_step;layer_%d;op_%d;kernel_%d %d\n" % (i % 20, i % 97, i, 10 + i % 50)
                 for i in range(500))
def body(port):
    own = "".join("python3;main;host_%d_only;fn_%d %d\n" % (port, i, 1 + i % 7) for i in range(100))
    b = (common + own).encode()
    return (b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n\r\n" % len(b)) + b
async def serve(port):
    reply = body(port)
    async def handle(r, w):
        try:
            await r.readuntil(b"\r\n\r\n")
            w.write(reply)
            await w.drain()
        except Exception:
            pass
        w.close()
    await asyncio.start_server(handle, "127.0.0.1", port, backlog=256)
async def main():
    await asyncio.gather(*(serve(base + i) for i in range(n)))
    print("ready", flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
PY
	local max=0
	for h in $p_fleet; do ((h > max)) && max=$h; done
	python3 "$tmp/hosts.py" "$max" 21000 >"$tmp/hosts.out" 2>&1 &
	srv=$!
	bg+=("$srv")
	for _ in $(seq 300); do grep -q ready "$tmp/hosts.out" && break; sleep 0.1; done
	grep -q ready "$tmp/hosts.out" || die "the canned hosts did not start: $(tail -3 "$tmp/hosts.out")"
	head -c 24 /dev/urandom | base64 >"$tmp/token"
	chmod 600 "$tmp/token"
	for h in $p_fleet; do
		for ((i = 0; i < h; i++)); do echo "127.0.0.1:$((21000 + i)) host=h$i rack=r$((i % 5))"; done >"$tmp/h$h"
		local secs=() kbs=() stacks=0
		for ((r = 0; r < fleet_reps; r++)); do
			/usr/bin/time -f '%e %M %U %S' -o "$tmp/fleet.time" "$ctl" fleet -f "$tmp/h$h" \
				--token-file "$tmp/token" --parallel 64 --deadline 60 --since 30 \
				-o "$tmp/fleet.folded" 2>"$tmp/fleet.err" ||
				die "xsprofctl fleet over $h hosts failed: $(grep -v ' ok ' "$tmp/fleet.err" | tail -3)"
			read -r s k u sy <"$tmp/fleet.time"
			secs+=("$s") kbs+=("$k")
			stacks=$(wc -l <"$tmp/fleet.folded")
		done
		s=$(printf '%s\n' "${secs[@]}" | median_of -)
		k=$(printf '%s\n' "${kbs[@]}" | median_of -)
		row fleet "$h" host "$s" "$(calc "round($k / 1024, 1)")" "$(calc "round($s * 1e3 / $h, 2)")" \
			"$(calc "round($k / $h, 1)")" "ms/host KiB/host(peak) (wall s, client peak RSS; median of $fleet_reps; merged $stacks stacks; user+sys $(calc "round($u + $sy, 2)") s)"
		say "  $h hosts: $(tail -1 "$rows" | cut -f4-)"
	done
	kill "$srv"
	wait "$srv" 2>/dev/null || true
}

printf 'Scale curves (%s form, %s CPUs, %s), dimensions: %s\n' \
	"$([[ $short == yes ]] && echo short || echo full)" "$(nproc)" "$(uname -r)" "$only"
t_start=$(now)
for d in procs stacks gpu launches graphs window fleet; do
	if want "$d"; then
		t=$(now)
		"dim_$d"
		say "  ($d: $(calc "round($(now) - $t)") s)"
	fi
done

# ---- the table, the growth, the JSON ----
python3 - "$rows" "$json" "$tmp/cap_note" <<'PY'
import json, math, os, sys
rows, jpath, capf = sys.argv[1], sys.argv[2], sys.argv[3]
dims = {}
for line in open(rows):
    d, pt, unit, cpu, rss, pu, pr, note = line.rstrip("\n").split("\t")
    dims.setdefault(d, []).append((float(pt), unit, float(cpu), float(rss), float(pu), float(pr), note))
out = {}
what = {"procs": "CPU us per process alive (over idle)", "stacks": "CPU us per distinct stack",
        "gpu": "CPU ns per GPU record", "launches": "CPU ns per launch",
        "graphs": "CPU ns per GPU record (x: graph size)",
        "window": "query ms per slice held (x: hours)", "window_cap": "query ms per slice held (x: hours)",
        "fleet": "wall ms per host"}
def slope(xs, ys):
    p = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(p) < 2:
        return float("nan")
    mx = sum(a for a, _ in p) / len(p); my = sum(b for _, b in p) / len(p)
    den = sum((a - mx) ** 2 for a, _ in p)
    return sum((a - mx) * (b - my) for a, b in p) / den if den else float("nan")
print()
for d, pts in dims.items():
    pts.sort()
    print("%s: %s" % (d, what.get(d, "")))
    print("  %-10s %-10s %-9s %-12s %-12s %s" % ("point", "cost", "RSS MiB", "per unit", "RSS/unit", "notes"))
    for pt, unit, cpu, rss, pu, pr, note in pts:
        print("  %-10g %-10g %-9g %-12g %-12g %s" % (pt, cpu, rss, pu, pr, note))
    xs = [p[0] for p in pts]; per = [p[4] for p in pts]
    if d == "graphs":
        # Cost is per record at one rate; growth is the per-record cost against graph size.
        base = per[0] or 1
        ratio = per[-1] / base
        verdict = "flat" if ratio < 1.25 else "grows with graph size"
        b = float("nan")
    else:
        if d.startswith("window"):
            held = [float(p[6].split("(")[1].split()[0]) for p in pts]
            b = slope(held, [p[2] for p in pts]) if held[0] != held[-1] else float("nan")
        else:
            b = slope(xs, [p[4] * p[0] for p in pts])
        ratio = per[-1] / per[0] if per[0] > 0 else float("nan")
        verdict = ("sub-linear" if b < 0.9 else "linear" if b <= 1.15 else "worse than linear") \
            if not math.isnan(b) else "bounded: the same slices held at every point (the cap)" \
            if d == "window_cap" else "n/a"
    bend = ""
    if len(pts) > 2:
        steps = [(per[i + 1] / per[i] if per[i] > 0 else 0, xs[i], xs[i + 1]) for i in range(len(pts) - 1)]
        worst = max(steps)
        bend = "; per-unit steps %s" % " ".join("x%.2f" % s[0] for s in steps)
        if worst[0] > 1.3:
            bend += " (bends up between %g and %g)" % (worst[1], worst[2])
    marg = [(pts[i + 1][2] - pts[i][2]) / (xs[i + 1] - xs[i]) for i in range(len(pts) - 1)
            if xs[i + 1] > xs[i]]
    if marg and d != "graphs":
        # Fixed costs (start-up, a probe's attach) weigh on the small points: the marginal
        # cost per unit between neighbours is what a unit more costs.
        bend += "; marginal per unit %s" % " ".join("%.3g" % (m * (1e6 if d in ("procs", "stacks") else 1e9 if d in ("gpu", "launches") else 1e3)) for m in marg)
        out.setdefault("_marg", {})[d] = marg
    if len(pts) > 1 and xs[-1] > xs[-2]:
        bend += "; RSS %.3g MiB a unit between the last two points" % ((pts[-1][3] - pts[-2][3]) / (xs[-1] - xs[-2]))
    print("  growth: log-log slope %.2f, per-unit largest/smallest %.2f: %s%s\n" % (b, ratio, verdict, bend))
    out[d] = {"points": xs, "per_unit": per, "per_unit_rss": [p[5] for p in pts],
              "rss_mib": [p[3] for p in pts], "slope": None if math.isnan(b) else round(b, 3),
              "growth_ratio": round(ratio, 3), "verdict": verdict}
if os.path.exists(capf):
    print("stacks cap: " + open(capf).read().strip() + "\n")
# The per-unit figures bench/budgets names (the largest point's).
flat = {}
def last(d, k="per_unit"):
    return out[d][k][-1] if d in out else None
fig = {"procs_us": last("procs"), "procs_rss_kib": last("procs", "per_unit_rss"),
       "stacks_us": last("stacks"), "stacks_rss_kib": last("stacks", "per_unit_rss"),
       "gpu_ns": last("gpu"), "launch_ns": last("launches"), "graph_ns": last("graphs"),
       "window_query_ms_per_slice": last("window"), "fleet_ms_per_host": last("fleet"),
       "fleet_rss_kib_per_host": last("fleet", "per_unit_rss")}
for k, v in fig.items():
    if v is not None:
        flat[k] = v
out.pop("_marg", None)
for d in out:
    if out[d]["growth_ratio"] == out[d]["growth_ratio"]:
        flat[d + "_growth"] = out[d]["growth_ratio"]
if jpath:
    with open(jpath, "w") as f:
        json.dump({"figures": flat, "dimensions": out}, f, indent=1)
print("per-unit figures: " + ", ".join("%s %s" % kv for kv in flat.items()))
PY
say "(all: $(calc "round($(now) - $t_start)") s)"

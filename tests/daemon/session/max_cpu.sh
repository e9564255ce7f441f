#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# --max-cpu (daemon/session/ceiling.h) on a load that costs xsprofd far more than the ceiling:
# 999 Hz (the one-shot pair 9999 Hz) on every CPU kept busy (xs_split, a known 3:1 split of alpha and beta) and 100,000
# CUDA launches a second (xs_launch_rate, on the fake driver). Checked with the real BPF
# programs, in one-shot mode and in the service:
#   - the same load without a ceiling (--max-cpu 100: measured, never shed) costs several times
#     the ceiling, or the test could not tell a ceiling from none;
#   - under --max-cpu 1 the cost measured from outside (/proc/PID/stat and the run time of the
#     BPF programs whose fds xsprofd holds) stays near 1%: at most 2.5%, a margin for a busy CI
#     machine and for the climb at the start;
#   - the work shed is said: the one-shot report, `xsprofctl status`, its JSON and /metrics;
#   - the CPU profile keeps its shares (alpha's within 5 points of the unlimited run's) and the
#     launches their exact count (every one the workload made is in the report's total).
# Usage: tests/daemon/session/max_cpu.sh BUILD_DIR     (ctest runs it as the test max_cpu)
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
name=max_cpu
. "$(dirname "$0")/../service/private_daemon.sh"
split=$build/tests/xs_split
launches=$build/tests/xs_launch_rate
fakecuda=$build/tests/libcuda_xsfake.so
need "$split" "$launches" "$fakecuda"
for tool in bpftool curl promtool; do
	command -v $tool >/dev/null || { echo "FAIL needs $tool (apt-get install bpftool curl prometheus)"; exit 1; }
done
hz=$(getconf CLK_TCK)

# cost PID: "CPU_NS BPF_NS": the process's CPU (every thread, user and system) and the run time
# of the BPF programs it holds (counted while its ceiling keeps the kernel's statistics on).
cost() {
	local ids ticks
	ticks=$(awk '{print $14 + $15}' "/proc/$1/stat") || {
		echo "FAIL xsprofd $1 ended before its cost was read" >&2
		return 1
	}
	ids=$(cat /proc/"$1"/fdinfo/* 2>/dev/null | sed -nE 's/^prog_id:\s*([0-9]+)/\1/p' | sort -u)
	bpftool prog show --json | $py -c '
import json, sys
ids = set(int(x) for x in sys.argv[1].split())
print(int(sys.argv[2]) * 10**9 // int(sys.argv[3]),
      sum(p.get("run_time_ns", 0) for p in json.load(sys.stdin) if p["id"] in ids))' \
		"$ids" "$ticks" "$hz"
}

# pct A B SECS: the cost between two readings of cost(), in percent of all CPUs.
pct() {
	$py -c 'import sys, os
a, b, s = sys.argv[1].split(), sys.argv[2].split(), float(sys.argv[3])
d = (int(b[0]) - int(a[0])) + (int(b[1]) - int(a[1]))
print("%.2f" % (100.0 * d / (s * 1e9 * os.cpu_count())))' "$1" "$2" "$3"
}

# alpha FOLDED: alpha's share of xs_split's alpha and beta, in percent.
alpha() {
	local a b
	a=$(weight "$1" '^xs_split;.*xs_work_alpha')
	b=$(weight "$1" '^xs_split;.*xs_work_beta')
	$py -c 'import sys; a, b = map(float, sys.argv[1:]); print("%.1f" % (100 * a / (a + b)) if a + b else "nan")' "$a" "$b"
}

# le X Y: X <= Y, as numbers.
le() { $py -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)' "$1" "$2"; }

# The one-shot pair samples at 9999 Hz: since the launch probes reuse their stacks, 999 Hz and
# the launches cost xsprofd under 3% of this 2-core machine unlimited (2.5-2.9%), too little
# beside a ceiling of 1%; at 9999 Hz the unlimited run costs several times the ceiling.
pair_hz=9999

# start TAG SECS ARGS...: xsprofd -f for SECS seconds on the load, in the background; its pid in
# $started, its log in $dir/TAG.log, once it samples.
start() {
	local tag=$1 secs=$2
	shift 2
	"$xsprofd" -f --freq "$pair_hz" -d "$secs" --cupti-socket "$dir/$tag.sock" --cuda-lib "$fakecuda" \
		-o "$dir/$tag.folded" "$@" >"$dir/$tag.log" 2>&1 &
	started=$!
	for _ in $(seq 300); do grep -q "^xsprofd: sampling" "$dir/$tag.log" && break; sleep 0.1; done
}

# alive PID TAG: still running, or the test ends here saying why.
alive() {
	[[ -e /proc/$1/stat ]] && return
	fail "xsprofd ($2) ended early: $(grep -v '^libbpf' "$dir/$2.log" | grep -E 'stopping|error' | head -n 3)"
	exit 1
}

step "the load: xs_split on every CPU, 100,000 launches a second"
ncpu=$(nproc)
"$split" 300 100 120 "$ncpu" >/dev/null &
pids+=($!)
"$launches" 100000 120 >/dev/null &
pids+=($!)
sleep 1

# Both at once, so that they see the same load (this machine may be busy with other work).
step "one-shot: --max-cpu 1, and beside it the same run without a ceiling (--max-cpu 100)"
# 20 s each: the second's start, 4 s, two readings (bpftool, python) and the 8 s between them
# come to 14 s and more on a busy machine, and a run that ended before its last reading
# cannot be read (it failed so once, at 14 s).
start cap 20 --max-cpu 1
cap_pid=$started
start base 20 --max-cpu 100
base_pid=$started
sleep 4
alive $cap_pid cap
alive $base_pid base
a=$(cost $cap_pid)
a0=$(cost $base_pid)
sleep 8
alive $cap_pid cap
alive $base_pid base
b=$(cost $cap_pid)
b0=$(cost $base_pid)
capped=$(pct "$a" "$b" 8)
base=$(pct "$a0" "$b0" 8)
wait $cap_pid || fail "xsprofd (cap) exited with $?"
wait $base_pid || fail "xsprofd (base) exited with $?"
grep -q -- "--max-cpu: shed nothing" "$dir/base.log" && pass "--max-cpu 100 shed nothing" ||
	fail "--max-cpu 100 shed something: $(grep -- '--max-cpu' "$dir/base.log")"
le 3 "$base" && pass "the load costs xsprofd $base% of the machine unlimited (over 3%)" ||
	fail "the load costs only $base% unlimited: too little to show a ceiling of 1%"
le "$capped" 2.5 && pass "cost $capped% of the machine under --max-cpu 1 ($base% without)" ||
	fail "cost $capped% under --max-cpu 1 (at most 2.5% expected; $base% without)"
grep -- "--max-cpu" "$dir/cap.log" | sed 's/^/     /'
grep -qE -- "--max-cpu: shed sampling rate for [0-9.]+ s" "$dir/cap.log" &&
	pass "the report says the sampling rate was shed, and how long" ||
	fail "the report does not say the sampling rate was shed"
grep -qE -- "launch stacks for [0-9.]+ s" "$dir/cap.log" &&
	pass "the report says launch stacks were shed" ||
	fail "the report does not say launch stacks were shed"
grep -qE -- "--max-cpu 1%: xsprofd cost [0-9.]+% .* [1-9][0-9]* steps shed" "$dir/cap.log" &&
	pass "the report gives the cost and the steps" || fail "no cost line in the report"
a0=$(alpha "$dir/base.folded")
a1=$(alpha "$dir/cap.folded")
$py -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= 5 else 1)' \
	"$a0" "$a1" && pass "alpha's share $a1% under the ceiling, $a0% without (3:1 is 75%)" ||
	fail "alpha's share $a1% under the ceiling, $a0% without: more than 5 points apart"
# Shares alone would not see unweighted samples (a uniform loss keeps them): the totals do. A
# sample taken at a lowered rate counts for those not taken, so xs_split's samples stay what
# the asked rate takes.
w0=$(weight "$dir/base.folded" '^xs_split;')
w1=$(weight "$dir/cap.folded" '^xs_split;')
$py -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if 0.6 <= b / a <= 1.5 else 1)' \
	"$w0" "$w1" && pass "xs_split's samples (weighted): $w1 under the ceiling, $w0 without" ||
	fail "xs_split's samples (weighted): $w1 under the ceiling, $w0 without (weights not kept)"
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
pids=()

step "one-shot command mode: every launch counted, with or without its stack"
"$xsprofd" -f --freq 999 --max-cpu 1 --cupti-socket "$dir/cmd.sock" -o "$dir/cmd.folded" -- \
	sh -c "'$split' 300 100 8 $ncpu >/dev/null & '$launches' 100000 8; wait" \
	>"$dir/cmd.out" 2>"$dir/cmd.log" || fail "xsprofd (command mode) failed"
made=$(awk '/^many/ {print $2 + $4}' "$dir/cmd.out")
total=$(sed -nE 's/.*--max-cpu: CUDA: ([0-9]+) calls in all.*/\1/p' "$dir/cmd.log")
unstacked=$(sed -nE 's/.*--max-cpu: CUDA: .*recorded .*, ([0-9]+) counted without their stack, ([0-9]+) counted only.*/\1 \2/p' "$dir/cmd.log")
grep -- "--max-cpu: CUDA" "$dir/cmd.log" | sed 's/^/     /'
[[ -n $made && $made == "$total" ]] && pass "$total launches in the report's total, as made" ||
	fail "the workload made '$made' launches, the report counts '$total'"
[[ -n $unstacked && $unstacked != "0 0" ]] &&
	pass "of them counted in the kernel without a stack (walked 1 in 16, counted only): $unstacked" ||
	fail "no launch was counted without its stack ('$unstacked'): launch stacks were not shed"

step "the service, --max-cpu 1: status, its JSON and /metrics say what is shed"
start_daemon --freq 999 --max-cpu 1 --cuda-lib "$fakecuda"
"$split" 300 100 40 "$ncpu" >/dev/null &
pids+=($!)
"$launches" 100000 40 >/dev/null &
pids+=($!)
sleep 4
# Beside it, a one-shot run without a ceiling: the shares of the same stretch of load.
start svcbase 12 --max-cpu 100
base_pid=$started
sleep 1
a=$(cost "$daemon")
sleep 10
b=$(cost "$daemon")
svc=$(pct "$a" "$b" 10)
wait $base_pid || fail "xsprofd (svcbase) exited with $?"
le "$svc" 2.5 && pass "the service cost $svc% of the machine under --max-cpu 1" ||
	fail "the service cost $svc% under --max-cpu 1 (at most 2.5% expected)"
ctl status >"$dir/status.txt" || fail "xsprofctl status failed"
grep -A3 "^ceiling:" "$dir/status.txt" | sed 's/^/     /'
grep -q "^ceiling: --max-cpu 1% of" "$dir/status.txt" && pass "xsprofctl status has the ceiling" ||
	fail "xsprofctl status has no ceiling line"
grep -qE "^  shed now: .*sampling_rate" "$dir/status.txt" &&
	pass "xsprofctl status says the sampling rate is shed now" ||
	fail "xsprofctl status does not say the sampling rate is shed"
steps=$(status_get 'j["ceiling"]["steps_shed"]')
rate=$(status_get 'j["ceiling"]["shed_s"]["sampling_rate"]')
le 1 "$steps" && le 1 "$rate" &&
	pass "status JSON: $steps steps shed, the sampling rate for $rate s" ||
	fail "status JSON: '$steps' steps shed, the sampling rate for '$rate' s"
curl -s --unix-socket "$sock" http://x/metrics >"$dir/metrics.txt" || fail "GET /metrics failed"
grep -q '^xsprof_ceiling_shed{kind="sampling_rate"} 1$' "$dir/metrics.txt" &&
	pass "/metrics: xsprof_ceiling_shed{kind=\"sampling_rate\"} 1" ||
	fail "/metrics has no xsprof_ceiling_shed{kind=\"sampling_rate\"} 1"
if promtool check metrics <"$dir/metrics.txt" >"$dir/promtool.txt" 2>&1; then
	pass "promtool check metrics: no problems, ceiling families included"
else
	fail "promtool check metrics: $(head -n 5 "$dir/promtool.txt")"
fi
secs=$(awk '$1 == "xsprof_ceiling_shed_seconds_total{kind=\"sampling_rate\"}" {print $2}' "$dir/metrics.txt")
[[ -n $secs ]] && le 1 "$secs" && pass "/metrics: the sampling rate shed for $secs s" ||
	fail "/metrics: xsprof_ceiling_shed_seconds_total{kind=\"sampling_rate\"} is '$secs'"
ctl -q flamegraph --since 15 -o "$dir/win.folded" || fail "flamegraph of the window failed"
a2=$(alpha "$dir/win.folded")
a3=$(alpha "$dir/svcbase.folded")
# The window is sampled at 16 Hz (999 Hz shed by 64): some 500 samples, whose share of alpha
# varies by 2 points (one sigma) from window to window. The margin is 4 sigma of the samples
# the window holds (its weight over 64, a floor), and never under 5 points.
n2=$($py -c 'import sys; print(max(1, int(float(sys.argv[1]) / 64)))' "$(weight "$dir/win.folded" '^xs_split;')")
m2=$($py -c 'import sys, math; n = float(sys.argv[1]); print("%.1f" % max(5.0, 400 * math.sqrt(0.75 * 0.25 / n)))' "$n2")
$py -c 'import sys; a, b, m = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= m else 1)' \
	"$a3" "$a2" "$m2" &&
	pass "the window's alpha share $a2% (a one-shot run beside it, unlimited: $a3%; $n2 samples, within $m2 points)" ||
	fail "the window's alpha share $a2%, the unlimited one-shot's beside it $a3%: more than $m2 points apart ($n2 samples)"

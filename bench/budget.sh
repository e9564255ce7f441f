#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The cost budget: every hot path of xsprofd measured in one run, each figure a ratio against a
# baseline or a peer run beside it (interleaved, repeated, the median of the pairs: this kind of
# machine is noisy), checked against bench/budgets. Exits 1 on a breach, naming the figure and
# its budget; 2 on a usage or setup error.
#
#   sample_tables_vs_fp  BPF ns per sample of the sampler, --unwind auto / --unwind fp, on
#                        xs_fpdeep (64 frames deep with frame pointers: both walks find it
#                        whole), one copy per CPU, at 999 Hz
#   sample_vs_bpftrace   the same, xsprofd (tables) / bpftrace's profile:hz:999 probe keeping
#                        kstack and ustack counts
#   launch_vs_bare       CPU a CUDA launch call gains on the default path (the injection
#                        library's xsprof:launch beside libcudart's uprobe, xs_cuda_bench both) /
#                        what bpftrace's bare count() on the cudaLaunchKernel uprobe adds
#   launch_deep_ns       CPU a launch call gains on the default path when it is made under ~66
#                        frames without frame pointers, a new chain each call (xs_cuda_bench
#                        both-deep: a PyTorch launch, whose stack the probe cannot reuse), ns
#   switch_vs_bpftrace   BPF ns per context switch, --mode offcpu / the bpftrace off-CPU script
#                        of bench/offcpu.sh, on xs_pingpong
#   wakeup_ns            --wakers: the sched_waking program's BPF ns per wakeup of a watched
#                        thread (the waker's stacks read), on xs_pingpong
#   cpu_vs_perf          xsprofd's CPU for a system-wide one-shot profile (load, sample, name,
#                        write) / perf record -g plus perf script on the same work: a PyTorch
#                        training loop (Debian's python3-torch) and xs_split
#   rss_mib              xsprofd's own peak RSS in that profile, MiB
#   gpu_record_ns        the idle service's CPU per GPU record received over the CUPTI pipe
#                        and joined into its window, ns (bench/gpu_records.sh: bursts of
#                        100,000 kernel records; the short form 300,000 of them, one round)
#   gpu_burst_lost       of those records, how many root's window report lacks
#   gpu_burst_status_ms  root's slowest answer to GET /v1/status during the burst, ms
#   gpu_burst_rss_mib    the service's peak RSS (VmHWM) after the burst, MiB
#   cupti_lib_record_ns  libxsprof_cupti.so's CPU per kernel record on CUPTI's thread, at
#                        100,000 records a second into the service (bench/cupti_lib.sh)
#   cupti_intake_lost    of those records, how many the service did not receive
#   nvtx_range_ns        what an NVTX push/pop pair costs while the service receives them
#   autograd_bpf_ns      the autograd probes' BPF run time per autograd node made (its return
#                        probe, the engine's run of it, backward()'s two), bench/autograd.sh on
#                        a PyTorch step of ~50 small nodes
#   job_merge_*          a job's parts merged (xsprofctl fleet --report straggler): ms and
#                        peak RSS per MiB of parts, and their growth (bench/job_merge.sh)
#   procs_*, stacks_*, launch_ns, window_*, fleet_*
#                        per-unit costs at the largest point of bench/scale.sh's dimensions
#                        (its --short form here with --short; bench/budgets says each)
#
# Usage: sudo bench/budget.sh [--short] [--build DIR] [--reps N] [--budgets FILE]
#   --short   CI's form: fewer and shorter runs, the wider budgets (a few minutes at most)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

prog=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
build=build
short=no
reps=
budgets=$here/budgets
py=/usr/bin/python3
while [[ $# -gt 0 ]]; do
	case $1 in
	--short) short=yes; shift ;;
	--build) build=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--budgets) budgets=$2; shift 2 ;;
	-h | --help) sed -n '3,33p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "$prog: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done

die() {
	echo "$prog: $*" >&2
	exit 2
}

if [[ $short == yes ]]; then
	reps=${reps:-2} secs=1.5 prof_secs=3 calls=100000 rounds=30000 col=3
else
	reps=${reps:-5} secs=3 prof_secs=5 calls=200000 rounds=100000 col=2
fi
xsprofd=$build/daemon/xsprofd
fpdeep=$build/tests/xs_fpdeep
split=$build/tests/xs_split
pingpong=$build/tests/xs_pingpong
cudabench=$build/tests/xs_cuda_bench
train=$here/../tests/daemon/python/torch_train.py

[[ $EUID -eq 0 ]] || die "needs root (BPF, kernel.bpf_stats_enabled)"
[[ -r $budgets ]] || die "$budgets: no budgets file"
for f in "$xsprofd" "$fpdeep" "$split" "$pingpong" "$cudabench"; do
	[[ -x $f ]] || die "$f missing: cmake --build $build first"
done
for t in bpftool bpftrace perf python3 /usr/bin/time; do
	command -v "$t" >/dev/null || die "missing $t (scripts/deps.sh installs it)"
done
"$py" -c 'import torch' 2>/dev/null || die "$py cannot import torch (apt-get install python3-torch)"

# bpftrace finds tracepoints in tracefs.
if ! grep -q ' /sys/kernel/tracing tracefs ' /proc/mounts; then
	mount -t tracefs tracefs /sys/kernel/tracing || die "cannot mount tracefs"
fi
tmp=$(mktemp -d /tmp/xsprof-budget.XXXXXX)
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
bg=()
cleanup() {
	trap - EXIT INT TERM
	((${#bg[@]} == 0)) || kill "${bg[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	sysctl -q -w kernel.bpf_stats_enabled="$old_stats" >/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
sysctl -q -w kernel.bpf_stats_enabled=1

calc() { python3 -c "print($1)"; }
# median of the arguments
med() { printf '%s\n' "$@" | median_of; }

# bpf_run PID TYPE: "NS CNT" of the programs of that type whose fds PID holds.
bpf_run() {
	local owned
	owned=$(cat /proc/"$1"/fdinfo/* 2>/dev/null | sed -nE 's/^prog_id:\s*([0-9]+)/\1/p' || true)
	bpftool prog show --json | python3 -c '
import json, sys
owned = set(int(x) for x in sys.argv[1].split())
mine = [p for p in json.load(sys.stdin) if p.get("type") == sys.argv[2] and p["id"] in owned]
print(sum(p.get("run_time_ns", 0) for p in mine), sum(p.get("run_cnt", 0) for p in mine))' \
		"$owned" "$2"
}

# wait_for FILE TEXT: until FILE says TEXT (20 s at most).
wait_for() {
	for _ in $(seq 400); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	die "$1 never said '$2': $(tail -3 "$1")"
}

# ns_per_run PID TYPE SECS: the programs' run time per run over SECS seconds from now.
ns_per_run() {
	local ns0 cnt0 ns1 cnt1
	read -r ns0 cnt0 < <(bpf_run "$1" "$2")
	sleep "$3"
	read -r ns1 cnt1 < <(bpf_run "$1" "$2")
	((cnt1 > cnt0)) || die "no runs of pid $1's $2 programs"
	calc "round(($ns1 - $ns0) / ($cnt1 - $cnt0))"
}

# ---- per sample: tables, frame pointers, bpftrace ----
xs_sample() { # MODE PIDS: ns per sample of xsprofd's sampler
	local log=$tmp/s.log pid ns
	"$xsprofd" -f -F 999 --unwind "$1" -p "$2" -o "$tmp/s.folded" 2>"$log" &
	pid=$!
	bg+=("$pid")
	wait_for "$log" sampling
	sleep 0.5 # the first samples build the tables
	ns=$(ns_per_run "$pid" perf_event "$secs")
	kill -INT "$pid"
	wait "$pid" || true
	echo "$ns"
}
bt_sample() { # ns per sample of bpftrace's profile probe
	local log=$tmp/bt.log pid ns
	bpftrace -e 'profile:hz:999 /comm == "xs_fpdeep"/ { @[kstack, ustack] = count(); }' \
		>"$log" 2>&1 &
	pid=$!
	bg+=("$pid")
	wait_for "$log" Attaching
	sleep 0.5
	ns=$(ns_per_run "$pid" perf_event "$secs")
	kill -INT "$pid"
	wait "$pid" || true
	echo "$ns"
}

fp=() auto=() bt=() r_fp=() r_bt=()
for ((r = 0; r < reps; r++)); do
	# One copy per CPU: a sample of an idle CPU is cheap and would dilute the figure.
	pids=()
	for ((c = 0; c < $(nproc); c++)); do
		"$fpdeep" 600 >/dev/null &
		pids+=($!)
	done
	bg+=("${pids[@]}")
	list=$(IFS=,; echo "${pids[*]}")
	sleep 0.3
	f=$(xs_sample fp "$list")
	a=$(xs_sample auto "$list")
	b=$(bt_sample)
	kill "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	fp+=("$f") auto+=("$a") bt+=("$b")
	r_fp+=("$(calc "round($a / max($f, 1), 3)")")
	r_bt+=("$(calc "round($a / max($b, 1), 3)")")
done

# ---- per CUDA launch: the default path against the bare probe ----
cudart=$(sed -n 's/.*XS_CUDART_PATH="\([^"]*\)".*/\1/p' \
	"$build/tests/CMakeFiles/xs_cuda_bench.dir/flags.make" 2>/dev/null || true)
cudart=$(readlink -f "${cudart:-/usr/local/cuda/lib64/libcudart.so}")
per_call() { "$@" 2>>"$tmp/launch.err" | sed -n 's/.* ns_per_call //p'; }
r_launch=() l_xs=() l_bt=() l_deep=()
for ((r = 0; r < reps; r++)); do
	base_deep=$(per_call "$cudabench" both-deep "$((calls / 4))" "$cudart")
	prof_deep=$(per_call "$xsprofd" -f -F 1 --launches-output "$tmp/l.folded" -- \
		"$cudabench" both-deep "$((calls / 4))" "$cudart")
	[[ -n $base_deep && -n $prof_deep ]] || die "a deep launch run failed: $(tail -5 "$tmp/launch.err")"
	l_deep+=("$(calc "round($prof_deep - $base_deep)")")
	base_both=$(per_call "$cudabench" both "$calls" "$cudart")
	prof_both=$(per_call "$xsprofd" -f -F 1 --launches-output "$tmp/l.folded" -- \
		"$cudabench" both "$calls" "$cudart")
	base_up=$(per_call "$cudabench" uprobe "$calls" "$cudart")
	prof_bt=$(per_call bpftrace -e "uprobe:$cudart:cudaLaunchKernel { @ = count(); }" \
		-c "$cudabench uprobe $calls $cudart")
	[[ -n $base_both && -n $prof_both && -n $base_up && -n $prof_bt ]] ||
		die "a launch run failed: $(tail -5 "$tmp/launch.err")"
	l_xs+=("$(calc "round($prof_both - $base_both)")")
	l_bt+=("$(calc "round($prof_bt - $base_up)")")
	r_launch+=("$(calc "round(($prof_both - $base_both) / max($prof_bt - $base_up, 1), 3)")")
done

# ---- per context switch: off-CPU mode against bpftrace ----
cat >"$tmp/off.bt" <<'EOF'
tracepoint:sched:sched_switch
{
	if (comm == "xs_pingpong") {
		@start[args->prev_pid] = nsecs;
		@ks[args->prev_pid] = kstack;
		@us[args->prev_pid] = ustack;
	}
	$s = @start[args->next_pid];
	if ($s) {
		@[@ks[args->next_pid], @us[args->next_pid]] = sum(nsecs - $s);
		delete(@start[args->next_pid]);
	}
}
EOF
r_switch=() s_xs=() s_bt=() wake_ns=()
for ((r = 0; r < reps; r++)); do
	"$xsprofd" -f -v --mode offcpu --cupti-socket "$tmp/c.sock" -o "$tmp/off.folded" -- \
		"$pingpong" "$rounds" >/dev/null 2>"$tmp/off.log" || die "xsprofd --mode offcpu failed"
	x=$(sed -nE 's/^xsprofd: BPF cost: xsprof_offcpu: [0-9]+ runs, ([0-9]+) ns each/\1/p' \
		"$tmp/off.log")
	[[ -n $x ]] || die "no xsprof_offcpu cost: $(tail -3 "$tmp/off.log")"
	bpftrace "$tmp/off.bt" >"$tmp/bt.log" 2>&1 &
	pid=$!
	bg+=("$pid")
	wait_for "$tmp/bt.log" Attaching
	read -r ns0 cnt0 < <(bpf_run "$pid" tracepoint)
	"$pingpong" "$rounds" >/dev/null
	read -r ns1 cnt1 < <(bpf_run "$pid" tracepoint)
	kill -INT "$pid"
	wait "$pid" || true
	b=$(calc "round(($ns1 - $ns0) / max($cnt1 - $cnt0, 1))")
	s_xs+=("$x") s_bt+=("$b")
	r_switch+=("$(calc "round($x / max($b, 1), 3)")")
	# --wakers: the waking program per wakeup (each of xs_pingpong's switches is one).
	"$xsprofd" -f -v --mode offcpu --wakers --cupti-socket "$tmp/c.sock" -o "$tmp/off.folded" \
		-- "$pingpong" "$rounds" >/dev/null 2>"$tmp/wk.log" || die "xsprofd --wakers failed"
	w=$(sed -nE 's/^xsprofd: BPF cost: xsprof_waking: [0-9]+ runs, ([0-9]+) ns each/\1/p' \
		"$tmp/wk.log")
	[[ -n $w ]] || die "no xsprof_waking cost: $(tail -3 "$tmp/wk.log")"
	wake_ns+=("$w")
done

# ---- a system-wide profile: xsprofd against perf record + perf script ----
"$py" "$train" 3600 >/dev/null 2>&1 &
bg+=($!)
"$split" 300 300 3600 1 >/dev/null &
bg+=($!)
sleep 5 # torch imported
cpu() { read -r u s _ <"$1"; calc "round($u + $s, 2)"; }
r_cpu=() c_xs=() c_perf=() rss=() perf_rss=()
for ((r = 0; r < reps; r++)); do
	# -v: the own peak RSS line is in the full report only.
	/usr/bin/time -f '%U %S %M' -o "$tmp/xs.time" "$xsprofd" -f -v -d "$prof_secs" \
		-o "$tmp/sys.folded" 2>"$tmp/sys.log" || die "xsprofd failed: $(tail -3 "$tmp/sys.log")"
	/usr/bin/time -f '%U %S %M' -o "$tmp/rec.time" perf record -q -g -a -F 99 \
		-o "$tmp/perf.data" -- sleep "$prof_secs" 2>/dev/null || die "perf record failed"
	/usr/bin/time -f '%U %S %M' -o "$tmp/scr.time" perf script -i "$tmp/perf.data" \
		>/dev/null 2>&1 || die "perf script failed"
	x=$(cpu "$tmp/xs.time")
	p=$(calc "round($(cpu "$tmp/rec.time") + $(cpu "$tmp/scr.time"), 2)")
	c_xs+=("$x") c_perf+=("$p")
	r_cpu+=("$(calc "round($x / max($p, 0.001), 3)")")
	rss+=("$(sed -nE 's/.*own peak RSS ([0-9.]+) MiB.*/\1/p' "$tmp/sys.log")")
	[[ -n ${rss[-1]} ]] || die "no 'own peak RSS' line in xsprofd's report: $(tail -3 "$tmp/sys.log")"
	perf_rss+=("$(calc "round(max($(cut -d' ' -f3 "$tmp/rec.time"), $(cut -d' ' -f3 "$tmp/scr.time")) / 1024, 1)")")
done

# ---- per GPU record: the service under a burst of CUPTI records ----
# The profile's workloads go first: the figure is the service's own cost per record, not what
# two busy CPUs make of it (with them running it read twice as high).
((${#bg[@]} == 0)) || kill "${bg[@]}" 2>/dev/null || true
wait 2>/dev/null || true
bg=()
if [[ $short == yes ]]; then gpu_form=(--short); else gpu_form=(--reps 2); fi
"$here/gpu_records.sh" --build "$build" "${gpu_form[@]}" --json "$tmp/gpu.json" \
	>"$tmp/gpu.log" 2>&1 || die "bench/gpu_records.sh failed: $(tail -5 "$tmp/gpu.log")"
gpu_fig() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
	"$tmp/gpu.json" "$1"; }

# ---- the injection library per record and per NVTX range, and the service's intake ----
if [[ $short == yes ]]; then lib_form=(--short); else lib_form=(--reps 3); fi
"$here/cupti_lib.sh" --build "$build" "${lib_form[@]}" --json "$tmp/lib.json" \
	>"$tmp/lib.log" 2>&1 || die "bench/cupti_lib.sh failed: $(tail -5 "$tmp/lib.log")"
lib_fig() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
	"$tmp/lib.json" "$1"; }

# ---- a job's parts merged, per MiB (bench/job_merge.sh) ----
if [[ $short == yes ]]; then jm_form=(--short); else jm_form=(--reps 3); fi
"$here/job_merge.sh" --build "$build" "${jm_form[@]}" --json "$tmp/jm.json" \
	>"$tmp/jm.log" 2>&1 || die "bench/job_merge.sh failed: $(tail -5 "$tmp/jm.log")"
jm_fig() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
	"$tmp/jm.json" "$1"; }

# ---- the autograd probes, per node (bench/autograd.sh) ----
if [[ $short == yes ]]; then ag_form=(1 400 64); else ag_form=(3 1500 64); fi
"$here/autograd.sh" "$build" "${ag_form[@]}" >"$tmp/ag.log" 2>&1 ||
	die "bench/autograd.sh failed: $(tail -5 "$tmp/ag.log")"
ag_fig() { awk -v n="$1" '$1 == n { print $2 }' "$tmp/ag.log"; }

# ---- per-unit costs as the work grows (bench/scale.sh) ----
if [[ $short == yes ]]; then scale_form=(--short); else scale_form=(); fi
"$here/scale.sh" --build "$build" "${scale_form[@]}" --only procs,stacks,launches,window,fleet \
	--json "$tmp/scale.json" >"$tmp/scale.log" 2>&1 ||
	die "bench/scale.sh failed: $(tail -5 "$tmp/scale.log")"
scale_fig() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["figures"][sys.argv[2]])' \
	"$tmp/scale.json" "$1"; }
scale_pts() { python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))["dimensions"][sys.argv[2]]; print("points", " ".join("%g" % x for x in d["points"]), "per unit", " ".join("%g" % x for x in d["per_unit"]))' \
	"$tmp/scale.json" "$1"; }

# ---- the figures against the budgets ----
budget() { awk -v n="$1" -v c="$col" '$1 == n { print $c }' "$budgets"; }
breaches=0
check() { # NAME FIGURE DETAIL
	local b
	b=$(budget "$1")
	[[ -n $b ]] || die "$budgets has no budget for $1"
	# A figure that was not read (a log line gone) is a failure, never a 0 that passes.
	[[ $2 =~ ^[0-9.eE+-]+$ ]] || die "$1: no figure was read ('$2'; $3)"
	if python3 -c "import sys; sys.exit(0 if $2 <= $b else 1)"; then
		printf '  %-20s %8s  (budget %s)  %s\n' "$1" "$2" "$b" "$3"
	else
		printf 'BREACH %-13s %8s  over its budget %s  %s\n' "$1" "$2" "$b" "$3"
		breaches=$((breaches + 1))
	fi
}
printf 'Cost budget (%s form, %s rounds, %s CPUs, %s):\n' \
	"$([[ $short == yes ]] && echo short || echo full)" "$reps" "$(nproc)" "$(uname -r)"
check sample_tables_vs_fp "$(med "${r_fp[@]}")" \
	"tables $(med "${auto[@]}") ns vs fp $(med "${fp[@]}") ns per sample (pairs: ${r_fp[*]})"
check sample_vs_bpftrace "$(med "${r_bt[@]}")" \
	"xsprofd $(med "${auto[@]}") ns vs bpftrace $(med "${bt[@]}") ns per sample (pairs: ${r_bt[*]})"
check launch_vs_bare "$(med "${r_launch[@]}")" \
	"+$(med "${l_xs[@]}") ns vs +$(med "${l_bt[@]}") ns per launch (pairs: ${r_launch[*]})"
check launch_deep_ns "$(med "${l_deep[@]}")" \
	"added per launch under ~66 frames, a new chain each (runs: ${l_deep[*]})"
check switch_vs_bpftrace "$(med "${r_switch[@]}")" \
	"xsprofd $(med "${s_xs[@]}") ns vs bpftrace $(med "${s_bt[@]}") ns per switch (pairs: ${r_switch[*]})"
check wakeup_ns "$(med "${wake_ns[@]}")" \
	"--wakers: BPF ns per wakeup of a watched thread, the waker's stacks read (runs: ${wake_ns[*]})"
check cpu_vs_perf "$(med "${r_cpu[@]}")" \
	"xsprofd $(med "${c_xs[@]}") s vs perf $(med "${c_perf[@]}") s for ${prof_secs} s (pairs: ${r_cpu[*]})"
check rss_mib "$(med "${rss[@]}")" "perf record/script peak $(med "${perf_rss[@]}") MiB (runs: ${rss[*]})"
check gpu_record_ns "$(gpu_fig cpu_ns_per_record)" \
	"status max $(gpu_fig status_max_ms) ms, peak RSS $(gpu_fig rss_mib) MiB ($(grep -c '^  round' "$tmp/gpu.log") rounds)"
check gpu_burst_lost "$(gpu_fig lost)" "records sent that root's window report lacks"
check gpu_burst_status_ms "$(gpu_fig status_max_ms)" "root's slowest status answer during the burst"
check gpu_burst_rss_mib "$(gpu_fig rss_mib)" "peak RSS (before the burst: $(gpu_fig rss_before_mib) MiB)"
check cupti_lib_record_ns "$(lib_fig lib_ns_per_record)" \
	"the library's CPU per record at 100,000 a second (service: $(lib_fig service_ns_per_record) ns)"
check cupti_intake_lost "$(lib_fig intake_lost)" "records the service did not receive at that rate"
check nvtx_range_ns "$(lib_fig nvtx_ns)" "an NVTX push/pop pair, added while the service receives"
check autograd_bpf_ns "$(ag_fig autograd_bpf_ns)" \
	"step ratio with the probes $(ag_fig autograd_step_ratio_64), $(ag_fig autograd_node_ns_64) ns added per node in all (probe traps included)"
check job_merge_ms_per_mib "$(jm_fig job_merge_ms_per_mib)" "$(tail -n 1 "$tmp/jm.log")"
check job_merge_rss_per_mib "$(jm_fig job_merge_rss_per_mib)" "peak RSS per MiB of one host's job parts"
check job_merge_growth "$(jm_fig job_merge_growth)" "ms per MiB, largest size / smallest"
check procs_us "$(scale_fig procs_us)" "CPU per process alive, over idle ($(scale_pts procs))"
check procs_rss_kib "$(scale_fig procs_rss_kib)" "RSS per process alive"
check stacks_us "$(scale_fig stacks_us)" "CPU per distinct stack, over the same samples on 8 paths ($(scale_pts stacks))"
check stacks_rss_kib "$(scale_fig stacks_rss_kib)" "peak RSS per distinct stack"
check stacks_growth "$(scale_fig stacks_growth)" "CPU per stack at the largest point / the smallest"
check launch_ns "$(scale_fig launch_ns)" "the service's CPU (BPF included) per launch ($(scale_pts launches))"
check window_query_ms_per_slice "$(scale_fig window_query_ms_per_slice)" "a query of the whole window, per slice held"
check fleet_ms_per_host "$(scale_fig fleet_ms_per_host)" "xsprofctl fleet's wall time per host ($(scale_pts fleet))"
check fleet_rss_kib_per_host "$(scale_fig fleet_rss_kib_per_host)" "xsprofctl fleet's peak RSS per host"
if ((breaches)); then
	echo "$prog: $breaches figure(s) over budget"
	exit 1
fi

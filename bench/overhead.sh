#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Overhead of xsprofd next to perf record and bpftrace, on a fixed amount of CPU work.
# See bench/README.md for what each column means.
set -euo pipefail

prog=${0##*/}
orig_args=("$@")
repo=$(cd "$(dirname "$0")/.." && pwd)

usage() {
	cat <<EOF
Usage: $prog [OPTIONS]

Runs a fixed amount of CPU work (xs_fixedwork, one thread per CPU) with no profiler, under
xsprofd, under perf record and under bpftrace, interleaved over several repetitions, and prints
the workload's slowdown and each profiler's own cost (CPU, memory, per-sample cost) as medians.
Must run as root.

Options:
  -b, --build DIR        CMake build folder holding daemon/xsprofd and tests/xs_fixedwork
                         (default: $repo/build)
      --xsprofd PATH     xsprofd binary (default: BUILD/daemon/xsprofd)
      --workload PATH    xs_fixedwork binary (default: BUILD/tests/xs_fixedwork)
  -f, --freqs LIST       comma-separated sampling frequencies in Hz (default: 99,999)
  -r, --reps N           repetitions; figures are medians over them (default: 3)
  -s, --seconds S        calibrate the workload to take about S s unprofiled (default: 5)
  -i, --iterations N     workload iterations per thread; skips the calibration
  -t, --threads N        workload threads (default: number of CPUs, $(nproc))
      --tools LIST       profilers to compare, from xsprofd,perf,bpftrace (default: all three)
  -h, --help             show this help

Examples:
  sudo bench/overhead.sh --build build
  sudo bench/overhead.sh --build build --freqs 49,99,999,4999 --reps 5
  sudo bench/overhead.sh --build build --tools xsprofd,perf --reps 1 --seconds 1
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

build=$repo/build
xsprofd=
workload=
freqs=99,999
reps=3
seconds=5
iterations=
threads=$(nproc)
tools=xsprofd,perf,bpftrace

need_arg() {
	[[ $# -ge 2 && -n $2 ]] || bad_usage "option $1 needs a value"
}

while [[ $# -gt 0 ]]; do
	case $1 in
	-b | --build) need_arg "$@"; build=$2; shift 2 ;;
	--xsprofd) need_arg "$@"; xsprofd=$2; shift 2 ;;
	--workload) need_arg "$@"; workload=$2; shift 2 ;;
	-f | --freqs) need_arg "$@"; freqs=$2; shift 2 ;;
	-r | --reps) need_arg "$@"; reps=$2; shift 2 ;;
	-s | --seconds) need_arg "$@"; seconds=$2; shift 2 ;;
	-i | --iterations) need_arg "$@"; iterations=$2; shift 2 ;;
	-t | --threads) need_arg "$@"; threads=$2; shift 2 ;;
	--tools) need_arg "$@"; tools=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) bad_usage "unknown option '$1'" ;;
	esac
done

is_uint() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
is_uint "$reps" || bad_usage "--reps wants a positive integer, not '$reps'"
is_uint "$threads" || bad_usage "--threads wants a positive integer, not '$threads'"
[[ -z $iterations ]] || is_uint "$iterations" ||
	bad_usage "--iterations wants a positive integer, not '$iterations'"
[[ $seconds =~ ^[0-9]+(\.[0-9]+)?$ && $seconds != 0 ]] ||
	bad_usage "--seconds wants a positive number, not '$seconds'"
IFS=, read -r -a hz_list <<<"$freqs"
[[ ${#hz_list[@]} -gt 0 ]] || bad_usage "--freqs is empty"
for hz in "${hz_list[@]}"; do
	is_uint "$hz" || bad_usage "--freqs wants positive integers, not '$hz'"
done
IFS=, read -r -a tool_list <<<"$tools"
[[ ${#tool_list[@]} -gt 0 ]] || bad_usage "--tools is empty"
for t in "${tool_list[@]}"; do
	case $t in
	xsprofd | perf | bpftrace) ;;
	*) bad_usage "--tools: unknown profiler '$t' (choose from xsprofd,perf,bpftrace)" ;;
	esac
done
has_tool() { [[ ,$tools, == *,$1,* ]]; }

xsprofd=${xsprofd:-$build/daemon/xsprofd}
workload=${workload:-$build/tests/xs_fixedwork}

# Preconditions: root, the binaries under test, and the peer tools (never installed silently).
[[ $EUID -eq 0 ]] || die "must run as root (BPF, perf -a and sysctl need it): sudo $0 ${orig_args[*]}"
[[ -x $workload ]] ||
	die "no workload at $workload: build it with 'cmake --build $build --target xs_fixedwork' or pass --workload"
if has_tool xsprofd; then
	[[ -x $xsprofd ]] ||
		die "no xsprofd at $xsprofd: build it with 'cmake --build $build --target xsprofd' or pass --xsprofd"
fi
missing=()
[[ -x /usr/bin/time ]] || missing+=("/usr/bin/time (package time)")
command -v python3 >/dev/null || missing+=("python3 (package python3)")
command -v bpftool >/dev/null || missing+=("bpftool (package bpftool)")
command -v sysctl >/dev/null || missing+=("sysctl (package procps)")
if has_tool perf; then
	command -v perf >/dev/null || missing+=("perf (package linux-perf)")
fi
if has_tool bpftrace; then
	command -v bpftrace >/dev/null || missing+=("bpftrace (package bpftrace)")
fi
if [[ ${#missing[@]} -gt 0 ]]; then
	{
		echo "$prog: missing tools:"
		printf '  %s\n' "${missing[@]}"
		echo "install them with: apt-get install linux-perf bpftrace time bpftool python3 procps"
	} >&2
	exit 1
fi

# Everything started here is stopped and removed on exit, error or Ctrl-C.
tmp=$(mktemp -d /tmp/xsprof-bench.XXXXXX)
old_bpf_stats=
prof_pid=
prof_pidf=
time_pid=

cleanup() {
	local rc=$?

	trap - EXIT INT TERM
	if [[ -z $prof_pid && -n $time_pid && -s $prof_pidf ]]; then
		prof_pid=$(cat "$prof_pidf")
	fi
	if [[ -n $prof_pid ]] && kill -0 "$prof_pid" 2>/dev/null; then
		kill -INT "$prof_pid" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 "$prof_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$prof_pid" 2>/dev/null || true
	fi
	if [[ -n $time_pid ]]; then
		wait "$time_pid" 2>/dev/null || true
	fi
	if [[ -n $old_bpf_stats ]]; then
		sysctl -q -w kernel.bpf_stats_enabled="$old_bpf_stats" >/dev/null || true
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# run_time_ns and run_cnt of BPF programs are only counted while this is on.
old_bpf_stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -q -w kernel.bpf_stats_enabled=1

ncpus=$(nproc)
results=$tmp/results.tsv
: >"$results"

# Runs the workload; prints its wall and CPU seconds, as it measured them itself.
run_workload() {
	local out=$tmp/work.out

	"$workload" "$1" "$threads" >"$out" || die "workload failed: $(cat "$out")"
	sed -nE 's/.* wall ([0-9.]+) s, cpu ([0-9.]+) s.*/\1 \2/p' "$out"
}

# Ids of the BPF programs loaded now, one per line.
prog_ids() {
	bpftool prog show --json | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    print(p["id"])'
}

# Sums run_time_ns and run_cnt of the profiler's perf_event programs: those whose ids its fds
# hold (/proc/PID/fdinfo, so another profiler running meanwhile is not counted); failing that,
# those loaded since the ids in file $2 were taken whose name starts with $3.
# Prints "NS CNT NPROGS".
bpf_stats() {
	local owned

	owned=$(cat /proc/"$1"/fdinfo/* 2>/dev/null | sed -nE 's/^prog_id:\s*([0-9]+)/\1/p' || true)
	bpftool prog show --json | python3 -c '
import json, sys
owned = set(int(x) for x in sys.argv[1].split())
before = set(int(l) for l in open(sys.argv[2]) if l.strip())
prefix = sys.argv[3]
progs = [p for p in json.load(sys.stdin) if p.get("type") == "perf_event"]
mine = [p for p in progs if p["id"] in owned]
if not mine:
    mine = [p for p in progs
            if p["id"] not in before and p.get("name", "").startswith(prefix)]
ns = sum(p.get("run_time_ns", 0) for p in mine)
cnt = sum(p.get("run_cnt", 0) for p in mine)
print(ns, cnt, len(mine))' "$owned" "$2" "$3"
}

# Starts profiler $1 at $2 Hz under /usr/bin/time, waits until it samples, runs the workload,
# reads the BPF statistics, stops the profiler with SIGINT and records one result line.
run_profiled() {
	local tool=$1 hz=$2 rep=$3
	local tag=$tool-$hz-$rep
	local log=$tmp/$tag.log out=$tmp/$tag.out timef=$tmp/$tag.time pidf=$tmp/$tag.pid
	local ids=$tmp/$tag.ids ready prefix='' wall wcpu stats ns=- cnt=- nprogs samples rc=0
	local -a cmd

	case $tool in
	xsprofd)
		cmd=("$xsprofd" --foreground --freq "$hz" --output "$tmp/$tag.folded")
		ready='sampling all CPUs'
		prefix=xsprof_sample
		;;
	perf)
		# cpu-clock: the event xsprofd samples too (a VM may have no hardware PMU).
		# -D 1 makes perf print "Events enabled" once it really samples.
		cmd=(perf record -a -g -e cpu-clock -F "$hz" -D 1 -o "$tmp/$tag.perf.data")
		ready='Events enabled'
		;;
	bpftrace)
		cmd=(bpftrace -e "profile:hz:$hz { @[kstack, ustack] = count(); }")
		ready='^Attaching'
		;;
	esac

	prog_ids >"$ids"
	prof_pidf=$pidf
	: >"$log"
	: >"$out"
	# The shell records its pid, then becomes the profiler: that is the pid to SIGINT
	# (GNU time ignores SIGINT itself) and the process time measures.
	# shellcheck disable=SC2016 # $$ and $@ are for that inner shell
	if [[ $tool == bpftrace ]]; then
		# bpftrace prints "Attaching" on stdout, then its maps at exit: keep the first
		# line, send the rest to /dev/null.
		/usr/bin/time -f '%e %U %S %M' -o "$timef" \
			sh -c 'echo $$ >"$0" && exec "$@"' "$pidf" "${cmd[@]}" \
			> >(head -n 1 >"$out"; exec cat >/dev/null) 2>"$log" &
	else
		/usr/bin/time -f '%e %U %S %M' -o "$timef" \
			sh -c 'echo $$ >"$0" && exec "$@"' "$pidf" "${cmd[@]}" >"$out" 2>"$log" &
	fi
	time_pid=$!

	local deadline=$((SECONDS + 60))
	until grep -qE "$ready" "$log" "$out" 2>/dev/null; do
		if ! kill -0 "$time_pid" 2>/dev/null; then
			wait "$time_pid" || true
			time_pid=
			die "$tool exited before sampling started:"$'\n'"$(cat "$out" "$log")"
		fi
		((SECONDS < deadline)) || die "$tool did not start sampling in 60 s:"$'\n'"$(cat "$log")"
		sleep 0.05
	done
	prof_pid=$(cat "$pidf")
	# bpftrace prints "Attaching" just before it attaches; give that a moment.
	[[ $tool != bpftrace ]] || sleep 0.2

	read -r wall wcpu < <(run_workload "$iterations")
	[[ -n $wcpu ]] || die "the workload failed"
	kill -0 "$prof_pid" 2>/dev/null ||
		die "$tool stopped by itself while the workload ran:"$'\n'"$(cat "$log")"

	if [[ $tool != perf ]]; then
		stats=$(bpf_stats "$prof_pid" "$ids" "$prefix")
		read -r ns cnt nprogs <<<"$stats"
		[[ $nprogs -gt 0 ]] ||
			die "found no perf_event BPF program of $tool (bpftool prog show)"
		[[ $nprogs -eq 1 ]] ||
			echo "$prog: note: $tool loaded $nprogs perf_event programs; summing them" >&2
	fi

	kill -INT "$prof_pid"
	wait "$time_pid" || rc=$?
	time_pid=
	prof_pid=
	# 130: perf reports the SIGINT that stopped it, as asked.
	[[ $rc -eq 0 || $rc -eq 130 ]] || echo "$prog: note: $tool exited with status $rc" >&2

	case $tool in
	xsprofd) samples=$(grep -oE '[0-9]+ samples' "$log" | head -n 1 | cut -d' ' -f1) ;;
	perf) samples=$(sed -nE 's/.*\(([0-9]+) samples\).*/\1/p' "$log" | head -n 1) ;;
	bpftrace) samples=$cnt ;;
	esac
	[[ -n $samples ]] || die "could not read the sample count of $tool:"$'\n'"$(cat "$log")"

	# GNU time may put "Command exited with..." first: the figures are on the last line.
	local u s m
	read -r _ u s m < <(tail -n 1 "$timef")
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$hz" "$tool" "$wall" "$wcpu" \
		"$(python3 -c "print($u + $s)")" "$m" "$samples" "$ns" "$cnt" >>"$results"
	printf '  rep %d %5d Hz %-8s workload %6.3f s, %s samples\n' \
		"$rep" "$hz" "$tool" "$wall" "$samples"
}

run_baseline() {
	local hz=$1 rep=$2 wall wcpu

	read -r wall wcpu < <(run_workload "$iterations")
	[[ -n $wcpu ]] || die "the workload failed"
	printf '%s\t%s\t%s\t%s\t%s\t-\t-\t-\t-\t-\n' "$rep" "$hz" none "$wall" "$wcpu" >>"$results"
	printf '  rep %d %5d Hz %-8s workload %6.3f s\n' "$rep" "$hz" none "$wall"
}

if [[ -z $iterations ]]; then
	# Time a short run, then scale it to the wanted length.
	cal=200000
	read -r wall _ < <(run_workload "$cal")
	[[ -n $wall ]] || die "the workload failed"
	iterations=$(python3 -c "print(max(1, round($cal * $seconds / max($wall, 1e-3))))")
	echo "calibration: $cal iterations took $wall s; using $iterations for ~$seconds s"
fi
echo "workload: $workload $iterations $threads; $reps reps of: none ${tool_list[*]}" \
	"at ${hz_list[*]} Hz"

# One round per repetition and frequency; the order of the runs rotates each round so that no
# tool always runs first after a pause or last when the machine is warm.
order=(none "${tool_list[@]}")
round=0
for ((rep = 1; rep <= reps; rep++)); do
	for hz in "${hz_list[@]}"; do
		n=${#order[@]}
		for ((k = 0; k < n; k++)); do
			t=${order[(k + round) % n]}
			if [[ $t == none ]]; then
				run_baseline "$hz" "$rep"
			else
				run_profiled "$t" "$hz" "$rep"
			fi
		done
		round=$((round + 1))
	done
done

echo
python3 - "$results" "$ncpus" "$threads" "$reps" <<'EOF'
import statistics as st
import sys

# Fields: rep, Hz, tool, workload wall s, workload CPU s, profiler CPU s, profiler peak RSS KiB,
# samples, BPF run_time_ns, BPF run_cnt ("-" where not measured).
path, ncpus, threads, reps = sys.argv[1:5]
rows = [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
med = st.median

base = [r for r in rows if r[2] == "none"]
base_wall = med(float(r[3]) for r in base)
base_cpu = med(float(r[4]) for r in base)

def pct(x, ref):
    return (x / ref - 1) * 100

def fmt(x, spec):
    return "-" if x is None else format(x, spec)

def spread(xs):
    return "(%+.1f..%+.1f)" % (min(xs), max(xs))

head = ["tool", "Hz", "wall s", "slowdown %", "(min..max)", "wl CPU %", "prof CPU s",
        "peak RSS MB", "samples", "CPU us/sample", "BPF ns/sample"]
table = [head, ["none", "-", fmt(base_wall, ".3f"), "+0.0",
                spread([pct(float(r[3]), base_wall) for r in base]), "+0.0",
                "-", "-", "-", "-", "-"]]
summary = {}
hzs = sorted({int(r[1]) for r in rows})
for tool in ["xsprofd", "perf", "bpftrace"]:
    for hz in hzs:
        rs = [r for r in rows if r[2] == tool and int(r[1]) == hz]
        if not rs:
            continue
        slow = [pct(float(r[3]), base_wall) for r in rs]
        us = [float(r[5]) * 1e6 / float(r[7]) for r in rs if float(r[7]) > 0]
        bpf = [float(r[8]) / float(r[9]) for r in rs if r[8] != "-" and float(r[9]) > 0]
        s = summary[(tool, hz)] = {"slow": med(slow), "bpf": med(bpf) if bpf else None}
        table.append([tool, str(hz), fmt(med(float(r[3]) for r in rs), ".3f"),
                      fmt(s["slow"], "+.1f"), spread(slow),
                      fmt(med(pct(float(r[4]), base_cpu) for r in rs), "+.1f"),
                      fmt(med(float(r[5]) for r in rs), ".3f"),
                      fmt(med(float(r[6]) / 1024 for r in rs), ".1f"),
                      fmt(med(float(r[7]) for r in rs), ".0f"),
                      fmt(med(us) if us else None, ".1f"), fmt(s["bpf"], ".0f")])

widths = [max(len(r[i]) for r in table) for i in range(len(head))]
print("Medians of %s repetition(s); baseline: all %d unprofiled runs; %s workload threads on "
      "%s CPUs." % (reps, len(base), threads, ncpus))
for i, r in enumerate(table):
    print("  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in
                    enumerate(zip(r, widths))))
    if i == 0:
        print("  ".join("-" * w for w in widths))

print()
for hz in hzs:
    x, p, b = (summary.get((t, hz)) for t in ("xsprofd", "perf", "bpftrace"))
    parts = []
    if x and b and x["bpf"] and b["bpf"]:
        parts.append("xsprofd BPF ns/sample = %.2fx bpftrace's (%.0f vs %.0f)"
                     % (x["bpf"] / b["bpf"], x["bpf"], b["bpf"]))
    if x and p:
        parts.append("slowdown xsprofd %+.1f%% vs perf %+.1f%%" % (x["slow"], p["slow"]))
    if parts:
        print("%5d Hz: %s" % (hz, "; ".join(parts)))
EOF

#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# What xsprof adds to one CUDA launch call, in CPU time of the calling thread, per probe path:
#   usdt nop5   xsprof:launch on its 5-byte nop site (the kernel may turn the uprobe into a call)
#   usdt int3   the same probe on sdt.h's 1-byte nop (always a trap)
#   uprobe      an entry uprobe on cudaLaunchKernel (the path without the injection library)
#   both        the injection library and libcudart in one process: the default, one probe
# each under xsprofd (command mode), against the same program unprofiled, and bpftrace's bare
# count() on the cudaLaunchKernel uprobe (the int3 floor). Runs are interleaved (one of each
# per round, R rounds) and each figure is a median. See bench/README.md.
#
# Usage: sudo bench/cuda_launch.sh [--build DIR] [--calls N] [--reps R] [--no-bpftrace]
set -eu
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

build=build
calls=200000
reps=5
bpftrace=yes
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=$2; shift 2 ;;
	--calls) calls=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--no-bpftrace) bpftrace=no; shift ;;
	-h | --help) sed -n '3,13p' "$0"; exit 0 ;;
	*) echo "cuda_launch.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done

xsprofd=$build/daemon/xsprofd
bench=$build/tests/xs_cuda_bench
for f in "$xsprofd" "$bench"; do
	if [ ! -x "$f" ]; then
		echo "cuda_launch.sh: $f missing: cmake --build $build --target xsprofd xs_cuda_bench" >&2
		exit 1
	fi
done
if [ "$(id -u)" != 0 ]; then
	echo "cuda_launch.sh: needs root (BPF)" >&2
	exit 1
fi
if [ "$bpftrace" = yes ] && ! command -v bpftrace > /dev/null; then
	echo "cuda_launch.sh: no bpftrace (apt-get install bpftrace): skipping that comparison" >&2
	bpftrace=no
fi
cudart=$(sed -n 's/.*XS_CUDART_PATH="\([^"]*\)".*/\1/p' \
	"$build/tests/CMakeFiles/xs_cuda_bench.dir/flags.make" 2> /dev/null || true)
cudart=$(readlink -f "${cudart:-/usr/local/cuda/lib64/libcudart.so}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run NAME CMD...: one run of a command line that prints "MODE ns_per_call X", appended to
# $tmp/NAME; the profiler's report is kept for the summary.
run() {
	name=$1
	shift
	if ! "$@" > "$tmp/out" 2> "$tmp/err"; then
		echo "cuda_launch.sh: '$*' failed:" >&2
		cat "$tmp/err" >&2
		exit 1
	fi
	sed -n 's/.* ns_per_call //p' "$tmp/out" >> "$tmp/$name"
	cp "$tmp/err" "$tmp/$name.log"
}

profiled() {
	"$xsprofd" --foreground -v --freq 1 --launches-output "$tmp/launches.folded" -- "$@"
}

median() { median_of "$tmp/$1"; }

modes="usdt usdt-int3 uprobe both"
i=0
while [ $i -lt "$reps" ]; do
	for mode in $modes; do
		run "base-$mode" "$bench" "$mode" "$calls" "$cudart"
		run "prof-$mode" profiled "$bench" "$mode" "$calls" "$cudart"
	done
	if [ "$bpftrace" = yes ]; then
		run bpftrace bpftrace -e "uprobe:$cudart:cudaLaunchKernel { @ = count(); }" \
			-c "$bench uprobe $calls $cudart"
	fi
	i=$((i + 1))
done

floor=nan
if [ "$bpftrace" = yes ]; then
	floor=$(echo "$(median bpftrace) $(median base-uprobe)" | awk '{ print $1 - $2 }')
fi
printf 'CPU time per CUDA launch call, median of %s interleaved rounds of %s calls (%s CPUs, %s)\n' \
	"$reps" "$calls" "$(nproc)" "$(uname -r)"
printf '%-26s %11s %11s %11s %13s %15s\n' path unprofiled profiled added \
	"vs bare int3" "calls/s (ratio)"
line() { # LABEL BASE PROF
	echo "$1 $2 $3 $floor" | awk '{
		added = $3 - $2
		ratio = ($4 == "nan" || $4 <= 0) ? "-" : sprintf("%.2fx", added / $4)
		printf "%-26s %8.0f ns %8.0f ns %8.0f ns %13s %7.0fk (%.3f)\n", $1, $2, $3, added, ratio,
			1e6 / $3, $2 / $3
	}'
}
for mode in $modes; do
	case $mode in
	usdt) label="xsprofd:usdt-nop5" ;;
	usdt-int3) label="xsprofd:usdt-int3" ;;
	uprobe) label="xsprofd:uprobe" ;;
	both) label="xsprofd:both(default)" ;;
	esac
	line "$label" "$(median "base-$mode")" "$(median "prof-$mode")"
done
if [ "$bpftrace" = yes ]; then
	line "bpftrace:count()" "$(median base-uprobe)" "$(median bpftrace)"
fi
printf '\n"vs bare int3": added time over bpftrace'"'"'s bare count() on the same uprobe.\n'
printf '"calls/s": a launch-bound loop'"'"'s calls per second profiled, and as a share of\n'
printf 'unprofiled (without a GPU each call fails at once: the share is the worst case).\n'
for mode in usdt both; do
	grep -h "xsprof:launch site" "$tmp/prof-$mode.log" | sed "s/^xsprofd: /$mode: /" || true
done

# The probe programs' own run time, from the kernel's BPF statistics: one more run of each
# path with them on (they add two clock reads per run, so not during the timed rounds).
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -q -w kernel.bpf_stats_enabled=1
printf '
BPF program run time per probe hit (kernel.bpf_stats_enabled, one extra run each):
'
for mode in $modes; do
	"$xsprofd" --foreground -v --freq 1 --launches-output "$tmp/launches.folded" -- \
		"$bench" "$mode" "$calls" "$cudart" 2>&1 > /dev/null |
		sed -n "s/^xsprofd: BPF cost: \(xsprof_cuda_call\|xsprof_usdt_launch\|xsprof_proc_libs\)/  $mode: \1/p"
done
sysctl -q -w kernel.bpf_stats_enabled="$old_stats"

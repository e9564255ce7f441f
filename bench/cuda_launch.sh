#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# What xsprof adds to one CUDA launch call, in CPU time of the calling thread: the uprobe path
# (cudaLaunchKernel probed, its stack and ids recorded), the USDT path (xsprof:launch fired from
# the fake injection library as CUPTI's callback would fire it), and both, each against the same
# program unprofiled; bpftrace on the same uprobe for comparison. See bench/README.md.
#
# Usage: sudo bench/cuda_launch.sh [--build DIR] [--calls N] [--reps R] [--no-bpftrace]
set -eu

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
	-h | --help) sed -n '3,8p' "$0"; exit 0 ;;
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

# Median ns per call of R runs of a command line that prints "MODE ns_per_call X".
median() {
	i=0
	: > "$tmp/runs"
	while [ $i -lt "$reps" ]; do
		"$@" 2> "$tmp/err" | sed -n 's/.* ns_per_call //p' >> "$tmp/runs" || true
		i=$((i + 1))
	done
	if [ "$(wc -l < "$tmp/runs")" -ne "$reps" ]; then
		echo "cuda_launch.sh: '$*' failed:" >&2
		cat "$tmp/err" >&2
		exit 1
	fi
	sort -n "$tmp/runs" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

profiled() {
	"$xsprofd" --foreground --freq 1 --launches-output "$tmp/launches.folded" -- "$@"
}

printf 'CPU time per CUDA launch call, median of %s runs of %s calls (%s CPUs, %s)\n' \
	"$reps" "$calls" "$(nproc)" "$(uname -r)"
printf '%-34s %12s %12s %12s\n' path unprofiled profiled added
for mode in uprobe usdt both; do
	base=$(median "$bench" "$mode" "$calls" "$cudart")
	prof=$(median profiled "$bench" "$mode" "$calls" "$cudart")
	printf '%-34s %9.0f ns %9.0f ns %9.0f ns\n' "xsprofd $mode" "$base" "$prof" \
		"$(echo "$prof $base" | awk '{ print $1 - $2 }')"
done
if [ "$bpftrace" = yes ]; then
	base=$(median "$bench" uprobe "$calls" "$cudart")
	for prog in "@ = count();" "@[ustack] = count();"; do
		prof=$(median bpftrace -e "uprobe:$cudart:cudaLaunchKernel { $prog }" \
			-c "$bench uprobe $calls $cudart")
		printf '%-34s %9.0f ns %9.0f ns %9.0f ns\n' "bpftrace { $prog }" "$base" "$prof" \
			"$(echo "$prof $base" | awk '{ print $1 - $2 }')"
	done
fi

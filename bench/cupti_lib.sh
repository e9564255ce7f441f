#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# The injection library's own costs and the service's intake, with the stand-in libcupti
# (tests/cupti_inject/fixtures/fake_cupti.c; no GPU):
#   lib_ns_per_record   CPU per kernel record on CUPTI's thread (libxsprof_cupti.so's decode,
#                       encode, queue and send), at RATE records a second into the service
#                       (xs_cupti_lib_bench: buffers of 1000 records with PyTorch-sized names)
#   intake_lost         records the service did not receive at that rate: the library's drops
#                       (its 4 MiB queue full: the service too slow) plus any lost in between,
#                       from the service's own count (GET /v1/status gpu.kernels)
#   service_ns_per_record  the service's CPU over that run per record (its idle rate taken off;
#                       bench/gpu_records.sh measures it more finely, and gates it)
#   nvtx_ns             what a push/pop pair costs the program while the service receives
#                       every range (xs_nvtx_cost with the library as the NVTX injection),
#                       over NVTX alone
# Each round runs the records, then NVTX alone and attached; medians over the rounds.
#
# Usage: sudo bench/cupti_lib.sh [--build DIR] [--records N] [--rate R] [--reps K] [--short]
#                               [--json FILE]
#   defaults: 1,000,000 records at 100,000 a second, 3 rounds; --short (bench/budget.sh
#   --short): 300,000 records, 1 round
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

prog=${0##*/}
build=build records=1000000 rate=100000 reps=3 json=
while [[ $# -gt 0 ]]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	--records) records=$2; shift 2 ;;
	--rate) rate=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--short) records=300000 reps=1; shift ;;
	--json) json=$2; shift 2 ;;
	-h | --help) sed -n '3,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "$prog: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
die() { echo "$prog: $*" >&2; exit 2; }
calc() { /usr/bin/python3 -c "print($1)"; }
xsprofd=$build/daemon/xsprofd ctl=$build/daemon/ctl/xsprofctl
bench=$build/tests/xs_cupti_lib_bench nvtx=$build/tests/xs_nvtx_cost
lib=$build/cupti_inject/libxsprof_cupti.so
[[ $EUID -eq 0 ]] || die "needs root (the service's BPF)"
for f in "$xsprofd" "$ctl" "$bench" "$nvtx" "$lib"; do
	[[ -e $f ]] || die "$f missing: cmake --build $build (a CUDA toolkit with CUPTI)"
done
tmp=$(mktemp -d /tmp/xsprof-cupti-lib-XXXXXX)
svc=
trap '[[ -n $svc ]] && kill "$svc" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
ticks() { awk '{print $14 + $15}' "/proc/$svc/stat"; }
hz=$(getconf CLK_TCK)
kernels() { "$ctl" -s "$tmp/api.sock" --timeout 20 --json status |
	/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["gpu"]["kernels"])'; }

"$xsprofd" --socket "$tmp/api.sock" --cupti-socket "$tmp/cupti.sock" --socket-group root -F 9 \
	> "$tmp/service.log" 2>&1 &
svc=$!
for _ in $(seq 300); do [[ -S $tmp/api.sock ]] && break; sleep 0.1; done
[[ -S $tmp/api.sock ]] || die "the service did not start: $(cat "$tmp/service.log")"
sleep 2
# The service's idle CPU rate (it samples the whole machine at 9 Hz), ticks a second.
t0=$(ticks); sleep 3; idle=$(calc "($(ticks) - $t0) / 3")

for ((r = 0; r < reps; r++)); do
	k0=$(kernels) c0=$(ticks) w0=$(date +%s.%N)
	XSPROF_CUPTI_SOCKET=$tmp/cupti.sock XSPROF_CUPTI_VERBOSE=1 XSPROF_CUPTI_POLICY=kernels \
		"$bench" "$records" "$rate" > "$tmp/out" 2> "$tmp/err" || die "bench failed: $(cat "$tmp/err")"
	sleep 0.5 # what the socket still held
	c1=$(ticks) w1=$(date +%s.%N)
	# Until the service has them all, or 20 s.
	for _ in $(seq 200); do [[ $(kernels) -ge $((k0 + records)) ]] && break; sleep 0.1; done
	k1=$(kernels)
	sed -n 's/^lib_ns_per_record //p' "$tmp/out" >> "$tmp/lib"
	sed -n 's/^rate //p' "$tmp/out" >> "$tmp/rate"
	dropped=$(sed -n 's/.*sent [0-9]* records, dropped \([0-9]*\).* and \([0-9]*\) (CUPTI.*/\1 \2/p' "$tmp/err" | awk '{print $1 + $2}')
	echo "$((records - (k1 - k0)))" >> "$tmp/lost"
	echo "${dropped:-nan}" >> "$tmp/dropped"
	calc "max(($c1 - $c0) - $idle * ($w1 - $w0), 0) / $hz * 1e9 / $records" >> "$tmp/svc"
	# The NVTX pair: plain and attached interleaved, three pairs a round, each pair's
	# difference kept (a lone pair right after the flood read the service catching up).
	for _ in 1 2 3; do
		p=$("$nvtx" 500000 | sed -n 's/^pair_ns //p')
		a=$(NVTX_INJECTION64_PATH=$lib XSPROF_CUPTI_SOCKET=$tmp/cupti.sock "$nvtx" 200000 |
			sed -n 's/^pair_ns //p')
		echo "$p" >> "$tmp/plain"
		echo "$a" >> "$tmp/attached"
		calc "$a - $p" >> "$tmp/nvtx_diff"
	done
done
lib_ns=$(median_of "$tmp/lib") lost=$(median_of "$tmp/lost") svc_ns=$(median_of "$tmp/svc")
plain=$(median_of "$tmp/plain") attached=$(median_of "$tmp/attached")
nvtx_ns=$(calc "round($(median_of "$tmp/nvtx_diff"), 1)")
printf 'The injection library and the service, %s records at %s/s (achieved %s/s), median of %s (%s CPUs, %s)\n' \
	"$records" "$rate" "$(median_of "$tmp/rate")" "$reps" "$(nproc)" "$(uname -r)"
printf '  %-52s %10s ns\n' "library CPU per record (CUPTI's thread)" "$lib_ns"
printf '  %-52s %10s ns\n' "service CPU per record (idle rate taken off)" "$(calc "round($svc_ns)")"
printf '  %-52s %10s   (the library dropped %s)\n' "records the service did not receive" "$lost" "$(median_of "$tmp/dropped")"
printf '  %-52s %10s ns   (NVTX alone %s, attached %s)\n' "NVTX push/pop pair, added while the service receives" "$nvtx_ns" "$plain" "$attached"
if [[ -n $json ]]; then
	printf '{"lib_ns_per_record": %s, "service_ns_per_record": %s, "intake_lost": %s, "nvtx_ns": %s}\n' \
		"$lib_ns" "$svc_ns" "$lost" "$nvtx_ns" > "$json"
fi

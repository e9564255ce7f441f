#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What an NVTX push/pop pair costs the program: NVTX's own no-op (no injection), with
# libxsprof_cupti.so as the NVTX injection and no daemon listening (unattached: the target is
# under 50 ns), and under xsprofd -f (attached: each range timed and sent); and an
# XSPROF_SCOPE block of xsprof/scope.h, with nothing attached and under xsprofd -f; an ITT
# task begin/end pair without a collector, with libxsprof_itt.so and no daemon, and under
# xsprofd -f. Interleaved,
# ROUNDS rounds (default 3), the median of each printed. See bench/README.md.
# Usage: sudo bench/nvtx.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
rounds=${2:-3}
bin=$build/tests/xs_nvtx_cost
lib=$build/cupti_inject/libxsprof_cupti.so
[[ -x $bin && -f $lib ]] || { echo "build xs_nvtx_cost and xsprof_cupti first (CUDA toolkit)" >&2; exit 1; }
dir=$(mktemp -d /tmp/xsprof-nvtx-bench-XXXXXX)
trap 'rm -rf "$dir"' EXIT
pair() { awk '/^pair_ns/ {print $2}'; }
itt_bin=$build/tests/xs_itt_cost
itt_lib=$build/cupti_inject/libxsprof_itt.so
[[ -x $itt_bin && -f $itt_lib ]] || { echo "build xs_itt_cost and xsprof_itt first" >&2; exit 1; }
declare -a plain=() unattached=() attached=() scope=() scope_attached=()
declare -a itt_plain=() itt_unattached=() itt_attached=()
for ((i = 0; i < rounds; i++)); do
	scope+=("$("$bin" 20000000 scope | pair)")
	rm -f "$dir/cupti.sock"
	scope_attached+=("$("$build/daemon/xsprofd" -f --cupti-socket "$dir/cupti.sock" \
		-o "$dir/s.folded" -- "$bin" 200000 scope 2>/dev/null | pair)")
	plain+=("$("$bin" 5000000 | pair)")
	unattached+=("$(NVTX_INJECTION64_PATH=$lib XSPROF_CUPTI_SOCKET=$dir/nobody.sock "$bin" 5000000 | pair)")
	rm -f "$dir/cupti.sock"
	attached+=("$(XSPROF_CUPTI_LIB=$lib "$build/daemon/xsprofd" -f --cupti-socket "$dir/cupti.sock" \
		-o "$dir/p.folded" -- env XSPROF_CUPTI_SOCKET="$dir/cupti.sock" "$bin" 200000 2>/dev/null | pair)")
	itt_plain+=("$(env -u INTEL_LIBITTNOTIFY64 "$itt_bin" 5000000 | pair)")
	itt_unattached+=("$(INTEL_LIBITTNOTIFY64=$itt_lib XSPROF_CUPTI_SOCKET=$dir/nobody.sock "$itt_bin" 5000000 | pair)")
	rm -f "$dir/cupti.sock"
	itt_attached+=("$(XSPROF_ITT_LIB=$itt_lib "$build/daemon/xsprofd" -f --cupti-socket "$dir/cupti.sock" \
		-o "$dir/i.folded" -- env XSPROF_CUPTI_SOCKET="$dir/cupti.sock" "$itt_bin" 200000 2>/dev/null | pair)")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo "NVTX push/pop pair, ns (median of $rounds; $(nproc) CPUs, $(uname -r), $(date -u +%F)):"
printf '  %-46s %8s\n' "NVTX alone (no injection)" "$(median "${plain[@]}")"
printf '  %-46s %8s   (target < 50)\n' "libxsprof_cupti.so injected, no daemon" "$(median "${unattached[@]}")"
printf '  %-46s %8s\n' "injected, xsprofd -f receiving the ranges" "$(median "${attached[@]}")"
echo "XSPROF_SCOPE block (xsprof/scope.h: two USDT sites), ns:"
printf '  %-46s %8s   (target < 50)\n' "nothing attached" "$(median "${scope[@]}")"
printf '  %-46s %8s\n' "under xsprofd -f (uprobes on both sites)" "$(median "${scope_attached[@]}")"
echo "ITT task begin/end pair, ns:"
printf '  %-46s %8s\n' "no collector (the static part's no-op)" "$(median "${itt_plain[@]}")"
printf '  %-46s %8s   (target < 50)\n' "libxsprof_itt.so, no daemon" "$(median "${itt_unattached[@]}")"
printf '  %-46s %8s\n' "libxsprof_itt.so, xsprofd -f receiving" "$(median "${itt_attached[@]}")"
echo "  (a CUDA launch probe adds about 1000 ns: bench/budgets launch_vs_bare)"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# What the autograd probes cost (README, "backward work under its forward line"): a PyTorch
# training step of ~50 autograd nodes (bench/autograd_work.py; Debian's python3-torch, CPU, one
# thread) at each WIDTH (64: tiny ops, the worst case; 256: ops of tens of microseconds), timed
# by the workload's own thread clock, alone, under `xsprofd -f` with the probes (the default)
# and with --no-autograd, runs interleaved and repeated. Prints the medians, the ratio of step
# times with and without the probes, and the CPU the probes add per autograd node (the
# difference over the nodes a step makes); then the BPF run time of the probes per node made
# (kernel.bpf_stats_enabled), the figure bench/budget.sh keeps ("autograd_bpf_ns").
#
# Usage: bench/autograd.sh [BUILD_DIR] [REPS] [STEPS] [WIDTHS]
#        (root; default build, 5, 2000, "64 256"; STEPS at 64 wide, fewer as the work grows)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

prog=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
reps=${2:-5}
steps=${3:-2000}
widths=${4:-64 256}
py=/usr/bin/python3
xsprofd=$build/daemon/xsprofd

die() {
	echo "$prog: $*" >&2
	exit 1
}
[[ $EUID -eq 0 ]] || die "needs root (BPF, bpf_stats)"
[[ -x $xsprofd ]] || die "$xsprofd missing: cmake --build $build first"
"$py" -c "import torch" 2>/dev/null || die "$py cannot import torch (apt-get install python3-torch)"

tmp=$(mktemp -d /tmp/xsprof-autograd.XXXXXX)
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
	sysctl -q -w kernel.bpf_stats_enabled="$old_stats" >/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# One run: prints "step_us nodes_per_step". Steps fewer as ops grow (the same work at each).
run() {
	local how=$1 width=$2 out=$tmp/run.out steps=$((steps * 64 * 64 / ($2 * $2) > 20 ? steps * 64 * 64 / ($2 * $2) : 20))
	case $how in
	alone) "$py" "$here/autograd_work.py" "$steps" "$width" >"$out" ;;
	on) "$xsprofd" -f -v -F 99 -o "$tmp/on.folded" -- "$py" "$here/autograd_work.py" "$steps" \
		"$width" >"$out" 2>"$tmp/on.log" ;;
	off) "$xsprofd" -f -F 99 --no-autograd -o "$tmp/off.folded" -- "$py" \
		"$here/autograd_work.py" "$steps" "$width" >"$out" 2>"$tmp/off.log" ;;
	esac
	awk '/^step_us/ { print $2, $4 }' "$out"
}

median() { printf '%s\n' "$@" | median_of; }
for width in $widths; do
	alone=() on=() off=() ratio=()
	nodes=0
	for ((i = 0; i < reps; i++)); do
		read -r a n < <(run alone "$width")
		read -r b _ < <(run on "$width")
		read -r c _ < <(run off "$width")
		alone+=("$a")
		on+=("$b")
		off+=("$c")
		ratio+=("$(awk -v b="$b" -v c="$c" 'BEGIN { printf "%.4f", b / c }')")
		nodes=$n
		echo "width $width, round $((i + 1)): alone ${a} us, autograd probes ${b} us, --no-autograd ${c} us a step"
	done
	grep -q "python autograd: 1 processes probed" "$tmp/on.log" ||
		die "the probes were not put on libtorch (log: $(grep autograd "$tmp/on.log"))"
	m_on=$(median "${on[@]}")
	m_off=$(median "${off[@]}")
	echo "width $width: a step of ${nodes} nodes: alone $(median "${alone[@]}") us, with the probes ${m_on} us, --no-autograd ${m_off} us (medians of $reps)"
	echo "autograd_step_ratio_$width $(median "${ratio[@]}")   # with the probes / --no-autograd, median of pairs"
	echo "autograd_node_ns_$width $(awk -v a="$m_on" -v b="$m_off" -v n="$nodes" 'BEGIN { printf "%.0f", (a - b) * 1000 / n }')   # CPU the probes add per node made and run"
done

# BPF run time of the probe programs per node made (a node's return probe, its run's entry
# probe, and backward()'s two, over the nodes), read from the run's own programs.
sysctl -q -w kernel.bpf_stats_enabled=1
"$xsprofd" -f -v -F 99 -o "$tmp/stats.folded" -- "$py" "$here/autograd_work.py" "$steps" 64 \
	>"$tmp/stats.out" 2>"$tmp/stats.log" &
pid=$!
sleep 1
for _ in $(seq 100); do # the probes go on once torch is imported
	grep -q '^step_us' "$tmp/stats.out" 2>/dev/null && break
	owned=$(cat /proc/"$pid"/fdinfo/* 2>/dev/null | sed -nE 's/^prog_id:\s*([0-9]+)/\1/p' || true)
	bpftool prog show --json | python3 -c '
import json, sys
owned = set(int(x) for x in sys.argv[1].split())
runs = {p["name"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0)) for p in json.load(sys.stdin)
        if p["id"] in owned and p.get("name", "").startswith("xsprof_ag_")}
print(" ".join("%s=%d/%d" % (k, v[0], v[1]) for k, v in sorted(runs.items())))' "$owned" \
		>"$tmp/bpf.txt"
	sleep 0.2
done
wait "$pid" || true
nodes_made=$(sed -nE 's/.*python autograd: .* ([0-9]+) nodes made.*/\1/p' "$tmp/stats.log")
python3 - "$tmp/bpf.txt" "$nodes_made" <<'PY'
import sys
runs = {}
for item in open(sys.argv[1]).read().split():
    name, v = item.split("=")
    ns, cnt = v.split("/")
    runs[name] = (int(ns), int(cnt))
for name, (ns, cnt) in sorted(runs.items()):
    if cnt:
        print("bpf %-20s %6.0f ns a firing (%d firings)" % (name, ns / cnt, cnt))
nodes = runs.get("xsprof_ag_node", (0, 0))[1]
total = sum(ns for ns, _ in runs.values())
if nodes:
    print("autograd_bpf_ns %.0f   # BPF run time of the four probes per node made" % (total / nodes))
PY

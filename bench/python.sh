#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# What Python frames cost (bench/README.md, "Python frames"):
#   1. BPF time per sample of the sampler program (kernel.bpf_stats_enabled) on a CPython 3.11
#      process (bench/python_work.py, ~12 interpreter frames deep), with the interpreter walk
#      and without it (--no-python), at 999 Hz. Target: at most 2x.
#   2. The slowdown of the same Python work (a fixed amount, timed by the workload itself) at
#      99 and 999 Hz under xsprofd (Python frames, unwind tables) and under perf record -g
#      (py-spy cannot be installed here: no PyPI), against the work run alone.
# Runs are interleaved and repeated; medians are printed, because this machine is shared and
# noisy.
#
# Usage: bench/python.sh [BUILD_DIR] [REPS] [PYTHON]   (root; default build, 3, python3.11)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

prog=${0##*/}
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
reps=${2:-3}
py=${3:-/usr/bin/python3.11}
xsprofd=$build/daemon/xsprofd
work=$here/python_work.py

die() {
	echo "$prog: $*" >&2
	exit 1
}

[[ $EUID -eq 0 ]] || die "needs root (BPF, bpf_stats)"
[[ -x $xsprofd ]] || die "$xsprofd missing: cmake --build $build first"
[[ -x $py ]] || die "$py missing"
for t in bpftool python3 perf; do
	command -v "$t" >/dev/null || die "missing $t (scripts/deps.sh installs it)"
done

tmp=$(mktemp -d /tmp/xsprof-python.XXXXXX)
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
work_pid=
prof_pid=
cleanup() {
	trap - EXIT INT TERM
	[[ -z $prof_pid ]] || kill -INT "$prof_pid" 2>/dev/null || true
	[[ -z $work_pid ]] || kill "$work_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	sysctl -q -w kernel.bpf_stats_enabled="$old_stats" >/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
sysctl -q -w kernel.bpf_stats_enabled=1


# Profile pid $2 for 3 s at 999 Hz, with (python) or without (native) the interpreter walk;
# prints "ns_per_sample frames_per_sample".
measure() {
	local what=$1 pid=$2 log=$tmp/m.log ns cnt flag=()

	[[ $what == native ]] && flag=(--no-python)
	"$xsprofd" -f -F 999 "${flag[@]}" -p "$pid" -o "$tmp/m.folded" 2>"$log" &
	prof_pid=$!
	for _ in $(seq 600); do
		grep -q 'sampling' "$log" && break
		sleep 0.05
	done
	sleep 3
	read -r ns cnt < <(bpf_stats "$prof_pid")
	kill -INT "$prof_pid"
	wait "$prof_pid" || true
	prof_pid=
	[[ $cnt -gt 0 ]] || die "no samples counted ($what): $(cat "$log")"
	python3 -c "print(f'{$ns / $cnt:.0f}')"
	if [[ $what == python ]] && ! grep -q 'python_work.level' "$tmp/m.folded"; then
		die "no Python frames in the profile: $(grep python "$log")"
	fi
}

median() {
	python3 -c 'import statistics, sys; print(f"{statistics.median(float(x) for x in sys.argv[1:]):.3f}")' "$@"
}

echo "== BPF cost per sample of a CPython 3.11 process (ns, median of $reps interleaved runs, 999 Hz) =="
native=() python=()
for ((r = 0; r < reps; r++)); do
	"$py" "$work" 0 >/dev/null &
	work_pid=$!
	sleep 0.5
	native+=("$(measure native "$work_pid")")
	python+=("$(measure python "$work_pid")")
	kill "$work_pid" 2>/dev/null || true
	wait "$work_pid" 2>/dev/null || true
	work_pid=
done
mn=$(median "${native[@]}")
mp=$(median "${python[@]}")
printf '  native stack only %s ns (runs: %s)\n  with Python frames %s ns (runs: %s)\n  ratio %s (target <= 2)\n' \
	"${mn%.*}" "${native[*]}" "${mp%.*}" "${python[*]}" \
	"$(python3 -c "print(f'{$mp / max($mn, 1):.2f}')")"

# The work's own seconds: alone, under xsprofd, under perf record -g.
iters=${XS_PY_ITERS:-80000000}
run_alone() { "$py" "$work" "$iters"; }
run_xsprofd() {
	"$xsprofd" -f -F "$1" -o "$tmp/w.folded" -- "$py" "$work" "$iters" 2>"$tmp/x.log" ||
		die "xsprofd failed: $(cat "$tmp/x.log")"
}
run_perf() {
	perf record -q -g -F "$1" -o "$tmp/perf.data" -- "$py" "$work" "$iters" 2>"$tmp/p.log" ||
		die "perf failed: $(cat "$tmp/p.log")"
}

echo
echo "== Slowdown of fixed Python work ($iters iterations; median of $reps interleaved runs) =="
echo "   (the work's CPU time, which the sampling is charged to; wall time beside it)"
pct() { python3 -c "print(f'{100 * ($1 / $2 - 1):+.1f}')"; }
for hz in 99 999; do
	aw=() ac=() xw=() xc=() pw=() pc=()
	for ((r = 0; r < reps; r++)); do
		read -r w c < <(run_alone)
		aw+=("$w") ac+=("$c")
		read -r w c < <(run_xsprofd "$hz" | tail -1)
		xw+=("$w") xc+=("$c")
		read -r w c < <(run_perf "$hz" | tail -1)
		pw+=("$w") pc+=("$c")
	done
	mac=$(median "${ac[@]}") maw=$(median "${aw[@]}")
	mxc=$(median "${xc[@]}") mxw=$(median "${xw[@]}")
	mpc=$(median "${pc[@]}") mpw=$(median "${pw[@]}")
	printf '  %4s Hz: alone %s s CPU; xsprofd %s s (%s%%); perf record -g %s s (%s%%)\n' "$hz" \
		"$mac" "$mxc" "$(pct "$mxc" "$mac")" "$mpc" "$(pct "$mpc" "$mac")"
	printf '           wall: alone %s s; xsprofd %s s (%s%%); perf %s s (%s%%)\n' "$maw" \
		"$mxw" "$(pct "$mxw" "$maw")" "$mpw" "$(pct "$mpw" "$maw")"
	printf '           CPU runs: alone %s; xsprofd %s; perf %s\n' "${ac[*]}" "${xc[*]}" "${pc[*]}"
done

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# What walking user stacks with unwind tables (--unwind auto) costs, and what it finds:
#   1. BPF time per sample of the sampler program (kernel.bpf_stats_enabled), tables against
#      frame pointers (--unwind fp) on workloads whose stacks both walks find whole (xs_fpdeep:
#      64 frames deep; xs_split: ~6), and on one built without frame pointers (xs_nofp: the
#      tables walk 70 frames where frame pointers stop after 1-2). Budget: tables at most 1.5x
#      fp on xs_fpdeep.
#   2. A real PyTorch training loop (Debian's python3-torch), already running, profiled by pid
#      at 499 Hz: files it maps and tables built, rows, BPF memory, build time, what was held
#      or left to frame pointers, xsprofd's CPU and peak RSS; whole stacks (5+ native frames
#      below the innermost Python frame, reaching _start, [unknown] frames) beside
#      `perf record --call-graph dwarf` on the same process for the same time (perf's Python
#      frame: _PyEval_EvalFrameDefault), with perf's CPU (record + script).
#   3. Peak RSS of a one-shot profile: of that PyTorch loop run as a command, and system-wide
#      on this machine (budgets: 32 MiB and 20 MiB).
# Runs are interleaved (fp, auto, fp, auto, ...) and repeated; medians are printed, because this
# machine is shared and noisy.
#
# Usage: bench/unwind.sh [BUILD_DIR] [REPS] [PYTHON]  (root; default build, 3, /usr/bin/python3)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

prog=${0##*/}
build=${1:-build}
reps=${2:-3}
py=${3:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
xsprofd=$build/daemon/xsprofd
split=$build/tests/xs_split
nofp=$build/tests/xs_nofp
fpdeep=$build/tests/xs_fpdeep
train=$here/../tests/daemon/python/torch_train.py

die() {
	echo "$prog: $*" >&2
	exit 1
}

[[ $EUID -eq 0 ]] || die "needs root (BPF, bpf_stats)"
for f in "$xsprofd" "$split" "$nofp" "$fpdeep"; do
	[[ -x $f ]] || die "$f missing: cmake --build $build first"
done
for t in bpftool python3 /usr/bin/time perf; do
	command -v "$t" >/dev/null || die "missing $t (scripts/deps.sh installs it)"
done
"$py" -c 'import torch' 2>/dev/null || die "$py cannot import torch (apt-get install python3-torch)"

tmp=$(mktemp -d /tmp/xsprof-unwind.XXXXXX)
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
work_pid=
prof_pid=
cleanup() {
	trap - EXIT INT TERM
	[[ -z $prof_pid ]] || kill -INT "$prof_pid" 2>/dev/null || true
	# shellcheck disable=SC2086
	[[ -z $work_pid ]] || kill $work_pid 2>/dev/null || true
	wait 2>/dev/null || true
	sysctl -q -w kernel.bpf_stats_enabled="$old_stats" >/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
sysctl -q -w kernel.bpf_stats_enabled=1


# Profile workload pid $2 with --unwind $1 for 3 s of sampling; prints "ns_per_sample".
measure() {
	local mode=$1 pid=$2 log=$tmp/m.log ns cnt

	"$xsprofd" -f -F 999 --unwind "$mode" -p "$pid" -o "$tmp/m.folded" 2>"$log" &
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
	[[ $cnt -gt 0 ]] || die "no samples counted ($mode): $(cat "$log")"
	python3 -c "print(f'{$ns / $cnt:.0f}')"
}

median() {
	python3 -c 'import statistics, sys; print(f"{statistics.median(float(x) for x in sys.argv[1:]):.0f}")' "$@"
}

echo "== BPF cost per sample (ns, median of $reps interleaved runs, 999 Hz) =="
for w in fpdeep split nofp; do
	fp=() auto=()
	for ((r = 0; r < reps; r++)); do
		# One copy per CPU: the program's run time is averaged over every sample it
		# takes, and idle CPUs' samples (cheap) would dilute it by chance.
		pids=()
		for ((c = 0; c < $(nproc); c++)); do
			case $w in
			fpdeep) "$fpdeep" 30 >/dev/null & ;;
			split) "$split" 1000 1000 30 1 >/dev/null & ;;
			nofp) "$nofp" 30 >/dev/null & ;;
			esac
			pids+=($!)
		done
		work_pid="${pids[*]}"
		sleep 0.3
		list=$(IFS=,; echo "${pids[*]}")
		fp+=("$(measure fp "$list")")
		auto+=("$(measure auto "$list")")
		kill "${pids[@]}" 2>/dev/null || true
		wait "${pids[@]}" 2>/dev/null || true
		work_pid=
	done
	mf=$(median "${fp[@]}")
	ma=$(median "${auto[@]}")
	# The ratio of each interleaved pair, then their median: the machine's drift between
	# rounds cancels within a pair.
	ratios=()
	for ((r = 0; r < reps; r++)); do
		ratios+=("$(python3 -c "print(f'{${auto[r]} / max(${fp[r]}, 1):.3f}')")")
	done
	case $w in
	fpdeep) what="xs_fpdeep (frame pointers, 64 frames deep: both walks find the whole stack; budget 1.5x)" ;;
	split) what="xs_split (frame pointers; both modes walk the whole ~6-frame stacks)" ;;
	nofp) what="xs_nofp (no frame pointers; tables walk 70 frames, fp 1-2)" ;;
	esac
	printf '%s\n  fp %s ns (runs: %s)   tables %s ns (runs: %s)\n  ratio tables/fp: %s (median of the pairs: %s)\n' \
		"$what" "$mf" "${fp[*]}" "$ma" "${auto[*]}" \
		"$(printf '%s\n' "${ratios[@]}" | median_of)" "${ratios[*]}"
done

# whole FOLDED_OR_SCRIPT KIND: "ALL PY BELOW5 ROOT UNKNOWN" over the samples of the training
# loop (those with torch_train.step in them). KIND xs: our folded stacks (Python frames named
# "mod.qual (file:line)"); perf: `perf script` output (the interpreter frame is
# _PyEval_EvalFrameDefault, the root _start).
whole() {
	python3 - "$1" "$2" <<'PY'
import re, sys
path, kind = sys.argv[1], sys.argv[2]
pyre = re.compile(r"^[^ ]*?\.[^ ]+ \([^:()]+(?::\d+)?\)$")
def stacks():
    if kind == "xs":
        for line in open(path):
            stack, _, n = line.rstrip("\n").rpartition(" ")
            fr = [f for f in stack.split(";")[1:] if not f.endswith("_[k]")]
            yield fr, int(n), lambda f: bool(pyre.match(f))
    else:
        cur = []
        for line in open(path, errors="replace"):
            line = line.rstrip("\n")
            if not line.strip():
                if cur:
                    yield cur[::-1], 1, lambda f: f.startswith("_PyEval_EvalFrameDefault")
                cur = []
                continue
            if line[0] in " \t":
                parts = line.split(None, 1)
                rest = parts[1] if len(parts) > 1 else "[unknown] ([unknown])"
                sym, _, dso = rest.partition(" (")
                if "[kernel.kallsyms]" in dso:
                    continue
                # A frame in a file without its symbol is the file's (as ours read
                # "module+0xOFF"); [unknown] is what is in no known file.
                if sym == "[unknown]" and not dso.startswith("[unknown]"):
                    sym = dso.rstrip(")").rsplit("/", 1)[-1]
                cur.append(sym.split("+0x")[0])
        if cur:
            yield cur[::-1], 1, lambda f: f.startswith("_PyEval_EvalFrameDefault")
tot = py = below = root = unk = 0
for fr, n, ispy in stacks():
    if kind == "xs" and not any("torch_train.step" in f for f in fr):
        continue
    tot += n
    idx = [i for i, f in enumerate(fr) if ispy(f)]
    if idx:
        py += n
        below += n if len(fr) - 1 - idx[-1] >= 5 else 0
    root += n if fr and fr[0] == "_start" else 0
    unk += n if "[unknown]" in fr else 0
print(tot, py, below, root, unk)
PY
}

pct() { python3 -c "print(f'{100 * $1 / max($2, 1):.1f}%')"; }

echo
echo "== A PyTorch training loop, already running, 6 s at 499 Hz: xsprofd -p beside perf --call-graph dwarf =="
"$py" "$train" 60 >/dev/null 2>&1 &
work_pid=$!
sleep 5 # its imports done
maps=$(awk '$2 ~ /x/ && $6 ~ /^\// {print $6}' /proc/$work_pid/maps | sort -u | wc -l)
/usr/bin/time -f '%e %U %S %M' -o "$tmp/xs.time" "$xsprofd" -f -v -F 499 -d 6 -p "$work_pid" \
	-o "$tmp/xs.folded" 2>"$tmp/xs.log" || die "xsprofd failed: $(cat "$tmp/xs.log")"
/usr/bin/time -f '%e %U %S %M' -o "$tmp/perf.time" perf record -q --call-graph dwarf -F 499 \
	-p "$work_pid" -o "$tmp/perf.data" -- sleep 6 2>/dev/null || die "perf record failed"
/usr/bin/time -f '%e %U %S %M' -o "$tmp/script.time" perf script -i "$tmp/perf.data" \
	-F comm,ip,sym,dso >"$tmp/perf.txt" 2>/dev/null || die "perf script failed"
kill "$work_pid" 2>/dev/null || true
wait "$work_pid" 2>/dev/null || true
work_pid=
echo "  the process has $maps executable files mapped"
grep -E 'unwind tables|first samples|walk ends|user stack walks|own CPU' "$tmp/xs.log" |
	sed 's/^xsprofd: /  /'
read -r t xpy below root unk < <(whole "$tmp/xs.folded" xs)
read -r pt ppy pbelow proot punk < <(whole "$tmp/perf.txt" perf)
printf '  %-26s %8s %14s %12s %10s %10s %12s\n' "" samples "5+ below py" "reach root" "[unknown]" "CPU s" "peak RSS MB"
read -r _ xu xs xrss <"$tmp/xs.time"
read -r _ pu ps prss <"$tmp/perf.time"
read -r _ su ss srss <"$tmp/script.time"
printf '  %-26s %8s %14s %12s %10s %10s %12s\n' "xsprofd (tables)" "$t" "$(pct "$below" "$xpy")" \
	"$(pct "$root" "$t")" "$(pct "$unk" "$t")" "$(python3 -c "print(f'{$xu + $xs:.2f}')")" \
	"$(python3 -c "print(f'{$xrss / 1024:.1f}')")"
printf '  %-26s %8s %14s %12s %10s %10s %12s\n' "perf dwarf (record+script)" "$pt" \
	"$(pct "$pbelow" "$ppy")" "$(pct "$proot" "$pt")" "$(pct "$punk" "$pt")" \
	"$(python3 -c "print(f'{$pu + $ps + $su + $ss:.2f}')")" \
	"$(python3 -c "print(f'{max($prss, $srss) / 1024:.1f}')")"

echo
echo "== Peak RSS of a one-shot profile (median of $reps) =="
rss_cmd=() rss_sys=()
for ((r = 0; r < reps; r++)); do
	/usr/bin/time -f '%M' -o "$tmp/cmd.rss" "$xsprofd" -f -v -F 499 -o "$tmp/cmd.folded" -- \
		"$py" "$train" 8 >/dev/null 2>"$tmp/cmd.log" || die "xsprofd failed: $(cat "$tmp/cmd.log")"
	# /usr/bin/time reports the largest of xsprofd and its command: xsprofd's own is logged.
	rss_cmd+=("$(sed -nE 's/.*own peak RSS ([0-9.]+) MiB.*/\1/p' "$tmp/cmd.log")")
	/usr/bin/time -f '%M' -o "$tmp/sys.rss" "$xsprofd" -f -d 5 -o "$tmp/sys.folded" \
		2>"$tmp/sys.log" || die "xsprofd failed: $(cat "$tmp/sys.log")"
	rss_sys+=("$(python3 -c "print(f'{$(cat "$tmp/sys.rss") / 1024:.1f}')")")
done
printf '  PyTorch loop (command mode, 8 s at 499 Hz): %s MiB (runs: %s; budget 32)\n' \
	"$(printf '%s\n' "${rss_cmd[@]}" | median_of)" "${rss_cmd[*]}"
printf '  system-wide, 5 s at 99 Hz: %s MiB (runs: %s; budget 20)\n' \
	"$(printf '%s\n' "${rss_sys[@]}" | median_of)" "${rss_sys[*]}"

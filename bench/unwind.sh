#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# What unwinding with .eh_frame tables (--unwind auto) costs beside frame pointers (--unwind fp):
#   1. BPF time per sample of the sampler program (kernel.bpf_stats_enabled), on a workload built
#      with frame pointers (both modes find the same whole stacks: the ratio is the price of the
#      tables) and on one built without (the tables find 70-frame stacks, fp finds 1-2);
#   2. table build time per MiB of .eh_frame and the tables' memory on a system-wide profile
#      (BPF maps, and xsprofd's peak RSS beside fp mode's).
# Runs are interleaved (fp, auto, fp, auto, ...) and repeated; medians are printed, because this
# machine is shared and noisy.
#
# Usage: bench/unwind.sh [BUILD_DIR] [REPS]     (root; default build, 3)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

prog=${0##*/}
build=${1:-build}
reps=${2:-3}
xsprofd=$build/daemon/xsprofd
split=$build/tests/xs_split
nofp=$build/tests/xs_nofp

die() {
	echo "$prog: $*" >&2
	exit 1
}

[[ $EUID -eq 0 ]] || die "needs root (BPF, bpf_stats)"
for f in "$xsprofd" "$split" "$nofp"; do
	[[ -x $f ]] || die "$f missing: cmake --build $build first"
done
for t in bpftool python3 /usr/bin/time; do
	command -v "$t" >/dev/null || die "missing $t (scripts/deps.sh installs it)"
done

tmp=$(mktemp -d /tmp/xsprof-unwind.XXXXXX)
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
for w in split nofp; do
	fp=() auto=()
	for ((r = 0; r < reps; r++)); do
		if [[ $w == split ]]; then
			"$split" 1000 1000 30 1 >/dev/null &
		else
			"$nofp" 30 >/dev/null &
		fi
		work_pid=$!
		sleep 0.3
		fp+=("$(measure fp "$work_pid")")
		auto+=("$(measure auto "$work_pid")")
		kill "$work_pid" 2>/dev/null || true
		wait "$work_pid" 2>/dev/null || true
		work_pid=
	done
	mf=$(median "${fp[@]}")
	ma=$(median "${auto[@]}")
	case $w in
	split) what="xs_split (frame pointers; both modes walk the whole ~6-frame stacks)" ;;
	nofp) what="xs_nofp (no frame pointers; tables walk 70 frames, fp 1-2)" ;;
	esac
	printf '%s\n  fp %s ns (runs: %s)   tables %s ns (runs: %s)   ratio tables/fp %s\n' \
		"$what" "$mf" "${fp[*]}" "$ma" "${auto[*]}" \
		"$(python3 -c "print(f'{$ma / max($mf, 1):.2f}')")"
done

echo
echo "== Tables on a system-wide profile (3 s at 99 Hz) =="
for mode in fp auto; do
	/usr/bin/time -f '%M' -o "$tmp/$mode.rss" "$xsprofd" -f -d 3 -F 99 --unwind "$mode" \
		-o "$tmp/sys.folded" 2>"$tmp/$mode.log" || die "xsprofd failed: $(cat "$tmp/$mode.log")"
done
grep -E 'unwind tables|user stack walk' "$tmp/auto.log" | sed 's/^xsprofd: /  /'
printf '  peak RSS: %s KiB with tables, %s KiB with frame pointers only\n' \
	"$(cat "$tmp/auto.rss")" "$(cat "$tmp/fp.rss")"

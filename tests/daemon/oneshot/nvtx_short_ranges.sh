#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Short NVTX ranges (50 us to 3 ms, nested, on three threads, one started and ended on
# different threads) under the real xsprofd at 999 Hz, --group-by range and outer-range, and a
# fixed-rate loop whose 10 ms cycle is a whole number of sampling periods at 1000 Hz, which a
# sampler on a fixed grid meets at the same points every cycle (issue 35)
# (tests/workloads/nvtx_cycles.c). Two checks per run:
#  - each sample is under the range it was truly in: every range burns its CPU in a function of
#    its own (xs_in_NAME), so of the samples in those functions at most 0.5% may be under
#    another root (the push/pop ranges); a range's ends and the samples are on one clock, so
#    there should be none. The handoff's tail is left out: the worker waits in it until the
#    helper, which ended it, says so, and that helper may be preempted in between.
#  - each range's share of the samples is within 2 points of its share of the process's CPU
#    time as the program measured it on each thread (innermost, or summed into the outermost
#    range); the sub-millisecond ranges (tiny: 10 x 50 us, small: 4 x 200 us a cycle) within
#    1.5 points.
# Shares and sample sets, not absolute times, so that a loaded machine (which preempts the
# workers for milliseconds) gives the same answer, and the program runs until it has had
# CPU_SECONDS of CPU (4: about 4000 samples however loaded the machine; at least 1000 in the
# ranges' own functions, or the run proves nothing and fails). Needs root, BTF and the CUDA toolkit's nvtx3
# (no GPU). Prints "ok"/"FAIL"; any FAIL fails.
#
# Usage: tests/daemon/oneshot/nvtx_short_ranges.sh BUILD_DIR [CPU_SECONDS]   (ctest runs it as nvtx_short_ranges)
set -uo pipefail

build=$(cd "$1" && pwd)
cpu_seconds=${2:-4}
xsprofd=$build/daemon/xsprofd
cycles=$build/tests/xs_nvtx_cycles
lib=$build/cupti_inject/libxsprof_cupti.so
py=/usr/bin/python3
failures=0
for f in "$xsprofd" "$cycles" "$lib" "$py"; do
	[[ -e $f ]] || { echo "FAIL missing $f: short NVTX ranges cannot be tested"; exit 1; }
done
[[ $(id -u) == 0 ]] || { echo "FAIL needs root"; exit 1; }
dir=$(mktemp -d /tmp/xsprof-nvtx-short-XXXXXX)
trap 'rm -rf "$dir"' EXIT
export XSPROF_CUPTI_LIB=$lib
export XSPROF_CUPTI_SOCKET=$dir/cupti.sock

# run NAME FREQ GROUP ARGS...: xs_nvtx_cycles ARGS under xsprofd -f, then both checks.
run() {
	local name=$1 freq=$2 group=$3
	shift 3
	rm -f "$dir/cupti.sock"
	if ! timeout 120 "$xsprofd" -f -F "$freq" --group-by "$group" --cupti-socket "$dir/cupti.sock" \
		-o "$dir/$name.folded" -- "$cycles" "$@" >"$dir/$name.out" 2>"$dir/$name.err"; then
		echo "FAIL xsprofd -f -F $freq --group-by $group -- $cycles $* failed:"
		tail -5 "$dir/$name.err"
		failures=$((failures + 1))
		return
	fi
	$py - "$dir/$name" "$group" <<'EOF' || failures=$((failures + 1))
import sys
base, group = sys.argv[1], sys.argv[2]
sub_ms = {"tiny", "small"}
outer = {"kernel": "step", "tiny": "step", "small": "io"}
def root_of(name):
    return outer.get(name, name) if group == "outer-range" else name
truth, cpu = {}, 0
for line in open(base + ".out"):
    f = line.split()
    if f and f[0] == "phase" and int(f[2]):
        truth[f[1]] = int(f[2])
    elif f and f[0] == "total":
        cpu = int(f[1])
want = {}
for name, ns in truth.items():
    want[root_of(name)] = want.get(root_of(name), 0) + ns
want["[no range]"] = cpu - sum(truth.values())
roots, total, own, wrong, where = {}, 0, 0, 0, {}
for line in open(base + ".folded"):
    if line.startswith("#"):
        continue
    stack, w = line.rsplit(" ", 1)
    frames, w = stack.split(";"), int(w)
    roots[frames[0]] = roots.get(frames[0], 0) + w
    total += w
    fns = [f[len("xs_in_"):].replace("_until", "") for f in frames if f.startswith("xs_in_")]
    if not fns or fns[-1] == "handoff":
        continue
    own += w
    if frames[0] != root_of(fns[-1]):
        wrong += w
        key = "%s under %s" % (fns[-1], frames[0])
        where[key] = where.get(key, 0) + w
bad = 0
ok = own >= 1000 and wrong <= 0.005 * own
bad += not ok
print("%s %d of %d samples in a push/pop range's own function are under another range%s" %
      ("ok  " if ok else "FAIL", wrong, own,
       " (%s)" % ", ".join("%s: %d" % kv for kv in sorted(where.items())) if where else ""))
for root, ns in sorted(want.items(), key=lambda kv: -kv[1]):
    exp = 100.0 * ns / max(cpu, 1)
    got = 100.0 * roots.get(root, 0) / max(total, 1)
    tol = 1.5 if root in sub_ms else 2.0
    ok = abs(got - exp) <= tol
    bad += not ok
    print("%s %-10s %5.1f%% of %d samples, its own CPU time %5.1f%% (within %.1f)" %
          ("ok  " if ok else "FAIL", root, got, total, exp, tol))
extra = set(roots) - set(want)
if extra:
    bad += 1
    print("FAIL roots that are no range of the program: %s" % sorted(extra))
sys.exit(1 if bad else 0)
EOF
}

for group in range outer-range; do
	echo "== --group-by $group at 999 Hz: 3 workers until ${cpu_seconds} s of CPU"
	run "$group" 999 "$group" "$cpu_seconds" 3
done
# A loop paced by the clock, its cycle 10 sampling periods: on a fixed grid, load (3.5 ms)
# would get 3 or 4 samples every cycle, 6 points off whatever the run's phase.
echo "== a 10 ms fixed-rate loop at 1000 Hz, --group-by range: until 3 s of CPU"
run fixed 1000 range 3 1 10000000

echo
if ((failures)); then
	echo "nvtx_short_ranges: $failures check(s) failed"
	exit 1
fi
echo "nvtx_short_ranges: all checks passed"

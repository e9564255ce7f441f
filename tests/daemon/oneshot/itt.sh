#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ITT tasks through libxsprof_itt.so, which command mode names in INTEL_LIBITTNOTIFY64:
# xs_itt_phases runs
# xs_nvtx_phases' phases as ITT tasks through the ITT static part's protocol
# (workloads/itt_stub.h). Under --group-by range each task's share of the samples is its CPU
# share (within 2 points), and within 2 points of the same phases marked with NVTX
# (xs_nvtx_phases, run beside it); the tasks, an overlapped task ended on another thread, a
# frame and a marker are in the Chrome trace, the kernels launched in "forward" carry it and
# the GPU report gives it their 9 ms; a thread named through ITT is named so by the kernel;
# without a collector the program runs unchanged. Real software: Debian's PyTorch, whose
# oneDNN carries ITT's static part, sends its primitives ("convolution") as ranges.
# Needs root, BTF, python3-torch, the CUDA toolkit (the fake launches).
#
# Usage: tests/daemon/oneshot/itt.sh BUILD_DIR      (ctest runs it as itt)
set -uo pipefail

build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")/../.." && pwd)
xsprofd=$build/daemon/xsprofd
itt=$build/cupti_inject/libxsprof_itt.so
ittp=$build/tests/xs_itt_phases
nvtxp=$build/tests/xs_nvtx_phases
cupti=$build/cupti_inject/libxsprof_cupti.so
py=/usr/bin/python3
failures=0
pass() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }
for f in "$xsprofd" "$itt" "$ittp" "$nvtxp" "$cupti" "$py"; do
	[[ -e $f ]] || { echo "FAIL missing $f"; exit 1; }
done
[[ $(id -u) == 0 ]] || { echo "FAIL needs root"; exit 1; }
dir=$(mktemp -d /tmp/xsprof-itt-XXXXXX)
trap 'rm -rf "$dir"' EXIT

# The command's INTEL_LIBITTNOTIFY64 is command mode's (XSPROF_ITT_LIB: this build's).
unset INTEL_LIBITTNOTIFY64

# run NAME CMD...: xsprofd -f at 999 Hz grouped by range: folded, Chrome trace, GPU report.
run() {
	local name=$1
	shift
	rm -f "$dir/cupti.sock"
	if ! XSPROF_ITT_LIB=$itt XSPROF_CUPTI_LIB=$cupti timeout 120 "$xsprofd" -f -F 999 \
		--group-by range --cupti-socket "$dir/cupti.sock" -o "$dir/$name.folded" \
		-o "$dir/$name.json" -o "$dir/$name.gpu.json" -- "$@" >"$dir/$name.out" 2>"$dir/$name.err"; then
		fail "xsprofd -f -- $*: $(tail -5 "$dir/$name.err")"
		return 1
	fi
}

echo "== xs_itt_phases: ITT tasks, --group-by range"
if run itt "$ittp" 3; then
	grep -q '^collector yes$' "$dir/itt.out" && pass "the program's static part took libxsprof_itt.so" ||
		fail "no collector: $(tail -3 "$dir/itt.out")"
	grep -q 'NVTX: 15 ranges' "$dir/itt.err" && pass "15 ranges arrived (12 tasks, io, a frame, cross)" ||
		fail "ranges: $(grep -i 'ranges' "$dir/itt.err")"
	$py "$here/lib/phase_shares.py" "$dir/itt" data=data step=step forward=forward backward=backward io=io ||
		failures=$((failures + 1))
	$py - "$dir/itt" <<'EOF' || failures=$((failures + 1))
import json, sys
base = sys.argv[1]
doc = json.load(open(base + ".json"))
ev = doc["traceEvents"] if isinstance(doc, dict) else doc
names = {e["name"] for e in ev if e.get("cat") == "nvtx"}
want = {"data", "step", "forward", "backward", "io", "frame", "cross", "done"}
gpu = [e for e in ev if e.get("cat") == "gpu"]
r = {e.get("args", {}).get("range") for e in gpu}
comm = [l.split()[2] for l in open(base + ".out") if l.startswith("worker comm ")]
rep = json.load(open(base + ".gpu.json"))
fwd = [x for x in rep.get("ranges", []) if x["name"] == "forward" and x.get("domain") == "xs_itt"]
checks = [
    (want <= names, "the tasks, the frame, the overlapped task and the marker are trace slices",
     sorted(want - names)),
    (len(gpu) == 9 and r == {"forward"}, "the 9 kernels carry the task they were launched in",
     (len(gpu), r)),
    (len(fwd) == 1 and fwd[0].get("gpu_ns") == 9000000,
     "the GPU report gives task forward (domain xs_itt) its 9 ms of GPU time", fwd),
    (comm == ["xs-itt-worker"],
     "the thread named through ITT is xs-itt-worker to the kernel (ps, top, perf)", comm),
]
bad = 0
for ok, what, got in checks:
    print(("ok   " if ok else "FAIL ") + what + ("" if ok else ": %s" % (got,)))
    bad += not ok
sys.exit(1 if bad else 0)
EOF
fi

echo "== the same phases with NVTX: shares within 2 points of the ITT run's"
if run nvtx "$nvtxp" 3; then
	$py - "$dir/itt.folded" "$dir/nvtx.folded" <<'EOF' || failures=$((failures + 1))
import sys
def shares(path):
    roots, total = {}, 0
    for line in open(path):
        if line.startswith("#") or ";[gpu] " in line:
            continue
        stack, w = line.rsplit(" ", 1)
        roots[stack.split(";", 1)[0]] = roots.get(stack.split(";", 1)[0], 0) + int(w)
        total += int(w)
    return {k: 100.0 * v / total for k, v in roots.items()}
a, b = shares(sys.argv[1]), shares(sys.argv[2])
bad = 0
for p in ("data", "step", "forward", "backward", "io"):
    ok = abs(a.get(p, 0) - b.get(p, 0)) <= 2
    bad += not ok
    print("%s %-8s ITT %5.1f%%, NVTX %5.1f%%" % ("ok  " if ok else "FAIL", p, a.get(p, 0), b.get(p, 0)))
sys.exit(1 if bad else 0)
EOF
fi

echo "== without a collector"
# No daemon either: its kernels find no socket (exit 1), but it runs to the end, unharmed.
rc=0
XSPROF_CUPTI_SOCKET=$dir/none.sock timeout 60 "$ittp" 1 >"$dir/bare.out" 2>&1 || rc=$?
if ((rc < 2)) && grep -q '^collector no$' "$dir/bare.out" && grep -q '^total ' "$dir/bare.out"; then
	pass "no INTEL_LIBITTNOTIFY64: the program runs, its ITT calls are no-ops"
else
	fail "without a collector (exit $rc): $(tail -3 "$dir/bare.out")"
fi

echo "== real software: Debian's PyTorch, oneDNN's ITT static part"
cat >"$dir/conv.py" <<'EOF'
import time, torch
torch.set_num_threads(1)
x = torch.randn(8, 16, 64, 64)
conv = torch.nn.Conv2d(16, 32, 3)
t = time.time()
with torch.no_grad():
    while time.time() - t < 2:
        y = conv(x)
EOF
if run torch "$py" "$dir/conv.py"; then
	n=$(grep -o 'NVTX: [0-9]* ranges' "$dir/torch.err" | grep -o '[0-9]*')
	share=$(awk '!/^#/ { w = $NF; t += w } /^convolution;/ { c += $NF } END { if (t) printf "%.0f", 100 * c / t }' "$dir/torch.folded")
	if ((${n:-0} > 100)) && grep -q 'dnnl::primitive::execute' "$dir/torch.err" && ((${share:-0} >= 10)); then
		pass "$n oneDNN primitives as ranges (domain dnnl::primitive::execute); convolution holds ${share}% of the samples"
	else
		fail "oneDNN: ${n:-no} ranges, convolution ${share:-?}%: $(grep -i 'nvtx' "$dir/torch.err")"
	fi
fi

exit $((failures > 0))

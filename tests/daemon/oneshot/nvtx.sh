#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# NVTX ranges in every output of a one-shot run, without a GPU: the real xsprofd runs programs
# that mark their phases with NVTX (command mode loads libxsprof_cupti.so as the NVTX
# injection) and each phase's share of the samples under --group-by range (innermost) and
# outer-range must be within 2 points of its own CPU time: a C program through the nvtx3
# headers (xs_nvtx_phases) and Python through ctypes and libnvtx3interop. The Chrome trace has
# each range as a slice at the program's own times (within 50 us at the median and for three
# ends in four, none past 20 ms: this VM's clock reads are syscalls that it sometimes stalls for
# 100 us or more, and a loaded machine may preempt the thread for milliseconds between the call
# and the program's own read), the GPU work launched in a range carries
# it (trace arg, flamegraph root), pprof has the label range; and the same with xsprof/scope.h's
# USDT scopes (xs_scope_phases), which need no library at all, a scope still open at the exit
# included, in the command itself and in a program it execs (env) or forks and execs (sh -c);
# and an NVTX range still open when the recording ends (sent at its push) groups its samples.
# Needs root, BTF, the CUDA toolkit's nvtx3 and libnvtx3interop (no GPU). Prints "ok"/"FAIL"; any FAIL fails.
#
# Usage: tests/daemon/oneshot/nvtx.sh BUILD_DIR      (ctest runs it as nvtx_ranges)
set -uo pipefail

build=$(cd "$1" && pwd)
xsprofd=$build/daemon/xsprofd
phases=$build/tests/xs_nvtx_phases
lib=$build/cupti_inject/libxsprof_cupti.so
py=/usr/bin/python3
here=$(cd "$(dirname "$0")/../.." && pwd)
interop=$(ls /usr/local/cuda/lib64/libnvtx3interop.so.1 "${CUDAToolkit_ROOT:-/nonexistent}"/lib64/libnvtx3interop.so.1 2>/dev/null | head -1)
failures=0
pass() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }
for f in "$xsprofd" "$phases" "$lib" "$py" "$interop"; do
	[[ -e $f ]] || { echo "FAIL missing ${f:-libnvtx3interop.so.1 (the CUDA toolkit)}: NVTX cannot be tested"; exit 1; }
done
[[ $(id -u) == 0 ]] || { echo "FAIL needs root"; exit 1; }
dir=$(mktemp -d /tmp/xsprof-nvtx-XXXXXX)
trap 'rm -rf "$dir"' EXIT
export XSPROF_CUPTI_LIB=$lib
# The commands inherit it.
export XSPROF_CUPTI_SOCKET=$dir/cupti.sock

# run NAME GROUP CMD...: xsprofd -f at 999 Hz, folded + Chrome trace + pprof, the program's
# stdout in NAME.out. GROUP may carry more flags ("range --range-domain D").
run() {
	local name=$1 group=$2
	shift 2
	rm -f "$dir/cupti.sock"
	# shellcheck disable=SC2086
	if ! timeout 120 "$xsprofd" -f -F 999 --group-by $group --cupti-socket "$dir/cupti.sock" \
		-o "$dir/$name.folded" -o "$dir/$name.json" -o "$dir/$name.pb.gz" -- \
		"$@" >"$dir/$name.out" 2>"$dir/$name.err"; then
		fail "xsprofd -f --group-by $group -- $* failed:"$'\n'"$(tail -5 "$dir/$name.err")"
		return 1
	fi
}

# shares NAME PHASE=TRUTH_PHASES... : each root's share against its phases' CPU share.
shares() {
	$py "$here/lib/phase_shares.py" "$dir/$1" "${@:2}"
}

echo "== C, nvtx3 headers: --group-by range (innermost)"
if run c range "$phases" 3; then
	grep -q 'NVTX ranges' "$dir/c.err" && pass "$(grep -o '[0-9]* NVTX ranges' "$dir/c.err") arrived" ||
		fail "no ranges: $(grep -i range "$dir/c.err")"
	shares c data=data step=step forward=forward backward=backward io=io || failures=$((failures + 1))
	w=$(grep -E '^forward;.*;xs_forward;\[gpu\] xs_kernel_fwd ' "$dir/c.folded" | awk '{s += $NF} END {print s + 0}')
	((w >= 6)) && pass "the kernels launched in forward are under it ($w samples: 9 x 1 ms at 999 Hz)" ||
		fail "no [gpu] xs_kernel_fwd under forward: $(grep '\[gpu\]' "$dir/c.folded" | head -3)"
	$py - "$dir/c" <<'EOF' || failures=$((failures + 1))
import json, sys
base = sys.argv[1]
doc = json.load(open(base + ".json"))
ev = doc["traceEvents"] if isinstance(doc, dict) else doc
open_, spans = {}, []
for e in ev:
    if e.get("cat") != "nvtx":
        continue
    if e["ph"] == "b":
        open_[e["id"]] = e
    elif e["ph"] == "e":
        b = open_.pop(e["id"])
        spans.append((b["name"], b["ts"], e["ts"], b["tid"]))
truth = [l.split() for l in open(base + ".out") if l.startswith("range ")]
diffs, missing = [], []
for _, name, t0, t1 in truth:
    t0, t1 = int(t0) / 1000, int(t1) / 1000
    c = [s for s in spans if s[0] == name]
    if not c:
        missing.append(name)
        continue
    best = min(c, key=lambda s: abs(s[1] - t0) + abs(s[2] - t1))
    diffs += [abs(best[1] - t0), abs(best[2] - t1)]
diffs.sort()
near = sum(d <= 50 for d in diffs)
bad = missing or diffs[len(diffs) // 2] > 50 or near < 0.75 * len(diffs) or diffs[-1] > 20000
print("%s %d ranges as Chrome trace slices; %d of %d ends within 50 us of the program's own "
      "times (median %.1f us, worst %.1f us)%s" %
      ("FAIL" if bad else "ok  ", len(truth) - len(missing), near, len(diffs),
       diffs[len(diffs) // 2], diffs[-1], ", missing %s" % missing if missing else ""))
names = {s[0] for s in spans}
extra = {"cross", "done", "open at exit"} - names
print("%s a start/end range ended on another thread, a mark and a range open at exit are "
      "there too%s" % ("FAIL" if extra else "ok  ", ": missing %s" % extra if extra else ""))
gpu = [e for e in ev if e.get("cat") == "gpu"]
r = {e.get("args", {}).get("range") for e in gpu}
gbad = len(gpu) != 9 or r != {"forward"}
print("%s the %d kernels carry the range they were launched in: %s" %
      ("FAIL" if gbad else "ok  ", len(gpu), r))
sys.exit(1 if bad or extra or gbad else 0)
EOF
	if command -v go >/dev/null; then
		tags=$(HOME=$dir GOCACHE=$dir/gocache go tool pprof -tags "$dir/c.pb.gz" 2>&1)
		grep -q 'range' <<<"$tags" && grep -q 'backward' <<<"$tags" &&
			pass "pprof: the label range (go tool pprof -tags)" ||
			fail "pprof has no label range: $(head -c 600 <<<"$tags")"
	else
		fail "go tool pprof not found (golang-go)"
	fi
fi

echo
echo "== C: --group-by outer-range"
if run outer outer-range "$phases" 3; then
	shares outer data=data step=step+forward+backward io=io || failures=$((failures + 1))
fi

echo
echo "== C: --range-domain xs_domain (the one range of that domain; the rest outside any)"
if run dom "range --range-domain xs_domain" "$phases" 2; then
	shares dom io=io "[no range]=data+step+forward+backward" || failures=$((failures + 1))
fi

echo
echo "== C: a range still open when the recording ends (Ctrl-C while the program waits in it)"
# open_run NAME GROUP: xs_nvtx_phases does its phases inside "run", prints "ready" and waits in
# it; then xsprofd gets SIGINT (its profile written, it waits for its command) and SIGTERM
# (passed on: the program is killed, "run" never ends). No time limit is asserted: each wait
# is for a line.
open_run() {
	local name=$1 group=$2 pid i
	rm -f "$dir/cupti.sock"
	: >"$dir/$name.out"
	: >"$dir/$name.err"
	set -m # its own process group, so SIGINT is not ignored in the background
	"$xsprofd" -f -F 999 --group-by "$group" --cupti-socket "$dir/cupti.sock" \
		-o "$dir/$name.folded" -o "$dir/$name.json" -- "$phases" 2 open \
		>"$dir/$name.out" 2>"$dir/$name.err" &
	pid=$!
	set +m
	for ((i = 0; i < 1200; i++)); do
		grep -q '^ready' "$dir/$name.out" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -INT "$pid" 2>/dev/null
	for ((i = 0; i < 1200; i++)); do
		grep -q 'waiting for' "$dir/$name.err" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -TERM "$pid" 2>/dev/null
	wait "$pid"
	if ! grep -q '^ready' "$dir/$name.out" || [[ ! -s $dir/$name.folded ]]; then
		fail "xsprofd -f --group-by $group -- $phases 2 open: no profile:"$'\n'"$(tail -5 "$dir/$name.err")"
		return 1
	fi
}
if open_run openouter outer-range; then
	# Everything the program did was inside "run", still open at the end.
	shares openouter run=data+step+forward+backward+io+run || failures=$((failures + 1))
	grep -q "NVTX: .* ranges (1 still open at the recording's end, ended there)" "$dir/openouter.err" &&
		pass "the report counts the one range still open at the end" ||
		fail "open range report: $(grep 'NVTX:' "$dir/openouter.err")"
	$py - "$dir/openouter.json" <<'EOF' || failures=$((failures + 1))
import json, sys
doc = json.load(open(sys.argv[1]))
ev = doc["traceEvents"] if isinstance(doc, dict) else doc
names = {e["name"] for e in ev if e.get("cat") == "nvtx" and e["ph"] == "b"}
ok = "run" in names
print("%s the open range is a Chrome trace slice too%s" % ("ok  " if ok else "FAIL", "" if ok else ": %s" % names))
sys.exit(0 if ok else 1)
EOF
fi
if open_run openinner range; then
	# Its own time, in no inner range, is under it rather than [no range].
	shares openinner data=data step=step forward=forward backward=backward io=io run=run ||
		failures=$((failures + 1))
fi

echo
echo "== Python through ctypes and libnvtx3interop: --group-by range"
if run py range "$py" "$here/workloads/nvtx_phases.py" 3 "$interop"; then
	shares py load=load forward=forward backward=backward || failures=$((failures + 1))
	grep -qE '^forward;python3;.*nvtx_phases\.phase \(nvtx_phases\.py:[0-9]+\)' "$dir/py.folded" &&
		pass "Python frames (file and line) under the range" ||
		fail "no Python frames under forward: $(grep '^forward' "$dir/py.folded" | head -c 400)"
fi


echo
echo "== C, xsprof/scope.h (USDT scopes, no library): --group-by range"
scopes=$build/tests/xs_scope_phases
if [[ ! -x $scopes ]]; then
	fail "missing $scopes"
elif run scope range "$scopes" 3; then
	# tail: still open when the program exits, it ends at the exit (its samples under it).
	shares scope data=data step=step forward=forward backward=backward tail=tail ||
		failures=$((failures + 1))
	# 12 scopes paired and tail ended at the exit; the program's one end without its begin
	# is counted and said.
	grep -q "xsprof scopes: 13 ranges (1 ended at their process's exit, 0 at the recording's end); 1 ends without their begin" "$dir/scope.err" &&
		pass "the report counts 13 scopes, 1 ended at the exit, and the 1 end without its begin" ||
		fail "scope report: $(grep 'xsprof scopes' "$dir/scope.err")"
	$py - "$dir/scope" <<'EOF' || failures=$((failures + 1))
import json, sys
base = sys.argv[1]
doc = json.load(open(base + ".json"))
ev = doc["traceEvents"] if isinstance(doc, dict) else doc
open_, spans = {}, []
for e in ev:
    if e.get("cat") == "nvtx" and e["ph"] == "b":
        open_[e["id"]] = e
    elif e.get("cat") == "nvtx" and e["ph"] == "e":
        b = open_.pop(e["id"])
        spans.append((b["name"], b["ts"], e["ts"]))
truth = [l.split() for l in open(base + ".out") if l.startswith("range ")]
diffs = []
for _, name, t0, t1 in truth:
    t0, t1 = int(t0) / 1000, int(t1) / 1000
    best = min((s for s in spans if s[0] == name), key=lambda s: abs(s[1] - t0) + abs(s[2] - t1))
    diffs += [abs(best[1] - t0), abs(best[2] - t1)]
diffs.sort()
names = sorted({s[0] for s in spans})
bad = names != ["backward", "data", "forward", "step", "tail"] or diffs[len(diffs) // 2] > 50
print("%s scopes as Chrome trace slices %s; step's ends within %.1f us (median) of the "
      "program's times" % ("FAIL" if bad else "ok  ", names, diffs[len(diffs) // 2]))
sys.exit(1 if bad else 0)
EOF
fi
if run scopedom "range --range-domain xsprof" "$scopes" 2; then
	shares scopedom data=data step=step forward=forward backward=backward tail=tail ||
		failures=$((failures + 1))
fi
# Scopes in programs the command execs later: probed at their exec, before they run (env
# execs it in place; sh forks it first).
if run scopeexec range /usr/bin/env XS_EXEC=1 "$scopes" 2; then
	shares scopeexec data=data step=step forward=forward backward=backward tail=tail ||
		failures=$((failures + 1))
fi
if run scopefork range /bin/sh -c "\"$scopes\" 2; exit 0"; then
	shares scopefork data=data step=step forward=forward backward=backward tail=tail ||
		failures=$((failures + 1))
fi
# Attached to a process already running (--pid): the scopes of a shared library it maps, which
# is no CUDA library, are probed too (about half its CPU time is in the library's scope).
echo "== attached (--pid): a scope in a shared library (libxs_scope_lib.so)"
loop=$build/tests/xs_scope_lib_loop
if [[ ! -x $loop ]]; then
	fail "missing $loop"
else
	"$loop" 12 >"$dir/libscope.out" &
	lpid=$!
	for _ in $(seq 100); do grep -q ready "$dir/libscope.out" 2>/dev/null && break; sleep 0.1; done
	if timeout 120 "$xsprofd" -f -F 499 --group-by range --pid "$lpid" --duration 4 \
		-o "$dir/libscope.folded" 2>"$dir/libscope.err"; then
		$py - "$dir/libscope.folded" <<'EOF2' && pass "attached: $(tail -1 "$dir/libscope.share")" ||
import sys
roots, total = {}, 0
for line in open(sys.argv[1]):
    if line.startswith("#"):
        continue
    stack, w = line.rsplit(" ", 1)
    roots[stack.split(";", 1)[0]] = roots.get(stack.split(";", 1)[0], 0) + int(w)
    total += int(w)
share = 100.0 * roots.get("lib_phase", 0) / max(total, 1)
msg = "lib_phase holds %.1f%% of %d samples (truth 50%%)" % (share, total)
open(sys.argv[1].replace(".folded", ".share"), "w").write(msg + "\n")
print(msg)
sys.exit(0 if total >= 200 and 35 <= share <= 65 else 1)
EOF2
			fail "attached: the library's scope: $(cat "$dir/libscope.share" 2>/dev/null)"
	else
		fail "xsprofd -f --pid $lpid failed: $(tail -3 "$dir/libscope.err")"
	fi
	kill "$lpid" 2>/dev/null
	wait "$lpid" 2>/dev/null
fi
# The header in C++ too (a class scope), with every warning on.
if printf '#include <xsprof/scope.h>\nint main() { XSPROF_SCOPE("a"); XSPROF_FUNCTION(); return 0; }\n' |
	c++ -std=c++11 -Wall -Wextra -Werror -I"$here/../cupti_inject/include" -x c++ - -o "$dir/cxx"; then
	pass "xsprof/scope.h compiles as C++ (-Wall -Wextra -Werror)"
else
	fail "xsprof/scope.h does not compile as C++"
fi

echo
if ((failures)); then
	echo "nvtx_ranges: $failures check(s) failed"
	exit 1
fi
echo "nvtx_ranges: all checks passed"

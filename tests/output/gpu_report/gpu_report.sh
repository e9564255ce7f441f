#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU report on workloads held back in known ways (tests/workloads/gpu_bound.c), through
# the real xsprofd and the GPU test doubles: launches fired on the fake injection library's
# xsprof:launch, a synchronize that returns when the "GPU" is done, and the GPU work the
# workload reports itself at the times it chose, so the truth is exact. Each is diagnosed with
# the stack to blame: input-bound (the host computes a batch in xs_make_batch), launch-bound
# (thousands of 5 us kernels from xs_launch_many), sync-bound (a cuStreamSynchronize after every
# kernel, in xs_sync_step) and pageable copies (xs_copy_inputs), the input-bound loop in Python
# (blamed at the line of its loop); busy and idle time within 2%
# of the workload's own figures; the text report (--report gpu) within 80 columns; the Chrome
# trace with its counter tracks. Needs root and BTF (no GPU). Prints "ok"/"FAIL"; any FAIL fails.
#
# Usage: tests/output/gpu_report/gpu_report.sh BUILD_DIR      (ctest runs it as gpu_report)
set -uo pipefail

build=$(cd "$1" && pwd)
xsprofd=$build/daemon/xsprofd
work=$build/tests/xs_gpu_bound
py=/usr/bin/python3
here=$(cd "$(dirname "$0")/../.." && pwd)
failures=0
pass() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }
for f in "$xsprofd" "$work" "$py" "$build/tests/libxs_gpu_double.so"; do
	[[ -e $f ]] || { echo "FAIL missing $f"; exit 1; }
done
[[ $(id -u) == 0 ]] || { echo "FAIL needs root"; exit 1; }
dir=$(mktemp -d /tmp/xsprof-gpureport-XXXXXX)
trap 'kill "${svc:-0}" 2>/dev/null; rm -rf "$dir"' EXIT

# run MODE N: xsprofd -f at 999 Hz with --report gpu, the JSON report and a Chrome trace; the
# workload's truth and the text report both on stdout (MODE.out).
run() {
	local mode=$1 n=$2
	rm -f "$dir/cupti.sock"
	if ! timeout 120 "$xsprofd" -f -F 999 --cupti-socket "$dir/cupti.sock" --report gpu \
		-o "$dir/$mode.gpu.json" -o "$dir/$mode.json" -- "$work" "$mode" "$n" \
		>"$dir/$mode.out" 2>"$dir/$mode.err"; then
		fail "$mode: xsprofd -f --report gpu -- xs_gpu_bound $mode $n failed:"$'\n'"$(tail -5 "$dir/$mode.err")"
		return 1
	fi
}

# check MODE FINDING CAUSE FRAME [API]: the figures against the truth, the finding with FRAME
# in its stack (and API as its call), CAUSE a third of the idle time or more.
check() {
	$py - "$dir" "$@" <<'PYEOF'
import json, sys
d, mode, kind, cause, frame = sys.argv[1:6]
api = sys.argv[6] if len(sys.argv) > 6 else None
truth = {}
text = []
for l in open(f"{d}/{mode}.out"):
    f = l.split()
    if len(f) == 2 and f[0] in ("busy_ns", "idle_ns", "active_ns", "kernels", "copies", "copy_bytes"):
        truth[f[0]] = int(f[1])
    else:
        text.append(l.rstrip("\n"))
r = json.load(open(f"{d}/{mode}.gpu.json"))
bad = []
if r.get("schema") != "xsprof.gpu_report" or r.get("version") != 1:
    bad.append(f"schema {r.get('schema')} {r.get('version')}")
if len(r["devices"]) != 1:
    bad.append(f"{len(r['devices'])} devices")
else:
    dev = r["devices"][0]
    for k in ("busy_ns", "idle_ns", "active_ns"):
        if abs(dev[k] - truth[k]) > 0.02 * truth[k]:
            bad.append(f"{k} {dev[k]} vs the workload's {truth[k]}")
    if dev["kernels"] != truth["kernels"] or dev["copies"] != truth["copies"]:
        bad.append(f"work {dev['kernels']}+{dev['copies']} vs {truth['kernels']}+{truth['copies']}")
    # The cause holds a third of the idle time at least: on a loaded machine the loop is
    # also preempted for longer than a launch gap, which is idle of the host's making.
    split = dev["idle_by_cause"]
    if split[cause + "_ns"] < dev["idle_ns"] / 3 and truth["idle_ns"] > 0.05 * truth["active_ns"]:
        bad.append(f"{cause} is under a third of the idle time: {split}")
    print(f"     busy {dev['busy_ns']/1e6:.1f} ms idle {dev['idle_ns']/1e6:.1f} ms of {dev['active_ns']/1e6:.1f} ms; idle by cause (ms) "
          + " ".join(f"{k[:-3]}={v/1e6:.1f}" for k, v in split.items() if v))
fs = [f for f in r["findings"] if f["kind"] == kind]
if not fs:
    bad.append(f"no {kind} finding: {[f['kind'] for f in r['findings']]}")
else:
    f = fs[0]
    if not any(frame in fr for fr in f["stack"]):
        bad.append(f"{kind}'s stack lacks {frame}: {f['stack']}")
    if api and f.get("api") != api:
        bad.append(f"{kind}'s call {f.get('api')}, not {api}")
    if not f["advice"] or not f["figures"]:
        bad.append(f"{kind} without figures or advice")
    print(f"     {f['severity']} {kind}: {f['summary']}")
if kind == "pageable_copy" and fs:
    fig = fs[0]["figures"]
    if fig["bytes"] != truth["copy_bytes"] or fig["copies"] != truth["copies"]:
        bad.append(f"pageable copies {fig['copies']} / {fig['bytes']} B vs {truth['copies']} / {truth['copy_bytes']}")
long = [l for l in text if len(l) > 80]
if long:
    bad.append(f"text report lines over 80 columns: {long[:2]}")
if not any(l.startswith("xsprof GPU report") for l in text):
    bad.append("no text report on stdout")
t = json.load(open(f"{d}/{mode}.json"))
names = {e.get("name") for e in t["traceEvents"] if e.get("ph") == "C"}
if not {"busy %", "queue depth"} <= names:
    bad.append(f"trace counters: {names}")
for b in bad:
    print("     " + b)
sys.exit(1 if bad else 0)
PYEOF
}

if run input 30 && check input host_bound host xs_make_batch; then
	pass "input-bound: host_bound blames xs_make_batch; busy and idle within 2%"
else
	fail "input-bound"
fi
# By range: its xsprof scopes hold the host's idle time ("data") and the GPU's work ("step").
if $py - "$dir/input.gpu.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
dev = r["devices"][0]
rs = {x["name"]: x for x in r["ranges"]}
ok = ("data" in rs and "step" in rs
      and rs["data"]["idle_by_cause"]["host_ns"] >= 0.9 * dev["idle_by_cause"]["host_ns"]
      and rs["step"]["gpu_ns"] == dev["busy_ns"])
print(f"     data: idle {rs.get('data', {}).get('idle_ns', 0) / 1e6:.1f} ms of {dev['idle_ns'] / 1e6:.1f};"
      f" step: GPU {rs.get('step', {}).get('gpu_ns', 0) / 1e6:.1f} ms of {dev['busy_ns'] / 1e6:.1f}")
sys.exit(0 if ok else 1)
PYEOF
then
	pass "input-bound by scope: the idle time in \"data\", the GPU work in \"step\""
else
	fail "input-bound by scope: $($py -c 'import json,sys; print(json.load(open(sys.argv[1]))["ranges"])' "$dir/input.gpu.json")"
fi
if run launch 3000 && check launch launch_bound launch xs_launch_many; then
	pass "launch-bound: launch_bound blames xs_launch_many"
else
	fail "launch-bound"
fi
if run sync 40 && check sync sync_bound sync xs_sync_step cuStreamSynchronize; then
	pass "sync-bound: sync_bound blames cuStreamSynchronize in xs_sync_step"
else
	fail "sync-bound"
fi
if run pageable 15 && check pageable pageable_copy host xs_copy_inputs; then
	pass "pageable copies: pageable_copy with the copies' count and bytes"
else
	fail "pageable copies"
fi
# The same input-bound loop in Python (tests/workloads/gpu_bound.py, the GPU double through
# ctypes): the idle time is blamed on make_batch at the line of its loop.
pyline=$(grep -n "# BATCH" "$here/workloads/gpu_bound.py" | cut -d: -f1)
rm -f "$dir/cupti.sock"
if timeout 120 "$xsprofd" -f -F 999 --cupti-socket "$dir/cupti.sock" --report gpu \
	-o "$dir/python.gpu.json" -o "$dir/python.json" -- "$py" "$here/workloads/gpu_bound.py" \
	"$build/tests/libxs_gpu_double.so" 30 >"$dir/python.out" 2>"$dir/python.err" &&
	check python host_bound host "gpu_bound.make_batch (gpu_bound.py:$pyline)"; then
	pass "Python: host_bound blames gpu_bound.make_batch (gpu_bound.py:$pyline)"
else
	fail "Python input-bound: $(tail -3 "$dir/python.err")"
fi

# GPU memory by allocating stack, per device (the device each thread set with cudaSetDevice,
# 0 before it did; driver and runtime allocations alike): the peak and what is left at exit, by
# function, exact; the failed allocation with its stack and device; the text report names each
# device; the trace's memory counter.
if run memory 1 && $py - "$dir" <<'PYEOF'
import json, sys
d = sys.argv[1]
truth = {l.split()[0]: int(l.split()[1]) for l in open(f"{d}/memory.out") if l.startswith("mem_")}
r = json.load(open(f"{d}/memory.gpu.json"))
bad = []
mem = {m["device"]: m for m in r["memory"]}
def by_fn(places):
    out = {}
    for p in places:
        fn = next((f for f in reversed(p["stack"]) if f.startswith("xs_")), "?")
        out[fn] = out.get(fn, 0) + p["bytes"]
    return out
MIB = 1 << 20
want = {
    0: ({"xs_load_weights": 128 * MIB}, {"xs_load_weights": 128 * MIB}),
    1: ({"xs_grow_cache": 128 * MIB, "xs_temp_buffer": 64 * MIB}, {"xs_grow_cache": 32 * MIB}),
}
if len(r["memory"]) != 2 or sorted(mem) != [0, 1] or len({m["pid"] for m in r["memory"]}) != 1:
    bad.append(f"memory: {[(m['pid'], m['device']) for m in r['memory']]}, want one process on devices 0 and 1")
for dev, (peak, end) in want.items():
    m = mem.get(dev)
    if not m:
        continue
    if m["peak_bytes"] != truth[f"mem_peak_dev{dev}"] or m["end_bytes"] != truth[f"mem_end_dev{dev}"]:
        bad.append(f"device {dev}: peak {m['peak_bytes']} end {m['end_bytes']} vs {truth}")
    if by_fn(m["at_peak"]) != peak:
        bad.append(f"device {dev} at the peak: {by_fn(m['at_peak'])}")
    if by_fn(m["at_end"]) != end:
        bad.append(f"device {dev} at the end: {by_fn(m['at_end'])}")
    if m["failed"] != truth[f"mem_failed_dev{dev}"]:
        bad.append(f"device {dev}: failed {m['failed']}")
    print(f"     device {dev}: peak {m['peak_bytes'] / MIB:.0f} MiB ({by_fn(m['at_peak'])}), end {m['end_bytes'] / MIB:.0f} MiB")
kinds = {f["kind"]: f for f in r["findings"]}
if "allocation_failed" not in kinds or "xs_too_big" not in kinds["allocation_failed"]["stack"] \
        or kinds["allocation_failed"]["device"] != 0:
    bad.append(f"allocation_failed: {kinds.get('allocation_failed')}")
if {f["device"] for f in r["findings"] if f["kind"] == "memory_unfreed"} != {0, 1}:
    bad.append(f"memory_unfreed: {[f for f in r['findings'] if f['kind'] == 'memory_unfreed']}")
text = open(f"{d}/memory.out").read()
for dev in (0, 1):
    if f" on device {dev}:" not in text:
        bad.append(f"the text report names no device {dev}")
t = json.load(open(f"{d}/memory.json"))
if not any(e.get("ph") == "C" and e.get("name") == "GPU memory MiB" for e in t["traceEvents"]):
    bad.append("no GPU memory counter in the trace")
for b in bad:
    print("     " + b)
sys.exit(1 if bad else 0)
PYEOF
then
	pass "GPU memory: peak and exit by device and allocating function exact, the failed allocation's stack"
else
	fail "GPU memory"
fi

# Regression gates: xsprof-diff on GPU reports. Two runs of 10 steps against one of 40: the
# device's active time regressed (exit 3); against another run of 10 steps, nothing past 100%
# (the runs' own noise on a busy machine stays under it).
diff=$build/output/xsprof-diff
for i in 1 2 3; do
	rm -f "$dir/cupti.sock"
	timeout 120 "$xsprofd" -f -F 999 --cupti-socket "$dir/cupti.sock" -o "$dir/base$i.gpu.json" \
		-- "$work" input 10 >/dev/null 2>&1
done
rm -f "$dir/cupti.sock"
timeout 120 "$xsprofd" -f -F 999 --cupti-socket "$dir/cupti.sock" -o "$dir/slow.gpu.json" \
	-- "$work" input 40 >/dev/null 2>&1
# -n 0: every row (host-stack figures of a few ms can outrank the device's +300% in the
# default top 20).
"$diff" -t 100 -n 0 "$dir/base1.gpu.json,$dir/base2.gpu.json" "$dir/slow.gpu.json" >"$dir/diff.out" 2>&1
rc=$?
if [[ $rc == 3 ]] && grep -q "device 0 active  REGRESSED" "$dir/diff.out"; then
	pass "xsprof-diff: 4x the steps regress the device's active time (exit 3)"
else
	fail "xsprof-diff on a slower run: exit $rc"$'\n'"$(head -12 "$dir/diff.out")"
fi
"$diff" -t 100 -n 0 "$dir/base1.gpu.json,$dir/base2.gpu.json" "$dir/base3.gpu.json" >"$dir/same.out" 2>&1
rc=$?
if [[ $rc == 0 ]] && ! grep -q REGRESSED "$dir/same.out"; then
	pass "xsprof-diff: the same workload again does not regress (exit 0)"
else
	fail "xsprof-diff on the same workload: exit $rc"$'\n'"$(head -12 "$dir/same.out")"
fi
if "$diff" "$dir/base1.gpu.json" "$dir/input.json" >"$dir/mixed.out" 2>&1; then
	fail "xsprof-diff took a Chrome trace for a GPU report"
elif grep -q "compare with GPU reports only" "$dir/mixed.out"; then
	pass "xsprof-diff refuses to compare a GPU report with another kind of file"
else
	fail "xsprof-diff on mixed inputs: $(head -2 "$dir/mixed.out")"
fi

# The service. The rolling window (CUDA launches probed in the fake injection library with
# --cuda-lib, 999 Hz so the host's stacks fill 25 ms gaps) keeps a GPU report per 10 s slice and
# user: xsprofctl report merges them. An input-bound run of ~14 s, its work sent as it ends
# (XS_GPU_DOUBLE_STREAM, as CUPTI flushes), attached too once it runs: the window's report
# spans two slices at least, finds host_bound at xs_make_batch, busy and idle within 2% of the
# workload's own figures, every kernel (one that ends in one slice and arrives in the next is
# the next's: slices take the GPU records by arrival); the attachment's report, asked while it
# runs (a query cutting its open slice), finds the same, its busy time its kernels' time. A
# member of the socket's group (nobody, group nogroup) sees no GPU work in the window: none of
# it was theirs; then their own only. Then a recording on request in format gpu-report
# (xsprofctl record -o X.gpu.json), and the text forms.
ctl=$build/daemon/ctl/xsprofctl
member=65534
as_member() { setpriv --reuid=$member --regid="$(getent group nogroup | cut -d: -f3)" --clear-groups -- "$@"; }
chmod 0755 "$dir"
# The member runs the workload too: the service's runs use copies in $dir, which it can reach
# (the build may sit under a directory only root may enter, as a `mktemp -d` clone's does), and
# the service probes the copy of the fake injection library they load.
mkdir "$dir/bin" && cp "$work" "$build"/tests/{libxs_gpu_double,libcuda_xsbound,libxsprof_cupti_fake}.so \
	"$dir/bin/" && chmod -R a+rX "$dir/bin" || fail "copying the workload for the member"
"$xsprofd" --socket "$dir/api.sock" --cupti-socket "$dir/svc-cupti.sock" --socket-group nogroup \
	--cuda-lib "$dir/bin/libxsprof_cupti_fake.so" --freq 999 >"$dir/svc.log" 2>&1 &
svc=$!
for _ in $(seq 100); do [[ -S $dir/api.sock ]] && break; sleep 0.1; done
sctl() { timeout 60 "$ctl" --socket "$dir/api.sock" "$@"; }
t0=$(date +%s%N)
XS_GPU_DOUBLE_STREAM=1 XSPROF_CUPTI_SOCKET=$dir/svc-cupti.sock LD_LIBRARY_PATH=$dir/bin \
	timeout 120 "$dir/bin/xs_gpu_bound" input 600 \
	>"$dir/win.out" 2>"$dir/win.err" &
wpid=$!
sleep 0.5
sctl -q attach "$wpid" >/dev/null 2>"$dir/attach.err" || fail "attach $wpid: $(cat "$dir/attach.err")"
# 600 steps take 15 s or more: asked at 11.5 s, the attachment still runs.
ms=$((11500 - ($(date +%s%N) - t0) / 1000000))
((ms > 0)) && sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
kill -0 "$wpid" 2>/dev/null || fail "xs_gpu_bound input 600 ended before 11.5 s"
sctl report --pid "$wpid" -o "$dir/att.gpu.json" 2>"$dir/att.err" ||
	fail "report --pid $wpid: $(cat "$dir/att.err")"
sctl report --pid "$wpid" >"$dir/att.txt" 2>>"$dir/att.err" ||
	fail "report --pid $wpid (text): $(cat "$dir/att.err")"
wait "$wpid" || fail "xs_gpu_bound input under the service: $(tail -3 "$dir/win.err")"
sleep 0.5
sctl report --since 1m -o "$dir/win.gpu.json" 2>"$dir/winr.err" ||
	fail "report -o win.gpu.json: $(cat "$dir/winr.err")"
sctl report --since 1m -o "$dir/win.gpu.txt" 2>>"$dir/winr.err" ||
	fail "report -o win.gpu.txt: $(cat "$dir/winr.err")"
sctl report --since 1m >"$dir/win.txt" 2>>"$dir/winr.err" || fail "report on stdout"
# (The member cannot write in $dir: the body and the status on its stdout.)
as_member curl -s -m 10 --unix-socket "$dir/api.sock" -w '\n%{http_code}' \
	"http://x/v1/profile?since_s=60&format=gpu-report" >"$dir/member.out" 2>&1
sctl --json status >"$dir/status.json" 2>&1
if $py - "$dir" <<'PYEOF'
import json, sys
d = sys.argv[1]
truth = {l.split()[0]: int(l.split()[1]) for l in open(f"{d}/win.out") if len(l.split()) == 2}
bad = []
def host_bound(r, what):
    f = [f for f in r["findings"] if f["kind"] == "host_bound"]
    if not f or "xs_make_batch" not in f[0]["stack"]:
        bad.append(f"{what}: no host_bound at xs_make_batch: {[(f['kind'], f['stack'][-3:]) for f in r['findings']]}")
w = json.load(open(f"{d}/win.gpu.json"))
host_bound(w, "window")
if len(w["devices"]) != 1:
    bad.append(f"window: {len(w['devices'])} devices")
else:
    dev = w["devices"][0]
    for k in ("busy_ns", "idle_ns", "active_ns"):
        if abs(dev[k] - truth[k]) > 0.02 * truth[k]:
            bad.append(f"window: {k} {dev[k]} vs the workload's {truth[k]}")
    if dev["active_ns"] < 10e9:
        bad.append(f"window: {dev['active_ns']/1e9:.1f} s active, not more than a slice")
    if dev["kernels"] != truth["kernels"]:
        bad.append(f"window: {dev['kernels']} kernels vs {truth['kernels']}")
    print(f"     window: busy {dev['busy_ns']/1e6:.1f} ms idle {dev['idle_ns']/1e6:.1f} ms of {dev['active_ns']/1e6:.1f} ms"
          f" ({dev['kernels']} kernels; the workload's {truth['busy_ns']/1e6:.1f} / {truth['idle_ns']/1e6:.1f} / {truth['active_ns']/1e6:.1f} ms, {truth['kernels']})")
st = json.load(open(f"{d}/status.json"))["store"]
if st.get("gpu_reports", 0) < 2 or "gpu_reports_dropped" not in st or "gpu_reports_cap_bytes" not in st:
    bad.append(f"status store: {st.get('gpu_reports')} reports, {sorted(k for k in st if k.startswith('gpu_reports'))}")
else:
    print(f"     status store: {st['gpu_reports']} GPU reports, {st['gpu_reports_bytes']} of {st['gpu_reports_cap_bytes']} bytes, {st['gpu_reports_dropped']} dropped")
a = json.load(open(f"{d}/att.gpu.json"))
host_bound(a, "attachment")
if len(a["devices"]) == 1:
    dev = a["devices"][0]
    # Asked while it ran (the part of the run it saw: its share of busy time varies with the
    # machine's load): busy is its kernels' time (the workload's per kernel) within 2%, busy and
    # idle make up its active time, more than a slice of it.
    per_kernel = truth["busy_ns"] / truth["kernels"]
    if abs(dev["busy_ns"] - dev["kernels"] * per_kernel) > 0.02 * dev["busy_ns"] \
            or dev["busy_ns"] + dev["idle_ns"] != dev["active_ns"] or dev["active_ns"] < 10e9:
        bad.append(f"attachment: busy {dev['busy_ns']} idle {dev['idle_ns']} of {dev['active_ns']} ns, {dev['kernels']} kernels of {per_kernel:.0f} ns")
    print(f"     attachment: busy {dev['busy_ns']/1e6:.1f} ms in {dev['kernels']} kernels of {per_kernel/1e6:.1f} ms, {dev['active_ns']/1e9:.1f} s active")
else:
    bad.append(f"attachment: {len(a['devices'])} devices")
for f in ("win.gpu.txt", "win.txt", "att.txt"):
    t = open(f"{d}/{f}").read().splitlines()
    if not t or not t[0].startswith("xsprof GPU report") or "host_bound" not in "\n".join(t):
        bad.append(f"{f}: {t[:2]}")
    if any(len(l) > 80 for l in t):
        bad.append(f"{f}: lines over 80 columns")
body, _, code = open(f"{d}/member.out").read().rpartition("\n")
m = json.loads(body) if code == "200" else None
if not m or m.get("schema") != "xsprof.gpu_report" or m["devices"] or m["findings"]:
    bad.append(f"member: {code} {body[:200]}")
for b in bad:
    print("     " + b)
sys.exit(1 if bad else 0)
PYEOF
then
	pass "service: xsprofctl report (window, two slices and more; attachment while it runs) finds host_bound at xs_make_batch, busy and idle within 2%; a member sees none of root's GPU work; status counts the reports"
else
	fail "service window and attachment reports: $(tail -3 "$dir/svc.log")"
fi
# Two users on one device at once: root's run and the member's. The member's query of the
# window is their own process's report (busy and idle within 2%, its kernels, host_bound at
# xs_make_batch); root's has both runs' kernels (a report of all users, not two added).
XS_GPU_DOUBLE_STREAM=1 XSPROF_CUPTI_SOCKET=$dir/svc-cupti.sock LD_LIBRARY_PATH=$dir/bin \
	timeout 60 "$dir/bin/xs_gpu_bound" input 200 \
	>"$dir/both_root.out" 2>&1 &
rpid=$!
as_member env XS_GPU_DOUBLE_STREAM=1 XSPROF_CUPTI_SOCKET=$dir/svc-cupti.sock \
	LD_LIBRARY_PATH="$dir/bin" timeout 60 "$dir/bin/xs_gpu_bound" input 200 >"$dir/both_member.out" 2>&1
wait "$rpid"
as_member curl -s -m 10 --unix-socket "$dir/api.sock" -w '\n%{http_code}' \
	"http://x/v1/profile?since_s=8&format=gpu-report" >"$dir/member2.out" 2>&1
sctl report --since 8s -o "$dir/both.gpu.json" 2>>"$dir/winr.err"
if $py - "$dir" <<'PYEOF'
import json, sys
d = sys.argv[1]
truth = {l.split()[0]: int(l.split()[1]) for l in open(f"{d}/both_member.out") if len(l.split()) == 2}
body, _, code = open(f"{d}/member2.out").read().rpartition("\n")
bad = []
m = json.loads(body) if code == "200" else None
if not m or len(m["devices"]) != 1:
    bad.append(f"member: {code} {body[:200]}")
else:
    dev = m["devices"][0]
    for k in ("busy_ns", "idle_ns", "active_ns"):
        if abs(dev[k] - truth[k]) > 0.02 * truth[k]:
            bad.append(f"member: {k} {dev[k]} vs their workload's {truth[k]}")
    # Kernels that end as a slice closes arrive in the next: counted there, once.
    if dev["kernels"] != truth["kernels"]:
        bad.append(f"member: {dev['kernels']} kernels vs {truth['kernels']}")
    f = [f for f in m["findings"] if f["kind"] == "host_bound"]
    if not f or "xs_make_batch" not in f[0]["stack"]:
        bad.append(f"member: no host_bound at xs_make_batch: {[x['kind'] for x in m['findings']]}")
    print(f"     member: busy {dev['busy_ns']/1e6:.1f} ms idle {dev['idle_ns']/1e6:.1f} ms, {dev['kernels']} kernels (theirs: {truth['busy_ns']/1e6:.1f} / {truth['idle_ns']/1e6:.1f} ms, {truth['kernels']})")
a = json.load(open(f"{d}/both.gpu.json"))
if len(a["devices"]) != 1 or a["devices"][0]["kernels"] < 2 * truth["kernels"] \
        or a["devices"][0]["busy_ns"] > a["devices"][0]["active_ns"]:
    bad.append(f"root: {[(x['kernels'], x['busy_ns'], x['active_ns']) for x in a['devices']]}")
for b in bad:
    print("     " + b)
sys.exit(1 if bad else 0)
PYEOF
then
	pass "service: a member's report of the window is their own process's, root's has both users' work"
else
	fail "two users' GPU reports"
fi
code=$(curl -s -o "$dir/trace.out" -w '%{http_code}' --unix-socket "$dir/api.sock" \
	"http://x/v1/profile?format=json")
if [[ $code == 400 ]]; then
	pass "the window still refuses a Chrome trace (400)"
else
	fail "GET /v1/profile?format=json answered $code: $(head -c 200 "$dir/trace.out")"
fi
if sctl report -o "$dir/win.svg" 2>"$dir/ext.err"; then
	fail "report -o win.svg was accepted"
elif [[ $? == 2 ]] && grep -q ".gpu.json (JSON) or .gpu.txt" "$dir/ext.err"; then
	pass "report -o win.svg refused (exit 2): $(head -1 "$dir/ext.err")"
else
	fail "report -o win.svg: $(head -2 "$dir/ext.err")"
fi
if XSPROF_CUPTI_SOCKET=$dir/svc-cupti.sock timeout 120 "$ctl" --socket "$dir/api.sock" record \
	-F 999 -o "$dir/svc.gpu.json" -- "$work" input 20 >"$dir/svc.out" 2>"$dir/svc.err" &&
	$py - "$dir/svc.gpu.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
f = [f for f in r["findings"] if f["kind"] == "host_bound"]
sys.exit(0 if f and "xs_make_batch" in f[0]["stack"] else 1)
PYEOF
then
	pass "service: xsprofctl record -o X.gpu.json finds host_bound in xs_make_batch"
else
	fail "service recording: $(tail -3 "$dir/svc.err") $(tail -3 "$dir/svc.log")"
fi
if XSPROF_CUPTI_SOCKET=$dir/svc-cupti.sock timeout 120 "$ctl" --socket "$dir/api.sock" record \
	-F 999 -o "$dir/svc.gpu.txt" -- "$work" input 10 >/dev/null 2>"$dir/svct.err" &&
	head -1 "$dir/svc.gpu.txt" | grep -q "^xsprof GPU report" && grep -q host_bound "$dir/svc.gpu.txt"; then
	pass "service: xsprofctl record -o X.gpu.txt writes the text report"
else
	fail "service recording as text: $(tail -3 "$dir/svct.err") $(head -3 "$dir/svc.gpu.txt" 2>/dev/null)"
fi
kill "$svc" 2>/dev/null
wait "$svc" 2>/dev/null

# A bad --report value is refused before anything runs.
if "$xsprofd" -f --report=bogus -o "$dir/x.folded" -d 1 >"$dir/bad.out" 2>&1; then
	fail "--report=bogus was accepted"
elif grep -q "use cpu (the default), gpu or job" "$dir/bad.out"; then
	pass "--report=bogus refused: $(head -1 "$dir/bad.out")"
else
	fail "--report=bogus: $(head -2 "$dir/bad.out")"
fi
exit $((failures > 0))

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The flight recorder of a real xsprofd (daemon/service/flight.h), on the GPU test doubles:
# - slow step: xs_gpu_bound slowstep makes one step in 200 (an xsprof scope "step") five times
#   slower with a host function, 34 s in; a slow-step trigger writes a dump within 2 s of that
#   step's end that holds at least 30 s before it and the step whole (its 4 kernels, the slow
#   function's CPU stacks), and its manifest names the step;
# - hang: a cuStreamSynchronize that never returns trips hang,seconds=4 while it waits;
# - death: a process with GPU work killed by SIGKILL trips death;
# - hang on a range: a real nvtx3 program (xs_nvtx_phases open, through libxsprof_cupti.so's
#   NVTX injection) leaves a range "run" open: hang,seconds=3,range=run (added through
#   xsprofctl triggers) names it;
# - GPU idle: gpu-idle,percent=40,seconds=10 trips on an input-bound run, not on a
#   compute-bound one;
# - a manual dump (xsprofctl dump), listing and fetching (xsprofctl dumps, dump get), every
#   file of a bundle read by its reader (json, protoc-free pprof gunzip, folded);
# - retention: --dump-keep 3 keeps 3; a member sees only their own dumps;
# - no stall: root's status is answered in under 100 ms while a dump is written;
# - bad input: nonsense triggers and dump directories are refused with the reason, and a dump
#   that cannot be written (its directory gone) fails alone, the dumps kept before intact.
# Every check prints "ok" or "FAIL"; any FAIL makes the exit status 1. Needs root and BPF.
#
# Usage: tests/daemon/service/flight.sh BUILD_DIR     (ctest runs it as the test service_flight)
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
name=service_flight
. "$(dirname "$0")/private_daemon.sh"
bound=$build/tests/xs_gpu_bound
need "$bound" "$build/tests/libxsprof_cupti_fake.so" "$build/tests/libcuda_xsbound.so" \
	"$build/tests/xs_nvtx_phases" "$build/cupti_inject/libxsprof_cupti.so"
dumps=$dir/dumps
# The dumps on a small file system of their own: a full disk is a check below.
mkdir -p "$dumps"
mount -t tmpfs -o size=96m,mode=0750 xsprof-flight-test "$dumps" ||
	{ fail "cannot mount a tmpfs for the dumps"; exit 1; }
trap 'rc=$?; umount -l "$dumps" 2>/dev/null; (exit $rc); cleanup' EXIT

# api METHOD PATH [BODY]: the API on the Unix socket, as root.
api() {
	if [[ $# -gt 2 ]]; then
		curl -s -m 10 --unix-socket "$sock" -X "$1" -d "$3" "http://x$2"
	else
		curl -s -m 10 --unix-socket "$sock" -X "$1" "http://x$2"
	fi
}
# wait_dump KIND SECONDS: the name of the first dump of that trigger that is done, or "".
wait_dump() {
	local kind=$1 n
	for _ in $(seq $(($2 * 5))); do
		n=$(api GET /v1/dumps | $py -c "import json,sys
d=[x for x in json.load(sys.stdin) if x['trigger']=='$kind' and x['state'] in ('done','failed')]
print(d[-1]['name'] if d else '')" 2>/dev/null || true)
		[[ -n $n ]] && { echo "$n"; return; }
		sleep 0.2
	done
	echo ""
}

step "bad input is refused with the reason"
for bad in "slow-step,range=step" "gpu-idle,percent=140,seconds=10" "hang,seconds=-1" \
	"explode" "death,factor=2" "slow-step,range=step,factor=0.5"; do
	if out=$("$xsprofd" -f -d 1 --trigger "$bad" -o "$dir/x.folded" 2>&1); then
		fail "--trigger $bad was taken"
	else
		pass "--trigger $bad: $(echo "$out" | head -1 | cut -c1-110)"
	fi
done
touch "$dir/afile"
if out=$(timeout 20 "$xsprofd" --socket "$dir/b.sock" --cupti-socket "$dir/b-cupti.sock" \
	--socket-group nogroup --dump-dir "$dir/afile/dumps" 2>&1); then
	fail "a dump directory under a file was taken"
else
	echo "$out" | grep -q "dump directory $dir/afile/dumps cannot be made" &&
		pass "a dump directory that cannot be made: refused at start, said so" ||
		fail "no clear error: $(echo "$out" | tail -2)"
fi

step "start xsprofd with the triggers"
start_daemon --freq 199 --flight-seconds 60 --dump-keep 3 \
	--cuda-lib "$build/tests/libxsprof_cupti_fake.so" --cuda-lib "$build/tests/libcuda_xsbound.so" \
	--cuda-lib "$bound" \
	--trigger slow-step,range=step,factor=3 --trigger hang,seconds=4,before=20 \
	--trigger death,before=20
export XS_GPU_DOUBLE_STREAM=1
n=$(status_get "len(j['flight']['triggers'])")
[[ $n == 3 ]] && pass "3 triggers set" || fail "triggers: $n"

step "slow step: one step in 200 five times slower, 34 s in"
timeout 120 "$bound" slowstep 215 >"$dir/slow.out" 2>&1 &
pids+=($!)
# The member's dump while it runs (ownership, below): nobody runs as nobody with GPU work.
name_slow=$(wait_dump slow-step 90)
end_ns=$(awk '$1 == "slow_step_end_ns" { print $2 }' "$dir/slow.out")
if [[ -z $name_slow ]]; then
	fail "no slow-step dump within 90 s (slow step ended at ${end_ns:-never})"
else
	m=$dumps/$name_slow/manifest.json
	if $py - "$m" "$dumps/$name_slow" "${end_ns:-0}" <<'PY'; then
import json, sys, os
m = json.load(open(sys.argv[1]))
d = sys.argv[2]
end = int(sys.argv[3])
t = m["trigger"]
st = t.get("step", {})
late = (m["written_mono_ns"] - end) / 1e9
print("     written %.2f s after the step's end; step %s %.3f s, %.1f x median %.3f s" % (
    late, st.get("name"), st.get("seconds", 0), st.get("times_median", 0), st.get("median_s", 0)))
ok = 0 <= late < 2.0 and st.get("name") == "step" and st.get("times_median", 0) > 3
# The trace: the slow step's slice, its 4 kernels, the slow function's stacks, 30 s before.
tr = json.load(open(os.path.join(d, "trace.json")))
ev = tr["traceEvents"] if isinstance(tr, dict) else tr
# Ranges are async slices: a "b" and an "e" of one id.
begins = {e["id"]: e["ts"] for e in ev if e.get("ph") == "b" and e.get("name") == "step"}
steps = [(begins[e["id"]], e["ts"]) for e in ev
         if e.get("ph") == "e" and e.get("name") == "step" and e.get("id") in begins]
slow = max(steps, key=lambda s: s[1] - s[0]) if steps else None
first = min(e["ts"] for e in ev if e.get("ph") in ("X", "B"))
if slow:
    s0, s1 = slow
    kernels = [e for e in ev if e.get("ph") == "X" and e.get("name") == "xs_k_forward"
               and e["pid"] >= 0x7F000000 and s0 <= e["ts"] <= s1]
    slowfn = [e for e in ev if e.get("ph") == "B" and e.get("name") == "xs_slow_augment"
              and s0 <= e["ts"] <= s1]
    print("     slow step %.3f s; %d kernels in it; %d xs_slow_augment slices; %.1f s before it" % (
        (s1 - s0) / 1e6, len(kernels), len(slowfn), (s0 - first) / 1e6))
    ok = ok and len(kernels) == 4 and len(slowfn) > 0 and s0 - first >= 30e6
else:
    print("     no step slice in the trace")
    ok = False
folded = open(os.path.join(d, "stacks.folded")).read()
ok = ok and "xs_slow_augment" in folded and "[gpu] xs_k_forward" in folded
sys.exit(0 if ok else 1)
PY
		pass "slow-step dump $name_slow: within 2 s, the step whole, 30 s before it, named"
	else
		fail "slow-step dump $name_slow (see above)"
	fi
fi
wait "${pids[-1]}" 2>/dev/null || true

step "a dump by hand, listed and fetched"
out=$(ctl dump --before 20 2>&1) && pass "xsprofctl dump: $(echo "$out" | head -1)" ||
	fail "xsprofctl dump: $out"
manual=$(wait_dump manual 30)
ctl dumps >"$dir/list.txt" 2>&1 || true
ctl dump get "$manual" -o "$dir/got" >"$dir/get.txt" 2>&1 || true
if [[ -n $manual ]] && grep -q "^$manual .* manual .* done" "$dir/list.txt" &&
	cmp "$dir/got/trace.json" "$dumps/$manual/trace.json" &&
	gzip -t "$dir/got/profile.pb.gz" && $py -m json.tool "$dir/got/gpu-report.json" >/dev/null; then
	pass "xsprofctl dumps lists $manual; dump get fetches its files whole"
else
	fail "manual dump '$manual': $(head -3 "$dir/list.txt") / $(tail -2 "$dir/get.txt")"
fi

step "hang: a synchronize that never returns"
"$bound" hang 40 >"$dir/hang.out" 2>&1 &
hang_pid=$!
pids+=($hang_pid)
name_hang=$(wait_dump hang 40)
if [[ -n $name_hang ]] && $py - "$dumps/$name_hang/manifest.json" <<'PY'; then
import json, sys
m = json.load(open(sys.argv[1]))
c = m["trigger"].get("call", {})
print("     %s waited %.1f s" % (c.get("api"), c.get("waited_s", 0)))
sys.exit(0 if c.get("api", "").startswith("cuStreamSynchronize") and c.get("waited_s", 0) >= 4 else 1)
PY
	pass "hang dump $name_hang names the call"
else
	fail "no hang dump (${name_hang:-none})"
fi

step "death: the hung process killed by SIGKILL"
kill -KILL "$hang_pid" 2>/dev/null || true
name_death=$(wait_dump death 30)
if [[ -n $name_death ]] && grep -q '"signal_name":"KILL"\|"signal_name": *"KILL"' "$dumps/$name_death/manifest.json"; then
	pass "death dump $name_death: SIGKILL"
else
	fail "no death dump (${name_death:-none})"
fi

step "hang on an NVTX range left open: a real nvtx3 program, through the injection library"
out=$(ctl triggers add hang,seconds=3,range=run,before=20 2>&1) || fail "triggers add: $out"
before_hangs=$(api GET /v1/dumps | $py -c 'import json,sys; print(" ".join(d["name"] for d in json.load(sys.stdin) if d["trigger"] == "hang"))')
NVTX_INJECTION64_PATH=$build/cupti_inject/libxsprof_cupti.so "$build/tests/xs_nvtx_phases" 1 open \
	>"$dir/open.out" 2>&1 &
open_pid=$!
pids+=($open_pid)
name_open=
for _ in $(seq 150); do
	name_open=$(api GET /v1/dumps | $py -c "import json,sys
old = set('$before_hangs'.split())
d = [x['name'] for x in json.load(sys.stdin) if x['trigger'] == 'hang' and x['state'] == 'done' and x['name'] not in old]
print(d[0] if d else '')" 2>/dev/null || true)
	[[ -n $name_open ]] && break
	sleep 0.2
done
if [[ -n $name_open ]] && $py - "$dumps/$name_open/manifest.json" <<'PY'; then
import json, sys
m = json.load(open(sys.argv[1]))
r = m["trigger"].get("range", {})
print("     range %s open %.1f s (pid %s, %s)" % (r.get("name"), r.get("open_s", 0),
      m["trigger"].get("pid"), m["trigger"].get("comm")))
sys.exit(0 if r.get("name") == "run" and r.get("open_s", 0) >= 3 else 1)
PY
	pass "hang,range=run: dump $name_open names the range left open"
else
	fail "no dump for the open NVTX range (${name_open:-none}): $(tail -3 "$dir/open.out")"
fi
kill "$open_pid" 2>/dev/null || true

step "GPU idle: not on a compute-bound run, on an input-bound one"
out=$(ctl triggers add gpu-idle,percent=40,seconds=10,before=20 2>&1) &&
	pass "xsprofctl triggers add: $out" || fail "xsprofctl triggers add: $out"
# The daemon's refusal, not any failure (a member who cannot run xsprofctl refuses nothing).
# xsprofctl as the member sees it: a copy in the private directory (0755), since the build
# may sit below a folder only root can enter (a checkout in mktemp -d's 0700 directory).
member_ctl=$dir/xsprofctl
cp "$ctl" "$member_ctl" && chmod 0755 "$member_ctl"
out=$(runuser -u nobody -- "$member_ctl" -s "$sock" --timeout 10 triggers add death 2>&1) && st=0 || st=$?
[[ $st != 0 && $out == *"only root sets triggers"* ]] &&
	pass "a member cannot add one: ${out:0:80}" || fail "a member's trigger: $out"
timeout 120 "$bound" compute 400 >"$dir/compute.out" 2>&1 || true
sleep 11 # its last slice closes
[[ -z $(wait_dump gpu-idle 1) ]] && pass "compute-bound: no gpu-idle dump" ||
	fail "a gpu-idle dump on a compute-bound run"
timeout 120 "$bound" input 800 >"$dir/input.out" 2>&1 &
pids+=($!)
name_idle=$(wait_dump gpu-idle 60)
if [[ -n $name_idle ]]; then
	pass "input-bound: gpu-idle dump $name_idle ($(grep -o '"idle_percent":[0-9.]*' "$dumps/$name_idle/manifest.json"))"
else
	fail "no gpu-idle dump on an input-bound run"
fi

# The input-bound run is not needed past its dump (the no-stall check below times the dump,
# not a slice of a busy GPU process closing on a loaded machine).
pkill -KILL -f 'xs_gpu_bound input' 2>/dev/null || true

step "retention and ownership"
n=$(find "$dumps" -mindepth 1 -maxdepth 1 -type d ! -name '.*' | wc -l)
[[ $n -le 3 ]] && pass "--dump-keep 3: $n bundles on disk" || fail "$n bundles on disk"
if out=$(runuser -u nobody -- "$member_ctl" -s "$sock" --timeout 10 --json dumps 2>&1); then
	[[ $(echo "$out" | $py -c 'import json,sys; print(len(json.load(sys.stdin)))') == 0 ]] &&
		pass "a member sees none of root's dumps" || fail "a member sees: $out"
else
	fail "a member's dumps: $out"
fi
last=$(ctl --json dumps | $py -c 'import json,sys; print([d["name"] for d in json.load(sys.stdin) if d["state"]=="done"][0])')
code=$(runuser -u nobody -- curl -s -o /dev/null -w '%{http_code}' --unix-socket "$sock" \
	"http://x/v1/dumps/$last/trace.json" || true)
[[ $code == 404 ]] && pass "a member cannot fetch root's dump (404)" || fail "member fetch: $code"

step "no stall while a dump is written; a dump that cannot be written fails alone"
api POST /v1/dumps '{"before_s":60}' >/dev/null
worst=0
for _ in $(seq 20); do
	t=$(curl -s -o /dev/null -w '%{time_total}' --unix-socket "$sock" http://x/v1/status)
	worst=$($py -c "print(max($worst, $t))")
	sleep 0.05
done
$py -c "import sys; sys.exit(0 if $worst < 0.1 else 1)" &&
	pass "status answered within ${worst} s while dumping" || fail "status took $worst s"
kept=$(find "$dumps" -mindepth 1 -maxdepth 1 -type d ! -name '.*' | sort)
dd if=/dev/zero of="$dumps/.filler" bs=1M 2>/dev/null || true # the disk is full
api POST /v1/dumps '{"before_s":20}' >/dev/null
st=
for _ in $(seq 50); do
	st=$(api GET /v1/dumps | $py -c 'import json,sys; d=json.load(sys.stdin)[0]; print(d["state"], d.get("error",""))')
	[[ $st == done* || $st == failed* ]] && break
	sleep 0.2
done
rm -f "$dumps/.filler"
[[ $st == failed* ]] && pass "a full disk: the dump failed, said why: ${st:7:90}" ||
	fail "full-disk dump state: $st"
[[ $(find "$dumps" -mindepth 1 -maxdepth 1 ! -name '.filler' | sort) == "$kept" ]] &&
	pass "the dumps kept before are intact, nothing of the failed one left" ||
	fail "the kept dumps changed: $(ls -a "$dumps")"
n=$(curl -s --unix-socket "$sock" http://x/metrics | grep -c '^xsprof_flight_dumps_total{trigger=' || true)
[[ $n == 5 ]] && pass "/metrics counts dumps by trigger (5 series)" || fail "/metrics: $n series"

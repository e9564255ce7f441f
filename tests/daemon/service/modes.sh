#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Off-CPU and wall time through the service (issue 14): `xsprofctl record --mode offcpu|wall`
# against a real xsprofd on private socket paths. The wall recording of a thread that computes,
# sleeps, waits on a pipe and on a mutex gives each part its measured share within 2 points; the
# off-CPU recording holds the three waits, not the computing; a wall recording of CUDA calls
# that wait for the GPU shows them as [wait gpu] with the GPU work that ran meanwhile; and
# --group-by puts the process name above each stack.
# Every check prints "ok" or "FAIL"; any FAIL makes the exit status 1. Needs root and BTF.
#
# Usage: tests/daemon/service/modes.sh BUILD_DIR      (ctest runs it as service_modes)
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
name=service_modes
wallsplit=$build/tests/xs_wallsplit
gpuwait=$build/tests/xs_gpu_wait
# shellcheck source=tests/daemon/service/private_daemon.sh
. "$(dirname "$0")/private_daemon.sh"
need "$wallsplit" "$gpuwait"
on_failure() {
	if [[ -e $dir/gpu.folded ]]; then echo "--- gpu.folded"; head -c 3000 "$dir/gpu.folded"; fi
}

# shares FOLDED TRUTH MODE: per part, its share of the main thread's profile against the
# measured one; prints "ok"/"FAIL" lines (2 points allowed).
shares() {
	$py - "$1" "$2" "$3" <<'PY'
import sys
folded, truth, mode = sys.argv[1:]
parts = ["compute_fn", "sleep_fn", "pipe_fn", "mutex_fn"]
t = dict(l.split() for l in open(truth) if l.strip())
t = {k: float(v) for k, v in t.items()}
got = dict.fromkeys(parts, 0.0)
total = lost = 0.0
for line in open(folded):
    if line.startswith("#") or not line.strip():
        continue
    stack, w = line.rsplit(" ", 1)
    fr = stack.split(";")
    if fr[0] != "xs_wallsplit" or "helper_main" in fr:
        continue
    if "main" not in fr:
        lost += float(w)  # the main thread's, walked short of main (or the helper's, short)
        continue
    total += float(w)
    for p in parts:
        if p in fr:
            got[p] += float(w)
bad = 0
if mode == "wall":
    want = {p: 100 * t[p] / t["total"] for p in parts}
    print("%s   wall: main thread %.0f us profiled, %.0f us measured (%.0f us in stacks short of main)" %
          ("ok" if 0.9 * t["total"] < total < 1.2 * t["total"] else "FAIL", total, t["total"], lost))
    bad += not (0.9 * t["total"] < total < 1.2 * t["total"])
else:
    waits = sum(t[p] for p in parts[1:])
    want = {p: (100 * t[p] / waits if p != "compute_fn" else 0) for p in parts}
# Off-CPU: each wait's share of the waits (computing is off the CPU only when preempted).
base = total if mode == "wall" else sum(got[p] for p in parts[1:])
for p in parts:
    g = 100 * got[p] / base if base else 0
    if mode != "wall" and p == "compute_fn":
        # Off the CPU only while preempted: as long as it waited on a run queue, as it measured
        # (its wall time less its CPU time also holds what the hypervisor stole from the
        # whole VM, which is no switch: 52 ms of 406 once on a busy VM).
        pre = t["compute_fn_waited"]
        ok = abs(got[p] - pre) <= 0.1 * t[p] + 2000
        bad += not ok
        print("%s %s %-10s %.0f us off the CPU of %.0f (waited on a run queue %.0f, stolen %.0f)" %
              ("ok  " if ok else "FAIL", mode, p, got[p], t[p], pre,
               max(0, t[p] - t["compute_fn_cpu"] - pre)))
        continue
    ok = abs(g - want[p]) <= 2
    bad += not ok
    print("%s %s %-10s %5.1f%% profiled, %5.1f%% measured" % ("ok  " if ok else "FAIL", mode, p, g, want[p]))
sys.exit(1 if bad else 0)
PY
}

step "start xsprofd on private paths"
start_daemon --max-record 3600

step "record --mode wall: each part its measured share of the wall time"
# One run in twenty or so on a busy VM, compute_fn's samples came up 15% short (17.0% of the
# wall time profiled, 19.9% measured; nothing stolen or preempted, the waits exact): the run is
# then repeated once, its first figures printed, and the second must hold.
for try in 1 2; do
	ctl -q record --mode wall -o "$dir/wall.folded" -- "$wallsplit" 20 >"$dir/wall.truth" ||
		fail "record --mode wall failed"
	out=$(shares "$dir/wall.folded" "$dir/wall.truth" wall) && st=0 || st=$?
	((st == 0 || try == 2)) && break
	echo "first run off, repeated once:"
	echo "$out" | sed 's/^/    /'
	# Where the samples went: lost to a full ring buffer, the loop stalled, holds lost.
	echo "    recordings (id, lost, stalled s): $(status_get '[(r.get("id"), r.get("lost_ring_buffer_full"), r.get("daemon_stalled_s")) for r in j.get("recordings", [])]')"
	echo "    unwind holds: $(status_get '{k: v for k, v in j.get("unwind", {}).items() if k.startswith("held")}')"
done
grep -q "weights in us" "$dir/wall.folded" && pass "the wall profile is in us" ||
	fail "the wall profile does not say us: $(head -1 "$dir/wall.folded")"
((st == 0)) && pass "wall shares within 2 points" || fail "wall shares off"
echo "$out"

step "record --mode offcpu: the waits, not the computing"
ctl -q record --mode offcpu -o "$dir/off.folded" -- "$wallsplit" 20 >"$dir/off.truth" ||
	fail "record --mode offcpu failed"
out=$(shares "$dir/off.folded" "$dir/off.truth" offcpu) &&
	pass "off-CPU shares of the waits within 2 points" || fail "off-CPU shares off"
echo "$out"

step "record --mode wall of CUDA calls that wait for the GPU"
ctl -q record --mode wall -o "$dir/gpu.folded" -- "$gpuwait" 4 >"$dir/gpu.truth" ||
	fail "record --mode wall -- xs_gpu_wait failed"
w=$( { grep -E ';xs_wait_stream;cuStreamSynchronize;\[wait gpu\];\[gpu\] xs_k_stream ' \
	"$dir/gpu.folded" || true; } | awk '{s += $NF} END {print s + 0}')
[[ $w == 40000 ]] && pass "[wait gpu] under cuStreamSynchronize holds its kernels' 40000 us" ||
	fail "[wait gpu];[gpu] xs_k_stream weighs $w us, not 40000"
w=$( { grep -E ';xs_wait_stream;cuStreamSynchronize;\[wait gpu\]' "$dir/gpu.folded" || true; } |
	awk '{s += $NF} END {print s + 0}')
want=$(awk '/^xs_wait_stream/ {print $2}' "$dir/gpu.truth")
$py -c "import sys; sys.exit(0 if abs($w - $want) <= 0.05 * $want else 1)" &&
	pass "the stream waits weigh $w us, measured $want" ||
	fail "the stream waits weigh $w us, measured $want"

step "record --group-by comm: the process name above each stack"
ctl -q record --mode wall --group-by comm -o "$dir/group.folded" -- "$wallsplit" 2 >/dev/null ||
	fail "record --group-by comm failed"
n=$( { grep -vE '^#' "$dir/group.folded" || true; } | wc -l)
bad=$( { grep -vE '^#' "$dir/group.folded" || true; } | { grep -vE '^xs_wallsplit;' || true; } | wc -l)
((n > 0 && bad == 0)) && pass "all $n stacks under xs_wallsplit" ||
	fail "$bad of $n stacks not under the group xs_wallsplit: $(head -3 "$dir/group.folded")"
rc=0
ctl record --group-by pod -o "$dir/x.folded" -- true 2>"$dir/err" || rc=$?
[[ $rc == 2 ]] && pass "--group-by pod refused (exit 2)" || fail "--group-by pod: exit $rc"

step "a bad mode is refused"
rc=0
ctl record --mode idle -o "$dir/x.folded" -- true 2>"$dir/err" || rc=$?
[[ $rc == 2 ]] && grep -q "cpu, offcpu or wall" "$dir/err" && pass "--mode idle refused (exit 2)" ||
	fail "--mode idle: exit $rc: $(cat "$dir/err")"
rc=0
out=$(printf 'POST /v1/recordings HTTP/1.0\r\nContent-Length: 33\r\n\r\n{"duration_s": 1, "mode": "idle"}' |
	$py -c "
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect('$sock'); s.sendall(sys.stdin.buffer.read())
print(s.recv(4096).decode(errors='replace').split('\r\n')[0])") || true
[[ $out == *400* ]] && pass "the API refuses mode idle (400)" || fail "the API answered: $out"

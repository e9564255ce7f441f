#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Service sessions do what one-shot runs do (issue 9), against a real xsprofd on private socket
# paths: `xsprofctl record -- CMD` follows CMD's descendants in the kernel and exits with CMD's
# status (--no-children opts out); CUDA launches (xsprof:launch of a fake injection library)
# are joined to kernel records sent on the CUPTI socket, giving the same [gpu] leaves and trace
# flows as `xsprofd -f`; the rolling window joins them too and empties its launch store with
# each slice; bad pid lists and unwritable outputs are refused before anything starts; job and
# rank (record --job/--rank, the scrape's job=&rank=) keep only the processes they name.
# Every check prints "ok" or "FAIL"; any FAIL makes the exit status 1. Needs root and BTF.
#
# Usage: tests/daemon/service/sessions.sh BUILD_DIR      (ctest runs it as service_sessions)
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
name=service_sessions
split=$build/tests/xs_split
gpu=$build/tests/xs_usdt_gpu
fakelib=$build/tests/libxsprof_cupti_fake.so
# shellcheck source=tests/daemon/service/private_daemon.sh
. "$(dirname "$0")/private_daemon.sh"
need "$split" "$gpu" "$fakelib"

# gpu_lines FILE: the [gpu] leaves, stack and weight, sorted.
# The [gpu] leaves with their weights, from main down, summed per stack: the process name and
# the frames above main may differ between two runs (a first launch can come before the
# unwind tables of libc are loaded; the name of a process seen before its exec), the join may
# not.
gpu_lines() {
	{ grep ';\[gpu\] ' "$1" || true; } | sed -n 's/^.*;main;/main;/p' |
		awk '{ w = $NF; $NF = ""; sum[$0] += w } END { for (k in sum) print k sum[k] }' | sort
}

step "start xsprofd on private paths (CUDA probes on the fake injection library for the window; 999 Hz so 1 ms kernels weigh a sample)"
start_daemon --max-record 3600 --cuda-lib "$fakelib" --freq 999

step "record -- CMD: descendants followed, CMD's exit status"
rc=0
ctl -q record -o "$dir/tree.folded" -- sh -c "$split 1000 1000 2 1 >/dev/null; exit 7" || rc=$?
[[ $rc == 7 ]] && pass "exit status 7 passed through" || fail "exit status $rc, not 7"
n=$(weight "$dir/tree.folded" '^xs_split;')
# 2 s of one busy thread at 99 Hz is ~200 samples: a loaded machine still gives far more than 20.
((n >= 20)) && pass "the child xs_split was sampled ($n samples)" ||
	fail "the child xs_split has $n samples: descendants not followed"
rc=0
ctl -q record --no-children -o "$dir/nochild.folded" -- sh -c "$split 1000 1000 1 1 >/dev/null; exit 3" || rc=$?
n=$(weight "$dir/nochild.folded" '^xs_split;')
[[ $rc == 3 && $n == 0 ]] && pass "--no-children: the shell only (exit 3, 0 child samples)" ||
	fail "--no-children: exit $rc, $n child samples"
rc=0
ctl -q record -o "$dir/none.folded" -- "$dir/no-such-command" 2>/dev/null || rc=$?
[[ $rc == 127 ]] && pass "a command not found exits 127" || fail "command not found exited $rc"

step "a recording across the window's slice: its frames keep their names"
# The window names and forgets the processes of each 10 s slice; a recording still running names
# its own at its end, by the images it sampled: 12 s cross one slice boundary at least.
ctl -q record -o "$dir/long.folded" -- "$split" 1000 1000 12 1 >/dev/null || fail "record -- xs_split 12 s failed"
n=$(weight "$dir/long.folded" '^xs_split;')
u=$(weight "$dir/long.folded" '^xs_split;.*\[unknown\]')
((n >= 100 && u * 20 <= n)) && pass "$((n - u)) of $n samples named across the slice" ||
	fail "$u of $n samples of xs_split carry [unknown] frames after a slice boundary"

step "refused before anything starts"
before=$(status_get 'len(j["recordings"])')
rc=0; ctl record -p 1,,2 -o "$dir/x.folded" 2>"$dir/err" || rc=$?
[[ $rc == 2 ]] && grep -q "empty item" "$dir/err" && pass "-p 1,,2 refused (exit 2)" ||
	fail "-p 1,,2: exit $rc: $(cat "$dir/err")"
rc=0; ctl record --duration 1 -o "$dir/no-such-dir/x.folded" 2>"$dir/err" || rc=$?
after=$(status_get 'len(j["recordings"])')
[[ $rc == 2 && $before == "$after" ]] && pass "unwritable -o refused, no recording started" ||
	fail "unwritable -o: exit $rc, recordings $before -> $after: $(cat "$dir/err")"

step "GPU: a service recording joins like xsprofd -f"
ctl -q record --weight us --gpu-mode merged -o "$dir/svc.folded" -- "$gpu" >/dev/null ||
	fail "record -- xs_usdt_gpu failed"
a=$(weight "$dir/svc.folded" 'xs_gpu_alpha_site;\[gpu\] xs_kernel_alpha ')
b=$(weight "$dir/svc.folded" 'xs_gpu_beta_site;\[gpu\] xs_kernel_beta ')
[[ $a == 7000 && $b == 10000 ]] && pass "[gpu] leaves under their launching frames (7000 + 10000 us)" ||
	fail "[gpu] leaves: alpha $a us (want 7000), beta $b us (want 10000)"
"$xsprofd" -f --weight us --gpu-mode merged --cupti-socket "$dir/one.sock" -o "$dir/one.folded" \
	-o "$dir/one.json" -- env XSPROF_CUPTI_SOCKET="$dir/one.sock" "$gpu" >/dev/null 2>&1 ||
	fail "xsprofd -f -- xs_usdt_gpu failed"
if [[ -n $(gpu_lines "$dir/one.folded") && "$(gpu_lines "$dir/svc.folded")" == "$(gpu_lines "$dir/one.folded")" ]]; then
	pass "the same [gpu] lines as xsprofd -f"
else
	fail "[gpu] lines differ: service:"$'\n'"$(gpu_lines "$dir/svc.folded")"$'\n'"one-shot:"$'\n'"$(gpu_lines "$dir/one.folded")"
fi
ctl -q record -o "$dir/svc.json" -- "$gpu" >/dev/null || fail "record -o .json failed"
flows() { $py -c "import json,sys; t=json.load(open(sys.argv[1])); e=t['traceEvents'] if isinstance(t,dict) else t; print(sum(1 for x in e if x.get('ph') in ('s','f')))" "$1"; }
fs=$(flows "$dir/svc.json"); fo=$(flows "$dir/one.json")
[[ $fs -ge 24 && $fs == "$fo" ]] && pass "Chrome trace: $fs flow events, as xsprofd -f" ||
	fail "Chrome trace flows: service $fs, one-shot $fo (want 24 each: 12 launches)"
m=$(status_get 'j["correlation"]["auto"]["matched"]')
((m >= 24)) && pass "status: $m matched by auto" || fail "status: auto matched $m (want >= 24)"

step "the rolling window joins launches to GPU work, and empties its launch store each slice"
# What is checked here is the join: each kernel under the launch stack it came from (the
# frames between the process and the leaf), not under "[no launch stack]". The names of those
# frames are not: the window names a process's launch stacks when its slice closes, and a
# process seen only through --cuda-lib probes is not held at its first launch, so on a busy
# machine they can come out [unknown] (a known gap, in the closing note of this change).
"$gpu" 1000 >/dev/null
ctl -q flamegraph --since 5m --gpu-mode gpu -o "$dir/win.folded"
joined=$(grep -E '^xs_usdt_gpu;[^[].*;\[gpu\] xs_kernel_alpha |^xs_usdt_gpu;(\[unknown\];)+\[gpu\] xs_kernel_alpha ' \
	"$dir/win.folded" | grep -vc '\[no launch stack\]' || true)
((joined > 0)) && pass "window: [gpu] xs_kernel_alpha joined under its launch stack" ||
	fail "window: no joined [gpu] leaf:"$'\n'"$(cat "$dir/win.folded")"
grep -q 'xs_gpu_alpha_site;\[gpu\] xs_kernel_alpha' "$dir/win.folded" ||
	echo "note: the window's launch frames were not named on this run"
held=$(status_get 'j["cuda_probes"]["launches_in_slice"]')
[[ $held == 0 ]] && pass "launch store emptied with the slice" || fail "launch store holds $held after the slice"

step "attach: a lasting profile of a process tree, fetched any time, like one-shot's [gpu] leaves"
"$split" 1000 1000 30 1 >/dev/null &
sp=$!
ctl -q attach "$sp" --freq 499 || fail "attach $sp --freq 499 failed"
rc=0; ctl attach "$sp" 2>/dev/null || rc=$?
[[ $rc == 1 ]] && pass "attaching it twice is refused" || fail "attaching twice exited $rc"
# A process attached before it launches (6 s: loading a sampler takes seconds on a busy VM).
"$gpu" 1000 6000 >/dev/null &
gp=$!
# Attach to the program, not to the shell's fork before its exec (slow on a busy VM).
for _ in $(seq 100); do [[ $(readlink /proc/$gp/exe) == "$gpu" ]] && break; sleep 0.05; done
ctl -q attach "$gp" --freq 1000 || fail "attach $gp failed"
freq=$(status_get '[a["freq_hz"] for a in j["attachments"] if a["pid"] == '"$sp"'][0]')
[[ $freq == 499 ]] && pass "status lists the attachment at 499 Hz" || fail "status: freq $freq"
sleep 3
ctl -q flamegraph --pid "$sp" -o "$dir/att.folded" || fail "flamegraph --pid $sp failed"
n=$(weight "$dir/att.folded" "^xs_split;")
others=$(weight "$dir/att.folded" '^(xs_usdt_gpu|sh|python)')
# ~3 s of one thread at 499 Hz is ~1500 samples; at the window's 999 Hz it would still be
# ~3000, at 99 Hz ~300: only the attachment's own frequency gives 400..4000 with margin.
((n >= 400 && others == 0)) && pass "flamegraph --pid: xs_split alone, $n samples at 499 Hz" ||
	fail "flamegraph --pid: $n xs_split samples, $others of other processes"
ctl -q flamegraph --pid "$sp" -o "$dir/att.svg" && grep -q '<svg' "$dir/att.svg" &&
	pass "flamegraph --pid writes an SVG" || fail "flamegraph --pid -o .svg"
ctl -q flamegraph --pid "$sp" -o "$dir/att.pb.gz" && [[ $(head -c2 "$dir/att.pb.gz" | od -An -tx1) == " 1f 8b" ]] &&
	pass "flamegraph --pid writes pprof" || fail "flamegraph --pid -o .pb.gz"
wait "$gp" || true
ctl -q flamegraph --pid "$gp" --gpu-mode merged --weight us -o "$dir/attgpu.folded" ||
	fail "flamegraph --pid of the exited CUDA process failed"
if [[ -n $(gpu_lines "$dir/attgpu.folded") && "$(gpu_lines "$dir/attgpu.folded")" == "$(gpu_lines "$dir/one.folded")" ]]; then
	pass "the exited attachment's [gpu] lines (--weight us) are xsprofd -f's"
else
	fail "attachment [gpu] lines differ: attachment:"$'\n'"$(cat "$dir/attgpu.folded")"$'\n'"one-shot:"$'\n'"$(gpu_lines "$dir/one.folded")"
fi
rc=0; ctl flamegraph --pid "$gp" -o "$dir/again.folded" 2>/dev/null || rc=$?
[[ $rc == 1 ]] && pass "an ended attachment goes once fetched" || fail "second fetch exited $rc"
ctl -q detach "$sp" || fail "detach failed"
left=$(status_get 'len(j["attachments"])')
[[ $left == 0 ]] && pass "detach frees it: no attachment left" || fail "$left attachments left"
rc=0; ctl flamegraph --pid "$sp" -o "$dir/gone.folded" 2>/dev/null || rc=$?
[[ $rc == 1 ]] && pass "flamegraph --pid after detach: not attached" || fail "after detach exited $rc"
kill "$sp" 2>/dev/null; wait "$sp" 2>/dev/null || true

step "xsprofctl top: the window's top functions"
ctl top --since 5m --number 5 --gpu-mode gpu >"$dir/top.txt" || fail "xsprofctl top failed"
# The GPU view of the window: the kernels are the leaves, so they lead by self share.
if grep -q 'Top 5 by self' "$dir/top.txt" && grep -q '\[gpu\] xs_kernel_beta' "$dir/top.txt" &&
	[[ $(grep -c '%' "$dir/top.txt") -le 10 ]]; then
	pass "top lists the kernels, 5 a table"
else
	fail "top:"$'\n'"$(cat "$dir/top.txt")"
fi
st=0
ctl top --number 0 >/dev/null 2>&1 || st=$?
[[ $st == 2 ]] && pass "top --number 0 is a usage error" || fail "top --number 0 exited $st"

step "xsprofctl top, live under a pseudo-terminal: redrawn every second, q quits"
"$split" 3000 3000 300 1 >/dev/null 2>&1 &
live_split=$!
# script gives top a terminal; q arrives after about three refreshes.
st=0
(sleep 3.5; printf q) | TERM=xterm timeout 30 script -qfec \
	"stty rows 40 cols 100; $ctl --timeout 20 -s $sock top --interval 0.5" /dev/null \
	>"$dir/live.txt" 2>&1 || st=$?
kill "$live_split" 2>/dev/null; wait "$live_split" 2>/dev/null || true
frames=$(grep -o 'xsprof top [0-9:]*: the last 10 s; q quits' "$dir/live.txt" | wc -l)
[[ $st == 0 ]] && pass "q quit it (exit 0)" || fail "live top exited $st"
((frames >= 3)) && pass "$frames screens drawn" || fail "$frames screens: $(head -c 400 "$dir/live.txt")"
grep -q 'samples/s' "$dir/live.txt" && grep -q 'burn' "$dir/live.txt" &&
	pass "each with the sampling rate and the workload's hottest function" ||
	fail "live top lacks the rate or the workload: $(tail -c 600 "$dir/live.txt")"
grep -q $'\e\[?1049l' "$dir/live.txt" && pass "the terminal's own screen given back" ||
	fail "the alternate screen was not left"
# A window profile says the seconds its data covers (whole slices: at least what was asked,
# at most a slice more), which top's GPU busy share is taken over.
span=$(curl -s -m 20 -D - -o /dev/null --unix-socket "$sock" "http://x/v1/profile?since_s=10&format=folded" |
	tr -d '\r' | awk -F': ' 'tolower($1) == "x-xsprof-span-seconds" {print $2}')
$py -c "import sys; sys.exit(0 if 0 < float('${span:-0}') <= 21 else 1)" &&
	pass "a window profile covers $span s, said in X-Xsprof-Span-Seconds" ||
	fail "X-Xsprof-Span-Seconds: '${span}'"
v=$(status_get 'j["store"]["merged_slices"]')
((v >= 2)) && pass "its queries did not multiply the window's slices ($v joined)" ||
	fail "only $v slices joined"

step "a recording grouped by NVTX range: record -- CMD loads the NVTX injection"
phases=$build/tests/xs_nvtx_phases
if [[ -x $phases && -f $build/cupti_inject/libxsprof_cupti.so ]]; then
	XSPROF_CUPTI_LIB=$build/cupti_inject/libxsprof_cupti.so ctl -q record --freq 999 \
		--group-by range -o "$dir/ranges.folded" -- "$phases" 2 >"$dir/ranges.out" ||
		fail "record --group-by range -- xs_nvtx_phases failed"
	# Each phase's share of the samples against its own CPU time (the program prints both).
	if $py - "$dir/ranges.folded" "$dir/ranges.out" <<'EOF'; then
import sys
roots, total, truth, cpu = {}, 0, {}, 1
for line in open(sys.argv[1]):
    if line.startswith("#") or ";[gpu] " in line:
        continue
    stack, w = line.rsplit(" ", 1)
    root = stack.split(";", 1)[0]
    roots[root] = roots.get(root, 0) + int(w)
    total += int(w)
for l in open(sys.argv[2]):
    f = l.split()
    if f and f[0] == "phase":
        truth[f[1]] = int(f[2])
    elif f and f[0] == "total":
        cpu = int(f[1])
got = {k: 100.0 * roots.get(k, 0) / max(total, 1) for k in ("data", "forward", "backward")}
want = {k: 100.0 * truth[k] / cpu for k in got}
print(" ".join("%s %.1f%% (its CPU time %.1f%%)" % (k, got[k], want[k]) for k in got))
sys.exit(1 if total < 500 or any(abs(got[k] - want[k]) > 3 for k in got) else 0)
EOF
		pass "each phase's share within 3 points of its CPU time"
	else
		fail "phase shares off: $(head -c 600 "$dir/ranges.folded")"
	fi
	grep -qE '^forward;xs_nvtx_phases;.*xs_forward;\[gpu\] ' "$dir/ranges.folded" &&
		pass "the GPU work launched in forward is under it" ||
		fail "no [gpu] leaf under forward: $(grep '\[gpu\]' "$dir/ranges.folded" | head -3)"
else
	fail "xs_nvtx_phases or libxsprof_cupti.so was not built (CUDA toolkit)"
fi
step "an attachment grouped by NVTX range: attach --group-by range, flamegraph --pid --group-by range"
# shares FOLDED OUT SPECS...: each root's share against its phases' CPU share (2 points).
shares() {
	$py - "$@" <<'EOF'
import sys
roots, total, truth, cpu = {}, 0, {}, 1
for line in open(sys.argv[1]):
    if line.startswith("#") or ";[gpu] " in line:
        continue
    stack, w = line.rsplit(" ", 1)
    root = stack.split(";", 1)[0]
    roots[root] = roots.get(root, 0) + int(w)
    total += int(w)
for l in open(sys.argv[2]):
    f = l.split()
    if f and f[0] == "phase":
        truth[f[1]] = int(f[2])
    elif f and f[0] == "total":
        cpu = int(f[1])
bad = 0
for spec in sys.argv[3:]:
    root, phases = spec.split("=")
    want = 100.0 * sum(truth[p] for p in phases.split("+")) / cpu
    got = 100.0 * roots.get(root, 0) / max(total, 1)
    bad += abs(got - want) > 2.0
    print("%s %s %.1f%% of %d samples (its CPU time %.1f%%)" %
          ("ok  " if abs(got - want) <= 2.0 else "FAIL", root, got, total, want))
sys.exit(1 if bad or total < 1000 else 0)
EOF
}
lib=$build/cupti_inject/libxsprof_cupti.so
if [[ -x $phases && -f $lib ]]; then
	# The shell waits on a fifo while it is attached, then execs the phases in its place (the
	# exec is watched: the program is probed before it runs). NVTX goes to our CUPTI socket.
	mkfifo "$dir/go" "$dir/go2"
	NVTX_INJECTION64_PATH=$lib sh -c 'read x <"$0"; exec "$1" 3' "$dir/go" "$phases" \
		>"$dir/att_ranges.out" &
	rp=$!
	rc=0; ctl -q attach "$rp" --range-domain xs_domain 2>"$dir/x.err" || rc=$?
	[[ $rc == 2 ]] && pass "attach --range-domain without --group-by: usage error" ||
		fail "attach --range-domain alone: exit $rc"
	ctl -q attach "$rp" --freq 999 --group-by range || fail "attach --group-by range failed"
	g=$(status_get '[a.get("group_by") for a in j["attachments"] if a["pid"] == '"$rp"'][0]')
	[[ $g == range ]] && pass "status lists the attachment grouped by range" || fail "status: group_by $g"
	rc=0; ctl flamegraph --pid "$rp" --group-by outer-range -o "$dir/x.folded" 2>"$dir/x.err" || rc=$?
	[[ $rc == 1 ]] && grep -q 'grouped by range, not outer-range' "$dir/x.err" &&
		pass "flamegraph --group-by outer-range of a range attachment: refused, said why" ||
		fail "other group: exit $rc: $(cat "$dir/x.err")"
	echo go >"$dir/go"
	# A fetch of the window while it runs closes every slice there, the attachment's too (as
	# the service's own slice ends do, every 10 s, anywhere): its samples wait a slice for
	# their ranges to end, and the GPU records they need are kept meanwhile.
	sleep 1.2
	ctl -q flamegraph --since 60 -o "$dir/att_mid.folded" || fail "flamegraph of the window failed"
	wait "$rp" || fail "xs_nvtx_phases failed under the attachment"
	# It exited: its last slices are folded once its ranges have all ended.
	ctl -q flamegraph --pid "$rp" --group-by range -o "$dir/att_ranges.folded" ||
		fail "flamegraph --pid --group-by range failed"
	shares "$dir/att_ranges.folded" "$dir/att_ranges.out" data=data step=step \
		forward=forward backward=backward io=io &&
		pass "each phase's share within 2 points of its CPU time, through the attachment's window" ||
		fail "attachment phase shares off: $(head -c 600 "$dir/att_ranges.folded")"
	# Named a slice late, after the process had gone: its frames are still its own. What is
	# checked is naming: a sample whose user stack was not walked at all (kernel frames right
	# under the process: on this VM up to a tenth of an attachment's, in clock_gettime) has
	# nothing to name, and is counted apart.
	k=$(weight "$dir/att_ranges.folded" '^forward;xs_nvtx_phases;[^;]*_\[k\]( |;)')
	f=$(grep -v ';\[gpu\] ' "$dir/att_ranges.folded" | weight - '^forward;')
	f=$((f - k))
	fb=$(weight "$dir/att_ranges.folded" '^forward;xs_nvtx_phases;.*;xs_forward;xs_burn[; ]')
	((f > 0 && fb * 10 >= f * 9)) &&
		pass "forward's samples are in xs_forward;xs_burn ($fb of $f with a user stack; $k without)" ||
		fail "forward's frames: $fb of $f in xs_forward;xs_burn: $(grep '^forward;' "$dir/att_ranges.folded" | head -3)"
	# Without --group-by, the same kind of attachment's plain view: no range level.
	NVTX_INJECTION64_PATH=$lib sh -c 'read x <"$0"; exec "$1" 1' "$dir/go2" "$phases" >/dev/null &
	rp=$!
	ctl -q attach "$rp" --freq 999 --group-by range || fail "attach --group-by range failed"
	echo go >"$dir/go2"
	wait "$rp" || true
	ctl -q flamegraph --pid "$rp" -o "$dir/att_plain.folded" || fail "flamegraph --pid (plain) failed"
	n=$(weight "$dir/att_plain.folded" '^xs_nvtx_phases;')
	r=$(weight "$dir/att_plain.folded" '^(forward|backward|data|step|io|\[no range\]);')
	((n >= 500 && r == 0)) && pass "without --group-by: the plain view ($n samples, no range level)" ||
		fail "plain view of a range attachment: $n under the program, $r under a range"
else
	fail "xs_nvtx_phases or libxsprof_cupti.so was not built (CUDA toolkit)"
fi

step "the rolling window without --window-group-by: asked grouped, a clear refusal that says how"
rc=0; ctl flamegraph --group-by range -o "$dir/w.folded" 2>"$dir/w.err" || rc=$?
[[ $rc == 1 ]] && grep -q 'window-group-by' "$dir/w.err" &&
	pass "flamegraph --group-by without --pid: refused, naming xsprofd --window-group-by" ||
	fail "flamegraph --group-by without --pid: exit $rc: $(cat "$dir/w.err")"
code=$(curl -s -m 20 -o "$dir/w.json" -w '%{http_code}' --unix-socket "$sock" \
	"http://x/v1/profile?since_s=60&group_by=range")
[[ $code == 400 ]] && grep -q 'not grouped' "$dir/w.json" && grep -q 'window-group-by' "$dir/w.json" &&
	pass "GET /v1/profile?group_by=range: 400, said why and how" ||
	fail "window group_by: HTTP $code: $(cat "$dir/w.json")"

step "range_domain for recordings on request and the scrape endpoint"
rc=0; ctl record --range-domain xs_domain -o "$dir/x.folded" -- true 2>"$dir/x.err" || rc=$?
[[ $rc == 2 ]] && pass "record --range-domain without --group-by: usage error" ||
	fail "record --range-domain alone: exit $rc: $(cat "$dir/x.err")"
code=$(curl -s -m 20 -o "$dir/x.json" -w '%{http_code}' --unix-socket "$sock" \
	"http://x/debug/pprof/profile?seconds=1&pid=$$&range_domain=xs_domain")
[[ $code == 400 ]] && grep -q 'range_domain goes with group_by' "$dir/x.json" &&
	pass "scrape range_domain without group_by: 400, said why" ||
	fail "scrape range_domain alone: HTTP $code: $(cat "$dir/x.json")"
if [[ -x $phases && -f $lib ]]; then
	# xs_domain holds one range, io: the rest of the program is outside any of its ranges.
	XSPROF_CUPTI_LIB=$lib ctl -q record --freq 999 --group-by range --range-domain xs_domain \
		-o "$dir/dom.folded" -- "$phases" 2 >"$dir/dom.out" ||
		fail "record --group-by range --range-domain xs_domain -- xs_nvtx_phases failed"
	shares "$dir/dom.folded" "$dir/dom.out" io=io "[no range]=data+step+forward+backward" &&
		pass "record --range-domain: io alone is a range, each share within 2 points" ||
		fail "record --range-domain shares off: $(head -c 600 "$dir/dom.folded")"
	# The scrape records the next seconds: the program waits on a fifo until it runs.
	mkfifo "$dir/go3"
	NVTX_INJECTION64_PATH=$lib sh -c 'read x <"$0"; exec "$1" 2' "$dir/go3" "$phases" \
		>"$dir/scr.out" &
	rp=$!
	curl -s -m 60 -o "$dir/scr.folded" -w '%{http_code}' --unix-socket "$sock" \
		"http://x/debug/pprof/profile?seconds=15&hz=999&pid=$rp&format=folded&group_by=range&range_domain=xs_domain" \
		>"$dir/scr.code" &
	cp=$!
	for _ in $(seq 100); do
		n=$(status_get 'sum(r["state"] == "running" for r in j["recordings"])')
		((n > 0)) && break
		sleep 0.2
	done
	echo go >"$dir/go3"
	wait "$rp" || fail "xs_nvtx_phases failed under the scrape"
	wait "$cp" || true
	[[ $(cat "$dir/scr.code") == 200 ]] && shares "$dir/scr.folded" "$dir/scr.out" io=io \
		"[no range]=data+step+forward+backward" &&
		pass "scrape ...&group_by=range&range_domain=xs_domain: each share within 2 points" ||
		fail "scrape range_domain: HTTP $(cat "$dir/scr.code"): $(head -c 600 "$dir/scr.folded")"
fi

step "job and rank for recordings on request and the scrape endpoint"
rc=0; ctl record --rank 1-100 -o "$dir/x.folded" -- true 2>"$dir/x.err" || rc=$?
[[ $rc == 2 ]] && grep -q "at most 64" "$dir/x.err" && pass "record --rank 1-100: usage error" ||
	fail "record --rank 1-100: exit $rc: $(cat "$dir/x.err")"
code=$(curl -s -m 20 -o "$dir/x.json" -w '%{http_code}' --unix-socket "$sock" \
	"http://x/debug/pprof/profile?seconds=1&pid=$$&rank=0,")
[[ $code == 400 ]] && grep -q 'rank must be ranks and ranges' "$dir/x.json" &&
	pass "scrape rank=0,: 400, said why" || fail "scrape rank=0,: HTTP $code: $(cat "$dir/x.json")"
code=$(curl -s -m 20 -o "$dir/x.json" -w '%{http_code}' --unix-socket "$sock" -d '{"job": ""}' \
	"http://x/v1/recordings")
[[ $code == 400 ]] && grep -q 'job must be' "$dir/x.json" &&
	pass "POST /v1/recordings {\"job\": \"\"}: 400, said why" ||
	fail "empty job: HTTP $code: $(cat "$dir/x.json")"
# Two ranks of a job and a process of none: each filter keeps only what it names.
for r in 0 1; do
	env -i RANK=$r WORLD_SIZE=2 TORCHELASTIC_RUN_ID=xs-svc-job sha256sum /dev/zero &
	pids+=($!)
done
sha256sum /dev/zero &
pids+=($!)
three=${pids[-3]},${pids[-2]},${pids[-1]}
ctl -q record -p "$three" -d 2 --group-by rank --rank 1 -o "$dir/rank1.folded" ||
	fail "record --rank 1 failed"
r0=$(weight "$dir/rank1.folded" '^rank 0;') r1=$(weight "$dir/rank1.folded" '^rank 1;')
all=$(weight "$dir/rank1.folded" '.')
((r1 > 20 && r0 == 0 && all == r1)) && pass "record --rank 1: $r1 samples of rank 1, none else" ||
	fail "record --rank 1: rank 0 $r0, rank 1 $r1, all $all"
code=$(curl -s -m 30 -o "$dir/job.folded" -w '%{http_code}' --unix-socket "$sock" \
	"http://x/debug/pprof/profile?seconds=2&pid=$three&format=folded&group_by=rank&job=xs-svc-job")
r0=$(weight "$dir/job.folded" '^rank 0;') r1=$(weight "$dir/job.folded" '^rank 1;')
all=$(weight "$dir/job.folded" '.')
[[ $code == 200 ]] && ((r0 > 20 && r1 > 20 && all == r0 + r1)) &&
	pass "scrape job=xs-svc-job: ranks 0 and 1 ($r0, $r1 samples), not the process of no job" ||
	fail "scrape job=: HTTP $code, rank 0 $r0, rank 1 $r1, all $all"
grep -q "job xs-svc-job: kept 2 processes, left out 1" "$dir/xsprofd.log" &&
	pass "the log says what the filter kept" || fail "no 'kept 2 processes, left out 1' in the log"
kill "${pids[-3]}" "${pids[-2]}" "${pids[-1]}" 2>/dev/null || true

# wait_named SECS WHAT: until the grouped window has named the samples taken up to now (its
# status' store.named_to_ms past the daemon's clock now), at most SECS; else a FAIL naming WHAT.
wait_named() {
	local ended t=0
	ended=$(curl -s -m 20 --unix-socket "$sock" http://x/v1/timeline |
		$py -c 'import json,sys; print(json.load(sys.stdin)["now_ms"])')
	for _ in $(seq $(($1 * 2))); do
		t=$(status_get 'j["store"]["named_to_ms"]')
		((t >= ended)) && return 0
		sleep 0.5
	done
	fail "the window named up to $t ms, not past $2 at $ended ms"
}

step "the rolling window grouped by range: xsprofd --window-group-by range"
# A daemon of its own: the window is grouped (or not) as it starts.
kill "$daemon"; wait "$daemon" || true; daemon=
start_daemon --window-group-by range --freq 999
g=$(status_get 'j["store"].get("group_by")')
[[ $g == range ]] && pass "status: the window grouped by range" || fail "status: store group_by $g"
if [[ -x $phases && -f $lib ]]; then
	# The window holds the whole machine, where other runs of xs_nvtx_phases may be: this one
	# under a name of its own (its comm).
	cp "$phases" "$dir/xs_winphases"
	NVTX_INJECTION64_PATH=$lib "$dir/xs_winphases" 3 >"$dir/win.out" &
	rp=$!
	# A query while it runs cuts the window's slice short: the samples still wait for their
	# ranges (~10 s past the slice's end), not for the next query.
	sleep 1.2
	ctl -q flamegraph --since 60 -o "$dir/win_mid.folded" || fail "flamegraph of the window failed"
	wait "$rp" || fail "xs_nvtx_phases failed"
	# Its samples are in the window once the slices they are in have been named (status says
	# up to when, on the daemon's clock): at most two slice ends away.
	wait_named 60 "the program's end"
	ctl -q flamegraph --since 120 --group-by range -o "$dir/win_all.folded" ||
		fail "flamegraph --group-by range of the window failed"
	# The whole machine is in it: the program's own lines (its process under the range).
	grep -E '^[^;]+;xs_winphases;' "$dir/win_all.folded" >"$dir/win.folded" || true
	shares "$dir/win.folded" "$dir/win.out" data=data step=step forward=forward \
		backward=backward io=io &&
		pass "each phase's share within 2 points of its CPU time, through the machine's window" ||
		fail "window phase shares off: $(head -c 600 "$dir/win.folded")"
	k=$(weight "$dir/win.folded" '^forward;xs_winphases;[^;]*_\[k\]( |;)')
	f=$(grep -v ';\[gpu\] ' "$dir/win.folded" | weight - '^forward;')
	f=$((f - k))
	fb=$(weight "$dir/win.folded" '^forward;xs_winphases;.*;xs_forward;xs_burn[; ]')
	((f > 0 && fb * 10 >= f * 9)) &&
		pass "forward's samples are in xs_forward;xs_burn ($fb of $f with a user stack; $k without)" ||
		fail "forward's frames: $fb of $f in xs_forward;xs_burn: $(grep '^forward;' "$dir/win.folded" | head -3)"
	ctl -q flamegraph --since 120 -o "$dir/win_plain.folded" || fail "flamegraph (plain) failed"
	n=$(weight "$dir/win_plain.folded" '^xs_winphases;')
	r=$(weight "$dir/win_plain.folded" '^(forward|backward|data|step|io|\[no range\]);xs_winphases;')
	((n >= 1000 && r == 0)) && pass "without --group-by: the plain view ($n samples of the program, no range level)" ||
		fail "plain view of the grouped window: $n under the program, $r under a range"
	d=$(status_get 'j["store"]["range_dropped"]')
	[[ $d == 0 ]] && pass "status: no sample past the per-slice cap (range_dropped 0)" ||
		fail "status: range_dropped $d"
else
	fail "xs_nvtx_phases or libxsprof_cupti.so was not built (CUDA toolkit)"
fi
rc=0; ctl flamegraph --group-by outer-range -o "$dir/w.folded" 2>"$dir/w.err" || rc=$?
[[ $rc == 1 ]] && grep -q 'grouped by range, not outer-range' "$dir/w.err" &&
	pass "flamegraph --group-by outer-range of a window grouped by range: refused, said why" ||
	fail "window, other group: exit $rc: $(cat "$dir/w.err")"

step "a 30 s range in the grouped window: --window-range-wait 45 keeps all of its samples"
# By default a sample waits about 10 s for the range it was taken in to end; a range of 30 s
# would keep only its last part. With the wait raised past the range's length, all of it.
kill "$daemon"; wait "$daemon" || true; daemon=
start_daemon --window-group-by range --window-range-wait 45 --freq 199
w=$(status_get 'j["store"].get("range_wait_s")')
[[ $w == 45 ]] && pass "status: store.range_wait_s 45" || fail "status: store.range_wait_s '$w', want 45"
interop=$(ls /usr/local/cuda/lib64/libnvtx3interop.so.1 "${CUDAToolkit_ROOT:-/nonexistent}"/lib64/libnvtx3interop.so.1 2>/dev/null | head -1 || true)
if [[ -f $lib && -n $interop ]]; then
	NVTX_INJECTION64_PATH=$lib $py - "$interop" >"$dir/long.out" <<'PY' &
import ctypes, sys, time
lib = ctypes.CDLL(sys.argv[1])
lib.nvtxRangePushA.argtypes = [ctypes.c_char_p]
lib.nvtxRangePushA(b"xs_long30")
t0, c0, x = time.monotonic(), time.process_time(), 0
while time.monotonic() - t0 < 30:
    for i in range(2000):
        x = (x * 31 + i) % 1000003
cpu = time.process_time() - c0
lib.nvtxRangePop()
time.sleep(0.2)
print("cpu_ns %d" % int(cpu * 1e9))
PY
	lp=$!
	wait "$lp" || fail "the 30 s range's program failed"
	wait_named 120 "the range's end"
	ctl -q flamegraph --since 180 --group-by range -o "$dir/long.folded" ||
		fail "flamegraph --group-by range of the window failed"
	got=$(weight "$dir/long.folded" '^xs_long30;')
	cpu=$(awk '/^cpu_ns/ { print $2 }' "$dir/long.out")
	want=$((${cpu:-0} * 199 / 1000000000))
	# Sampling counts CPU time: the range's samples are its CPU seconds at 199 Hz.
	((want > 1000 && got * 100 >= want * 85 && got * 100 <= want * 110)) &&
		pass "the 30 s range holds $got samples of the $want its CPU time is worth (all of it, within 15%)" ||
		fail "the 30 s range holds $got samples, want about $want (its CPU time at 199 Hz)"
else
	fail "libxsprof_cupti.so or libnvtx3interop.so.1 missing: NVTX ranges cannot be tested"
fi
exit 0

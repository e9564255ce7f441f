#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A 4-rank training job on 2 hosts, and xsprofctl fleet --report straggler across them. Each
# "host" is a network namespace (its own address) and a pid namespace (its own processes, as
# a container is) with an xsprofd of its own listening on TCP; host B's daemon gives its times
# 3.7 ms late (XSPROF_TEST_CLOCK_SHIFT_NS: a host booted at another moment). xs_gpu_job (the
# GPU double) starts ranks 0-1 on host A and 2-3 on host B, sharing a barrier that makes each
# all-reduce end 1 ms after the last rank arrived, as NCCL's do. Checked per mode: the
# straggler, its cause, kernel and stack, its lateness against the injected one; no finding
# without a straggler; host B's clock recovered within 100 us and inside the stated error;
# the merged trace passes tests/lib/check_trace.py with each collective linked across ranks;
# the straggler's flamegraph against the median rank's.
# Usage: tests/output/job/job_fleet.sh BUILD_DIR. Needs root, BPF, iproute2, util-linux (unshare,
# nsenter), python3.
set -u
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
xsprofd=$build/daemon/xsprofd
ctl=$build/daemon/ctl/xsprofctl
work=$build/tests/xs_gpu_job
shift_ns=3700000
tag=xj$$
dir=$(mktemp -d /tmp/xsprof-jobfleet.XXXXXX)
failures=0
outer=()
netns=()

pass() { printf 'ok   %s\n' "$*"; }
fail() {
	printf 'FAIL %s\n' "$*"
	failures=$((failures + 1))
}

cleanup() {
	local p
	for p in "${outer[@]}"; do
		# The daemon is its namespace's first process: TERM it there, then its unshare ends.
		pkill -TERM -P "$p" 2>/dev/null
	done
	for p in "${outer[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	for p in "${netns[@]}"; do ip netns del "$p" 2>/dev/null; done
	[[ -n ${KEEP:-} ]] || rm -rf "$dir"
}
trap cleanup EXIT
trap 'echo "job_fleet: interrupted (INT)"; exit 130' INT
trap 'echo "job_fleet: interrupted (TERM)"; exit 130' TERM

[[ $(id -u) == 0 ]] || { echo "FAIL needs root"; exit 1; }
for tool in ip unshare nsenter python3 pkill; do
	command -v $tool >/dev/null || { echo "FAIL $tool is needed (apt-get install)"; exit 1; }
done
for f in "$xsprofd" "$ctl" "$work"; do
	[[ -x $f ]] || { echo "FAIL missing $f"; exit 1; }
done
echo "job-fleet-token-$$-0123456789abcdef" >"$dir/token"
chmod 600 "$dir/token"

# Host N: veth to a namespace (10.214.N.2), a pid namespace in it, xsprofd there.
start_host() {
	local n=$1 shift=$2 ns=$tag-$1 v=x$$j$1 child
	ip netns add "$ns" || return 1
	netns+=("$ns")
	ip link add "$v" type veth peer name eth0 netns "$ns" &&
		ip addr add "10.214.$n.1/30" dev "$v" && ip link set "$v" up &&
		ip -n "$ns" addr add "10.214.$n.2/30" dev eth0 && ip -n "$ns" link set eth0 up &&
		ip -n "$ns" link set lo up || return 1
	XSPROF_TEST_CLOCK_SHIFT_NS=$shift ip netns exec "$ns" unshare --pid --fork --mount-proc \
		--kill-child "$xsprofd" --socket "$dir/ctl$n.sock" --cupti-socket "$dir/cupti$n.sock" \
		--listen "10.214.$n.2:7717" --token-file "$dir/token" --dump-dir "$dir/dumps$n" \
		>"$dir/d$n.log" 2>&1 &
	outer+=($!)
	for _ in $(seq 150); do [[ -S $dir/ctl$n.sock ]] && break; sleep 0.1; done
	[[ -S $dir/ctl$n.sock ]] || { echo "host $n: xsprofd did not start:"; tail -5 "$dir/d$n.log"; return 1; }
	child=$(pgrep -P "${outer[-1]}" | head -1)
	[[ -n $child ]] || return 1
	echo "$child" >"$dir/nspid$n"
}
start_host 1 0 && start_host 2 "$shift_ns" || { fail "the two hosts did not start"; exit 1; }
printf '10.214.1.2:7717 host=hostA\n10.214.2.2:7717 host=hostB\n' >"$dir/hosts"

# Rank K of xs_gpu_job on its host: ranks 0-1 on host A, 2-3 on host B.
cat >"$dir/onhost" <<EOF
#!/bin/sh
k=\$1; shift
if [ "\$k" -lt 2 ]; then n=1; else n=2; fi
exec $build/tests/xs_ns_run "\$(cat $dir/nspid\$n)" env XSPROF_CUPTI_SOCKET=$dir/cupti\$n.sock "\$@"
EOF
chmod +x "$dir/onhost"

# run MODE: the job (long enough to outlast the recording), the fleet's report while it runs.
run() {
	local mode=$1 job st
	XS_GPU_JOB_EXEC=$dir/onhost "$work" "$mode" 500 >"$dir/$mode.truth" 2>"$dir/$mode.joberr" &
	job=$!
	# Each host's ranks running (the recording asks for them by name).
	for _ in $(seq 100); do
		[[ $(nsenter -t "$(cat "$dir/nspid1")" -p -m pgrep -c -x xs_gpu_job) == 2 &&
			$(nsenter -t "$(cat "$dir/nspid2")" -p -m pgrep -c -x xs_gpu_job) == 2 ]] && break
		sleep 0.1
	done
	sleep 1
	timeout 120 "$ctl" fleet --report straggler --job "xsjob-$mode" --comm xs_gpu_job -d 4 \
		--token-file "$dir/token" -f "$dir/hosts" -o "$dir/$mode.job.json" \
		>"$dir/$mode.txt" 2>"$dir/$mode.err"
	st=$?
	wait "$job" || { echo "     xs_gpu_job $mode failed: $(tail -3 "$dir/$mode.joberr")"; return 1; }
	[[ $st == 0 ]] || { echo "     fleet exit $st: $(tail -5 "$dir/$mode.err")"; return 1; }
}

check() {
	python3 - "$dir" "$1" "$shift_ns" "$src/lib" <<'PYEOF'
import json, sys
d, mode, shift = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, sys.argv[4])
from job_check import straggler_problems, truth_of
truth = truth_of(f"{d}/{mode}.truth")
r = json.load(open(f"{d}/{mode}.job.json"))
bad = []
clocks = {c["host"]: c for c in r.get("clocks", [])}
b = clocks.get("hostB")
if set(clocks) != {"hostA", "hostB"} or clocks["hostA"]["method"] != "reference":
    bad.append(f"clocks {r.get('clocks')}")
elif b["method"] != "collectives" or b["error_ns"] is None:
    bad.append(f"host B's clock not from the collectives: {b}")
else:
    true_off = -shift
    err = abs(b["offset_ns"] - true_off)
    print(f"     host B's clock: {b['offset_ns'] / 1e6:+.4f} ms (true {true_off / 1e6:+.4f} ms, "
          f"off by {err / 1e3:.1f} us, stated error {b['error_ns'] / 1e3:.1f} us, "
          f"{b['collectives']} collectives)")
    if err > 100000:
        bad.append(f"host B's clock off by {err} ns")
    if err > b["error_ns"]:
        bad.append(f"the stated error {b['error_ns']} ns does not cover the true {err} ns")
jobs = r["jobs"]
if len(jobs) != 1 or jobs[0]["job_id"] != f"xsjob-{mode}":
    bad.append(f"jobs {[j['job_id'] for j in jobs]}")
job = jobs[0] if jobs else {"ranks": [], "findings": []}
hosts = {x["rank"]: x["host"] for x in job["ranks"]}
if hosts != {0: "hostA", 1: "hostA", 2: "hostB", 3: "hostB"}:
    bad.append(f"ranks and hosts {hosts}")
bad += straggler_problems(job, truth)
# The merged trace: collectives linked through all 4 ranks.
t = json.load(open(f"{d}/{mode}.trace.json"))
links = {}
for e in t["traceEvents"]:
    if e.get("cat") == "collective":
        links.setdefault(e["id"], []).append(e["ph"])
whole = sum(1 for v in links.values() if sorted(v) == ["f", "s", "t", "t"])
n = len(job.get("collectives", []))
print(f"     trace: {whole} of {n} collectives linked through 4 ranks")
if not n or whole < n:
    bad.append(f"{whole} of {n} collectives linked through 4 ranks")
for x in bad:
    print("     " + x)
sys.exit(1 if bad else 0)
PYEOF
}

for mode in compute host none; do
	if run "$mode" && check "$mode" &&
		python3 "$src/lib/check_trace.py" "$dir/$mode.trace.json" --merged >"$dir/$mode.tcheck" 2>&1; then
		pass "$mode: $(head -1 "$dir/$mode.truth"), across 2 hosts with host B's clock 3.7 ms off"
	else
		fail "$mode ($(tail -2 "$dir/$mode.tcheck" 2>/dev/null))"
		sed 's/^/     /' "$dir/$mode.txt" | head -40
	fi
done
# The host straggler's flamegraph against the median rank's: xs_load_data grew.
if [[ -s $dir/host.diff.svg ]] && grep -q 'xs_load_data' "$dir/host.diff.svg" &&
	grep -q 'against the median rank' "$dir/host.txt"; then
	pass "host: the straggler's flamegraph against the median rank's (host.diff.svg)"
else
	fail "host: no diff of the straggler against the median rank"
fi
# A host down: the other's ranks are still compared, and the report says which are missing.
printf '10.214.1.2:7717 host=hostA\n10.214.9.2:7717 host=hostGone\n' >"$dir/hosts2"
XS_GPU_JOB_EXEC=$dir/onhost "$work" none 300 >/dev/null 2>&1 &
job=$!
sleep 2
timeout 120 "$ctl" fleet --report straggler --comm xs_gpu_job -d 2 --host-timeout 8 \
	--token-file "$dir/token" -f "$dir/hosts2" >"$dir/down.txt" 2>"$dir/down.err"
st=$?
wait "$job"
if [[ $st == 5 ]] && grep -q 'ranks missing' "$dir/down.txt" && grep -q 'FAILED' "$dir/down.err"; then
	pass "a host down: exit 5, the other host's ranks compared, the missing ranks named"
else
	fail "a host down: exit $st"
	sed 's/^/     /' "$dir/down.txt" "$dir/down.err" | head -20
fi
[[ $failures == 0 ]] && echo "job_fleet: all passed" || echo "job_fleet: $failures failed"
exit $((failures > 0))

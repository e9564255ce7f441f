#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# --max-cpu against a flood of the CUPTI socket (issue 53, H8). An unprivileged user sends
# kernel records as fast as the daemon reads them:
#   - without a ceiling that costs xsprofd several percent of the machine (or this test could
#     not tell a ceiling from none);
#   - under --max-cpu 1 the reading of the flooder's uid is capped (the heaviest sender first,
#     ceiling.h): xsprofd's CPU, read from /proc, stays within 0.2 points of the ceiling once
#     it has climbed, while root's 50 kernels sent meanwhile all reach root's report and
#     root's status is answered. The climb ends at the first slice close after the cap bit:
#     the records let in at full speed before it (up to a slice's 64k) are joined and reported
#     there, 30-170 ms of CPU that no step can shed, and that once counted in an 8 s
#     measure put it at 1.4% in 2 runs of 3;
#   - the cap and the pauses are said in status (under the flooder's uid) and /metrics.
# Every check prints "ok" or "FAIL". Needs root and BPF.
#
# Usage: tests/daemon/service/gpu_ceiling.sh BUILD_DIR     (ctest runs it as service_gpu_ceiling)
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
name=service_gpu_ceiling
. "$(dirname "$0")/private_daemon.sh"
flood=$build/tests/xs_gpu_flood
need "$flood"
member=65534
nogroup=$(getent group nogroup | cut -d: -f3)
hz=$(getconf CLK_TCK)

# flood SECS: the member sends kernel records without end for SECS seconds (in the background).
flood() {
	timeout "$1" setpriv --reuid=$member --regid="$nogroup" --clear-groups -- \
		"$flood" 1000000000 xs_flood_kernel >/dev/null 2>&1 &
	pids+=($!)
}
# cpu_ns PID: the process's CPU (every thread, user and system) so far.
cpu_ns() { awk -v hz="$hz" '{printf "%d\n", ($14 + $15) * 1e9 / hz}' "/proc/$1/stat"; }
# cost SECS: xsprofd's CPU over the next SECS seconds, in percent of all CPUs.
cost() {
	local a b t0 t1
	a=$(cpu_ns "$daemon")
	t0=$(date +%s%N)
	sleep "$1"
	b=$(cpu_ns "$daemon")
	t1=$(date +%s%N)
	$py -c 'import sys, os
a, b, t = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
print("%.2f" % (100.0 * (b - a) / (t * os.cpu_count())))' "$a" "$b" "$((t1 - t0))"
}
le() { $py -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)' "$1" "$2"; }

step "without a ceiling: what the flood costs xsprofd"
start_daemon
flood 7
sleep 1.5
base=$(cost 4)
le 1.6 "$base" && pass "the flood costs xsprofd $base% of the machine without a ceiling (over 1.6%)" ||
	fail "the flood costs only $base% without a ceiling: this test could not tell"
kill "$daemon"
wait "$daemon" 2>/dev/null || true
daemon=
wait "${pids[@]}" 2>/dev/null || true
pids=()

step "--max-cpu 1: the flooder's reading is capped, root's kernels and answers are not"
start_daemon --max-cpu 1
flood 30
sleep 5
slices0=$(status_get 'j["store"]["slices"]')
# Who is held while the flooder alone sends (up to 8 s more). Root's 50 kernels below may be
# held once too, in a burst (the cap is per user; they all arrive, checked at the end), so the
# last paused uid after them says nothing of the flooder.
held_uid=-1
for _ in $(seq 40); do
	held_uid=$(status_get 'j["gpu"].get("intake_last_paused_uid", -1)')
	[[ $held_uid != -1 ]] && break
	sleep 0.2
done
"$flood" 50 xs_victim_kernel 200 >"$dir/victim.out" 2>&1 && pass "root sent 50 kernels during the flood" ||
	fail "the victim's sender: $(cat "$dir/victim.out")"
t0=$(date +%s%N)
ctl status >/dev/null && pass "root answered during the flood ($((($(date +%s%N) - t0) / 1000000)) ms)" ||
	fail "no status during the flood"
# The climb's records are closed with the first slice after the cap (SLICE_US, 10 s).
for _ in $(seq 150); do
	(($(status_get 'j["store"]["slices"]') > slices0)) && break
	sleep 0.1
done
sleep 1
capped=$(cost 10)
le "$capped" 1.2 && pass "xsprofd cost $capped% of the machine under --max-cpu 1 ($base% without)" ||
	fail "xsprofd cost $capped% under --max-cpu 1 (at most 1.2% expected; $base% without)"
read -r cap pauses uid < <(status_get '" ".join(str(x) for x in [
	j["ceiling"]["gpu_intake_cap_per_uid"], j["gpu"]["intake_pauses"],
	j["gpu"].get("intake_last_paused_uid", -1)])')
((cap > 0)) && pass "status: GPU records read capped at $cap a second per user" ||
	fail "status: no cap on GPU records read ($cap)"
((pauses > 0)) && [[ $held_uid == "$member" ]] &&
	pass "status: the flooder (uid $held_uid) held, $pauses pauses in all (the last of uid $uid)" ||
	fail "status: $pauses pauses; held before root sent: uid $held_uid (want $member)"
curl -s -m 10 --unix-socket "$sock" http://x/metrics >"$dir/m.txt"
grep -qE '^xsprof_gpu_intake_pauses_total [1-9]' "$dir/m.txt" &&
	grep -qE '^xsprof_ceiling_shed\{kind="gpu_intake"\} 1' "$dir/m.txt" &&
	grep -qE '^xsprof_ceiling_gpu_intake_cap_records_per_second [1-9]' "$dir/m.txt" &&
	pass "/metrics: the pauses, the cap and the gpu_intake kind shed" ||
	fail "/metrics lacks the cap: $(grep -E 'intake' "$dir/m.txt" | head -5)"

step "root's window report holds all of root's kernels"
found=0
for _ in $(seq 40); do
	ctl report --since 60 -o "$dir/r.gpu.json" >/dev/null 2>&1 || true
	found=$($py -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(sum(k.get("count", 0) for k in r.get("kernels", []) if k.get("name") == "xs_victim_kernel"))' "$dir/r.gpu.json" 2>/dev/null || echo 0)
	[[ $found -gt 0 ]] && break
	sleep 1
done
[[ $found == 50 ]] && pass "all 50 of root's kernels in root's report" ||
	fail "$found of root's 50 kernels in the report"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The job report on a 4-rank job on one host under one xsprofd (tests/workloads/gpu_job.c): the
# launcher starts 4 ranks with RANK, WORLD_SIZE and TORCHELASTIC_RUN_ID in their environment;
# each step each rank launches 4 compute kernels and an NCCL all-reduce through the GPU double,
# the all-reduce ending when the last rank arrived (a barrier in shared memory). Cases:
#   compute  rank 2's kernels run 30% longer: named rank 2, cause compute, the kernel
#            xs_k_forward with its launching stack (xs_forward), lateness within 5% of the 6 ms
#            injected;
#   host     rank 1 spends 20 ms in xs_load_data before launching: named rank 1, cause host,
#            xs_load_data in the stack;
#   none     no finding.
# Also the text (--report job) within 80 columns and the JSON's schema. Needs root and BTF (no
# GPU). Prints "ok"/"FAIL"; any FAIL fails.
#
# Usage: tests/output/job/job_report.sh BUILD_DIR      (ctest runs it as job_report)
set -uo pipefail

build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
xsprofd=$build/daemon/xsprofd
work=$build/tests/xs_gpu_job
py=/usr/bin/python3
failures=0
pass() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }
for f in "$xsprofd" "$work" "$py"; do
	[[ -e $f ]] || { echo "FAIL missing $f"; exit 1; }
done
[[ $(id -u) == 0 ]] || { echo "FAIL needs root"; exit 1; }
dir=$(mktemp -d /tmp/xsprof-jobreport-XXXXXX)
trap '[[ -n ${KEEP:-} ]] || rm -rf "$dir"' EXIT

# run MODE STEPS: xsprofd -f at 999 Hz with --report job and the JSON; the truth and the text
# on stdout (MODE.out).
run() {
	local mode=$1 n=$2
	rm -f "$dir/cupti.sock"
	if ! timeout 120 "$xsprofd" -f -F 999 --cupti-socket "$dir/cupti.sock" --report job \
		-o "$dir/$mode.job.json" -- "$work" "$mode" "$n" \
		>"$dir/$mode.out" 2>"$dir/$mode.err"; then
		fail "$mode: xsprofd -f --report job -- xs_gpu_job $mode $n failed:"$'\n'"$(tail -5 "$dir/$mode.err")"
		return 1
	fi
}

# check MODE: the findings against the truth the launcher printed.
check() {
	$py - "$dir" "$1" "$src/lib" <<'PYEOF'
import json, sys
d, mode = sys.argv[1:3]
sys.path.insert(0, sys.argv[3])
from job_check import straggler_problems
truth, text = {}, []
for l in open(f"{d}/{mode}.out"):
    f = l.split()
    if len(f) == 2 and f[0] in ("straggler", "lateness_ns"):
        truth[f[0]] = f[1]
    else:
        text.append(l.rstrip("\n"))
r = json.load(open(f"{d}/{mode}.job.json"))
bad = []
if r.get("schema") != "xsprof.job_report" or r.get("version") != 1:
    bad.append(f"schema {r.get('schema')} {r.get('version')}")
jobs = r["jobs"]
if len(jobs) != 1 or jobs[0]["job_id"] != f"xsjob-{mode}" or jobs[0]["world_size"] != 4:
    bad.append(f"jobs: {[(j['job_id'], j['world_size']) for j in jobs]}")
    jobs = jobs[:1]
job = jobs[0] if jobs else {"ranks": [], "findings": [], "collectives_total": 0, "steps": []}
if sorted(x["rank"] for x in job["ranks"]) != [0, 1, 2, 3]:
    bad.append(f"ranks {job['ranks']}")
counts = {x["collectives"] for x in job["ranks"]}
if len(counts) != 1 or job["collectives_total"] != counts.pop():
    bad.append(f"collectives: {job['ranks']} total {job['collectives_total']}")
if job.get("steps_from") != "ranges":
    bad.append(f"steps from {job.get('steps_from')}")
bad += straggler_problems(job, truth)
fs = [f for f in job["findings"] if f["kind"] == "straggler"]
if fs:
    print(f"     stack: {' > '.join(fs[0]['stack'])}")
long = [l for l in text if len(l) > 80]
if long:
    bad.append(f"text report lines over 80 columns: {long[:2]}")
if not any(l.startswith("xsprof job report") for l in text):
    bad.append("no text report on stdout")
for b in bad:
    print("     " + b)
sys.exit(1 if bad else 0)
PYEOF
}

if run compute 30 && check compute; then
	pass "compute straggler: rank 2, cause compute, xs_k_forward from xs_forward, lateness within 5%"
else
	fail "compute straggler"
fi
if run host 30 && check host; then
	pass "host straggler: rank 1, cause host, xs_load_data in the stack"
else
	fail "host straggler"
fi
if run none 30 && check none; then
	pass "no straggler: no finding"
else
	fail "no straggler"
fi
# The same report from the service: xsprofctl record -o FILE.job.json -- CMD, each rank's job
# and rank read from its environment while it runs.
sock=$dir/api.sock
"$xsprofd" --socket "$sock" --cupti-socket "$dir/svc-cupti.sock" --socket-group nogroup \
	--dump-dir "$dir/dumps" >"$dir/svc.log" 2>&1 &
svc=$!
for _ in $(seq 150); do [[ -S $sock ]] && break; sleep 0.1; done
if XSPROF_CUPTI_SOCKET=$dir/svc-cupti.sock timeout 180 "$build/daemon/ctl/xsprofctl" -s "$sock" \
	--timeout 60 record -F 999 -o "$dir/svc.job.json" -- "$work" compute 30 \
	>"$dir/svc.out" 2>"$dir/svc.err" && $py - "$dir/svc.job.json" <<'PYEOF'; then
import json, sys
r = json.load(open(sys.argv[1]))
jobs = r["jobs"]
ok = len(jobs) == 1 and jobs[0]["job_id"] == "xsjob-compute" and jobs[0]["world_size"] == 4
ok = ok and sorted(x["rank"] for x in jobs[0]["ranks"]) == [0, 1, 2, 3]
fs = [f for f in jobs[0]["findings"] if f["kind"] == "straggler"] if jobs else []
ok = ok and len(fs) == 1 and fs[0]["rank"] == 2 and fs[0]["cause"] == "compute"
print("     " + (fs[0]["summary"] if fs else "no straggler named"))
sys.exit(0 if ok else 1)
PYEOF
	pass "the service's recording (xsprofctl record -o .job.json): rank 2, cause compute"
else
	fail "the service's job report: $(tail -3 "$dir/svc.err")"
fi
kill "$svc" 2>/dev/null
wait "$svc" 2>/dev/null

exit $((failures > 0))

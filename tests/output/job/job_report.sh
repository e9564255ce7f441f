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
#   blocked  rank 1 waits 22 ms on a loader thread: with --wakers, named rank 1, cause
#            blocked, followed through the chain to xs_decode_batch on the loader; without,
#            no chain;
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

# run MODE STEPS [TAG FLAG...]: xsprofd -f at 999 Hz with --report job and the JSON, and the
# flags; the truth and the text on stdout (TAG.out; TAG is MODE by default).
run() {
	local mode=$1 n=$2 tag=${3:-$1}
	shift $(($# < 3 ? $# : 3))
	rm -f "$dir/cupti.sock"
	if ! timeout 120 "$xsprofd" -f -F 999 "$@" --cupti-socket "$dir/cupti.sock" --report job \
		-o "$dir/$tag.job.json" -- "$work" "$mode" "$n" \
		>"$dir/$tag.out" 2>"$dir/$tag.err"; then
		fail "$tag: xsprofd -f $* --report job -- xs_gpu_job $mode $n failed:"$'\n'"$(tail -5 "$dir/$tag.err")"
		return 1
	fi
}

# check MODE [TAG]: the findings against the truth the launcher printed.
check() {
	$py - "$dir" "$1" "$src/lib" "${2:-$1}" <<'PYEOF'
import json, sys
d, mode = sys.argv[1:3]
tag = sys.argv[4]
sys.path.insert(0, sys.argv[3])
from job_check import straggler_problems
truth, text = {}, []
for l in open(f"{d}/{tag}.out"):
    f = l.split()
    if len(f) == 2 and f[0] in ("straggler", "lateness_ns", "cause", "work"):
        truth[f[0]] = f[1]
    else:
        text.append(l.rstrip("\n"))
r = json.load(open(f"{d}/{tag}.job.json"))
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
# blocked: rank 1's launching thread waits on a loader thread of its own that spends the 22 ms
# in xs_decode_batch. With --wakers (wall time) the finding follows the wait to the loader:
# its chain (one hop, a thread of rank 1's process other than the launching one) covers 80% or
# more of the time before the late launches, and its stack and words name xs_decode_batch
# and the wait in xs_wait_batch. Without, cause blocked and no chain.
chain_check() { # TAG WANT(chain|none)
	$py - "$dir/$1.job.json" "$2" <<'PYEOF'
import json, sys
path, want = sys.argv[1:]
job = json.load(open(path))["jobs"][0]
fs = [f for f in job["findings"] if f["kind"] == "straggler"]
bad = []
c = fs[0].get("chain") if fs else None
if want == "none":
    if c is not None or (fs and "chained_share" in fs[0]["figures"]):
        bad.append(f"a chain without --wakers: {c}")
elif not c:
    bad.append(f"no chain: {fs[0] if fs else 'no straggler'}")
else:
    f = fs[0]
    share = f["figures"]["chained_share"]
    hops = c["hops"]
    print(f"     chained {share:.1%}; {c['why']}")
    if share < 0.8:
        bad.append(f"chained share {share:.3f}, want >= 0.8")
    if len(hops) != 1 or hops[0]["pid"] != f["pid"] or hops[0]["tid"] == c["waiting"]["tid"]:
        bad.append(f"hops {hops}, waiting {c['waiting']['tid']}")
    if "xs_wait_batch" not in c["waiting"]["stack"] or "xs_wait_batch" not in c["why"]:
        bad.append(f"the wait: {c['waiting']['stack']} / {c['why']}")
    if not c["work"] or c["work"]["frame"] not in f["stack"] or \
            f["stack"].index("xs_decode_batch") > f["stack"].index(c["work"]["frame"]):
        bad.append(f"work {c['work']} not at or under xs_decode_batch in {f['stack']}")
for b in bad:
    print("     " + b)
sys.exit(1 if bad else 0)
PYEOF
}
if run blocked 30 blocked_wakers --mode wall --wakers && check blocked blocked_wakers &&
	chain_check blocked_wakers chain; then
	pass "blocked straggler, --wakers: rank 1, cause blocked, followed to xs_decode_batch on its loader thread"
else
	fail "blocked straggler with --wakers"
fi
if run blocked 30 && chain_check blocked none &&
	$py -c 'import json,sys; f=[f for f in json.load(open(sys.argv[1]))["jobs"][0]["findings"] if f["kind"]=="straggler"]; sys.exit(0 if len(f)==1 and f[0]["rank"]==1 and f[0]["cause"]=="blocked" else 1)' "$dir/blocked.job.json"; then
	pass "blocked straggler, no --wakers: rank 1, cause blocked, no chain"
else
	fail "blocked straggler without --wakers"
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

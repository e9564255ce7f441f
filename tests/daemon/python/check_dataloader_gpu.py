# SPDX-License-Identifier: Apache-2.0
# The GPU report of tests/workloads/dataloader_gpu.py (a real DataLoader feeding the GPU
# double). With --wakers (REPORT): the host_bound finding follows the training thread's wait
# to the worker's decode() at its loop's line, with >= 80% of the host idle time explained,
# its wait chain (3 hops or more, the last a pt_data_worker) in the JSON and its why in the
# text. Without (--plain REPORT): the same finding, with no chain.
# Usage: check_dataloader_gpu.py REPORT.gpu.json WORKLOAD.py [--text TEXT] [--plain]
import json
import sys

args = sys.argv[1:]
plain = "--plain" in args
text = args[args.index("--text") + 1] if "--text" in args else None
report, workload = [a for a in args if not a.startswith("--") and a != text][:2]
line = next(i for i, l in enumerate(open(workload), 1) if "# DECODE" in l)
want = f"dataloader_gpu.decode (dataloader_gpu.py:{line})"
r = json.load(open(report))
bad = []
fs = [f for f in r["findings"] if f["kind"] == "host_bound"]
if not fs:
    sys.exit(f"FAIL no host_bound finding: {[f['kind'] for f in r['findings']]}")
f = fs[0]
c = f.get("chain")
print(f"host_bound: {f['summary']}")
if plain:
    if c is not None:
        bad.append(f"a chain without --wakers: {c.get('why')}")
else:
    if c is None:
        sys.exit("FAIL host_bound has no chain")
    print(f"  why: {c['why']}")
    print(f"  explained {c['explained_share']:.3f}, work {c['work']}")
    for h in c["hops"]:
        print(f"  hop {h['process']} {h['pid']}/{h['tid']}: {(h['stack'] or ['?'])[-1]}")
    if c["explained_share"] < 0.8:
        bad.append(f"explained share {c['explained_share']:.3f} < 0.8")
    if len(c["hops"]) < 3:
        bad.append(f"{len(c['hops'])} hops, not 3 or more")
    if c["hops"] and c["hops"][-1]["process"] != "pt_data_worker":
        bad.append(f"the chain ends in {c['hops'][-1]['process']}, not pt_data_worker")
    if c["work"]["frame"] != want:
        bad.append(f"the work frame is {c['work']['frame']}, not {want}")
    if want not in c["why"] or "pt_data_worker" not in c["why"]:
        bad.append(f"why does not name {want} in pt_data_worker: {c['why']}")
    if f["pid"] != c["hops"][-1]["pid"] or not any(want == x for x in f["stack"]):
        bad.append(f"the finding points at pid {f['pid']}, stack {f['stack'][-3:]}, not the work")
    if not c["waiting"]["stack"]:
        bad.append("the waiting thread's stack is empty")
    if text:
        words = " ".join(open(text).read().split())
        if "whose time went to " + want not in words:
            bad.append("the text report does not say where the time went")
for b in bad:
    print("FAIL " + b)
sys.exit(1 if bad else 0)

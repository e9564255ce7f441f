#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Job parts (output/job/job_parts.h) of a synthetic training job, for bench/job_merge.sh: RANKS
ranks on this host, each step KERNELS kernels launched from a few stacks and an all-reduce
(ncclDevKernel_*) that ends at the last rank's arrival, rank 3 arriving late; CPU samples at
99 Hz. Written to stdout; --mib N makes about N MiB (the steps follow from it).

Usage: bench/job_parts_gen.py [--ranks 8] [--mib 60] [--kernels 150] [--job J] [--rank-base 0]
"""
import argparse
import json
import random
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--ranks", type=int, default=8)
ap.add_argument("--mib", type=float, default=60)
ap.add_argument("--kernels", type=int, default=150)
ap.add_argument("--job", default="bench")
ap.add_argument("--rank-base", type=int, default=0)
ap.add_argument("--world", type=int, default=0)
a = ap.parse_args()
rnd = random.Random(7)
world = a.world or a.ranks
strings = ["ncclDevKernel_AllReduce_Sum_f32_RING_LL", "cudaLaunchKernel", "main", "train",
           "forward", "backward", "all_reduce", "optimizer_step"]
kern = [f"volta_sgemm_{i}x128_nn" for i in range(20)]
strings += kern
S = {s: i for i, s in enumerate(strings)}
# Per row: about 95 bytes of GPU row, 60 of launch, 12 of join: ~170 bytes per kernel.
per_step = a.ranks * (a.kernels + 1) * 175
steps = max(1, int(a.mib * 2**20 / per_step))
out = sys.stdout
t0 = 10**12
step_ns = 100 * 10**6
out.write('{"schema":"xsprof.job_parts","version":1,"host":"bench","start_ns":%d,"end_ns":%d,'
          '"realtime_offset_ns":1700000000000000000,"sample_period_ns":10101010' %
          (t0, t0 + steps * step_ns))
gpu, launches, joins = [], [], []
out.write(',"gpu":[')
first = True
corr = 0
lrows = []
for s in range(steps):
    base = t0 + s * step_ns
    arrivals = [base + 60 * 10**6 + (15 * 10**6 if r == 3 else rnd.randrange(10**6))
                for r in range(a.ranks)]
    last = max(arrivals)
    for r in range(a.ranks):
        pid, tid = 1000 + r, 1000 + r
        t = base
        rows = []
        for k in range(a.kernels):
            corr += 1
            d = rnd.randrange(100000, 300000)
            rows.append("[1,0,0,0,%d,0,%d,1,7,%d,0,0,%d,%d,0,%d,-1]" %
                        (pid, r, corr, t, t + d, S[kern[k % 20]]))
            lrows.append("[1,1,0,211,%d,%d,%d,7,0,%d,%d,1]" % (pid, tid, t - 5000, corr, 1 + k % 3))
            t += d // 2
        corr += 1
        rows.append("[1,0,0,0,%d,0,%d,1,9,%d,0,0,%d,%d,0,0,-1]" %
                    (pid, r, corr, arrivals[r], last + 200000))
        lrows.append("[1,1,0,211,%d,%d,%d,9,0,%d,4,1]" % (pid, tid, arrivals[r] - 5000, corr))
        out.write(("" if first else ",") + ",".join(rows))
        first = False
n = len(lrows)
out.write('],"launches":[' + ",".join(lrows) + "]")
del lrows
out.write(',"joins":[' + ",".join("[%d,%d]" % (i, i) for i in range(n)) + "]")
samples = []
for s in range(steps * 10):
    for r in range(a.ranks):
        samples.append("[%d,%d,%d,%d,%d]" % (t0 + s * 10**7 + r, 1000 + r, 1000 + r,
                                            1 + s % 4, r % 2))
out.write(',"samples":[' + ",".join(samples) + '],"samples_dropped":0')
out.write(',"stacks":[' + ",".join(
    "[%d,%d,[%s]]" % (1000 + r, k, ",".join(str(S[x]) for x in st))
    for r in range(a.ranks) for k, st in
    [(1, ["main", "train", "forward", "cudaLaunchKernel"]),
     (2, ["main", "train", "backward", "cudaLaunchKernel"]),
     (3, ["main", "train", "optimizer_step", "cudaLaunchKernel"]),
     (4, ["main", "train", "all_reduce", "cudaLaunchKernel"])]) + "]")
out.write(',"threads":[' + ",".join('[%d,%d,"pt_main_%d"]' % (1000 + r, 1000 + r, r)
                                     for r in range(a.ranks)) + "]")
out.write(',"processes":[' + ",".join(
    '{"pid":%d,"name":"python3","labels":%s}' %
    (1000 + r, json.dumps("job.id=%s\x1fjob.rank=%d\x1fjob.world_size=%d" %
                          (a.job, a.rank_base + r, world)))
    for r in range(a.ranks)) + "]")
out.write(',"strings":' + json.dumps(strings) + "}\n")

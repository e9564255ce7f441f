#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""BASE.folded of a --group-by range run against BASE.out, the truth a phase workload printed
(tests/workloads/phases.h: "phase NAME NS" and "total NS"): each ROOT=PHASE[+PHASE...] spec's
share of the CPU samples (GPU leaves left out) within 2 points of those phases' share of the
process's CPU time. One line per spec; exit 1 when one is off or there are under 1000 samples.

Usage: phase_shares.py BASE ROOT=PHASES..."""
import sys
base, specs = sys.argv[1], sys.argv[2:]
roots, total = {}, 0
for line in open(base + ".folded"):
    if line.startswith("#"):
        continue
    stack, w = line.rsplit(" ", 1)
    if ";[gpu] " in stack:
        continue  # GPU time, not CPU: the truth is CPU time
    root = stack.split(";", 1)[0]
    roots[root] = roots.get(root, 0) + int(w)
    total += int(w)
truth = {}
for l in open(base + ".out"):
    f = l.split()
    if f and f[0] == "phase":
        truth[f[1]] = int(f[2])
    elif f and f[0] == "total":
        cpu = int(f[1])
bad = 0
for spec in specs:
    root, phases = spec.split("=")
    want = 100.0 * sum(truth[p] for p in phases.split("+")) / cpu
    got = 100.0 * roots.get(root, 0) / max(total, 1)
    ok = abs(got - want) <= 2.0
    bad += not ok
    print("%s %-8s %5.1f%% of %d samples, its own CPU time %5.1f%%" %
          ("ok  " if ok else "FAIL", root, got, total, want))
sys.exit(1 if bad or total < 1000 else 0)

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A callgrind file (output/callgrind.h) against the folded profile of the same run: each
function's inclusive share as callgrind_annotate prints it (file:function) within POINTS of the
share of the folded samples whose stack holds that function, for every function at 1% or more
of either. Prints one line per function compared, and "OK N functions" or a FAIL line.

With --fn NAME FILE.callgrind instead: the function's self cost as the file holds it, "NAME:
N lines, S... self" (the lines with a cost of their own, each event's sum), names resolved
through callgrind's compressed (N) ids; exit 1 when no function is so named.

Usage: callgrind_check.py FILE.folded FILE.callgrind [POINTS]
       callgrind_check.py --fn NAME FILE.callgrind"""
import re
import subprocess
import sys


def self_cost(name, path):
    names, fn, after_calls, found = {}, None, False, False
    lines, total = set(), []
    for line in open(path):
        line = line.rstrip("\n")
        m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            if m.group(3) is not None:
                names[m.group(2)] = m.group(3)
            if m.group(1) == "fn":
                fn = names.get(m.group(2))
                found |= fn == name
            continue
        if line.startswith("calls="):
            after_calls = True  # the next cost line is the call's inclusive cost
            continue
        m = re.match(r"^(\d+)((?: \d+)+)$", line)
        if not m:
            continue
        if fn == name and not after_calls:
            costs = [int(c) for c in m.group(2).split()]
            total = [a + b for a, b in zip(total, costs)] if total else costs
            if any(costs):
                lines.add(int(m.group(1)))
        after_calls = False
    if not found:
        print(f"FAIL no function {name} in {path}")
        sys.exit(1)
    print(f"{name}: {len(lines)} lines, {' '.join(map(str, total or [0]))} self")
    sys.exit(0)


if sys.argv[1] == "--fn":
    self_cost(sys.argv[2], sys.argv[3])
folded, cg = sys.argv[1], sys.argv[2]
points = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
SITE = re.compile(r"^(.*) \(([^()]*):(\d+)\)$")


def key(frame):
    m = SITE.match(frame)
    return f"{m.group(2)}:{m.group(1)}" if m else f"???:{frame}"


total, holds = 0, {}
for line in open(folded):
    if not line.strip() or line.startswith("#"):
        continue
    stack, w = line.rstrip("\n").rsplit(" ", 1)
    w = int(w)
    total += w
    for k in set(key(f) for f in stack.split(";")):
        holds[k] = holds.get(k, 0) + w
out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", cg],
                     capture_output=True, text=True, check=True).stdout
ann = {}
for line in out.splitlines():
    m = re.match(r"^\s*([\d,]+) \(\s*([\d.]+)%\)\s+(\S.*)$", line)
    if m and m.group(3) != "PROGRAM TOTALS":
        ann[m.group(3)] = float(m.group(2))
m = re.search(r"^\s*([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", out, re.M)
if not m or int(m.group(1).replace(",", "")) != total:
    print(f"FAIL program totals {m.group(1) if m else None}, the folded profile has {total}")
    sys.exit(1)
bad, n = [], 0
for k in sorted(set(holds) | set(ann), key=lambda k: -holds.get(k, 0)):
    want = 100.0 * holds.get(k, 0) / total
    got = ann.get(k, 0.0)
    if want < 1 and got < 1:
        continue
    n += 1
    print(f"  {k}: callgrind {got:.2f}%, folded {want:.2f}%")
    if abs(got - want) > points:
        bad.append(f"{k} {got:.2f}% vs {want:.2f}%")
if bad or n == 0:
    print("FAIL " + ("; ".join(bad) if bad else "no function compared"))
    sys.exit(1)
print(f"OK {n} functions within {points} points of the folded profile (total {total})")

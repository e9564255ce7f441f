#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that backward's CPU samples are under the forward line that made their node.

check_backward.py FOLDED SPLIT.json [--within 3] [--min-joined 0.95] [--min-samples 300]
check_backward.py FOLDED --none

Backward's samples are those under torch::autograd::Engine::execute. Of them, >= min-joined
carry a '[backward of] ' frame, which comes before Net.forward's frame, and that before the
engine's evaluate_function frame (the forward line sits between backward() and the node's
work). The samples under each of Net.forward's two lines (torch_backward.py, found by their
comments) split as the workload measured (SPLIT.json), within --within points. --none: a run
with --no-autograd has no '[backward of] ' frame at all.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = "[backward of] "


def lines_of_layers():
    big = small = None
    with open(os.path.join(HERE, "torch_backward.py")) as f:
        for i, line in enumerate(f, 1):
            if "# the big layer's line" in line:
                big = i
            elif "# the small layer's line" in line:
                small = i
    return big, small


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folded")
    ap.add_argument("split", nargs="?")
    ap.add_argument("--within", type=float, default=3.0)
    ap.add_argument("--min-joined", type=float, default=0.95)
    ap.add_argument("--min-samples", type=int, default=300)
    ap.add_argument("--none", action="store_true")
    a = ap.parse_args()
    stacks = []
    with open(a.folded) as f:
        for line in f:
            st, n = line.rstrip("\n").rsplit(" ", 1)
            stacks.append((st.split(";"), int(n)))
    marked = sum(n for fr, n in stacks if any(x.startswith(MARK) for x in fr))
    if a.none:
        print(f"check_backward: {marked} samples with a '{MARK.strip()}' frame (want 0)")
        return 0 if marked == 0 else 1
    big_line, small_line = lines_of_layers()
    big_frame = f"torch_backward.Net.forward (torch_backward.py:{big_line})"
    small_frame = f"torch_backward.Net.forward (torch_backward.py:{small_line})"
    backward = joined = ordered = big = small = 0
    for fr, n in stacks:
        if not any(x.startswith("torch::autograd::Engine::execute(") for x in fr):
            continue
        backward += n
        at = [i for i, x in enumerate(fr) if x.startswith(MARK)]
        if not at:
            continue
        joined += n
        fwd = [i for i, x in enumerate(fr) if x in (big_frame, small_frame)]
        ev = [i for i, x in enumerate(fr) if "Engine::evaluate_function(" in x]
        if fwd and ev and at[0] <= fwd[0] < ev[0]:
            ordered += n
        if big_frame in fr:
            big += n
        elif small_frame in fr:
            small += n
    with open(a.split) as f:
        truth = json.load(f)
    fails = []
    if backward == 0:
        print("check_backward: no samples under Engine::execute")
        return 1
    share = joined / backward
    print(f"check_backward: {backward} samples in backward, {joined} ({share:.2%}) under a "
          f"forward line, {ordered} with the mark, the forward line and the node's work in order")
    if share < a.min_joined:
        fails.append(f"{share:.2%} of backward's samples joined, want >= {a.min_joined:.0%}")
    if ordered < 0.99 * joined:
        fails.append(f"{joined - ordered} joined samples out of order")
    if big + small < a.min_samples:
        fails.append(f"{big + small} samples under the two layers' lines, want >= {a.min_samples}")
    else:
        got = 100.0 * big / (big + small)
        want = 100.0 * truth["big"]
        print(f"check_backward: big layer (line {big_line}) {got:.1f}% of the layers' backward "
              f"samples ({big} of {big + small}); the workload measured {want:.1f}%")
        if abs(got - want) > a.within:
            fails.append(f"big layer {got:.1f}% against {want:.1f}% measured: over {a.within} "
                         "points")
    for f in fails:
        print("FAIL " + f)
    return 1 if fails else 0


sys.exit(main())

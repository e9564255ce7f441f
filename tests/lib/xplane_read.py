#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Reads an XPlane file (output/xplane.h) with the protobuf module protoc generates from the
vendored xplane.proto (output/proto/xla), checks what any reader relies on, and prints what a
test compares:

  hostname NAME
  plane NAME lines N events M
  line PLANE NAME events M
  event PLANE KIND NAME COUNT TOTAL_PS     (KIND: gpu, api, nvtx, launch, wait, frame)
  stack PLANE EVENT_NAME STACK             (launch_stack of GPU events, one line per distinct)

(names with their newlines and backslashes escaped as \\n and \\\\).

Checks (exit 1 with a FAIL line): every event's metadata id, stat metadata id and ref_value
is in its plane's maps; each line's timestamp is within a day of now (epoch ns); events of a
GPU stream's line do not overlap; the frames of a samples line nest (each one inside its
parent or apart from it).

Usage: xplane_read.py FILE.xplane.pb   (needs python3-protobuf and protoc)"""
import os
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
proto_root = os.path.join(here, "..", "..", "output", "proto", "xla")
gen = tempfile.mkdtemp(prefix="xsprof-xplane-py-")
subprocess.run(["protoc", f"--python_out={gen}", "-I", proto_root,
                "tsl/profiler/protobuf/xplane.proto"], check=True)
sys.path.insert(0, gen)
from tsl.profiler.protobuf import xplane_pb2  # noqa: E402

space = xplane_pb2.XSpace()
space.ParseFromString(open(sys.argv[1], "rb").read())
fails = []
now_ns = time.time_ns()
for h in space.hostnames:
    print(f"hostname {h}")
counts = {}
stacks = set()
for plane in space.planes:
    nev = sum(len(line.events) for line in plane.lines)
    print(f"plane {plane.name} lines {len(plane.lines)} events {nev}")
    for k, md in plane.event_metadata.items():
        if md.id != k:
            fails.append(f"{plane.name}: event metadata key {k} has id {md.id}")
    for k, md in plane.stat_metadata.items():
        if md.id != k:
            fails.append(f"{plane.name}: stat metadata key {k} has id {md.id}")
    stat_name = {k: md.name for k, md in plane.stat_metadata.items()}
    for line in plane.lines:
        print(f"line {plane.name} {line.name!r} events {len(line.events)}")
        if abs(line.timestamp_ns - now_ns) > 86400 * 10**9:
            fails.append(f"{line.name}: timestamp_ns {line.timestamp_ns} is not an epoch time")
        spans = []
        for e in line.events:
            if e.metadata_id not in plane.event_metadata:
                fails.append(f"{line.name}: event metadata {e.metadata_id} missing")
                continue
            name = plane.event_metadata[e.metadata_id].name
            stats = {}
            for s in e.stats:
                if s.metadata_id not in stat_name:
                    fails.append(f"{line.name}: stat metadata {s.metadata_id} missing")
                    continue
                which = s.WhichOneof("value")
                if which == "ref_value":
                    if s.ref_value not in stat_name:
                        fails.append(f"{line.name}: ref_value {s.ref_value} missing")
                        continue
                    stats[stat_name[s.metadata_id]] = stat_name[s.ref_value]
                else:
                    stats[stat_name[s.metadata_id]] = getattr(s, which)
            if plane.name.startswith("/device:GPU:"):
                kind = "gpu"
            elif line.display_name.endswith(" samples"):
                kind = "frame"
            else:
                kind = {"cuda_runtime": "api", "cuda_driver": "api", "nvtx": "nvtx",
                        "cuda_launch": "launch", "gpu_wait": "wait"}.get(stats.get("kind"), "?")
            key = (plane.name, kind, name)
            c = counts.setdefault(key, [0, 0])
            c[0] += 1
            c[1] += e.duration_ps
            if "launch_stack" in stats:
                stacks.add((plane.name, name, stats["launch_stack"]))
            spans.append((e.offset_ps, e.offset_ps + e.duration_ps))
        spans.sort(key=lambda s: (s[0], -s[1]))
        if plane.name.startswith("/device:GPU:"):
            for a, b in zip(spans, spans[1:]):
                if b[0] < a[1]:
                    fails.append(f"{line.name}: GPU events overlap: {a} and {b}")
                    break
        elif line.display_name.endswith(" samples"):
            open_ = []
            for s in spans:
                while open_ and open_[-1][1] <= s[0]:
                    open_.pop()
                if open_ and s[1] > open_[-1][1]:
                    fails.append(f"{line.name}: frames do not nest: {open_[-1]} and {s}")
                    break
                open_.append(s)
def flat(s):
    return s.replace("\\", "\\\\").replace("\n", "\\n")


for (plane, kind, name), (n, ps) in sorted(counts.items()):
    print(f"event {plane} {kind} {flat(name)} {n} {ps}")
for plane, name, st in sorted(stacks):
    print(f"stack {plane} {flat(name)} {flat(st)}")
if fails:
    print("FAIL " + "; ".join(fails[:5]))
    sys.exit(1)

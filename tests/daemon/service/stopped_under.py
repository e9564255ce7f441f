# SPDX-License-Identifier: Apache-2.0
"""stopped_under.py PID: the processes in state T (stopped) among PID's descendants and PID
itself, as they are numbered in this /proc, on one line."""
import os
import sys

root, kids, state = int(sys.argv[1]), {}, {}
for p in filter(str.isdigit, os.listdir("/proc")):
    try:
        s = open(f"/proc/{p}/stat").read()
    except OSError:
        continue
    rest = s[s.rindex(")") + 2:].split()
    state[int(p)] = rest[0]
    kids.setdefault(int(rest[1]), []).append(int(p))
todo, out = [root], []
while todo:
    p = todo.pop()
    if state.get(p) in ("T", "t"):
        out.append(str(p))
    todo += kids.get(p, [])
print(" ".join(out))

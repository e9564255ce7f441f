#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Go stacks from .gopclntab (daemon/unwind/gopclntab.c), beside perf record -g on the same
# program: tests/workloads/gomix (Debian's golang-go), 4 s at 999 Hz, under xsprofd -f (the
# default unwind: Go's own table) and then under perf's frame-pointer walk. Asserted for
# xsprofd: >= 95% of the program's samples whole (reaching runtime.goexit, runtime.mstart or
# runtime.rt0_go, the roots Go marks), main.mixA (a leaf without a frame) under main.callerA in
# >= 95% of its samples, crypto/sha256.block (assembly that uses rbp as a plain register)
# under main.hashB in >= 95% of its samples; and a stripped copy (strip -s, 2 s) as whole, its
# functions named from .gopclntab; and the program linked with cgo (xs_gomix_cgo, 2 s: its C code
# has .eh_frame, its Go code only .gopclntab) as whole. perf's figures are printed beside them.
# Usage: tests/daemon/unwind/unwind_go.sh BUILD_DIR      (ctest unwind_go)
set -uo pipefail

build=$(cd "$1" && pwd)
xsprofd=$build/daemon/xsprofd
gomix=$build/tests/xs_gomix
gomix_cgo=$build/tests/xs_gomix_cgo
py=/usr/bin/python3
for f in "$xsprofd" "$gomix" "$gomix_cgo" "$py"; do
	[[ -x $f ]] || { echo "FAIL missing $f"; exit 1; }
done
command -v perf >/dev/null || { echo "FAIL no perf (apt-get install linux-perf)"; exit 1; }
[[ $(id -u) == 0 ]] || { echo "FAIL needs root (BPF, perf)"; exit 1; }
dir=$(mktemp -d /tmp/xsprof-go-XXXXXX)
trap 'rm -rf "$dir"' EXIT

if ! timeout 120 "$xsprofd" -f -v -F 999 -o "$dir/x.folded" -- "$gomix" 4 >"$dir/x.log" 2>&1; then
	echo "FAIL xsprofd: $(tail -5 "$dir/x.log")"
	exit 1
fi
grep -E "walk ends|unwind tables: [0-9]" "$dir/x.log"
# Stripped, as Debian's and many fleets' Go binaries are: the names come from .gopclntab.
strip -s -o "$dir/xs_gomix" "$gomix" || { echo "FAIL strip"; exit 1; }
if ! timeout 120 "$xsprofd" -f -F 999 -o "$dir/s.folded" -- "$dir/xs_gomix" 2 \
	>"$dir/s.log" 2>&1; then
	echo "FAIL xsprofd (stripped): $(tail -5 "$dir/s.log")"
	exit 1
fi
if ! timeout 120 "$xsprofd" -f -F 999 -o "$dir/c.folded" -- "$gomix_cgo" 2 >"$dir/c.log" 2>&1; then
	echo "FAIL xsprofd (cgo): $(tail -5 "$dir/c.log")"
	exit 1
fi
if ! timeout 120 perf record -q -g -F 999 -e cpu-clock -o "$dir/perf.data" -- "$gomix" 4 \
	>"$dir/perf.log" 2>&1 ||
	! perf script -i "$dir/perf.data" -F comm,ip,sym >"$dir/perf.txt" 2>>"$dir/perf.log"; then
	echo "FAIL perf: $(tail -5 "$dir/perf.log")"
	exit 1
fi

"$py" - "$dir/x.folded" "$dir/perf.txt" "$dir/s.folded" "$dir/c.folded" <<'PYEOF'
import re, sys

ROOTS = ("runtime.goexit", "runtime.mstart", "runtime.rt0_go")


def base(name):
    # "runtime.goexit.abi0" and perf's "runtime.goexit.abi0+0x1" are one frame.
    name = re.sub(r"\+0x[0-9a-f]+$", "", name)
    return re.sub(r"\.abi0$", "", name)


def figures(stacks):
    """stacks: (frames outermost first, count) of the program's samples."""
    total = whole = leaf = leaf_ok = blk = blk_ok = 0
    for frames, n in stacks:
        fr = [base(f) for f in frames]
        total += n
        if fr and fr[0] in ROOTS:
            whole += n
        if "main.mixA" in fr:
            i = fr.index("main.mixA")
            leaf += n
            leaf_ok += n if i > 0 and fr[i - 1] == "main.callerA" else 0
        if "crypto/sha256.block" in fr:
            blk += n
            blk_ok += n if "main.hashB" in fr[: fr.index("crypto/sha256.block")] else 0
    pc = lambda a, b: 100.0 * a / max(b, 1)
    return total, pc(whole, total), leaf, pc(leaf_ok, leaf), blk, pc(blk_ok, blk)


def folded(path, comm="xs_gomix"):
    out = []
    for line in open(path):
        if line.startswith("#") or not line.startswith(comm + ";"):
            continue
        st, n = line.rstrip("\n").rsplit(" ", 1)
        fr = [f for f in st.split(";")[1:] if not f.endswith("_[k]")]
        out.append((fr, int(n)))
    return out


xs, stripped, cgo = folded(sys.argv[1]), folded(sys.argv[3]), folded(sys.argv[4], "xs_gomix_cgo")

perf, cur = [], None
for line in open(sys.argv[2]):
    line = line.rstrip("\n")
    if not line.strip():
        if cur is not None:
            perf.append((cur[::-1], 1))
        cur = None
    elif not line.startswith(("\t", " ")):
        cur = [] if line.split()[0] == "xs_gomix" else None
    elif cur is not None:
        parts = line.split()
        sym = parts[1] if len(parts) > 1 else "[unknown]"
        if not sym.startswith("[unknown]") and parts[0].startswith("ffffffff"):
            continue  # kernel frames
        cur.append(sym)
if cur is not None:
    perf.append((cur[::-1], 1))

fail = 0
x, p, st, cg = figures(xs), figures(perf), figures(stripped), figures(cgo)
print("%-8s %8s %7s %10s %12s %10s %12s" % ("", "samples", "whole", "mixA", "under caller",
                                            "sha256", "under hashB"))
for name, f in (("xsprofd", x), ("stripped", st), ("cgo", cg), ("perf -g", p)):
    print("%-8s %8d %6.1f%% %10d %11.1f%% %10d %11.1f%%" % ((name,) + f))
for what, got, n in (("whole", x[1], x[0]), ("mixA under callerA", x[3], x[2]),
                     ("sha256.block under hashB", x[5], x[4])):
    ok = got >= 95 and n >= 300
    fail += not ok
    print("%s xsprofd %s: %.1f%% of %d samples (need 95%% of 300 or more)" %
          ("ok  " if ok else "FAIL", what, got, n))
# The stripped copy (2 s): the same names, as whole.
ok = st[1] >= 95 and st[3] >= 95 and st[2] >= 150
fail += not ok
print("%s stripped: %.1f%% whole, mixA under callerA in %.1f%% of %d (need 95%% of 150 or more)"
      % ("ok  " if ok else "FAIL", st[1], st[3], st[2]))
# The cgo build (2 s): C's FDEs and Go's rows in one table.
ok = cg[1] >= 95 and cg[3] >= 95 and cg[2] >= 150
fail += not ok
print("%s cgo: %.1f%% whole, mixA under callerA in %.1f%% of %d (need 95%% of 150 or more)"
      % ("ok  " if ok else "FAIL", cg[1], cg[3], cg[2]))
sys.exit(1 if fail else 0)
PYEOF

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Whole stacks in real software, beside perf on the same work (issue 35): Debian's clang++-14
# compiling a template-heavy file three times (libLLVM and libclang-cpp without frame pointers,
# stacks 30 to over 127 frames deep), and Debian's python3 + numpy in a loop of np.dot and
# np.linalg.svd (numpy's C extension calling the reference libblas/liblapack, Fortran without
# frame pointers). Each workload runs under xsprofd -f (unwind tables, the default), then under
# `perf record --call-graph dwarf` (perf's best mode: a copy of the stack with each sample,
# unwound afterwards; 8 KiB by default, and again with the most perf allows, 65528 bytes) and
# `perf record -g` (frame pointers), one after the other, all at 499 Hz on cpu-clock. Only the
# workload's own processes count (comm clang* / python3*); kernel frames are left out.
#
# Asserted, for xsprofd: clang++: >= 90% of samples with 8 or more user frames, >= 90% of
# those not cut at their stack copy (below) reaching _start (the process's outermost frame),
# >= 85% of all, and <= 10% cut at the copy; numpy: >= 95% of the samples holding a
# BLAS/LAPACK frame reach _start through it; and on each figure no more than 5 points below
# the better of perf's two dwarf runs (perf's clang++ stacks stop at __libc_start_call_main in
# some runs and not in others, with the same flags). What xsprofd loses in clang++: stacks past
# 127 frames, the first compile's samples while libLLVM's table is built (held with a 16 KiB
# copy of their stack; clang's go deeper), and the callers of a frame over 32 KiB (one in
# libLLVM's loop strength reduction: a table row's CFA offset is 16 bits).
# Prints the table (bench/README.md keeps the figures) and "ok"/"FAIL" lines; any FAIL fails.
# A missing tool (perf, clang++-14, numpy) fails: nothing is skipped.
#
# Usage: tests/daemon/unwind/fidelity.sh BUILD_DIR      (ctest runs it as fidelity_real_software)
set -uo pipefail

build=$(cd "$1" && pwd)
xsprofd=$build/daemon/xsprofd
py=/usr/bin/python3
cxx=/usr/bin/clang++-14
freq=499
for f in "$xsprofd" "$py" "$cxx"; do
	[[ -x $f ]] || { echo "FAIL missing $f (scripts/deps.sh installs clang-14, python3)"; exit 1; }
done
command -v perf >/dev/null || { echo "FAIL no perf (apt-get install linux-perf)"; exit 1; }
"$py" -c "import numpy" 2>/dev/null ||
	{ echo "FAIL $py cannot import numpy (apt-get install python3-numpy)"; exit 1; }
[[ $(id -u) == 0 ]] || { echo "FAIL needs root (BPF, perf)"; exit 1; }
dir=$(mktemp -d /tmp/xsprof-fidelity-XXXXXX)
trap 'rm -rf "$dir"' EXIT

# The compile: std::map, std::vector, std::function, std::unordered_map, shared_ptr, sort and
# ostringstream instantiated over two key types at -O2: ~2 s of clang on an idle core.
cat >"$dir/tmpl.cpp" <<'EOF'
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>
template <int N> struct key {
	int v[N % 5 + 1];
	bool operator<(const key &o) const { return v[0] < o.v[0]; }
};
template <int N> std::string work(const std::string &s)
{
	std::map<key<N>, std::vector<std::function<int(key<N>)>>> m;
	std::unordered_map<std::string, std::shared_ptr<key<N>>> u;
	std::vector<key<N>> v(N + 1);
	std::sort(v.begin(), v.end());
	m[v[0]].push_back([](key<N> k) { return k.v[0] + N; });
	u[s] = std::make_shared<key<N>>();
	std::ostringstream os;
	os << m.size() << u.size();
	return os.str();
}
template <int... I> std::string all(const std::string &s, std::integer_sequence<int, I...>)
{
	return (work<I>(s) + ...);
}
std::string run(const std::string &s) { return all(s, std::make_integer_sequence<int, 2>{}); }
EOF
cat >"$dir/blas.py" <<'EOF'
import sys, time
import numpy as np
end = time.monotonic() + float(sys.argv[1])
rng = np.random.default_rng(1)
a = rng.standard_normal((300, 300))
b = rng.standard_normal((300, 300))
rounds = 0
while time.monotonic() < end:
    c = np.dot(a, b)  # cblas_dgemm
    np.linalg.svd(c[:120, :120])  # dgesdd and the LAPACK/BLAS under it
    rounds += 1
print("rounds", rounds)
EOF
export OPENBLAS_NUM_THREADS=1
# shellcheck disable=SC2016 # expanded by that sh
clang_cmd=(sh -c 'for i in 1 2 3; do "$0" -std=c++17 -O2 -c "$1" -o /dev/null || exit 1; done'
	"$cxx" "$dir/tmpl.cpp")
numpy_cmd=("$py" "$dir/blas.py" 4)

# xsprof NAME CMD...: NAME.xsprofd.folded
xsprof() {
	local name=$1
	shift
	if ! timeout 300 "$xsprofd" -f -v -F $freq --no-cuda --cupti-socket "$dir/cupti.sock" \
		-o "$dir/$name.xsprofd.folded" -- "$@" >"$dir/$name.xsprofd.log" 2>&1; then
		echo "FAIL xsprofd -- $name:"
		tail -5 "$dir/$name.xsprofd.log"
		return 1
	fi
	grep -E "user stack walk ends|first samples" "$dir/$name.xsprofd.log"
}

# perf_run NAME MODE CMD...: NAME.MODE.perf (perf script, leaf first); MODE dwarf (8 KiB of
# stack), dwarf64 (65528 bytes) or fp
perf_run() {
	local name=$1 mode=$2 cg
	shift 2
	case $mode in
	dwarf) cg=dwarf ;;
	dwarf64) cg=dwarf,65528 ;;
	fp) cg=fp ;;
	esac
	if ! timeout 300 perf record -q -e cpu-clock -F $freq --call-graph $cg --no-buildid-cache \
		-o "$dir/$name.$mode.data" -- "$@" >"$dir/$name.$mode.log" 2>&1 ||
		! timeout 300 perf script --no-inline -F comm,tid,ip,sym,dso -i "$dir/$name.$mode.data" \
			>"$dir/$name.$mode.perf" 2>>"$dir/$name.$mode.log"; then
		echo "FAIL perf --call-graph $cg -- $name:"
		tail -5 "$dir/$name.$mode.log"
		return 1
	fi
	rm -f "$dir/$name.$mode.data"
}

start=$SECONDS
failures=0
# each NAME CMD...: the four profiles of one workload, one after the other
each() {
	echo "== $1: xsprofd, perf --call-graph dwarf, dwarf,65528, perf -g"
	xsprof "$@" || failures=$((failures + 1))
	for mode in dwarf dwarf64 fp; do
		perf_run "$1" $mode "${@:2}" || failures=$((failures + 1))
	done
}
each clang "${clang_cmd[@]}"
each numpy "${numpy_cmd[@]}"
echo "profiles taken in $((SECONDS - start)) s"

$py - "$dir" <<'EOF' || failures=$((failures + 1))
import os, re, sys
from collections import Counter

d = sys.argv[1]
MARGIN = 5.0  # points xsprofd may trail perf's better dwarf run by on any figure
# BLAS and LAPACK entry points (Fortran names: dgemm_, dgesdd_, ...; CBLAS: cblas_dgemm) or an
# unnamed frame in their files.
BLAS = re.compile(r"^(cblas_i?[sdcz][a-z0-9]+|i?[sdcz][a-z0-9]{1,6}_|ila[a-z0-9]+_|lsame_|xerbla_"
                  r"|iparmq_|ieeeck_|(lib(open)?blas|liblapack)[^ ;]*\+0x[0-9a-f]+)$")
BLAS_FILE = re.compile(r"^(lib(open)?blas|liblapack)")
COMMS = {"clang": "clang", "numpy": "python3"}
# A sample held while its file's table was built, whose stack went deeper than the copy taken
# with it: the start-up loss the header names (perf has none such: it unwinds afterwards).
COPY_CUT = "[truncated: end of stack copy]"


def folded(path, comm):
    """(user frames, outermost first; count) of the folded profile's samples of comm*"""
    for line in open(path):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        frames = stack.split(";")
        if frames[0].startswith(comm):
            yield [f for f in frames[1:] if not f.endswith("_[k]")], int(n)


def perf(path, comm):
    """the same from perf script -F comm,tid,ip,sym,dso (leaf first, a blank line after each)"""
    take, frames = False, []
    for line in open(path, errors="replace"):
        if not line.strip():
            if take:
                yield frames[::-1], 1
            take, frames = False, []
        elif not line[0].isspace():
            take = line.startswith(comm)
        else:
            ip, _, rest = line.strip().partition(" ")
            m = re.match(r"^(.*) \(([^()]*)\)$", rest)
            sym, dso = (m.group(1), m.group(2)) if m else (rest, "")
            if dso.startswith("[kernel") or ip.startswith("ffffffff"):
                continue
            if BLAS_FILE.match(os.path.basename(dso)) and not BLAS.match(sym):
                sym = os.path.basename(dso) + "+0x" + ip
            frames.append(sym)
    if take:
        yield frames[::-1], 1


def figures(samples):
    c = Counter()
    for frames, n in samples:
        whole = bool(frames) and frames[0] == "_start"
        blas = any(BLAS.match(f) for f in frames)
        c["n"] += n
        c["deep"] += n * (len(frames) >= 8)
        c["whole"] += n * whole
        c["blas"] += n * blas
        c["blas_whole"] += n * (blas and whole)
        copy = bool(frames) and frames[0] == COPY_CUT
        c["copy"] += n * copy
    pc = lambda a, b: 100.0 * a / b if b else 0.0
    settled = c["n"] - c["copy"]
    return {"n": c["n"], "deep": pc(c["deep"], c["n"]), "whole": pc(c["whole"], c["n"]),
            "copy": pc(c["copy"], c["n"]), "settled": pc(c["whole"], settled),
            "blas": pc(c["blas"], c["n"]), "blas_whole": pc(c["blas_whole"], c["blas"])}


fails = 0


def need(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    fails += not cond


tools = [("xsprofd", "xsprofd.folded", folded), ("perf dwarf", "dwarf.perf", perf),
         ("perf dwarf64", "dwarf64.perf", perf), ("perf -g", "fp.perf", perf)]
print(f"{'':8} {'':12} {'samples':>7} {'>=8 user frames':>15} {'reach _start':>12}"
      f" {'cut at copy':>11} {'hold BLAS':>9} {'through BLAS to _start':>22}")
fig = {}
for w, comm in COMMS.items():
    for tool, ext, parse in tools:
        path = f"{d}/{w}.{ext}"
        f = figures(parse(path, comm)) if os.path.exists(path) else None
        fig[w, tool] = f
        if f is None:
            print(f"{w:8} {tool:12} (no profile)")
            continue
        blas = f"{f['blas']:8.1f}% {f['blas_whole']:21.1f}%" if w == "numpy" else ""
        print(f"{w:8} {tool:12} {f['n']:7} {f['deep']:14.1f}% {f['whole']:11.1f}% "
              f"{f['copy']:10.1f}% {blas}")



def best(w):
    """perf's better dwarf run on each figure (None if either is missing)"""
    a, b = fig[w, "perf dwarf"], fig[w, "perf dwarf64"]
    return {k: max(a[k], b[k]) for k in a} if a and b else None


x, p = fig["clang", "xsprofd"], best("clang")
if x and p:
    need(x["n"] >= 500 and p["n"] >= 500, f"clang++: {x['n']} samples and perf {p['n']} (>= 500)")
    need(x["deep"] >= 90, f"clang++: xsprofd {x['deep']:.1f}% with >= 8 user frames (>= 90%)")
    # The first compile's samples held while libLLVM's table is built: 1.5-2% of them cut at
    # the stack copy on an idle machine, 6.5% on a loaded one (CI, 90.0% reach _start then).
    # The settled figure is the unwinder's; the whole one and the cut share bound the start-up.
    need(x["copy"] <= 10,
         f"clang++: xsprofd {x['copy']:.1f}% cut at the stack copy while tables were built "
         f"(<= 10%)")
    need(x["whole"] >= 85, f"clang++: xsprofd {x['whole']:.1f}% reach _start (>= 85%)")
    need(x["settled"] >= 90,
         f"clang++: xsprofd {x['settled']:.1f}% of the samples not cut at the copy reach _start "
         f"(>= 90%)")
    x = dict(x, whole=x["settled"])
    for k, what in (("deep", ">= 8 user frames"), ("whole", "reach _start (not cut at the copy)")):
        need(x[k] >= p[k] - MARGIN,
             f"clang++ {what}: xsprofd {x[k]:.1f}% vs perf dwarf's best {p[k]:.1f}% "
             f"(-{MARGIN:g} allowed)")
else:
    need(False, "clang++: a profile is missing")
x, p = fig["numpy", "xsprofd"], best("numpy")
if x and p:
    need(x["n"] >= 500 and p["n"] >= 500, f"numpy: {x['n']} samples and perf {p['n']} (>= 500)")
    need(x["blas"] >= 50,
         f"numpy: {x['blas']:.1f}% of xsprofd's samples hold a BLAS frame (>= 50%)")
    need(x["blas_whole"] >= 95,
         f"numpy: xsprofd {x['blas_whole']:.1f}% of BLAS samples reach _start (>= 95%)")
    need(x["blas_whole"] >= p["blas_whole"] - MARGIN,
         f"numpy through BLAS to _start: xsprofd {x['blas_whole']:.1f}% vs perf dwarf's best "
         f"{p['blas_whole']:.1f}% (-{MARGIN:g} allowed)")
else:
    need(False, "numpy: a profile is missing")
sys.exit(1 if fails else 0)
EOF
echo "took $((SECONDS - start)) s"
if ((failures)); then
	echo "FAIL fidelity: $failures"
	exit 1
fi
echo "PASS fidelity"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Symbolization speed and memory, beside addr2line and perf report on the same addresses.
#
#   sudo bench/symbolize.sh --build build [--seconds 3] [--debug-info]
#
# 1. Runs a workload (python3 busy in pure Python: libpython's 12k functions, libc, libm) and
#    records its sampled ips with perf record (no -g: Python is built without frame pointers,
#    so frame-pointer callchains would be garbage addresses that name nothing).
# 2. perf script dumps every sampled address; xs_symbolize_bench names them all: cold (fresh
#    symbolizer: snapshot, ELF reads, first lookups) and warm (again, for a second), and prints
#    frames/s and peak memory (max RSS, and the symbolizer's own accounting).
# 3. The same addresses go to addr2line -f (per mapped file, at their ELF addresses) and the
#    same perf.data to perf report --stdio; both are timed (frames/s over the addresses sent).
# Takes ~20 s.
set -euo pipefail
build=build secs=3 dbg=""
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=$2; shift ;;
	--seconds) secs=$2; shift ;;
	--debug-info) dbg=--debug-info ;;
	-h|--help) sed -n '3,16p' "$0"; exit 0 ;;
	*) echo "symbolize.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
	esac
	shift
done
bench=$build/tests/xs_symbolize_bench
[ -x "$bench" ] || { echo "build it first: cmake --build $build --target xs_symbolize_bench" >&2; exit 1; }
for t in perf addr2line python3; do
	command -v $t >/dev/null || { echo "needs $t (apt-get install linux-perf binutils python3)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/xsprof-symbench-XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT INT TERM

# The interpreter itself, not a wrapper script (pyenv's shims fork it instead of exec'ing).
py=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')
"$py" -c '
import math, itertools
def leaf(x): return math.sqrt(x) * math.sin(x)
def mid(n): return sum(leaf(i) for i in range(n))
while True: mid(10000); sorted(str(i) for i in range(2000))
' &
pid=$!
sleep 0.5
perf record -q -F 4999 -p "$pid" -o "$work/perf.data" -- sleep "$secs" 2>/dev/null
# User-space frames only (the kernel's are another table); perf prints some frames it could
# not place as small map-relative numbers: those are left out.
perf script -i "$work/perf.data" -F ip 2>/dev/null | awk 'length($1) >= 9 && $1 ~ /^[0-9a-f]+$/ && $1 !~ /^ffff/ {print $1}' \
	> "$work/addrs"
n=$(wc -l < "$work/addrs")
echo "addresses: $n user frames from ${secs}s of perf record at 4999 Hz on python3 (sampled ips)"
mkdir -p "$work/a2l"
/usr/bin/time -f "  (whole run: %e s, max RSS %M KiB)" "$bench" "$pid" "$work/addrs" $dbg --a2l "$work/a2l"

# addr2line: one process per mapped file, all of that file's addresses at once.
start=$(date +%s.%N)
a2l_n=0
while read -r idx path; do
	c=$(wc -l < "$work/a2l/$idx.addrs")
	a2l_n=$((a2l_n + c))
	/usr/bin/time -a -o "$work/a2l.rss" -f "%M" addr2line -f -e "$path" < "$work/a2l/$idx.addrs" > /dev/null
done < "$work/a2l/modules"
end=$(date +%s.%N)
echo "addr2line -f: $a2l_n frames in $(echo "$end - $start" | bc) s: $(echo "$a2l_n / ($end - $start)" | bc) frames/s, max RSS $(sort -n "$work/a2l.rss" | tail -1) KiB"

start=$(date +%s.%N)
/usr/bin/time -o "$work/perf.rss" -f "%M" perf report -i "$work/perf.data" --stdio -g none --sort sym > /dev/null 2>&1
end=$(date +%s.%N)
echo "perf report: $n frames in $(echo "$end - $start" | bc) s: $(echo "$n / ($end - $start)" | bc) frames/s (whole report, kernel frames too), max RSS $(cat "$work/perf.rss") KiB"

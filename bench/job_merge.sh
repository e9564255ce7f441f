#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What merging one host's job parts costs as they grow (issue 53, H10): job parts of an 8-rank
# job made by bench/job_parts_gen.py at SIZES MiB (default 8 16 32 64; --short 4 16), each
# read, merged, built and written (report, trace, diff) by xs_job_merge_bench, the sizes'
# runs interleaved and repeated (--reps, default 3; median). Prints per size the seconds and
# peak RSS, and per MiB of parts: ms and RSS MiB at the largest size, and the growth (ms per
# MiB at the largest size / at the smallest: 1 is linear). --json FILE: those figures for
# bench/budget.sh (job_merge_ms_per_mib, job_merge_rss_per_mib, job_merge_growth).
#
# Usage: bench/job_merge.sh [--build DIR] [--short] [--reps N] [--sizes "A B C"] [--json FILE]
set -euo pipefail

build=build
sizes="8 16 32 64"
reps=3
json=
while [ $# -gt 0 ]; do
	case "$1" in
	--build) build=$2; shift 2 ;;
	--short) sizes="4 16"; reps=2; shift ;;
	--reps) reps=$2; shift 2 ;;
	--sizes) sizes=$2; shift 2 ;;
	--json) json=$2; shift 2 ;;
	-h | --help) sed -n '3,12p' "$0"; exit 0 ;;
	*) echo "job_merge.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
here=$(cd "$(dirname "$0")" && pwd)
bench=$build/output/xs_job_merge_bench
[ -x "$bench" ] || { echo "job_merge.sh: $bench missing (cmake --build $build)" >&2; exit 1; }
dir=$(mktemp -d /tmp/xsprof-job-merge.XXXXXX)
trap 'rm -rf "$dir"' EXIT

for s in $sizes; do
	# The generator's MiB is of its estimate; scaled to what it writes (77 -> 60 MiB).
	python3 "$here/job_parts_gen.py" --mib "$(python3 -c "print($s * 77 / 60)")" >"$dir/$s.json"
done
for ((r = 0; r < reps; r++)); do
	for s in $sizes; do
		"$bench" "$dir/$s.json" >>"$dir/$s.out"
	done
done
python3 - "$dir" "$json" $sizes <<'PY'
import json, statistics, sys
d, out, sizes = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = []
for s in sizes:
    runs = [dict(zip(l.split()[0::2], l.split()[1::2])) for l in open(f"{d}/{s}.out")]
    mib = int(runs[0]["bytes"]) / 2**20
    t = statistics.median(float(r["total_s"]) for r in runs)
    rd = statistics.median(float(r["read_s"]) for r in runs)
    rss = statistics.median(float(r["rss_mib"]) for r in runs)
    rows.append((mib, t, rd, rss, runs[0]["gpu"]))
    print(f"  {mib:6.1f} MiB of parts ({runs[0]['gpu']} GPU records): read {rd:.3f} s, "
          f"all {t:.3f} s, peak RSS {rss:.0f} MiB ({len(runs)} runs)")
big, small = rows[-1], rows[0]
fig = {"job_merge_ms_per_mib": round(1000 * big[1] / big[0], 1),
       "job_merge_rss_per_mib": round(big[3] / big[0], 2),
       "job_merge_growth": round((big[1] / big[0]) / (small[1] / small[0]), 2)}
print("job_merge: %.1f ms and %.2f MiB of RSS per MiB of parts at %.0f MiB; growth %.2f" %
      (fig["job_merge_ms_per_mib"], fig["job_merge_rss_per_mib"], big[0], fig["job_merge_growth"]))
if out:
    json.dump(fig, open(out, "w"))
PY

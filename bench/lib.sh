# SPDX-License-Identifier: Apache-2.0
# Sourced by the benchmarks: helpers more than one of them needs.

# median_of [FILE...]: the median of the numbers (one per line) in FILE or stdin; nan if none.
median_of() {
	sort -n "$@" | awk '{ v[NR] = $1 } END {
		if (!NR) { print "nan"; exit }
		print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# bpf_stats PID: "NS CNT", run time and runs of the perf_event programs whose fds PID holds
# (kernel.bpf_stats_enabled must be 1).
bpf_stats() {
	local owned

	owned=$(cat /proc/"$1"/fdinfo/* 2>/dev/null | sed -nE 's/^prog_id:\s*([0-9]+)/\1/p' || true)
	bpftool prog show --json | python3 -c '
import json, sys
owned = set(int(x) for x in sys.argv[1].split())
mine = [p for p in json.load(sys.stdin) if p.get("type") == "perf_event" and p["id"] in owned]
print(sum(p.get("run_time_ns", 0) for p in mine), sum(p.get("run_cnt", 0) for p in mine))' "$owned"
}

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# OTLP profiles from a one-shot run (xsprofd -f ... -o FILE.otlp.pb): the bytes decode with protoc
# against the vendored opentelemetry-proto files (output/proto/, v1.11.0) as an
# ExportProfilesServiceRequest, and tests/lib/otlp_read.py (which checks the dictionary rules: entry
# 0 of every table its zero value, indexes in range, one value and unique keys per sample) finds
# the frames a person looks for in the order they sit: xs_split's xs_work_alpha under xs_worker
# in the cpu profile, with process and thread labels; and, from the GPU test double xs_usdt_gpu (USDT
# launches joined to fake CUPTI kernel records), each kernel under its launching site in the gpu
# profile with its GPU time (7 x 1 ms, 5 x 2 ms); and the GPU's idle time by cause under the
# stack it is blamed on (gpu_idle), from an input-bound loop. Needs root, BTF, protoc, python3.
#
# Usage: tests/daemon/oneshot/otlp_oneshot.sh BUILD_DIR      (ctest runs it as otlp_oneshot)
set -uo pipefail

build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")/../.." && pwd)
src=$(cd "$here/.." && pwd)
xsprofd=$build/daemon/xsprofd
split=$build/tests/xs_split
gpu=$build/tests/xs_usdt_gpu
failures=0
pass() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }
for f in "$xsprofd" "$split" "$gpu"; do
	[[ -x $f ]] || { echo "FAIL missing $f"; exit 1; }
done
command -v protoc >/dev/null || { echo "FAIL protoc missing (scripts/deps.sh installs protobuf-compiler)"; exit 1; }
[[ $(id -u) == 0 ]] || { echo "FAIL needs root"; exit 1; }
dir=$(mktemp -d /tmp/xsprof-otlp-XXXXXX)
trap 'rm -rf "$dir"' EXIT
decode() {
	protoc --decode=opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest \
		-I "$src/output/proto" \
		opentelemetry/proto/collector/profiles/v1development/profiles_service.proto <"$1"
}

# CPU: xs_split's two threads.
# As rank 2 of a torchrun job: its samples carry the job labels read from its environment.
if ! RANK=2 WORLD_SIZE=4 TORCHELASTIC_RUN_ID=xs-otlp-job \
	"$xsprofd" --foreground --freq 199 -o "$dir/cpu.otlp.pb" -o "$dir/cpu.json" -o "$dir/cpu.pb.gz" \
	-- "$split" 1300 3900 1.5 2 \
	>"$dir/cpu.log" 2>&1; then
	fail "xsprofd -o cpu.otlp.pb: $(tail -5 "$dir/cpu.log")"
elif ! decode "$dir/cpu.otlp.pb" >"$dir/cpu.txt" 2>"$dir/cpu.err"; then
	fail "protoc --decode: $(head -5 "$dir/cpu.err")"
else
	pass "protoc decodes the cpu request ($(stat -c %s "$dir/cpu.otlp.pb") bytes)"
	grep -q 'string_value: "xsprof"\|name: "xsprof"' "$dir/cpu.txt" &&
		pass "scope xsprof" || fail "no xsprof scope in: $(head -20 "$dir/cpu.txt")"
	if python3 "$here/lib/otlp_read.py" "$dir/cpu.otlp.pb" >"$dir/cpu.lines" 2>"$dir/cpu.rerr"; then
		pass "dictionary rules hold"
	else
		fail "otlp_read: $(cat "$dir/cpu.rerr")"
	fi
	grep -q '^resource host.name=' "$dir/cpu.lines" && pass "resource host.name" ||
		fail "no host.name: $(head -3 "$dir/cpu.lines")"
	n=$(grep -c '^cpu/nanoseconds .*process.executable.name=xs_split.*;start_thread;xs_worker;xs_work_alpha;burn ' "$dir/cpu.lines")
	((n > 0)) && pass "cpu samples of xs_work_alpha under xs_worker, labelled xs_split ($n)" ||
		fail "no cpu/nanoseconds xs_work_alpha under xs_worker: $(head -5 "$dir/cpu.lines")"
	grep -q '^cpu/nanoseconds .*job.id=xs-otlp-job,job.rank=2,job.world_size=4,job.launcher=torchrun' "$dir/cpu.lines" &&
		pass "job labels from the environment (job.id, job.rank, job.world_size, job.launcher)" ||
		fail "no job labels: $(head -3 "$dir/cpu.lines")"
	# The same run's Chrome trace names the process with its rank and job; pprof labels them.
	python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"] if isinstance(t, dict) else t
names = [e["args"]["name"] for e in ev if e.get("name") == "process_name"]
sys.exit(0 if "xs_split (rank 2, job xs-otlp-job)" in names else 1)' "$dir/cpu.json" &&
		pass "Chrome trace: the process is 'xs_split (rank 2, job xs-otlp-job)'" ||
		fail "Chrome trace process names: $(grep -o '"process_name"[^}]*}[^}]*}' "$dir/cpu.json" | head -2)"
	if command -v go >/dev/null; then
		go tool pprof -raw "$dir/cpu.pb.gz" 2>/dev/null | grep -q 'job.id:\[xs-otlp-job\].*job.rank:\[2\]' &&
			pass "pprof: samples labelled job.id and job.rank" ||
			fail "pprof has no job labels: $(go tool pprof -raw "$dir/cpu.pb.gz" 2>&1 | grep -m2 process)"
	else
		fail "go tool pprof missing (scripts/deps.sh installs golang-go)"
	fi
	grep -q '^cpu/nanoseconds .*process.pid=[0-9].*thread.id=[0-9].*thread.name=' "$dir/cpu.lines" &&
		pass "pid, tid and thread labels" || fail "no pid/tid/thread labels"
	! grep -q '^gpu/' "$dir/cpu.lines" && pass "no gpu profile without GPU work" ||
		fail "a gpu profile with no GPU work"
fi

# GPU: the test double's kernels under their launching sites.
if ! "$xsprofd" --foreground --cupti-socket "$dir/cupti.sock" -o "$dir/gpu.otlp.pb" -- "$gpu" \
	>"$dir/gpu.log" 2>&1; then
	fail "xsprofd -o gpu.otlp.pb: $(tail -5 "$dir/gpu.log")"
elif ! decode "$dir/gpu.otlp.pb" >"$dir/gpu.txt" 2>"$dir/gpu.err"; then
	fail "protoc --decode (gpu): $(head -5 "$dir/gpu.err")"
elif ! python3 "$here/lib/otlp_read.py" "$dir/gpu.otlp.pb" >"$dir/gpu.lines" 2>"$dir/gpu.rerr"; then
	fail "otlp_read (gpu): $(cat "$dir/gpu.rerr")"
else
	pass "protoc decodes the gpu request ($(stat -c %s "$dir/gpu.otlp.pb") bytes)"
	# The stack holds a space ("[gpu] name"): the value is the last field.
	sum() { awk -v pat="$1" '$1 == "gpu/nanoseconds" && $0 ~ pat { s += $NF } END { print s + 0 }' "$dir/gpu.lines"; }
	a=$(sum ';main;xs_gpu_alpha_site;\\[gpu\\] xs_kernel_alpha [0-9]+$')
	b=$(sum ';main;xs_gpu_beta_site;\\[gpu\\] xs_kernel_beta [0-9]+$')
	[[ $a == 7000000 ]] && pass "xs_kernel_alpha: 7 ms under xs_gpu_alpha_site" ||
		fail "xs_kernel_alpha under xs_gpu_alpha_site: $a ns, want 7000000: $(grep '^gpu' "$dir/gpu.lines" | head -5)"
	[[ $b == 10000000 ]] && pass "xs_kernel_beta: 10 ms under xs_gpu_beta_site" ||
		fail "xs_kernel_beta under xs_gpu_beta_site: $b ns, want 10000000"
	grep -q '^gpu/nanoseconds .*gpu.device=0.*gpu.kernel=xs_kernel_alpha' "$dir/gpu.lines" &&
		pass "gpu.device and gpu.kernel labels" || fail "no gpu labels"
fi
# GPU idle by cause: an input-bound loop of the GPU doubles (tests/output/gpu_report/gpu_report.sh's), whose GPU
# waits while the host computes each batch in xs_make_batch: the gpu_idle profile holds the
# workload's idle time, all of it cause host, under that function.
bound=$build/tests/xs_gpu_bound
if [[ ! -x $bound ]]; then
	fail "missing $bound"
elif ! "$xsprofd" --foreground -F 999 --cupti-socket "$dir/cupti2.sock" -o "$dir/idle.otlp.pb" -- \
	"$bound" input 60 >"$dir/idle.out" 2>"$dir/idle.log"; then
	fail "xsprofd -o idle.otlp.pb: $(tail -5 "$dir/idle.log")"
elif ! decode "$dir/idle.otlp.pb" >/dev/null 2>"$dir/idle.err" ||
	! python3 "$here/lib/otlp_read.py" "$dir/idle.otlp.pb" >"$dir/idle.lines" 2>>"$dir/idle.err"; then
	fail "decoding the gpu_idle request: $(head -5 "$dir/idle.err")"
else
	idle=$(awk '$1 == "idle_ns" { print $2 }' "$dir/idle.out")
	all=$(awk '$1 == "gpu_idle/nanoseconds" { s += $NF } END { print s + 0 }' "$dir/idle.lines")
	host=$(awk '$1 == "gpu_idle/nanoseconds" && /gpu.idle.cause=host/ && /;xs_make_batch;.*\[gpu idle: host\] [0-9]+$/ { s += $NF } END { print s + 0 }' "$dir/idle.lines")
	python3 -c "import sys; i, a, h = map(float, sys.argv[1:]); sys.exit(0 if i > 0 and abs(a - i) <= 0.02 * i and h >= 0.9 * i else 1)" \
		"${idle:-0}" "$all" "$host" &&
		pass "gpu_idle: $((all / 1000000)) ms of the workload's $((${idle:-0} / 1000000)) ms, $((host / 1000000)) ms cause host under xs_make_batch" ||
		fail "gpu_idle: $all ns ($host host under xs_make_batch), the workload idled ${idle:-?} ns: $(grep '^gpu_idle' "$dir/idle.lines" | head -3)"
fi
((failures == 0)) && echo "otlp_oneshot: all passed" || echo "otlp_oneshot: $failures failed"
((failures == 0))

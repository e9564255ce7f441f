#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# GET /metrics of a real xsprofd: the exposition format checked by promtool, on the Unix socket
# and on the TCP listener (with the token, refused without), and a real Prometheus (Debian's
# package) scraping it over loopback: its query API must show xsprof_samples_total increasing,
# and, while the GPU test doubles run an input-bound workload, GPU busy time and idle time by
# cause within 2% of the workload's own figures; then a process's GPU memory in use and its
# peak on two devices, gone once it exits. The shipped rules (packaging/prometheus) pass
# promtool check rules and their unit test.
# Every check prints "ok" or "FAIL"; any FAIL makes the exit status 1. Needs root, BPF, curl,
# python3 and prometheus (promtool).
#
# Usage: tests/daemon/service/metrics.sh BUILD_DIR     (ctest runs it as the test service_metrics)
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
name=service_metrics
. "$(dirname "$0")/private_daemon.sh"
need
for tool in curl prometheus promtool; do
	command -v $tool >/dev/null || { echo "FAIL needs $tool (apt-get install prometheus curl)"; exit 1; }
done
on_failure() { echo "--- prometheus log (last 20 lines)"; tail -n 20 "$dir/prometheus.log" 2>/dev/null; }

# Free loopback ports, picked by the kernel.
read -r port pport < <($py -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
echo "metrics-test-token-$$-0123456789abcdef" >"$dir/token"
chmod 600 "$dir/token"
token=$(cat "$dir/token")

step "start xsprofd with a TCP listener on 127.0.0.1:$port"
# CUDA probes on the GPU test doubles' libraries for the window: their launches and memory calls
# (999 Hz, so the host's stacks fill the GPU's 25 ms idle gaps, as in tests/output/gpu_report/gpu_report.sh).
start_daemon --listen "127.0.0.1:$port" --token-file "$dir/token" --freq 999 \
	--cuda-lib "$build/tests/libxsprof_cupti_fake.so" --cuda-lib "$build/tests/libcuda_xsbound.so"
# Something to sample.
timeout 60 "$build/tests/xs_fixedwork" 400000000 1 >/dev/null 2>&1 &
pids+=($!)
sleep 1

step "GET /metrics on the Unix socket"
code=$(curl -s -m 10 --unix-socket "$sock" -o "$dir/m.txt" -D "$dir/h.txt" \
	-w '%{http_code}' http://x/metrics || true)
[[ $code == 200 ]] && pass "200" || fail "GET /metrics: HTTP $code"
grep -qi '^content-type: text/plain; version=0.0.4' "$dir/h.txt" &&
	pass "text exposition format 0.0.4" || fail "content type: $(grep -i content-type "$dir/h.txt")"
if promtool check metrics <"$dir/m.txt" >"$dir/promtool.txt" 2>&1; then
	pass "promtool check metrics: no problems"
else
	fail "promtool check metrics: $(head -n 5 "$dir/promtool.txt")"
fi
# Every number of the status document has a metric (the check of tests/daemon/service/test_metrics_cover.c).
ctl --json status >"$dir/status.json"
XSPROF_STATUS_JSON=$dir/status.json "$build/tests/test_metrics_cover" --verbose=0 -j1 \
	>"$dir/cover.txt" 2>&1 && pass "every status number has a metric" ||
	fail "status numbers without a metric: $(grep -o 'status [a-z_.]* has no metric' "$dir/cover.txt" | head -n 5)"
for m in xsprof_samples_total xsprof_samples_lost_total xsprof_cpu_seconds_total \
	xsprof_resident_memory_bytes xsprof_unwind_table_rows xsprof_symbolizer_bytes \
	xsprof_window_bytes xsprof_recordings xsprof_api_responses_total xsprof_build_info; do
	grep -q "^$m[ {]" "$dir/m.txt" && pass "$m" || fail "no $m"
done
# The numbers are the status document's (ones that do not move between two requests).
for pair in "store cap_bytes xsprof_window_cap_bytes" "unwind table_rows_cap xsprof_unwind_table_rows_cap" \
	"symbolizer cache_bytes xsprof_symbolizer_cache_bytes" \
	"gpu nvtx_open_refused xsprof_gpu_nvtx_open_refused_total"; do
	read -r obj key metric <<<"$pair"
	want=$(status_get "j['$obj']['$key']")
	got=$(awk -v m="$metric" '$1 == m {printf "%.0f", $2}' "$dir/m.txt")
	[[ -n $got && $got == "$want" ]] && pass "$metric = status $obj.$key ($got)" ||
		fail "$metric '$got', status $obj.$key '$want'"
done
freq=$(status_get 'j["freq_hz"]')
grep -q "^xsprof_sample_frequency_hertz $freq\$" "$dir/m.txt" && pass "frequency $freq Hz as status says" ||
	fail "frequency: $(grep frequency_hertz "$dir/m.txt")"

step "GET /metrics on TCP: with the token, and refused without"
code=$(curl -s -m 10 -H "Authorization: Bearer $token" -o "$dir/t.txt" -w '%{http_code}' \
	"http://127.0.0.1:$port/metrics" || true)
[[ $code == 200 ]] && grep -q '^xsprof_samples_total ' "$dir/t.txt" && pass "with the token: 200" ||
	fail "with the token: HTTP $code"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/metrics" || true)
[[ $code == 401 ]] && pass "without: 401" || fail "without the token: HTTP $code"
code=$(curl -s -m 10 -X POST -H "Authorization: Bearer $token" -o /dev/null -w '%{http_code}' \
	"http://127.0.0.1:$port/metrics" || true)
[[ $code == 405 || $code == 403 ]] && pass "POST: $code" || fail "POST /metrics: HTTP $code"

step "a real Prometheus scrapes it"
cat >"$dir/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: xsprofd
    metrics_path: /metrics
    authorization:
      type: Bearer
      credentials_file: $dir/token
    static_configs:
      - targets: ["127.0.0.1:$port"]
YML
promtool check config "$dir/prometheus.yml" >"$dir/pcheck.txt" 2>&1 || fail "config: $(cat "$dir/pcheck.txt")"
prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" \
	--web.listen-address="127.0.0.1:$pport" >"$dir/prometheus.log" 2>&1 &
pids+=($!)
query() { # query PROMQL: the first value of an instant query, or nothing
	curl -s -m 5 --get --data-urlencode "query=$1" "http://127.0.0.1:$pport/api/v1/query" |
		$py -c 'import json,sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")' 2>/dev/null || true
}
first="" last=""
for _ in $(seq 60); do
	v=$(query xsprof_samples_total)
	if [[ -n $v ]]; then
		[[ -z $first ]] && first=$v
		last=$v
		$py -c "import sys; sys.exit(0 if float('$last') > float('$first') else 1)" && break
	fi
	sleep 0.5
done
[[ -n $first ]] && pass "Prometheus holds xsprof_samples_total ($first)" ||
	fail "Prometheus has no xsprof_samples_total"
$py -c "import sys; sys.exit(0 if '$last' and float('$last') > float('$first' or 0) else 1)" &&
	pass "and it increases ($first -> $last)" || fail "it did not increase ($first -> $last)"
up=$(query 'up{job="xsprofd"}')
[[ $up == 1 ]] && pass "the target is up" || fail "up{job=\"xsprofd\"} = '$up'"
n=$(query 'count({__name__=~"xsprof_.+"})')
((${n:-0} >= 40)) && pass "$n xsprof series scraped" || fail "only ${n:-0} xsprof series"

step "GPU metrics: the doubles' input-bound workload under a real Prometheus"
src=$(cd "$(dirname "$0")/../../.." && pwd)
cp "$src"/packaging/prometheus/xsprof-rules{,.test}.yml "$dir/"
promtool check rules "$dir/xsprof-rules.yml" >"$dir/rules.txt" 2>&1 &&
	pass "promtool check rules packaging/prometheus/xsprof-rules.yml" ||
	fail "promtool check rules: $(cat "$dir/rules.txt")"
(cd "$dir" && promtool test rules xsprof-rules.test.yml) >"$dir/rtest.txt" 2>&1 &&
	pass "promtool test rules: XsprofGPUIdle fires at 40% idle for 10 min, not at 10%" ||
	fail "promtool test rules: $(tail -5 "$dir/rtest.txt")"
sed -e "s|/etc/prometheus/xsprof-rules.yml|$dir/xsprof-rules.yml|" \
	-e "s|/etc/prometheus/xsprof.token|$dir/token|" "$src/packaging/prometheus/prometheus.yml" \
	>"$dir/shipped.yml"
promtool check config "$dir/shipped.yml" >"$dir/scheck.txt" 2>&1 &&
	pass "promtool check config packaging/prometheus/prometheus.yml" ||
	fail "the shipped scrape config: $(cat "$dir/scheck.txt")"
# 1200 steps (about 36 s): the gaps whose next launch a slice cannot join (at its boundaries;
# the first launches, before the daemon knows the process) stay under 1% of the idle time.
# As rank 3 of a torchrun job: the series carry job and rank from its environment.
RANK=3 WORLD_SIZE=4 TORCHELASTIC_RUN_ID=xs-job-7 \
	XS_GPU_DOUBLE_STREAM=1 timeout 240 "$build/tests/xs_gpu_bound" input 1200 >"$dir/gpu.out" 2>&1 ||
	fail "xs_gpu_bound input 1200: $(tail -3 "$dir/gpu.out")"
# qvec PROMQL: an instant query's result as "labels value" lines (label values joined by ,).
qvec() {
	curl -s -m 5 --get --data-urlencode "query=$1" "http://127.0.0.1:$pport/api/v1/query" |
		$py -c 'import json,sys
for r in json.load(sys.stdin)["data"]["result"]:
    print(",".join(v.replace(" ", "_") for k, v in sorted(r["metric"].items())) or "-", r["value"][1])' 2>/dev/null || true
}
busy=$(awk '$1 == "busy_ns" { print $2 }' "$dir/gpu.out")
idle=$(awk '$1 == "idle_ns" { print $2 }' "$dir/gpu.out")
# The last slice closes within 10 s of the end, and Prometheus scrapes every second.
# Wait for every kernel (the last slice's records may come a slice later), then read the rest.
got= nk=
for _ in $(seq 90); do
	nk=$(qvec 'sum(xsprof_gpu_kernels_total{process="xs_gpu_bound"})' | awk '{ print $2 }')
	[[ ${nk:-0} == 4800 ]] && break
	sleep 1
done
sleep 2 # one more scrape: busy and idle come from the same slices as the kernels
got=$(qvec 'sum(xsprof_gpu_busy_seconds_total{process="xs_gpu_bound"})' | awk '{ print $2 }')
qvec 'sum by (cause) (xsprof_gpu_idle_seconds_total{process="xs_gpu_bound",job_id="xs-job-7",rank="3"})' >"$dir/idle.txt"
qvec 'sum(xsprof_gpu_kernels_total{process="xs_gpu_bound"})' >"$dir/kernels.txt"
if $py - "$busy" "$idle" "$got" "$dir/idle.txt" "$dir/kernels.txt" <<'PY'; then
import sys
busy, idle, got = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3] or 0) * 1e9
by = {l.split()[0]: float(l.split()[1]) * 1e9 for l in open(sys.argv[4]) if l.strip()}
kernels = float(open(sys.argv[5]).read().split()[1])
total = sum(by.values())
print("     busy %.3f s (workload %.3f s); idle %.3f s (workload %.3f s): %s; %d kernels" % (
    got / 1e9, busy / 1e9, total / 1e9, idle / 1e9,
    ", ".join("%s %.1f%%" % (c, 100 * v / max(total, 1)) for c, v in sorted(by.items())), kernels))
ok = abs(got - busy) <= 0.02 * busy and abs(total - idle) <= 0.02 * idle
# Input-bound: every gap is the host computing the next batch (the workload's split: all host).
ok = ok and abs(by.get("host", 0) - idle) <= 0.02 * idle and kernels == 4800
sys.exit(0 if ok else 1)
PY
	pass "Prometheus: GPU busy and idle by cause (all host, as the workload) within 2%, 4800 kernels, under job xs-job-7 rank 3"
else
	fail "Prometheus GPU figures off (see above; busy query '$got')"
	echo "     every kernels series:"; qvec 'xsprof_gpu_kernels_total' | sed 's/^/       /'
fi

step "GPU metrics: a process's GPU memory in use and its peak, on two devices"
# Holds its memory 59 s (killed sooner); its own pid, no wrapper: the series carry it.
XS_GPU_DOUBLE_STREAM=1 "$build/tests/xs_gpu_bound" memory 60 >"$dir/mem.out" 2>&1 &
mpid=$!
pids+=($mpid)
mem=
for _ in $(seq 60); do
	mem=$(qvec "{__name__=~\"xsprof_gpu_memory(_peak)?_bytes\",pid=\"$mpid\"}" |
		sort | tr '\n' ' ')
	[[ $(wc -w <<<"$mem") -ge 8 ]] && break
	sleep 1
done
want0=$(awk '$1 == "mem_end_dev0" { print $2 }' "$dir/mem.out")
want1=$(awk '$1 == "mem_end_dev1" { print $2 }' "$dir/mem.out")
peak1=$(awk '$1 == "mem_peak_dev1" { print $2 }' "$dir/mem.out")
if $py - "$mem" "$want0" "$want1" "$peak1" <<'PY'; then
import sys
f = sys.argv[1].split()
got = {}
for lab, v in zip(f[0::2], f[1::2]):
    got[lab] = float(v)
in_use = {k.split(",")[1]: v for k, v in got.items() if k.startswith("xsprof_gpu_memory_bytes")}
peak = {k.split(",")[1]: v for k, v in got.items() if k.startswith("xsprof_gpu_memory_peak_bytes")}
print("     in use %s, peak %s" % (in_use, peak))
sys.exit(0 if in_use.get("0") == float(sys.argv[2]) and in_use.get("1") == float(sys.argv[3])
         and peak.get("1") == float(sys.argv[4]) else 1)
PY
	pass "Prometheus: GPU memory in use (128 MiB, 32 MiB) and device 1's peak (192 MiB) as the workload's"
else
	fail "GPU memory series: '$mem'"
fi
kill "$mpid" 2>/dev/null; wait "$mpid" 2>/dev/null || true
left=1
for _ in $(seq 40); do
	curl -s -m 10 --unix-socket "$sock" http://x/metrics >"$dir/m2.txt" || true
	grep -q "pid=\"$mpid\"" "$dir/m2.txt" || { left=0; break; }
	sleep 1
done
((left == 0)) && pass "its memory series go once it has exited" || fail "the exited process's memory series stay"

step "GPU metrics: names that are not UTF-8 (issue 53 H7)"
# A process's comm and its job id are any bytes: one series with a byte outside UTF-8 made
# Prometheus refuse the whole scrape. The double runs under a name with such bytes, as a job
# whose id has them.
bad=$dir/$'xs_gpu_\xff\xfe'
cp "$build/tests/xs_gpu_bound" "$bad"
TORCHELASTIC_RUN_ID=$'job-\xc3(' RANK=0 WORLD_SIZE=1 XS_GPU_DOUBLE_STREAM=1 \
	timeout 60 "$bad" input 100 >"$dir/bad.out" 2>&1 || fail "the double under a bad name: $(tail -3 "$dir/bad.out")"
seen=0
for _ in $(seq 30); do
	curl -s -m 10 --unix-socket "$sock" http://x/metrics >"$dir/m3.txt" || true
	grep -q 'process="xs_gpu_??"' "$dir/m3.txt" && { seen=1; break; }
	sleep 1
done
((seen)) && pass "the name's bad bytes are written '?': process=\"xs_gpu_??\", job_id=\"$(grep -o 'job_id="job-[^"]*"' "$dir/m3.txt" | head -1)\"" ||
	fail "no series of the badly named process: $(grep -a 'xs_gpu_' "$dir/m3.txt" | head -2)"
if promtool check metrics <"$dir/m3.txt" >"$dir/promtool3.txt" 2>&1; then
	pass "promtool check metrics with it: no problems"
else
	fail "promtool check metrics with it: $(head -n 5 "$dir/promtool3.txt")"
fi

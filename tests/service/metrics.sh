#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# GET /metrics of a real xsprofd: the exposition format checked by promtool, on the Unix socket
# and on the TCP listener (with the token, refused without), and a real Prometheus (Debian's
# package) scraping it over loopback: its query API must show xsprof_samples_total increasing.
# Every check prints "ok" or "FAIL"; any FAIL makes the exit status 1. Needs root, BPF, curl,
# python3 and prometheus (promtool).
#
# Usage: tests/service/metrics.sh BUILD_DIR     (ctest runs it as the test service_metrics)
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
start_daemon --listen "127.0.0.1:$port" --token-file "$dir/token"
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

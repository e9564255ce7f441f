#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# xsprofctl fleet --report straggler against a host that sends 60 MiB of job parts (issue 53,
# H10: about 30 s of an honest 8-rank job, bench/job_parts_gen.py). The host is a stand-in on
# loopback (Python's http.server answering /v1/clock and the job parts). The report must come
# in under 10 s, with xsprofctl's peak RSS under 512 MiB, and name the straggler the parts
# hold (rank 3). Every check prints "ok" or "FAIL".
#
# Usage: tests/daemon/ctl/fleet_parts_big.sh BUILD_DIR     (ctest runs it as fleet_parts_big)
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../../.." && pwd)
ctl=$build/daemon/ctl/xsprofctl
py=/usr/bin/python3
failures=0
pass() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*"; failures=$((failures + 1)); }
for f in "$ctl" "$py" /usr/bin/time; do
	[[ -x $f ]] || { echo "FAIL missing $f (apt-get install time)"; exit 1; }
done
dir=$(mktemp -d /tmp/xsprof-fleet-parts-XXXXXX)
srv=
cleanup() {
	local rc=$?
	set +e
	[[ -n $srv ]] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	rm -rf "$dir"
	if ((rc == 0 && failures == 0)); then echo; echo "fleet_parts_big: all checks passed"; else
		echo; echo "fleet_parts_big: $failures check(s) failed"; exit 1; fi
}
trap cleanup EXIT

"$py" "$src/bench/job_parts_gen.py" --mib 77 >"$dir/parts.json"
mib=$(( $(stat -c %s "$dir/parts.json") >> 20 ))
((mib >= 58)) && pass "made ${mib} MiB of job parts (8 ranks)" || fail "made only $mib MiB"

# The stand-in host: its clock, and the parts for any recording asked.
cat >"$dir/host.py" <<'PY'
import http.server, json, sys, time
parts = open(sys.argv[1], "rb").read()
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        body = (json.dumps({"monotonic_ns": time.monotonic_ns()}).encode()
                if self.path.startswith("/v1/clock") else parts)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(sys.argv[2], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
"$py" "$dir/host.py" "$dir/parts.json" "$dir/port" &
srv=$!
for _ in $(seq 100); do [[ -s $dir/port ]] && break; sleep 0.1; done
port=$(cat "$dir/port")

/usr/bin/time -f '%e %M' -o "$dir/time" "$ctl" fleet --report straggler -d 1 \
	-o "$dir/job.job.json" "127.0.0.1:$port" >"$dir/report.txt" 2>"$dir/ctl.err" ||
	fail "xsprofctl fleet failed: $(tail -n 5 "$dir/ctl.err")"
read -r secs kib <"$dir/time"
# The request asks for a 1 s recording, which the stand-in answers at once.
$py -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 10 else 1)' "$secs" &&
	pass "the report in $secs s (under 10)" || fail "the report took $secs s (10 at most)"
((kib < 512 * 1024)) && pass "xsprofctl's peak RSS $((kib >> 10)) MiB (under 512)" ||
	fail "xsprofctl's peak RSS $((kib >> 10)) MiB (512 at most)"
grep -q "rank 3" "$dir/report.txt" && pass "the report names the straggler, rank 3" ||
	fail "no rank 3 in the report: $(head -n 20 "$dir/report.txt")"
[[ -s $dir/job.trace.json ]] && pass "the merged trace written ($(( $(stat -c %s "$dir/job.trace.json") >> 20 )) MiB)" ||
	fail "no merged trace"

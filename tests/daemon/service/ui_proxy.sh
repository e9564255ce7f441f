#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# xsprofctl ui, the loopback proxy to a real xsprofd: it prints an address with a key, refuses
# requests without the key (401), with another Host (403) or another method (405), forwards GET
# with its query to the daemon's socket (the daemon's own answers and errors come back), gives
# 502 once the daemon is gone, and exits 0 on SIGTERM. Every check prints "ok" or "FAIL"; any
# FAIL makes the exit status 1. Needs root, BPF, curl and python3.
#
# Usage: tests/daemon/service/ui_proxy.sh BUILD_DIR     (ctest runs it as the test service_ui_proxy)
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
name=service_ui_proxy
. "$(dirname "$0")/private_daemon.sh"
need
command -v curl >/dev/null || { echo "FAIL needs curl (apt-get install curl)"; exit 1; }
on_failure() { echo "--- xsprofctl ui's stderr"; cat "$dir/ui.err" 2>/dev/null; }

# get PATH [CURL ARGS...]: the HTTP status of GET PATH on the proxy, the body in $dir/body and
# the headers in $dir/head.
get() {
	local path=$1
	shift
	curl -s -m 30 -o "$dir/body" -D "$dir/head" -w '%{http_code}' "$@" "$base$path" || true
}
# json EXPR: a Python expression over the JSON body `j`.
json() { $py -c "import json,sys; j=json.load(open('$dir/body')); print($1)" 2>/dev/null || true; }

step "start xsprofd, then xsprofctl ui --port 0"
start_daemon
# --timeout 5: a scrape of 7 s is answered only if its seconds are added to the wait.
"$ctl" --timeout 5 -s "$sock" ui --port 0 >"$dir/ui.out" 2>"$dir/ui.err" &
ui=$!
pids+=("$ui")
url=
for _ in $(seq 300); do # 30 s: it asks the daemon for its status first
	url=$(grep -m1 '^http://' "$dir/ui.out" || true)
	[[ -n $url ]] && break
	kill -0 "$ui" 2>/dev/null || break
	sleep 0.1
done
[[ $url =~ ^http://127\.0\.0\.1:([0-9]+)/ui/#token=([0-9a-f]{32})$ ]] ||
	{ fail "no address on stdout: '$(cat "$dir/ui.out")'"; exit 1; }
port=${BASH_REMATCH[1]} key=${BASH_REMATCH[2]}
base=http://127.0.0.1:$port
auth="Authorization: Bearer $key"
pass "it printed $url"
[[ $(wc -l <"$dir/ui.out") == 1 ]] && pass "one line on stdout" || fail "stdout: $(cat "$dir/ui.out")"
grep -q "Ctrl-C stops" "$dir/ui.err" && pass "stderr says how to stop it" || fail "stderr: $(cat "$dir/ui.err")"

step "the key"
code=$(get /v1/status)
[[ $code == 401 ]] && pass "without the key: 401" || fail "without the key: HTTP $code"
[[ $(json 'j["hint"]') == *"address xsprofctl ui printed"* ]] &&
	pass "the error says to open the printed address" || fail "401 body: $(cat "$dir/body")"
code=$(get /v1/status -H "Authorization: Bearer 0123456789abcdef0123456789abcdef")
[[ $code == 401 ]] && pass "with another key: 401" || fail "with another key: HTTP $code"
code=$(get /v1/status -H "$auth")
want=$(status_get 'j["version"]')
[[ $code == 200 && $(json 'j["version"]') == "$want" ]] &&
	pass "with the key: 200, the daemon's status (version $want)" ||
	fail "with the key: HTTP $code, version '$(json 'j.get("version")')', want '$want'"
grep -qi '^content-type: application/json' "$dir/head" && pass "its Content-Type" ||
	fail "Content-Type: $(grep -i content-type "$dir/head")"
grep -qi '^x-content-type-options: nosniff' "$dir/head" && grep -qi '^referrer-policy: no-referrer' "$dir/head" &&
	pass "nosniff and no-referrer" || fail "headers: $(cat "$dir/head")"
code=$(get /metrics -H "$auth")
[[ $code == 200 ]] && grep -q '^xsprof_samples_total ' "$dir/body" &&
	grep -qi '^content-type: text/plain' "$dir/head" && pass "/metrics: 200, text" ||
	fail "/metrics: HTTP $code, $(grep -i content-type "$dir/head")"
# Without --history, the history's pages say how to have them (the page then hides its panel).
code=$(get /history/benches -H "$auth")
[[ $code == 404 ]] && grep -q 'xsprofctl ui --history STORE' "$dir/body" &&
	pass "/history/benches without --history: 404, saying how" || fail "/history/benches: HTTP $code, $(cat "$dir/body")"
# libcurl would resolve the dots into a path that needs the key; the proxy refuses them.
code=$(get /ui/../v1/status --path-as-is)
[[ $code == 400 ]] && pass "/ui/../v1/status without the key: 400" || fail "/ui/../v1/status: HTTP $code"

step "Host, method, /"
code=$(get /v1/status -H "$auth" -H "Host: attacker.example:$port")
[[ $code == 403 ]] && pass "another Host: 403" || fail "Host attacker.example: HTTP $code"
code=$(get /v1/status -H "$auth" -H "Host: localhost:$port")
[[ $code == 200 ]] && pass "Host localhost:$port: 200" || fail "Host localhost: HTTP $code"
code=$(get /v1/attach -H "$auth" -X POST -H 'Content-Type: application/json' -d '{"pid": 1}')
[[ $code == 405 && $(json 'j["error"]') == *GET* ]] && pass "POST: 405, a JSON error" ||
	fail "POST: HTTP $code: $(cat "$dir/body")"
code=$(get /)
[[ $code == 302 ]] && grep -qi '^location: /ui/' "$dir/head" && pass "/: 302 to /ui/" ||
	fail "/: HTTP $code, $(grep -i location "$dir/head")"

step "the query is forwarded"
code=$(get '/v1/profile?since_s=abc' -H "$auth")
own=$(curl -s -m 30 --unix-socket "$sock" 'http://x/v1/profile?since_s=abc' | $py -c 'import json,sys; print(json.load(sys.stdin)["error"])' || true)
[[ $code == 400 && -n $own && $(json 'j["error"]') == "$own" ]] &&
	pass "since_s=abc: 400, the daemon's own error ($own)" ||
	fail "since_s=abc: HTTP $code: $(cat "$dir/body") (the daemon says '$own')"
code=$(get '/v1/profile?since_s=60&format=folded' -H "$auth")
[[ $code == 200 ]] && grep -qi '^x-xsprof-span-seconds: ' "$dir/head" &&
	pass "since_s=60&format=folded: 200, with X-Xsprof-Span-Seconds" ||
	fail "since_s=60&format=folded: HTTP $code: $(head -c 300 "$dir/body")"
code=$(get '/debug/pprof/profile?seconds=7&format=folded' -H "$auth")
[[ $code == 200 ]] && pass "a 7 s scrape through --timeout 5: 200 (its seconds are waited for)" ||
	fail "scrape seconds=7: HTTP $code: $(head -c 300 "$dir/body")"

step "another user holds 40 half-sent requests"
# Any local user can connect to the loopback port: 40 connections that send their headers a
# line at a time and never finish. The page's requests with the key still get in, at once.
cat >"$dir/flood.py" <<'PYEOF'
import socket, sys, time
port = int(sys.argv[1])
conns = []
for _ in range(40):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % port)
    conns.append(s)
end = time.monotonic() + 8
while time.monotonic() < end:
    for s in conns:
        try:
            s.sendall(b"X-Slow: 1\r\n")
        except OSError:
            pass
    time.sleep(0.5)
PYEOF
setpriv --reuid=nobody --regid=nogroup --clear-groups -- $py "$dir/flood.py" "$port" 2>/dev/null &
flood=$!
pids+=("$flood")
sleep 1.5
read -r code took <<<"$(curl -s -m 10 -o /dev/null -w '%{http_code} %{time_total}' -H "$auth" \
	"$base/v1/status" || true)"
[[ $code == 200 ]] && $py -c "import sys; sys.exit(float('$took') >= 1)" &&
	pass "the key's request answered 200 in ${took} s beside them" ||
	fail "the key's request beside 40 half-sent ones: HTTP $code in $took s"
read -r code took <<<"$(curl -s -m 10 -o /dev/null -w '%{http_code} %{time_total}' -H "$auth" \
	"$base/v1/status" || true)"
[[ $code == 200 ]] && pass "and again ($took s)" || fail "the key's second request: HTTP $code in $took s"
wait "$flood" 2>/dev/null || true

step "the daemon gone"
kill "$daemon"
wait "$daemon" 2>/dev/null || true
daemon=
code=$(get /v1/status -H "$auth")
[[ $code == 502 && $(json 'j["error"]') == *"$sock"* ]] && pass "502, naming the socket" ||
	fail "without the daemon: HTTP $code: $(cat "$dir/body")"

step "SIGTERM"
kill -TERM "$ui"
for _ in $(seq 100); do kill -0 "$ui" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$ui" 2>/dev/null; then
	fail "still running 10 s after SIGTERM"
else
	rc=0
	wait "$ui" || rc=$?
	((rc == 0)) && pass "exited 0" || fail "exit status $rc after SIGTERM"
fi
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$base/" || true)
[[ $code == 000 ]] && pass "the port is closed" || fail "the port still answers: HTTP $code"

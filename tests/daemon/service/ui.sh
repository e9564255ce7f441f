#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The web view in a real browser: a private xsprofd with a workload attached (xs_split: 70% in
# xs_work_alpha, 30% in xs_work_beta), `xsprofctl ui` serving it on a loopback port, and
# Debian's headless Chromium driven over the DevTools protocol (ui_browser.py): the flamegraph
# shows the hottest function, search highlights it, a range brushed on the strip changes the
# counts, two ranges compare, the GPU timeline shows the test double's kernels with their
# launching stack, a flight recorder's dump made before (its note in HTML, shown as text) is
# listed and opened on its timeline, a benchmark's history (`xsprofctl ui --history`) shows its
# step with the trend and the differential flamegraph a click away, and nothing is requested
# outside the host. Also the TCP
# listener: the page without the token, the data only with it. Screenshots are kept in
# BUILD_DIR/tests/ui-artefacts. Every check prints "ok" or "FAIL"; any FAIL makes the exit
# status 1. Needs root, BPF, chromium and python3-websocket (scripts/deps.sh installs them).
#
# Usage: tests/daemon/service/ui.sh BUILD_DIR     (ctest runs it as the test service_ui)
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
name=service_ui
split=$build/tests/xs_split
gpu=$build/tests/xs_usdt_gpu
fakelib=$build/tests/libxsprof_cupti_fake.so
. "$(dirname "$0")/private_daemon.sh"
need "$split" "$gpu" "$fakelib" "$build/output/xsprof-history" /usr/bin/chromium
$py -c 'import websocket' 2>/dev/null ||
	{ echo "FAIL needs python3-websocket (apt-get install python3-websocket)"; exit 1; }
on_failure() { echo "--- xsprofctl ui's stderr"; cat "$dir/ui.err" 2>/dev/null; }
artefacts=$build/tests/ui-artefacts
rm -rf "$artefacts"
mkdir -p "$artefacts"

step "xsprofd with a TCP listener, a workload attached, xsprofctl ui"
port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
$py -c 'import secrets; print(secrets.token_hex(16))' >"$dir/token"
chmod 600 "$dir/token"
start_daemon --cuda-lib "$fakelib" --listen "127.0.0.1:$port" --token-file "$dir/token"
"$split" 700 300 600 1 >/dev/null &
pids+=($!)
ctl -q attach $! >/dev/null && pass "xs_split attached" || fail "attach xs_split failed"
# A history of a benchmark (xsprof-history's store): 6 commits of 4 runs each, the function lex
# about 30% slower from the 4th commit on, emit the same: the page's History panel must find
# that step and draw its trend and its differential flamegraph.
hist=$build/output/xsprof-history
for c in 1 2 3 4 5 6; do
	commit=$(printf 'a%06d%033d' "$c" 0)
	for r in 1 2 3 4; do
		lex=$((100 + r))
		if ((c >= 4)); then lex=$((130 + r)); fi
		printf 'main;parse;lex %d\nmain;emit %d\n' "$lex" $((200 + r)) >"$dir/run.folded"
		"$hist" record -q --db "$dir/hist.db" -p demo -b bench1 -c "$commit" \
			--time $((1000 + 10 * c + r)) "$dir/run.folded" || fail "xsprof-history record"
	done
done
"$ctl" -s "$sock" ui --port 0 --history "$dir/hist.db" >"$dir/ui.out" 2>"$dir/ui.err" &
pids+=($!)
url=
for _ in $(seq 300); do # 30 s
	url=$(grep -m1 '^http://' "$dir/ui.out" || true)
	[[ -n $url ]] && break
	sleep 0.1
done
[[ -n $url ]] && pass "xsprofctl ui serves $url" || { fail "xsprofctl ui printed no address"; exit 1; }

step "the page on the TCP listener: the files without the token, the data only with it"
tcp=http://127.0.0.1:$port
code=$(curl -s -m 30 -o "$dir/page" -w '%{http_code}' "$tcp/ui/" || true)
[[ $code == 200 ]] && grep -q '<script src="app.js">' "$dir/page" &&
	pass "GET /ui/ without a token: the page" || fail "GET /ui/: HTTP $code"
code=$(curl -s -m 30 -o /dev/null -w '%{http_code}' "$tcp/v1/timeline" || true)
[[ $code == 401 ]] && pass "GET /v1/timeline without the token: 401" || fail "/v1/timeline without the token: HTTP $code"
code=$(curl -s -m 30 -o "$dir/tl" -w '%{http_code}' -H "Authorization: Bearer $(cat "$dir/token")" \
	"$tcp/v1/timeline" || true)
[[ $code == 200 ]] && $py -c "import json; j=json.load(open('$dir/tl')); assert j['now_ms'] > 0" &&
	pass "with the token: the timeline" || fail "/v1/timeline with the token: HTTP $code"
size=$(curl -s -m 30 "$tcp/ui/" "$tcp/ui/app.js" "$tcp/ui/app.css" | wc -c)
pass "the page weighs $((size / 1024)) KiB (HTML, script and style; nothing else is loaded)"

step "a dump of the flight recorder after GPU work, for the page's Dumps"
# The double's 12 kernels, then a dump of the last 20 s while it still runs (its stacks named).
"$gpu" 60000 >/dev/null &
gpid=$!
pids+=($gpid)
kernels=0
for _ in $(seq 300); do # 60 s
	kernels=$(status_get "j['gpu']['kernels']" 2>/dev/null || echo 0)
	((kernels >= 12)) && break
	sleep 0.2
done
((kernels >= 12)) && pass "the daemon has the double's kernels ($kernels)" ||
	fail "the daemon has $kernels of the double's 12 kernels after 60 s"
# The note is the user's text: the page must show it as text, never as HTML.
note='<b id="xs-note">bold</b> & "quoted"'
if out=$("$ctl" --timeout 90 -s "$sock" dump --before 20 --note "$note" 2>"$dir/dump.err"); then
	dump=$(basename "$out")
	pass "xsprofctl dump --before 20: $dump"
else
	dump=
	fail "xsprofctl dump: $(cat "$dir/dump.err")"
fi
kill "$gpid" 2>/dev/null || true
wait "$gpid" 2>/dev/null || true
code=$(curl -s -m 30 -o "$dir/dump-tl" -w '%{http_code}' -H "Authorization: Bearer $(cat "$dir/token")" \
	"$tcp/v1/dumps/$dump/timeline.json" || true)
n=$($py -c "import json; j=json.load(open('$dir/dump-tl')); print(len(j['work']))" 2>/dev/null || echo -)
[[ -n $dump && $code == 200 && $n == 12 ]] && pass "its timeline.json holds the double's 12 kernels" ||
	fail "dump $dump's timeline.json: HTTP $code, $n kernels (want 12)"

step "the browser, through xsprofctl ui"
# While the page records: the GPU double's kernels, and NVTX ranges from xs_nvtx_phases with
# the injection library as its NVTX injection.
# (The double stays alive past the recording's end, so its stacks are named while it runs.)
gpu_cmd="\"$gpu\" 9000 & NVTX_INJECTION64_PATH=\"$build/cupti_inject/libxsprof_cupti.so\" \"$build/tests/xs_nvtx_phases\" 1 >/dev/null; wait"
# The dump made above: the page must list it and open it (XSPROF_UI_DUMP, its note).
XSPROF_UI_HISTORY=a000004 XSPROF_UI_DUMP=$dump XSPROF_UI_DUMP_NOTE=$note XSPROF_CUPTI_SOCKET=$cupti timeout 400 \
	$py "$(dirname "$0")/ui_browser.py" "$url" "$artefacts" bash -c "$gpu_cmd" >"$dir/browser.out" 2>&1 || true
cat "$dir/browser.out"
n=$(grep -c '^FAIL' "$dir/browser.out" || true)
failures=$((failures + n))
grep -q '^browser: every step ran' "$dir/browser.out" || fail "the browser checks stopped early"

step "the history only: xsprofctl ui --history without xsprofd"
"$ctl" -s "$dir/none.sock" ui --port 0 --history "$dir/hist.db" >"$dir/ho.out" 2>"$dir/ho.err" &
pids+=($!)
hurl=
for _ in $(seq 300); do # 30 s
	hurl=$(grep -m1 '^http://' "$dir/ho.out" || true)
	[[ -n $hurl ]] && break
	sleep 0.1
done
if [[ $hurl =~ ^http://127\.0\.0\.1:([0-9]+)/ui/#token=([0-9a-f]+)$ ]]; then
	hbase=http://127.0.0.1:${BASH_REMATCH[1]} hkey=${BASH_REMATCH[2]}
	grep -q 'serving the history only' "$dir/ho.err" && pass "it serves the history only, and says so" ||
		fail "its stderr: $(cat "$dir/ho.err")"
	code=$(curl -s -m 30 -D "$dir/ho.head" -o "$dir/ho.page" -w '%{http_code}' "$hbase/ui/" || true)
	[[ $code == 200 ]] && grep -q '<script src="app.js">' "$dir/ho.page" &&
		grep -qi "^content-security-policy: default-src 'none'" "$dir/ho.head" &&
		pass "the page from xsprofctl itself, with its policy" || fail "/ui/: HTTP $code"
	code=$(curl -s -m 30 -o "$dir/ho.json" -w '%{http_code}' -H "Authorization: Bearer $hkey" \
		"$hbase/history/benches" || true)
	[[ $code == 200 ]] && $py -c "import json,sys; j=json.load(open(sys.argv[1])); sys.exit(j['live'] is not False or j['benches'][0]['runs'] != 24)" "$dir/ho.json" &&
		pass "/history/benches: live false, 24 runs" || fail "/history/benches: HTTP $code, $(cat "$dir/ho.json")"
	code=$(curl -s -m 30 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $hkey" "$hbase/v1/status" || true)
	[[ $code == 503 ]] && pass "/v1/status: 503 (no xsprofd here)" || fail "/v1/status: HTTP $code"
	XSPROF_UI_HISTORY_ONLY=a000004 timeout 120 $py "$(dirname "$0")/ui_browser.py" "$hurl" "$artefacts" \
		>"$dir/browser-ho.out" 2>&1 || true
	cat "$dir/browser-ho.out"
	n=$(grep -c '^FAIL' "$dir/browser-ho.out" || true)
	failures=$((failures + n))
	grep -q '^browser: every step ran' "$dir/browser-ho.out" || fail "the history-only browser checks stopped early"
	# A run recorded with --no-stacks has figures, and no differential flamegraph: said.
	printf 'main;parse;lex 131\nmain;emit 201\n' >"$dir/run.folded"
	"$hist" record -q --no-stacks --db "$dir/hist.db" -p demo -b bench1 -c "a000007$(printf '%033d' 0)" \
		--time 1071 "$dir/run.folded" || fail "xsprof-history record --no-stacks"
	code=$(curl -s -m 30 -o "$dir/ho.json" -w '%{http_code}' -H "Authorization: Bearer $hkey" \
		"$hbase/history/diff.svg?project=demo&bench=bench1&before=a000006&after=a000007" || true)
	[[ $code == 404 ]] && grep -q 'no-stacks' "$dir/ho.json" &&
		pass "a commit recorded with --no-stacks: no differential flamegraph, said (404)" ||
		fail "diff.svg of a --no-stacks commit: HTTP $code, $(cat "$dir/ho.json")"
else
	fail "xsprofctl ui --history without xsprofd printed no address: $(cat "$dir/ho.err")"
fi

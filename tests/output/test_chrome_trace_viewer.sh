#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Opens Chrome traces (or folded files) in a real viewer, speedscope, in headless Chromium, and
# fails when speedscope logs an import problem. Not part of ctest: it needs
#   npm install -g speedscope     (the static web build ships in the package)
#   apt-get install chromium python3
# Usage: tests/output/test_chrome_trace_viewer.sh FILE... ; screenshots go next to each FILE (.png).
set -eu
[ $# -ge 1 ] || { echo "usage: $0 TRACE.json|PROFILE.folded..." >&2; exit 2; }
dist="$(npm root -g 2>/dev/null)/speedscope/dist/release"
[ -f "$dist/index.html" ] || { echo "speedscope not found: npm install -g speedscope" >&2; exit 1; }
command -v chromium >/dev/null || { echo "chromium not found: apt-get install chromium" >&2; exit 1; }

www=$(mktemp -d)
trap 'kill "$server" 2>/dev/null; rm -rf "$www"' EXIT
cp -r "$dist"/. "$www"/
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$www" && exec python3 -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1) &
server=$!
sleep 1

status=0
for f in "$@"; do
	name=$(basename "$f")
	cp "$f" "$www/$name"
	log=$(timeout 90 chromium --headless=new --no-sandbox --disable-gpu --enable-logging=stderr \
		--v=0 --virtual-time-budget=15000 --window-size=1400,900 \
		--screenshot="$f.png" \
		"http://127.0.0.1:$port/index.html#profileURL=http%3A%2F%2F127.0.0.1%3A$port%2F$name" \
		2>&1 | grep 'CONSOLE' | grep -v 'WebGL\|GL Driver' || true)
	if ! printf '%s\n' "$log" | grep -q 'Importing as'; then
		echo "FAIL $f: speedscope did not import it"; status=1
	elif printf '%s\n' "$log" | grep -qi 'error\|failed\|tried to end\|still open\|unrecognized'; then
		echo "FAIL $f:"; printf '%s\n' "$log" | sed 's/^/  /'; status=1
	else
		echo "ok   $f: $(printf '%s\n' "$log" | grep -o 'Importing as [^"]*')"
	fi
done
exit $status

#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The web view open for a while: xsprofd with xs_split attached, xsprofctl ui, headless Chromium
# on the page (live, refreshing every 2 s) for MINUTES (default 10); prints the page weight, the
# bytes each refresh asks of xsprofd, the page's JS heap and xsprofd's RSS every minute.
# Usage: sudo bench/ui_soak.sh [BUILD_DIR] [MINUTES]       (see bench/README.md)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
minutes=${2:-10}
[[ $(id -u) == 0 ]] || { echo "needs root" >&2; exit 1; }
command -v chromium >/dev/null || { echo "needs chromium (scripts/deps.sh)" >&2; exit 1; }
dir=$(mktemp -d /tmp/xsprof-ui-soak-XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$dir"' EXIT
"$build/daemon/xsprofd" --socket "$dir/api.sock" --cupti-socket "$dir/cupti.sock" \
	--socket-group nogroup >"$dir/xsprofd.log" 2>&1 &
daemon=$!
pids+=("$daemon")
for _ in $(seq 150); do [[ -S $dir/api.sock ]] && break; sleep 0.1; done
"$build/tests/xs_split" 700 300 $(awk "BEGIN { print int($minutes * 60 + 300) }") 1 >/dev/null &
pids+=($!)
"$build/daemon/ctl/xsprofctl" -q -s "$dir/api.sock" attach $! >/dev/null 2>&1
"$build/daemon/ctl/xsprofctl" -s "$dir/api.sock" ui >"$dir/ui.out" 2>/dev/null &
pids+=($!)
for _ in $(seq 300); do grep -q '^http' "$dir/ui.out" && break; sleep 0.1; done
echo "xsprofd $("$build/daemon/xsprofd" --version | awk '{print $2}'), $(nproc) CPUs, $(uname -r), $(date -u +%F)"
/usr/bin/python3 "$repo/bench/ui_soak.py" "$(head -1 "$dir/ui.out")" "$daemon" "$minutes" \
	"$build/bench-ui-soak"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# How long root waits for `GET /v1/status` while the service is attacked the ways that used to
# stall its event loop: a group member attaching and detaching in a loop (each attach loads a
# BPF sampler), and an outsider running (and touching) a binary with a 200 MiB .eh_frame (the
# daemon compiles its unwind table). Prints, per attack, the queries made, the slowest answer
# and how many took over 100 ms. Needs root, BPF, python3, curl; a built tree.
#
# Usage: sudo bench/service_latency.sh [BUILD_DIR]     (default: build)
set -euo pipefail

build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
xsprofd=$build/daemon/xsprofd
[[ $(id -u) == 0 ]] || { echo "service_latency.sh: needs root" >&2; exit 1; }
[[ -x $xsprofd ]] || { echo "service_latency.sh: no $xsprofd" >&2; exit 1; }
getent group nogroup >/dev/null || { echo "service_latency.sh: no group nogroup" >&2; exit 1; }

dir=$(mktemp -d /tmp/xsprof-latency-XXXXXX)
chmod 755 "$dir"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
as_member() { setpriv --reuid=65534 --regid="$(getent group nogroup | cut -d: -f3)" --clear-groups -- "$@"; }

"$xsprofd" --socket "$dir/api.sock" --cupti-socket "$dir/cupti.sock" --socket-group nogroup \
	>"$dir/xsprofd.log" 2>&1 &
pids+=("$!")
for _ in $(seq 100); do [[ -S $dir/api.sock ]] && break; sleep 0.1; done
sleep 1

# probe PID: root's status, every 20 ms while PID runs; prints "N queries, slowest S s, K over 100 ms"
probe() {
	python3 - "$dir/api.sock" "$1" <<'PY'
import os, socket, sys, time
sock, pid = sys.argv[1], int(sys.argv[2])
times = []
def alive():
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False
while alive():
    t0 = time.monotonic()
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(10)
    c.connect(sock)
    c.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    while c.recv(65536):
        pass
    c.close()
    times.append(time.monotonic() - t0)
    time.sleep(0.02)
print("%d queries, slowest %.4f s, %d over 100 ms" % (len(times), max(times or [0]), sum(t > 0.1 for t in times)))
PY
}

echo "== a member attaches and detaches its own process, 12 times"
# setpriv itself, not the function: $! is then the member's own process.
setpriv --reuid=65534 --regid="$(getent group nogroup | cut -d: -f3)" --clear-groups -- sleep 120 &
target=$!
pids+=("$target")
(for _ in $(seq 12); do
	as_member curl -s -m 10 --unix-socket "$dir/api.sock" -X POST -d "{\"pid\": $target}" \
		-o /dev/null -w '%{http_code} ' http://x/v1/attach
	as_member curl -s -m 10 --unix-socket "$dir/api.sock" -X POST -d "{\"pid\": $target}" \
		-o /dev/null http://x/v1/detach
done; echo) >"$dir/codes" &
loop=$!
echo "root status: $(probe $loop)"
echo "member's attach answers: $(cat "$dir/codes")"

echo "== an outsider runs a binary with a 200 MiB .eh_frame, touching it before each of 3 runs"
python3 "$here/big_eh_frame.py" "$dir/bigeh" 200 >/dev/null
chmod 755 "$dir/bigeh"
chown 65534 "$dir/bigeh"
(for _ in 1 2 3; do as_member bash -c "touch $dir/bigeh; timeout 5 $dir/bigeh"; done) &
runs=$!
echo "root status: $(probe $runs)"

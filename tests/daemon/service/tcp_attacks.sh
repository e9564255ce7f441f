#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Attacks on xsprofd's TLS listener (loopback only: 127.0.0.0/8 addresses, no other network),
# by clients without the token: raw connections from many addresses that never speak, more
# than an address's share, and wrong tokens in a row. A client with the token must get in,
# every refusal must be an HTTP answer in TLS, and the counters must say what happened. Every
# check prints "ok" or "FAIL"; any FAIL makes the exit status 1. Needs root, BPF, openssl,
# curl and python3.
#
# Usage: tests/daemon/service/tcp_attacks.sh BUILD_DIR     (ctest runs it as the test service_tcp)
set -euo pipefail

[[ $# -eq 1 ]] || {
	echo "usage: $0 BUILD_DIR" >&2
	exit 2
}
build=$(cd "$1" && pwd)
xsprofd=$build/daemon/xsprofd
ctl=$build/daemon/ctl/xsprofctl
py=/usr/bin/python3
failures=0

pass() { printf 'ok   %s\n' "$*"; }
fail() {
	printf 'FAIL %s\n' "$*"
	failures=$((failures + 1))
}
step() { printf '\n== %s\n' "$*"; }

[[ $(id -u) == 0 ]] || { echo "FAIL needs root"; exit 1; }
for tool in openssl curl; do
	command -v $tool >/dev/null || { echo "FAIL needs $tool"; exit 1; }
done
[[ -x $xsprofd && -x $ctl && -x $py ]] || { echo "FAIL missing $xsprofd, $ctl or $py"; exit 1; }

dir=$(mktemp -d /tmp/xsprof-tcp-XXXXXX)
pids=()
cleanup() {
	local rc=$? p
	set +e
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	if ((failures)); then
		echo "--- daemon log (last 30 lines)"
		tail -n 30 "$dir/xsprofd.log"
	fi
	rm -rf "$dir"
	if ((rc == 0 && failures == 0)); then echo; echo "service_tcp: all checks passed"; else
		echo; echo "service_tcp: $failures check(s) failed"; exit 1; fi
}
trap cleanup EXIT

(cd "$dir" && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	-keyout srv.key -out srv.pem -days 2 -subj /CN=localhost \
	-addext "subjectAltName=IP:127.0.0.1,DNS:localhost") >"$dir/openssl.log" 2>&1 ||
	{ echo "FAIL openssl"; cat "$dir/openssl.log"; exit 1; }
echo "tcp-attack-token-$$-0123456789abcdef" >"$dir/token"
chmod 600 "$dir/token"
token=$(cat "$dir/token")
port=$((20000 + $$ % 20000))

step "start xsprofd with a TLS listener on 127.0.0.1:$port"
"$xsprofd" --socket "$dir/api.sock" --cupti-socket "$dir/cupti.sock" \
	--listen "127.0.0.1:$port" --token-file "$dir/token" --tls-cert "$dir/srv.pem" \
	--tls-key "$dir/srv.key" >"$dir/xsprofd.log" 2>&1 &
pids+=("$!")
for _ in $(seq 100); do [[ -S $dir/api.sock ]] && break; sleep 0.1; done
[[ -S $dir/api.sock ]] || { fail "xsprofd did not start"; exit 1; }
sleep 0.5

# authed_status: a client with the token, from 127.0.0.1; prints its HTTP code and time.
authed_status() {
	curl -s -m 10 --cacert "$dir/srv.pem" -H "Authorization: Bearer $token" -o /dev/null \
		-w '%{http_code} %{time_total}' "https://127.0.0.1:$port/v1/status" 2>/dev/null || true
}
api_field() { # api_field KEY: the api counter KEY of status, over the Unix socket
	"$ctl" --timeout 5 -s "$dir/api.sock" --json status |
		$py -c "import json,sys; print(json.load(sys.stdin)['api']['$1'])"
}

step "silent connections from 8 addresses fill the slots"
# Each address opens its share (8) and keeps them, reconnecting whatever is cut, for 12 s.
cat >"$dir/hold.py" <<'EOF'
import socket, sys, time
port, secs = int(sys.argv[1]), float(sys.argv[2])
addrs = ["127.0.0.%d" % i for i in range(2, 10)]
socks, cut, end = {}, 0, time.time() + secs
def conn(a):
    s = socket.socket()
    s.bind((a, 0))
    s.settimeout(1)
    try:
        s.connect(("127.0.0.1", port))
    except OSError:
        s.close()
        return None
    s.setblocking(False)
    return s
while time.time() < end:
    for a in addrs:
        live = [s for s in socks.get(a, []) if s is not None]
        keep = []
        for s in live:
            try:
                if s.recv(1) == b"":
                    cut += 1
                    s.close()
                    continue
            except BlockingIOError:
                pass
            except OSError:
                cut += 1
                s.close()
                continue
            keep.append(s)
        while len(keep) < 8:
            s = conn(a)
            if s is None:
                break
            keep.append(s)
        socks[a] = keep
    time.sleep(0.2)
print(cut)
EOF
$py "$dir/hold.py" $port 12 >"$dir/hold.out" 2>&1 &
holder=$!
pids+=("$holder")
sleep 4
worst=0 codes=()
for i in 1 2 3 4 5; do
	read -r code t <<<"$(authed_status)"
	codes+=("$code")
	worst=$($py -c "print(max($worst, ${t:-10}))")
	sleep 0.5
done
[[ ${codes[*]} == "200 200 200 200 200" ]] &&
	pass "the client with the token gets in every time (${codes[*]}; slowest ${worst} s)" ||
	fail "the client with the token got ${codes[*]}"
wait $holder 2>/dev/null || true
cut=$(cat "$dir/hold.out")
((cut >= 8)) && pass "silent connections were cut ($cut: the 3 s handshake deadline, or for a newcomer)" ||
	fail "silent connections were not cut ($cut)"
v=$(api_field tcp_evicted_without_token)
((v >= 1)) && pass "connections without a token closed for newcomers: $v" ||
	fail "no connection was closed for a newcomer ($v)"

step "over an address's share: a 503 in TLS"
cat >"$dir/share.py" <<'EOF'
import socket, ssl, sys
port, ca = int(sys.argv[1]), sys.argv[2]
held = []
for _ in range(8):
    s = socket.socket(); s.bind(("127.0.0.20", 0)); s.connect(("127.0.0.1", port)); held.append(s)
ctx = ssl.create_default_context(cafile=ca)
s = socket.socket(); s.bind(("127.0.0.20", 0)); s.settimeout(5); s.connect(("127.0.0.1", port))
try:
    t = ctx.wrap_socket(s, server_hostname="127.0.0.1")
    t.sendall(b"GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n")
    data = b""
    while True:
        d = t.recv(4096)
        if not d:
            break
        data += d
    print(data.decode(errors="replace").splitlines()[0] if data else "EMPTY")
    print("too many connections from your address" in data.decode(errors="replace"))
except (ssl.SSLError, OSError) as e:
    print("TLS-ERROR", e)
EOF
out=$($py "$dir/share.py" $port "$dir/srv.pem" 2>&1 || true)
[[ $out == *"503"* && $out == *True* ]] && pass "the 9th connection of one address is told 503 in TLS" ||
	fail "the 9th connection of one address got: $out"

step "wrong tokens in a row"
codes=()
for i in 1 2 3 4 5 6; do
	codes+=("$(curl -s -m 10 --cacert "$dir/srv.pem" --interface 127.0.0.30 \
		-H "Authorization: Bearer wrong-token-0123456789abcdef" -o "$dir/wrong.json" \
		-w '%{http_code}' "https://127.0.0.1:$port/v1/status" 2>/dev/null || true)")
done
[[ ${codes[*]} == "401 401 401 401 401 503" ]] &&
	pass "5 wrong tokens answered 401, then the address is refused (${codes[*]})" ||
	fail "wrong tokens answered ${codes[*]}"
grep -q "wrong tokens" "$dir/wrong.json" && pass "the refusal says why" ||
	fail "the refusal does not say why: $(cat "$dir/wrong.json")"
read -r code _ <<<"$(authed_status)"
[[ $code == 200 ]] && pass "another address with the token is still served" ||
	fail "the client with the token got '$code' after the wrong tokens"
v=$(api_field tcp_wrong_tokens)
((v >= 5)) && pass "wrong tokens counted ($v)" || fail "wrong tokens not counted ($v)"
# The backoff slows wrong tokens only: the right one from the very address that sent 60 wrong
# ones (the same host, or a NAT in front of a collector) is served.
for i in $(seq 54); do
	curl -s -m 10 --cacert "$dir/srv.pem" --interface 127.0.0.30 \
		-H "Authorization: Bearer wrong-token-0123456789abcdef" -o /dev/null \
		"https://127.0.0.1:$port/v1/status" 2>/dev/null || true
done
code=$(curl -s -m 10 --cacert "$dir/srv.pem" --interface 127.0.0.30 -H "Authorization: Bearer $token" \
	-o /dev/null -w '%{http_code}' "https://127.0.0.1:$port/v1/status" 2>/dev/null || true)
[[ $code == 200 ]] && pass "after 60 wrong tokens from an address, the right token from it gets 200" ||
	fail "the right token from the address of 60 wrong ones got '$code'"
code=$(curl -s -m 10 --cacert "$dir/srv.pem" --interface 127.0.0.30 \
	-H "Authorization: Bearer wrong-token-0123456789abcdef" -o /dev/null -w '%{http_code}' \
	"https://127.0.0.1:$port/v1/status" 2>/dev/null || true)
[[ $code == 503 ]] && pass "its wrong tokens are still refused (503)" ||
	fail "a wrong token from that address got '$code' during its backoff"
v=$(api_field tcp_refused_after_wrong_tokens)
((v >= 55)) && pass "refusals after wrong tokens counted ($v)" ||
	fail "refusals after wrong tokens not counted ($v)"

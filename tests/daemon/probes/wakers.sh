#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# --wakers against a workload whose chains are known (tests/workloads/wake_chain.c): the main
# thread's waits in wait_a are charged, through "[woken by xs_relay1 ...]" and
# "[woken by xs_relay2 ...]", to xs_worker's hand_off, for most of their time; the sleeper's
# timer wakeups never to the chain's threads, though they are often the ones running when the
# timer fires (its last sleep ends in the process's exit, and its first may in xsprofd's
# SIGCONT: real wakeups, by other threads, the exit's chain going on from the main thread);
# and without --wakers no "[woken by" at all.
# Usage: wakers.sh BUILD_DIR
set -u
build=$1
xsprofd=$build/daemon/xsprofd
work=$build/tests/xs_wake_chain
out=$(mktemp -d /tmp/xs_wakers.XXXXXX)
trap 'rm -rf "$out"' EXIT
fail=0
for f in "$xsprofd" "$work"; do
	[ -x "$f" ] || { echo "wakers.sh: $f missing (build first)" >&2; exit 1; }
done

if ! timeout 120 "$xsprofd" -f -v --mode offcpu --wakers -o "$out/wakers.folded" -- "$work" 4 \
	>"$out/wakers.log" 2>&1; then
	cat "$out/wakers.log" >&2
	echo "FAIL xsprofd --wakers exited with an error"
	exit 1
fi
grep "off-CPU wakers:" "$out/wakers.log"
python3 - "$out/wakers.folded" <<'PY' || fail=1
import sys

MARK = "[woken by "
chain = [MARK + "xs_relay1 ", "pass_on_1", MARK + "xs_relay2 ", "pass_on_2", MARK + "xs_worker ",
         "hand_off"]
wait_a = chained = sleep = sleep_blamed = 0
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        continue
    st, n = line.rstrip("\n").rsplit(" ", 1)
    fr, n = st.split(";"), int(n)
    if "sleep_d" in fr:
        sleep += n
        first = next((f for f in fr if f.startswith(MARK)), "")  # who woke it
        sleep_blamed += n if any(first.startswith(MARK + t + " ")
                                 for t in ("xs_worker", "xs_relay1", "xs_relay2")) else 0
    if "wait_a" not in fr or "pass_on_1" in fr[:fr.index("wait_a")]:
        continue
    wait_a += n
    at = fr.index("wait_a")
    for want in chain:  # in this order, after the wait
        at = next((i for i in range(at + 1, len(fr)) if fr[i].startswith(want)), None)
        if at is None:
            break
    chained += n if at is not None else 0
share = chained / wait_a if wait_a else 0
print(f"wakers: main thread's wait_a {wait_a} us, {chained} ({share:.1%}) charged through "
      f"xs_relay1 and xs_relay2 to xs_worker's hand_off; sleeper {sleep} us, {sleep_blamed} "
      "charged to the chain's threads")
ok = True
if wait_a < 500000:
    print("FAIL wait_a has under 0.5 s off the CPU"); ok = False
if share < 0.8:
    print(f"FAIL {share:.1%} of wait_a's time charged to the whole chain, want >= 80%"); ok = False
if sleep < 100000 or sleep_blamed > 0.001 * sleep:
    print("FAIL the sleeper's timer waits were charged to a thread (or it never slept)"); ok = False
sys.exit(0 if ok else 1)
PY

# Without --wakers: the off-CPU profile as it was, no chain in it.
if ! timeout 120 "$xsprofd" -f --mode offcpu -o "$out/plain.folded" -- "$work" 2 \
	>"$out/plain.log" 2>&1; then
	cat "$out/plain.log" >&2
	echo "FAIL xsprofd --mode offcpu exited with an error"
	exit 1
fi
if grep -q "woken by" "$out/plain.folded"; then
	echo "FAIL a profile without --wakers has chains"
	fail=1
fi
grep -q "wait_a" "$out/plain.folded" || { echo "FAIL no wait_a in the plain profile"; fail=1; }
# --wakers is a one-shot, off-CPU flag: a clear error otherwise.
if "$xsprofd" -f --wakers -d 1 -o "$out/cpu.folded" >"$out/cpu.log" 2>&1 ||
	! grep -q -- "--wakers" "$out/cpu.log"; then
	echo "FAIL --wakers with --mode cpu was not refused with a reason"
	fail=1
fi
[ $fail = 0 ] && echo "PASS wakers"
exit $fail

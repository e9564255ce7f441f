#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The JVM (Debian's OpenJDK 17) never gets a wrong caller (daemon/unwind/unwind_jvm.h): with
# its default flags HotSpot's JIT code keeps no frame pointer, and a frame-pointer step from it
# lands on JavaCalls::call_helper, skipping the call stub and every Java caller. Run under
# xsprofd -f (4 s at 499 Hz) with the default flags, then with -XX:+PreserveFramePointer.
# Asserted: default flags: >= 99% of the samples whose leaf is JIT code end in
# "[truncated: JIT code without frame pointers]" right above it (none with a caller taken from
# rbp), and the report names the flag that helps; -XX:+PreserveFramePointer: >= 95% of the
# samples whole (from clone3), the JIT frames under the call stub, no such mark.
# Usage: tests/daemon/unwind/unwind_java.sh BUILD_DIR      (ctest unwind_java)
set -uo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
xsprofd=$build/daemon/xsprofd
py=/usr/bin/python3
for t in java javac; do
	command -v $t >/dev/null || { echo "FAIL no $t (apt-get install openjdk-17-jdk-headless)"; exit 1; }
done
[[ -x $xsprofd ]] || { echo "FAIL missing $xsprofd"; exit 1; }
[[ $(id -u) == 0 ]] || { echo "FAIL needs root (BPF)"; exit 1; }
dir=$(mktemp -d /tmp/xsprof-java-XXXXXX)
trap 'rm -rf "$dir"' EXIT
javac -d "$dir" "$here/workloads/Hot.java" || { echo "FAIL javac"; exit 1; }

fail=0
for run in default pfp; do
	flags=()
	[[ $run == pfp ]] && flags=(-XX:+PreserveFramePointer)
	if ! timeout 120 "$xsprofd" -f -F 499 -o "$dir/$run.folded" -- java "${flags[@]}" \
		-cp "$dir" Hot 4 >"$dir/$run.log" 2>&1; then
		echo "FAIL xsprofd ($run): $(tail -5 "$dir/$run.log")"
		fail=1
		continue
	fi
	grep -E "JVM|stop before" "$dir/$run.log"
	if [[ $run == default ]] && ! grep -q "without -XX:+PreserveFramePointer" "$dir/$run.log"; then
		echo "FAIL the report does not name -XX:+PreserveFramePointer"
		fail=1
	fi
	"$py" - "$dir/$run.folded" "$run" <<'PYEOF' || fail=1
import sys

MARK = "[truncated: JIT code without frame pointers]"
path, run = sys.argv[1], sys.argv[2]
jit = marked = total = rooted = stub_under = 0
for line in open(path):
    if line.startswith("#") or not line.startswith("java;"):
        continue
    st, n = line.rstrip("\n").rsplit(" ", 1)
    n = int(n)
    fr = [f for f in st.split(";")[1:] if not f.endswith("_[k]")]
    if not fr:
        continue
    total += n
    if fr[0].endswith("clone3") or fr[0] == "_start":
        rooted += n
    if fr[-1].startswith("[anon]"):
        jit += n
        if len(fr) == 2 and fr[0] == MARK:
            marked += n
        helper = [i for i, f in enumerate(fr) if f.startswith("JavaCalls::call_helper")]
        # Under call_helper: the call stub, then the Java frames (two at least).
        if helper and len(fr) - helper[0] - 1 >= 2:
            stub_under += n
pc = lambda a, b: 100.0 * a / max(b, 1)
print("%s: %d samples, %.1f%% whole; %d with a JIT leaf, %.1f%% marked, %.1f%% under "
      "call_helper through the call stub" % (run, total, pc(rooted, total), jit, pc(marked, jit),
                                             pc(stub_under, jit)))
bad = jit < 300
if run == "default":
    bad |= marked * 100 < jit * 99
else:
    bad |= rooted * 100 < total * 95 or marked > 0 or stub_under * 100 < jit * 90
print("%s %s" % ("FAIL" if bad else "ok  ", run))
sys.exit(1 if bad else 0)
PYEOF
done
[[ $fail == 0 ]] && echo "PASS unwind_java"
exit $fail

#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The CUDA API probes on a kernel before Linux 6.6 (no uprobe_multi links: one perf-event
# uprobe per API), as the kernel matrix found them on Debian 12's 6.1: xs_cuda's 130 calls, each
# under its exact stack and API (tests/kernel_matrix/guest/km_check.py's cuda check).
# XSPROF_TEST_NO_UPROBE_MULTI makes xsprofd's multi links fail as such a kernel's do.
# Usage: tests/daemon/cuda/cuda_perf_uprobes.sh BUILD_DIR          (ctest runs it as cuda_perf_uprobes)
set -u
build=$1
src=$(cd "$(dirname "$0")/../../.." && pwd)
dir=$(mktemp -d /tmp/xsprof-perfup-XXXXXX)
trap 'rm -rf "$dir"' EXIT
XSPROF_TEST_NO_UPROBE_MULTI=1 "$build/daemon/xsprofd" -f --launches-output "$dir/cuda.folded" -- \
	"$build/tests/xs_cuda" --exit 3 >"$dir/out" 2>"$dir/log"
rc=$?
if [ $rc != 3 ]; then
	echo "FAIL xsprofd exited $rc, want 3 (the command's):"
	tail -5 "$dir/log"
	exit 1
fi
if ! grep -q 'probes on [0-9]* files' "$dir/log"; then
	echo "FAIL the per-API uprobes were not attached:"
	grep 'CUDA' "$dir/log"
	exit 1
fi
python3 "$src/tests/kernel_matrix/guest/km_check.py" cuda "$dir/cuda.folded" "$dir/log" - ||
	{ echo "FAIL perf-event uprobes: calls missing or misplaced"; exit 1; }
echo "cuda_perf_uprobes: 1 passed, 0 failed"

#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The web view open and refreshing for a while: page weight, bytes per refresh, the browser's
heap and xsprofd's RSS over time. Usage: ui_soak.py URL XSPROFD_PID MINUTES ARTEFACT_DIR
(bench/ui_soak.sh starts the daemon, a workload and xsprofctl ui, then runs this)."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "service"))
from ui_browser import Browser  # noqa: E402


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main():
    url, pid, minutes, artefacts = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    os.makedirs(artefacts, exist_ok=True)
    b = Browser(artefacts)
    try:
        for d in ("Page", "Network", "Runtime", "Performance"):
            b.call(d + ".enable")
        b.call("Page.navigate", url=url)
        deadline = time.time() + 90
        while not b.js("document.querySelectorAll('#flame .frame').length > 3"):
            if time.time() > deadline:
                print("FAIL the page drew no flamegraph in 90 s")
                return 1
            time.sleep(0.5)
        loaded = {}
        for e in b.events:
            if e.get("method") == "Network.responseReceived":
                loaded[e["params"]["requestId"]] = e["params"]["response"]["url"]
        first = {}
        for e in b.events:
            if e.get("method") == "Network.loadingFinished" and e["params"]["requestId"] in loaded:
                first[loaded[e["params"]["requestId"]]] = e["params"]["encodedDataLength"]
        page = sum(v for k, v in first.items() if "/ui/" in k)
        print("page weight: %.1f KiB on the wire (HTML, script, style: %d files), then the API"
              % (page / 1024, sum(1 for k in first if "/ui/" in k)))
        b.events.clear()
        start = time.time()
        end = start + minutes * 60
        rss0 = rss_mib(pid)
        peak = rss0
        print("%8s %10s %12s %12s %10s" % ("minute", "rss_mib", "requests", "kib_in", "js_heap_mib"))
        next_line = start
        reqs = total = 0
        while time.time() < end:
            # Read the events the page's own refreshes made (every 2 s).
            b.js("1")
            for e in b.events:
                if e.get("method") == "Network.loadingFinished":
                    reqs += 1
                    total += e["params"]["encodedDataLength"]
            b.events.clear()
            peak = max(peak, rss_mib(pid))
            if time.time() >= next_line:
                heap = b.call("Runtime.getHeapUsage")["usedSize"] / 1048576
                print("%8.1f %10.1f %12d %12.0f %10.1f" % ((time.time() - start) / 60,
                      rss_mib(pid), reqs, total / 1024, heap), flush=True)
                next_line += 60
            time.sleep(2)
        rss1 = rss_mib(pid)
        heap = b.call("Runtime.getHeapUsage")["usedSize"] / 1048576
        secs = time.time() - start
        print("over %.1f min: %d requests (%.1f per refresh of 2 s), %.1f KiB/s from xsprofd"
              % (secs / 60, reqs, reqs / (secs / 2), total / 1024 / secs))
        print("xsprofd RSS: %.1f MiB at the start, %.1f at the end, peak %.1f MiB"
              % (rss0, rss1, peak))
        print("page JS heap at the end: %.1f MiB" % heap)
        b.screenshot("ui-soak-end.png")
    finally:
        b.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

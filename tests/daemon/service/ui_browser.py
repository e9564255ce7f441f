#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Drives xsprofd's web view in Debian's headless Chromium over the DevTools protocol.

Usage: ui_browser.py URL ARTEFACT_DIR GPU_CMD...
URL is the page (with #token=...); GPU_CMD is run while the page records its GPU timeline.
A workload must be running under the daemon: xs_split (xs_work_alpha 70%, xs_work_beta 30%).
$XSPROF_UI_DUMP names a manual dump of the flight recorder that holds xs_usdt_gpu's 12 kernels,
asked for with the note $XSPROF_UI_DUMP_NOTE: the Dumps table must list it and open it.
Prints "ok ..." / "FAIL ..." lines; exit status 1 on any FAIL. Every wait has a deadline.
"""
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import websocket  # Debian: python3-websocket

failures = 0


def ok(msg):
    print("ok   " + msg, flush=True)


def fail(msg):
    global failures
    failures += 1
    print("FAIL " + msg, flush=True)


def check(cond, good, bad):
    ok(good) if cond else fail(bad)
    return cond


class Browser:
    def __init__(self, artefacts):
        self.profile = tempfile.mkdtemp(prefix="xsprof-ui-")
        self.artefacts = artefacts
        args = [
            shutil.which("chromium") or "chromium", "--headless=new", "--no-sandbox",
            "--disable-gpu", "--remote-debugging-port=0", "--user-data-dir=" + self.profile,
            "--window-size=1400,1100", "--no-first-run", "--no-default-browser-check",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-default-apps", "--disable-extensions", "--metrics-recording-only",
            "--disable-features=Translate,MediaRouter,OptimizationHints", "about:blank",
        ]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(artefacts, "chromium.log"), "w"))
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.time() + 60
        while not (os.path.exists(port_file) and os.path.getsize(port_file) > 0):
            if time.time() > deadline or self.proc.poll() is not None:
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.2)
        port = open(port_file).read().split()[0]
        with urllib.request.urlopen("http://127.0.0.1:%s/json" % port, timeout=30) as r:
            pages = [t for t in json.load(r) if t["type"] == "page"]
        self.ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=120,
                                              suppress_origin=True)
        self.next_id = 0
        self.events = []

    def call(self, method, **params):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            self.events.append(msg)

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def wait(self, expr, seconds, what):
        """Polls expr until it is truthy; its value, or None after the deadline."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            v = self.js(expr)
            if v:
                return v
            time.sleep(0.25)
        fail("%s: not within %d s" % (what, seconds))
        return None

    def mouse(self, kind, x, y):
        self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                  buttons=1 if kind != "mouseReleased" else 0, clickCount=1)

    def drag(self, x0, x1, y):
        self.mouse("mousePressed", x0, y)
        for i in range(1, 6):
            self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x0 + (x1 - x0) * i / 5,
                      y=y, button="left", buttons=1)
        self.mouse("mouseReleased", x1, y)

    def click(self, selector):
        box = self.js("(() => { const e = document.querySelector(%s);"
                      " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
                      " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
                      % json.dumps(selector))
        self.mouse("mousePressed", box[0], box[1])
        self.mouse("mouseReleased", box[0], box[1])

    def screenshot(self, name):
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path = os.path.join(self.artefacts, name)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data["data"]))
        return path

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


def history(b, step_at):
    """The History panel (xsprofctl ui --history): lex stepped at commit step_at."""
    print("\n== the history of a benchmark: its step, its trend, its differential flamegraph",
          flush=True)
    rows = b.wait("""(() => { const r = [...document.querySelectorAll('#hist-steps tbody tr')];
        return r.length ? r.map((t) => [...t.cells].map((c) => c.textContent)) : null; })()""",
                  30, "the History panel's steps")
    if not rows:
        return
    lex = [r for r in rows if r[0] == "self lex"]
    check(lex and lex[0][1].startswith(step_at) and lex[0][2].startswith("+"),
          "History: self lex stepped at %s, %s (%s)" % (lex[0][1], lex[0][2], lex[0][3])
          if lex else "", "History's rows: %s" % rows[:6])
    check(not [r for r in rows if r[0] == "self emit"],
          "emit, unchanged, has no step", "emit has a step: %s" % rows)
    if not lex:
        return
    index = rows.index(lex[0]) + 1
    b.click("#hist-steps tbody tr:nth-child(%d) button.hist-diff" % index)
    frames = b.wait("""(() => { const s = document.querySelector('#hist-diff svg');
        if (!s) return null;
        return [...s.querySelectorAll('title')].map((t) => [t.textContent,
            t.parentNode.querySelector('rect') ? t.parentNode.querySelector('rect')
                .getAttribute('fill') : '']); })()""", 30,
                    "the differential flamegraph one click away")
    if frames:
        red = [t for t, fill in frames if "lex" in t and fill.startswith("rgb(255")]
        check(red, "one click draws the differential flamegraph: lex red (%s)" % red[0][:80]
              if red else "", "lex is not red in it: %s" % frames[:8])
    b.click("#hist-steps tbody tr:nth-child(%d) button" % index)
    title = b.wait("""(() => { const t = document.querySelector('#hist-trend svg text');
        return t ? t.textContent : null; })()""", 30, "the trend plot")
    check(title == "self lex", "and its trend plot: %s" % title, "the trend's title: %r" % title)
    b.screenshot("ui-history.png")


def main():
    url, artefacts, gpu_cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(artefacts, exist_ok=True)
    origin = "{0.scheme}://{0.netloc}/".format(urllib.parse.urlsplit(url))
    b = Browser(artefacts)
    try:
        if os.environ.get("XSPROF_UI_HISTORY_ONLY"):
            run_history_only(b, url, os.environ["XSPROF_UI_HISTORY_ONLY"])
        else:
            run(b, url, origin, gpu_cmd)
    finally:
        b.close()
    return 1 if failures else 0


def run_history_only(b, url, step_at):
    """xsprofctl ui --history without xsprofd: the history only, the live panels hidden."""
    for domain in ("Page", "Runtime", "Network", "Log"):
        b.call(domain + ".enable")
    b.call("Page.navigate", url=url)
    print("\n== the history only (no xsprofd behind xsprofctl ui)", flush=True)
    history(b, step_at)
    shown = b.js("""[...document.querySelectorAll('.panel')].filter((p) =>
        p.offsetParent !== null).map((p) => p.id || p.querySelector('h2').textContent)""")
    check(shown == ["history"], "only the History panel is shown",
          "panels shown: %s" % shown)
    check(b.js("document.querySelector('#error').hidden"), "no error bar",
          "the error bar: %r" % b.js("document.querySelector('#error').textContent"))
    errors = [e["params"] for e in b.events
              if e.get("method") == "Runtime.exceptionThrown" or
              (e.get("method") == "Log.entryAdded" and
               e["params"]["entry"]["level"] == "error" and
               # the live API's 503 answered before the page knew: a network line only
               "status of 503" not in e["params"]["entry"].get("text", ""))]
    check(not errors, "no script errors nor CSP violations", "page errors: %s" % errors[:3])
    b.screenshot("ui-history-only.png")
    print("browser: every step ran", flush=True)


def run(b, url, origin, gpu_cmd):
    for domain in ("Page", "Runtime", "Network", "Log"):
        b.call(domain + ".enable")
    b.call("Page.navigate", url=url)

    print("\n== the page loads and draws the window's flamegraph", flush=True)
    if not b.wait("document.querySelectorAll('#flame .frame').length > 3", 90,
                  "the flamegraph has frames"):
        b.screenshot("ui-failed.png")
        print(b.js("document.querySelector('#error').textContent"))
        return
    b.screenshot("ui-loaded.png")
    check(b.js("location.hash") == "", "the token is out of the address bar",
          "the token is still in the address bar")
    # The known split: xs_work_alpha gets 70% of the worker's CPU, xs_work_beta 30%.
    w = b.wait("""(() => {
        const v = (n) => [...document.querySelectorAll('#flame .frame')]
            .filter((d) => d.dataset.name === n).reduce((s, d) => s + Number(d.dataset.value), 0);
        const a = v('xs_work_alpha'), b = v('xs_work_beta');
        return a > 0 && b > 0 && a + b >= 40 ? [a, b] : null; })()""", 90,
               "xs_work_alpha and xs_work_beta in the flamegraph")
    if w:
        check(w[0] > w[1], "the hottest function of the workload is the widest: xs_work_alpha "
              "%d vs xs_work_beta %d samples" % (w[0], w[1]),
              "xs_work_alpha %d is not wider than xs_work_beta %d" % (w[0], w[1]))
    top = b.js("[...document.querySelectorAll('#top tbody tr')].map((r) => r.dataset.name)")
    check(top and "burn" in top[:3], "the top functions table has the workload's leaf (burn) "
          "in its first rows: %s" % top[:3], "top functions: %s" % (top or [])[:5])
    status = b.js("document.querySelector('#status-bar').textContent")
    check("attached" in status and "own cost" in status and "samples" in status,
          "the status bar says what is attached, samples, caps and xsprofd's cost: %s"
          % status[:150], "status bar: %r" % status)

    print("\n== search highlights the function", flush=True)
    b.call("Runtime.evaluate", expression="""(() => { const s = document.querySelector('#search');
        s.value = 'xs_work_alpha'; s.dispatchEvent(new Event('input')); })()""")
    m = b.js("""[document.querySelectorAll('#flame .frame.match').length,
        [...document.querySelectorAll('#flame .frame.match')].every((d) => d.dataset.name === 'xs_work_alpha'),
        Number(document.querySelector('#search-result').dataset.value),
        Number(document.querySelector('#total').dataset.value),
        document.querySelector('#search-result').textContent]""")
    check(m[0] >= 1 and m[1] and 0 < m[2] < m[3],
          "%d frame(s) highlighted, all xs_work_alpha: %s" % (m[0], m[4]),
          "search: %s" % m)
    b.screenshot("ui-search.png")
    b.call("Runtime.evaluate", expression="""(() => { const s = document.querySelector('#search');
        s.value = ''; s.dispatchEvent(new Event('input')); })()""")

    print("\n== a range chosen on the strip changes the counts", flush=True)
    if b.wait("document.querySelectorAll('#strip .bar').length >= 3", 90,
              "three slices in the strip"):
        before = b.js("Number(document.querySelector('#total').dataset.value)")
        # The oldest slice alone: from its left edge to its right one.
        bar = b.js("""(() => { const r = document.querySelector('#strip .bar').getBoundingClientRect();
            return [r.left + 1, r.right - 1, r.top + r.height / 2]; })()""")
        y = b.js("(() => { const r = document.querySelector('#strip').getBoundingClientRect();"
                 " return r.top + r.height / 2; })()")
        b.drag(bar[0], bar[1], y)
        after = b.wait("""(() => { const t = Number(document.querySelector('#total').dataset.value);
            return document.querySelector('#range').textContent && t !== %d ? t : null; })()"""
                       % before, 30, "the counts change after a range selection")
        if after is not None:
            check(0 < after < before, "the range holds %d of %d samples; the range reads '%s'"
                  % (after, before, b.js("document.querySelector('#range').textContent")),
                  "range total %s vs %s before" % (after, before))
        b.screenshot("ui-range.png")
        # The differential view: the oldest slice as baseline, the newest as the range.
        b.js("(() => { const c = document.querySelector('#compare'); c.checked = true;"
             " c.dispatchEvent(new Event('change')); })()")
        bars = b.js("""[...document.querySelectorAll('#strip .bar')].map((e) => {
            const r = e.getBoundingClientRect(); return [r.left + 1, r.right - 1]; })""")
        b.drag(bars[0][0], bars[0][1], y)
        b.drag(bars[-1][0], bars[-1][1], y)
        # Frames whose share changed are red (grew) or blue (shrank), the rest white.
        d = b.wait("""(() => { if (!document.querySelector('#range').textContent.startsWith('baseline'))
            return null;
            const c = [...document.querySelectorAll('#flame .frame')].map((f) => f.style.background);
            const red = c.filter((x) => /^rgb\(255, \d+, \d+\)$/.test(x) && x !== 'rgb(255, 255, 255)').length;
            const blue = c.filter((x) => /^rgb\(\d+, \d+, 255\)$/.test(x) && x !== 'rgb(255, 255, 255)').length;
            return red + blue > 0 ? [red, blue, c.length] : null; })()""", 30,
                   "the differential view")
        if d:
            ok("the differential view colours frames by their change between the two ranges "
               "(%d grew, %d shrank, of %d)" % tuple(d))
        b.screenshot("ui-compare.png")
        b.js("(() => { const c = document.querySelector('#compare'); c.checked = false;"
             " c.dispatchEvent(new Event('change')); })()")
        b.js("document.querySelector('#strip').dispatchEvent(new MouseEvent('dblclick'))")

    print("\n== the GPU timeline shows the test double's kernels and their launching stack",
          flush=True)
    b.js("document.querySelector('#gpu-seconds').value = 7")
    b.click("#gpu-record")
    time.sleep(1.5)
    gpu = subprocess.run(gpu_cmd, stdout=subprocess.DEVNULL, timeout=60)
    check(gpu.returncode == 0, "the GPU test double ran", "the GPU test double failed")
    n = b.wait("""[...document.querySelectorAll('#gpu .gpu-item.kernel')].filter((e) =>
        e.dataset.name === 'xs_kernel_alpha' || e.dataset.name === 'xs_kernel_beta').length""",
               60, "kernels on the GPU timeline")
    check(n == 12, "%s kernels of the double drawn (it ran 12)" % n,
          "%s kernels of the double drawn, not 12" % n)
    if n:
        b.click('#gpu .gpu-item.kernel[data-name="xs_kernel_beta"]')
        detail = b.wait("document.querySelector('#gpu-detail').textContent", 10,
                        "a kernel's details on click")
        check(detail and "xs_kernel_beta" in detail and "xs_gpu_beta_site" in detail,
              "a click on a kernel shows xs_kernel_beta launched from xs_gpu_beta_site",
              "kernel details: %r" % detail)
        ranges = b.wait("""[...document.querySelectorAll('#gpu .gpu-item.range')]
            .map((e) => e.dataset.name).filter((n) => n === 'forward' || n === 'step').length""",
                        10, "NVTX ranges on the GPU timeline")
        check(ranges and ranges >= 2, "the NVTX ranges of the recording are drawn on their "
              "thread's lanes (%s of forward and step)" % ranges, "no NVTX ranges drawn")
        summary = b.js("document.querySelector('#gpu-summary').textContent")
        # 7 x 1 + 5 x 2 ms of the double and 3 x 1 ms of xs_nvtx_phases on one device: the
        # two processes' kernels may overlap in time, counted once.
        m = re.search(r"busy ([0-9.]+) ms", summary or "")
        check(m and 17.0 <= float(m.group(1)) <= 20.0,
              "GPU busy time from the records: %s" % summary[:120],
              "GPU summary: %r (want busy 17 to 20 ms)" % summary)
    b.screenshot("ui-gpu.png")

    print("\n== the flight recorder's dump is listed, and opens on its GPU timeline", flush=True)
    dump = os.environ.get("XSPROF_UI_DUMP", "")
    note = os.environ.get("XSPROF_UI_DUMP_NOTE", "")
    row_sel = "#dumps tbody tr[data-name=%s]" % json.dumps(dump)
    # Its cells once the manifest (what tripped it) is in.
    row = dump and b.wait("""(() => { const r = document.querySelector(%s);
        return r && r.children[3].textContent ? [...r.children].map((c) => c.textContent) : null;
        })()""" % json.dumps(row_sel), 60, "dump %s in the Dumps table" % dump)
    if not dump:
        fail("no dump to look for (XSPROF_UI_DUMP is empty: see xsprofctl dump above)")
    elif row:
        check(row[1] == "manual" and row[2] == "done" and re.search(r"^[0-9.]+ [KM]iB$", row[4]),
              "the Dumps table lists %s: %s" % (dump, " | ".join(row[:5])),
              "the dump's row: %s" % row)
        # The note is user input: shown as its text, never made into elements.
        check(note and note in row[3] and
              b.js("document.querySelector('#xs-note') === null && "
                   "!document.querySelector('#dumps tbody b')"),
              "its note is shown as text, not HTML: %s" % row[3],
              "the note %r shows as %r (or became HTML)" % (note, row[3]))
        check(b.js("document.querySelector('#dumps-note').textContent") == "",
              "no 'off' nor 'no dumps yet' line with a dump listed",
              "the Dumps line: %r" % b.js("document.querySelector('#dumps-note').textContent"))
        b.click(row_sel + " button")
        title = b.wait("""(() => { const t = document.querySelector('#gpu-title').textContent;
            return t.startsWith(%s) ? t : null; })()""" % json.dumps("dump " + dump), 60,
                       "the dump's heading over the GPU timeline")
        if title:
            check("manual" in title and note in title and "xs_usdt_gpu" in title,
                  "the heading says which dump, its trigger, its note and its process: %s"
                  % title[:200], "the dump's heading: %r" % title)
            n = b.js("""[...document.querySelectorAll('#gpu .gpu-item.kernel')].filter((e) =>
                e.dataset.name === 'xs_kernel_alpha' || e.dataset.name === 'xs_kernel_beta').length""")
            check(n == 12, "its timeline is drawn: %s kernels of the double (it ran 12)" % n,
                  "%s kernels drawn from the dump, not 12" % n)
            summary = b.js("document.querySelector('#gpu-summary').textContent")
            # 7 x 1 ms + 5 x 2 ms, back to back on one device.
            m = re.search(r"busy ([0-9.]+) ms", summary or "")
            check(m and 16.0 <= float(m.group(1)) <= 18.0,
                  "the dump's GPU busy time: %s" % summary[:120],
                  "the dump's GPU summary: %r (want busy 16 to 18 ms)" % summary)
            check(b.js("document.querySelector(%s).classList.contains('open')"
                       % json.dumps(row_sel)),
                  "its row is marked as the one drawn", "its row is not marked open")
            # The dump was cut while the double ran: its launches are joined, stacks named.
            b.click('#gpu .gpu-item.kernel[data-name="xs_kernel_beta"]')
            detail = b.wait("""(() => { const t = document.querySelector('#gpu-detail').textContent;
                return t.includes('xs_kernel_beta') ? t : null; })()""", 10,
                            "a dump's kernel's details on click")
            check(detail and "xs_gpu_beta_site" in detail,
                  "a click on the dump's xs_kernel_beta shows it launched from xs_gpu_beta_site",
                  "the dump's kernel details: %r" % detail)
    b.screenshot("ui-dump.png")

    step_at = os.environ.get("XSPROF_UI_HISTORY")
    if step_at:
        history(b, step_at)

    print("\n== nothing left the host", flush=True)
    urls = [e["params"]["request"]["url"] for e in b.events
            if e.get("method") == "Network.requestWillBeSent"]
    outside = [u for u in urls if not (u.startswith(origin) or u.startswith("data:"))]
    check(urls and not outside, "%d requests, all to %s" % (len(urls), origin),
          "requests outside the host: %s" % outside[:5])
    errors = [e["params"] for e in b.events
              if e.get("method") == "Runtime.exceptionThrown" or
              (e.get("method") == "Log.entryAdded" and
               e["params"]["entry"]["level"] == "error" and
               # a range the daemon refuses is shown on the page, not a script error
               "status of 4" not in e["params"]["entry"].get("text", ""))]
    check(not errors, "no script errors nor CSP violations", "page errors: %s" % errors[:3])
    print("screenshots in %s" % b.artefacts, flush=True)
    print("browser: every step ran", flush=True)


if __name__ == "__main__":
    sys.exit(main())

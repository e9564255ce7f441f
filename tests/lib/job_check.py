# SPDX-License-Identifier: Apache-2.0
# The straggler xs_gpu_job injected (tests/workloads/gpu_job.c) against a job report's findings:
# shared by tests/output/job/job_report.sh (one host) and tests/output/job/job_fleet.sh (two).


def truth_of(path):
    """The launcher's "straggler R", "lateness_ns N", "cause C" and "work FUNCTION" lines."""
    return dict(l.split() for l in open(path) if len(l.split()) == 2
                and l.split()[0] in ("straggler", "lateness_ns", "cause", "work"))


def straggler_problems(job, truth):
    """What is wrong with job's findings against the truth (an empty list: nothing)."""
    bad = []
    fs = [f for f in job["findings"] if f["kind"] == "straggler"]
    if truth["straggler"] == "none":
        if job["findings"]:
            bad.append(f"findings without a straggler: {[f['summary'] for f in job['findings']]}")
        return bad
    if len(fs) != 1:
        return [f"stragglers: {[f['summary'] for f in fs]}"]
    f = fs[0]
    want = {"2": ("compute", "xs_forward"), "1": ("host", "xs_load_data")}[truth["straggler"]]
    if "cause" in truth:
        want = (truth["cause"], truth.get("work", want[1]))
    if str(f["rank"]) != truth["straggler"] or f["cause"] != want[0]:
        bad.append(f"named rank {f['rank']} cause {f['cause']}, not rank {truth['straggler']} "
                   f"{want[0]}")
    if not any(want[1] in fr for fr in f["stack"]):
        bad.append(f"stack lacks {want[1]}: {f['stack']}")
    fig = f["figures"]
    if fig["late_collectives"] < 0.8 * fig["collectives"]:
        bad.append(f"late at {fig['late_collectives']} of {fig['collectives']}")
    if "lateness_ns" in truth:
        t = int(truth["lateness_ns"])
        if abs(fig["lateness_median_ns"] - t) > 0.05 * t:
            bad.append(f"lateness {fig['lateness_median_ns']} vs injected {t}")
        if not f["kernels"] or f["kernels"][0]["name"] != "xs_k_forward":
            bad.append(f"kernels {f['kernels']}")
        print(f"     lateness {fig['lateness_median_ns'] / 1e6:.3f} ms, injected {t / 1e6:.3f} ms")
    print(f"     {f['severity']} {f['kind']}: {f['summary']}")
    return bad

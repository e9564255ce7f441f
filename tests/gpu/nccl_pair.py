# SPDX-License-Identifier: Apache-2.0
# Two ranks over NCCL for the GPU suite (tests/gpu/run.sh), one GPU each where there are two,
# else both on GPU 0 (NCCL may refuse that: the error is the finding). Each rank runs STEPS
# steps of a matrix product and an all-reduce; rank 1's product is twice as large, so rank 0
# waits in every all-reduce (the straggler is rank 1). Started as two processes with RANK,
# WORLD_SIZE, MASTER_ADDR/PORT and TORCHELASTIC_RUN_ID set by this script itself.
#
# Usage: nccl_pair.py STEPS OUT_JSON
import datetime
import json
import os
import subprocess
import sys
import time


def rank_main(steps, out):
    import torch
    import torch.distributed as dist
    import torch.cuda.nvtx as nvtx

    rank = int(os.environ["RANK"])
    dev = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    res = {"rank": rank, "device": str(dev), "pid": os.getpid()}
    try:
        dist.init_process_group("nccl", device_id=dev,
                                timeout=datetime.timedelta(seconds=30))
        n = 4096 if rank == 0 else 8192
        a = torch.randn(n, n, device=dev)
        g = torch.randn(1 << 22, device=dev)
        t0 = time.perf_counter()
        for _ in range(steps):
            nvtx.range_push("step")
            (a @ a).sum()
            dist.all_reduce(g)
            torch.cuda.synchronize()
            nvtx.range_pop()
        res["step_s"] = (time.perf_counter() - t0) / steps
        dist.destroy_process_group()
        res["ok"] = True
    except Exception as e:  # the refusal is the finding
        res["ok"] = False
        res["error"] = f"{type(e).__name__}: {e}"[:600]
    with open(f"{out}.{rank}", "w") as f:
        json.dump(res, f)


def main():
    steps, out = int(sys.argv[1]), sys.argv[2]
    if os.environ.get("RANK") is not None:
        rank_main(steps, out)
        return
    env = dict(os.environ, WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT="29533",
               TORCHELASTIC_RUN_ID="xsprof-gpu-pair", LOCAL_WORLD_SIZE="2")
    procs = [subprocess.Popen([sys.executable, __file__, str(steps), out],
                              env=dict(env, RANK=str(r), LOCAL_RANK=str(r))) for r in range(2)]
    rcs = []
    for p in procs:
        try:
            rcs.append(p.wait(timeout=50))
        except subprocess.TimeoutExpired:
            p.kill()
            rcs.append("killed after 50 s")
    ranks = []
    for r in range(2):
        try:
            with open(f"{out}.{r}") as f:
                ranks.append(json.load(f))
        except (OSError, ValueError):
            ranks.append({"rank": r, "ok": False, "error": "no result"})
    with open(out, "w") as f:
        json.dump({"exit": rcs, "ranks": ranks}, f)


if __name__ == "__main__":
    main()

"""A rank for the fault-injection tests, started by launch.py; no eroica imports unless asked.

Knobs (key=value): pg=1 iters=80 pace_s=0.01 out=DIR
  kill_rank=-1     this rank SIGKILLs itself at the second iteration of a capture window
  slow_rank=-1 slow_pace_s=0.03 short_iters=0   that rank is paced slower and, when
                                                short_iters > 0, stops after that many
  force_rank=-1 force_at=10   only that rank forces a session there (EROICA_TRIGGER_AT
                              forces one on every rank)
  hang_rank=-1 hang_at=-1     that rank blocks forever at that iteration
  barrier=0                   1: without a process group, the ranks still start their loops
                              together (through the launcher's store), as DDP ranks do
Writes out/loop-end-rank-<r>.json when its loop ends (normally or by an exception, which it
then re-raises: the job exits as it would without eroica).
"""

import json
import os
import signal
import sys
import time

import torch

opts = {"pg": 1, "iters": 80, "pace_s": 0.01, "out": "/tmp/eroica-faults", "kill_rank": -1,
        "slow_rank": -1, "slow_pace_s": 0.03, "short_iters": 0, "force_rank": -1,
        "force_at": 10, "hang_rank": -1, "hang_at": -1, "barrier": 0}
for arg in sys.argv[1:]:
    key, _, value = arg.partition("=")
    opts[key] = type(opts[key])(value)
rank = int(os.environ["RANK"])
torch.set_num_threads(1)
model = torch.nn.Linear(32, 32)
if opts["pg"]:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")  # env://: the launcher's store, or rank 0's
    model = DDP(model)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
if opts["barrier"] and not opts["pg"]:
    import datetime

    from torch.distributed import TCPStore

    start_store = TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), None,
                           False, datetime.timedelta(seconds=60))
    start_store.add("fault_train/start", 1)
    while start_store.add("fault_train/start", 0) < int(os.environ["WORLD_SIZE"]):
        time.sleep(0.01)
iters, pace_s = opts["iters"], opts["pace_s"]
if rank == opts["slow_rank"]:
    pace_s = opts["slow_pace_s"]
    iters = opts["short_iters"] or iters


def runtime():
    import eroica.bootstrap

    return eroica.bootstrap.runtime()


def capturing():
    rt = runtime()
    return rt is not None and rt.capture is not None


if rank == opts["force_rank"]:
    runtime()._force_at = opts["force_at"]


def loop_end(done, error=None):
    os.makedirs(opts["out"], exist_ok=True)
    with open(os.path.join(opts["out"], "loop-end-rank-%d.json" % rank), "w") as f:
        json.dump({"unix": time.time(), "iterations": done, "error": error}, f)


done, in_window = 0, 0
try:
    for i in range(iters):
        if rank == opts["kill_rank"] and capturing():
            in_window += 1
            if in_window == 2:
                os.kill(os.getpid(), signal.SIGKILL)
        if rank == opts["hang_rank"] and i == opts["hang_at"]:
            time.sleep(3600)  # HANG-HERE
        opt.zero_grad()
        model(torch.randn(8, 32)).sum().backward()
        opt.step()
        time.sleep(pace_s)
        done = i + 1
except Exception as e:
    loop_end(done, "%s: %s" % (type(e).__name__, e))
    raise
loop_end(done)
if opts["pg"]:
    dist.destroy_process_group()

"""A rank started by a launcher (torchrun-style environment), with or without a process group.

Knobs (key=value): pg=1 iters=200 slow_from=90 slow_s=0.03

Without a process group the ranks are not in lock-step, so rank 0 would finish long before the
slowed rank 1; they meet at the end through the launcher's store (as a job's collectives make
its ranks end together), or under load rank 0 may exit before rank 1's trigger reaches it.
"""

import datetime
import os
import sys
import time

import torch

opts = {"pg": 1, "iters": 200, "slow_from": 90, "slow_s": 0.03}
for arg in sys.argv[1:]:
    key, _, value = arg.partition("=")
    opts[key] = type(opts[key])(value)
rank = int(os.environ["RANK"])
model = torch.nn.Linear(32, 32)
if opts["pg"]:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")  # env://, through the launcher's store
    model = DDP(model)
opt = torch.optim.Adam(model.parameters())
for i in range(opts["iters"]):
    opt.zero_grad()
    model(torch.randn(8, 32)).sum().backward()
    opt.step()
    time.sleep(0.01 + (opts["slow_s"] if rank == 1 and i >= opts["slow_from"] else 0))
if not opts["pg"]:
    import torch.distributed as dist

    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), None, False,
                          datetime.timedelta(seconds=60))
    store.add("plain_train_done", 1)
    deadline = time.time() + 60
    while store.add("plain_train_done", 0) < int(os.environ["WORLD_SIZE"]) and time.time() < deadline:
        time.sleep(0.05)

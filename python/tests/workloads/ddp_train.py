"""A small DDP training job on CPU (gloo) for the end-to-end tests; no eroica imports.

Each rank is a torch.multiprocessing spawn child. Knobs (command line, key=value):
  world=2 iters=200 pace_s=0.01 out=DIR
  slow_rank=-1 slow_from=-1 slow_s=0.03   the rank sleeps slow_s in its collate from then on
  hang_rank=-1 hang_at=-1                 the rank blocks forever in its collate there
  all_slow_from=-1 all_slow_s=0.03        every rank sleeps all_slow_s in its step from then on
  all_slow_until=-1                       every rank sleeps all_slow_s in its step until then (a job
                                          that speeds up)
  toggle_block=0                          idle-cost mode: alternate hooks off/on every N iters
"""

import json
import os
import sys
import time


# Its own knob parser and rank start, not ranks.py's: the wheel's test copies this file alone into
# a venv and runs it away from the source tree (packaging/tests/test_wheel.py).
def parse(argv):
    opts = {"world": 2, "iters": 200, "pace_s": 0.01, "out": "/tmp/eroica-workload",
            "slow_rank": -1, "slow_from": -1, "slow_s": 0.03, "hang_rank": -1, "hang_at": -1,
            "all_slow_from": -1, "all_slow_s": 0.03, "all_slow_until": -1,
            "toggle_block": 0, "port": 29511, "hidden": 256}
    for arg in argv:
        key, _, value = arg.partition("=")
        opts[key] = type(opts[key])(value) if key in opts else value
    return opts


class Collate:
    """Stacks samples; on the chosen rank, gets slow (or blocks) from a chosen batch on."""

    def __init__(self, rank, opts):
        self.rank = rank
        self.opts = opts
        self.batch = 0

    def __call__(self, samples):
        import torch

        batch, self.batch = self.batch, self.batch + 1
        if self.rank == self.opts["hang_rank"] and batch == self.opts["hang_at"]:
            time.sleep(3600)  # BLOCK-HERE
        if self.rank == self.opts["slow_rank"] and batch >= self.opts["slow_from"] >= 0:
            if batch == self.opts["slow_from"]:
                mark(self.opts, "slow_started", {"iteration": batch,
                                                 "unix_ns": time.time_ns()})
            time.sleep(self.opts["slow_s"])
        xs, ys = zip(*samples)
        return torch.stack(xs), torch.stack(ys)


def mark(opts, name, doc):
    os.makedirs(opts["out"], exist_ok=True)
    with open(os.path.join(opts["out"], name + ".json"), "w") as f:
        json.dump(doc, f)


def train(rank, opts):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, TensorDataset

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=opts["world"])
    torch.manual_seed(rank)
    n = opts["iters"] * 16
    data = TensorDataset(torch.randn(n, 64), torch.randn(n, 1))
    loader = DataLoader(data, batch_size=16, collate_fn=Collate(rank, opts))
    h = opts["hidden"]
    model = DDP(torch.nn.Sequential(torch.nn.Linear(64, h), torch.nn.ReLU(),
                                    torch.nn.Linear(h, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    times = []
    hooks_on = True
    block = opts["toggle_block"]
    last = time.perf_counter()
    for i, (x, y) in enumerate(loader):
        if block and i % block == 0:
            hooks_on = toggle_hooks(i // block % 2 == 0)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        if 0 <= opts["all_slow_from"] <= i:
            if i == opts["all_slow_from"] and rank == 0:
                mark(opts, "all_slow_started", {"iteration": i, "unix_ns": time.time_ns()})
            time.sleep(opts["all_slow_s"])
        elif i < opts["all_slow_until"]:
            time.sleep(opts["all_slow_s"])
        opt.step()
        time.sleep(opts["pace_s"])
        now = time.perf_counter()
        times.append((i, hooks_on, now - last))
        last = now
    if block:
        mark(opts, "times-rank-%d" % rank, times)
        rt = runtime()
        if rt is not None:
            mark(opts, "monitor-rank-%d" % rank, {"ticks": rt.monitor_ticks,
                                                  "busy_ns": rt.monitor_busy_ns,
                                                  "wall_s": sum(t for _, _, t in times)})
    dist.barrier()
    dist.destroy_process_group()


def runtime():
    try:
        import eroica.bootstrap
    except ImportError:
        return None
    return eroica.bootstrap.runtime()


def toggle_hooks(on):
    """Idle-cost runs: the same loop with the hooks in place and removed, interleaved."""
    import eroica.hooks

    rt = runtime()
    if rt is None:
        return False
    if on and not eroica.hooks.installed():
        eroica.hooks.install(rt)
    elif not on and eroica.hooks.installed():
        eroica.hooks.uninstall()
    return on


def main():
    import torch.multiprocessing as mp

    opts = parse(sys.argv[1:])
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(opts["port"])
    mp.spawn(train, args=(opts,), nprocs=opts["world"], join=True)


if __name__ == "__main__":
    main()

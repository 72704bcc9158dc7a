"""A small DDP job (gloo, CPU) where one rank runs pure Python at a known line every iteration.

Knobs (key=value): world=2 iters=60 hot_rank=1 hot_s=0.03 gc=0 eval_s=0 port=29512 workers=0
getitem_s=0 hot_from=0 jitter_s=0 fresh_mb=0
  hot_rank spins in `hot_loop` (the HOT-LINE below) for hot_s per iteration from iteration
  hot_from on (fresh_mb > 0: instead, every rank fills a new tensor of that many MB, which
  glibc maps fresh above its mmap threshold: page faults on every step, the FRESH-LINE); jitter_s > 0 makes every rank sleep a random 0..jitter_s a step (noisy
  iteration times that cost no CPU time, as on busy shared cores; the same draws on every rank); gc=1 makes it
  call gc.collect() there instead, over a heap of many small objects; eval_s > 0 makes it run
  the model's forward without gradients for that long instead (the EVAL-LINE: an evaluation
  pass on one rank, whose ops are the ones training calls). workers > 0: the batches
  come from a DataLoader with that many worker processes, whose samples each cost getitem_s
  of waiting on hot_rank (the GETITEM-LINE: a slow read in the workers).
"""

import gc
import random
import sys
import time

import ranks


def parse(argv):
    return ranks.knobs(argv, {"world": 2, "iters": 60, "hot_rank": 1, "hot_s": 0.03, "gc": 0,
                              "eval_s": 0.0, "port": 29512, "workers": 0, "getitem_s": 0.0,
                              "hot_from": 0, "jitter_s": 0.0, "fresh_mb": 0})


def hot_loop(seconds):
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end:
        total += sum(i * i for i in range(100))  # HOT-LINE
    return total


class Samples:
    """A map-style dataset of random inputs; each sample costs `getitem_s` of waiting."""

    def __init__(self, count, getitem_s):
        self.count = count
        self.getitem_s = getitem_s

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        import torch

        if self.getitem_s > 0:
            time.sleep(self.getitem_s)  # GETITEM-LINE
        return torch.randn(64)


def evaluate(model, seconds, torch):
    end = time.perf_counter() + seconds
    with torch.no_grad():
        while time.perf_counter() < end:
            model(torch.randn(64, 64))  # EVAL-LINE


def train(rank, opts):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=opts["world"])
    model = DDP(torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    heap = [[i] for i in range(300000)] if opts["gc"] else []
    batches = None
    if opts["workers"] > 0:
        getitem_s = opts["getitem_s"] if rank == opts["hot_rank"] else 0.0
        batches = iter(torch.utils.data.DataLoader(Samples(16 * opts["iters"], getitem_s), batch_size=16,
                                                   num_workers=opts["workers"]))
    jitter = random.Random(0)  # the same draws on every rank: noise no rank has more of
    for iteration in range(opts["iters"]):
        x = next(batches) if batches is not None else torch.randn(16, 64)
        if opts["jitter_s"]:  # after the batch's op, not at the step's end: a point of its own
            time.sleep(jitter.uniform(0.0, opts["jitter_s"]))
        opt.zero_grad()
        model(x).sum().backward()
        if opts["fresh_mb"] and iteration >= opts["hot_from"]:
            torch.empty(opts["fresh_mb"] << 18).fill_(1.0)  # FRESH-LINE
        elif rank == opts["hot_rank"] and iteration >= opts["hot_from"]:
            if opts["gc"]:
                gc.collect()  # GC-LINE
            elif opts["eval_s"]:
                evaluate(model.module, opts["eval_s"], torch)
            else:
                hot_loop(opts["hot_s"])
        opt.step()
        time.sleep(0.005)
    del heap
    dist.barrier()
    dist.destroy_process_group()


def main():
    opts = parse(sys.argv[1:])
    ranks.spawn(train, opts, opts["world"])


if __name__ == "__main__":
    main()

"""A 2-stage pipeline x 2 data-parallel replicas on 4 ranks (gloo, CPU): ranks 0 and 1 hold stage
0, ranks 2 and 3 stage 1. Each step, stage 0 reads 2 micro-batches, sends each one's activations
and labels to its stage-1 partner (rank + 2), and then receives their gradients back (fill, then
drain); each stage all-reduces its gradients within its own replica group.

Knobs (key=value): iters=80 slow_rank=0 load_s=0.02 port=29512
  slow_rank's loader sleeps load_s per micro-batch (the LOAD-LINE): a slow read on one rank of
  stage 0, which the other stage waits for through the point-to-point calls.
"""

import sys
import time

import ranks


def parse(argv):
    return ranks.knobs(argv, {"iters": 80, "slow_rank": 0, "load_s": 0.02, "port": 29512})


def load(rank, opts, generator):
    import torch

    if rank == opts["slow_rank"]:
        time.sleep(opts["load_s"])  # LOAD-LINE
    x = torch.randn(32, 64, generator=generator)
    return x, x[:, :10].argmax(1)


def train(rank, opts):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=4)
    stage, micro, hidden = rank // 2, 2, 128
    partner = rank + 2 if stage == 0 else rank - 2
    groups = [dist.new_group([0, 1]), dist.new_group([2, 3])]
    torch.manual_seed(stage)
    if stage == 0:
        net = torch.nn.Sequential(torch.nn.Linear(64, hidden), torch.nn.ReLU())
    else:
        net = torch.nn.Sequential(torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                                  torch.nn.Linear(hidden, 10))
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(rank)
    for _ in range(opts["iters"]):
        kept = []
        for _ in range(micro):
            if stage == 0:
                x, y = load(rank, opts, generator)
                h = net(x)
                dist.send(h.detach(), partner)
                dist.send(y, partner)
                kept.append(h)
            else:
                h, y = torch.empty(32, hidden), torch.empty(32, dtype=torch.long)
                dist.recv(h, partner)
                dist.recv(y, partner)
                h.requires_grad_()
                (F.cross_entropy(net(h), y) / micro).backward()
                kept.append(h.grad)
        for item in kept:
            if stage == 0:
                grad = torch.empty_like(item)
                dist.recv(grad, partner)
                item.backward(grad)
            else:
                dist.send(item, partner)
        for p in net.parameters():
            dist.all_reduce(p.grad, group=groups[stage])
        opt.step()
        opt.zero_grad()
    dist.barrier()
    dist.destroy_process_group()


def main():
    ranks.spawn(train, parse(sys.argv[1:]), 4)


if __name__ == "__main__":
    main()

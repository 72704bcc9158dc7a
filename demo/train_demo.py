"""The demo's training job: a plain 4-rank PyTorch DDP job on CPU (gloo) that knows nothing of
eroica. From iteration SLOW_FROM on, rank SLOW_RANK's data loader slows down: its collate waits
on a slow read (as when one node's storage mount degrades). eroica, started around it with
`python -m eroica run`, has to notice, profile every rank at the same iteration and say which
rank and why.

Usage: /usr/bin/python3 demo/train_demo.py [--ranks 4] [--iters 260] [--slow-rank 2]
                                           [--slow-from 120] [--slow-ms 45]
"""
import argparse
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset


class ClickLogs(Dataset):
    """Synthetic recommendation samples: dense features, sparse ids, a label."""

    def __init__(self, rank, size=1 << 20):
        self.rank = rank
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        g = torch.Generator().manual_seed(index * 7919 + self.rank)
        dense = torch.randn(64, generator=g)
        ids = torch.randint(0, 5000, (8,), generator=g)
        return dense, ids, int(index % 10)


class SlowReadCollate:
    """Stacks a batch; on the slow rank, after `slow_from` batches, first waits on a slow read."""

    def __init__(self, rank, args):
        self.rank, self.args, self.batches = rank, args, 0

    def __call__(self, samples):
        self.batches += 1
        if self.rank == self.args.slow_rank and self.batches > self.args.slow_from:
            time.sleep(self.args.slow_ms / 1000)  # the degraded storage read
        dense, ids, labels = zip(*samples)
        return torch.stack(dense), torch.stack(ids), torch.tensor(labels)


class Recommender(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.EmbeddingBag(5000, 64, mode="sum")
        self.mlp = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                                 nn.Linear(256, 10))

    def forward(self, dense, ids):
        return self.mlp(torch.cat([dense, self.embedding(ids)], dim=1))


def train(rank, args, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.manual_seed(0)
    model = DistributedDataParallel(Recommender())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loader = DataLoader(ClickLogs(rank), batch_size=32, shuffle=False,
                        collate_fn=SlowReadCollate(rank, args))
    loss_fn = nn.CrossEntropyLoss()
    started = time.perf_counter()
    for iteration, (dense, ids, labels) in enumerate(loader):
        if iteration >= args.iters:
            break
        loss = loss_fn(model(dense, ids), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0 and iteration % 40 == 0:
            print(f"train: iteration {iteration}, {1e3 * (time.perf_counter() - started) / (iteration + 1):.0f} "
                  f"ms/iteration so far", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--iters", type=int, default=260)
    parser.add_argument("--slow-rank", type=int, default=2)
    parser.add_argument("--slow-from", type=int, default=120)
    parser.add_argument("--slow-ms", type=float, default=45)
    args = parser.parse_args()
    mp.spawn(train, args=(args, free_port()), nprocs=args.ranks)


if __name__ == "__main__":
    main()

# An unseen job: deep metric learning with a triplet loss and hard-negative mining across ranks.
# A map-style Dataset of synthetic 1-D signals (a class's prototype shape, shifted, scaled and
# noised per sample) drawn through a P x K batch sampler (P classes, K samples each, the classes
# shuffled by rank and epoch), a collate_fn that standardizes each batch, WORKERS DataLoader workers
# a rank (default 1; 0: in the training process). A 1-D CNN embedder with a projection head under
# DDP (gloo, find_unused_parameters=True: an auxiliary classifier head is used every other step);
# every step each rank all-gathers its detached embeddings and labels and mines its anchors'
# hardest positives and negatives from every rank's; Adam, gradient clipping; a loss print every
# 10 steps on rank 0.
# Faults (env FAULT=kind:arg, from step FROM):
#   quota0:PCT    rank 0 moves itself into a cgroup with a CPU quota of PCT % of a core
#   collate1:K    rank 1's collate_fn runs K Python passes over each batch's signals (its loader)
#   mine2:K       rank 2 re-checks its mined triplets in a Python loop, K passes over its anchors
#   bigk3:F       rank 3's batches hold F times as many samples a class (more data, the same calls)
#   syncall:N     every rank calls dist.barrier() N times a step (a debugging leftover)
#   gcall:N       every rank builds N reference cycles and runs gc.collect() every step
import gc, os, time
import torch, torch.nn as nn, torch.nn.functional as Fn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import Dataset, DataLoader, Sampler

FAULT = os.environ.get("FAULT", "none").split(":")
FROM = int(os.environ.get("FROM", "120"))
STEPS = int(os.environ.get("STEPS", "200"))
WORKERS = int(os.environ.get("WORKERS", "1"))
P, K = int(os.environ.get("P", "8")), int(os.environ.get("K", "4"))
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
torch.set_num_threads(1)
torch.manual_seed(31)
CLASSES, LEN, PER_CLASS = 64, 96, 512
step_seen = torch.zeros(1, dtype=torch.int64).share_memory_()


def on(kind, r=None, step=None):
    if FAULT[0] != kind or (r is not None and rank != r):
        return False
    return (step if step is not None else int(step_seen[0])) >= FROM


class Signals(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(7)
        self.prototypes = torch.cumsum(torch.randn(CLASSES, LEN + 16, generator=g), 1) / 4

    def __len__(self):
        return CLASSES * PER_CLASS

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        c = i // PER_CLASS
        shift = int(torch.randint(0, 16, (1,), generator=g))
        x = self.prototypes[c, shift:shift + LEN] * (0.8 + 0.4 * torch.rand(1, generator=g))
        x = x + 0.3 * torch.randn(LEN, generator=g)
        return x.unsqueeze(0), c


class PKSampler(Sampler):
    """P classes a batch, K samples each; the classes drawn by rank and batch."""

    def __init__(self):
        self.batch = 0

    def __iter__(self):
        while True:
            g = torch.Generator().manual_seed(rank * 100003 + self.batch)
            self.batch += 1
            k = int(K * float(FAULT[1])) if on("bigk3", 3) else K
            classes = torch.randperm(CLASSES, generator=g)[:P].tolist()
            yield [c * PER_CLASS + int(j) for c in classes for j in torch.randint(0, PER_CLASS, (k,), generator=g)]

    def __len__(self):
        return 1 << 30


def collate(items):
    x = torch.stack([it[0] for it in items])
    y = torch.tensor([it[1] for it in items])
    if on("collate1", 1):  # a slow per-signal clean-up in Python
        rows = x[:, 0].tolist()
        for _ in range(int(FAULT[1])):
            rows = [[(r[max(j - 1, 0)] + r[j] + r[min(j + 1, LEN - 1)]) / 3 for j in range(LEN)] for r in rows]
        x = torch.tensor(rows).unsqueeze(1)
    x = (x - x.mean(dim=2, keepdim=True)) / (x.std(dim=2, keepdim=True) + 1e-5)
    return x, y


class Embedder(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv1d(1, 32, 7, padding=3), nn.BatchNorm1d(32), nn.GELU(), nn.MaxPool1d(2),
                                  nn.Conv1d(32, 64, 5, padding=2), nn.BatchNorm1d(64), nn.GELU(), nn.MaxPool1d(2),
                                  nn.Conv1d(64, 64, 3, padding=1), nn.GELU(), nn.AdaptiveAvgPool1d(1), nn.Flatten())
        self.project = nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 32))
        self.classify = nn.Linear(64, CLASSES)

    def forward(self, x, with_classifier):
        h = self.body(x)
        z = Fn.normalize(self.project(h), dim=1)
        return z, (self.classify(h) if with_classifier else None)


def throttle_self(pct):
    path = f"/sys/fs/cgroup/cpu/novelmetric-{os.getpid()}"
    os.makedirs(path, exist_ok=True)
    open(f"{path}/cpu.cfs_period_us", "w").write("100000\n")
    open(f"{path}/cpu.cfs_quota_us", "w").write(f"{int(1000 * pct)}\n")
    open(f"{path}/cgroup.procs", "w").write(f"{os.getpid()}\n")


def mine(z, y, all_z, all_y, step):
    """Each anchor's hardest positive and negative among every rank's detached embeddings."""
    d = torch.cdist(z, all_z)
    same = y[:, None] == all_y[None, :]
    hardest_pos = (d.detach() * same).argmax(1)
    hardest_neg = (d.detach() + 1e3 * same).argmin(1)
    if on("mine2", 2, step=step):
        pos, neg = hardest_pos.tolist(), hardest_neg.tolist()
        labels = all_y.tolist()
        for _ in range(int(FAULT[1])):
            for a in range(len(pos)):
                assert labels[pos[a]] == int(y[a]) and labels[neg[a]] != int(y[a])
    return d.gather(1, hardest_pos[:, None]), d.gather(1, hardest_neg[:, None])


def main():
    dist.init_process_group("gloo")
    loader = DataLoader(Signals(), batch_sampler=PKSampler(), collate_fn=collate, num_workers=WORKERS,
                        persistent_workers=WORKERS > 0)
    model = DDP(Embedder(), find_unused_parameters=True)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    throttled = False
    t0 = time.time()
    batches = iter(loader)
    for step in range(STEPS + 1):
        step_seen[0] = step
        if on("quota0", 0, step=step) and not throttled:
            throttle_self(float(FAULT[1])); throttled = True
        x, y = next(batches)
        z, logits = model(x, with_classifier=step % 2 == 0)
        # Every rank's embeddings for mining; ranks whose batches differ in size pad to the largest.
        n = torch.tensor([len(y)])
        sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
        dist.all_gather(sizes, n)
        most = int(max(s.item() for s in sizes))
        zp = torch.zeros(most, z.shape[1]); zp[:len(y)] = z.detach()
        yp = torch.full((most,), -1, dtype=torch.int64); yp[:len(y)] = y
        all_z = [torch.zeros_like(zp) for _ in range(world)]
        all_y = [torch.zeros_like(yp) for _ in range(world)]
        dist.all_gather(all_z, zp); dist.all_gather(all_y, yp)
        keep = [slice(0, int(s.item())) for s in sizes]
        all_z = torch.cat([a[k] for a, k in zip(all_z, keep)]); all_y = torch.cat([a[k] for a, k in zip(all_y, keep)])
        dp, dn = mine(z, y, all_z, all_y, step)
        loss = Fn.relu(dp - dn + 0.2).mean()
        if logits is not None:
            loss = loss + 0.1 * Fn.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 2.0)
        opt.step()
        if on("syncall", step=step):
            for _ in range(int(FAULT[1])):
                dist.barrier()
        if on("gcall", step=step):
            junk = []
            for i in range(int(FAULT[1])):
                d = {"i": i}; d["self"] = d; junk.append(d)
            del junk
            gc.collect()
        if step % 10 == 0 and rank == 0:
            print(f"step {step} loss {loss.item():.4f} {time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

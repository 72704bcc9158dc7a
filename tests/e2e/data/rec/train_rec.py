# An unseen job: a DLRM-style click-through model. An IterableDataset streams synthetic records
# (13 dense features, 8 multi-hot categorical features) made in Python, per rank and loader
# worker (WORKERS); a collate builds EmbeddingBag inputs (flat ids + offsets). Bottom MLP, 8
# EmbeddingBags, pairwise dot interaction (bmm), top MLP, BCE; DDP/gloo, Adam, a loss print
# every 20 steps on rank 0.
# Faults (env FAULT=kind:arg, from step FROM):
#   quota1:PCT   rank 1 moves itself into a cgroup with a CPU quota of PCT % of a core
#   hash2:N      rank 2's dataset hashes every categorical id's string N times (its loader)
#   hashall:N    every rank's dataset does it
#   ckpt0:K      rank 0 saves model+optimizer with torch.save and fsync every K steps
#   gcall:N      every rank builds N reference cycles and runs gc.collect() every step
#   skew3:F      rank 3's bags are F times longer (more ids a bag, the same calls)
#   auc0:N       rank 0 computes a ROC AUC in Python over its last N batches every step
import gc, os, random, sys, time, zlib
import torch, torch.nn as nn, torch.nn.functional as Fn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import IterableDataset, DataLoader, get_worker_info

FAULT = os.environ.get("FAULT", "none").split(":")
FROM = int(os.environ.get("FROM", "150"))
STEPS = int(os.environ.get("STEPS", "240"))
WORKERS = int(os.environ.get("WORKERS", "0"))
BATCH = int(os.environ.get("BATCH", "256"))
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
torch.set_num_threads(1)
torch.manual_seed(11)
NDENSE, NSPARSE, VOCAB, DIM, BAG = 13, 8, 4000, 16, 3
step_seen = torch.zeros(1, dtype=torch.int64).share_memory_()  # the step, seen by loader workers


_seen = {"step": 0, "reads": 0}


def on(kind, r=None, step=None):
    # In the loader the shared step is read once a batch: reading a tensor per record is 4 ops a
    # record, work of its own on the fault's rank before the onset. The loop passes its step.
    if FAULT[0] != kind or (r is not None and rank != r):
        return False
    if step is not None:
        return step >= FROM
    if _seen["reads"] % BATCH == 0:
        _seen["step"] = int(step_seen[0])
    _seen["reads"] += 1
    return _seen["step"] >= FROM


class Clicks(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        rng = random.Random(7919 * rank + (info.id if info else 0))
        while True:
            yield self.record(rng)

    def record(self, rng):
        dense = [rng.gauss(0.0, 1.0) for _ in range(NDENSE)]
        bag = BAG * (int(FAULT[1]) if on("skew3", 3) else 1)
        sparse = [[rng.randrange(VOCAB) for _ in range(bag)] for _ in range(NSPARSE)]
        if on("hash2", 2) or on("hashall"):
            sparse = [[hashed(f, i) for i in ids] for f, ids in enumerate(sparse)]
        label = 1.0 if (dense[0] + 0.1 * sparse[0][0] / VOCAB) > 0.3 else 0.0
        return dense, sparse, label


def hashed(feature, i):
    h = 0
    for _ in range(int(FAULT[1])):
        h = zlib.crc32(f"f{feature}:{i}:{h}".encode())
    return (i + h) % VOCAB


def collate(records):
    dense = torch.tensor([r[0] for r in records])
    ids, offsets = [], []
    for f in range(NSPARSE):
        flat, offs = [], []
        for r in records:
            offs.append(len(flat)); flat.extend(r[1][f])
        ids.append(torch.tensor(flat)); offsets.append(torch.tensor(offs))
    return dense, ids, offsets, torch.tensor([r[2] for r in records])


class Dlrm(nn.Module):
    def __init__(self):
        super().__init__()
        self.bottom = nn.Sequential(nn.Linear(NDENSE, 128), nn.ReLU(), nn.Linear(128, DIM), nn.ReLU())
        self.embs = nn.ModuleList(nn.EmbeddingBag(VOCAB, DIM, mode="sum") for _ in range(NSPARSE))
        n = NSPARSE + 1
        self.top = nn.Sequential(nn.Linear(DIM + n * (n - 1) // 2, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 1))
        self.pairs = torch.triu_indices(n, n, 1)

    def forward(self, dense, ids, offsets):
        x = self.bottom(dense)
        feats = torch.stack([x] + [e(i, o) for e, i, o in zip(self.embs, ids, offsets)], 1)
        inter = torch.bmm(feats, feats.transpose(1, 2))[:, self.pairs[0], self.pairs[1]]
        return self.top(torch.cat([x, inter], 1)).squeeze(1)


def auc(scores, labels):
    ranked = sorted(zip(scores, labels))
    pos = sum(labels); neg = len(labels) - pos
    seen_neg, area = 0, 0.0
    for _, l in ranked:
        if l > 0.5:
            area += seen_neg
        else:
            seen_neg += 1
    return area / max(1.0, pos * neg)


def throttle_self(pct):
    path = f"/sys/fs/cgroup/cpu/novel10-r{rank}-{os.getpid()}"
    os.makedirs(path, exist_ok=True)
    open(f"{path}/cpu.cfs_period_us", "w").write("100000\n")
    open(f"{path}/cpu.cfs_quota_us", "w").write(f"{int(1000 * pct)}\n")
    open(f"{path}/cgroup.procs", "w").write(f"{os.getpid()}\n")


def main():
    dist.init_process_group("gloo")
    loader = DataLoader(Clicks(), batch_size=BATCH, num_workers=WORKERS, collate_fn=collate,
                        persistent_workers=WORKERS > 0)
    model = DDP(Dlrm())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    history = []
    throttled = False
    t0 = time.time()
    step = 0
    for dense, ids, offsets, y in loader:
        step_seen[0] = step
        if on("quota1", 1, step=step) and not throttled:
            throttle_self(float(FAULT[1])); throttled = True
        logits = model(dense, ids, offsets)
        loss = Fn.binary_cross_entropy_with_logits(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if on("gcall", step=step):
            junk = []
            for i in range(int(FAULT[1])):
                d = {"i": i}; d["self"] = d; junk.append(d)
            del junk
            gc.collect()
        if on("ckpt0", 0, step=step) and step % int(FAULT[1]) == 0:
            with open(os.path.join(os.environ.get("OUT", "/tmp/novel10"), "ckpt-rank0.pt"), "wb") as f:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, f)
                f.flush(); os.fsync(f.fileno())
        if on("auc0", 0, step=step) or FAULT[0] == "auc0":
            history.append((torch.sigmoid(logits.detach()).tolist(), y.tolist()))
            history = history[-int(FAULT[1]):]
            if on("auc0", 0, step=step):
                auc([s for h in history for s in h[0]], [l for h in history for l in h[1]])
        if step % 20 == 0 and rank == 0:
            print(f"step {step} loss {loss.item():.3f} {time.time() - t0:.1f}s", flush=True)
        step += 1
        if step > STEPS:
            break
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

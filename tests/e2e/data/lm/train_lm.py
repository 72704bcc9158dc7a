# An unseen job: a small causal language model on synthetic token streams of varying length.
# An IterableDataset shards its stream by rank and by DataLoader worker (WORKERS a rank, default
# 1; 0: in the training process), "tokenizes" each document in Python (a byte-pair-like merge
# loop over a list of ints), and a collate pads each batch to its longest sequence, so every
# rank's step has its own length (natural imbalance, step to step). Embedding, 2 causal encoder
# layers, tied output; DDP/gloo, SGD with momentum and Nesterov, a step LR; a loss print every 10
# steps on rank 0.
# Faults (env FAULT=kind:arg, from step FROM):
#   quota1:PCT   rank 1 moves itself into a cgroup with a CPU quota of PCT % of a core
#   tok2:K       rank 2's normalizer runs K Python passes over each document's ids (its loader)
#   tokall:K     every rank's does
#   long3:F      rank 3's documents are F times as long (more tokens, the same calls)
#   gcall:N      every rank builds N reference cycles and runs gc.collect() every step
#   sync0:N      rank 0 reads N per-token losses back with .item() every step (logging)
#   pyall:N      every rank runs a Python loop of N iterations (a metric) every step
import gc, os, time
import torch, torch.nn as nn, torch.nn.functional as Fn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import IterableDataset, DataLoader, get_worker_info

FAULT = os.environ.get("FAULT", "none").split(":")
FROM = int(os.environ.get("FROM", "120"))
STEPS = int(os.environ.get("STEPS", "200"))
WORKERS = int(os.environ.get("WORKERS", "1"))
BATCH = int(os.environ.get("BATCH", "12"))
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
torch.set_num_threads(1)
torch.manual_seed(11)
VOCAB, DIM, MAXLEN = 512, 64, 128
step_seen = torch.zeros(1, dtype=torch.int64).share_memory_()


def on(kind, r=None, step=None):
    if FAULT[0] != kind or (r is not None and rank != r):
        return False
    return (step if step is not None else int(step_seen[0])) >= FROM


def tokenize(raw, passes):
    # Merge adjacent pairs whose sum is even into one id, `passes` times: Python over a list.
    ids = list(raw)
    for _ in range(passes):
        out, i = [], 0
        while i < len(ids):
            if i + 1 < len(ids) and (ids[i] + ids[i + 1]) % 2 == 0 and len(out) % 3 != 2:
                out.append((ids[i] * 31 + ids[i + 1]) % VOCAB); i += 2
            else:
                out.append(ids[i]); i += 1
        ids = out if len(out) > 8 else ids
    return ids


class Stream(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        wid, nw = (info.id, info.num_workers) if info else (0, 1)
        g = torch.Generator().manual_seed(1000 * rank + wid)
        n = 0
        while True:
            n += 1
            length = int(torch.randint(16, 96, (1,), generator=g))
            if on("long3", 3):
                length = int(length * float(FAULT[1]))
            raw = torch.randint(0, VOCAB, (length,), generator=g).tolist()
            if on("tok2", 2) or on("tokall"):  # a slow normalizer: K Python passes over the ids
                for _ in range(int(FAULT[1])):
                    raw = [(t * 7 + 3) % VOCAB for t in raw]
            ids = tokenize(raw, 2)[:MAXLEN * 2]
            yield torch.tensor(ids, dtype=torch.long)


def pad(batch):
    longest = min(max(len(b) for b in batch), MAXLEN * 2)
    out = torch.zeros(len(batch), longest, dtype=torch.long)
    for i, b in enumerate(batch):
        out[i, :len(b)] = b[:longest]
    return out


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Parameter(torch.zeros(1, MAXLEN * 2, DIM))
        layer = nn.TransformerEncoderLayer(DIM, 4, 2 * DIM, dropout=0.1, batch_first=True)
        self.body = nn.TransformerEncoder(layer, 2)

    def forward(self, x):
        n = x.shape[1]
        mask = torch.triu(torch.full((n, n), float("-inf")), 1)
        h = self.body(self.emb(x) + self.pos[:, :n], mask=mask)
        return h @ self.emb.weight.t()


def throttle_self(pct):
    path = f"/sys/fs/cgroup/cpu/novel13-{os.getpid()}"
    os.makedirs(path, exist_ok=True)
    open(f"{path}/cpu.cfs_period_us", "w").write("100000\n")
    open(f"{path}/cpu.cfs_quota_us", "w").write(f"{int(1000 * pct)}\n")
    open(f"{path}/cgroup.procs", "w").write(f"{os.getpid()}\n")


def main():
    dist.init_process_group("gloo")
    loader = DataLoader(Stream(), batch_size=BATCH, num_workers=WORKERS, collate_fn=pad,
                        persistent_workers=WORKERS > 0, prefetch_factor=2 if WORKERS else None) \
        if WORKERS else DataLoader(Stream(), batch_size=BATCH, collate_fn=pad)
    model = DDP(LM())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    sched = torch.optim.lr_scheduler.StepLR(opt, 60, 0.5)
    throttled = False
    t0 = time.time()
    batches = iter(loader)
    for step in range(STEPS + 1):
        step_seen[0] = step
        if on("quota1", 1, step=step) and not throttled:
            throttle_self(float(FAULT[1])); throttled = True
        x = next(batches)
        logits = model(x[:, :-1])
        per_token = Fn.cross_entropy(logits.reshape(-1, VOCAB), x[:, 1:].reshape(-1), reduction="none")
        keep = (x[:, 1:].reshape(-1) != 0).float()
        loss = (per_token * keep).sum() / keep.sum()
        opt.zero_grad()
        loss.backward()
        opt.step(); sched.step()
        if on("gcall", step=step):
            junk = []
            for i in range(int(FAULT[1])):
                d = {"i": i}; d["self"] = d; junk.append(d)
            del junk
            gc.collect()
        if on("sync0", 0, step=step):
            detached = per_token.detach()
            logged = [detached[i].item() for i in range(min(int(FAULT[1]), detached.numel()))]
            del logged
        if on("pyall", step=step):
            acc = 0
            for i in range(int(FAULT[1])):
                acc = (acc * 1103515245 + i) % 2147483648
        if step % 10 == 0 and rank == 0:
            print(f"step {step} loss {loss.item():.3f} {time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

# An unseen job: sequence classification with an LSTM on synthetic text. An IterableDataset
# streams reviews (a random number of words from a word list, 24-72 a review), each split into
# words and mapped to ids by a dict lookup in Python (the tokenizer), sharded by rank and loader
# worker; WORKERS DataLoader workers a rank (default 1; 0: in the training process); a Python
# collate sorts the batch by length and pads it. An embedding, a one-layer LSTM over packed
# sequences and a masked mean pool under DDP (gloo), a ZeroRedundancyOptimizer (Adam's state
# sharded over the ranks: a broadcast per rank after each step beside DDP's all-reduce),
# clip_grad_norm_, a cosine schedule; a running accuracy and a loss print every 10 steps on rank 0.
# Faults (env FAULT=kind:arg, two joined by '+'; from step FROM):
#   quota1:PCT    rank 1 moves itself into a cgroup with a CPU quota of PCT % of a core
#   coll2:K       rank 2's collate runs K Python passes over each sequence (its loader)
#   tokall:K      every rank's tokenizer runs K passes over each review's words (every loader)
#   long3:F       rank 3's reviews are F times as long (more tokens, the same calls)
#   gcall:N       every rank builds N reference cycles and runs gc.collect() every step
#   pyall:N       every rank runs a Python loop of N iterations (a metric) every step
#   ckpt0:K       rank 0 saves model and its optimizer shard with torch.save every K steps
#   nap2:MS       rank 2's dataset sleeps MS ms a review (a slow read)
import gc, math, os, random, time
import torch, torch.nn as nn, torch.nn.functional as Fn
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from torch.utils.data import IterableDataset, DataLoader, get_worker_info

FAULTS = [f.split(":") for f in os.environ.get("FAULT", "none").split("+")]
FROM = int(os.environ.get("FROM", "120"))
STEPS = int(os.environ.get("STEPS", "200"))
WORKERS = int(os.environ.get("WORKERS", "1"))
BATCH = int(os.environ.get("BATCH", "32"))
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
torch.set_num_threads(1)
torch.manual_seed(5)
WORDS = [f"w{i:04d}" for i in range(3000)]
VOCAB = {w: i + 1 for i, w in enumerate(WORDS)}  # 0 pads
GOOD = set(range(1, 300))
step_seen = torch.zeros(1, dtype=torch.int64).share_memory_()


def arg(kind, r=None, step=None):
    """The fault's argument where `kind` is on (for rank r) at this step, else None. Every rank
    reads the step alike (a tensor op in a loader without workers): only the fault differs."""
    now = step if step is not None else int(step_seen[0])
    for f in FAULTS:
        if f[0] == kind and (r is None or rank == r) and now >= FROM:
            return float(f[1])
    return None


class Reviews(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        wid = info.id if info else 0
        rng = random.Random(1000 * rank + wid)
        while True:
            n = rng.randint(24, 72)
            f = arg("long3", 3)
            if f:
                n = int(n * f)
            text = " ".join(rng.choice(WORDS) for _ in range(n))
            nap = arg("nap2", 2)
            if nap:
                time.sleep(nap / 1000)
            words = text.split()
            k = arg("tokall")
            for _ in range(int(k) if k else 0):  # a slow tokenizer: K normalizing passes
                words = [w.strip().lower() for w in words]
            ids = [VOCAB.get(w, 0) for w in words]
            label = int(sum(1 for t in ids if t in GOOD) * 10 > len(ids))
            yield torch.tensor(ids), label


def collate(items):
    items = sorted(items, key=lambda it: -len(it[0]))
    k = arg("coll2", 2)
    if k:  # a slow collate: K Python passes over each sequence
        for seq, _ in items:
            vals = seq.tolist()
            for _ in range(int(k)):
                vals = [v if v >= 0 else 0 for v in vals]
    lengths = torch.tensor([len(s) for s, _ in items])
    padded = torch.zeros(len(items), int(lengths[0]), dtype=torch.int64)
    for i, (s, _) in enumerate(items):
        padded[i, :len(s)] = s
    return padded, lengths, torch.tensor([l for _, l in items])


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(len(WORDS) + 1, 48, padding_idx=0)
        self.lstm = nn.LSTM(48, 96, batch_first=True)
        self.head = nn.Sequential(nn.Linear(96, 64), nn.ReLU(), nn.Linear(64, 2))

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embed(tokens), lengths, batch_first=True)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True)
        mask = (torch.arange(out.shape[1])[None, :] < lengths[:, None]).unsqueeze(-1)
        return self.head((out * mask).sum(1) / lengths[:, None])


def throttle_self(pct):
    path = f"/sys/fs/cgroup/cpu/novel16-{os.getpid()}"
    os.makedirs(path, exist_ok=True)
    open(f"{path}/cpu.cfs_period_us", "w").write("100000\n")
    open(f"{path}/cpu.cfs_quota_us", "w").write(f"{int(1000 * pct)}\n")
    open(f"{path}/cgroup.procs", "w").write(f"{os.getpid()}\n")


def main():
    dist.init_process_group("gloo")
    loader = DataLoader(Reviews(), batch_size=BATCH, num_workers=WORKERS, collate_fn=collate,
                        persistent_workers=WORKERS > 0)
    model = DDP(Classifier())
    opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=2e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * s / (STEPS + 1))))
    throttled = False
    right = seen = 0
    t0 = time.time()
    batches = iter(loader)
    for step in range(STEPS + 1):
        step_seen[0] = step
        q = arg("quota1", 1, step=step)
        if q and not throttled:
            throttle_self(q); throttled = True
        tokens, lengths, labels = next(batches)
        opt.zero_grad(set_to_none=True)
        logits = model(tokens, lengths)
        loss = Fn.cross_entropy(logits, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step()
        right += int((logits.argmax(1) == labels).sum()); seen += len(labels)
        n = arg("gcall", step=step)
        if n:
            junk = []
            for i in range(int(n)):
                d = {"i": i}; d["self"] = d; junk.append(d)
            del junk
            gc.collect()
        n = arg("pyall", step=step)
        if n:  # a per-step metric in pure Python
            acc = 0
            for i in range(int(n)):
                acc = (acc * 1103515245 + i) % 2147483648
        k = arg("ckpt0", 0, step=step)
        if k and step % int(k) == 0:
            with open(os.path.join(os.environ.get("OUT", "/tmp/novel16"), "ckpt-rank0.pt"), "wb") as f:
                torch.save({"model": model.module.state_dict(), "opt": opt.optim.state_dict()}, f)
                f.flush(); os.fsync(f.fileno())
        if step % 10 == 0 and rank == 0:
            print(f"step {step} loss {loss.item():.4f} acc {right / max(1, seen):.3f} {time.time() - t0:.1f}s",
                  flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

# An unseen job: a small mixture-of-experts language model with expert parallelism. A map-style
# dataset "tokenizes" each sample in Python (Zipf-distributed words from a made-up vocabulary,
# looked up word by word, cut into 48-token sequences; WORKERS DataLoader workers a rank, default
# 1; 0: in the training process); a DistributedSampler shuffles. The model: token and position
# embeddings, one self-attention block, a mixture-of-experts feed-forward layer with one expert per
# rank (top-1 routing by a linear router, a load-balancing loss), a tied output head. The dense
# part is a DDP module; each rank's expert is its own (not all-reduced): tokens travel to their
# expert's rank and back with all_to_all_single (variable split sizes, exchanged first), in the
# forward and again in the backward. Adam on both. Every 10 steps the ranks all-reduce the loss
# for rank 0's print. The routing moves load between ranks every step: healthy runs are uneven.
# Faults (env FAULT=kind:arg, two joined by '+'; from step FROM):
#   quota1:PCT   rank 1 moves itself into a cgroup with a CPU quota of PCT % of a core
#   batch2:F     rank 2's batches are F times as large (more tokens from it to every expert)
#   tok3:K       rank 3's dataset tokenizes each sample K extra times (its loader)
#   tokall:K     every rank's dataset does (every loader)
#   gcall:N      every rank builds N reference cycles a step and collects them
#   ckpt0:K      rank 0 saves the model and optimizer state K times a step, synchronously (fsync)
import gc, os, time
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as Fn
import torch.distributed as dist
import torch.distributed.nn.functional as dnn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import Dataset, DataLoader, DistributedSampler

FAULTS = [f.split(":") for f in os.environ.get("FAULT", "none").split("+")]
FROM = int(os.environ.get("FROM", "120"))
STEPS = int(os.environ.get("STEPS", "200"))
WORKERS = int(os.environ.get("WORKERS", "1"))
BATCH = int(os.environ.get("BATCH", "12"))
SEQ, VOCAB, DIM, HIDDEN, CAPACITY = 48, 600, 64, 768, 2.0
SEED = int(os.environ.get("SEED", "3"))  # the samples each rank draws (batch A: 3)
OUT = os.environ.get("OUT", "/tmp/novel23")
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
torch.set_num_threads(1)
torch.manual_seed(5)  # the same dense weights on every rank (DDP broadcasts them anyway)


def on(kind, r, step):
    """The fault's argument where `kind` is on for rank r (None: every rank) at this step, else None."""
    for f in FAULTS:
        if f[0] == kind and (r is None or rank == r) and step >= FROM:
            return float(f[1])
    return None


ONSET_FILE = os.path.join(OUT, "moe-onset")


def extra_passes():
    """Workers cannot see the training step: the training loop writes a file at FROM."""
    k = 0
    for f in FAULTS:
        if ((f[0] == "tok3" and rank == 3) or f[0] == "tokall") and os.path.exists(ONSET_FILE + f"-{rank}"):
            k += int(float(f[1]))
    return k


WORDS = [f"w{i:04d}" for i in range(VOCAB - 2)]
LOOKUP = {w: i + 2 for i, w in enumerate(WORDS)}


class Text(Dataset):
    def __len__(self):
        return 10 ** 6

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        ranks = np.minimum(rng.zipf(1.3, SEQ + 1), VOCAB - 2) - 1
        text = " ".join(WORDS[r] for r in ranks)
        for _ in range(1 + extra_passes()):
            ids = [LOOKUP.get(w, 1) for w in text.split(" ")]
        return torch.tensor(ids[:SEQ + 1])


class Expert(nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = nn.Linear(DIM, HIDDEN), nn.Linear(HIDDEN, DIM)

    def forward(self, x):
        return self.down(Fn.gelu(self.up(x)))


class Dense(nn.Module):
    """Everything but the experts; the rank's expert is called through a list so that DDP does not
    take its parameters for its own."""

    def __init__(self, expert):
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, DIM), nn.Embedding(SEQ, DIM)
        nn.init.normal_(self.tok.weight, std=0.05)  # the head is tied to it: logits of a sane size
        self.attn = nn.MultiheadAttention(DIM, 4, batch_first=True)
        self.n1, self.n2, self.n3 = nn.LayerNorm(DIM), nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.router = nn.Linear(DIM, world)
        self.experts = [expert]
        self.mask = torch.triu(torch.ones(SEQ, SEQ, dtype=torch.bool), 1)

    def moe(self, x):
        logits = self.router(x)
        probs = logits.softmax(-1)
        gate, idx = probs.max(-1)
        # each expert takes at most CAPACITY times its even share of this rank's tokens (the rest
        # pass by on the residual), as Switch/GShard layers do
        chosen = Fn.one_hot(idx, world)
        kept = ((chosen.cumsum(0) * chosen).sum(-1) <= int(CAPACITY * len(x) / world)).nonzero()[:, 0]
        order = kept[idx[kept].argsort()]
        counts = torch.bincount(idx[order], minlength=world)
        recv = torch.empty_like(counts)
        dist.all_to_all_single(recv, counts)
        sent = dnn.all_to_all_single(torch.empty(int(recv.sum()), DIM), x[order],
                                     output_split_sizes=recv.tolist(), input_split_sizes=counts.tolist())
        done = self.experts[0](sent)
        back = dnn.all_to_all_single(torch.empty(len(order), DIM), done,
                                     output_split_sizes=counts.tolist(), input_split_sizes=recv.tolist())
        out = torch.zeros_like(x).index_copy(0, order, back * gate[order, None])
        share = chosen.float().mean(0)
        return out, world * (share * probs.mean(0)).sum()

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        h = self.n1(x)
        x = x + self.attn(h, h, h, attn_mask=self.mask, need_weights=False)[0]
        y, aux = self.moe(self.n2(x).reshape(-1, DIM))
        x = x + y.view_as(x)
        return self.n3(x) @ self.tok.weight.t(), aux


def throttle_self(pct):
    path = f"/sys/fs/cgroup/cpu/novel23-{os.getpid()}"
    os.makedirs(path, exist_ok=True)
    open(f"{path}/cpu.cfs_period_us", "w").write("100000\n")
    open(f"{path}/cpu.cfs_quota_us", "w").write(f"{int(1000 * pct)}\n")
    open(f"{path}/cgroup.procs", "w").write(f"{os.getpid()}\n")


class Node:
    def __init__(self):
        self.peer = None
        self.payload = [0] * 4


def make_cycles(n):
    for _ in range(n):
        a, b = Node(), Node()
        a.peer, b.peer = b, a
    gc.collect()


def save_checkpoint(model, expert, opt, k):
    path = os.path.join(OUT, f"moe-ckpt-{rank}.pt")
    for _ in range(int(k)):
        with open(path, "wb") as f:
            torch.save({"dense": model.state_dict(), "expert": expert.state_dict(), "opt": opt.state_dict()}, f)
            f.flush()
            os.fsync(f.fileno())


def batches(loader, sampler):
    epoch = 0
    while True:
        sampler.set_epoch(epoch)
        yield from loader
        epoch += 1


def main():
    dist.init_process_group("gloo")
    if os.path.exists(ONSET_FILE + f"-{rank}"):
        os.remove(ONSET_FILE + f"-{rank}")
    data = Text()
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=SEED)
    loader = DataLoader(data, batch_size=BATCH, sampler=sampler, num_workers=WORKERS,
                        persistent_workers=WORKERS > 0, drop_last=True)
    torch.manual_seed(100 + rank)
    expert = Expert()
    torch.manual_seed(5)
    model = DDP(Dense(expert))
    opt = torch.optim.Adam(list(model.parameters()) + list(expert.parameters()), lr=1e-3)
    it = batches(loader, sampler)
    t0 = time.time()
    for step in range(STEPS + 1):
        if step == FROM:
            open(ONSET_FILE + f"-{rank}", "w").close()
        q = on("quota1", 1, step)
        if q and step == FROM:
            throttle_self(q)
        f = on("batch2", 2, step) or 1
        if int(BATCH * f) != loader.batch_size:
            loader = DataLoader(data, batch_size=int(BATCH * f), sampler=sampler, num_workers=WORKERS,
                                persistent_workers=WORKERS > 0, drop_last=True)
            it = batches(loader, sampler)
        ids = next(it)
        logits, aux = model(ids[:, :-1])
        loss = Fn.cross_entropy(logits.reshape(-1, VOCAB), ids[:, 1:].reshape(-1)) + 0.1 * aux
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        n = on("gcall", None, step)
        if n:
            make_cycles(int(n))
        k = on("ckpt0", 0, step)
        if k:
            save_checkpoint(model, expert, opt, k)
        if step % 10 == 0:
            shown = torch.tensor([float(loss)])
            dist.all_reduce(shown)
            if rank == 0:
                print(f"step {step} loss {float(shown[0]) / world:.3f} {time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

# An unseen job: a small transformer for sequence classification trained with tensor parallelism
# (Megatron-style) beside data parallelism, every collective hand-written. World = TP x DP; rank r
# is tensor-parallel position r % TP of data-parallel replica r // TP (TP 2 unless given). Each
# block's attention heads and MLP hidden units are split over the TP ranks of a replica: a
# column-parallel projection in, a row-parallel projection out whose partial sums are all-reduced
# in the replica's TP group in the forward pass (and the input's gradient all-reduced in the
# backward), so TP partners meet several times inside every forward and backward. Embeddings,
# layer norms and the head are replicated. Only TP position 0 loads the data (a map-style dataset
# of token sequences drawn in numpy: the label says which of two motifs occurs more often; WORKERS
# DataLoader workers, default 1, 0: in the training process) and broadcasts each batch to its
# partners. After the backward every rank all-reduces its gradients with the ranks of its TP
# position in the other replicas, in buckets of BUCKET elements issued asynchronously and waited
# on together (as DDP does), then steps AdamW.
# Faults (env FAULT=kind:arg, two joined by '+'; from step FROM):
#   quotaN:PCT   rank N moves itself into a cgroup with a CPU quota of PCT % of a core
#   loadN:K      rank N (a TP position 0) redraws each sequence's noise K extra times (its loader)
#   loadall:K    every loading rank's dataset does (every loader)
#   seqN:F       replica N's sequences are F times as long (on both of its TP ranks)
#   gcall:N      every rank builds N reference cycles a step and collects them
#   pyall:N      every rank scores its batch in pure Python N times a step (a host-side metric)
#   ckptN:K      rank N saves its shard's weights and optimizer state K times a step (fsync)
import gc, math, os, re, time
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as Fn
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler

FAULTS = [f.split(":") for f in os.environ.get("FAULT", "none").split("+")]
FROM = int(os.environ.get("FROM", "120"))
STEPS = int(os.environ.get("STEPS", "200"))
WORKERS = int(os.environ.get("WORKERS", "1"))
BATCH = int(os.environ.get("BATCH", "16"))
SEQ = int(os.environ.get("SEQ", "48"))
LAYERS = int(os.environ.get("LAYERS", "2"))
BUCKET = int(os.environ.get("BUCKET", "20000"))  # gradient elements an all-reduce
TP = int(os.environ.get("TP", "2"))
SEED = int(os.environ.get("SEED", "5"))  # the samples each replica draws (batch A: 5)
OUT = os.environ.get("OUT", "/tmp/novel25")
DIM, HEADS, VOCAB = 96, 6, 96
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
DP = world // TP
tp, dp = rank % TP, rank // TP
torch.set_num_threads(1)


def on(kind, step, r=None):
    """The fault's argument where `kind` ("quota", or "gcall" for every rank) is on for this rank
    (kindN: rank N; r: a replica's number instead) at this step, else None."""
    for f in FAULTS:
        m = re.fullmatch(r"([a-z]+)(\d*)", f[0])
        if not m or m.group(1) != kind or step < FROM:
            continue
        if m.group(2) == "" or int(m.group(2)) == (rank if r is None else r):
            return float(f[1])
    return None


ONSET_FILE = os.path.join(OUT, "tp-onset")


def extra_passes():
    """Workers cannot see the training step: the training loop writes a file at FROM."""
    if not os.path.exists(ONSET_FILE + f"-{rank}"):
        return 0
    return sum(int(float(f[1])) for f in FAULTS if f[0] in (f"load{rank}", "loadall"))


class Motifs(Dataset):
    """Token sequences over a noisy background; label: motif A occurs more often than motif B."""

    def __init__(self, length):
        self.length = length

    def __len__(self):
        return 10 ** 6

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        for _ in range(1 + extra_passes()):  # the noise, redrawn on a slow loader
            probs = rng.dirichlet(np.ones(VOCAB - 8))
            seq = rng.choice(VOCAB - 8, self.length, p=probs) + 8
        a, b = int(rng.integers(0, 4)), int(rng.integers(0, 4))
        for motif, count in ((np.array([1, 2, 3]), a), (np.array([4, 5, 6]), b)):
            for _ in range(count):
                at = int(rng.integers(0, self.length - 3))
                seq[at:at + 3] = motif
        return torch.from_numpy(seq.astype(np.int64)), int(a > b)


class CopyToTP(torch.autograd.Function):
    """Identity forward; the input's gradient summed over the TP group backward."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        g = g.contiguous()
        dist.all_reduce(g, group=TP_GROUP)
        return g


class ReduceFromTP(torch.autograd.Function):
    """The partial sums of a row-parallel projection summed over the TP group forward."""

    @staticmethod
    def forward(ctx, x):
        x = x.contiguous()
        dist.all_reduce(x, group=TP_GROUP)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


class ParallelAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.local_heads = HEADS // TP
        self.head_dim = DIM // HEADS
        self.qkv = nn.Linear(DIM, 3 * self.local_heads * self.head_dim)
        self.out = nn.Linear(self.local_heads * self.head_dim, DIM, bias=False)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(CopyToTP.apply(x)).view(b, n, 3, self.local_heads, self.head_dim).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.head_dim), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, n, -1)
        return ReduceFromTP.apply(self.out(y))


class ParallelMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(DIM, 4 * DIM // TP)
        self.fc2 = nn.Linear(4 * DIM // TP, DIM, bias=False)

    def forward(self, x):
        return ReduceFromTP.apply(self.fc2(Fn.gelu(self.fc1(CopyToTP.apply(x)))))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(11)  # replicated: alike on every rank
        self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.bias1, self.bias2 = nn.Parameter(torch.zeros(DIM)), nn.Parameter(torch.zeros(DIM))
        torch.manual_seed(100 + tp)  # sharded: this TP position's part
        self.attn, self.mlp = ParallelAttention(), ParallelMLP()

    def forward(self, x):
        x = x + self.attn(self.ln1(x)) + self.bias1
        return x + self.mlp(self.ln2(x)) + self.bias2


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(7)
        self.embed, self.pos = nn.Embedding(VOCAB, DIM), nn.Parameter(0.02 * torch.randn(4096, DIM))
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        torch.manual_seed(8)
        self.norm, self.head = nn.LayerNorm(DIM), nn.Linear(DIM, 2)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos[:tokens.shape[1]]
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x).mean(1))


def throttle_self(pct):
    path = f"/sys/fs/cgroup/cpu/novel25-{os.getpid()}"
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


def python_metric(tokens, n):
    """A host-side metric in pure Python: the longest run of one token, per sequence."""
    rows = tokens.tolist()
    best = 0
    for _ in range(int(n)):
        for row in rows:
            run = 1
            for a, b in zip(row, row[1:]):
                run = run + 1 if a == b else 1
                best = max(best, run)
    return best


def save_checkpoint(model, opt, k):
    path = os.path.join(OUT, f"tp-ckpt-{rank}.pt")
    for _ in range(int(k)):
        with open(path, "wb") as f:
            torch.save({"shard": model.state_dict(), "opt": opt.state_dict()}, f)
            f.flush()
            os.fsync(f.fileno())


def batches(loader, sampler):
    epoch = 0
    while True:
        sampler.set_epoch(epoch)
        yield from loader
        epoch += 1


class Feed:
    """A replica's batches: loaded on TP position 0 (rebuilt when the fault changes their
    length), broadcast to its partners."""

    def __init__(self):
        self.length, self.it = None, None

    def next(self, length):
        tokens, labels = torch.empty(BATCH, length, dtype=torch.int64), torch.empty(BATCH, dtype=torch.int64)
        if tp == 0:
            if length != self.length:
                self.length = length
                data = Motifs(length)
                sampler = DistributedSampler(data, num_replicas=DP, rank=dp, shuffle=True, seed=SEED)
                loader = DataLoader(data, batch_size=BATCH, sampler=sampler, num_workers=WORKERS,
                                    persistent_workers=WORKERS > 0, drop_last=True)
                self.it = batches(loader, sampler)
            tokens, labels = next(self.it)
        dist.broadcast(tokens, dp * TP, group=TP_GROUP)
        dist.broadcast(labels, dp * TP, group=TP_GROUP)
        return tokens, labels


def bucketed_allreduce(params):
    grads = [p.grad for p in params if p.grad is not None]
    buckets, current, size = [], [], 0
    for g in grads:
        current.append(g)
        size += g.numel()
        if size >= BUCKET:
            buckets.append(current)
            current, size = [], 0
    if current:
        buckets.append(current)
    pending = []
    for b in buckets:
        flat = torch.cat([g.reshape(-1) for g in b])
        pending.append((dist.all_reduce(flat, group=DP_GROUP, async_op=True), flat, b))
    for work, flat, b in pending:
        work.wait()
        flat /= DP
        offset = 0
        for g in b:
            g.copy_(flat[offset:offset + g.numel()].view_as(g))
            offset += g.numel()


TP_GROUP = DP_GROUP = None


def main():
    global TP_GROUP, DP_GROUP
    dist.init_process_group("gloo")
    if os.path.exists(ONSET_FILE + f"-{rank}"):
        os.remove(ONSET_FILE + f"-{rank}")
    for d in range(DP):  # every rank makes every group, in one order
        g = dist.new_group([d * TP + i for i in range(TP)])
        if d == dp:
            TP_GROUP = g
    for i in range(TP):
        g = dist.new_group([d * TP + i for d in range(DP)])
        if i == tp:
            DP_GROUP = g
    feed = Feed()
    model = Model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step in range(STEPS + 1):
        if step == FROM:
            open(ONSET_FILE + f"-{rank}", "w").close()
        q = on("quota", step)
        if q and step == FROM:
            throttle_self(q)
        length = int(SEQ * (on("seq", step, r=dp) or 1))
        tokens, labels = feed.next(length)
        opt.zero_grad(set_to_none=True)
        loss = Fn.cross_entropy(model(tokens), labels)
        loss.backward()
        bucketed_allreduce(list(model.parameters()))
        opt.step()
        n = on("gcall", step)
        if n:
            make_cycles(int(n))
        n = on("pyall", step)
        if n:
            python_metric(tokens, n)
        k = on("ckpt", step)
        if k:
            save_checkpoint(model, opt, k)
        if step % 10 == 0:
            shown = torch.tensor([float(loss)])
            dist.all_reduce(shown)
            if rank == 0:
                print(f"step {step} loss {float(shown[0]) / world:.3f} {time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

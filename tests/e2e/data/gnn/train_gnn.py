# An unseen job: graph classification with a message-passing network and hand-written data
# parallelism. A map-style dataset builds each small random graph (10-40 nodes, a ring and random
# chords, 8 node types) and its node features (one-hot type, degree, neighbours' types) in Python;
# a step-aware sampler hands rank r its own run of indices; WORKERS DataLoader workers a rank
# (default 1; 0: in the training process); a Python collate joins the graphs into one (offset
# edges, a graph-id vector). Three message-passing layers (index_select + index_add_, mean over
# neighbours), a mean pool by index_add_, an MLP head. No DDP: two micro-batches a step
# accumulate gradients, which are flattened into one buffer, all-reduced and copied back by hand,
# then a second all-reduce sums the step's loss and accuracy; SGD with Nesterov momentum and
# weight decay under a linear warm-up set by hand; a print every 10 steps on rank 0.
# Faults (env FAULT=kind:arg, two joined by '+'; from step FROM):
#   quota1:PCT    rank 1 moves itself into a cgroup with a CPU quota of PCT % of a core
#   big3:F        rank 3's graphs have F times as many nodes (more work, the same calls)
#   feat2:K       rank 2's featurizer runs K Python passes over each graph's edges (its loader)
#   featall:K     every rank's featurizer runs K passes (every loader)
#   eval0:K       rank 0 evaluates K held-out batches under no_grad every step (the others wait)
#   logall:N      every rank writes N JSON metric records to its log file every step
#   gil0:N        rank 0 starts a metrics thread that loops N Python steps between 1 ms naps
import json, math, os, random, threading, time
import torch, torch.nn as nn, torch.nn.functional as Fn
import torch.distributed as dist
from torch.utils.data import Dataset, Sampler, DataLoader

FAULTS = [f.split(":") for f in os.environ.get("FAULT", "none").split("+")]
FROM = int(os.environ.get("FROM", "120"))
STEPS = int(os.environ.get("STEPS", "200"))
WORKERS = int(os.environ.get("WORKERS", "1"))
BATCH = int(os.environ.get("BATCH", "48"))
ACCUM = 2
TYPES = 8
OUT = os.environ.get("OUT", "/tmp/novel17")
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
torch.set_num_threads(1)
torch.manual_seed(11)


def arg(kind, r, step):
    """The fault's argument where `kind` is on (for rank r, None: every rank) at this step."""
    for f in FAULTS:
        if f[0] == kind and (r is None or rank == r) and step >= FROM:
            return float(f[1])
    return None


class Graphs(Dataset):
    """Index i is item i % BATCH of micro-batch i // BATCH; its step follows from it, so a fault
    starts with the first graph of its step wherever the loader runs."""
    def __len__(self):
        return 10 ** 9

    def __getitem__(self, i):
        step = i // (BATCH * ACCUM * world)
        rng = random.Random(i)
        n = rng.randint(10, 40)
        f = arg("big3", 3, step)
        if f:
            n = int(n * f)
        types = [rng.randrange(TYPES) for _ in range(n)]
        src = list(range(n)) + [rng.randrange(n) for _ in range(n)]
        dst = [(k + 1) % n for k in range(n)] + [rng.randrange(n) for _ in range(n)]
        k = (arg("feat2", 2, step) or 0) + (arg("featall", None, step) or 0)
        for _ in range(1 + int(k)):  # degree and neighbours' types; K slow passes over the edges
            deg = [0] * n
            near = [[0] * TYPES for _ in range(n)]
            for a, b in zip(src, dst):
                deg[a] += 1; deg[b] += 1
                near[a][types[b]] += 1; near[b][types[a]] += 1
        feats = [[1.0 if t == c else 0.0 for c in range(TYPES)] + [d / 8.0] + [v / max(1, d) for v in nb]
                 for t, d, nb in zip(types, deg, near)]
        label = int(sum(1 for t in types if t == 0) * TYPES > n)
        return torch.tensor(feats), torch.tensor([src + dst, dst + src]), label


class StepSampler(Sampler):
    """Rank r's micro-batch m is indices (m * world + r) * BATCH ... + BATCH - 1."""
    def __init__(self):
        super().__init__(None)

    def __iter__(self):
        m = 0
        while True:
            base = (m * world + rank) * BATCH
            yield from range(base, base + BATCH)
            m += 1


def collate(items):
    xs, edges, graph_of, labels = [], [], [], []
    offset = 0
    for g, (x, e, y) in enumerate(items):
        xs.append(x); edges.append(e + offset); labels.append(y)
        graph_of.append(torch.full((x.shape[0],), g, dtype=torch.int64))
        offset += x.shape[0]
    return torch.cat(xs), torch.cat(edges, 1), torch.cat(graph_of), torch.tensor(labels)


class MessagePassing(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.own = nn.Linear(d_in, d_out)
        self.near = nn.Linear(d_in, d_out, bias=False)

    def forward(self, h, edges, deg):
        msg = torch.zeros_like(h).index_add_(0, edges[1], h.index_select(0, edges[0]))
        return torch.relu(self.own(h) + self.near(msg / deg[:, None]))


class GraphNet(nn.Module):
    def __init__(self, d=96):
        super().__init__()
        self.layers = nn.ModuleList([MessagePassing(1 + 2 * TYPES, d), MessagePassing(d, d), MessagePassing(d, d)])
        self.head = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 2))

    def forward(self, x, edges, graph_of, graphs):
        deg = torch.zeros(x.shape[0]).index_add_(0, edges[1], torch.ones(edges.shape[1])).clamp_(min=1)
        h = x
        for layer in self.layers:
            h = layer(h, edges, deg)
        pooled = torch.zeros(graphs, h.shape[1]).index_add_(0, graph_of, h)
        count = torch.zeros(graphs).index_add_(0, graph_of, torch.ones(h.shape[0]))
        return self.head(pooled / count[:, None])


def throttle_self(pct):
    path = f"/sys/fs/cgroup/cpu/novel17-{os.getpid()}"
    os.makedirs(path, exist_ok=True)
    open(f"{path}/cpu.cfs_period_us", "w").write("100000\n")
    open(f"{path}/cpu.cfs_quota_us", "w").write(f"{int(1000 * pct)}\n")
    open(f"{path}/cgroup.procs", "w").write(f"{os.getpid()}\n")


def metrics_thread(n):
    while True:  # a background metrics thread that holds the interpreter most of the time
        acc = 0
        for i in range(n):
            acc = (acc * 31 + i) % 1000003
        time.sleep(0.001)


def evaluate(model, held_out, k):
    with torch.no_grad():
        for x, e, g, y in held_out[:k]:
            model(x, e, g, len(y)).argmax(1)


def main():
    dist.init_process_group("gloo")
    loader = DataLoader(Graphs(), batch_size=BATCH, sampler=StepSampler(), num_workers=WORKERS,
                        collate_fn=collate, persistent_workers=WORKERS > 0)
    model = GraphNet()
    params = list(model.parameters())
    for p in params:
        dist.broadcast(p.data, 0)
    opt = torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
    held_out = [collate([Graphs()[10 ** 8 + b * BATCH + j] for j in range(BATCH)]) for b in range(4)]
    log = open(os.path.join(OUT, f"metrics-rank{rank}.jsonl"), "w")
    throttled = spinning = False
    t0 = time.time()
    batches = iter(loader)
    for step in range(STEPS + 1):
        q = arg("quota1", 1, step)
        if q and not throttled:
            throttle_self(q); throttled = True
        n = arg("gil0", 0, step)
        if n and not spinning:
            threading.Thread(target=metrics_thread, args=(int(n),), daemon=True).start(); spinning = True
        for group in opt.param_groups:
            group["lr"] = 0.05 * min(1.0, (step + 1) / 30)
        opt.zero_grad(set_to_none=True)
        total = torch.zeros(3)
        for _ in range(ACCUM):
            x, edges, graph_of, labels = next(batches)
            logits = model(x, edges, graph_of, len(labels))
            loss = Fn.cross_entropy(logits, labels) / ACCUM
            loss.backward()
            total += torch.tensor([loss.item(), float((logits.argmax(1) == labels).sum()), len(labels)])
        flat = torch.cat([p.grad.reshape(-1) for p in params])
        dist.all_reduce(flat)
        flat /= world
        at = 0
        for p in params:
            p.grad.copy_(flat[at:at + p.numel()].view_as(p)); at += p.numel()
        dist.all_reduce(total)
        opt.step()
        k = arg("eval0", 0, step)
        if k:
            evaluate(model, held_out, int(k))
        n = arg("logall", None, step)
        if n:
            for i in range(int(n)):
                log.write(json.dumps({"step": step, "record": i, "loss": float(total[0]) / world,
                                      "acc": float(total[1] / total[2]), "lr": opt.param_groups[0]["lr"]}) + "\n")
            log.flush()
        if step % 10 == 0 and rank == 0:
            print(f"step {step} loss {float(total[0]) / world:.4f} acc {float(total[1] / total[2]):.3f} "
                  f"{time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

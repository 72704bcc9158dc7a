# An unseen job: an image classifier trained with pipeline parallelism (GPipe-style micro-batches)
# beside data parallelism, every collective hand-written. STAGES stages (2 unless given) of
# world/STAGES replicas each; rank r is stage r // R of replica r % R (R = world / STAGES). The first
# stage holds the stem and the first residual blocks, the last the rest, the pooling and the head;
# a middle stage (STAGES=3) one block. Each step, a replica's first stage runs its MICRO forward
# passes and sends each activation on (isend), the last stage receives each, runs forward, loss and
# backward at once and sends the activation's gradient back; the first stage then receives the
# gradients in order and runs its backward passes. Then every stage all-reduces its flattened
# gradients within its own data-parallel group (a new_group of the stage's ranks) and steps SGD
# with momentum. The first and last stages load the data (a map-style dataset drawing each 32x32
# image in numpy: a few rectangles and discs on a noisy field, random crop and flip; the label is
# the count of discs), WORKERS DataLoader workers a rank (default 1; 0: in the training process),
# each replica its own DistributedSampler shard; a middle stage loads nothing.
# Faults (env FAULT=kind:arg, two joined by '+'; from step FROM):
#   quotaN:PCT   rank N moves itself into a cgroup with a CPU quota of PCT % of a core
#   augN:K       rank N's dataset redraws each image's augmentation K extra times (its loader)
#   augall:K     every loading rank's dataset does (every loader)
#   batchN:F     replica N's micro-batches are F times as large (on every stage of it)
#   gcall:N      every rank builds N reference cycles a step and collects them
#   ckptN:K      rank N saves its stage's weights and optimizer state K times a step (fsync)
import gc, os, re, time
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as Fn
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler

FAULTS = [f.split(":") for f in os.environ.get("FAULT", "none").split("+")]
FROM = int(os.environ.get("FROM", "120"))
STEPS = int(os.environ.get("STEPS", "200"))
WORKERS = int(os.environ.get("WORKERS", "1"))
MICRO = int(os.environ.get("MICRO", "4"))  # micro-batches a step
MB = int(os.environ.get("MB", "8"))  # samples a micro-batch
STAGES = int(os.environ.get("STAGES", "2"))
SEED = int(os.environ.get("SEED", "3"))  # the samples each replica draws (batch A: 3)
OUT = os.environ.get("OUT", "/tmp/novel24")
WIDTH = 24
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
REPLICAS = world // STAGES
stage, replica = rank // REPLICAS, rank % REPLICAS
FIRST, LAST = stage == 0, stage == STAGES - 1
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


ONSET_FILE = os.path.join(OUT, "pp-onset")


def extra_passes():
    """Workers cannot see the training step: the training loop writes a file at FROM."""
    if not os.path.exists(ONSET_FILE + f"-{rank}"):
        return 0
    return sum(int(float(f[1])) for f in FAULTS if f[0] in (f"aug{rank}", "augall"))


class Shapes(Dataset):
    def __len__(self):
        return 10 ** 6

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = rng.normal(0.1, 0.05, (3, 40, 40)).astype(np.float32)
        yy, xx = np.mgrid[0:40, 0:40]
        discs = int(rng.integers(0, 4))
        for _ in range(discs):
            cy, cx, r = rng.integers(6, 34, 2).tolist() + [int(rng.integers(3, 7))]
            img[:, (yy - cy) ** 2 + (xx - cx) ** 2 < r * r] += rng.uniform(0.3, 0.9, (3, 1))
        for _ in range(int(rng.integers(1, 4))):
            y, x = rng.integers(0, 32, 2)
            img[:, y:y + int(rng.integers(3, 9)), x:x + int(rng.integers(3, 9))] += rng.uniform(0.2, 0.7, (3, 1, 1))
        for _ in range(1 + extra_passes()):
            y, x = rng.integers(0, 9, 2)
            out = img[:, y:y + 32, x:x + 32]
            if rng.random() < 0.5:
                out = out[:, :, ::-1]
            out = (out - out.mean()) / (out.std() + 1e-6)
        return torch.from_numpy(np.ascontiguousarray(out)), discs


def block(c):
    return nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(),
                         nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c))


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = block(c)

    def forward(self, x):
        return Fn.relu(x + self.body(x))


def stage_module():
    stem = [nn.Conv2d(3, WIDTH, 3, padding=1), nn.BatchNorm2d(WIDTH), nn.ReLU(), Residual(WIDTH)]
    head = [Residual(WIDTH), nn.Conv2d(WIDTH, 2 * WIDTH, 3, stride=2, padding=1), nn.ReLU(),
            Residual(2 * WIDTH), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * WIDTH, 4)]
    if STAGES == 2:
        return nn.Sequential(*stem, Residual(WIDTH)) if FIRST else nn.Sequential(*head)
    return nn.Sequential(*stem) if FIRST else nn.Sequential(*head) if LAST else nn.Sequential(Residual(WIDTH))


def throttle_self(pct):
    path = f"/sys/fs/cgroup/cpu/novel24-{os.getpid()}"
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


def save_checkpoint(model, opt, k):
    path = os.path.join(OUT, f"pp-ckpt-{rank}.pt")
    for _ in range(int(k)):
        with open(path, "wb") as f:
            torch.save({"stage": model.state_dict(), "opt": opt.state_dict()}, f)
            f.flush()
            os.fsync(f.fileno())


def batches(loader, sampler):
    epoch = 0
    while True:
        sampler.set_epoch(epoch)
        yield from loader
        epoch += 1


class Feed:
    """A loading stage's micro-batches; rebuilt when the fault changes their size."""

    def __init__(self, data, sampler):
        self.data, self.sampler, self.size, self.it = data, sampler, None, None

    def next(self, size):
        if size != self.size:
            self.size = size
            loader = DataLoader(self.data, batch_size=size, sampler=self.sampler, num_workers=WORKERS,
                                persistent_workers=WORKERS > 0, drop_last=True)
            self.it = batches(loader, self.sampler)
        return next(self.it)


def flat_allreduce(params, group):
    grads = [p.grad for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, group=group)
    flat /= REPLICAS
    offset = 0
    for g in grads:
        g.copy_(flat[offset:offset + g.numel()].view_as(g))
        offset += g.numel()


def main():
    dist.init_process_group("gloo")
    if os.path.exists(ONSET_FILE + f"-{rank}"):
        os.remove(ONSET_FILE + f"-{rank}")
    groups = [dist.new_group(list(range(s * REPLICAS, (s + 1) * REPLICAS))) for s in range(STAGES)]
    mine = groups[stage]
    prev, nxt = rank - REPLICAS, rank + REPLICAS
    feed = None
    if FIRST or LAST:
        data = Shapes()
        sampler = DistributedSampler(data, num_replicas=REPLICAS, rank=replica, shuffle=True, seed=SEED)
        feed = Feed(data, sampler)
    torch.manual_seed(7 + stage)
    model = stage_module()
    for p in model.parameters():  # every replica of a stage starts alike
        dist.broadcast(p.data, stage * REPLICAS, group=mine)
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    t0 = time.time()
    for step in range(STEPS + 1):
        if step == FROM:
            open(ONSET_FILE + f"-{rank}", "w").close()
        q = on("quota", step)
        if q and step == FROM:
            throttle_self(q)
        size = int(MB * (on("batch", step, r=replica) or 1))
        shape = (size, WIDTH, 32, 32)
        opt.zero_grad(set_to_none=True)
        sends, kept, losses = [], [], []
        for _ in range(MICRO):
            x, y = feed.next(size) if feed else (None, None)
            if not FIRST:
                x = torch.empty(shape)
                dist.recv(x, prev)
                x.requires_grad_(True)
            out = model(x)
            if LAST:
                loss = Fn.cross_entropy(out, y) / MICRO
                loss.backward()
                losses.append(float(loss))
                if not FIRST:
                    sends.append(dist.isend(x.grad, prev))
            else:
                sends.append(dist.isend(out.detach(), nxt))
                kept.append((x, out))
        for x, out in kept:  # the gradients come back in the order the activations left
            g = torch.empty(shape)
            dist.recv(g, nxt)
            out.backward(g)
            if not FIRST:
                sends.append(dist.isend(x.grad, prev))
        for w in sends:
            w.wait()
        flat_allreduce(list(model.parameters()), mine)
        opt.step()
        n = on("gcall", step)
        if n:
            make_cycles(int(n))
        k = on("ckpt", step)
        if k:
            save_checkpoint(model, opt, k)
        if step % 10 == 0:
            shown = torch.tensor([float(sum(losses))])  # 0.0 on the other stages
            dist.all_reduce(shown)
            if rank == 0:
                print(f"step {step} loss {float(shown[0]) / REPLICAS:.3f} {time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

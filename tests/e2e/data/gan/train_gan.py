# An unseen job: a small conditional-free GAN under DDP. A map-style dataset renders each 24x24
# "real" image in numpy (two to four Gaussian blobs on a dark field, a random gamma), a
# DistributedSampler shuffles the indices (WORKERS DataLoader workers a rank, default 2; 0: in the
# training process; batches pinned off, dropped last). Two networks, each its own DDP module: a
# generator (a linear layer to 6x6, two transposed convolutions with BatchNorm) and a
# discriminator (three strided convolutions with LeakyReLU, spectral norm on each, a linear head).
# Each step: the discriminator's step on a real and a fake batch at once (hinge loss, its own Adam), then
# the generator's step through the discriminator's unwrapped module (no second all-reduce of its
# gradients), its own Adam; an exponential moving average of the generator's weights after it;
# every 10 steps the ranks all-reduce both losses for rank 0's print.
# Faults (env FAULT=kind:arg, two joined by '+'; from step FROM):
#   quota1:PCT   rank 1 moves itself into a cgroup with a CPU quota of PCT % of a core
#   batch2:F     rank 2's batches are F times as large (more work, the same calls)
#   blur3:K      rank 3's dataset blurs each image K times in a Python loop over its rows (its loader)
#   blurall:K    every rank's dataset does (every loader)
#   gcall:N      every rank builds N reference cycles a step and collects them
#   stats0:N     rank 0 computes N per-sample statistics of its fakes in Python every step
import gc, os, time
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as Fn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.nn.utils import spectral_norm
from torch.utils.data import Dataset, DataLoader, DistributedSampler

FAULTS = [f.split(":") for f in os.environ.get("FAULT", "none").split("+")]
FROM = int(os.environ.get("FROM", "120"))
STEPS = int(os.environ.get("STEPS", "200"))
WORKERS = int(os.environ.get("WORKERS", "2"))
BATCH = int(os.environ.get("BATCH", "24"))
SIDE, LATENT = 24, 32
OUT = os.environ.get("OUT", "/tmp/novel20")
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
torch.set_num_threads(1)
torch.manual_seed(11 + rank)


def on(kind, r, step):
    """The fault's argument where `kind` is on for rank r (None: every rank) at this step, else None."""
    for f in FAULTS:
        if f[0] == kind and (r is None or rank == r) and step >= FROM:
            return float(f[1])
    return None


class Blobs(Dataset):
    """Rendered on demand; the loader workers learn that the fault began from a file the training
    loop writes at FROM (the loop's step is not theirs to see: blur_passes)."""

    def __len__(self):
        return 10 ** 6

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        ys, xs = np.mgrid[0:SIDE, 0:SIDE].astype(np.float32) / SIDE
        img = np.zeros((SIDE, SIDE), np.float32)
        for _ in range(rng.integers(2, 5)):
            cy, cx = rng.random(2)
            s = 0.03 + 0.1 * rng.random()
            img += np.exp(-((ys - cy) ** 2 + (xs - cx) ** 2) / (2 * s * s)).astype(np.float32)
        img = np.clip(img, 0, 1) ** (0.7 + 0.6 * rng.random())
        k = int((blur_passes(3) or 0) + (blur_passes(None) or 0))
        if k:
            rows = img.tolist()
            for _ in range(k):  # a box blur along each row, in Python
                rows = [[(r[max(j - 1, 0)] + r[j] + r[min(j + 1, SIDE - 1)]) / 3 for j in range(SIDE)] for r in rows]
            img = np.asarray(rows, np.float32)
        return torch.from_numpy(img * 2 - 1)[None]


ONSET_FILE = os.path.join(OUT, "gan-onset")


def blur_passes(r):
    """Workers cannot see the training step: the training loop writes a file at FROM."""
    kind = "blur3" if r == 3 else "blurall"
    for f in FAULTS:
        if f[0] == kind and (r is None or rank == r) and os.path.exists(ONSET_FILE + f"-{rank}"):
            return float(f[1])
    return None


class Generator(nn.Module):
    def __init__(self, c=32):
        super().__init__()
        self.fc = nn.Linear(LATENT, 2 * c * 6 * 6)
        self.net = nn.Sequential(nn.BatchNorm2d(2 * c), nn.ReLU(),
                                 nn.ConvTranspose2d(2 * c, c, 4, 2, 1), nn.BatchNorm2d(c), nn.ReLU(),
                                 nn.ConvTranspose2d(c, 1, 4, 2, 1), nn.Tanh())
        self.c = c

    def forward(self, z):
        return self.net(self.fc(z).view(-1, 2 * self.c, 6, 6))


class Discriminator(nn.Module):
    def __init__(self, c=32):
        super().__init__()
        self.net = nn.Sequential(spectral_norm(nn.Conv2d(1, c, 4, 2, 1)), nn.LeakyReLU(0.2),
                                 spectral_norm(nn.Conv2d(c, 2 * c, 4, 2, 1)), nn.LeakyReLU(0.2),
                                 spectral_norm(nn.Conv2d(2 * c, 2 * c, 3, 1, 1)), nn.LeakyReLU(0.2))
        self.head = spectral_norm(nn.Linear(2 * c * 6 * 6, 1))

    def forward(self, x):
        return self.head(self.net(x).flatten(1))


def throttle_self(pct):
    path = f"/sys/fs/cgroup/cpu/novel20-{os.getpid()}"
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


def sample_stats(fake, n):
    """Per-sample brightness, contrast and blob counts of the fakes, element by element."""
    out = []
    flat = fake.detach()[:, 0].tolist()
    for s in range(int(n)):
        img = flat[s % len(flat)]
        vals = [v for row in img for v in row]
        mean = sum(vals) / len(vals)
        out.append((mean, sum((v - mean) ** 2 for v in vals) / len(vals), sum(v > 0.5 for v in vals)))
    return out


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
    data = Blobs()
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=7)
    gen, disc = DDP(Generator()), DDP(Discriminator())
    ema = Generator()
    ema.load_state_dict(gen.module.state_dict())
    opt_g = torch.optim.Adam(gen.parameters(), lr=2e-4, betas=(0.0, 0.99))
    opt_d = torch.optim.Adam(disc.parameters(), lr=4e-4, betas=(0.0, 0.99))
    loader, loader_batch = None, None
    t0 = time.time()
    it = None
    for step in range(STEPS + 1):
        f = on("batch2", 2, step) or 1
        batch = int(BATCH * f)
        if batch != loader_batch:
            loader = DataLoader(data, batch_size=batch, sampler=sampler, num_workers=WORKERS,
                                persistent_workers=WORKERS > 0, drop_last=True)
            it, loader_batch = batches(loader, sampler), batch
        if step == FROM:
            open(ONSET_FILE + f"-{rank}", "w").close()
        q = on("quota1", 1, step)
        if q and step == FROM:
            throttle_self(q)
        real = next(it)
        z = torch.randn(batch, LATENT)
        fake = gen(z)
        opt_d.zero_grad(set_to_none=True)
        scores = disc(torch.cat([real, fake.detach()]))  # one forward: one all-reduce of its gradients
        d_loss = Fn.relu(1 - scores[:batch]).mean() + Fn.relu(1 + scores[batch:]).mean()
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad(set_to_none=True)
        g_loss = -disc.module(fake).mean()
        g_loss.backward()
        opt_g.step()
        with torch.no_grad():
            for pe, pg in zip(ema.parameters(), gen.module.parameters()):
                pe.mul_(0.99).add_(pg, alpha=0.01)
        n = on("gcall", None, step)
        if n:
            make_cycles(int(n))
        n = on("stats0", 0, step)
        if n:
            sample_stats(fake, n)
        if step % 10 == 0:
            shown = torch.tensor([float(d_loss), float(g_loss)])
            dist.all_reduce(shown)
            if rank == 0:
                print(f"step {step} d {float(shown[0]) / world:.3f} g {float(shown[1]) / world:.3f} "
                      f"{time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

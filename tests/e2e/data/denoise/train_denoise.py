# An unseen job: image denoising with a small U-Net under DDP. A map-style dataset draws each
# 32x32 grey image (one to three discs and boxes on a gradient) with torch ops, flips and rotates
# it, and adds Gaussian noise of a random strength; a DistributedSampler shuffles the indices; the
# step the training loop is at is shared with the loader workers through a shared-memory tensor
# (WORKERS DataLoader workers a rank, default 1; 0: in the training process). The U-Net: two
# convolutions, a strided one down, a middle block under activation checkpointing (recomputed in
# the backward pass), a transposed convolution up, the skip joined, the noise predicted; GroupNorm.
# DDP with small gradient buckets; two micro-batches a step under no_sync() for the first, so the
# gradients are all-reduced once a step; AdamW under a one-cycle schedule; every 10 steps the
# ranks all-reduce their loss for rank 0's print.
# Faults (env FAULT=kind:arg, two joined by '+'; from step FROM):
#   quota2:PCT   rank 2 moves itself into a cgroup with a CPU quota of PCT % of a core
#   big1:F       rank 1's images are F times as large a side (more work, the same calls)
#   aug3:K       rank 3's augmentation runs K Python passes over each image's rows (its loader)
#   augall:K     every rank's augmentation runs K passes (every loader)
#   ckpt0:1      rank 0 saves the model and optimizer with torch.save every step, fsynced
#   gcall:N      every rank builds N reference cycles a step and collects them
#   sync2:MS     rank 2 blocks MS ms a step after its optimizer step (a synchronous upload)
import gc, math, os, random, time
import torch, torch.nn as nn, torch.nn.functional as Fn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint
from torch.utils.data import Dataset, DataLoader, DistributedSampler

FAULTS = [f.split(":") for f in os.environ.get("FAULT", "none").split("+")]
FROM = int(os.environ.get("FROM", "120"))
STEPS = int(os.environ.get("STEPS", "200"))
WORKERS = int(os.environ.get("WORKERS", "1"))
BATCH = int(os.environ.get("BATCH", "16"))
SIDE = 32
OUT = os.environ.get("OUT", "/tmp/novel18")
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
torch.set_num_threads(1)
torch.manual_seed(5)
STEP = torch.zeros(1, dtype=torch.int64).share_memory_()  # the training loop's step, for the workers


def arg(kind, r, step=None):
    """The fault's argument where `kind` is on (for rank r, None: every rank) at this step."""
    step = int(STEP[0]) if step is None else step
    for f in FAULTS:
        if f[0] == kind and (r is None or rank == r) and step >= FROM:
            return float(f[1])
    return None


class NoisyImages(Dataset):
    def __len__(self):
        return 10 ** 6

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        side = 2 * int(SIDE * (arg("big1", 1) or 1) / 2)  # even: the U-Net halves it and doubles it back
        ys, xs = torch.meshgrid(torch.linspace(0, 1, side), torch.linspace(0, 1, side), indexing="ij")
        img = 0.3 * (ys * float(torch.rand(1, generator=g)) + xs * float(torch.rand(1, generator=g)))
        for _ in range(int(torch.randint(1, 4, (1,), generator=g))):
            cy, cx, r = (torch.rand(3, generator=g) * torch.tensor([1.0, 1.0, 0.3])).tolist()
            if float(torch.rand(1, generator=g)) < 0.5:
                mask = (ys - cy) ** 2 + (xs - cx) ** 2 < r * r
            else:
                mask = ((ys - cy).abs() < r) & ((xs - cx).abs() < r / 2)
            img = torch.where(mask, img + 0.5, img)
        if float(torch.rand(1, generator=g)) < 0.5:
            img = img.flip(1)
        img = torch.rot90(img, int(torch.randint(0, 4, (1,), generator=g)))
        k = (arg("aug3", 3) or 0) + (arg("augall", None) or 0)
        rows = img.tolist()
        for _ in range(int(k)):  # a contrast stretch done row by row in Python, K times over
            rows = [[min(1.5, max(0.0, v * 1.001)) for v in row] for row in rows]
        if k:
            img = torch.tensor(rows)
        noisy = img + torch.randn(img.shape, generator=g) * (0.05 + 0.2 * float(torch.rand(1, generator=g)))
        return noisy[None], img[None]


def conv(c_in, c_out, stride=1):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride, 1), nn.GroupNorm(4, c_out), nn.ReLU())


class UNet(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.enc = nn.Sequential(conv(1, c), conv(c, c))
        self.down = conv(c, 2 * c, stride=2)
        self.mid = nn.Sequential(conv(2 * c, 2 * c), conv(2 * c, 2 * c))
        self.up = nn.ConvTranspose2d(2 * c, c, 2, stride=2)
        self.dec = nn.Sequential(conv(2 * c, c), nn.Conv2d(c, 1, 3, 1, 1))

    def forward(self, x):
        skip = self.enc(x)
        h = checkpoint(self.mid, self.down(skip), use_reentrant=False)
        return x - self.dec(torch.cat([self.up(h), skip], 1))


def throttle_self(pct):
    path = f"/sys/fs/cgroup/cpu/novel18-{os.getpid()}"
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


def save_checkpoint(model, opt, step):
    with open(os.path.join(OUT, f"ckpt-rank{rank}.pt"), "wb") as f:
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, f)
        f.flush()
        os.fsync(f.fileno())


def main():
    dist.init_process_group("gloo")
    sampler = DistributedSampler(NoisyImages(), num_replicas=world, rank=rank, shuffle=True, seed=3)
    loader = DataLoader(NoisyImages(), batch_size=BATCH, sampler=sampler, num_workers=WORKERS,
                        persistent_workers=WORKERS > 0)
    model = DDP(UNet(), bucket_cap_mb=0.05)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=STEPS + 1)
    throttled = False
    t0 = time.time()
    batches = iter(loader)
    for step in range(STEPS + 1):
        STEP[0] = step
        q = arg("quota2", 2, step)
        if q and not throttled:
            throttle_self(q); throttled = True
        opt.zero_grad(set_to_none=True)
        for micro in range(2):
            noisy, clean = next(batches)
            if micro == 0:
                with model.no_sync():
                    loss = Fn.mse_loss(model(noisy), clean) / 2
                    loss.backward()
            else:
                loss = Fn.mse_loss(model(noisy), clean) / 2
                loss.backward()
        opt.step()
        sched.step()
        if arg("ckpt0", 0, step):
            save_checkpoint(model, opt, step)
        n = arg("gcall", None, step)
        if n:
            make_cycles(int(n))
        ms = arg("sync2", 2, step)
        if ms:
            time.sleep(ms / 1000)
        if step % 10 == 0:
            shown = torch.tensor([float(loss) * 2])
            dist.all_reduce(shown)
            if rank == 0:
                psnr = -10 * math.log10(max(1e-8, float(shown) / world))
                print(f"step {step} loss {float(shown) / world:.5f} psnr {psnr:.1f} {time.time() - t0:.1f}s",
                      flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

# An unseen job: contrastive representation learning (SimCLR-style) on synthetic images. A
# map-style Dataset draws a 3x32x32 picture (a few coloured rectangles on noise) and returns two
# augmented views of it (a random resized crop to 24x24 with F.interpolate, a flip, a brightness
# and contrast jitter), a DistributedSampler shuffles it, WORKERS DataLoader workers a rank
# (default 1; 0: in the training process). A small CNN with BatchNorm and an MLP projector under
# DDP (gloo); both views go through one forward; the NT-Xent loss takes its negatives from every
# rank's embeddings through an autograd all_gather (torch.distributed.nn), a second collective
# beside DDP's all-reduce. SGD with momentum and a linear LR warm-up; an EMA copy of the encoder
# updated every step; a loss print every 10 steps on rank 0.
# Faults (env FAULT=kind:arg, from step FROM):
#   quota2:PCT    rank 2 moves itself into a cgroup with a CPU quota of PCT % of a core
#   jit1:K        rank 1's colour jitter runs K Python passes over a row of each view (its loader)
#   jitall:K      every rank's does
#   big3:F        rank 3's crops are F times as wide and high (more pixels, the same calls)
#   gcall:N       every rank builds N reference cycles and runs gc.collect() every step
#   ckpt0:K       rank 0 saves encoder, EMA and optimizer with torch.save every K steps
#   pyall:N       every rank runs a Python loop of N iterations (a metric) every step
#   nap1:MS       rank 1's dataset sleeps MS ms an item (a slow read)
#   emaall:K      every rank's EMA update runs per tensor K times (a slow host loop)
import gc, os, time
import torch, torch.nn as nn, torch.nn.functional as Fn
import torch.distributed as dist
import torch.distributed.nn.functional as dnn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler

FAULT = os.environ.get("FAULT", "none").split(":")
FROM = int(os.environ.get("FROM", "120"))
STEPS = int(os.environ.get("STEPS", "200"))
WORKERS = int(os.environ.get("WORKERS", "1"))
BATCH = int(os.environ.get("BATCH", "64"))
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
torch.set_num_threads(1)
torch.manual_seed(11)
SIDE, CROP = 32, 24
step_seen = torch.zeros(1, dtype=torch.int64).share_memory_()


def on(kind, r=None, step=None):
    if FAULT[0] != kind or (r is not None and rank != r):
        return False
    return (step if step is not None else int(step_seen[0])) >= FROM


class Pictures(Dataset):
    def __len__(self):
        return 1 << 18

    def picture(self, g):
        img = torch.rand(3, SIDE, SIDE, generator=g) * 0.2
        for _ in range(3):
            x0, y0 = torch.randint(0, SIDE - 8, (2,), generator=g).tolist()
            w, h = torch.randint(4, 12, (2,), generator=g).tolist()
            img[:, y0:y0 + h, x0:x0 + w] += torch.rand(3, 1, 1, generator=g)
        return img

    def view(self, img, g):
        crop = int(CROP * float(FAULT[1])) if on("big3", 3) else CROP
        s = int(torch.randint(14, SIDE + 1, (1,), generator=g))
        x0, y0 = torch.randint(0, SIDE - s + 1, (2,), generator=g).tolist()
        v = Fn.interpolate(img[None, :, y0:y0 + s, x0:x0 + s], size=(crop, crop), mode="bilinear",
                           align_corners=False)[0]
        if torch.rand(1, generator=g) < 0.5:
            v = v.flip(-1)
        v = (v - v.mean()) * float(torch.empty(1).uniform_(0.7, 1.3, generator=g)) + v.mean()
        v = v + float(torch.empty(1).uniform_(-0.2, 0.2, generator=g))
        if on("jit1", 1) or on("jitall"):  # a slow jitter: K Python passes over one row
            row = v[0, 0].tolist()
            for _ in range(int(FAULT[1])):
                row = [min(1.5, max(-0.5, p * 1.01 - 0.005)) for p in row]
            v[0, 0] = torch.tensor(row)
        return v

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = self.picture(g)
        if on("nap1", 1):
            time.sleep(float(FAULT[1]) / 1000)
        return self.view(img, g), self.view(img, g)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        def block(i, o, s):
            return nn.Sequential(nn.Conv2d(i, o, 3, s, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU())
        self.body = nn.Sequential(block(3, 16, 1), block(16, 32, 2), block(32, 48, 2), block(48, 64, 1))
        self.proj = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32))

    def forward(self, x):
        return self.proj(self.body(x).mean((2, 3)))


def nt_xent(z, temperature=0.2):
    z = Fn.normalize(z, dim=1)
    n = z.shape[0] // 2
    a, b = z[:n], z[n:]
    everyone = torch.cat(dnn.all_gather(b), 0)  # negatives from every rank, gradients flow back
    logits = a @ everyone.t() / temperature
    return Fn.cross_entropy(logits, torch.arange(n) + rank * n)


def throttle_self(pct):
    path = f"/sys/fs/cgroup/cpu/novel15-{os.getpid()}"
    os.makedirs(path, exist_ok=True)
    open(f"{path}/cpu.cfs_period_us", "w").write("100000\n")
    open(f"{path}/cpu.cfs_quota_us", "w").write(f"{int(1000 * pct)}\n")
    open(f"{path}/cgroup.procs", "w").write(f"{os.getpid()}\n")


def main():
    dist.init_process_group("gloo")
    sampler = DistributedSampler(Pictures(), num_replicas=world, rank=rank, seed=7)
    loader = DataLoader(Pictures(), batch_size=BATCH, sampler=sampler, num_workers=WORKERS,
                        persistent_workers=WORKERS > 0, drop_last=True)
    encoder = Encoder()
    ema = Encoder().requires_grad_(False)
    ema.load_state_dict(encoder.state_dict())
    model = DDP(encoder)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 30))
    throttled = False
    t0 = time.time()
    batches = iter(loader)
    for step in range(STEPS + 1):
        step_seen[0] = step
        if on("quota2", 2, step=step) and not throttled:
            throttle_self(float(FAULT[1])); throttled = True
        a, b = next(batches)
        opt.zero_grad(set_to_none=True)
        loss = nt_xent(model(torch.cat([a, b], 0)))
        loss.backward()
        opt.step(); sched.step()
        with torch.no_grad():
            for _ in range(int(FAULT[1]) if on("emaall", step=step) else 1):
                for pe, p in zip(ema.parameters(), encoder.parameters()):
                    pe.mul_(0.99).add_(p, alpha=0.01)
        if on("gcall", step=step):
            junk = []
            for i in range(int(FAULT[1])):
                d = {"i": i}; d["self"] = d; junk.append(d)
            del junk
            gc.collect()
        if on("ckpt0", 0, step=step) and step % int(FAULT[1]) == 0:
            with open(os.path.join(os.environ.get("OUT", "/tmp/novel15"), "ckpt-rank0.pt"), "wb") as f:
                torch.save({"encoder": encoder.state_dict(), "ema": ema.state_dict(), "opt": opt.state_dict()}, f)
                f.flush(); os.fsync(f.fileno())
        if on("pyall", step=step):
            acc = 0
            for i in range(int(FAULT[1])):
                acc = (acc * 1103515245 + i) % 2147483648
        if step % 10 == 0 and rank == 0:
            print(f"step {step} loss {loss.item():.4f} {time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

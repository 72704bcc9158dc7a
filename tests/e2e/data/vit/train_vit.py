# An unseen job: a small vision transformer on synthetic 40x40 RGB images. A map-style Dataset
# makes each uint8 image with numpy and augments it (random 32x32 crop, flip, per-channel
# normalize) in WORKERS DataLoader worker processes a rank (default 2; 0: in the training
# process); 8x8 patches -> 16 tokens, 2 encoder layers; DDP/gloo with gradient accumulation
# (ACCUM micro-batches, no_sync on all but the last), AdamW, clip_grad_norm_, a OneCycle LR
# schedule; a loss print every 10 steps on rank 0 and a short evaluation pass every 40 steps on
# every rank (healthy, periodic).
# Faults (env FAULT=kind:arg, from step FROM):
#   quota1:PCT   rank 1 moves itself into a cgroup with a CPU quota of PCT % of a core
#   blur2:K      rank 2's augmentation runs K passes of a 3x3 box blur in numpy (its loader)
#   blurall:K    every rank's does
#   gcall:N      every rank builds N reference cycles and runs gc.collect() every step
#   norms0:R     rank 0 logs every parameter's norm with .item() R times a step to a JSON file
#   big3:F       rank 3's crops are F times the side (about F^2 as many tokens, the same calls)
#   ckpt1:K      rank 1 saves model+optimizer with torch.save and fsync every K steps
#   nap2:MS      rank 2's dataset sleeps MS ms a sample (a slow read)
import gc, json, os, sys, time
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as Fn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import Dataset, DataLoader

FAULT = os.environ.get("FAULT", "none").split(":")
FROM = int(os.environ.get("FROM", "150"))
STEPS = int(os.environ.get("STEPS", "240"))
WORKERS = int(os.environ.get("WORKERS", "2"))
BATCH = int(os.environ.get("BATCH", "32"))
ACCUM = int(os.environ.get("ACCUM", "2"))
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
torch.set_num_threads(1)
torch.manual_seed(5)
SIDE, PATCH, DIM, CLASSES = 32, 8, 64, 10
step_seen = torch.zeros(1, dtype=torch.int64).share_memory_()  # the step, seen by loader workers
MEAN = np.array([120.0, 115.0, 100.0], dtype=np.float32); STD = np.array([60.0, 58.0, 61.0], dtype=np.float32)


_seen = {"step": 0, "reads": 0}


def on(kind, r=None, step=None):
    # In the loader the shared step is read once a batch: a tensor read a sample is ops of its
    # own on the fault's rank (without workers, in its training thread) before the onset too.
    if FAULT[0] != kind or (r is not None and rank != r):
        return False
    if step is not None:
        return step >= FROM
    if _seen["reads"] % BATCH == 0:
        _seen["step"] = int(step_seen[0])
    _seen["reads"] += 1
    return _seen["step"] >= FROM


class Images(Dataset):
    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        rng = np.random.default_rng(i * 31 + rank)
        side = PATCH * round(SIDE * float(FAULT[1]) / PATCH) if on("big3", 3) else SIDE
        img = rng.integers(0, 256, (side + 8, side + 8, 3), dtype=np.uint8)
        y0, x0 = rng.integers(0, 9, 2)
        crop = img[y0:y0 + side, x0:x0 + side].astype(np.float32)
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        if on("blur2", 2) or on("blurall"):
            for _ in range(int(FAULT[1])):
                p = np.pad(crop, ((1, 1), (1, 1), (0, 0)), mode="edge")
                crop = sum(p[dy:dy + side, dx:dx + side] for dy in range(3) for dx in range(3)) / 9.0
        if on("nap2", 2):
            time.sleep(float(FAULT[1]) / 1000)
        x = (crop - MEAN) / STD
        return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1))), int(i % CLASSES)


class Vit(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Conv2d(3, DIM, PATCH, PATCH)
        self.cls = nn.Parameter(torch.zeros(1, 1, DIM))
        layer = nn.TransformerEncoderLayer(DIM, 4, 2 * DIM, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(DIM, CLASSES)

    def forward(self, x):
        t = self.embed(x).flatten(2).transpose(1, 2)
        pos = torch.linspace(-1, 1, t.shape[1]).view(1, -1, 1)  # shape-free position code
        t = torch.cat([self.cls.expand(t.shape[0], -1, -1), t + pos], 1)
        return self.head(self.encoder(t)[:, 0])


def throttle_self(pct):
    path = f"/sys/fs/cgroup/cpu/novel11-r{rank}-{os.getpid()}"
    os.makedirs(path, exist_ok=True)
    open(f"{path}/cpu.cfs_period_us", "w").write("100000\n")
    open(f"{path}/cpu.cfs_quota_us", "w").write(f"{int(1000 * pct)}\n")
    open(f"{path}/cgroup.procs", "w").write(f"{os.getpid()}\n")


def main():
    dist.init_process_group("gloo")
    loader = DataLoader(Images(), batch_size=BATCH, num_workers=WORKERS, shuffle=False,
                        persistent_workers=WORKERS > 0)
    model = DDP(Vit())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=STEPS + 2)
    throttled = False
    t0 = time.time()
    step, micro = 0, 0
    batches = iter(loader)
    while step <= STEPS:
        step_seen[0] = step
        if on("quota1", 1, step=step) and not throttled:
            throttle_self(float(FAULT[1])); throttled = True
        for m in range(ACCUM):
            x, y = next(batches)
            ctx = model.no_sync() if m < ACCUM - 1 else torch.enable_grad()
            with ctx:
                loss = Fn.cross_entropy(model(x), y) / ACCUM
                loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step()
        opt.zero_grad(set_to_none=True)
        if on("gcall", step=step):
            junk = []
            for i in range(int(FAULT[1])):
                d = {"i": i}; d["self"] = d; junk.append(d)
            del junk
            gc.collect()
        if on("norms0", 0, step=step):
            with open(os.path.join(os.environ.get("OUT", "/tmp/novel11"), "norms-rank0.jsonl"), "a") as f:
                for _ in range(int(FAULT[1])):
                    f.write(json.dumps({n: p.norm().item() for n, p in model.named_parameters()}) + "\n")
        if on("ckpt1", 1, step=step) and step % int(FAULT[1]) == 0:
            with open(os.path.join(os.environ.get("OUT", "/tmp/novel11"), "ckpt-rank1.pt"), "wb") as f:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, f)
                f.flush(); os.fsync(f.fileno())
        if step % 40 == 39:
            model.eval()
            with torch.no_grad():
                for _ in range(3):
                    x, y = next(batches)
                    model(x).argmax(1).eq(y).float().mean()
            model.train()
        if step % 10 == 0 and rank == 0:
            print(f"step {step} loss {loss.item() * ACCUM:.3f} {time.time() - t0:.1f}s", flush=True)
        step += 1
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

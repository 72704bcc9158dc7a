# An unseen job: a sequence forecaster (conv stem, 2-layer GRU, MLP head) on synthetic multichannel
# sensor windows. A map-style Dataset builds each window in numpy (a sum of sines with per-sample
# phase, noise, random scaling and a random crop: the augmentation), a DistributedSampler shuffles
# it, WORKERS DataLoader workers a rank (default 2; 0: in the training process). Two micro-batches
# a step with DDP's no_sync on the first (gradient accumulation), AdamW, gradient clipping, a cosine
# LR; an evaluation pass on a held-out batch every 40 steps on every rank; a loss print every 10
# steps on rank 0.
# Faults (env FAULT=kind:arg, from step FROM):
#   quota3:PCT    rank 3 moves itself into a cgroup with a CPU quota of PCT % of a core
#   aug1:K        rank 1's augmentation runs K Python smoothing passes over each window (its loader)
#   augall:K      every rank's does
#   long2:F       rank 2's windows are F times as long (more GRU steps, the same calls)
#   gcall:N       every rank builds N reference cycles and runs gc.collect() every step
#   ckpt0:K       rank 0 saves model+optimizer with torch.save every K steps
#   pyall:N       every rank runs a Python loop of N iterations (a metric) every step
#   nap1:MS       rank 1's dataset sleeps MS ms a window (a slow read)
import gc, math, os, time
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as Fn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler

FAULT = os.environ.get("FAULT", "none").split(":")
FROM = int(os.environ.get("FROM", "120"))
STEPS = int(os.environ.get("STEPS", "200"))
WORKERS = int(os.environ.get("WORKERS", "2"))
MICRO = int(os.environ.get("MICRO", "8"))
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
torch.set_num_threads(1)
torch.manual_seed(5)
CH, LEN, HID = 6, 48, 48
step_seen = torch.zeros(1, dtype=torch.int64).share_memory_()


def on(kind, r=None, step=None):
    if FAULT[0] != kind or (r is not None and rank != r):
        return False
    return (step if step is not None else int(step_seen[0])) >= FROM


class Sensors(Dataset):
    def __len__(self):
        return 1 << 16

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        n = int(LEN * float(FAULT[1])) if on("long2", 2) else LEN
        t = np.arange(n + 8, dtype=np.float32)
        freq = rng.uniform(0.05, 0.4, CH).astype(np.float32)
        x = np.sin(t[None, :] * freq[:, None] + rng.uniform(0, 6.3, (CH, 1))).astype(np.float32)
        x += rng.normal(0, 0.1, x.shape).astype(np.float32)
        x *= rng.uniform(0.8, 1.2)
        start = int(rng.integers(0, 8))
        x = x[:, start:start + n]
        if on("aug1", 1) or on("augall"):  # a slow smoother: K Python passes over one channel
            row = x[0].tolist()
            for _ in range(int(FAULT[1])):
                row = [row[0]] + [(row[j - 1] + row[j] + row[j + 1]) / 3 for j in range(1, len(row) - 1)] + [row[-1]]
            x[0] = np.asarray(row, dtype=np.float32)
        if on("nap1", 1):
            time.sleep(float(FAULT[1]) / 1000)
        y = float(np.tanh(x[:, -4:].mean()))
        return torch.from_numpy(np.ascontiguousarray(x)), torch.tensor(y)


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv1d(CH, 32, 5, padding=2), nn.GELU(), nn.Conv1d(32, 32, 3, padding=1))
        self.gru = nn.GRU(32, HID, num_layers=2, batch_first=True)
        self.head = nn.Sequential(nn.LayerNorm(HID), nn.Linear(HID, 64), nn.GELU(), nn.Linear(64, 1))

    def forward(self, x):
        h = self.stem(x).transpose(1, 2)
        out, _ = self.gru(h)
        return self.head(out[:, -1]).squeeze(-1)


def throttle_self(pct):
    path = f"/sys/fs/cgroup/cpu/novel14-{os.getpid()}"
    os.makedirs(path, exist_ok=True)
    open(f"{path}/cpu.cfs_period_us", "w").write("100000\n")
    open(f"{path}/cpu.cfs_quota_us", "w").write(f"{int(1000 * pct)}\n")
    open(f"{path}/cgroup.procs", "w").write(f"{os.getpid()}\n")


def main():
    dist.init_process_group("gloo")
    sampler = DistributedSampler(Sensors(), num_replicas=world, rank=rank, seed=3)
    loader = DataLoader(Sensors(), batch_size=MICRO, sampler=sampler, num_workers=WORKERS,
                        persistent_workers=WORKERS > 0, drop_last=True)
    held_out = torch.stack([Sensors()[60000 + i][0] for i in range(32)])
    model = DDP(Forecaster())
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * s / (STEPS + 1))))
    throttled = False
    t0 = time.time()
    batches = iter(loader)
    for step in range(STEPS + 1):
        step_seen[0] = step
        if on("quota3", 3, step=step) and not throttled:
            throttle_self(float(FAULT[1])); throttled = True
        opt.zero_grad(set_to_none=True)
        for micro in range(2):
            x, y = next(batches)
            if micro == 0:
                with model.no_sync():
                    (Fn.mse_loss(model(x), y) / 2).backward()
            else:
                loss = Fn.mse_loss(model(x), y) / 2
                loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step()
        if step % 40 == 0:
            model.eval()
            with torch.no_grad():
                model.module(held_out)
            model.train()
        if on("gcall", step=step):
            junk = []
            for i in range(int(FAULT[1])):
                d = {"i": i}; d["self"] = d; junk.append(d)
            del junk
            gc.collect()
        if on("ckpt0", 0, step=step) and step % int(FAULT[1]) == 0:
            with open(os.path.join(os.environ.get("OUT", "/tmp/novel14"), "ckpt-rank0.pt"), "wb") as f:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, f)
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

# An unseen job: a keyword-spotting classifier on synthetic 1-second waveforms. A map-style
# Dataset makes each clip and its log-spectrogram (torch.stft) in __getitem__ (DataLoader workers
# per WORKERS), a Conv1d front end + GRU + linear head, DDP, AdamW, gradient clipping, a cosine
# schedule, a loss print every 25 steps on rank 0.
# Faults (env FAULT=kind:arg, from step FROM):
#   specaug2:N    rank 2's dataset masks N random time bands per clip in a Python loop (its loader)
#   specaugall:N  every rank's dataset does it
#   gradnorm1:N   rank 1 logs every parameter's gradient norm (.item() each, N passes) every step
#   jsonlog0:K    rank 0 appends a K-field JSON metrics record to a file and fsyncs it every step
#   confall:N     every rank builds a confusion matrix of its predictions in Python, N passes
#   longclip3:F   rank 3's clips are F times as long (more samples per clip, the same calls)
#   wait1:MS      rank 1 waits MS ms each step on a lock held by a logging thread
import json, math, os, random, sys, threading, time
import torch, torch.nn as nn, torch.nn.functional as Fn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import Dataset, DataLoader, DistributedSampler

FAULT = os.environ.get("FAULT", "none").split(":")
FROM = int(os.environ.get("FROM", "120"))
STEPS = int(os.environ.get("STEPS", "170"))
WORKERS = int(os.environ.get("WORKERS", "0"))
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
torch.set_num_threads(1)
torch.manual_seed(3)
SR = 4000
step_seen = torch.zeros(1, dtype=torch.int64).share_memory_()  # the step, seen by loader workers

def on(kind, r=None):
    return FAULT[0] == kind and (r is None or rank == r) and int(step_seen[0]) >= FROM

class Clips(Dataset):
    def __len__(self):
        return 100000
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        n = SR
        if on("longclip3", 3):
            n = int(n * float(FAULT[1]))
        label = i % 8
        t = torch.arange(n) / SR
        wave = torch.sin(2 * math.pi * (200 + 60 * label) * t) + 0.3 * torch.randn(n, generator=g)
        spec = torch.stft(wave, 256, hop_length=64, window=torch.hann_window(256), return_complex=True)
        feat = (spec.abs() + 1e-3).log()[:64]  # 64 bins x frames
        if on("specaug2", 2) or on("specaugall"):
            rng = random.Random(i)
            frames = feat.shape[1]
            cols = feat.tolist()
            for _ in range(int(FAULT[1])):
                start = rng.randrange(frames - 4)
                for row in cols:
                    for c in range(start, start + 4):
                        row[c] = 0.0
            feat = torch.tensor(cols)
        return feat, label

def collate(items):
    frames = min(f.shape[1] for f, _ in items)
    return torch.stack([f[:, :frames] for f, _ in items]), torch.tensor([y for _, y in items])

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.front = nn.Sequential(nn.Conv1d(64, 96, 5, padding=2), nn.ReLU(), nn.Conv1d(96, 96, 5, stride=2, padding=2), nn.ReLU())
        self.gru = nn.GRU(96, 96, batch_first=True)
        self.head = nn.Linear(96, 8)
    def forward(self, x):
        h = self.front(x).transpose(1, 2)
        out, _ = self.gru(h)
        return self.head(out.mean(1))

def log_grad_norms(model):
    for _ in range(int(FAULT[1])):
        norms = {n: p.grad.norm().item() for n, p in model.named_parameters() if p.grad is not None}
        line = " ".join(f"{n}={v:.4f}" for n, v in sorted(norms.items()))
    return line

def json_log(step, loss):
    rec = {f"metric_{k}": loss * (k + 1) for k in range(int(FAULT[1]))}
    rec["step"] = step
    with open(os.path.join(os.environ.get("OUT", "/tmp"), f"metrics-{os.getpid()}.jsonl"), "a") as f:
        f.write(json.dumps(rec) + "\n"); f.flush(); os.fsync(f.fileno())

def confusion(logits, y):
    preds, labels = logits.argmax(1).tolist(), y.tolist()
    for _ in range(int(FAULT[1])):
        m = [[0] * 8 for _ in range(8)]
        for p, t in zip(preds, labels):
            m[t][p] += 1
        recall = [m[c][c] / max(1, sum(m[c])) for c in range(8)]
    return recall

lock = threading.Lock()
def flusher():
    while True:
        with lock:
            time.sleep(float(FAULT[1]) / 1000 if FAULT[0] == "wait1" else 0.0005)
        time.sleep(0.001)

def main():
    dist.init_process_group("gloo")
    data = Clips()
    loader = DataLoader(data, batch_size=16, sampler=DistributedSampler(data, world, rank, seed=5),
                        num_workers=WORKERS, collate_fn=collate, persistent_workers=WORKERS > 0)
    model = DDP(Net())
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, STEPS)
    if rank == 1 and FAULT[0] == "wait1":
        threading.Thread(target=flusher, daemon=True).start()
    t0 = time.time()
    step = 0
    for x, y in loader:
        step_seen[0] = step
        logits = model(x)
        loss = Fn.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if on("gradnorm1", 1):
            log_grad_norms(model)
        opt.step(); sched.step()
        if on("jsonlog0", 0):
            json_log(step, loss.item())
        if on("confall"):
            confusion(logits.detach(), y)
        if on("wait1", 1):
            with lock:
                pass
        if step % 25 == 0 and rank == 0:
            print(f"step {step} loss {loss.item():.3f} {time.time() - t0:.1f}s", flush=True)
        step += 1
        if step > STEPS:
            break
    dist.destroy_process_group()

if __name__ == "__main__":
    main()

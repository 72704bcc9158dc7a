# An unseen job: knowledge distillation on synthetic images. An IterableDataset streams pictures
# (a few blurred blobs on a gradient, a class from their layout), sharded by rank and by DataLoader
# worker (WORKERS a rank, default 1; 0: in the training process), with a flip and a noise jitter.
# A frozen teacher CNN (eval, no_grad) labels each batch; a smaller depthwise-separable student is
# trained under CPU autocast (bfloat16) with a KL loss against the teacher's softened outputs plus
# cross-entropy, DDP over gloo, SGD with Nesterov momentum, a step LR; every 25 steps the ranks
# all-reduce their running accuracy; a loss print every 10 steps on rank 0.
# Faults (env FAULT=kind:arg, from step FROM):
#   quota1:PCT    rank 1 moves itself into a cgroup with a CPU quota of PCT % of a core
#   log0:N        rank 0 appends N JSON lines of per-parameter statistics to a file and fsyncs it, every step
#   gatherall:N   every rank all-gathers N scalar metrics, one call each, every step
#   teacher1:K    rank 1 runs the teacher K more times on flipped copies (test-time augmentation)
#   leak2:N       rank 2 keeps N new small dicts every step and never frees them (a growing heap)
#   stall3:MS     rank 3's stream sleeps MS ms on every 8th picture (a bursty read)
import json, math, os, time
import torch, torch.nn as nn, torch.nn.functional as Fn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import IterableDataset, DataLoader, get_worker_info

FAULT = os.environ.get("FAULT", "none").split(":")
FROM = int(os.environ.get("FROM", "120"))
STEPS = int(os.environ.get("STEPS", "200"))
WORKERS = int(os.environ.get("WORKERS", "1"))
BATCH = int(os.environ.get("BATCH", "32"))
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
torch.set_num_threads(1)
torch.manual_seed(23)
SIDE, CLASSES, TEMP = 28, 8, 3.0
step_seen = torch.zeros(1, dtype=torch.int64).share_memory_()
kept = []


def on(kind, r=None, step=None):
    if FAULT[0] != kind or (r is not None and rank != r):
        return False
    return (step if step is not None else int(step_seen[0])) >= FROM


class Stream(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        shard = rank * max(1, WORKERS) + (info.id if info else 0)
        g = torch.Generator().manual_seed(1000 + shard)
        yy, xx = torch.meshgrid(torch.arange(SIDE), torch.arange(SIDE), indexing="ij")
        count = 0
        while True:
            img = (xx + yy).float().div(2 * SIDE).expand(3, SIDE, SIDE).clone() * torch.rand(3, 1, 1, generator=g)
            centres = torch.randint(4, SIDE - 4, (3, 2), generator=g)
            for cy, cx in centres.tolist():
                blob = torch.exp(-((yy - cy) ** 2 + (xx - cx) ** 2).float() / 18.0)
                img += blob * torch.rand(3, 1, 1, generator=g)
            label = int(centres[0, 0] * 2 // SIDE * 4 + centres[0, 1] * 4 // SIDE) % CLASSES
            if torch.rand(1, generator=g).item() < 0.5:
                img = img.flip(-1)
            img += torch.randn(img.shape, generator=g) * 0.05
            count += 1
            if on("stall3", 3) and count % 8 == 0:
                time.sleep(float(FAULT[1]) / 1000)
            yield img, label


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


def separable(cin, cout, stride):
    return nn.Sequential(nn.Conv2d(cin, cin, 3, stride, 1, groups=cin), nn.Conv2d(cin, cout, 1),
                         nn.BatchNorm2d(cout), nn.ReLU())


def teacher_net():
    return nn.Sequential(block(3, 32), block(32, 32), nn.MaxPool2d(2), block(32, 64), block(64, 64),
                         nn.MaxPool2d(2), block(64, 96), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(96, CLASSES))


def student_net():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), separable(16, 32, 2),
                         separable(32, 48, 2), separable(48, 64, 1), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Dropout(0.1), nn.Linear(64, CLASSES))


def throttle_self(pct):
    path = f"/sys/fs/cgroup/cpu/novelkd-{os.getpid()}"
    os.makedirs(path, exist_ok=True)
    open(f"{path}/cpu.cfs_period_us", "w").write("100000\n")
    open(f"{path}/cpu.cfs_quota_us", "w").write(f"{int(1000 * pct)}\n")
    open(f"{path}/cgroup.procs", "w").write(f"{os.getpid()}\n")


def log_statistics(model, step, lines):
    path = os.path.join(os.environ.get("OUT", "/tmp/novelR"), "kd-stats-rank0.jsonl")
    params = list(model.named_parameters())
    with open(path, "a") as f:
        for i in range(lines):
            name, p = params[i % len(params)]
            f.write(json.dumps({"step": step, "name": name, "mean": p.detach().float().mean().item(),
                                "std": p.detach().float().std().item() if p.numel() > 1 else 0.0}) + "\n")
        f.flush(); os.fsync(f.fileno())


def main():
    dist.init_process_group("gloo")
    loader = DataLoader(Stream(), batch_size=BATCH, num_workers=WORKERS, persistent_workers=WORKERS > 0)
    teacher = teacher_net().eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    model = DDP(student_net())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=80, gamma=0.5)
    correct = torch.zeros(2)
    throttled = False
    t0 = time.time()
    batches = iter(loader)
    for step in range(STEPS + 1):
        step_seen[0] = step
        if on("quota1", 1, step=step) and not throttled:
            throttle_self(float(FAULT[1])); throttled = True
        x, y = next(batches)
        with torch.no_grad():
            soft = teacher(x)
            if on("teacher1", 1, step=step):
                for _ in range(int(FAULT[1])):
                    soft = soft + teacher(x.flip(-1))
                soft = soft / (1 + int(FAULT[1]))
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(x)
        logits = logits.float()
        kd = Fn.kl_div(Fn.log_softmax(logits / TEMP, 1), Fn.softmax(soft / TEMP, 1), reduction="batchmean")
        loss = 0.7 * kd * TEMP * TEMP + 0.3 * Fn.cross_entropy(logits, y)
        loss.backward()
        opt.step(); sched.step()
        correct += torch.tensor([(logits.argmax(1) == y).sum().item(), len(y)], dtype=torch.float32)
        if step % 25 == 0:
            dist.all_reduce(correct)
            correct.zero_()
        if on("gatherall", step=step):
            for i in range(int(FAULT[1])):
                out = [torch.zeros(1) for _ in range(world)]
                dist.all_gather(out, torch.tensor([loss.item() * (i + 1)]))
        if on("log0", 0, step=step):
            log_statistics(model.module, step, int(FAULT[1]))
        if on("leak2", 2, step=step):
            kept.extend({"step": step, "i": i, "v": [i, step]} for i in range(int(FAULT[1])))
        if step % 10 == 0 and rank == 0:
            print(f"step {step} loss {loss.item():.4f} {time.time() - t0:.1f}s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

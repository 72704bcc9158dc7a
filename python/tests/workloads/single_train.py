"""A single-process training loop (no torch.distributed) for the capture tests.

Knobs (key=value): iters=150 pace_s=0.005 slow_from=-1 slow_s=0.01 gc=0 break_profiler=0
"""

import gc
import sys
import time

import torch
from torch.utils.data import DataLoader, TensorDataset

opts = {"iters": 150, "pace_s": 0.005, "slow_from": -1, "slow_s": 0.01, "gc": 0,
        "break_profiler": 0}
for arg in sys.argv[1:]:
    key, _, value = arg.partition("=")
    opts[key] = type(opts[key])(value)

if opts["break_profiler"]:
    import torch.profiler

    def broken_start(self):
        raise RuntimeError("profiler unavailable here")

    torch.profiler.profile.start = broken_start

garbage = []
data = TensorDataset(torch.randn(opts["iters"] * 8, 32), torch.randn(opts["iters"] * 8, 1))
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i, (x, y) in enumerate(DataLoader(data, batch_size=8)):
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    if opts["gc"]:
        garbage.append([[] for _ in range(2000)])  # cyclic-GC work, collected below
        gc.collect()
        garbage.clear()
    time.sleep(opts["pace_s"] + (opts["slow_s"] if 0 <= opts["slow_from"] <= i else 0))
print("trained", i + 1)

"""The per-iteration cost of the hooks and the runtime behind them, in-process."""

import statistics
import time

import torch
from torch.utils.data import DataLoader

from eroica import config, hooks
from eroica.runtime import Runtime


def loop_ns(opt, batches, n):
    # CPU time of this thread: on a loaded machine, wall time mostly measures the neighbours.
    start = time.thread_time_ns()
    for _ in range(n):
        next(batches)
        opt.step()
    return (time.thread_time_ns() - start) / n


def test_hook_cost_per_iteration_is_a_few_microseconds(tmp_path):
    p = torch.nn.Parameter(torch.zeros(1))
    p.grad = torch.zeros(1)
    opt = torch.optim.SGD([p], lr=0.1)
    batches = iter(DataLoader(range(10 ** 7), batch_size=1))
    rt = Runtime(config.load({"EROICA_DIR": str(tmp_path), "EROICA_THRESHOLD": "1000"}))
    on, off = [], []
    try:
        for _ in range(5):  # interleaved, so that drift hits both sides alike
            hooks.install(rt)
            on.append(loop_ns(opt, batches, 5000))
            hooks.uninstall()
            off.append(loop_ns(opt, batches, 5000))
    finally:
        hooks.uninstall()
        rt.shutdown()
    cost_us = (statistics.median(on) - statistics.median(off)) / 1000
    print("\nhook cost: %.2f us per iteration (one batch + one step): %.3f %% of a 10 ms "
          "iteration, %.4f %% of a 1 s one" % (cost_us, cost_us / 100, cost_us / 1e4))
    assert rt.iteration == 25000
    assert cost_us < 50  # a few µs when the machine is quiet; generous for a loaded one

"""The contender that makes one rank slower: a matrix-multiply loop on the rank's device.

Two forms, one loop:
  * a separate process (`python contender.py --device cuda|cpu ...`): on a GPU it time-shares
    the device with every CUDA context on it (contexts of different processes never run at the
    same time without MPS); on a CPU it is pinned to the slow rank's core, so only that rank
    loses CPU time;
  * a thread inside the slow rank (`ContenderThread`): on a GPU its own CUDA stream shares the
    rank's SMs *concurrently*, which slows that rank's kernels and not its peer's context.

The loop runs `busy_ms` of matrix products, then idles `idle_ms`, so the slowdown is a
duty cycle and not a starvation. It stops when told, after `max_s`, or when its parent dies.
"""

import argparse
import json
import os
import sys
import threading
import time


def pick_size(device):
    """Square operands big enough that one product takes well over a launch (bf16 on GPU)."""
    return 4096 if device.startswith("cuda") else 256


class MatmulLoop:
    """Runs products until `should_stop()`; counts them and the busy time."""

    def __init__(self, device, busy_ms, idle_ms, size=0):
        import torch

        self.torch = torch
        self.device = device
        self.busy_s = busy_ms / 1e3
        self.idle_s = idle_ms / 1e3
        dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        n = size or pick_size(device)
        self.a = torch.randn(n, n, device=device, dtype=dtype)
        self.b = torch.randn(n, n, device=device, dtype=dtype)
        self.stream = torch.cuda.Stream() if device.startswith("cuda") else None
        self.products = 0
        self.busy_total_s = 0.0

    def _product(self):
        if self.stream is None:
            self.torch.mm(self.a, self.b)
            return
        with self.torch.cuda.stream(self.stream):
            self.torch.mm(self.a, self.b)
            self.torch.mm(self.b, self.a)  # two in flight keep the SMs fed between syncs
        self.stream.synchronize()  # releases the GIL while the device works

    def run(self, should_stop):
        while not should_stop():
            started = time.perf_counter()
            while time.perf_counter() - started < self.busy_s and not should_stop():
                self._product()
                self.products += 1
            self.busy_total_s += time.perf_counter() - started
            if self.idle_s > 0:
                time.sleep(self.idle_s)


class ContenderThread:
    """The in-process form: started by the slow rank at its chosen iteration."""

    def __init__(self, device, busy_ms, idle_ms, size=0):
        self.loop = MatmulLoop(device, busy_ms, idle_ms, size)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self.loop.run, args=(self._stop.is_set,),
                                        name="eroica-gpu-check-contender", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        return {"products": self.loop.products, "busy_s": round(self.loop.busy_total_s, 3)}


def pin_to(cpu):
    """Pins this process (and the threads it starts later) to one CPU; False if it cannot."""
    if cpu < 0 or not hasattr(os, "sched_setaffinity"):
        return False
    try:
        os.sched_setaffinity(0, {cpu})
        return True
    except OSError:
        return False


def main(argv=None):
    """The process form. It gets ready (torch imported, operands on the device, one product
    run), says so in REPORT.ready, and waits for SIGUSR1 before it starts, so the slow rank
    chooses the exact iteration the contention begins at; SIGTERM ends it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--busy-ms", type=float, default=20)
    parser.add_argument("--idle-ms", type=float, default=0)
    parser.add_argument("--size", type=int, default=0)
    parser.add_argument("--cpu", type=int, default=-1, help="pin to this CPU (-1: no pinning)")
    parser.add_argument("--max-s", type=float, default=300)
    parser.add_argument("--report", required=True, help="REPORT.ready when ready; REPORT (JSON) at the end")
    args = parser.parse_args(argv)
    import signal

    import torch

    go, stop = threading.Event(), threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: go.set())
    signal.signal(signal.SIGTERM, lambda *_: (stop.set(), go.set()))
    torch.set_num_threads(1)
    pinned = pin_to(args.cpu)
    parent = os.getppid()
    deadline = time.monotonic() + args.max_s
    loop = MatmulLoop(args.device, args.busy_ms, args.idle_ms, args.size)
    loop._product()  # the first product pays for the library's set-up, before the start
    open(args.report + ".ready", "w").close()
    while not go.wait(0.5):
        if os.getppid() != parent or time.monotonic() > deadline:
            return 1
    started = time.monotonic()
    loop.run(lambda: stop.is_set() or time.monotonic() > deadline or os.getppid() != parent)
    with open(args.report, "w") as f:
        json.dump({"pid": os.getpid(), "device": args.device, "pinned_cpu": args.cpu if pinned else None,
                   "products": loop.products, "busy_s": round(loop.busy_total_s, 3),
                   "ran_s": round(time.monotonic() - started, 3)}, f)
    return 0

if __name__ == "__main__":
    sys.exit(main())

"""The GPU check's training job: a small transformer language model, 2-rank DDP over gloo
(CUDA tensors on a GPU, CPU tensors in the dry run), that knows nothing of eroica. From
iteration `contend_from` on, rank `contend_rank` is slowed by a matrix-multiply contender
(contender.py): a separate process, or a thread on its own CUDA stream inside the rank.

Usage: python transformer_job.py key=value ...  (knobs and defaults in DEFAULTS)
Writes OUT/times-rank-<r>.json ([iteration, seconds] per iteration) and OUT/contender.json
(when and how the contender started, what it did).
"""

import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

DEFAULTS = {
    "world": 2, "iters": 90, "device": "cpu", "port": 29531, "out": "/tmp/eroica-gpu-job",
    "contender": "process",  # process | thread | none
    "contend_rank": 1, "contend_from": 40, "busy_ms": 20.0, "idle_ms": 0.0, "size": 0,
    "pin": 1,  # CPU dry run: pin rank r to CPU r (and the contender process to the slow rank's)
    "cpus": "",  # the CPUs the launcher may use (set by main before the ranks pin themselves)
    # A pause after iteration 2: eroica registers each rank with the node agent at its first
    # iterations and the agent picks registrations up once a second; in a real job minutes
    # pass before any capture, here the capture can come two seconds later.
    "settle_s": 2.5,
    "d_model": 32, "layers": 2, "heads": 2, "seq": 16, "batch": 8, "vocab": 128,
}


def parse(argv):
    opts = dict(DEFAULTS)
    for arg in argv:
        key, _, value = arg.partition("=")
        if key not in opts:
            raise SystemExit("transformer_job.py: unknown knob %r" % key)
        opts[key] = type(DEFAULTS[key])(value)
    return opts


def write_json(opts, name, doc):
    os.makedirs(opts["out"], exist_ok=True)
    tmp = os.path.join(opts["out"], name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, os.path.join(opts["out"], name))


def build_model(opts):
    import torch.nn as nn

    class TinyLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(opts["vocab"], opts["d_model"])
            layer = nn.TransformerEncoderLayer(opts["d_model"], opts["heads"], 4 * opts["d_model"],
                                               dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, opts["layers"])
            self.head = nn.Linear(opts["d_model"], opts["vocab"])

        def forward(self, tokens):
            return self.head(self.encoder(self.embed(tokens)))

    return TinyLM()


def token_loader(opts, rank):
    import torch
    from torch.utils.data import DataLoader, TensorDataset

    g = torch.Generator().manual_seed(rank)
    n = opts["iters"] * opts["batch"]
    tokens = torch.randint(0, opts["vocab"], (n, opts["seq"] + 1), generator=g)
    return DataLoader(TensorDataset(tokens), batch_size=opts["batch"])


def cpus():
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def rank_cpu(opts, rank):
    """The CPU a rank is pinned to in the dry run, or -1 (GPU run, or too few CPUs)."""
    available = [int(c) for c in opts["cpus"].split(",") if c]
    if opts["device"] != "cpu" or not opts["pin"] or len(available) < opts["world"]:
        return -1
    return available[rank]


def prepare_contender(opts, rank):
    """Readies the contender before training starts (a process imports torch and sets up its
    device for seconds); `begin_contender` then starts it at the chosen iteration at once."""
    if opts["contender"] == "thread":
        from contender import ContenderThread

        return ContenderThread(opts["device"], opts["busy_ms"], opts["idle_ms"], opts["size"])
    env = dict(os.environ, EROICA_DISABLE="1")  # the contender is no training process
    report = os.path.join(opts["out"], "contender-process.json")
    os.makedirs(opts["out"], exist_ok=True)
    cmd = [sys.executable, os.path.join(HERE, "contender.py"), "--device", opts["device"],
           "--busy-ms", str(opts["busy_ms"]), "--idle-ms", str(opts["idle_ms"]), "--size", str(opts["size"]),
           "--cpu", str(rank_cpu(opts, rank)), "--report", report]
    proc = subprocess.Popen(cmd, env=env)
    deadline = time.monotonic() + 120
    while not os.path.exists(report + ".ready"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the contender process did not get ready (exit %s)" % proc.poll())
        time.sleep(0.05)
    return proc


def begin_contender(opts, handle, rank, iteration):
    if isinstance(handle, subprocess.Popen):
        os.kill(handle.pid, signal.SIGUSR1)
    else:
        handle.start()
    return {"rank": rank, "iteration": iteration, "unix_ns": time.time_ns(), "form": opts["contender"],
            "device": opts["device"], "pid": getattr(handle, "pid", os.getpid())}


def stop_contender(opts, handle):
    if not isinstance(handle, subprocess.Popen):
        return handle.stop()
    handle.terminate()
    try:
        handle.wait(timeout=20)
    except subprocess.TimeoutExpired:
        handle.kill()
        handle.wait()
    report = os.path.join(opts["out"], "contender-process.json")
    done = {"exit_code": handle.returncode}
    if os.path.exists(report):
        with open(report) as f:
            done.update(json.load(f))
    return done


def train(rank, opts):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    sys.path.insert(0, HERE)
    from contender import pin_to

    pinned = pin_to(rank_cpu(opts, rank))  # before any thread starts: gloo's inherit it
    torch.set_num_threads(1)
    cuda = opts["device"].startswith("cuda")
    if cuda:
        torch.cuda.set_device(0)  # one GPU: both ranks share it (gloo over CUDA tensors)
    dist.init_process_group("gloo", rank=rank, world_size=opts["world"])
    torch.manual_seed(0)
    device = torch.device(opts["device"])
    model = build_model(opts).to(device)
    model = DDP(model, device_ids=[0] if cuda else None)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    contender, doc = None, None
    if rank == opts["contend_rank"] and opts["contender"] != "none":
        contender = prepare_contender(opts, rank)
    times = []
    last = time.perf_counter()
    for i, (batch,) in enumerate(token_loader(opts, rank)):
        if contender is not None and i == opts["contend_from"]:
            doc = begin_contender(opts, contender, rank, i)
            doc["pinned"] = pinned
        batch = batch.to(device, non_blocking=True)
        logits = model(batch[:, :-1])
        loss = loss_fn(logits.reshape(-1, opts["vocab"]), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()  # a logging sync, as real loops have: the iteration ends on the device too
        if i == 2:
            time.sleep(opts["settle_s"])
        now = time.perf_counter()
        times.append([i, round(now - last, 6)])
        last = now
    if contender is not None:
        stopped = stop_contender(opts, contender)
        if doc is not None:  # it began (the run reached its iteration)
            doc["stopped"] = stopped
            write_json(opts, "contender.json", doc)
    write_json(opts, "times-rank-%d.json" % rank, {"rank": rank, "pid": os.getpid(),
                                                    "pinned": pinned, "times": times})
    dist.barrier()
    dist.destroy_process_group()


def main():
    import torch.multiprocessing as mp

    opts = parse(sys.argv[1:])
    opts["cpus"] = opts["cpus"] or ",".join(str(c) for c in cpus())
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(opts["port"])
    mp.spawn(train, args=(opts,), nprocs=opts["world"], join=True)


if __name__ == "__main__":
    main()

"""One rank of real DDP training (gloo, CPU) with an optional injected fault.

Started by launch.py as `/usr/bin/python3 train.py --config CONFIG --rank R`. The config (JSON,
written by the launcher) names the scenario, the faulty ranks and the schedule. The rank:
- trains a small embedding + MLP model on batches from a real DataLoader over a map-style Dataset,
- profiles iterations [profile_start, profile_start + profile_iters) and writes the profiler's
  export to OUT/rank-<r>.json,
- reports progress in WORK/heartbeat-r<r>.json (iteration id and phase) and appends its
  per-iteration wall times to WORK/iters-r<r>.txt,
- turns its fault on at the onset iteration (faults.py); faults applied from outside the process
  (a CPU quota, a link throttle) go through a handshake with the launcher so that the onset is exact.
"""

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, schedule
from torch.utils.data import DataLoader, Dataset

sys.path.insert(0, str(Path(__file__).resolve().parent))
import faults  # noqa: E402

DENSE_FEATURES = 256
TOKENS_PER_SAMPLE = 16
VOCAB_SIZE = 16384  # the embedding table's gradient (4 MiB) makes the all-reduce matter
EMBEDDING_DIM = 64
HIDDEN_DIM = 256
NUM_CLASSES = 10
BASE_BATCH_SIZE = 32
EXTERNAL_FAULT_TIMEOUT_S = 30.0


class SyntheticDataset(Dataset):
    """Samples from a seeded generator, normalised per sample: a stand-in for decode + augment.

    `record_reader` (the slow-storage fault) supplies the dense features from disk instead."""

    def __init__(self, seed, rank, record_reader=None):
        self.seed = seed
        self.rank = rank
        self.record_reader = record_reader

    def __len__(self):
        return 1 << 30

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed((self.seed * 1_000_003 + self.rank) * 1_000_033 + index)
        if self.record_reader is not None and self.record_reader.active:
            record = self.record_reader.read_record(index)
            dense = torch.frombuffer(bytearray(record[:DENSE_FEATURES]), dtype=torch.uint8).float()
        else:
            dense = torch.randn(DENSE_FEATURES, generator=generator)
        dense = (dense - dense.mean()) / (dense.std() + 1e-6)
        tokens = torch.randint(0, VOCAB_SIZE, (TOKENS_PER_SAMPLE,), generator=generator)
        label = int(dense[:NUM_CLASSES].argmax())
        return dense, tokens, label


def collate_samples(samples):
    dense = torch.stack([s[0] for s in samples])
    tokens = torch.stack([s[1] for s in samples])
    labels = torch.tensor([s[2] for s in samples], dtype=torch.long)
    return dense, tokens, labels


class ResizableBatchSampler:
    """Yields `num_batches` batches of random indices; the batch size is read per batch, so a
    fault can change it from its onset on (the imbalance fault)."""

    def __init__(self, num_batches, batch_size_fn, seed, rank):
        self.num_batches = num_batches
        self.batch_size_fn = batch_size_fn
        self.generator = torch.Generator().manual_seed(seed * 7919 + rank)

    def __len__(self):
        return self.num_batches

    def __iter__(self):
        for _ in range(self.num_batches):
            size = self.batch_size_fn()
            yield torch.randint(0, 1 << 30, (size,), generator=self.generator).tolist()


class RecommenderMlp(nn.Module):
    """Token embeddings (bag mean) + dense features -> 3-layer MLP -> class logits."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.EmbeddingBag(VOCAB_SIZE, EMBEDDING_DIM, mode="mean")
        self.mlp = nn.Sequential(
            nn.Linear(DENSE_FEATURES + EMBEDDING_DIM, HIDDEN_DIM), nn.ReLU(),
            nn.Linear(HIDDEN_DIM, HIDDEN_DIM), nn.ReLU(),
            nn.Linear(HIDDEN_DIM, NUM_CLASSES))

    def forward(self, dense, tokens):
        return self.mlp(torch.cat([dense, self.embedding(tokens)], dim=1))


class Progress:
    """Heartbeat (iteration id + phase, replaced atomically) and per-iteration wall times."""

    def __init__(self, work_dir, rank):
        self.heartbeat_path = Path(work_dir) / f"heartbeat-r{rank}.json"
        self.times_file = open(Path(work_dir) / f"iters-r{rank}.txt", "a", buffering=1)
        self.pid = os.getpid()

    def beat(self, iteration, phase, started_monotonic_s=None):
        """`started_monotonic_s`: when the iteration began (CLOCK_MONOTONIC), so that a hang
        report can time the iteration that never finished."""
        tmp = self.heartbeat_path.with_suffix(".tmp")
        state = {"iter": iteration, "phase": phase, "pid": self.pid}
        if started_monotonic_s is not None:
            state["started_s"] = round(started_monotonic_s, 6)
        tmp.write_text(json.dumps(state))
        os.replace(tmp, self.heartbeat_path)

    def record(self, iteration, seconds, started_monotonic_s):
        """One line per iteration: id, wall seconds, start on the host's CLOCK_MONOTONIC (the
        same clock in every process and network namespace, so the launcher and the accuracy
        run can time the fault's onset against their own events)."""
        self.times_file.write(f"{iteration} {seconds:.6f} {started_monotonic_s:.6f}\n")


class ExternalFaultHandshake:
    """Asks the launcher to apply a fault from outside (cgroup, tc) and waits until it has."""

    def __init__(self, work_dir, rank):
        self.request_path = Path(work_dir) / f"onset-request-r{rank}"
        self.applied_path = Path(work_dir) / f"onset-applied-r{rank}"

    def __call__(self, note=None):
        """Writes `PID [JSON note]` (atomically) and waits for the launcher's answer."""
        tmp = self.request_path.with_name(self.request_path.name + ".tmp")
        tmp.write_text(str(os.getpid()) + (" " + json.dumps(note) if note else ""))
        os.replace(tmp, self.request_path)
        deadline = time.monotonic() + EXTERNAL_FAULT_TIMEOUT_S
        while not self.applied_path.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the launcher did not apply the external fault in time")
            time.sleep(0.005)


def trace_exporter(out_dir, rank):
    def export(prof):
        final = Path(out_dir) / f"rank-{rank}.json"
        tmp = final.with_suffix(".json.tmp")
        prof.export_chrome_trace(str(tmp))
        os.replace(tmp, final)
    return export


def write_meta(config, rank, step_start_unix_ns):
    """rank-<r>.meta.json: who this rank is and how its trace's clock maps to the host's (for
    aligning the node agent's samples), in the layout of the online package's meta files."""
    meta = {"rank": rank, "world_size": config["world_size"], "pid": os.getpid(),
            "host": socket.gethostname(),
            "step_start_unix_ns": {str(i): ns for i, ns in sorted(step_start_unix_ns.items())}}
    final = Path(config["out_dir"]) / f"rank-{rank}.meta.json"
    tmp = final.with_suffix(".tmp")
    tmp.write_text(json.dumps(meta))
    os.replace(tmp, final)


def train(config, rank):
    torch.set_num_threads(1)
    torch.manual_seed(config["seed"])
    world_size = config["world_size"]
    dist.init_process_group("gloo", rank=rank, world_size=world_size)

    is_faulty = rank in config["fault_ranks"]
    fault = faults.make_fault(config["scenario"], config["fault_params"], rank=rank,
                              work_dir=config["work_dir"]) if is_faulty else faults.NoFault()
    fault.prepare(ExternalFaultHandshake(config["work_dir"], rank))

    dataset = SyntheticDataset(config["seed"], rank, record_reader=fault.record_reader())
    sampler = ResizableBatchSampler(config["iters"], lambda: fault.batch_size(BASE_BATCH_SIZE),
                                    config["seed"], rank)
    loader = DataLoader(dataset, batch_sampler=sampler, num_workers=0,
                        collate_fn=fault.wrap_collate(collate_samples))
    model = DistributedDataParallel(RecommenderMlp())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    progress = Progress(config["work_dir"], rank)
    progress.beat(-1, "ready")

    profile_start = config["profile_start"]
    prof_schedule = schedule(wait=profile_start, warmup=1, active=config["profile_iters"], repeat=1)
    batches = iter(loader)
    step_start_unix_ns = {}
    with profile(activities=[ProfilerActivity.CPU], schedule=prof_schedule,
                 on_trace_ready=trace_exporter(config["out_dir"], rank)) as prof:
        for iteration in range(config["iters"]):
            # torch 1.13: step() opens "ProfilerStep#<iteration>" and iteration i is recorded when
            # wait <= i < wait + active (see TRACE-FORMAT.md section 9).
            prof.step()
            # Anchors the trace's relative clock to the host's: ProfilerStep#N opened just now.
            if profile_start <= iteration < profile_start + config["profile_iters"] + 1:
                step_start_unix_ns[iteration] = time.time_ns()
            check_step_label(prof, iteration)
            if iteration == config["onset_iter"]:
                fault.activate()
            started_monotonic_s = time.monotonic()
            started_s = time.perf_counter()
            progress.beat(iteration, "data", started_monotonic_s)
            dense, tokens, labels = next(batches)
            progress.beat(iteration, "forward", started_monotonic_s)
            fault.in_step(iteration)
            loss = loss_fn(model(dense, tokens), labels)
            progress.beat(iteration, "backward", started_monotonic_s)
            optimizer.zero_grad()
            loss.backward()
            progress.beat(iteration, "optimizer", started_monotonic_s)
            optimizer.step()
            progress.record(iteration, time.perf_counter() - started_s, started_monotonic_s)
        progress.beat(config["iters"], "done")
    write_meta(config, rank, step_start_unix_ns)
    fault.close()
    dist.barrier()
    dist.destroy_process_group()


def check_step_label(prof, iteration):
    label = getattr(getattr(prof, "step_rec_fn", None), "name", None)
    if label is not None and label != f"ProfilerStep#{iteration}":
        raise RuntimeError(f"profiler labels iteration {iteration} as {label}: "
                           "this torch numbers profiler steps differently")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--rank", type=int, required=True)
    args = parser.parse_args()
    config = json.loads(Path(args.config).read_text())
    train(config, args.rank)


if __name__ == "__main__":
    main()

"""One rank of real DDP training (gloo, CPU) with an optional injected fault.

Started by launch.py as `/usr/bin/python3 train.py --config CONFIG --rank R`. The config (JSON,
written by the launcher) names the scenario, the faulty ranks and the schedule. The rank:
- trains a model (config "model": "mlp", an embedding bag + MLP, "transformer", a small
  transformer encoder over token sequences, or "cnn", a small conv net with batch norm) on
  batches from a real DataLoader over a map-style Dataset (config "num_workers": 0 loads in
  the training process, N > 0 in N worker processes), with "accum_steps" micro-batches per
  optimizer step (gradient accumulation: DDP all-reduces only on the last, the others run
  under no_sync()),
- profiles iterations [profile_start, profile_start + profile_iters) and writes the profiler's
  export to OUT/rank-<r>.json; with config "stack_hz" > 0, also the training thread's Python
  stack sampled over the same window (python/eroica/stack_sampler.py, as `eroica run` does) to
  OUT/rank-<r>.stacks.json, from which diagnose names a finding's code location,
- reports progress in BEATS/heartbeat-r<r>.json (iteration id and phase; config "beat_dir", in
  memory, else WORK) and appends its per-iteration wall times to BEATS/iters-r<r>.txt,
- turns its fault on at the onset iteration (faults.py); faults applied from outside the process
  (a CPU quota, a link throttle) go through a handshake with the launcher so that the onset is exact;
  the data faults are on for the batches of the onset iteration on, as the batch sampler numbers
  them (the batches are made ahead, in the worker processes when there are workers),
- writes what its fault measured of itself (faults.NoFault.report) to WORK/fault-report-r<r>.json
  and each iteration's forward and optimizer-step wall times to WORK/own-work-r<r>.json.
"""

import argparse
import contextlib
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, schedule
from torch.utils.data import DataLoader, Dataset

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent / "python"))
# The stack sampler's native walker, where the build beside the binary made it (python/native/),
# as `eroica run` puts it on the path.
NATIVE_DIR = Path(os.environ.get("EROICA_BIN") or Path(__file__).resolve().parent.parent / "build" / "eroica").parent
if (NATIVE_DIR / "python-native").is_dir():
    sys.path.insert(2, str(NATIVE_DIR / "python-native"))
import faults  # noqa: E402
from eroica import loader_workers, stack_sampler  # noqa: E402  (no hooks: the samplers only)

DENSE_FEATURES = 256
TOKENS_PER_SAMPLE = 16
VOCAB_SIZE = 16384  # the embedding table's gradient (4 MiB) makes the all-reduce matter
EMBEDDING_DIM = 64
HIDDEN_DIM = 256
NUM_CLASSES = 10
BASE_BATCH_SIZE = 32
EXTERNAL_FAULT_TIMEOUT_S = 30.0
MODELS = ("mlp", "transformer", "cnn")
# The transformer: tokens per sample by default, the widest sequence it accepts, its sizes,
# small because this torch's CPU matmuls are slow (~1 GFLOP/s on one thread): ~40 ms forward +
# backward per batch on an idle core. Its embedding table has the MLP's gradient bytes (4 MiB).
TRANSFORMER_SEQ_LEN = 16
TRANSFORMER_MAX_SEQ_LEN = 256
TRANSFORMER_DIM = 32
TRANSFORMER_HEADS = 2
TRANSFORMER_FF_DIM = 64
TRANSFORMER_LAYERS = 2
TRANSFORMER_VOCAB_ROWS = 2 * VOCAB_SIZE
STACK_MAX_SAMPLES = 20000


def default_seq_len(model):
    return TRANSFORMER_SEQ_LEN if model == "transformer" else TOKENS_PER_SAMPLE


class SyntheticDataset(Dataset):
    """Samples from a seeded generator, normalised per sample: a stand-in for decode + augment.

    A sample's key is (index, tokens per sample, fault on) from FaultAwareBatchSampler. With
    the fault on, `fault.in_getitem` runs first and the slow-storage fault's reader supplies
    the dense features from disk."""

    def __init__(self, seed, rank, fault):
        self.seed = seed
        self.rank = rank
        self.fault = fault
        self.record_reader = fault.record_reader()

    def __len__(self):
        return 1 << 30

    def __getitem__(self, key):
        index, seq_len, on = key
        self.fault.in_getitem(on)
        generator = torch.Generator().manual_seed((self.seed * 1_000_003 + self.rank) * 1_000_033 + index)
        if on and self.record_reader is not None:
            record = self.record_reader.read_record(index)
            dense = torch.frombuffer(bytearray(record[:DENSE_FEATURES]), dtype=torch.uint8).float()
        else:
            dense = torch.randn(DENSE_FEATURES, generator=generator)
        dense = (dense - dense.mean()) / (dense.std() + 1e-6)
        tokens = torch.randint(0, VOCAB_SIZE, (seq_len,), generator=generator)
        label = int(dense[:NUM_CLASSES].argmax())
        return dense, tokens, label, on


class Collate:
    """Stacks the samples; `fault.in_collate` first (in a worker process when there are workers)."""

    def __init__(self, fault):
        self.fault = fault

    def __call__(self, samples):
        self.fault.in_collate(samples[0][3] if samples else False)
        dense = torch.stack([s[0] for s in samples])
        tokens = torch.stack([s[1] for s in samples])
        labels = torch.tensor([s[2] for s in samples], dtype=torch.long)
        return dense, tokens, labels


class FaultAwareBatchSampler:
    """Yields `iters` x `micro_batches` batches of sample keys (index, tokens per sample, on).
    `on` is whether the batch belongs to an iteration from `onset_iter` on, on a faulty rank:
    it travels with the batch, so the fault acts on exactly those batches even when worker
    processes make them ahead of time. The batch size and the sequence length are asked of
    the fault per batch (the imbalance faults)."""

    def __init__(self, iters, micro_batches, fault, faulty, onset_iter, seq_len, seed, rank):
        self.iters = iters
        self.micro_batches = micro_batches
        self.fault = fault
        self.faulty = faulty
        self.onset_iter = onset_iter
        self.seq_len = seq_len
        self.generator = torch.Generator().manual_seed(seed * 7919 + rank)

    def __len__(self):
        return self.iters * self.micro_batches

    def __iter__(self):
        for batch in range(len(self)):
            on = self.faulty and batch // self.micro_batches >= self.onset_iter
            size = self.fault.batch_size(BASE_BATCH_SIZE, on)
            seq_len = self.fault.seq_len(self.seq_len, on)
            indices = torch.randint(0, 1 << 30, (size,), generator=self.generator).tolist()
            yield [(index, seq_len, on) for index in indices]


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


class TinyTransformer(nn.Module):
    """Token embeddings + learned positions -> a 2-layer transformer encoder -> mean over the
    sequence, with the dense features, -> class logits. Its cost grows with the sequence
    (attention quadratically), its gradient bytes do not."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(TRANSFORMER_VOCAB_ROWS, TRANSFORMER_DIM)
        self.position = nn.Parameter(torch.zeros(TRANSFORMER_MAX_SEQ_LEN, TRANSFORMER_DIM))
        layer = nn.TransformerEncoderLayer(TRANSFORMER_DIM, TRANSFORMER_HEADS, TRANSFORMER_FF_DIM,
                                           dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, TRANSFORMER_LAYERS, enable_nested_tensor=False)
        self.dense = nn.Linear(DENSE_FEATURES, TRANSFORMER_DIM)
        self.head = nn.Linear(2 * TRANSFORMER_DIM, NUM_CLASSES)

    def forward(self, dense, tokens):
        x = self.embedding(tokens) + self.position[:tokens.shape[1]]
        x = self.encoder(x).mean(dim=1)
        return self.head(torch.cat([x, self.dense(dense)], dim=1))


class SmallConvNet(nn.Module):
    """The dense features as a 1x16x16 image -> two conv + batch-norm + ReLU blocks -> pooled,
    with the token embedding bag, -> class logits. Batch norm keeps running statistics, which
    DDP broadcasts from rank 0 before every forward: a second collective in each step, besides
    the gradients' all-reduce."""

    IMAGE_SIDE = 16

    def __init__(self):
        super().__init__()
        assert self.IMAGE_SIDE * self.IMAGE_SIDE == DENSE_FEATURES
        self.embedding = nn.EmbeddingBag(VOCAB_SIZE, EMBEDDING_DIM, mode="mean")
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(32 + EMBEDDING_DIM, NUM_CLASSES)

    def forward(self, dense, tokens):
        image = dense.view(-1, 1, self.IMAGE_SIDE, self.IMAGE_SIDE)
        return self.head(torch.cat([self.features(image).flatten(1), self.embedding(tokens)], dim=1))


def make_model(name):
    if name == "transformer":
        return TinyTransformer()
    if name == "cnn":
        return SmallConvNet()
    if name == "mlp":
        return RecommenderMlp()
    raise ValueError(f"unknown model {name!r} (one of {', '.join(MODELS)})")


class Progress:
    """Heartbeat (iteration id + phase, replaced atomically) and per-iteration wall times, both
    written every step by the training thread, so both in memory (`beat_dir`) where there is one:
    an append to a file on disk can wait behind other writers (a compile beside the run), on the
    critical path of the rank that waits."""

    def __init__(self, work_dir, rank, beat_dir=None):
        folder = Path(beat_dir or work_dir)
        self.heartbeat_path = folder / f"heartbeat-r{rank}.json"
        self.times_file = open(folder / f"iters-r{rank}.txt", "a", buffering=1)
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


class TraceExporter:
    """Writes the window's trace as `eroica run` does (python/eroica/finish.py): on a background
    thread at nice 10, while training goes on. Written in the training thread at full priority,
    the first ranks out of the window took the cores from a rank still in its last step: on 2
    shared cores one healthy rank's last optimizer step took 228-251 ms against 2 ms."""

    def __init__(self, out_dir, rank):
        self.final = Path(out_dir) / f"rank-{rank}.json"
        self.thread = None
        self.error = None

    def __call__(self, prof):
        self.thread = threading.Thread(target=self._export, args=(prof,), name="trace-export", daemon=True)
        self.thread.start()

    def _export(self, prof):
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
        except (AttributeError, OSError):
            pass
        try:
            tmp = self.final.with_suffix(".json.tmp")
            prof.export_chrome_trace(str(tmp))
            os.replace(tmp, self.final)
        except Exception as e:  # reported by join(), in the training thread
            self.error = e

    def join(self):
        if self.thread is not None:
            self.thread.join()
        if self.error is not None:
            raise RuntimeError(f"trace export failed: {self.error}") from self.error


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


def write_own_work(config, rank, forward_s, optimizer_s, data_s):
    """own-work-r<r>.json: each iteration's forward and optimizer-step wall time, the rank's own
    work with no collective in it (DDP all-reduces inside backward), from which the launcher
    tells what a slower rank lost (the cost of a CPU quota); and its wait for the DataLoader's
    batches (did a loader fault make it wait at all)."""
    path = Path(config["work_dir"]) / f"own-work-r{rank}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"forward_s": [round(t, 6) for t in forward_s],
                               "optimizer_s": [round(t, 6) for t in optimizer_s],
                               "data_s": [round(t, 6) for t in data_s]}))
    os.replace(tmp, path)


def write_fault_report(config, rank, fault):
    report = fault.report()
    if report:
        path = Path(config["work_dir"]) / f"fault-report-r{rank}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(report))
        os.replace(tmp, path)


class WindowStacks:
    """The training thread's stack sampled over the profiled window (stack_hz 0: no samples,
    only the window's CPU reading, as `eroica run` writes it), and the DataLoader worker
    processes' stacks over the same window (loader_workers.py; made before the loader's
    iterator starts its workers, as `eroica run`'s hooks do)."""

    def __init__(self, config, rank):
        self.hz = float(config.get("stack_hz", 0) or 0)
        self.out_dir = config["out_dir"]
        self.rank = rank
        self.sampler = None
        self.start_unix_ns = None
        self.loader_window = 0
        self.stopped = False
        if self.hz > 0:
            from torch.utils.data._utils import worker

            target = loader_workers.worker_target(worker._worker_loop, config["work_dir"])
            if target is not None:
                worker._worker_loop = target

    def step(self, iteration, first, last):
        if iteration == first:
            self.start_unix_ns = time.time_ns()
            self.sampler = stack_sampler.StackSampler(threading.get_ident(), self.hz, STACK_MAX_SAMPLES,
                                                        other_threads=True)
            self.sampler.start()
            control = loader_workers.control() if self.hz > 0 else None
            if control is not None:
                self.loader_window = control.begin(self.rank, self.hz, STACK_MAX_SAMPLES,
                                                   self.start_unix_ns + int(600e9))
        if self.sampler is not None and first <= iteration <= last:
            self.sampler.mark_step(iteration)

    def stop(self):
        """Ends the samples and the CPU readings, the loader workers' too (finish() writes them)."""
        if self.sampler is not None and not self.stopped:
            self.stopped = True
            self.sampler.stop()
            control = loader_workers.control()
            if control is not None and self.loader_window:
                control.end()

    def finish(self):
        if self.sampler is not None:
            self.stop()
            workers = []
            control = loader_workers.control()
            if control is not None and self.loader_window:
                workers = control.collect(self.loader_window)
            self.sampler.write(self.out_dir, self.rank, self.start_unix_ns, workers)
            self.sampler = None


class TrainingState:
    """What a fault may use after a step (faults.py after_step): called, the state a checkpoint
    saves; `model`, the model without its DDP wrapper, and `last_inputs`, the step's last
    (dense, tokens), for an evaluation pass."""

    def __init__(self, model, optimizer):
        self._ddp = model
        self._optimizer = optimizer
        self.model = model.module
        self.last_inputs = None

    def __call__(self):
        return {"model": self._ddp.state_dict(), "optimizer": self._optimizer.state_dict()}


def train(config, rank):
    torch.set_num_threads(1)
    # The transformer's locally accumulated gradients left subnormal floats on one rank, whose
    # in-place adds and multiplies then ran 10-100x slower than its peers' (aten::add_ 3.7 ms
    # against 32-75 us): a real slowdown no fault put there, which eroica rightly reported on
    # "healthy" runs. Flushed to zero, a healthy run is healthy.
    torch.set_flush_denormal(True)
    torch.manual_seed(config["seed"])
    world_size = config["world_size"]
    model_name = config.get("model", "mlp")
    num_workers = int(config.get("num_workers", 0))
    accum_steps = max(1, int(config.get("accum_steps", 1)))
    seq_len = int(config.get("seq_len") or default_seq_len(model_name))
    dist.init_process_group("gloo", rank=rank, world_size=world_size)

    is_faulty = rank in config["fault_ranks"]
    fault = faults.make_fault(config["scenario"], config["fault_params"], rank=rank,
                              work_dir=config["work_dir"],
                              fault_ranks=config["fault_ranks"]) if is_faulty else faults.NoFault()
    fault.prepare(ExternalFaultHandshake(config["work_dir"], rank))

    dataset = SyntheticDataset(config["seed"], rank, fault)
    sampler = FaultAwareBatchSampler(config["iters"], accum_steps, fault, is_faulty,
                                     config["onset_iter"], seq_len, config["seed"], rank)
    loader = DataLoader(dataset, batch_sampler=sampler, num_workers=num_workers,
                        collate_fn=Collate(fault))
    model = DistributedDataParallel(make_model(model_name))
    fault.attach(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    progress = Progress(config["work_dir"], rank, config.get("beat_dir"))
    progress.beat(-1, "ready")

    training_state = TrainingState(model, optimizer)

    profile_start = config["profile_start"]
    profile_last = profile_start + config["profile_iters"] - 1
    prof_schedule = schedule(wait=profile_start, warmup=1, active=config["profile_iters"], repeat=1)
    stacks = WindowStacks(config, rank)  # before the loader's iterator starts its workers
    batches = iter(loader)
    step_start_unix_ns = {}
    forward_s, optimizer_s, data_s = [], [], []
    exporter = TraceExporter(config["out_dir"], rank)
    with profile(activities=[ProfilerActivity.CPU], schedule=prof_schedule, on_trace_ready=exporter) as prof:
        for iteration in range(config["iters"]):
            # torch 1.13: step() opens "ProfilerStep#<iteration>" and iteration i is recorded when
            # wait <= i < wait + active (see TRACE-FORMAT.md section 9). The step after the window
            # starts the trace's export (TraceExporter: seconds for a transformer on a loaded
            # machine, on its own thread): the heartbeat says so, so that the launcher does not
            # take a slow step for a hang.
            if iteration == profile_last + 1:
                progress.beat(iteration - 1, "export")
                # The window's CPU reading ends with its last step, before the profiler stops:
                # stopping collects the trace on this thread (on a CPU or queued for one, never
                # asleep), which took twice the window itself on 4 ranks sharing 2 cores (1.0 s
                # after a 0.5 s window) and buried every rank's sleep under it. eroica's capture
                # stops its sampler before the profiler too (capture.py).
                stacks.stop()
            prof.step()
            # The window's last step closed inside prof.step() just now: the sampler stops and
            # writes outside it, as eroica's own capture does, never inside the profiled step.
            if iteration == profile_last + 1:
                stacks.finish()
            # Anchors the trace's relative clock to the host's: ProfilerStep#N opened just now.
            if profile_start <= iteration < profile_start + config["profile_iters"] + 1:
                step_start_unix_ns[iteration] = time.time_ns()
            stacks.step(iteration, profile_start, profile_last)
            check_step_label(prof, iteration)
            if iteration == config["onset_iter"]:
                fault.activate()
            started_monotonic_s = time.monotonic()
            started_s = time.perf_counter()
            forward_s.append(0.0)
            data_s.append(0.0)
            for micro in range(accum_steps):
                progress.beat(iteration, "data", started_monotonic_s)
                data_started_s = time.perf_counter()
                dense, tokens, labels = next(batches)
                training_state.last_inputs = (dense, tokens)
                data_s[-1] += time.perf_counter() - data_started_s
                progress.beat(iteration, "forward", started_monotonic_s)
                if micro == 0:
                    fault.in_step(iteration)
                # DDP all-reduces the gradients in the last micro-batch's backward only.
                last = micro == accum_steps - 1
                with (contextlib.nullcontext() if last else model.no_sync()):
                    forward_started_s = time.perf_counter()
                    loss = loss_fn(model(dense, tokens), labels)
                    forward_s[-1] += time.perf_counter() - forward_started_s
                    if accum_steps > 1:
                        loss = loss / accum_steps
                    progress.beat(iteration, "backward", started_monotonic_s)
                    if micro == 0:
                        optimizer.zero_grad()
                    loss.backward()
            progress.beat(iteration, "optimizer", started_monotonic_s)
            optimizer_started_s = time.perf_counter()
            optimizer.step()
            optimizer_s.append(time.perf_counter() - optimizer_started_s)
            fault.after_step(iteration, training_state)
            progress.record(iteration, time.perf_counter() - started_s, started_monotonic_s)
        progress.beat(config["iters"], "done")
    exporter.join()
    stacks.finish()
    write_meta(config, rank, step_start_unix_ns)
    write_fault_report(config, rank, fault)
    write_own_work(config, rank, forward_s, optimizer_s, data_s)
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

"""The testbed's faults: one real mechanism each, and the scenarios that inject them.

A fault object lives in the faulty rank's training process (train.py). It is inert until
`activate()` is called at the onset iteration, then acts through hooks the training step calls:
`in_step`, `after_step`. The data hooks (`batch_size`, `seq_len`, `in_getitem`, `in_collate`,
`record_reader`) get `on`: whether the batch is one of the fault's, decided by the batch
sampler from the batch's own iteration number, because with DataLoader worker processes the
batch is made ahead of time, in another process that never sees `activate()`. Faults that act from outside the
process (a cgroup CPU quota, a tc link throttle) ask the launcher at the onset through the
handshake given to `prepare`; the launcher applies them with `apply_external(host, rank, pid)`,
where `host` offers `throttle_cpu(rank, pid, quota_pct)` and `throttle_link(rank, rate_mbit)`.

Each fault names the lines where it spends its time with a `# site:NAME` comment and lists
the names in `sites`: `site_lines` finds them, so the truth of a run can say which `file:line`
a finding's code location should name (for the lines as they were when the run was made).

This module needs no torch, so the launcher and the unit tests import it cheaply.
"""

import gc
import json
import mmap
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple


class NoFault:
    """The healthy rank: every hook is the identity."""

    name = "healthy"
    category = None
    external = False
    needs_network_namespaces = False
    sites = ()  # the `# site:NAME` markers of the lines where the fault spends its time

    def __init__(self, params=None, rank=0, work_dir=None):
        self.params = dict(params or {})
        self.rank = rank
        self.work_dir = work_dir
        self.active = False
        self._request_external = None

    def prepare(self, request_external: Callable[[], None]):
        """Called once at start-up; `request_external()` blocks until the launcher applied us."""
        self._request_external = request_external

    def activate(self):
        self.active = True
        if self.external:
            note = self.external_note()
            if note:
                self._request_external(note)
            else:
                self._request_external()

    def external_note(self) -> Optional[dict]:
        """What the rank tells the launcher with its request (JSON-able), or None."""
        return None

    def is_on(self, on: Optional[bool]) -> bool:
        """A data hook's `on`, or (called without one, in the training process) `active`."""
        return self.active if on is None else bool(on)

    def batch_size(self, base_batch_size: int, on: Optional[bool] = None) -> int:
        return base_batch_size

    def seq_len(self, base_seq_len: int, on: Optional[bool] = None) -> int:
        return base_seq_len

    def in_getitem(self, on: Optional[bool] = None):
        """In Dataset.__getitem__: in a DataLoader worker process when there are workers."""

    def in_collate(self, on: Optional[bool] = None):
        """In the collate function: in a DataLoader worker process when there are workers."""

    def record_reader(self):
        return None

    def in_step(self, iteration: int):
        pass

    def after_step(self, iteration: int, training_state: Callable[[], dict]):
        """After the optimizer step; `training_state()` returns what a checkpoint saves."""

    def attach(self, model):
        """Once, with the DDP-wrapped model, before training starts."""

    def report(self) -> dict:
        """What the rank measured of its own fault (JSON-able), for the run's truth."""
        return {}

    def apply_external(self, host, rank: int, pid: int, note: Optional[dict] = None):
        """Applies the fault to process `pid`; `note` is the rank's external_note()."""
        raise NotImplementedError(f"{self.name} is not applied from outside the process")

    def close(self):
        pass


class DataloaderStall(NoFault):
    """The rank's collate_fn sleeps, like a collate that waits on a lock or a remote service."""

    name = "dataloader_stall"
    category = "dataloader"

    sites = ("stall",)

    def __init__(self, params=None, rank=0, work_dir=None):
        super().__init__(params, rank, work_dir)
        self.stalled_s = 0.0  # in this process (the training process without loader workers)
        self.iterations_on = 0

    def in_collate(self, on=None):
        if self.is_on(on):
            started = time.monotonic()
            time.sleep(float(self.params.get("stall_ms", 60)) / 1000.0)  # site:stall
            self.stalled_s += time.monotonic() - started

    def in_step(self, iteration):
        self.iterations_on += self.active

    def report(self):
        if not self.iterations_on or not self.stalled_s:
            return {}
        return {"stall_ms_per_iter": round(1e3 * self.stalled_s / self.iterations_on, 1)}


class LoaderWorkersSlow(NoFault):
    """Every sample costs its DataLoader worker `getitem_ms` of waiting (a remote read, a slow
    decode library) and every batch `collate_ms` more: with `num_workers` workers the loader
    delivers a batch every (batch × getitem_ms + collate_ms) / num_workers, and when that is
    longer than the step, the training process waits in the DataLoader iterator's `__next__`
    while the workers' prefetch queue is empty."""

    name = "loader_workers_slow"
    category = "dataloader"
    sites = ("worker",)

    def in_getitem(self, on=None):
        if self.is_on(on):
            time.sleep(float(self.params.get("getitem_ms", 12)) / 1000.0)  # site:worker

    def in_collate(self, on=None):
        if self.is_on(on) and float(self.params.get("collate_ms", 0)) > 0:
            time.sleep(float(self.params.get("collate_ms", 0)) / 1000.0)  # site:worker


class LoaderWorkersBusy(NoFault):
    """Every sample costs its DataLoader worker `getitem_cpu_ms` of CPU (a tokenizer, a decode, an
    augmentation written in Python): measured on the worker's own thread clock, so preemption does
    not shorten the work. Workers that keep up with the step still take the cores the training
    threads of every rank on the node need."""

    name = "loader_workers_busy"
    category = "dataloader"
    sites = ("worker_cpu",)

    def in_getitem(self, on=None):
        if self.is_on(on):
            spin_cpu(float(self.params.get("getitem_cpu_ms", 1.5)) / 1000.0)


def spin_cpu(seconds: float) -> int:
    """Pure-Python work until this thread has run `seconds` on a CPU; returns its count."""
    until = time.thread_time() + seconds
    count = 0
    while time.thread_time() < until:  # site:worker_cpu
        count += 1  # site:worker_cpu
    return count


class SlowStorage(NoFault):
    """Each sample's dense features are read from a file on disk, bypassing the page cache
    (O_DIRECT; posix_fadvise(DONTNEED) where O_DIRECT is refused), so every batch really hits
    the storage device: `record_kib` per sample from a `file_mib` file."""

    name = "slow_storage"
    category = "dataloader"
    sites = ("storage",)

    def __init__(self, params=None, rank=0, work_dir=None):
        super().__init__(params, rank, work_dir)
        self.record_bytes = int(self.params.get("record_kib", 1024)) * 1024
        self.file_bytes = int(self.params.get("file_mib", 64)) * 1024 * 1024
        self.path = Path(work_dir or "/var/tmp") / f"samples-r{rank}.bin"
        self.fd = None
        self.uses_o_direct = False
        self.buffer = None

    def record_reader(self):
        return self

    def prepare(self, request_external):
        super().prepare(request_external)
        self._create_file()
        self._open()

    def _create_file(self):
        chunk = os.urandom(1024 * 1024)
        with open(self.path, "wb") as f:
            for _ in range(self.file_bytes // len(chunk)):
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())

    def _open(self):
        self.buffer = mmap.mmap(-1, self.record_bytes)  # page-aligned, as O_DIRECT requires
        try:
            self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECT)
            os.preadv(self.fd, [memoryview(self.buffer)], 0)
            self.uses_o_direct = True
        except OSError:
            if self.fd is not None:
                os.close(self.fd)
            self.fd = os.open(self.path, os.O_RDONLY)

    def read_record(self, index: int) -> bytes:
        records = self.file_bytes // self.record_bytes
        offset = (index % records) * self.record_bytes
        if not self.uses_o_direct:
            os.posix_fadvise(self.fd, offset, self.record_bytes, os.POSIX_FADV_DONTNEED)
        view = memoryview(self.buffer)
        read = os.preadv(self.fd, [view], offset)  # site:storage
        return bytes(view[:min(read, 4096)])

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self.path.unlink(missing_ok=True)


class CpuThrottle(NoFault):
    """The launcher moves the rank's process (all threads) into a cgroup with a CPU quota of
    `quota_pct` percent of one core; or, with `share` > 0, of `share` times the CPU the rank
    was getting before the onset (it measures its own CPU time from iteration
    BASELINE_FROM_ITER on), so that the throttle bites by the same factor whatever the load of
    a shared machine: a fixed 25 % is no throttle at all when 16 busy processes share 2 cores."""

    name = "cpu_throttle"
    category = "compute"
    external = True
    BASELINE_FROM_ITER = 3

    def __init__(self, params=None, rank=0, work_dir=None):
        super().__init__(params, rank, work_dir)
        self._baseline = None  # (process CPU s, monotonic s) at BASELINE_FROM_ITER

    def in_step(self, iteration):
        if self._baseline is None and not self.active and iteration >= self.BASELINE_FROM_ITER:
            self._baseline = (time.process_time(), time.monotonic())

    def measured_cpu_pct(self):
        """The rank's CPU use since the baseline, in percent of one core (None: not measured)."""
        if self._baseline is None:
            return None
        wall = time.monotonic() - self._baseline[1]
        return 100.0 * (time.process_time() - self._baseline[0]) / wall if wall > 0 else None

    def external_note(self):
        """The CPU the rank was getting: the quota's base with `share`, and in any case the
        record of whether a fixed quota was below it at all."""
        measured = self.measured_cpu_pct()
        return {"measured_cpu_pct": round(measured, 2)} if measured is not None else None

    def quota_pct(self, note=None):
        share = float(self.params.get("share", 0))
        measured = (note or {}).get("measured_cpu_pct")
        if share > 0 and measured:
            return max(1.0, share * float(measured))
        return float(self.params.get("quota_pct", 25))

    def apply_external(self, host, rank, pid, note=None):
        host.throttle_cpu(rank, pid, quota_pct=self.quota_pct(note))


class GcStorm(NoFault):
    """The rank builds `cycles_per_step` reference cycles per step (self-referencing records
    that only the cyclic collector can free), with the gen-0 threshold lowered to `gc_threshold`
    and a full `gc.collect()` every step (the "free memory every step" anti-pattern), so the
    collector keeps walking every object in the process."""

    name = "gc_storm"
    category = "host"
    sites = ("gc",)

    def activate(self):
        self.saved_thresholds = gc.get_threshold()
        gc.set_threshold(int(self.params.get("gc_threshold", 100)), 5, 5)
        super().activate()

    def in_step(self, iteration):
        if not self.active:
            return
        for i in range(int(self.params.get("cycles_per_step", 20000))):  # site:gc
            record = {"step": iteration, "item": i}  # site:gc
            record["self"] = record  # site:gc
        if int(self.params.get("full_collect", 1)):
            gc.collect()  # site:gc

    def close(self):
        if self.active:
            gc.set_threshold(*self.saved_thresholds)


class PythonHotLoop(NoFault):
    """A pure-Python loop in the training step (bookkeeping gone quadratic) costing `loop_ms`
    of CPU time; its iteration count is calibrated on CPU time at start-up, so the work is fixed
    whatever the machine's load. `sleep_ms` adds a sleep in the step (a blocking call): wall
    time that, unlike the loop, a loaded machine does not stretch.

    `step_share` (> 0, with `loop_ms` 0) sizes the loop by the step instead: it runs for
    step_share / (1 - step_share) of the rank's mean wall time per iteration before the onset
    (measured from BASELINE_FROM_ITER on), so that it takes that share of the faulty step
    whatever the load: "light" Python of 10-20 % of the step is light on any machine.

    `in_forward` 1 runs it in a forward hook of the wrapped model instead (activation statistics
    or a debug check in a hook): inside DDP's forward, once per forward (each micro-batch), where
    the profiler names the time by the forward's range and not by a program point between ops."""

    name = "python_hot_loop"
    category = "host"
    sites = ("loop",)
    BASELINE_FROM_ITER = 3

    def __init__(self, params=None, rank=0, work_dir=None):
        super().__init__(params, rank, work_dir)
        self._baseline = None  # (iteration, monotonic s) at BASELINE_FROM_ITER
        self._last_iteration = None
        self.loop_wall_s = None  # the step-share loop's wall-time budget per step
        self._loop_walls = []

    def prepare(self, request_external):
        super().prepare(request_external)
        loop_ms = float(self.params.get("loop_ms", 40))
        self.loop_count = calibrate_loop_count(loop_ms) if loop_ms > 0 else 0
        self.sleep_s = float(self.params.get("sleep_ms", 0)) / 1e3

    def activate(self):
        share = float(self.params.get("step_share", 0))
        if share > 0 and self._baseline is not None and self._last_iteration is not None:
            iterations = self._last_iteration + 1 - self._baseline[0]
            step_s = (time.monotonic() - self._baseline[1]) / max(1, iterations)
            self.loop_wall_s = min(share, 0.9) / (1.0 - min(share, 0.9)) * step_s
        super().activate()

    def attach(self, model):
        if int(self.params.get("in_forward", 0)):
            model.module.register_forward_hook(self._in_forward)

    def _in_forward(self, module, inputs, output):
        if self.active:
            self._run()  # site:loop

    def in_step(self, iteration):
        self._last_iteration = iteration
        if self._baseline is None and not self.active and iteration >= self.BASELINE_FROM_ITER:
            self._baseline = (iteration, time.monotonic())
        if self.active and not int(self.params.get("in_forward", 0)):
            self._run()

    def _run(self):
        started = time.monotonic()
        if self.loop_count:
            python_busy_loop(self.loop_count)
        if self.loop_wall_s:
            python_busy_loop_for(self.loop_wall_s)
        if self.sleep_s > 0:
            time.sleep(self.sleep_s)
        self._loop_walls.append(time.monotonic() - started)

    def report(self):
        out = {}
        if self.loop_wall_s:
            out["loop_wall_budget_ms"] = round(1e3 * self.loop_wall_s, 2)
        if self._loop_walls:
            out["in_step_wall_ms_mean"] = round(1e3 * sum(self._loop_walls) / len(self._loop_walls), 2)
        return out


def python_busy_loop(count: int) -> int:
    total = 0
    for i in range(count):  # site:loop
        total += (i * i) % 7  # site:loop
    return total


def python_busy_loop_for(seconds: float) -> int:
    """The same loop, for `seconds` of wall time (checked every 1000 iterations)."""
    total, deadline = 0, time.perf_counter() + seconds
    while time.perf_counter() < deadline:  # site:loop
        total += python_busy_loop(1000)  # site:loop
    return total


def calibrate_loop_count(target_ms: float, probe_count: int = 200_000) -> int:
    best_cpu_s = float("inf")
    for _ in range(3):
        started = time.process_time()
        python_busy_loop(probe_count)
        best_cpu_s = min(best_cpu_s, time.process_time() - started)
    per_iteration_s = max(best_cpu_s, 1e-6) / probe_count
    return max(1, int(target_ms / 1000.0 / per_iteration_s))


class BusyThread(NoFault):
    """A thread beside the training loop in the rank's own process (a metrics or logging thread)
    that serializes a snapshot in pure Python for `burst_ms` of every `period_ms`: it holds the
    interpreter lock that the training thread needs back after every op, collective and batch
    hand-over that let it go, so the training thread waits wherever it released it. No line of
    the training thread's is the cause."""

    name = "busy_thread"
    category = "host"
    sites = ("busy_thread",)

    def __init__(self, params=None, rank=0, work_dir=None):
        super().__init__(params, rank, work_dir)
        self._thread = None

    def activate(self):
        super().activate()
        if self._thread is None:
            self._thread = threading.Thread(target=self._serialize, name="testbed-busy-thread", daemon=True)
            self._thread.start()

    def _serialize(self):
        burst_s = float(self.params.get("burst_ms", 20)) / 1e3
        idle_s = max(0.0, float(self.params.get("period_ms", 20)) / 1e3 - burst_s)
        snapshot = {"m%d" % i: [float(j) for j in range(50)] for i in range(200)}
        while True:
            end = time.monotonic() + burst_s
            while time.monotonic() < end:
                json.dumps(snapshot)  # site:busy_thread
            if idle_s > 0:
                time.sleep(idle_s)


class Imbalance(NoFault):
    """The rank is given `batch_factor` times the batch of its peers (rounded to whole samples:
    a fractional factor is that many samples, not its integer part)."""

    name = "imbalance"
    category = "imbalance"

    def batch_size(self, base_batch_size, on=None):
        if self.is_on(on):
            return max(1, int(round(base_batch_size * float(self.params.get("batch_factor", 3)))))
        return base_batch_size


class LongerSequences(NoFault):
    """The rank's samples are `seq_factor` times longer (tokens per sample) than its peers':
    the same calls, the same batch, the same gradient bytes, only bigger activations; its
    optimizer step is the same size as theirs. Meant for the transformer, whose cost grows
    with the sequence."""

    name = "imbalance_seq"
    category = "imbalance"

    def seq_len(self, base_seq_len, on=None):
        if self.is_on(on):
            return int(round(base_seq_len * float(self.params.get("seq_factor", 2))))
        return base_seq_len


class SyncCheckpoint(NoFault):
    """The rank saves a checkpoint synchronously in every step: torch.save of the model's and
    the optimizer's state to a file, flushed and (with `fsync` 1) fsync'ed before the next step
    begins, under a new name then renamed (the usual safe-save pattern)."""

    name = "checkpoint_sync"
    category = "host"
    sites = ("checkpoint",)

    def __init__(self, params=None, rank=0, work_dir=None):
        super().__init__(params, rank, work_dir)
        self.path = Path(work_dir or "/var/tmp") / f"checkpoint-r{rank}.pt"
        self._walls = []
        self.saved_bytes = 0

    def after_step(self, iteration, training_state):
        if not self.active:
            return
        started = time.monotonic()
        self.saved_bytes = save_checkpoint(training_state(), self.path,
                                           fsync=bool(int(self.params.get("fsync", 1))))
        self._walls.append(time.monotonic() - started)

    def report(self):
        if not self._walls:
            return {}
        return {"save_wall_ms_mean": round(1e3 * sum(self._walls) / len(self._walls), 2),
                "checkpoint_bytes": self.saved_bytes}

    def close(self):
        self.path.unlink(missing_ok=True)
        self.path.with_name(self.path.name + ".tmp").unlink(missing_ok=True)


class EvalPass(NoFault):
    """Every `every` steps, after its optimizer step, the rank runs the model's forward on the step's
    last inputs without gradients for `eval_ms` (an evaluation pass or a metric on one rank, as
    jobs do on rank 0): the very ops training calls, from a line its peers never run."""

    name = "eval_pass"
    category = "host"
    sites = ("evaluation",)

    def __init__(self, params=None, rank=0, work_dir=None):
        super().__init__(params, rank, work_dir)
        self.every = max(1, int(self.params.get("every", 4)))
        self.eval_ms = float(self.params.get("eval_ms", 150))
        self.passes = 0

    def after_step(self, iteration, training_state):
        if not self.active or iteration % self.every:
            return
        import torch  # here only: the launcher and the unit tests import this module without torch
        model, inputs = training_state.model, training_state.last_inputs
        deadline = time.perf_counter() + self.eval_ms / 1e3
        model.eval()
        with torch.no_grad():
            while time.perf_counter() < deadline:
                model(*inputs)  # site:evaluation
                self.passes += 1
        model.train()

    def report(self):
        return {"eval_passes": self.passes} if self.passes else {}


def save_checkpoint(state, path: Path, fsync: bool) -> int:
    import torch  # here only: the launcher and the unit tests import this module without torch
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        torch.save(state, f)  # site:checkpoint
        f.flush()  # site:checkpoint
        if fsync:
            os.fsync(f.fileno())  # site:checkpoint
        size = f.tell()  # without fsync, the write can land at the rename below
    os.replace(tmp, path)  # site:checkpoint
    return size


class NetThrottle(NoFault):
    """Every rank runs in its own network namespace behind a veth and a bridge; the launcher
    puts a token-bucket filter (tc tbf, `rate_mbit`) on both directions of the faulty rank's
    link."""

    name = "net_throttle"
    category = "communication"
    external = True
    needs_network_namespaces = True

    def apply_external(self, host, rank, pid, note=None):
        host.throttle_link(rank, rate_mbit=float(self.params.get("rate_mbit", 400)))


class Hang(NoFault):
    """The rank takes a non-reentrant lock it already holds, in the middle of the step, and
    never comes back: its peers wait forever in the gradient all-reduce."""

    name = "hang"
    category = "hang"

    def in_step(self, iteration):
        if self.active:
            lock = threading.Lock()
            lock.acquire()
            lock.acquire()  # blocks forever


class FaultsByRank(NoFault):
    """Several faults in one run, each on its own rank(s): the launcher's view (it applies the
    external ones, `apply_external` picks the rank's part). `parts` is [(fault, ranks)], most
    costly first, as the scenario lists them."""

    name = "faults_by_rank"

    def __init__(self, parts):
        super().__init__({})
        self.parts = parts
        for fault, _ in parts:
            self.params.update(fault.params)
        self.needs_network_namespaces = any(f.needs_network_namespaces for f, _ in parts)

    def part_for(self, rank):
        for fault, ranks in self.parts:
            if rank in ranks:
                return fault
        return None

    def apply_external(self, host, rank, pid, note=None):
        part = self.part_for(rank)
        if part is None:
            raise ValueError(f"rank {rank} has no fault in this run")
        part.apply_external(host, rank, pid, note=note)


@dataclass(frozen=True)
class Scenario:
    name: str
    fault_class: type  # FaultsByRank for a scenario of several faults (see `parts`)
    default_fault_rank: Optional[str]  # "1", "all", "1,3" (one rank per part), or None for no fault
    default_params: Dict[str, float]
    # Run settings the scenario needs unless the run sets them (train.py's model, num_workers).
    settings: Dict[str, object] = field(default_factory=dict)
    # Several faults: the scenarios of the parts, most costly first, one rank each.
    parts: Tuple[str, ...] = ()

    @property
    def category(self):
        if self.parts:
            return SCENARIOS[self.parts[0]].category
        return self.fault_class.category

    @property
    def fault_classes(self):
        return [SCENARIOS[p].fault_class for p in self.parts] if self.parts else [self.fault_class]

    @property
    def needs_network_namespaces(self):
        return any(c.needs_network_namespaces for c in self.fault_classes)

    @property
    def sites(self):
        return tuple(site for c in self.fault_classes for site in c.sites)


SCENARIOS = {s.name: s for s in [
    Scenario("healthy", NoFault, None, {}),
    Scenario("dataloader_stall", DataloaderStall, "1", {"stall_ms": 60}),
    Scenario("dataloader_stall_global", DataloaderStall, "all", {"stall_ms": 40}),
    Scenario("loader_workers_slow", LoaderWorkersSlow, "1", {"getitem_ms": 12, "collate_ms": 0},
             settings={"num_workers": 2}),
    # Every rank's loader workers too slow: a global dataloader cost with worker processes (their
    # CPU readings say they were not queued behind training: they waited on their own).
    Scenario("loader_workers_slow_global", LoaderWorkersSlow, "all", {"getitem_ms": 12, "collate_ms": 0},
             settings={"num_workers": 2}),
    # One rank's loader workers doing CPU work per sample: they may keep up, taking the node's cores.
    Scenario("loader_workers_busy", LoaderWorkersBusy, "1", {"getitem_cpu_ms": 1.5}, settings={"num_workers": 2}),
    Scenario("slow_storage", SlowStorage, "1", {"record_kib": 1024, "file_mib": 64}),
    Scenario("cpu_throttle", CpuThrottle, "1", {"quota_pct": 25, "share": 0}),
    Scenario("gc_storm", GcStorm, "1", {"cycles_per_step": 20000, "gc_threshold": 100,
                                        "full_collect": 1}),
    Scenario("gc_storm_global", GcStorm, "all", {"cycles_per_step": 20000, "gc_threshold": 100,
                                                 "full_collect": 1}),
    Scenario("python_hot_loop", PythonHotLoop, "1", {"loop_ms": 40}),
    Scenario("python_hot_loop_global", PythonHotLoop, "all", {"loop_ms": 40}),
    Scenario("python_light_global", PythonHotLoop, "all", {"loop_ms": 0, "step_share": 0.15}),
    # A Python thread of the rank's own process serializing snapshots without a pause.
    Scenario("busy_thread", BusyThread, "1", {"burst_ms": 20, "period_ms": 20}),
    Scenario("imbalance", Imbalance, "1", {"batch_factor": 3}),
    Scenario("imbalance_seq", LongerSequences, "1", {"seq_factor": 2},
             settings={"model": "transformer"}),
    Scenario("checkpoint_sync", SyncCheckpoint, "1", {"fsync": 1}),
    # One rank evaluates every 4th step for about a step's time: its code, however rarely it runs.
    Scenario("eval_pass", EvalPass, "1", {"every": 4, "eval_ms": 150}),
    Scenario("net_throttle", NetThrottle, "1", {"rate_mbit": 400}),
    # Every rank's link throttled: a slow network, which every rank pays in every collective.
    Scenario("net_throttle_global", NetThrottle, "all", {"rate_mbit": 400}),
    Scenario("hang", Hang, "1", {}),
]}
# Two faults at once: a rank whose collate stalls 150 ms per batch (the larger cost) and another
# rank under a CPU quota at half of what it used; both must be reported, the stall first.
SCENARIOS["two_faults"] = Scenario("two_faults", FaultsByRank, "1,3", {"stall_ms": 150, "share": 0.5},
                                   parts=("dataloader_stall", "cpu_throttle"))


def part_params(scenario: Scenario, part: str, params=None) -> Dict[str, float]:
    """A part's parameters: its own defaults, then the scenario's and the run's values for the
    keys the part has."""
    merged = dict(SCENARIOS[part].default_params)
    for source in (scenario.default_params, params or {}):
        merged.update({k: v for k, v in source.items() if k in merged})
    return merged


def make_fault(scenario_name, params=None, rank=0, work_dir=None, fault_ranks=None):
    """The fault of `rank` (a training process), or with `fault_ranks` given and a scenario of
    several faults, also the launcher's FaultsByRank over all of them (rank None)."""
    scenario = SCENARIOS[scenario_name]
    if scenario.parts:
        assignment = assign_parts(scenario, fault_ranks or [])
        if rank is None:
            return FaultsByRank([(make_fault(part, part_params(scenario, part, params)), ranks)
                                 for part, ranks in assignment])
        for part, ranks in assignment:
            if rank in ranks:
                return make_fault(part, part_params(scenario, part, params), rank=rank, work_dir=work_dir)
        return NoFault()
    merged = dict(scenario.default_params)
    merged.update(params or {})
    return scenario.fault_class(merged, rank=rank or 0, work_dir=work_dir)


def assign_parts(scenario: Scenario, fault_ranks: List[int]):
    """[(part scenario, [rank])]: the i-th faulty rank (in the order given) gets the i-th part."""
    if len(fault_ranks) != len(scenario.parts):
        raise ValueError(f"{scenario.name} needs {len(scenario.parts)} distinct fault ranks "
                         f"(one per fault: {', '.join(scenario.parts)}), got {fault_ranks}")
    return [(part, [rank]) for part, rank in zip(scenario.parts, fault_ranks)]


def truth_faults(scenario_name, fault_ranks, world_size, params=None):
    """What a diagnosis should report, most costly first: [{"scenario", "ranks", "category",
    "scope", "params"}], [] for a healthy run."""
    scenario = SCENARIOS[scenario_name]
    if not fault_ranks:
        return []
    if scenario.parts:
        return [{"scenario": part, "ranks": ranks, "category": SCENARIOS[part].category,
                 "scope": fault_scope(ranks, world_size), "params": part_params(scenario, part, params)}
                for part, ranks in assign_parts(scenario, fault_ranks)]
    merged = dict(scenario.default_params)
    merged.update(params or {})
    return [{"scenario": scenario_name, "ranks": sorted(fault_ranks), "category": scenario.category,
             "scope": fault_scope(fault_ranks, world_size), "params": merged}]


def site_lines(sites, source: Optional[Path] = None) -> Dict[str, List[int]]:
    """{site: [line numbers]} of the `# site:NAME` markers in faults.py (or `source`)."""
    text = (source or Path(__file__)).read_text().splitlines()
    out: Dict[str, List[int]] = {}
    for site in sites:
        out[site] = [n for n, line in enumerate(text, 1) if line.rstrip().endswith(f"# site:{site}")]
    return out


def parse_fault_ranks(spec, world_size, keep_order=False):
    """'1' -> [1]; '0,2' -> [0, 2]; 'all' -> every rank; None or '' -> []. With `keep_order`
    the ranks stay in the order given (one per part of a scenario of several faults)."""
    if spec is None or str(spec).strip() == "":
        return []
    if str(spec).strip().lower() == "all":
        return list(range(world_size))
    given = [int(part) for part in str(spec).split(",") if part.strip()]
    if keep_order:
        if len(set(given)) != len(given):
            raise ValueError(f"fault ranks {given}: one rank per fault")
        ranks = given
    else:
        ranks = sorted(set(given))
    for rank in ranks:
        if not 0 <= rank < world_size:
            raise ValueError(f"fault rank {rank} is outside 0..{world_size - 1}")
    return ranks


def fault_scope(fault_ranks, world_size):
    """'global' when every rank has the fault, 'local' when some do, None when none."""
    if not fault_ranks:
        return None
    return "global" if len(fault_ranks) == world_size and world_size > 1 else "local"

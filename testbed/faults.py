"""The testbed's faults: one real mechanism each, and the scenarios that inject them.

A fault object lives in the faulty rank's training process (train.py). It is inert until
`activate()` is called at the onset iteration, then acts through hooks the training step calls:
`batch_size`, `wrap_collate`, `record_reader`, `in_step`. Faults that act from outside the
process (a cgroup CPU quota, a tc link throttle) ask the launcher at the onset through the
handshake given to `prepare`; the launcher applies them with `apply_external(host, rank, pid)`,
where `host` offers `throttle_cpu(rank, pid, quota_pct)` and `throttle_link(rank, rate_mbit)`.

This module needs no torch, so the launcher and the unit tests import it cheaply.
"""

import gc
import mmap
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Optional


class NoFault:
    """The healthy rank: every hook is the identity."""

    name = "healthy"
    category = None
    external = False
    needs_network_namespaces = False

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

    def batch_size(self, base_batch_size: int) -> int:
        return base_batch_size

    def wrap_collate(self, collate_fn):
        return collate_fn

    def record_reader(self):
        return None

    def in_step(self, iteration: int):
        pass

    def apply_external(self, host, rank: int, pid: int, note: Optional[dict] = None):
        """Applies the fault to process `pid`; `note` is the rank's external_note()."""
        raise NotImplementedError(f"{self.name} is not applied from outside the process")

    def close(self):
        pass


class DataloaderStall(NoFault):
    """The rank's collate_fn sleeps, like a collate that waits on a lock or a remote service."""

    name = "dataloader_stall"
    category = "dataloader"

    def wrap_collate(self, collate_fn):
        stall_s = float(self.params.get("stall_ms", 60)) / 1000.0

        def stalling_collate(samples):
            if self.active:
                time.sleep(stall_s)
            return collate_fn(samples)
        return stalling_collate


class SlowStorage(NoFault):
    """Each sample's dense features are read from a file on disk, bypassing the page cache
    (O_DIRECT; posix_fadvise(DONTNEED) where O_DIRECT is refused), so every batch really hits
    the storage device: `record_kib` per sample from a `file_mib` file."""

    name = "slow_storage"
    category = "dataloader"

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
        read = os.preadv(self.fd, [view], offset)
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

    def activate(self):
        self.saved_thresholds = gc.get_threshold()
        gc.set_threshold(int(self.params.get("gc_threshold", 100)), 5, 5)
        super().activate()

    def in_step(self, iteration):
        if not self.active:
            return
        for i in range(int(self.params.get("cycles_per_step", 20000))):
            record = {"step": iteration, "item": i}
            record["self"] = record
        if int(self.params.get("full_collect", 1)):
            gc.collect()

    def close(self):
        if self.active:
            gc.set_threshold(*self.saved_thresholds)


class PythonHotLoop(NoFault):
    """A pure-Python loop in the training step (bookkeeping gone quadratic) costing `loop_ms`
    of CPU time; its iteration count is calibrated on CPU time at start-up, so the work is fixed
    whatever the machine's load. `sleep_ms` adds a sleep in the step (a blocking call): wall
    time that, unlike the loop, a loaded machine does not stretch."""

    name = "python_hot_loop"
    category = "host"

    def prepare(self, request_external):
        super().prepare(request_external)
        loop_ms = float(self.params.get("loop_ms", 40))
        self.loop_count = calibrate_loop_count(loop_ms) if loop_ms > 0 else 0
        self.sleep_s = float(self.params.get("sleep_ms", 0)) / 1e3

    def in_step(self, iteration):
        if self.active:
            if self.loop_count:
                python_busy_loop(self.loop_count)
            if self.sleep_s > 0:
                time.sleep(self.sleep_s)


def python_busy_loop(count: int) -> int:
    total = 0
    for i in range(count):
        total += (i * i) % 7
    return total


def calibrate_loop_count(target_ms: float, probe_count: int = 200_000) -> int:
    best_cpu_s = float("inf")
    for _ in range(3):
        started = time.process_time()
        python_busy_loop(probe_count)
        best_cpu_s = min(best_cpu_s, time.process_time() - started)
    per_iteration_s = max(best_cpu_s, 1e-6) / probe_count
    return max(1, int(target_ms / 1000.0 / per_iteration_s))


class Imbalance(NoFault):
    """The rank is given `batch_factor` times the batch of its peers."""

    name = "imbalance"
    category = "imbalance"

    def batch_size(self, base_batch_size):
        if self.active:
            return base_batch_size * int(self.params.get("batch_factor", 3))
        return base_batch_size


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


@dataclass(frozen=True)
class Scenario:
    name: str
    fault_class: type
    default_fault_rank: Optional[str]  # "1", "all", or None for no fault
    default_params: Dict[str, float]

    @property
    def category(self):
        return self.fault_class.category


SCENARIOS = {s.name: s for s in [
    Scenario("healthy", NoFault, None, {}),
    Scenario("dataloader_stall", DataloaderStall, "1", {"stall_ms": 60}),
    Scenario("slow_storage", SlowStorage, "1", {"record_kib": 1024, "file_mib": 64}),
    Scenario("cpu_throttle", CpuThrottle, "1", {"quota_pct": 25, "share": 0}),
    Scenario("gc_storm", GcStorm, "1", {"cycles_per_step": 20000, "gc_threshold": 100,
                                        "full_collect": 1}),
    Scenario("python_hot_loop", PythonHotLoop, "1", {"loop_ms": 40}),
    Scenario("python_hot_loop_global", PythonHotLoop, "all", {"loop_ms": 40}),
    Scenario("imbalance", Imbalance, "1", {"batch_factor": 3}),
    Scenario("net_throttle", NetThrottle, "1", {"rate_mbit": 400}),
    Scenario("hang", Hang, "1", {}),
]}


def make_fault(scenario_name, params=None, rank=0, work_dir=None):
    scenario = SCENARIOS[scenario_name]
    merged = dict(scenario.default_params)
    merged.update(params or {})
    return scenario.fault_class(merged, rank=rank, work_dir=work_dir)


def parse_fault_ranks(spec, world_size):
    """'1' -> [1]; '0,2' -> [0, 2]; 'all' -> every rank; None or '' -> []."""
    if spec is None or str(spec).strip() == "":
        return []
    if str(spec).strip().lower() == "all":
        return list(range(world_size))
    ranks = sorted({int(part) for part in str(spec).split(",") if part.strip()})
    for rank in ranks:
        if not 0 <= rank < world_size:
            raise ValueError(f"fault rank {rank} is outside 0..{world_size - 1}")
    return ranks


def fault_scope(fault_ranks, world_size):
    """'global' when every rank has the fault, 'local' when some do, None when none."""
    if not fault_ranks:
        return None
    return "global" if len(fault_ranks) == world_size and world_size > 1 else "local"

"""Who had the processor during a capture window: the node's CPUs and this rank's threads.

Waiting in a collective or for the loader looks the same in a trace whether a peer's link was
slow or a peer (or a loader worker) was runnable and not running: on a node with more runnable
threads than cores, every step of a ring all-reduce waits for a descheduled peer. Two readings,
at the window's start and end, tell them apart:

- the node's CPUs (`/proc/stat`): the share of all cores' time spent busy; a node whose cores
  were busy all along had no idle processor while its ranks "waited";
- this process's threads (`/proc/self/task/*/schedstat`): their time on a CPU and their time
  runnable but queued (run delay), per second of the window; the same for the training thread
  alone, whose remaining time it slept (in I/O, a sleep, a collective, waiting for loader
  workers): a rank queued by a busy node and a rank that sleeps on slow storage both queue more,
  only the second sleeps more;
- its cgroup's CPU quota (`cpu.stat` of its cgroup and each ancestor, v2 or v1): how long a
  quota held it back. A quota's throttling shows as run delay too; this tells the two apart
  (a CPU limit is the rank's own problem, a queue on a busy node is not).

The summary goes into `rank-<r>.stacks.json` as "cpu" = {"window_ns", "cpus" (online),
"allowed_cpus" (this process's affinity), "host_busy" (0..1 of all cores), "process_cpu" (cores
used by this process's threads), "run_delay" (thread-seconds queued per second), "threads",
"throttled" (share of the window the most throttled of its cgroups was held back by its quota;
absent where no cgroup cpu.stat could be read), "main_cpu", "main_run_delay" (the training
thread's, per second; absent when it was not named)}.
Reading costs one small file per thread, twice per window; nothing outside a window. Anything
unreadable (no /proc, another OS) gives no "cpu" and never an exception.
"""

import os
import time
from typing import Any, Dict, List, Optional, Tuple

_MAX_THREADS = 4096  # a bound on the files read per snapshot


def _read(path: str) -> str:
    with open(path, "rb") as f:
        return f.read(4096).decode("ascii", "replace")


def _host_jiffies() -> Optional[tuple]:
    """(busy, total) jiffies of all cores since boot; idle and iowait are not busy."""
    for line in _read("/proc/stat").splitlines():
        if line.startswith("cpu "):
            fields = [int(x) for x in line.split()[1:]]
            # user nice system idle iowait irq softirq steal [guest guest_nice: inside user]
            total = sum(fields[:8])
            idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
            return total - idle, total
    return None


def _threads(main_tid: Optional[int]) -> tuple:
    """({thread id: (on-CPU ns, run-delay ns)} over this process's threads, and the same pair
    for thread `main_tid` alone (None when not given or gone))."""
    tasks: Dict[str, Tuple[int, int]] = {}
    main = None
    task_dir = "/proc/self/task"
    for name in os.listdir(task_dir)[:_MAX_THREADS]:
        try:
            fields = _read(os.path.join(task_dir, name, "schedstat")).split()
        except OSError:
            continue  # the thread ended meanwhile
        if len(fields) >= 2:
            tasks[name] = (int(fields[0]), int(fields[1]))
            if main_tid is not None and name == str(main_tid):
                main = tasks[name]
    return tasks, main


def _grown(start: Dict[str, Any], end: Dict[str, Any], field: int) -> int:
    """What this process's threads added between two snapshots, thread by thread: a thread born
    inside the window counts from zero; one that ended inside it takes its time with it. Summed
    over the process instead, the threads a job's exit ends (its process group's, its loader's)
    took more than the rest added: an exit-cut window read 0 of a core for every rank."""
    before = start["tasks"]
    return sum(max(0, now[field] - before.get(tid, (0, 0))[field]) for tid, now in end["tasks"].items())


class ThreadRunDelay:
    """The calling thread's time queued for a CPU (schedstat run delay, ns), read from one file
    kept open (`/proc/thread-self/schedstat`, about 2.5 µs a read): how much of a sampler's
    lateness was its own wait for a CPU rather than the GIL holder's code. Make it on the thread
    it reads; `since_last()` is None once it cannot be read, and never raises."""

    def __init__(self) -> None:
        self._fd: Optional[int] = None
        self._last = 0
        try:
            self._fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
            self._last = self._read()
        except (OSError, ValueError, IndexError):
            self.close()

    def _read(self) -> int:
        return int(os.pread(self._fd, 128, 0).split()[1])

    def since_last(self) -> Optional[int]:
        if self._fd is None:
            return None
        try:
            now = self._read()
        except (OSError, ValueError, IndexError):
            self.close()
            return None
        delta, self._last = now - self._last, now
        return max(0, delta)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


def _cgroup_stat_files() -> List[Tuple[str, int]]:
    """(cpu.stat path, ns per unit of its throttled figure) for this process's cgroup and its
    ancestors: v2's unified hierarchy, else v1's cpu controller."""
    files = []
    for line in _read("/proc/self/cgroup").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if hierarchy == "0" and controllers == "":
            roots = [("/sys/fs/cgroup", 1000)]  # v2: throttled_usec
        elif "cpu" in controllers.split(","):
            roots = [(os.path.join("/sys/fs/cgroup", name), 1) for name in (controllers, "cpu")]  # v1: ns
        else:
            continue
        for root, unit in roots:
            if not os.path.isdir(root):
                continue
            folder = os.path.normpath(root + "/" + path.strip("/"))
            while folder.startswith(root) and len(files) < 64:
                files.append((os.path.join(folder, "cpu.stat"), unit))
                if folder == root:
                    break
                folder = os.path.dirname(folder)
            break
    return files


def _throttled() -> Dict[str, int]:
    """Throttled ns so far of each readable cgroup cpu.stat of this process's chain."""
    out = {}
    for path, unit in _cgroup_stat_files():
        try:
            for line in _read(path).splitlines():
                key, _, value = line.partition(" ")
                if key in ("throttled_usec", "throttled_time"):
                    out[path] = int(value) * unit
                    break
        except (OSError, ValueError):
            continue
    return out


def snapshot(main_tid: Optional[int] = None) -> Optional[Dict[str, Any]]:
    """The readings now; `main_tid` (a native thread id of this process) is read on its own too."""
    try:
        host = _host_jiffies()
        tasks, main = _threads(main_tid)
        if host is None or not tasks:
            return None
        snap = {"ns": time.monotonic_ns(), "busy": host[0], "total": host[1], "tasks": tasks,
                "threads": len(tasks)}
        if main is not None:
            snap["main"] = main
    except Exception:
        return None
    try:
        snap["throttled"] = _throttled()
    except Exception:
        pass  # no cgroup figures: the rest still stands
    return snap


def window(start: Optional[Dict[str, Any]], end: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The "cpu" summary between two snapshots, or None when either is missing or empty; never
    raises (the training thread calls it as its window closes). Threads that ended inside the
    window take their time with them, so the process's figures are a lower bound."""
    try:
        return _window(start, end)
    except Exception:
        return None


def _window(start: Optional[Dict[str, Any]], end: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    if not start or not end:
        return None
    window_ns = end["ns"] - start["ns"]
    jiffies = end["total"] - start["total"]
    if window_ns <= 0 or jiffies <= 0:
        return None
    try:
        allowed = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        allowed = 0
    share = {"window_ns": window_ns, "cpus": os.cpu_count() or 0, "allowed_cpus": allowed,
             "host_busy": round(max(0.0, min(1.0, (end["busy"] - start["busy"]) / jiffies)), 4),
             "process_cpu": round(_grown(start, end, 0) / window_ns, 4),
             "run_delay": round(_grown(start, end, 1) / window_ns, 4),
             "threads": end["threads"]}
    if start.get("main") and end.get("main"):
        share["main_cpu"] = round(max(0, end["main"][0] - start["main"][0]) / window_ns, 4)
        share["main_run_delay"] = round(max(0, end["main"][1] - start["main"][1]) / window_ns, 4)
    before, after = start.get("throttled") or {}, end.get("throttled") or {}
    common = [path for path in after if path in before]
    if common:
        held = max(max(0, after[p] - before[p]) for p in common)
        share["throttled"] = round(min(1.0, held / window_ns), 4)
    return share

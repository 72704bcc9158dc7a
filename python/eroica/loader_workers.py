"""Stack samples from the DataLoader's worker processes, during a capture window only.

With `num_workers > 0` the batches are made in worker processes; the training thread only
waits for them in the iterator's `__next__`, so its own stack samples name the training loop's
`next()` line, not the code that is slow (a dataset's `__getitem__`, a decode, a collate).
Each worker therefore samples its own main thread while the parent profiles, and the parent
adds what the workers saw to its stack-samples file (`loader_workers`); summarize gives the
loader's critical-path time to the workers' user frames at those moments (src/summary/
stack_attribution.cc).

How a worker learns of a window: torch starts a worker with `_utils.worker._worker_loop` as
the process target, looked up when the iterator starts its workers. hooks.py replaces that
attribute with `worker_target()`: a partial of `_worker_main` holding a private folder's path
(a string, so it pickles under fork, spawn and forkserver alike); the folder is made under
eroica's own folder (EROICA_LOCAL_DIR, else EROICA_DIR), never elsewhere. It holds a 64-byte
control page the parent
rewrites at each window (a seqlock: the sequence number is odd while it writes); each worker
maps it and one daemon thread reads it every `POLL_S`. That read is the whole idle cost.
While a window is open the thread samples the worker's main thread with the training
thread's StackSampler and, when the window closes, writes its samples to the folder
(`gen-<g>-pid-<pid>.json`, atomically, announced by a `.active` file while it samples).

Never harmful: a worker whose thread cannot start, map the page or write its file just has no
samples; nothing here raises into the dataset's code or the training loop, and the parent
waits for the workers' files at most `COLLECT_WAIT_S`, on the export thread.
"""

import functools
import glob
import json
import mmap
import os
import shutil
import struct
import threading
import time
from typing import Any, Dict, List, Optional

from . import cpu_share, log, safe_fs, stack_sampler

POLL_S = 0.1
COLLECT_WAIT_S = 2.0
FINISH_WAIT_S = 1.0  # a worker whose loop ended waits this long at most for its window's file
MAX_WORKER_FILE_BYTES = 16 << 20  # a worker's window: at most stack_max_samples samples
MAX_WORKERS = 256  # files taken per window (a DataLoader's workers, with room)
_PAGE = struct.Struct("<8sQQqdIi")  # magic, seq, generation, until_unix_ns, hz, max_samples, rank
_MAGIC = b"EROICALW"
_PAGE_BYTES = 64
_CONTROL = "control"
_WORKER_SWITCH_INTERVAL_S = 0.0002  # the GIL switch interval while a worker samples its window

_original_worker_loop = None  # torch's, once patched in this process
_control: Optional["Control"] = None


class Control:
    """The parent's side: the private folder and its control page."""

    def __init__(self, root: str):
        self.folder = safe_fs.private_dir(safe_fs.ensure_root(root), "loader-workers-%d" % os.getpid())
        self.owner_pid = os.getpid()
        path = os.path.join(self.folder, _CONTROL)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            # Written, not truncated: the page's block is allocated now, so a full file system
            # fails here with an error instead of a SIGBUS at the first store into the mapping.
            if os.write(fd, bytes(_PAGE_BYTES)) != _PAGE_BYTES:
                raise OSError("short write of the control page")
            self._page = mmap.mmap(fd, _PAGE_BYTES)
        finally:
            os.close(fd)
        self._seq = 0
        self.generation = 0
        self._write(0, 0, 0.0, 0, -1)

    def _write(self, generation: int, until_unix_ns: int, hz: float, max_samples: int, rank: int) -> None:
        self._seq += 1  # odd: being written
        _PAGE.pack_into(self._page, 0, _MAGIC, self._seq, 0, 0, 0.0, 0, -1)
        self._seq += 1
        _PAGE.pack_into(self._page, 0, _MAGIC, self._seq, generation, until_unix_ns, hz, max_samples, rank)

    def begin(self, rank: int, hz: float, max_samples: int, until_unix_ns: int) -> int:
        """Opens a window for every worker; returns its generation."""
        self.generation += 1
        self._write(self.generation, until_unix_ns, hz, max_samples, rank)
        return self.generation

    def end(self) -> None:
        self._write(0, 0, 0.0, 0, -1)

    def collect(self, generation: int, wait_s: float = COLLECT_WAIT_S) -> List[Dict[str, Any]]:
        """The workers' sample documents for `generation`, waiting (bounded) for those still
        writing; the files are removed once read."""
        prefix = os.path.join(self.folder, "gen-%d-pid-" % generation)
        deadline = time.monotonic() + wait_s
        while glob.glob(prefix + "*.active") and time.monotonic() < deadline:
            time.sleep(0.02)
        docs = []
        for path in sorted(glob.glob(prefix + "*.json"))[:MAX_WORKERS]:
            try:
                doc = json.loads(safe_fs.read_small(path, MAX_WORKER_FILE_BYTES))
                if isinstance(doc, dict) and doc.get("schema") == stack_sampler.SCHEMA:
                    docs.append(doc)
            except Exception as e:  # one worker's samples lost, the others kept
                log.info("loader worker samples %s unreadable: %s: %s" % (path, type(e).__name__, e))
        for path in glob.glob(prefix + "*"):
            try:
                os.unlink(path)
            except OSError:
                pass
        return docs

    def close(self) -> None:
        if os.getpid() == self.owner_pid:
            shutil.rmtree(self.folder, ignore_errors=True)


def control() -> Optional[Control]:
    return _control


def worker_target(original, root: str):
    """What torch should start DataLoader workers with instead of `original` (its
    `_worker_loop`), or None when the control page cannot be made (no samples from workers).
    The page's private folder goes under `root` (eroica's own folder)."""
    global _original_worker_loop, _control
    if isinstance(original, functools.partial) and original.func is _worker_main:
        # Already ours (eroica's hooks, then a harness that also samples, asked again): made
        # our own original, each worker would start itself until its stack ran out.
        return original
    try:
        if _control is None:
            _control = Control(root)
            import atexit

            atexit.register(_control.close)
        _original_worker_loop = original
        return functools.partial(_worker_main, _control.folder)
    except Exception as e:  # a debug line: whatever broke eroica's folder is said elsewhere
        log.debug("DataLoader worker processes will not be stack-sampled: %s: %s" % (type(e).__name__, e))
        return None


def _worker_main(folder: str, *args, **kwargs):
    """A DataLoader worker's process target: starts the watcher, then torch's worker loop."""
    loop = _original_worker_loop
    if loop is None:  # spawned: this module is fresh, and torch's attribute is torch's own
        from torch.utils.data._utils import worker

        loop = worker._worker_loop
    if _control is not None and _control.owner_pid == os.getpid():
        # A spawned worker's own eroica (the boot hook of `eroica run`) made a folder; a worker
        # never captures, and it exits without running atexit.
        _control.close()
    watcher = None
    try:
        watcher = _Watcher(folder, threading.get_ident(), threading.get_native_id())
        watcher.start()
    except Exception:
        pass  # no samples from this worker; its work goes on
    try:
        return loop(*args, **kwargs)
    finally:
        if watcher is not None:
            watcher.finish()


class _Watcher:
    """The worker's side: reads the control page every POLL_S, samples while a window is open."""

    def __init__(self, folder: str, thread_id: int, native_id: int):
        self.folder = folder
        self.thread_id = thread_id
        # The thread that makes the batches, read on its own: the worker's other threads (this
        # watcher, waking at the sampling rate) queue for a CPU too, and on busy cores their
        # queueing would read as the loader's.
        self.native_id = native_id
        self.parent_pid = os.getppid()
        self._page = None
        self._thread: Optional[threading.Thread] = None
        self._finishing = threading.Event()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._main, name="eroica-loader-stacks", daemon=True)
        self._thread.start()

    def finish(self) -> None:
        """The worker's loop ended (its iterator shut the workers down: the job's loop is over,
        often inside a window that the job's exit then cuts short). A window in progress is
        written now, bounded, or its samples and the worker's CPU would die with the process and
        the window read no loader at all (an unseen 3-rank job's last session, rank 1's slow
        jitter in 2 workers: healthy)."""
        self._finishing.set()
        thread = self._thread
        if thread is not None:
            thread.join(FINISH_WAIT_S)

    def _read(self):
        """(generation, until_unix_ns, hz, max_samples, rank) or None while being written."""
        # A seqlock's read: the sequence number before and after the fields must be the same
        # even number, else the parent was writing (another process: the copy can tear).
        before = _PAGE.unpack_from(self._page, 0)[1]
        values = _PAGE.unpack_from(self._page, 0)
        after = _PAGE.unpack_from(self._page, 0)[1]
        if before & 1 or values[1] != before or after != before or values[0] != _MAGIC:
            return None
        return values[2:]

    def _main(self) -> None:
        try:
            fd = os.open(os.path.join(self.folder, _CONTROL), os.O_RDONLY | os.O_NOFOLLOW)
            try:
                self._page = mmap.mmap(fd, _PAGE_BYTES, prot=mmap.PROT_READ)
            finally:
                os.close(fd)
            done = 0
            while os.getppid() == self.parent_pid and not self._finishing.is_set():
                self._finishing.wait(POLL_S)
                state = self._read()
                if state is None or state[0] == 0 or state[0] == done:
                    continue
                done = state[0]
                self._sample(*state)
        except Exception:
            return  # a watcher's failure costs this worker's samples, nothing else

    def _sample(self, generation: int, until_unix_ns: int, hz: float, max_samples: int, rank: int) -> None:
        if hz <= 0 or time.time_ns() >= until_unix_ns:
            return
        stem = os.path.join(self.folder, "gen-%d-pid-%d" % (generation, os.getpid()))
        active = stem + ".active"
        open(active, "w").close()
        sampler = stack_sampler.StackSampler(self.thread_id, hz, max_samples,
                                             root_code=_worker_main.__code__)
        period_s = 1.0 / hz
        cpu_start = cpu_share.snapshot(self.native_id)
        # A per-sample transform in pure Python shorter than the switch interval never gives the
        # GIL up before its end: its time goes to the first torch call after it, which lets the
        # GIL go at once (a 1.5 ms loop per sample: 1 of 38 samples in it at 5 ms, most at 1 ms).
        # A loop of 1.4-1.6 ms before a few torch calls still had most samples on those calls at
        # 1 ms (two runs of 5 and 6 ranks: a line of the sample's torch calls named, not the loop):
        # a sample asked for in the loop's last millisecond waits for its end. The worker's only
        # other Python thread is this watcher, so a shorter interval costs a switch per sample.
        sampler.shorten_switch_interval(_WORKER_SWITCH_INTERVAL_S)
        try:
            while time.time_ns() < until_unix_ns and not self._finishing.is_set():
                state = self._read()
                if state is not None and state[0] != generation:
                    break  # the parent closed the window
                start_ns = time.thread_time_ns()
                more = sampler.sample_once()
                sampler.busy_ns += time.thread_time_ns() - start_ns
                if not more:
                    break
                self._finishing.wait(period_s)
            sampler.cpu = cpu_share.window(cpu_start, cpu_share.snapshot(self.native_id))
            doc = sampler.doc(rank, 0)
            doc["role"] = "dataloader worker"
            tmp = stem + ".tmp"
            with open(tmp, "w") as out:
                json.dump(doc, out, separators=(",", ":"))
            os.replace(tmp, stem + ".json")
        finally:
            sampler.restore_switch_interval()
            try:
                os.unlink(active)
            except OSError:
                pass

"""The training thread's Python stack, sampled during a capture window only.

CPU-only torch (1.13 and later without `with_stack`) records no Python frames, so a host or
dataloader finding could name only its program point. A background thread reads the training
thread's frame through `sys._current_frames()` at EROICA_STACK_HZ while the profiler runs,
and the capture writes what it saw beside the trace; summarize maps the samples onto the
trace's clock and names the hottest frames of the job's own code for each program point.

`rank-<r>.stacks.json` = {"schema": "eroica.stack_samples/v2", "rank", "pid", "hz",
"profiler_start_unix_ns", "step_start_unix_ns": {"<N>": unix ns when ProfilerStep#N opened},
"library_prefixes": [path prefixes of the interpreter's and installed packages' code],
"frames": [[file, line, function]], "stacks": [[frame index, innermost first]],
"samples": [[unix ns, stack index, ns the sampler thread was queued for a CPU since the sample
before (absent where /proc cannot be read, and on a collection's two samples)]], "dropped", "busy_ns" (the sampler thread's own CPU time,
with the GIL held: the most it took from training), "error", "loader_workers": [the same
document, one per DataLoader worker process that sampled its own main thread in the window
(loader_workers.py), with "pid" and "role"; absent without workers], "other_threads": [the same
document's fields ("hz", "library_prefixes", "frames", "stacks", "samples" as [unix ns, stack]),
one per other Python thread of the training process seen in the window (at most 8; eroica's own
left out), with "name", "native_id" and "cpu_ns" (its time on a CPU over the window, absent where
/proc cannot be read); absent where none ran Python], "other_threads_dropped" (their samples past
the bound, as many as the training thread's; absent when none), "walker" ("interpreter frames" or
"frame objects": how the stacks were read, below), "cpu": who had the processor over the window
(cpu_share.py; absent where /proc cannot be read)}.

The other threads are sampled at every 4th of the training thread's moments (one
`sys._current_frames()` serves both; their "hz" says so): a metrics or logging thread that holds the interpreter
lock makes the training thread wait wherever it let the lock go, which is no line of its own,
and only that thread's frames name the code.

A sample is taken when the sampler gets the GIL: a C call that holds it (gc.collect(), a
long op that does not release it) delays the sample to its end, and the sample then stands
for that delay, with the stack where the thread next let the GIL go, which can be lines past
the call (a gc.collect() at the end of a function whose caller then ran a forward: the forward's
line got the collection's time). Garbage collection is therefore seen directly: a gc callback
on the sampled thread keeps each collection that lasts a quarter of a period or more as two
samples of the frame that triggered it, at its start and its end, so its time is that frame's
(the callback costs about a microsecond per collection, in the window only). On busy cores the sampler also
waits for a CPU after its sleep, while the training thread runs on: each sample keeps that
wait, which stands for code no sample saw. The sampling period itself is
split at its middle between the samples on either side (summary/stack_attribution.cc).

How a stack is read: where the build made it for this interpreter (CPython 3.11), the native
walker `_eroica_frames` (python/native/eroica_frames.c) reads every thread's interpreter frames in
one call with the GIL held and no frame object made; elsewhere, frame objects from
`sys._current_frames()`, which on 3.11 can crash the process when a sampled thread returns from
frames the sampler holds (the .c file says where it did). "walker" in the file says which.

With EROICA_STACK_HZ=0 nothing is sampled, but the file is still written with the window's
CPU reading ("hz": 0, no samples): without it, a node whose cores are all busy would look like
a slow network or a straggler.

Zero cost outside a window: no thread exists then. In a window, one sample costs a few µs of
GIL time per frame of depth; the buffer is bounded (EROICA_STACK_MAX_SAMPLES), and anything
that goes wrong stops the sampler with a note in the file, never an exception in training.
"""

import gc
import os
import sys
import sysconfig
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from . import cpu_share, safe_fs

try:  # built beside the binary for the interpreter it was built for (python/native/eroica_frames.c)
    import _eroica_frames as _native_frames
except ImportError:
    _native_frames = None

SCHEMA = "eroica.stack_samples/v2"  # v2: each sample may keep the sampler's wait for a CPU
_MAX_DEPTH = 64  # innermost frames kept per sample: the user frame is near the top
_WINDOW_SWITCH_INTERVAL_S = 0.001  # the GIL switch interval while a window samples (default 0.005)
_MAX_OTHER_THREADS = 8  # other Python threads of the process sampled beside the training thread
# The other threads are sampled at every 4th of the training thread's samples: walking a thread's
# stack costs about 7 µs at 20 frames (against 2-3 µs for a whole sample of the training thread
# alone), and their hottest line over a window needs far fewer samples than the training
# thread's program points.
_OTHER_THREADS_EVERY = 4


def stacks_path(session_dir: str, rank: int) -> str:
    return os.path.join(session_dir, safe_fs.rank_name("rank-", rank, ".stacks.json"))


def library_prefixes() -> List[str]:
    """Where code that is not the job's own lives: the standard library, installed packages,
    torch and eroica (wherever they were imported from)."""
    prefixes = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            path = sysconfig.get_paths().get(key)
        except Exception:
            path = None
        if path:
            prefixes.add(os.path.join(path, ""))
    torch = sys.modules.get("torch")
    torch_file = getattr(torch, "__file__", None)
    if torch_file:
        prefixes.add(os.path.join(os.path.dirname(os.path.abspath(torch_file)), ""))
    prefixes.add(os.path.join(os.path.dirname(os.path.abspath(__file__)), ""))
    return sorted(prefixes)


class _ThreadSamples:
    """Another Python thread's samples, with frame and stack tables of its own."""

    def __init__(self, name: str, native_id: Optional[int]) -> None:
        self.name = name
        self.native_id = native_id
        self.frames: Dict[Tuple[str, int, str], int] = {}
        self.stacks: Dict[Tuple[int, ...], int] = {}
        self.samples: List[Tuple[int, int]] = []


def _intern(keys, frames: Dict[Tuple[str, int, str], int], stacks: Dict[Tuple[int, ...], int]) -> int:
    """The stack index of frame `keys` (innermost first) in `stacks`, adding what is new."""
    ids = []
    for key in keys:
        index = frames.get(key)
        if index is None:
            index = frames[key] = len(frames)
        ids.append(index)
    stack = tuple(ids)
    stack_id = stacks.get(stack)
    if stack_id is None:
        stack_id = stacks[stack] = len(stacks)
    return stack_id


def _tables(frames: Dict[Tuple[str, int, str], int], stacks: Dict[Tuple[int, ...], int]) -> Tuple[list, list]:
    """The file's "frames" and "stacks" lists of two tables."""
    frame_list = [None] * len(frames)
    for (file, line, function), index in frames.items():
        frame_list[index] = [file, line, function]
    stack_list = [None] * len(stacks)
    for stack, index in stacks.items():
        stack_list[index] = list(stack)
    return frame_list, stack_list


class StackSampler:
    """Samples one thread's stack until stopped, at most `max_samples` times; with
    `other_threads`, the process's other Python threads' too (as many samples again at most)."""

    def __init__(self, thread_id: int, hz: float, max_samples: int,
                 clock=time.time_ns, current_frames=sys._current_frames, root_code=None,
                 other_threads: bool = False):
        self.thread_id = thread_id
        # Frames from this code object outwards are not sampled: a forked DataLoader worker's
        # stack still holds, below its entry, the parent's frames at the fork (the training
        # loop's `iter(loader)` line), which the worker never runs.
        self.root_code = root_code
        # hz 0: no samples, only the window's CPU reading (cpu_share.py), which is what lets
        # diagnose tell a node's CPU contention from a straggler or a slow network.
        self.sampling = hz > 0
        self.period_s = 1.0 / hz if self.sampling else 0.0
        self.max_samples = max(1, int(max_samples))
        self._clock = clock
        self._current_frames = current_frames
        # The stacks as the interpreter keeps them, read with the GIL held and no frame object
        # made (eroica_frames.c says why); a test's own current_frames keeps the Python path.
        self._native = _native_frames if current_frames is sys._current_frames else None
        # Without it on CPython 3.11, frame objects read from another thread can be freed under
        # the reader (eroica_frames.c: rank deaths, and a clean-clone CI run's sampler that found a
        # code object where a frame had been): no frame is read there, the CPU reading stays.
        self.unsafe_frames = (self._native is None and current_frames is sys._current_frames and
                              sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11))
        self.sampling = self.sampling and not self.unsafe_frames
        self._frames: Dict[Tuple[str, int, str], int] = {}
        self._stacks: Dict[Tuple[int, ...], int] = {}
        self.samples: List[Tuple[int, ...]] = []  # (unix ns, stack index[, queued ns])
        self.step_start_unix_ns: Dict[str, int] = {}
        self.dropped = 0
        self.busy_ns = 0
        self.error = ""
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        # ident -> its samples (None: not one to sample, eroica's own or past the limit).
        self._others: Optional[Dict[int, Optional[_ThreadSamples]]] = {} if other_threads else None
        self._other_samples = 0
        self.other_dropped = 0  # other threads' samples past the bound (the file's "other_threads_dropped")
        self._samples_taken = 0
        self._cpu_start: Optional[Dict[str, Any]] = None
        self._cpu_end: Optional[Dict[str, Any]] = None
        self._switch_interval_restore: Optional[float] = None
        self._switch_interval_set = _WINDOW_SWITCH_INTERVAL_S
        # A collection shorter than this delays a sample too little to move its time elsewhere.
        self._min_gc_ns = int(self.period_s * 1e9 / 4)
        self._gc_started: Optional[int] = None  # unix ns the collection on the sampled thread began
        self._gc_spans: List[Tuple[int, int, Tuple[Tuple[str, int, str], ...]]] = []  # start, end, frames
        self._gc_installed = False
        self.cpu: Optional[Dict[str, Any]] = None
        # The sampled thread's kernel id, when this is made on it (as the capture does), for its
        # own CPU reading beside the process's.
        self._native_id = threading.get_native_id() if thread_id == threading.get_ident() else None

    def start(self) -> None:
        """Never raises: without a thread (none left to start) the window has no samples."""
        self._cpu_start = cpu_share.snapshot(self._native_id)
        if not self.sampling:
            return
        self.shorten_switch_interval()
        try:
            gc.callbacks.append(self._on_gc)
            self._gc_installed = True
        except Exception:
            pass
        try:
            thread = threading.Thread(target=self._main, name="eroica-stacks", daemon=True)
            thread.start()
            self._thread = thread
        except Exception as e:
            self.error = "sampler not started: %s: %s" % (type(e).__name__, e)

    def mark_step(self, iteration: int) -> None:
        """Training thread: ProfilerStep#iteration opens now (anchors the trace's clock)."""
        self.step_start_unix_ns[str(iteration)] = self._clock()

    def shorten_switch_interval(self, interval_s: float = _WINDOW_SWITCH_INTERVAL_S) -> None:
        """For the window only (restore_switch_interval ends it): a sample needs the GIL."""
        # A thread running pure Python (a loop in the step) gives it up only every switch
        # interval (5 ms by default), by which time an 8 ms loop may be over: the sample then
        # shows the code after it, which gets the loop's time. For the window only, the interval
        # is shortened so a sample waits at most about a millisecond.
        try:
            interval = sys.getswitchinterval()
            if interval > interval_s:
                sys.setswitchinterval(interval_s)
                self._switch_interval_set = interval_s
                self._switch_interval_restore = interval
        except Exception:
            pass

    def restore_switch_interval(self) -> None:
        restore, self._switch_interval_restore = self._switch_interval_restore, None
        try:  # unless someone else changed it meanwhile
            if restore is not None and sys.getswitchinterval() == self._switch_interval_set:
                sys.setswitchinterval(restore)
        except Exception:
            pass

    def stop(self) -> None:
        if self._cpu_start is not None and self.cpu is None:
            self._cpu_end = cpu_share.snapshot(self._native_id)
            self.cpu = cpu_share.window(self._cpu_start, self._cpu_end)
        self._stop.set()
        if self._gc_installed:
            self._gc_installed = False
            try:
                gc.callbacks.remove(self._on_gc)
            except ValueError:
                pass
        self._gc_started = None
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=1.0)
        self.restore_switch_interval()

    def _main(self) -> None:
        wait = self._stop.wait
        cpu_ns = time.thread_time_ns
        queued = cpu_share.ThreadRunDelay()
        try:
            while not wait(self.period_s):
                start_ns = cpu_ns()
                try:
                    more = self.sample_once(queued.since_last())
                except Exception as e:  # a sampler bug costs the samples, never the training
                    self.error = "%s: %s" % (type(e).__name__, e)
                    return
                finally:
                    self.busy_ns += cpu_ns() - start_ns
                if not more:
                    return
        finally:
            queued.close()

    def sample_once(self, queued_ns: Optional[int] = None) -> bool:
        """Takes one sample; False once the buffer is full (the rest are counted dropped).
        `queued_ns`: how long this thread waited for a CPU since the sample before, kept with it."""
        if len(self.samples) >= self.max_samples:
            self.dropped += 1
            return False
        others = self._others is not None and self._samples_taken % _OTHER_THREADS_EVERY == 0
        self._samples_taken += 1
        if self._native is not None:
            stacks = self._native.stacks(None if others else (self.thread_id,), _MAX_DEPTH, self.root_code)
            if others and self.thread_id not in stacks:  # past the walker's 64 threads (newest first)
                stacks.update(self._native.stacks((self.thread_id,), _MAX_DEPTH, self.root_code))
            now_ns = self._clock()
            if others and len(stacks) > 1:
                self._sample_others(stacks, now_ns, tuple)
            keys = stacks.get(self.thread_id)
            if keys is None:
                return True  # the thread is gone or not yet running Python
            stack_id = self._stack_id(keys=keys)
        else:
            frames = self._current_frames()
            now_ns = self._clock()
            if others and len(frames) > 1:
                self._sample_others(frames, now_ns, self._frame_keys)
            frame = frames.get(self.thread_id)
            if frame is None:
                return True  # the thread is gone or not yet running Python
            stack_id = self._stack_id(frame)
        self.samples.append((now_ns, stack_id) if queued_ns is None else (now_ns, stack_id, queued_ns))
        return True

    def _sample_others(self, stacks: Dict[int, Any], now_ns: int, keys_of) -> None:
        """The other Python threads' stacks at this sample (sampler thread, GIL held); `keys_of`
        makes a thread's entry (its frame keys, or its frame) its frame keys, innermost first."""
        me = threading.get_ident()
        for ident, stack in stacks.items():
            if ident == self.thread_id or ident == me:
                continue
            if ident not in self._others:
                self._others[ident] = self._new_other(ident)
            other = self._others[ident]
            if other is None:
                continue
            if self._other_samples >= self.max_samples:
                self.other_dropped += 1
                continue
            other.samples.append((now_ns, _intern(keys_of(stack), other.frames, other.stacks)))
            self._other_samples += 1

    def _new_other(self, ident: int) -> Optional[_ThreadSamples]:
        """A thread first seen: its name and kernel id, or None where it is not one to sample."""
        sampled = sum(1 for other in self._others.values() if other is not None)
        if sampled >= _MAX_OTHER_THREADS:
            return None
        thread = next((t for t in threading.enumerate() if t.ident == ident), None)
        name = thread.name if thread is not None else ""
        if name.startswith("eroica-"):
            return None  # eroica's own threads run library code only
        return _ThreadSamples(name, getattr(thread, "native_id", None))

    def _other_threads_doc(self, prefixes: List[str]) -> List[Dict[str, Any]]:
        """The "other_threads" list: each sampled thread's samples and its CPU time in the window."""
        start = (self._cpu_start or {}).get("tasks") or {}
        end = (self._cpu_end or {}).get("tasks") or {}
        out = []
        for other in (self._others or {}).values():
            if other is None or not other.samples:
                continue
            frames, stacks = _tables(other.frames, other.stacks)
            entry = {"name": other.name, "native_id": other.native_id,
                     "hz": round(1.0 / self.period_s / _OTHER_THREADS_EVERY, 3) if self.sampling else 0,
                     "library_prefixes": prefixes, "frames": frames, "stacks": stacks,
                     "samples": [list(s) for s in other.samples]}
            tid = str(other.native_id)
            if other.native_id is not None and tid in end:
                entry["cpu_ns"] = max(0, end[tid][0] - start.get(tid, (0, 0))[0])
            out.append(entry)
        return out

    def _on_gc(self, phase: str, info: Dict[str, Any]) -> None:
        """gc.callbacks: a long collection on the sampled thread becomes two samples of the frame
        that triggered it. Runs on whichever thread collects; never raises."""
        try:
            if threading.get_ident() != self.thread_id or self._stop.is_set():
                return
            now_ns = self._clock()
            if phase == "start":
                self._gc_started = now_ns
                return
            started, self._gc_started = self._gc_started, None
            if started is None or now_ns - started < self._min_gc_ns:
                return
            if len(self.samples) + 2 * len(self._gc_spans) + 2 > self.max_samples:
                self.dropped += 2
                return
            # The frame that triggered it is still the one below this callback: read now, only
            # for a long collection, and no frame object kept across it. Frame keys only: the
            # frame and stack tables are the sampler thread's, which this thread may have
            # interrupted mid-update; doc() merges the spans once sampling stops.
            if self._native is not None:
                stacks = self._native.stacks((self.thread_id,), _MAX_DEPTH + 1, self.root_code)
                keys = stacks.get(self.thread_id, ())[1:]  # below this callback's own frame
            else:
                keys = self._frame_keys(sys._getframe(1))
            self._gc_spans.append((started, now_ns, keys))
        except Exception as e:  # costs the collection's samples, never the training
            self._gc_started = None
            self.error = self.error or "gc callback: %s: %s" % (type(e).__name__, e)

    def walker(self) -> str:
        """How stacks were read, for the file's "walker"."""
        if self._native is not None:
            return "interpreter frames"
        if self.unsafe_frames:
            return "none: no native walker for this CPython 3.11, and frame objects are unsafe there"
        return "frame objects"

    def _frame_keys(self, frame) -> Tuple[Tuple[str, int, str], ...]:
        """(file, line, function) of `frame` and its callers, innermost first, up to the root code."""
        keys = []
        root = self.root_code
        while frame is not None and len(keys) < _MAX_DEPTH:
            code = frame.f_code
            if code is root:
                break
            keys.append((code.co_filename, frame.f_lineno or 0, code.co_name))
            frame = frame.f_back
        return tuple(keys)

    def _stack_id(self, frame=None, keys=None) -> int:
        """The stack index of `frame` and its callers (or of their `keys`), innermost first."""
        return _intern(keys if keys is not None else self._frame_keys(frame), self._frames, self._stacks)

    def doc(self, rank: int, profiler_start_unix_ns: int,
            loader_workers: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
        """The file's document; call it once sampling has stopped."""
        samples = list(self.samples)
        for start_ns, end_ns, keys in list(self._gc_spans):
            stack_id = self._stack_id(keys=keys)
            samples += [(start_ns, stack_id), (end_ns, stack_id)]
        samples.sort(key=lambda sample: sample[0])
        frames, stacks = _tables(self._frames, self._stacks)
        prefixes = library_prefixes()
        doc = {"schema": SCHEMA, "rank": rank, "pid": os.getpid(),
               "hz": round(1.0 / self.period_s, 3) if self.sampling else 0,
               "profiler_start_unix_ns": profiler_start_unix_ns,
               "step_start_unix_ns": dict(self.step_start_unix_ns),
               "library_prefixes": prefixes, "frames": frames, "stacks": stacks,
               "samples": [list(s) for s in samples], "dropped": self.dropped,
               "busy_ns": self.busy_ns,
               "walker": self.walker()}
        if self.error:
            doc["error"] = self.error
        if loader_workers:
            doc["loader_workers"] = loader_workers
        others = self._other_threads_doc(prefixes)
        if others:
            doc["other_threads"] = others
        if self.other_dropped:
            doc["other_threads_dropped"] = self.other_dropped
        if self.cpu:
            doc["cpu"] = self.cpu
        return doc

    def write(self, session_dir: str, rank: int, profiler_start_unix_ns: int,
              loader_workers: Optional[List[Dict[str, Any]]] = None) -> None:
        import json

        text = json.dumps(self.doc(rank, profiler_start_unix_ns, loader_workers), separators=(",", ":"))
        safe_fs.write_atomic(stacks_path(session_dir, rank), text)

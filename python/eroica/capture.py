"""One profiler window on one rank, and the files it leaves in the session folder.

Session folder `<EROICA_DIR>/<session-id>/`:
  rank-<r>.json.gz     the rank's chrome trace (Kineto object, or the bare event list of
                       CPU-only builds without Kineto), gzip-compressed
  rank-<r>.meta.json   who, where, which iterations, clocks (written last: its presence means
                       the trace is complete)
  session.json         rank 0: why, when, the window, the detecting rank's iteration times

`ProfilerStep#N` ranges are opened by us, not by `prof.step()`: torch 1.13 names its first
step twice, and N must be the global iteration id so every rank's trace has the same ids. We
still call `prof.step()` (Kineto step tracking) and keep `prof.step_num` equal to N.
"""

import gc
import gzip
import os
import platform
import shutil
import socket
import sys
import threading
import time
from typing import Any, Dict, List, Optional

from . import __version__, agent_link, loader_workers, log, safe_fs, stack_sampler


def trace_path(session_dir: str, rank: int) -> str:
    return os.path.join(session_dir, safe_fs.rank_name("rank-", rank, ".json.gz"))


def meta_path(session_dir: str, rank: int) -> str:
    return os.path.join(session_dir, safe_fs.rank_name("rank-", rank, ".meta.json"))


class _GcRanges:
    """While profiling, each garbage collection becomes an `eroica::gc` profiler range."""

    def __init__(self, record_function):
        self._record_function = record_function
        self._open = None

    def __call__(self, phase: str, info: Dict[str, Any]) -> None:
        try:
            if phase == "start":
                self._open = self._record_function("eroica::gc")
                self._open.__enter__()
            elif self._open is not None:
                opened, self._open = self._open, None
                opened.__exit__(None, None, None)
        except Exception:
            self._open = None

    def install(self) -> None:
        gc.callbacks.append(self)

    def remove(self) -> None:
        try:
            gc.callbacks.remove(self)
        except ValueError:
            pass
        self("stop", {})  # closes a range left open by an interrupted collection


class _DeferredEvents:
    """Moves torch's parse of the window's events off the training thread.

    Stopping torch's profiler (autograd.profiler.profile.__exit__) turns every recorded event
    into a Python FunctionEvent, on the thread that stops it: about 50 µs per event here, 0.95 s
    of a 3-step window of a small GRU (15,458 events, its steps 140 ms), and 15 s for 300,000
    events, where a logging loop on one rank read tensors element by element (the hang detector
    then took the stalled rank for a hang). eroica needs none of those objects where torch has
    Kineto (its trace export writes Kineto's own results), and needs them for the export alone
    where it has not (Debian's CPU-only 1.13: the events are written from them). So the stop keeps
    torch's results and an empty list, and the export thread parses them where it must, the
    window's first whole steps of at most `max_events` events (at least its first step): parsing
    and writing from Python hold the GIL about 140 µs per event, and a window of 2 million events
    had starved the training thread for minutes.
    """

    def __init__(self, prof):
        self._inner = getattr(prof, "profiler", None)
        self._held: List[Any] = []
        self.installed = False
        if self._inner is None or not callable(getattr(self._inner, "_parse_kineto_results", None)):
            return
        held = self._held

        def hold(result):
            held.append(result)
            return []

        try:
            self._inner._parse_kineto_results = hold  # this profiler object only
            self.installed = True
        except Exception:
            pass

    def finish(self, max_events: int = 0) -> Optional[Dict[str, int]]:
        """Export thread: gives the profiler the events it skipped, where its export needs them.
        Returns {"events", "kept", "steps_kept"} when steps were left out by `max_events`."""
        if not self.installed:
            return None
        self.installed = False
        inner, held = self._inner, self._held
        try:
            del inner._parse_kineto_results  # torch's own method again
        except AttributeError:
            pass
        if not held:
            return None  # torch did not parse at stop (newer ones parse on demand): nothing skipped
        from torch.autograd import kineto_available

        if kineto_available():
            return None
        result, cut = held.pop(), None
        recorded = result.events()
        if max_events > 0 and len(recorded) > max_events:
            kept, steps = _first_whole_steps(recorded, max_events)
            cut = {"events": len(recorded), "kept": len(kept), "steps_kept": steps}
            result = _SomeEvents(result, kept)
        del recorded
        events = inner.function_events  # the empty EventList made at stop
        events.extend(inner._parse_kineto_results(result))
        events._build_tree()
        return cut


class _SomeEvents:
    """torch's profiler results with only some of their events (what its parse reads of them)."""

    def __init__(self, result, events):
        self._result = result
        self._events = events

    def events(self):
        return self._events

    def trace_start_us(self):
        return self._result.trace_start_us()


def _first_whole_steps(recorded, max_events: int):
    """The window's events in time order up to the first ProfilerStep that would pass
    `max_events` (the first step whole in any case), and how many steps that keeps."""
    ordered = sorted(recorded, key=lambda e: e.start_us())
    step_starts = sorted(e.start_us() for e in ordered if e.name().startswith("ProfilerStep#"))
    if not step_starts:
        return ordered[:max_events], 0
    kept_steps = 1
    end = _count_before(ordered, step_starts[1]) if len(step_starts) > 1 else len(ordered)
    for k in range(2, len(step_starts)):
        next_end = _count_before(ordered, step_starts[k])  # the events of the first k steps
        if next_end > max_events:
            break
        kept_steps, end = k, next_end
    return ordered[:end], kept_steps


def _count_before(ordered, start_us) -> int:
    lo, hi = 0, len(ordered)
    while lo < hi:
        mid = (lo + hi) // 2
        if ordered[mid].start_us() < start_us:
            lo = mid + 1
        else:
            hi = mid
    return lo


class Capture:
    """Profiles iterations [first, first + iterations) or until max_s, whichever is first.

    Driven from the training thread at iteration boundaries: `start(i)` when iteration i
    begins, `on_boundary(i)` at every later boundary; it returns True once stopped.
    """

    def __init__(self, session: Dict[str, Any], rank: int, world_size: int,
                 session_dir: str, with_stack: bool = False, record_shapes: bool = False,
                 stack_hz: float = 0.0, stack_max_samples: int = 0, max_trace_events: int = 0):
        self.session = session
        self.rank = rank
        self.world_size = world_size
        self.session_dir = session_dir
        self._with_stack = with_stack
        self._record_shapes = record_shapes
        self._stack_hz = stack_hz
        self._stack_max_samples = stack_max_samples
        self._max_trace_events = max_trace_events  # 0: every event (_DeferredEvents)
        self.trace_cut: Optional[Dict[str, int]] = None  # steps left out of the trace, if any
        self._sampler: Optional[stack_sampler.StackSampler] = None  # the window's stacks
        self._loader_generation = 0  # the DataLoader workers' window, 0: none opened
        self.iteration_ids: List[int] = []
        self.iteration_times_s: List[float] = []
        self.stop_reason = ""
        self.error = ""
        self._prof = None
        self._stopped_prof = None  # kept for the export thread
        self._deferred_events: Optional[_DeferredEvents] = None
        self._record_function = None
        self._step_range = None
        self._gc = None
        self._end_iteration = 0
        self._deadline_ns = 0
        self.start_unix_ns = 0
        self.start_monotonic_ns = 0
        self.stop_monotonic_ns = 0

    def start(self, iteration: int) -> bool:
        import torch
        import torch.profiler as tp
        from torch.autograd.profiler import record_function

        safe_fs.ensure_session_dir(self.session_dir)
        activities = [tp.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(tp.ProfilerActivity.CUDA)
        self._record_function = record_function
        prof = tp.profile(activities=activities, record_shapes=self._record_shapes,
                          with_stack=self._with_stack)
        prof.step_num = iteration
        self.start_unix_ns = time.time_ns()
        self.start_monotonic_ns = time.monotonic_ns()
        prof.start()
        # At stack_hz 0 the sampler only reads the window's CPU share (no thread, no samples).
        self._sampler = stack_sampler.StackSampler(threading.get_ident(), self._stack_hz, self._stack_max_samples,
                                                     other_threads=True)
        self._sampler.start()
        if self._stack_hz > 0:
            self._open_loader_window()
        agent_link.announce_capture(self.session_dir, self.start_unix_ns, self.session["capture_max_s"])
        self._prof = prof
        self._end_iteration = iteration + int(self.session["capture_iters"])
        max_ns = int(float(self.session["capture_max_s"]) * 1e9)
        self._deadline_ns = self.start_monotonic_ns + max_ns
        self._open_step(iteration)
        self._gc = _GcRanges(record_function)
        self._gc.install()
        return True

    def _open_loader_window(self) -> None:
        """DataLoader worker processes sample their own stacks until the window closes."""
        control = loader_workers.control()
        if control is None:
            return
        try:
            until = self.start_unix_ns + int(float(self.session["capture_max_s"]) * 1e9)
            self._loader_generation = control.begin(self.rank, self._stack_hz, self._stack_max_samples, until)
        except Exception as e:  # the training thread's own samples are still taken
            log.info("rank %d: loader workers not sampled: %s: %s" % (self.rank, type(e).__name__, e))

    def _close_loader_window(self) -> None:
        control = loader_workers.control()
        if control is not None and self._loader_generation:
            try:
                control.end()
            except Exception:
                pass

    def _open_step(self, iteration: int) -> None:
        if self._sampler is not None:
            self._sampler.mark_step(iteration)
        self._step_range = self._record_function("ProfilerStep#%d" % iteration)
        self._step_range.__enter__()

    def _close_step(self) -> None:
        if self._step_range is not None:
            opened, self._step_range = self._step_range, None
            opened.__exit__(None, None, None)

    def on_boundary(self, iteration: int, finished_s: float) -> bool:
        """Iteration `iteration - 1` just ended after `finished_s`; returns True once stopped."""
        self._close_step()
        self.iteration_ids.append(iteration - 1)
        self.iteration_times_s.append(finished_s)
        if iteration >= self._end_iteration:
            self.stop("iterations")
            return True
        if time.monotonic_ns() >= self._deadline_ns:
            self.stop("time")
            return True
        self._prof.step()
        self._prof.step_num = iteration
        self._open_step(iteration)
        return False

    def stop(self, reason: str) -> None:
        self.stop_reason = reason
        if self._gc is not None:
            self._gc.remove()
            self._gc = None
        try:
            self._close_step()
        finally:
            prof, self._prof = self._prof, None
            if self._sampler is not None:
                self._sampler.stop()
                self._close_loader_window()
            if prof is not None:
                self._deferred_events = _DeferredEvents(prof)
                prof.stop()
                self._stopped_prof = prof
            self.stop_monotonic_ns = time.monotonic_ns()
            agent_link.announce_stop(self.session_dir, time.time_ns())

    def abort(self, error: str) -> None:
        """Stops after a profiler failure; the meta file records the error."""
        self.error = error
        try:
            self.stop("error")
        except Exception:
            self._prof = None

    def export(self) -> None:
        """Writes the gzipped trace, then the meta file. Runs on a background thread."""
        prof = self._stopped_prof
        if prof is not None:  # also after an abort: what was recorded is still good
            private = None
            try:
                # torch opens the export path itself (following links): it writes into a
                # fresh folder only we can enter, and we compress from there.
                private = safe_fs.private_dir(self.session_dir, "export-rank-%d" % self.rank)
                raw = os.path.join(private, "trace.json")
                deferred, self._deferred_events = self._deferred_events, None
                if deferred is not None:
                    self.trace_cut = deferred.finish(self._max_trace_events)
                    if self.trace_cut:
                        log.info("rank %d: the window recorded %d events; its first %d step(s), %d "
                                 "events, are in the trace" % (
                                     self.rank, self.trace_cut["events"],
                                     self.trace_cut["steps_kept"], self.trace_cut["kept"]))
                prof.export_chrome_trace(raw)
                with open(raw, "rb") as src, \
                        safe_fs.atomic_writer(trace_path(self.session_dir, self.rank)) as out, \
                        gzip.GzipFile(filename="", mode="wb", compresslevel=6,
                                      fileobj=out) as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            except Exception as e:
                self.error = "trace export failed: %s: %s" % (type(e).__name__, e)
            finally:
                if private is not None:
                    shutil.rmtree(private, ignore_errors=True)
        self._stopped_prof = None
        self._write_stacks()
        try:
            safe_fs.write_json(meta_path(self.session_dir, self.rank), self.meta())
        except OSError as e:
            log.info("rank %d: no files for session %s (%s%s); training goes on" % (
                self.rank, self.session_dir, e, "; " + self.error if self.error else ""))
            raise SessionNotWritten() from e
        if self.error.startswith("trace export failed"):
            log.info("rank %d: %s" % (self.rank, self.error))

    def _write_stacks(self) -> None:
        sampler, self._sampler = self._sampler, None
        if sampler is None:
            return
        workers: List[Dict[str, Any]] = []
        control = loader_workers.control()
        if control is not None and self._loader_generation:
            try:
                workers = control.collect(self._loader_generation)
            except Exception as e:
                log.info("rank %d: loader workers' samples lost: %s: %s" % (self.rank, type(e).__name__, e))
        try:
            sampler.write(self.session_dir, self.rank, self.start_unix_ns, workers)
        except Exception as e:  # the trace is still good without them
            log.info("rank %d: no stack samples written: %s: %s" % (self.rank, type(e).__name__, e))

    def meta(self) -> Dict[str, Any]:
        doc = rank_identity(self.rank, self.world_size)
        doc.update({
            "session_id": self.session["session_id"],
            "reason": self.session["reason"],
            "target_iteration": self.session["target_iteration"],
            "iteration_ids": self.iteration_ids,
            "iteration_times_s": [round(t, 6) for t in self.iteration_times_s],
            "profiler_start_unix_ns": self.start_unix_ns,
            "profiler_start_monotonic_ns": self.start_monotonic_ns,
            "capture_s": round((self.stop_monotonic_ns - self.start_monotonic_ns) / 1e9, 6)
            if self.stop_monotonic_ns else None,
            "stop_reason": self.stop_reason,
            "detector": self.session.get("local_detector", {}),
        })
        if self.stop_reason == "exit" and not self.iteration_ids:
            # The job's exit cut the window before any of its iterations ended: the trace holds
            # the loop's end and the teardown, no step to compare (an unseen keyword-spotting
            # job's last forced session, its window opened at the exit: `global host` at 31 ms
            # "a step" on a healthy run). Said as a miss, as a rank that never began it is.
            doc["missed"] = "the job ended before an iteration of the window did (at its first, %d)" % (
                self.session["target_iteration"])
        if self.trace_cut:
            doc["trace_cut"] = dict(self.trace_cut)  # {"events", "kept", "steps_kept"}
        if self.error:
            doc["error"] = self.error
        return doc


class SessionNotWritten(Exception):
    """This rank's meta could not be written (said in one line already): rank 0 has nothing
    to gather from it."""


def rank_identity(rank: int, world_size: int) -> Dict[str, Any]:
    local_rank = os.environ.get("LOCAL_RANK")
    torch = sys.modules.get("torch")
    return {
        "rank": rank,
        "world_size": world_size,
        "local_rank": int(local_rank) if local_rank and local_rank.isdigit() else None,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "torch_version": getattr(torch, "__version__", None),
        "python_version": platform.python_version(),
        "eroica_version": __version__,
    }


def write_missed_meta(session: Dict[str, Any], rank: int, world_size: int, session_dir: str,
                      why: str, detector: Dict[str, Any]) -> None:
    """A rank that cannot take part still writes its meta, so rank 0 need not wait for it."""
    safe_fs.ensure_session_dir(session_dir)
    doc = rank_identity(rank, world_size)
    doc.update({"session_id": session["session_id"], "reason": session["reason"],
                "target_iteration": session["target_iteration"], "iteration_ids": [],
                "profiler_start_unix_ns": None, "profiler_start_monotonic_ns": None,
                "detector": detector, "missed": why})
    try:
        safe_fs.write_json(meta_path(session_dir, rank), doc)
    except OSError as e:
        log.info("rank %d: no files for session %s (%s); training goes on"
                 % (rank, session_dir, e))
        raise SessionNotWritten() from e


def session_doc(session: Dict[str, Any], world_size: int,
                series: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The content of session.json (written by rank 0)."""
    doc = {"schema": "eroica.session/v1"}
    doc.update({k: v for k, v in session.items() if k != "local_detector"})
    doc["world_size"] = world_size
    doc["window"] = {"iterations": session.get("capture_iters"),
                     "max_seconds": session.get("capture_max_s")}
    if series:
        doc["iteration_times_s"] = series.get("times_s", [])
        doc["iteration_times_first_id"] = series.get("first_id")
    return doc

"""The per-process runtime: iteration clock and detector on the training thread, everything
slow on background threads.

Training thread (hook events, a few µs per iteration while idle): take a timestamp, append
the iteration time, feed the degradation detector, and check three attributes (mail from the
monitor, an active capture, a pending session). Nothing here touches the store or the disk.

Monitor thread (wakes every EROICA_POLL_S, or at once after a detection): resolves the job
store, polls it (one `add(epoch, 0)`), publishes proposals, watches for hangs and dumps
stacks. Finisher threads (daemon; the exit waits for them at most EROICA_EXIT_WAIT_S): export
traces, and on rank 0 wait for all ranks and run the diagnosis.
"""

import atexit
import collections
import itertools
import os
import resource
import socket
import sys
import threading
import time
import weakref
from typing import Any, Dict, List, Optional, Tuple

from . import capture as capture_mod
from . import agent_link, finish, hang, hooks, log, safe_fs, trigger
from .config import Config
from .detector import (Degradation, DegradationDetector, HangDetector, captured_pace, cycle_means,
                       held_pace, ran_faster_since, still_speeding_up)

_perf_ns = time.perf_counter_ns
_RUSAGE_THREAD = getattr(resource, "RUSAGE_THREAD", None)  # Linux only


def _thread_cpu() -> Optional[Tuple[int, float, int]]:
    """The calling thread, its CPU time so far (s) and its page faults so far: an iteration's
    own work, which the detector reads beside its time (1.8 us a call here). None where the
    system cannot say."""
    if _RUSAGE_THREAD is None:
        return None
    try:
        usage = resource.getrusage(_RUSAGE_THREAD)
    except (OSError, ValueError):
        return None
    return threading.get_ident(), usage.ru_utime + usage.ru_stime, usage.ru_minflt + usage.ru_majflt


# Iteration boundaries come from the optimizer; a loop that draws this many batches without
# any optimizer step (inference, evaluation-only jobs) is paced by DataLoader batches instead.
_DATALOADER_MODE_AFTER_BATCHES = 100
_MODE_NONE, _MODE_OPTIMIZER, _MODE_DATALOADER = 0, 1, 2
_STORE_RETRY_S = 5.0
# Of the exit bound, kept for our store calls in flight to return before the interpreter
# finalizes: a live store answers in milliseconds.
_STORE_DRAIN_S = 0.5
# An automatic baseline waits for iteration times to stop falling at most this many detector
# windows past its earliest iteration.
_BASELINE_SETTLE_WINDOWS = 1
# A window's finishing work keeps the detector from measuring for at most this long: its tasks
# are bounded (exports, the collect timeout), and one that is not must not blind the detector.
_FINISHING_MAX_S = 120.0
# A job that runs faster than before its baseline gets a new one (ran_faster_since), at most this
# many times: each costs a window, and a job whose pace keeps falling has no best to keep.
_FASTER_BASELINES_MAX = 2


class Runtime:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        safe_fs.set_group_shared(cfg.group_shared)
        self.detector = DegradationDetector(cfg.window, cfg.threshold, cfg.warmup,
                                            cfg.noise_sigmas, cfg.outlier_clip, cfg.cpu_threshold)
        self.hang_detector = HangDetector(cfg.hang_factor, cfg.hang_min_s)
        self.job_id = trigger.job_id(cfg.job_id)
        self.host = socket.gethostname()
        # Training-thread state.
        self.iteration = 0  # id of the iteration in progress
        self.iter_start_ns: Optional[int] = None
        self._iter_start_cpu: Optional[Tuple[int, float, int]] = None  # _thread_cpu() at its start
        self.last_progress_ns: Optional[int] = None
        self.durations_ns: collections.deque = collections.deque(
            maxlen=max(cfg.series_len, cfg.window))
        self.capture: Optional[capture_mod.Capture] = None
        # The detector's pace when the running capture began (held_pace).
        self._pace_before_capture: Optional[Tuple[float, float]] = None
        self._mode = _MODE_NONE
        self._batches_without_step = 0
        self._iterator_id = 0  # the DataLoader iterator the loop is drawing from
        self._epoch_break = False  # the running iteration spans the end of a loop
        self._pacer_id = 0
        self._pacer_ref = None
        self._pending: List[Dict[str, Any]] = []  # accepted sessions, by target iteration
        self._next_target = -1  # target of _pending[0], or -1
        self._force_at = cfg.trigger_at
        # The next baseline: due from this iteration id (-1: none). Unless it was set by
        # EROICA_BASELINE_AT, it waits until iteration times stop falling, for at most
        # _BASELINE_SETTLE_WINDOWS more windows.
        self._baseline_at = -1
        self._baseline_settles = cfg.baseline_at < 0
        if cfg.baseline:
            self._baseline_at = cfg.baseline_at if cfg.baseline_at >= 0 else cfg.warmup + cfg.window
        self._rebaseline_token: Optional[Tuple[int, int]] = None  # the request file last acted on
        # The detector's pace just before the kept baseline's window, while a faster pace since
        # may still call for a new baseline; and how many times one did.
        self._pace_before_baseline: Optional[Tuple[float, float]] = None
        self._faster_baselines = 0
        # A baseline is due because the job got faster, and waits for times to settle.
        self._faster_due = False
        # The kept baseline's window (iterations), and the period the detector had read when this
        # runtime last looked (_check_cycle_read).
        self._baseline_window: Optional[int] = None
        self._cycle_seen = 1
        self._started_unix_ns = time.time_ns()
        # Cross-thread: the monitor appends, the training thread pops (deque ops are atomic).
        self._mail: collections.deque = collections.deque()
        self._detection: Optional[Dict[str, Any]] = None
        # Monitor-thread state.
        self.rank = 0
        self.world_size = 1
        self.store_kind = ""
        self.coord: Optional[trigger.Coordinator] = None
        self._next_resolve_s = 0.0
        self._store_failures = 0
        self._hangs_handled: Dict[str, int] = {}  # session id -> stuck iteration
        self._skipped_until = -1  # end of the last session skipped for its folder
        self._captured: List[Any] = []  # (session, folder) of the windows this rank finished
        self._gil_watchdog: Optional[hang.GilStallWatchdog] = None
        self._wake = threading.Event()
        self._monitor: Optional[threading.Thread] = None
        self.monitor_ticks = 0  # our own cost, for the idle-cost measurement
        self.monitor_busy_ns = 0
        self._stopping = False
        self._shut_down = False
        self._finishers: List[Any] = []  # (thread, Finisher) of background tasks
        self._last_spawn_s = 0.0  # monotonic time the latest of them started
        # (slot, monotonic time) of the latest session this rank took part in, until the job
        # store says its gatherer is done with it; the monitor thread sets _settled_slot.
        self._unsettled: Optional[Tuple[int, float]] = None
        self._settled_slot = 0

    # ---- hook listener API (training thread) ---------------------------------------------

    def on_attach(self) -> None:
        self.iter_start_ns = None  # time spent detached is not an iteration
        self._iter_start_cpu = None

    def on_disabled(self) -> None:
        """After an internal error (raised on the training thread, or mailed to it)."""
        self._stopping = True
        self._wake.set()
        cap, self.capture = self.capture, None
        if cap is not None:
            cap.abort("eroica disabled")
            self._spawn(self._finisher().capture_done, cap)

    def on_batch(self, iterator: Any, start_ns: int) -> None:
        now_ns = _perf_ns()
        self.last_progress_ns = now_ns
        if id(iterator) != self._iterator_id:
            self._track_iterator(iterator)
        if self.iter_start_ns is None:
            self.iter_start_ns = start_ns
            self._iter_start_cpu = _thread_cpu()
            self._ensure_started()
        if self._mode == _MODE_OPTIMIZER:
            return
        if self._mode == _MODE_NONE:
            self._batches_without_step += 1
            if self._batches_without_step < _DATALOADER_MODE_AFTER_BATCHES:
                return
            self._mode = _MODE_DATALOADER
            log.debug("no optimizer step after %d batches: batches pace iterations"
                      % self._batches_without_step)
        self._boundary(now_ns)

    def on_epoch_end(self) -> None:
        # Between epochs (validation, checkpoints) a long pause is neither a hang nor a
        # slowdown: the watchdog sleeps until the next batch or step, and the iteration that
        # spans the break is not fed to the detector.
        self.last_progress_ns = None
        self._epoch_break = True

    def _track_iterator(self, iterator: Any) -> None:
        """Once per epoch: notice when the loop drops its iterator (`break`, end of training)."""
        self._iterator_id = id(iterator)
        try:
            weakref.finalize(iterator, self._on_iterator_gone, id(iterator)).atexit = False
        except TypeError:
            pass

    def _on_iterator_gone(self, iterator_id: int) -> None:
        if iterator_id == self._iterator_id:
            self._iterator_id = 0
            self.on_epoch_end()

    def on_step_end(self, optimizer: Any) -> None:
        now_ns = _perf_ns()
        if id(optimizer) != self._pacer_id and not self._adopt_pacer(optimizer):
            return  # another optimizer of the same loop (GAN, sparse embeddings)
        self._boundary(now_ns)

    def _adopt_pacer(self, optimizer: Any) -> bool:
        if self._pacer_ref is not None and self._pacer_ref() is not None:
            return False
        try:
            self._pacer_ref = weakref.ref(optimizer)
        except TypeError:
            self._pacer_ref = lambda: optimizer
        self._pacer_id = id(optimizer)
        if self._mode == _MODE_DATALOADER:  # it trains after all: restart the count
            self._restart_count()
        self._mode = _MODE_OPTIMIZER
        return True

    def _restart_count(self) -> None:
        if self.capture is not None:
            cap, self.capture = self.capture, None
            cap.abort("iteration pacing changed")
            self._spawn(self._finisher().capture_done, cap)
            self._hold_until_settled(cap.session)
        self.iteration = 0
        self.durations_ns.clear()
        self.detector.rebaseline()

    def _boundary(self, now_ns: int) -> None:
        """Iteration `self.iteration` ended at now_ns; the next one begins."""
        start_ns, start_cpu = self.iter_start_ns, self._iter_start_cpu
        self.iter_start_ns = self.last_progress_ns = now_ns
        self._iter_start_cpu = now_cpu = _thread_cpu()
        finished = self.iteration
        self.iteration = finished + 1
        finished_s = 0.0
        if start_ns is None:
            self._ensure_started()
        else:
            elapsed_ns = now_ns - start_ns
            self.durations_ns.append(elapsed_ns)
            finished_s = elapsed_ns * 1e-9
            if self._epoch_break:
                self._epoch_break = False
            elif self._slowed_by_eroica():
                pass
            else:
                cpu_s = faults = None  # the thread's own work in it, when one thread ran all of it
                if start_cpu is not None and now_cpu is not None and start_cpu[0] == now_cpu[0]:
                    cpu_s, faults = now_cpu[1] - start_cpu[1], now_cpu[2] - start_cpu[2]
                degradation = self.detector.add(finished_s, cpu_s, faults)
                self._check_cycle_read(finished)
                if degradation is not None:
                    self._request_session(finished, "degradation", degradation.best_mean_s,
                                          degradation.current_mean_s, degradation)
                else:
                    self._check_faster_than_baseline(finished)
        if self._mail and not self._read_mail(finished + 1):
            return  # disabled
        if self.capture is not None:
            self._capture_boundary(finished + 1, finished_s)
        elif 0 <= self._next_target <= finished + 1:
            self._start_capture(finished + 1)
        if finished == self._force_at:
            self._request_session(finished, "forced", self.detector.best_mean_s,
                                  self._mean_iteration_s())
        elif self._baseline_due(finished) and self._detection is None:
            # Every rank asks; the store's slot claim keeps it to one session.
            self._baseline_at = -1
            self._faster_due = False
            self._request_session(finished, "baseline", self.detector.best_mean_s,
                                  self._mean_iteration_s())

    def _slowed_by_eroica(self) -> bool:
        """Whether the iteration that just ended ran beside our own work: a profiled window,
        this rank's work after one (the trace's export, its summary, the exchange), or any
        rank's until the session's gatherer settles it (the other ranks' exports, rank 0's
        diagnosis). Such iterations are slower by our doing and no slowdown of the job; the
        detector measures none of them (a session's cool-down and the baseline alike). A
        4-rank ViT on 2 cores under `eroica run` ran 250 ms steps, 1.04 s while its baseline's
        trace was exported and 0.44-0.66 s for five more while it was summarized and
        diagnosed; counted from the window's start, 2 x 5 iterations had been left out, and
        every one of five such jobs then started a 'degradation' session of its own doing ~15
        iterations after its baseline, whose cool-down hid the fault injected later. Blind
        only to its own rank's work, 7 of 35 ViT jobs (3-6 ranks on 2 cores) still started
        one 0-6 s after rank 0 finished diagnosing their baseline (13-32 s of work). The work
        after a window blinds the detector for _FINISHING_MAX_S at most."""
        return self.capture is not None or self._finishing()

    def _finishing(self) -> bool:
        """Whether eroica's work after a window still runs: this rank's own (the trace's export,
        its summary, the exchange) or, until the job store says its gatherer is done, any
        rank's; bounded by _FINISHING_MAX_S. Any thread."""
        unsettled = self._unsettled
        if unsettled is not None:
            if (self._settled_slot == unsettled[0]
                    or time.monotonic() - unsettled[1] > _FINISHING_MAX_S):
                self._unsettled = None
            else:
                return True
        if not self._finishers or time.monotonic() - self._last_spawn_s > _FINISHING_MAX_S:
            return False
        return any(thread.is_alive() for thread, _ in self._finishers)

    def _hold_until_settled(self, session: Dict[str, Any]) -> None:
        """This rank's part of the session is done; the detector waits for the whole job's
        (_slowed_by_eroica). Without a job store nobody settles it: the bound ends the wait."""
        slot = session.get("slot")
        if isinstance(slot, int) and self.coord is not None:
            self._unsettled = (slot, time.monotonic())

    def _check_faster_than_baseline(self, finished: int) -> None:
        """The job's best window now runs faster than before its baseline: the baseline is no
        longer how it runs at its best, so a new one is due (after times settle, as any)."""
        before, best = self._pace_before_baseline, self.detector.best_pace()
        if before is None or best is None or self._baseline_at >= 0:
            return
        if not ran_faster_since(before, best, self.cfg.threshold, self.cfg.noise_sigmas):
            return
        self._pace_before_baseline = None
        if self._faster_baselines >= _FASTER_BASELINES_MAX:
            return
        self._faster_baselines += 1
        # Every rank sees the job's pace and asks; one line says why (the store keeps one session).
        say = log.info if self.rank == 0 else log.debug
        say("iterations run at %.1f ms against %.1f ms before the baseline: a new baseline"
            % (best[0] * 1e3, before[0] * 1e3))
        self._baseline_at = finished + 1
        self._baseline_settles = True
        self._faster_due = True

    def _check_cycle_read(self, finished: int) -> None:
        """The detector read the job's period (detector.py, "Cycles") after the baseline was kept,
        the baseline was proposed before any period was read, and its window is not whole cycles:
        it holds the kinds of iteration in other proportions than a session's window does (5
        iterations of an unseen PPO job held one rollout or two, its sessions' 8 two), so a new
        baseline is due, taken as one due to a faster job is: once times settle, while the job
        still runs at its best. Not for a baseline of whole cycles of another rank's reading: where
        the pattern is weak a rank reads a wrong length now and then (one of that job's 5 ranks
        read 3 where the baseline had been proposed at 4, 8 iterations; it asked for 6)."""
        cycle = self.detector.cycle
        if cycle == self._cycle_seen:
            return
        self._cycle_seen = cycle
        kept = self._baseline_window
        if cycle <= 1 or not kept or kept % cycle == 0 or self._baseline_at >= 0:
            return
        say = log.info if self.rank == 0 else log.debug  # every rank asks; one line says why
        say("iterations repeat every %d: a new baseline of whole cycles (the kept one has %d iterations)"
            % (cycle, self._baseline_window))
        self._baseline_at = finished + 1
        self._baseline_settles = True
        self._faster_due = True

    def _baseline_due(self, finished: int) -> bool:
        if self._baseline_at < 0 or finished < self._baseline_at:
            return False
        if self._faster_due and not self._still_at_its_best():
            return False
        if not self._baseline_settles:
            return True
        window = self.cfg.window
        if finished >= self._baseline_at + _BASELINE_SETTLE_WINDOWS * window:
            return True  # still drifting after that long: its pace is the job's pace
        recent = itertools.islice(reversed(self.durations_ns), window)
        return not still_speeding_up([d * 1e-9 for d in recent][::-1])

    def _still_at_its_best(self) -> bool:
        """Whether a baseline due because the job got faster may still be taken: the detector's
        window now is no slower than its best by the degradation rule's own ratio. Times settle a
        window or more after the request, and a fault begun meanwhile is no pace to keep: an
        unseen 3-rank audio job asked at about step 195, its every rank's workers slowed from
        180, and the baseline taken at 207 held them; its later slowdown then read as no change.
        Where the pace no longer holds, the request is dropped (the old baseline stays) and the
        detector's slowdown rule goes on as before."""
        current, best = self.detector.current_pace(), self.detector.best_pace()
        if current is None or best is None or current[0] <= self.cfg.threshold * best[0]:
            return True
        say = log.info if self.rank == 0 else log.debug  # as its request was said
        say("the new baseline is dropped: iterations run at %.1f ms now against %.1f ms at their best"
            % (current[0] * 1e3, best[0] * 1e3))
        self._baseline_at = -1
        self._faster_due = False
        return False

    def request_baseline(self) -> None:
        """The user's word that the job's present speed is intended (a new model, image or
        data): a new baseline once iteration times settle. Any thread; never raises."""
        self._mail.append(("baseline-request", None))
        self._wake.set()

    # ---- sessions (training thread) --------------------------------------------------------

    def _request_session(self, iteration: int, reason: str, best_mean_s: Optional[float],
                         current_mean_s: Optional[float],
                         degradation: Optional[Degradation] = None) -> None:
        self._detection = {"reason": reason, "detected_iteration": iteration,
                           "detected_unix_ns": time.time_ns(), "best_mean_s": best_mean_s,
                           "current_mean_s": current_mean_s}
        if degradation is not None and degradation.by_cpu:
            # Fired by the training thread's own work (detector.py): the session says so.
            self._detection.update(best_cpu_s=degradation.best_cpu_s,
                                   current_cpu_s=degradation.current_cpu_s)
        if degradation is not None and degradation.current_faults is not None:
            # Its page faults rose with it: the diagnosis says what that means.
            self._detection.update(best_faults_per_iter=round(degradation.best_faults, 1),
                                   current_faults_per_iter=round(degradation.current_faults, 1))
        self._wake.set()

    def _read_mail(self, next_iteration: int) -> bool:
        """Handles the monitor's messages; False when eroica was disabled by one."""
        while self._mail:
            kind, payload = self._mail.popleft()
            if kind == "rebaseline":
                self.detector.rebaseline()
                continue
            if kind == "baseline-request":
                self._baseline_at = next_iteration + self.cfg.warmup
                self._baseline_settles = True
                self._faster_due = False  # the user's word: whatever the pace is then
                self.detector.rebaseline()
                continue
            if kind == "disable":
                hooks.disable(payload)  # calls on_disabled, on this (the training) thread
                return False
            # This slowdown is being captured already. The baseline is no slowdown: the detector
            # keeps watching through it, or a slowdown soon after it would become the new best.
            if payload.get("reason") != "baseline":
                self.detector.disarm()
                # A baseline still waiting for times to settle would now measure the slowdown.
                self._baseline_at = -1
            else:
                self._baseline_at = -1  # another rank's request won: this one is not due again
                self._pace_before_baseline = None  # the next baseline's window sets it
            if payload["target_iteration"] < next_iteration:
                self._write_missed(payload, "seen at iteration %d" % next_iteration)
                continue
            self._pending.append(payload)
            self._pending.sort(key=lambda p: p["target_iteration"])
            self._next_target = self._pending[0]["target_iteration"]
        return True

    def _start_capture(self, iteration: int) -> None:
        session = self._pending.pop(0)
        self._next_target = self._pending[0]["target_iteration"] if self._pending else -1
        if session["target_iteration"] != iteration:
            self._write_missed(session, "busy until iteration %d" % iteration)
            return
        if _another_profiler_active():
            self._write_missed(session, "another profiler is active in this process")
            return
        session = dict(session, local_detector=self._detector_state())
        cap = capture_mod.Capture(session, self.rank, self.world_size,
                                  self._raw_dir(session), self.cfg.with_stack,
                                  self.cfg.record_shapes, self.cfg.stack_hz,
                                  self.cfg.stack_max_samples, self.cfg.trace_max_events)
        try:
            cap.start(iteration)
        except Exception as e:
            log.once("profiler-start", "profiler failed to start, no trace from rank %d: %s: %s"
                     % (self.rank, type(e).__name__, e))
            cap.abort("profiler start failed: %s: %s" % (type(e).__name__, e))
            self._spawn(self._finisher().capture_done, cap)
            self._hold_until_settled(cap.session)
            return
        self.capture = cap
        self._pace_before_capture = self.detector.current_pace()

    def _capture_boundary(self, iteration: int, finished_s: float) -> None:
        cap = self.capture
        try:
            done = cap.on_boundary(iteration, finished_s)
        except Exception as e:
            log.once("profiler-step", "profiler failed during the window on rank %d: %s: %s"
                     % (self.rank, type(e).__name__, e))
            cap.abort("profiler failed: %s: %s" % (type(e).__name__, e))
            done = True
        if done:
            self.capture = None
            if cap.session.get("reason") == "baseline" and not cap.error:
                self._pace_before_baseline = self._pace_before_capture
                # Only a window proposed before any period was read is taken again for one
                # (_check_cycle_read): ranks can read different lengths where the pattern is weak.
                iters = int(cap.session.get("capture_iters") or 0)
                self._baseline_window = iters if iters and cap.session.get("cycle", 1) == 1 else None
            if cap.session.get("reason") != "baseline":  # cool-down ends with a new baseline
                cycle = self.detector.cycle
                captured = None if cap.error else captured_pace(cycle_means(cap.iteration_times_s, cycle),
                                                                self.detector.window)
                # A window of a few cycles has too few of them for a pace of its own: the pace
                # just before it holds the job then.
                if captured is None and cycle > 1 and not cap.error:
                    pace = self._pace_before_capture
                else:
                    pace = held_pace(captured, self._pace_before_capture) if captured else None
                self.detector.rebaseline(pace)
            self._captured.append((cap.session, cap.session_dir))
            self._spawn(self._finisher().capture_done, cap)
            self._hold_until_settled(cap.session)

    def _write_missed(self, session: Dict[str, Any], why: str) -> None:
        log.debug("session %s missed: %s" % (session["session_id"], why))
        self.detector.rebaseline()
        self._spawn(self._finisher().missed, session, self._raw_dir(session), why,
                    self._detector_state())
        self._hold_until_settled(session)

    def _detector_state(self) -> Dict[str, Any]:
        return {"best_mean_s": self.detector.best_mean_s,
                "current_mean_s": self.detector.current_mean_s}

    def _raw_dir(self, session: Dict[str, Any]) -> str:
        """Where this rank's files of a session (trace, meta, stacks) go: the node-local folder
        when there is one (EROICA_LOCAL_DIR), else the central one."""
        root = self.cfg.local_dir or self.cfg.dir
        return os.path.join(root, safe_fs.component(session["session_id"]))

    def _usable(self, session: Dict[str, Any]) -> bool:
        """Monitor thread: the folder this rank writes the session's files into exists and is
        ours, or the session is skipped on this rank with one line (a read-only or foreign
        folder)."""
        try:
            safe_fs.ensure_session_dir(self._raw_dir(session))
            return True
        except OSError as e:
            log.info("session %s skipped on rank %d: %s" % (
                session.get("session_id"), self.rank, e))
            # It still covers the slowdown it was proposed for, as a pending session would.
            self._skipped_until = max(self._skipped_until, session["target_iteration"]
                                      + int(session.get("capture_iters", 0)))
            return False

    def _mean_iteration_s(self, last: int = 0) -> Optional[float]:
        """Mean of the last `last` iterations (default: the detector window), or None."""
        durations = self.durations_ns
        n = min(len(durations), last or self.cfg.window)
        if n < 3:
            return None
        # One C-level pass (sum over islice): safe against the training thread's appends.
        return sum(itertools.islice(reversed(durations), n)) / n * 1e-9

    # ---- finishing (background threads) ----------------------------------------------------

    def _finisher(self) -> finish.Finisher:
        return finish.Finisher(self.cfg, self.rank, self.world_size, self.coord)

    def _spawn(self, target, *args) -> None:
        """Runs a Finisher method on a background thread (`target.__self__` is kept for the
        bounded exit)."""
        self._finishers = [(t, f) for t, f in self._finishers if t.is_alive()]
        self._finishers.append((finish.spawn(target, *args), target.__self__))
        self._last_spawn_s = time.monotonic()

    # ---- monitor thread --------------------------------------------------------------------

    def _ensure_started(self) -> None:
        if self._monitor is not None or self._stopping:
            return
        self._monitor = threading.Thread(target=self._monitor_main, name="eroica-monitor",
                                         daemon=True)
        self._monitor.start()
        atexit.register(self.shutdown, True)
        try:  # fork-started multiprocessing children leave through os._exit, not atexit
            from multiprocessing import util

            util.Finalize(None, self.shutdown, args=(True,), exitpriority=50)
        except Exception:
            pass

    def _monitor_main(self) -> None:
        if self.cfg.faulthandler:
            self._gil_watchdog = hang.GilStallWatchdog(self.cfg.dir, self.host)
        while not self._stopping:
            self._wake.wait(self.cfg.poll_s)
            self._wake.clear()
            if self._stopping:
                break
            if hooks.listener() is not self:
                continue  # detached for now (hooks uninstalled): idle until re-attached
            start_ns = _perf_ns()
            try:
                self._tick()
            except trigger.StoreUnavailable as e:
                self._store_failed(e)
            except Exception as e:
                # The profiler belongs to the training thread: it disables us there, at its
                # next iteration boundary, stopping a window in flight first.
                self._mail.append(("disable", e))
                break
            finally:
                self.monitor_ticks += 1
                self.monitor_busy_ns += _perf_ns() - start_ns
        if self._gil_watchdog is not None:
            self._gil_watchdog.cancel()

    def _tick(self) -> None:
        if self._needs_store():
            self._resolve_store()
        if self._gil_watchdog is not None:
            mean_s = self._mean_iteration_s() or 0.0
            self._gil_watchdog.rearm(max(30.0, 2 * self.hang_detector.threshold_s(mean_s)))
        coord = self.coord
        if coord is None:
            return
        if self.rank == 0:
            self._check_rebaseline_request()
        sessions, hangs = coord.poll()
        self._check_settled(coord)
        for session in sessions:
            if self._usable(session):
                self._mail.append(("session", session))
        detection, self._detection = self._detection, None
        if detection is not None and self._finishing():
            # A window opened now would measure eroica's own work beside the job's: a 6-rank
            # distillation job's session forced 3 s after its baseline's window had rank 0 still
            # exporting that baseline (its other threads 0.48 cores), and named rank 0's "other
            # threads" 175 ms a step, the job 93 % slower in it. Proposed once that work is done.
            if self._detection is None:
                self._detection = detection
        elif detection is not None:
            self._propose(coord, detection)
        self._check_hang(coord)
        for notice in hangs:
            self._handle_hang(notice)
        self._store_failures = 0

    def _check_settled(self, coord: trigger.Coordinator) -> None:
        """After a poll: whether the session this rank's detector waits for is settled."""
        unsettled = self._unsettled
        if unsettled is not None and coord.is_settled(unsettled[0]):
            self._settled_slot = unsettled[0]

    def _check_rebaseline_request(self) -> None:
        """`python -m eroica rebaseline` leaves <dir>/<job>.rebaseline: rank 0 acts on it once
        (one stat per tick) and removes it; its baseline session reaches every rank."""
        path = rebaseline_request_path(self.cfg.dir, self.job_id)
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            return
        token = (st.st_mtime_ns, st.st_ino)
        if token == self._rebaseline_token or st.st_mtime_ns < self._started_unix_ns:
            return  # acted on already, or left from before this process began
        self._rebaseline_token = token
        try:
            os.unlink(path)
        except OSError:
            pass
        log.info("rank 0: a new baseline was requested; it is taken once iteration times settle")
        self.request_baseline()

    def _needs_store(self) -> bool:
        dist = sys.modules.get("torch.distributed")
        pg_up = dist is not None and dist.is_available() and dist.is_initialized()
        if self.store_kind == "default_pg" and not pg_up:
            # The job destroyed its process group: let go of its store now, so that it is
            # destroyed by the job's thread and not by us at interpreter exit.
            self.coord = None
            self.store_kind = "gone"
            return False
        if self.coord is None:
            if self.store_kind == "gone":
                return pg_up  # only a new process group brings sessions back
            return time.monotonic() >= self._next_resolve_s
        return self.store_kind == "memory" and pg_up  # initialized after our first iteration

    def _resolve_store(self) -> None:
        try:
            resolved = trigger.resolve_store(self.cfg.store, self.cfg.job_id)
        except Exception as e:
            raise trigger.StoreUnavailable("cannot reach the job store: %s: %s"
                                           % (type(e).__name__, e)) from e
        if resolved is None:
            return
        store, self.rank, self.world_size, self.store_kind = resolved
        self.coord = trigger.Coordinator(store)
        agent_link.register_process(self.cfg.local_dir or self.cfg.dir, self.rank)
        log.debug("rank %d/%d coordinates through %s" % (self.rank, self.world_size,
                                                         self.store_kind))

    def _store_failed(self, error: Exception) -> None:
        self.coord = None
        self._store_failures += 1
        self._next_resolve_s = time.monotonic() + _STORE_RETRY_S
        log.debug("store: %s" % error)
        if self._store_failures == 3:
            log.once("store", "job store unreachable, sessions paused until it answers: %s"
                     % error)

    def _busy(self) -> bool:
        return bool(self._pending or self.capture is not None
                    or self.iteration < self._skipped_until
                    or any(kind == "session" for kind, _ in list(self._mail)))

    def _propose(self, coord: trigger.Coordinator, detection: Dict[str, Any]) -> None:
        if self._busy():
            return  # the running or pending session covers this slowdown
        if coord.sessions.known >= self.cfg.max_sessions:
            log.once("max-sessions", "EROICA_MAX_SESSIONS=%d reached, no more sessions"
                     % self.cfg.max_sessions)
            return
        # The pace right now (the window mean still mixes in the iterations before the
        # slowdown): it converts the polling latency and the T-second cap into iterations.
        mean_s = self._mean_iteration_s(last=5) or detection["current_mean_s"] or 0.0
        target = self.iteration + trigger.margin_iters(self.cfg.margin, self.cfg.poll_s, mean_s)
        stamp = time.strftime("%Y%m%d-%H%M%S")

        baseline = detection["reason"] == "baseline"
        capture_iters = self.cfg.baseline_iters if baseline else self.cfg.capture_iters
        window_iters = trigger.window_iters(capture_iters, self.cfg.capture_s, mean_s)
        # Whole cycles where the iterations repeat one (detector.py, "Cycles"): in any phase the
        # window then holds each kind of iteration as often, the baseline's as a session's (5
        # iterations of the PPO job held one rollout or two). Rounded up, or down to whole
        # cycles where the T-second cap cut the window.
        cycle = self.detector.cycle
        if cycle > 1:
            whole = -(-capture_iters // cycle) * cycle
            window_iters = trigger.window_iters(whole, self.cfg.capture_s, mean_s)
            if window_iters >= cycle:
                window_iters -= window_iters % cycle

        def build(slot: int) -> Dict[str, Any]:
            session_id = "%s-%s-%s%d-it%d" % (self.job_id, stamp, "baseline-s" if baseline else "s",
                                              slot, target)
            coord.put_series(session_id, self._series())
            session = {"session_id": session_id, "job_id": self.job_id, "slot": slot,
                       "trigger_rank": self.rank, "trigger_host": self.host,
                       "target_iteration": target,
                       "capture_iters": window_iters, "cycle": cycle,
                       "capture_max_s": self.cfg.capture_s,
                       "threshold": self.cfg.threshold, "detector_window": self.cfg.window,
                       "proposed_at_iteration": self.iteration}
            session.update(detection)
            return session

        session = coord.sessions.try_publish(build)
        if session is None:
            if not baseline:  # every rank asks for the baseline; only the winner's counts
                self._mail.append(("rebaseline", None))  # another rank's session covers it
            return
        if not self._usable(session):
            if not baseline:
                self._mail.append(("rebaseline", None))
            return
        self._mail.append(("session", session))
        log.debug("rank %d proposed %s (%s at iteration %d)" % (
            self.rank, session["session_id"], detection["reason"],
            detection["detected_iteration"]))

    def _series(self) -> Dict[str, Any]:
        times_ns = list(self.durations_ns)[-self.cfg.series_len:]
        last_id = self.iteration - 1
        return {"rank": self.rank, "first_id": last_id - len(times_ns) + 1,
                "times_s": [round(t * 1e-9, 6) for t in times_ns]}

    # ---- hangs (monitor thread) ------------------------------------------------------------

    def _check_hang(self, coord: trigger.Coordinator) -> None:
        last_ns = self.last_progress_ns
        if last_ns is None:
            return
        iteration = self.iteration
        running_s = (_perf_ns() - last_ns) * 1e-9
        mean_s = self._mean_iteration_s()
        if not self.hang_detector.check(iteration, running_s, mean_s):
            return
        if any(abs(it - iteration) <= 1 for it in self._hangs_handled.values()):
            return  # already reported by another rank, one iteration apart
        if coord.hangs.known >= self.cfg.max_sessions:
            log.once("max-hangs", "EROICA_MAX_SESSIONS=%d hang reports reached"
                     % self.cfg.max_sessions)
            return
        stamp = time.strftime("%Y%m%d-%H%M%S")

        def build(slot: int) -> Dict[str, Any]:
            session_id = "%s-%s-hang-it%d" % (self.job_id, stamp, iteration)
            coord.put_series(session_id, self._series())
            return {"session_id": session_id, "job_id": self.job_id, "slot": slot,
                    "reason": "hang", "trigger_rank": self.rank, "trigger_host": self.host,
                    "stuck_iteration": iteration, "target_iteration": iteration,
                    "running_s": round(running_s, 3), "mean_iteration_s": mean_s,
                    "hang_threshold_s": self.hang_detector.threshold_s(mean_s),
                    "detected_unix_ns": time.time_ns()}

        notice = coord.hangs.try_publish(build)
        if notice is not None:
            self._handle_hang(notice)

    def _handle_hang(self, notice: Dict[str, Any]) -> None:
        session_id = notice["session_id"]
        if session_id in self._hangs_handled:
            return
        self._hangs_handled[session_id] = int(notice["stuck_iteration"])
        if not self._usable(notice):
            return
        session_dir = self._raw_dir(notice)
        try:
            hang.dump_stacks(finish.RankFile.STACKS.path(session_dir, self.rank),
                             self.rank, self.world_size, self.iteration)
        except OSError as e:
            log.info("rank %d: stacks not written: %s" % (self.rank, e))
            return
        if self.rank == 0 or self.cfg.local_dir:  # scale-out: every rank sends its dump
            self._spawn(self._finisher().hang_dumped, notice, session_dir)

    # ---- exit ------------------------------------------------------------------------------

    def shutdown(self, process_exit: bool = False) -> None:
        """At exit: stop a window cut short by the end of training and write its files.

        The whole of it takes at most EROICA_EXIT_WAIT_S (finish.wait_at_exit says what
        happens to work still running then), plus the profiler's own stop when the exit cuts
        a window short: that runs here, on the thread that owns the profiler. At the process's
        exit (`process_exit`: atexit, multiprocessing's finalizers) no store call of ours
        starts after it, and it waits, within the bound, for those in flight."""
        if self._shut_down:
            return
        self._shut_down = True
        deadline_s = time.monotonic() + self.cfg.exit_wait_s
        # The bound's last part: for store calls in flight to return (trigger._StoreCalls).
        drain_s = min(_STORE_DRAIN_S, self.cfg.exit_wait_s / 4) if process_exit else 0.0
        self._stopping = True
        self._wake.set()
        monitor = self._monitor
        if monitor is not None and monitor is not threading.current_thread():
            # No store call in flight while the process tears down, if it ends soon.
            monitor.join(timeout=min(2.0, self.cfg.exit_wait_s))
        cap, self.capture = self.capture, None
        try:
            # Without a shared folder (EROICA_LOCAL_DIR) there is nothing a deputy could read.
            deputy = (self.rank != 0 and not self.cfg.local_dir and bool(self._captured or cap)
                      and self._store_lost(min(1.0, max(0.1, deadline_s - time.monotonic()))))
            for session, session_dir in self._captured if deputy else ():
                if not os.path.exists(os.path.join(session_dir, "report.json")):
                    fin = self._finisher()
                    fin.deputy = True
                    self._spawn(fin.gather_as_deputy, session, session_dir)
            if cap is not None:
                try:
                    cap.stop("exit")
                except Exception as e:
                    cap.abort("stop at exit failed: %s" % e)
                fin = self._finisher()
                fin.deputy = deputy
                self._spawn(fin.capture_done, cap)
            self._sessions_after_the_last_step()
            # Sessions whose target the job never reached: their detection evidence
            # (session.json, the iteration series) is still worth keeping.
            for session in self._pending:
                self._spawn(self._finisher().missed, session, self._raw_dir(session),
                            "the job ended at iteration %d" % self.iteration,
                            self._detector_state())
            self._pending = []
            finish.wait_at_exit(self._finishers, deadline_s - drain_s)
        except Exception as e:
            log.info("could not write the session at exit: %s: %s" % (type(e).__name__, e))
        finally:
            # A finisher left running (one that handed off, one still exporting) must not be
            # inside a store call when the interpreter finalizes (trigger._StoreCalls says why).
            if process_exit and not trigger.STORE_CALLS.close(deadline_s - time.monotonic()):
                log.debug("exit: a store call of ours was still in flight at the bound")
        self.coord = None

    def _sessions_after_the_last_step(self) -> None:
        """At exit: the sessions the monitor delivered after the training thread's last step
        boundary, where mail is read (a rank done with its steps and waiting for a slower peer
        before it ends), are missed. Unread, that rank wrote nothing for them; as rank 0 it then
        never wrote the session's session.json nor gathered the other ranks' files. The rest of
        the mail no longer matters."""
        while self._mail:
            kind, payload = self._mail.popleft()
            if kind == "session":  # the monitor mails each session once (trigger.poll)
                self._write_missed(payload, "seen after its last step, iteration %d" % self.iteration)

    def _store_lost(self, timeout_s: float = 1.0) -> bool:
        """At exit: the job store failed, or does not answer one read within timeout_s."""
        coord = self.coord
        if self._store_failures or (coord is None and self.store_kind != "gone"):
            return True
        dist = sys.modules.get("torch.distributed")
        if coord is None or (self.store_kind == "default_pg" and dist is not None
                             and not dist.is_initialized()):
            return False  # the job destroyed its process group: an orderly end
        answered = []

        def probe():
            try:
                trigger._call(coord.store.add, trigger.EPOCH_KEY, 0)
                answered.append(True)
            except Exception:
                pass

        thread = threading.Thread(target=probe, name="eroica-probe", daemon=True)
        thread.start()
        thread.join(timeout_s)
        return not answered


def rebaseline_request_path(root: str, job_id: str) -> str:
    """Where `python -m eroica rebaseline` asks a job's rank 0 for a new baseline."""
    return os.path.join(root, safe_fs.component(job_id + ".rebaseline"))


def _another_profiler_active() -> bool:
    """The user's own profiler is running: ours would fail to start, or break theirs."""
    try:
        import torch.autograd

        return bool(torch.autograd._profiler_enabled())
    except Exception:
        return False

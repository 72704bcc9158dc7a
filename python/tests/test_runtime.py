"""The per-process runtime on the training thread: pacing, epoch breaks, pauses, mail."""

import gc
import json
import time

import pytest
import torch
from torch.utils.data import DataLoader

from eroica import config, hooks, log
from eroica.runtime import Runtime


def quiet_runtime(**env):
    rt = Runtime(config.load({k: str(v) for k, v in env.items()}))
    rt._stopping = True  # training-thread logic only: no monitor thread in these tests
    return rt


def make_optimizer():
    p = torch.nn.Parameter(torch.ones(2))
    p.grad = torch.ones(2)
    return torch.optim.SGD([p], lr=0.1)


def test_first_optimizer_paces_iterations_and_a_second_one_does_not():
    rt = quiet_runtime()
    generator, discriminator = make_optimizer(), make_optimizer()
    for _ in range(5):
        rt.on_step_end(discriminator)
        rt.on_step_end(generator)
    assert rt.iteration == 5
    del discriminator  # the pacer is gone (re-created optimizer): the next one takes over
    gc.collect()
    rt.on_step_end(generator)
    assert rt.iteration == 6


def test_loop_without_optimizer_is_paced_by_batches():
    rt = quiet_runtime()
    it = object.__new__(type("It", (), {}))
    for _ in range(150):
        rt.on_batch(it, 0)
    assert rt.iteration == 150 - 100 + 1
    rt.on_step_end(make_optimizer())  # it trains after all: count again from the step
    assert rt.iteration == 1 and rt.detector.best_mean_s is None


def test_epoch_break_is_not_a_sample_and_pauses_the_watchdog():
    rt = quiet_runtime(EROICA_WARMUP=0, EROICA_WINDOW=2)
    hooks.install(rt)
    try:
        opt = make_optimizer()
        for _ in range(2):
            for _ in DataLoader(range(3)):
                opt.step()
            assert rt.last_progress_ns is None  # StopIteration: the watchdog sleeps
        assert rt.iteration == 6
        assert len(rt.durations_ns) == 6 and rt.detector._seen == 5  # the break is skipped
        for i, _ in enumerate(DataLoader(range(10))):
            opt.step()
            if i == 3:
                break  # leaving the loop drops the iterator: the watchdog sleeps again
        gc.collect()
        assert rt.last_progress_ns is None
    finally:
        hooks.uninstall()


def test_session_mail_schedules_a_capture_and_a_late_one_is_missed(tmp_path):
    rt = quiet_runtime(EROICA_DIR=tmp_path)
    opt = make_optimizer()
    for _ in range(10):
        rt.on_step_end(opt)
    session = {"session_id": "s-late", "reason": "degradation", "target_iteration": 3,
               "capture_iters": 2, "capture_max_s": 20.0}
    rt._mail.append(("session", session))
    rt.on_step_end(opt)
    assert not rt.detector.armed or rt.detector.best_mean_s is None
    assert rt._pending == [] and rt.capture is None
    for t, _ in rt._finishers:
        t.join(10)
    assert (tmp_path / "s-late" / "rank-0.meta.json").exists()

    rt._mail.append(("session", dict(session, session_id="s-ok", target_iteration=13)))
    rt.on_step_end(opt)  # iteration 12 begins: pending
    assert rt._next_target == 13 and rt.capture is None
    rt.on_step_end(opt)  # 13 begins: the profiler starts
    assert rt.capture is not None
    rt.on_step_end(opt)
    rt.on_step_end(opt)  # 15 begins: two iterations traced, stopped
    assert rt.capture is None
    for t, _ in rt._finishers:
        t.join(30)
    assert (tmp_path / "s-ok" / "rank-0.json.gz").exists()


def missed_at_exit(tmp_path, steps, target, read_at_a_step):
    """The missed meta rank 0 writes at exit for a session mailed after `steps` steps (read at
    one more step boundary, or never); it also writes the session's session.json."""
    rt = quiet_runtime(EROICA_DIR=tmp_path, EROICA_COLLECT_TIMEOUT_S=5)
    opt = make_optimizer()
    for _ in range(steps):
        rt.on_step_end(opt)
    rt._mail.append(("session", {"session_id": "s-exit", "reason": "degradation",
                                 "target_iteration": target, "capture_iters": 5,
                                 "capture_max_s": 20.0}))
    if read_at_a_step:
        rt.on_step_end(opt)
    rt.shutdown()
    assert (tmp_path / "s-exit" / "session.json").exists()
    meta = json.load(open(tmp_path / "s-exit" / "rank-0.meta.json"))
    assert meta["iteration_ids"] == []
    return meta["missed"]


def test_a_session_the_job_never_reaches_is_kept_at_exit(tmp_path):
    assert "ended at iteration 6" in missed_at_exit(tmp_path, 5, 500, read_at_a_step=True)


def test_a_session_delivered_after_the_last_step_is_kept_at_exit(tmp_path):
    """A rank done with its steps waits for a slower peer, which then asks for a session: the
    monitor's mail is never read at a step boundary again (a clean-clone CI run had a session
    folder without session.json: the no-process-group launch test, rank 0 waiting at the end
    for rank 1)."""
    why = missed_at_exit(tmp_path, 200, 121, read_at_a_step=False)
    assert "after its last step, iteration 200" in why


def test_user_profiler_running_means_no_capture(tmp_path):
    rt = quiet_runtime(EROICA_DIR=tmp_path, EROICA_COLLECT_TIMEOUT_S=5)
    opt = make_optimizer()
    rt._mail.append(("session", {"session_id": "s-busy", "reason": "degradation",
                                 "target_iteration": 2, "capture_iters": 2,
                                 "capture_max_s": 20.0}))
    with torch.profiler.profile():  # the user's own, around the loop
        for _ in range(5):
            rt.on_step_end(opt)
        assert rt.capture is None
    for t, _ in rt._finishers:
        t.join(30)
    meta = json.load(open(tmp_path / "s-busy" / "rank-0.meta.json"))
    assert "another profiler" in meta["missed"]


def test_monitor_error_disables_on_the_training_thread_after_stopping_the_window(tmp_path,
                                                                                  capsys):
    log._said_once.discard("disabled")  # one line per process: forget earlier tests' line
    rt = quiet_runtime(EROICA_DIR=tmp_path, EROICA_COLLECT_TIMEOUT_S=5)
    hooks.install(rt)
    try:
        opt = make_optimizer()
        rt._mail.append(("session", {"session_id": "s-x", "reason": "degradation",
                                     "target_iteration": 2, "capture_iters": 5,
                                     "capture_max_s": 20.0}))
        for _ in range(3):
            opt.step()
        assert rt.capture is not None and torch.autograd._profiler_enabled()
        rt._mail.append(("disable", RuntimeError("monitor bug")))  # as _monitor_main does
        opt.step()
        assert hooks.listener() is None and rt.capture is None
        assert not torch.autograd._profiler_enabled()
        opt.step()  # pass-through from now on
        for t, _ in rt._finishers:
            t.join(30)
        meta = json.load(open(tmp_path / "s-x" / "rank-0.meta.json"))
        assert meta["error"] == "eroica disabled" and meta["iteration_ids"] == [2]
        assert (tmp_path / "s-x" / "rank-0.json.gz").exists()
        assert capsys.readouterr().err.count("disabled") == 1
    finally:
        hooks.uninstall()


def test_store_probe_at_exit_is_bounded():
    """A rank other than 0 gathers at exit only when the job store is gone: it failed, or
    one read does not come back within the probe's time."""
    import threading

    from eroica import trigger

    class Hung(trigger.MemoryStore):
        def add(self, key, amount):
            threading.Event().wait(30)

    class Dead(trigger.MemoryStore):
        def add(self, key, amount):
            raise RuntimeError("Connection reset by peer")

    rt = quiet_runtime()
    rt.store_kind = "tcp:test"
    rt.coord = trigger.Coordinator(trigger.MemoryStore())
    assert rt._store_lost(0.5) is False
    rt.coord = trigger.Coordinator(Dead())
    assert rt._store_lost(0.5) is True
    rt.coord = trigger.Coordinator(Hung())
    start = time.monotonic()
    assert rt._store_lost(0.5) is True
    assert time.monotonic() - start < 1.0
    rt.coord, rt._store_failures = None, 1  # the monitor saw it fail
    assert rt._store_lost(0.5) is True


def test_the_baseline_window_leaves_the_detector_watching(tmp_path):
    """The baseline is no slowdown: a slowdown soon after it must still be measured against the
    best mean from before it (a rebaseline would make the slowdown the new best)."""
    # The loop does no work (~1 us steps), so one scheduler pause is a real x1.05 slowdown to
    # the detector; the threshold keeps such noise from disarming it before the baseline.
    rt = quiet_runtime(EROICA_DIR=tmp_path, EROICA_WARMUP=2, EROICA_WINDOW=3, EROICA_THRESHOLD=1e6)
    opt = make_optimizer()
    for _ in range(10):
        rt.on_step_end(opt)
    best = rt.detector.best_mean_s
    assert best is not None and rt.detector.armed
    rt._mail.append(("session", {"session_id": "s-base", "reason": "baseline", "target_iteration": 11,
                                 "capture_iters": 2, "capture_max_s": 20.0}))
    for _ in range(5):
        rt.on_step_end(opt)  # 11 and 12 traced
    assert rt.capture is None and (tmp_path / "s-base").is_dir()
    assert rt.detector.armed and rt.detector.best_mean_s is not None
    for t, _ in rt._finishers:
        t.join(30)


def _feed(rt, durations_ms, now=None):
    """Iteration boundaries at the given spacing, on the training thread, without a clock; from
    `now` (what the last feed returned) on, or a fresh start. Returns the last boundary's time."""
    if now is None:
        now = 1_000_000
        rt._boundary(now)
    for ms in durations_ms:
        now += int(ms * 1e6)
        rt._boundary(now)
    return now


def test_after_a_session_the_detector_starts_from_the_pace_it_captured(tmp_path):
    """A slowdown that begins after a session's window is one the session did not see: the new
    baseline starts from the captured pace (the median of the window's iteration times), not
    from nothing, so the slowed pace cannot become the new best (detector.py)."""
    rt = quiet_runtime(EROICA_DIR=tmp_path, EROICA_WARMUP=2, EROICA_WINDOW=3, EROICA_THRESHOLD=1e6)
    rt._mail.append(("session", {"session_id": "s-slow", "reason": "degradation", "target_iteration": 3,
                                 "capture_iters": 3, "capture_max_s": 20.0}))
    _feed(rt, [10, 10, 40, 50, 60])  # iterations 3-5 traced (the first boundary starts iteration 1)
    assert rt.capture is None and (tmp_path / "s-slow").is_dir()
    assert rt.detector.armed and rt.detector.best_mean_s == pytest.approx(0.050)
    for t, _ in rt._finishers:
        t.join(30)


def test_a_session_that_captured_faster_steps_than_before_holds_the_job_to_the_pace_before(tmp_path):
    """A few captured steps need not show the job's pace: steps of 12 or 16 ms before the
    session, three of 12 ms captured. The job is held to the 14 ms it ran at (held_pace)."""
    rt = quiet_runtime(EROICA_DIR=tmp_path, EROICA_WARMUP=0, EROICA_WINDOW=8, EROICA_THRESHOLD=1e6)
    now = 1_000_000
    rt._boundary(now)
    for i, ms in enumerate([12, 16] * 4 + [12, 16, 12, 12, 12]):  # iterations 10-12 traced at 12 ms
        if i == 8:
            rt._mail.append(("session", {"session_id": "s-fast", "reason": "forced", "target_iteration": 10,
                                         "capture_iters": 3, "capture_max_s": 20.0}))
        now += int(ms * 1e6)
        rt._boundary(now)
    assert rt.capture is None and (tmp_path / "s-fast").is_dir()
    assert rt.detector.best_mean_s == pytest.approx(0.014, rel=0.02)
    for t, _ in rt._finishers:
        t.join(30)


def test_iterations_slowed_by_this_ranks_own_finishing_work_are_not_measured(tmp_path):
    """While a window's export, summary and exchange run beside training (a finisher thread),
    the steps they slow are no slowdown of the job; once they are done, a slowdown is."""
    import threading

    rt = quiet_runtime(EROICA_DIR=tmp_path, EROICA_WARMUP=2, EROICA_WINDOW=3, EROICA_THRESHOLD=1.3)
    asked = []
    rt._request_session = lambda iteration, reason, *_: reason == "degradation" and asked.append(iteration)
    release = threading.Event()
    finisher = threading.Thread(target=release.wait, daemon=True)
    finisher.start()
    rt._finishers.append((finisher, None))
    rt._last_spawn_s = time.monotonic()
    now = 1_000_000
    rt._boundary(now)
    for ms in [10] * 8:
        now += int(ms * 1e6)
        rt._boundary(now)
    # (The finisher was already running: nothing was measured, so the detector has no pace yet.)
    release.set()
    finisher.join(10)
    for ms in [10] * 8:
        now += int(ms * 1e6)
        rt._boundary(now)
    assert rt.detector.best_mean_s == pytest.approx(0.010) and not asked
    release.clear()
    finisher = threading.Thread(target=release.wait, daemon=True)
    finisher.start()
    rt._finishers.append((finisher, None))
    rt._last_spawn_s = time.monotonic()
    for ms in [40] * 8:  # the export's steps: 4x slower, unmeasured
        now += int(ms * 1e6)
        rt._boundary(now)
    assert not asked
    release.set()
    finisher.join(10)
    for ms in [40] * 8:  # the same pace with nothing of ours running: a slowdown
        now += int(ms * 1e6)
        rt._boundary(now)
    assert asked
    # A finishing task that outlives its bound (hung on a store, say) no longer blinds it.
    rt._last_spawn_s = time.monotonic() - 121
    assert not rt._slowed_by_eroica()
    release.set()


def test_iterations_slowed_by_another_ranks_finishing_work_are_not_measured(tmp_path):
    """Rank 0's gathering and diagnosis, and the other ranks' exports, slow this rank's steps
    too on a shared node after its own part is done: the detector waits until the session's
    gatherer settles it in the job store (or _FINISHING_MAX_S passes without a word)."""
    from eroica import trigger

    rt = quiet_runtime(EROICA_DIR=tmp_path, EROICA_WARMUP=2, EROICA_WINDOW=3, EROICA_THRESHOLD=1.3)
    asked = []
    rt._request_session = lambda iteration, reason, *_: reason == "degradation" and asked.append(iteration)
    store = trigger.MemoryStore()
    rt.coord = trigger.Coordinator(store)
    gatherer = trigger.Coordinator(store)
    session = gatherer.sessions.try_publish(lambda slot: {"session_id": "s-base", "slot": slot})
    now = _feed(rt, [10] * 8)
    assert rt.detector.best_mean_s == pytest.approx(0.010)
    rt._hold_until_settled(session)  # this rank's export is done; the gatherer's work is not
    rt.coord.poll()
    rt._check_settled(rt.coord)
    now = _feed(rt, [40] * 8, now)
    assert not asked
    gatherer.sessions.settle(session["slot"])
    rt.coord.poll()
    rt._check_settled(rt.coord)
    assert rt._slowed_by_eroica() is False
    _feed(rt, [40] * 8, now)  # the same pace once every rank's work is over: a slowdown
    assert asked
    # No word from the gatherer (rank 0 gone with the store): the bound ends the wait.
    rt._hold_until_settled({"session_id": "s2", "slot": 2})
    assert rt._slowed_by_eroica()
    rt._unsettled = (2, time.monotonic() - 121)
    assert not rt._slowed_by_eroica()


def test_a_session_asked_for_while_eroicas_own_work_runs_is_proposed_once_it_is_done(tmp_path):
    """A window opened beside this rank's export of an earlier one (or before the job store says
    that one is settled) measures eroica's work as the job's: the request waits for it to end."""
    import threading
    from eroica import trigger

    rt = quiet_runtime(EROICA_DIR=tmp_path)
    rt.coord = trigger.Coordinator(trigger.MemoryStore())
    release = threading.Event()
    finisher = threading.Thread(target=release.wait, daemon=True)
    finisher.start()
    rt._finishers.append((finisher, None))
    rt._last_spawn_s = time.monotonic()
    rt._request_session(180, "forced", 0.1, 0.1)

    def proposed():
        return [session for kind, session in rt._mail if kind == "session"]

    rt._tick()
    assert not proposed() and rt._detection is not None  # kept for a later tick
    release.set()
    finisher.join(10)
    rt._hold_until_settled({"session_id": "s-base", "slot": 7})  # the job's last session, unsettled
    rt._tick()
    assert not proposed() and rt._detection is not None
    rt._settled_slot = 7
    rt._tick()
    assert len(proposed()) == 1 and proposed()[0]["reason"] == "forced" and rt._detection is None


def _baselines_requested(rt):
    asked = []
    rt._request_session = lambda iteration, reason, *_: asked.append((iteration, reason))
    return asked


def test_the_training_threads_own_work_reaches_the_detector_and_the_session(tmp_path, monkeypatch):
    """Iteration times too noisy for the time rule (±30 %); from iteration 120 the thread does
    20 ms more work a step, which its CPU time shows (detector.py): a degradation session asked
    for, carrying both CPU paces. With the same work the whole time, none."""
    import random
    from eroica import runtime as runtime_mod

    def run(extra_cpu_ms):
        rng = random.Random(5)
        cpu = {"s": 0.0, "per_step": []}

        def fake_thread_cpu():  # one call per boundary: advances by the next step's CPU time
            steps = cpu["per_step"]
            cpu["s"] += (steps.pop(0) if steps else 0) * 1e-3
            return 1, cpu["s"], 0  # no page faults
        monkeypatch.setattr(runtime_mod, "_thread_cpu", fake_thread_cpu)
        rt = quiet_runtime(EROICA_DIR=tmp_path, EROICA_BASELINE=0)
        asked = []
        rt._request_session = lambda iteration, reason, best, current, d=None: asked.append((iteration, d))
        times = [100 * max(0.3, rng.gauss(1.0, 0.3)) + (20 if i >= 120 else 0) for i in range(300)]
        cpu["per_step"] = [0] + [33 * rng.gauss(1.0, 0.02) + (extra_cpu_ms if i >= 120 else 0)
                                 for i in range(300)]
        _feed(rt, times)
        return asked

    asked = run(20)
    assert len(asked) == 1 and asked[0][0] >= 120, asked
    assert asked[0][1].by_cpu and asked[0][1].current_cpu_s > asked[0][1].best_cpu_s
    assert run(0) == []
    rt = quiet_runtime(EROICA_DIR=tmp_path)
    rt._request_session(130, "degradation", 0.1, 0.112, asked[0][1])
    assert rt._detection["best_cpu_s"] == asked[0][1].best_cpu_s  # the session says why
    assert rt._detection["current_cpu_s"] == asked[0][1].current_cpu_s


def test_the_automatic_baseline_waits_until_iteration_times_stop_falling(tmp_path):
    # Warm-up that outlasts the detector's: 12 iterations from 130 ms down to 100 ms, then flat.
    falling = [130 - 2.5 * i for i in range(12)]
    flat = [100 + (1 if i % 2 else -1) for i in range(60)]
    rt = quiet_runtime(EROICA_DIR=tmp_path, EROICA_WARMUP=5, EROICA_WINDOW=10, EROICA_BASELINE=1)
    asked = _baselines_requested(rt)
    _feed(rt, falling + flat)
    assert [reason for _, reason in asked] == ["baseline"]
    assert 17 <= asked[0][0] < 25, asked  # not at warm-up + window (15): times still fell
    # An iteration set by the user is kept as it is.
    fixed = quiet_runtime(EROICA_DIR=tmp_path, EROICA_WARMUP=5, EROICA_WINDOW=10, EROICA_BASELINE_AT=15)
    asked = _baselines_requested(fixed)
    _feed(fixed, falling + flat)
    assert asked == [(15, "baseline")]
    # A job that never stops speeding up gets its baseline one window later.
    drifting = quiet_runtime(EROICA_DIR=tmp_path, EROICA_WARMUP=5, EROICA_WINDOW=10, EROICA_BASELINE=1)
    asked = _baselines_requested(drifting)
    _feed(drifting, [300 - 2.5 * i for i in range(100)])
    assert asked == [(25, "baseline")]


def test_a_baseline_won_by_another_rank_or_overtaken_by_a_slowdown_is_not_asked_for(tmp_path):
    for reason in ("baseline", "degradation"):
        rt = quiet_runtime(EROICA_DIR=tmp_path, EROICA_WARMUP=2, EROICA_WINDOW=4, EROICA_BASELINE=1)
        asked = _baselines_requested(rt)
        rt._mail.append(("session", {"session_id": "s-" + reason, "reason": reason, "target_iteration": 100,
                                     "capture_iters": 2, "capture_max_s": 20.0}))
        _feed(rt, [100] * 30)
        assert asked == [], reason


def _run_baseline_then(tmp_path, before_ms, after_ms):
    """A baseline session captured at iteration 12 of a job at `before_ms`, then `after_ms`:
    the baselines it asked for afterwards."""
    rt = quiet_runtime(EROICA_DIR=tmp_path, EROICA_WARMUP=2, EROICA_WINDOW=6, EROICA_BASELINE=0)
    rt._mail.append(("session", {"session_id": "s-base-%d" % after_ms[0], "reason": "baseline",
                                 "target_iteration": 12, "capture_iters": 2, "capture_max_s": 20.0}))
    asked = _baselines_requested(rt)
    now = _feed(rt, before_ms)
    assert rt.capture is None and rt._pace_before_baseline is not None
    for t, _ in rt._finishers:  # steps beside the window's export are not measured
        t.join(30)
    return rt, asked, _feed(rt, after_ms, now)


def test_a_job_faster_than_before_its_baseline_gets_a_new_one(tmp_path):
    """The text job that ran 2.5x faster after eroica's first window (detector.py
    ran_faster_since): a new baseline once its new pace settles; none where the pace held."""
    noisy = [200 + (4 if i % 2 else -4) for i in range(16)]
    rt, asked, _ = _run_baseline_then(tmp_path, noisy, [80 + (2 if i % 2 else -2) for i in range(40)])
    assert [reason for _, reason in asked] == ["baseline"], asked
    assert asked[0][0] >= 16 + 6, asked  # a full window of the new pace first
    assert rt._faster_baselines == 1
    rt, asked, _ = _run_baseline_then(tmp_path, noisy, [196 + (4 if i % 2 else -4) for i in range(40)])
    assert asked == [] and rt._faster_baselines == 0
    # Bounded: a job that keeps speeding up does not take a window at every step.
    rt, asked, now = _run_baseline_then(tmp_path, noisy, [80] * 20)
    for pace in (40, 20, 10):
        rt._pace_before_baseline = (pace * 2e-3, 0.0)  # as a further baseline's window would set
        now = _feed(rt, [pace] * 20, now)
    assert len(asked) == 2 and rt._faster_baselines == 2, asked


def test_a_rebaseline_request_takes_a_new_baseline_after_warm_up(tmp_path):
    rt = quiet_runtime(EROICA_DIR=tmp_path, EROICA_WARMUP=5, EROICA_WINDOW=10, EROICA_BASELINE=0)
    asked = _baselines_requested(rt)
    _feed(rt, [100] * 30)
    assert asked == []  # EROICA_BASELINE=0: none on its own
    rt.request_baseline()  # eroica.rebaseline(), or rank 0 seeing `python -m eroica rebaseline`
    _feed(rt, [150] * 30)
    assert len(asked) == 1 and asked[0][1] == "baseline"
    assert asked[0][0] >= 30 + 5, asked  # after the new regime's warm-up


def test_the_rebaseline_command_reaches_rank_0_once(tmp_path):
    import subprocess
    import sys
    import os

    from eroica import runtime

    rt = quiet_runtime(EROICA_DIR=tmp_path, EROICA_JOB_ID="rjob")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
               EROICA_DIR=str(tmp_path), EROICA_JOB_ID="rjob")
    done = subprocess.run([sys.executable, "-m", "eroica", "rebaseline"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    path = runtime.rebaseline_request_path(str(tmp_path), "rjob")
    assert os.path.isfile(path) and path in done.stdout
    rt._check_rebaseline_request()
    rt._check_rebaseline_request()
    assert [kind for kind, _ in rt._mail] == ["baseline-request"]
    assert not os.path.exists(path)


def test_eroica_rebaseline_reaches_the_attached_runtime_and_is_harmless_without_one(tmp_path):
    import eroica

    eroica.rebaseline()  # nothing attached: a no-op
    rt = quiet_runtime(EROICA_DIR=tmp_path)
    hooks.install(rt)
    try:
        eroica.rebaseline()
    finally:
        hooks.uninstall()
    assert [kind for kind, _ in rt._mail] == ["baseline-request"]


def test_a_faster_baseline_whose_pace_is_gone_before_times_settle_is_dropped(tmp_path):
    """The unseen audio job asked for a faster-pace baseline while its times still fell, and a
    fault began before they settled: the baseline taken then held the fault. A due baseline whose
    pace no longer holds (the detector's window above its best by its threshold) is dropped; one
    whose pace holds is taken."""
    noisy = [200 + (4 if i % 2 else -4) for i in range(16)]
    falling = [150, 130, 110, 90, 80, 75, 72, 70, 68, 66, 64, 62]
    rt, asked, _ = _run_baseline_then(tmp_path, noisy, falling + [400] * 30)
    assert [reason for _, reason in asked] == ["degradation"], asked  # the slowdown's own session
    assert rt._faster_baselines == 1 and rt._baseline_at < 0 and not rt._faster_due
    rt, asked, _ = _run_baseline_then(tmp_path, noisy, falling + [62] * 30)
    assert [reason for _, reason in asked] == ["baseline"], asked


_EXIT_WITH_A_STORE_CALL_IN_FLIGHT = r"""
import datetime, sys, threading, time
from torch.distributed import TCPStore
from eroica import config, trigger
from eroica.runtime import Runtime

rt = Runtime(config.load({"EROICA_DIR": sys.argv[1], "EROICA_EXIT_WAIT_S": "2"}))
rt._ensure_started()  # the monitor thread and the exit's registration, as in a job
store = TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=5))
rt.coord = trigger.Coordinator(store)

def finisher_left_running():  # one that handed off at the bound and then settles its session
    while True:
        try:
            trigger._call(store.add, "eroica/session/settled/1", 1)
        except trigger.StoreUnavailable:
            time.sleep(0.01)

threading.Thread(target=finisher_left_running, daemon=True).start()
time.sleep(0.3)
"""


def test_the_exit_waits_for_a_store_call_in_flight_instead_of_aborting(tmp_path):
    """torch's store calls release the GIL inside frames that must not unwind: a daemon
    thread that comes back from one after the interpreter began to finalize aborts the
    process (std::terminate, exit -6: the job's own exit code lost). Without the exit's wait
    for our store calls, this script aborted in 8 of 8 runs."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for _ in range(3):
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-c", _EXIT_WITH_A_STORE_CALL_IN_FLIGHT, str(tmp_path)],
                              env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "terminate called" not in done.stderr
        assert time.monotonic() - start < 20


@pytest.mark.parametrize("cycle, capture_s, expected",
                         [(1, 20.0, 5), (4, 20.0, 8), (3, 20.0, 6), (4, 0.1, 4)])
def test_a_session_window_is_whole_cycles_where_the_iterations_repeat_one(tmp_path, cycle, capture_s,
                                                                          expected):
    """Where the detector read a period (detector.py, "Cycles"), the window it asks for is whole
    cycles: rounded up, or down where the T-second cap cut it (0.1 s of 20 ms iterations: 5)."""
    from eroica import trigger

    rt = quiet_runtime(EROICA_DIR=tmp_path, EROICA_CAPTURE_S=capture_s)
    rt.coord = trigger.Coordinator(trigger.MemoryStore())
    rt.detector.cycle = cycle
    rt._propose(rt.coord, {"reason": "degradation", "best_mean_s": 0.015, "current_mean_s": 0.020,
                           "detected_iteration": 0})
    sessions = [session for kind, session in rt._mail if kind == "session"]
    assert len(sessions) == 1 and sessions[0]["capture_iters"] == expected, sessions


def test_after_a_window_of_a_few_cycles_the_job_is_held_to_the_pace_before_it(tmp_path):
    """Two cycles of four are too few for a captured pace of their own (captured_pace asks 3):
    the detector starts again from the pace just before the window, not from nothing."""
    class Window:
        session = {"session_id": "s", "reason": "degradation"}
        session_dir = str(tmp_path)
        error = None
        iteration_times_s = [0.060, 0.012, 0.012, 0.012] * 2

        def on_boundary(self, iteration, finished_s):
            return True

    rt = quiet_runtime(EROICA_DIR=tmp_path)
    rt._spawn = lambda *args: None
    rt.detector.cycle = 4
    rt.capture, rt._pace_before_capture = Window(), (0.024, 0.001)
    rt._capture_boundary(10, 0.012)
    assert rt.detector.best_pace() == (0.024, 0.001)
    # Iterations one by one (no cycle), five times: their own pace, as before.
    rt.detector.cycle = 1
    Window.iteration_times_s = [0.020, 0.021, 0.020, 0.022, 0.020]
    rt.capture = Window()
    rt._capture_boundary(20, 0.020)
    assert rt.detector.best_pace()[0] == pytest.approx(0.024)  # the slower of the two: held_pace


def test_a_period_read_after_the_baseline_calls_for_a_baseline_of_whole_cycles(tmp_path):
    """The detector reads a weak pattern's period at its fourth window, after the automatic
    baseline was kept: a baseline of 5 iterations of a 4-iteration cycle is taken again (as a
    faster job's is: settled, at its best); one of 8 is not, nor one where no period was read,
    nor one proposed at another rank's period (this rank reading 3 where it was whole 4s)."""
    class Baseline:
        session = {"session_id": "b", "reason": "baseline", "capture_iters": 5}
        session_dir = str(tmp_path)
        error = None
        iteration_times_s = [0.02] * 5

        def on_boundary(self, iteration, finished_s):
            return True

    cases = ((5, 1, 4, True), (8, 1, 4, False), (5, 1, 1, False), (8, 4, 3, False))
    for window, proposed_at, cycle, due in cases:
        rt = quiet_runtime(EROICA_DIR=tmp_path)
        rt._spawn = lambda *args: None
        Baseline.session = dict(Baseline.session, capture_iters=window, cycle=proposed_at)
        rt.capture, rt._baseline_at = Baseline(), -1
        rt._capture_boundary(90, 0.02)
        assert rt._baseline_window == (window if proposed_at == 1 else None)
        rt.detector.cycle = cycle
        rt._check_cycle_read(220)
        assert (rt._baseline_at == 221 and rt._faster_due) == due, (window, cycle, rt._baseline_at)
        rt._check_cycle_read(221)  # read once: asked once
        assert rt._baseline_at == (221 if due else -1)

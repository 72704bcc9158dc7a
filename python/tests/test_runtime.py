"""The per-process runtime on the training thread: pacing, epoch breaks, pauses, mail."""

import gc
import json

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


def test_a_session_the_job_never_reaches_is_kept_at_exit(tmp_path):
    rt = quiet_runtime(EROICA_DIR=tmp_path, EROICA_COLLECT_TIMEOUT_S=5)
    opt = make_optimizer()
    for _ in range(5):
        rt.on_step_end(opt)
    rt._mail.append(("session", {"session_id": "s-never", "reason": "degradation",
                                 "target_iteration": 500, "capture_iters": 5,
                                 "capture_max_s": 20.0}))
    rt.on_step_end(opt)
    rt.shutdown()
    meta = json.load(open(tmp_path / "s-never" / "rank-0.meta.json"))
    assert meta["iteration_ids"] == [] and "ended at iteration 6" in meta["missed"]
    assert (tmp_path / "s-never" / "session.json").exists()


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
    import time

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
    rt = quiet_runtime(EROICA_DIR=tmp_path, EROICA_WARMUP=2, EROICA_WINDOW=3)
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

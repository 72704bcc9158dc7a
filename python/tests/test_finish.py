"""The bounded exit: unfinished gathering is handed to a detached process, the rest is
abandoned with one line; the exit itself waits at most EROICA_EXIT_WAIT_S."""

import json
import os
import threading
import time

from eroica import config, finish, trigger

SESSION = {"session_id": "job-s1-it50", "reason": "degradation", "target_iteration": 50,
           "capture_iters": 5, "capture_max_s": 20.0}


def test_rank_0_hands_its_waiting_to_a_detached_process(tmp_path, monkeypatch, capsys,
                                                         fake_diagnose):
    monkeypatch.setenv("EROICA_BIN", fake_diagnose)  # what the detached process reads
    cfg = config.load({"EROICA_COLLECT_TIMEOUT_S": "60", "EROICA_EXIT_WAIT_S": "1.5",
                       "EROICA_BIN": fake_diagnose})
    session_dir = str(tmp_path / "eroica" / SESSION["session_id"])
    fin = finish.Finisher(cfg, 0, 2, None)
    thread = finish.spawn(fin.missed, SESSION, session_dir, "test", {})
    start = time.monotonic()
    finish.wait_at_exit([(thread, fin)], start + cfg.exit_wait_s)
    waited_s = time.monotonic() - start
    thread.join(2)  # it stops waiting as soon as it has handed off
    assert 1.4 <= waited_s <= 2.5 and not thread.is_alive(), waited_s
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "goes on in the background (pid" in err, err
    assert not os.path.exists(os.path.join(session_dir, "report.json"))
    # The missing rank's file arrives: the detached process diagnoses, long after our exit.
    with open(os.path.join(session_dir, "rank-1.meta.json"), "w") as f:
        json.dump({"rank": 1}, f)
    deadline = time.monotonic() + 20
    log = os.path.join(session_dir, "finish.log")
    while time.monotonic() < deadline and "report:" not in open(log).read():
        time.sleep(0.1)
    line = open(log).read()
    assert "report:" in line and "missing" not in line, line
    call = json.load(open(os.path.join(session_dir, "fake-diagnose-json.json")))
    assert call["nice"] >= 10 and "rank-1.meta.json" in call["files"]
    assert capsys.readouterr().err == ""  # the verdict went to finish.log, not to us


def test_an_unfinished_export_is_abandoned_with_one_line(tmp_path, capsys):
    cfg = config.load({"EROICA_EXIT_WAIT_S": "0.5"})
    fin = finish.Finisher(cfg, 3, 4, None)
    fin.session_dir = str(tmp_path / "s")
    release = threading.Event()
    thread = finish.spawn(release.wait, 30)  # stands for an export that does not end
    try:
        start = time.monotonic()
        finish.wait_at_exit([(thread, fin)], start + cfg.exit_wait_s)
        assert time.monotonic() - start < 1.0
    finally:
        release.set()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rank 3's files" in err and "eroica diagnose %s" % (
        tmp_path / "s") in err, err


def test_the_exit_no_longer_nices_what_is_left(monkeypatch):
    """Once the exit waits the training loop is over: what `spawn` niced to 10 gets the exiting
    thread's own priority back (where the process may lower a nice value), finished tasks are
    left alone."""
    reniced = []
    real = os.setpriority
    monkeypatch.setattr(os, "setpriority", lambda which, who, value: (reniced.append((who, value)),
                                                                      real(which, who, value)))
    release = threading.Event()
    fin = finish.Finisher(config.Config(), 1, 2, None)
    thread = finish.spawn(release.wait, 30)
    done = finish.spawn(lambda: None)
    done.join()
    while (thread.native_id, 10) not in reniced:  # spawn's own nice 10, from inside the task
        time.sleep(0.01)
    own = os.getpriority(os.PRIO_PROCESS, 0)  # this (the exiting) thread's nice value
    try:
        assert os.getpriority(os.PRIO_PROCESS, thread.native_id) == 10
        finish.wait_at_exit([(thread, fin), (done, fin)], time.monotonic() + 0.2)
        assert reniced[-1] == (thread.native_id, own), reniced
        assert (done.native_id, own) not in reniced
        if os.geteuid() == 0:
            assert os.getpriority(os.PRIO_PROCESS, thread.native_id) == own
    finally:
        release.set()


def test_finished_tasks_cost_no_wait(tmp_path, capsys):
    fin = finish.Finisher(config.Config(), 0, 1, None)
    thread = finish.spawn(lambda: None)
    start = time.monotonic()
    finish.wait_at_exit([(thread, fin)], start + 30)
    assert time.monotonic() - start < 0.5 and capsys.readouterr().err == ""


def test_the_exit_hurries_a_scale_out_gather_before_its_deadline(tmp_path):
    """A task still waiting on the store is told to hurry a little before the exit's deadline
    (half of it when the wait is short), with the time left less 1 s as rank 0's grace."""
    cfg = config.load({"EROICA_EXIT_WAIT_S": "2"})
    fin = finish.Finisher(cfg, 0, 4, None)
    thread = finish.spawn(fin.hurry.wait, 30)  # stands for a gather: it ends when hurried
    start = time.monotonic()
    finish.wait_at_exit([(thread, fin)], start + cfg.exit_wait_s)
    waited_s = time.monotonic() - start
    assert fin.hurry.is_set() and not thread.is_alive()
    assert 0.9 <= waited_s <= 1.5, waited_s
    assert fin.hurry_grace_s < 0.2  # 1 s left, 1 s kept for writing


def test_a_session_every_rank_missed_is_said_so_and_not_diagnosed(tmp_path, capsys, fake_diagnose):
    # The job ended before the session's target iteration: a window nobody profiled is one
    # line that says why, not a "diagnose failed" on an empty folder.
    cfg = config.load({"EROICA_BIN": fake_diagnose, "EROICA_COLLECT_TIMEOUT_S": "5"})
    session_dir = str(tmp_path / SESSION["session_id"])
    for rank in (1, 0):  # rank 0 gathers: it comes last
        fin = finish.Finisher(cfg, rank, 2, None)
        fin.missed(SESSION, session_dir, "the job ended at iteration 48", {})
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no window captured for job-s1-it50: every rank missed it " \
        "(the job ended at iteration 48)" in err, err
    assert not os.path.exists(os.path.join(session_dir, "fake-diagnose-json.json"))
    # One rank took part: the folder is diagnosed as before.
    with open(os.path.join(session_dir, "rank-1.meta.json"), "w") as f:
        json.dump({"rank": 1, "iteration_ids": [50]}, f)
    line = finish.collect_and_diagnose(cfg, session_dir, 2, finish.RankFile.META, time.time())
    assert "report:" in line, line


def test_the_gatherer_settles_the_session_once_it_is_diagnosed(tmp_path, fake_diagnose):
    """Every rank's detector waits for it (runtime.py): the diagnosis slows the whole node."""
    cfg = config.load({"EROICA_BIN": fake_diagnose, "EROICA_COLLECT_TIMEOUT_S": "5"})
    coord = trigger.Coordinator(trigger.MemoryStore())
    session = coord.sessions.try_publish(lambda slot: dict(SESSION, slot=slot))
    session_dir = str(tmp_path / SESSION["session_id"])
    finish.Finisher(cfg, 1, 2, coord).missed(session, session_dir, "test", {})
    assert not coord.sessions.settled(session["slot"])  # rank 1 does not gather
    finish.Finisher(cfg, 0, 2, coord).missed(session, session_dir, "test", {})
    assert coord.sessions.settled(session["slot"])


def test_a_scale_out_gatherer_settles_the_session_too(tmp_path, fake_diagnose):
    cfg = config.load({"EROICA_BIN": fake_diagnose, "EROICA_COLLECT_TIMEOUT_S": "5",
                       "EROICA_DIR": str(tmp_path / "central"),
                       "EROICA_LOCAL_DIR": str(tmp_path / "node0")})
    coord = trigger.Coordinator(trigger.MemoryStore())
    session = coord.sessions.try_publish(lambda slot: dict(SESSION, slot=slot))
    fin = finish.Finisher(cfg, 0, 1, coord)
    fin.missed(session, str(tmp_path / "node0" / SESSION["session_id"]), "test", {})
    assert (tmp_path / "central" / SESSION["session_id"] / "session.json").is_file()
    assert coord.sessions.settled(session["slot"])


def _baseline_session(root, name, findings, pace_s=None):
    """A baseline session folder whose (stand-in) diagnosis reports `findings`; `pace_s`: the
    detector's pace before its window (session.json's current_mean_s)."""
    session_dir = os.path.join(str(root), name)
    os.makedirs(session_dir)
    doc = {"reason": "baseline", "job_id": "bjob"}
    if pace_s is not None:
        doc["current_mean_s"] = pace_s
    with open(os.path.join(session_dir, "session.json"), "w") as f:
        json.dump(doc, f)
    with open(os.path.join(session_dir, "rank-0.meta.json"), "w") as f:
        json.dump({"rank": 0, "iteration_ids": [80]}, f)
    return session_dir, {"schema": "eroica.diagnosis/v1", "healthy": not findings,
                         "findings": findings}


def test_a_baseline_in_which_a_rank_stands_out_does_not_replace_the_kept_one(tmp_path, monkeypatch,
                                                                          capsys):
    local = [{"scope": "local", "category": "dataloader", "workers": [1],
              "function": "enumerate(DataLoader)#__next__", "impact_s_per_iter": 0.027,
              "location": "train.py:52(__iter__)"}]
    glob_host = [{"scope": "global", "category": "host", "workers": [0, 1],
                  "function": "(python between a and b)", "impact_s_per_iter": 0.01}]
    reports, kept = {}, []

    def fake_run(session_dir, *args, **kwargs):
        with open(os.path.join(session_dir, "report.json"), "w") as f:
            json.dump(reports[session_dir], f)
        return "verdict of %s" % os.path.basename(session_dir)

    monkeypatch.setattr(finish.diagnose, "run", fake_run)
    monkeypatch.setattr(finish.diagnose, "keep_baseline",
                        lambda session_dir, *args: kept.append(os.path.basename(session_dir)))
    cfg = config.load({"EROICA_COLLECT_TIMEOUT_S": "1"})
    bundle = tmp_path / "bjob.baseline.pattern"

    def baseline(name, findings, pace_s=None):
        session_dir, reports[os.path.join(str(tmp_path), name)] = _baseline_session(
            tmp_path, name, findings, pace_s)
        finish.collect_and_diagnose(cfg, session_dir, 1, finish.RankFile.META, time.time())

    baseline("bjob-baseline-s1-it80", local)  # the first: kept whatever it shows
    assert kept == ["bjob-baseline-s1-it80"]
    bundle.write_bytes(b"kept")
    capsys.readouterr()
    baseline("bjob-baseline-s2-it157", local)  # mid-run, a rank unlike its peers: not kept
    assert kept == ["bjob-baseline-s1-it80"] and bundle.read_bytes() == b"kept"
    err = capsys.readouterr().err
    assert ("baseline not kept from %s: a rank stood out from its peers in it (local dataloader on "
            "rank 1: enumerate(DataLoader)#__next__ (0.027 s/iter) at train.py:52(__iter__)); the "
            "job's baseline stays %s" % (tmp_path / "bjob-baseline-s2-it157", bundle)) in err, err
    baseline("bjob-baseline-s3-it231", glob_host)  # what every rank pays is how the job runs
    baseline("bjob-baseline-s4-it300", [])
    assert kept == ["bjob-baseline-s1-it80", "bjob-baseline-s3-it231", "bjob-baseline-s4-it300"]
    # A rank that stands out by less than the detector's 5 % of the step (1 ms of 29): kept.
    baseline("bjob-baseline-s5-it330", [dict(local[0], impact_s_per_iter=0.001)], pace_s=0.029)
    assert kept[-1] == "bjob-baseline-s5-it330"
    # The same at 27 ms of a 29 ms step: not kept.
    baseline("bjob-baseline-s6-it360", [dict(local[0], impact_s_per_iter=0.027)], pace_s=0.029)
    assert kept[-1] == "bjob-baseline-s5-it330"

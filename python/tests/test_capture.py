"""Capture in one process (no torch.distributed): trigger locally, trace, meta, diagnosis."""

import glob
import gzip
import json
import os
import re

from conftest import TORCH_PYTHON, WORKLOADS, clean_env, eroica_run
from eroica import binary, diagnose

SINGLE = os.path.join(WORKLOADS, "single_train.py")


def only_session(root):
    # procs/ holds the node-agent registrations, not a session.
    sessions = [d for d in glob.glob(os.path.join(root, "*")) if os.path.isdir(d)
                and os.path.basename(d) != "procs"]
    assert len(sessions) == 1, sessions
    return sessions[0]


def trace_events(path):
    with gzip.open(path) as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def profiler_steps(events):
    return sorted({int(e["name"].split("#")[1]) for e in events
                   if e.get("name", "").startswith("ProfilerStep#")})


def test_forced_session_traces_exact_iterations_and_gc(tmp_path, fake_diagnose):
    # One session: with gc=1 the job's own pace wanders (a gc.collect() took 13-47 ms, by run
    # and by phase, with and without eroica), and a CI run slowed from the session's 40 ms to a
    # steady 44 ms after it; the detector rightly took a second session (1.09x > 1.05x).
    env = clean_env(EROICA_DIR=tmp_path / "s", EROICA_TRIGGER_AT=30, EROICA_POLL_S=0.1,
                    EROICA_MARGIN=10, EROICA_CAPTURE_ITERS=4, EROICA_BIN=fake_diagnose,
                    EROICA_MAX_SESSIONS=1)
    done = eroica_run([TORCH_PYTHON, SINGLE, "iters=120", "gc=1"], env)
    assert done.returncode == 0 and "trained 120" in done.stdout, done.stderr
    session = only_session(tmp_path / "s")
    meta = json.load(open(os.path.join(session, "rank-0.meta.json")))
    target = meta["target_iteration"]
    assert target >= 30 + 10
    assert meta["iteration_ids"] == list(range(target, target + 4))
    for key in ("rank", "world_size", "local_rank", "host", "pid", "profiler_start_unix_ns",
                "profiler_start_monotonic_ns", "torch_version", "python_version",
                "eroica_version", "reason", "detector"):
        assert key in meta, key
    assert (meta["rank"], meta["world_size"], meta["reason"]) == (0, 1, "forced")

    events = trace_events(os.path.join(session, "rank-0.json.gz"))
    assert profiler_steps(events) == meta["iteration_ids"]
    steps = [e for e in events if e.get("name", "").startswith("ProfilerStep#")]
    gcs = [e for e in events if e.get("name") == "eroica::gc"]
    assert len(gcs) >= 4  # one gc.collect() per iteration, each a range inside its step
    assert all(any(s["ts"] <= g["ts"] <= s["ts"] + s["dur"] for s in steps) for g in gcs)

    doc = json.load(open(os.path.join(session, "session.json")))
    assert doc["schema"] == "eroica.session/v1" and doc["target_iteration"] == target
    assert doc["trigger_rank"] == 0 and doc["window"]["iterations"] == 4
    assert len(doc["iteration_times_s"]) >= 30

    # Rank 0 diagnosed the folder at low priority and said so in one line.
    report = os.path.join(session, "report.json")
    assert json.load(open(report))["findings"][0]["category"] == "dataloader"
    assert open(os.path.join(session, "report.txt")).read().strip()
    call = json.load(open(os.path.join(session, "fake-diagnose-json.json")))
    # One diagnosis makes both reports.
    assert call["argv"][1:] == ["diagnose", session, "--format", "text", "--json-out", report]
    assert call["nice"] >= 10
    assert "rank-0.meta.json" in call["files"] and "session.json" in call["files"]
    # The second session the detector may take (above) is refused with one notice of its own.
    refused = "eroica: EROICA_MAX_SESSIONS=1 reached, no more sessions"
    lines = [l for l in done.stderr.splitlines() if l.startswith("eroica:") and l != refused]
    assert lines == ["eroica: local dataloader on rank 1: enumerate(DataLoader)#__next__ "
                     "(0.030 s/iter) at ddp_train.py:44 — report: %s" % report]


def test_slowdown_detected_in_a_single_process(tmp_path):
    env = clean_env(EROICA_DIR=tmp_path / "s", EROICA_POLL_S=0.1, EROICA_BIN="/nonexistent",
                    EROICA_THRESHOLD=1.3)  # shared machine: see test_e2e_ddp
    done = eroica_run([TORCH_PYTHON, SINGLE, "iters=260", "slow_from=120", "slow_s=0.02"],
                      env)
    assert done.returncode == 0, done.stderr
    session = only_session(tmp_path / "s")
    doc = json.load(open(os.path.join(session, "session.json")))
    assert doc["reason"] == "degradation"
    assert 120 <= doc["detected_iteration"] <= 160, doc["detected_iteration"]
    assert doc["current_mean_s"] > 1.05 * doc["best_mean_s"]
    meta = json.load(open(os.path.join(session, "rank-0.meta.json")))
    assert meta["iteration_ids"][0] == doc["target_iteration"] > doc["detected_iteration"]
    print("\nsingle process: slowdown at 120, detected at %d, profiled %s"
          % (doc["detected_iteration"], meta["iteration_ids"]))
    line = [l for l in done.stderr.splitlines() if l.startswith("eroica:")]
    # One line: the verdict of whichever eroica binary is around, or why there is none.
    assert len(line) == 1 and ("report:" in line[0] or "diagnose" in line[0])


def test_profiler_failure_is_survived(tmp_path):
    env = clean_env(EROICA_DIR=tmp_path / "s", EROICA_TRIGGER_AT=20, EROICA_POLL_S=0.1,
                    EROICA_BIN="/nonexistent")
    done = eroica_run([TORCH_PYTHON, SINGLE, "iters=100", "break_profiler=1"], env)
    assert done.returncode == 0 and "trained 100" in done.stdout, done.stderr
    meta = json.load(open(os.path.join(only_session(tmp_path / "s"), "rank-0.meta.json")))
    assert "profiler unavailable here" in meta["error"] and meta["iteration_ids"] == []
    assert sum("profiler failed to start" in l for l in done.stderr.splitlines()) == 1


def test_diagnose_without_binary_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(binary, "PACKAGE_DIR", "/nonexistent/lib/python3/dist-packages/eroica")
    monkeypatch.setenv("PATH", "/nonexistent")
    line = diagnose.run(str(tmp_path), "", 10)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "diagnose skipped" in err and line in err


def test_diagnose_failure_is_one_line(tmp_path, capsys):
    failing = tmp_path / "failing"
    failing.write_text("#!/bin/sh\necho 'error: no traces in folder' >&2\nexit 3\n")
    failing.chmod(0o755)
    diagnose.run(str(tmp_path), str(failing), 10)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(r"exit 3.*no traces in folder", err)


def test_first_finding_wording():
    assert diagnose.first_finding({"healthy": True, "findings": []}) == "healthy"
    # Healthy in the job, slower for a node other processes came to share (diff/neighbour_growth.h).
    assert diagnose.first_finding({"healthy": True, "findings": [], "slowed_by": "+54% a step"}) == \
        "healthy in the job, but slower: +54% a step"
    doc = {"healthy": False, "findings": [{"scope": "global", "category": "host",
                                          "workers": list(range(20)), "function": "gc"}]}
    assert diagnose.first_finding(doc) == "global host on rank 0,1,2,3,4,5,6,7,...: gc"
    # A cost the job's baseline had too says so (diff/standing_costs.h).
    doc["findings"][0].update(workers=[0, 1], standing=True, location="train.py:58(<listcomp>)")
    assert diagnose.first_finding(doc) == \
        "global host on rank 0,1: gc at train.py:58(<listcomp>) (as at the baseline)"


def test_the_window_stops_without_parsing_its_events_and_the_export_still_writes_them(tmp_path):
    # Stopping torch's profiler parses every event into Python objects on the stopping thread
    # (about 50 µs each here): the training thread. The stop leaves that to the export thread.
    import torch

    from eroica import capture

    session = {"session_id": "s", "reason": "forced", "target_iteration": 0,
               "capture_iters": 2, "capture_max_s": 20}
    cap = capture.Capture(session, 0, 1, str(tmp_path))
    cap.start(0)
    values = torch.arange(300.0)
    for i in range(1, 3):
        total = sum(float(values[k]) for k in range(300))  # 600 tiny ops a step
        done = cap.on_boundary(i, 0.01)
    assert done and total == sum(range(300))
    inner = cap._stopped_prof.profiler
    assert len(inner.function_events) == 0  # nothing parsed at the stop
    assert "_parse_kineto_results" in vars(inner)
    cap.export()
    assert not cap.error and "_parse_kineto_results" not in vars(inner)  # torch's own again
    events = trace_events(capture.trace_path(str(tmp_path), 0))
    assert profiler_steps(events) == [0, 1]
    assert sum(e.get("name") == "aten::select" for e in events) >= 600


def test_a_window_the_exit_cut_before_an_iteration_ended_is_a_miss(tmp_path):
    # Its trace holds the loop's end and the teardown: no step to compare.
    from eroica import capture

    session = {"session_id": "s", "reason": "forced", "target_iteration": 171,
               "capture_iters": 5, "capture_max_s": 20}
    cut = capture.Capture(session, 0, 1, str(tmp_path))
    cut.start(171)
    cut.stop("exit")
    meta = cut.meta()
    assert meta["iteration_ids"] == [] and meta["stop_reason"] == "exit"
    assert meta["missed"] == "the job ended before an iteration of the window did (at its first, 171)"
    # One iteration ended: the window is the job's, cut short, and no miss.
    whole = capture.Capture(session, 0, 1, str(tmp_path / "b"))
    whole.start(171)
    whole.on_boundary(172, 0.01)
    whole.stop("exit")
    assert whole.meta()["iteration_ids"] == [171] and "missed" not in whole.meta()


def test_a_profiler_without_the_parse_to_defer_is_stopped_as_it_is():
    from eroica import capture

    class Bare:
        profiler = object()  # no _parse_kineto_results

    deferred = capture._DeferredEvents(Bare())
    assert not deferred.installed
    deferred.finish()  # nothing to give back, no error


def test_a_window_of_too_many_events_keeps_its_first_whole_steps(tmp_path):
    # Without Kineto every event is parsed and written from Python on the export thread, holding
    # the GIL the training thread needs: past the bound only the first whole steps are kept.
    import torch

    from eroica import capture

    session = {"session_id": "s", "reason": "forced", "target_iteration": 0,
               "capture_iters": 4, "capture_max_s": 20}
    cap = capture.Capture(session, 0, 1, str(tmp_path), max_trace_events=1000)
    cap.start(0)
    values = torch.arange(300.0)
    for i in range(1, 5):
        sum(float(values[k]) for k in range(300))  # 600+ events a step: 1000 hold one step
        done = cap.on_boundary(i, 0.01)
    assert done
    cap.export()
    if torch.autograd.kineto_available():  # Kineto writes its own results whole
        assert cap.trace_cut is None
        return
    events = trace_events(capture.trace_path(str(tmp_path), 0))
    assert profiler_steps(events) == [0]
    assert cap.trace_cut["steps_kept"] == 1 and cap.trace_cut["kept"] == len(events)
    assert cap.trace_cut["events"] > 4 * 600
    assert json.load(open(capture.meta_path(str(tmp_path), 0)))["trace_cut"] == cap.trace_cut
    assert sum(e.get("name") == "aten::select" for e in events) == 300


def test_first_whole_steps_keeps_every_step_that_fits():
    from eroica import capture

    class Event:
        def __init__(self, name, start):
            self._name, self._start = name, start

        def name(self):
            return self._name

        def start_us(self):
            return self._start

    # three steps of 1 + 4 events each, out of time order
    recorded = [Event("op", 100 * s + k) for s in range(3) for k in range(1, 5)]
    recorded += [Event("ProfilerStep#%d" % s, 100 * s) for s in range(3)]
    recorded.reverse()
    kept, steps = capture._first_whole_steps(recorded, 11)
    assert steps == 2 and [e.start_us() for e in kept] == sorted(e.start_us() for e in kept)
    assert len(kept) == 10 and max(e.start_us() for e in kept) == 104
    kept, steps = capture._first_whole_steps(recorded, 3)  # not one step fits: the first whole
    assert steps == 1 and len(kept) == 5
    kept, steps = capture._first_whole_steps([Event("op", t) for t in range(9)], 4)  # no steps
    assert steps == 0 and len(kept) == 4

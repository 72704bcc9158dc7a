"""The job's baseline under `python -m eroica run`: a real 4-rank DDP job (gloo, CPU) profiles
one short window after warm-up, keeps it as <dir>/<job>.baseline.pattern, and a later slowdown
of every rank alike is diagnosed against it."""

import glob
import json
import os
import statistics

import pytest

from conftest import TORCH_PYTHON, WORKLOADS, clean_env, eroica_run, free_port

DDP = os.path.join(WORKLOADS, "ddp_train.py")
EROICA_BIN = os.environ.get("EROICA_BIN") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "build", "eroica")
WORLD = 4


def run_job(tmp_path, *args, **settings):
    # Threshold 1.3 as in test_e2e_ddp.py: this shared machine's own noise is not a slowdown.
    env = clean_env(EROICA_DIR=tmp_path, EROICA_POLL_S=0.2, EROICA_BIN=EROICA_BIN, EROICA_BASELINE=1,
                    EROICA_WARMUP=10, EROICA_WINDOW=20, EROICA_THRESHOLD=1.3, EROICA_JOB_ID="bjob", **settings)
    done = eroica_run([TORCH_PYTHON, DDP, "world=%d" % WORLD, "iters=220", "out=%s/out" % tmp_path,
                       "port=%d" % free_port(), *args], env, timeout_s=240)
    assert done.returncode == 0, done.stderr
    sessions = {}
    for d in glob.glob(os.path.join(str(tmp_path), "bjob-*")):
        if os.path.isdir(d):
            sessions[d] = json.load(open(os.path.join(d, "session.json")))
    return done, sessions


def baseline_cost(session_dir, doc):
    """Wall time the baseline window added: its iterations against the detector's median before
    it (rank 0's, like every rank's, as the job runs in lock-step)."""
    meta = json.load(open(os.path.join(session_dir, "rank-0.meta.json")))
    window = meta["iteration_times_s"]
    before_series = doc.get("iteration_times_s")  # absent when rank 0 could not read it in time
    if not before_series:
        return float("nan"), float("nan"), window
    before = statistics.median(before_series[-20:])
    return sum(window) - before * len(window), before, window


@pytest.mark.skipif(not os.access(EROICA_BIN, os.X_OK), reason="needs the built eroica binary")
def test_every_rank_slower_is_a_global_finding_against_the_baseline(tmp_path):
    # A session forced at iteration 75, after the baseline's: what the machine's noise once set
    # off in CI, after which the slowed pace became the detector's new best and no session
    # followed (detector.py: the new baseline starts from the captured pace; with the session
    # forced at 75, 85 or 90 the old detector missed the slowdown in each of 3 runs). It is
    # proposed once the baseline's exports and diagnosis are done (runtime.py, _finishing): before
    # the slowdown at 120 on a quick machine, inside it on a loaded one, where its own window is
    # the slowdown's session.
    done, sessions = run_job(tmp_path, "all_slow_from=120", "all_slow_s=0.04", EROICA_TRIGGER_AT=75)
    bundle = tmp_path / "bjob.baseline.pattern"
    assert bundle.is_file(), done.stderr
    baseline = [d for d, doc in sessions.items() if doc["reason"] == "baseline"]
    assert len(baseline) == 1, sessions
    added_s, before_s, window = baseline_cost(baseline[0], sessions[baseline[0]])
    print("\nbaseline: %d KB bundle; window of %d iterations %s s, median before %.4f s: +%.3f s"
          % (bundle.stat().st_size // 1024, len(window), window, before_s, added_s))
    # The session the slowdown triggered: on a loaded machine the detector can also fire on noise
    # before iteration 120, and such a session (healthy against the baseline) may sort after it.
    forced = [doc["target_iteration"] for doc in sessions.values() if doc["reason"] == "forced"]
    assert forced, sessions  # deferred, never dropped
    # Before the slowdown, it must not hide it: a degradation session follows. Inside it, it is
    # the slowdown's session.
    slowed = sorted((doc["target_iteration"], d) for d, doc in sessions.items()
                    if (doc["reason"] == "degradation" and doc["detected_iteration"] >= 120)
                    or (doc["reason"] == "forced" and doc["target_iteration"] >= 120))
    assert slowed, (sessions, done.stderr)
    report = json.load(open(os.path.join(slowed[0][1], "report.json")))
    assert report["findings"], (slowed, report.get("notes"), report.get("warnings"), done.stderr[-3000:])
    first = report["findings"][0]
    assert first["scope"] == "global" and sorted(first["workers"]) == list(range(WORLD)), first
    assert first["category"] == "host", first
    assert "against the baseline" in first["evidence"], first
    assert first.get("location", "").startswith(DDP + ":"), first  # the added sleep's line
    assert first["evidence"].count("Python stack samples put") == 1, first  # merged, not said twice
    print("finding: %s %s: %s\n%s" % (first["scope"], first["category"], first["function"],
                                      first["evidence"]))


@pytest.mark.skipif(not os.access(EROICA_BIN, os.X_OK), reason="needs the built eroica binary")
def test_healthy_control_has_a_baseline_and_no_finding(tmp_path):
    done, sessions = run_job(tmp_path)
    assert (tmp_path / "bjob.baseline.pattern").is_file(), done.stderr
    # The session folder keeps no copy of the bundle: `eroica diagnose <session>` reads each rank once.
    for folder, doc in sessions.items():
        assert not os.path.exists(os.path.join(folder, "baseline.pattern")), os.listdir(folder)
    for d, doc in sessions.items():
        path = os.path.join(d, "report.json")
        if doc["reason"] != "baseline" and not os.path.exists(path):
            continue  # proposed for an iteration past the job's end: never captured
        report = json.load(open(path))
        # On this loaded machine a session (the baseline's own included) can still get a
        # finding from peers or boxes (docs/ACCURACY-HISTORY.md, "Healthy runs on a busy
        # host"), which the baseline may confirm in its evidence ("against the baseline its ...
        # grew": a clean clone of stop 67); the comparison with the baseline makes none.
        made = [f for f in report["findings"] if f["from_baseline"]]
        assert made == [], (doc["reason"], report["findings"])


@pytest.mark.skipif(not os.access(EROICA_BIN, os.X_OK), reason="needs the built eroica binary")
def test_a_job_that_got_faster_since_its_baseline_gets_a_new_one(tmp_path):
    """Every rank sleeps 40 ms a step until iteration 90, then runs at its own pace: the first
    baseline is of the slow job; once the faster pace fills a detector window, a second baseline
    replaces it (runtime.py _check_faster_than_baseline), and only one."""
    done, sessions = run_job(tmp_path, "all_slow_until=90", "all_slow_s=0.04")
    baselines = sorted(doc["target_iteration"] for doc in sessions.values() if doc["reason"] == "baseline")
    assert len(baselines) == 2, (sessions, done.stderr[-3000:])
    assert baselines[0] < 90 < baselines[1], baselines
    assert "before the baseline: a new baseline" in done.stderr, done.stderr[-3000:]
    assert done.stderr.count("baseline of %d ranks kept" % WORLD) == 2, done.stderr[-3000:]
    # The bundle is the second baseline's: its window ran without the 40 ms sleep. Compared with
    # the first baseline's window, not with a fixed bar: on a loaded CI machine the job's own pace
    # alone once had a median of 40.0 ms.
    def window_of(after_90):
        d = [d for d, doc in sessions.items()
             if doc["reason"] == "baseline" and (doc["target_iteration"] > 90) == after_90][0]
        return d, json.load(open(os.path.join(d, "rank-0.meta.json")))["iteration_times_s"]
    _, slow = window_of(False)
    second, fast = window_of(True)
    assert statistics.median(slow) - statistics.median(fast) > 0.02, (slow, fast)
    assert (tmp_path / "bjob.baseline.pattern").stat().st_mtime >= os.path.getmtime(
        os.path.join(second, "session.json")), sessions

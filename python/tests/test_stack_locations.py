"""Real 2-rank gloo jobs under `eroica run`: one rank runs pure Python (or gc.collect(), or an
evaluation's forward passes) at a known line every iteration, and the diagnosis names that
file:line from the window's stack samples (CPU-only torch records no Python frames of its own):
in report.json, the text report, the HTML report and `eroica prompt`."""

import glob
import json
import os
import subprocess

import pytest

from conftest import PYTHON_DIR, TORCH_PYTHON, WORKLOADS, clean_env, eroica_run, free_port

HOT = os.path.join(WORKLOADS, "hot_loop_train.py")
REAL_BIN = os.environ.get("EROICA_BIN") or os.path.join(os.path.dirname(PYTHON_DIR), "build",
                                                         "eroica")
needs_bin = pytest.mark.skipif(not os.access(REAL_BIN, os.X_OK),
                               reason="the eroica binary is not built")


def session_dirs(folder):
    """The session folders `eroica run` left in `folder` (not its process registry)."""
    return [d for d in glob.glob(os.path.join(str(folder), "*"))
            if os.path.isdir(d) and os.path.basename(d) != "procs"]


def first_session(dirs):
    """The session folder detected first among `dirs`, and its session.json."""
    docs = [(json.load(open(os.path.join(d, "session.json"))), d) for d in dirs]
    doc, folder = min(docs, key=lambda pair: pair[0]["detected_iteration"])
    return folder, doc


def marked_line(path, mark):
    with open(path) as f:
        return next(i for i, line in enumerate(f, 1) if line.rstrip().endswith(mark))


@needs_bin
@pytest.mark.parametrize("knobs,mark", [("gc=0 hot_s=0.04", "# HOT-LINE"),
                                        ("gc=1", "# GC-LINE"),
                                        # The model's own ops, from a line its peer never ran.
                                        ("eval_s=0.04", "# EVAL-LINE")])
def test_host_time_on_one_rank_is_named_by_file_and_line(tmp_path, knobs, mark):
    env = clean_env(EROICA_DIR=tmp_path, EROICA_TRIGGER_AT=15, EROICA_POLL_S=0.1,
                    EROICA_MARGIN=5, EROICA_CAPTURE_ITERS=8, EROICA_BIN=REAL_BIN)
    done = eroica_run([TORCH_PYTHON, HOT, "world=2", "iters=45", "hot_rank=1",
                       "port=%d" % free_port()] + knobs.split(), env, timeout_s=120)
    assert done.returncode == 0, done.stderr
    sessions = session_dirs(tmp_path)
    assert len(sessions) == 1, (sessions, done.stderr)
    session = sessions[0]
    for rank in range(2):
        stacks = json.load(open(os.path.join(session, "rank-%d.stacks.json" % rank)))
        assert stacks["samples"] and not stacks.get("error"), stacks.get("error")
        # The walker a user's `eroica run` gives its children, where the build made it.
        if glob.glob(os.path.join(os.path.dirname(REAL_BIN), "python-native", "_eroica_frames*")):
            assert stacks["walker"] == "interpreter frames", stacks["walker"]
    report = json.load(open(os.path.join(session, "report.json")))
    # file:line( — the function is the code object's: <genexpr> for the hot line.
    where = "%s:%d(" % (HOT, marked_line(HOT, mark))
    located = [f for f in report["findings"] if f["location"].startswith(where)]
    assert located, (where, report["findings"], done.stderr)
    finding = located[0]
    assert finding["category"] == "host" and 1 in finding["workers"], finding
    assert "stack samples put" in finding["evidence"]
    # The finding's line in the text report (which finding comes first is the localizer's
    # ranking, not this test's business).
    text = open(os.path.join(session, "report.txt")).read()
    assert any(line[:1].isdigit() and "ms/iter lost" in line and "at " + where in line
               for line in text.splitlines()), text
    html = os.path.join(str(tmp_path), "report.html")
    subprocess.run([REAL_BIN, "report", session, "-o", html], check=True, timeout=60)
    assert where in open(html).read()
    prompt = subprocess.run([REAL_BIN, "prompt", session], check=True, timeout=60,
                            stdout=subprocess.PIPE, text=True).stdout
    assert "`%s:%d`" % (HOT, marked_line(HOT, mark)) in prompt, prompt


@needs_bin
def test_a_loaders_slow_worker_processes_are_named_by_their_line(tmp_path):
    """With DataLoader worker processes the training thread only waits in the loader's
    __next__; the workers' own stack samples name the line that is slow in them."""
    env = clean_env(EROICA_DIR=tmp_path, EROICA_TRIGGER_AT=15, EROICA_POLL_S=0.1,
                    EROICA_MARGIN=5, EROICA_CAPTURE_ITERS=8, EROICA_BIN=REAL_BIN)
    done = eroica_run([TORCH_PYTHON, HOT, "world=3", "iters=45", "hot_rank=1", "hot_s=0",
                       "workers=2", "getitem_s=0.006", "port=%d" % free_port()], env, timeout_s=120)
    assert done.returncode == 0, done.stderr
    sessions = session_dirs(tmp_path)
    assert len(sessions) == 1, (sessions, done.stderr)
    stacks = json.load(open(os.path.join(sessions[0], "rank-1.stacks.json")))
    workers = stacks.get("loader_workers", [])
    assert len(workers) == 2 and all(w["samples"] for w in workers), [len(w["samples"]) for w in workers]
    report = json.load(open(os.path.join(sessions[0], "report.json")))
    first = report["findings"][0]
    assert (first["category"], first["workers"]) == ("dataloader", [1]), report["findings"]
    assert first["location"].startswith("%s:%d(" % (HOT, marked_line(HOT, "# GETITEM-LINE"))), first


PIPELINE = os.path.join(WORKLOADS, "pipeline_train.py")


@needs_bin
def test_a_pipelines_stages_are_compared_within_themselves(tmp_path):
    """A real 2-stage x 2-replica pipeline: the stages issue each other's calls by name (sends,
    receives, all-reduces), and only the order of their sends and receives tells them apart.
    Rank 0's slow loader is named against rank 1, its stage's other replica, at its line; the
    other stage, waiting for it in its receives, is its effect, not a second problem."""
    env = clean_env(EROICA_DIR=tmp_path, EROICA_TRIGGER_AT=15, EROICA_POLL_S=0.1,
                    EROICA_MARGIN=5, EROICA_CAPTURE_ITERS=8, EROICA_BIN=REAL_BIN)
    done = eroica_run([TORCH_PYTHON, PIPELINE, "iters=45", "slow_rank=0", "load_s=0.02",
                       "port=%d" % free_port()], env, timeout_s=120)
    assert done.returncode == 0, done.stderr
    sessions = session_dirs(tmp_path)
    assert len(sessions) == 1, (sessions, done.stderr)
    report = json.load(open(os.path.join(sessions[0], "report.json")))
    text = open(os.path.join(sessions[0], "report.txt")).read()
    assert "2 groups of like roles (sizes 2, 2)" in text, text
    first = report["findings"][0]
    assert first["scope"] == "local" and first["workers"] == [0], text
    assert first["category"] in ("host", "dataloader"), text
    where = "%s:%d(" % (PIPELINE, marked_line(PIPELINE, "# LOAD-LINE"))
    assert first["location"].startswith(where), (where, text)
    assert not [f for f in report["findings"] if f["category"] == "communication"], text
    assert "the pipeline stage of ranks 2,3 waits for it too" in first["evidence"], text


@needs_bin
def test_own_work_that_noisy_iteration_times_hide_is_detected_by_its_cpu_time(tmp_path):
    """Every rank sleeps the same random 0-60 ms a step, at a point of its own (iteration times
    of 5-65 ms that cost no CPU time); from iteration 80 rank 1 also runs 15 ms of Python. The time rule's noise guard (10
    standard errors of a 20-iteration window: ~39 ms here) hides that; the training thread's
    CPU time (1 ms a step before) does not (detector.py): a session comes by itself, 5
    iterations after the onset here, says it was the CPU time, and names the line. The same job
    without the loop gets no session. (The sleep may be named too: every rank spends half its
    step at that line. Drawn per rank, or at the loop's point, it outweighed the loop there.)"""
    def run(folder, hot_from):
        env = clean_env(EROICA_DIR=folder, EROICA_POLL_S=0.1, EROICA_MARGIN=5, EROICA_WINDOW=20,
                        EROICA_WARMUP=10, EROICA_BASELINE=0, EROICA_CAPTURE_ITERS=8,
                        EROICA_BIN=REAL_BIN)
        done = eroica_run([TORCH_PYTHON, HOT, "world=2", "iters=150", "hot_rank=1", "hot_s=0.015",
                           "hot_from=%d" % hot_from, "jitter_s=0.06", "port=%d" % free_port()],
                          env, timeout_s=120)
        assert done.returncode == 0, done.stderr
        return done, session_dirs(folder)

    done, sessions = run(tmp_path / "hot", 80)
    assert sessions, done.stderr
    first, session = first_session(sessions)
    assert session["reason"] == "degradation" and session["detected_iteration"] >= 80, session
    assert session["current_cpu_s"] - session["best_cpu_s"] > 0.1 * session["best_mean_s"], session
    report = json.load(open(os.path.join(first, "report.json")))
    where = "%s:%d(" % (HOT, marked_line(HOT, "# HOT-LINE"))
    assert any(f["location"].startswith(where) and 1 in f["workers"] for f in report["findings"]), \
        (report["findings"], done.stderr)
    done, sessions = run(tmp_path / "healthy", 10 ** 6)
    assert sessions == [], (sessions, done.stderr)


@needs_bin
def test_a_slowdown_from_fresh_memory_each_step_is_said_in_the_diagnosis(tmp_path):
    """From iteration 60 every rank fills a new 64 MB tensor each step, which glibc maps fresh
    (above its mmap threshold): page faults on every step. The detector fires on the time, its
    page-fault reading rose with it, and the diagnosis says so in a note (no window reading
    shows page faults)."""
    # On this 2-core VM the fault takes the 7 ms step to ~220 ms (a fresh 64 MB costs that in
    # page faults and zeroing here). A 7 ms step is at the mercy of the tests beside it: at x1.05
    # the detector fired at iteration 58 once, and at x1.25 (or by the CPU-time rule) once before
    # 60 in a clean clone, its window then falling after the onset and the job's end with no room
    # for the fault's own session. The detector counts a sample at most 2x its best (its clip), so
    # the time rule asks x1.5 of a window (10 of its 20 samples at the fault's clip, none from a
    # neighbour's burst short of half the window at 2x) and the CPU-time rule is off. The session
    # comes at about 70 and its window ends by 85: 100 iterations.
    env = clean_env(EROICA_DIR=tmp_path, EROICA_POLL_S=0.1, EROICA_MARGIN=5, EROICA_WINDOW=20,
                    EROICA_WARMUP=10, EROICA_BASELINE=0, EROICA_CAPTURE_ITERS=8,
                    EROICA_THRESHOLD=1.5, EROICA_CPU_THRESHOLD=0, EROICA_BIN=REAL_BIN)
    done = eroica_run([TORCH_PYTHON, HOT, "world=2", "iters=100", "hot_from=60", "fresh_mb=64",
                       "port=%d" % free_port()], env, timeout_s=120)
    assert done.returncode == 0, done.stderr
    # The first session from the onset on. Another may come before it or after it where the
    # machine's load moved (the suite runs tests side by side on 2 cores: one was detected at
    # iteration 58); what this test asks of is the session the fault started.
    sessions = session_dirs(tmp_path)
    after_onset = [d for d in sessions
                   if json.load(open(os.path.join(d, "session.json")))["detected_iteration"] >= 60]
    assert after_onset, (sessions, done.stderr)
    first, session = first_session(after_onset)
    # At least one step's 64 MB of 4 KiB pages in the 20-iteration window; next to none before.
    assert session["current_faults_per_iter"] >= 0.9 * (64 << 20) / 4096 / 20, session
    assert session["best_faults_per_iter"] < 10, session
    report = json.load(open(os.path.join(first, "report.json")))
    assert any("page faults an iteration" in note for note in report["notes"]), report["notes"]

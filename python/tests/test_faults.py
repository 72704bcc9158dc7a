"""Fault injection on the online path: real multi-process gloo jobs (launch.py + fault_train.py)
under `python -m eroica run`, one fault each.

In every case the job trains (or fails) as it would without eroica, no error of ours reaches
the training loop, the data the live ranks could write is kept and diagnosed, and no rank's
exit waits for eroica longer than EROICA_EXIT_WAIT_S (here BOUND_S; 30 s by default) plus
the interpreter's own teardown (SLACK_S). Each case prints its measured figures.
"""

import contextlib
import glob
import json
import os
import signal
import subprocess
import threading
import time

import pytest

from conftest import PYTHON_DIR, TORCH_PYTHON, WORKLOADS, clean_env, eroica_run, free_port

LAUNCH = os.path.join(WORKLOADS, "launch.py")
FAULT = os.path.join(WORKLOADS, "fault_train.py")
BOUND_S = 4.0  # EROICA_EXIT_WAIT_S in these runs
SLACK_S = 3.0  # torch's own teardown on two loaded cores
COLLECT_S = 8.0  # EROICA_COLLECT_TIMEOUT_S: longer than the bound, so rank 0 hands off
REPO_BIN = os.path.join(os.path.dirname(PYTHON_DIR), "build", "eroica")
REAL_BIN = os.environ.get("EROICA_BIN") or REPO_BIN
needs_bin = pytest.mark.skipif(not os.access(REAL_BIN, os.X_OK),
                               reason="the eroica binary is not built")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


class Job:
    """One finished run: exit codes, per-rank exit delays, stderr, the session folders."""

    def __init__(self, root, done, wall_s, out):
        self.root, self.done, self.wall_s, self.stderr = root, done, wall_s, done.stderr
        launch = json.load(open(os.path.join(out, "launch.json")))
        self.codes = launch["codes"]
        self.loop_end = {}
        self.exit_delay_s = {}
        for rank, exit_unix in enumerate(launch["exit_unix"]):
            path = os.path.join(out, "loop-end-rank-%d.json" % rank)
            if os.path.exists(path):
                self.loop_end[rank] = json.load(open(path))
                self.exit_delay_s[rank] = exit_unix - self.loop_end[rank]["unix"]

    def sessions(self):
        return sorted(d for d in glob.glob(os.path.join(self.root, "*"))
                      if os.path.isdir(d) and os.path.basename(d) != "procs")

    def only_session(self):
        sessions = self.sessions()
        assert len(sessions) == 1, (sessions, self.stderr)
        return sessions[0]

    def eroica_lines(self):
        return [line for line in self.stderr.splitlines() if line.startswith("eroica:")]

    def assert_unharmed(self):
        """No error of ours reached the training loop, and no exit waited beyond the bound."""
        assert "internal error" not in self.stderr, self.stderr
        assert "background task failed" not in self.stderr, self.stderr
        for rank, delay in self.exit_delay_s.items():
            assert delay <= BOUND_S + SLACK_S, (rank, delay, self.stderr)

    def summary(self, case):
        delays = ", ".join("rank %d %.2f s" % kv for kv in sorted(self.exit_delay_s.items()))
        print("\n%s: wall %.1f s; exit codes %s; exit delay after the loop: %s"
              % (case, self.wall_s, self.codes, delays))


def run_job(tmp_path, nproc, args=(), root=None, rank_store=False, **env):
    root = str(root or tmp_path / "eroica")
    out = str(tmp_path / "out")
    os.makedirs(out, exist_ok=True)
    settings = dict(EROICA_DIR=root, EROICA_POLL_S=0.2, EROICA_TRIGGER_AT=10,
                    EROICA_EXIT_WAIT_S=BOUND_S, EROICA_COLLECT_TIMEOUT_S=COLLECT_S,
                    EROICA_AGENT_WAIT_S=1.0, EROICA_BIN=REAL_BIN,
                    EROICA_THRESHOLD=1000,  # forced sessions only: no load-made slowdowns
                    LAUNCH_REPORT=os.path.join(out, "launch.json"))
    if rank_store:
        settings["LAUNCH_STORE"] = "rank"
    settings.update(env)
    start = time.monotonic()
    done = eroica_run([TORCH_PYTHON, LAUNCH, str(nproc), str(free_port()), FAULT,
                       "out=%s" % out] + list(args), clean_env(**settings), timeout_s=120)
    return Job(root, done, time.monotonic() - start, out)


def wait_for(path, timeout_s):
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.1)
    return os.path.exists(path)


def meta(session, rank):
    path = os.path.join(session, "rank-%d.meta.json" % rank)
    return json.load(open(path)) if os.path.exists(path) else None


@needs_bin
def test_a_rank_killed_in_its_window(tmp_path):
    """Rank 2 is SIGKILLed inside the window: ranks 0 and 1 fail in their next all-reduce as
    they would without eroica; their traces are kept, rank 0 exits within the bound and a
    detached process diagnoses what is there, naming the missing rank."""
    job = run_job(tmp_path, 3, ["kill_rank=2"])
    job.summary("rank killed in its window")
    assert job.codes[2] == -signal.SIGKILL
    for rank in (0, 1):  # the job's own failure, not ours
        assert job.codes[rank] == 1 and job.loop_end[rank]["error"], job.stderr
    job.assert_unharmed()
    session = job.only_session()
    for rank in (0, 1):
        assert meta(session, rank)["iteration_ids"], meta(session, rank)
        assert os.path.exists(os.path.join(session, "rank-%d.json.gz" % rank))
    assert meta(session, 2) is None
    assert any("goes on in the background" in line for line in job.eroica_lines()), job.stderr
    assert "the job store is gone" not in job.stderr  # rank 0 lives: no deputy
    log = os.path.join(session, "finish.log")
    assert wait_for(os.path.join(session, "report.json"), COLLECT_S + 20), os.listdir(session)
    assert wait_for(log, 5)
    time.sleep(0.5)  # the line is written right after the report
    line = open(log).read()
    print("detached diagnosis: %s" % line.strip())
    assert "1 of 3 rank files missing" in line and "rank-2.meta.json" in line, line
    assert_suspects(session, 2)


@needs_bin
def test_a_rank_that_never_reaches_the_target(tmp_path):
    """Without a process group the ranks are independent: rank 1 is slower and ends before
    the target iteration (a margin of 40 puts it past iteration 50). It says so in its meta
    at exit; rank 0 diagnoses without waiting out the collect timeout."""
    job = run_job(tmp_path, 2, ["pg=0", "iters=150", "slow_rank=1", "slow_pace_s=0.06",
                                "short_iters=30", "force_rank=0"],
                  EROICA_TRIGGER_AT=-1, EROICA_MARGIN=40)
    job.summary("rank never reaches the target")
    assert job.codes == [0, 0], job.stderr
    assert job.loop_end[0]["iterations"] == 150 and job.loop_end[1]["iterations"] == 30
    job.assert_unharmed()
    session = job.only_session()
    target = json.load(open(os.path.join(session, "session.json")))["target_iteration"]
    assert target >= 50
    assert "the job ended at iteration 30" in meta(session, 1)["missed"], meta(session, 1)
    assert meta(session, 0)["iteration_ids"] == list(range(target, target + 5))
    assert os.path.exists(os.path.join(session, "report.json"))
    verdicts = [l for l in job.eroica_lines() if "report:" in l]
    assert len(verdicts) == 1 and "missing" not in verdicts[0], job.stderr


@needs_bin
def test_the_store_host_rank_dies_mid_session(tmp_path):
    """Rank 0 hosts the job's store (env:// init) and is killed inside the window. Rank 2's
    next all-reduce fails as it would without eroica; its monitor loses the store quietly;
    its trace and meta are kept; its exit is not delayed. Rank 0 cannot diagnose, so the
    first surviving rank to claim the session does (detached), naming rank 0 as missing."""
    job = run_job(tmp_path, 3, ["kill_rank=0"], rank_store=True)
    job.summary("store host rank dies")
    assert job.codes[0] == -signal.SIGKILL
    for rank in (1, 2):
        assert job.codes[rank] == 1 and job.loop_end[rank]["error"], job.stderr
    job.assert_unharmed()
    session = job.only_session()
    for rank in (1, 2):
        assert meta(session, rank)["iteration_ids"], meta(session, rank)
        assert os.path.exists(os.path.join(session, "rank-%d.json.gz" % rank))
    assert meta(session, 0) is None
    deputies = [l for l in job.eroica_lines() if "diagnoses %s" % session in l]
    assert len(deputies) == 1 and "the job store is gone" in deputies[0], job.stderr
    assert wait_for(os.path.join(session, "report.json"), COLLECT_S + 20), os.listdir(session)
    log = os.path.join(session, "finish.log")
    assert wait_for(log, 5)
    time.sleep(0.5)
    line = open(log).read()
    print("deputy diagnosis: %s" % line.strip())
    assert "1 of 3 rank files missing" in line and "rank-0.meta.json" in line, line
    assert_suspects(session, 0)


def assert_suspects(session, rank):
    """The diagnosis names the rank without a trace as a suspect."""
    warnings = json.load(open(os.path.join(session, "report.json"))).get("warnings", [])
    print("its warnings: %s" % warnings)
    assert any("no usable trace: %d " % rank in w and "suspect" in w for w in warnings), \
        warnings


@contextlib.contextmanager
def tmpfs(path, size="1m"):
    os.makedirs(path)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", path], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", path], check=False)


@needs_root
def test_the_session_folder_is_full(tmp_path):
    with tmpfs(str(tmp_path / "mnt")) as mnt:
        filler = os.path.join(mnt, "filler")
        subprocess.run(["dd", "if=/dev/zero", "of=" + filler, "bs=64k"],
                       stderr=subprocess.DEVNULL, check=False)  # stops at "no space left"
        job = run_job(tmp_path, 2, root=mnt)
        job.summary("session folder full")
        assert job.codes == [0, 0] and all(e["iterations"] == 80 and not e["error"]
                                           for e in job.loop_end.values()), job.stderr
        job.assert_unharmed()
        assert "No space left" in job.stderr
        assert len(job.eroica_lines()) <= 12, job.stderr  # a few lines, never a flood
        leftovers = [n for s in job.sessions() for n in os.listdir(s)]
        assert not [n for n in leftovers if n.endswith(".tmp")], leftovers


@needs_root
def test_the_session_folder_is_read_only(tmp_path):
    with tmpfs(str(tmp_path / "mnt")) as mnt:
        subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
        job = run_job(tmp_path, 2, root=mnt)
        job.summary("session folder read-only")
        assert job.codes == [0, 0] and all(e["iterations"] == 80 and not e["error"]
                                           for e in job.loop_end.values()), job.stderr
        job.assert_unharmed()
        skipped = [l for l in job.eroica_lines() if "skipped on rank" in l]
        assert len(skipped) == 2 and all("Read-only file system" in l for l in skipped), \
            job.stderr
        assert os.listdir(mnt) == []


@needs_bin
def test_the_agent_is_killed_and_restarted_mid_session(tmp_path):
    root = str(tmp_path / "eroica")
    os.makedirs(root, mode=0o700)
    agent_cmd = [REAL_BIN, "agent", "--dir", root, "--no-gpu"]
    logs = open(str(tmp_path / "agent.log"), "w")
    agents = [subprocess.Popen(agent_cmd, stdout=logs, stderr=logs)]
    restarted = threading.Event()

    def kill_and_restart():
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if glob.glob(os.path.join(root, "*", "capture.start")):
                agents[0].kill()
                agents[0].wait()
                agents.append(subprocess.Popen(agent_cmd, stdout=logs, stderr=logs))
                restarted.set()
                return
            time.sleep(0.02)

    chaos = threading.Thread(target=kill_and_restart, daemon=True)
    chaos.start()
    try:
        job = run_job(tmp_path, 2, ["iters=120"], root=root, EROICA_CAPTURE_ITERS=30)
    finally:
        chaos.join(5)
        alive = agents[-1].poll() is None
        agents[-1].terminate()
        agent_code = agents[-1].wait(10)
        logs.close()
    job.summary("agent killed and restarted")
    assert restarted.is_set() and alive, open(str(tmp_path / "agent.log")).read()
    assert job.codes == [0, 0], job.stderr
    job.assert_unharmed()
    session = job.only_session()
    assert meta(session, 0)["iteration_ids"] and meta(session, 1)["iteration_ids"]
    assert os.path.exists(os.path.join(session, "report.json")), os.listdir(session)
    metrics = glob.glob(os.path.join(session, "*.eroica-metrics"))
    print("agent: restarted agent exit %s; metrics files in the session: %d"
          % (agent_code, len(metrics)))


def test_the_binary_is_missing(tmp_path):
    job = run_job(tmp_path, 2, EROICA_BIN="/nonexistent/eroica")
    job.summary("binary missing")
    assert job.codes == [0, 0], job.stderr
    job.assert_unharmed()
    session = job.only_session()
    for rank in (0, 1):
        assert meta(session, rank)["iteration_ids"]
        assert os.path.exists(os.path.join(session, "rank-%d.json.gz" % rank))
    lines = [l for l in job.eroica_lines() if "diagnose skipped" in l]
    assert len(lines) == 1 and "EROICA_BIN=/nonexistent/eroica is not an executable" in \
        lines[0] and session in lines[0], job.stderr

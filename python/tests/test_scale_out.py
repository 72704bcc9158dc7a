"""Scale-out, end to end: 4 real gloo ranks as 2 simulated nodes (launch.py: LOCAL_RANK,
LOCAL_WORLD_SIZE, GROUP_RANK as torchrun sets them), each node with its own EROICA_LOCAL_DIR,
and no shared trace folder: every rank summarizes its trace where it was made, the patterns
reach rank 0 through the launcher's TCPStore, and the central folder ends up with the bundle,
the pointers and the report only."""

import glob
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import PYTHON_DIR, TORCH_PYTHON, WORKLOADS, clean_env, eroica_run, free_port

LAUNCH = os.path.join(WORKLOADS, "launch.py")
FAULT = os.path.join(WORKLOADS, "fault_train.py")
REAL_BIN = os.environ.get("EROICA_BIN") or os.path.join(os.path.dirname(PYTHON_DIR), "build",
                                                        "eroica")
pytestmark = pytest.mark.skipif(not os.access(REAL_BIN, os.X_OK),
                                reason="the eroica binary is not built")
CENTRAL_FILES = {"session.json", "patterns.pattern", "raw-traces.json", "report.json",
                 "report.txt"}


def run_two_nodes(tmp_path, args, **env):
    central, out = tmp_path / "central", tmp_path / "out"
    out.mkdir()
    settings = dict(EROICA_DIR=central, LAUNCH_LOCAL_DIR=tmp_path / "node{node}",
                    LAUNCH_NODES=2, EROICA_POLL_S=0.2, EROICA_TRIGGER_AT=10,
                    EROICA_CAPTURE_ITERS=4, EROICA_COLLECT_TIMEOUT_S=8, EROICA_BIN=REAL_BIN,
                    EROICA_THRESHOLD=1000, EROICA_VERBOSE=1, EROICA_AGENT_WAIT_S=0.5,
                    LAUNCH_REPORT=out / "launch.json")
    settings.update(env)
    start = time.monotonic()
    done = eroica_run([TORCH_PYTHON, LAUNCH, "4", str(free_port()), FAULT, "out=%s" % out]
                      + args, clean_env(**settings), timeout_s=150)
    print("\nwall %.1f s" % (time.monotonic() - start))
    sessions = [d for d in glob.glob(str(central / "*")) if os.path.isdir(d)]
    assert len(sessions) == 1, (sessions, done.stderr)
    return done, sessions[0]


def eroica(*args):
    return subprocess.run([REAL_BIN] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=60)


def test_patterns_through_the_store_name_the_slow_rank(tmp_path):
    # One node agent per simulated node, on its local folder: mu and sigma are made there.
    agents = []
    log = open(str(tmp_path / "agents.log"), "w")
    for node in (0, 1):
        (tmp_path / ("node%d" % node)).mkdir(mode=0o700)
        agents.append(subprocess.Popen([REAL_BIN, "agent", "--dir", tmp_path / ("node%d" % node),
                                        "--no-gpu"], stdout=log, stderr=log))
    try:
        done, session = run_two_nodes(tmp_path, ["slow_rank=3", "slow_pace_s=0.08", "iters=32"],
                                      EROICA_AGENT_WAIT_S=3)
    finally:
        for agent in agents:
            agent.terminate()
            agent.wait(10)
        log.close()
    assert done.returncode == 0, done.stderr
    assert set(os.listdir(session)) == CENTRAL_FILES, (os.listdir(session), done.stderr)
    assert not glob.glob(str(tmp_path / "central" / "**" / "*.json.gz"), recursive=True)
    sid = os.path.basename(session)
    for node, ranks in ((0, (0, 1)), (1, (2, 3))):  # raw data stayed on its node
        local = tmp_path / ("node%d" % node) / sid
        for rank in ranks:
            for name in ("rank-%d.json.gz", "rank-%d.meta.json", "rank-%d.pattern"):
                assert (local / (name % rank)).is_file(), (name % rank, os.listdir(local))
    pointers = json.load(open(os.path.join(session, "raw-traces.json")))
    where = {p["rank"]: p["trace"] for p in pointers["ranks"]}
    assert where[3] == str(tmp_path / "node1" / sid / "rank-3.json.gz") and not pointers["missing"]
    report = json.load(open(os.path.join(session, "report.json")))
    assert report["findings"] and report["findings"][0]["workers"] == [3], report
    assert open(os.path.join(session, "report.txt")).read().startswith("eroica:")
    gathered = [l for l in done.stderr.splitlines() if "gathered 4 patterns" in l]
    print(gathered[0] if gathered else done.stderr[-2000:])
    # The folder alone is enough for every reader.
    shown = json.loads(eroica("show", os.path.join(session, "patterns.pattern"),
                              "--format", "json").stdout)
    assert sorted(w["rank"] for w in shown) == [0, 1, 2, 3]
    for worker in shown:  # the node agents' samples reached every pattern
        assert any(f["mu"] is not None for f in worker["functions"]), worker["rank"]
    assert json.loads(eroica("diagnose", session, "--format", "json").stdout)["findings"][0][
        "workers"] == [3]
    assert eroica("report", session, "-o", tmp_path / "r.html").returncode == 0
    assert "rank 3" in eroica("prompt", session).stdout
    assert eroica("diff", session, session).returncode == 0


def test_a_rank_that_never_publishes_is_named_and_the_rest_diagnosed(tmp_path):
    """No process group (the ranks start together through the launcher's store): rank 3 dies
    in its window, the others go on. Node 1's leader sends its node without rank 3 at 0.6 of
    EROICA_COLLECT_TIMEOUT_S, rank 0 waits for rank 3 until its deadline and diagnoses the
    three it has."""
    done, session = run_two_nodes(tmp_path, ["pg=0", "barrier=1", "kill_rank=3", "iters=150"],
                                  EROICA_COLLECT_TIMEOUT_S=5)
    codes = json.load(open(tmp_path / "out" / "launch.json"))["codes"]
    assert codes == [0, 0, 0, -signal.SIGKILL], done.stderr
    deadline = time.monotonic() + 20  # the diagnosis may go on in a detached finisher
    while time.monotonic() < deadline and not os.path.exists(os.path.join(session, "report.txt")):
        time.sleep(0.2)
    time.sleep(0.5)  # finish.log's line comes right after the report
    lines = done.stderr.splitlines()
    if os.path.exists(os.path.join(session, "finish.log")):
        lines += open(os.path.join(session, "finish.log")).read().splitlines()
    assert set(os.listdir(session)) - {"finish.log"} == CENTRAL_FILES, (os.listdir(session),
                                                                       done.stderr)
    pointers = json.load(open(os.path.join(session, "raw-traces.json")))
    said = [l for l in lines if not l.endswith("enabled")]
    assert [m["rank"] for m in pointers["missing"]] == [3], (pointers, said)
    warnings = json.load(open(os.path.join(session, "report.json")))["warnings"]
    assert any("no usable trace: 3 " in w and "suspect" in w for w in warnings), (warnings, pointers)
    line = [l for l in lines if "report:" in l]
    assert line and "1 of 4 ranks without a pattern: 3" in line[0], lines
    shown = json.loads(eroica("show", os.path.join(session, "patterns.pattern"),
                              "--format", "json").stdout)
    assert sorted(w["rank"] for w in shown) == [0, 1, 2]


def test_a_hang_sends_every_ranks_stacks_through_the_store(tmp_path):
    """Rank 2 blocks; the others wait for it in their all-reduce. Every rank's stack dump stays
    on its node and goes to rank 0 through the store; the central folder gets them all."""
    central_dir = tmp_path / "central"
    env = clean_env(EROICA_DIR=central_dir, LAUNCH_LOCAL_DIR=tmp_path / "node{node}",
                    LAUNCH_NODES=2, EROICA_POLL_S=0.2, EROICA_HANG_MIN_S=1.5,
                    EROICA_COLLECT_TIMEOUT_S=8, EROICA_BIN=REAL_BIN, EROICA_THRESHOLD=1000)
    cmd = [TORCH_PYTHON, "-m", "eroica", "run", "--", TORCH_PYTHON, LAUNCH, "4",
           str(free_port()), FAULT, "out=%s" % (tmp_path / "out"), "iters=400",
           "hang_rank=2", "hang_at=40"]
    job = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        reports = []
        # Both reports: report.json comes first, report.txt is renamed into place after it (a CI
        # run killed the job in between and found report.txt's temporary instead).
        while time.monotonic() < deadline and not reports:
            time.sleep(0.5)
            reports = [r for r in glob.glob(str(central_dir / "*" / "report.json"))
                       if os.path.exists(os.path.join(os.path.dirname(r), "report.txt"))]
        assert reports, "no hang report within 90 s"
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    session = os.path.dirname(reports[0])
    assert set(os.listdir(session)) == {"session.json", "raw-traces.json", "report.json",
                                        "report.txt"} | {"stacks-rank-%d.json" % r
                                                         for r in range(4)}
    sid = os.path.basename(session)
    assert (tmp_path / "node1" / sid / "stacks-rank-2.json").is_file()  # kept on its node too
    finding = json.load(open(reports[0]))["findings"][0]
    block_line = next(i for i, line in enumerate(open(FAULT), 1) if "# HANG-HERE" in line)
    assert (finding["category"], finding["workers"]) == ("hang", [2]), finding
    assert finding["location"].endswith("fault_train.py:%d" % block_line), finding

"""The real agent's /metrics over loopback: the job's verdict read from a real diagnosis in a
session folder, the sampled figures of a registered process, and a newer verdict replacing
the old one. Every metric family the page shows must be one `eroica agent --list-metrics`
names (the Grafana dashboard test checks against that list)."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

from eroica_cli import EROICA, SOURCE_DIR, eroica

STRAGGLER = SOURCE_DIR / "tests" / "golden" / "cases" / "straggler_4rank"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as reply:
        return reply.read().decode()


def wait_for(port, predicate, timeout_s=15):
    deadline = time.monotonic() + timeout_s
    page = ""
    while time.monotonic() < deadline:
        try:
            page = scrape(port)
            if predicate(page):
                return page
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError("timed out; last page:\n" + page)


def session(central, name, report):
    folder = central / name
    folder.mkdir(parents=True)
    (folder / "session.json").write_text(json.dumps({
        "schema": "eroica.session/v1", "session_id": name, "job_id": "job-a", "reason": "degradation",
        "best_mean_s": 0.0385, "current_mean_s": 0.068}))
    (folder / "report.json").write_text(report)
    return folder


def test_agent_exports_the_verdict_and_sampled_figures(tmp_path):
    # A real diagnosis: the straggler traces' rank 2 loses 29.5 ms per iteration in its loader.
    traces = tmp_path / "traces"
    shutil.copytree(STRAGGLER, traces, ignore=shutil.ignore_patterns("expected"))
    report = eroica("diagnose", traces, "--format", "json").stdout
    central = tmp_path / "central"
    session(central, "job-a-s1", report)

    local = tmp_path / "local"
    (local / "procs").mkdir(parents=True)
    local.chmod(0o700)
    (local / "procs" / f"{os.getpid()}.json").write_text(json.dumps(
        {"pid": os.getpid(), "rank": 5, "host": "test-host", "last_iteration_s": 0.25}))

    port = free_port()
    agent = subprocess.Popen([EROICA, "agent", "--dir", str(local), "--report-dir", str(central),
                              "--prometheus-port", str(port), "--no-gpu", "--rate-hz", "20"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        page = wait_for(port, lambda p: "eroica_finding{" in p and "eroica_process_cpu_seconds_total{" in p)
        finding = ('eroica_finding{job="job-a",category="dataloader",scope="local",rank="2",'
                   'function="enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"} 0.0295')
        assert finding in page.splitlines(), page
        assert 'eroica_verdict_findings{job="job-a"} 1' in page
        assert 'eroica_detector_current_iteration_seconds{job="job-a"} 0.068' in page
        assert 'eroica_detector_baseline_iteration_seconds{job="job-a"} 0.0385' in page
        assert re.search(r'^eroica_process_cpu_seconds_total\{pid="%d",rank="5"\} [0-9.e+-]+$' % os.getpid(),
                         page, re.M), page
        assert re.search(r"^eroica_host_memory_total_bytes [1-9]", page, re.M), page

        listed = set(eroica("agent", "--list-metrics").stdout.split())
        families = set(re.findall(r"^# TYPE (\S+) ", page, re.M))
        assert families and families <= listed, families - listed

        # A newer, healthy diagnosis replaces the verdict (the agent looks every 5 s).
        healthy = json.loads(report)
        healthy["findings"], healthy["healthy"] = [], True
        newer = session(central, "job-a-s2", json.dumps(healthy))
        later = time.time() + 5
        os.utime(newer / "report.json", (later, later))
        page = wait_for(port, lambda p: 'eroica_verdict_findings{job="job-a"} 0' in p)
        assert "eroica_finding{" not in page
    finally:
        agent.send_signal(signal.SIGTERM)
        output, _ = agent.communicate(timeout=20)
    assert agent.returncode == 0, output

"""The Grafana dashboard parses, and every metric it queries is one the agent exports (the
names `eroica agent --list-metrics` prints; tests/e2e/test_agent_metrics.py checks that list
against a real scrape)."""
import json
import os
import re
import subprocess
from pathlib import Path

DASHBOARD = Path(__file__).resolve().parents[1] / "grafana" / "eroica-dashboard.json"
EROICA = os.environ.get("EROICA_BIN", str(Path(__file__).resolve().parents[2] / "build" / "eroica"))


def exported():
    done = subprocess.run([EROICA, "agent", "--list-metrics"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_every_queried_metric_is_exported():
    dashboard = json.loads(DASHBOARD.read_text())
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    queried = set()
    for panel in panels:
        exprs = [t["expr"] for t in panel["targets"]]
        assert exprs and all(exprs), panel["title"]
        for expr in exprs:
            queried |= set(re.findall(r"\b(eroica_[a-z0-9_]+)\b", expr))
    for variable in dashboard["templating"]["list"]:
        queried |= set(re.findall(r"\b(eroica_[a-z0-9_]+)\b", variable.get("definition", "")))
    names = exported()
    assert queried - names == set(), "queried but not exported"
    # What people alert on is on the board.
    assert {"eroica_finding", "eroica_verdict_findings", "eroica_detector_current_iteration_seconds",
            "eroica_detector_baseline_iteration_seconds", "eroica_gpu_sm_utilization_percent",
            "eroica_net_rx_bytes_total", "eroica_process_cpu_seconds_total"} <= queried

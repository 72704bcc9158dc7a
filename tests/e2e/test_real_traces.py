"""Real GPU traces from ../shared/traces: figures checked against values computed here
independently with Python's json module, and the README's DLRM claim."""
import json
import pytest

from eroica_cli import TRACES, diagnose, pattern

DLRM = sorted((TRACES / "param_dlrm_8rank").glob("*.json"))


def union_length(intervals):
    total, end = 0, None
    for start, stop in sorted(intervals):
        if end is None or start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def independent_compute_beta(path):
    """Compute owns the critical path whenever a non-NCCL kernel runs (highest priority)."""
    events = json.load(open(path))["traceEvents"]
    step = next(e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    start, cpu_end = step["ts"], step["ts"] + step["dur"]
    launched = {e["args"]["correlation"] for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X"
                and start <= e["ts"] < cpu_end and "correlation" in e.get("args", {})}
    device = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X"]
    end = max([cpu_end] + [e["ts"] + e["dur"] for e in device if e.get("args", {}).get("correlation") in launched])
    compute = [(max(e["ts"], start), min(e["ts"] + e["dur"], end)) for e in device
               if e["cat"] == "kernel" and not e["name"].lower().startswith("nccl")
               and e["ts"] < end and e["ts"] + e["dur"] > start]
    return union_length(compute) / (end - start), (end - start) / 1e6


@pytest.mark.parametrize("trace", DLRM, ids=lambda p: p.name[:7])
def test_compute_beta_matches_an_independent_computation(trace, tmp_path):
    p = pattern(trace, tmp_path)
    expected_beta, expected_window_s = independent_compute_beta(trace)
    assert p["window_s"] == pytest.approx(expected_window_s, rel=1e-9)
    assert p["category_beta"]["compute"] == pytest.approx(expected_beta, abs=2e-6)
    assert sum(f["beta"] for f in p["functions"]) == pytest.approx(1.0, abs=1e-4)


def test_dlrm_names_rank_7_which_arrives_last():
    d = diagnose(TRACES / "param_dlrm_8rank")
    assert d["schema"] == "eroica.diagnosis/v1"
    assert d["workers"] == 8 and not d["healthy"]
    first = d["findings"][0]
    assert first["scope"] == "local" and first["workers"] == [7]
    assert "arrives last" in first["evidence"]
    assert first["category"] != "communication"  # the others' waiting is the symptom


def test_every_real_trace_summarizes_and_every_folder_diagnoses(tmp_path):
    traces = sorted(TRACES.rglob("*.json*"))
    assert len(traces) >= 20
    for trace in traces:
        p = pattern(trace, tmp_path)
        assert p["window_s"] > 0, trace
        assert sum(f["beta"] for f in p["functions"]) == pytest.approx(1.0, abs=1e-3), trace
    for folder in sorted({t.parent for t in traces}):
        d = diagnose(folder)
        assert d["schema"] == "eroica.diagnosis/v1" and d["workers"] >= 1, folder
    d = diagnose(TRACES / "hta_testdata" / "trace_filter")
    assert d["workers"] == 2
    assert any("126 of 128 ranks" in w for w in d["warnings"])

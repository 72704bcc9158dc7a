"""The job checks' GPU branches on fabricated sessions: on this machine they never see a GPU
run, so these are what keeps them right until one is lent (NVML series, CUDA kernels and
flows, the required device-side finding), plus the branches the dry run takes."""

import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import job_checks  # noqa: E402
from checks import FAIL, PASS, SKIP  # noqa: E402
from test_gpu_check import kineto_doc  # noqa: E402


class FakeRun:
    def __init__(self, tmp_path, cpu=False):
        self.cpu = cpu
        self.checks = []
        self.facts = {"torch": "2.11.0+cu130"}
        self.artifacts = str(tmp_path)
        self.binary = None

    def add(self, check):
        self.checks.append(check)
        return check

    def by_name(self):
        return {c.name: c for c in self.checks}


def series(name, mean, top, samples=40, label="NVIDIA H200"):
    return {"name": name, "samples": samples, "mean": mean, "max": top, "label": label, "pid": -1}


def gpu_names(**missing):
    names = {}
    for key, mean, top in (("gpu.sm_util_pct", 61.0, 100), ("gpu.sm_clock_mhz", 1980.0, 1980),
                           ("gpu.mem_clock_mhz", 3201.0, 3201), ("gpu.mem_util_pct", 20.0, 45)):
        if key not in missing.values():
            names[key] = [series(key, mean, top)]
    return names


def test_nvml_series_on_a_gpu(tmp_path):
    run = FakeRun(tmp_path)
    check = job_checks.check_nvml(run, {}, gpu_names())
    assert check.status == PASS and check.required
    assert check.measured.startswith("NVIDIA H200: sm_util_pct mean 61 max 100 %")
    assert "sm_clock_mhz mean 1980 max 1980 MHz" in check.measured
    check = job_checks.check_nvml(run, {}, gpu_names(gone="gpu.sm_clock_mhz"))
    assert check.status == FAIL and "gpu.sm_clock_mhz: none" in check.measured
    idle = gpu_names()
    idle["gpu.sm_util_pct"] = [series("gpu.sm_util_pct", 0.0, 0)]  # NVML answered, GPU idle
    assert job_checks.check_nvml(run, {}, idle).status == FAIL


def test_nvml_is_skipped_with_the_agents_reason_on_cpu(tmp_path):
    log = tmp_path / "agent.log"
    log.write_text("eroica agent: no GPU monitoring: cannot load libnvidia-ml.so.1\nother line\n")
    check = job_checks.check_nvml(FakeRun(tmp_path, cpu=True), {"agent_log": str(log)}, {})
    assert check.status == SKIP and not check.required
    assert "cannot load libnvidia-ml.so.1" in check.measured and "other line" not in check.measured


def write_session(tmp_path, doc, findings=None):
    session = tmp_path / "s1"
    session.mkdir(exist_ok=True)
    for rank in (0, 1):
        d = json.loads(json.dumps(doc))
        d["distributedInfo"]["rank"] = rank
        with gzip.open(str(session / ("rank-%d.json.gz" % rank)), "wt") as f:
            json.dump(d, f)
        (session / ("rank-%d.meta.json" % rank)).write_text(json.dumps({"iteration_ids": [7, 8], "pid": 100 + rank}))
    if findings is not None:
        (session / "report.json").write_text(json.dumps({"findings": findings, "notes": []}))
    return {"dir": str(session)}


def linked_doc():
    doc = kineto_doc()
    for e in doc["traceEvents"]:
        if e.get("name") == "Optimizer.step#AdamW.step" and e["ts"] == 190:
            e["ts"] = 150  # inside step 8
    doc["traceEvents"] += [{"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 6, "ts": 50},
                           {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 6, "ts": 52}]
    return doc


def test_trace_checks_on_gpu_traces(tmp_path):
    run = FakeRun(tmp_path)
    job_checks.check_traces(run, {"name": "job", "session": write_session(tmp_path, linked_doc())})
    got = run.by_name()
    assert all(c.status == PASS for c in run.checks), [(c.name, c.measured) for c in run.checks]
    assert "ProfilerStep# [7, 8] in 2 ranges" in got["traces.steps"].measured
    assert "2 of 2 Optimizer.step# ranges" in got["traces.optimizer_in_step"].measured
    assert "gloo:all_reduce" in got["traces.comm_names"].measured
    flows = got["traces.kernels_flows"].measured
    assert "2 kernels" in flows and "4 ac2g flow ends" in flows and "100% of kernels linked" in flows
    assert os.path.exists(os.path.join(run.artifacts, "job-trace-facts.json"))


def test_a_step_range_opened_twice_fails(tmp_path):
    doc = linked_doc()
    doc["traceEvents"].append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "ts": 0, "dur": 5})
    run = FakeRun(tmp_path)
    job_checks.check_traces(run, {"name": "job", "session": write_session(tmp_path, doc)})
    assert run.by_name()["traces.steps"].status == FAIL


def test_unlinked_kernels_and_straddling_optimizer_ranges_fail(tmp_path):
    run = FakeRun(tmp_path)
    job_checks.check_traces(run, {"name": "job", "session": write_session(tmp_path, kineto_doc())})
    got = run.by_name()
    assert got["traces.kernels_flows"].status == FAIL and "50% of kernels linked" in got["traces.kernels_flows"].measured
    assert got["traces.optimizer_in_step"].status == FAIL


def test_cpu_traces_skip_kernels_with_the_reason(tmp_path):
    run = FakeRun(tmp_path, cpu=True)
    job_checks.check_traces(run, {"name": "job", "session": write_session(tmp_path, linked_doc())})
    check = run.by_name()["traces.kernels_flows"]
    assert check.status == SKIP and "no CUDA activity" in check.measured


def finding(category, workers=(1,), scope="local"):
    return {"scope": scope, "category": category, "workers": list(workers),
            "function": "sm90_xmma_gemm_bf16", "impact_s_per_iter": 0.0123}


def test_the_required_finding_is_rank_1_device_side_on_a_gpu(tmp_path):
    run = FakeRun(tmp_path)
    job = {"name": "job", "session": write_session(tmp_path, linked_doc(), [finding("compute")])}
    check = job_checks.check_diagnosis(run, job, main=True)
    assert check.status == PASS and check.required
    assert check.measured.startswith("first finding: local compute on ranks [1]: sm90_xmma_gemm_bf16 (12.30 ms/iter)")
    for wrong in (finding("host"), finding("compute", workers=(0,)), finding("compute", scope="global")):
        job = {"name": "job", "session": write_session(tmp_path, linked_doc(), [wrong])}
        assert job_checks.check_diagnosis(run, job, main=True).status == FAIL
    job = {"name": "job", "session": write_session(tmp_path, linked_doc(), [])}
    assert job_checks.check_diagnosis(run, job, main=True).status == FAIL  # healthy is wrong


def test_the_finding_is_reported_not_required_in_the_dry_run_and_for_the_process_job(tmp_path):
    job = {"name": "job", "session": write_session(tmp_path, linked_doc(), [finding("host")])}
    check = job_checks.check_diagnosis(FakeRun(tmp_path, cpu=True), job, main=True)
    assert check.status == FAIL and not check.required
    job["name"] = "job_process"
    check = job_checks.check_diagnosis(FakeRun(tmp_path), job, main=False)
    assert check.status == PASS and not check.required and "local host" in check.measured
    missing = {"name": "job", "session": {"dir": str(tmp_path / "nowhere")}}
    assert job_checks.check_diagnosis(FakeRun(tmp_path, cpu=True), missing, main=True).required


def test_slowdown_and_detection_latency(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    times = [[i, 0.010] for i in range(40)] + [[i, 0.025] for i in range(40, 80)]
    (out / "times-rank-1.json").write_text(json.dumps({"times": times}))
    (out / "contender.json").write_text(json.dumps({"unix_ns": 10 ** 18, "stopped": {"products": 9}}))
    run = FakeRun(tmp_path)
    job = {"name": "job", "out": str(out), "knobs": {"contend_from": 40}, "false_sessions": [],
           "session": {"reason": "degradation", "detected_iteration": 44, "trigger_rank": 1,
                       "detected_unix_ns": 10 ** 18 + 250_000_000, "best_mean_s": 0.01, "target_iteration": 50,
                       "current_mean_s": 0.0135}}
    slow = job_checks.check_slowdown(run, job)
    assert slow.status == PASS and "10.00 -> 25.00 ms (2.50x)" in slow.measured
    detected = job_checks.check_detected(run, job)
    assert detected.status == PASS and "+4 iterations (0.25 s)" in detected.measured
    job["false_sessions"] = [{"detected_iteration": 12}]
    assert job_checks.check_detected(run, job).status == FAIL  # a false alarm on a GPU machine
    assert job_checks.check_detected(FakeRun(tmp_path, cpu=True), job).status == PASS
    (out / "times-rank-1.json").write_text(json.dumps({"times": [[i, 0.010] for i in range(80)]}))
    assert job_checks.check_slowdown(run, job).status == FAIL  # no slowdown: the fault failed


def test_the_dry_run_reruns_a_job_the_contender_did_not_slow(tmp_path, monkeypatch):
    """On a shared 2-core machine the neighbours' load can absorb the contender: the dry run
    runs the job again (the earlier attempt kept and reported); a GPU run runs once."""
    ratios, made = [], []

    def fake_run_job(run, name, contender):
        factor = ratios.pop(0)
        made.append(name)
        folder = tmp_path / name / str(len(made))
        out = folder / "out"
        out.mkdir(parents=True)
        times = [[i, 0.010] for i in range(40)] + [[i, 0.010 * factor] for i in range(40, 80)]
        (out / "times-rank-1.json").write_text(json.dumps({"times": times}))
        return {"name": name, "dir": str(folder), "out": str(out), "knobs": {"contend_from": 40}, "code": 0,
                "sessions": []}

    monkeypatch.setattr(job_checks, "run_job", fake_run_job)
    ratios[:] = [0.9, 1.6, 2.0]
    run = FakeRun(tmp_path, cpu=True)
    job = job_checks.run_slowed_job(run, "job", "process")
    assert [round(r, 2) for r in job["earlier_ratios"]] == [0.9] and ratios == [2.0]
    assert os.path.isdir(tmp_path / "job.attempt1" / "out")  # the unslowed attempt's files kept
    slow = job_checks.check_slowdown(run, job)
    assert slow.status == PASS and "(1.60x)" in slow.measured and "attempt 1 slowed it only 0.90x" in slow.measured
    ratios[:] = [1.0, 1.1, 1.2, 5.0]  # never slowed: the last attempt's checks fail as before
    job = job_checks.run_slowed_job(run, "job", "process")
    assert [round(r, 2) for r in job["earlier_ratios"]] == [1.0, 1.1] and job_checks.check_slowdown(run, job).status == FAIL
    ratios[:] = [0.9, 2.0]  # a GPU machine of its own: once
    job = job_checks.run_slowed_job(FakeRun(tmp_path), "gpu", "thread")
    assert job["earlier_ratios"] == [] and ratios == [2.0]

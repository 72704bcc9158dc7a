"""Unit tests of the GPU check's own parts that need no GPU and no job: reading traces, the
summary and exit status, the contender loop, the job's knobs and CPU pinning, packing."""

import gzip
import json
import os
import sys
import tarfile
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checks  # noqa: E402
import transformer_job  # noqa: E402
from trace_facts import is_comm_name, trace_facts  # noqa: E402


def kineto_doc():
    """A small torch 2.x trace: two steps, an optimizer range, a kernel with its flow, a copy."""
    ev = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "ts": 0, "dur": 100, "tid": 1},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#8", "ts": 100, "dur": 100, "tid": 1},
        {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#7", "ts": 0, "dur": 90},
        {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#AdamW.step", "ts": 60, "dur": 30},
        {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#AdamW.step", "ts": 190, "dur": 20},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 10, "dur": 2,
         "args": {"correlation": 5}},
        {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16", "ts": 12, "dur": 40,
         "args": {"correlation": 5, "stream": 7, "device": 0}},
        {"ph": "X", "cat": "kernel", "name": "elementwise_kernel", "ts": 52, "dur": 4,
         "args": {"correlation": 6, "stream": 7}},
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 5, "ts": 10},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 5, "ts": 12, "bp": "e"},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "ts": 70, "dur": 3},
        {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "ts": 75, "dur": 5,
         "args": {"Collective name": "allreduce"}},
        {"ph": "X", "cat": "cpu_op", "name": "gloo:all_reduce", "ts": 76, "dur": 4},
        {"ph": "i", "cat": "cpu_instant_event", "name": "marker", "ts": 3},
    ]
    return {"traceEvents": ev, "distributedInfo": {"backend": "gloo", "rank": 1, "world_size": 2},
            "deviceProperties": [{"name": "NVIDIA H200"}]}


def write_gz(tmp_path, name, doc):
    path = str(tmp_path / name)
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    return path


def test_kineto_trace_facts(tmp_path):
    f = trace_facts(write_gz(tmp_path, "rank-1.json.gz", kineto_doc()))
    assert f["format"] == "kineto" and f["rank"] == 1 and f["backend"] == "gloo"
    assert f["device_names"] == ["NVIDIA H200"]
    assert f["steps"] == [7, 8] and f["step_ranges"] == 2  # the GPU copy of a step is not a step
    assert f["kernels"] == 2 and f["kernel_names"] == 2 and f["streams"] == [7]
    assert f["top_kernels"][0] == ["sm90_xmma_gemm_bf16", 40.0]
    assert f["flows"] == 2 and f["kernels_with_flow"] == 0.5  # one of two kernels is linked
    assert f["launches"] == 1 and f["memcpy"] == 1
    assert f["comm_names"] == ["gloo:all_reduce", "record_param_comms"]
    assert f["collectives"] == {"allreduce": 1}
    # The second optimizer range straddles the end of step 8: it is not inside a step.
    assert (f["optimizer_ranges"], f["optimizer_ranges_inside_a_step"]) == (2, 1)


def test_bare_event_list_of_cpu_only_torch(tmp_path):
    events = [{"ph": "X", "name": "ProfilerStep#3", "ts": 0, "dur": 50},
              {"ph": "X", "name": "Optimizer.step#SGD.step", "ts": 30, "dur": 10},
              {"ph": "X", "name": "gloo:all_reduce", "ts": 20, "dur": 5},
              {"ph": "X", "name": "aten::mm", "ts": 5, "dur": 5}]
    path = str(tmp_path / "rank-0.json")
    with open(path, "w") as fh:
        json.dump(events, fh)
    f = trace_facts(path)
    assert f["format"] == "event-list" and f["rank"] is None
    assert f["steps"] == [3] and f["kernels"] == 0 and f["kernels_with_flow"] is None
    assert f["comm_names"] == ["gloo:all_reduce"]
    assert (f["optimizer_ranges"], f["optimizer_ranges_inside_a_step"]) == (1, 1)


def test_comm_names():
    assert is_comm_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL")
    assert is_comm_name("nccl:all_reduce") and is_comm_name("c10d::allreduce_")
    assert not is_comm_name("aten::mm") and not is_comm_name("Memcpy DtoH")


def test_summary_reports_measured_values_and_fails_on_required():
    results = [checks.verdict(True, "job.detected", "degradation at iteration 47"),
               checks.verdict(False, "hooks.compiled", "compiled model: 9 for 10", required=False),
               checks.skipped("agent.nvml", "CPU dry run; no NVML")]
    lines = checks.summary_lines("title", ["torch 1.13"], results, ["files: x"])
    assert lines[0] == "title" and lines[1] == "  torch 1.13"
    assert lines[2].startswith("PASS") and "degradation at iteration 47" in lines[2]
    assert lines[3].startswith("FAIL") and lines[3].endswith("(info)")
    assert lines[4].startswith("SKIP") and "no NVML" in lines[4]
    assert "1 passed, 1 failed, 1 skipped" in lines and "RESULT: PASS" in lines
    assert max(len(l) for l in lines) <= checks.WIDTH
    assert checks.exit_status(results) == 0  # the failure was not a required check
    results.append(checks.verdict(False, "job.diagnosis", "first finding: global host"))
    assert checks.exit_status(results) == 1
    assert checks.summary_lines("t", [], results, [])[-1] == "RESULT: FAIL (required: job.diagnosis)"
    assert checks.to_json(results)[3]["measured"] == "first finding: global host"


def test_long_values_are_clipped_to_one_line():
    line = checks.summary_lines("t", [], [checks.verdict(True, "x", "a\nb " * 200)], [])[1]
    assert len(line) == checks.WIDTH and "\n" not in line and line.endswith("…")


def test_job_knobs():
    opts = transformer_job.parse(["iters=12", "device=cuda", "busy_ms=2.5", "contender=thread"])
    assert opts["iters"] == 12 and opts["busy_ms"] == 2.5 and opts["contender"] == "thread"
    with pytest.raises(SystemExit):
        transformer_job.parse(["itres=12"])


def test_ranks_are_pinned_only_on_cpu_with_enough_cpus():
    opts = transformer_job.parse(["cpus=4,6"])
    assert [transformer_job.rank_cpu(opts, r) for r in (0, 1)] == [4, 6]
    assert transformer_job.rank_cpu(dict(opts, cpus="4"), 1) == -1  # one CPU: nobody pinned
    assert transformer_job.rank_cpu(dict(opts, device="cuda"), 1) == -1
    assert transformer_job.rank_cpu(dict(opts, pin=0), 1) == -1


def test_contender_thread_runs_products_and_stops():
    torch = pytest.importorskip("torch")
    from contender import ContenderThread

    torch.set_num_threads(1)
    c = ContenderThread("cpu", busy_ms=5, idle_ms=5, size=64).start()
    time.sleep(0.3)
    started = time.monotonic()
    done = c.stop()
    assert time.monotonic() - started < 2
    assert done["products"] > 10 and 0 < done["busy_s"] < 0.3


def test_pack_makes_one_tarball_per_job_and_drops_the_largest_files_first(tmp_path, monkeypatch):
    import gpu_check

    class FakeRun:
        artifacts = str(tmp_path / "a")
        out = str(tmp_path / "o")

    os.makedirs(os.path.join(FakeRun.artifacts, "job", "s1"))
    os.makedirs(FakeRun.out)
    with open(os.path.join(FakeRun.artifacts, "job", "s1", "rank-0.json.gz"), "wb") as f:
        f.write(os.urandom(200_000))
    with open(os.path.join(FakeRun.artifacts, "job", "s1", "report.json"), "w") as f:
        f.write("{}")
    with open(os.path.join(FakeRun.artifacts, "job.log"), "w") as f:
        f.write("kept")
    monkeypatch.setattr(gpu_check, "ARTIFACT_LIMIT_BYTES", 100_000)
    assert gpu_check.pack_artifacts(FakeRun) == [os.path.join("job", "s1", "rank-0.json.gz")]
    assert sorted(os.listdir(FakeRun.out)) == ["artifacts-job.tar.gz", "artifacts-logs.tar.gz"]
    with tarfile.open(os.path.join(FakeRun.out, "artifacts-job.tar.gz")) as tar:
        assert tar.getnames() == [os.path.join("job", "s1", "report.json")]
    with tarfile.open(os.path.join(FakeRun.out, "artifacts-logs.tar.gz")) as tar:
        assert tar.getnames() == ["job.log"]


SHARED = os.environ.get("EROICA_SHARED_DIR") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared")
DLRM_RANK0 = os.path.join(SHARED, "traces", "param_dlrm_8rank", "worker0_step_12.1694128201545.pt.trace.json")


@pytest.mark.skipif(not os.path.exists(DLRM_RANK0), reason="no shared traces")
def test_a_real_kineto_trace_of_8_v100_ranks():
    """What the GPU run's traces will look like: Kineto with CUDA activity and NCCL."""
    f = trace_facts(DLRM_RANK0)
    assert f["format"] == "kineto" and f["rank"] == 0 and f["backend"] == "nccl"
    assert f["device_names"] == ["Tesla V100-SXM2-32GB"] and f["steps"] == [10]
    assert (f["kernels"], f["kernel_names"], f["launches"], f["memcpy"]) == (245, 73, 245, 16)
    assert f["kernels_with_flow"] == 1.0 and f["flows"] == 786
    assert {"nccl:all_reduce", "nccl:all_to_all", "record_param_comms"} <= set(f["comm_names"])
    assert f["top_kernels"][0][0].startswith("ncclKernel_SendRecv")
    assert (f["optimizer_ranges"], f["optimizer_ranges_inside_a_step"]) == (1, 1)


def test_log_tail_puts_the_error_first(tmp_path):
    from procs import tail

    log = tmp_path / "job.log"
    log.write_text("$ python job.py\nTraceback (most recent call last):\n  File \"job.py\", line 3\n"
                   "    torch.cuda.set_device(0)\nAssertionError: Torch not compiled with CUDA enabled\n"
                   "        ^^^^^^^^^^^^\n")
    assert tail(str(log), 2) == "AssertionError: Torch not compiled with CUDA enabled"
    log.write_text("one\ntwo\nthree\n")
    assert tail(str(log), 2) == "two | three"
    assert tail(str(tmp_path / "missing")) == ""


def test_contender_process_waits_for_its_start_signal(tmp_path):
    pytest.importorskip("torch")
    import signal
    import subprocess

    report = str(tmp_path / "contender.json")
    proc = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "contender.py"),
                             "--busy-ms", "2", "--idle-ms", "2", "--size", "64", "--report", report])
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(report + ".ready") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert os.path.exists(report + ".ready") and proc.poll() is None
        time.sleep(1.5)  # ready, not started: its running time counts from the signal on
        proc.send_signal(signal.SIGUSR1)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        proc.kill()
    with open(report) as f:
        done = json.load(f)
    assert done["products"] > 10 and 0.3 < done["ran_s"] < 1.4 and done["pinned_cpu"] is None


def test_an_unslowed_dry_run_skips_what_needs_a_slowdown(monkeypatch):
    import job_checks

    class Run:
        cpu = True

    monkeypatch.setattr(job_checks, "slowdown_of", lambda job: job["slowdown"])
    flat = job_checks.Slowdown(13.18, 15.92, 1.21, {})
    job = {"session": None, "slowdown": flat, "earlier_ratios": [1.12, 1.18]}
    why = job_checks.unslowed_dry_run(Run(), job)
    assert "1.12x, 1.18x, 1.21x in 3 attempt(s)" in why
    # Slowed, or a session anyway, or a GPU machine: everything is checked.
    assert job_checks.unslowed_dry_run(Run(), dict(job, slowdown=flat._replace(ratio=1.5))) == ""
    assert job_checks.unslowed_dry_run(Run(), dict(job, session={"reason": "degradation"})) == ""
    Run.cpu = False
    assert job_checks.unslowed_dry_run(Run(), job) == ""

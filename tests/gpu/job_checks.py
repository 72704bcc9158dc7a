"""The job checks: a 2-rank transformer (transformer_job.py) under `eroica run` beside `eroica
agent`, rank 1 slowed mid-run by a matmul contender; then what eroica made of it: the session,
both ranks' captures, the first finding, the agent's metrics file (NVML on a GPU), the
patterns' μ/σ and the captured traces."""

import collections
import glob
import json
import os
import shutil
import signal
import statistics
import subprocess
import time

from checks import skipped, verdict
from procs import HERE, clean_env, eroica_env, eroica_run_cmd, free_port, read_json, run_logged, tail
from trace_facts import trace_facts

DEVICE_SIDE = {"compute", "memory"}  # a finding about the device itself, not host or network
SLOWDOWN_RATIO = 1.3  # rank 1's iterations after the contender's start over before it
CPU_JOB_ATTEMPTS = 3  # the dry run's job, while the contender did not slow rank 1 (run_slowed_job)
Slowdown = collections.namedtuple("Slowdown", "before_ms after_ms ratio contender")


def job_knobs(run, contender):
    if run.cpu:
        # Short bursts that wake up often: the slow rank is preempted finely and evenly (a
        # hog that never sleeps takes whole 3 ms scheduler slices, which land on a few ops
        # and reshuffle the rank's profile more than they slow it). Sharing its pinned CPU
        # while the contender is busy (2 ms in 3) leaves the rank 2/3 of it: 1.5x, clear of
        # SLOWDOWN_RATIO; 1 ms in 2 left 3/4 (1.33x, measured 1.28x once: missed).
        # 130 iterations: on a loaded machine the slowdown was once seen only 27 iterations in,
        # and the window that followed ran into the job's end (3 of 5 iterations at 90).
        knobs = {"device": "cpu", "iters": 130, "contend_from": 40, "contender": contender,
                 "busy_ms": 2, "idle_ms": 1, "size": 128}
    else:
        # Compute-heavy for its 3.4 M parameters (13.6 MB of gradients through gloo per
        # iteration), so a slower device shows in the iteration time.
        knobs = {"device": "cuda", "iters": 140, "contend_from": 40, "contender": contender,
                 "busy_ms": 4, "idle_ms": 4, "d_model": 256, "layers": 4, "heads": 8, "seq": 256,
                 "batch": 64, "vocab": 512}
    for item in run.job_knobs:  # --job-knob key=value: a rerun can retune without an edit
        key, _, value = item.partition("=")
        knobs[key] = value
    return knobs


# Where drivers put NVML when the loader's cache does not know it (containers mount
# /usr/local/nvidia); only the agent gets them on its library path, never the training.
NVML_DIRS = ("/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/x86_64-linux-gnu",
             "/usr/lib64", "/usr/local/cuda/lib64")


def agent_env():
    env = clean_env()
    found = [d for d in NVML_DIRS if os.path.exists(os.path.join(d, "libnvidia-ml.so.1"))]
    if found:
        env["LD_LIBRARY_PATH"] = ":".join(found + [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p])
    return env


def start_agent(run, eroica_dir, log_path):
    if not run.binary:
        return None
    os.makedirs(eroica_dir, exist_ok=True)
    log = open(log_path, "w")
    agent = subprocess.Popen([run.binary, "agent", "--dir", eroica_dir, "--rate-hz", "100",
                             "--gpu-rate-hz", "20"], stdout=log, stderr=subprocess.STDOUT,
                            env=agent_env(), start_new_session=True)
    run.agents.append(agent)
    return agent


def stop_agent(agent):
    if agent is None:
        return None
    agent.send_signal(signal.SIGTERM)
    try:
        return agent.wait(timeout=15)
    except subprocess.TimeoutExpired:
        agent.kill()
        return agent.wait()


def sessions_of(eroica_dir):
    out = []
    for path in sorted(glob.glob(os.path.join(eroica_dir, "*", "session.json"))):
        doc = read_json(path)
        doc["dir"] = os.path.dirname(path)
        out.append(doc)
    return out


def wait_for(predicate, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


def median_ms(times, first, last):
    chosen = [t for i, t in times if first <= i < last]
    return statistics.median(chosen) * 1e3 if chosen else float("nan")


def run_job(run, name, contender):
    """Runs one 2-rank job with an agent beside it; returns what the checks need."""
    eroica_dir = os.path.join(run.work, name)
    job_out = os.path.join(eroica_dir, "out")
    knobs = job_knobs(run, contender)
    knobs.update(out=job_out, port=free_port())
    cmd = [run.python, os.path.join(HERE, "transformer_job.py")] + ["%s=%s" % kv for kv in knobs.items()]
    settings = dict(EROICA_DIR=eroica_dir, EROICA_WARMUP=10, EROICA_WINDOW=20, EROICA_THRESHOLD=1.3,
                    EROICA_POLL_S=0.2, EROICA_CAPTURE_ITERS=5, EROICA_MAX_SESSIONS=4,
                    EROICA_AGENT_WAIT_S=5, EROICA_COLLECT_TIMEOUT_S=30, EROICA_HANG_MIN_S=120,
                    # The job's one baseline window would be its first session; this check is
                    # about the slowdown's session (detected, captured, named).
                    EROICA_BASELINE=0)
    if run.cpu:
        # On a shared 2-core machine iteration times spread by ±50 %: 10 standard errors of
        # the best 20-iteration window exceed what the 2x outlier clip lets any slowdown add,
        # so the default guard could never fire inside this short run. The GPU run keeps it.
        settings["EROICA_NOISE_SIGMAS"] = 3
    env = eroica_env(run, **settings)
    agent = start_agent(run, eroica_dir, os.path.join(run.artifacts, name + "-agent.log"))
    code, seconds = run_logged(eroica_run_cmd(run, eroica_dir, cmd),
                               os.path.join(run.artifacts, name + ".log"), env, 300)
    sessions = sessions_of(eroica_dir)
    late = [s for s in sessions if s.get("detected_iteration", -1) >= knobs["contend_from"]]
    if not late and run.cpu:
        # A shared 2-core machine's own load can start a session just before the contender;
        # its capture still falls in the contended part, and the dry run reads that one.
        late = [s for s in sessions if s.get("target_iteration", -1) > knobs["contend_from"]][:1]
    if late and agent is not None:  # the agent writes a second after the window; rank 0 waited for it
        wait_for(lambda: glob.glob(os.path.join(late[0]["dir"], "*.eroica-metrics")), 5)
    agent_code = stop_agent(agent)
    return {"name": name, "knobs": knobs, "code": code, "seconds": seconds, "dir": eroica_dir,
            "out": job_out, "sessions": sessions, "session": late[0] if late else None,
            "false_sessions": [s for s in sessions if s not in late], "agent_code": agent_code,
            "agent_log": os.path.join(run.artifacts, name + "-agent.log")}


def check_job_ran(run, job):
    return run.add(verdict(job["code"] == 0, job["name"] + ".ran", "2 ranks, contender %s on rank 1 from "
                           "iteration %d: exit %d after %.1f s%s" % (
                               job["knobs"]["contender"], job["knobs"]["contend_from"], job["code"],
                               job["seconds"], "" if job["code"] == 0 else ": " + tail(
                                   os.path.join(run.artifacts, job["name"] + ".log"), 3))))


def slowdown_of(job):
    """Rank 1's median iteration before the contender and after it, their ratio, and what the
    contender reported doing (a Slowdown); None without rank 1's times."""
    path = os.path.join(job["out"], "times-rank-1.json")
    if not os.path.exists(path):
        return None
    times = read_json(path)["times"]
    start = job["knobs"]["contend_from"]
    before, after = median_ms(times, start - 20, start), median_ms(times, start + 3, len(times) + start)
    contender = os.path.join(job["out"], "contender.json")
    did = read_json(contender).get("stopped", {}) if os.path.exists(contender) else {}
    ratio = after / before if before > 0 else float("nan")
    return Slowdown(before, after, ratio, did)


def check_slowdown(run, job):
    slowdown = slowdown_of(job)
    if slowdown is None:
        return run.add(verdict(False, job["name"] + ".slowdown", "no iteration times from rank 1"))
    before, after, ratio, did = slowdown
    tries = "".join("; attempt %d slowed it only %.2fx, run again" % (i + 1, r)
                    for i, r in enumerate(job.get("earlier_ratios", [])))
    # Required on a GPU machine of its own. On a shared 2-core machine the neighbours' load
    # sets how much one more process on rank 1's core adds (1.2x at load 11, 3-5x at load 5).
    return run.add(verdict(ratio >= SLOWDOWN_RATIO, job["name"] + ".slowdown",
                           "rank 1 median iteration %.2f -> %.2f ms (%.2fx) after the contender started; "
                           "contender: %s%s" % (before, after, ratio, json.dumps(did), tries), required=not run.cpu))


def check_detected(run, job):
    s = job["session"]
    false = len(job["false_sessions"])
    if s is None:
        return run.add(verdict(False, job["name"] + ".detected", "no session detected at or after "
                               "iteration %d (%d sessions before it)" % (job["knobs"]["contend_from"], false)))
    contender = os.path.join(job["out"], "contender.json")
    started_ns = read_json(contender)["unix_ns"] if os.path.exists(contender) else None
    latency = " (%.2f s)" % ((s["detected_unix_ns"] - started_ns) / 1e9) if started_ns else ""
    # A false alarm before the contender is a defect on a GPU machine of its own; on a shared
    # 2-core machine a neighbour's burst is a real slowdown, so there it is only reported.
    ok = s["reason"] == "degradation" and (false == 0 or run.cpu)
    lead = s["detected_iteration"] - job["knobs"]["contend_from"]
    return run.add(verdict(ok, job["name"] + ".detected",
                           "%s at iteration %d by rank %d, %+d iterations%s from the contender's start; "
                           "mean %.2f -> %.2f ms; captured from %d; %d other sessions" % (
                               s["reason"], s["detected_iteration"], s["trigger_rank"], lead,
                               latency if lead >= 0 else "", s["best_mean_s"] * 1e3,
                               s["current_mean_s"] * 1e3, s["target_iteration"], false)))


def check_captured(run, job):
    s = job["session"]
    if s is None:
        return run.add(verdict(False, job["name"] + ".captured", "no session"))
    ids, sizes = [], []
    for rank in range(2):
        meta_path = os.path.join(s["dir"], "rank-%d.meta.json" % rank)
        trace = os.path.join(s["dir"], "rank-%d.json.gz" % rank)
        if not os.path.exists(meta_path) or not os.path.exists(trace):
            return run.add(verdict(False, job["name"] + ".captured", "rank %d left no trace+meta" % rank))
        ids.append(read_json(meta_path)["iteration_ids"])
        sizes.append(os.path.getsize(trace))
    ok = ids[0] == ids[1] and len(ids[0]) == 5
    return run.add(verdict(ok, job["name"] + ".captured", "both ranks traced iterations %s / %s "
                           "(%.0f / %.0f KB gzip)" % (ids[0], ids[1], sizes[0] / 1e3, sizes[1] / 1e3)))


def read_report(session):
    path = os.path.join(session["dir"], "report.json") if session else ""
    return read_json(path) if path and os.path.exists(path) else None


def describe(f):
    return "%s %s on ranks %s: %s (%.2f ms/iter)" % (
        f.get("scope"), f.get("category"), f.get("workers"), f.get("function"),
        1e3 * float(f.get("impact_s_per_iter") or 0))


def check_diagnosis(run, job, main):
    """The job's first finding must name rank 1, locally, with a device-side category.

    Required on a GPU. In the CPU dry run it is reported, not required: there the rank's device
    is a core shared with other builds and tests, and whether a contended core shows as slower
    ops (compute), stretched Python (host) or neither depends on that load (the accuracy of
    CPU faults is `make accuracy`'s job); the dry run keeps this code path running."""
    name = job["name"] + ".diagnosis"
    required = main and not run.cpu
    report = read_report(job["session"])
    if report is None:
        return run.add(verdict(False, name, "no report.json", required=main))
    findings = report.get("findings") or []
    notes = [n for n in report.get("notes", []) if "group" in n][:1]
    said = "; note: " + notes[0] if notes else ""
    if not findings:
        return run.add(verdict(not main, name, "healthy (no finding)" + said, required=required))
    first = findings[0]
    if not main:  # what eroica says about a slowdown that every context on the GPU shares
        return run.add(verdict(True, name, "first finding: " + describe(first) + said, required=False))
    ok = first.get("workers") == [1] and first.get("category") in DEVICE_SIDE \
        and first.get("scope") == "local"
    return run.add(verdict(ok, name, "first finding: %s; expected local %s on [1]%s" % (
        describe(first), "/".join(sorted(DEVICE_SIDE)), said), required=required))


def eroica_json(run, args, log_name):
    done = subprocess.run([run.binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=120)
    with open(os.path.join(run.artifacts, log_name), "w") as f:
        f.write(done.stdout + done.stderr)
    if done.returncode != 0:
        raise RuntimeError("eroica %s: exit %d: %s" % (args[0], done.returncode, done.stderr.strip()[-200:]))
    return json.loads(done.stdout)


def check_agent(run, job):
    s = job["session"]
    files = glob.glob(os.path.join(s["dir"], "*.eroica-metrics")) if s else []
    if not run.binary:
        return run.add(verdict(False, "agent.metrics", "no binary, no agent")), None
    if not files:
        return run.add(verdict(False, "agent.metrics", "no metrics file in the session; agent exit %s: %s"
                               % (job["agent_code"], tail(job["agent_log"], 3)))), None
    doc = eroica_json(run, ["show", files[0], "--format", "json"], "metrics-show.json")
    pids = set()
    for rank in range(2):
        pids.add(read_json(os.path.join(s["dir"], "rank-%d.meta.json" % rank))["pid"])
    seen = {p["pid"] for p in doc["processes"]}
    names = {}
    for series in doc["series"]:
        names.setdefault(series["name"], []).append(series)
    threads = sum(1 for x in names.get("thread.cpu_ns", []) if x["pid"] in pids)
    run.add(verdict(pids <= seen and threads > 0, "agent.metrics",
                    "%s: %d series, both ranks' pids %s followed=%s, %d of their threads sampled" % (
                        os.path.basename(files[0]), len(doc["series"]), sorted(pids), pids <= seen, threads)))
    return check_nvml(run, job, names), doc


def gpu_series_text(names, key, unit):
    series = [x for x in names.get(key, []) if x["samples"]]
    if not series:
        return None, "%s: none" % key
    x = series[0]
    return x, "%s mean %.0f max %d %s (%d samples)" % (key.split(".")[1], x["mean"], x["max"], unit, x["samples"])


def check_nvml(run, job, names):
    wanted = [("gpu.sm_util_pct", "%"), ("gpu.sm_clock_mhz", "MHz"), ("gpu.mem_clock_mhz", "MHz"),
              ("gpu.mem_util_pct", "%")]
    found = [gpu_series_text(names, key, unit) for key, unit in wanted]
    if run.cpu:
        log = ""
        try:
            log = " ".join(l.strip() for l in open(job["agent_log"]) if "GPU" in l or "NVML" in l)
        except OSError:
            pass
        return run.add(skipped("agent.nvml", "CPU dry run; the agent said: %s" % (log or "nothing about GPUs")))
    ok = all(x is not None for x, _ in found) and found[0][0]["max"] > 0 and found[1][0]["max"] > 0
    label = next((x["label"] for x, _ in found if x is not None and x["label"]), "")
    return run.add(verdict(ok, "agent.nvml", "%s: %s" % (label or "GPU", "; ".join(t for _, t in found))))


def check_patterns(run, job):
    s = job["session"]
    traces = sorted(glob.glob(os.path.join(s["dir"], "rank-*.json.gz"))) if s else []
    if not run.binary or len(traces) < 2:
        return run.add(verdict(False, "patterns.mu_sigma", "no binary" if not run.binary else "no traces (no session)"))
    pattern = os.path.join(run.artifacts, job["name"] + ".pattern")
    done = subprocess.run([run.binary, "summarize"] + traces + ["-o", pattern], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=120)
    with open(os.path.join(run.artifacts, job["name"] + "-summarize.log"), "w") as f:
        f.write(done.stdout)
    if not os.path.exists(pattern):
        return run.add(verdict(False, "patterns.mu_sigma", "summarize failed: " + done.stdout[-200:]))
    workers = eroica_json(run, ["show", pattern, "--format", "json"], job["name"] + "-pattern.json")
    workers = workers if isinstance(workers, list) else [workers]
    parts, ok = [], len(workers) == 2
    for w in workers:
        compute = [f for f in w["functions"] if f["category"] == "compute"]
        with_mu = [f for f in compute if f["mu"] is not None and f["sigma"] is not None]
        ok = ok and bool(with_mu) and w["has_device"] == (not run.cpu)
        top = with_mu[0] if with_mu else None
        parts.append("rank %d (%s): %d of %d compute functions%s" % (
            w["rank"], "GPU" if w["has_device"] else "CPU", len(with_mu), len(compute),
            ", e.g. %s μ %.2f σ %.2f" % (top["name"][:40], top["mu"], top["sigma"]) if top else ""))
    kind = "CUDA kernels" if not run.cpu else "CPU ops"
    return run.add(verdict(ok, "patterns.mu_sigma", "μ/σ on %s: %s" % (kind, "; ".join(parts))))


def check_traces(run, job):
    s = job["session"]
    if not s:
        return run.add(verdict(False, "traces.read", "no session"))
    facts = {}
    for rank in range(2):
        path = os.path.join(s["dir"], "rank-%d.json.gz" % rank)
        if os.path.exists(path):
            facts[rank] = trace_facts(path)
    with open(os.path.join(run.artifacts, job["name"] + "-trace-facts.json"), "w") as f:
        json.dump(facts, f, indent=1)
    if len(facts) < 2:
        return run.add(verdict(False, "traces.read", "a rank's trace is missing"))
    metas = {r: read_json(os.path.join(s["dir"], "rank-%d.meta.json" % r))["iteration_ids"] for r in facts}
    ok = all(facts[r]["steps"] == metas[r] and facts[r]["step_ranges"] == len(metas[r]) for r in facts)
    run.add(verdict(ok, "traces.steps", "; ".join("rank %d (%s, %d events): ProfilerStep# %s in %d ranges" % (
        r, f["format"], f["events"], f["steps"], f["step_ranges"]) for r, f in facts.items())))
    ok = all(f["optimizer_ranges"] > 0 and f["optimizer_ranges_inside_a_step"] == f["optimizer_ranges"]
             for f in facts.values())
    run.add(verdict(ok, "traces.optimizer_in_step", "; ".join("rank %d: %d of %d Optimizer.step# ranges "
                    "inside one ProfilerStep#" % (r, f["optimizer_ranges_inside_a_step"], f["optimizer_ranges"])
                    for r, f in facts.items())))
    comm_ok = all(any(n.startswith(("gloo:", "nccl:", "record_param_comms")) for n in f["comm_names"])
                  for f in facts.values())
    run.add(verdict(comm_ok, "traces.comm_names", "; ".join("rank %d: %s %s" % (
        r, ", ".join(f["comm_names"][:4]) or "none", f["collectives"] or "") for r, f in facts.items())))
    if run.cpu:
        return run.add(skipped("traces.kernels_flows", "CPU dry run (torch %s, %s traces): no CUDA activity" % (
            run.facts.get("torch"), facts[0]["format"])))
    ok = all(f["kernels"] > 0 and f["flows"] > 0 and (f["kernels_with_flow"] or 0) >= 0.9 and f["memcpy"] > 0
             for f in facts.values())
    return run.add(verdict(ok, "traces.kernels_flows", "; ".join(
        "rank %d: %d kernels (%d names, streams %s), %d ac2g flow ends, %.0f%% of kernels linked, %d memcpy; "
        "top %s" % (r, f["kernels"], f["kernel_names"], f["streams"], f["flows"],
                    100 * (f["kernels_with_flow"] or 0), f["memcpy"],
                    f["top_kernels"][0][0][:40] if f["top_kernels"] else "-") for r, f in facts.items())))


def keep_job_files(run, job, kept_as=None):
    dest = os.path.join(run.artifacts, kept_as or job["name"])
    os.makedirs(dest, exist_ok=True)
    for s in job["sessions"]:
        shutil.copytree(s["dir"], os.path.join(dest, os.path.basename(s["dir"])), dirs_exist_ok=True)
    for sub in ("out", "procs"):  # the job's own files; the ranks' registrations with the agent
        if os.path.isdir(os.path.join(job["dir"], sub)):
            shutil.copytree(os.path.join(job["dir"], sub), os.path.join(dest, sub), dirs_exist_ok=True)


def run_slowed_job(run, name, contender):
    """Runs the job; on the CPU dry run again (at most CPU_JOB_ATTEMPTS times) while the
    contender did not slow rank 1. On a shared 2-core machine the neighbours' load can absorb
    the contention (a clean-clone CI run beside other tests: rank 1 15.63 -> 13.65 ms, 0.87x),
    and a job that was not slowed leaves eroica nothing to detect. The earlier attempts'
    ratios are reported; a GPU run, the contender alone on its device, runs once."""
    attempts = CPU_JOB_ATTEMPTS if run.cpu else 1
    earlier = []
    while True:
        job = run_job(run, name, contender)
        slowdown = slowdown_of(job)
        if len(earlier) + 1 == attempts or job["code"] != 0 or slowdown is None or slowdown.ratio >= SLOWDOWN_RATIO:
            job["earlier_ratios"] = earlier
            return job
        earlier.append(slowdown.ratio)
        keep_job_files(run, job, "%s.attempt%d" % (name, len(earlier)))
        shutil.rmtree(job["dir"], ignore_errors=True)  # its sessions would count as the next one's


def unslowed_dry_run(run, job):
    """Why the checks of what eroica made of the job are not run, or "": on the CPU dry run, no
    attempt's contender slowed rank 1 by SLOWDOWN_RATIO and no session followed. A shared 2-core
    machine's neighbours absorb the contention at times (a clean-clone CI run beside the sanitizer
    build: 13.18 -> 15.92 ms, 1.21x, in each of 3 attempts): a job that was not slowed leaves
    nothing to detect, which says nothing about eroica. A session that followed anyway is checked."""
    slowdown = slowdown_of(job)
    if not run.cpu or job["session"] is not None or slowdown is None or slowdown.ratio >= SLOWDOWN_RATIO:
        return ""
    ratios = job.get("earlier_ratios", []) + [slowdown.ratio]
    return ("the machine absorbed the contender: rank 1 slowed only %s in %d attempt(s), nothing to detect"
            % (", ".join("%.2fx" % r for r in ratios), len(ratios)))


def check_job(run, name, contender, main):
    job = run_slowed_job(run, name, contender)
    check_job_ran(run, job)
    check_slowdown(run, job)
    why = unslowed_dry_run(run, job)
    if why:
        parts = ["detected", "captured", "diagnosis"]
        if main:
            parts += ["agent.metrics", "patterns.mu_sigma", "traces.read"]
        for part in parts:
            run.add(skipped(part if "." in part else job["name"] + "." + part, why))
        keep_job_files(run, job)
        return
    check_detected(run, job)
    check_captured(run, job)
    check_diagnosis(run, job, main)
    if main:
        run.timed("agent", check_agent, run, job)
        run.timed("patterns", check_patterns, run, job)
        run.timed("traces", check_traces, run, job)
    keep_job_files(run, job)
    return job

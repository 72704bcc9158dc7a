"""The GPU check (tests/gpu/check.sh runs this): everything GPU-side of eroica on a real GPU,
or the same steps on CPU tensors as a dry run (`--cpu`). Steps, in order:

  binary     find a carried or built `eroica` (or build one) and see that it runs
  hooks      hook_checks.py: the torch hook points, with torch.compile too where it exists,
             the package's hook unit tests on this torch, the idle cost of the hooks
  job        job_checks.py: a 2-rank transformer under `eroica run` beside `eroica agent`;
             rank 1 is slowed mid-run by a matmul contender; eroica must detect it, capture
             both ranks and name rank 1 with a device-side category; then the metrics file,
             the patterns' μ/σ and the captured traces are read
  job_process  (GPU only) the same with the contender as a separate process (time-shared GPU)

Everything lands in OUT: summary.txt, check-report.json (checks with measured values,
versions, timings; rewritten after every step) and artifacts-*.tar.gz (sessions: traces, meta,
report.json, metrics; patterns, logs). Exit status 1 when a required check failed.
"""

import argparse
import glob
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from checks import exit_status, skipped, summary_lines, to_json, verdict  # noqa: E402
from hook_checks import check_boundaries, check_compiled, check_hook_unit_tests, check_idle_cost  # noqa: E402
from job_checks import check_job  # noqa: E402
from procs import REPO, clean_env, kill_group, run_logged, tail  # noqa: E402

ARTIFACT_LIMIT_BYTES = 15 << 20  # what comes back from the device machine: 16 MiB a file


class Run:
    """One check run: the mode, the paths, the clock, and the checks so far."""

    def __init__(self, args):
        self.cpu = args.cpu
        self.device = "cpu" if args.cpu else "cuda"
        self.python = args.python or sys.executable
        self.out = os.path.abspath(args.out)
        self.work = tempfile.mkdtemp(prefix="eroica-gpu-check-")
        self.artifacts = os.path.join(self.work, "artifacts")
        os.makedirs(self.artifacts)
        self.started = time.monotonic()
        self.budget_s = args.budget_s
        self.job_knobs = args.job_knob
        self.checks = []
        self.timings = {}
        self.facts = {}
        self.binary = None
        self.agents = []  # running agents, killed on the way out whatever happens

    def elapsed(self):
        return time.monotonic() - self.started

    def left_s(self):
        return self.budget_s - self.elapsed()

    def add(self, check):
        self.checks.append(check)
        return check

    def timed(self, name, fn, *args):
        # One progress line per step on stderr: a run killed at the call's limit still shows
        # where it was (the summary comes only at the end).
        print("gpu_check: [%3.0f s] %s" % (self.elapsed(), name), file=sys.stderr, flush=True)
        started = time.monotonic()
        try:
            return fn(*args)
        except Exception as e:  # a step that breaks is a failed check, and the rest still runs
            self.add(verdict(False, name, "step raised %s: %s" % (type(e).__name__, e)))
            return None
        finally:
            self.timings[name] = round(time.monotonic() - started, 2)
            write_report(self)  # after every step: a run cut short still leaves its results


def binary_works(path):
    if not path or not os.access(path, os.X_OK):
        return "not there"
    try:
        done = subprocess.run([path, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=20, text=True)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    return "" if done.returncode == 0 else done.stdout.strip().splitlines()[-1][:160]


def build_binary(run):
    if shutil.which("cmake") is None:
        return None, "no cmake"
    build = os.path.join(REPO, "build-gpu-check")
    log = os.path.join(run.artifacts, "build.log")
    jobs = str(os.cpu_count() or 2)
    code, _ = run_logged(["cmake", "-S", REPO, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                          "-DEROICA_BUILD_BENCH=OFF"], log, clean_env(), 120)
    if code == 0:
        with open(log, "a") as f:
            code = subprocess.run(["cmake", "--build", build, "--target", "eroica", "-j", jobs],
                                  stdout=f, stderr=subprocess.STDOUT, timeout=300).returncode
    path = os.path.join(build, "eroica")
    return (path, "") if code == 0 and not binary_works(path) else (None, "build failed: " + tail(log, 3))


def find_binary(run, given):
    """The first candidate that runs: --eroica, $EROICA_BIN, a carried pack, build/; else build."""
    tried = []
    for how, path in (("--eroica", given), ("EROICA_BIN", os.environ.get("EROICA_BIN")),
                      ("carried build-gpu/", os.path.join(REPO, "build-gpu", "eroica")),
                      ("build/", os.path.join(REPO, "build", "eroica"))):
        if not path:
            continue
        why = binary_works(path)
        if not why:
            run.binary = os.path.abspath(path)
            return run.add(verdict(True, "binary", "%s (%s) runs" % (path, how)))
        tried.append("%s: %s" % (how, why))
    path, why = build_binary(run)
    if path:
        run.binary = path
        return run.add(verdict(True, "binary", "built %s in %.0f s" % (path, run.elapsed())))
    return run.add(verdict(False, "binary", "none runs (%s); %s" % ("; ".join(tried), why)))


def command_output(cmd):
    """What a small tool prints, or "" where it is missing or fails (a bare GPU image)."""
    if shutil.which(cmd[0]) is None:
        return ""
    try:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def collect_facts(run):
    code = ("import json, platform, torch; d = {'python': platform.python_version(), "
            "'torch': torch.__version__, 'cuda': torch.version.cuda, "
            "'cuda_available': torch.cuda.is_available(), 'gloo': "
            "torch.distributed.is_available() and torch.distributed.is_gloo_available()}\n"
            "if d['cuda_available']: d['gpu'] = torch.cuda.get_device_name(0); "
            "d['gpus'] = torch.cuda.device_count()\nprint(json.dumps(d))")
    done = subprocess.run([run.python, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=120, env=clean_env())
    facts = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else {
        "torch_error": done.stderr.strip()[-300:]}
    facts.update({"python_path": run.python, "host": socket.gethostname(), "cpus": os.cpu_count(),
                  "load_avg": [round(x, 2) for x in os.getloadavg()], "kernel": platform.release()})
    facts["nvidia_smi"] = command_output(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                                          "--format=csv,noheader"]) or "absent"
    facts["eroica_commit"] = command_output(["git", "-C", REPO, "rev-parse", "--short", "HEAD"]) or "unknown"
    run.facts = facts
    ok = "torch" in facts and (run.cpu or facts.get("cuda_available"))
    measured = "torch %s, CUDA %s, %s, gloo %s" % (facts.get("torch"), facts.get("cuda"),
                                                  facts.get("gpu", "no GPU"), facts.get("gloo"))
    if "torch_error" in facts:
        measured = "torch does not import: " + facts["torch_error"]
    return run.add(verdict(ok, "torch", measured))


def pack_artifacts(run):
    """Tarballs a device call can bring back (at most 16 MiB a file, 8 files): one per job
    folder (its sessions: traces, meta, report.json, metrics) and one of the rest (logs,
    patterns, probe results). A tarball over the limit drops its largest files first.
    Returns the names dropped."""
    groups = {}
    for d, _, names in os.walk(run.artifacts):
        for name in names:
            path = os.path.join(d, name)
            rel = os.path.relpath(path, run.artifacts)
            top = rel.split(os.sep)[0]
            groups.setdefault(top if top != rel else "logs", []).append(path)
    for old in glob.glob(os.path.join(run.out, "artifacts*.tar.gz")):  # an earlier run's, in a reused --out
        os.remove(old)
    dropped = []
    for group, files in sorted(groups.items()):
        files.sort(key=os.path.getsize)
        path = os.path.join(run.out, "artifacts-%s.tar.gz" % group)
        while True:
            with tarfile.open(path, "w:gz") as tar:
                for f in files:
                    tar.add(f, arcname=os.path.relpath(f, run.artifacts))
            if os.path.getsize(path) <= ARTIFACT_LIMIT_BYTES or not files:
                break
            dropped.append(os.path.relpath(files.pop(), run.artifacts))
    return dropped


def summary(run, footer):
    f = run.facts
    title = "eroica GPU check (%s) on %s, %.0f s, eroica %s" % (
        "CPU dry run" if run.cpu else "GPU", f.get("host"), run.elapsed(), f.get("eroica_commit"))
    facts = ["python %s (%s), torch %s, CUDA %s, %s" % (f.get("python"), f.get("python_path"), f.get("torch"),
                                                        f.get("cuda"), f.get("gpu", "no GPU")),
             "nvidia-smi: %s; %s CPUs, load %s" % (f.get("nvidia_smi", "absent"), f.get("cpus"), f.get("load_avg"))]
    return summary_lines(title, facts, run.checks, footer)


def write_report(run, dropped=None, footer=()):
    os.makedirs(run.out, exist_ok=True)
    with open(os.path.join(run.out, "summary.txt"), "w") as fh:
        fh.write("\n".join(summary(run, list(footer))) + "\n")
    report = {"schema": "eroica.gpu-check/v1", "mode": "cpu" if run.cpu else "gpu", "facts": run.facts,
              "timings_s": run.timings, "elapsed_s": round(run.elapsed(), 1), "checks": to_json(run.checks),
              "result": "FAIL" if exit_status(run.checks) else "PASS", "artifacts_left_out": dropped or []}
    with open(os.path.join(run.out, "check-report.json"), "w") as fh:
        json.dump(report, fh, indent=1)


def write_outputs(run):
    dropped = pack_artifacts(run)
    footer = ["files: %s/{summary.txt,check-report.json,artifacts-*.tar.gz}%s" % (
        run.out, " (left out for size: %s)" % ", ".join(dropped) if dropped else "")]
    write_report(run, dropped, footer)
    print("\n".join(summary(run, footer)), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="dry run on CPU tensors")
    parser.add_argument("--out", default=os.environ.get("OUT") or os.path.join(
        REPO, "out", "gpu-check", time.strftime("%Y%m%d-%H%M%S")))
    parser.add_argument("--eroica", default="", help="the eroica binary (default: see find_binary)")
    parser.add_argument("--python", default="", help="the Python with torch (default: this one)")
    parser.add_argument("--job-knob", action="append", default=[], metavar="KEY=VALUE",
                        help="override a knob of transformer_job.py (repeatable)")
    parser.add_argument("--budget-s", type=float, default=330, help="wall time the steps aim to fit in")
    args = parser.parse_args(argv)
    run = Run(args)
    os.makedirs(run.out, exist_ok=True)
    # The device call's limit sends SIGTERM: end the steps, keep what was measured.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(124))
    try:
        run.timed("binary", find_binary, run, args.eroica)
        run.timed("facts", collect_facts, run)
        boundaries = run.timed("hooks.boundaries", check_boundaries, run)
        run.timed("hooks.unit_tests", check_hook_unit_tests, run)
        run.timed("hooks.idle_cost", check_idle_cost, run)
        run.timed("job", check_job, run, "job", "process" if run.cpu else "thread", True)
        if not run.cpu and run.left_s() > 100:
            run.timed("job_process", check_job, run, "job_process", "process", False)
        elif not run.cpu:
            run.add(skipped("job_process", "not enough time left (%.0f s)" % run.left_s()))
        run.timed("hooks.compiled", check_compiled, run, boundaries)
    finally:
        for agent in run.agents:
            kill_group(agent.pid)
        write_outputs(run)
        shutil.rmtree(run.work, ignore_errors=True)
    return exit_status(run.checks)

if __name__ == "__main__":
    sys.exit(main())

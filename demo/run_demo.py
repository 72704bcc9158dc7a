"""`make demo`: a real 4-rank PyTorch DDP job slows down mid-run and eroica, started around it
with no code change, shows the whole chain live: detection, the synchronized profiling session
(the same iteration ids on every rank), the diagnosis naming the rank and the cause, and where
the report and traces are."""
import argparse
import glob
import json
import os
import subprocess
import sys
import time
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1]


def say(text=""):
    print(text, flush=True)


def run_job(args, eroica_dir):
    env = dict(os.environ, PYTHONPATH=str(SOURCE / "python"), EROICA_BIN=str(Path(args.eroica).resolve()))
    cmd = [sys.executable, "-m", "eroica", "run", "--dir", str(eroica_dir), "--",
           sys.executable, str(SOURCE / "demo" / "train_demo.py"), "--ranks", str(args.ranks),
           "--slow-rank", str(args.slow_rank), "--slow-from", str(args.slow_from)]
    say("$ " + " ".join(cmd[2:]))
    started = time.monotonic()
    with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as job:
        for line in job.stdout:
            if line.startswith(("train:", "eroica:")):
                say(f"  [{time.monotonic() - started:5.1f} s] {line.rstrip()}")
    return job.returncode, time.monotonic() - started


def show_session(session_dir, args):
    session = json.loads((session_dir / "session.json").read_text())
    say(f"\n1. Detection (inside training, {session['reason']}): rank {session['trigger_rank']} saw the mean "
        f"of its last {session['detector_window']} iterations rise from {1e3 * session['best_mean_s']:.1f} ms "
        f"(best so far) to {1e3 * session['current_mean_s']:.1f} ms at iteration {session['detected_iteration']} "
        f"(> {session['threshold']}x). The slowdown began at iteration {args.slow_from} on rank {args.slow_rank}.")
    say(f"\n2. Synchronized session {session['session_id']}: proposed through the job's own TCPStore at "
        f"iteration {session['proposed_at_iteration']}; every rank started its profiler at iteration "
        f"{session['target_iteration']}, keyed by iteration id, not by clock:")
    for meta_path in sorted(session_dir.glob("rank-*.meta.json")):
        meta = json.loads(meta_path.read_text())
        ids = meta.get("iteration_ids", [])
        times = meta.get("iteration_times_s") or []
        mean_ms = 1e3 * sum(times) / len(times) if times else float("nan")
        say(f"   rank {meta['rank']}: iterations {ids[0]}-{ids[-1]} profiled ({mean_ms:.0f} ms/iteration), "
            f"pid {meta['pid']} on {meta['host']}")
    say("\n3. Diagnosis (the eroica binary, outside the training processes, at low priority):")
    for line in (session_dir / "report.txt").read_text().splitlines():
        say("   " + line)
    say(f"\n4. Files: {session_dir}/")
    for path in sorted(session_dir.iterdir()):
        say(f"   {path.name:22s} {path.stat().st_size:>9,d} bytes")
    report = json.loads((session_dir / "report.json").read_text())
    first = report["findings"][0] if report["findings"] else None
    right = first is not None and first["workers"] == [args.slow_rank] and first["category"] == "dataloader"
    say(f"\nThe injected fault was a data-loader slowdown on rank {args.slow_rank}: eroica's first finding is "
        + ("right." if right else f"NOT right ({first})."))
    return right


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--eroica", default=str(SOURCE / "build" / "eroica"))
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--slow-rank", type=int, default=2)
    parser.add_argument("--slow-from", type=int, default=140)
    parser.add_argument("--dir", default=str(SOURCE / "out" / "demo"))
    args = parser.parse_args()
    eroica_dir = Path(args.dir) / time.strftime("%Y%m%d-%H%M%S")
    say(f"eroica demo: {args.ranks} ranks of real DDP training (gloo, CPU); rank {args.slow_rank}'s data "
        f"loader slows down from iteration {args.slow_from}. Nobody tells eroica.\n")
    code, seconds = run_job(args, eroica_dir)
    sessions = sorted(p for p in eroica_dir.glob("*") if (p / "session.json").exists())
    # The job's baseline (one short window after warm-up) is a session too; show the slowdown's.
    baselines = [p for p in sessions if json.loads((p / "session.json").read_text()).get("reason") == "baseline"]
    if baselines:
        say(f"(Baseline kept after warm-up: {baselines[0].name}; the slowdown's session is diagnosed against it.)")
    sessions = [p for p in sessions if p not in baselines]
    if code != 0 or not sessions or not (sessions[0] / "report.txt").exists():
        say(f"\nThe job exited with {code} after {seconds:.0f} s and left no complete session in {eroica_dir}.")
        return 1
    right = show_session(sessions[0], args)
    say(f"\nWhole run: {seconds:.0f} s.")
    return 0 if right else 1


if __name__ == "__main__":
    sys.exit(main())

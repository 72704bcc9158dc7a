"""Run N ranks of real DDP training with one injected fault; write per-rank traces + truth.json.

    /usr/bin/python3 testbed/run_scenario.py --scenario dataloader_stall --ranks 4 --out DIR

DIR receives rank-<r>.json (each rank's profiler export of the same iterations) and truth.json
(what was injected, where, when, and every rank's per-iteration wall times). Exits non-zero with
a one-line message on failure; always removes the processes, cgroups and namespaces it made.
"""

import argparse
import atexit
import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import faults  # noqa: E402
import launch  # noqa: E402

DEFAULT_ITERS = 20
DEFAULT_ONSET_ITER = 8
DEFAULT_PROFILE_START = 12
DEFAULT_PROFILE_ITERS = 5
WARMUP_ITERS = 3  # excluded from the "before" mean
# The run settings (train.py) and their defaults when neither the run nor the scenario sets them.
MODELS = ("mlp", "transformer", "cnn")
DEFAULT_SETTINGS = {"model": "mlp", "num_workers": 0, "accum_steps": 1, "seq_len": None}
DEFAULT_STACK_HZ = 150.0  # as `eroica run` samples (python/eroica/config.py stack_hz)


class Interrupted(Exception):
    pass


class OneLineErrorParser(argparse.ArgumentParser):
    """Usage errors as one line (see --help for the usage)."""

    def error(self, message):
        self.exit(2, f"run_scenario: {message}\n")


def parse_args(argv=None):
    parser = OneLineErrorParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", required=True, choices=sorted(faults.SCENARIOS))
    parser.add_argument("--ranks", type=int, default=4, help="world size (default 4)")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--fault-rank", default=None,
                        help="faulty rank(s): R, R1,R2 or 'all' (default: the scenario's, 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--iters", type=int, default=DEFAULT_ITERS)
    parser.add_argument("--onset-iter", type=int, default=DEFAULT_ONSET_ITER,
                        help="iteration from which the fault is on")
    parser.add_argument("--profile-start", type=int, default=DEFAULT_PROFILE_START)
    parser.add_argument("--profile-iters", type=int, default=DEFAULT_PROFILE_ITERS)
    parser.add_argument("--timeout-s", type=float, default=10.0,
                        help="declare a hang when no rank made progress for this long")
    parser.add_argument("--max-wall-s", type=float, default=180.0, help="give up after this long")
    parser.add_argument("--model", choices=list(MODELS), default=None,
                        help="mlp (embedding bag + MLP), transformer (small encoder) or cnn (conv + batch "
                             "norm); "
                             "default: the scenario's, else mlp")
    parser.add_argument("--num-workers", type=int, default=None,
                        help="DataLoader worker processes (default: the scenario's, else 0)")
    parser.add_argument("--accum-steps", type=int, default=None,
                        help="micro-batches per optimizer step (gradient accumulation; default 1)")
    parser.add_argument("--seq-len", type=int, default=None,
                        help="tokens per sample (default: 16 for mlp, 32 for transformer)")
    parser.add_argument("--stack-hz", type=float, default=DEFAULT_STACK_HZ,
                        help="sample the training thread's Python stack in the profiled window "
                             f"at this rate into rank-<r>.stacks.json (0: off; default {DEFAULT_STACK_HZ:g})")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="override a fault parameter, e.g. stall_ms=100 (repeatable)")
    parser.add_argument("--online-eroica", default=None, metavar="SESSIONS_DIR",
                        help="run the ranks under `python -m eroica run` (python/eroica), its "
                             "sessions in SESSIONS_DIR; on a hang, wait for its report.json")
    parser.add_argument("--eroica-bin", default=None,
                        help="with --online-eroica: the eroica binary the job's rank 0 runs")
    parser.add_argument("--agent-bin", default=None, metavar="EROICA",
                        help="run `EROICA agent` for each rank (in its network namespace if any) "
                             "over the profiled window: DIR/metrics-rank-<r>.eroica-metrics")
    parser.add_argument("--start", choices=("fork", "exec"), default="fork",
                        help="fork: the ranks are forked from one interpreter that imported torch "
                             "once (rank_forker.py; not with network namespaces or "
                             "--online-eroica, which exec); exec: each rank starts its own")
    args = parser.parse_args(argv)
    validate_args(parser, args)
    return args


def validate_args(parser, args):
    if args.ranks < 2:
        parser.error("--ranks must be at least 2")
    if args.profile_iters < 1 or args.profile_start < 1:
        parser.error("--profile-start and --profile-iters must be at least 1")
    if args.profile_start + args.profile_iters > args.iters:
        parser.error("the profiled window must end by --iters")
    if not 0 <= args.onset_iter < args.iters:
        parser.error("--onset-iter must be inside 0..iters-1")
    if args.scenario != "healthy" and args.onset_iter > args.profile_start:
        parser.error("the fault must start by the profiled window (--onset-iter <= --profile-start)")
    try:
        args.fault_params = parse_params(args.param)
        scenario = faults.SCENARIOS[args.scenario]
        spec = args.fault_rank if args.fault_rank is not None else scenario.default_fault_rank
        if scenario.category is None and args.fault_rank is not None:
            raise ValueError(f"{args.scenario} injects no fault: drop --fault-rank")
        args.fault_ranks = faults.parse_fault_ranks(spec, args.ranks, keep_order=bool(scenario.parts))
        if scenario.parts:
            faults.assign_parts(scenario, args.fault_ranks)
        args.settings = run_settings(args, scenario)
    except ValueError as error:
        parser.error(str(error))


def run_settings(args, scenario):
    """model, num_workers, accum_steps, seq_len: the run's, else the scenario's, else the defaults."""
    settings = {}
    for key, default in DEFAULT_SETTINGS.items():
        given = getattr(args, key, None)
        settings[key] = given if given is not None else scenario.settings.get(key, default)
    if settings["model"] not in MODELS:
        raise ValueError(f"unknown model {settings['model']!r}")
    if settings["num_workers"] < 0 or settings["accum_steps"] < 1:
        raise ValueError("--num-workers must be at least 0 and --accum-steps at least 1")
    if settings["seq_len"] is not None and not 1 <= settings["seq_len"] <= 256:
        raise ValueError("--seq-len must be inside 1..256")
    needed = scenario.settings.get("model")
    if needed and settings["model"] != needed:
        raise ValueError(f"{scenario.name} needs --model {needed}")
    return settings


def parse_params(pairs):
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--param wants KEY=VALUE, got {pair!r}")
        params[key.strip()] = float(value)
    return params


def build_config(args, out_dir):
    return {"scenario": args.scenario, "world_size": args.ranks, "fault_ranks": args.fault_ranks,
            "fault_params": args.fault_params, "seed": args.seed, "iters": args.iters,
            "onset_iter": args.onset_iter, "profile_start": args.profile_start,
            "profile_iters": args.profile_iters, "out_dir": str(out_dir),
            **args.settings, "stack_hz": args.stack_hz,
            "master_port": launch.free_port(), "start": args.start,
            "online": ({"dir": str(Path(args.online_eroica).resolve()),
                        "bin": str(Path(args.eroica_bin).resolve()) if args.eroica_bin else ""}
                       if args.online_eroica else None),
            "agent": {"bin": str(Path(args.agent_bin).resolve())} if args.agent_bin else None}


def clear_outputs(out_dir: Path):
    """Remove what an earlier run left in DIR (only the names this tool writes)."""
    stale = [*out_dir.glob("rank-*.json"), *out_dir.glob("rank-*.json.tmp"),
             *out_dir.glob("logs/rank-*.log"), *out_dir.glob("logs/agents.log"),
             *out_dir.glob("metrics-rank-*.eroica-metrics")]
    for path in stale:
        path.unlink()
    (out_dir / "truth.json").unlink(missing_ok=True)


def profiler_step_ids(trace_path: Path):
    events = json.loads(trace_path.read_text())
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    return sorted({int(e["name"].split("#", 1)[1]) for e in events
                   if str(e.get("name", "")).startswith("ProfilerStep#")})


def check_traces(out_dir: Path, world_size, expected_ids):
    """Every rank wrote a trace, and all traces hold the same ProfilerStep ids, as planned."""
    for rank in range(world_size):
        path = out_dir / f"rank-{rank}.json"
        if not path.exists():
            raise RuntimeError(f"rank {rank} wrote no trace")
        ids = profiler_step_ids(path)
        if ids != expected_ids:
            raise RuntimeError(f"rank {rank}'s trace holds ProfilerStep ids {ids}, expected {expected_ids}")


def mean_ms(values):
    return 1000.0 * sum(values) / len(values) if values else float("nan")


def iteration_summary(times_s, onset_iter, window_end_iter):
    """(mean ms before the onset, mean ms from it to the end of the profiled window), without
    the warm-up, the onset iteration itself and the iterations slowed by the trace export."""
    before = times_s[min(WARMUP_ITERS, max(0, onset_iter - 1)):onset_iter]
    during = times_s[onset_iter + 1:window_end_iter]
    return mean_ms(before), mean_ms(during)


def write_truth(out_dir, args, result, profiled_iters, fault_params):
    scenario = faults.SCENARIOS[args.scenario]
    truth = {"scenario": args.scenario,
             "ranks": args.fault_ranks,
             "category": scenario.category,
             "scope": faults.fault_scope(args.fault_ranks, args.ranks),
             "fault_onset_iter": args.onset_iter if scenario.category else None,
             "profiled_iters": profiled_iters,
             "world_size": args.ranks,
             "seed": args.seed,
             "fault_params": fault_params,
             # Every fault of the run, most costly first (two_faults: both), and where each
             # spends its time (faults.py's `# site:` lines when the run was made).
             "faults": faults.truth_faults(args.scenario, args.fault_ranks, args.ranks, args.fault_params),
             "locations": expected_locations(scenario),
             "settings": dict(args.settings, stack_hz=args.stack_hz),
             "iteration_times_s": {str(r): [round(t, 6) for t in times]
                                   for r, times in result.iteration_times_s.items()},
             "iteration_start_monotonic_s": {str(r): [round(t, 6) for t in starts]
                                             for r, starts in result.iteration_starts_s.items()},
             "finished_monotonic_s": round(time.monotonic(), 6)}
    onset = onset_monotonic_s(args, result)
    if onset is not None:
        truth["fault_onset_monotonic_s"] = round(onset, 6)
    if getattr(args, "online_eroica", None):
        truth["online"] = dict(result.online)
    if getattr(args, "agent_bin", None):
        truth["agent"] = dict(result.agent)
    if result.external:
        truth["external_faults"] = {str(r): v for r, v in sorted(result.external.items())}
    if result.fault_reports:
        truth["fault_reports"] = {str(r): v for r, v in sorted(result.fault_reports.items())}
    if result.own_work:
        window = list(range(args.profile_start, args.profile_start + args.profile_iters))
        truth["own_work_ms"] = {str(r): own_work_ms(w, args.onset_iter, window)
                                for r, w in sorted(result.own_work.items())}
        truth["data_wait_ms"] = {str(r): data_wait_ms(w, args.onset_iter, window)
                                 for r, w in sorted(result.own_work.items())}
    if len(truth["faults"]) > 1:
        truth["faults"] = order_by_cost(truth["faults"], args, result)
    if result.hang is not None:
        truth["hang"] = {"message": result.hang.message(), "iteration": result.hang.iteration,
                         "stalled_ranks": result.hang.ranks,
                         "detected_monotonic_s": round(result.hang.detected_monotonic_s, 6)}
    tmp = out_dir / "truth.json.tmp"
    tmp.write_text(json.dumps(truth, indent=1) + "\n")
    os.replace(tmp, out_dir / "truth.json")


def own_work_ms(own_work, onset_iter, window):
    """(before, window) mean ms per iteration of a rank's own work: forward x 3 (backward's
    compute taken as twice the forward's) + the optimizer step, none of it waiting on a peer."""
    forward, optimizer = own_work.get("forward_s") or [], own_work.get("optimizer_s") or []
    per_iter = [3 * f + o for f, o in zip(forward, optimizer)]
    before = per_iter[min(WARMUP_ITERS, max(0, onset_iter - 1)):onset_iter]
    during = per_iter[window[0]:window[-1] + 1] if window else []
    return (round(mean_ms(before), 1), round(mean_ms(during), 1)) if before and during else None


def data_wait_ms(own_work, onset_iter, window):
    """(before, window) mean ms per iteration the rank waited for its batches."""
    waits = own_work.get("data_s") or []
    before = waits[min(WARMUP_ITERS, max(0, onset_iter - 1)):onset_iter]
    during = waits[window[0]:window[-1] + 1] if window else []
    return (round(mean_ms(before), 1), round(mean_ms(during), 1)) if before and during else None


def fault_cost_ms_per_iter(fault, args, result):
    """What a fault cost its rank per iteration, as measured while it ran: the stall's sleeps
    (its own report), a slower rank's own work (forward and optimizer step) in the profiled
    window over before the onset, or None. (The cgroup's throttled_time is no measure of it:
    v1 sums it over run queues and threads, several times the wall time.)"""
    rank = fault["ranks"][0]
    report = result.fault_reports.get(rank, {})
    if "stall_ms_per_iter" in report:
        return report["stall_ms_per_iter"]
    window = list(range(args.profile_start, args.profile_start + args.profile_iters))
    own = own_work_ms(result.own_work.get(rank, {}), args.onset_iter, window)
    if own is not None and fault["category"] == "compute":
        return round(own[1] - own[0], 1)
    return None


def order_by_cost(truth_faults, args, result):
    """Several faults: each with its measured cost, most costly first (the scenario's order
    where a cost is unknown)."""
    for fault in truth_faults:
        fault["cost_ms_per_iter"] = fault_cost_ms_per_iter(fault, args, result)
    if any(f["cost_ms_per_iter"] is None for f in truth_faults):
        return truth_faults
    return sorted(truth_faults, key=lambda f: -f["cost_ms_per_iter"])


def expected_locations(scenario):
    """[{"file": "faults.py", "lines": [...], "site": NAME}] for the scenario's fault sites."""
    return [{"file": Path(faults.__file__).name, "lines": lines, "site": site}
            for site, lines in faults.site_lines(scenario.sites).items() if lines]


def onset_monotonic_s(args, result):
    """When the first faulty rank began the onset iteration (CLOCK_MONOTONIC), from its iteration
    records or, for an iteration that never finished (a hang), from its last heartbeat."""
    if not args.fault_ranks:
        return None
    found = []
    for rank in args.fault_ranks:
        starts = result.iteration_starts_s.get(rank, [])
        if args.onset_iter < len(starts) and starts[args.onset_iter] == starts[args.onset_iter]:
            found.append(starts[args.onset_iter])
        elif result.hang is not None:
            state = result.hang.states.get(rank, {})
            if state.get("iter") == args.onset_iter and "started_s" in state:
                found.append(float(state["started_s"]))
    return min(found) if found else None


def print_summary(args, result):
    """One line per rank: mean iteration time before the onset and during the fault."""
    window_end = args.profile_start + args.profile_iters
    for rank, times in sorted(result.iteration_times_s.items()):
        before_ms, during_ms = iteration_summary(times, args.onset_iter, window_end)
        tag = " (faulty)" if rank in args.fault_ranks else ""
        line = f"rank {rank}{tag}: {before_ms:.1f} ms/iter before iteration {args.onset_iter}, "
        if result.hang is not None:
            state = result.hang.states.get(rank, {})
            line += f"stuck in iteration {state.get('iter')} ({state.get('phase')})"
        else:
            line += (f"{during_ms:.1f} ms/iter in iterations {args.onset_iter + 1}-{window_end - 1}"
                     f"{' (fault on)' if args.fault_ranks else ''}")
        print(line)


def install_signal_handlers():
    def on_signal(signum, frame):
        signal.signal(signum, signal.SIG_IGN)  # a second signal must not interrupt the cleanup
        raise Interrupted(signal.Signals(signum).name)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, on_signal)


def run(args):
    scenario = faults.SCENARIOS[args.scenario]
    out_dir = Path(args.out).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    clear_outputs(out_dir)
    config = build_config(args, out_dir)
    fault = (faults.make_fault(args.scenario, args.fault_params, rank=None, fault_ranks=args.fault_ranks)
             if args.fault_ranks else faults.NoFault())
    testbed = launch.Testbed(config, fault, scenario.needs_network_namespaces)
    atexit.register(testbed.close)
    started = time.monotonic()
    try:
        testbed.start()
        result = testbed.wait(args.timeout_s, args.max_wall_s)
        expects_hang = scenario.fault_class is faults.Hang
        if result.hang is not None and not expects_hang:
            raise launch.RankFailed(result.hang.message())
        if result.hang is None and expects_hang:
            raise launch.RankFailed("the hang scenario finished without hanging")
        profiled = []
        if result.hang is None:
            profiled = list(range(args.profile_start, args.profile_start + args.profile_iters))
            check_traces(out_dir, args.ranks, profiled)
        else:
            print(result.hang.message())
        write_truth(out_dir, args, result, profiled, fault.params)
        print_summary(args, result)
    except BaseException:
        testbed.save_logs(out_dir / "logs")
        raise
    finally:
        errors = testbed.close()
        for error in errors:
            print(f"cleanup: {error}", file=sys.stderr)
    print(f"{args.scenario}: {args.ranks} ranks, {time.monotonic() - started:.1f} s wall, "
          f"output in {out_dir}")


def main(argv=None):
    args = parse_args(argv)
    install_signal_handlers()
    try:
        run(args)
    except Interrupted as signal_name:
        print(f"run_scenario: interrupted by {signal_name}; cleaned up", file=sys.stderr)
        return 130
    except (RuntimeError, OSError, ValueError) as error:
        print(f"run_scenario: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Real multi-process PyTorch DDP runs (gloo, CPU) with one real fault each: eroica diagnose must
name the right rank, category and scope first, and find nothing on healthy runs."""
import glob
import os
import json

import pytest

from eroica_cli import EROICA, SOURCE_DIR, diagnose, pattern, run_scenario, shown

# scenario, fault rank, testbed parameters, run settings, expected (category, scope)
FAULTS = [
    ("dataloader_stall", 1, ["stall_ms=50"], [], ("dataloader", "local")),
    # A CFS quota freezes the rank for whole 100 ms periods wherever it is. What tells it from a
    # rank given more data, without the agent, is that the model-sized work (host time between
    # ops, gradient accumulation, the optimizer: a fifth of this rank's CPU time) is stretched too;
    # with k freezes in the window that misses them all with chance 0.8^k. At 10 % (about 12
    # freezes in 5 iterations, 7 %) CI once saw `imbalance`; at 5 % about 30 (0.1 %).
    ("cpu_throttle", 2, ["quota_pct=5"], [], ("compute", "local")),
    ("gc_storm", 3, [], [], ("host", "local")),
    # Five times the data, not the testbed's three: at 3x, 4 of 6 runs of this set-up were found
    # here (load 2-3); in the other 2 the rank with more data got more CPU (0.62 cores against
    # 0.39-0.49) and waited in collectives the most, so nothing waited for it in that window. The
    # accuracy splits keep 2x and 3x and report what they miss. At 5x: 6 of 6.
    ("imbalance", 1, ["batch_factor=5"], [], ("imbalance", "local")),
    # One rank's veth throttled with tbf (its own network namespace); only the node agent's NIC
    # samples can tell which rank's link it is.
    ("net_throttle", 2, [], [], ("communication", "local")),
    # Issue 13's mechanisms: a GC storm on every rank keeps every rank in one role group and is
    # one global cost; a loop of 15 % of the step on every rank sits far inside the CPU box and
    # is found by leading every rank's other host points; slow loader worker processes stall
    # their rank only in some iterations, found by its excess summed over the window.
    ("gc_storm_global", "all", [], [], ("host", "global")),
    # 20 % of the step, the top of the 10-20 %, not the testbed's 15 %: a clean-clone CI
    # run once found nothing at 15 % (beside python_online's real runs; 7 reruns here, idle and
    # beside busy loops, all found). The accuracy splits keep 12-18 % and report what they miss.
    ("python_light_global", "all", ["step_share=0.2"], [], ("host", "global")),
    ("loader_workers_slow", 1, [], ["--num-workers", "2"], ("dataloader", "local")),
    # Who had the processor: every link throttled is a slow network even on 2 busy cores (the
    # ranks' threads slept in their collectives, they were not queued); every rank's loader
    # workers sleeping is the loader's own cost (the workers were not queued behind training).
    ("net_throttle_global", "all", [], [], ("communication", "global")),
    ("loader_workers_slow_global", "all", [], ["--num-workers", "2"], ("dataloader", "global")),
    # Longer sequences on one rank of 4 sharing 2 busy cores: the scheduler spreads its extra
    # work over every rank, so neither its own work nor anyone's waiting need single it out;
    # its ops' median calls do, with its optimizer's at its peers' size (call_sizes.h). Three
    # times as long, not the testbed's two: at 2x a clean-clone CI run found nothing, and of 4
    # runs here beside two busy loops one missed (median calls 1.34x against a noisiest peer's
    # 1.06x, lower quartile 1.89x: found since MoreData asks only one of the two to clear the
    # noise; the other runs' medians 2.5-3.8x). At 3x: 5 of 5 beside two busy loops, 2.9-3.5x.
    # The accuracy splits keep 2x and 2.5x and report what they miss.
    ("imbalance_seq", 1, ["seq_factor=3"], ["--model", "transformer"], ("imbalance", "local")),
    # A Python thread beside rank 1's training loop serializing snapshots without a pause: its
    # training thread waits for the interpreter lock wherever it let it go (the optimizer's step,
    # DDP's forward), which is no line of its own; the process's other threads' CPU names them,
    # and their stack samples the thread's line.
    ("busy_thread", 1, [], [], ("host", "local")),
    # Rank 2's loader workers spend 1.5 ms of CPU on each sample: they keep up, taking the cores
    # every rank's training thread needs; named by its workers' CPU beyond their peers' workers'.
    ("loader_workers_busy", 2, [], [], ("dataloader", "local")),
]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Each fault run is made once and read by every test that needs it: a real run costs 6-9 s
    of the suite, most of it four processes importing torch."""
    runs = {}

    def run(scenario, rank, params=(), settings=()):
        key = (scenario, rank, tuple(params), tuple(settings))
        if key not in runs:
            folder = tmp_path_factory.mktemp(scenario)
            extra = ["--fault-rank", str(rank), *settings]
            if scenario == "net_throttle":
                extra += ["--agent-bin", EROICA]
            runs[key] = (folder, run_scenario(scenario, folder, params=params, extra=extra))
        return runs[key]

    return run


@pytest.mark.parametrize("scenario,rank,params,settings,expected", FAULTS, ids=[f[0] for f in FAULTS])
def test_first_finding_names_the_fault(scenario, rank, params, settings, expected, made):
    run, truth = made(scenario, rank, params, settings)
    d = diagnose(run)
    assert d["workers"] == 4
    assert not d["healthy"], f"{d}\n{shown(run)}"
    first = d["findings"][0]
    assert (first["category"], first["scope"]) == expected, f"{first['evidence']}\n{shown(run)}"
    if scenario == "busy_thread":  # not the training thread's line where it waited: the busy thread's
        assert first["function"] == "(other threads of the training process)", f"{first}\n{shown(run)}"
    if scenario in ("busy_thread", "loader_workers_slow"):  # located in that thread or those processes
        sites = truth["locations"][0]
        assert any(f"{sites['file']}:{line}(" in first.get("location", "") for line in sites["lines"]), first
    if expected[1] == "local":
        assert first["workers"] == truth["ranks"], f"{first}\n{shown(run)}"
        # What it costs the job: the others wait for it, or, on cores the ranks share busy, its
        # extra work slows every rank in its own ops (a clean-clone CI run's imbalance_seq: the
        # right rank and category, its peers hardly waiting for it).
        justified = ("wait on it", "arrives last", "wait for this link", "slows every rank in its own ops",
                     "on shared cores slows them", "from every rank's work")
        assert any(s in first["evidence"] for s in justified), first["evidence"]
    else:
        assert sorted(first["workers"]) == [0, 1, 2, 3]
    # Only the cause is reported, never the peers' waiting as a communication problem. (A thread
    # that takes the cores every rank runs on also leaves ranks waiting for descheduled peers; once
    # in 16 runs here the readings called that a slow network too, as a second finding after it.)
    if expected[0] != "communication" and scenario != "busy_thread":
        assert all(f["category"] != "communication" for f in d["findings"]), d["findings"]


def test_the_cpu_readings_reach_the_pattern_and_name_a_quota(made, tmp_path):
    """The window's CPU readings travel from the stack sampler's file into each rank's pattern:
    the rank under a CPU quota shows its cgroup's throttling, its peers none, and every rank its
    training thread's own time. (The quota run of FAULTS, read again.)"""
    run, _ = made("cpu_throttle", 2, ["quota_pct=5"])
    cpu = {r: pattern(run / f"rank-{r}.json", tmp_path)["cpu"] for r in range(4)}
    assert cpu[2]["throttled"] >= 0.1, cpu
    assert all(cpu[r]["throttled"] < 0.03 for r in (0, 1, 3)), cpu
    for r, c in cpu.items():
        assert c["cpus"] >= 1 and 0 <= c["host_busy"] <= 1 and c["main_cpu"] > 0, (r, c)
    # The reading covers the traced steps, not the profiler's stop after them: collecting the
    # trace keeps the training thread on a CPU or queued for about twice as long as the window
    # on these 2 cores, and read with it a rank's sleep (in a stall, a slow read) disappeared.
    # Read by the native walker where the build made it (python/native/): no frame objects.
    native = glob.glob(os.path.join(os.path.dirname(EROICA), "python-native", "_eroica_frames*"))
    for r in range(4):
        stacks = json.loads((run / f"rank-{r}.stacks.json").read_text())
        assert stacks["walker"] == ("interpreter frames" if native else "frame objects"), stacks.get("walker")
        opened = sorted(stacks["step_start_unix_ns"].values())
        steps = len(opened)
        traced_s = (opened[-1] - opened[0]) / 1e9 * steps / (steps - 1)
        assert stacks["cpu"]["window_ns"] / 1e9 < 1.5 * traced_s, (r, stacks["cpu"], traced_s)
    first = diagnose(run)["findings"][0]
    assert (first["category"], first["workers"]) == ("compute", [2]), first
    assert "CPU quota held it back" in first["evidence"], first["evidence"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_healthy_runs_are_healthy(seed, tmp_path):
    run_scenario("healthy", tmp_path / "first", seed=seed)
    d = diagnose(tmp_path / "first")
    assert d["workers"] == 4
    if not d["healthy"]:
        # CI runs other tests beside this one on the same 2 cores, and a neighbour's burst can
        # really slow one rank of a healthy job. A false alarm that comes back on the same job
        # made again is eroica's; one that does not was the machine's. Both are printed.
        print("first run:", [f["evidence"] for f in d["findings"]])
        run_scenario("healthy", tmp_path / "again", seed=seed)
        d = diagnose(tmp_path / "again")
    assert d["healthy"], d["findings"]


def test_collate_sleep_shows_as_that_ranks_dataloader_share(made, tmp_path):
    """A 50 ms sleep in one rank's collate: its data loader takes ~50 ms more per iteration than
    its peers', and the peers' exposed communication grows (they wait for it). (The stall run of
    FAULTS, read again.)"""
    run, _ = made("dataloader_stall", 1, ["stall_ms=50"])
    patterns = {r: pattern(run / f"rank-{r}.json", tmp_path) for r in range(4)}
    loader_ms = {r: p["category_beta"]["dataloader"] * p["iteration_s"] * 1e3 for r, p in patterns.items()}
    peers = sorted(loader_ms[r] for r in (0, 2, 3))
    assert loader_ms[1] - peers[1] == pytest.approx(50, abs=12), loader_ms
    comm = {r: p["category_beta"]["communication"] for r, p in patterns.items()}
    assert min(comm[r] for r in (0, 2, 3)) > comm[1], comm


SAVED = SOURCE_DIR / "tests" / "e2e" / "data"  # saved sessions' patterns; each folder's README.md says how made


def first_finding_of_saved(*path, scope, category, workers, location):
    """The first finding of a saved session's patterns, checked for its scope, category, ranks
    and code line."""
    findings = diagnose(SAVED.joinpath(*path, "session.pattern"))["findings"]
    first = findings[0]
    assert (first["scope"], first["category"], first["workers"]) == (scope, category, workers), findings
    assert first["location"] == location, first
    return first


def test_a_straggler_whose_own_loader_workers_took_the_cores_is_named_at_its_loader():
    """A saved 3-rank run whose rank 1's loader workers burned 1.5 ms of CPU a sample: its compute
    ran slower as they took the cores (data/testbed/README.md); named at its loader and at the
    workers' own hot line, not as a slower processor."""
    first = first_finding_of_saved("testbed", "busy_workers_straggler", scope="local", category="dataloader",
                                   workers=[1], location="/work/main/testbed/faults.py:171(spin_cpu)")
    assert "its own training thread's among them" in first["evidence"], first


def test_ops_only_one_rank_calls_are_named_as_its_code():
    """A saved 4-rank ViT session whose rank 0 logged every parameter's norm with .item() 60 times
    a step (data/vit/README.md): ops its peers never call, named at the line that calls them."""
    first = first_finding_of_saved("vit", "norms_rank0", scope="local", category="host", workers=[0],
                                   location="/tmp/novel11/train_vit.py:133(<dictcomp>)")
    assert "calls ops its peers never call (aten::frobenius_norm 1740 a step" in first["evidence"], first


def test_a_rank_running_its_peers_ops_as_often_but_longer_runs_no_code_of_its_own():
    """A saved healthy 4-rank ViT session on 2 busy cores (data/vit/README.md): rank 1's ops ran
    20 ms a step longer, with its peers' count of calls, and 3 % of its samples sat at the patch
    embedding's line, which its peers passed within a sampling period. Not code of its own."""
    findings = diagnose(SAVED / "vit" / "slower_ops_healthy" / "session.pattern")["findings"]
    assert not any(f.get("location") for f in findings), findings
    assert not any(f["category"] == "host" for f in findings), findings


def test_a_loop_the_trace_names_by_different_ops_each_step_is_found_at_its_line():
    """A saved 4-rank language model whose every rank ran a 35 ms Python loop a step
    (data/lm/README.md): its gap was named after three different pairs of ops, none in every
    step; its stack samples put them all at one line, a global host cost there."""
    first = first_finding_of_saved("lm", "loop_split", scope="global", category="host", workers=[0, 1, 2, 3],
                                   location="/tmp/novel13/train_lm.py:140(main)")
    assert "other program points of its line /tmp/novel13/train_lm.py:140(main)" in first["evidence"], first

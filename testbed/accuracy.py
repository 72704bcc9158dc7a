"""Accuracy benchmark: every testbed scenario x seeds, end to end, scored against the truth.

    /usr/bin/python3 testbed/accuracy.py --eroica build/eroica [--seeds 3] [--scenario NAME ...]
        [--param SCENARIO:KEY=VALUE ...] [--out out/accuracy]

Each run launches N ranks of real DDP training (run_scenario.py), injects the scenario's fault
from the onset iteration on, profiles the same iterations on every rank, runs
`eroica diagnose DIR --format json`, and scores findings[0] against truth.json: the rank(s),
the category, the scope; on healthy runs any finding is a false alarm. The faulty rank varies
with the seed. Time to diagnosis: wall seconds from the start of the onset iteration (on the
faulty rank, CLOCK_MONOTONIC as the testbed records it) to the moment the diagnosis is in hand.

Scenarios eroica cannot diagnose yet are scored for what they are, never skipped:
- net_throttle needs hardware samples (NIC throughput) from `eroica agent`; when diagnose does
  not name the link, the run is "needs agent" (what diagnose said is still recorded);
- hang: with the online package (python/eroica, hang watchdog) the job runs under
  `python -m eroica run` and the session's stacks are diagnosed; without it, the testbed's own
  hang detection (no progress, least-advanced ranks) is scored and marked as such.

Writes OUT/accuracy-results.json (every run, the load average, the summary) and
OUT/accuracy-table.md, keeps each run's traces in OUT/runs/<scenario>-s<seed>/ (with the
ranks' patterns, summarized and shown, in its patterns/ when the diagnosis is wrong), and prints the Markdown
tables. Exit status: 0 when every run completed (right or wrong; --strict: and all correct),
1 when a run could not be completed, 2 on bad arguments.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional

TESTBED_DIR = Path(__file__).resolve().parent
REPO_DIR = TESTBED_DIR.parent
sys.path.insert(0, str(TESTBED_DIR))
import faults  # noqa: E402
import splits  # noqa: E402

PYTHON = sys.executable  # the interpreter that runs the testbed (Makefile: PYTHON) runs its jobs
RUN_SCENARIO = TESTBED_DIR / "run_scenario.py"
ONLINE_PACKAGE_PARENT = REPO_DIR / "python"
DEFAULT_SEEDS = 3
DEFAULT_RANKS = 4
RUN_TIMEOUT_S = 240
# The benchmark's own fault strengths, where the testbed's default does not survive a shared
# machine: a fixed 25 % CPU quota is no throttle when the rank gets less than that anyway (4
# ranks and others' builds on 2 cores), so the throttle is relative: 40 % of the CPU the rank
# was getting before the onset. A --param for a scenario replaces its entry here.
DEFAULT_OVERRIDES = {name: list(pairs) for name, pairs in splits.TUNING_PARAMS.items()}
DIAGNOSE_TIMEOUT_S = 120

# Statuses of one run. Only CORRECT counts as a success; the "not yet" statuses are reported
# apart from eroica's accuracy, with their reason.
CORRECT = "correct"
WRONG = "wrong"
MISSED = "missed"
FALSE_ALARM = "false alarm"
NEEDS_AGENT = "needs agent"
TESTBED_ONLY = "testbed only"
ERROR = "error"
NOT_YET = (NEEDS_AGENT, TESTBED_ONLY)

NEEDS_AGENT_REASON = ("every rank's all-reduce slows equally when one link is throttled, so the "
                      "traces alone cannot name the rank: it needs NIC throughput samples (μ) "
                      "from `eroica agent`")
AGENT_NOT_READ = ("; the agents' metrics were captured (metrics-rank-<r>.eroica-metrics beside "
                  "the traces) but diagnose does not read them yet")
NO_AGENT = "; no agent binary was given (--agent-bin, or an --eroica with `agent`)"
TESTBED_ONLY_REASON = ("the online package (python/eroica) with its hang watchdog is not "
                       "available: scored on the testbed's own detection (no progress, stalled "
                       "ranks); eroica diagnose gets no stacks")


# --------------------------------------------------------------------------------------------
# Plan


fault_rank_for = splits.fault_rank_for


def parse_overrides(items: List[str]) -> Dict[str, List[str]]:
    """['cpu_throttle:quota_pct=10', ...] -> {'cpu_throttle': ['quota_pct=10']}."""
    overrides: Dict[str, List[str]] = {}
    for item in items:
        scenario, sep, pair = item.partition(":")
        if not sep or scenario not in faults.SCENARIOS or "=" not in pair:
            raise ValueError(f"--param wants SCENARIO:KEY=VALUE with a known scenario, got {item!r}")
        overrides.setdefault(scenario, []).append(pair)
    return overrides


# --------------------------------------------------------------------------------------------
# Scoring (pure: unit-tested with fabricated diagnoses in test_accuracy.py)


def finding_brief(finding: Optional[dict]) -> Optional[dict]:
    if not finding:
        return None
    keys = ("scope", "category", "workers", "function", "impact_s_per_iter", "location")
    return {k: finding.get(k) for k in keys if k in finding}


def describe_finding(finding: Optional[dict]) -> str:
    """'local dataloader on [2]: enumerate(DataLoader)#... (57.1 ms/iter)'."""
    if not finding:
        return "(no finding)"
    workers = finding.get("workers") or []
    text = f"{finding.get('scope', '?')} {finding.get('category', '?')} on {format_ranks(workers)}"
    function = finding.get("function")
    if function:
        text += f": {shorten(function, 48)}"
    impact = finding.get("impact_s_per_iter")
    if isinstance(impact, (int, float)) and impact > 0:
        text += f" ({impact * 1000:.1f} ms/iter)"
    location = finding.get("location")
    if location:
        text += f" at {location}"
    return text


def format_ranks(ranks) -> str:
    ranks = sorted(ranks)
    if len(ranks) > 6:
        return f"[{ranks[0]}..{ranks[-1]}] ({len(ranks)})"
    return "[" + ",".join(str(r) for r in ranks) + "]"


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def truth_faults(truth: dict) -> List[dict]:
    """The faults a diagnosis should report, most costly first: truth["faults"], or for a truth
    written before it existed, the one fault of its ranks, category and scope."""
    if truth.get("category") is None:
        return []
    if truth.get("faults"):
        return truth["faults"]
    return [{"ranks": truth.get("ranks") or [], "category": truth.get("category"), "scope": truth.get("scope")}]


def matches(finding: dict, fault: dict) -> Dict[str, bool]:
    return {"rank_ok": sorted(finding.get("workers") or []) == sorted(fault.get("ranks") or []),
            "category_ok": finding.get("category") == fault.get("category"),
            "scope_ok": finding.get("scope") == fault.get("scope")}


LOCATION = re.compile(r"^(?P<file>.+?):(?P<line>\d+)(?:\s*\(.*\))?$")


def location_right(location: str, expected: List[dict]) -> Optional[bool]:
    """Whether a finding's location ('path/faults.py:417(save_checkpoint)', 'faults.py:417')
    names one of the expected lines ([{"file", "lines"}]); None when either is missing."""
    if not location or not expected:
        return None
    match = LOCATION.match(location.strip())
    if not match:
        return False
    name, line = Path(match.group("file")).name, int(match.group("line"))
    return any(Path(e.get("file", "")).name == name and line in (e.get("lines") or []) for e in expected)


def score_diagnosis(truth: dict, diagnosis: dict) -> dict:
    """Scores the findings against the truth.

    One fault: findings[0] must name its ranks (every rank for a global truth), category and
    scope. Several faults (truth["faults"], most costly first): each must be named by a
    finding of its own, and `order_ok` says whether they come in the truth's order (None when
    their measured costs are within ORDER_MIN_COST_RATIO: no order is wrong); the run is
    correct only when both hold. `location_ok`: whether the location of the finding(s) scored
    names one of the fault's `# site:` lines (truth["locations"]), None when no finding scored
    carries a location or the truth expects none.

    Returns {"status", "detected", "rank_ok", "category_ok", "scope_ok", "order_ok",
    "location_ok", "location", "false_alarm", "findings", "first"}: status is CORRECT, WRONG,
    MISSED (a fault, no finding) or FALSE_ALARM (a healthy run, any finding)."""
    findings = diagnosis.get("findings") or []
    first = findings[0] if findings else None
    result = {"findings": len(findings), "first": finding_brief(first), "detected": bool(findings),
              "rank_ok": None, "category_ok": None, "scope_ok": None, "order_ok": None,
              "location_ok": None, "location": None, "false_alarm": False}
    wanted = truth_faults(truth)
    if not wanted:  # healthy
        result["false_alarm"] = bool(findings) or diagnosis.get("healthy") is False
        result["status"] = FALSE_ALARM if result["false_alarm"] else CORRECT
        return result
    if first is None:
        result.update(rank_ok=False, category_ok=False, scope_ok=False, status=MISSED)
        return result
    if len(wanted) == 1:
        result.update(matches(first, wanted[0]))
        scored = [first]
    else:
        scored = score_several(findings, wanted, result, own_work_noise_ms(truth))
    located = [f.get("location") for f in scored if f is not None and f.get("location")]
    if located:
        verdicts = [location_right(loc, truth.get("locations") or []) for loc in located]
        result["location"] = located[0]
        result["location_ok"] = None if None in verdicts else all(verdicts)
    ok = result["rank_ok"] and result["category_ok"] and result["scope_ok"] and result["order_ok"] is not False
    result["status"] = CORRECT if ok else WRONG
    return result


# Two faults whose measured costs are this close (larger / smaller) have no "most costly":
# their order is not judged. The measured cost of a CPU quota moves by a third between runs.
ORDER_MIN_COST_RATIO = 1.25


def costs_too_close(costs: List[Optional[float]]) -> bool:
    """Whether two of the faults' net costs (net_cost_ms) are within ORDER_MIN_COST_RATIO."""
    if any(not isinstance(c, (int, float)) or c <= 0 for c in costs):
        return False
    ordered = sorted(costs, reverse=True)
    return any(a / b < ORDER_MIN_COST_RATIO for a, b in zip(ordered, ordered[1:]))


def own_work_noise_ms(truth: dict) -> Optional[float]:
    """How far the testbed's own-work measure (run_scenario.py own_work_ms: forward x 3 plus the
    optimizer step, timed in the training loop) moved from before the onset to the window on the
    ranks with no fault in this run: what it cannot tell from a fault's cost. None without it."""
    faulty = {r for f in truth_faults(truth) for r in f.get("ranks") or []}
    moves = [abs(pair[1] - pair[0]) for rank, pair in (truth.get("own_work_ms") or {}).items()
             if pair and len(pair) == 2 and int(rank) not in faulty]
    return max(moves) if moves else None


def net_cost_ms(fault: dict, noise: Optional[float]) -> Optional[float]:
    """What the testbed can say a fault of several cost the job a step. A stall reports its own
    sleeps. A slower rank's cost is its own-work measure's move, less the largest move of a
    fault-free rank's (`noise`): the forward includes what DDP runs in it, such as the CNN's
    buffer broadcast, which waits for a stalled peer (cnn26's two_faults, seed 316: the quota's
    rank's measure grew 344 ms a step, a fault-free rank's 300, where the job's step grew 159 ms
    with a 120 ms stall in it; cnn17's: 277 and 330), and a quota the stall keeps from biting
    moves it by no more than noise (tuning17's MLP, seed 1: +5.5 ms, fault-free ranks -7.9 and
    +5.8). A measure that fell is no cost at all, however far it fell: probe22's 3-rank MLP,
    seed 619, whose quota held its rank back 0.013 of the window while the stall kept every rank
    waiting, moved it by -2.5 ms against a fault-free rank's -0.9. None: not measured."""
    cost = fault.get("cost_ms_per_iter")
    if not isinstance(cost, (int, float)):
        return None
    if fault.get("category") != "compute" or noise is None:
        return cost
    return cost - noise


def cost_measured(fault: dict, noise: Optional[float]) -> bool:
    """Whether a fault of several has a cost the testbed measured (net_cost_ms)."""
    cost = net_cost_ms(fault, noise)
    if cost is None:
        return False
    return fault.get("category") != "compute" or cost > 0


def score_several(findings: List[dict], wanted: List[dict], result: dict,
                  noise: Optional[float] = None) -> List[Optional[dict]]:
    """Each truth fault's finding: the first not yet taken that names its ranks, category and
    scope, else the first that names its ranks. Fills the result's *_ok and `order_ok`, and
    `matched` (each fault's finding index or None, in the truth's order); returns the findings.
    The faults are ranked by their net costs (net_cost_ms), which the truth's order (by the
    measures alone) need not be. A fault whose cost the testbed could not tell from its own
    measure's noise (`cost_measured`) need not be named, and then no order is judged: what the
    testbed cannot measure it cannot rank or require."""
    nets = [net_cost_ms(f, noise) for f in wanted]
    ranked = sorted(range(len(wanted)), key=lambda k: -nets[k] if nets[k] is not None else float("inf"))
    taken, indices = set(), [None] * len(wanted)
    for k in ranked:
        fault = wanted[k]
        full = [i for i, f in enumerate(findings) if i not in taken and all(matches(f, fault).values())]
        ranks = [i for i, f in enumerate(findings) if i not in taken and matches(f, fault)["rank_ok"]]
        index = (full or ranks or [None])[0]
        if index is not None:
            taken.add(index)
        indices[k] = index
    measured = [cost_measured(f, noise) for f in wanted]
    required = [k for k in range(len(wanted)) if measured[k] or not any(measured)]
    checks = [matches(findings[indices[k]], wanted[k]) if indices[k] is not None
              else dict.fromkeys(("rank_ok", "category_ok", "scope_ok"), False) for k in required]
    for key in ("rank_ok", "category_ok", "scope_ok"):
        result[key] = all(c[key] for c in checks)
    found = [indices[k] for k in ranked if indices[k] is not None]
    result["order_ok"] = len(found) == len(wanted) and found == sorted(found)
    if len(found) == len(wanted) and costs_too_close(nets):
        result["order_ok"] = None  # either order is right
    if len(required) < len(wanted) and all(indices[k] is not None for k in required):
        result["order_ok"] = None  # a cost the testbed did not measure: no order to judge
    result["matched"] = indices
    return [findings[i] if i is not None else None for i in indices]


def score_hang_location(diagnosis: dict, expected_file: str, expected_line: int) -> Optional[bool]:
    """Whether findings[0].location ('path:line') names the blocking line; None without one."""
    findings = diagnosis.get("findings") or []
    location = findings[0].get("location") if findings else None
    if not location:
        return None
    path, _, line = location.rpartition(":")
    return Path(path).name == Path(expected_file).name and line.strip() == str(expected_line)


def score_testbed_hang(truth: dict) -> dict:
    """The testbed's own hang detection: it saw no progress and named the stalled ranks."""
    hang = truth.get("hang")
    result = {"findings": 0, "first": None, "false_alarm": False,
              "category_ok": hang is not None, "scope_ok": hang is not None}
    if hang is None:
        result.update(rank_ok=False, status=MISSED)
        return result
    result["rank_ok"] = sorted(hang.get("stalled_ranks") or []) == sorted(truth.get("ranks") or [])
    result["first"] = {"scope": "local", "category": "hang", "workers": hang.get("stalled_ranks"),
                       "function": hang.get("message")}
    result["status"] = TESTBED_ONLY
    return result


def verdict_text(record: dict) -> str:
    """The table's verdict cell: the status, and what was wrong."""
    status = record["status"]
    if status == WRONG:
        wrong = [name for name, key in (("rank", "rank_ok"), ("category", "category_ok"),
                                        ("scope", "scope_ok"), ("order", "order_ok")) if record.get(key) is False]
        return f"wrong {'+'.join(wrong)}"
    if status == TESTBED_ONLY:
        ok = record.get("rank_ok") and record.get("category_ok")
        return "testbed only: " + ("hang detected, stalled ranks right" if ok else "stalled ranks wrong")
    if status == NEEDS_AGENT:
        return "needs agent"
    if status == ERROR:
        return "error"
    if status == CORRECT and record.get("location_ok") is False:
        return "correct (location wrong)"
    return status


def time_to_diagnosis(truth: dict, diagnosed_monotonic_s: Optional[float]) -> Optional[float]:
    onset = truth.get("fault_onset_monotonic_s")
    if onset is None or diagnosed_monotonic_s is None:
        return None
    return round(diagnosed_monotonic_s - onset, 2)


def faulty_slowdown(truth: dict, window_end: Optional[int] = None) -> Optional[float]:
    """Mean iteration time of the job (slowest rank per iteration) during the fault over before
    it: how strong the fault was on this run (under the machine's load at that time)."""
    times = truth.get("iteration_times_s") or {}
    onset = truth.get("fault_onset_iter")
    if onset is None or not times:
        return None
    profiled = truth.get("profiled_iters") or []
    end = window_end if window_end is not None else (profiled[-1] + 1 if profiled else None)
    if end is None:
        return None
    per_iter = [max(t[i] for t in times.values() if i < len(t))
                for i in range(min(len(t) for t in times.values()))]
    before = per_iter[min(3, max(0, onset - 1)):onset]
    during = per_iter[onset + 1:end]
    if not before or not during:
        return None
    return round(statistics.mean(during) / statistics.mean(before), 3)


def rank_means_ms(truth: dict) -> Optional[dict]:
    """Each rank's mean ms per iteration before the onset and in the profiled window:
    {"before": {rank: ms}, "window": {rank: ms}}."""
    times = truth.get("iteration_times_s") or {}
    profiled = truth.get("profiled_iters") or []
    if not times or not profiled:
        return None
    onset = truth.get("fault_onset_iter")
    start = onset if onset is not None else profiled[0]
    out = {"before": {}, "window": {}}
    for rank, t in times.items():
        before = t[min(3, max(0, start - 1)):start]
        window = t[profiled[0]:profiled[-1] + 1]
        out["before"][rank] = round(1000 * statistics.mean(before), 1) if before else None
        out["window"][rank] = round(1000 * statistics.mean(window), 1) if window else None
    return out


def summarize(records: List[dict]) -> Dict[str, dict]:
    """Per scenario: runs, detected (any finding on a fault run), correct, rank/category/scope
    hits, order right (several faults), locations given and right, false alarms, median time."""
    out: Dict[str, dict] = {}
    for record in records:
        s = out.setdefault(record["scenario"], {
            "runs": 0, "detected": 0, "correct": 0, "rank_ok": 0, "category_ok": 0, "scope_ok": 0,
            "order_ok": 0, "order_scored": 0, "location_given": 0, "location_ok": 0, "false_alarms": 0, "not_yet": 0,
            "errors": 0, "times_s": [], "statuses": {}, "setups": []})
        s["runs"] += 1
        s["statuses"][record["status"]] = s["statuses"].get(record["status"], 0) + 1
        s["correct"] += record["status"] == CORRECT
        s["detected"] += record.get("truth_category") is not None and bool(record.get("detected"))
        s["false_alarms"] += bool(record.get("false_alarm"))
        s["not_yet"] += record["status"] in NOT_YET
        s["errors"] += record["status"] == ERROR
        for key in ("rank_ok", "category_ok", "scope_ok", "order_ok", "location_ok"):
            s[key] += record.get(key) is True
        s["location_given"] += record.get("location_ok") is not None
        s["order_scored"] += record.get("order_ok") is not None
        setup = (record.get("spec") or {}).get("setup")
        if setup and setup not in s["setups"]:
            s["setups"].append(setup)
        if record.get("time_to_diagnosis_s") is not None:
            s["times_s"].append(record["time_to_diagnosis_s"])
    for s in out.values():
        times = s.pop("times_s")
        s["median_time_to_diagnosis_s"] = round(statistics.median(times), 1) if times else None
    return out


def totals(records: List[dict]) -> dict:
    faulty = [r for r in records if r.get("truth_category") is not None]
    healthy = [r for r in records if r.get("truth_category") is None]
    scored = [r for r in faulty if r["status"] not in NOT_YET + (ERROR,)]
    return {"runs": len(records),
            "fault_runs": len(faulty),
            "fault_runs_scored": len(scored),
            "fault_runs_detected": sum(bool(r.get("detected")) for r in scored),
            "fault_runs_correct": sum(r["status"] == CORRECT for r in scored),
            "fault_runs_not_yet_diagnosable": sum(r["status"] in NOT_YET for r in faulty),
            "healthy_runs": len(healthy),
            "false_alarms": sum(bool(r.get("false_alarm")) for r in healthy),
            "errors": sum(r["status"] == ERROR for r in records)}


def cell(text) -> str:
    return str(text).replace("|", "\\|")


def markdown_tables(records: List[dict], summary: Dict[str, dict], overall: dict,
                    reasons: Dict[str, str]) -> str:
    lines = ["| run | fault rank | verdict | first finding | job slowdown | time to diagnosis | load (1 min) |",
             "|---|---|---|---|---|---|---|"]
    for r in records:
        slow = f"×{r['slowdown']:.2f}" if r.get("slowdown") else "–"
        ttd = f"{r['time_to_diagnosis_s']:.1f} s" if r.get("time_to_diagnosis_s") is not None else "–"
        load = r.get("loadavg_before") or [None]
        load_text = f"{load[0]:.1f}" if load[0] is not None else "–"
        first = describe_finding(r.get("first"))
        if r["status"] == ERROR:
            first = shorten(r.get("error", ""), 80)
        name = (r.get("spec") or {}).get("name") or f"{r['scenario']}-s{r['seed']}"
        lines.append(f"| {cell(name)} | {r.get('fault_rank') or '–'} | {cell(verdict_text(r))} | "
                     f"{cell(first)} | {slow} | {ttd} | {load_text} |")
    lines += ["", scenario_table(summary, reasons)]
    lines += [(f"Faults correctly diagnosed (rank, category and scope of the first finding; both "
               f"faults, in order, for two at once): {overall['fault_runs_correct']}/"
               f"{overall['fault_runs_scored']} scored runs, {overall.get('fault_runs_detected', 0)} "
               f"with a finding ({overall['fault_runs_not_yet_diagnosable']} more not diagnosable yet); "
               f"false alarms: {overall['false_alarms']}/{overall['healthy_runs']} healthy runs"
               + (f"; {overall['errors']} run(s) failed." if overall["errors"] else "."))]
    return "\n".join(lines) + "\n"


def scenario_table(summary: Dict[str, dict], reasons: Optional[Dict[str, str]] = None) -> str:
    """The per-scenario table: detected / category right / rank right / false alarms, and the
    rest (scope, order for two faults at once, code location named right / given)."""
    reasons = reasons or {}
    lines = ["| scenario | set-ups | runs | detected | category right | rank right | scope right | "
             "correct | false alarms | location right / given | note |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, s in summary.items():
        note = reasons.get(name, "")
        if s["errors"]:
            note = (note + "; " if note else "") + f"{s['errors']} run(s) failed"
        if s.get("order_scored"):
            note = (note + "; " if note else "") + f"order right {s['order_ok']}/{s['order_scored']}"
        if name == "healthy":
            hits = ["–"] * 4
            location = "–"
        else:
            hits = [f"{s.get('detected', 0)}/{s['runs']}", f"{s['category_ok']}/{s['runs']}",
                    f"{s['rank_ok']}/{s['runs']}", f"{s['scope_ok']}/{s['runs']}"]
            location = f"{s.get('location_ok', 0)}/{s.get('location_given', 0)}" if s.get("location_given") else "–"
        setups = ", ".join(s.get("setups") or []) or "–"
        lines.append(f"| {name} | {setups} | {s['runs']} | {hits[0]} | {hits[1]} | {hits[2]} | {hits[3]} | "
                     f"{s['correct']}/{s['runs']} | {s['false_alarms']} | {location} | {cell(note)} |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Capabilities of the tree as it is now


def eroica_subcommands(eroica: str) -> List[str]:
    try:
        text = subprocess.run([eroica, "--help"], capture_output=True, text=True, timeout=30).stdout
    except OSError:
        return []
    names, in_list = [], False
    for line in text.splitlines():
        if line.strip().startswith("Subcommands:"):
            in_list = True
            continue
        if in_list and line.startswith("  ") and line.strip():
            names.append(line.split()[0])
    return names


def online_hang_available() -> bool:
    """python/eroica with `run`, the hang watchdog and the stack dumps."""
    package = ONLINE_PACKAGE_PARENT / "eroica"
    if not all((package / name).exists() for name in ("__main__.py", "runner.py", "hang.py")):
        return False
    probe = subprocess.run([PYTHON, "-c", "import eroica.hang, eroica.runner, eroica.detector as d; "
                            "assert hasattr(d, 'HangDetector')"],
                           env={**os.environ, "PYTHONPATH": str(ONLINE_PACKAGE_PARENT)},
                           capture_output=True, text=True, timeout=60)
    return probe.returncode == 0


def hang_blocking_line() -> int:
    """faults.Hang's second acquire: the line a correct hang finding names."""
    for number, line in enumerate((TESTBED_DIR / "faults.py").read_text().splitlines(), 1):
        if "blocks forever" in line:
            return number
    raise RuntimeError("faults.py: the hang's blocking line is not marked 'blocks forever'")


# --------------------------------------------------------------------------------------------
# Running


def git_head() -> Optional[str]:
    done = subprocess.run(["git", "-C", str(REPO_DIR), "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or None if done.returncode == 0 else None


def loadavg() -> List[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


def run_diagnose(eroica: str, path: Path):
    """(diagnosis dict, seconds it took, monotonic time it was in hand)."""
    started = time.monotonic()
    done = subprocess.run([eroica, "diagnose", str(path), "--format", "json"], capture_output=True,
                          text=True, timeout=DIAGNOSE_TIMEOUT_S)
    finished = time.monotonic()
    if done.returncode != 0:
        raise RuntimeError(f"eroica diagnose {path} failed ({done.returncode}): "
                           f"{(done.stderr or done.stdout).strip()[:300]}")
    return json.loads(done.stdout), round(finished - started, 2), finished


def save_patterns(eroica: str, run_dir: Path, world_size: int):
    """For a wrong diagnosis: every rank's pattern, and `eroica show` of it, beside the traces."""
    shown = []
    folder = run_dir / "patterns"  # not beside the traces: a later diagnose of DIR reads both
    folder.mkdir(exist_ok=True)
    for rank in range(world_size):
        trace = run_dir / f"rank-{rank}.json"
        if not trace.exists():
            continue
        pattern = folder / f"rank-{rank}.pattern"
        subprocess.run([eroica, "summarize", str(trace), "-o", str(pattern)], capture_output=True,
                       timeout=DIAGNOSE_TIMEOUT_S)
        if pattern.exists():
            show = subprocess.run([eroica, "show", str(pattern), "-n", "12"], capture_output=True,
                                  text=True, timeout=60)
            shown.append(show.stdout)
    (folder / "patterns.txt").write_text("\n".join(shown))


def specs_from_args(args) -> List[splits.RunSpec]:
    """The runs: a split's matrix (--split), else every scenario x --seeds at --ranks with the
    set-up each scenario needs; --scenario keeps only those, --max-runs-per-scenario the first N."""
    if args.split:
        specs = splits.split(args.split)
    else:
        seeds = range(args.first_seed, args.first_seed + args.seeds)
        specs = [splits.RunSpec(name, seed, ranks=args.ranks, params=tuple(args.overrides.get(name, [])),
                                **splits.scenario_setup(name))
                 for name in faults.SCENARIOS for seed in seeds]
    if args.scenario:
        specs = [spec for spec in specs if spec.scenario in args.scenario]
    if args.run:
        unknown = sorted(set(args.run) - {spec.name for spec in specs})
        if unknown:
            raise SystemExit(f"accuracy: no such run in this plan: {', '.join(unknown)}")
        specs = [spec for spec in specs if spec.name in args.run]
    if args.max_runs_per_scenario:
        kept, count = [], {}
        for spec in specs:
            count[spec.scenario] = count.get(spec.scenario, 0) + 1
            if count[spec.scenario] <= args.max_runs_per_scenario:
                kept.append(spec)
        specs = kept
    return specs


def run_one(args, spec: splits.RunSpec, caps: dict) -> dict:
    scenario = spec.scenario
    run_dir = Path(args.out) / "runs" / spec.name
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    online = scenario == "hang" and caps["online_hang"]
    cmd = [PYTHON, str(RUN_SCENARIO), *spec.argv(), "--out", str(run_dir)]
    if online:
        cmd += ["--online-eroica", str(run_dir / "eroica"), "--eroica-bin", args.eroica]
    with_agent = scenario == "net_throttle" and args.agent_bin
    if with_agent:
        cmd += ["--agent-bin", args.agent_bin]
    record = new_record(spec, run_dir)
    record["loadavg_before"] = loadavg()
    started = time.monotonic()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        record["run_wall_s"] = round(time.monotonic() - started, 1)
        record["testbed_output"] = done.stdout.strip().splitlines()
        if done.returncode != 0:
            raise RuntimeError(f"run_scenario failed ({done.returncode}): "
                               f"{(done.stderr.strip() or done.stdout.strip())[-300:]}")
        score_run(args, run_dir, record, online=online, live=True)
    except (RuntimeError, OSError, ValueError, KeyError, subprocess.TimeoutExpired) as error:
        record.update(status=ERROR, error=str(error).replace("\n", " "))
        record.setdefault("run_wall_s", round(time.monotonic() - started, 1))
    record["loadavg_after"] = loadavg()
    return record


def new_record(spec: splits.RunSpec, run_dir: Path) -> dict:
    return {"scenario": spec.scenario, "seed": spec.seed, "fault_rank": spec.fault_rank(),
            "params": list(spec.params), "spec": spec.as_dict(), "run_dir": str(run_dir),
            "truth_category": faults.SCENARIOS[spec.scenario].category}


def score_run(args, run_dir: Path, record: dict, online: bool, live: bool):
    """Diagnoses a finished run's folder with args.eroica and scores it into `record`. `live`:
    just made, so the time to diagnosis means something (not when re-scoring saved runs)."""
    scenario = record["scenario"]
    truth = json.loads((run_dir / "truth.json").read_text())
    record.update(truth_ranks=truth["ranks"], truth_scope=truth["scope"], truth_faults=truth_faults(truth),
                  fault_params=truth.get("fault_params"), slowdown=faulty_slowdown(truth),
                  rank_ms_per_iter=rank_means_ms(truth), settings=truth.get("settings"))
    for key in ("external_faults", "fault_reports"):
        if truth.get(key):
            record[key] = truth[key]
    if scenario == "hang":
        score_hang(args, truth, run_dir, record, online, live)
    else:
        diagnosis, record["diagnose_wall_s"], in_hand = run_diagnose(args.eroica, run_dir)
        record.update(score_diagnosis(truth, diagnosis))
        record["warnings"] = diagnosis.get("warnings", [])
        record["time_to_diagnosis_s"] = time_to_diagnosis(truth, in_hand) if live else None
        if truth.get("agent"):
            record["agent"] = truth.get("agent")
        if scenario == "net_throttle" and record["status"] != CORRECT:
            record["status_before_reason"] = record["status"]
            record["status"] = NEEDS_AGENT
            captured = (truth.get("agent") or {}).get("files")
            record["reason"] = NEEDS_AGENT_REASON + (AGENT_NOT_READ if captured else NO_AGENT)
    if record["status"] in (WRONG, MISSED, FALSE_ALARM, NEEDS_AGENT) and scenario != "hang":
        save_patterns(args.eroica, run_dir, truth.get("world_size") or 0)


def online_session(truth: dict, run_dir: Path) -> Optional[Path]:
    """The hang's session folder: as recorded, or (the run folder moved since) under the run
    folder's eroica/ by its name."""
    session = (truth.get("online") or {}).get("session")
    if not session:
        return None
    path = Path(session)
    if path.exists():
        return path
    moved = run_dir / "eroica" / path.name
    return moved if moved.exists() else None


def score_hang(args, truth, run_dir, record, online, live=True):
    if not online and not truth.get("online"):
        record.update(score_testbed_hang(truth))
        record["reason"] = TESTBED_ONLY_REASON
        hang = truth.get("hang") or {}
        record["time_to_diagnosis_s"] = time_to_diagnosis(truth, hang.get("detected_monotonic_s"))
        return
    record["diagnosed_by"] = "python -m eroica run (hang watchdog) + eroica diagnose SESSION"
    online_info = truth.get("online") or {}
    session = online_session(truth, run_dir)
    if session is None:
        record.update(status=MISSED, rank_ok=False, category_ok=False, scope_ok=False,
                      findings=0, first=None, false_alarm=False, detected=False,
                      error="the online package wrote no hang session (no report.json)")
        record["testbed_hang"] = truth.get("hang")
        return
    diagnosis, record["diagnose_wall_s"], _ = run_diagnose(args.eroica, session)
    record.update(score_diagnosis(truth, diagnosis))
    record["warnings"] = diagnosis.get("warnings", [])
    record["location_ok"] = score_hang_location(diagnosis, "faults.py", hang_blocking_line())
    # The job's own diagnosis (rank 0 runs eroica diagnose when the stacks are in).
    record["time_to_diagnosis_s"] = time_to_diagnosis(truth, online_info.get("report_seen_monotonic_s"))
    record["testbed_hang"] = truth.get("hang")


def rescore_records(args, folder: Path, log=print) -> List[dict]:
    """Re-diagnoses every saved run under FOLDER (a benchmark's OUT, its runs/, or one run
    folder) with args.eroica, without training again. The run's spec comes from the
    benchmark's accuracy-results.json when it is there, else from the truth."""
    saved = {}
    for results in (folder / "accuracy-results.json", folder.parent / "accuracy-results.json"):
        if results.exists():
            for run in json.loads(results.read_text()).get("runs", []):
                saved[Path(run.get("run_dir", "")).name] = run
    order = {name: index for index, name in enumerate(saved)}  # the benchmark's own order first
    run_dirs = sorted({t.parent for t in folder.glob("truth.json")} | {t.parent for t in folder.glob("*/truth.json")}
                      | {t.parent for t in folder.glob("runs/*/truth.json")},
                      key=lambda d: (order.get(d.name, len(order)), d.name))
    records = []
    for run_dir in run_dirs:
        truth = json.loads((run_dir / "truth.json").read_text())
        spec = spec_of_saved_run(run_dir, truth, saved.get(run_dir.name))
        record = new_record(spec, run_dir)
        # A saved run made by hand (run_scenario.py --fault-rank) put its fault where it was told,
        # not where the seed would have: the table shows the truth's ranks.
        record["fault_rank"] = truth_rank_text(truth)
        before = saved.get(run_dir.name) or {}
        record["loadavg_before"] = before.get("loadavg_before")
        record["previous_status"] = before.get("status")
        try:
            score_run(args, run_dir, record, online=bool(truth.get("online")), live=False)
        except (RuntimeError, OSError, ValueError, KeyError, subprocess.TimeoutExpired) as error:
            record.update(status=ERROR, error=str(error).replace("\n", " "))
        records.append(record)
        log(progress_line(record), flush=True)
    return records


def truth_rank_text(truth: dict) -> Optional[str]:
    """The faulty ranks as the run tables write them: "all" for a global fault, "1" or "1,3"."""
    if truth.get("scope") == "global":
        return "all"
    ranks = truth.get("ranks") or []
    return ",".join(str(r) for r in ranks) or None


def spec_of_saved_run(run_dir: Path, truth: dict, saved: Optional[dict]) -> splits.RunSpec:
    if saved and saved.get("spec"):
        spec = dict(saved["spec"])
        return splits.RunSpec(spec["scenario"], spec["seed"], spec["ranks"], spec["model"],
                              spec["num_workers"], spec["accum_steps"], tuple(spec["params"]))
    settings = truth.get("settings") or {}
    defaults = faults.SCENARIOS[truth["scenario"]].default_params
    params = tuple(f"{k}={v:g}" for k, v in sorted((truth.get("fault_params") or {}).items())
                   if k in defaults and v != defaults[k])
    return splits.RunSpec(truth["scenario"], truth.get("seed", 0), truth.get("world_size", 4),
                          settings.get("model", "mlp"), settings.get("num_workers", 0),
                          settings.get("accum_steps", 1), params)


def progress_line(record: dict) -> str:
    ttd = record.get("time_to_diagnosis_s")
    load = record.get("loadavg_before") or [float("nan")]
    first = describe_finding(record.get("first")) if record["status"] != ERROR else record.get("error", "")
    name = (record.get("spec") or {}).get("name") or f"{record['scenario']}-s{record['seed']}"
    return (f"{name:<52} rank {record.get('fault_rank') or '-':<4} "
            f"{verdict_text(record):<26} {first}  "
            f"[{'%.1f s' % ttd if ttd is not None else '-'}, load {load[0]:.1f}, "
            f"run {record.get('run_wall_s', 0):.0f} s]")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eroica", default=str(REPO_DIR / "build" / "eroica"), help="the eroica binary")
    parser.add_argument("--agent-bin", default=None, metavar="EROICA",
                        help="an eroica binary with the `agent` subcommand, for net_throttle "
                             "(default: --eroica when it has one)")
    parser.add_argument("--split", choices=splits.SPLITS, default=None,
                        help="run one of the fixed matrices (splits.py: tuning, validation, probe) instead of "
                             "scenarios x --seeds x --ranks")
    parser.add_argument("--rescore", default=None, metavar="DIR",
                        help="train nothing: re-diagnose the saved runs under DIR (a benchmark's "
                             "OUT, or a folder of run folders) with --eroica and score them")
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, help="seeds per scenario (default 3)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--ranks", type=int, default=DEFAULT_RANKS)
    parser.add_argument("--scenario", action="append", choices=sorted(faults.SCENARIOS),
                        help="run only these scenarios (repeatable; default: all)")
    parser.add_argument("--run", action="append", default=[], metavar="NAME",
                        help="only the run(s) of this folder name, e.g. to redo one that failed "
                             "(repeatable)")
    parser.add_argument("--max-runs-per-scenario", type=int, default=0, metavar="N",
                        help="only the first N runs of each scenario (a smaller run of a split)")
    parser.add_argument("--param", action="append", default=[], metavar="SCENARIO:KEY=VALUE",
                        help="fault strength, e.g. gc_storm:cycles_per_step=5000 (repeatable); "
                             "replaces the benchmark's own setting for that scenario "
                             f"({DEFAULT_OVERRIDES}); not with --split")
    parser.add_argument("--out", default=None,
                        help="output folder (default out/accuracy, out/accuracy-<split>, or "
                             "DIR/rescore-<UTC time> with --rescore)")
    parser.add_argument("--no-online-hang", action="store_true",
                        help="score the hang on the testbed's detection even if python/eroica exists")
    parser.add_argument("--strict", action="store_true", help="exit 1 unless every scored run is correct")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.ranks < 2 or args.max_runs_per_scenario < 0:
        parser.error("--seeds must be at least 1, --ranks at least 2, --max-runs-per-scenario at least 0")
    if args.split and args.param:
        parser.error("--param changes fault sizes: a split's sizes are fixed (splits.py)")
    try:
        args.overrides = {**DEFAULT_OVERRIDES, **parse_overrides(args.param)}
    except ValueError as error:
        parser.error(str(error))
    if args.rescore is not None:
        args.rescore = Path(args.rescore).resolve()
        if not args.rescore.is_dir():
            parser.error(f"{args.rescore}: not a folder")
    if args.out is None:
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())  # never over an earlier re-scoring
        args.out = (str(args.rescore / f"rescore-{stamp}") if args.rescore else
                    str(REPO_DIR / "out" / (f"accuracy-{args.split}" if args.split else "accuracy")))
    args.eroica = str(Path(args.eroica).resolve())
    if not os.access(args.eroica, os.X_OK):
        parser.error(f"{args.eroica}: not an executable (build eroica first: make build)")
    if args.agent_bin is not None:
        args.agent_bin = str(Path(args.agent_bin).resolve())
        if "agent" not in eroica_subcommands(args.agent_bin):
            parser.error(f"{args.agent_bin}: has no `agent` subcommand")
    return args


def snapshot_binary(path: str, folder: Path, name: str) -> str:
    """A private copy of a binary for the whole benchmark: the build folder is shared, and a
    rebuild in the middle of the run must neither break nor change the binary being scored."""
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / name
    tmp = folder / (name + ".tmp")
    for attempt in range(12):  # a link in progress: wait for it
        try:
            shutil.copy2(path, tmp)
            if subprocess.run([str(tmp), "--help"], capture_output=True, timeout=30).returncode == 0:
                os.replace(tmp, copy)
                return str(copy)
        except (OSError, subprocess.TimeoutExpired):
            pass
        time.sleep(5)
    raise SystemExit(f"accuracy: {path} does not run (a build in progress?)")


def reasons_for(records: List[dict], caps: dict) -> Dict[str, str]:
    reasons = {}
    needs_agent = [r for r in records if r["status"] == NEEDS_AGENT]
    if needs_agent:
        reasons["net_throttle"] = "needs agent: " + needs_agent[0]["reason"]
    if any(r["status"] == TESTBED_ONLY for r in records):
        reasons["hang"] = "testbed only: " + TESTBED_ONLY_REASON
    elif any(r["scenario"] == "hang" and r.get("diagnosed_by") for r in records):
        reasons["hang"] = "run under python -m eroica run; stacks diagnosed by eroica diagnose"
    return reasons


def main(argv=None):
    args = parse_args(argv)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    source_binary = args.eroica
    args.eroica = snapshot_binary(args.eroica, Path(args.out) / "bin", "eroica")
    caps = {"eroica": source_binary, "subcommands": eroica_subcommands(args.eroica),
            "online_hang": (not args.no_online_hang) and online_hang_available()}
    if args.agent_bin is None and "agent" in caps["subcommands"]:
        args.agent_bin = args.eroica
    elif args.agent_bin is not None:
        caps["agent_bin"] = args.agent_bin
        args.agent_bin = snapshot_binary(args.agent_bin, Path(args.out) / "bin", "eroica-agent")
    caps["agent"] = args.agent_bin is not None
    started = time.monotonic()
    if args.rescore:
        print(f"accuracy: re-scoring the runs under {args.rescore} with eroica {source_binary} "
              f"(copied to {args.eroica}); load {loadavg()}", flush=True)
        records = rescore_records(args, args.rescore)
        what = f"re-scored from {args.rescore}"
    else:
        specs = specs_from_args(args)
        what = f"split {args.split}" if args.split else f"{args.ranks} ranks, seeds from {args.first_seed}"
        print(f"accuracy: {len(specs)} runs ({what}); eroica {source_binary} (copied to {args.eroica}); "
              f"online hang path: {'yes' if caps['online_hang'] else 'no'}; agent: "
              f"{caps.get('agent_bin', args.agent_bin) if caps['agent'] else 'no'}; load {loadavg()}", flush=True)
        records = []
        for spec in specs:
            record = run_one(args, spec, caps)
            records.append(record)
            print(progress_line(record), flush=True)
            write_outputs(args, records, caps, source_binary, what, time.monotonic() - started, final=False)
    wall_s = round(time.monotonic() - started, 1)
    table, overall, results = write_outputs(args, records, caps, source_binary, what, wall_s, final=True)
    print()
    print(table, end="")
    print(f"results: {results}")
    if overall["errors"]:
        return 1
    if args.strict and overall["fault_runs_correct"] < overall["fault_runs_scored"] + overall["fault_runs_not_yet_diagnosable"]:
        return 1
    if args.strict and overall["false_alarms"]:
        return 1
    return 0


def write_outputs(args, records, caps, source_binary, what, wall_s, final):
    """OUT/accuracy-results.json and OUT/accuracy-table.md (after every run, so that an
    interrupted benchmark keeps what it measured)."""
    summary = summarize(records)
    overall = totals(records)
    table = markdown_tables(records, summary, overall, reasons_for(records, caps))
    table += f"\nTotal wall time {wall_s / 60:.1f} min ({len(records)} runs; {what})"
    table += ".\n" if final else ", still running.\n"
    document = {"schema": "eroica.accuracy/v2", "started_unix_s": round(time.time() - wall_s, 1),
                "wall_s": round(wall_s, 1), "split": args.split, "rescored_from": str(args.rescore or "") or None,
                "complete": final, "eroica": source_binary, "git_head": git_head(),
                "capabilities": caps, "overrides": None if args.split else args.overrides,
                "totals": overall, "summary": summary, "reasons": reasons_for(records, caps), "runs": records}
    results = Path(args.out) / "accuracy-results.json"
    tmp = results.with_suffix(".tmp")
    tmp.write_text(json.dumps(document, indent=1) + "\n")
    os.replace(tmp, results)
    (Path(args.out) / "accuracy-table.md").write_text(table)
    return table, overall, results


if __name__ == "__main__":
    sys.exit(main())

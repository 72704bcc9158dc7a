"""How the unseen jobs' batches are scored (README.md): each job's score.py gives its faults'
expected findings and calls score(). For each run NAME under $OUT (run.sh's; NAME.log beside
NAME/), the first session whose window is mostly after the fault's onset (target >= FROM-2),
re-diagnosed with BIN against the job's baseline when given, else its own report.json, judged
against what the fault is (from the run's name: PREFIX-KIND[wN], two faults joined by '+'). A
finding marked standing ("as at the baseline") is a cost the job already had, no alarm. Two
faults at once are right when the first two findings are theirs, in either order."""
import glob, json, os, re, subprocess, sys


def kinds_of(name):
    """The faults a run's name says it has ([] for a healthy run)."""
    kinds = []
    for part in name.split("-", 1)[1].split("+"):
        m = re.match(r"([a-z]+)(\d*)", part)
        kind = re.sub(r"w\d$", "", m.group(1) + m.group(2)) if m else "none"
        if not kind.startswith("healthy"):
            kinds.append(kind)
    return kinds


def matches(expect, f, world=None):
    """ranks: None (any), the sorted list named, or a test of (workers, world size)."""
    scope, cats, ranks = expect
    ok = f["scope"] == scope and f["category"] in cats
    if callable(ranks):
        return ok and ranks(f.get("workers", []), world)
    return ok and (ranks is None or sorted(f.get("workers", [])) == ranks)


def judge(expects, doc, keep_standing=False):
    # A standing finding is a cost the baseline had too (no alarm), unless the fault was in it.
    findings = [f for f in doc.get("findings", []) if keep_standing or not f.get("standing")]
    if not expects:
        return "ok" if not findings else "FALSE ALARM"
    if not findings:
        return "MISS (healthy)"
    if len(expects) == 1:
        return "ok" if matches(expects[0], findings[0], doc.get("world_size")) else "WRONG"
    top = findings[:len(expects)]
    left = list(expects)
    for f in top:
        hit = next((e for e in left if matches(e, f, doc.get("world_size"))), None)
        if hit is not None:
            left.remove(hit)
    if not left:
        return "ok"
    return "ONE OF TWO" if len(left) < len(expects) else "WRONG"


def pace_ratio(log, from_step):
    """The job's seconds a step after the onset (steps FROM..FROM+50) over before it (20..80), from
    rank 0's prints ("step N ... T.Ts"): whether the fault showed at all (under 1.05 it did not:
    the detector's own bar). None where the log lacks them."""
    at = {}
    for line in open(log, errors="replace") if os.path.exists(log) else []:
        m = re.match(r"step (\d+) .* ([0-9.]+)s$", line.strip())
        if m:
            at[int(m.group(1))] = float(m.group(2))
    a, b, c, d = 20, 80, from_step, from_step + 50
    if not all(k in at for k in (a, b, c, d)):
        return None
    return ((at[d] - at[c]) / (d - c)) / ((at[b] - at[a]) / (b - a))


def baseline_step(run, sdir=None):
    """The first iteration of the baseline window a session is diagnosed against (baseline_of; a
    job may take its baseline again later, after a fault's onset), else of the run's first
    baseline (None without one)."""
    used = baseline_of(run, sdir) if sdir else None
    if used and os.path.isdir(used):
        return json.load(open(os.path.join(used, "session.json"))).get("target_iteration")
    for s in sorted(glob.glob(os.path.join(run, "*", "session.json"))):
        doc = json.load(open(s))
        if doc.get("reason") == "baseline":
            return doc.get("target_iteration")
    return None


def chosen_session(run, from_step):
    chosen = None
    for s in sorted(glob.glob(os.path.join(run, "*", "session.json"))):
        doc = json.load(open(s))
        if doc.get("reason") == "baseline":
            continue
        if doc.get("target_iteration", 0) >= from_step - 2:
            if chosen is None or doc["target_iteration"] < chosen[1]["target_iteration"]:
                chosen = (os.path.dirname(s), doc)
    return chosen


def not_kept(run):
    """The baseline sessions the job did not keep (its log's "baseline not kept from DIR": a rank
    stood out from its peers in them, python/eroica/finish.py), by folder name."""
    log = run + ".log"
    if not os.path.exists(log):
        return set()
    return {os.path.basename(m.group(1).rstrip(":")) for m in
            re.finditer(r"baseline not kept from (\S+)", open(log, errors="replace").read())}


def baseline_of(run, sdir):
    """What a session is diagnosed against when re-diagnosed: the traces of the run's last baseline
    session before it, summarized by the same binary (the run's kept .baseline.pattern was
    summarized by the binary that made the run; a summarizer's change would read as a change of
    the job), else that kept pattern, else None."""
    target = json.load(open(os.path.join(sdir, "session.json"))).get("target_iteration", 0)
    unkept = not_kept(run)
    best = None
    for s in glob.glob(os.path.join(run, "*", "session.json")):
        doc = json.load(open(s))
        if os.path.basename(os.path.dirname(s)) in unkept:
            continue  # the job kept its earlier baseline (a rank stood out in this one)
        if doc.get("reason") == "baseline" and doc.get("target_iteration", 0) < target:
            if glob.glob(os.path.join(os.path.dirname(s), "rank-*.json*")) and (
                    best is None or doc["target_iteration"] > best[0]):
                best = (doc["target_iteration"], os.path.dirname(s))
    if best:
        return best[1]
    kept = glob.glob(os.path.join(run, "*.baseline.pattern"))
    return kept[0] if kept else None


def report(run, sdir, binary):
    if not binary:
        p = os.path.join(sdir, "report.json")
        return json.load(open(p)) if os.path.exists(p) else None
    base = baseline_of(run, sdir)
    cmd = [binary, "diagnose", sdir, "--format", "json"] + (["--baseline", base] if base else [])
    out = subprocess.run(cmd, capture_output=True, text=True)
    try:
        return json.loads(out.stdout)
    except ValueError:
        return None


def onset_of(run, from_step):
    """The run's own onset where its settings (run_job.sh's NAME.env) set FROM, else the job's."""
    env = run + ".env"
    if os.path.exists(env):
        for line in open(env, errors="replace"):
            if line.startswith("FROM=") and line.strip()[5:].isdigit():
                return int(line.strip()[5:])
    return from_step


def score(expect, from_step, default_out, argv=sys.argv[1:], iterations_per_step=1):
    """expect: fault kind -> (scope, categories, ranks or None for every rank). from_step is the
    job's own step (its log's); eroica counts iterations by the optimizer's steps, which a job
    may take several of a step (`iterations_per_step`: PPO's minibatch updates)."""
    job_from_step = from_step
    here = os.environ.get("OUT", default_out)
    binary = argv[0] if argv and os.path.isfile(argv[0]) else None
    prefixes = argv[1:] if binary else argv
    tally = {}
    for prefix in prefixes:
        for run in sorted(glob.glob(os.path.join(here, prefix + "-*"))):
            if not os.path.isdir(run):
                continue
            name = os.path.basename(run)
            kinds = kinds_of(name)
            label = "+".join(kinds) or "none"
            from_step = onset_of(run, job_from_step)
            onset = from_step * iterations_per_step
            chosen = chosen_session(run, onset)
            if chosen is None:
                print("%-20s %-12s no session after the onset" % (name, label))
                tally.setdefault(prefix, []).append("none")
                continue
            rep = report(run, chosen[0], binary)
            if rep is None:
                print("%-20s %-12s no report" % (name, label))
                continue
            v = judge([expect[k] for k in kinds], rep)
            base = baseline_step(run, chosen[0] if binary else None)
            if kinds and base is not None and base >= onset - 2:
                # The fault ran in the baseline's window: the job's own past has it too.
                v = "baseline in the fault (%s)" % judge([expect[k] for k in kinds], rep, keep_standing=True)
            pace = pace_ratio(run + ".log", from_step)
            if kinds and pace is not None and pace < 1.05:
                v = "not shown (%s)" % ("ok" if v == "ok" else v)  # no slowdown to find: not scored
            tally.setdefault(prefix, []).append(v)
            fs = [f for f in rep.get("findings", []) if not f.get("standing")]
            said = "; ".join("%s %s %s %s %.1fms" % (f["scope"], f["category"], f.get("workers"), f.get("location", ""),
                                                     1000 * f.get("impact_s_per_iter", 0)) for f in fs[:2]) or "healthy"
            print("%-20s %-12s it%-4d x%-5s %-12s %s" % (name, label, chosen[1]["target_iteration"],
                                                      "%.2f" % pace if pace else "?", v, said))
    for p, vs in tally.items():
        scored = [v for v in vs if not v.startswith(("not shown", "baseline in")) and v != "none"]
        print(p, "ok %d of %d scored (%d not shown, with the fault in the baseline or without a session)" % (sum(v == "ok" for v in scored), len(scored),
                                                                            len(vs) - len(scored)))

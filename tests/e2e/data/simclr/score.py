"""score.py [BIN] PREFIX...: how this job's batches were scored (README.md). For each run NAME
under $OUT (run.sh's; NAME.log beside NAME/), the first session whose window is mostly after the
fault's onset (target >= FROM-2), re-diagnosed with BIN against the job's baseline when given,
else its own report.json, judged against what the fault is (EXPECT, from the run's name). A
finding marked standing ("as at the baseline") is a cost the job already had, no alarm."""
import glob, json, os, re, subprocess, sys

HERE = os.environ.get("OUT", "/tmp/novel15")  # where run.sh put the runs
FROM = 120
# kind -> (scope, categories, ranks or None for every rank)
EXPECT = {
    "quota2": ("local", {"compute"}, [2]),
    "jit1": ("local", {"dataloader"}, [1]),
    "nap1": ("local", {"dataloader"}, [1]),
    "jitall": ("global", {"dataloader"}, None),
    "big3": ("local", {"imbalance"}, [3]),
    "gcall": ("global", {"host"}, None),
    "ckpt0": ("local", {"host"}, [0]),
    "pyall": ("global", {"host"}, None),
    "emaall": ("global", {"host", "compute"}, None),
    "none": None,
}

def fault_of(name):
    log = open(os.path.join(HERE, name + ".log")).read() if os.path.exists(os.path.join(HERE, name + ".log")) else ""
    m = re.match(r"[a-z]+-([a-z]+)(\d*)", name)
    kind = m.group(1) + m.group(2) if m else "none"
    kind = re.sub(r"w\d$", "", kind)
    if kind.startswith("healthy"):
        kind = "none"
    return kind

def judge(kind, doc, world):
    findings = [f for f in doc.get("findings", []) if not f.get("standing")]  # costs the baseline had too
    exp = EXPECT.get(kind)
    if exp is None:
        return ("ok" if not findings else "FALSE ALARM")
    if not findings:
        return "MISS (healthy)"
    f = findings[0]
    scope, cats, ranks = exp
    ok = f["scope"] == scope and f["category"] in cats
    if ranks is not None:
        ok = ok and sorted(f.get("workers", [])) == ranks
    return "ok" if ok else "WRONG"

binary = sys.argv[1] if len(sys.argv) > 1 and os.path.isfile(sys.argv[1]) else None
prefixes = sys.argv[2:] if binary else sys.argv[1:]
tally = {}
for prefix in prefixes:
    for run in sorted(glob.glob(os.path.join(HERE, prefix + "-*"))):
        if not os.path.isdir(run):
            continue
        name = os.path.basename(run)
        kind = fault_of(name)
        chosen = None
        for s in sorted(glob.glob(os.path.join(run, "*", "session.json"))):
            doc = json.load(open(s))
            if doc.get("reason") == "baseline":
                continue
            if doc.get("target_iteration", 0) >= FROM - 2:
                if chosen is None or doc["target_iteration"] < chosen[1]["target_iteration"]:
                    chosen = (os.path.dirname(s), doc)
        if chosen is None:
            print("%-16s %-8s no session after the onset" % (name, kind)); tally.setdefault(prefix, []).append("none")
            continue
        sdir = chosen[0]
        if binary:
            base = glob.glob(os.path.join(run, "*.baseline.pattern"))
            cmd = [binary, "diagnose", sdir, "--format", "json"] + (["--baseline", base[0]] if base else [])
            out = subprocess.run(cmd, capture_output=True, text=True)
            try:
                rep = json.loads(out.stdout)
            except ValueError:
                print(name, "diagnose failed", out.stderr[:300]); continue
        else:
            p = os.path.join(sdir, "report.json")
            if not os.path.exists(p):
                print("%-16s %-8s no report" % (name, kind)); continue
            rep = json.load(open(p))
        v = judge(kind, rep, 0)
        tally.setdefault(prefix, []).append(v)
        fs = [f for f in rep.get("findings", []) if not f.get("standing")]
        first = ("%s %s %s %s %.1fms" % (fs[0]["scope"], fs[0]["category"], fs[0].get("workers"), fs[0].get("location", ""), 1000 * fs[0].get("impact_s_per_iter", 0))) if fs else "healthy"
        print("%-16s %-8s it%-4d %-12s %s" % (name, kind, chosen[1]["target_iteration"], v, first))
for p, vs in tally.items():
    faults = [v for v in vs]
    print(p, "ok %d of %d" % (sum(v == "ok" for v in vs), len(vs)))

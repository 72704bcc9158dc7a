"""turns.py [BIN]: per session of every run under $OUT with loader workers, each rank's
loader-worker CPU growth against the job's baseline (ms a step) over the median of the other
ranks' growth, where every rank grew by at least 2 % of the step (busy_loader_workers.cc's
`grown`): the distributions behind kTurnRatio in README.md's stop 56."""
import glob, json, os, subprocess, statistics, sys
HERE = os.environ.get("OUT", "/tmp/novel15")  # where run.sh put the runs
B = sys.argv[1] if len(sys.argv) > 1 else "eroica"
def rows(path):
    out = subprocess.run([B, "show", "--format", "json", path], capture_output=True, text=True).stdout
    return {w["rank"]: w for w in json.loads(out)}
def pattern_of(session):
    p = os.path.join(HERE, "t.pattern")
    subprocess.run([B, "summarize"] + sorted(glob.glob(session + "/rank-*.json.gz")) + ["-o", p], capture_output=True)
    return rows(p)
out = {}
for run in sorted(glob.glob(os.path.join(HERE, "[a-g]-*"))):
    if not os.path.isdir(run) or "w0" in run or not os.path.exists(run + "/job.baseline.pattern"):
        continue
    base = rows(run + "/job.baseline.pattern")
    for s in sorted(glob.glob(run + "/job-*-s[0-9]-it*")):
        if "baseline" in s or not glob.glob(s + "/rank-*.json.gz"):
            continue
        now = pattern_of(s)
        grown = {}
        for r, w in now.items():
            b = base.get(r)
            if not b or not w.get("cpu") or not b.get("cpu"):
                continue
            d = w["cpu"].get("loader_cpu", 0) * w["iteration_s"] * 1e3 - b["cpu"].get("loader_cpu", 0) * b["iteration_s"] * 1e3
            step = 1e3 * min(w["iteration_s"], b["iteration_s"])
            if d >= 0.02 * step:
                grown[r] = d
        if len(grown) < max(2, len(now) - 1):  # AlmostAll, roughly
            continue
        ratios = []
        for r, d in grown.items():
            others = [v for k, v in grown.items() if k != r]
            ratios.append(round(d / statistics.median(others), 2))
        print("%-45s %s" % (os.path.relpath(s, HERE)[:45], sorted(ratios)))

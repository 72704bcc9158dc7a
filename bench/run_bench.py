#!/usr/bin/env python3
"""eroica's benchmarks: every figure of BENCHMARKS.md, measured in one run (`make bench`).

  run_bench.py --eroica build/eroica --out BENCHMARKS.md     the full run (a few minutes)
  run_bench.py --eroica build/eroica --smoke                 seconds: every step on tiny inputs

Timings are wall-clock seconds, the best of --repeat runs (the machine may be shared: the best
run is the one least disturbed), plus CPU seconds of the same run, which make "MB/s per core".
Peak memory is the process's ru_maxrss. Python's json.load (the floor any Python tool pays) is
timed on the same files in the same run, and each diagnose is checked against the planted truth.
"""

import argparse
import datetime
import gzip
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYTHON = "/usr/bin/python3"

# Python's floor: json.load of the file (gzip.open for .gz), timed inside the interpreter.
PY_LOAD = r"""
import gzip, json, resource, sys, time
path = sys.argv[1]
t0 = time.perf_counter(); c0 = time.process_time()
with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
    data = json.load(f)
events = len(data["traceEvents"]) if isinstance(data, dict) else len(data)
print(json.dumps({"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
                  "events": events, "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def log(*args):
    print("[bench]", *args, file=sys.stderr, flush=True)


def run(cmd, check=True, **kwargs):
    return subprocess.run(cmd, check=check, capture_output=True, text=True, **kwargs)


def run_json(cmd):
    out = run(cmd).stdout.strip().splitlines()
    return json.loads(out[-1])


def timed(cmd):
    """Wall seconds, CPU seconds and peak RSS (KB) of one child process."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        start = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", t.name] + cmd,
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
        fields = open(t.name).read().split()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return {"wall_s": wall, "cpu_s": float(fields[-3]) + float(fields[-2]), "peak_rss_kb": int(fields[-1]),
            "stdout": proc.stdout}


def best(results, key):
    return min(results, key=lambda r: r[key])


def machine():
    model, cores = platform.processor() or "?", os.cpu_count()
    try:
        for line in run(["lscpu"]).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    try:
        commit = run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "?"
    return {"model": model, "cores": cores, "mem_gb": mem_gb, "commit": commit,
            "kernel": platform.release(), "load": os.getloadavg()}


def json_size(path):
    if str(path).endswith(".gz"):
        with gzip.open(path, "rb") as f:
            n = 0
            while chunk := f.read(1 << 24):
                n += len(chunk)
            return n
    return os.path.getsize(path)


class Bench:
    def __init__(self, args):
        self.args = args
        self.eroica = str(Path(args.eroica).resolve())
        build = Path(self.eroica).parent
        self.read_bench = str(build / "bench" / "read_bench")
        self.make_big_trace = str(build / "bench" / "make_big_trace")
        self.work = Path(args.work).resolve()
        self.work.mkdir(parents=True, exist_ok=True)
        self.traces = Path(args.traces).resolve()

    # -- read + summarize -------------------------------------------------------------------
    def eroica_read_only(self, path, repeat):
        runs = [run_json([self.read_bench, "read", str(path), "--no-summary"]) for _ in range(repeat)]
        return best(runs, "total_s")

    def python_load(self, path):
        if json_size(path) > self.args.python_max_bytes:
            return None
        r = run_json([PYTHON, "-c", PY_LOAD, str(path)])
        return r

    def read_rows(self, files, repeat):
        """The best of `repeat` fresh-process runs per file, taken round-robin over the files so a
        slow spell of the shared machine does not fall on all runs of one file."""
        runs = {path: [] for path in files}
        for _ in range(repeat):
            for path in files:
                log("read", path.name)
                runs[path].append(run_json([self.read_bench, "read", str(path)]))
        def per_core(r):
            return mb(r["input_bytes"]) / r["total_cpu_s"]
        return [{"file": path, "eroica": best(runs[path], "total_s"), "python": self.python_load(path),
                 "inflate": self.inflate_alone(path),
                 "spread": (min(map(per_core, runs[path])), max(map(per_core, runs[path])))}
                for path in files]

    def inflate_alone(self, path):
        """libdeflate, zlib and ISA-L alone on a .json.gz (best of 3 each), or None for .json."""
        if not path.name.endswith(".gz"):
            return None
        log("inflate", path.name)
        return run_json([self.read_bench, "inflate", str(path), "3"])

    def largest_real_traces(self, count):
        files = [p for p in self.traces.rglob("*.json*") if p.is_file()]
        sized = sorted(files, key=json_size, reverse=True)
        return sized[:count]

    def plain_copy(self, gz):
        """A .json copy of a .json.gz (the same bytes uncompressed), in the work folder."""
        out = self.work / gz.name.replace(".json.gz", ".json")
        if not out.exists() or out.stat().st_size == 0:
            with gzip.open(gz, "rb") as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 24)
        return out

    def both_formats(self, path):
        if path.name.endswith(".gz"):
            return [self.plain_copy(path), path]
        gz = self.work / (path.name + ".gz")
        if not gz.exists():
            with open(path, "rb") as src, gzip.open(gz, "wb", compresslevel=6) as dst:
                shutil.copyfileobj(src, dst, 1 << 24)
        return [path, gz]

    def big_trace(self):
        source = self.traces / "hta_testdata" / "df_index_resolver" / "df_index_resolver.json.gz"
        out = self.work / "big_df_index_resolver.json"
        if not out.exists() or out.stat().st_size < self.args.big_bytes or not Path(str(out) + ".gz").exists():
            log("generating", out)
            info = run_json([self.make_big_trace, str(source), str(out), "--bytes", str(self.args.big_bytes), "--gzip"])
            log(info)
        return [out, Path(str(out) + ".gz")]

    def huge_trace(self):
        """Peak memory on a generated trace of --huge-bytes (4 GB): made, read, removed again, so the
        disk holds it only for the minute it is measured. None when the disk has too little room."""
        out = self.work / "huge_df_index_resolver.json"
        free = shutil.disk_usage(self.work).free
        if free < 2 * self.args.huge_bytes:
            log(f"skipping the huge trace: {free / 2**30:.1f} GB free")
            return None
        source = self.traces / "hta_testdata" / "df_index_resolver" / "df_index_resolver.json.gz"
        try:
            log("generating", out)
            run_json([self.make_big_trace, str(source), str(out), "--bytes", str(self.args.huge_bytes)])
            runs = []
            for _ in range(self.args.huge_repeat):
                log("read", out.name)
                runs.append(run_json([self.read_bench, "read", str(out)]))
            return {"file": out, "eroica": best(runs, "total_s"), "python": None, "inflate": None,
                    "spread": (min(mb(r["input_bytes"]) / r["total_cpu_s"] for r in runs),
                               max(mb(r["input_bytes"]) / r["total_cpu_s"] for r in runs))}
        finally:
            out.unlink(missing_ok=True)

    def several_files(self, files):
        out = {"files": files, "runs": []}
        # (threads, --max-memory MB): one core, both, and both under a budget that fits one reader.
        for threads, max_mb in ((1, 0), (2, 0), (2, 150)):
            cmd = [self.read_bench, "files", "-j", str(threads)]
            if max_mb:
                cmd += ["--max-memory", str(max_mb)]
            runs = [run_json(cmd + [str(f) for f in files]) for _ in range(self.args.repeat)]
            out["runs"].append((threads, max_mb, best(runs, "total_s")))
        return out

    # -- patterns ----------------------------------------------------------------------------
    def pattern_sizes(self):
        rows = []
        for path in sorted(p for p in self.traces.rglob("*.json*") if p.is_file()):
            out = self.work / "patterns" / (path.name + ".pattern")
            out.parent.mkdir(exist_ok=True)
            proc = subprocess.run([self.eroica, "summarize", str(path), "-o", str(out)], capture_output=True, text=True)
            if proc.returncode not in (0, 2) or not out.exists():
                rows.append({"file": path, "bytes": None, "error": proc.stderr.strip()[-200:]})
                continue
            rows.append({"file": path, "bytes": out.stat().st_size})
        dlrm = sorted((self.traces / "param_dlrm_8rank").glob("*.json"))
        bundle = self.work / "dlrm_8rank.pattern"
        run([self.eroica, "summarize"] + [str(p) for p in dlrm] + ["-o", str(bundle)])
        return rows, {"workers": len(dlrm), "bytes": bundle.stat().st_size, "path": bundle}

    # -- diagnose at scale ---------------------------------------------------------------------
    def diagnose_scale(self, template, sizes):
        rows = []
        for n in sizes:
            bundle = self.work / f"synth_{n}.pattern"
            truth_path = Path(str(bundle) + ".truth.json")
            log("synth", n)
            synth = timed([self.eroica, "synth", str(template), "-o", str(bundle), "-n", str(n),
                           "--global", "python", "--seed", "1"])
            truth = json.load(open(truth_path))
            repeat = self.args.repeat if n <= 100000 else 1
            runs = []
            for _ in range(repeat):
                log("diagnose", n)
                runs.append(timed([self.eroica, "diagnose", str(bundle), "--format", "json"]))
            r = best(runs, "wall_s")
            diagnosis = json.loads(r["stdout"])
            found, missing, extra = check_diagnosis(diagnosis, truth)
            rows.append({"workers": n, "bundle_bytes": bundle.stat().st_size, "synth_s": synth["wall_s"],
                         "diagnose": r, "found": found, "missing": missing, "extra": extra,
                         "planted": len(truth["planted"][0]["workers"]) + len(truth["planted"]) - 1,
                         "functions": truth["functions_per_worker"]})
            if n >= 100000 and not self.args.keep_bundles:
                bundle.unlink()
        return rows

    # -- scale-out, end to end ------------------------------------------------------------------
    def scale_out(self, templates, spec, raw_trace, raw_copies):
        """bench/scale_bench.py: N ranks through one TCPStore to rank 0's report, for each
        N:K of `spec` (K ranks per store connection), and today's central read of raw traces."""
        script = str(HERE / "scale_bench.py")
        work = str(self.work / "scale")
        rows = []
        for item in spec.split(","):
            n, share = (int(x) for x in item.split(":"))
            log("scale-out", n, "ranks,", share, "per store connection")
            rows.append(run_json([PYTHON, script, "gather", self.eroica, str(templates), str(n),
                                  "--share", str(share), "--work", work]))
            log("scale-out", n, "ranks:", rows[-1]["last_publish_to_report_s"], "s after the last publish")
        log("central read of", raw_copies, "raw traces")
        raw = run_json([PYTHON, script, "central", self.eroica, str(raw_trace), str(raw_copies),
                        "--repeat", str(min(self.args.repeat, 3)), "--work", work])
        out = {"rows": rows, "raw": raw}
        Path(work, "scale_out.json").write_text(json.dumps(out, indent=1) + "\n")  # every figure
        return out

    # -- bounds --------------------------------------------------------------------------------
    def bounds(self, gz):
        plain = self.plain_copy(gz)
        b_gz = run_json([self.read_bench, "bound", str(gz)])
        b_plain = run_json([self.read_bench, "bound", str(plain)])
        split = run_json([self.read_bench, "best", str(self.args.best_of), str(plain)])
        read_only = best([run_json([self.read_bench, "read", str(plain), "--no-summary"])
                          for _ in range(self.args.repeat)], "total_s")
        read_gz = best([run_json([self.read_bench, "read", str(gz), "--no-summary"])
                        for _ in range(self.args.repeat)], "total_s")
        fresh = best([run_json([self.read_bench, "read", str(plain)]) for _ in range(self.args.repeat)], "total_s")
        return {"gz": b_gz, "plain": b_plain, "split": split, "read_only": read_only, "read_gz": read_gz,
                "fresh": fresh, "file": gz, "instructions": self.instructions(plain),
                "profile": self.time_profile(["best", str(self.args.best_of), str(plain)])}

    def time_profile(self, read_bench_args):
        """Where the time of one read_bench command goes (perf's cpu-clock samples, which need no
        hardware counters): [(share %, symbol, kernel?)], or None without a working perf."""
        if not shutil.which("perf"):
            return None
        out = self.work / "perf.data"
        log("perf", *read_bench_args)
        rec = run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "5000", "-o", str(out), "--",
                   self.read_bench, *read_bench_args], check=False)
        if rec.returncode != 0 or not out.exists():
            return None
        rep = run(["perf", "report", "-i", str(out), "--no-children", "--sort", "symbol", "--stdio",
                   "--percent-limit", "0.5", "-g", "none"], check=False)
        rows = []
        for line in rep.stdout.splitlines():
            m = re.match(r"\s*([0-9.]+)%\s+\[([.k])\]\s+(\S.*?)\s*(-\s+-)?\s*$", line)
            if m:
                rows.append((float(m.group(1)), m.group(3), m.group(2) == "k"))
        return rows or None

    def instructions(self, plain):
        """Instruction counts (valgrind callgrind: repeatable where times are not) of read and summarize."""
        if not shutil.which("valgrind") or not shutil.which("callgrind_annotate"):
            return None
        out = self.work / "callgrind.out"
        log("callgrind", plain.name)
        run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", self.read_bench, "read", str(plain)])
        counts = {"total": None, "read": None, "summarize": None}
        for line in run(["callgrind_annotate", "--inclusive=yes", str(out)]).stdout.splitlines():
            fields = line.split()
            if not fields or not fields[0].replace(",", "").isdigit():
                continue
            n = int(fields[0].replace(",", ""))
            if "PROGRAM TOTALS" in line:
                counts["total"] = n
            elif "eroica::ReadTrace(" in line and counts["read"] is None:
                counts["read"] = n
            elif "eroica::Summarize(" in line and counts["summarize"] is None:
                counts["summarize"] = n
        return counts


def check_diagnosis(diagnosis, truth):
    """Planted faults the diagnosis names, those it misses, and findings nothing planted."""
    findings = diagnosis.get("findings", [])
    used = set()
    found, missing = [], []
    for p in truth["planted"]:
        targets = p["workers"] if p["scope"] == "local" else [None]
        for rank in targets:
            hit = None
            for i, f in enumerate(findings):
                if i in used or f["scope"] != p["scope"] or f["category"] != p["category"]:
                    continue
                if rank is not None and rank not in f["workers"]:
                    continue
                hit = i
                break
            label = f"{p['scope']} {p['category']}" + (f" rank {rank}" if rank is not None else "")
            if hit is None:
                missing.append(label)
            else:
                used.add(hit)
                found.append(label)
    extra = [f"{f['scope']} {f['category']} {f['workers'][:3]}" for i, f in enumerate(findings) if i not in used]
    return found, missing, extra


# -- the report ------------------------------------------------------------------------------
def mb(n):
    return n / 1e6


def fmt_rate(bytes_, seconds):
    return f"{mb(bytes_) / seconds:,.0f}" if seconds > 0 else "-"


def big_profile_note(big_read_only):
    """What perf's samples say about a fresh read + summarize of the big trace, or ''."""
    prof = big_read_only.get("profile")
    if not prof:
        return ""
    kernel = sum(share for share, _, k in prof if k)
    zeroing = sum(share for share, symbol, k in prof if k and symbol.startswith("clear_page"))
    return (f"In a fresh read + summarize of it, perf's cpu-clock samples put about {kernel:.0f}% of the time in the "
            f"kernel, {zeroing:.0f}% zeroing fresh pages (the events and the summarizer's per-event arrays are "
            "new memory). ")


def read_table(rows, label):
    out = [f"| {label} | format | JSON MB | events | eroica s | MB/s | MB/s per core | all runs, MB/s per core "
           "| peak RSS MB | RSS / JSON | Python json.load s | Python RSS MB | eroica vs Python "
           "| inflate alone MB/s: ISA-L / libdeflate / zlib | eroica per core vs ISA-L alone |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        e, p = r["eroica"], r["python"]
        name = r["file"].name
        fmt_ = "json.gz" if name.endswith(".gz") else "json"
        py_s = f"{p['seconds']:.2f}" if p else "not run"
        py_rss = f"{p['peak_rss_kb'] / 1024:,.0f}" if p else "-"
        ratio = f"{p['seconds'] / e['total_s']:.0f}x faster" if p else "-"
        f = r.get("inflate")
        floors = (f"{f['isal_mb_per_s']:,.0f} / {f['libdeflate_mb_per_s']:,.0f} / {f['zlib_mb_per_s']:,.0f}"
                  if f else "-")
        vs_isal = f"{mb(e['input_bytes']) / e['total_cpu_s'] / f['isal_mb_per_s']:.2f}x" if f else "-"
        out.append(f"| {name.replace('.json.gz', '').replace('.json', '')} | {fmt_} | {mb(e['input_bytes']):,.1f} "
                   f"| {e['events']:,} | {e['total_s']:.3f} | {fmt_rate(e['input_bytes'], e['total_s'])} "
                   f"| {fmt_rate(e['input_bytes'], e['total_cpu_s'])} | {r['spread'][0]:,.0f}-{r['spread'][1]:,.0f} "
                   f"| {e['peak_rss_kb'] / 1024:,.0f} | {e['peak_rss_kb'] * 1024 / e['input_bytes']:.2f}x "
                   f"| {py_s} | {py_rss} | {ratio} | {floors} | {vs_isal} |")
    return "\n".join(out)


def verdict(row, max_s, max_gb):
    if row["missing"]:
        return "FAILED (missed " + ", ".join(row["missing"]) + ")"
    d = row["diagnose"]
    ok_time = max_s is None or d["wall_s"] <= max_s
    ok_mem = max_gb is None or d["peak_rss_kb"] / 2**20 <= max_gb
    target = []
    if max_s is not None:
        target.append(f"≤ {max_s:g} s")
    if max_gb is not None:
        target.append(f"≤ {max_gb:g} GB")
    if not target:
        return "correct"
    return ("meets " if ok_time and ok_mem else "misses ") + " and ".join(target)


SCALE_OUT_BYTES_PER_RANK = 4096  # issue 14: at most this much reaches rank 0 per rank
SCALE_OUT_10K_S = 10.0  # issue 14: 10,000 ranks gathered and diagnosed on this machine


def scale_out_verdict(row):
    if row["missing"] or row["missed"]:
        return "FAILED (%d ranks missing%s)" % (row["missing"], ", missed " + ", ".join(row["missed"])
                                                if row["missed"] else "")
    ok = row["rank0_bytes_per_rank"] <= SCALE_OUT_BYTES_PER_RANK
    targets = [f"≤ {SCALE_OUT_BYTES_PER_RANK / 1024:g} KB per rank"]
    if row["ranks"] == 10000:
        ok = ok and row["last_publish_to_report_s"] <= SCALE_OUT_10K_S
        targets.append(f"≤ {SCALE_OUT_10K_S:g} s")
    return ("meets " if ok else "misses ") + " and ".join(targets)


def scale_out_targets(so):
    """Rows of the targets table for the scale-out path."""
    rows = so["rows"]
    most = max(r["rank0_bytes_per_rank"] for r in rows)
    out = [f"| scale-out: ≤ 4 KB per rank reaches rank 0 | at most {most:,.0f} bytes per rank "
           f"({', '.join(format(r['ranks'], ',') for r in rows)} ranks) | "
           f"{'met' if most <= SCALE_OUT_BYTES_PER_RANK else 'missed'} |"]
    r10k = next((r for r in rows if r["ranks"] == 10000), None)
    if r10k:
        out.append(f"| scale-out: 10,000 ranks gathered and diagnosed ≤ 10 s | "
                   f"{r10k['last_publish_to_report_s']:.2f} s from the last publish to the report "
                   f"({r10k['gather_from_start_s'] + r10k['write_folder_s'] + r10k['diagnose_s']:.1f} s "
                   "from the start signal, the emulated ranks' own publishing on the same 2 cores "
                   f"included) | {scale_out_verdict(r10k)} |")
    return out


def scale_out_section(so, cores, scale=None):
    rows, raw = so["rows"], so["raw"]
    L = ["## scale-out: patterns through the job store, end to end\n"]
    L.append("`bench/scale_bench.py gather` runs the scale-out path of the runtime (issue 14) from "
             "the ranks' patterns to rank 0's report. Each rank's pattern is its own block of "
             "`eroica synth DLRM -n N --workers-per-block 1 --zstd-level 9` (3 dataloader stragglers "
             "at +15% of the iteration, a global +8% of unattributed Python): the bundle's magic and "
             "that block are byte for byte the file the rank's own `eroica summarize` would write "
             "(synth_test checks it), so each rank sends a real-sized pattern. One process hosts "
             "the torch 1.13 TCPStore server and nothing else; rank 0 runs alone in another; "
             "the other ranks are threads in 4 client processes (at nice 10: they stand for ranks "
             "on other machines), each with its own store connection, nodes of 8 ranks. Every "
             "rank starts publishing at one signal once all are connected. The ranks run "
             "`exchange.Exchange` as the runtime configures it (polls every 0.1 s, a node's first "
             "rank sends its node's records under one key); rank 0 then gathers with the "
             "runtime's deadline, writes the central folder with `central.write_folder` and "
             "diagnoses it with `finish.collect_and_diagnose` (one `nice -n 10 eroica diagnose "
             "--format text --json-out report.json`), and the report is checked against the "
             "planted truth (every straggler named on its rank, the global fault as global).\n")
    L.append("*Last publish → report*: from the moment the last rank handed its record to the "
             "store until report.txt is written: the *gather* still needed after it, *write folder* "
             "(session.json, the bundle, raw-traces.json) and *diagnose*. *Start → report* adds "
             "the publishing itself, which here is N emulated ranks on the same "
             f"{cores} cores as the store and rank 0 (their CPU seconds are in *ranks CPU s*). "
             "*Bytes per rank at rank 0* is what rank 0 read from the store (`Exchange.bytes_read`: "
             "record headers and patterns) over N; *rank 0 requests* are its store requests, "
             "*store requests* those of every rank. *Store memory* is the server process's peak "
             "RSS (VmHWM) less its RSS once the server was up (torch imported); *store fds* its "
             "open descriptors with every client connected.\n")
    L.append("| ranks | store connections | pattern bytes, mean | last publish → report s | gather after | "
             "write folder | diagnose | start → report s | bytes per rank at rank 0 | rank 0 requests "
             "| diagnose CPU s | store requests | store CPU s | ranks CPU s | store memory MB | store fds "
             "| planted found | missing ranks | verdict |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        conns = f"{r['connections']:,}" + (f" ({r['ranks_per_connection']} ranks each)"
                                           if r["ranks_per_connection"] > 1 else "")
        start_to_report = r["gather_from_start_s"] + r["write_folder_s"] + r["diagnose_s"]
        L.append(f"| {r['ranks']:,} | {conns} | {r['pattern_bytes_mean']:,.0f} "
                 f"| {r['last_publish_to_report_s']:.2f} | {r['gather_after_last_publish_s']:.2f} "
                 f"| {r['write_folder_s']:.2f} | {r['diagnose_s']:.2f} | {start_to_report:.1f} "
                 f"| {r['rank0_bytes_per_rank']:,.0f} | {r['rank0_requests']:,} | {r['diagnose_cpu_s']:.2f} "
                 f"| {r['store_requests']:,} "
                 f"| {r['store_cpu_s']:.1f} | {r['clients_cpu_s']:.1f} | {r['store_peak_mb']:,.1f} "
                 f"| {r['store_fds']:,} | {len(r['found'])} of {r['planted']} | {r['missing']} "
                 f"| {scale_out_verdict(r)} |")
    shared = [r for r in rows if r["ranks_per_connection"] > 1]
    own = [r for r in rows if r["ranks_per_connection"] == 1]
    L.append("")
    if shared and own:
        big_own = max(own, key=lambda r: r["ranks"])
        per_client = (big_own["store_fds"] - big_own["store_base_fds"]) / big_own["connections"]
        L.append(f"What limits {', '.join(format(r['ranks'], ',') for r in shared)} ranks here: connections. "
                 "torch 1.13's TCPStore client opens two sockets (the second for its callback "
                 f"client, which serves `watchKey`), so the server held {big_own['store_fds']:,} descriptors for "
                 f"{big_own['connections']:,} clients ({per_client:.1f} each); this machine's open-file "
                 f"hard limit of {big_own['nofile_limit']:,} stops one server at about "
                 f"{int((big_own['nofile_limit'] - big_own['store_base_fds']) / per_client):,} clients. "
                 "Those rows therefore "
                 "send each group of ranks (whole nodes) through one connection, one rank after the "
                 "other: the same keys and the same requests reach the store, from fewer sockets "
                 "(clearly not a real job's connection count). A real job of that size already opens "
                 "one connection per rank to its store when torch.distributed starts (the "
                 "rendezvous), so its store host must allow that many descriptors with or without "
                 "eroica; eroica adds no connection.\n")
    for r in rows:
        L.append(f"{r['ranks']:,} ranks: every record {'arrived' if not r['missing'] else 'did NOT arrive'}; "
                 f"the bundle is {r['bundle_bytes'] / 1e6:,.1f} MB; connecting took {r['connect_s']:.0f} s "
                 f"(not in any time above); the emulated ranks' publishing took "
                 f"{r['publish_spread_s']:.1f} s from the signal; load average "
                 f"{r['load_before'][0]:.1f} before, {r['load_after'][0]:.1f} after."
                 + (f" Errors: {'; '.join(r['errors'])}." if r["errors"] else ""))
    largest = max(rows, key=lambda r: r["ranks"])
    blocked = next((d for d in (scale or []) if d["workers"] == largest["ranks"]), None)
    L.append("")
    L.append(f"What else grows at {largest['ranks']:,} ranks: the store holds every node's records until "
             f"rank 0 has read and deleted them ({largest['store_peak_mb']:,.0f} MB at its peak for "
             f"{largest['rank0_bytes_read'] / 1e6:,.0f} MB of records); rank 0 polls every node's counter "
             f"({largest['rank0_requests']:,} requests); and the bundle has one block per rank, each with "
             f"its own string table and zstd frame, so diagnose took {largest['diagnose_s']:.1f} s "
             f"({largest['diagnose_cpu_s']:.1f} CPU s)"
             + (f" where the same number of workers in blocks of 4,096 took {blocked['diagnose']['wall_s']:.1f} s "
                "(section diagnose at scale, same run)" if blocked else "")
             + "." + (f" The emulated ranks' own publishing ({largest['publish_spread_s']:.0f} s; one thread "
                      "per connection, the same 2 cores for all) is most of *start → report*, not rank 0's work."
                      if largest["publish_spread_s"] > largest["last_publish_to_report_s"] else "") + "\n")
    per_rank_s = raw["best"]["wall_s"] / raw["copies"]
    per_rank_cpu = raw["best"]["cpu_s"] / raw["copies"]
    r10k = next((r for r in rows if r["ranks"] == 10000), rows[-1])
    L.append(f"Today's central path, in the same run (`scale_bench.py central`): rank 0's `eroica diagnose` "
             f"of a folder holding every rank's raw trace, {raw['copies']} copies of `{raw['trace']}` "
             f"(a real V100 trace, {raw['file_bytes_per_rank'] / 1e6:,.1f} MB as .json.gz, "
             f"{raw['json_bytes_per_rank'] / 1e6:,.1f} MB of JSON), best of {len(raw['runs'])}: "
             f"{raw['best']['wall_s']:.2f} s wall, {raw['best']['cpu_s']:.2f} CPU s, "
             f"{raw['best']['peak_rss_kb'] / 1024:,.0f} MB peak RSS, reading "
             f"{raw['file_bytes'] / 1e6:,.0f} MB from the shared folder. Per rank: "
             f"{raw['file_bytes_per_rank'] / 1e6:,.2f} MB read by rank 0 "
             f"({raw['file_bytes_per_rank'] / r10k['rank0_bytes_per_rank']:,.0f}x the pattern path's "
             f"{r10k['rank0_bytes_per_rank']:,.0f} bytes), {per_rank_s * 1000:.1f} ms wall and "
             f"{per_rank_cpu * 1000:.1f} ms CPU on {cores} cores. At 10,000 ranks of this trace that is "
             f"{raw['file_bytes_per_rank'] * 1e4 / 1e9:,.1f} GB through rank 0's filesystem and "
             f"{per_rank_s * 1e4:,.0f} s ({per_rank_s * 1e4 / 60:,.1f} min) on these cores, against "
             f"{r10k['rank0_bytes_read'] / 1e6:,.1f} MB and {r10k['last_publish_to_report_s']:.1f} s measured "
             f"above; the paper reports 100 MB–3 GB of trace per rank, 2–56x this trace's "
             f"{raw['json_bytes_per_rank'] / 1e6:,.0f} MB of JSON. "
             f"The runtime's own call on the same folder (niced) took {raw['runtime_path_s']:.2f} s.\n")
    return L


def write_report(path, m, real, big, huge, big_read_only, several, patterns, dlrm_bundle, scale, bound, args, started,
                 finished, load_end, scale_out=None):
    L = []
    L.append("# eroica benchmarks\n")
    L.append(f"Written by `make bench` (`bench/run_bench.py`) on {started:%Y-%m-%d %H:%M} UTC at commit `{m['commit']}`; "
             f"the run took {(finished - started).total_seconds() / 60:.1f} min. Every figure below comes from that run.\n")
    L.append(f"**Machine:** {m['model']}, {m['cores']} cores, {m['mem_gb']:.0f} GB RAM, Linux {m['kernel']}. "
             f"Load average at the start {m['load'][0]:.1f} / {m['load'][1]:.1f} / {m['load'][2]:.1f} (1/5/15 min), "
             f"at the end {load_end[0]:.1f} / {load_end[1]:.1f} / {load_end[2]:.1f}: the machine is shared, so each "
             f"time is the best of {args.repeat} runs ({args.read_repeat} for the real traces' reads, taken "
             "round-robin over the files), and *MB/s per core* divides by the CPU seconds (all threads) of that run. "
             "*All runs* gives the slowest and the fastest of the runs: the same fresh read of the same file "
             "varies that much on this machine from one second to the next.\n")
    L.append("*MB/s* counts uncompressed JSON bytes. eroica figures are `ReadTrace` + `Summarize` of one file in a fresh "
             "process (`bench/read_bench read`); peak RSS is that process's `ru_maxrss`. Python is `/usr/bin/python3` "
             "`json.load` of the same file (through `gzip.open` for .gz), the floor any Python trace tool pays "
             "before it does any analysis.\n")

    plain_rows = [r for r in real + big if not r["file"].name.endswith(".gz")]
    gz_rows = [r for r in real + big if r["file"].name.endswith(".gz")]
    def per_core(r):
        return mb(r["eroica"]["input_bytes"]) / r["eroica"]["total_cpu_s"]
    def span(rows):
        values = sorted(per_core(r) for r in rows)
        return f"{values[0]:,.0f}-{values[-1]:,.0f}"
    d100k = next((r for r in scale if r["workers"] == 100000), None)
    d1m = next((r for r in scale if r["workers"] == 1000000), None)
    sizes = [r["bytes"] for r in patterns if r["bytes"]]
    L.append("## Targets against this run\n")
    L.append("| target | measured | |\n|---|---|---|")
    def read_target(rows, target):
        met = min(per_core(r) for r in rows) >= target
        return f"{span(rows)} MB/s per core", "met" if met else "missed: see section bound"
    L.append("| read + summarize ≥ 1,500 MB/s per core, .json (real traces and the 1.2 GB file) | {} | {} |".format(
        *read_target(plain_rows, 1500)))
    big_gz = [r for r in big if r["file"].name.endswith(".gz")]
    L.append("| read + summarize ≥ 1,000 MB/s per core, the 1.2 GB .json.gz | {} | {} |".format(
        *read_target(big_gz, 1000)))
    L.append("| (real traces' .json.gz, for reference) | {} MB/s per core | |".format(span([r for r in gz_rows
                                                                                        if r not in big_gz])))
    for r in [big[0]] + ([huge] if huge else []):
        share = r["eroica"]["peak_rss_kb"] * 1024 / r["eroica"]["input_bytes"]
        L.append(f"| peak RSS ≤ 0.15x the JSON, {mb(r['eroica']['input_bytes']):,.0f} MB trace | "
                 f"{r['eroica']['peak_rss_kb'] / 1024:,.0f} MB ({share:.2f}x) | "
                 f"{'met' if share <= 0.15 else 'missed: see the generated traces'} |")
    if not huge:
        L.append("| peak RSS, 4 GB trace | not measured: too little free disk | |")
    L.append(f"| pattern ≤ 10 KB per worker | largest {max(sizes):,} bytes | {'met' if max(sizes) <= 10240 else 'missed'} |")
    if d100k:
        L.append(f"| diagnose 100,000 workers ≤ 6 s | {d100k['diagnose']['wall_s']:.2f} s | {verdict(d100k, 6, None)} |")
    if d1m:
        L.append(f"| diagnose 1,000,000 workers ≤ 60 s, ≤ 8 GB | {d1m['diagnose']['wall_s']:.2f} s, "
                 f"{d1m['diagnose']['peak_rss_kb'] / 2**20:.2f} GB | {verdict(d1m, 60, 8)} |")
    if scale_out:
        L += scale_out_targets(scale_out)
    L.append("")
    L.append("## Read + summarize: the largest real traces\n")
    L.append(read_table(real, "trace") + "\n")
    L.append("## Read + summarize: a generated trace over 1 GB\n")
    b0 = big[0]["eroica"]
    L.append(f"`bench/make_big_trace` repeats the events of `df_index_resolver.json.gz` (a V100 rank, 5 iterations) "
             f"byte for byte, each copy shifted in time and with its ProfilerStep numbers, correlation / External id / "
             f"flow ids offset, into one trace of {mb(b0['input_bytes']):,.0f} MB ({b0['events']:,} events); the .gz "
             "is the same JSON at gzip level 6. Every gzip, whatever its size, streams through ISA-L's igzip on a "
             "helper thread (a second core; `--threads 1` inflates on the reader's own thread), 1 MB at a time. "
             + (f"The {mb(huge['eroica']['input_bytes']):,.0f} MB trace is made the same way for this run, read "
                f"{args.huge_repeat} times and deleted again (disk).\n" if huge else "\n"))
    L.append(read_table(big + ([huge] if huge else []), "trace") + "\n")
    e_plain = big[0]["eroica"]
    L.append(f"Peak memory for the {mb(e_plain['input_bytes']):,.0f} MB trace is {e_plain['peak_rss_kb'] / 1024:,.0f} MB: "
             f"the kept events take {mb(e_plain['event_bytes']):,.0f} MB ({e_plain['kept_events']:,} complete events of "
             "40 bytes, plus 24 bytes beside the few with bytes, shapes or a collective's name; instants, flows and "
             "metadata are counted, not kept); the events array grows by remapping its pages, never by copying, so "
             "no moment holds it twice. The rest is the summarizer's per-event arrays: a role and a function id per "
             "event, a slice index (4 bytes per event: the critical path is painted one time slice of about 32,768 "
             "spans at a time, so only one slice's spans are ever held) and the critical path itself, kept as "
             "8-byte (length, function) pieces. Reading alone (no summarize) peaks at "
             f"{big_read_only['peak_rss_kb'] / 1024:,.0f} MB and runs at "
             f"{fmt_rate(big_read_only['input_bytes'], big_read_only['total_s'])} MB/s. " + big_profile_note(big_read_only) +
             "Reading streams in 256 KB "
             "pieces, so memory grows with the events kept, not with the JSON: read + summarize peaks at "
             f"{e_plain['peak_rss_kb'] * 1024 / e_plain['input_bytes'] * 100:.1f}% of the JSON size here" +
             (f", and at {huge['eroica']['peak_rss_kb'] * 1024 / huge['eroica']['input_bytes'] * 100:.1f}% on the "
              f"{mb(huge['eroica']['input_bytes']):,.0f} MB trace ({huge['eroica']['kept_events']:,} kept events, "
              f"{mb(huge['eroica']['event_bytes']):,.0f} MB of them)" if huge else "") +
             ". The events alone are "
             f"{e_plain['event_bytes'] / e_plain['input_bytes']:.2f}x the JSON for this kind of trace (one "
             "complete event every "
             f"{e_plain['input_bytes'] / max(1, e_plain['kept_events']):,.0f} bytes). Before this stop (commit "
             "7e65584, not re-measured by `make bench`) events took 72 bytes in a vector that doubled by copying, "
             "and the summarizer held every span and the whole path as 24-byte spans: 413 MB (0.36x) on the "
             "1,189 MB trace and 1,310 MB (0.32x) on the 4,338 MB one. Patterns are byte-identical to that "
             "commit's on every real trace.\n")

    L.append("## Several files: both cores\n")
    one = several["runs"][0][2]
    L.append(f"`SummarizeFiles` (what `diagnose` and `summarize` run on a folder; `summarize --threads N --max-memory MB`) "
             f"over the {one['files']} traces of the first table as .json.gz ({mb(one['input_bytes']):,.0f} MB of JSON). "
             "`--threads` counts every thread: one reader per file, and an inflate helper only when a thread is "
             "left over; `--max-memory` runs fewer readers when it is small:\n")
    L.append("| --threads | --max-memory MB | readers | wall s | MB/s | MB/s per core | speed-up | errors |\n"
             "|---:|---:|---:|---:|---:|---:|---:|---:|")
    for t, max_mb, r in several["runs"]:
        L.append(f"| {t} | {max_mb or 'no limit'} | {r['readers']} | {r['total_s']:.3f} "
                 f"| {fmt_rate(r['input_bytes'], r['total_s'])} "
                 f"| {fmt_rate(r['input_bytes'], r['total_cpu_s'])} | {one['total_s'] / r['total_s']:.2f}x "
                 f"| {r['errors']} |")
    sizes_mb = sorted((mb(json_size(f)) for f in several["files"]), reverse=True)
    ideal = sum(sizes_mb) / max(sum(sizes_mb) / 2, sizes_mb[0]) if sizes_mb else 1
    L.append(f"\nOne thread per file at a time; with these file sizes two threads can at best be {ideal:.2f}x "
             f"faster than one. The load average was {m['load'][0]:.1f} on {m['cores']} cores when the run started: "
             "other work shares the second core.\n")

    L.append("## Pattern size per worker\n")
    L.append("`eroica summarize TRACE -o PATTERN` for every real trace (one worker per file; target ≤ 10 KB):\n")
    L.append("| trace | pattern bytes |\n|---|---:|")
    for r in patterns:
        size = f"{r['bytes']:,}" if r["bytes"] is not None else "unusable: " + r["error"]
        L.append(f"| {r['file'].relative_to(Path(args.traces).resolve())} | {size} |")
    sizes = [r["bytes"] for r in patterns if r["bytes"]]
    L.append(f"\nLargest {max(sizes):,} bytes, median {sorted(sizes)[len(sizes) // 2]:,}. As one bundle, the "
             f"{dlrm_bundle['workers']} DLRM ranks take {dlrm_bundle['bytes']:,} bytes "
             f"({dlrm_bundle['bytes'] / dlrm_bundle['workers']:,.0f} per worker: a block's workers share one "
             "string table and one zstd frame).\n")

    L.append("## diagnose at scale\n")
    s0 = scale[0]
    L.append(f"`eroica synth` makes each bundle from the {dlrm_bundle['workers']} DLRM patterns above: every worker is "
             "the job's healthy worker (median own work per function, the least-waiting rank's exposed "
             f"communication; {s0['functions']} functions) with per-function noise drawn from the real ranks' spread "
             "(capped at 5%), 3 stragglers at random with +15% of the iteration in the data loader (the others wait "
             "that long in their first collective), and a global fault: +8% of the iteration in unattributed Python "
             "on every worker. The timed path is `eroica diagnose BUNDLE --format json`: reading the bundle, "
             "localizing, printing. A row passes when every planted fault is named (each straggler as a local "
             "dataloader finding on its rank, the global one as a global host finding); a fast wrong answer is "
             "FAILED.\n")
    L.append("| workers | bundle MB | bytes/worker | diagnose wall s | CPU s | peak RSS MB | planted found | other findings | verdict |")
    L.append("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    targets = {100000: (6, None), 1000000: (60, 8)}
    for r in scale:
        d = r["diagnose"]
        max_s, max_gb = targets.get(r["workers"], (None, None))
        L.append(f"| {r['workers']:,} | {mb(r['bundle_bytes']):,.1f} | {r['bundle_bytes'] / r['workers']:,.0f} "
                 f"| {d['wall_s']:.2f} | {d['cpu_s']:.2f} | {d['peak_rss_kb'] / 1024:,.0f} "
                 f"| {len(r['found'])} of {r['planted']} | {len(r['extra'])} | {verdict(r, max_s, max_gb)} |")
    extras = sorted({x for r in scale for x in r["extra"]})
    L.append("\nTargets: 100,000 workers ≤ 6 s; 1,000,000 workers ≤ 60 s and ≤ 8 GB." +
             (" Other findings: " + "; ".join(extras) + "." if extras else " No other findings (no false alarm)."))
    L.append("")

    if scale_out:
        L += scale_out_section(scale_out, m["cores"], scale)
    L.append("## section: bound\n")
    gz, plain, split = bound["gz"], bound["plain"], bound["split"]
    ours_read = mb(split["input_bytes"]) / split["read_s"]
    ours_sum = mb(split["input_bytes"]) / split["summarize_s"]
    L.append(f"What limits read speed, measured on `{bound['file'].name}` ({mb(plain['input_bytes']):,.1f} MB of JSON), "
             f"best of {args.best_of} for our stages, best of 3 for the floors, all on one core:\n")
    L.append("| stage | MB/s | what it is |\n|---|---:|---|")
    L.append(f"| memchr over the JSON | {plain['memchr_mb_per_s']:,.0f} | memory bandwidth: touching every byte once |")
    L.append(f"| libdeflate inflate alone | {gz['libdeflate_mb_per_s']:,.0f} | the gzip floor, whole file in memory |")
    L.append(f"| zlib inflate alone | {gz['zlib_mb_per_s']:,.0f} | streaming, 1 MB at a time |")
    L.append(f"| ISA-L igzip inflate alone | {gz['isal_mb_per_s']:,.0f} | streaming, 1 MB at a time: the reader's inflate |")
    L.append(f"| simdjson on-demand walk (name, ts, dur of every event) | {plain['simdjson_walk_mb_per_s']:,.0f} "
             "| a parse floor: simdjson 3.0.1, the walk compiled with -march=native, stage 1 on this CPU's AVX-512 |")
    L.append(f"| eroica read (ReadTrace), .json | {ours_read:,.0f} | frame, parse every field we keep, intern, store |")
    L.append(f"| eroica summarize (Summarize) | {ours_sum:,.0f} | critical path, patterns |")
    L.append(f"| eroica read + summarize, .json | {mb(split['input_bytes']) / (split['read_s'] + split['summarize_s']):,.0f} | the two in sequence |")
    fresh = bound["fresh"]
    L.append(f"| eroica read + summarize, .json, in a fresh process | {fmt_rate(fresh['input_bytes'], fresh['total_cpu_s'])} "
             f"| as the tables above time it: the process faults in {fresh['minor_faults']:,} pages of fresh memory |")
    L.append(f"| fread of the .json in 1 MB pieces | {plain['fread_mb_per_s']:,.0f} | the kernel's copy from the page cache, "
             "part of every plain read |")
    rg = bound["read_gz"]
    L.append(f"| eroica read, .json.gz | {fmt_rate(rg['input_bytes'], rg['total_s'])} | ISA-L on a helper thread, then "
             "the same read (wall time) |")
    L.append("")
    both = 1 / ours_read / (1 / ours_read + 1 / ours_sum)
    L.append(f"Where the time goes: in one process, reading takes {both * 100:.0f}% of read + summarize and "
             f"summarizing {100 - both * 100:.0f}%. Our read runs at {ours_read / plain['simdjson_walk_mb_per_s']:.1f}x "
             "the simdjson walk that reads three fields (ours reads every field the Trace keeps, the args "
             "included, and interns and stores each event); the bare kernel copy of the file, which every plain "
             f"read pays, runs {plain['fread_mb_per_s'] / ours_read:.0f}x faster than our read, and memory bandwidth "
             "(memchr) is further off still. On gzip, inflating costs "
             f"1/{gz['isal_mb_per_s']:,.0f} s per MB with ISA-L, about "
             f"{(1 / gz['isal_mb_per_s']) / (1 / gz['isal_mb_per_s'] + 1 / ours_read + 1 / ours_sum) * 100:.0f}% "
             "of the read + summarize CPU time of a .json.gz. ISA-L streams at "
             f"{gz['isal_mb_per_s'] / gz['zlib_mb_per_s']:.1f}x zlib and {gz['isal_mb_per_s'] / gz['libdeflate_mb_per_s']:.2f}x "
             "libdeflate's whole-buffer inflate in this run, so no gzip size is inflated whole any more.\n")
    prof = bound.get("profile")
    if prof:
        kernel = sum(share for share, _, k in prof if k)
        L.append(f"Samples by function (`perf record -e cpu-clock`, no hardware counters needed) over the same "
                 f"best-of-{args.best_of} run of `read_bench best`, the functions above 1.5%; the kernel's part "
                 f"(copying the file from the page cache, faulting in fresh memory) is about {kernel:.0f}% in all:\n")
        L.append("| share | function |\n|---:|---|")
        for share, symbol, k in prof:
            if share < 1.5:
                continue
            name = symbol if len(symbol) <= 70 else symbol[:67] + "..."
            L.append(f"| {share:.1f}% | `{name}`{' (kernel)' if k else ''} |")
        L.append("")
    ins = bound["instructions"]
    if ins and ins["total"]:
        per_byte = ins["total"] / plain["input_bytes"]
        L.append(f"Instructions (`valgrind --tool=callgrind`, repeatable where times on a shared machine are not) "
                 f"for `read_bench read {Path(bound['file']).name.replace('.gz', '')}` in this run: "
                 f"{ins['total'] / 1e6:,.0f} M in all, {per_byte:.1f} per byte of JSON; ReadTrace "
                 f"{(ins['read'] or 0) / 1e6:,.0f} M ({(ins['read'] or 0) / plain['input_bytes']:.1f} per byte), "
                 f"Summarize {(ins['summarize'] or 0) / 1e6:,.0f} M ({(ins['summarize'] or 0) / plain['input_bytes']:.1f} "
                 "per byte). Before this work (commit 3213777, measured the same way, not re-measured by `make bench`) "
                 "the same command took 1,658 M: 35% in the splitter's byte-at-a-time framing walk, 11% in simdjson "
                 "stage 1 over the framed text, 40% in walking the on-demand objects (unescaping every key, parsing "
                 "numbers through strings, hashing every name), 13% in summarize. At the previous stop (commit 3cfa318, "
                 "measured the same way, not re-measured by `make bench`) it took 521 M: ReadTrace 369 M, Summarize 146 M.\n")
    L.append("What changed: events are parsed in place by a hand-written parser (SIMD string, whitespace and "
             "structure skips, SWAR digits, flows/instants/metadata skipped after their `ph`, names interned "
             "through a cache that hashes 32 bytes of each name) with simdjson deciding only the events it refuses; "
             "a 64-byte block scanner frames chunks for the sinks that take chunks; gzip of every size streams "
             "through ISA-L's igzip 1 MB at a time (before: inflated whole by libdeflate up to 256 MB, zlib above); "
             "summarize caches roles and function ids per name and merges the sorted runs spans come in. "
             "Since the previous stop: events are read along *layouts* learned from earlier events "
             "(`src/trace/layout_trie.h`): a profiler writes every event of a kind with the same keys, order and "
             "whitespace, so one 16-byte comparison of the bytes between two values replaces the walk over "
             "separator, key and colon and the decision what the key means; short `ph` and `cat` values are part "
             "of a layout. The full walk reads the few events that leave every layout, and learns their layout. "
             "The rest of a flow, instant or metadata event (two in five events of a GPU trace) is skipped 64 bytes "
             "at a time by the block scanner's bracket bitmasks instead of a search per string: perf's samples had "
             "shown that search as the hottest loop. Summarize finds the innermost span with a stack instead of a "
             "heap, appends in place instead of copying, keeps launch correlation ids in a bitmap, and reserves "
             "its arrays once; the events array is mapped with transparent huge pages, and the read buffer "
             "cycles through its first MB (fewer page faults in a fresh process). Events are stored in 40 bytes "
             "instead of 72 (ids in 32 bits, the rare args and wide ids beside them) and grown by remapping "
             "instead of copying, and the critical path is painted one time slice at a time into 8-byte pieces "
             "(traces of up to 131,072 events are one slice, painted straight from their events). At the stop "
             "before: a plain file is read 256 KB at a time instead of 1 MB, so the kernel's copy and the parser's pass "
             "over it share a 1 MB L2 (11-19% faster on the real traces, interleaved fresh runs); and each slice "
             "is painted in one sweep that reads every layer's timeline piece by piece as it is made from the "
             "layer's few ascending runs, instead of sorting each layer, holding its timeline and merging the "
             "layers pass by pass (in interleaved fresh runs against the stop before: read + summarize 1.32-1.52x on the four largest real traces, summarize 0.030 s -> 0.013 s and page faults 2,190 -> 717 on df_index_resolver; "
             "patterns byte-identical on all 26 real traces). At this stop: the process's heap lies on "
             "transparent huge pages (`src/base/heap_reuse.h`). On this kind of VM a 4 KB page touched for the "
             "first time costs about 13 us (a 4 KB share of a 2 MB huge page 1.1 us), and a fresh read + summarize "
             "of rank0.json faulted in its heap blocks (the span layers, the interner, the histograms) 4 KB at a "
             "time: 841 faults a process before, 216 after, about 110 of them the dynamic loader's, before the "
             "timed part. Measured outside `make bench`, in one run of 10 interleaved fresh `read_bench read`s of "
             "each binary (best of 10, MB/s per core, the machine slower that hour than in the tables above): "
             "rank0 882 -> 1,314 (1.49x), control 959 -> 1,387, test 1,015 -> 1,477, df_index_resolver 1,337 -> "
             "1,609 (1.20x), owlv2 1,115 -> 1,739; rank0's peak RSS 15.0 -> 18.6 MB (a touched huge page is "
             "resident whole).\n")
    L.append("Fewer instructions no longer buy time by themselves: a trial that also made `pid` and `tid` part of "
             "a layout cut 5% of the instructions and no measurable time, and was not kept. The plain file is "
             "read with fread 256 KB at a time into a reused 1 MB buffer, so the kernel's copy (the fread row above) is part of "
             "every plain read. Most of that copy is the first read of cold memory, which a mapped file pays too, "
             "in the parser: in a trial outside `make bench`, reading the 1.19 GB trace and touching every byte "
             "took 0.206 s of CPU in 1 MB reads, 0.187 s mapped and 0.173 s mapped with MADV_POPULATE_READ, about "
             "3% of a read + summarize; and a trace truncated while mapped, such as a profiler rewriting it, kills "
             "the reader with SIGBUS. The copy stays.\n")
    split_rate = mb(split["input_bytes"]) / (split["read_s"] + split["summarize_s"])
    fresh_rate = mb(fresh["input_bytes"]) / fresh["total_cpu_s"]
    if fresh_rate < split_rate:
        fresh_note = (f"the difference is what a fresh process pays first: touching fresh memory "
                      f"({fresh['minor_faults']:,} page faults)")
    else:
        fresh_note = ("faster than in one process, which is the shared machine's load between the two "
                      "measurements, not the code")
    plain_real = [r for r in real if not r["file"].name.endswith(".gz")]
    by_rate = sorted(plain_real, key=lambda r: mb(r["eroica"]["input_bytes"]) / r["eroica"]["total_cpu_s"])
    def bytes_per_event(r):
        return r["eroica"]["input_bytes"] / max(1, r["eroica"]["events"])
    slow, fast = by_rate[0], by_rate[-1]
    L.append(f"Against the targets: in one process this file reads and summarizes at {split_rate:,.0f} MB/s; in a "
             f"fresh process, as the tables above time every file, at {fresh_rate:,.0f} MB/s per core: {fresh_note}. "
             "Files differ by what their bytes hold (the walk costs per member more than per byte): in this run "
             f"the slowest .json above ({slow['file'].name}) holds an event every {bytes_per_event(slow):,.0f} bytes, "
             f"the fastest ({fast['file'].name}) every {bytes_per_event(fast):,.0f}; the machine's load moves single "
             "figures by a tenth or more between runs, so close figures are in no significant order. "
             "A .json.gz adds the inflate, which per core adds its CPU time to the read's: to reach 1,000 MB/s per "
             "core on a .json.gz, read + summarize would have to run at "
             + (f"{1 / (1 / 1000 - 1 / gz['isal_mb_per_s']):,.0f} MB/s" if gz['isal_mb_per_s'] > 1000 else "more than any speed")
             + f" beside ISA-L at this run's {gz['isal_mb_per_s']:,.0f} MB/s; at this file's in-process speed the "
             f"bound is {1 / (1 / gz['isal_mb_per_s'] + 1 / split_rate):,.0f} MB/s per core.\n")
    Path(path).write_text("\n".join(L) + "\n")


def smoke(args):
    """Every step once on tiny inputs: for the test suite (seconds). Exit 77: no traces (skip)."""
    bench = Bench(args)
    dlrm = sorted((bench.traces / "param_dlrm_8rank").glob("*.json"))
    if not dlrm:
        print(f"no DLRM traces under {bench.traces}: skipped")
        sys.exit(77)
    r = run_json([bench.read_bench, "read", str(dlrm[0])])
    assert r["events"] == 3290 and r["functions"] > 0, r
    # The heap on huge pages (base/heap_reuse.h): on a VM, 4 KB faults cost a fresh read a third.
    if Path("/sys/kernel/mm/transparent_hugepage/enabled").exists():
        assert r["huge_page_heap"], r
    run_json([bench.read_bench, "bound", str(dlrm[0])])
    out = bench.work / "smoke_big.json"
    info = run_json([bench.make_big_trace, str(dlrm[0]), str(out), "--bytes", "3000000", "--gzip"])
    for path in (out, Path(str(out) + ".gz")):
        r = run_json([bench.read_bench, "read", str(path)])
        assert r["events"] == info["copies"] * 3290 and r["functions"] > 0, r
    f = run_json([bench.read_bench, "inflate", str(out) + ".gz", "1"])
    assert f["input_bytes"] == r["input_bytes"] and f["isal_mb_per_s"] > 0, f
    r = run_json([bench.read_bench, "files", "-j", "2", "--max-memory", "100", str(out) + ".gz", str(dlrm[0])])
    assert r["patterns"] == 2 and r["readers"] == 1, r
    bundle = bench.work / "dlrm.pattern"
    run([bench.eroica, "summarize"] + [str(p) for p in dlrm] + ["-o", str(bundle)])
    rows = bench.diagnose_scale(bundle, [100])
    assert not rows[0]["missing"], rows[0]
    # Diagnose grows with the workers, not with their square: ten times the workers must take well
    # under 40 times as long (linear is about 10). A rule that computed the group's median
    # iteration once per worker took 148 s instead of 4 s on 100,000 CPU workers.
    took = {}
    for n in (5000, 50000):
        many = bench.work / f"linear_{n}.pattern"
        run([bench.eroica, "synth", str(bundle), "-o", str(many), "-n", str(n), "--stragglers", "3",
             "--straggler-category", "host", "--straggler-excess", "0.3", "--seed", "1"])
        took[n] = min(timed([bench.eroica, "diagnose", str(many)])["wall_s"] for _ in range(3 if n < 50000 else 1))
        many.unlink()
    assert took[50000] < 40 * max(took[5000], 0.05), took
    g = run_json([PYTHON, str(HERE / "scale_bench.py"), "gather", bench.eroica, str(bundle), "64",
                  "--procs", "1", "--work", str(bench.work / "scale")])
    assert g["records"] == 64 and g["missing"] == 0 and not g["missed"] and g["planted"] >= 2, g
    assert 0 < g["rank0_bytes_per_rank"] <= SCALE_OUT_BYTES_PER_RANK and g["errors"] == [], g
    print(f"smoke ok: diagnose of 100 synthetic workers named all {len(rows[0]['found'])} planted faults "
          f"(5,000 workers {took[5000]:.2f} s, 50,000 {took[50000]:.2f} s); "
          f"64 ranks through a TCPStore to rank 0's report named all {len(g['found'])}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--eroica", required=True)
    parser.add_argument("--out", default="BENCHMARKS.md")
    parser.add_argument("--work", default=str(ROOT / "out" / "bench"))
    parser.add_argument("--traces", default=str(ROOT.parent / "shared" / "traces"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--read-repeat", type=int, default=15,
                        help="fresh-process runs per real trace (each takes well under a second)")
    parser.add_argument("--best-of", type=int, default=10)
    parser.add_argument("--largest", type=int, default=5, help="how many of the largest real traces")
    parser.add_argument("--big-bytes", type=int, default=1100 << 20)
    parser.add_argument("--huge-bytes", type=int, default=4 << 30, help="the generated trace measured for memory")
    parser.add_argument("--huge-repeat", type=int, default=2)
    parser.add_argument("--python-max-bytes", type=int, default=4 << 30,
                        help="skip json.load on larger files (it needs ~4x their size in memory)")
    parser.add_argument("--sizes", default="1000,10000,100000,1000000")
    parser.add_argument("--keep-bundles", action="store_true")
    parser.add_argument("--scale-out", default="1000:1,10000:1,100000:16",
                        help="N:K, ...: N ranks through one TCPStore, K ranks per connection")
    parser.add_argument("--raw-copies", type=int, default=16,
                        help="raw traces in the central path's folder, for its per-rank cost")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        smoke(args)
        return
    started = datetime.datetime.utcnow()
    m = machine()
    bench = Bench(args)
    largest = bench.largest_real_traces(args.largest)
    real_files = [f for path in largest for f in bench.both_formats(path)]
    real = bench.read_rows(real_files, args.read_repeat)
    big = bench.read_rows(bench.big_trace(), args.repeat)
    huge = bench.huge_trace()
    big_read_only = bench.eroica_read_only(big[0]["file"], args.repeat)
    big_read_only["profile"] = bench.time_profile(["read", str(big[0]["file"])])
    several = bench.several_files([p for p in real_files if p.name.endswith(".gz")])
    patterns, dlrm_bundle = bench.pattern_sizes()
    scale = bench.diagnose_scale(dlrm_bundle["path"], [int(s) for s in args.sizes.split(",")])
    resolver = bench.traces / "hta_testdata" / "df_index_resolver" / "df_index_resolver.json.gz"
    scale_out = bench.scale_out(dlrm_bundle["path"], args.scale_out, resolver, args.raw_copies)
    bound = bench.bounds(resolver)
    finished = datetime.datetime.utcnow()
    write_report(args.out, m, real, big, huge, big_read_only, several, patterns, dlrm_bundle, scale, bound, args, started,
                 finished, os.getloadavg(), scale_out)
    log("wrote", args.out)
    failed = [r for r in scale if r["missing"]] + [r for r in scale_out["rows"] if r["missing"] or r["missed"]]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

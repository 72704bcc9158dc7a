"""Helpers for end-to-end tests: run the built eroica binary and the testbed."""
import json
import os
import subprocess
import sys
from pathlib import Path

SOURCE_DIR = Path(os.environ.get("EROICA_SOURCE_DIR", Path(__file__).resolve().parents[2]))
SHARED_DIR = Path(os.environ.get("EROICA_SHARED_DIR", SOURCE_DIR.parent / "shared"))
EROICA = os.environ.get("EROICA_BIN", str(SOURCE_DIR / "build" / "eroica"))
TRACES = SHARED_DIR / "traces"


def eroica(*args, check=True):
    result = subprocess.run([EROICA, *map(str, args)], capture_output=True, text=True, timeout=600)
    if check and result.returncode != 0:
        raise AssertionError(f"eroica {' '.join(map(str, args))} failed ({result.returncode}): {result.stderr}")
    return result


def diagnose(path):
    return json.loads(eroica("diagnose", path, "--format", "json").stdout)


def pattern(trace, tmp_path):
    out = Path(tmp_path) / (Path(trace).name + ".pattern")
    eroica("summarize", trace, "-o", out)
    return json.loads(eroica("show", out, "--format", "json").stdout)


def run_scenario(name, out, ranks=4, seed=0, params=(), extra=()):
    cmd = [sys.executable, str(SOURCE_DIR / "testbed" / "run_scenario.py"), "--scenario", name,
           "--ranks", str(ranks), "--out", str(out), "--seed", str(seed), *extra]
    for p in params:
        cmd += ["--param", p]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{name}: {result.stdout}\n{result.stderr}"
    return json.loads((Path(out) / "truth.json").read_text())


def shown(run_dir, functions=8):
    """Every rank's pattern as `eroica show` prints it (its top functions and CPU reading): what a
    failed run's message carries, since pytest keeps only its last few temporary folders."""
    texts = []
    for trace in sorted(Path(run_dir).glob("rank-*.json")):
        if trace.name.endswith((".meta.json", ".stacks.json")):
            continue
        out = Path(run_dir) / (trace.name + ".shown.pattern")
        if eroica("summarize", trace, "-o", out, check=False).returncode == 0:
            texts.append(eroica("show", out, "-n", functions, check=False).stdout)
            out.unlink()
    return "\n".join(texts)


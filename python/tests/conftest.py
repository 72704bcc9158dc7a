"""Shared helpers: paths, a fake `eroica` binary, and running commands under `eroica run`."""

import glob
import os
import socket
import subprocess
import sys

import pytest

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(TESTS_DIR)
WORKLOADS = os.path.join(TESTS_DIR, "workloads")
TORCH_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**overrides) -> dict:
    """The environment for a child: no EROICA_* from the caller, PYTHONPATH=python/ and the
    native stack walker's folder where the caller's PYTHONPATH has it (`eroica run` puts the
    binary's beside the package: the children sample as a user's do), no baseline capture unless
    asked for."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EROICA_")}
    native = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
              if p and glob.glob(os.path.join(p, "_eroica_frames*"))]
    env["PYTHONPATH"] = os.pathsep.join([PYTHON_DIR] + native)
    env["EROICA_BASELINE"] = "0"  # its extra session would change what the others count
    env.update({k: str(v) for k, v in overrides.items()})
    return env


def eroica_run(args, env, timeout_s=120, **kwargs):
    """Runs `python -m eroica run -- args...` and returns the CompletedProcess."""
    cmd = [TORCH_PYTHON, "-m", "eroica", "run", "--"] + list(args)
    return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout_s, text=True, **kwargs)


FAKE_DIAGNOSE = r'''#!%(python)s
# A stand-in for the C++ `eroica diagnose`: records how it was called, prints a fixed report.
import json, os, sys
session, fmt = sys.argv[2], sys.argv[sys.argv.index("--format") + 1]
json_out = sys.argv[sys.argv.index("--json-out") + 1] if "--json-out" in sys.argv else ""
with open(os.path.join(session, "fake-diagnose-%%s.json" %% ("json" if json_out else fmt)),
          "w") as f:
    json.dump({"argv": sys.argv, "nice": os.nice(0),
               "files": sorted(os.listdir(session))}, f)
doc = {"schema": "eroica.diagnosis/v1", "workers": 3, "healthy": False,
       "findings": [{"scope": "local", "category": "dataloader", "workers": [1],
                     "function": "enumerate(DataLoader)#__next__",
                     "impact_s_per_iter": 0.03, "location": "ddp_train.py:44"}],
       "warnings": []}
if json_out:
    with open(json_out, "w") as f:
        json.dump(doc, f)
print(json.dumps(doc) if fmt == "json" else "rank 1: data loading is slow")
'''


@pytest.fixture
def fake_diagnose(tmp_path):
    path = tmp_path / "fake-eroica"
    path.write_text(FAKE_DIAGNOSE % {"python": TORCH_PYTHON})
    path.chmod(0o755)
    return str(path)

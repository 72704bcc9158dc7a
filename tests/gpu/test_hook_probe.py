"""hook_probe.py's parts in this process, with eroica's runtime installed by hand. The
compiled part needs torch 2.x; with `torch.compile` standing in as the identity it still runs
every line of it here, so a slip in it shows before a GPU machine is lent."""

import argparse
import os
import sys

import pytest

torch = pytest.importorskip("torch")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import hook_probe  # noqa: E402
from eroica import config, hooks  # noqa: E402
from eroica.runtime import Runtime  # noqa: E402


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    rt = Runtime(config.load({"EROICA_DIR": str(tmp_path), "EROICA_THRESHOLD": "1000"}))
    hooks.install(rt)
    monkeypatch.setattr(hook_probe, "eroica_runtime", lambda: rt)
    yield rt
    hooks.uninstall()
    rt.shutdown()


def args(**kw):
    return argparse.Namespace(device="cpu", steps=4, block=3, blocks=4, **kw)


def test_compiled_part_counts_boundaries(runtime, monkeypatch):
    monkeypatch.setattr(torch, "compile", lambda fn: fn, raising=False)
    doc = hook_probe.probe_compiled(args())
    assert doc["compiled_model_boundaries"] == 4 and doc["compiled_step_boundaries"] == 4
    assert doc["model_compile_s"] >= 0 and doc["step_compile_s"] >= 0


def test_compiled_step_failure_is_reported_not_raised(runtime, monkeypatch):
    def compile_(fn):
        if getattr(fn, "__name__", "") == "compiled_step":
            def broken():
                raise RuntimeError("dynamo: unsupported\nsecond line")
            return broken
        return fn

    monkeypatch.setattr(torch, "compile", compile_, raising=False)
    doc = hook_probe.probe_compiled(args())
    assert doc["compiled_model_boundaries"] == 4
    assert doc["compiled_step_error"] == "RuntimeError: dynamo: unsupported"


def test_idle_part_pairs_blocks(runtime):
    doc = hook_probe.probe_idle(args())
    assert len(doc["pair_ratios"]) == 2 and doc["ratio"] > 0
    assert hooks.installed()  # left as it found them

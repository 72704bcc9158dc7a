"""Shared by the packaging tests: where things are, the version, and running a command with
the source tree (and so the build tree in it) hidden, to prove it uses installed files only."""

import os
import re
import shlex
import subprocess

import pytest

SOURCE_DIR = os.path.realpath(os.environ.get(
    "EROICA_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")))
BUILD_DIR = os.path.realpath(os.environ.get("EROICA_BUILD_DIR", os.path.join(SOURCE_DIR, "build")))
SHARED_DIR = os.path.realpath(os.environ.get("EROICA_SHARED_DIR", os.path.join(SOURCE_DIR, "..", "shared")))
TORCH_PYTHON = "/usr/bin/python3"


def version() -> str:
    """The version as written in its one place (python/eroica/_version.py)."""
    text = open(os.path.join(SOURCE_DIR, "python", "eroica", "_version.py")).read()
    return re.search(r'^__version__ = "([0-9.]+)"$', text, re.M).group(1)


def clean_env(**overrides) -> dict:
    """No EROICA_* and no PYTHONPATH from the caller: nothing may point back at the checkout."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("EROICA_") and k != "PYTHONPATH"}
    env["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin"
    env.update({k: str(v) for k, v in overrides.items()})
    return env


def run_without_source_tree(args, env, cwd, timeout_s=120):
    """Runs `args` in a private mount namespace where an empty tmpfs covers the source tree."""
    for outside in (cwd, *[a for a in args if a.startswith("/")]):
        assert not os.path.realpath(outside).startswith(SOURCE_DIR + "/"), outside
    hidden = shlex.quote(SOURCE_DIR)
    script = "mount -t tmpfs -o size=1m eroica-hidden %s && [ -z \"$(ls -A %s)\" ] && exec %s" % (
        hidden, hidden, " ".join(shlex.quote(a) for a in args))
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                          env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout_s)


@pytest.fixture(scope="session")
def built_binary():
    path = os.path.join(BUILD_DIR, "eroica")
    assert os.access(path, os.X_OK), "build the tree first (make build): no %s" % path
    return path

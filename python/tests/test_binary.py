"""How the package finds the `eroica` binary: EROICA_BIN (only it, when set), then PATH, then beside
the package."""

import os

from eroica import binary


def make_exe(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(path, 0o755)
    return path


def test_beside_each_kind_of_installation():
    assert binary.beside_package("/usr/lib/python3/dist-packages/eroica") == "/usr/bin/eroica"
    assert binary.beside_package("/v/lib/python3.11/site-packages/eroica") == "/v/bin/eroica"
    assert binary.beside_package("/src/eroica/python/eroica") == "/src/eroica/build/eroica"


def test_order_configured_then_path_then_beside(tmp_path, monkeypatch):
    package = str(tmp_path / "venv/lib/python3.11/site-packages/eroica")
    beside = make_exe(str(tmp_path / "venv/bin/eroica"))
    on_path = make_exe(str(tmp_path / "path/eroica"))
    configured = make_exe(str(tmp_path / "configured/eroica"))
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    assert binary.find_binary(configured, package) == configured
    assert binary.find_binary("", package) == on_path
    # A configured path that is not there is not replaced by another binary: the caller says
    # "EROICA_BIN=... is not an executable file" instead of running one nobody chose.
    assert binary.find_binary(str(tmp_path / "typo"), package) is None
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert binary.find_binary("", package) == beside
    os.chmod(beside, 0o644)  # not executable: not a binary
    assert binary.find_binary("", package) is None

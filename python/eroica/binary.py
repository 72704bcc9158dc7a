"""Where the Python side finds the `eroica` binary (rank 0 runs `eroica diagnose` with it).

The first executable file of, in this order:
  1. the `bin` setting (EROICA_BIN; `eroica run` sets it to itself) — when set, only it: a wrong
     setting is reported by the caller, never replaced by another binary;
  2. `eroica` on PATH;
  3. beside this package, where its installation put the binary: `<prefix>/bin/eroica` for a
     package in `<prefix>/lib/python3/dist-packages` (the .deb) or in
     `<prefix>/lib/pythonX.Y/site-packages` (the wheel, in a virtual environment or ~/.local),
     and `<checkout>/build/eroica` for the source tree's `python/eroica`.
"""

import os
import shutil
from typing import List, Optional

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def beside_package(package_dir: str) -> str:
    """The binary an installation of the package at `package_dir` puts beside it."""
    parent = os.path.dirname(os.path.abspath(package_dir))
    if os.path.basename(parent) in ("dist-packages", "site-packages"):
        prefix = os.path.dirname(os.path.dirname(os.path.dirname(parent)))  # up lib/pythonX/
        return os.path.join(prefix, "bin", "eroica")
    return os.path.join(os.path.dirname(parent), "build", "eroica")


def candidates(configured: str, package_dir: Optional[str] = None) -> List[str]:
    found_on_path = shutil.which("eroica")
    beside = beside_package(package_dir or PACKAGE_DIR)
    return [c for c in (configured, found_on_path, beside) if c]


def find_binary(configured: str, package_dir: Optional[str] = None) -> Optional[str]:
    if configured:
        return configured if os.path.isfile(configured) and os.access(configured, os.X_OK) else None
    for candidate in candidates(configured, package_dir):
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None
